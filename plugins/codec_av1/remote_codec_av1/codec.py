"""AV1 through SVT-AV1 in low-delay mode, decoded by dav1d.

AV1 codes any size from 4x4 up; smaller displays are padded. Its frames are
plugin frames, which carry no decode time (no frame is ever reordered) and say
the display's size on keyframes, which the decoders crop to.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from remote_codec_pyav.base import PyAVDecoder, PyAVEncoder, vbv_cap

from remote_core.codecs import profile_for
from remote_core.types import EncodedFrame, EncoderConfig, Moves, Rect

from .scheduling import normal_scheduling

__all__ = ["ENCODER", "AV1Decoder", "AV1Encoder", "av1_crf"]

ENCODER = "libsvtav1"

# SVT-AV1 prints its whole configuration at INFO on every encoder it opens; errors only.
os.environ.setdefault("SVT_LOG", "1")


def av1_crf(h264_crf: int) -> int:
    """The preset's quality target moved from the H.264 scale (0-51) to AV1's (0-63)."""
    return round(h264_crf * 63 / 51)


class AV1Encoder(PyAVEncoder):
    """SVT-AV1's fastest preset with low-delay prediction (no frame is held back),
    constant quality capped by the bitrate."""

    codec_name = ENCODER
    even_sizes = False
    min_side = 4

    def options(self, config: EncoderConfig) -> dict[str, str]:
        threads = max(1, min(4, os.cpu_count() or 1))
        options = {"preset": "12", "crf": str(av1_crf(profile_for(config.preset).crf)),
                   "svtav1-params": f"pred-struct=1:lp={threads}"}
        return options | vbv_cap(config)

    def _open(self, width: int, height: int) -> None:
        with normal_scheduling():  # SVT-AV1 run as root makes its threads real-time
            super()._open(width, height)

    def encode(self, image: Any, *, keyframe: bool = False,
               dirty: Sequence[Rect] | None = None,
               moves: Moves | None = None) -> EncodedFrame | None:
        frame = super().encode(image, keyframe=keyframe, dirty=dirty)
        if frame is None:
            return None
        width, height = self._size if frame.keyframe and self._size else (0, 0)
        return EncodedFrame(data=frame.data, keyframe=frame.keyframe, width=width,
                            height=height, pts=frame.pts)

    def close(self) -> None:
        if self._context is not None:
            try:
                self._context.encode(None)  # end of stream: SVT-AV1 complains without it
            except Exception:  # noqa: S110 - a failing flush of a stream being dropped is moot
                pass
        super().close()


class AV1Decoder(PyAVDecoder):
    """dav1d with one frame in flight: its default frame threading holds frames back."""

    codec_name = "libdav1d"
    _display: tuple[int, int] | None = None

    def _new_context(self) -> Any:
        ctx = super()._new_context()
        ctx.options = dict(ctx.options) | {"max_frame_delay": "1"}
        return ctx

    def decode(self, frame: EncodedFrame) -> npt.NDArray[np.uint8] | None:
        image = super().decode(frame)
        if frame.keyframe and frame.width and frame.height:
            self._display = (frame.width, frame.height)
        if image is None or self._display is None:
            return image
        width, height = self._display
        return np.ascontiguousarray(image[:height, :width])
