"""The console prompt through real pipes."""

from __future__ import annotations

import io
import os
import threading
import time

import pytest
from remote_consent_dialog import ConsoleConsent
from remote_consent_dialog._text import wording

from remote_core.types import ConsentAsk

ASK = ConsentAsk(session_id="s1", technician_name="Dana", control=True, timeout_secs=5)


@pytest.fixture
def pipe():
    read_fd, write_fd = os.pipe()
    reader = os.fdopen(read_fd, "r")
    writer = os.fdopen(write_fd, "w")
    yield reader, writer
    reader.close()
    if not writer.closed:
        writer.close()


def _answer(writer, text: str, delay: float = 0.05) -> None:
    def later():
        time.sleep(delay)
        writer.write(text)
        writer.flush()
    threading.Thread(target=later, daemon=True).start()


@pytest.mark.parametrize(("typed", "expected"), [
    ("y\n", (True, "")), ("yes\n", (True, "")), ("n\n", (False, "denied by the user")),
    ("\n", (False, "denied by the user")), ("maybe\n", (False, "denied by the user")),
])
def test_answers(pipe, typed, expected):
    reader, writer = pipe
    out = io.StringIO()
    _answer(writer, typed)
    assert ConsoleConsent(reader, out).ask(ASK) == expected
    assert "Dana asks to view and control" in out.getvalue()


def test_closed_input_denies(pipe):
    reader, writer = pipe
    writer.close()
    assert ConsoleConsent(reader, io.StringIO()).ask(ASK) == (False, "no answer: input closed")


def test_silence_times_out_as_a_denial(pipe):
    reader, _ = pipe
    started = time.monotonic()
    ask = ConsentAsk(session_id="s1", technician_name="", control=False, timeout_secs=1)
    out = io.StringIO()
    assert ConsoleConsent(reader, out).ask(ask) == (False, "timeout")
    assert time.monotonic() - started >= 1
    assert "A technician asks to view this" in out.getvalue()


def test_a_second_question_names_who_is_connected_already(pipe):
    reader, writer = pipe
    out = io.StringIO()
    _answer(writer, "n\n")
    ask = ConsentAsk(session_id="s1", technician_name="Lee", control=False, timeout_secs=5,
                     connected=("Dana (view and control)",))
    assert ConsoleConsent(reader, out).ask(ask) == (False, "denied by the user")
    assert "Lee asks to view this computer's screen.\n" in out.getvalue()
    assert "Connected now: Dana (view and control).\n" in out.getvalue()


def test_a_terminal_is_asked_about_as_such(pipe):
    reader, writer = pipe
    out = io.StringIO()
    _answer(writer, "y\n")
    ask = ConsentAsk(session_id="s1", technician_name="Lee", control=False, timeout_secs=5,
                     backstage=True)
    assert ConsoleConsent(reader, out).ask(ask)[0] is True
    assert ("Lee asks to open a terminal (a command line) on this computer, with your "
            "account's rights.") in out.getvalue()
    assert "view this computer's screen" not in out.getvalue()


def test_files_are_asked_about_as_such(pipe, monkeypatch):
    reader, writer = pipe
    out = io.StringIO()
    _answer(writer, "y\n")
    ask = ConsentAsk(session_id="s1", technician_name="Lee", control=False, timeout_secs=5,
                     file_transfer=True)
    assert ConsoleConsent(reader, out).ask(ask)[0] is True
    assert ("Lee asks to browse, download and upload files on this computer, with your "
            "account's rights.") in out.getvalue()
    assert "view this computer's screen" not in out.getvalue()
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    words = wording(ask)
    assert words.asks == ("Lee möchte auf diesem Computer mit den Rechten Ihres Kontos Dateien "
                          "durchsuchen, herunterladen und hochladen.")
    assert words.access == "Dateien (durchsuchen, herunterladen, hochladen)"
