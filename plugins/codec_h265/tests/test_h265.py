from __future__ import annotations

from remote_codec_h265 import SPEC
from remote_codec_h265.codec import H265Decoder, H265Encoder
from remote_codec_pyav.annexb import find_size

from remote_core.codecs import encoder_config
from remote_core.testing.codec_contract import CodecContract, Desktop, psnr


class TestH265Contract(CodecContract):
    spec = SPEC
    min_psnr = 33.0


def test_odd_and_tiny_sizes_are_padded_and_cropped_through_the_size_sei() -> None:
    for width, height in [(1365, 767), (3, 5)]:
        desktop = Desktop(width, height, seed=2)
        frame = H265Encoder(encoder_config(width, height)).encode(desktop.image)
        assert find_size(frame.data) == (width, height)
        out = H265Decoder().decode(frame)
        assert out.shape == (height, width, 4)
    assert psnr(H265Decoder().decode(H265Encoder(encoder_config(1365, 767)).encode(
        Desktop(1365, 767).image)), Desktop(1365, 767).image) > 33


def test_a_viewer_joining_late_decodes_from_the_next_keyframe() -> None:
    desktop = Desktop(64, 64)
    enc = H265Encoder(encoder_config(64, 64))
    enc.encode(desktop.image)
    desktop.type(2)
    enc.encode(desktop.image)
    later = enc.encode(desktop.image, keyframe=True)
    assert later.keyframe
    for nal_type in (32, 33, 34):  # VPS, SPS, PPS repeated in-band
        assert bytes([nal_type << 1, 1]) in later.data
    out = H265Decoder().decode(enc.encode(desktop.image, keyframe=True))
    assert out is not None and psnr(out, desktop.image) > 30
