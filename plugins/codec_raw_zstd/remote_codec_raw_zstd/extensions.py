"""The raw codec's extensions: features of its frames a viewer draws only if it lists them
in ``SessionRequest.codecs`` (``CodecSpec.extensions``)."""

from __future__ import annotations

__all__ = ["COPY_EXTENSION", "KEEP_EXTENSION", "OVER_EXTENSION"]

COPY_EXTENSION = "raw_copy"
"""The codec extension of viewers that draw moves (``RawFrame.copies``): only when every
viewer lists it does a scroll go out as one."""

OVER_EXTENSION = "raw_over"
"""The codec extension of viewers that draw an incremental raw frame over whatever picture
they show, whichever codec drew it: only when every viewer lists it does the lossless
picture come back after motion in parts drawn over the video picture (``Encoder.redraw``),
which a new motion may cut short, rather than as one keyframe it must wait behind."""

KEEP_EXTENSION = "raw_keep"
"""The codec extension of viewers that keep the picture they show below a keyframe part's
rows (``RawFrame.rows``) rather than drawing its placeholder there: only when every viewer
lists it does the keyframe due every 10 s go in parts over a slow link
(``Encoder.keyframe_in_parts``), so that typing does not wait the second it takes."""
