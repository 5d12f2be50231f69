"""Message catalogues for the end user's windows: gettext ``.po`` sources, compiled ``.mo``.

Each package that shows the end user words keeps ``locale/<lang>/LC_MESSAGES/<domain>.po``
beside its code and the compiled ``.mo`` next to it (shipped in the wheel, built by
``scripts/compile_catalogues`` with :func:`compile_po`, pure Python, so no gettext tools
are needed). The language comes from the system locale the way gettext reads it:
``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES``, then ``LANG``; English when none matches.
"""

from __future__ import annotations

import ast
import gettext
import struct
from pathlib import Path

__all__ = ["compile_po", "mnemonic", "parse_po", "translation"]


def translation(domain: str, localedir: Path) -> gettext.NullTranslations:
    """The catalogue for the current locale, or the English source strings."""
    return gettext.translation(domain, localedir, fallback=True)


def parse_po(text: str) -> dict[str, str]:
    """``msgid -> msgstr`` of a ``.po`` file (no plurals or contexts: the project uses none).

    Untranslated entries are left out so the English source shows; the header (empty
    msgid) is kept, it names the charset.
    """
    entries: dict[str, str] = {}
    current: dict[str, list[str]] = {}
    key = ""

    def flush() -> None:
        if "msgid" in current and "msgstr" in current:
            msgid, msgstr = "".join(current["msgid"]), "".join(current["msgstr"])
            if msgstr:
                entries[msgid] = msgstr
        current.clear()

    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            if not line:
                flush()
            continue
        if line.startswith(("msgid ", "msgstr ")):
            key, _, rest = line.partition(" ")
            if key == "msgid" and "msgstr" in current:
                flush()
            current[key] = [_string(rest, number)]
        elif line.startswith('"'):
            if not key:
                raise ValueError(f"line {number}: a string outside an entry")
            current[key].append(_string(line, number))
        else:
            raise ValueError(f"line {number}: not understood: {line[:40]}")
    flush()
    return entries


def _string(quoted: str, number: int) -> str:
    try:
        value = ast.literal_eval(quoted)
    except (ValueError, SyntaxError) as exc:
        raise ValueError(f"line {number}: not a quoted string") from exc
    if not isinstance(value, str):
        raise ValueError(f"line {number}: not a quoted string")
    return value


def compile_po(text: str) -> bytes:
    """The GNU ``.mo`` file of a ``.po`` text (little-endian, no hash table)."""
    entries = sorted((k.encode(), v.encode()) for k, v in parse_po(text).items())
    count = len(entries)
    header = 7 * 4
    ids_table = header
    strs_table = ids_table + count * 8
    data = strs_table + count * 8
    ids, strs, blob = [], [], b""
    for msgid, _ in entries:
        ids.append((len(msgid), data + len(blob)))
        blob += msgid + b"\0"
    for _, msgstr in entries:
        strs.append((len(msgstr), data + len(blob)))
        blob += msgstr + b"\0"
    out = struct.pack("<7I", 0x950412DE, 0, count, ids_table, strs_table, 0, data)
    for length, offset in ids + strs:
        out += struct.pack("<2I", length, offset)
    return out + blob


def mnemonic(label: str) -> tuple[str, int, str]:
    """``"&Allow"`` -> ``("Allow", 0, "a")``: the text, the underlined index and the key.

    Translators put the ``&`` before the letter that suits their language; a label
    without one has no mnemonic (index -1, key "").
    """
    index = label.find("&")
    if index < 0 or index + 1 >= len(label):
        return label.replace("&", ""), -1, ""
    text = label[:index] + label[index + 1:]
    return text, index, text[index].lower()
