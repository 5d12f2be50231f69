"""Plugin ``codec_av1``: AV1 (SVT-AV1 low-delay encoder, dav1d decoder).

SPEC gives AV1 no ``VideoFrame`` slot, so its frames travel as plugin frames
named ``av1``; only viewers that list ``av1`` are sent them (the console lists
it where WebCodecs decodes AV1). It has no ``CodecPreference`` value either:
a viewer asks for it by name.
"""

from __future__ import annotations

from remote_codec_pyav import pyav_codec

from remote_core import hookimpl
from remote_core.types import CodecSpec

__all__ = ["SPEC", "register_codecs"]

SPEC = pyav_codec("av1", module="remote_codec_av1.codec",
                  encoder="AV1Encoder", decoder="AV1Decoder", auto_rank=25)


@hookimpl
def register_codecs() -> list[CodecSpec]:
    return [SPEC]
