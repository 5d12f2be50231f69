"""``remote-agent``: run a managed (``--key``) or attended (``--code``) agent, or install one."""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

import anyio
import anyio.from_thread
import anyio.lowlevel

from remote_core.errors import RemoteSupportError, SessionRefused
from remote_core.plugins import get_plugin_manager
from remote_core.supportcode import normalize_support_code

from . import __version__
from .backstage import shell_spec
from .chat import ChatChannel
from .chat_window import open_chat_window
from .config import AgentConfig, default_config_path, machine_uid
from .devices import open_devices
from .install import install, uninstall, updates_apply
from .panel_window import SessionPanel, open_session_panel
from .presence import Presence, describe
from .runner import LOST, run_agent
from .session import AgentSession, Ending
from .settings import AgentSettings
from .update import Updater
from .update_files import UpdateFiles, running_artifact

__all__ = ["build_parser", "main"]

log = logging.getLogger("remote_agent")


def event_loop_options() -> dict[str, bool]:
    """anyio's asyncio options for the agent: uvloop where it is installed (not on
    Windows), as the server runs. Its turn of the loop is C: a typed word's frame left
    the agent 0.1-0.15 ms sooner in ``bench/browser.py``, at a tenth less of the CPU."""
    return {"use_uvloop": importlib.util.find_spec("uvloop") is not None}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="remote-agent", description=__doc__)
    parser.add_argument("--version", action="version", version=__version__)
    parser.add_argument("--server", help="server base URL, http(s)://host:port")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--key", help="the machine's credential, a cak_... agent key or another "
                                   "loaded auth method's (managed agent)")
    who.add_argument("--code", help="support code XXX-XXX-XXX (attended agent)")
    parser.add_argument("--config", type=Path, default=None,
                        help=f"agent config file (default: {default_config_path()})")
    parser.add_argument("--log-level", default="info", help="debug, info, warning, error")
    parser.add_argument("--post-update", action="store_true", help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command")
    inst = sub.add_parser("install", help="store settings and register start-up")
    inst.add_argument("--server", dest="install_server", required=True)
    inst.add_argument("--key", dest="install_key", required=True)
    inst.add_argument("--organization", default="")
    inst.add_argument("--site", default="")
    inst.add_argument("--tag", action="append", default=[])
    sub.add_parser("uninstall", help="remove start-up registration and the config")
    rollback = sub.add_parser("rollback", help="put the build kept by the last update back "
                                               "(stop the agent first)")
    rollback.add_argument("artifact", type=Path, nargs="?", default=None,
                          help="the agent's file (default: the one running this command)")
    return parser


def _restart_argv(post_update: bool) -> list[str]:
    """This process's command line again, flagged ``--post-update`` after an update."""
    argv = [arg for arg in sys.orig_argv if arg != "--post-update"]
    return [*argv, "--post-update"] if post_update else argv


def _run(config: AgentConfig, config_path: Path, token: str, attended: bool,
         post_update: bool = False) -> int:
    settings = AgentSettings.load()
    plugins = get_plugin_manager(settings)
    plugin_set = tuple(f"{p.name} {p.version}".strip() for p in plugins.describe())
    log.info("remote-agent %s, plugins loaded: %s", __version__, ", ".join(plugin_set))
    devices = open_devices(plugins, capture=settings.capture, input=settings.input)
    chat = ChatChannel()
    chat.listen(lambda sender, text: print(f"[chat] {sender}: {text}", file=sys.stderr,
                                           flush=True))
    presence = Presence()
    presence.listen(lambda connected: print(f"[connected now] {describe(connected)}",
                                            file=sys.stderr, flush=True))
    uid = machine_uid()
    timing = settings.timing()
    updater = Updater.for_this_process(config, attended=attended, post_update=post_update)

    current: list[AgentSession] = []
    shell = partial(shell_spec, attended=attended, user=settings.backstage_user,
                    shell=settings.backstage_shell)

    def make_session() -> AgentSession:
        session = AgentSession(config, token, devices, machine_uid=uid, timing=timing,
                               chat=chat, updater=updater, presence=presence,
                               plugins=plugin_set, shell=shell,
                               file_roots=settings.file_roots)
        current[:] = [session]
        return session

    def end_session() -> None:
        """End session in the panel: the live session ends, on the event loop."""
        if current:
            current[0].end_by_user()

    async def serve() -> Ending:
        token = anyio.lowlevel.current_token()
        window = open_chat_window(
            lambda text: anyio.from_thread.run(chat.reply, text, token=token))
        if window is not None:
            chat.listen(window.show)
        panels: list[SessionPanel] = []

        def show_panel() -> None:
            """Attended: from the start. Managed: once the server's policy says so (its
            StartStream), then while a technician is connected."""
            panel = open_session_panel(
                lambda: anyio.from_thread.run_sync(end_session, token=token),
                window.open if window is not None else None, always=attended)
            if panel is None:
                return
            panels.append(panel)
            presence.listen(panel.show)
            presence.listen_session(panel.session)
            presence.listen_recording(panel.recording)
            if presence.live:  # asked for mid-session: what it would have heard so far
                panel.session(True)
                panel.recording(presence.recording)
                panel.show(presence.connected)

        if attended:
            show_panel()
        else:
            presence.listen_panel(show_panel)
        try:
            return await run_agent(make_session, attended=attended)
        finally:
            for opened in (window, *panels):
                if opened is not None:
                    opened.close()

    try:
        ending = anyio.run(serve, backend_options=event_loop_options())
    except SessionRefused as exc:
        print(f"remote-agent: the server refused the session: {exc}", file=sys.stderr)
        return 1
    except LOST as exc:  # one line, never a traceback
        print(f"remote-agent: no connection to {config.server}: {exc}", file=sys.stderr)
        return 1
    finally:
        devices.close()
    if ending is Ending.UNINSTALL:
        for path in uninstall(config_path):
            log.info("removed %s", path)
        return 0
    if ending in (Ending.RESTART, Ending.UPDATE):
        log.info("restarting%s", " into the update" if ending is Ending.UPDATE else "")
        os.execv(sys.executable,  # noqa: S606 - the same command again
                 _restart_argv(post_update=ending is Ending.UPDATE))
    return 0


def _rollback(artifact: Path | None) -> int:
    artifact = artifact or running_artifact()
    if artifact is None:
        raise ValueError("give the agent's file: remote-agent rollback PATH")
    UpdateFiles(artifact).rollback()
    print(f"{artifact} is the previous build again")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config_path: Path = args.config or default_config_path()
    try:
        config = AgentConfig.load(config_path)
        if args.command == "install":
            config = replace(config, server=args.install_server, key=args.install_key,
                             organization=args.organization or config.organization,
                             site=args.site or config.site,
                             tags=tuple(args.tag) or config.tags)
            for path in install(config, config_path):
                print(f"created {path}")
            if not updates_apply():
                print("remote-agent: warning: installed from the source package, not a "
                      "release build: this agent will not apply updates (it reports them "
                      "as failed). To enable updates, run `install` from a build: "
                      "`python remote-agent.pyz install ...`.", file=sys.stderr)
            return 0
        if args.command == "rollback":
            return _rollback(args.artifact)
        if args.command == "uninstall":
            for path in uninstall(config_path):
                print(f"removed {path}")
            return 0
        if args.server:
            config = replace(config, server=args.server)
        if args.key:
            config = replace(config, key=args.key)
        if not config.server:
            parser.error("--server is required (or run `remote-agent install` first)")
        if not args.code and not config.key:
            parser.error("give --key cak_... (managed) or --code XXX-XXX-XXX (attended)")
        if args.key and normalize_support_code(args.key) is not None:
            parser.error("--key was given a support code; an attended agent takes --code")
        config = config.with_identity(config_path)
        token = args.code or config.key
        return _run(config, config_path, token, attended=bool(args.code),
                    post_update=args.post_update)
    except (ValueError, RemoteSupportError, RuntimeError) as exc:
        print(f"remote-agent: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
