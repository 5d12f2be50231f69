"""The png codec against the contract every codec plugin runs, and its own format rules."""

from __future__ import annotations

import numpy as np
import pytest
from remote_codec_png import SPEC
from remote_codec_png.codec import PngDecoder, PngEncoder, pack, unpack

from remote_core.codecs import encoder_config
from remote_core.testing.codec_contract import CodecContract, Desktop
from remote_core.types import EncodedFrame, Rect


class TestPngContract(CodecContract):
    spec = SPEC
    min_psnr = None  # lossless: bit-exact


def test_typing_sends_only_the_band_that_changed() -> None:
    desktop = Desktop(640, 480)
    enc = PngEncoder(encoder_config(640, 480))
    whole = enc.encode(desktop.image)
    assert whole is not None and whole.keyframe and not whole.rects
    desktop.type(3)
    frame = enc.encode(desktop.image)
    assert frame is not None and not frame.keyframe and len(frame.rects) == 1
    assert len(frame.data) < len(whole.data) / 10
    assert enc.encode(desktop.image.copy()) is None


def test_a_capture_hint_is_trusted_and_clipped() -> None:
    desktop = Desktop(64, 48)
    enc, dec = PngEncoder(encoder_config(64, 48)), PngDecoder()
    dec.decode(enc.encode(desktop.image))
    desktop.image[:8, :8, :3] = 9
    assert enc.encode(desktop.image, dirty=[]) is None
    frame = enc.encode(desktop.image, dirty=[Rect(-4, -4, 12, 12)])
    assert frame is not None and frame.rects == (Rect(0, 0, 8, 8),)
    assert np.array_equal(dec.decode(frame), desktop.image)


@pytest.mark.parametrize("data", [b"\x00\x00", b"\x00\x00\x00\x09abc", pack([b"not a png"])])
def test_malformed_parts_are_value_errors(data: bytes) -> None:
    with pytest.raises(ValueError):
        PngDecoder().decode(EncodedFrame(data, keyframe=True, width=4, height=4))


def test_a_picture_larger_than_its_rectangle_is_refused_before_decoding() -> None:
    big = PngEncoder(encoder_config(64, 64)).encode(Desktop(64, 64).image)
    assert big is not None
    with pytest.raises(ValueError, match="is 64x64, expected 8x8"):
        PngDecoder().decode(EncodedFrame(big.data, keyframe=True, width=8, height=8))
    assert unpack(pack([b"a", b"", b"bc"])) == [b"a", b"", b"bc"]
