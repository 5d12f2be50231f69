"""The lossless picture drawn again over another codec's (``Encoder.redraw``, the
``raw_over`` extension): in parts of about the size asked, exact over any picture the
viewer showed, with what changes meanwhile, and only for viewers that draw it.

And a keyframe in parts drawn over the viewers' picture (``Encoder.keyframe_in_parts``,
the ``raw_keep`` extension): the keyframe due every 10 s over a slow link. A first part
of about the size asked whose rows below the viewers keep, then the rest swept down the
screen with whatever changes meanwhile going first; exact in the end for a viewer in
step and for one that starts at the part (a late viewer, one that skipped frames).

And another codec's picture gone on from (``Encoder.adopt``): a screen whose whole
lossless picture a slow link cannot carry keeps the video's, and what changes on it goes
exact over it.

And the keyframe due made of the viewers' picture (``Encoder.repeat_keyframe``,
``RawFrame.repeat``): exactly what the frames before it left, with no new image, so a
viewer in step may skip it; the change on the screen meanwhile goes in the next frame."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import zstandard
from remote_codec_raw_zstd import SPEC
from remote_codec_raw_zstd import encoder as encoder_module
from remote_codec_raw_zstd.decoder import RawZstdDecoder
from remote_codec_raw_zstd.encoder import RawZstdEncoder
from remote_codec_raw_zstd.extensions import COPY_EXTENSION, KEEP_EXTENSION, OVER_EXTENSION
from remote_codec_raw_zstd.parts import PLACEHOLDER

from remote_core.codecs import FrameDecoder, KeyframeClock, encoder_config
from remote_core.protocol import pb
from remote_core.testing.codec_contract import LINE_H, Desktop, video_like
from remote_core.types import CodecSpec, EncodedFrame, Rect
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


def test_raw_lists_the_over_and_keep_extensions() -> None:
    assert SPEC.extensions == (COPY_EXTENSION, OVER_EXTENSION, KEEP_EXTENSION)


# -- keyframes in parts (raw_keep) --------------------------------------------------------------
def test_a_keyframe_part_leaves_the_viewers_picture_below_it() -> None:
    desktop = Desktop(W, H, seed=11)
    enc, in_step = encoder(KEEP_EXTENSION), RawZstdDecoder()
    in_step.decode(wire(enc.encode(desktop.image, keyframe=True)))
    desktop.type(40, (W - 200, H - 100))  # typing all over, below the first part
    typed = desktop.image.copy()
    assert enc.keyframe_in_parts(PART)
    part = wire(enc.encode(typed, keyframe=True))
    assert part.keyframe and 0 < part.rows < H and not part.rects
    assert len(part.data) < 2 * PART  # about the size asked: one slice over at most
    assert enc.pending and enc.redrawn == part.rows / H
    kept = np.asarray(in_step.decode(part))
    assert np.array_equal(kept[:part.rows], typed[:part.rows])
    assert not np.array_equal(kept[part.rows:], typed[part.rows:])  # still the old picture
    late = np.asarray(RawZstdDecoder().decode(part))  # nothing to keep: the placeholder
    assert np.array_equal(late[:part.rows], typed[:part.rows])
    assert late[part.rows:].tobytes() == PLACEHOLDER * ((H - part.rows) * W)
    # The rest, swept down, brings both viewers to the screen exactly.
    progress: list[float | None] = []
    parts = redraw(enc, [typed], progress)
    assert len(parts) >= 3 and not any(p.keyframe for p in parts)
    assert all(len(p.data) < 2 * PART for p in parts)
    swept = [p for p in progress if p is not None]
    assert swept == sorted(swept) and progress[-1] is None
    viewers = [in_step, RawZstdDecoder()]
    viewers[1].decode(part)
    for viewer in viewers:
        for p in parts:
            picture = viewer.decode(p)
        assert np.array_equal(np.asarray(picture), typed)


def test_what_changes_below_the_sweep_goes_with_the_next_part() -> None:
    """Typing at the bottom while the keyframe is swept from the top: the viewers in step
    show the picture there, so the change goes at once, not when the sweep gets there."""
    desktop = Desktop(W, H, seed=12)
    enc, dec = encoder(KEEP_EXTENSION), RawZstdDecoder()
    dec.decode(wire(enc.encode(desktop.image, keyframe=True)))
    assert enc.keyframe_in_parts(PART)
    part = wire(enc.encode(desktop.image, keyframe=True))
    dec.decode(part)
    typed = desktop.image.copy()
    typed[H - 40:H - 24, 8:208] = 255 - typed[H - 40:H - 24, 8:208]
    first = wire(enc.encode(typed))
    assert enc.redrawn is not None and enc.redrawn < 0.5  # the sweep is far from the bottom
    assert any(r.y + r.height > H - 40 for r in first.rects)
    shown = np.asarray(dec.decode(first))
    assert np.array_equal(shown[H - 40:H - 24], typed[H - 40:H - 24])
    for p in redraw(enc, [typed]):
        shown = np.asarray(dec.decode(p))
    assert np.array_equal(shown, typed)


def test_a_change_goes_alone_between_bands_and_the_sweep_still_ends() -> None:
    """A word typed before every part: it goes in a frame of its own, not with a band (a
    few hundred bytes, not a part's), and every other frame carries a band however busy
    the screen, so the sweep ends."""
    desktop = Desktop(W, H, seed=16)
    enc = encoder(KEEP_EXTENSION)
    enc.encode(desktop.image, keyframe=True)
    assert enc.keyframe_in_parts(PART)
    enc.encode(desktop.image, keyframe=True)
    sizes, alone = [], []
    while enc.pending:
        assert len(sizes) < 400, "the sweep never ended"
        desktop.type(1)
        swept = enc.redrawn
        frame = wire(enc.encode(desktop.image))
        sizes.append(len(frame.data))
        alone.append(enc.redrawn == swept)
    assert alone[0] and not alone[1] and alone[2]
    assert max(size for size, a in zip(sizes, alone, strict=True) if a) < 2048


def test_the_sweep_takes_the_captures_word_for_what_changed() -> None:
    """Once a part has sent every change, what the capture reports changed is what goes
    with the next one, with no comparison of the whole screen: a change it did not report
    waits (as in any frame the capture describes) until it reports it."""
    desktop = Desktop(W, H, seed=18)
    enc, dec = encoder(KEEP_EXTENSION), RawZstdDecoder()
    dec.decode(wire(enc.encode(desktop.image, keyframe=True)))
    assert enc.keyframe_in_parts(PART)
    dec.decode(wire(enc.encode(desktop.image, keyframe=True)))
    dec.decode(wire(enc.encode(desktop.image, dirty=[])))  # a band: nothing changed
    typed = desktop.image.copy()
    word = Rect(8, H - 40, 200, 16)
    typed[word.y:word.y + word.height, word.x:word.x + word.width] ^= 0xFF
    unreported = wire(enc.encode(typed, dirty=[]))
    assert not any(r.y + r.height > H - 40 for r in unreported.rects)  # a band alone
    reported = wire(enc.encode(typed, dirty=[word]))
    assert list(reported.rects) == [word]  # alone, between bands
    shown = np.asarray(dec.decode(reported))
    for _ in range(200):
        if not enc.pending:
            break
        shown = np.asarray(dec.decode(wire(enc.encode(typed, dirty=[]))))
    assert not enc.pending and np.array_equal(shown, typed)


def test_a_page_scrolls_as_moves_through_the_sweep() -> None:
    """A page scrolling while the keyframe is swept down the screen: each scroll goes as a
    move and the rows it uncovers, alone (no band), the sweep waiting, and going back up
    to the rows a move brought from below it (a viewer that started at the part lacks
    them); once the page stops, the sweep ends, and a viewer in step and one that started
    at the part both show the screen exactly."""
    desktop = Desktop(W, H, seed=17)
    page_top = desktop.page[1]
    enc, in_step, late = encoder(KEEP_EXTENSION, COPY_EXTENSION), RawZstdDecoder(), RawZstdDecoder()
    in_step.decode(wire(enc.encode(desktop.image, keyframe=True)))
    assert enc.keyframe_in_parts(PART)
    frames = [wire(enc.encode(desktop.image, keyframe=True))]
    while enc.redrawn is not None and enc.redrawn * H < page_top + 100:  # into the page
        frames.append(wire(enc.encode(desktop.image)))
    swept = enc.redrawn
    assert swept is not None
    scrolls, (left, _, right, _) = [], desktop.page
    for _ in range(20):
        before = desktop.image.copy()
        desktop.scroll()
        rows = np.flatnonzero((before != desktop.image).any(axis=(1, 2)))
        dirty = [Rect(left, rows[0], right - left, rows[-1] + 1 - rows[0])]  # as X says
        moves = enc.find_moves(desktop.image, dirty)
        assert moves is not None and moves.copies
        scrolls.append(wire(enc.encode(desktop.image, dirty=dirty, moves=moves)))
        assert scrolls[-1].copies  # and the line it uncovered, not a band:
        assert [(r.width, r.height) for r in scrolls[-1].rects] == [(right - left, LINE_H)]
    assert enc.redrawn is not None and page_top <= round(enc.redrawn * H) < swept * H
    frames += [*scrolls, *redraw(enc, [desktop.image])]
    for viewer in (in_step, late):
        for f in frames:
            picture = viewer.decode(f)
        assert np.array_equal(np.asarray(picture), desktop.image), viewer is late


REAL_COMPRESSOR = zstandard.ZstdCompressor


class CountingCompressor:
    """A real Zstandard compressor that counts the bytes it is given, in one go or in a
    stream."""

    fed = 0

    def __init__(self, **options: Any) -> None:
        self._real = REAL_COMPRESSOR(**options)

    def compress(self, data: Any) -> bytes:
        CountingCompressor.fed += len(data)
        return self._real.compress(data)

    def compressobj(self, size: int = -1) -> Any:
        real = self._real.compressobj(size=size)

        class Stream:
            def compress(self, data: Any) -> bytes:
                CountingCompressor.fed += len(data)
                return real.compress(data)

            def flush(self, mode: int = zstandard.COMPRESSOBJ_FLUSH_FINISH) -> bytes:
                return real.flush(mode)

        return Stream()


@pytest.mark.parametrize("kind", ["keyframe in parts", "redraw"])
def test_each_part_is_compressed_once(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a part holds is compressed once, into the frame that goes (measuring the part
    by compressing it and then compressing it again for its frame was half of what the
    keyframe due cost over a slow link), and whether a keyframe is over a part is told
    from a sample, not from the whole picture compressed. Zstandard is given the
    display's bytes twice for a keyframe in parts (once in the part's frame, the rows to
    come as placeholder; once in the sweep) and once for a redraw."""
    monkeypatch.setattr(encoder_module.zstandard, "ZstdCompressor", CountingCompressor)
    desktop = Desktop(W, H, seed=19).image
    enc, dec = encoder(KEEP_EXTENSION, OVER_EXTENSION), RawZstdDecoder()
    dec.decode(wire(enc.encode(desktop, keyframe=True)))
    CountingCompressor.fed = 0
    if kind == "keyframe in parts":
        assert enc.keyframe_in_parts(PART)
        frames = [wire(enc.encode(desktop, keyframe=True)), *redraw(enc, [desktop])]
        assert frames[0].rows
    else:
        dec.begin_from(lossy(desktop))
        assert enc.redraw(PART)
        frames = redraw(enc, [desktop])
    assert len(frames) > 3
    for frame in frames:
        shown = np.asarray(dec.decode(frame))
        if frame.compressed:
            assert zstandard.frame_content_size(frame.data) == (
                W * H * 4 if frame.keyframe else sum(r.width * r.height * 4 for r in frame.rects))
    assert np.array_equal(shown, desktop)
    times = 2 if kind == "keyframe in parts" else 1
    assert CountingCompressor.fed <= W * H * 4 * (times + 0.1), CountingCompressor.fed / (W * H * 4)


def test_a_keyframe_that_fits_a_part_or_has_a_new_size_goes_whole() -> None:
    enc = encoder(KEEP_EXTENSION)
    blank = np.zeros((H, W, 4), np.uint8)
    assert enc.keyframe_in_parts(PART)
    first = enc.encode(Desktop(W, H, seed=13).image, keyframe=True)  # nothing to keep yet
    assert first is not None and first.rows == 0 and not enc.pending
    assert enc.keyframe_in_parts(PART)
    small = enc.encode(blank, keyframe=True)  # a few hundred bytes: under one part
    assert small is not None and small.rows == 0 and not enc.pending
    assert enc.encode(Desktop(W, H, seed=13).image, keyframe=True).rows == 0  # asked once


def test_no_keyframe_in_parts_for_viewers_that_do_not_keep_their_picture() -> None:
    desktop = Desktop(W, H, seed=14).image
    plain = encoder(OVER_EXTENSION)
    plain.encode(desktop, keyframe=True)
    assert not plain.keyframe_in_parts(PART)
    frame = plain.encode(desktop, keyframe=True)
    assert frame is not None and frame.rows == 0 and not plain.pending


def test_a_part_of_more_rows_than_the_display_is_refused() -> None:
    enc = encoder(KEEP_EXTENSION)
    frame = wire(enc.encode(Desktop(W, H, seed=15).image, keyframe=True))
    with pytest.raises(ValueError, match="rows"):
        RawZstdDecoder().decode(EncodedFrame(
            data=frame.data, keyframe=True, width=W, height=H, compressed=frame.compressed,
            rows=H + 1))


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


def test_after_adopting_the_video_picture_only_what_changes_goes_exact_over_it() -> None:
    """Nothing is sent for the adopted picture; a typed word goes as a small frame that a
    viewer showing the video's picture draws exact over it; there is no picture of the
    encoder's own to repeat or send in parts until a keyframe, which sends it whole."""
    desktop = Desktop(W, H, seed=8)
    enc, dec = encoder(OVER_EXTENSION, KEEP_EXTENSION), RawZstdDecoder()
    assert not encoder().adopt(desktop.image)  # without the viewers' extension: no
    dec.begin_from(lossy(desktop.image))  # what the video codec left on the screen
    assert enc.adopt(desktop.image)
    assert enc.repeat_keyframe() is None and not enc.keyframe_in_parts(PART)
    before = desktop.image.copy()
    desktop.type(5)
    frame = wire(enc.encode(desktop.image))  # found by comparing with the adopted one
    assert not frame.keyframe and len(frame.data) < 20_000
    shown = np.asarray(dec.decode(frame))
    sent = np.zeros((H, W), bool)
    for r in frame.rects:
        sent[r.y:r.y + r.height, r.x:r.x + r.width] = True
    assert np.any(before != desktop.image, axis=2)[~sent].sum() == 0  # each change went
    assert np.array_equal(shown[sent], desktop.image[sent])  # exact where it went
    assert np.array_equal(shown[~sent], lossy(before)[~sent])  # the video's elsewhere
    key = wire(enc.encode(desktop.image, keyframe=True))
    assert key.keyframe and not key.rows
    assert np.array_equal(np.asarray(dec.decode(key)), desktop.image)
    assert enc.repeat_keyframe() is not None and enc.keyframe_in_parts(PART)
