from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from remote_codec_h264 import SCALED, SPEC
from remote_codec_h264.codec import H264Decoder, H264Encoder
from remote_codec_pyav.annexb import H264_SEI_HEADER, find_size, size_sei
from remote_codec_pyav.base import SHARPEN_SECONDS

from remote_core.codecs import encoder_config
from remote_core.protocol import pb
from remote_core.testing.codec_contract import CodecContract, Desktop, psnr, sharpen
from remote_core.types import Rect


class TestH264Contract(CodecContract):
    spec = SPEC
    min_psnr = 33.0


def test_access_units_are_annex_b_with_microsecond_timestamps_and_no_reordering() -> None:
    desktop = Desktop(320, 200)
    enc = H264Encoder(encoder_config(320, 200))
    frames = []
    for _ in range(5):
        desktop.type(2)
        frames.append(enc.encode(desktop.image))
    assert all(f.data.startswith((b"\x00\x00\x00\x01", b"\x00\x00\x01")) for f in frames)
    assert [f.keyframe for f in frames] == [True, False, False, False, False]
    pts = [f.pts for f in frames]
    assert pts == sorted(set(pts)) and pts[-1] < 60_000_000  # microseconds since the start
    assert all(f.dts == f.pts for f in frames)  # no B-frames: decode order is display order


def test_nothing_changed_sends_nothing() -> None:
    enc = H264Encoder(encoder_config(64, 64))
    desktop = Desktop(64, 64)
    assert enc.encode(desktop.image, dirty=[]) is not None  # the first frame is always sent
    assert enc.encode(desktop.image, dirty=[]) is None  # the capture source says so
    assert enc.encode(desktop.image, dirty=[Rect(0, 0, 8, 8)]) is not None  # the hint is trusted
    assert enc.encode(desktop.image.copy()) is not None  # no hint, and no picture kept
    assert enc.encode(desktop.image.copy()) is None  # the pixels say so
    desktop.type(1)
    assert enc.encode(desktop.image) is not None


def test_a_picture_without_rectangles_is_compared_with_the_last_one_sent() -> None:
    """One sent with rectangles is not kept (they said what changed), so an older picture
    that was kept cannot pass for what the viewers show."""
    enc = H264Encoder(encoder_config(64, 64))
    desktop = Desktop(64, 64)
    before = desktop.image.copy()
    assert enc.encode(before) is not None
    desktop.type(1)
    assert enc.encode(desktop.image, dirty=[Rect(0, 0, 64, 64)]) is not None
    assert enc.encode(before.copy()) is not None  # the viewers show the typed picture


def test_odd_sizes_are_padded_and_cropped_through_the_size_sei() -> None:
    desktop = Desktop(1365, 767, seed=2)
    frame = H264Encoder(encoder_config(1365, 767)).encode(desktop.image)
    assert find_size(frame.data) == (1365, 767)
    out = H264Decoder().decode(frame)
    assert out.shape == (767, 1365, 4) and psnr(out, desktop.image) > 33


def test_size_sei_round_trip_and_absence() -> None:
    sei = size_sei(H264_SEI_HEADER, 7, 3)
    assert b"\x00\x00\x00" not in sei[4:] and b"\x00\x00\x01" not in sei[4:]
    assert find_size(b"\x00\x00\x00\x01\x65" + sei) == (7, 3)
    assert find_size(b"\x00\x00\x00\x01\x65garbage") is None


def test_custom_bitrate_caps_the_stream() -> None:
    video = [np.random.default_rng(i).integers(0, 256, (180, 320, 4), dtype=np.uint8)
             for i in range(10)]
    sizes = {}
    for kbps in (200, 4_000):
        enc = H264Encoder(encoder_config(320, 180, pb.QualitySettings(custom_bitrate=kbps)))
        sizes[kbps] = sum(len(enc.encode(img).data) for img in video)
    assert sizes[200] < sizes[4_000] / 2


def test_the_fastest_preset_takes_over_above_720p60() -> None:
    enc = H264Encoder(encoder_config(1280, 720))
    assert enc.options(encoder_config(1280, 720))["preset"] == "superfast"
    assert enc.options(encoder_config(1920, 1080))["preset"] == "ultrafast"
    assert enc.options(encoder_config(1280, 720, pb.QualitySettings(custom_fps=60)))[
        "preset"] == "superfast"


def test_a_stream_larger_than_the_pixel_limit_is_refused(monkeypatch) -> None:
    import remote_codec_pyav.base as pyav

    frame = H264Encoder(encoder_config(320, 200)).encode(Desktop(320, 200).image)
    monkeypatch.setattr(pyav, "MAX_PIXELS", 320 * 200 - 1)
    with pytest.raises(ValueError, match="does not decode"):
        H264Decoder().decode(frame)


def _coded_size(data: bytes) -> tuple[int, int]:
    """The size a keyframe is coded at, as any H.264 decoder reads it (padding cropped)."""
    import av

    picture = av.CodecContext.create("h264", "r").decode(av.Packet(data))[0]
    return picture.width, picture.height


def test_a_downscaled_picture_is_coded_at_half_size_and_decoded_at_the_displays() -> None:
    """While the agent is short of CPU, motion goes at half the width and height to viewers
    that list h264_scaled; the size SEI still states the display's, to which the decoder
    scales the picture back up. Full size again from a keyframe."""
    desktop = Desktop(640, 400, seed=3)
    config = dataclasses.replace(encoder_config(640, 400), extensions=frozenset({SCALED}))
    enc, dec = H264Encoder(config), H264Decoder()
    first = enc.encode(desktop.image)
    assert first.keyframe and _coded_size(first.data) == (640, 400)
    dec.decode(first)
    desktop.type(2)
    assert enc.downscale(2)
    small = enc.encode(desktop.image)
    assert small.keyframe  # a new size begins with a keyframe
    assert _coded_size(small.data) == (320, 200) and find_size(small.data) == (640, 400)
    out = dec.decode(small)
    assert out.shape == (400, 640, 4) and psnr(out, desktop.image) > 20
    desktop.type(2)
    later = enc.encode(desktop.image)
    assert not later.keyframe and dec.decode(later).shape == (400, 640, 4)
    assert enc.downscale(1)
    desktop.type(2)
    full = enc.encode(desktop.image)
    assert full.keyframe and _coded_size(full.data) == (640, 400)
    assert psnr(dec.decode(full), desktop.image) > 33


def test_an_odd_display_downscales_to_even_coded_sizes() -> None:
    desktop = Desktop(1365, 767, seed=4)
    config = dataclasses.replace(encoder_config(1365, 767), extensions=frozenset({SCALED}))
    enc = H264Encoder(config)
    assert enc.downscale(2)
    frame = enc.encode(desktop.image)
    assert _coded_size(frame.data) == (684, 384) and find_size(frame.data) == (1365, 767)
    assert H264Decoder().decode(frame).shape == (767, 1365, 4)


def test_without_the_viewers_extension_the_picture_keeps_its_size() -> None:
    desktop = Desktop(320, 200)
    enc = H264Encoder(encoder_config(320, 200))
    enc.encode(desktop.image)
    assert not enc.downscale(2) and enc.downscale(1)
    desktop.type(2)
    frame = enc.encode(desktop.image)
    assert not frame.keyframe  # nothing was reopened


@pytest.mark.parametrize("stated", [(1281, 801), (99_999, 99_999)])
def test_a_size_far_over_the_picture_is_not_believed(stated: tuple[int, int]) -> None:
    """A forged SEI stating more than four times the coded picture's side (or more pixels
    than any display) does not make the viewer scale to it: the picture is drawn as coded."""
    desktop = Desktop(320, 200)
    frame = H264Encoder(encoder_config(320, 200)).encode(desktop.image)
    forged = dataclasses.replace(frame, data=size_sei(H264_SEI_HEADER, *stated) + frame.data)
    assert find_size(forged.data) == stated
    assert H264Decoder().decode(forged).shape == (200, 320, 4)


def test_a_keyframe_a_short_rate_buffer_coarsened_is_sharpened_by_the_frames_after_it() -> None:
    """Over a slow link the agent gives the encoder a quarter of a second's buffer: the
    keyframe is a fraction of what a whole second's lets through, so what follows it on
    the link waits less, and the encoder codes the unchanged picture again, sharper each
    time, for at most ``SHARPEN_SECONDS``; then an unchanged picture sends nothing again.
    A whole second's buffer lets the keyframe through and needs no sharpening."""
    desktop = Desktop(640, 400, seed=5, wallpaper_noise=6)
    capped = dataclasses.replace(encoder_config(640, 400), bitrate_kbps=300)
    whole = H264Encoder(capped)
    full = whole.encode(desktop.image)
    assert full.keyframe and not whole.sharpening
    assert whole.encode(desktop.image, dirty=[]) is None

    short = H264Encoder(dataclasses.replace(capped, buffer_seconds=0.25))
    decoder = H264Decoder()
    key = short.encode(desktop.image)
    assert key.keyframe and len(key.data) < len(full.data) / 2 and short.sharpening
    picture = decoder.decode(key)
    coarse = psnr(picture, desktop.image)
    picture, frames = sharpen(short, decoder, desktop.image, picture)
    assert 0 < frames <= SHARPEN_SECONDS * capped.fps
    assert psnr(picture, desktop.image) > coarse + 3
    assert short.encode(desktop.image, dirty=[]) is None
