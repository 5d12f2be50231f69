"""The Tk clipboard under a real X server, read and written by another X client."""

from __future__ import annotations

import time

import pytest
from remote_agent.clipboard import TkClipboard

pytestmark = pytest.mark.xvfb


@pytest.fixture
def clipboard(x_display):
    board = TkClipboard()
    yield board
    board.close()


@pytest.fixture
def other_client(x_display):
    import tkinter

    root = tkinter.Tk()
    root.withdraw()
    yield root
    root.destroy()


def _pump_while(root, predicate, seconds: float = 5.0) -> None:
    end = time.monotonic() + seconds
    while predicate() and time.monotonic() < end:
        root.update()
        time.sleep(0.01)


def test_text_set_by_the_agent_is_pasted_elsewhere(clipboard, other_client):
    clipboard.set("from the technician ✓")
    assert other_client.clipboard_get() == "from the technician ✓"


def test_text_copied_elsewhere_is_read_by_the_agent(clipboard, other_client):
    import threading

    other_client.clipboard_clear()
    other_client.clipboard_append("copied by the user")
    other_client.update()
    seen: list[str | None] = []
    reader = threading.Thread(target=lambda: seen.append(clipboard.get()))
    reader.start()
    _pump_while(other_client, reader.is_alive)  # the owner answers the paste request
    reader.join(1)
    assert seen == ["copied by the user"]
