"""The FFmpeg machinery the H.264, H.265 and VP9 plugins share.

An encoder converts BGRA to YUV 4:2:0 with one cached swscale context (reading
the numpy buffer in place: ``from_ndarray`` copied first and took 4x longer), skips
frames identical to the last one it sent (but while it sharpens a keyframe that a short
rate buffer coarsened: :attr:`PyAVEncoder.sharpening`), pads
to the sizes the codec can code, forces keyframes on request, on a size change
and every 10 s (CONTRACT 1), and returns one access unit per frame with
pts/dts in microseconds from the stream's start. Inside the codec, frames are
numbered at the configured frame rate instead: rate control then budgets per
frame at the rate the agent paces to, not by capture jitter (libvpx starved
every frame after a keyframe when frames came a few milliseconds apart).

An encoder may code the picture at half the display's size while the machine is short
of CPU (:meth:`PyAVEncoder.downscale`, for viewers that list the codec's ``_scaled``
extension); its keyframes still state the display's size: an Annex B codec's in its size
SEI, VP9's beside the bitstream (``EncodedFrame.width``/``height``).

A decoder turns access units back into BGRA at the size the stream's keyframe states:
cropping any padding, scaling up a downscaled picture. It maps every FFmpeg error to
``ValueError``.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, ClassVar, cast

import av
import numpy as np
import numpy.typing as npt
from av.video.codeccontext import VideoCodecContext
from av.video.frame import PictureType
from av.video.reformatter import VideoReformatter

from remote_core.codecs import KEYFRAME_INTERVAL_S, MAX_PIXELS, KeyframeClock, as_image
from remote_core.interfaces import Decoder, Encoder
from remote_core.types import EncodedFrame, EncoderConfig, Moves, Rect

from .annexb import find_size, size_sei

__all__ = ["PyAVDecoder", "PyAVEncoder", "encoder_available", "short_buffer", "vbv_cap"]

_SMPTE170M = 6  # AVCOL_SPC/PRI/TRC_SMPTE170M: BT.601 as used by swscale's default matrix
_LIMITED_RANGE = 1  # AVCOL_RANGE_MPEG
_SCALING = "FAST_BILINEAR"
"""How a downscaled picture is made: 1.0 ms from a 1080p picture to half its size, where
BILINEAR (PyAV's default) and AREA took 1.7 ms and BICUBIC 2.1 (medians of five
interleaved runs)."""


MOST_UPSCALE = 4
"""A picture is scaled up to the size its SEI states at most this many times each way (the
agent halves it): a forged size cannot make a viewer allocate more than that, nor more
than ``MAX_PIXELS``."""


def _downscaled(size: tuple[int, int], width: int, height: int) -> bool:
    """Whether a ``width`` x ``height`` picture is a downscaled one of the display's
    ``size`` that its keyframe states, to be scaled back up (within :data:`MOST_UPSCALE`)."""
    w, h = size
    return ((width < w or height < h) and w <= MOST_UPSCALE * width
            and h <= MOST_UPSCALE * height and w * h <= MAX_PIXELS)


def vbv_cap(config: EncoderConfig) -> dict[str, str]:
    """Constant quality capped at the bitrate, through a buffer of the config's
    ``buffer_seconds`` (a keyframe takes at most that much of the bitrate's time)."""
    if not config.bitrate_kbps:
        return {}
    buffer = max(1, round(config.bitrate_kbps * config.buffer_seconds))
    return {"maxrate": f"{config.bitrate_kbps}k", "bufsize": f"{buffer}k"}


def short_buffer(config: EncoderConfig) -> bool:
    """Whether ``config``'s rate buffer holds under a second of its bitrate: a slow link,
    over which a keyframe is coarsened (and sharpened after) and every large frame is
    felt."""
    return config.bitrate_kbps > 0 and config.buffer_seconds < 1


def encoder_available(codec_name: str) -> bool:
    """True when this FFmpeg build has the encoder ``codec_name``."""
    try:
        av.codec.Codec(codec_name, "w")
    except Exception:  # any failure means the codec cannot be used here
        return False
    return True


SHARPEN_SECONDS = 1.0
"""Longest a keyframe coarsened by a short rate buffer (``EncoderConfig.buffer_seconds``
under a second: a slow link) is sharpened by frames of the same picture, each as large as
the bitrate allows. A 1080p desktop with a wallpaper like a photograph, at 1,055 kbps
through a quarter-second buffer: a 25 KB keyframe at 21 dB PSNR, then 29 dB after 1 s,
33.5 after 2 and 34.8 after 3 (through a whole second's buffer: a 78 KB keyframe at 26.5
dB, which a still screen kept). Each frame costs the encoder's time, some 8 ms at 1080p:
with the keyframe due every 10 s, that screen standing still over 2 Mbit/s cost the agent
3.2-4.0 % of a core with a second of sharpening (1.0 without, 8.5 with three seconds)."""

SETTLED_SHARE = 0.25
SETTLED_FRAMES = 3
"""Sharpening ends sooner once this many frames in a row came out under
:data:`SETTLED_SHARE` of a frame's share of the bitrate: the encoder finds little left to
improve."""


class PyAVEncoder(Encoder):
    """One video stream through an FFmpeg encoder; subclasses name the codec and options."""

    codec_name: ClassVar[str]
    min_side: ClassVar[int] = 1
    """Smallest width/height the encoder accepts; smaller frames are padded."""
    even_sizes: ClassVar[bool] = True
    """4:2:0 codecs without odd-size support pad to even sizes."""
    sei_header: ClassVar[bytes | None] = None
    """NAL header of the size SEI (Annex B codecs), or ``None`` when the codec keeps odd sizes."""
    scaled_extension: ClassVar[str | None] = None
    """The extension of viewers that scale this codec's pictures up to the size its
    keyframes state (:meth:`downscale`); ``None``: the encoder always codes the display's
    size."""

    def __init__(self, config: EncoderConfig, clock: KeyframeClock | None = None) -> None:
        self._config = config
        self._clock = clock or KeyframeClock()
        self._context: Any = None
        self._size: tuple[int, int] | None = None
        self._reformatter = VideoReformatter()
        self._start = time.monotonic()
        self._last_pts = -1
        self._frames = 0
        self._previous: npt.NDArray[np.uint8] | None = None
        self._factor = 1
        self._yuv: av.VideoFrame | None = None  # the last picture converted
        self._sharpen = 0  # frames left to sharpen the last keyframe with
        self._settled = 0  # small frames in a row while sharpening

    @abstractmethod
    def options(self, config: EncoderConfig) -> dict[str, str]:
        """Codec options (``AVOption`` names) for ``config``."""

    def opens_for_keyframe(self) -> bool:
        """Whether a keyframe asked for mid-stream opens the codec again, its rate control
        started afresh, instead of being forced into the running stream (an encoder whose
        rate control mishandles a forced keyframe says so; opening costs some 0.1 s)."""
        return False

    def downscale(self, factor: int) -> bool:
        if factor != 1 and (self.scaled_extension is None
                            or self.scaled_extension not in self._config.extensions):
            return False
        if factor != self._factor:
            self._factor = factor
            self._size = None  # opened again at the new size, from a keyframe
        return True

    def _open(self, width: int, height: int) -> None:
        self.close()
        config = self._config
        pw, ph = self.padded_size(-(-width // self._factor), -(-height // self._factor))
        ctx = cast(VideoCodecContext, av.CodecContext.create(self.codec_name, "w"))
        ctx.width, ctx.height = pw, ph
        ctx.pix_fmt = "yuv420p"
        # Say what swscale produced (BT.601, limited range), so every decoder,
        # browsers included, converts back with the same matrix.
        ctx.colorspace = ctx.color_primaries = ctx.color_trc = _SMPTE170M
        ctx.color_range = _LIMITED_RANGE
        ctx.time_base = Fraction(1, config.fps)
        ctx.framerate = Fraction(config.fps)
        ctx.gop_size = int(config.fps * KEYFRAME_INTERVAL_S)
        ctx.max_b_frames = 0
        ctx.options = self.options(config)
        try:
            ctx.open()
        except av.FFmpegError as exc:
            raise ValueError(f"{self.codec_name} cannot encode {width}x{height}: {exc}") from None
        self._context = ctx
        self._size = (width, height)

    def padded_size(self, width: int, height: int) -> tuple[int, int]:
        """The size actually coded for a ``width`` x ``height`` display."""
        if self.even_sizes:
            width, height = width + width % 2, height + height % 2
        return max(width, self.min_side), max(height, self.min_side)

    def _pad(self, image: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        h, w = image.shape[:2]
        pw, ph = self.padded_size(w, h)
        if (pw, ph) == (w, h):
            return image
        return np.pad(image, ((0, ph - h), (0, pw - w), (0, 0)), mode="edge")

    def encode(self, image: Any, *, keyframe: bool = False,
               dirty: Sequence[Rect] | None = None,
               moves: Moves | None = None) -> EncodedFrame | None:
        current = np.asarray(as_image(image))
        h, w = current.shape[:2]
        resized = self._size != (w, h)
        keyframe = keyframe or resized or self._clock.due()
        if resized or (keyframe and self.opens_for_keyframe()):
            self._open(w, h)
        unchanged = not keyframe and self._unchanged(current, dirty)
        if unchanged and not self._sharpen:
            return None
        if unchanged and self._yuv is not None:
            yuv = self._yuv  # the same picture again, to sharpen it
        elif self._factor == 1:
            frame = av.VideoFrame.from_numpy_buffer(self._pad(current), format="bgra")
            yuv = self._reformatter.reformat(frame, format="yuv420p")
        else:  # scaled straight from the display's picture, nothing to pad
            frame = av.VideoFrame.from_numpy_buffer(current, format="bgra")
            yuv = self._reformatter.reformat(
                frame, format="yuv420p", width=self._context.width,
                height=self._context.height, interpolation=_SCALING)
        self._yuv = yuv
        yuv.pts = self._frames
        self._frames += 1
        yuv.pict_type = PictureType.I if keyframe else PictureType.NONE
        try:
            packets = self._context.encode(yuv)
        except av.FFmpegError as exc:
            raise ValueError(f"{self.codec_name} failed to encode: {exc}") from None
        self._remember(current, dirty)
        data = b"".join(bytes(p) for p in packets)
        is_key = any(p.is_keyframe for p in packets)
        self._sharpened(len(data), is_key)
        if not packets:
            return None
        stated = (0, 0)  # the display's size beside the bitstream: a scaled VP9 keyframe's
        if is_key:
            self._clock.sent()
            if self.sei_header is not None:
                data = size_sei(self.sei_header, w, h) + data
            elif self._factor != 1:
                stated = (w, h)
        # No reordering (no B-frames, no lag): decode order is display order, dts == pts.
        pts = max(self._last_pts + 1, round((time.monotonic() - self._start) * 1_000_000))
        self._last_pts = pts
        return EncodedFrame(data=data, keyframe=is_key, width=stated[0], height=stated[1],
                            pts=pts, dts=pts)

    @property
    def sharpening(self) -> bool:
        return self._sharpen > 0

    def _sharpened(self, size: int, keyframe: bool) -> None:
        """Count a frame of ``size`` bytes against the sharpening of the last keyframe,
        which a keyframe starts when the rate buffer is short enough to coarsen it."""
        config = self._config
        if keyframe:
            self._sharpen = round(SHARPEN_SECONDS * config.fps) if short_buffer(config) else 0
            self._settled = 0
        elif self._sharpen:
            settled = size < SETTLED_SHARE * config.bitrate_kbps * 125 / config.fps
            self._settled = self._settled + 1 if settled else 0
            self._sharpen = 0 if self._settled >= SETTLED_FRAMES else self._sharpen - 1

    def _unchanged(self, current: npt.NDArray[np.uint8], dirty: Sequence[Rect] | None) -> bool:
        """Nothing to send: the capture source says so, or the pixels equal the last frame's
        (one vectorised compare, a fraction of a millisecond at 1080p)."""
        if dirty is not None:
            return not dirty
        return self._previous is not None and np.array_equal(self._previous, current)

    def _remember(self, current: npt.NDArray[np.uint8], dirty: Sequence[Rect] | None) -> None:
        """Keep a copy of the picture sent for the next frame's compare, which only a frame
        without rectangles makes: with them (X DAMAGE's), the copy (half a millisecond at
        1080p) would go unused, and an older picture kept would be compared wrongly."""
        if dirty is not None:
            self._previous = None
            return
        if self._previous is None or self._previous.shape != current.shape:
            self._previous = np.empty_like(current)
        np.copyto(self._previous, current)

    def close(self) -> None:
        self._context = None
        self._size = None
        self._previous = None
        self._yuv = None
        self._sharpen = 0


class PyAVDecoder(Decoder):
    """One video stream through an FFmpeg decoder, slice-threaded so no frame is held back."""

    codec_name: ClassVar[str]

    def __init__(self) -> None:
        self._context = self._new_context()
        self._reformatter = VideoReformatter()
        self._size: tuple[int, int] | None = None

    def _new_context(self) -> Any:
        ctx = av.CodecContext.create(self.codec_name, "r")
        ctx.thread_type = "SLICE"  # frame threading would delay every frame by one per thread
        ctx.options = {"max_pixels": str(MAX_PIXELS)}  # a forged header cannot allocate more
        return ctx

    def decode(self, frame: EncodedFrame) -> npt.NDArray[np.uint8] | None:
        data = frame.data
        if not data:
            raise ValueError(f"empty {self.codec_name} frame")
        if frame.keyframe:
            self._size = ((frame.width, frame.height) if frame.width and frame.height
                          else find_size(data))
        try:
            pictures = self._context.decode(av.Packet(data))
            if not pictures:
                return None
            picture, size = pictures[-1], self._size
            scale: dict[str, int] = {}
            if size is not None and _downscaled(size, picture.width, picture.height):
                scale = {"width": size[0], "height": size[1]}  # back up to the display's
            image = cast(npt.NDArray[np.uint8], self._reformatter.reformat(
                picture, format="bgra", **scale).to_ndarray())
        except av.FFmpegError as exc:
            self._context = self._new_context()  # do not build on a broken reference
            raise ValueError(f"{self.codec_name} frame does not decode: {exc}") from None
        if self._size is not None:
            w, h = self._size
            if w <= image.shape[1] and h <= image.shape[0]:
                image = image[:h, :w]
        return np.ascontiguousarray(image)
