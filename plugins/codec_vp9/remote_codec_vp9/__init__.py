"""Built-in plugin ``codec_vp9``: VP9 on PyAV (libvpx real-time encoder, FFmpeg decoder).

Smaller streams than H.264 at a higher CPU cost, and odd display sizes coded
as they are. Builds on the shared PyAV machinery of ``codec_h264``. PyAV loads
only when a codec is built.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from remote_core import hookimpl
from remote_core.protocol import pb
from remote_core.types import CodecSpec, EncoderConfig

__all__ = ["SPEC", "register_codecs"]


def _encoder(config: EncoderConfig) -> Any:
    from .codec import VP9Encoder

    return VP9Encoder(config)


def _decoder() -> Any:
    from .codec import VP9Decoder

    return VP9Decoder()


@cache
def _available() -> bool:
    from remote_codec_h264.pyav import encoder_available

    from .codec import ENCODER

    return encoder_available(ENCODER)


SPEC = CodecSpec(name="vp9", preference=pb.CODEC_VP9, frame_field="vp9",
                 encoder_factory=_encoder, decoder_factory=_decoder, auto_rank=30,
                 available=_available)


@hookimpl
def register_codecs() -> list[CodecSpec]:
    return [SPEC]
