"""Every way the test suite runs the server differently from its shipped defaults, with why.

Tests build their settings with :func:`test_settings` (in-process servers) or
pass the same names to :class:`~remote_server.testing.processes.ServerProcess`;
both refuse a setting that is not listed in :data:`DEVIATIONS`, so this module
is the one place a reader learns how far the suite strays from what ships.

Timeouts are only ever shortened together, by :func:`shortened_timeouts`, so
their shipped ratios hold (the consent timeout stays longer than the heartbeat
timeout, which stays three heartbeat intervals): a test that shortened one
alone once hid a consent dialog that starved the connection.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..settings import ServerSettings

__all__ = ["DEVIATIONS", "TIMEOUTS", "check_deviations", "shortened_timeouts", "test_settings"]

TIMEOUTS = ("heartbeat_interval", "heartbeat_timeout", "first_message_timeout", "consent_timeout")

DEVIATIONS: dict[str, str] = {
    "database_url": "each test server has its own temporary SQLite file or the PostgreSQL "
                    "test database, never the working directory's",
    "admin_password": "the first admin's password is known to the test instead of generated "
                      "and printed once",
    "host": "test servers listen on 127.0.0.1 only (the shipped default too; set explicitly)",
    "port": "a free port per server, so servers of several tests run side by side",
    "trusted_proxies": "in-process suites trust 127.0.0.1, so each test client speaks from its "
                       "own X-Forwarded-For address and one test's rate limits and lockouts "
                       "never reach another (so does the passkey suite's server process); "
                       "the tests of the setting itself change it too, "
                       "and the reverse-proxy tests trust their proxy as deploy/ tells to",
    "public_origins": "only the tests of the origin setting itself, and the cluster's "
                      "passkey test, whose nodes stand behind one public origin as a "
                      "load-balanced deployment's do",
    "shared_agent_key": "the deprecated shared key is off by default; only its own tests and "
                        "the relay tests that speak as a keyless agent switch it on",
    "viewer_buffer_bytes": "a 1 MiB outbox, so the slow-viewer tests fill it in a moment",
    "max_message_bytes": "2 MiB in the relay suite, so the size-limit tests need not send "
                         "16 MiB; the shipped 16 MiB cap is tested with real 4K frames",
    "max_transfer_bytes": "10 MiB in the test of the file-transfer cap, so reaching it needs "
                          "no 16 GiB transfer; the cap's checks are the same at any size",
    "request_body_timeout": "one second in the slow-sender test, so it does not wait 30",
    "ws_impl": "only the message-size test of the security suite (T32), which holds the cap "
               "under wsproto as well as the shipped websockets-sansio",
    "max_pending_sockets": "the T36 test of the global cap on sockets awaiting their "
                           "session_request, so it fills a cap of 40 rather than 1,024, and "
                           "the admission test that fills the agents' queue with 4",
    "signing_key_refresh": "only the T17 key-rotation tests: a fifth of a second, so a "
                           "rotation reaches the running server in a moment, not 30 s",
    "bus_url": "the cluster tests: cluster mode is off by default (one node, no bus)",
    "limits_url": "the cluster tests: shared limits come with cluster mode",
    "cluster_name": "the cluster tests: a name per test, so clusters of tests that run at "
                    "once on the one NATS and Redis never see each other",
    "node_id": "the cluster tests name their nodes a, b, c to say which one a test means",
    "node_lease": "only the bus-outage test: a 2 s lease, so an outage that outlasts it "
                  "takes seconds, not half a minute",
    "tls_cert": "the tests of serve's own TLS: a certificate from the test's own authority "
                "(off by default)",
    "tls_key": "with tls_cert, the key of the test authority's certificate",
    "plugins": "only the tests of plugin loading itself",
    "extra_plugins": "the tests of a third-party plugin add it to the default set, as its "
                     "README tells a deployment to",
    "block_plugins": "only the tests of plugin loading itself and of a deployment that "
                     "blocks a built-in to replace it",
    "autoload_plugins": "only the tests of plugin loading itself",
    "oidc_allow_http_loopback": "the single sign-on tests: their OpenID provider listens on "
                                "plain HTTP on 127.0.0.1 (off by default; https:// only)",
    "recordings": "the session-recording tests switch recording on (off by default), and "
                  "the backup tests, so that every table holds rows",
    "recordings_url": "each test server keeps its recordings in its own temporary folder, "
                      "never the working directory's",
    "recordings_keep_days": "only the retention test: one day, beside a recording seeded as "
                            "two days old",
    "recording_buffer_bytes": "only the test of a recording store that falls behind: a small "
                              "buffer, so it overflows in a moment",
    "recording_policy": "only the recording-policy test: one tag's machines recorded with a "
                        "notice (no entries by default)",
    "recording_keystrokes": "only the recording-policy test: keystrokes kept as timing "
                            "(content by default)",
    "recording_retention": "only the retention test: one machine's recordings kept a month "
                           "beside the one day it sets (no entries by default)",
    "metrics": "the metrics tests switch /metrics on (off by default)",
    "metrics_token": "the metrics tests: the bearer token their Prometheus sends",
    "metrics_networks": "only the tests of the metrics access setting",
    "require_second_factor": "the second-factor tests require one of administrators (none "
                             "is required by default)",
    "log_format": "the structured-log test reads JSON lines (text by default)",
    "log_level": "the structured-log test logs at debug, where most could leak",
    "join_agent_file": "the join tests hand out a release they built (none by default)",
    "join_server_url": "the join API test names a public URL other than its own",
    "join_ca_bundle": "the join API test puts a private CA into the download",
    "join_organization": "the join tests name an organization (empty by default)",
    "session_panel_managed": "the tests of the session-panel policy for managed machines "
                             "switch it on (off by default)",
    "session_panel_organizations": "the tests of the session-panel policy name an "
                                   "organization (none by default)",
    **{name: "shortened with the others by one factor (shortened_timeouts), keeping the "
             "shipped ratios, so a test of silence or consent takes seconds, not minutes"
       for name in TIMEOUTS},
}


def shortened_timeouts(factor: float) -> dict[str, float | int]:
    """All four timeouts times ``factor``; the consent timeout must stay whole seconds."""
    defaults = ServerSettings()
    consent = defaults.consent_timeout * factor
    if consent != round(consent) or consent < 1:
        raise ValueError(f"factor {factor} leaves no whole-second consent timeout")
    return {"heartbeat_interval": defaults.heartbeat_interval * factor,
            "heartbeat_timeout": defaults.heartbeat_timeout * factor,
            "first_message_timeout": defaults.first_message_timeout * factor,
            "consent_timeout": round(consent)}


def check_deviations(changes: Mapping[str, Any]) -> None:
    """Refuse a change that is not listed, or a timeout changed out of proportion."""
    unlisted = sorted(set(changes) - set(DEVIATIONS))
    if unlisted:
        raise AssertionError(f"test deviations {unlisted} are not listed with a reason in "
                             "server/remote_server/testing/deviations.py")
    touched = [name for name in TIMEOUTS if name in changes]
    if touched:
        defaults = dataclasses.asdict(ServerSettings())
        factors = {name: float(changes.get(name, defaults[name])) / defaults[name]
                   for name in TIMEOUTS}
        if max(factors.values()) - min(factors.values()) > 1e-6:
            raise AssertionError(f"timeouts {touched} shortened out of proportion "
                                 f"({factors}); use shortened_timeouts()")


def test_settings(**changes: Any) -> ServerSettings:
    """``ServerSettings()`` with only the listed deviations applied."""
    check_deviations(changes)
    key = changes.pop("shared_agent_key", None)
    if key is not None:  # a plugin option, set the way REMOTE_SUPPORT_SHARED_AGENT_KEY sets it
        changes["plugin_environ"] = {"AUTH_SHAREDKEY_KEY": key}
    return ServerSettings().replace(**changes)


test_settings.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
