"""The PyAV machinery of the video codec plugins ``codec_h264``, ``codec_h265``, ``codec_vp9``.

A library, not a plugin: each codec is a distribution of its own
(``remote-codec-h264`` ...) that depends on this one, so a packager can ship
VP9 or H.265 without H.264. The codecs' plugin modules import nothing heavy:
PyAV loads only when a codec is built or its availability is asked.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import import_module
from typing import Any

from remote_core.interfaces import Decoder, Encoder
from remote_core.types import CodecSpec, EncoderConfig

__all__ = ["pyav_codec"]


def pyav_codec(name: str, *, module: str, encoder: str, decoder: str, **spec: Any) -> CodecSpec:
    """The registration of one PyAV codec whose classes live in ``module`` (an absolute
    module name, loaded lazily).

    The codec is available where this FFmpeg build has the encoder class's
    ``codec_name``.
    """

    def classes(attr: str) -> Callable[..., Any]:
        return getattr(import_module(module), attr)  # type: ignore[no-any-return]

    def make_encoder(config: EncoderConfig) -> Encoder:
        made: Encoder = classes(encoder)(config)
        return made

    def make_decoder() -> Decoder:
        made: Decoder = classes(decoder)()
        return made

    @cache
    def available() -> bool:
        from .base import encoder_available

        return encoder_available(classes(encoder).codec_name)  # type: ignore[attr-defined]

    return CodecSpec(name=name, encoder_factory=make_encoder, decoder_factory=make_decoder,
                     available=available, **spec)
