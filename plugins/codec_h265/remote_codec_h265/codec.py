"""H.265 through libx265: zero latency, no B-frames, Annex B output with parameter sets
on every keyframe."""

from __future__ import annotations

from typing import ClassVar

from remote_codec_pyav.annexb import H265_SEI_HEADER
from remote_codec_pyav.base import PyAVDecoder, PyAVEncoder, vbv_cap

from remote_codec_h265 import SCALED
from remote_core.codecs import profile_for
from remote_core.types import EncoderConfig

__all__ = ["ENCODER", "H265Decoder", "H265Encoder"]

ENCODER = "libx265"


class H265Encoder(PyAVEncoder):
    """``ultrafast`` + ``zerolatency``: x265 is several times slower than x264, so
    it takes its fastest preset to stay real-time."""

    codec_name = ENCODER
    min_side = 32  # libx265 refuses smaller pictures
    sei_header: ClassVar[bytes | None] = H265_SEI_HEADER
    scaled_extension: ClassVar[str | None] = SCALED

    def options(self, config: EncoderConfig) -> dict[str, str]:
        params = "log-level=error:bframes=0:scenecut=0:repeat-headers=1"
        options = {"preset": "ultrafast", "tune": "zerolatency", "forced-idr": "1",
                   "crf": str(profile_for(config.preset).crf), "x265-params": params}
        return options | vbv_cap(config)


class H265Decoder(PyAVDecoder):
    codec_name = "hevc"
