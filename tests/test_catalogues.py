"""The message catalogues: the committed ``.mo`` files are their ``.po`` sources compiled,
gettext reads them, and a broken ``.po`` is a clear error."""

from __future__ import annotations

import gettext
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from remote_core.catalogue import compile_po, mnemonic, parse_po

ROOT = Path(__file__).resolve().parents[1]
WEB_PO = "plugins/web_console/remote_web_console/locale/de/LC_MESSAGES/remote_web_console.po"
SOURCES = sorted([*ROOT.glob("agent/remote_agent/locale/*/LC_MESSAGES/*.po"),
                  *ROOT.glob("plugins/*/*/locale/*/LC_MESSAGES/*.po")])


def test_there_are_catalogues_for_the_consent_dialog_the_panel_and_the_join_page() -> None:
    names = {po.name for po in SOURCES}
    assert {"remote_agent.po", "remote_consent_dialog.po", "remote_web_console.po"} <= names


def test_the_committed_mo_files_are_the_sources_compiled() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "compile_catalogues"),
                             "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("po", SOURCES, ids=lambda p: p.name)
def test_every_source_string_is_translated_and_gettext_reads_it(po: Path) -> None:
    text = po.read_text(encoding="utf-8")
    entries = parse_po(text)
    assert text.count('\nmsgid "') == len(entries)  # none left untranslated
    catalogue = gettext.GNUTranslations(io.BytesIO(compile_po(text)))
    for msgid, msgstr in entries.items():
        if msgid:
            assert catalogue.gettext(msgid) == msgstr
            assert msgstr.count("{") == msgid.count("{")  # the same placeholders
            assert ("&" in msgstr) == ("&" in msgid)  # a mnemonic where English has one


def test_a_broken_po_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="line 2: not understood"):
        parse_po('msgid "a"\nmsgtxt "b"\n')
    with pytest.raises(ValueError, match="line 1: not a quoted string"):
        parse_po("msgid a\n")


def test_mnemonics() -> None:
    assert mnemonic("&Allow") == ("Allow", 0, "a")
    assert mnemonic("Sitzung &beenden") == ("Sitzung beenden", 8, "b")
    assert mnemonic("Plain") == ("Plain", -1, "")


@pytest.mark.parametrize(("code", "po"), [
    ("plugins/consent_dialog/remote_consent_dialog/_text.py",
     "plugins/consent_dialog/remote_consent_dialog/locale/de/LC_MESSAGES/"
     "remote_consent_dialog.po"),
    ("agent/remote_agent/panel_window.py",
     "agent/remote_agent/locale/de/LC_MESSAGES/remote_agent.po"),
    ("agent/remote_agent/chat_window.py",
     "agent/remote_agent/locale/de/LC_MESSAGES/remote_agent.po"),
    ("plugins/web_console/web_src/src/join.js", WEB_PO),
], ids=["consent dialog", "session panel", "chat window", "join page script"])
def test_every_string_the_code_shows_is_in_the_catalogue(code: str, po: str) -> None:
    shown = set(re.findall(r'(?:\b_|\bt)\("((?:[^"\\]|\\.)*)"[,)]', (ROOT / code).read_text()))
    assert shown
    assert shown <= set(parse_po((ROOT / po).read_text(encoding="utf-8")))


def test_every_word_of_the_join_page_markup_is_in_the_catalogue() -> None:
    markup = (ROOT / "plugins/web_console/web_src/src/join.html").read_text()
    marked = {text.strip() for text in re.findall(r"data-i18n>([^<]+)<", markup)}
    title = re.search(r"<title>([^<]+)</title>", markup)
    assert title and len(marked) >= 5
    assert marked | {title.group(1)} <= set(parse_po((ROOT / WEB_PO).read_text(encoding="utf-8")))
