from __future__ import annotations

import dataclasses

import pytest
from remote_codec_pyav.base import SHARPEN_SECONDS
from remote_codec_vp9 import SCALED, SPEC
from remote_codec_vp9.codec import VP9Decoder, VP9Encoder, vp9_crf

from remote_core.codecs import encoder_config
from remote_core.testing.codec_contract import CodecContract, Desktop, psnr, sharpen


class TestVP9Contract(CodecContract):
    spec = SPEC
    min_psnr = 33.0


def test_odd_sizes_are_coded_natively() -> None:
    desktop = Desktop(1365, 767, seed=2)
    frame = VP9Encoder(encoder_config(1365, 767)).encode(desktop.image)
    out = VP9Decoder().decode(frame)
    assert out.shape == (767, 1365, 4) and psnr(out, desktop.image) > 33


def test_a_downscaled_picture_is_coded_at_half_size_and_its_keyframe_states_the_displays(
) -> None:
    """While the agent is short of CPU, motion goes at half the width and height to viewers
    that list vp9_scaled (VP9 codes odd sizes as they are, so 1365 halves to 683); the
    keyframe states the display's size beside the bitstream, and the decoder scales the
    picture back up to it, the keyframe's and those after it. Full size again from a
    keyframe, which states nothing."""
    desktop = Desktop(1365, 767, seed=3)
    config = dataclasses.replace(encoder_config(1365, 767), extensions=frozenset({SCALED}))
    enc, dec = VP9Encoder(config), VP9Decoder()
    dec.decode(enc.encode(desktop.image))
    assert enc.downscale(2)
    desktop.type(2)
    small = enc.encode(desktop.image)
    assert small.keyframe and (small.width, small.height) == (1365, 767)
    as_coded = dataclasses.replace(small, width=0, height=0)
    assert VP9Decoder().decode(as_coded).shape == (384, 683, 4)
    out = dec.decode(small)
    assert out.shape == (767, 1365, 4) and psnr(out, desktop.image) > 20
    desktop.type(2)
    later = enc.encode(desktop.image)
    assert not later.keyframe and (later.width, later.height) == (0, 0)
    assert dec.decode(later).shape == (767, 1365, 4)
    assert enc.downscale(1)
    desktop.type(2)
    full = enc.encode(desktop.image)
    assert full.keyframe and (full.width, full.height) == (0, 0)
    assert psnr(dec.decode(full), desktop.image) > 33


@pytest.mark.parametrize("stated", [(1281, 801), (99_999, 99_999)])
def test_a_stated_size_far_over_the_picture_is_not_believed(stated: tuple[int, int]) -> None:
    """A forged keyframe stating more than four times the coded picture's side (or more
    pixels than any display) does not make the viewer scale to it: drawn as coded."""
    frame = VP9Encoder(encoder_config(320, 200)).encode(Desktop(320, 200).image)
    forged = dataclasses.replace(frame, width=stated[0], height=stated[1])
    assert VP9Decoder().decode(forged).shape == (200, 320, 4)


def test_quality_scale_maps_onto_vp9() -> None:
    assert vp9_crf(0) == 0 and vp9_crf(51) == 63 and vp9_crf(23) == 28


def test_a_short_rate_buffer_holds_the_keyframe_down_and_the_frames_after_sharpen_it() -> None:
    """libvpx sizes a keyframe with no regard to the rate buffer, so over a slow link (a
    quarter of a second's buffer) the encoder caps it itself: a fraction of what a whole
    second's buffer lets through, then the unchanged picture coded again, sharper, until
    the sharpening ends and an unchanged picture sends nothing."""
    desktop = Desktop(640, 400, seed=5, wallpaper_noise=6)
    capped = dataclasses.replace(encoder_config(640, 400), bitrate_kbps=300)
    full = VP9Encoder(capped).encode(desktop.image)
    short = VP9Encoder(dataclasses.replace(capped, buffer_seconds=0.25))
    decoder = VP9Decoder()
    key = short.encode(desktop.image)
    assert key.keyframe and len(key.data) < 0.6 * len(full.data) and short.sharpening
    picture = decoder.decode(key)
    coarse = psnr(picture, desktop.image)
    picture, frames = sharpen(short, decoder, desktop.image, picture)
    assert 0 < frames <= SHARPEN_SECONDS * capped.fps
    assert psnr(picture, desktop.image) > coarse + 2
    assert short.encode(desktop.image, dirty=[]) is None


def test_typing_over_a_short_buffer_never_sends_a_frame_over_the_buffer() -> None:
    """Over a slow link every frame larger than the rate buffer holds the next typed
    character up. A keyframe asked for mid-stream (a viewer joining) must not make the
    frame after it huge, golden frames must not be boosted past the buffer, and a typed
    character over a still picture must stay small; the picture stays sharp."""
    desktop = Desktop(640, 400, seed=1)
    config = dataclasses.replace(encoder_config(640, 400), bitrate_kbps=300, buffer_seconds=0.25)
    encoder, decoder = VP9Encoder(config), VP9Decoder()
    buffer = config.bitrate_kbps * 125 * config.buffer_seconds
    sizes = []
    for index in range(300):
        if index:
            desktop.type(1)
        frame = encoder.encode(desktop.image, keyframe=index == 150)
        assert frame is not None and frame.keyframe == (index in (0, 150))
        sizes.append(len(frame.data))
        picture = decoder.decode(frame)
    assert max(sizes) < buffer
    assert sorted(sizes)[len(sizes) // 2] < 0.25 * config.bitrate_kbps * 125 / config.fps
    assert psnr(picture, desktop.image) > 35
