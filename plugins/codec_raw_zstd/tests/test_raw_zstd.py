from __future__ import annotations

import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from remote_codec_raw_zstd import SPEC
from remote_codec_raw_zstd.decoder import RawZstdDecoder
from remote_codec_raw_zstd.dirty import find_dirty
from remote_codec_raw_zstd.encoder import RawZstdEncoder

from remote_core.codecs import KeyframeClock, encoder_config
from remote_core.protocol import pb
from remote_core.testing.codec_contract import CodecContract, Desktop, video_like
from remote_core.types import EncodedFrame, Rect


class TestRawZstdContract(CodecContract):
    spec = SPEC
    min_psnr = None  # bit-exact


def dirty(before: np.ndarray, after: np.ndarray) -> list[Rect]:
    """find_dirty on two numpy images, as the encoder calls it on its flat buffers."""
    h, w = after.shape[:2]
    return find_dirty(bytearray(before), memoryview(after).cast("B"), w, h)


def covered(rects: list[Rect], shape: tuple[int, ...]) -> np.ndarray:
    mask = np.zeros(shape[:2], bool)
    for r in rects:
        mask[r.y:r.y + r.height, r.x:r.x + r.width] = True
    return mask


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768), (33, 17), (1, 1)])
def test_dirty_rectangles_cover_every_change_and_tight_edges(size: tuple[int, int]) -> None:
    w, h = size
    desktop = Desktop(w, h, seed=9)
    before = desktop.image.copy()
    desktop.type(7)
    desktop.image[h - 1, w - 1, 0] ^= 0xFF  # one pixel in the bottom-right corner
    rects = dirty(before, desktop.image)
    changed = (before != desktop.image).any(axis=2)
    mask = covered(rects, desktop.image.shape)
    assert not (changed & ~mask).any()
    for r in rects:  # each rectangle's edges are tiles that hold a change
        assert changed[r.y:r.y + 32, r.x:r.x + r.width].any()
        assert changed[r.y + r.height - 32:r.y + r.height, r.x:r.x + r.width].any()
        assert changed[r.y:r.y + r.height, r.x:r.x + 32].any()
        assert changed[r.y:r.y + r.height, r.x + r.width - 32:r.x + r.width].any()
    assert all(r.x >= 0 and r.y >= 0 and r.x + r.width <= w and r.y + r.height <= h for r in rects)


def test_typing_is_few_small_rectangles_and_scrolling_a_few() -> None:
    desktop = Desktop(1920, 1080)
    before = desktop.image.copy()
    desktop.type(12)
    rects = dirty(before, desktop.image)
    assert len(rects) == 1 and rects[0].width * rects[0].height <= 256 * 64
    before = desktop.image.copy()
    desktop.scroll()
    assert len(dirty(before, desktop.image)) == 1
    assert dirty(desktop.image, desktop.image.copy()) == []


def test_unchanged_screen_sends_nothing_and_a_changed_one_only_the_change() -> None:
    desktop = Desktop(640, 480)
    enc = RawZstdEncoder(encoder_config(640, 480))
    assert enc.encode(desktop.image).keyframe
    assert enc.encode(desktop.image.copy()) is None
    desktop.type(3)
    frame = enc.encode(desktop.image)
    assert not frame.keyframe and len(frame.rects) == 1
    assert frame.compressed and len(frame.data) < 8_000


def test_capture_hints_are_clipped_and_trusted() -> None:
    desktop = Desktop(320, 200)
    enc, dec = RawZstdEncoder(encoder_config(320, 200)), RawZstdDecoder()
    dec.decode(enc.encode(desktop.image))
    desktop.type(2)
    assert enc.encode(desktop.image, dirty=[]) is None
    frame = enc.encode(desktop.image, dirty=[Rect(-10, -10, 1000, 1000)])
    assert frame.keyframe  # the hint covers the whole frame
    assert np.array_equal(dec.decode(frame), desktop.image)


def test_full_screen_change_is_sent_as_a_whole_frame() -> None:
    enc = RawZstdEncoder(encoder_config(320, 200))
    enc.encode(video_like(320, 200, 0))
    frame = enc.encode(video_like(320, 200, 1))
    assert frame.keyframe and not frame.rects


def test_a_keyframe_at_least_every_ten_seconds_even_when_nothing_changes() -> None:
    now = [0.0]
    enc = RawZstdEncoder(encoder_config(64, 48), clock=KeyframeClock(clock=lambda: now[0]))
    image = Desktop(64, 48).image
    assert enc.encode(image).keyframe
    now[0] = 9.9
    assert enc.encode(image) is None
    now[0] = 10.0
    assert enc.encode(image).keyframe


def test_incompressible_data_is_sent_uncompressed() -> None:
    noise = np.random.default_rng(0).integers(0, 256, (64, 64, 4), dtype=np.uint8)
    frame = RawZstdEncoder(encoder_config(64, 64)).encode(noise)
    assert not frame.compressed and len(frame.data) == 64 * 64 * 4
    assert np.array_equal(RawZstdDecoder().decode(frame), noise)


def test_quality_preset_picks_the_zstd_level() -> None:
    image = Desktop(640, 480).image
    low = RawZstdEncoder(encoder_config(640, 480, pb.QualitySettings(preset=pb.QUALITY_LOW)))
    high = RawZstdEncoder(encoder_config(640, 480, pb.QualitySettings(preset=pb.QUALITY_HIGH)))
    assert len(low.encode(image).data) < len(high.encode(image).data)


def keyframe_of(width: int, height: int, data: bytes, compressed: bool = False) -> EncodedFrame:
    return EncodedFrame(data, keyframe=True, width=width, height=height, compressed=compressed)


def test_decompression_bomb_is_refused_before_it_expands() -> None:
    dec = RawZstdDecoder()
    bomb = zstandard.ZstdCompressor(level=19).compress(bytes(64 * 1024 * 1024))
    with pytest.raises(ValueError, match="declares"):
        dec.decode(keyframe_of(64, 64, bomb, compressed=True))
    # A frame without a declared size stops at the expected size.
    streamed = zstandard.ZstdCompressor(write_content_size=False).compress(bytes(1 << 20))
    with pytest.raises(ValueError, match="more than"):
        dec.decode(keyframe_of(64, 64, streamed, compressed=True))
    short = zstandard.ZstdCompressor().compress(bytes(100))
    with pytest.raises(ValueError, match="declares"):
        dec.decode(keyframe_of(64, 64, short, compressed=True))


@pytest.mark.parametrize("rect", [(-1, 0, 4, 4), (0, 0, 0, 4), (62, 0, 4, 4), (0, 46, 4, 4)])
def test_rectangles_outside_the_frame_are_refused(rect: tuple[int, int, int, int]) -> None:
    dec = RawZstdDecoder()
    dec.decode(keyframe_of(64, 48, bytes(64 * 48 * 4)))
    x, y, w, h = rect
    frame = EncodedFrame(bytes(max(0, w * h * 4)), width=64, height=48, rects=(Rect(x, y, w, h),))
    with pytest.raises(ValueError, match="outside"):
        dec.decode(frame)


@pytest.mark.parametrize("size", [(0, 10), (10, 0), (-5, 5), (20_000, 1), (16_000, 16_000)])
def test_absurd_sizes_are_refused_without_allocating(size: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="frame size"):
        RawZstdDecoder().decode(keyframe_of(*size, b""))


def test_incremental_frame_without_its_keyframe_waits() -> None:
    frame = EncodedFrame(bytes(16), width=8, height=8, rects=(Rect(0, 0, 2, 2),))
    assert RawZstdDecoder().decode(frame) is None


def test_overlapping_rectangles_beyond_the_frame_area_are_refused() -> None:
    dec = RawZstdDecoder()
    dec.decode(keyframe_of(8, 8, bytes(256)))
    rects = (Rect(0, 0, 8, 8),) * 2
    with pytest.raises(ValueError, match="more than"):
        dec.decode(EncodedFrame(bytes(512), width=8, height=8, rects=rects))


@settings(max_examples=300, deadline=None)
@given(
    width=st.integers(-2, 70), height=st.integers(-2, 70), keyframe=st.booleans(),
    compressed=st.booleans(), data=st.binary(max_size=600),
    rects=st.lists(st.tuples(*[st.integers(-3, 80)] * 4), max_size=4),
)
def test_any_raw_frame_decodes_or_is_a_value_error(width: int, height: int, keyframe: bool,
                                                   compressed: bool, data: bytes,
                                                   rects: list[tuple[int, int, int, int]]) -> None:
    dec = RawZstdDecoder()
    dec.decode(keyframe_of(8, 8, bytes(256)))
    if compressed and data[:1] == b"z":  # sometimes a real Zstandard frame of the same bytes
        data = zstandard.ZstdCompressor().compress(data[1:])
    frame = EncodedFrame(data, keyframe=keyframe, width=width, height=height,
                         compressed=compressed, rects=tuple(Rect(*r) for r in rects))
    try:
        out = dec.decode(frame)
    except ValueError:
        return
    assert out is None or out.shape == (height, width, 4)
