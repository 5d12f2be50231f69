"""Input injected into a real X server: the pointer moves, keys reach a real window."""

from __future__ import annotations

import subprocess
import time

import pytest

from remote_core.protocol import pb
from remote_core.testing.xvfb import shared_xvfb, tk_root
from remote_core.types import DisplayDesc

pytestmark = pytest.mark.xvfb


@pytest.fixture(scope="module")
def x_display():
    """The process-wide Xvfb: Tk in this process must never lose its display."""
    return shared_xvfb(800, 600)


@pytest.fixture(scope="module")
def sink(x_display):
    from remote_input_pynput._sink import PynputInput

    s = PynputInput()
    yield s
    s.close()


def _mouse_location(env) -> tuple[int, int]:
    out = subprocess.run(["xdotool", "getmouselocation", "--shell"], env=env, check=True,
                         capture_output=True, text=True).stdout
    values = dict(line.split("=", 1) for line in out.split())
    return int(values["X"]), int(values["Y"])


def test_mouse_move_maps_display_pixels_to_the_virtual_screen(x_display, sink):
    right_half = DisplayDesc(id=2, name="right", x=400, y=0, width=400, height=600)
    sink.mouse(pb.MouseEvent(x=10, y=20, event_type=pb.MOUSE_MOVE), right_half)
    assert _mouse_location(x_display.env()) == (410, 20)
    sink.mouse(pb.MouseEvent(x=5000, y=-3, event_type=pb.MOUSE_MOVE), right_half)
    assert _mouse_location(x_display.env()) == (799, 0)


class _Window:
    """A real Tk window with a text entry that has the keyboard focus."""

    def __init__(self, env) -> None:
        import tkinter

        self.root = tk_root()
        self.root.geometry("300x120+0+0")
        self.entry = tkinter.Entry(self.root)
        self.entry.pack(fill="both", expand=True)
        self.clicks: list[int] = []
        self.entry.bind("<Button>", lambda e: self.clicks.append(e.num))
        self.pump(0.3)
        subprocess.run(["xdotool", "windowfocus", "--sync", str(self.root.winfo_id())],
                       env=env, check=False)
        self.entry.focus_force()
        self.pump(0.2)

    def pump(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.root.update()
            time.sleep(0.01)

    def close(self) -> None:
        self.root.destroy()


@pytest.fixture
def window(x_display):
    w = _Window(x_display.env())
    yield w
    w.close()


def _vk(code: int, down: bool, **mods) -> pb.KeyEvent:
    event = pb.KeyEvent(down=down, key_type=pb.KEY_VK, vk_code=code)
    if mods:
        event.modifiers.CopyFrom(pb.Modifiers(**mods))
    return event


def test_typed_keys_arrive_in_a_real_window(window, sink):
    for code in (0x48, 0x49):  # h i
        sink.key(_vk(code, True))
        sink.key(_vk(code, False))
    sink.key(_vk(0x41, True, shift=True))  # A via the modifier flags
    sink.key(_vk(0x41, False))
    sink.key(_vk(0x31, True, shift=False))  # releases Shift again: 1
    sink.key(_vk(0x31, False))
    sink.key(pb.KeyEvent(down=True, key_type=pb.KEY_SCAN, scan_code=0x2D))  # x
    sink.key(pb.KeyEvent(down=False, key_type=pb.KEY_SCAN, scan_code=0x2D))
    sink.key(pb.KeyEvent(down=True, key_type=pb.KEY_UNICODE, unicode="é!"))
    sink.key(pb.KeyEvent(down=True, key_type=pb.KEY_VK, vk_code=0x08))  # backspace
    sink.key(pb.KeyEvent(down=False, key_type=pb.KEY_VK, vk_code=0x08))
    window.pump(0.5)
    assert window.entry.get() == "hiA1xé"


def test_buttons_and_wheel_reach_the_window(window, sink):
    whole = DisplayDesc(id=1, name="s", x=0, y=0, width=800, height=600, is_primary=True)
    for field in ("left", "middle", "right"):
        buttons = pb.MouseButtons(**{field: True})
        sink.mouse(pb.MouseEvent(x=50, y=50, buttons=buttons, event_type=pb.MOUSE_DOWN), whole)
        sink.mouse(pb.MouseEvent(x=50, y=50, buttons=buttons, event_type=pb.MOUSE_UP), whole)
    sink.mouse(pb.MouseEvent(x=50, y=50, wheel_delta_y=-120, event_type=pb.MOUSE_WHEEL), whole)
    window.pump(0.5)
    assert window.clicks == [1, 2, 3, 5]


def test_unknown_key_codes_are_a_clear_error(sink):
    with pytest.raises(ValueError, match="virtual-key code 0xFF"):
        sink.key(_vk(0xFF, True))
    with pytest.raises(ValueError, match="scan code"):
        sink.key(pb.KeyEvent(down=True, key_type=pb.KEY_SCAN, scan_code=0x1FF))


def test_cursor_position_and_shape_come_from_xfixes(x_display, sink):
    whole = DisplayDesc(id=1, name="s", x=0, y=0, width=800, height=600, is_primary=True)
    _, shape = sink.cursor()  # the first poll reports the current shape
    assert shape is not None and shape.width > 0
    assert len(shape.data) == shape.width * shape.height * 4
    sink.mouse(pb.MouseEvent(x=123, y=45, event_type=pb.MOUSE_MOVE), whole)
    position, _ = sink.cursor()
    assert position == (123, 45)
    assert sink.cursor() == (None, None)  # nothing changed since


@pytest.fixture
def layout(x_display):
    """Switch the X keyboard layout (``setxkbmap``); US again afterwards."""
    env = x_display.env()

    def switch(name: str) -> None:
        subprocess.run(["setxkbmap", name], env=env, check=True, timeout=10)

    yield switch
    switch("us")


def _text(char: str, **held: bool) -> pb.KeyEvent:
    event = pb.KeyEvent(down=True, key_type=pb.KEY_UNICODE, unicode=char)
    if held:
        event.modifiers.CopyFrom(pb.Modifiers(**held))
    return event


@pytest.mark.parametrize("name", ["de", "fr", "us"])
def test_text_arrives_as_typed_whatever_the_layout(window, sink, layout, name):
    """``@`` is AltGr+Q on a German keyboard, ``é`` a plain key on a French one, ``€`` on
    no US key: each arrives as the character the technician typed."""
    layout(name)
    typed = "@/üé€aZ1 ~"
    for char in typed:
        sink.key(_text(char))
    window.pump(0.5)
    assert window.entry.get() == typed


def test_text_under_caps_lock_and_held_shift_is_still_what_was_typed(window, sink, layout):
    layout("de")
    caps = pb.KeyEvent(key_type=pb.KEY_SCAN, scan_code=0x3A)
    shift = pb.KeyEvent(key_type=pb.KEY_SCAN, scan_code=0x2A)
    for down in (True, False):  # Caps Lock on
        caps.down = down
        sink.key(caps)
    sink.key(_text("aB"))
    shift.down = True
    sink.key(shift)  # the technician holds Shift: "1" still arrives as "1", not "!"
    sink.key(_text("1!"))
    shift.down = False
    sink.key(shift)
    for down in (True, False):  # Caps Lock off again
        caps.down = down
        sink.key(caps)
    window.pump(0.5)
    assert window.entry.get() == "aB1!"


def test_a_shortcut_holds_what_the_technician_held(window, sink, layout):
    """Ctrl+A is Tk's "to the line's start"; a German Z is where a US Y is."""
    layout("de")
    sink.key(_text("z"))
    sink.key(_text("y"))
    sink.key(_text("a", ctrl=True))
    sink.key(_text("q"))  # at the start
    window.pump(0.5)
    assert window.entry.get() == "qzy"
