"""Quality presets, codec negotiation and stream decoding (remote_core.codecs) over the
built-in codec plugins, loaded through the plugin manager as the agent and viewer do."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from remote_core.codecs import (
    FrameDecoder,
    KeyframeClock,
    choose_codec,
    encoder_config,
    viewer_preference,
)
from remote_core.plugins import get_plugin_manager
from remote_core.protocol import pb
from remote_core.settings import Settings
from remote_core.testing.codec_contract import Desktop
from remote_core.types import CodecSpec, EncodedFrame
from remote_core.video import from_wire, to_wire

ALL = ("codec_raw_zstd", "codec_vp9", "codec_h264", "codec_h265")


def codecs(*names: str) -> list[CodecSpec]:
    return get_plugin_manager(Settings(plugins=names)).codecs()


def test_presets_map_to_frame_rate_bitrate_and_zstd_level() -> None:
    low = encoder_config(1920, 1080, pb.QualitySettings(preset=pb.QUALITY_LOW))
    balanced = encoder_config(1920, 1080, pb.QualitySettings(preset=pb.QUALITY_BALANCED))
    high = encoder_config(1920, 1080, pb.QualitySettings(preset=pb.QUALITY_HIGH))
    assert low.fps < balanced.fps and low.bitrate_kbps < balanced.bitrate_kbps < high.bitrate_kbps
    assert encoder_config(1920, 1080) == encoder_config(1920, 1080, pb.QualitySettings())
    assert encoder_config(1920, 1080).bitrate_kbps == balanced.bitrate_kbps == 4_000
    assert 100 <= encoder_config(1280, 720).bitrate_kbps < 4_000


def test_custom_values_override_the_preset() -> None:
    config = encoder_config(1280, 720, pb.QualitySettings(
        preset=pb.QUALITY_LOW, custom_fps=60, custom_bitrate=2_500))
    assert (config.fps, config.bitrate_kbps, config.preset) == (60, 2_500, pb.QUALITY_LOW)


@pytest.mark.parametrize(("fields", "message"), [
    ({"custom_fps": 61}, "custom_fps must be 1-60"),
    ({"custom_fps": -1}, "custom_fps must be 1-60"),
    ({"custom_bitrate": 50}, "custom_bitrate must be 100-100000 kbps"),
    ({"custom_bitrate": 1_000_000}, "custom_bitrate must be 100-100000 kbps"),
    ({"custom_bitrate": -5}, "custom_bitrate"),
    ({"preset": 9}, "unknown quality preset 9"),
])
def test_out_of_range_quality_is_a_clear_error(fields: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        encoder_config(640, 480, pb.QualitySettings(**fields))


def test_auto_picks_h264_and_a_stated_preference_is_honoured() -> None:
    specs = codecs(*ALL)
    assert choose_codec(specs).name == "h264"
    assert choose_codec(specs, pb.CODEC_VP9).name == "vp9"
    assert choose_codec(specs, pb.CODEC_H265).name == "h265"
    assert choose_codec(specs, pb.CODEC_RAW).name == "raw_zstd"


def test_a_codec_missing_on_the_agent_falls_back_to_its_best() -> None:
    agent = codecs("codec_raw_zstd", "codec_vp9")
    assert choose_codec(agent, pb.CODEC_H265).name == "vp9"
    assert choose_codec(codecs("codec_raw_zstd"), pb.CODEC_H264).name == "raw_zstd"
    broken = [dataclasses.replace(s, available=lambda: False) if s.name == "h264" else s
              for s in codecs(*ALL)]
    assert choose_codec(broken).name == "vp9"
    with pytest.raises(ValueError, match="no usable video codec"):
        choose_codec(codecs())


def test_a_viewer_asks_only_for_what_it_can_decode() -> None:
    assert viewer_preference(codecs(*ALL)) == pb.CODEC_AUTO
    assert viewer_preference(codecs(*ALL), pb.CODEC_VP9) == pb.CODEC_VP9
    raw_only = codecs("codec_raw_zstd")
    assert viewer_preference(raw_only, pb.CODEC_H264) == pb.CODEC_RAW
    assert viewer_preference(raw_only) == pb.CODEC_RAW
    # The agent honours it, whatever the agent could do better.
    assert choose_codec(codecs(*ALL), viewer_preference(raw_only)).name == "raw_zstd"
    assert viewer_preference(raw_only, agent_may_pick={pb.CODEC_RAW}) == pb.CODEC_AUTO


def test_a_stream_that_changes_codec_keeps_decoding() -> None:
    specs = {s.name: s for s in codecs(*ALL)}
    desktop = Desktop(320, 200)
    viewer = FrameDecoder(specs.values())
    for name in ("raw_zstd", "h264", "vp9", "raw_zstd"):
        factory = specs[name].encoder_factory
        assert factory is not None
        frame = factory(encoder_config(320, 200)).encode(desktop.image)
        assert frame is not None
        out = viewer.decode(*from_wire(to_wire(frame, specs[name].frame_field)))
        assert out is not None and out.shape == desktop.image.shape
    assert np.array_equal(out, desktop.image)
    with pytest.raises(ValueError, match="no decoder for 'h265'"):
        FrameDecoder([specs["raw_zstd"]]).decode("h265", EncodedFrame(b"x"))
    with pytest.raises(ValueError, match="carries no encoding"):
        from_wire(pb.VideoFrame())
    viewer.close()


def test_keyframe_clock() -> None:
    now = [100.0]
    clock = KeyframeClock(clock=lambda: now[0])
    assert clock.due()
    clock.sent()
    now[0] = 109.99
    assert not clock.due()
    now[0] = 110.0
    assert clock.due()
