"""Plugin ``codec_vp9``: VP9 (libvpx real-time encoder, FFmpeg decoder).

Smaller streams than H.264 at a higher CPU cost, and odd display sizes coded
as they are.
"""

from __future__ import annotations

from remote_core import hookimpl
from remote_core.protocol import pb
from remote_core.types import CodecSpec

from . import pyav_codec

__all__ = ["SPEC", "register_codecs"]

SPEC = pyav_codec("vp9", module="._vp9", encoder="VP9Encoder", decoder="VP9Decoder",
                  preference=pb.CODEC_VP9, frame_field="vp9", auto_rank=30)


@hookimpl
def register_codecs() -> list[CodecSpec]:
    return [SPEC]
