"""``remote-support``: serve, migrate, plugins, user, secret, release, drain, backup,
restore, migrate-db, doctor."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from remote_core.errors import ConfigError, RemoteSupportError, StoreError
from remote_core.plugins import Plugins, discover, get_plugin_manager

from . import __version__
from .observe import logs
from .settings import ServerSettings
from .web.context import open_recording_store, open_store

__all__ = ["main"]

log = logging.getLogger("remote_support")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="remote-support", description=__doc__)
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the server (migrates the database first)")
    ServerSettings.add_arguments(serve)
    migrate = sub.add_parser("migrate", help="apply database migrations and exit")
    ServerSettings.add_arguments(migrate)
    plugins = sub.add_parser("plugins", help="list loaded plugins and the hooks they implement")
    ServerSettings.add_arguments(plugins)
    user = sub.add_parser("user", help="manage operator accounts")
    ServerSettings.add_arguments(user)
    user_sub = user.add_subparsers(dest="user_command", required=True)
    create = user_sub.add_parser("create", help="create a user (password read from stdin or "
                                                "prompted)")
    create.add_argument("username")
    create.add_argument("--admin", action="store_true", help="make the user an administrator")
    create.add_argument("--permission", action="append", default=[],
                        help="grant a permission (repeatable)")
    user_sub.add_parser("list", help="list users")
    passwd = user_sub.add_parser("set-password", help="set a user's password")
    passwd.add_argument("username")
    secret = sub.add_parser("secret", help="manage the token-signing keys")
    ServerSettings.add_arguments(secret)
    secret_sub = secret.add_subparsers(dest="secret_command", required=True)
    rotate = secret_sub.add_parser(
        "rotate", help="sign new tokens with a new random key; the previous key keeps "
                       "verifying for the overlap (audited)")
    rotate.add_argument("--overlap", type=float, default=None,
                        help="seconds the previous key keeps verifying (at least the longest "
                             "token lifetime; default: that plus --signing-key-refresh, for "
                             "running servers to notice)")
    recordings = sub.add_parser("recordings", help="list session recordings, verify one")
    ServerSettings.add_arguments(recordings)
    recordings_sub = recordings.add_subparsers(dest="recordings_command", required=True)
    listed = recordings_sub.add_parser("list", help="the newest recordings, newest first")
    listed.add_argument("--session-id", help="only this session's")
    listed.add_argument("--limit", type=int, default=50)
    check = recordings_sub.add_parser(
        "verify", help="check a recording's segments against the hash chain in the database "
                       "(exit status 1 when they differ)")
    check.add_argument("recording_id")
    export = recordings_sub.add_parser(
        "export", help="write a recording's video to an .mp4 or .webm file once it verifies "
                       "(H.264 and VP9 as relayed; raw frames encoded; needs the codec "
                       "plugins installed)")
    export.add_argument("recording_id")
    export.add_argument("out", type=Path, help="the file to write: NAME.mp4 or NAME.webm")
    drain = sub.add_parser("drain", help="cluster mode: ask a node to stop taking sessions and "
                                          "hand its agents to the other nodes, as SIGTERM does")
    ServerSettings.add_arguments(drain)
    drain.add_argument("node", help="the node's id (REMOTE_SUPPORT_NODE_ID)")
    _release_parser(sub)
    from . import dbtools

    dbtools.add_parsers(sub)
    doctor = sub.add_parser("doctor", help="check the configuration, database, bus, "
                                           "certificates and clock; say how to fix what is wrong")
    ServerSettings.add_arguments(doctor)
    return parser


def _release_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    release = sub.add_parser("release", help="build and sign the agent's single-file release")
    release_sub = release.add_subparsers(dest="release_command", required=True)
    build = release_sub.add_parser("build", help="build remote-agent-<version>.pyz and print "
                                                 "its SHA-256")
    build.add_argument("--version", dest="release_version", default=None,
                       help="version to stamp (default: the installed agent's)")
    build.add_argument("--output", type=Path, default=None,
                       help="file to write (default: dist/remote-agent-<version>.pyz)")
    build.add_argument("--python", default="/usr/bin/env python3",
                       help="interpreter for the #! line")
    build.add_argument("--wheels", type=Path, default=None,
                       help="a directory of the project's wheels (uv build --all-packages): "
                            "build the self-contained release, with every library, from them")
    build.add_argument("--plugins", default=None,
                       help="the release's plugins, comma-separated (with --wheels; default: "
                            "codec_raw_zstd,capture_mss,input_pynput,consent_dialog)")
    build.add_argument("--build-python", default=sys.executable,
                       help="with --wheels: an interpreter of the minor version the machines "
                            "run (the compiled libraries are built for it; default: this one)")
    keygen = release_sub.add_parser("keygen", help="create an Ed25519 publisher key and "
                                                   "print the public key agents pin")
    keygen.add_argument("--private-key", type=Path, required=True)
    sign = release_sub.add_parser("sign", help="write <artifact>.sig with the publisher key")
    sign.add_argument("artifact", type=Path)
    sign.add_argument("--private-key", type=Path, required=True)


def cmd_release(args: argparse.Namespace) -> int:
    from . import release

    if args.release_command == "build":
        if args.wheels is not None:
            from .release_bundle import AGENT_PLUGINS, build_bundle

            plugins = ([p.strip() for p in args.plugins.split(",") if p.strip()]
                       if args.plugins else list(AGENT_PLUGINS))
            built = build_bundle(args.wheels, plugins, args.output, args.release_version,
                                 python=args.build_python, interpreter=args.python)
        elif args.plugins is not None:
            raise RemoteSupportError("--plugins needs --wheels: a release with its plugin "
                                     "set is built from the project's wheels")
        else:
            built = release.build_agent(args.output, args.release_version, args.python)
        print(f"built {built.path} (remote-agent {built.version})")
        print(f"sha256 {built.sha256}")
    elif args.release_command == "keygen":
        public = release.generate_keypair(args.private_key)
        print(f"private key written to {args.private_key} (keep it off the server)")
        print(f"update_public_key = \"{public}\"")
    else:
        signature = release.sign_file(args.artifact, args.private_key)
        print(f"signature written to {signature}; publish it next to the artifact")
    return 0


def _settings(args: argparse.Namespace) -> ServerSettings:
    return ServerSettings.load(cli=vars(args))


def cmd_plugins(settings: ServerSettings) -> int:
    """Loaded plugins with their hooks, then installed ones that are not loaded and why;
    exit status 1 when one of those cannot load (built for another core, or broken)."""
    plugins = get_plugin_manager(settings)
    for info in plugins.describe():
        print(f"{info.name:<18} {info.distribution} {info.version}")
        print(f"{'':<18} hooks: {', '.join(info.hooks) or '(none)'}")
    broken = False
    if plugins.not_loaded:
        print("\ninstalled, not loaded:")
    for name, why in plugins.not_loaded.items():
        chosen = why.startswith(("not requested", "blocked"))
        broken |= not chosen
        print(f"{name:<18} {'' if chosen else 'error: '}{why}")
    return 1 if broken else 0


async def _migrate(settings: ServerSettings) -> int:
    store = open_store(settings, get_plugin_manager(settings))
    await store.open()
    await store.close()
    print(f"database at {settings.database_url.split('@')[-1]} is at the newest schema")
    return 0


def _read_password(prompt: str) -> str:
    if sys.stdin.isatty():
        first = getpass.getpass(prompt)
        if getpass.getpass("again: ") != first:
            raise RemoteSupportError("the passwords differ")
        return first
    return sys.stdin.readline().rstrip("\n")


async def _user(settings: ServerSettings, args: argparse.Namespace) -> int:
    from .web.users import create_user, set_password

    store = open_store(settings, get_plugin_manager(settings))
    await store.open()
    try:
        if args.user_command == "list":
            for user in await store.list_users():
                flag = " (disabled)" if user.disabled else ""
                print(f"{user.username:<24} {user.role:<11} {','.join(user.permissions)}{flag}")
        elif args.user_command == "create":
            password = _read_password("password: ")
            role = "admin" if args.admin else "technician"
            await create_user(store, args.username, password, role, args.permission)
            print(f"created {role} {args.username}")
        elif args.user_command == "set-password":
            await set_password(store, args.username, _read_password("new password: "))
            print(f"password of {args.username} changed")
    finally:
        await store.close()
    return 0


async def _secret(settings: ServerSettings, args: argparse.Namespace) -> int:
    from .relay.audit import Audit
    from .web.signing import rotate

    plugins = get_plugin_manager(settings)
    store = open_store(settings, plugins)
    await store.open()
    try:
        done = await rotate(settings, store, Audit(store, plugins), args.overlap)
    finally:
        await store.close()
    print(f"tokens are now signed with key {done.current}; key {done.previous} verifies "
          f"until {done.previous_until.isoformat(timespec='seconds')} (running servers "
          f"switch within {settings.signing_key_refresh:g} s)")
    return 0


def plugin_set(settings: ServerSettings) -> Plugins:
    """The server's plugins, checked before anything starts, so what cannot work ends
    start-up with one clear line (exit status 2) rather than a traceback from inside."""
    if settings.plugins == () and not settings.extra_plugins:
        raise ConfigError("REMOTE_SUPPORT_PLUGINS is empty: name the plugins to load "
                          "(at least a storage plugin, store_sql) or leave it unset for the "
                          "built-ins")
    plugins = get_plugin_manager(settings)
    plugins.store_for_url(settings.database_url)
    if settings.recording_rules().records_any:
        open_recording_store(settings, plugins)  # a URL it cannot use stops start-up too
    loaded = plugins.describe()
    log.info("plugins loaded: %s", ", ".join(f"{p.name} {p.version}".strip() for p in loaded))
    if settings.plugins is None and not settings.autoload_plugins:
        installed = set(discover())
        for name in settings.DEFAULT_PLUGINS or ():
            if name not in installed and name not in settings.block_plugins:
                log.warning("built-in plugin %s is not installed; the server runs without it",
                            name)
    return plugins


async def _drain(settings: ServerSettings, node: str) -> int:
    if settings.bus_url is None:
        raise ConfigError("drain works in cluster mode: set REMOTE_SUPPORT_BUS_URL")
    import json

    import nats
    from nats.errors import NoRespondersError
    from nats.errors import TimeoutError as NatsTimeout

    from .cluster.node import drain_subject

    nc = await nats.connect(settings.bus_url, connect_timeout=5, max_reconnect_attempts=0)
    try:
        reply = await nc.request(drain_subject(settings.cluster_name, node), b"{}", timeout=5)
    except (NoRespondersError, NatsTimeout):
        print(f"remote-support: no node {node!r} answers in cluster "
              f"{settings.cluster_name!r}", file=sys.stderr)
        return 1
    finally:
        await nc.close()
    answer = json.loads(reply.data)
    print(f"node {answer['node']} is draining: its {answer['sessions']} session(s) reconnect "
          "through the other nodes")
    return 0


def cmd_serve(settings: ServerSettings) -> int:
    from .web import create_app
    from .web.serving import serve

    plugins = plugin_set(settings)
    if settings.recording_rules().records_any:
        asyncio.run(_reach_recordings(settings, plugins))
    serve(create_app(settings, plugins), settings)
    return 0


async def _reach_recordings(settings: ServerSettings, plugins: Plugins) -> None:
    """A recording store that cannot be reached stops start-up in one line (the server
    would otherwise record nothing, or fail at its first recording)."""
    recordings = open_recording_store(settings, plugins)
    try:
        await recordings.open()
    except StoreError as exc:
        raise ConfigError(f"setting 'recordings_url': {exc}") from None
    finally:
        await recordings.close()


async def _recordings(settings: ServerSettings, args: argparse.Namespace) -> int:
    from .recordings import export_recording, verify_recording

    plugins = get_plugin_manager(settings)
    store = open_store(settings, plugins)
    await store.open()
    try:
        if args.recordings_command == "list":
            for r in await store.list_recordings(session_id=args.session_id, limit=args.limit):
                print(f"{r.id}  {r.started_at.isoformat(timespec='seconds')}  {r.state:<10} "
                      f"session {r.session_id}  {r.segments} segments, {r.bytes} bytes"
                      + (f"  ({r.reason})" if r.reason else ""))
            return 0
        recordings = open_recording_store(settings, plugins)
        await recordings.open()
        try:
            if args.recordings_command == "export":
                record, exported = await export_recording(settings, store, recordings,
                                                          args.recording_id, args.out)
                print(f"wrote {args.out}: {exported.frames} frames of {exported.width}x"
                      f"{exported.height}, {exported.codec} "
                      f"{'as recorded' if exported.remuxed else 'encoded'}")
                return 0
            record, verdict = await verify_recording(store, recordings, args.recording_id)
        finally:
            await recordings.close()
    finally:
        await store.close()
    if verdict.intact:
        print(f"recording {record.id} is intact: {verdict.segments} segments, SHA-256 "
              f"{verdict.final} ({record.state}{': ' + record.reason if record.reason else ''})")
        return 0
    print(f"recording {record.id} is NOT intact: {verdict.reason}")
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command != "migrate":  # `migrate` keeps Alembic's step-by-step lines
        from .web.startup import quiet_libraries

        quiet_libraries()
    try:
        if args.command == "release":
            return cmd_release(args)
        if args.command == "doctor":
            from .doctor import doctor

            logging.getLogger().setLevel(logging.WARNING)  # its report is the output
            return doctor(vars(args))
        settings = _settings(args)
        logs.configure(settings.log_level, settings.log_format)
        if args.command == "plugins":
            return cmd_plugins(settings)
        if args.command == "migrate":
            return asyncio.run(_migrate(settings))
        if args.command == "user":
            return asyncio.run(_user(settings, args))
        if args.command == "secret":
            return asyncio.run(_secret(settings, args))
        if args.command == "recordings":
            return asyncio.run(_recordings(settings, args))
        if args.command == "drain":
            return asyncio.run(_drain(settings, args.node))
        if args.command in ("backup", "restore", "migrate-db"):
            from . import dbtools

            return dbtools.run(settings, args)
        return cmd_serve(settings)
    except RemoteSupportError as exc:
        print(f"remote-support: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
