"""``PynputInput``: the technician's mouse and keys injected with pynput (XTest on X11)."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from typing import Any

from remote_core.interfaces import InputSink
from remote_core.protocol import pb
from remote_core.types import DisplayDesc

from ._cursor import XCursor
from ._keymap import MODIFIER_VKS, scan_to_x_keycode, vk_to_name
from ._typing import XTyper

__all__ = ["PynputInput", "wheel_steps"]

log = logging.getLogger(__name__)

WHEEL_DELTA = 120
"""One wheel notch, as Windows counts it (SPEC MouseEvent wheel deltas)."""

_BUTTONS = (("left", "left"), ("right", "right"), ("middle", "middle"),
            ("x1", "button8"), ("x2", "button9"))


def wheel_steps(delta: int) -> int:
    """Notches for a wheel delta: 120 per notch, and any nonzero delta moves at least one."""
    if delta == 0:
        return 0
    steps = round(delta / WHEEL_DELTA)
    return steps if steps else (1 if delta > 0 else -1)


class PynputInput(InputSink):
    """Injects ``MouseEvent``, ``KeyEvent`` and ``SpecialKeyEvent`` into the local desktop.

    Mouse ``buttons`` on ``MOUSE_DOWN``/``MOUSE_UP`` name the buttons that went
    down or up. A ``KeyEvent`` carrying ``modifiers`` brings Ctrl, Alt, Shift
    and Meta to that state first, so a viewer may send either explicit
    modifier keys or flags.
    """

    def __init__(self) -> None:
        from pynput import keyboard, mouse

        self._keyboard_mod = keyboard
        self._mouse = mouse.Controller()
        self._keyboard = keyboard.Controller()
        self._button = mouse.Button
        self._held_modifiers: set[str] = set()
        self._xconn: Any | None = None
        self._text: XTyper | None = None
        try:
            self._cursor: XCursor | None = XCursor()
        except OSError:
            self._cursor = None

    # -- mouse -----------------------------------------------------------------
    def mouse(self, event: Any, display: DisplayDesc) -> None:
        x = display.x + min(max(event.x, 0), display.width - 1)
        y = display.y + min(max(event.y, 0), display.height - 1)
        self._mouse.position = (x, y)
        kind = event.event_type
        if kind == pb.MOUSE_WHEEL:
            dx, dy = wheel_steps(event.wheel_delta_x), wheel_steps(event.wheel_delta_y)
            if dx or dy:
                self._mouse.scroll(dx, dy)
        elif kind in (pb.MOUSE_DOWN, pb.MOUSE_UP):
            for field, name in _BUTTONS:
                if getattr(event.buttons, field):
                    button = getattr(self._button, name)
                    if kind == pb.MOUSE_DOWN:
                        self._mouse.press(button)
                    else:
                        self._mouse.release(button)

    # -- keys ------------------------------------------------------------------------
    def _vk_key(self, vk: int) -> Any | None:
        found = vk_to_name(vk)
        if found is None:
            return None
        kind, name = found
        if kind == "char":
            return self._keyboard_mod.KeyCode.from_char(name)
        return getattr(self._keyboard_mod.Key, name, None)

    def _sync_modifiers(self, modifiers: Any) -> None:
        for flag, vk in MODIFIER_VKS.items():
            wanted = bool(getattr(modifiers, flag))
            if wanted and flag not in self._held_modifiers:
                self._keyboard.press(self._vk_key(vk))
                self._held_modifiers.add(flag)
            elif not wanted and flag in self._held_modifiers:
                self._keyboard.release(self._vk_key(vk))
                self._held_modifiers.discard(flag)

    def key(self, event: Any) -> None:
        if event.key_type == pb.KEY_UNICODE:
            if event.down and event.unicode:
                held = None
                if event.HasField("modifiers"):  # the shortcut's modifiers, if any
                    held = {flag: getattr(event.modifiers, flag)
                            for flag in ("ctrl", "alt", "meta")}
                self._type(event.unicode, held)
            return
        if event.HasField("modifiers") and event.down:
            self._sync_modifiers(event.modifiers)
        if event.key_type == pb.KEY_SCAN:
            self._scan(event.scan_code, event.down)
            return
        key = self._vk_key(event.vk_code)
        if key is None:
            raise ValueError(f"unknown virtual-key code 0x{event.vk_code:02X}")
        for flag, vk in MODIFIER_VKS.items():  # an explicit modifier key updates the state
            if vk_to_name(vk) == vk_to_name(event.vk_code):
                (self._held_modifiers.add if event.down else self._held_modifiers.discard)(flag)
        if event.down:
            self._keyboard.press(key)
        else:
            self._keyboard.release(key)

    def _type(self, text: str, held: dict[str, bool] | None) -> None:
        """Type ``text`` as characters. On X by the keyboard mapping of the moment
        (:mod:`._typing`); elsewhere pynput's own typing, the shortcut's modifiers held."""
        if sys.platform.startswith("linux"):
            self._typer().type(text, held)
            return
        key = self._keyboard_mod.Key
        names = {"ctrl": key.ctrl, "alt": key.alt, "meta": key.cmd}
        with self._keyboard.pressed(*[names[f] for f, on in (held or {}).items() if on]):
            self._keyboard.type(text)

    def _display(self) -> Any:
        """This sink's own connection to the X server (XTest and the keyboard mapping)."""
        if self._xconn is None:
            from Xlib import display

            self._xconn = display.Display()
        return self._xconn

    def _typer(self) -> XTyper:
        if self._text is None:
            self._text = XTyper(self._display())
        return self._text

    def _scan(self, scan: int, down: bool) -> None:
        keycode = scan_to_x_keycode(scan)
        if keycode is None:
            raise ValueError(f"unknown scan code 0x{scan:X}")
        from Xlib import X
        from Xlib.ext import xtest

        conn = self._display()
        xtest.fake_input(conn, X.KeyPress if down else X.KeyRelease, keycode)
        conn.sync()

    def special_key(self, event: Any) -> None:
        key = self._keyboard_mod.Key
        if event.key == pb.CTRL_ALT_DEL:
            with self._keyboard.pressed(key.ctrl, key.alt):
                self._keyboard.tap(key.delete)
        elif event.key == pb.PRINT_SCREEN:
            self._keyboard.tap(key.print_screen)
        elif event.key == pb.LOCK_SCREEN:
            self._lock_screen()

    @staticmethod
    def _lock_screen() -> None:
        for command in (["loginctl", "lock-session"], ["xdg-screensaver", "lock"]):
            if shutil.which(command[0]):
                subprocess.run(command, check=False, timeout=10, capture_output=True)
                return
        log.warning("cannot lock the screen: neither loginctl nor xdg-screensaver is installed")

    # -- cursor ------------------------------------------------------------------------
    def cursor(self) -> tuple[tuple[int, int] | None, Any | None]:
        if self._cursor is None:
            return None, None
        position, shape = self._cursor.poll()
        return position, (pb.CursorShape(**shape) if shape is not None else None)

    def close(self) -> None:
        for name in sorted(self._held_modifiers):
            self._keyboard.release(self._vk_key(MODIFIER_VKS[name]))
        self._held_modifiers.clear()
        if self._cursor is not None:
            self._cursor.close()
        if self._text is not None:
            self._text.close()
        if self._xconn is not None:
            self._xconn.close()
