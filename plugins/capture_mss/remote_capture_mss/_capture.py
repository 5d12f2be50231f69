"""``MssCapture``: the displays of this machine and images of the selected one.

With DAMAGE the source keeps one image per display and refreshes only the
areas X reports as drawn, so a small change costs a small grab; without it
every grab is the whole display and ``dirty`` is ``None`` (the encoder diffs).
What X reports as drawn is not always changed: an application often draws a
whole window again to blink its cursor, and a still screen drawn again would
look like motion to the stream and go out in video. So the rows of a drawn
area are compared as they are copied in, and only the rows that changed are
reported (a millisecond for a whole 1080p screen; a grab of the whole screen becomes
the kept image instead of being copied into it).
What X does not report stays off the viewers' screens until something draws there again:
a report lost on the way, or a client drawing where DAMAGE does not look (some GL and
video overlays). So a screen that has been still for :data:`HEAL_SECONDS` is grabbed whole
and compared, and what differs is reported changed: a still screen is right within
seconds, at the cost of a whole grab while nothing happens (a change X reports is
grabbed as reported, the first keystroke after a pause as fast as any).
Images are ``memoryview`` objects shaped ``(height, width, 4)`` over the source's own
BGRA buffer: no copy, and no numpy.
"""

from __future__ import annotations

import logging
import time

from remote_core.interfaces import CaptureSource
from remote_core.types import DisplayDesc, Rect

from ._regions import clip, merge_rects, row_runs
from ._x11 import DamageWatcher, MonitorQuery

__all__ = ["MssCapture"]

log = logging.getLogger(__name__)

SOCKET_GRAB_PIXELS = 16 * 1024
"""Largest area grabbed in the answer on the X connection's socket rather than in the
memory shared with the X server: for a small area the round trip is all there is (mss's
shared-memory grab of a typed word took 0.08 ms longer; the typing path was tuned on
this one)."""

HEAL_SECONDS = 3.0
"""Seconds without a grab (a still screen, by X's reports) after which the whole display is
grabbed and compared (a few milliseconds of a 1080p screen; nothing sent when nothing
differs), and again each time they pass while it stays still."""


class MssCapture(CaptureSource):
    """Screen capture with mss.

    :param use_damage: subscribe to X DAMAGE when the platform has it (default).
    :param heal_seconds: how long a screen stays still before it is grabbed whole
        (:data:`HEAL_SECONDS`).

    The image :meth:`grab` returns is owned by the source and refreshed in place
    by the next grab of the same display: encode it before grabbing again.
    """

    def __init__(self, *, use_damage: bool = True,
                 heal_seconds: float = HEAL_SECONDS) -> None:
        import mss

        self._mss = mss.MSS()
        self._watcher: DamageWatcher | None = None
        if use_damage:
            try:
                self._watcher = DamageWatcher()
            except OSError as exc:
                log.info("capture polls: %s", exc)
        self._monitors = MonitorQuery()
        self._known: list[DisplayDesc] = []
        self._frame: bytearray | None = None
        self._frame_display: DisplayDesc | None = None
        self._heal_seconds = heal_seconds
        self._grabbed_at = 0.0  # (monotonic) the last grab of the kept image

    @property
    def change_driven(self) -> bool:
        """True when the platform reports changes (X DAMAGE), false when polling."""
        return self._watcher is not None

    def displays(self) -> list[DisplayDesc]:
        """Enumerate afresh (a round trip to the X server: not per frame)."""
        found = self._monitors.monitors()
        if found is None:
            monitors = self._mss.monitors[1:]
            found = [DisplayDesc(id=i, name=f"Display {i}", x=m["left"], y=m["top"],
                                 width=m["width"], height=m["height"], is_primary=i == 1)
                     for i, m in enumerate(monitors, start=1)]
        if found and not any(d.is_primary for d in found):
            first = found[0]
            found[0] = DisplayDesc(first.id, first.name, first.x, first.y, first.width,
                                   first.height, True)
        self._known = found
        return found

    def _display(self, display_id: int) -> DisplayDesc:
        displays = self._known or self.displays()
        if display_id == 0:
            return next(d for d in displays if d.is_primary)
        for display in displays:
            if display.id == display_id:
                return display
        raise ValueError(f"no display {display_id}; displays are "
                         f"{[d.id for d in displays]} (0 = primary)")

    def _grab_area(self, x: int, y: int, width: int, height: int) -> bytearray | memoryview:
        """The BGRA pixels of an area, row after row, asked for on the damage connection:
        a small one in its answer, a large one in the memory it shares with the X server
        (a view, good until the next grab); through mss when the connection cannot."""
        if self._watcher is not None:
            pixels = self._watcher.get_image(x, y, width, height,
                                             shared=width * height > SOCKET_GRAB_PIXELS)
            if pixels is not None:
                return pixels
        shot = self._mss.grab({"left": x, "top": y, "width": width, "height": height})
        return shot.raw

    def grab(self, display_id: int) -> tuple[memoryview, list[Rect] | None]:
        """The whole display; with DAMAGE, also the rectangles changed since the last grab
        (an empty list when what X reported drawn is as it was).

        The first grab of a display (after another display or a geometry change)
        returns ``None`` for the rectangles: everything is new. A grab with nothing
        reported after :data:`HEAL_SECONDS` without one (:meth:`wait_for_change` said so,
        or a keyframe is grabbed) takes the whole display in, and reports what differs
        from the kept image, reported by X or not.
        """
        display = self._display(display_id)
        frame = self._frame
        damaged = self._watcher.take() if self._watcher is not None else []
        heal = not damaged and self._overdue()
        self._grabbed_at = time.monotonic()
        if self._watcher is None or frame is None or self._frame_display != display:
            frame = _owned(self._grab_area(display.x, display.y, display.width, display.height))
            self._frame, self._frame_display = frame, display
            return _image(frame, display), None
        whole = Rect(0, 0, display.width, display.height)
        areas = [whole] if heal else _areas(damaged, display)
        changed: list[Rect] = []
        for rect in areas:
            area = self._grab_area(display.x + rect.x, display.y + rect.y, rect.width,
                                   rect.height)
            # The new grab of a whole display in motion becomes the frame: no copy row by
            # row. A check's rows are as they were, nearly all: only those that are not
            # are copied in.
            keep = rect == whole and not heal
            changed += _refresh(frame, display.width * 4, area, rect, copy=not keep)
            if keep:  # (a new buffer: a copy into the old one took 1.6 ms of 1080p, this 0.9)
                frame = self._frame = _owned(area)
        return _image(frame, display), sorted(changed, key=lambda r: (r.y, r.x))

    def wait_for_change(self, timeout: float) -> bool:
        watcher = self._watcher
        if watcher is None:
            return True
        if self._frame is not None:  # a still screen: no longer than until its check
            timeout = min(timeout, self._grabbed_at + self._heal_seconds - time.monotonic())
        # X reported a change (grabbed as reported, the check put off), or the check is due
        return watcher.wait(timeout) or self._overdue()

    def _overdue(self) -> bool:
        """Whether the kept image went unchecked too long: the next grab with nothing
        reported is whole."""
        return (self._frame is not None
                and time.monotonic() - self._grabbed_at >= self._heal_seconds)

    def change_fd(self) -> int | None:
        return None if self._watcher is None else self._watcher.fileno()

    def pending_pixels(self) -> int | None:
        display = self._frame_display
        if self._watcher is None or display is None or display not in self._known:
            return None  # the next grab is of the whole display
        areas = _areas(self._watcher.pending(), display)
        if not areas and self._overdue():
            return display.width * display.height  # the still screen's check
        return sum(r.width * r.height for r in areas)

    def interrupt(self) -> None:
        if self._watcher is not None:
            self._watcher.interrupt()

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
        self._monitors.close()
        self._mss.close()


def _areas(damaged: list[Rect], display: DisplayDesc) -> list[Rect]:
    """The areas of ``display`` a grab takes in for the ``damaged`` rectangles (root
    coordinates): clipped to it, and merged (:func:`merge_rects`)."""
    local = [clip(Rect(r.x - display.x, r.y - display.y, r.width, r.height),
                  display.width, display.height) for r in damaged]
    return merge_rects(r for r in local if r is not None)


def _refresh(frame: bytearray, stride: int, area: bytearray | memoryview, rect: Rect, *,
             copy: bool = True) -> list[Rect]:
    """The parts of ``rect`` whose rows in ``area``, the pixels grabbed of it, differ from
    ``frame``'s; each row that does is copied in (when ``copy``). ``startswith`` compares
    in place, at memory speed, and stops at the first difference: a whole 1080p screen of
    motion costs about a millisecond."""
    length = rect.width * 4
    offset = rect.y * stride + rect.x * 4
    lines = memoryview(area)
    rows = []
    for index, row in enumerate(range(0, len(area), length)):
        line = lines[row:row + length]
        if not frame.startswith(line, offset):
            if copy:
                frame[offset:offset + length] = line
            rows.append(index)
        offset += stride
    return [Rect(rect.x, rect.y + first, rect.width, end - first)
            for first, end in row_runs(rows)]


def _owned(pixels: bytearray | memoryview) -> bytearray:
    """Pixels the source keeps: a view of the shared memory is copied out of it."""
    return pixels if isinstance(pixels, bytearray) else bytearray(pixels)


def _image(frame: bytearray, display: DisplayDesc) -> memoryview:
    return memoryview(frame).cast("B", (display.height, display.width, 4))
