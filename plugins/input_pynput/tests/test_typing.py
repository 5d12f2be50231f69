"""The text typer's pure parts: which key and level give a character on a layout."""

from __future__ import annotations

from remote_input_pynput._typing import Layout, Stroke, keysyms_for, plan

# A few keys of a German layout as X reports them (keycodes 24, 26, 11, 29, 34)
GERMAN = {
    11: (0x32, 0x22, 0x32, 0x22, 0xB2, 0xAC4),  # 2 " 2 " ² ⅛
    24: (0x71, 0x51, 0x71, 0x51, 0x40, 0x7D9, 0x40),  # q Q q Q @ Ω @
    26: (0x65, 0x45, 0x65, 0x45, 0x20AC, 0x20AC),  # e E e E € €
    29: (0x7A, 0x5A, 0x7A, 0x5A),  # z Z (a German Z is where a US Y is)
    34: (0xFC, 0xDC, 0xFC, 0xDC),  # ü Ü
}


def german() -> Layout:
    return Layout(8, [GERMAN.get(code, ()) for code in range(8, 40)])


def test_each_character_is_found_at_its_level():
    layout = german()
    assert layout.find(keysyms_for("q")) == Stroke(24, shift=False, level3=False)
    assert layout.find(keysyms_for("Q")) == Stroke(24, shift=True, level3=False)
    assert layout.find(keysyms_for("@")) == Stroke(24, shift=False, level3=True)
    assert layout.find(keysyms_for("€")) == Stroke(26, shift=False, level3=True)  # EuroSign
    assert layout.find(keysyms_for("ü")) == Stroke(34, shift=False, level3=False)
    assert layout.find(keysyms_for("\N{SNOWMAN}")) is None


def test_the_fewest_modifiers_win():
    layout = Layout(8, [(0x71, 0x51, 0x71, 0x51, 0x40), (0x40, 0x41)])  # @ plain on 9
    assert layout.find([0x40]) == Stroke(9, shift=False, level3=False)


def test_spare_keycodes_and_caps_lock():
    layout = german()
    assert 8 in layout.spare() and 24 not in layout.spare()
    assert plan(Stroke(24, False, False), layout, caps_lock=True).shift  # q under Caps Lock
    assert not plan(Stroke(11, False, False), layout, caps_lock=True).shift  # 2 is no letter


def test_keysyms_of_characters():
    assert keysyms_for("a")[0] == 0x61
    assert 0x20AC in keysyms_for("€") and 0x10020AC in keysyms_for("€")
    assert keysyms_for("\n")[1] == 0xFF0D
