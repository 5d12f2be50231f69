"""The consent dialog, the session panel and the chat window on a real X server, read
back through Tk: what they say, in English and in German chosen by ``LANG``, and the
screenshots of the first two."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import mss
import mss.tools
import pytest
from remote_agent.chat_window import ChatWindow
from remote_agent.clipboard import TkClipboard
from remote_agent.panel_window import SessionPanel
from remote_agent.presence import Presence
from remote_agent.tkthread import ACTIVE_TICK, HIDDEN_TICK, IDLE_TICK
from remote_consent_dialog._tk import _Dialog

from remote_core.protocol import pb
from remote_core.types import ConsentAsk

pytestmark = pytest.mark.xvfb

DOCS = Path(__file__).resolve().parents[2] / "docs"

ASK = ConsentAsk(session_id="s", technician_name="Dana Tech", control=True, timeout_secs=20,
                 organization="Acme Help Desk", connected=("Sam (view)",))


@pytest.fixture
def english(monkeypatch):
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")


@pytest.fixture
def german(monkeypatch):
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "de_DE.UTF-8")


def _screenshot(window: Any, path: Path) -> None:
    """The window's pixels as a PNG (docs/); Tk tells where the window is."""
    window.update()
    box = {"left": window.winfo_rootx(), "top": window.winfo_rooty(),
           "width": window.winfo_width(), "height": window.winfo_height()}
    with mss.MSS() as screen:
        shot = screen.grab(box)
    mss.tools.to_png(shot.rgb, shot.size, output=str(path))


def _dialog(ask: ConsentAsk, screenshot: Path | None = None,
            watch_countdown: bool = False) -> dict[str, Any]:
    """Open the dialog in a thread of its own (as the agent does), read it, deny it."""
    seen: dict[str, Any] = {}

    def run() -> None:
        dialog = _Dialog(ask)
        try:
            dialog.root.update()
            seen["first"] = dialog.texts()
            if screenshot is not None:
                _screenshot(dialog.root, screenshot)
            if watch_countdown:  # the countdown moves on its own as the dialog runs
                first = seen["first"]["countdown"]
                while dialog.texts()["countdown"] == first:
                    dialog.root.update()
                    time.sleep(0.05)
                seen["later"] = dialog.texts()
        finally:
            dialog._finish(False, "test")

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert "first" in seen
    return seen


def _participants(*people: tuple[str, bool]) -> pb.Participants:
    return pb.Participants(participants=[
        pb.Participant(name=name, access_mode=pb.CONSENT_CONTROL if control else pb.CONSENT_VIEW)
        for name, control in people])


def _panel_after(*changes: pb.Participants) -> tuple[SessionPanel, Presence]:
    """A panel fed by a Presence the way the agent feeds it, after ``changes``."""
    panel = SessionPanel(lambda: None, lambda: None)
    presence = Presence()
    presence.listen(panel.show)
    presence.listen_session(panel.session)
    presence.opened()
    for change in changes:
        presence.told(change)
    return panel, presence


def _wait_for(panel: SessionPanel, check: Any) -> dict[str, str]:
    for _ in range(200):
        texts = panel.texts()
        if check(texts):
            return texts
        time.sleep(0.05)
    raise AssertionError(f"the panel never showed it: {panel.texts()}")


def test_the_dialog_names_technician_organization_access_recording_and_counts_down(
        x_display, english):
    seen = _dialog(ASK, screenshot=DOCS / "consent-dialog.png", watch_countdown=True)
    first = seen["first"]
    assert first["title"] == "Remote support request"
    assert first["asks"] == "Dana Tech asks to view and control this computer's screen."
    assert first["technician"] == "Dana Tech"
    assert first["organization"] == "Acme Help Desk"
    assert first["access"] == "View and control"
    assert first["recording"] == "This session will not be recorded."
    assert first["connected"] == "Connected now: Sam (view)."
    assert first["countdown"] == "Denied automatically in 20 s"
    assert seen["later"]["countdown"] == "Denied automatically in 19 s"
    assert (first["allow"], first["deny"]) == ("Allow", "Deny")


def test_the_dialog_says_view_only_and_recording_as_the_request_says(x_display, english):
    ask = ConsentAsk(session_id="s", technician_name="Dana", control=False, timeout_secs=9,
                     recorded=True)
    first = _dialog(ask)["first"]
    assert first["access"] == "View only"
    assert first["recording"] == "This session will be recorded."
    assert first["organization"] == "not stated"
    assert "connected" not in first


def test_the_panel_lists_each_technician_as_they_join_and_leave(x_display, english):
    panel, presence = _panel_after()
    try:
        texts = _wait_for(panel, lambda t: t["state"] == "normal")
        assert texts["title"] == "Remote support session"
        assert texts["person 0"] == "Nobody is connected right now."
        presence.told(_participants(("techa", True)))
        _wait_for(panel, lambda t: t["person 0"] == "techa: views and controls")
        presence.told(_participants(("techa", True), ("second-tech", False)))
        texts = _wait_for(panel, lambda t: t.get("person 1") == "second-tech: views")
        assert texts["person 0"] == "techa: views and controls"
        assert (texts["chat"], texts["end"]) == ("Chat", "End session")
        presence.told(_participants(("techa", True)))
        texts = _wait_for(panel, lambda t: "person 1" not in t)
        assert texts["person 0"] == "techa: views and controls"
    finally:
        panel.close()


def test_the_panel_screenshot(x_display, english):
    panel, _ = _panel_after(_participants(("techa", True), ("second-tech", False)))
    try:
        _wait_for(panel, lambda t: t.get("person 1") == "second-tech: views"
                  and t["state"] == "normal")

        def shoot(_root: Any) -> None:
            _screenshot(panel._widgets["window"], DOCS / "session-panel.png")

        panel._tk.call(shoot)
    finally:
        panel.close()


def test_a_managed_panel_shows_only_while_someone_is_connected(x_display, english):
    panel = SessionPanel(lambda: None, None, always=False)
    presence = Presence()
    presence.listen(panel.show)
    presence.listen_session(panel.session)
    try:
        presence.opened()
        texts = _wait_for(panel, lambda t: t["person 0"] == "Nobody is connected right now.")
        assert texts["state"] == "withdrawn" and "chat" not in texts
        presence.told(_participants(("techa", False)))
        _wait_for(panel, lambda t: t["state"] == "normal")
        presence.told(_participants())
        _wait_for(panel, lambda t: t["state"] == "withdrawn")
    finally:
        panel.close()


def test_german_locale_translates_the_dialog_and_the_panel(x_display, german):
    first = _dialog(ASK)["first"]
    assert first["title"] == "Anfrage für Fernwartung"
    assert first["asks"] == "Dana Tech möchte den Bildschirm dieses Computers sehen und steuern."
    assert first["access"] == "Ansehen und steuern"
    assert first["recording"] == "Diese Sitzung wird nicht aufgezeichnet."
    assert first["countdown"] == "Automatisch abgelehnt in 20 s"
    assert (first["allow"], first["deny"]) == ("Erlauben", "Ablehnen")
    panel, _ = _panel_after(_participants(("techa", True), ("second-tech", False)))
    try:
        texts = _wait_for(panel, lambda t: t.get("person 1") == "second-tech: sieht zu")
        assert texts["title"] == "Fernwartungssitzung"
        assert texts["heading"] == "Mit diesem Computer verbunden:"
        assert texts["person 0"] == "techa: sieht zu und steuert"
        assert texts["end"] == "Sitzung beenden"
    finally:
        panel.close()


def _chat_after_a_reply() -> tuple[dict[str, str], list[str]]:
    """A chat window that got a message and sent a typed reply: what it shows then."""
    replies: list[str] = []
    window = ChatWindow(replies.append)
    try:
        window.show("techa", "Hello")

        def type_and_send(_root: Any) -> None:
            window._widgets["line"].insert(0, "Thanks")
            window._send()

        window._tk.call(type_and_send)
        return window.texts(), replies
    finally:
        window.close()


def test_the_chat_window_in_english(x_display, english):
    texts, replies = _chat_after_a_reply()
    assert texts["title"] == "Remote support chat"
    assert texts["send"] == "Send"
    assert texts["log"] == "Techa: Hello\nYou: Thanks\n"
    assert replies == ["Thanks"]


def test_german_locale_translates_the_chat_window(x_display, german):
    texts, replies = _chat_after_a_reply()
    assert texts["title"] == "Fernwartungs-Chat"
    assert texts["send"] == "Senden"
    assert texts["log"] == "Techa: Hello\nSie: Thanks\n"
    assert replies == ["Thanks"]


def test_a_tk_thread_serves_x_often_only_while_its_window_shows_or_it_owns_the_clipboard(
        x_display):
    """Hidden and owning nothing, a Tk thread wakes once a second (a sixth of an idle
    agent's CPU went to two threads waking four times a second); shown, it repaints every
    30 ms; owning the clipboard, it answers a paste within 250 ms."""
    window = ChatWindow(lambda _text: None)
    board = TkClipboard()
    try:
        assert window._tk.tick == board._tk.tick == HIDDEN_TICK
        window.show("techa", "Hello")
        window._tk.call(lambda _root: None)  # the show is done
        assert window._tk.tick == ACTIVE_TICK
        window._tk.call(lambda _root: window._hide())
        assert window._tk.tick == HIDDEN_TICK
        board.set("the technician's text")
        assert board._tk.tick == IDLE_TICK
        assert board.get() == "the technician's text"
    finally:
        board.close()
        window.close()
