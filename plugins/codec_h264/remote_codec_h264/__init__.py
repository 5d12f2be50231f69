"""Built-in plugin ``codec_h264``: H.264 on PyAV (libx264 encoder, FFmpeg decoder).

The default of ``CODEC_AUTO``: fast to encode, decoded by every browser.
Its ``pyav`` module is the shared PyAV machinery the H.265 and VP9 plugins
build on. PyAV loads only when a codec is built.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from remote_core import hookimpl
from remote_core.protocol import pb
from remote_core.types import CodecSpec, EncoderConfig

__all__ = ["SPEC", "register_codecs"]


def _encoder(config: EncoderConfig) -> Any:
    from .codec import H264Encoder

    return H264Encoder(config)


def _decoder() -> Any:
    from .codec import H264Decoder

    return H264Decoder()


@cache
def _available() -> bool:
    from .codec import ENCODER
    from .pyav import encoder_available

    return encoder_available(ENCODER)


SPEC = CodecSpec(name="h264", preference=pb.CODEC_H264, frame_field="h264",
                 encoder_factory=_encoder, decoder_factory=_decoder, auto_rank=40,
                 available=_available)


@hookimpl
def register_codecs() -> list[CodecSpec]:
    return [SPEC]
