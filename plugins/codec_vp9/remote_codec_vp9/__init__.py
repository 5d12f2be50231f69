"""Plugin ``codec_vp9``: VP9 (libvpx real-time encoder, FFmpeg decoder).

Smaller streams than H.264 at a higher CPU cost, and odd display sizes coded
as they are.
"""

from __future__ import annotations

from remote_codec_pyav import pyav_codec

from remote_core import hookimpl
from remote_core.protocol import pb
from remote_core.types import CodecSpec

__all__ = ["SCALED", "SPEC", "register_codecs"]

SCALED = "vp9_scaled"
"""The extension of viewers that scale a picture coded smaller than the display's size
(the size its keyframe's ``EncodedFrame.width``/``height`` state) up to it: the agent
downscales motion while short of CPU."""

SPEC = pyav_codec("vp9", module="remote_codec_vp9.codec",
                  encoder="VP9Encoder", decoder="VP9Decoder",
                  preference=pb.CODEC_VP9, frame_field="vp9", auto_rank=30,
                  extensions=(SCALED,))


@hookimpl
def register_codecs() -> list[CodecSpec]:
    return [SPEC]
