"""The backpressure policy and the wire peeks, without sockets."""

from __future__ import annotations

import anyio
import pytest
from remote_server.relay.auth import looks_like_jwt, looks_like_support_code
from remote_server.relay.outbox import Close, Outbox

from remote_core.protocol import (
    NUMBER_BY_FIELD,
    SLOT_NAMES,
    codec_of,
    is_keyframe,
    pb,
    peek,
    wrap,
)

pytestmark = pytest.mark.anyio


def frame(sequence: int, keyframe: bool = False, size: int = 100, codec: str = "raw") -> bytes:
    if codec == "raw":
        video = pb.VideoFrame(sequence=sequence, raw=pb.RawFrame(
            data=b"p" * size, is_keyframe=keyframe, width=1, height=1))
    elif codec not in SLOT_NAMES.values():
        video = pb.VideoFrame(sequence=sequence, plugin=pb.PluginFrame(
            codec=codec, data=b"p" * size, keyframe=keyframe, width=1, height=1,
            dirty_rects=[pb.DirtyRect(x=0, y=0, width=1, height=1)]))
    else:
        video = pb.VideoFrame(sequence=sequence, **{codec: pb.EncodedFrame(
            data=b"p" * size, keyframe=keyframe, pts=sequence)})
    return wrap("video_frame", video)


def offset(data: bytes) -> int:
    number, at = peek(data) or (0, 0)
    assert number == NUMBER_BY_FIELD["video_frame"]
    return at


@pytest.mark.parametrize("codec", ["raw", "vp9", "h264", "h265", "png"])
def test_keyframes_and_codecs_are_recognised_without_parsing(codec: str) -> None:
    for keyframe in (True, False):
        data = frame(1, keyframe, size=300_000, codec=codec)
        assert is_keyframe(data, offset(data)) is keyframe
        assert codec_of(data, offset(data)) == codec


def test_a_frame_of_no_codec_has_no_codec_name() -> None:
    for video in (pb.VideoFrame(sequence=1), pb.VideoFrame(plugin=pb.PluginFrame(data=b"x")),
                  pb.VideoFrame(plugin=pb.PluginFrame(codec="\u00e9t\u00e9"))):
        data = wrap("video_frame", video)
        expected = video.plugin.codec or None
        assert codec_of(data, offset(data)) == expected
    data = frame(1, codec="png")
    assert codec_of(data[:-3], offset(data)) is None
    broken = data.replace(b"png", b"p\xffg")
    assert codec_of(broken, offset(broken)) is None


def test_malformed_or_empty_frames_are_not_keyframes() -> None:
    empty = wrap("video_frame", pb.VideoFrame(sequence=1))
    assert not is_keyframe(empty, offset(empty))
    data = frame(1, True)
    assert not is_keyframe(data[:-3], offset(data))
    assert not is_keyframe(b"\x52\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 0)


def drain(outbox: Outbox) -> list[bytes]:
    items = list(outbox._items)
    return [data for data, _ in items]


def test_a_lagging_outbox_skips_to_the_next_keyframe() -> None:
    size = len(frame(0))
    outbox = Outbox(budget=3 * size + 10)
    frames = [frame(0, True)] + [frame(i) for i in range(1, 6)] + [frame(6, True), frame(7)]
    started = [outbox.put_frame(f, offset(f)) for f in frames]
    # 0-2 fit; 3 starts the skip, 4-5 are skipped too (each may ask for a keyframe); the
    # keyframe 6 replaces the stale queued video; 7 follows it.
    assert started == [False, False, False, True, True, True, False, False]
    assert drain(outbox) == [frames[6], frames[7]]
    assert outbox.dropped_frames == 6 and not outbox.skipping
    assert outbox.queued_bytes == len(frames[6]) + len(frames[7])


def test_reliable_messages_survive_a_keyframe_and_lossy_ones_are_dropped_when_full() -> None:
    size = len(frame(0))
    outbox = Outbox(budget=2 * size + 10)
    outbox.put_frame(frame(0, True), offset(frame(0, True)))
    chat = wrap("chat_message", pb.ChatMessage(content="x" * size))
    assert outbox.put(chat)
    cursor = wrap("cursor_position", pb.CursorPosition(x=1))
    assert not outbox.put(cursor, lossy=True)
    assert outbox.put_frame(frame(1), offset(frame(1)))  # over budget: skip starts
    key = frame(2, True)
    outbox.put_frame(key, offset(key))
    assert drain(outbox) == [chat, key]


def test_one_message_larger_than_the_budget_still_goes_out_when_nothing_waits() -> None:
    outbox = Outbox(budget=10)
    big = frame(0, True, size=1000)
    assert not outbox.put_frame(big, offset(big))
    assert drain(outbox) == [big]


def test_a_peer_too_far_behind_on_reliable_messages_is_closed() -> None:
    outbox = Outbox(budget=1000)
    message = wrap("chat_message", pb.ChatMessage(content="x" * 400))
    results = [outbox.put(message) for _ in range(6)]
    assert results[:4] == [True] * 4 and results[5] is False and outbox.closed
    assert outbox.queued_bytes == 0  # nothing more is kept for it


async def test_the_writer_gets_the_queue_then_the_farewell_then_close() -> None:
    outbox = Outbox(budget=1000)
    outbox.put(b"one")
    outbox.close(1001, "bye", farewell=b"farewell")
    assert not outbox.put(b"late")
    assert [await outbox.get() for _ in range(3)] == [b"one", b"farewell", Close(1001, "bye")]
    assert await outbox.get() == Close(1001, "bye")


async def test_close_without_drain_discards_the_backlog() -> None:
    outbox = Outbox(budget=1000)
    outbox.put(b"stale")
    outbox.close(1008, "too slow", drain=False)
    assert await outbox.get() == Close(1008, "too slow")


def test_credential_shapes() -> None:
    assert looks_like_jwt("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln")
    assert not looks_like_jwt("cak_abc.def")
    for code in ("ABC-DEF-GHJ", "abc def ghj", "ABCDEFGHJ", "A0C-1EF-GHI"):
        assert looks_like_support_code(code), code
    for other in ("cak_ABCDEFGHJ", "AB-CDEF-GHJ1x", "shared-key-value"):
        assert not looks_like_support_code(other), other


async def test_a_producer_waits_for_room_and_is_let_go_when_the_outbox_closes() -> None:
    outbox = Outbox(100)
    for _ in range(3):
        outbox.put(b"m" * 40)
    waited: list[int] = []

    async def producer() -> None:
        await outbox.wait_room(50)
        waited.append(outbox.queued_bytes)

    async with anyio.create_task_group() as group:
        group.start_soon(producer)
        await anyio.sleep(0.01)
        assert waited == []  # 120 queued: it waits
        await outbox.get()
        await anyio.sleep(0.01)
        assert waited == []  # 80
        await outbox.get()
        await anyio.sleep(0.01)
        assert waited == [40]
    outbox.put(b"m" * 40)
    async with anyio.create_task_group() as group:
        group.start_soon(producer)
        await anyio.sleep(0.01)
        outbox.close(1000, "bye")
    assert waited == [40, 80]  # a closed outbox lets every waiter go
