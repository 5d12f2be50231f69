"""Windows virtual-key codes and PC scan codes mapped to X11 (SPEC KeyEvent). No I/O.

VK codes name keys the way the viewer's keyboard layout does; they are
resolved to pynput keys. Scan codes name physical keys (set 1, ``0xE0xx``
for the extended ones) and become evdev keycodes, which X11 offsets by 8.
"""

from __future__ import annotations

__all__ = ["MODIFIER_VKS", "scan_to_x_keycode", "vk_to_name"]

_NAMED = {
    0x08: "backspace", 0x09: "tab", 0x0D: "enter", 0x10: "shift", 0x11: "ctrl", 0x12: "alt",
    0x13: "pause", 0x14: "caps_lock", 0x1B: "esc", 0x20: "space", 0x21: "page_up",
    0x22: "page_down", 0x23: "end", 0x24: "home", 0x25: "left", 0x26: "up", 0x27: "right",
    0x28: "down", 0x2C: "print_screen", 0x2D: "insert", 0x2E: "delete", 0x5B: "cmd_l",
    0x5C: "cmd_r", 0x5D: "menu", 0x90: "num_lock", 0x91: "scroll_lock", 0xA0: "shift_l",
    0xA1: "shift_r", 0xA2: "ctrl_l", 0xA3: "ctrl_r", 0xA4: "alt_l", 0xA5: "alt_r",
    0xAD: "media_volume_mute", 0xAE: "media_volume_down", 0xAF: "media_volume_up",
    0xB0: "media_next", 0xB1: "media_previous", 0xB3: "media_play_pause",
}
_CHARS = {
    0x60: "0", 0x61: "1", 0x62: "2", 0x63: "3", 0x64: "4", 0x65: "5", 0x66: "6", 0x67: "7",
    0x68: "8", 0x69: "9", 0x6A: "*", 0x6B: "+", 0x6D: "-", 0x6E: ".", 0x6F: "/",
    0xBA: ";", 0xBB: "=", 0xBC: ",", 0xBD: "-", 0xBE: ".", 0xBF: "/", 0xC0: "`",
    0xDB: "[", 0xDC: "\\", 0xDD: "]", 0xDE: "'",
}

MODIFIER_VKS = {"ctrl": 0x11, "alt": 0x12, "shift": 0x10, "meta": 0x5B}
"""The VK pressed to bring each ``Modifiers`` flag into effect."""

_EXTENDED_SCAN = {
    0xE01C: 104, 0xE01D: 105, 0xE035: 106, 0xE037: 107, 0xE038: 108, 0xE047: 110,
    0xE048: 111, 0xE049: 112, 0xE04B: 113, 0xE04D: 114, 0xE04F: 115, 0xE050: 116,
    0xE051: 117, 0xE052: 118, 0xE053: 119, 0xE05B: 133, 0xE05C: 134, 0xE05D: 135,
}


def vk_to_name(vk: int) -> tuple[str, str] | None:
    """``("key", name)`` for a pynput ``Key`` member, ``("char", c)`` for a character key."""
    if vk in _NAMED:
        return "key", _NAMED[vk]
    if 0x30 <= vk <= 0x39:
        return "char", chr(vk)
    if 0x41 <= vk <= 0x5A:
        return "char", chr(vk).lower()
    if 0x70 <= vk <= 0x87:
        return "key", f"f{vk - 0x6F}"
    if vk in _CHARS:
        return "char", _CHARS[vk]
    return None


def scan_to_x_keycode(scan: int) -> int | None:
    """The X keycode of a set-1 scan code (``0xE0xx`` for extended keys), or ``None``."""
    if scan in _EXTENDED_SCAN:
        return _EXTENDED_SCAN[scan]
    if 0 < scan < 0x80:
        return scan + 8
    return None
