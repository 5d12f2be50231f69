"""Built-in plugins ``codec_h264``, ``codec_h265`` and ``codec_vp9``: video codecs on PyAV.

One distribution, because the three share every dependency (PyAV, numpy) and
all of the FFmpeg machinery (``_base``); one plugin module each, so a
deployment loads or blocks each codec by name. The plugin modules import
nothing heavy: PyAV loads only when a codec is built or its availability
is asked.
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
    """The registration of one PyAV codec whose classes live in ``module`` (loaded lazily).

    The codec is available where this FFmpeg build has the encoder class's
    ``codec_name``.
    """

    def classes(attr: str) -> Callable[..., Any]:
        return getattr(import_module(module, __name__), attr)  # type: ignore[no-any-return]

    def make_encoder(config: EncoderConfig) -> Encoder:
        made: Encoder = classes(encoder)(config)
        return made

    def make_decoder() -> Decoder:
        made: Decoder = classes(decoder)()
        return made

    @cache
    def available() -> bool:
        from ._base import encoder_available

        return encoder_available(classes(encoder).codec_name)  # type: ignore[attr-defined]

    return CodecSpec(name=name, encoder_factory=make_encoder, decoder_factory=make_decoder,
                     available=available, **spec)
