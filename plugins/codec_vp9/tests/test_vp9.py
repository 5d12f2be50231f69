from __future__ import annotations

from remote_codec_vp9 import SPEC
from remote_codec_vp9.codec import VP9Decoder, VP9Encoder, vp9_crf

from remote_core.codecs import encoder_config
from remote_core.testing.codec_contract import CodecContract, Desktop, psnr


class TestVP9Contract(CodecContract):
    spec = SPEC
    min_psnr = 33.0


def test_odd_sizes_are_coded_natively() -> None:
    desktop = Desktop(1365, 767, seed=2)
    frame = VP9Encoder(encoder_config(1365, 767)).encode(desktop.image)
    out = VP9Decoder().decode(frame)
    assert out.shape == (767, 1365, 4) and psnr(out, desktop.image) > 33


def test_quality_scale_maps_onto_vp9() -> None:
    assert vp9_crf(0) == 0 and vp9_crf(51) == 63 and vp9_crf(23) == 28
