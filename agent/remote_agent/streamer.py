"""The video stream: capture, encode and send, paced, flow-controlled, off the event loop.

The loop waits, in this order, for a viewer, for the pacer's token, for room
in the flow window, and for the screen to change; only then does it grab and
encode (in a worker thread), so a slow link or an idle screen costs nothing
but a sleeping task, and what is sent is always the newest picture.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

import anyio

from remote_core.codecs import KEYFRAME_INTERVAL_S, encoder_config
from remote_core.interfaces import Encoder
from remote_core.protocol import NUMBER_BY_FIELD, pb
from remote_core.types import CodecSpec, DisplayDesc, EncodedFrame
from remote_core.video import to_wire

from .adaptive import ContentSwitch, changed_share
from .devices import Devices
from .flow import FlowWindow
from .pacing import Pacer
from .stream import StreamState

__all__ = ["Streamer", "video_message", "wire_frame"]

log = logging.getLogger(__name__)

_CHANGE_WAIT = 0.2
"""Longest blocking wait for a screen change, so stream changes are seen promptly."""

_VIDEO_TAG = bytes([(NUMBER_BY_FIELD["video_frame"] << 3) | 2])


def wire_frame(frame: EncodedFrame, spec: CodecSpec, *, timestamp: int, display_id: int,
               sequence: int) -> bytes:
    """The one place a codec's frame becomes the wire's ``Message{video_frame}`` bytes."""
    video = to_wire(frame, spec)
    video.timestamp = timestamp
    video.display_id = display_id
    video.sequence = sequence
    return video_message(video)


def video_message(frame: pb.VideoFrame) -> bytes:
    """``Message{video_frame}`` bytes without copying the frame into a wrapper first."""
    payload = frame.SerializeToString()
    length = len(payload)
    varint = bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        varint.append(byte | (0x80 if length else 0))
        if not length:
            break
    return _VIDEO_TAG + bytes(varint) + payload


class Streamer:
    """Runs the shared stream of one session; the session pokes it when anything changes."""

    def __init__(self, devices: Devices, state: StreamState,
                 send: Callable[[bytes], Awaitable[None]],
                 displays: Callable[[], list[DisplayDesc]], *, window: int = 3,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.devices = devices
        self.state = state
        self.flow = FlowWindow(window)
        self._send = send
        self._displays = displays
        self._clock = clock
        self._wake = anyio.Event()
        self._limiter = anyio.CapacityLimiter(1)
        self.sequence = 0
        self.streaming_display: DisplayDesc | None = None

    def poke(self) -> None:
        """Something changed (viewers, display, quality, an ack): re-check at once."""
        self._wake.set()

    def ack(self, sequence: int) -> None:
        self.flow.ack(sequence)
        self.poke()

    async def _pause(self, seconds: float | None) -> None:
        """Sleep until poked, or for ``seconds`` (``None``: until poked)."""
        if self._wake.is_set():
            self._wake = anyio.Event()
            return
        if seconds is None:
            await self._wake.wait()
        else:
            with anyio.move_on_after(max(seconds, 0.0)):
                await self._wake.wait()
        self._wake = anyio.Event()

    async def run(self) -> None:
        while True:
            if not self.state.active:
                self.streaming_display = None
                await self._pause(None)
                continue
            try:
                await self._stream()
            except ValueError as exc:  # display gone, bad quality: back to safe defaults
                log.warning("stream restarted: %s", exc)
                self.state.switch(0)

    def _display(self) -> DisplayDesc:
        displays = self._displays()
        display = self.devices.display(self.state.display_id, displays)
        if display is None:
            raise ValueError(f"display {self.state.display_id} does not exist; "
                             f"displays are {[d.id for d in displays]}")
        return display

    def _encoder(self, spec: CodecSpec, display: DisplayDesc) -> Encoder:
        if spec.encoder_factory is None:
            raise ValueError(f"codec {spec.name} cannot encode")
        config = encoder_config(display.width, display.height, self.state.quality)
        log.info("streaming display %d (%dx%d) with %s at %d fps", display.id, display.width,
                 display.height, spec.name, config.fps)
        return spec.encoder_factory(config)

    def _build(self) -> tuple[DisplayDesc, CodecSpec, Encoder]:
        display = self._display()
        spec = self.state.codec
        if spec is None:
            raise ValueError("no codec to stream in (is codec_raw_zstd loaded?)")
        return display, spec, self._encoder(spec, display)

    async def _stream(self) -> None:
        state = self.state
        generation = state.generation
        display, spec, encoder = await anyio.to_thread.run_sync(self._build,
                                                                limiter=self._limiter)
        self.streaming_display = display
        # The automatic codec: ``spec`` (lossless) for small changes, ``state.motion`` while
        # the screen moves, its encoder made the first time it is needed.
        lossless, motion = (spec, encoder), state.motion
        videos: tuple[CodecSpec, Encoder] | None = None
        switch = ContentSwitch()
        pacer = Pacer(state.fps())
        self.flow.reset()
        state.keyframe_wanted = True
        last_keyframe = self._clock()
        try:
            while state.active and state.generation == generation:
                now = self._clock()
                wait = pacer.wait_time(now)
                if wait > 0:
                    await self._pause(wait)
                    continue
                if not self.flow.can_send(now):
                    deadline = self.flow.next_deadline(now)
                    await self._pause(None if deadline is None else deadline - now)
                    continue
                if motion is not None and not encoder.pending:
                    wanted = switch.tick(now)
                    if wanted != (spec is motion):
                        if not wanted:
                            spec, encoder = lossless
                        else:
                            if videos is None:
                                videos = motion, await anyio.to_thread.run_sync(
                                    self._encoder, motion, display, limiter=self._limiter)
                            spec, encoder = videos
                        state.keyframe_wanted = True  # the other codec starts afresh
                keyframe = state.keyframe_wanted or now - last_keyframe >= KEYFRAME_INTERVAL_S
                if keyframe:
                    state.take_keyframe()
                self.sequence += 1
                made = await anyio.to_thread.run_sync(
                    self._next_frame, spec, encoder, display, keyframe, self.sequence,
                    limiter=self._limiter)
                if made is None:
                    self.sequence -= 1
                    continue
                data, key, started, share = made
                if motion is not None:
                    switch.observe(share, started)
                if data is None:
                    self.sequence -= 1
                    continue
                if key:
                    last_keyframe = started
                await self._send(data)
                self.flow.sent(self.sequence, self._clock())
                pacer.sent(started)
        finally:
            lossless[1].close()
            if videos is not None:
                videos[1].close()

    def _next_frame(self, spec: CodecSpec, encoder: Encoder, display: DisplayDesc,
                    keyframe: bool, sequence: int
                    ) -> tuple[bytes | None, bool, float, float | None] | None:
        """In a worker thread: wait for a change (unless a keyframe is due), grab, encode
        and frame it; ``None`` when nothing changed, no bytes when the encoder had nothing
        to send. Also the share of the screen the capture says changed. One thread hop
        per frame."""
        # A frame too big for one message goes in parts: send the rest before waiting.
        if (not keyframe and not encoder.pending
                and not self.devices.capture.wait_for_change(_CHANGE_WAIT)):
            return None
        started = self._clock()
        timestamp = time.time_ns() // 1000
        image, dirty = self.devices.capture.grab(display.id)
        share = changed_share(dirty, display.width, display.height)
        frame = encoder.encode(image, keyframe=keyframe, dirty=dirty)
        if frame is None:
            return None, False, started, share
        data = wire_frame(frame, spec, timestamp=timestamp, display_id=display.id,
                          sequence=sequence)
        return data, frame.keyframe, started, share
