"""The pointer's position and shape through XFixes: one round trip per poll."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import numpy as np

__all__ = ["XCursor"]


class XCursor:
    """Reports the pointer position when it moved and the cursor image when XFixes says
    the shape changed: an idle pointer costs one ``QueryPointer`` round trip per poll."""

    def __init__(self) -> None:
        if not os.environ.get("DISPLAY"):
            raise OSError("no X display")
        from Xlib import display

        self._conn: Any = display.Display()
        if not self._conn.has_extension("XFIXES"):
            self._conn.close()
            raise OSError("the XFixes extension is not available")
        self._conn.xfixes_query_version()
        self._root = self._conn.screen().root
        self._conn.xfixes_select_cursor_input(self._root, 1)  # DisplayCursorNotifyMask
        self._conn.flush()
        self._last_pos: tuple[int, int] | None = None
        self._shape_changed = True

    def _shape_events(self) -> None:
        notify = self._conn.extension_event.DisplayCursorNotify
        while self._conn.pending_events():
            event = self._conn.next_event()
            if (event.type, getattr(event, "sub_code", None)) == notify:
                self._shape_changed = True

    def poll(self) -> tuple[tuple[int, int] | None, dict[str, Any] | None]:
        """``(position if moved, shape if changed)``; positions are virtual-screen pixels."""
        pointer = self._root.query_pointer()
        position = (pointer.root_x, pointer.root_y)
        moved = position if position != self._last_pos else None
        self._last_pos = position
        self._shape_events()
        shape = None
        if self._shape_changed:
            self._shape_changed = False
            image = self._conn.xfixes_get_cursor_image(self._root)
            pixels = np.asarray(image.cursor_image, dtype="<u4").tobytes()  # ARGB -> BGRA
            shape = {"id": image.cursor_serial, "hotspot_x": image.xhot,
                     "hotspot_y": image.yhot, "width": image.width, "height": image.height,
                     "data": pixels}
        return moved, shape

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
