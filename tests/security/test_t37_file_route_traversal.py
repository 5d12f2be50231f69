"""T37: the one file-serving route (the console's static files) serves nothing outside its root.

SimpleHelp CVE-2024-57727 was ``GET /toolbox-resource/../serverconfig.xml``.
The request lines go on the wire as written (HTTP clients would normalise
them); whatever the answer, its body is one of the shipped static files or
no file at all, never the code beside them, the database or ``/etc/passwd``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from remote_server.testing.liveserver import LiveServer
from remote_web_console import STATIC_DIR
from sqlalchemy.engine import make_url

from .conftest import raw_request

SHIPPED = {p.read_bytes() for p in STATIC_DIR.rglob("*") if p.is_file()}
UP = ["..", "%2e%2e", "%2E%2E", ".%2e", "%252e%252e", "%c0%ae%c0%ae", "....", "..;"]
SEP = ["/", "%2f", "%2F", "%5c", "\\", "%252f"]
DEEP = 12  # enough ".." to climb from anywhere to the root


def targets(database: Path) -> list[str]:
    found = [f"/console/{up}{sep}__init__.py" for up in UP for sep in SEP]
    found += [f"/console/{up}{sep}{up}{sep}remote_web_console{sep}__init__.py" for up in UP
              for sep in SEP]
    found += ["/console/" + (".." + sep) * DEEP + f"etc{sep}passwd" for sep in SEP]
    found += ["/console/" + ("%2e%2e" + sep) * DEEP + f"etc{sep}passwd" for sep in SEP]
    found += ["/console//etc/passwd", "/console/%2fetc%2fpasswd", "/console/file:///etc/passwd",
              "/console/" + "../" * DEEP + str(database).lstrip("/"),
              "/console/%2f" + "%2f".join(database.parts[1:]),
              "/console/static/../../__init__.py", "/console/./../__init__.py",
              "/console/__init__.py",
              "/console/../../pyproject.toml", "/%2e%2e/%2e%2e/etc/passwd",
              "/console/viewer.html/../../__init__.py", "/console/viewer.html%00.py"]
    return found


@pytest.fixture(scope="module")
def database(server: LiveServer) -> Path:
    return Path(make_url(server.ctx.settings.database_url).database or "")


def test_t37_nothing_outside_the_static_root_is_served(server: LiveServer,
                                                       database: Path) -> None:
    assert database.exists()
    leaks = []
    for target in targets(database):
        for method in ("GET", "HEAD"):
            r = raw_request(server, method, target)
            if r.status == 200 and method == "GET" and r.body not in SHIPPED:
                leaks.append((target, r.body[:60]))
            for marker in (b"register_web_apps", b"root:x:0:0", b"SQLite format 3",
                           b"[project]"):
                if marker in r.body:
                    leaks.append((target, marker))
    assert not leaks, leaks


def test_t37_the_static_files_themselves_are_served(server: LiveServer) -> None:
    """The attack above would prove nothing if the route served nothing at all."""
    r = raw_request(server, "GET", "/console/viewer.html")
    assert r.status == 200 and r.body in SHIPPED
    r = raw_request(server, "GET", "/console/./viewer.html")
    assert r.status in (200, 404) and (r.status == 404 or r.body in SHIPPED)
