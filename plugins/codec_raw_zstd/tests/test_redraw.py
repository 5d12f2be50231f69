"""The lossless picture drawn again over another codec's (``Encoder.redraw``, the
``raw_over`` extension): in parts of about the size asked, exact over any picture the
viewer showed, with what changes meanwhile, and only for viewers that draw it."""

from __future__ import annotations

import dataclasses

import numpy as np
from remote_codec_raw_zstd import SPEC
from remote_codec_raw_zstd.decoder import RawZstdDecoder
from remote_codec_raw_zstd.encoder import RawZstdEncoder
from remote_codec_raw_zstd.extensions import COPY_EXTENSION, OVER_EXTENSION

from remote_core.codecs import FrameDecoder, encoder_config
from remote_core.protocol import pb
from remote_core.testing.codec_contract import Desktop, video_like
from remote_core.types import CodecSpec, EncodedFrame
from remote_core.video import from_wire, to_wire

W, H = 1280, 720
PART = 24 * 1024


def encoder(*extensions: str) -> RawZstdEncoder:
    config = dataclasses.replace(encoder_config(W, H), extensions=frozenset(extensions))
    return RawZstdEncoder(config)


def wire(frame: EncodedFrame | None) -> EncodedFrame:
    """``frame`` as a viewer gets it, through the wire's ``RawFrame``."""
    assert frame is not None
    return from_wire(pb.VideoFrame.FromString(to_wire(frame, SPEC).SerializeToString()))[1]


def lossy(image: np.ndarray) -> np.ndarray:
    """What a video codec might have left on the viewer's screen: close, not exact."""
    return (image & 0xF0) | 0x08


def redraw(enc: RawZstdEncoder, images: list[np.ndarray],
           progress: list[float | None] | None = None) -> list[EncodedFrame]:
    """The parts of a redraw, each encoded from the next of ``images`` (the last one
    again once they run out), until nothing is pending; ``progress`` gets ``redrawn``
    after each."""
    parts = []
    while enc.pending:
        assert len(parts) < 200, "the redraw never ended"
        image = images[min(len(parts), len(images) - 1)]
        parts.append(wire(enc.encode(image)))
        if progress is not None:
            progress.append(enc.redrawn)
    assert enc.redrawn is None
    return parts


def test_a_redraw_sweeps_the_screen_in_parts_drawn_over_the_viewers_picture() -> None:
    desktop = Desktop(W, H, seed=5).image
    enc, dec = encoder(OVER_EXTENSION), RawZstdDecoder()
    dec.decode(wire(enc.encode(desktop, keyframe=True)))
    moved = video_like(W, H, 3)
    dec.begin_from(lossy(moved))  # a video codec drew since: the viewer shows that
    assert enc.redrawn is None
    assert enc.redraw(PART)
    assert enc.pending and enc.redrawn == 0
    shown = []
    progress: list[float | None] = []
    for part in redraw(enc, [desktop], progress):
        assert not part.keyframe and part.rects and not part.copies
        assert len(part.data) < 2 * PART  # about the size asked: one slice over at most
        shown.append(np.asarray(dec.decode(part)))
    assert len(shown) >= 3  # the whole screen is far over one part
    assert np.array_equal(shown[-1], desktop)
    # Top to bottom: what is not swept yet is still the video's picture.
    assert not np.array_equal(shown[0][-16:], desktop[-16:])
    swept = [p for p in progress if p is not None]
    assert progress[-1] is None and len(swept) == len(progress) - 1
    assert all(0 < p < 1 for p in swept) and swept == sorted(swept)
    assert enc.encode(desktop) is None  # nothing is owed any more


def test_what_changes_above_the_sweep_goes_with_the_next_part() -> None:
    desktop = Desktop(W, H, seed=6)
    enc, dec = encoder(OVER_EXTENSION), RawZstdDecoder()
    dec.decode(wire(enc.encode(desktop.image, keyframe=True)))
    dec.begin_from(lossy(desktop.image))
    assert enc.redraw(PART)
    dec.decode(wire(enc.encode(desktop.image)))
    swept = enc.redrawn
    assert swept is not None and swept > 0
    typed = desktop.image.copy()
    typed[4:20, 8:208] = 255 - typed[4:20, 8:208]  # typing at the top, already swept
    parts = redraw(enc, [typed])
    assert any(r.y < swept * H for r in parts[0].rects)  # at once, not after the sweep
    for part in parts:
        picture = dec.decode(part)
    assert np.array_equal(np.asarray(picture), typed)


def test_a_keyframe_ends_a_redraw_and_a_new_redraw_starts_from_the_top() -> None:
    desktop = Desktop(W, H, seed=7).image
    enc = encoder(OVER_EXTENSION)
    enc.encode(desktop, keyframe=True)
    assert enc.redraw(PART)
    enc.encode(desktop)
    assert enc.redrawn
    assert wire(enc.encode(desktop, keyframe=True)).keyframe
    assert enc.redrawn is None and not enc.pending
    assert enc.redraw(PART) and enc.redrawn == 0


def test_no_redraw_for_viewers_that_do_not_draw_over_another_codecs_picture() -> None:
    desktop = Desktop(W, H, seed=8).image
    plain = encoder(COPY_EXTENSION)
    plain.encode(desktop, keyframe=True)
    assert not plain.redraw(PART) and not plain.pending
    fresh = encoder(OVER_EXTENSION)
    assert not fresh.redraw(PART)  # no picture sent yet: its size is not the viewers'


def test_the_viewer_builds_on_the_other_codecs_last_picture() -> None:
    """``FrameDecoder`` hands the raw decoder the picture it showed last, whichever codec
    drew it, so a redraw's first part draws over the video picture, not over nothing."""
    shown = lossy(video_like(W, H, 1))

    class Still:
        def decode(self, frame: EncodedFrame) -> np.ndarray:
            return shown

        def begin_from(self, image: object) -> None:
            pass

        def close(self) -> None:
            pass

    other = CodecSpec(name="still", decoder_factory=Still)  # type: ignore[arg-type]
    desktop = Desktop(W, H, seed=9).image
    enc = encoder(OVER_EXTENSION)
    enc.encode(desktop, keyframe=True)
    viewer = FrameDecoder([SPEC, other])
    viewer.decode("still", EncodedFrame(data=b"", keyframe=True, width=W, height=H))
    assert enc.redraw(PART)
    first = wire(enc.encode(desktop))
    picture = np.asarray(viewer.decode("raw", first))
    rows = first.rects[-1].y + first.rects[-1].height
    assert np.array_equal(picture[:rows], desktop[:rows])
    assert np.array_equal(picture[rows:], shown[rows:])
    parts = redraw(enc, [desktop])
    for part in parts:
        picture = viewer.decode("raw", part)
    assert np.array_equal(np.asarray(picture), desktop)


def test_raw_lists_the_over_extension() -> None:
    assert SPEC.extensions == (COPY_EXTENSION, OVER_EXTENSION)
