"""Frames larger than one message go in parts that each fit (CONTRACT 1, "Raw frames").

Real Zstandard and real sizes: a 3840x2160 screen of noise is 33 MB raw and
does not compress; the shipped cap is 16 MiB per message. Every frame is
measured as the ``Message`` bytes it travels in, and the stock decoder (which
the Python viewer uses) must rebuild the screen exactly from them.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest
import zstandard
from remote_codec_raw_zstd import SPEC
from remote_codec_raw_zstd.decoder import RawZstdDecoder
from remote_codec_raw_zstd.encoder import RawZstdEncoder
from remote_codec_raw_zstd.parts import MESSAGE_LIMIT, PART_BYTES
from remote_codec_raw_zstd.parts import PLACEHOLDER as PLACEHOLDER_BYTES

from remote_core.codecs import encoder_config
from remote_core.protocol import DEFAULT_MAX_MESSAGE_BYTES, wrap
from remote_core.testing.codec_contract import Desktop
from remote_core.types import EncodedFrame, Rect
from remote_core.video import to_wire

Image = npt.NDArray[np.uint8]
CAP = 16 * 1024 * 1024
PLACEHOLDER = np.frombuffer(PLACEHOLDER_BYTES, np.uint8)


def noise(width: int, height: int, seed: int = 1) -> Image:
    image = np.random.default_rng(seed).integers(0, 256, (height, width, 4), dtype=np.uint8)
    image[..., 3] = 255
    return image


def frames_until_whole(enc: RawZstdEncoder, image: Image,
                       keyframe: bool = False) -> Iterator[EncodedFrame]:
    """The first frame for ``image`` and then, while the encoder owes some, the rest."""
    first = enc.encode(image, keyframe=keyframe)
    assert first is not None
    yield first
    while enc.pending:
        frame = enc.encode(image)
        assert frame is not None, "pending, yet nothing to send"
        yield frame


def test_the_limits_are_the_shipped_cap_and_a_part_well_under_it() -> None:
    assert MESSAGE_LIMIT == DEFAULT_MAX_MESSAGE_BYTES == CAP
    assert 3 * PART_BYTES <= 8 * 1024 * 1024  # the flow window's parts fit a viewer's outbox


@pytest.mark.parametrize(("size", "content", "messages"), [
    ((1920, 1080), "smooth", 1),
    ((1920, 1080), "noise", 1),       # 8.3 MB: under the cap, whole as ever
    ((3840, 2160), "smooth", 1),
    ((3840, 2160), "noise", 17),      # 33 MB: a keyframe part and 16 more
])
def test_a_keyframe_arrives_exactly_with_every_message_under_the_cap(
        size: tuple[int, int], content: str, messages: int) -> None:
    w, h = size
    image = noise(w, h) if content == "noise" else Desktop(w, h).image
    enc, dec = RawZstdEncoder(encoder_config(w, h)), RawZstdDecoder()
    frames = list(frames_until_whole(enc, image, keyframe=True))
    sizes = [message_bytes(f) for f in frames]
    assert len(frames) == messages and max(sizes) <= CAP, sizes
    assert frames[0].keyframe and not any(f.keyframe for f in frames[1:])
    if messages > 1:
        assert max(sizes) <= PART_BYTES + 4096, sizes
    for frame in frames:
        shown = np.asarray(dec.decode(frame))
        assert declared_size(frame) in (None, pixels(frame) * 4)
    assert np.array_equal(shown, image)


def message_bytes(frame: EncodedFrame | None) -> int:
    """The size of the whole wire message the agent sends for ``frame``."""
    assert frame is not None
    return len(wrap("video_frame", to_wire(frame, SPEC)))


def pixels(frame: EncodedFrame) -> int:
    if frame.keyframe:
        return frame.width * frame.height
    return sum(r.width * r.height for r in frame.rects)


def declared_size(frame: EncodedFrame) -> int | None:
    """The size a compressed frame's Zstandard header declares (every one declares it)."""
    return int(zstandard.frame_content_size(frame.data)) if frame.compressed else None


def test_a_keyframe_part_is_a_whole_display_with_the_rest_opaque_black() -> None:
    w, h = 3840, 2160
    image = noise(w, h)
    shown = np.asarray(RawZstdDecoder().decode(RawZstdEncoder(encoder_config(w, h)).encode(image)))
    real = int(np.flatnonzero((shown != PLACEHOLDER).any(axis=(1, 2)))[-1]) + 1
    assert 32 <= real < h and real % 32 == 0  # whole tile rows
    assert np.array_equal(shown[:real], image[:real])
    assert (shown[real:] == PLACEHOLDER).all()


def test_an_incremental_frame_too_large_for_one_message_goes_in_parts() -> None:
    w, h = 3840, 2160
    desktop = Desktop(w, h)
    enc, dec = RawZstdEncoder(encoder_config(w, h)), RawZstdDecoder()
    dec.decode(enc.encode(desktop.image))
    changed = desktop.image.copy()
    rows = h * 5 // 9  # 55 % of the screen: no keyframe, and 18.4 MB that do not compress
    changed[:rows] = np.random.default_rng(2).integers(0, 256, (rows, w, 4), dtype=np.uint8)
    frames = list(frames_until_whole(enc, changed))
    assert len(frames) > 1 and not any(f.keyframe for f in frames)
    assert max(message_bytes(f) for f in frames) <= PART_BYTES + 4096
    for frame in frames:
        shown = np.asarray(dec.decode(frame))
        assert declared_size(frame) in (None, pixels(frame) * 4)
    assert np.array_equal(shown, changed)


def test_parts_sweep_down_a_screen_that_keeps_changing_at_the_top() -> None:
    """A busy region must not starve the rest of a picture in parts (small limits)."""
    w, h = 256, 256
    enc = RawZstdEncoder(encoder_config(w, h), message_limit=64 * 1024, part_bytes=48 * 1024)
    dec = RawZstdDecoder()
    image = noise(w, h)
    dec.decode(enc.encode(image, keyframe=True))
    for seed in range(3, 40):
        assert enc.pending
        image[:32] = noise(w, 32, seed)  # the top changes every frame
        frame = enc.encode(image)
        assert message_bytes(frame) <= 48 * 1024 + 1024
        shown = np.asarray(dec.decode(frame))
        if np.array_equal(shown[32:], image[32:]):
            break
    else:
        raise AssertionError("the bottom of the screen never arrived")
    while enc.pending:
        shown = np.asarray(dec.decode(enc.encode(image)))
    assert np.array_equal(shown, image)


def test_a_capture_hint_is_not_trusted_while_parts_are_owed() -> None:
    w, h = 256, 256
    enc = RawZstdEncoder(encoder_config(w, h), message_limit=64 * 1024, part_bytes=48 * 1024)
    dec = RawZstdDecoder()
    image = noise(w, h)
    dec.decode(enc.encode(image, keyframe=True))
    assert enc.pending
    frames = []
    while enc.pending:  # the capture says nothing changed; the viewers still lack rows
        frames.append(enc.encode(image, dirty=[]))
    for frame in frames:
        shown = np.asarray(dec.decode(frame))
    assert np.array_equal(shown, image)
    assert enc.encode(image, dirty=[]) is None  # and now it is trusted again
    image[:8, :8] = 7
    frame = enc.encode(image, dirty=[Rect(0, 0, 8, 8)])
    assert [(r.x, r.y, r.width, r.height) for r in frame.rects] == [(0, 0, 8, 8)]


def test_a_keyframe_requested_mid_way_starts_again_from_the_top() -> None:
    w, h = 256, 256
    enc = RawZstdEncoder(encoder_config(w, h), message_limit=64 * 1024, part_bytes=48 * 1024)
    image = noise(w, h)
    enc.encode(image, keyframe=True)
    enc.encode(image)
    assert enc.pending
    dec = RawZstdDecoder()  # a viewer that joins now
    frames = list(frames_until_whole(enc, image, keyframe=True))
    assert frames[0].keyframe
    for frame in frames:
        shown = np.asarray(dec.decode(frame))
    assert np.array_equal(shown, image)
