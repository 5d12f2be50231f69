"""``remote-agent``: run a managed (``--key``) or attended (``--code``) agent, or install one."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="remote-agent", description=__doc__)
    parser.add_argument("--version", action="version", version=__version__)
    parser.add_argument("--server", help="server base URL, http(s)://host:port")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--key", help="per-agent key cak_... (managed agent)")
    who.add_argument("--code", help="support code XXX-XXX-XXX (attended agent)")
    parser.add_argument("--config", help="agent config file (default: per-user config dir)")
    parser.add_argument("--post-update", action="store_true", help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command")
    install = sub.add_parser("install", help="store settings and register start-up")
    install.add_argument("--server", required=True)
    install.add_argument("--key", required=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.server:
        build_parser().error("--server is required")
    print("remote-agent: the streaming runtime is not part of this build yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
