"""The Tk dialog on a real X server, driven with xdotool as a user would."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
from remote_consent_dialog import TkConsent
from remote_consent_dialog._tk import TITLE, _Dialog

from remote_core.testing.xvfb import shared_xvfb
from remote_core.types import ConsentAsk

pytestmark = pytest.mark.xvfb


@pytest.fixture(scope="module")
def x_display():
    """The process-wide Xvfb: Tk in this process must never lose its display."""
    return shared_xvfb(800, 600)


def _ask_in_thread(timeout_secs: int = 20):
    result: dict[str, tuple[bool, str]] = {}
    ask = ConsentAsk(session_id="s", technician_name="Dana Tech", control=True,
                     timeout_secs=timeout_secs)
    thread = threading.Thread(target=lambda: result.setdefault("answer", TkConsent().ask(ask)))
    thread.start()
    return thread, result


def _dialog_window(env) -> str:
    out = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", TITLE],
                         env=env, check=True, capture_output=True, text=True, timeout=10)
    return out.stdout.split()[0]


def _drive(env, *args: str) -> None:
    window = _dialog_window(env)
    subprocess.run(["xdotool", "windowfocus", "--sync", window, *args], env=env, check=True,
                   timeout=10)


def _close_like_a_window_manager(display: str, window_id: int) -> None:
    """Send WM_DELETE_WINDOW, as a window manager does when its close button is clicked."""
    from Xlib import X
    from Xlib import display as xdisplay
    from Xlib.protocol import event

    conn = xdisplay.Display(display)
    try:
        protocols = conn.intern_atom("WM_PROTOCOLS")
        delete = conn.intern_atom("WM_DELETE_WINDOW")
        window = conn.create_resource_object("window", window_id)
        message = event.ClientMessage(window=window, client_type=protocols,
                                      data=(32, [delete, X.CurrentTime, 0, 0, 0]))
        window.send_event(message, event_mask=X.NoEventMask)
        conn.sync()
    finally:
        conn.close()


@pytest.mark.parametrize(("keys", "expected"), [
    (("key", "alt+a"), (True, "")),
    (("key", "alt+d"), (False, "denied by the user")),
    (("key", "Escape"), (False, "denied by the user")),
    (("key", "space"), (False, "denied by the user")),  # Deny has the focus
    (("key", "Return"), (False, "denied by the user")),  # Enter presses the focused one
    (("key", "Tab", "Return"), (True, "")),  # Tab moves to Allow
    (("key", "Tab", "Tab", "space"), (False, "denied by the user")),  # and back to Deny
])
def test_keyboard_answers(x_display, keys, expected):
    thread, result = _ask_in_thread()
    _drive(x_display.env(), *keys)
    thread.join(10)
    assert result["answer"] == expected


def test_clicking_allow(x_display):
    thread, result = _ask_in_thread()
    window = _dialog_window(x_display.env())
    geometry = subprocess.run(["xdotool", "getwindowgeometry", "--shell", window],
                              env=x_display.env(), check=True, capture_output=True,
                              text=True).stdout
    size = dict(line.split("=", 1) for line in geometry.split())
    # Allow sits left of Deny in the bottom-right corner: about 1.5 buttons from the edge.
    x = int(size["X"]) + int(size["WIDTH"]) - 16 - 6 - 90 - 45
    y = int(size["Y"]) + int(size["HEIGHT"]) - 12 - 14
    subprocess.run(["xdotool", "mousemove", "--sync", str(x), str(y), "click", "1"],
                   env=x_display.env(), check=True, timeout=10)
    thread.join(10)
    assert result["answer"] == (True, "")


def test_closed_dialog_is_a_denial(x_display):
    thread, result = _ask_in_thread()
    window = int(_dialog_window(x_display.env()))
    _close_like_a_window_manager(x_display.display, window)
    thread.join(10)
    assert result["answer"] == (False, "dialog closed")


def test_timeout_denies(x_display):
    started = time.monotonic()
    thread, result = _ask_in_thread(timeout_secs=1)
    thread.join(10)
    assert result["answer"] == (False, "timeout")
    assert 1 <= time.monotonic() - started < 5


def test_german_mnemonics_follow_the_translated_labels(x_display, monkeypatch):
    """Under LANG=de_DE.UTF-8 the buttons read Erlauben / Ablehnen: Alt+E allows."""
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    thread, result = _ask_in_thread()
    env = x_display.env()
    out = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name",
                          "^Anfrage f.*r Fernwartung$"], env=env, check=True,
                         capture_output=True, text=True, timeout=10)
    subprocess.run(["xdotool", "windowfocus", "--sync", out.stdout.split()[0], "key", "alt+e"],
                   env=env, check=True, timeout=10)
    thread.join(10)
    assert result["answer"] == (True, "")


def test_an_answered_dialog_leaves_no_countdown_behind(x_display, capfd):
    """A countdown still scheduled when the dialog is answered fires in the next Tk run in
    the same thread (or the rest of the answering update), and Tcl prints its error."""
    import tkinter

    def ask_then_run_another_window() -> None:
        dialog = _Dialog(ConsentAsk(session_id="s", technician_name="Dana Tech", control=True,
                                    timeout_secs=20))
        dialog.root.after(50, dialog.deny.invoke)
        result["answer"] = dialog.run()
        panel = tkinter.Tk()
        try:
            until = time.monotonic() + 0.6  # three countdown ticks
            while time.monotonic() < until:
                panel.update()
                time.sleep(0.02)
        finally:
            panel.destroy()

    result: dict[str, tuple[bool, str]] = {}
    thread = threading.Thread(target=ask_then_run_another_window)
    thread.start()
    thread.join(10)
    assert result["answer"] == (False, "denied by the user")
    assert "invalid command name" not in capfd.readouterr().err
