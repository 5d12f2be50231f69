"""Content-Security-Policy violation reports from browsers (``report-uri`` and ``report-to``).

The console's policy names this endpoint, so a page that a reverse proxy, an
extension or a bad build breaks shows up in the server's log as one warning a
report, instead of as a blank screen nobody can explain. Browsers send these
without credentials, so it is public and kept small: a capped body, a
per-client rate limit, and only the fields that say what broke, each cut short
and JSON-quoted so a report cannot forge log lines.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ..bodies import parse_json, read_body
from ..problem import Problem
from .endpoint import Call, Endpoint

__all__ = ["ENDPOINTS", "MAX_REPORT_BYTES", "violations"]

log = logging.getLogger(__name__)

MAX_REPORT_BYTES = 16 * 1024
MAX_REPORTS = 20
MAX_FIELD_CHARS = 300
CONTENT_TYPES = ("application/csp-report", "application/reports+json", "application/json")
# Our name for each field: its name in a report-uri body, then in a report-to body.
FIELDS = {
    "document": ("document-uri", "documentURL"),
    "directive": ("effective-directive", "effectiveDirective"),
    "blocked": ("blocked-uri", "blockedURL"),
    "source": ("source-file", "sourceFile"),
    "line": ("line-number", "lineNumber"),
    "sample": ("script-sample", "sample"),
    "disposition": ("disposition", "disposition"),
}


def violations(data: Any) -> list[dict[str, str]]:
    """The violations in a ``report-uri`` body (one object) or a ``report-to`` batch."""
    if isinstance(data, dict) and isinstance(data.get("csp-report"), dict):
        bodies = [data["csp-report"]]
    elif isinstance(data, list):
        bodies = [item["body"] for item in data[:MAX_REPORTS]
                  if isinstance(item, dict) and item.get("type") == "csp-violation"
                  and isinstance(item.get("body"), dict)]
    else:
        raise Problem(422, "expected a CSP report: {\"csp-report\": {...}} or a report-to batch")
    found = []
    for body in bodies:
        found.append({name: str(body.get(old, body.get(new, "")))[:MAX_FIELD_CHARS]
                      for name, (old, new) in FIELDS.items()})
    return found


async def report_violation(call: Call) -> None:
    wait = await call.ctx.limiter.check_csp_report(call.ip)
    if wait is not None:
        raise Problem.rate_limited(wait, "too many CSP reports from this address")
    kind = call.request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in CONTENT_TYPES:
        raise Problem(415, f"a CSP report is sent as one of {', '.join(CONTENT_TYPES)}")
    raw = await read_body(call.request, MAX_REPORT_BYTES, call.ctx.settings.request_body_timeout)
    for violation in violations(parse_json(raw)):
        log.warning("csp violation %s client=%s", json.dumps(violation, sort_keys=True),
                    call.ip, extra={"event": "csp_violation", "client_ip": call.ip,
                                    **{f"csp_{k}": v for k, v in violation.items()}})


ENDPOINTS = [
    Endpoint("POST", "/api/csp-report", report_violation,
             "Browsers report Content-Security-Policy violations of the console here "
             f"(report-uri and report-to; no auth; at most {MAX_REPORT_BYTES} bytes; "
             "60/min/IP); each is logged as one warning", access="public", status=204,
             tag="console", store=False,
             responses=((400, "not JSON"), (408, "the body did not arrive in time"),
                        (413, "body too large"),
                                       (415, "not a report content type"),
                                       (422, "not a CSP report"), (429, "rate limit"))),
]
