"""Quality presets, codec negotiation and stream decoding (remote_core.codecs) over the
built-in codec plugins, loaded through the plugin manager as the agent and viewer do."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from remote_core.codecs import (
    FrameDecoder,
    KeyframeClock,
    check_codecs,
    choose_codec,
    decodable,
    encoder_config,
    motion_codec,
    shared_extensions,
)
from remote_core.errors import PluginError
from remote_core.plugins import get_plugin_manager
from remote_core.protocol import pb
from remote_core.settings import PluginSettings
from remote_core.testing.codec_contract import Desktop
from remote_core.types import CodecSpec, EncodedFrame
from remote_core.video import from_wire, to_wire

ALL = ("codec_raw_zstd", "codec_vp9", "codec_h264", "codec_h265")


def codecs(*names: str) -> list[CodecSpec]:
    return get_plugin_manager(PluginSettings(plugins=names)).codecs()


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


def test_auto_is_lossless_with_h264_for_motion_and_a_stated_preference_is_honoured() -> None:
    specs = codecs(*ALL)
    assert choose_codec(specs).name == "raw_zstd"
    assert motion_codec(specs).name == "h264"  # type: ignore[union-attr]
    assert choose_codec(specs, pb.CODEC_VP9).name == "vp9"
    assert choose_codec(specs, pb.CODEC_H265).name == "h265"
    assert choose_codec(specs, pb.CODEC_RAW).name == "raw_zstd"


def test_a_codec_missing_on_the_agent_falls_back_to_its_best() -> None:
    agent = codecs("codec_raw_zstd", "codec_vp9")
    assert choose_codec(agent, pb.CODEC_H265).name == "vp9"
    assert choose_codec(codecs("codec_raw_zstd"), pb.CODEC_H264).name == "raw_zstd"
    broken = [dataclasses.replace(s, available=lambda: False) if s.name == "h264" else s
              for s in codecs(*ALL)]
    assert motion_codec(broken).name == "vp9"  # type: ignore[union-attr]
    assert motion_codec(codecs("codec_raw_zstd")) is None
    with pytest.raises(ValueError, match="no usable video codec"):
        choose_codec(codecs())


def test_a_viewer_lists_what_it_decodes_by_wire_name() -> None:
    """Each codec by wire name, followed by the extensions its decoder draws."""
    assert decodable(codecs(*ALL)) == ["raw", "raw_copy", "raw_over", "raw_keep", "vp9",
                                       "vp9_scaled", "h264", "h264_scaled", "h265",
                                       "h265_scaled"]
    assert decodable(codecs("codec_raw_zstd")) == ["raw", "raw_copy", "raw_over", "raw_keep"]
    assert decodable([PNG]) == ["png"]


def test_an_extension_is_used_only_when_every_viewer_lists_it() -> None:
    raw = codecs("codec_raw_zstd")[0]
    assert shared_extensions(raw, [["raw", "raw_copy"], ["raw", "raw_copy", "h264"]]) == {
        "raw_copy"}
    assert shared_extensions(raw, [["raw", "raw_copy"], ["raw"]]) == frozenset()
    assert shared_extensions(raw, [["raw", "raw_copy"], ()]) == frozenset()  # SPEC's viewer
    assert shared_extensions(raw, []) == frozenset()
    # A viewer that lists an extension but not its codec is served in another codec;
    # the extension alone chooses nothing.
    assert choose_codec([raw, PNG], viewers=[["png", "raw_copy"]]).name == "png"


PNG = CodecSpec(name="png", encoder_factory=lambda config: None,  # type: ignore[arg-type,return-value]
                decoder_factory=lambda: None, auto_rank=100)  # type: ignore[arg-type,return-value]


def test_the_agent_streams_only_in_a_codec_every_viewer_decodes() -> None:
    agent = [*codecs(*ALL), PNG]
    assert choose_codec(agent, viewers=[["raw", "h264"], ["raw"]]).name == "raw_zstd"
    assert choose_codec(agent, pb.CODEC_H264, viewers=[["raw", "h264"], ["raw"]]).name == \
        "raw_zstd"
    assert choose_codec(agent, pb.CODEC_VP9, viewers=[["vp9", "h264"], ()]).name == "vp9"
    # A viewer that lists nothing decodes the codec slots: no plugin frames for it.
    assert choose_codec(agent, name="png", viewers=[["png", "raw"], ()]).name == "raw_zstd"
    assert choose_codec(agent, name="png", viewers=[["png", "raw"], ["png"]]).name == "png"
    assert choose_codec(agent, name="raw_zstd", viewers=[["raw", "h264"]]).name == "raw_zstd"
    assert choose_codec(agent, name="raw", viewers=[["raw", "h264"]]).name == "raw_zstd"


def test_auto_never_picks_a_plugin_frame_while_a_slot_codec_suits_every_viewer() -> None:
    agent = [*codecs(*ALL), PNG]  # PNG ranks above everything
    assert choose_codec(agent).name == "raw_zstd"
    assert motion_codec(agent, viewers=[["png", "raw", "h264"]]).name == "h264"  # type: ignore[union-attr]
    assert choose_codec(agent, viewers=[["png"]]).name == "png"  # the only one it decodes
    assert choose_codec(agent, viewers=[["png", "h264"]]).name == "h264"  # no lossless slot


def test_motion_is_a_lossy_codec_every_viewer_decodes() -> None:
    agent = codecs(*ALL)
    assert motion_codec(agent, viewers=[["raw", "h264", "vp9"], ["raw", "vp9"]]).name == "vp9"  # type: ignore[union-attr]
    assert motion_codec(agent, viewers=[["raw", "h264"], ["raw"]]) is None


def test_with_no_codec_common_to_every_viewer_the_most_are_served() -> None:
    agent = [*codecs(*ALL), PNG]
    assert choose_codec(agent, viewers=[["png"], ["png"], ["raw"]]).name == "png"
    assert choose_codec(agent, viewers=[["png"], ["raw"], ["raw", "vp9"]]).name == "raw_zstd"


def test_codecs_that_collide_stop_start_up() -> None:
    raw = codecs("codec_raw_zstd")[0]
    for clash, message in [
        (dataclasses.replace(PNG, name="other", frame_field="raw"), "both claim the 'raw' slot"),
        (dataclasses.replace(PNG, name="raw"), "under the name of the VideoFrame slot 'raw'"),
        (dataclasses.replace(PNG, preference=pb.CODEC_RAW), "both answer to CodecPreference"),
        (dataclasses.replace(PNG, frame_field="plugin"), "the codec slots are"),
        (dataclasses.replace(PNG, frame_field="av1"), "names VideoFrame slot 'av1'"),
    ]:
        with pytest.raises(PluginError, match=message):
            check_codecs([raw, clash])
    with pytest.raises(PluginError, match="both claim the name 'png'"):
        check_codecs([PNG, dataclasses.replace(PNG, name="png")])
    with pytest.raises(PluginError, match="an extension's name begins with 'png_'"):
        check_codecs([dataclasses.replace(PNG, extensions=("copy",))])
    with pytest.raises(PluginError, match="is named like codec 'raw_copy' on the wire"):
        check_codecs([dataclasses.replace(PNG, name="raw_copy"), raw])
    assert check_codecs([raw, PNG, dataclasses.replace(PNG, name="jpeg")])


def test_a_stream_that_changes_codec_keeps_decoding() -> None:
    specs = {s.name: s for s in codecs(*ALL)}
    desktop = Desktop(320, 200)
    viewer = FrameDecoder(specs.values())
    for name in ("raw_zstd", "h264", "vp9", "raw_zstd"):
        factory = specs[name].encoder_factory
        assert factory is not None
        frame = factory(encoder_config(320, 200)).encode(desktop.image)
        assert frame is not None
        out = viewer.decode(*from_wire(to_wire(frame, specs[name])))
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
