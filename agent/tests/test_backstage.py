"""BACKSTAGE terminals on the agent: a real shell on a real pseudo-terminal, no fakes.

And the flow-control window both ends keep (``remote_core.protocol.backstage``), sans-I/O.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from remote_agent.backstage import Backstage, Terminal, session_members, shell_spec

from remote_core.protocol import pb
from remote_core.protocol.backstage import WINDOW, Window, WindowError, size_refusal

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX terminals")


# -- sans-I/O: the window ------------------------------------------------------------------------
def test_the_window_holds_at_most_its_size_in_flight() -> None:
    window = Window(10)
    window.sent(6)
    assert window.room == 4
    with pytest.raises(WindowError, match="room for 4"):
        window.sent(5)
    window.acked(6)
    window.sent(10)
    assert (window.room, window.sent_total, window.acked_total) == (0, 16, 6)


def test_an_acknowledgement_of_more_than_was_sent_is_refused() -> None:
    window = Window(10)
    window.sent(3)
    for bad in (4, -1):
        with pytest.raises(WindowError, match="acknowledgement"):
            window.acked(bad)
    assert window.in_flight == 3
    with pytest.raises(WindowError, match="negative"):
        window.sent(-1)


def test_terminal_sizes_are_bounded() -> None:
    assert size_refusal(24, 80) is None
    assert size_refusal(1, 1000) is None
    for rows, cols in ((0, 80), (24, 0), (1001, 80), (24, 5000)):
        assert "each must be 1 to 1000" in str(size_refusal(rows, cols))


def test_the_shell_is_the_login_shell_with_a_utf8_locale() -> None:
    spec = shell_spec(attended=True, user="nobody", shell="/bin/false",
                      environ={"LANG": "POSIX"})
    assert spec.uid == os.getuid()  # attended: the agent user's own, whatever is set
    assert spec.argv == ["-" + Path(spec.shell).name]
    assert spec.env["LANG"] == "C.UTF-8" and spec.env["TERM"] == "xterm-256color"
    assert "REMOTE_AGENT_PLUGINS" not in spec.env  # the agent's environment stays its own
    managed = shell_spec(attended=False, shell="/bin/sh",
                         environ={"LANG": "de_DE.UTF-8", "HOME": "/srv/agent-home"})
    assert (managed.shell, managed.env["LANG"]) == ("/bin/sh", "de_DE.UTF-8")
    assert managed.home == managed.env["HOME"] == "/srv/agent-home"  # the agent's own home
    assert shell_spec(attended=True, environ={"HOME": "relative"}).home == spec.home
    with pytest.raises(ValueError, match="no account"):
        shell_spec(attended=False, user="no-such-account-here")
    with pytest.raises(ValueError, match="no executable program"):
        shell_spec(attended=False, shell="sh")


# -- a real shell -----------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent runs with a home of its own: its shells read no start-up files of this
    machine's account (which may wait on locks of their own)."""
    monkeypatch.setenv("HOME", str(tmp_path))


class Wire:
    """What the terminal sends, as the server would receive it."""

    def __init__(self) -> None:
        self.output = bytearray()
        self.closed: list[Any] = []
        self.changed = anyio.Event()

    async def send(self, kind: str, message: Any) -> None:
        if kind == "backstage_data":
            self.output += message.data
        else:
            assert kind == "backstage_close"
            self.closed.append(message)
        self.changed.set()
        self.changed = anyio.Event()

    async def until(self, text: bytes) -> None:
        with anyio.fail_after(10):
            while text not in self.output:
                await self.changed.wait()

    async def match(self, pattern: bytes) -> re.Match[bytes]:
        with anyio.fail_after(10):
            while (found := re.search(pattern, self.output)) is None:
                await self.changed.wait()
        return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def bash() -> Any:
    spec = shell_spec(attended=False, shell="/bin/bash")
    return spec.__class__(**{**spec.__dict__, "env": {**spec.env, "PS1": "$ "}})


@pytest.mark.anyio
async def test_a_shell_runs_commands_resizes_and_its_whole_session_dies_with_it() -> None:
    wire = Wire()
    terminal = Terminal("v-1", bash(), wire.send, rows=30, cols=100)
    async with anyio.create_task_group() as group:
        group.start_soon(terminal.run)
        terminal.write(b"echo \xc3\xa4-$((6*7)); stty size\n")
        await wire.until("ä-42".encode())
        await wire.until(b"30 100")
        terminal.resize(40, 132)
        terminal.write(b"stty size; sleep 300 & echo job=$!\n")
        await wire.until(b"40 132")
        job = int((await wire.match(rb"job=(\d+)")).group(1))
        shell = terminal.pid
        assert shell is not None and alive(job)
        assert os.getpgid(shell) == shell and os.getsid(job) == shell  # its own session
        terminal.write(sys.executable.encode() + b" -c 'import signal, time; "
                       b"signal.signal(signal.SIGHUP, signal.SIG_IGN); time.sleep(300)' &\n")
        await anyio.sleep(0.5)
        stubborn = [p for p in session_members(shell) if p not in (shell, job)]
        await terminal.close()
        assert not alive(shell)  # reaped by close()
        # The others were sent SIGKILL; the kernel ends them a moment later.
        with anyio.fail_after(10):
            while alive(job) or any(alive(p) for p in stubborn) or session_members(shell):  # noqa: ASYNC110
                await anyio.sleep(0.05)  # polling the kernel is the point
        group.cancel_scope.cancel()
    assert wire.closed == []  # closed by the viewer's side: nothing to tell


@pytest.mark.anyio
async def test_a_shell_that_exits_says_so() -> None:
    wire = Wire()
    terminal = Terminal("v-2", bash(), wire.send)
    terminal.write(b"exit 3\n")
    with anyio.fail_after(10):
        await terminal.run()
    assert [(m.viewer_id, m.exit_code, m.reason) for m in wire.closed] == [
        ("v-2", 3, "the shell exited with status 3")]


@pytest.mark.anyio
async def test_a_flood_of_output_waits_for_acknowledgements() -> None:
    wire = Wire()
    terminal = Terminal("v-3", bash(), wire.send)
    async with anyio.create_task_group() as group:
        group.start_soon(terminal.run)
        terminal.write(b"yes\n")
        with anyio.fail_after(10):
            while len(wire.output) < WINDOW:
                await wire.changed.wait()
        await anyio.sleep(0.5)  # yes writes on, but nothing is read
        assert len(wire.output) == WINDOW
        assert terminal.window.room == 0
        terminal.ack(1000)
        with anyio.fail_after(5):
            while len(wire.output) < WINDOW + 1000:
                await wire.changed.wait()
        await anyio.sleep(0.2)
        assert len(wire.output) == WINDOW + 1000
        terminal.ack(WINDOW * 2)  # more than was sent: ignored
        assert terminal.window.in_flight == WINDOW
        await terminal.close()
        group.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_shell_that_cannot_start_is_reported() -> None:
    sent: list[tuple[str, Any]] = []

    async def send(kind: str, message: Any) -> None:
        sent.append((kind, message))

    def no_such_account() -> Any:
        return shell_spec(attended=False, user="no-such-account-here")

    backstage = Backstage(no_such_account, send)
    async with anyio.create_task_group() as group:
        await backstage.open(group, pb.BackstageOpen(viewer_id="v-4"))
    assert [(k, m.viewer_id, m.exit_code) for k, m in sent] == [("backstage_close", "v-4", -1)]
    assert "no account" in sent[0][1].reason


@pytest.mark.anyio
async def test_every_terminal_dies_with_the_connection() -> None:
    wire = Wire()
    backstage = Backstage(bash, wire.send)
    async with anyio.create_task_group() as group:
        for name in ("a", "b"):
            await backstage.open(group, pb.BackstageOpen(viewer_id=name, rows=10, cols=20))
        for name in ("a", "b"):
            backstage.data(pb.BackstageData(viewer_id=name, data=b"echo ready-$$\n"))
        with anyio.fail_after(10):
            while wire.output.count(b"ready-") < 4:  # each echoed, then printed
                await wire.changed.wait()
        shells = [t.pid for t in backstage.terminals.values()]
        await backstage.close_all()
        group.cancel_scope.cancel()
    assert shells and all(p is not None and not alive(p) for p in shells)
    assert backstage.terminals == {}
    with anyio.fail_after(10):  # the killed subshells are reaped by init in its own time
        while any(group_exists(p or 0) for p in shells):  # noqa: ASYNC110 - no event
            await anyio.sleep(0.1)
