"""A recording's video as an MP4 or WebM file that any player opens.

H.264 and H.265 go into MP4, VP9 and AV1 into WebM, as they were relayed: their packets
are remuxed at the times they were recorded, never re-encoded. Anything else (raw frames,
a codec the container does not hold, a recording whose codec changed midway) is decoded
with the codec plugins' own decoders and encoded once (H.264 for MP4, VP9 for WebM).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, cast

import av
import numpy as np
import numpy.typing as npt
from av.video.stream import VideoStream

from remote_core.codecs import FrameDecoder
from remote_core.types import EncodedFrame

__all__ = ["CONTAINERS", "Exported", "export_video"]

Frames = Callable[[], Iterable[tuple[int, str, EncodedFrame]]]
"""A fresh walk over the recording's video: ``(milliseconds since its start, codec name,
frame)``, in order (the export reads it twice: once to choose, once to write)."""

CONTAINERS = {"mp4": ({"h264", "h265"}, "libx264"), "webm": ({"vp9", "av1"}, "libvpx-vp9")}
"""Container -> (codecs remuxed into it as they are, the encoder for everything else)."""
_STREAM_CODEC = {"h264": "h264", "h265": "hevc", "vp9": "vp9", "av1": "av1"}
_TIME_BASE = Fraction(1, 1000)


@dataclass(frozen=True)
class Exported:
    """What was written: the container, whether packets were remuxed (else encoded), the
    codec in the file, how many frames, and the picture's size."""

    container: str
    remuxed: bool
    codec: str
    frames: int
    width: int
    height: int


def export_video(frames: Frames, out: Path, decoders: FrameDecoder) -> Exported:
    """Write the recording's video to ``out`` (``.mp4`` or ``.webm``).

    :raises ValueError: another suffix, no keyframe to start from, or frames no installed
        decoder reads.
    """
    container = out.suffix.lstrip(".").lower()
    if container not in CONTAINERS:
        raise ValueError(f"export writes .mp4 or .webm files, not {out.name!r}")
    remuxable, _ = CONTAINERS[container]
    codecs, first = _survey(frames, decoders)
    width, height = first.shape[1], first.shape[0]
    if len(codecs) == 1 and next(iter(codecs)) in remuxable:
        codec = next(iter(codecs))
        count = _remux(_from_keyframe(frames()), out, codec, width, height)
        return Exported(container, True, codec, count, width, height)
    count = _encode(_from_keyframe(frames()), out, container, decoders, width, height)
    return Exported(container, False, CONTAINERS[container][1], count, width, height)


def _survey(frames: Frames, decoders: FrameDecoder) -> tuple[set[str], npt.NDArray[np.uint8]]:
    """The codecs the video uses, and its first picture (decoded from the first keyframe)."""
    codecs: set[str] = set()
    first = None
    for _at, codec, frame in _from_keyframe(frames()):
        codecs.add(codec)
        if first is None:
            image = decoders.decode(codec, frame)
            if image is not None:
                first = np.asarray(image)
    decoders.close()
    if first is None:
        raise ValueError("the recording holds no keyframe to start the video from")
    return codecs, first


def _from_keyframe(frames: Iterable[tuple[int, str, EncodedFrame]]
                   ) -> Iterator[tuple[int, str, EncodedFrame]]:
    started = False
    for at, codec, frame in frames:
        started = started or frame.keyframe
        if started:
            yield at, codec, frame


def _remux(frames: Iterable[tuple[int, str, EncodedFrame]], out: Path, codec: str,
           width: int, height: int) -> int:
    count, last = 0, -1
    with av.open(str(out), "w") as output:
        stream = cast(VideoStream, output.add_stream(_STREAM_CODEC[codec]))
        stream.width, stream.height = width, height
        stream.time_base = _TIME_BASE
        for at, _codec, frame in frames:
            at = max(at, last + 1)  # strictly increasing, as every muxer wants
            last = at
            packet = av.Packet(frame.data)
            packet.pts = packet.dts = at
            packet.time_base = _TIME_BASE
            packet.is_keyframe = frame.keyframe
            packet.stream = stream
            output.mux(packet)
            count += 1
    return count


def _encode(frames: Iterable[tuple[int, str, EncodedFrame]], out: Path, container: str,
            decoders: FrameDecoder, width: int, height: int) -> int:
    encoder = CONTAINERS[container][1]
    even = (width + width % 2, height + height % 2)
    count, last = 0, -1
    with av.open(str(out), "w") as output:
        stream = cast(VideoStream, output.add_stream(encoder, rate=30))
        stream.width, stream.height = even
        stream.pix_fmt = "yuv420p"
        stream.time_base = _TIME_BASE
        stream.codec_context.time_base = _TIME_BASE
        for at, codec, frame in frames:
            image = decoders.decode(codec, frame)
            if image is None:
                continue
            at = max(at, last + 1)
            last = at
            video = av.VideoFrame.from_ndarray(_padded(np.asarray(image), even), format="bgra")
            yuv = video.reformat(format="yuv420p")
            yuv.pts = at
            yuv.time_base = _TIME_BASE
            for packet in stream.encode(yuv):
                output.mux(packet)
            count += 1
        for packet in stream.encode(None):
            output.mux(packet)
    decoders.close()
    return count


def _padded(image: npt.NDArray[np.uint8], size: tuple[int, int]) -> Any:
    """The picture at the file's size: a display that grew is cut, one that shrank (or an
    odd size) padded with its edge."""
    image = image[:size[1], :size[0]]
    h, w = image.shape[:2]
    if (w, h) == size:
        return np.ascontiguousarray(image)
    return np.pad(image, ((0, size[1] - h), (0, size[0] - w), (0, 0)), mode="edge")
