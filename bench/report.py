"""The one way benchmarks report: a plain-text table on stdout and a JSON file."""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["RESULTS_DIR", "machine", "report"]

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.1f}"
    return str(value)


def report(name: str, rows: Sequence[Mapping[str, Any]], *, title: str = "",
           notes: Sequence[str] = ()) -> Path:
    """Print ``rows`` as a table (columns from the first row) and write ``results/<name>.json``."""
    columns = list(rows[0]) if rows else []
    cells = [[_cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    print(f"\n## {title or name}\n")
    print("| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells:
        print("| " + " | ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) + " |")
    for note in notes:
        print(f"\n{note}")
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps({"name": name, "machine": machine(), "rows": list(rows),
                                "notes": list(notes)}, indent=2, default=str))
    print(f"\n(written to {path.relative_to(RESULTS_DIR.parent.parent)})")
    return path
