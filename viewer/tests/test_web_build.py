"""The shipped console build is exactly what the sources in web_src/ build to."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

WEB_SRC = Path(__file__).resolve().parent.parent / "web_src"
STATIC = Path(__file__).resolve().parent.parent / "remote_viewer" / "static"


@pytest.mark.slow
def test_shipped_assets_match_a_fresh_build(tmp_path: Path) -> None:
    npm = shutil.which("npm")
    node = shutil.which("node")
    assert npm and node, "Node.js and npm are needed to rebuild the console (Debian: nodejs npm)"
    if not (WEB_SRC / "node_modules" / ".bin" / "esbuild").exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=WEB_SRC, check=True,
                       capture_output=True, timeout=300)
    subprocess.run([node, "build.mjs", str(tmp_path)], cwd=WEB_SRC, check=True, timeout=120)
    built = sorted(p.name for p in tmp_path.iterdir())
    shipped = sorted(p.name for p in STATIC.iterdir())
    assert built == shipped
    for name in built:
        assert (tmp_path / name).read_bytes() == (STATIC / name).read_bytes(), (
            f"remote_viewer/static/{name} is stale; "
            "run: cd viewer/web_src && npm ci && npm run build"
        )


def test_console_pages_reference_only_shipped_assets() -> None:
    for page in ("index.html", "viewer.html"):
        html = (STATIC / page).read_text()
        for asset in ("console.css",):
            assert asset in html and (STATIC / asset).exists()
    assert (STATIC / "console.js").exists() and (STATIC / "viewer.js").exists()
