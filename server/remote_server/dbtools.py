"""``remote-support backup``, ``restore`` and ``migrate-db``: thin commands over the store
plugin's :class:`~remote_core.interfaces.StoreAdmin`, which does the database's part."""

from __future__ import annotations

import argparse
from pathlib import Path

from remote_core.errors import ConfigError
from remote_core.interfaces import StoreAdmin
from remote_core.plugins import get_plugin_manager

from .settings import ServerSettings

__all__ = ["add_parsers", "run", "store_admin"]

COMMANDS = ("backup", "restore", "migrate-db")


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    backup = sub.add_parser("backup", help="write a consistent backup of the database to FILE "
                                           "(safe while the server runs)")
    ServerSettings.add_arguments(backup)
    backup.add_argument("file", type=Path, metavar="FILE")
    restore = sub.add_parser("restore", help="replace the database by the backup in FILE")
    ServerSettings.add_arguments(restore)
    restore.add_argument("file", type=Path, metavar="FILE")
    restore.add_argument("--force", action="store_true",
                         help="replace a database that holds data (default: refuse)")
    copy = sub.add_parser("migrate-db", help="copy the database into an empty PostgreSQL "
                                             "database, verified table by table")
    ServerSettings.add_arguments(copy)
    copy.add_argument("--to", dest="target_url", required=True, metavar="postgresql://...",
                      help="the empty PostgreSQL database to fill")


def store_admin(settings: ServerSettings) -> StoreAdmin:
    """The operator's tools of the store plugin that serves ``settings.database_url``."""
    spec = get_plugin_manager(settings).store_for_url(settings.database_url)
    if spec.admin is None:
        raise ConfigError(f"the storage plugin {spec.name!r} has no backup or copy tools")
    return spec.admin(settings.database_url)


def run(settings: ServerSettings, args: argparse.Namespace) -> int:
    admin = store_admin(settings)
    if args.command == "backup":
        print(admin.backup(args.file))
    elif args.command == "restore":
        print(admin.restore(args.file, force=args.force))
    else:
        target = str(args.target_url)
        if not target.startswith(("postgresql://", "postgresql+")):
            raise ConfigError("--to must be a PostgreSQL URL: postgresql://user@host:port/db")
        copied = admin.copy_to(target, print)
        total = sum(rows for _name, rows in copied)
        print(f"copied {total} rows in {len(copied)} tables; point REMOTE_SUPPORT_DATABASE_URL "
              "at the new database and restart the servers")
    return 0
