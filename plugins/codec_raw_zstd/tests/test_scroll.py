"""Scrolls sent as moves (``RawFrame.copies``, the ``raw_copy`` extension): found, exact,
small, and only for viewers that draw them; and a decoder that refuses bad moves."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from remote_codec_raw_zstd import SPEC
from remote_codec_raw_zstd.decoder import MAX_COPIES, RawZstdDecoder
from remote_codec_raw_zstd.dirty import find_dirty
from remote_codec_raw_zstd.encoder import RawZstdEncoder
from remote_codec_raw_zstd.extensions import COPY_EXTENSION
from remote_codec_raw_zstd.scroll import MIN_ROWS, find_scroll

from remote_core.codecs import encoder_config
from remote_core.protocol import pb
from remote_core.testing.codec_contract import LINE_H, Desktop, video_like
from remote_core.types import CopyRect, EncodedFrame, Rect
from remote_core.video import from_wire, to_wire

W, H = 1280, 720


def encoder(*extensions: str) -> RawZstdEncoder:
    config = dataclasses.replace(encoder_config(W, H), extensions=frozenset(extensions))
    return RawZstdEncoder(config)


def flat(image: np.ndarray) -> memoryview:
    return memoryview(image).cast("B")


def wire(frame: EncodedFrame | None) -> EncodedFrame:
    """``frame`` as a viewer gets it, through the wire's ``RawFrame``."""
    assert frame is not None
    return from_wire(pb.VideoFrame.FromString(to_wire(frame, SPEC).SerializeToString()))[1]


def noisy(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (H, W, 4), dtype=np.uint8)


def damage(before: np.ndarray, after: np.ndarray) -> list[Rect]:
    return find_dirty(bytearray(before), flat(after), W, H)


@pytest.mark.parametrize("lines", [1, -1, 5, -3])
def test_a_scrolled_page_is_found_as_one_move_of_exactly_its_pixels(lines: int) -> None:
    desktop = Desktop(W, H, seed=3)
    before = desktop.image.copy()
    x0, y0, x1, _ = desktop.page
    bottom = y0 + desktop._lines * LINE_H
    page = desktop.image[y0:bottom, x0:x1]
    shift = lines * LINE_H // 2
    page[:] = np.roll(page, -shift, axis=0)  # up for a positive shift, down for a negative
    [rect] = damage(before, desktop.image)
    scroll = find_scroll(bytearray(before), flat(desktop.image), W, rect)
    assert scroll is not None
    c = scroll.copy
    assert c.src_y - c.y == shift and c.src_x == c.x
    assert c.height >= (bottom - y0) - abs(shift) - LINE_H and c.width >= (x1 - x0) - 8
    assert rect.x <= c.x and c.x + c.width <= rect.x + rect.width  # inside the damage
    moved = before[c.src_y:c.src_y + c.height, c.src_x:c.src_x + c.width]
    assert np.array_equal(desktop.image[c.y:c.y + c.height, c.x:c.x + c.width], moved)
    # The move and the rest cover the damage exactly once.
    cover = np.zeros((H, W), int)
    for r in [c.target, *scroll.rest]:
        cover[r.y:r.y + r.height, r.x:r.x + r.width] += 1
    assert (cover[rect.y:rect.y + rect.height, rect.x:rect.x + rect.width] == 1).all()
    assert cover.sum() == rect.width * rect.height


def test_what_is_no_scroll_is_no_move() -> None:
    desktop = Desktop(W, H, seed=4)
    before = desktop.image.copy()
    whole = Rect(0, 0, W, H)
    for t in (1, 2):
        assert find_scroll(bytearray(video_like(W, H, t - 1)), flat(video_like(W, H, t)), W,
                           whole) is None
    noise = noisy(1)
    assert find_scroll(bytearray(before), flat(noise), W, whole) is None
    desktop.type(40)  # typing changes rows in place
    assert find_scroll(bytearray(before), flat(desktop.image), W, whole) is None
    blank = np.zeros((H, W, 4), np.uint8)
    assert find_scroll(bytearray(blank), flat(blank.copy()), W, whole) is None
    small = Rect(0, 0, W, 2 * MIN_ROWS - 1)  # too few rows to be worth a move
    desktop.scroll(LINE_H)
    assert find_scroll(bytearray(before), flat(desktop.image), W, small) is None


def scrolled(previous: np.ndarray, shift: int) -> np.ndarray:
    """``previous`` with all its rows moved up by ``shift`` (down when negative)."""
    return np.roll(previous, -shift, axis=0)


def test_a_page_that_scrolls_on_is_followed_from_the_last_move() -> None:
    """Rows that all look alike (a striped page) cast no votes, so the search alone finds
    no move; the last move, tried first, is taken because every row it brings moved."""
    stripes = np.zeros((H, W, 4), np.uint8)
    stripes[::2] = noisy(11)[0]  # two kinds of row, each in hundreds of places
    whole = Rect(0, 0, W, H)
    now = scrolled(stripes, 2 * LINE_H)
    assert find_scroll(bytearray(stripes), flat(now), W, whole) is None
    last = CopyRect(0, 5, W, 300, 0, 5 + 2 * LINE_H)
    scroll = find_scroll(bytearray(stripes), flat(now), W, whole, last)
    assert scroll is not None
    assert scroll.copy == CopyRect(0, 0, W, H - 2 * LINE_H, 0, 2 * LINE_H)
    assert scroll.rest == [Rect(0, H - 2 * LINE_H, W, 2 * LINE_H)]


def test_the_encoder_tries_its_last_move_first() -> None:
    """A frame whose changed rows all look alike is sent as a move when the last frame
    moved by the same shift."""
    enc, dec = encoder(COPY_EXTENSION), RawZstdDecoder()
    pattern = noisy(14)[:5]  # five rows over and over: none of them votes

    def stripes(first: int) -> np.ndarray:
        return pattern[(np.arange(400) + first) % 5]

    image = noisy(15)
    image[:400] = stripes(0)
    dec.decode(wire(enc.encode(image, keyframe=True)))
    shift = 2 * LINE_H
    scrolled_page = scrolled(image, shift)  # found by its distinct rows below the stripes
    stripes_on = scrolled_page.copy()  # then the stripes alone scroll on
    stripes_on[:364] = stripes(2 * shift)[:364]
    for image, dirty in ((scrolled_page, Rect(0, 0, W, H)),
                         (stripes_on, Rect(0, 0, W, 364))):
        moves = enc.find_moves(image, [dirty])
        assert moves is not None
        assert moves.copies == (CopyRect(0, 0, W, dirty.height - shift, 0, shift),)
        frame = wire(enc.encode(image, dirty=[dirty], moves=moves))
        assert np.array_equal(np.asarray(dec.decode(frame)), image)


def test_a_last_move_that_does_not_fit_the_change_is_passed_over() -> None:
    """A page scrolled by another shift, a last move outside the changed rectangle, and
    one whose shift matches only a blank stretch: the search finds the page's move."""
    desktop = Desktop(W, H, seed=12)
    before = desktop.image.copy()
    desktop.scroll(LINE_H)
    [rect] = damage(before, desktop.image)
    expected = find_scroll(bytearray(before), flat(desktop.image), W, rect)
    assert expected is not None
    for last in (CopyRect(rect.x, rect.y, rect.width, 200, rect.x, rect.y + LINE_H // 2),
                 CopyRect(rect.x, rect.y, rect.width, 200, rect.x, rect.y - LINE_H),
                 CopyRect(0, rect.y, W, 200, 0, rect.y + LINE_H)):  # wider than the change
        found = find_scroll(bytearray(before), flat(desktop.image), W, rect, last)
        assert found is not None
        assert (found.copy, found.rest) == (expected.copy, expected.rest)
    # A blank page but for a band of text rows between the rows checked first: the last
    # move's shift matches the blank rows (hundreds, in one stretch), not the text.
    page = np.full((H, W, 4), 245, np.uint8)
    page[48:78] = noisy(13)[:30]  # rows 30-60 once scrolled: between rows 0 and 89
    now = scrolled(page, LINE_H)
    whole = Rect(0, 0, W, H)
    found = find_scroll(bytearray(page), flat(now), W, whole,
                        CopyRect(0, 0, W, 300, 0, LINE_H // 3))
    assert found is not None and found.copy.src_y - found.copy.y == LINE_H


def test_a_viewer_that_draws_moves_gets_a_scroll_as_one_small_exact_frame() -> None:
    desktop = Desktop(W, H, seed=5)
    moving, plain = encoder(COPY_EXTENSION), encoder()
    decoder = RawZstdDecoder()
    image = desktop.image.copy()
    decoder.decode(wire(moving.encode(image, keyframe=True)))
    plain.encode(image, keyframe=True)
    for step in range(6):
        before = image
        desktop.scroll(LINE_H if step % 2 else LINE_H // 2)
        image = desktop.image.copy()
        rects = damage(before, image)
        moves = moving.find_moves(image, rects)
        assert moves is not None and len(moves.copies) == 1
        frame = wire(moving.encode(image, dirty=rects, moves=moves))
        assert frame.copies == moves.copies and not frame.keyframe
        assert np.array_equal(np.asarray(decoder.decode(frame)), image)
        whole = plain.encode(image, dirty=rects)
        assert whole is not None and not whole.copies
        assert len(frame.data) * 5 < len(whole.data), (len(frame.data), len(whole.data))
    # Without a capture's damage the encoder compares for itself, and finds it too.
    desktop.scroll(LINE_H)
    image = desktop.image.copy()
    moves = moving.find_moves(image)
    assert moves is not None and len(moves.copies) == 1
    assert np.array_equal(np.asarray(decoder.decode(wire(moving.encode(image, moves=moves)))),
                          image)


def test_without_damage_the_comparison_is_handed_back_not_done_twice() -> None:
    """No scroll in a change the capture did not describe: the answer is what the
    encoder's comparison found, and encoding with it is encoding as before."""
    desktop = Desktop(W, H, seed=9)
    once, again = encoder(COPY_EXTENSION), encoder(COPY_EXTENSION)
    image = desktop.image.copy()
    once.encode(image, keyframe=True)
    again.encode(image, keyframe=True)
    before = image
    desktop.type(12)
    image = desktop.image.copy()
    moves = once.find_moves(image)
    assert moves is not None and not moves.copies
    assert list(moves.rest) == damage(before, image)
    assert once.encode(image, moves=moves) == again.encode(image)
    assert once.find_moves(image, damage(before, image)) is None  # the capture's word


def test_an_encoder_for_viewers_that_do_not_draw_moves_finds_none() -> None:
    desktop = Desktop(W, H, seed=6)
    enc = encoder()
    enc.encode(desktop.image.copy(), keyframe=True)
    desktop.scroll(LINE_H)
    assert enc.find_moves(desktop.image.copy()) is None


def test_no_moves_before_a_keyframe_or_while_parts_are_owed() -> None:
    desktop = Desktop(W, H, seed=7)
    enc = encoder(COPY_EXTENSION)
    assert enc.find_moves(desktop.image) is None  # nothing sent yet
    enc = RawZstdEncoder(dataclasses.replace(encoder_config(W, H),
                                             extensions=frozenset({COPY_EXTENSION})),
                         part_bytes=64 * 1024, message_limit=128 * 1024)
    noise = noisy(2)
    enc.encode(noise, keyframe=True)
    assert enc.pending
    assert enc.find_moves(noise) is None


def test_a_frame_that_only_moves_carries_no_pixels() -> None:
    desktop = Desktop(W, H, seed=8)
    enc, dec = encoder(COPY_EXTENSION), RawZstdDecoder()
    image = desktop.image.copy()
    dec.decode(wire(enc.encode(image, keyframe=True)))
    x0, y0, x1, _ = desktop.page
    bottom = y0 + desktop._lines * LINE_H
    image[y0:bottom, x0:x1] = np.roll(image[y0:bottom, x0:x1], -LINE_H, axis=0)  # wraps round
    rect = Rect(x0, y0, x1 - x0, bottom - y0)
    moves = enc.find_moves(image, [rect])
    assert moves is not None
    frame = wire(enc.encode(image, dirty=[rect], moves=moves))
    assert frame.copies and np.array_equal(np.asarray(dec.decode(frame)), image)


def frame_with(*copies: CopyRect, keyframe: bool = False) -> EncodedFrame:
    return EncodedFrame(data=b"" if not keyframe else bytes(4 * 64 * 64), keyframe=keyframe,
                        width=64, height=64, copies=copies)


def test_a_decoder_refuses_moves_that_do_not_add_up() -> None:
    dec = RawZstdDecoder()
    dec.decode(frame_with(keyframe=True))
    for bad, message in [
        (CopyRect(0, 0, 65, 10, 0, 0), "copy target 65x10"),
        (CopyRect(0, 0, 10, 10, 60, 0), "copy source 10x10\\+60\\+0"),
        (CopyRect(-1, 0, 10, 10, 0, 0), "outside the 64x64 frame"),
        (CopyRect(0, 0, 0, 10, 0, 0), "outside the 64x64 frame"),
    ]:
        with pytest.raises(ValueError, match=message):
            dec.decode(frame_with(bad))
    with pytest.raises(ValueError, match=f"at most {MAX_COPIES}"):
        dec.decode(frame_with(*[CopyRect(0, 0, 1, 1, 1, 1)] * (MAX_COPIES + 1)))
    with pytest.raises(ValueError, match="must not carry dirty rectangles or copies"):
        dec.decode(dataclasses.replace(frame_with(keyframe=True),
                                       copies=(CopyRect(0, 0, 1, 1, 1, 1),)))
    with pytest.raises(ValueError, match="must carry dirty rectangles or copies"):
        dec.decode(frame_with())
    assert dec.decode(frame_with(CopyRect(0, 0, 8, 8, 8, 8))) is not None  # still usable


def test_moves_are_done_in_order_each_on_the_picture_the_last_left() -> None:
    dec = RawZstdDecoder()
    picture = np.arange(64 * 64 * 4, dtype=np.uint32).astype(np.uint8).reshape(64, 64, 4)
    dec.decode(EncodedFrame(data=picture.tobytes(), keyframe=True, width=64, height=64))
    moves = [CopyRect(0, 0, 64, 32, 0, 16),  # up, overlapping
             CopyRect(0, 40, 64, 8, 0, 0),  # from what the first move left there
             CopyRect(4, 30, 30, 20, 6, 22),  # down and sideways, overlapping
             CopyRect(10, 50, 40, 10, 2, 50)]  # along its own rows, overlapping
    out = np.asarray(dec.decode(frame_with(*moves)))
    expected = picture.copy()
    for c in moves:
        expected[c.y:c.y + c.height, c.x:c.x + c.width] = \
            expected[c.src_y:c.src_y + c.height, c.src_x:c.src_x + c.width].copy()
    assert np.array_equal(out, expected)
