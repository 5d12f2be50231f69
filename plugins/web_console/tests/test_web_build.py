"""The shipped console is exactly what web_src/ builds to, and never evaluates strings."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from remote_server.testing.deviations import test_settings
from remote_server.testing.liveserver import LiveServer, live_server

WEB_SRC = Path(__file__).resolve().parent.parent / "web_src"
STATIC = Path(__file__).resolve().parent.parent / "remote_web_console" / "static"
# What a Content-Security-Policy without 'unsafe-eval' refuses at run time.
STRING_EVALUATION = [
    re.compile(r"(?<![\w$.])eval\s*\("),
    re.compile(r"(?<![\w$])Function\s*\("),
    re.compile(r"\bset(?:Timeout|Interval)\s*\(\s*[\"'`]"),
]


@pytest.mark.slow
def test_shipped_assets_match_a_fresh_build(tmp_path: Path) -> None:
    npm = shutil.which("npm")
    node = shutil.which("node")
    assert npm and node, "Node.js and npm are needed to rebuild the console (scripts/bootstrap)"
    subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=WEB_SRC, check=True,
                   capture_output=True, timeout=300)
    subprocess.run([node, "build.mjs", str(tmp_path)], cwd=WEB_SRC, check=True, timeout=120)
    built = sorted(p.name for p in tmp_path.iterdir())
    shipped = sorted(p.name for p in STATIC.iterdir())
    assert built == shipped
    for name in built:
        assert (tmp_path / name).read_bytes() == (STATIC / name).read_bytes(), (
            f"remote_web_console/static/{name} is stale; "
            "run: cd plugins/web_console/web_src && npm ci && npm run build"
        )


def test_console_pages_reference_only_shipped_assets() -> None:
    for page in ("index.html", "viewer.html"):
        html = (STATIC / page).read_text()
        for asset in ("console.css", "favicon.svg"):
            assert asset in html and (STATIC / asset).exists()
    assert (STATIC / "console.js").exists() and (STATIC / "viewer.js").exists()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    path = tmp_path_factory.mktemp("console-scan")
    settings = test_settings(database_url=f"sqlite:///{path / 'scan.db'}",
                             admin_password="scan-admin-password")
    with live_server(settings) as live:
        yield live


def test_nothing_served_under_console_evaluates_strings(server: LiveServer) -> None:
    """Every file the server serves under /console/, as served, against the patterns a
    strict CSP refuses: eval(, Function( and string arguments to setTimeout/setInterval."""
    names = sorted(p.name for p in STATIC.iterdir())
    assert "viewer.js" in names and "console.js" in names
    for name in names:
        response = httpx.get(f"{server.base_url}/console/{name}", timeout=10)
        assert response.status_code == 200, name
        for pattern in STRING_EVALUATION:
            found = pattern.search(response.text)
            assert found is None, (
                f"/console/{name} evaluates a string: "
                f"...{response.text[max(0, found.start() - 60):found.end() + 60]}...")


@pytest.mark.parametrize("snippet", [
    'x=eval("1")', "new Function('return 1')", "a.b(Function ('x'))", 'setTimeout("go()", 5)',
    "setInterval(`tick()`,1)",
])
def test_the_scan_finds_string_evaluation(snippet: str) -> None:
    assert any(p.search(snippet) for p in STRING_EVALUATION)


@pytest.mark.parametrize("snippet", [
    "setTimeout(connect, 5)", "x.evaluate(1)", "isFunction(y)", "retrieval(3)",
])
def test_the_scan_leaves_ordinary_calls_alone(snippet: str) -> None:
    assert not any(p.search(snippet) for p in STRING_EVALUATION)
