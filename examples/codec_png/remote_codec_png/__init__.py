"""A codec plugin from outside the project: lossless PNG pictures of what changed.

A keyframe is one PNG of the whole display; every other frame is one PNG per
rectangle that changed. Its frames have no slot of their own on the wire:
they travel as plugin frames named ``png``, the viewers that list ``png``
decode them (the Python viewer with :class:`~remote_codec_png.codec.PngDecoder`,
the browser console with ``png.js``), and the agent uses it only when every
viewer of the session decodes it and someone asks for it by name
(``remote-viewer --codec png``, or the console's codec menu).
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from remote_core import hookimpl
from remote_core.interfaces import Decoder, Encoder
from remote_core.types import CodecSpec, EncoderConfig

__all__ = ["SPEC", "register_codecs"]


def _encoder(config: EncoderConfig) -> Encoder:
    from .codec import PngEncoder  # Pillow loads only when a codec is built

    return PngEncoder(config)


def _decoder() -> Decoder:
    from .codec import PngDecoder

    return PngDecoder()


def _available() -> bool:
    return find_spec("PIL") is not None and find_spec("numpy") is not None


SPEC = CodecSpec(
    name="png",                  # its wire name too: no frame_field, so a plugin frame
    encoder_factory=_encoder,
    decoder_factory=_decoder,
    available=_available,
    auto_rank=5,                 # never picked by CODEC_AUTO while a built-in suits everyone
    browser_decoder=Path(__file__).with_name("png.js"),
)


@hookimpl
def register_codecs() -> list[CodecSpec]:
    return [SPEC]
