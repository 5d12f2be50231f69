"""The keyframe due every 10 s made of the viewers' picture (``Encoder.repeat_keyframe``,
``RawFrame.repeat``): exactly what the frames before it left, with no new image, so a
viewer in step may skip it; the change on the screen meanwhile goes in the next frame."""

from __future__ import annotations

import numpy as np
from remote_codec_raw_zstd import SPEC
from remote_codec_raw_zstd.decoder import RawZstdDecoder
from remote_codec_raw_zstd.encoder import RawZstdEncoder

from remote_core.codecs import KeyframeClock, encoder_config
from remote_core.protocol import pb
from remote_core.testing.codec_contract import Desktop
from remote_core.types import EncodedFrame
from remote_core.video import from_wire, to_wire

W, H = 640, 480


def wire(frame: EncodedFrame | None) -> EncodedFrame:
    """``frame`` as a viewer gets it, through the wire's ``RawFrame``."""
    assert frame is not None
    return from_wire(pb.VideoFrame.FromString(to_wire(frame, SPEC).SerializeToString()))[1]


def test_the_repeated_keyframe_is_the_viewers_picture_and_resets_the_clock() -> None:
    now = [0.0]
    enc = RawZstdEncoder(encoder_config(W, H), KeyframeClock(clock=lambda: now[0]))
    assert enc.repeat_keyframe() is None  # the viewers have no picture yet
    desktop = Desktop(W, H, seed=3)
    in_step = RawZstdDecoder()
    in_step.decode(wire(enc.encode(desktop.image, keyframe=True)))
    desktop.type(12)
    shown = np.asarray(in_step.decode(wire(enc.encode(desktop.image)))).copy()
    desktop.type(12)  # on the screen, not sent yet
    now[0] = 9.9
    again = wire(enc.repeat_keyframe())
    assert again.keyframe and again.repeat and not again.rects and not again.rows
    assert np.array_equal(np.asarray(RawZstdDecoder().decode(again)), shown)
    now[0] = 19.8  # 9.9 s after the repeat: none due, so the typing goes as a change
    typed = wire(enc.encode(desktop.image))
    assert not typed.keyframe and not typed.repeat and typed.rects
    assert np.array_equal(np.asarray(in_step.decode(typed)), desktop.image)
    now[0] = 20.0
    assert wire(enc.encode(desktop.image)).keyframe  # 10 s on: the clock's own keyframe


def test_no_repeat_while_part_of_the_picture_is_owed_or_over_one_message() -> None:
    enc = RawZstdEncoder(encoder_config(W, H), message_limit=256 * 1024, part_bytes=64 * 1024)
    noise = np.random.default_rng(4).integers(0, 256, (H, W, 4), np.uint8)
    enc.encode(noise, keyframe=True)  # far over a message: it goes in parts
    assert enc.pending and enc.repeat_keyframe() is None
    while enc.pending:
        enc.encode(noise)
    assert enc.repeat_keyframe() is None  # the whole picture is still over a message
    desktop = Desktop(W, H, seed=4).image
    enc.encode(desktop)
    assert wire(enc.repeat_keyframe()).repeat


def test_an_ordinary_keyframe_is_no_repeat() -> None:
    enc = RawZstdEncoder(encoder_config(W, H))
    assert not wire(enc.encode(Desktop(W, H, seed=5).image, keyframe=True)).repeat
