"""BACKSTAGE terminals: a shell on a pseudo-terminal for each backstage viewer.

The server sends ``BackstageOpen`` for a viewer; the agent starts a login shell
on a new pseudo-terminal, in a session (and process group) of its own, and
passes its bytes both ways. Output is read only while the viewer's flow-control
window has room (``remote_core.protocol.backstage``): with the window full the
terminal is not read, its buffer fills and the shell blocks on its writes, so
``yes`` costs nothing but a waiting process. When the terminal ends (the viewer
left, the server said ``BackstageClose``, the connection ended) the shell's
whole session is killed: ``SIGHUP`` to every process in it, then ``SIGKILL`` to
what is left a moment later. A process that left the session on its own
(``setsid``, a daemon) is beyond reach, as with any terminal.

Which shell: on an attended session the login shell of the account the agent
runs as; on a managed agent the account and shell of its settings
(``backstage_user``, ``backstage_shell``; default: the agent's own account and
that account's login shell). A different account needs an agent running as root.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from remote_core.protocol import pb
from remote_core.protocol.backstage import (
    DEFAULT_COLS,
    DEFAULT_ROWS,
    MAX_CHUNK,
    Window,
    WindowError,
    size_refusal,
)
from remote_core.textrules import escaped

__all__ = ["MAX_PENDING_INPUT", "Backstage", "ShellSpec", "Terminal", "session_members",
           "shell_spec"]

log = logging.getLogger(__name__)

MAX_PENDING_INPUT = 1024 * 1024
"""Input bytes a terminal holds while its shell does not read them; beyond, input is lost."""
KILL_GRACE = 1.0
"""Seconds between the hang-up and the kill of a terminal's session."""
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

Send = Callable[[str, Any], Awaitable[None]]


@dataclass(frozen=True)
class ShellSpec:
    """How a terminal's shell is started: the program, as a login shell, as whom, where."""

    shell: str
    user: str
    uid: int
    gid: int
    home: str
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def argv(self) -> list[str]:
        """A login shell: ``argv[0]`` is the program's name after a dash."""
        return ["-" + Path(self.shell).name]


def _utf8_locale(env: Mapping[str, str]) -> str:
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        value = env.get(name, "")
        if value:
            return value if "utf-8" in value.lower() or "utf8" in value.lower() else "C.UTF-8"
    return "C.UTF-8"


def shell_spec(*, attended: bool, user: str | None = None, shell: str | None = None,
               environ: Mapping[str, str] | None = None) -> ShellSpec:
    """The shell of a new terminal.

    :param attended: an attended session: the agent's own account and its login shell,
        whatever the settings say (the end user runs the agent; it is their shell).
    :param user: a managed agent's ``backstage_user`` (default: the agent's account).
    :param shell: a managed agent's ``backstage_shell`` (default: the account's login shell).
    :raises ValueError: no such account, or no such shell.

    The agent's own account keeps the agent's ``HOME`` (as a terminal emulator's shell
    does); another account gets the home its account entry names.
    """
    import pwd

    environ = os.environ if environ is None else environ
    if attended or not user:
        entry = pwd.getpwuid(os.getuid())
    else:
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            raise ValueError(f"backstage_user {user!r} is no account on this machine") from None
    program = (shell if shell and not attended else None) or entry.pw_shell or "/bin/sh"
    if not os.path.isabs(program) or not os.access(program, os.X_OK):
        raise ValueError(f"the shell {program!r} is no executable program (give an absolute "
                         "path)")
    own_home = environ.get("HOME") if entry.pw_uid == os.getuid() else None
    home = own_home if own_home and os.path.isabs(own_home) else entry.pw_dir
    env = {
        "HOME": home, "USER": entry.pw_name, "LOGNAME": entry.pw_name,
        "SHELL": program, "PATH": _PATH, "TERM": "xterm-256color", "COLORTERM": "truecolor",
        "LANG": _utf8_locale(environ),
    }
    return ShellSpec(shell=program, user=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid,
                     home=home, env=env)


def session_members(sid: int) -> list[int]:
    """Every process in session ``sid`` (Linux: read from /proc; elsewhere none found)."""
    members = []
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp session ...: comm may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 3 and int(fields[3]) == sid and fields[0] != "Z":  # zombies are gone
            members.append(int(entry.name))
    return members


def _signal_session(sid: int, sig: int) -> None:
    """``sig`` to the shell's process group and to every process of its session (jobs run
    in process groups of their own)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, sig)
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _controlling_terminal() -> None:
    """In the child, after ``setsid``: its standard input becomes its controlling terminal."""
    import fcntl
    import termios

    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """One shell on one pseudo-terminal, for one backstage viewer."""

    def __init__(self, viewer_id: str, spec: ShellSpec, send: Send, *,
                 rows: int = DEFAULT_ROWS, cols: int = DEFAULT_COLS) -> None:
        self.viewer_id = viewer_id
        self.spec = spec
        self._send = send
        self.window = Window()
        self._room = anyio.Event()
        self._input = bytearray()
        self._input_ready = anyio.Event()
        self._size = (rows or DEFAULT_ROWS, cols or DEFAULT_COLS)
        self.master: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.closed = False
        self._killed = False
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    # -- starting ------------------------------------------------------------------------------
    def spawn(self) -> None:
        """Start the shell on a new pseudo-terminal.

        :raises OSError: it could not start (no permission to be that account, ...).
        """
        import pty
        import termios

        master, slave = pty.openpty()
        try:
            attrs = termios.tcgetattr(slave)
            attrs[0] |= getattr(termios, "IUTF8", 0)  # erase whole UTF-8 characters (Linux)
            termios.tcsetattr(slave, termios.TCSANOW, attrs)
            self._set_size(master, *self._size)
            switch = self.spec.uid != os.getuid()
            self.process = subprocess.Popen(
                self.spec.argv, executable=self.spec.shell, stdin=slave, stdout=slave,
                stderr=slave, env=dict(self.spec.env), cwd=self.spec.home,
                start_new_session=True, preexec_fn=_controlling_terminal,
                user=self.spec.uid if switch else None, group=self.spec.gid if switch else None,
                extra_groups=[] if switch else None, close_fds=True)
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        self.master = master
        log.info("backstage terminal %s: %s started as %s (pid %d)", self.viewer_id,
                 self.spec.shell, self.spec.user, self.process.pid)

    @staticmethod
    def _set_size(fd: int, rows: int, cols: int) -> None:
        import fcntl
        import termios

        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    # -- the viewer's messages -------------------------------------------------------------
    def resize(self, rows: int, cols: int) -> None:
        refusal = size_refusal(rows, cols)
        if refusal is not None:
            log.warning("backstage terminal %s: resize ignored: %s", self.viewer_id, refusal)
            return
        self._size = (rows, cols)
        if self.master is not None and not self.closed:
            self._set_size(self.master, rows, cols)  # the kernel tells the shell (SIGWINCH)

    def write(self, data: bytes) -> None:
        """Queue the viewer's input; the writer passes it on as the terminal takes it."""
        if self.closed:
            return
        if len(self._input) + len(data) > MAX_PENDING_INPUT:
            log.warning("backstage terminal %s: %d bytes of input lost: the shell has not "
                        "read the %d before them", self.viewer_id, len(data), len(self._input))
            return
        self._input += data
        self._input_ready.set()

    def ack(self, count: int) -> None:
        try:
            self.window.acked(count)
        except WindowError as exc:
            log.warning("backstage terminal %s: acknowledgement ignored: %s", self.viewer_id,
                        exc)
            return
        self._room.set()

    # -- running ---------------------------------------------------------------------------
    async def run(self) -> None:
        """Pass the output on until the shell ends or :meth:`close`; then say so."""
        reason, code = "", -1
        try:
            with self._scope:
                try:
                    self.spawn()
                except (OSError, subprocess.SubprocessError, ValueError) as exc:
                    reason = f"the shell could not start: {exc}"
                    log.warning("backstage terminal %s: %s", self.viewer_id, reason)
                else:
                    async with anyio.create_task_group() as group:
                        group.start_soon(self._writer)
                        await self._reader()
                        group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._finish()
            self._done.set()
        if self._killed:
            return
        if self.process is not None and self.process.returncode is not None:
            code = self.process.returncode
            reason = (f"the shell exited with status {code}" if code >= 0
                      else f"the shell was ended by signal {-code}")
        with contextlib.suppress(Exception):  # the connection may be gone: nobody to tell
            await self._send("backstage_close", pb.BackstageClose(
                viewer_id=self.viewer_id, reason=reason, exit_code=code))

    async def _reader(self) -> None:
        assert self.master is not None
        while True:
            if self.window.room == 0:
                self._room = anyio.Event()
                await self._room.wait()  # a full window: the shell waits on its terminal
                continue
            await anyio.wait_readable(self.master)
            try:
                data = os.read(self.master, min(MAX_CHUNK, self.window.room))
            except BlockingIOError:
                continue
            except OSError as exc:
                if exc.errno != errno.EIO:  # EIO: every process left the terminal
                    log.warning("backstage terminal %s: read failed: %s", self.viewer_id, exc)
                return
            if not data:
                return
            self.window.sent(len(data))
            await self._send("backstage_data", pb.BackstageData(viewer_id=self.viewer_id,
                                                                data=data))

    async def _writer(self) -> None:
        assert self.master is not None
        while True:
            if not self._input:
                self._input_ready = anyio.Event()
                await self._input_ready.wait()
                continue
            await anyio.wait_writable(self.master)
            try:
                written = os.write(self.master, self._input[:4096])
            except BlockingIOError:
                continue
            except OSError:
                return
            del self._input[:written]

    async def close(self) -> None:
        """End the terminal: kill the shell's whole session and reap the shell; returns once
        they are gone."""
        self._killed = True
        self._scope.cancel()
        await self._done.wait()

    async def _finish(self) -> None:
        """Hang up on the shell's session, kill what is left of it, reap the shell. The shell
        is reaped last: until then its pid (the session's id) cannot be taken by another
        process, so the signals reach this session and nothing else."""
        if self.closed:
            return
        self.closed = True
        self._room.set()
        process = self.process
        if process is not None and process.returncode is None:
            if not _exited(process.pid):
                _signal_session(process.pid, signal.SIGHUP)
                _signal_session(process.pid, signal.SIGCONT)  # a stopped job hears it too
                deadline = time.monotonic() + KILL_GRACE
                while not _exited(process.pid) and time.monotonic() < deadline:  # noqa: ASYNC110
                    await anyio.sleep(0.05)
            _signal_session(process.pid, signal.SIGKILL)  # what ignored the hang-up
            await anyio.to_thread.run_sync(process.wait)
        if self.master is not None:
            with contextlib.suppress(OSError):
                os.close(self.master)
            self.master = None
        log.info("backstage terminal %s closed (shell status %s)", self.viewer_id,
                 process.returncode if process is not None else "none: never started")


def _exited(pid: int) -> bool:
    """Whether child ``pid`` has ended, leaving it unreaped (its pid stays ours). Without
    ``waitid`` (macOS) it cannot be told without reaping: say no, so the grace runs out."""
    if not hasattr(os, "waitid"):
        return False
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


class Backstage:
    """The agent's terminals, by viewer id, for one connection.

    :param spec: makes the shell's :class:`ShellSpec` (raises ``ValueError`` when the
        settings name no usable account or shell).
    """

    def __init__(self, spec: Callable[[], ShellSpec], send: Send) -> None:
        self._spec = spec
        self._send = send
        self.terminals: dict[str, Terminal] = {}

    async def open(self, group: anyio.abc.TaskGroup, message: Any) -> None:
        viewer_id = escaped(message.viewer_id, 64)
        if not viewer_id or viewer_id in self.terminals:
            log.warning("BackstageOpen for %r ignored: no viewer id, or one already open",
                        viewer_id)
            return
        if sys.platform == "win32":
            await self._refuse(viewer_id, "backstage terminals need a POSIX system")
            return
        try:
            spec = self._spec()
        except ValueError as exc:
            await self._refuse(viewer_id, f"the shell could not start: {exc}")
            return
        terminal = Terminal(viewer_id, spec, self._send, rows=message.rows, cols=message.cols)
        self.terminals[viewer_id] = terminal
        log.warning("backstage terminal %s opened for %s", viewer_id,
                    escaped(message.technician_name, 64) or "a technician")
        group.start_soon(self._run, terminal)

    async def _run(self, terminal: Terminal) -> None:
        try:
            await terminal.run()
        finally:
            self.terminals.pop(terminal.viewer_id, None)

    async def _refuse(self, viewer_id: str, reason: str) -> None:
        log.warning("backstage terminal %s refused: %s", viewer_id, reason)
        await self._send("backstage_close", pb.BackstageClose(viewer_id=viewer_id, reason=reason,
                                                              exit_code=-1))

    def data(self, message: Any) -> None:
        terminal = self.terminals.get(message.viewer_id)
        if terminal is not None:
            terminal.write(message.data)

    def resize(self, message: Any) -> None:
        terminal = self.terminals.get(message.viewer_id)
        if terminal is not None:
            terminal.resize(message.rows, message.cols)

    def ack(self, message: Any) -> None:
        terminal = self.terminals.get(message.viewer_id)
        if terminal is not None:
            terminal.ack(message.bytes)

    async def close(self, viewer_id: str) -> None:
        terminal = self.terminals.pop(viewer_id, None)
        if terminal is not None:
            await terminal.close()

    async def close_all(self) -> None:
        """The connection ended: every terminal's shell is killed."""
        for viewer_id in list(self.terminals):
            await self.close(viewer_id)
