from __future__ import annotations

import os

import numpy as np
import pytest
from remote_codec_av1 import SPEC
from remote_codec_av1.codec import AV1Decoder, AV1Encoder, av1_crf

from remote_core.codecs import encoder_config
from remote_core.testing.codec_contract import CodecContract, Desktop, psnr
from remote_core.types import EncoderConfig
from remote_core.video import from_wire, to_wire


class TestAV1Contract(CodecContract):
    spec = SPEC
    min_psnr = 33.0


def test_odd_sizes_are_coded_natively() -> None:
    desktop = Desktop(1365, 767, seed=2)
    frame = AV1Encoder(encoder_config(1365, 767)).encode(desktop.image)
    assert frame is not None and (frame.width, frame.height) == (1365, 767)
    out = AV1Decoder().decode(frame)
    assert out is not None and out.shape == (767, 1365, 4) and psnr(out, desktop.image) > 33


def test_every_frame_comes_out_at_once_and_round_trips_the_wire() -> None:
    """Low delay on both sides: each frame encoded is one frame decoded, no lag."""
    desktop = Desktop(320, 240, seed=3)
    encoder, decoder = AV1Encoder(encoder_config(320, 240)), AV1Decoder()
    for i in range(6):
        desktop.type(i)
        frame = encoder.encode(desktop.image)
        assert frame is not None, f"frame {i} was held back"
        codec, back = from_wire(to_wire(frame, SPEC))
        assert codec == "av1" and back == frame
        out = decoder.decode(back)
        assert out is not None, f"frame {i} was not decoded at once"
        assert psnr(out, desktop.image) > 33


def test_quality_scale_maps_onto_av1() -> None:
    assert av1_crf(0) == 0 and av1_crf(51) == 63 and av1_crf(23) == 28


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="SVT-AV1 asks for real-time threads only when run as root")
def test_the_encoder_leaves_every_thread_on_the_normal_scheduler() -> None:
    """Run as root (a managed agent's service is), SVT-AV1 makes the thread that opens it
    and all of its own threads SCHED_FIFO 99: a busy encoder would starve the machine."""
    encoder = AV1Encoder(EncoderConfig(width=320, height=240))
    try:
        for shade in range(0, 200, 40):
            encoder.encode(np.full((240, 320, 4), shade, np.uint8), keyframe=shade == 0)
        policies = {int(t): os.sched_getscheduler(int(t)) for t in os.listdir("/proc/self/task")}
        assert len(policies) > 2  # SVT-AV1's threads are among them
        assert set(policies.values()) == {os.SCHED_OTHER}, policies
    finally:
        encoder.close()
