"""``Encoder.estimate``: what a frame of some rectangles would take, from a sample of them,
close to what encoding them takes, for desktops and photos alike, changing nothing."""

from __future__ import annotations

import numpy as np
import pytest
from remote_codec_raw_zstd.encoder import RawZstdEncoder

from remote_core.codecs import encoder_config
from remote_core.testing.codec_contract import Desktop, video_like
from remote_core.types import Rect

W, H = 1920, 1080

PICTURES = {
    "desktop": lambda: Desktop(W, H, seed=31).image,
    "video": lambda: np.ascontiguousarray(video_like(W, H, 5)),
    "noise": lambda: np.random.default_rng(32).integers(0, 256, (H, W, 4), dtype=np.uint8),
}


@pytest.mark.parametrize("picture", PICTURES)
@pytest.mark.parametrize("rects", [
    [Rect(0, 0, W, H)],
    [Rect(0, 0, W, 300), Rect(200, 500, 900, 400)],
    [Rect(10, 20, 200, 40)],  # under the sample's size: exact
], ids=["whole", "two", "typing"])
def test_the_estimate_is_within_a_fifth_of_the_frame_it_stands_for(picture, rects):
    before = np.zeros((H, W, 4), dtype=np.uint8)
    after = PICTURES[picture]()
    encoder = RawZstdEncoder(encoder_config(W, H))
    encoder.encode(before, keyframe=True)
    estimate = encoder.estimate(after, rects)
    frame = encoder.encode(after, dirty=rects)
    assert frame is not None  # a whole screen changed goes as a keyframe: the same pixels
    assert len(frame.data) * 0.8 < estimate < len(frame.data) * 1.2, (estimate,
                                                                      len(frame.data))
    if rects[0].width * rects[0].height < 100_000:
        assert estimate == len(frame.data)


def test_an_estimate_changes_nothing():
    desktop = Desktop(W, H, seed=33).image
    asked, unasked = (RawZstdEncoder(encoder_config(W, H)) for _ in range(2))
    for encoder in (asked, unasked):
        encoder.encode(np.zeros((H, W, 4), dtype=np.uint8), keyframe=True)
    asked.estimate(desktop, [Rect(0, 0, W, H)])
    first, second = (encoder.encode(desktop, dirty=[Rect(0, 0, W, 500)])
                     for encoder in (asked, unasked))
    assert first == second
