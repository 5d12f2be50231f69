"""The core's store contract, run against SQLite and PostgreSQL."""

from __future__ import annotations

import inspect

from remote_core.interfaces import Store
from remote_core.testing import store_contract
from remote_core.testing.store_contract import StoreContract


class TestSqlStoreContract(StoreContract):
    """Every Store method, the races and the fail-closed restore, on both databases."""


def test_the_contract_exercises_every_store_method() -> None:
    """A method added to ``Store`` must be added to the contract too."""
    source = inspect.getsource(store_contract)
    untested = sorted(name for name in Store.__abstractmethods__
                      if f"store.{name}(" not in source and f"store.{name})" not in source)
    assert untested == []
