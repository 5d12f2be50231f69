from __future__ import annotations

from remote_input_pynput._keymap import scan_to_x_keycode, vk_to_name
from remote_input_pynput._sink import wheel_steps


def test_vk_letters_digits_and_named_keys():
    assert vk_to_name(0x41) == ("char", "a")
    assert vk_to_name(0x39) == ("char", "9")
    assert vk_to_name(0x0D) == ("key", "enter")
    assert vk_to_name(0x70) == ("key", "f1")
    assert vk_to_name(0xBD) == ("char", "-")
    assert vk_to_name(0xFF) is None


def test_scan_codes_map_to_evdev_keycodes():
    assert scan_to_x_keycode(0x1E) == 38  # A
    assert scan_to_x_keycode(0xE048) == 111  # Up
    assert scan_to_x_keycode(0x1FF) is None


def test_wheel_steps_round_and_never_lose_a_small_turn():
    assert wheel_steps(0) == 0
    assert wheel_steps(240) == 2
    assert wheel_steps(-120) == -1
    assert wheel_steps(30) == 1
    assert wheel_steps(-30) == -1
