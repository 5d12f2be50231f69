"""The served document passes Spectral's ``spectral:oas`` ruleset with nothing to report:
no error, no warning (descriptions, tags, servers, contact ...).

Spectral is an npm package, pinned in ``spectral/package-lock.json`` and installed with
``npm ci`` as the console's build tools are; without Node.js or the registry the test is
skipped, or fails where services are required (CI).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from remote_server.testing.liveserver import LiveServer

from remote_core.testing.services import unavailable

pytestmark = pytest.mark.slow

SPECTRAL = Path(__file__).resolve().parent / "spectral"


@pytest.fixture(scope="module")
def spectral() -> Path:
    npm, node = shutil.which("npm"), shutil.which("node")
    if not (npm and node):
        unavailable("Node.js and npm are needed to install Spectral (scripts/bootstrap)")
    try:
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts",
                        "--prefer-offline"], cwd=SPECTRAL, check=True, capture_output=True,
                       timeout=600, env={**os.environ, "SCARF_ANALYTICS": "false"})
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        output = getattr(exc, "stderr", b"") or b""
        unavailable(f"npm could not install Spectral: {output.decode(errors='replace')[-500:]}")
    return SPECTRAL / "node_modules" / ".bin" / "spectral"


def test_spectral_oas_reports_nothing(spectral: Path, server: LiveServer,
                                      tmp_path: Path) -> None:
    document = tmp_path / "openapi.json"
    document.write_bytes(httpx.get(f"{server.base_url}/api/openapi.json").content)
    run = subprocess.run([str(spectral), "lint", str(document), "--ruleset",
                          str(SPECTRAL / ".spectral.yaml"), "--format", "json", "--quiet"],
                         capture_output=True, text=True, timeout=300)
    assert run.stdout.strip(), run.stderr
    results = json.loads(run.stdout)
    assert results == [], "\n".join(f"{r['code']} at {'.'.join(map(str, r['path']))}: "
                                    f"{r['message']}" for r in results)
