"""The committed generated code is exactly what the pinned generator makes from proto/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_generated_code_matches_proto(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_proto"), str(tmp_path)],
                   check=True, capture_output=True)
    for name in ("remote_support_pb2.py", "remote_support_pb2.pyi"):
        committed = (ROOT / "remote_core" / "_proto" / name).read_text()
        fresh = (tmp_path / name).read_text()
        assert fresh == committed, (
            f"remote_core/_proto/{name} is stale; run: uv run python scripts/gen_proto"
        )


def test_only_the_wire_module_imports_generated_code() -> None:
    importers = [
        path.relative_to(ROOT)
        for base in ("remote_core", "plugins", "agent", "viewer")
        for path in (ROOT / base).rglob("*.py")
        if "_proto" not in path.parts and "remote_support_pb2" in path.read_text()
    ]
    assert importers == [Path("remote_core/protocol/_wire.py")]
