from __future__ import annotations

from remote_capture_mss import merge_rects
from remote_capture_mss._regions import clip, row_runs

from remote_core.types import Rect


def test_overlapping_and_touching_rects_merge_into_one_box():
    rects = [Rect(0, 0, 10, 10), Rect(5, 5, 10, 10), Rect(15, 0, 5, 5)]
    assert merge_rects(rects) == [Rect(0, 0, 20, 15)]


def test_distant_rects_stay_apart_sorted_top_to_bottom():
    rects = [Rect(100, 100, 5, 5), Rect(0, 0, 5, 5)]
    assert merge_rects(rects) == [Rect(0, 0, 5, 5), Rect(100, 100, 5, 5)]


def test_chain_merge_joins_boxes_that_grow_into_each_other():
    rects = [Rect(0, 0, 4, 4), Rect(20, 0, 4, 4), Rect(3, 0, 18, 2)]
    assert merge_rects(rects) == [Rect(0, 0, 24, 4)]


def test_too_many_rects_become_their_bounding_box():
    rects = [Rect(i * 10, 0, 2, 2) for i in range(30)]
    assert merge_rects(rects, max_rects=24) == [Rect(0, 0, 292, 2)]


def test_clip_cuts_to_the_display_and_drops_outside():
    assert clip(Rect(-5, -5, 10, 10), 100, 100) == Rect(0, 0, 5, 5)
    assert clip(Rect(95, 95, 10, 10), 100, 100) == Rect(95, 95, 5, 5)
    assert clip(Rect(200, 0, 10, 10), 100, 100) is None


def test_changed_rows_become_runs_joined_across_short_gaps():
    assert row_runs([]) == []
    assert row_runs([3, 4, 5, 9, 40, 41], gap=16) == [(3, 10), (40, 42)]
    assert row_runs([0, 17], gap=16) == [(0, 1), (17, 18)]  # 16 rows between: apart
    assert row_runs([0, 16], gap=16) == [(0, 17)]
