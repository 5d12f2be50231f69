"""The webhooks plugin's parts: options, the address policy, the events, the backoff."""

from __future__ import annotations

import ipaddress
import os
import random
import shutil
import subprocess
from typing import Any

import pytest
from remote_webhooks.config import WebhookConfig
from remote_webhooks.events import EventMapper
from remote_webhooks.guard import AddressPolicy, GuardedBackend, TargetRefused
from remote_webhooks.service import backoff_delay
from remote_webhooks.signing import sign, verify

from remote_core.errors import ConfigError
from remote_core.records import AuditEvent

SECRET = "a-secret-of-sixteen+"


@pytest.mark.parametrize(("options", "words"), [
    ({"url": "http://hooks.example/in", "secret": SECRET}, "allow_http_hosts"),
    ({"url": "ftp://hooks.example/in", "secret": SECRET}, "https://"),
    ({"url": "https://user:pw@hooks.example/in", "secret": SECRET}, "credentials"),
    ({"url": "https://hooks.example/in", "secret": "short"}, "16 characters"),
    ({"url": "https://hooks.example/in"}, "secret"),
    ({"secret": SECRET}, "needs a url"),
    ({"url": "https://hooks.example/in", "secret": SECRET, "events": "session.open"},
     "unknown event"),
    ({"urls": "https://hooks.example/in"}, "unknown webhooks option"),
    ({"allow_addresses": "not-an-address"}, "allow_addresses"),
    ({"max_attempts": "0"}, "max_attempts"),
    ({"timeout": "soon"}, "must be a number"),
    ({"targets": {"Bad Name": {"url": "https://h.example/", "secret": SECRET}}}, "name"),
])
def test_bad_options_are_clear_errors(options: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        WebhookConfig.from_options(options)


def test_targets_from_a_table_and_from_variables() -> None:
    config = WebhookConfig.from_options({
        "url": "https://hooks.example/in", "secret": SECRET,
        "targets": {"tickets": {"url": "https://tickets.example/hook", "secret": SECRET,
                                "events": ["session.opened", "agent_key.revoked"]}},
        "target_siem_url": "http://siem.lan/in", "target_siem_secret": SECRET,
        "allow_http_hosts": "siem.lan", "allow_addresses": "10.0.0.0/8, ::1",
        "max_attempts": "4",
    })
    names = {t.name: t for t in config.targets}
    assert sorted(names) == ["default", "siem", "tickets"]
    assert names["tickets"].events == {"session.opened", "agent_key.revoked"}
    assert config.max_attempts == 4
    assert SECRET not in repr(config)
    assert names["tickets"].shown_url == "https://tickets.example/…"


def test_an_unconfigured_plugin_has_no_targets() -> None:
    assert WebhookConfig.from_options({}).targets == ()


def test_a_bad_option_stops_the_server_with_one_line() -> None:
    exe = shutil.which("remote-support")
    assert exe
    env = {**os.environ, "REMOTE_SUPPORT_PLUGIN_WEBHOOKS_URL": "http://hooks.example/in",
           "REMOTE_SUPPORT_PLUGIN_WEBHOOKS_SECRET": SECRET,
           "REMOTE_SUPPORT_DATABASE_URL": "sqlite:///:memory:"}
    out = subprocess.run([exe, "serve", "--port", "0"], capture_output=True, text=True,
                         timeout=60, env=env)
    assert out.returncode == 2, out.stderr
    assert "remote-support: error: webhooks target 'default': url is plain http" in out.stderr
    assert "Traceback" not in out.stderr and SECRET not in out.stderr


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.2", "::1", "10.1.2.3",
                                     "172.16.0.1", "192.168.1.1", "169.254.169.254",
                                     "100.64.0.1", "0.0.0.0", "fe80::1", "fc00::1",
                                     "::ffff:127.0.0.1", "::ffff:10.0.0.1", "224.0.0.1",
                                     "240.0.0.1", "255.255.255.255"])
def test_non_global_addresses_are_refused(address: str) -> None:
    assert not AddressPolicy().permits(ipaddress.ip_address(address))


def test_global_addresses_pass_and_allowed_ones_too() -> None:
    policy = AddressPolicy([ipaddress.ip_network("127.0.0.1/32")])
    assert policy.permits(ipaddress.ip_address("93.184.216.34"))
    assert policy.permits(ipaddress.ip_address("2606:2800:220:1::1"))
    assert policy.permits(ipaddress.ip_address("127.0.0.1"))
    assert not policy.permits(ipaddress.ip_address("127.0.0.2"))


def test_one_forbidden_answer_refuses_the_name() -> None:
    addresses = [ipaddress.ip_address(a) for a in ("93.184.216.34", "10.0.0.1")]
    with pytest.raises(TargetRefused, match=r"10\.0\.0\.1"):
        AddressPolicy().check("mixed.example", addresses)


def test_signature_over_timestamp_and_body() -> None:
    body = b'{"event":"session.opened"}'
    signature = sign(SECRET, "1700000000", body)
    assert signature.startswith("sha256=") and len(signature) == 7 + 64
    assert verify(SECRET, "1700000000", body, signature, now=1700000100)
    assert not verify(SECRET, "1700000000", body + b" ", signature, now=1700000100)
    assert not verify(SECRET, "1700000001", body, signature, now=1700000100)
    assert not verify(SECRET, "1700000000", body, signature, now=1700001000)  # too old
    assert not verify(SECRET, "soon", body, signature, now=1700000100)


def test_backoff_doubles_with_jitter_up_to_a_ceiling() -> None:
    rand = random.Random(7)
    for attempt, full in ((1, 2.0), (2, 4.0), (3, 8.0), (10, 60.0), (100, 60.0)):
        delay = backoff_delay(attempt, 2.0, 60.0, rand)
        assert full / 2 <= delay <= full


def test_events_are_renamed_and_failed_logins_counted() -> None:
    now = [0.0]
    mapper = EventMapper(threshold=3, window=60, clock=lambda: now[0])
    assert mapper.map(AuditEvent("session.consent_timeout")) == [
        ("session.consent_denied", {"reason": "timeout"})]
    assert mapper.map(AuditEvent("agent.update_status",
                                 detail={"state": "UPDATE_DOWNLOADING"})) == []
    assert mapper.map(AuditEvent("agent.update_status", detail={"state": "UPDATE_FAILED"})
                      )[0][0] == "agent.update_result"
    assert mapper.map(AuditEvent("viewer.joined")) == []
    opened = AuditEvent("backstage.opened", actor="techa", detail={"viewer_id": "v"})
    assert mapper.map(opened) == [("backstage.opened", {"viewer_id": "v"})]
    moved = AuditEvent("file.downloaded", detail={"path": "/home/a", "direction": "download"})
    assert mapper.map(moved) == [("file.transferred", {"path": "/home/a",
                                                       "direction": "download"})]
    failed = AuditEvent("auth.login_failed", target="admin")
    assert mapper.map(failed) == [] and mapper.map(failed) == []
    now[0] = 61.0  # the first two fall out of the window
    assert mapper.map(failed) == [] and mapper.map(AuditEvent("agent.auth_failed")) == []
    assert mapper.map(failed) == [("auth.login_failures",
                                   {"failures": 3, "window_seconds": 60})]
    assert mapper.map(failed) == []  # counting starts again


@pytest.mark.anyio
async def test_a_name_is_checked_by_what_it_resolves_to() -> None:
    """No address in the URL: ``localhost`` resolves to loopback, refused at connect time."""
    backend = GuardedBackend(AddressPolicy())
    with pytest.raises(TargetRefused, match=r"localhost resolves to .*not a global address"):
        await backend.connect_tcp("localhost", 443, timeout=5)
    with pytest.raises(TargetRefused):
        await backend.connect_unix_socket("/run/remote-support.sock")
