"""``remote-viewer``: connect to a session from a script, save a screenshot, record frames."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="remote-viewer", description=__doc__)
    parser.add_argument("--server", help="server base URL, http(s)://host:port")
    parser.add_argument("--token", help="viewer token from POST /api/sessions/:id/viewer-token")
    sub = parser.add_subparsers(dest="command")
    shot = sub.add_parser("screenshot", help="save the first full frame as PNG")
    shot.add_argument("output")
    record = sub.add_parser("record", help="record frames to a directory")
    record.add_argument("directory")
    record.add_argument("--frames", type=int, default=30)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.command:
        build_parser().print_help()
        return 2
    print("remote-viewer: the viewer client is not part of this build yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
