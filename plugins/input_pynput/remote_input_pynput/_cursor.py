"""The pointer's position and shape through XFixes: one round trip per poll."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import numpy as np

__all__ = ["XCursor"]


class XCursor:
    """Polls XFixes for the cursor; reports the position when it moved and the shape when
    its serial changed, so an idle pointer costs one small request per poll."""

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
        self._last_pos: tuple[int, int] | None = None
        self._last_serial: int | None = None

    def poll(self) -> tuple[tuple[int, int] | None, dict[str, Any] | None]:
        """``(position if moved, shape if changed)``; positions are virtual-screen pixels."""
        image = self._conn.xfixes_get_cursor_image(self._root)
        position = (image.x, image.y)
        moved = position if position != self._last_pos else None
        self._last_pos = position
        shape = None
        if image.cursor_serial != self._last_serial:
            self._last_serial = image.cursor_serial
            pixels = np.asarray(image.cursor_image, dtype="<u4").tobytes()  # ARGB -> BGRA
            shape = {"id": image.cursor_serial, "hotspot_x": image.xhot,
                     "hotspot_y": image.yhot, "width": image.width, "height": image.height,
                     "data": pixels}
        return moved, shape

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
