"""The recording format (remote_core.recording): segments cut at keyframes, the hash chain,
and verification that finds a changed, missing, extra or reordered segment."""

from __future__ import annotations

import os

import pytest

from remote_core.recording import (
    HEADER,
    MAGIC,
    Chain,
    RecordingWriter,
    first_link,
    read_segment,
    records,
    seal_all,
    verify,
)

KB = 1024


def written(count: int = 40, size: int = 10 * KB, keyframe_every: int = 5
            ) -> tuple[Chain, list[bytes], list[tuple[int, bytes]]]:
    """A recording of ``count`` messages of ``size`` bytes, a keyframe every few: the
    chain, the finished segments, what was recorded."""
    writer = RecordingWriter("rec-1", segment_bytes=32 * KB)
    sealed, sent = [], []
    for i in range(count):
        message = os.urandom(size)
        sent.append((i * 33, message))
        segment = writer.add(i * 33, message, keyframe=i % keyframe_every == 0)
        if segment is not None:
            sealed.append(segment)
    last = writer.seal()
    assert last is not None
    sealed.append(last)
    assert writer.segments == len(sealed)
    finished, chain = seal_all("rec-1", sealed)
    return chain, finished, sent


def test_segments_start_at_keyframes_and_hold_every_message_in_order() -> None:
    chain, sealed, sent = written()
    assert chain.segments == len(sealed) > 3
    assert chain.bytes == sum(map(len, sealed))
    assert list(records(sealed)) == sent
    for index, data in enumerate(sealed):
        segment = read_segment(data)
        assert segment.index == index
        assert data.startswith(MAGIC)
        # each segment after the first begins with a keyframe (every 5th message)
        first_at = segment.records[0][0]
        assert index == 0 or (first_at // 33) % 5 == 0
    assert verify("rec-1", sealed, final=chain.final, count=chain.segments).intact


def test_a_segment_without_keyframes_is_cut_at_four_times_its_size() -> None:
    writer = RecordingWriter("rec-2", segment_bytes=8 * KB)
    cuts = [writer.add(i, os.urandom(4 * KB)) for i in range(20)]
    sizes = [len(c) for c in cuts if c is not None]
    assert sizes and all(32 * KB <= s < 40 * KB for s in sizes)


def test_nothing_recorded_is_an_empty_chain_that_verifies() -> None:
    assert RecordingWriter("rec-3").seal() is None
    chain = Chain("rec-3")
    assert chain.final == first_link("rec-3").hex()
    assert verify("rec-3", [], final=chain.final, count=0).intact


def test_one_flipped_byte_is_found_and_named() -> None:
    chain, sealed, _ = written()
    for index in (0, 2, len(sealed) - 1):
        damaged = list(sealed)
        data = bytearray(damaged[index])
        data[HEADER.size + 100] ^= 0x01  # inside a message, not the header
        damaged[index] = bytes(data)
        verdict = verify("rec-1", damaged, final=chain.final, count=chain.segments)
        assert not verdict.intact
        assert verdict.first_bad == index, verdict
        assert verdict.final != chain.final


@pytest.mark.parametrize("change", ["missing", "extra", "swapped", "truncated", "other id"])
def test_missing_extra_reordered_or_cut_segments_fail(change: str) -> None:
    chain, sealed, _ = written()
    recording_id = "rec-1"
    if change == "missing":
        sealed = sealed[:-1]
    elif change == "extra":
        sealed = [*sealed, sealed[-1]]
    elif change == "swapped":
        sealed[1], sealed[2] = sealed[2], sealed[1]
    elif change == "truncated":
        sealed[1] = sealed[1][:-5]
    else:
        recording_id = "rec-9"
    verdict = verify(recording_id, sealed, final=chain.final, count=chain.segments)
    assert not verdict.intact and verdict.reason, verdict


def test_what_is_not_a_segment_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="magic"):
        read_segment(b"x" * 100)
    with pytest.raises(ValueError, match="shorter"):
        read_segment(MAGIC)
