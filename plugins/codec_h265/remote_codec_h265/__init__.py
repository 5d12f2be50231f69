"""Plugin ``codec_h265``: H.265/HEVC (libx265 encoder, FFmpeg decoder).

Smaller streams than H.264 for more encoder CPU; browsers decode it only where
the platform has a decoder, so ``CODEC_AUTO`` ranks it below H.264 and VP9.
"""

from __future__ import annotations

from remote_codec_pyav import pyav_codec

from remote_core import hookimpl
from remote_core.protocol import pb
from remote_core.types import CodecSpec

__all__ = ["SCALED", "SPEC", "register_codecs"]

SCALED = "h265_scaled"
"""The extension of viewers that scale a picture coded smaller than the display's size
(its size SEI's) up to it: the agent downscales motion while short of CPU."""

SPEC = pyav_codec("h265", module="remote_codec_h265.codec",
                  encoder="H265Encoder", decoder="H265Decoder",
                  preference=pb.CODEC_H265, frame_field="h265", auto_rank=20,
                  extensions=(SCALED,))


@hookimpl
def register_codecs() -> list[CodecSpec]:
    return [SPEC]
