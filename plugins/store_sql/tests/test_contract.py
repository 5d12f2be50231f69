"""The core's store contract, run against SQLite and PostgreSQL."""

from __future__ import annotations

from remote_core.testing.store_contract import StoreContract


class TestSqlStoreContract(StoreContract):
    """Every Store method, the races and the fail-closed restore, on both databases."""
