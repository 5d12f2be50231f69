"""Built-in plugin ``codec_h265``: H.265 (HEVC) on PyAV (libx265 encoder, FFmpeg decoder).

Smaller streams than H.264 for more encoder CPU; browsers decode it only where
the platform has a decoder, so ``CODEC_AUTO`` ranks it below H.264 and VP9.
Builds on the shared PyAV machinery of ``codec_h264``. PyAV loads only when a
codec is built.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from remote_core import hookimpl
from remote_core.protocol import pb
from remote_core.types import CodecSpec, EncoderConfig

__all__ = ["SPEC", "register_codecs"]


def _encoder(config: EncoderConfig) -> Any:
    from .codec import H265Encoder

    return H265Encoder(config)


def _decoder() -> Any:
    from .codec import H265Decoder

    return H265Decoder()


@cache
def _available() -> bool:
    from remote_codec_h264.pyav import encoder_available

    from .codec import ENCODER

    return encoder_available(ENCODER)


SPEC = CodecSpec(name="h265", preference=pb.CODEC_H265, frame_field="h265",
                 encoder_factory=_encoder, decoder_factory=_decoder, auto_rank=20,
                 available=_available)


@hookimpl
def register_codecs() -> list[CodecSpec]:
    return [SPEC]
