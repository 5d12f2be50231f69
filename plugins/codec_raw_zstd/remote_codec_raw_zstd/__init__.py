"""Built-in plugin ``codec_raw_zstd``: raw BGRA plus Zstandard, with dirty rectangles.

Lossless and cheap on CPU, heavy on bandwidth when much changes: the codec for
a LAN (``CODEC_RAW``). Viewers that list its extension ``raw_copy`` get a scroll as a
move of what they have (``RawFrame.copies``) and the rows it uncovers; those that list
``raw_over`` get the lossless picture back after motion in parts drawn over the video
picture (``Encoder.redraw``); those that list ``raw_keep`` get the keyframe due every
10 s in parts over a slow link (``Encoder.keyframe_in_parts``). Elsewhere that keyframe
is the picture the viewers have (``Encoder.repeat_keyframe``), which a viewer in step
skips. It needs
zstandard alone (no numpy), loaded only when a codec is built.
"""

from __future__ import annotations

from importlib.util import find_spec

from remote_core import hookimpl
from remote_core.interfaces import Decoder, Encoder
from remote_core.protocol import pb
from remote_core.types import CodecSpec, EncoderConfig

from .extensions import COPY_EXTENSION, KEEP_EXTENSION, OVER_EXTENSION

__all__ = ["SPEC", "register_codecs"]


def _encoder(config: EncoderConfig) -> Encoder:
    from .encoder import RawZstdEncoder

    return RawZstdEncoder(config)


def _decoder() -> Decoder:
    from .decoder import RawZstdDecoder

    return RawZstdDecoder()


def _available() -> bool:
    return find_spec("zstandard") is not None


SPEC = CodecSpec(name="raw_zstd", preference=pb.CODEC_RAW, frame_field="raw",
                 encoder_factory=_encoder, decoder_factory=_decoder, auto_rank=10,
                 lossless=True, available=_available,
                 extensions=(COPY_EXTENSION, OVER_EXTENSION, KEEP_EXTENSION))


@hookimpl
def register_codecs() -> list[CodecSpec]:
    return [SPEC]
