"""Plugin ``codec_h264``: H.264 (libx264 encoder, FFmpeg decoder).

The default of ``CODEC_AUTO``: fast to encode, decoded by every browser.
"""

from __future__ import annotations

from remote_codec_pyav import pyav_codec

from remote_core import hookimpl
from remote_core.protocol import pb
from remote_core.types import CodecSpec

__all__ = ["SCALED", "SPEC", "register_codecs"]

SCALED = "h264_scaled"
"""The extension of viewers that scale a picture coded smaller than the display's size
(its size SEI's) up to it: the agent downscales motion while short of CPU."""

SPEC = pyav_codec("h264", module="remote_codec_h264.codec",
                  encoder="H264Encoder", decoder="H264Decoder",
                  preference=pb.CODEC_H264, frame_field="h264", auto_rank=40,
                  extensions=(SCALED,))


@hookimpl
def register_codecs() -> list[CodecSpec]:
    return [SPEC]
