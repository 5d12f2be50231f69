"""Type characters on X whatever its keyboard layout: the technician's ``@`` arrives as
``@`` on a German desktop, where it is AltGr+Q, and ``€`` arrives on a US desktop, which has
no such key.

A character is looked up in the server's current keyboard mapping (read at each call, so a
layout switched with ``setxkbmap`` is followed); the key is pressed through XTest, as a
physical keyboard would, with Shift and AltGr (ISO_Level3_Shift) brought to what the
character's level needs and Ctrl, Alt and Super to what the technician held. A character
no key produces is typed on a spare keycode, given that keysym for the time. :class:`Layout`
and :func:`plan` are pure (``test_typing.py``); :class:`XTyper` talks to the X server.
"""

from __future__ import annotations

import importlib.util
import logging
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Layout", "Stroke", "XTyper", "borrowable_keysym", "keysyms_for", "plan"]

log = logging.getLogger(__name__)

SHIFT, LOCK, CONTROL, MOD1, MOD2, MOD3, MOD4, MOD5 = range(8)
"""The X modifiers, by their row in ``get_modifier_mapping()``."""
LOCK_MASK = 1 << LOCK
MODIFIER_KEYSYMS = {SHIFT: 0xFFE1, CONTROL: 0xFFE3, MOD1: 0xFFE9, MOD4: 0xFFEB,
                    MOD5: 0xFE03}
"""The key pressed for a modifier: Shift_L, Control_L, Alt_L, Super_L, ISO_Level3_Shift
(AltGr)."""
BORROWED_KEYCODES = 8
"""Spare keycodes given characters no key produces, reused oldest first: a keycode is only
reassigned after this many other characters, so an application still reading the earlier
press never sees it under the newer keysym."""


def _legacy_keysyms() -> dict[str, int]:
    """Character -> the legacy keysym layouts use for it (EuroSign, not U+20AC), from
    pynput's table of X keysyms; empty without it (Unicode keysyms only). The table's
    module is loaded on its own: importing ``pynput`` itself needs an X display."""
    spec = importlib.util.find_spec("pynput")
    if spec is None or spec.origin is None:  # pragma: no cover - pynput is a dependency
        return {}
    path = Path(spec.origin).parent / "_util" / "xorg_keysyms.py"
    table = importlib.util.spec_from_file_location("_pynput_xorg_keysyms", path)
    if table is None or table.loader is None or not path.is_file():  # pragma: no cover
        return {}
    module = importlib.util.module_from_spec(table)
    table.loader.exec_module(module)
    found: dict[str, int] = {}
    for keysym, char in module.SYMBOLS.values():
        if char and keysym < 0x01000000:
            found[char] = min(keysym, found.get(char, keysym))
    return found


LEGACY = _legacy_keysyms()


def keysyms_for(char: str) -> tuple[int, ...]:
    """The keysyms that produce ``char``, the layouts' usual one first."""
    code = ord(char)
    found: list[int] = []
    if code < 0x100:
        found.append(code)  # Latin-1: the keysym is the code point
    legacy = LEGACY.get(char)
    if legacy is not None and legacy not in found:
        found.append(legacy)
    if char == "\n":
        found.append(0xFF0D)  # Return
    elif char == "\t":
        found.append(0xFF09)  # Tab
    found.append(0x01000000 | code)
    return tuple(found)


def borrowable_keysym(char: str) -> int:
    """The keysym a spare keycode is given for ``char``: its code point for Latin-1,
    the Unicode keysym beyond."""
    code = ord(char)
    return code if code < 0x100 else 0x01000000 | code


@dataclass(frozen=True)
class Stroke:
    """One key to tap: its keycode and the Shift and AltGr it needs."""

    keycode: int
    shift: bool
    level3: bool


class Layout:
    """The server's core keyboard mapping, as :meth:`Display.get_keyboard_mapping` gives it.

    A keycode's row is ``[group 1 level 1, level 2, group 2 level 1, level 2, group 1
    level 3, level 4, ...]``: index 0 is the plain key, 1 with Shift, 4 with AltGr, 5 with
    Shift and AltGr (the groups beyond the first are other layouts, not used here).
    """

    LEVELS = ((0, False, False), (1, True, False), (4, False, True), (5, True, True))

    def __init__(self, min_keycode: int, rows: Sequence[Sequence[int]]) -> None:
        self.min_keycode = min_keycode
        self.rows = [tuple(row) for row in rows]
        self._found: dict[int, Stroke] = {}
        for index, shift, level3 in self.LEVELS:  # the fewest modifiers first
            for offset, row in enumerate(self.rows):
                if index < len(row) and row[index] and row[index] not in self._found:
                    self._found[row[index]] = Stroke(min_keycode + offset, shift, level3)

    def find(self, keysyms: Iterable[int]) -> Stroke | None:
        """The key (and level) producing the first of ``keysyms`` the layout has."""
        for keysym in keysyms:
            stroke = self._found.get(keysym)
            if stroke is not None:
                return stroke
        return None

    def keycode_of(self, keysym: int) -> int | None:
        """The key giving ``keysym`` unshifted (a modifier key), if any."""
        stroke = self._found.get(keysym)
        return stroke.keycode if stroke is not None and not (stroke.shift or stroke.level3) \
            else None

    def spare(self) -> list[int]:
        """Keycodes no layout level uses, which a borrowed keysym may take."""
        return [self.min_keycode + offset for offset, row in enumerate(self.rows)
                if not any(row)]

    def alphabetic(self, keycode: int) -> bool:
        """Whether Caps Lock changes this key's case (a lower and an upper case letter)."""
        row = self.rows[keycode - self.min_keycode]
        return len(row) > 1 and row[0] != row[1] and all(
            0 < k < 0x100 and chr(k).isalpha() for k in row[:2])


def plan(stroke: Stroke, layout: Layout, caps_lock: bool) -> Stroke:
    """``stroke`` with Shift inverted where Caps Lock would change the letter's case."""
    if caps_lock and layout.alphabetic(stroke.keycode):
        return Stroke(stroke.keycode, not stroke.shift, stroke.level3)
    return stroke


class XTyper:
    """Types text into the X display through XTest, borrowing keycodes where needed."""

    def __init__(self, display: Any) -> None:
        self._display = display
        self._borrowed: OrderedDict[int, int] = OrderedDict()  # keysym -> keycode
        self._original: dict[int, tuple[int, ...]] = {}  # borrowed keycode -> its row

    def _layout(self) -> Layout:
        info = self._display.display.info
        count = info.max_keycode - info.min_keycode + 1
        return Layout(info.min_keycode, self._display.get_keyboard_mapping(info.min_keycode,
                                                                           count))

    def type(self, text: str, held: dict[str, bool] | None = None) -> None:
        """Type ``text``. ``held`` says which of ctrl, alt and meta the technician holds
        (a shortcut); ``None`` leaves them as they are."""
        layout = self._layout()
        modifiers = self._display.get_modifier_mapping()
        for char in text:
            stroke = layout.find(keysyms_for(char))
            if stroke is None:
                stroke = self._borrow(layout, borrowable_keysym(char))
                if stroke is None:
                    log.warning("cannot type U+%04X: no key produces it and no keycode is "
                                "spare", ord(char))
                    continue
                layout = self._layout()
            state = self._display.screen().root.query_pointer().mask
            stroke = plan(stroke, layout, bool(state & LOCK_MASK))
            self._tap(stroke, layout, modifiers, held)
        self._display.sync()

    def _tap(self, stroke: Stroke, layout: Layout, modifiers: Any,
             held: dict[str, bool] | None) -> None:
        """Press and release the stroke's key with exactly the modifiers it wants; what
        the technician held before is held again after."""
        from Xlib import X
        from Xlib.ext import xtest

        down = self._display.query_keymap()

        def is_down(keycode: int) -> bool:
            return bool(down[keycode // 8] & (1 << (keycode % 8)))

        wanted = {SHIFT: stroke.shift, MOD5: stroke.level3}
        if held is not None:
            wanted |= {CONTROL: held.get("ctrl", False), MOD1: held.get("alt", False),
                       MOD4: held.get("meta", False)}
        release: list[int] = []
        press: list[int] = []
        for modifier, want in wanted.items():
            keys = [k for k in modifiers[modifier] if k]
            active = [k for k in keys if is_down(k)]
            if active and not want:
                release += active
            elif want and not active:
                keycode = layout.keycode_of(MODIFIER_KEYSYMS[modifier]) or (
                    keys[0] if keys else None)
                if keycode is not None:
                    press.append(keycode)
        for keycode in release:
            xtest.fake_input(self._display, X.KeyRelease, keycode)
        for keycode in press:
            xtest.fake_input(self._display, X.KeyPress, keycode)
        xtest.fake_input(self._display, X.KeyPress, stroke.keycode)
        xtest.fake_input(self._display, X.KeyRelease, stroke.keycode)
        for keycode in reversed(press):
            xtest.fake_input(self._display, X.KeyRelease, keycode)
        for keycode in release:
            xtest.fake_input(self._display, X.KeyPress, keycode)

    def _borrow(self, layout: Layout, keysym: int) -> Stroke | None:
        """Give ``keysym`` to a spare keycode (the oldest borrowed one when none is left).

        Called only for a keysym the layout lacks: one borrowed before was lost to a new
        layout (``setxkbmap`` replaces every row), so its keycode is given it again."""
        keycode = self._borrowed.pop(keysym, None)
        if keycode is None:
            spare = [k for k in layout.spare() if k not in self._borrowed.values()]
            if len(self._borrowed) >= BORROWED_KEYCODES or not spare:
                if not self._borrowed:
                    return None
                _, keycode = self._borrowed.popitem(last=False)
            else:
                keycode = spare[-1]
                self._original.setdefault(keycode, layout.rows[keycode - layout.min_keycode])
        width = len(layout.rows[0]) if layout.rows else 2
        self._display.change_keyboard_mapping(keycode, [(keysym,) * width])
        self._display.sync()
        self._borrowed[keysym] = keycode
        return Stroke(keycode, False, False)

    def close(self) -> None:
        """Give the borrowed keycodes their rows back."""
        for keycode, row in self._original.items():
            self._display.change_keyboard_mapping(keycode, [row])
        if self._original:
            self._display.sync()
        self._original.clear()
        self._borrowed.clear()
