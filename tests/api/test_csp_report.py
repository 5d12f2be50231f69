"""POST /api/csp-report: browsers' policy-violation reports, logged one warning each.

Public by necessity, so its limits are the point: a capped body, a per-client
rate limit, content types browsers actually send, and log lines a report
cannot forge.
"""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from remote_server.testing.liveserver import ApiClient, LiveServer, ManualClock, assert_problem
from remote_server.web.api.csp import MAX_REPORT_BYTES
from remote_server.web.ratelimit import RateLimiter

REPORT_URI_BODY = {"csp-report": {
    "document-uri": "https://support.example/console/viewer.html",
    "violated-directive": "script-src-elem", "effective-directive": "script-src-elem",
    "blocked-uri": "https://cdn.example/inject.js", "source-file": "", "line-number": 0,
    "disposition": "enforce", "original-policy": "script-src 'self'"}}
REPORT_TO_BATCH = [
    {"type": "csp-violation", "age": 10, "url": "https://support.example/console/",
     "body": {"documentURL": "https://support.example/console/", "effectiveDirective": "img-src",
              "blockedURL": "https://tracker.example/p.png", "sourceFile": "", "lineNumber": 0,
              "disposition": "enforce"}},
    {"type": "deprecation", "body": {"id": "x"}},
]
LOGGER = "remote_server.web.api.csp"


def post(client: ApiClient, body: object, kind: str = "application/csp-report") -> httpx.Response:
    return client.post("/api/csp-report", content=json.dumps(body).encode(),
                       headers={"Content-Type": kind})


def violations_logged(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


def test_a_report_uri_report_is_one_warning(anon: ApiClient,
                                            caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, LOGGER):
        r = post(anon, REPORT_URI_BODY)
    assert r.status_code == 204, r.text
    [record] = violations_logged(caplog)
    line = record.getMessage()
    assert "csp violation" in line and "script-src-elem" in line and "cdn.example" in line
    assert anon.ip in line and "original-policy" not in line
    assert record.csp_directive == "script-src-elem"  # type: ignore[attr-defined]


def test_a_report_to_batch_logs_each_violation_only(anon: ApiClient,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, LOGGER):
        r = post(anon, REPORT_TO_BATCH, "application/reports+json")
    assert r.status_code == 204, r.text
    [record] = violations_logged(caplog)
    assert "img-src" in record.getMessage() and "tracker.example" in record.getMessage()


def test_a_report_cannot_forge_log_lines(anon: ApiClient,
                                         caplog: pytest.LogCaptureFixture) -> None:
    fake_line = "x\n2026-01-01 ERROR fake: admin logged in" + "y" * 5000
    forged = {"csp-report": {**REPORT_URI_BODY["csp-report"], "blocked-uri": fake_line}}
    with caplog.at_level(logging.WARNING, LOGGER):
        assert post(anon, forged).status_code == 204
    [record] = violations_logged(caplog)
    assert "\n" not in record.getMessage() and len(record.getMessage()) < 3000


@pytest.mark.parametrize(("body", "kind", "status", "word"), [
    (b"{not json", "application/csp-report", 400, "JSON"),
    (b'{"hello": 1}', "application/csp-report", 422, "CSP report"),
    (b"[1, 2]", "text/plain", 415, "application/csp-report"),
    (b"[" * 100_000, "application/csp-report", 413, "larger than"),
    (b"[" * 10_000, "application/csp-report", 400, "nested too deeply"),
    (b'{"csp-report": {}}' + b" " * MAX_REPORT_BYTES, "application/csp-report", 413,
     "larger than"),
])
def test_bad_reports_get_a_clear_problem(anon: ApiClient, body: bytes, kind: str, status: int,
                                         word: str) -> None:
    r = anon.post("/api/csp-report", content=body, headers={"Content-Type": kind})
    assert_problem(r, status, word)


def test_reports_are_rate_limited_per_client(server: LiveServer, clock: ManualClock) -> None:
    _bucket, limit, window = RateLimiter.CSP_REPORT
    client, other = ApiClient(server), ApiClient(server)
    for _ in range(limit):
        assert post(client, REPORT_URI_BODY).status_code == 204
    refused = post(client, REPORT_URI_BODY)
    assert_problem(refused, 429, "CSP reports")
    assert int(refused.headers["Retry-After"]) > 0
    assert post(other, REPORT_URI_BODY).status_code == 204
    clock.advance(window)
    assert post(client, REPORT_URI_BODY).status_code == 204
