"""T20: an issued agent key exists in plain text in its issuance response and nowhere else.

The listing and the hash-only storage are in tests/api/test_keys.py; here the
whole database file (and its write-ahead log), the audit log and the server
log are searched, as someone who copied them would (SimpleHelp CVE-2024-57726
had keys worth stealing; ours are worth nothing without the plain text).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest
from remote_server.testing.liveserver import LiveServer
from sqlalchemy.engine import make_url

from .conftest import Admin


def database_bytes(server: LiveServer) -> bytes:
    """The SQLite file and its WAL, as a copy of the disk would hold them."""
    path = Path(make_url(server.ctx.settings.database_url).database or "")
    files = [path, path.with_name(path.name + "-wal")]
    return b"".join(f.read_bytes() for f in files if f.exists())


def test_t20_the_plain_key_is_in_no_file_log_or_listing(server: LiveServer, admin: Admin,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    agent_id = admin.machine()
    with caplog.at_level(logging.DEBUG):
        issued = admin.ok("POST", f"/api/machines/{agent_id}/keys", 201, json={"label": "t20"})
        plain = issued["key"]
        listing = admin.http.get(f"/api/machines/{agent_id}/keys").text
        events = admin.http.get("/api/events", params={"agent_id": agent_id}).text
    digest = hashlib.sha256(plain.encode()).hexdigest()
    secret = plain.removeprefix("cak_")
    dump = database_bytes(server)
    assert digest.encode() in dump, "the hash is what is stored"
    assert secret.encode() not in dump
    for where, text in (("listing", listing), ("audit log", events), ("server log", caplog.text)):
        assert secret not in text and digest not in text, where
