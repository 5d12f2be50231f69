"""The video stream: capture, encode and send, paced, flow-controlled, off the event loop.

The loop waits, in this order, for a viewer, for the pacer's token, for room
in the flow window, and for the screen to change; only then does it grab and
encode (in a worker thread), so a slow link or an idle screen costs nothing
but a sleeping task, and what is sent is always the newest picture. Where the
capture offers a descriptor to watch (X DAMAGE), the loop waits for the change
itself, and a small lossless change (a typed word) is grabbed and encoded on the
loop at once: the hand-over from a worker took 0.3 ms of a keystroke's way.

Left to the agent, the stream is lossless with a video codec for motion
(:mod:`.adaptive`), and the link has a say (:mod:`.linkrate`): a lossless frame
the link would take longer than :data:`LOSSLESS_SECONDS` to carry (a moving
picture over a slow link is megabytes) goes out as a video keyframe instead,
and the video codec's bitrate is capped at :data:`VIDEO_SHARE` of the link, a keyframe
at :data:`LINK_BUFFER_SECONDS` of that (a still screen's frames then sharpen it,
``Encoder.sharpening``); a motion
whose frames take most of their time to make goes on at half size (:class:`.MotionSize`).
The lossless picture restored after motion goes in parts drawn over the video
picture when every viewer can draw them (:data:`REDRAW_PART_SECONDS`), so a
motion that starts again cuts it short instead of waiting behind it; when it is over
the link's budget, the viewers keep the video picture and what changes goes lossless
over it (``Encoder.adopt``). A lossy codec the viewers chose is capped for the link
the same way, its encoder built again once the link is known, and goes on at half size
in a motion while short of CPU as the motion codec does (:class:`.ChosenSize`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from remote_core.codecs import KEYFRAME_INTERVAL_S, encoder_config, shared_extensions
from remote_core.interfaces import Encoder
from remote_core.protocol import NUMBER_BY_FIELD, pb
from remote_core.types import CodecSpec, DisplayDesc, EncodedFrame, EncoderConfig, Rect
from remote_core.video import to_wire

from .adaptive import ChosenSize, ContentSwitch, MotionSize, changed_share
from .bulk import PictureLoad
from .devices import Devices
from .flow import FlowWindow
from .linkrate import DeliveryRate
from .pacing import SMALL_SHARE, Pacer
from .stream import StreamState
from .wakeup import Wakeup

__all__ = ["Streamer", "video_message", "wire_frame"]

log = logging.getLogger(__name__)

_CHANGE_WAIT = 1.0
"""Longest blocking wait for a screen change. What the stream must do meanwhile (a
keyframe a viewer asked for, a new quality) interrupts the wait (:meth:`Streamer.poke`),
so this only bounds how late a capture source without ``interrupt()`` notices it; an
idle screen costs a wake-up a second."""

_step_aside: Callable[[], None] = getattr(os, "sched_yield", lambda: None)
"""Let whatever a frame's write woke run first. A reader on the agent's core (a relay or
a browser on the same machine, as in ``bench.browser``) otherwise waits out the stream's
bookkeeping after the write: the server read a typed word's frame about 0.3 ms after
the agent wrote it then (the kernel woke it on the agent's core three times in four),
against 0.15 ms stepping aside, and 0.13 ms on the other core. With nothing woken here,
the call returns at once; Windows has none."""

_VIDEO_TAG = bytes([(NUMBER_BY_FIELD["video_frame"] << 3) | 2])

INLINE_PIXELS = 64 * 1024
"""Most changed pixels a lossless frame is grabbed and encoded of on the event loop (about
0.3 ms of work; typing changes some thousands); a larger change goes to a worker thread,
so the loop stays free for input and file data."""

LOSSLESS_SECONDS = 0.3
"""Longest a lossless frame may take on the link; a larger one goes out as video. (A
one-off change, a window opening, costs less this way than a video keyframe followed by
the lossless picture restored a second later; while the screen moves, video carries it
from the second big change on, whatever its size: see ``motion_from``.)"""

LOSSLESS_MOST_BYTES = 1024 * 1024
"""Largest lossless frame of a change, however fast the link: the viewer decodes it too
(the console took some 250 ms over a 6 MB frame of a moving 1080p screen, and the
motion it began waited behind it). A desktop's change is far under it (a whole 1080p
desktop is about 200 KB); a larger one goes out in video, and the exact picture comes
back once the screen is calm."""

RESTORE_SECONDS = 2.0
"""Longest a lossless keyframe may take on the link: the picture restored after motion
(the screen is calm then), or one the viewers need (a viewer joins, the keyframe due
every 10 s); a larger one goes out as a video keyframe, and the lossless picture comes
back once the screen is calm. The estimate is a lower bound (acknowledgements wait for
the viewer's decoding too)."""

REDRAW_PART_SECONDS = 0.1
"""The share of a second of the link each part of a restored picture takes, when every
viewer draws it over the video picture (``Encoder.redraw``): a motion that starts during
the restore waits behind the parts in flight (the flow window's few) rather than the
whole picture."""

KEY_PART_SHARE = 0.5
"""The share of the link the parts of the keyframe due every 10 s take, one part a frame
time (the pacer's): the rest is for what changes meanwhile, which goes in frames of its
own between them, so a typed word waits behind a part at most (over 2 Mbit/s, some 4 KB:
17 ms of the link). At a tenth of a second of the link a part, as a picture restored
after motion goes, typing waited behind three of them in flight: a p99 of 235 ms."""

REPEAT_SECONDS = 0.1
"""The keyframe due every 10 s goes whole, as the picture the viewers have (which a viewer
in step skips: ``Encoder.repeat_keyframe``), over a link that carries the last whole one
in this long, about what a typed word waits behind the parts over a slow link; in parts
(above) over a slower one. The link's rate as measured includes the viewer's drawing of
what it acknowledges: a 1080p desktop's keyframe measured a loopback link at 6-8 MB/s on
a busy 2-core machine, and a frame time's worth sent it in parts half the time, where a
typed word waited up to 88 ms behind them."""

VIDEO_SHARE = 0.75
"""Share of the link's rate the video codec's bitrate is capped at (a keyframe may take
up to a second of that bitrate). The rate is what the link carried of bursts after idle
spells, under what it carries flat out (190 kB/s measured over a 2 Mbit/s link: TCP
ramps up again after an idle spell, and the framing costs), so this is about half the
link's own rate."""

LINK_BUFFER_SECONDS = 0.25
"""The most of the link one video frame, a keyframe, may take, in seconds of the video's
share of it (:data:`VIDEO_SHARE`): the codec's rate buffer holds no more than that, nor
more than a second of its bitrate. What follows a keyframe on the link waits behind it:
with a whole second's buffer, typing over 2 Mbit/s on a desktop that compresses like a
photograph waited up to 522 ms behind the keyframe due every 10 s (121 KB). With a quarter
of a second it is some 30 KB, and the encoder sharpens it with the frames after it
(``Encoder.sharpening``)."""

FLIGHT_SECONDS = 1.0
"""The most of the link the frames in flight may take, in seconds of its rate as
measured, before another goes (``FlowWindow.most_bytes``): a frame of megabytes goes
alone, and the one after it is the newest picture once the viewers have it, not one
queued seconds deep behind it. Only a lossless codec the viewer chose makes such frames
of a moving screen (the automatic choice sends those in video); a picture restored whole
is up to two seconds of the link (:data:`RESTORE_SECONDS`). Before the link's rate is
known, the frames in flight hold :data:`UNKNOWN_LINK_BYTES` so."""

UNKNOWN_LINK_BYTES = 256 * 1024
"""The lossless budget before the link's rate is known (the stream's first frames): a
desktop's whole picture (about 200 KB at 1080p) goes lossless, a moving one (megabytes)
as video, which over a 2 Mbit/s link is the difference between one second and twenty."""

FIRST_PICTURE_BYTES = LOSSLESS_MOST_BYTES
"""The lossless budget of a keyframe the viewers need before the link's rate is known (a
session's first picture): the bench's 4K desktop (700 KB) goes lossless at once. A
picture that compresses worse (its 1080p one with noise added: 2.4 MB) goes as a
video keyframe, and the lossless one comes back once the screen is calm when the
link its acknowledgement measured carries it in :data:`RESTORE_SECONDS`. Over 2 Mbit/s
the lossless picture held the stream 9.5 s, and the keyframe due 10 s later (the link
still unknown, nothing acknowledged) another 9.5."""

BEST_LOSSLESS_RATIO = 40
"""About the best a lossless codec squeezes a desktop (raw_zstd: 39x on a 1080p desktop,
``bench.codecs``): a change whose pixels over this are already over the link's budget
goes to video without a lossless try."""

ESTIMATE_MARGIN = 1.5
"""A change the lossless encoder estimates (``Encoder.estimate``) at over this many times
the link's budget goes to video without a try: a 1080p picture of a video is 6 MB of
compressed pixels, 50 ms to compress only to find that out. (raw_zstd's estimates came
within a tenth of the size for photos and desktops; a real screen may repeat itself
across more than its sample sees, hence the margin.)"""

SCROLL_PAUSE_FRAMES = 2
"""While a picture is swept down the screen in parts (the keyframe due, over a slow link),
a page that scrolls goes as moves and the sweep waits: its next band goes once the page
has not moved for this many frame times."""

KEYFRAME_EARLY_S = 0.1
"""The keyframe due every 10 s is sent this much early: the stream tells it at the top of
its loop, an encoder's own clock (the same 10 s, from the keyframe's encoding) when it
encodes, a thread hop later, and an encoder that tells it first makes it whole, where
the stream sends it in parts over a slow link (a scrolled page went to video so, once
every few runs)."""

_REBUILD_RATIO = 1.5
"""A video encoder is rebuilt for the link when its cap is this far off (either way)."""

Frame = tuple[bytes | None, bool, float, float | None, CodecSpec]
"""What a frame turned into: the message (``None``: the encoder had nothing), whether it
is a keyframe, when it was grabbed, the share of the screen changed, its codec."""


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
                 clock: Callable[[], float] = time.monotonic,
                 load: PictureLoad | None = None,
                 unsent: Callable[[], int] = lambda: 0) -> None:
        self.devices = devices
        self.state = state
        self.flow = FlowWindow(window, unsent=unsent)
        """``unsent``: the bytes queued on the agent's socket (:mod:`.flow`)."""
        self.flow.most_bytes = UNKNOWN_LINK_BYTES  # until the link's rate is known
        self.rate = DeliveryRate()
        self.load = load or PictureLoad(clock)
        """How much of each frame's time its frames take: file data yields when it is
        nearly all (:mod:`.bulk`)."""
        self._send = send
        self._displays = displays
        self._clock = clock
        self._wake = Wakeup()
        self._limiter = anyio.CapacityLimiter(1)
        self.sequence = 0
        self.streaming_display: DisplayDesc | None = None
        self._scrolled = False  # the last frame moved a page while a picture was swept
        self._adopted = False  # the last frame's video picture is the lossless one's base

    def poke(self) -> None:
        """Something changed (viewers, display, quality): re-check at once, even while
        the capture waits for the screen to change."""
        self._wake.set()
        self.devices.capture.interrupt()

    def ack(self, sequence: int) -> None:
        """A viewer drew a frame: room in the flow window (what waits for it is a pause,
        never the capture's wait)."""
        now = self._clock()
        self.flow.ack(sequence)
        self.rate.acked(sequence, now)
        rate = self.rate.bytes_per_second(now)
        self.flow.most_bytes = (UNKNOWN_LINK_BYTES if rate is None
                                else int(rate * FLIGHT_SECONDS))
        self.flow.link_rate = rate
        self._wake.set()

    async def run(self) -> None:
        while True:
            if not self.state.active:
                self.streaming_display = None
                await self._wake.wait(None)
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

    def _encoder_config(self, spec: CodecSpec, display: DisplayDesc,
                        cap_kbps: int | None = None) -> EncoderConfig:
        """What ``spec``'s encoder is built with for ``display``, its bitrate and rate
        buffer held to ``cap_kbps`` when the link's cap is known."""
        config = dataclasses.replace(
            encoder_config(display.width, display.height, self.state.quality),
            extensions=shared_extensions(spec, self.state.viewers.values()))
        if cap_kbps is not None:  # a keyframe takes a short while of the link at most
            bitrate = min(config.bitrate_kbps or cap_kbps, cap_kbps)
            config = dataclasses.replace(
                config, bitrate_kbps=bitrate,
                buffer_seconds=min(1.0, LINK_BUFFER_SECONDS * cap_kbps / bitrate))
        return config

    def _encoder(self, spec: CodecSpec, display: DisplayDesc,
                 config: EncoderConfig | None = None) -> Encoder:
        if spec.encoder_factory is None:
            raise ValueError(f"codec {spec.name} cannot encode")
        if config is None:
            config = self._encoder_config(spec, display)
        log.info("streaming display %d (%dx%d) with %s at %d fps, %d kbps", display.id,
                 display.width, display.height, spec.name, config.fps, config.bitrate_kbps)
        return spec.encoder_factory(config)

    def _video_cap(self) -> int | None:
        """The video bitrate the link allows, in kbps (``None``: not known yet)."""
        rate = self.rate.bytes_per_second(self._clock())
        return None if rate is None else max(1, round(rate * 8 / 1000 * VIDEO_SHARE))

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
        videos: tuple[CodecSpec, Encoder, int | None] | None = None
        switch = ContentSwitch()
        size = MotionSize()
        pacer = Pacer(state.fps())
        self.flow.reset()
        self.rate.reset()
        self._scrolled = False
        sent_in: CodecSpec | None = None  # the codec of the last frame sent
        fresh = False
        key_bytes: int | None = None  # the last whole lossless keyframe's size
        chosen_cap: int | None = None  # the link cap a chosen lossy codec was built for
        chosen_config = self._encoder_config(spec, display)  # and what it was built with
        # A lossy codec the viewers chose goes smaller too while short of CPU in a motion.
        chosen = ChosenSize() if motion is None and not spec.lossless else None
        scaled_by = 1  # the chosen codec's picture is coded at 1/scaled_by of the display's

        def resize(factor: int | None) -> bool:
            """The chosen codec's picture coded at 1/``factor`` of the display's size from
            its next frame, where the viewers scale it up; whether its size changed."""
            nonlocal scaled_by
            if factor is None or factor == scaled_by or not encoder.downscale(factor):
                return False
            scaled_by = factor
            log.info("the chosen %s goes on at 1/%d of the display's size", spec.name, factor)
            return True

        def video() -> tuple[CodecSpec, Encoder]:
            """The motion codec's encoder, made again for the link's rate as it is now when
            the viewers are not watching it (a new one starts with a keyframe); called by
            the loop or its worker, in turn. A motion that begins here begins at full
            size, or smaller just after one that was short of CPU (:class:`.MotionSize`)."""
            nonlocal videos
            assert motion is not None
            cap = self._video_cap()
            if videos is None or (sent_in is not motion and _far_apart(videos[2], cap)):
                if videos is not None:
                    videos[1].close()
                videos = (motion, self._encoder(motion, display,
                                                self._encoder_config(motion, display, cap)),
                          cap)
            if sent_in is not motion:  # a motion begins, at full size unless the last
                factor = size.begin(self._clock())  # one was short of CPU
                if videos[1].downscale(factor) and factor != 1:
                    log.info("short of CPU a moment ago: the motion begins at 1/%d of the "
                             "display's size", factor)
            return videos[0], videos[1]

        state.keyframe_wanted = True
        last_keyframe = self._clock()
        try:
            while state.active and state.generation == generation:
                now = self._clock()
                wait = pacer.wait_time(now)
                if wait > 0:
                    await self._wake.wait(wait)
                    continue
                if not self.flow.can_send(now):
                    self.load.held()
                    deadline = self.flow.next_deadline(now)
                    await self._wake.wait(None if deadline is None else deadline - now)
                    continue
                if chosen is not None and resize(chosen.tick(now)):  # calm: the still
                    fresh = True  # screen at full size, at once
                # A restore in parts (``redrawn``) may give way to motion between parts.
                if motion is not None and (not encoder.pending or encoder.redrawn is not None):
                    wanted = switch.tick(now)
                    if wanted != (spec is motion):
                        if not wanted:
                            spec, encoder = lossless
                        else:
                            spec, encoder = await anyio.to_thread.run_sync(
                                video, limiter=self._limiter)
                        fresh = True  # the other codec starts with a keyframe
                # A keyframe the viewers need, besides the one a codec switch starts with.
                asked = state.take_keyframe()
                due_in = KEYFRAME_INTERVAL_S - KEYFRAME_EARLY_S - (now - last_keyframe)
                due = not asked and due_in <= 0
                needed = asked or due
                # A lossy codec the viewers chose, with no motion codec beside it, follows
                # the link as the motion codec does: built again for it once the link is
                # known, and later when far off, at a keyframe the viewers need anyway.
                # On a link wider than the codec's bitrate that changes nothing.
                if motion is None and not spec.lossless and (chosen_cap is None or needed):
                    cap = self._video_cap()
                    if cap is not None and _far_apart(chosen_cap, cap):
                        config = self._encoder_config(spec, display, cap)
                        if config != chosen_config:
                            encoder.close()
                            encoder = await anyio.to_thread.run_sync(
                                self._encoder, spec, display, config, limiter=self._limiter)
                            lossless, fresh = (spec, encoder), True
                            smaller, scaled_by = scaled_by, 1  # built at full size
                            resize(smaller)
                        chosen_cap, chosen_config = cap, config
                # The keyframe due, of the picture the viewers have (no grab), while that
                # picture is this encoder's and the link carries it soon enough.
                repeat = due and not fresh and sent_in is spec and spec.lossless
                keyframe, fresh = needed or fresh, False
                budget = None  # the most bytes a lossless frame may take: none in video
                part = None  # the lossless picture restored after motion goes in parts
                budgeted = motion is not None and spec is not motion  # lossless, video at hand
                rate = self.rate.bytes_per_second(now) if budgeted else None
                if budgeted:
                    seconds = RESTORE_SECONDS if keyframe else LOSSLESS_SECONDS
                    budget = (int(rate * seconds) if rate is not None
                              else FIRST_PICTURE_BYTES if needed else UNKNOWN_LINK_BYTES)
                    if not keyframe:
                        budget = min(budget, LOSSLESS_MOST_BYTES)
                    if keyframe and not needed and sent_in is motion:
                        part = min(LOSSLESS_MOST_BYTES // 2, UNKNOWN_LINK_BYTES // 4
                                   if rate is None else int(rate * REDRAW_PART_SECONDS))
                # The keyframe due every 10 s, over a link that takes a while to carry it:
                # in parts, with what changes meanwhile between them (the viewers in step
                # keep their picture below a part, Encoder.keyframe_in_parts).
                link = self.rate.bytes_per_second(now) if due and spec.lossless else None
                key_part = None if link is None else int(link * KEY_PART_SHARE / state.fps())
                repeat = repeat and (link is None or (key_bytes or 0) <= link * REPEAT_SECONDS)
                self.sequence += 1
                # wait for a change no longer than until the keyframe or the calm is due
                calm = (switch.calm_left(now) if chosen is None
                        else chosen.calm_left(now) if scaled_by != 1 else None)
                wait = min(_CHANGE_WAIT, due_in, _CHANGE_WAIT if calm is None else calm)
                if self._scrolled:  # a sweep's band goes once the page stops a while
                    wait = min(wait, SCROLL_PAUSE_FRAMES / state.fps())
                motion_from = (switch.motion_from() if motion is not None and spec is not motion
                               and not needed
                               and (not encoder.pending or encoder.redrawn is not None)
                               else None)
                here = False  # whether this frame is made on the loop
                if encoder.sharpening:  # a frame time without a change: the same picture
                    wait = min(wait, 1 / state.fps())  # again, sharper
                fd = self.devices.capture.change_fd()
                if fd is not None and not keyframe and not encoder.pending:
                    if not await self._changed(fd, wait) and not encoder.sharpening:
                        self.sequence -= 1
                        continue
                    wait = 0.0
                    pixels = self.devices.capture.pending_pixels()
                    here = spec.lossless and pixels is not None and pixels <= INLINE_PIXELS
                args = (spec, encoder, display, keyframe, self.sequence, budget, video,
                        needed or sent_in is not motion, wait, motion_from, part, key_part,
                        repeat)
                swept = encoder.redrawn  # how far a picture in parts had got
                made = (self._next_frame(*args) if here else
                        await anyio.to_thread.run_sync(self._next_frame, *args,
                                                       limiter=self._limiter))
                if made is None:
                    self.sequence -= 1
                    continue
                data, key, started, share, used = made
                # A part of a picture in parts is a whole frame to the pacer, whatever
                # changed with it: the pacer's frame rate is what paces the parts.
                part_of_picture = (swept is not None and used is spec
                                   and encoder.redrawn != swept)
                if used is motion and data is not None:  # short of CPU: a smaller picture
                    done = self._clock()
                    factor = size.made(done - started, 1 / state.fps(), done)
                    if (factor is not None and videos is not None
                            and videos[1].downscale(factor)):
                        log.info("short of CPU: the motion goes on at 1/%d of the display's "
                                 "size", factor)
                elif chosen is not None and data is not None:
                    done = self._clock()
                    resize(chosen.made(share, done - started, 1 / state.fps(), done))
                if used is not spec and not self._adopted:  # motion, or too big for the
                    assert videos is not None  # link without video
                    spec, encoder = videos[0], videos[1]
                    if _begins_motion(share, motion_from):
                        switch.observe(share, started)
                    else:
                        switch.lossless_too_costly(started)
                elif motion is not None and used is spec:
                    switch.observe(share, started)
                if data is None:
                    self.sequence -= 1
                    continue
                if key:
                    last_keyframe = started
                    if used is spec and spec.lossless and not encoder.pending:
                        key_bytes = len(data)
                sent_in = used
                # Timed from the hand-over: a large frame's send returns only once most of
                # it is on its way, and timed from then it would look that much faster.
                self.rate.sent(self.sequence, len(data), self._clock())
                await self._send(data)
                sent_at = self._clock()
                _step_aside()
                self.load.frame(sent_at - started, 1 / state.fps())
                self.flow.sent(self.sequence, len(data), sent_at)
                pacer.sent(started, small=not key and spec.lossless and share is not None
                           and share < SMALL_SHARE and not part_of_picture)
        finally:
            lossless[1].close()
            if videos is not None:
                videos[1].close()

    async def _changed(self, fd: int, seconds: float) -> bool:
        """Wait on the loop, watching the capture's ``fd``, for a change, up to ``seconds``
        or until poked; whether a change is pending."""
        capture = self.devices.capture
        if capture.wait_for_change(0):
            return True
        loop = asyncio.get_running_loop()
        loop.add_reader(fd, self._wake.set)
        try:
            await self._wake.wait(seconds)
        finally:
            loop.remove_reader(fd)
        return capture.wait_for_change(0)

    def _next_frame(self, spec: CodecSpec, encoder: Encoder, display: DisplayDesc,
                    keyframe: bool, sequence: int, budget: int | None = None,
                    video: Callable[[], tuple[CodecSpec, Encoder]] | None = None,
                    video_keyframe: bool = True, wait: float = _CHANGE_WAIT,
                    motion_from: float | None = None,
                    part: int | None = None, key_part: int | None = None,
                    repeat: bool = False) -> Frame | None:
        """In a worker thread (on the loop for a small change, waited for there): wait for
        a change (unless a keyframe is due), grab, encode and frame it; ``None`` when
        nothing changed within ``wait`` seconds, no bytes when the encoder had nothing to
        send. Also the share of the screen the capture says changed. At most one thread
        hop per frame.

        A frame over ``budget`` bytes (or one in parts, or one whose change is too large
        to come under it) goes out of ``video()``'s encoder instead, and is said to be of
        its codec: as a keyframe if ``video_keyframe`` (the viewers need one, or the last
        frame sent was not video, so they lack that encoder's picture). So does a frame
        whose change reaches ``motion_from``: it begins a motion, and its lossless frame
        (a whole screen of moving pixels: tens of milliseconds to encode and to decode,
        megabytes to send) would only hold the motion up.

        ``part``: the keyframe restores the lossless picture after motion. When it is
        within ``budget`` (so the link carries the whole picture in time) and the encoder
        can redraw over the video picture, the picture goes in parts of about ``part``
        bytes instead, the first one now. The parts after it are not held to ``budget``
        (the whole picture was); only a motion cuts them short.

        ``key_part``: the keyframe goes in parts of about that many bytes, if the encoder
        can (:meth:`Encoder.keyframe_in_parts`); they are a redraw, as above.

        ``repeat``: the keyframe may be the picture the viewers have, with no grab
        (:meth:`Encoder.repeat_keyframe`): a viewer in step skips it, and the screen's
        change meanwhile goes in the next frame.

        ``part`` set and the picture over ``budget``: the viewers keep the video frame made
        instead, and the lossless encoder goes on from it (:meth:`Encoder.adopt`, which
        :attr:`_adopted` tells the loop), so the stream stays lossless for what changes."""
        self._adopted = False
        if repeat:
            started = self._clock()
            again = encoder.repeat_keyframe()
            if again is not None:
                data = wire_frame(again, spec, timestamp=time.time_ns() // 1000,
                                  display_id=display.id, sequence=sequence)
                return data, True, started, None, spec
        # A frame too big for one message goes in parts: send the rest before waiting.
        # A sweep that a scrolling page holds back waits too (its band would only hold the
        # page up, and the next move push the sweep back again), and its band goes if
        # nothing changed meanwhile.
        waits = not keyframe and (not encoder.pending or self._scrolled)
        if (waits and not self.devices.capture.wait_for_change(wait) and not encoder.pending
                and not encoder.sharpening):
            return None
        started = self._clock()
        timestamp = time.time_ns() // 1000
        redrawing = encoder.redrawn is not None and not keyframe  # a restore's next part
        image, dirty = self.devices.capture.grab(display.id)
        # A scroll the encoder sends as a move is a small change, not the start of motion.
        moves = None if keyframe else encoder.find_moves(image, dirty)
        rects = dirty if moves is None else moves.rest  # the pixels it would send
        share = changed_share(rects, display.width, display.height)
        changed = (1.0 if keyframe or share is None else share) * display.width * display.height
        moving = video is not None and _begins_motion(share, motion_from)
        # A keyframe in parts is its first part to the link (the whole picture is not).
        in_parts = (keyframe and key_part is not None and not moving
                    and encoder.keyframe_in_parts(key_part))
        hopeless = (video is not None and budget is not None and not moving and not in_parts
                    and _sure_over(encoder, image, None if keyframe else rects, display,
                                   changed, budget))
        frame = (None if moving or hopeless
                 else encoder.encode(image, keyframe=keyframe, dirty=dirty) if moves is None
                 else encoder.encode(image, keyframe=keyframe, dirty=dirty, moves=moves))
        too_big = budget is not None and (hopeless or (
            frame is not None and not redrawing
            and (len(frame.data) > budget or (encoder.pending and encoder.redrawn is None))))
        if video is not None and (moving or too_big):
            log.debug("a %s frame begins a motion or is over the link's %s bytes: video "
                      "instead", spec.name, budget)
            lossless = encoder
            spec, encoder = video()
            frame = encoder.encode(image, keyframe=video_keyframe)
            # The picture restored after motion is over the link's budget: the viewers
            # keep the video picture, and what changes on it from here goes lossless over
            # it (Encoder.adopt), so a typed word still goes small and exact.
            self._adopted = part is not None and not moving and lossless.adopt(image)
        elif (part is not None and frame is not None and frame.keyframe
              and encoder.redraw(part)):
            log.debug("the lossless picture (%d bytes) goes back in parts of %d bytes",
                      len(frame.data), part)
            frame = encoder.encode(image, dirty=dirty)
        self._scrolled = (frame is not None and bool(frame.copies)
                          and encoder.redrawn is not None)
        if frame is None:
            return None, False, started, share, spec
        data = wire_frame(frame, spec, timestamp=timestamp, display_id=display.id,
                          sequence=sequence)
        return data, frame.keyframe, started, share, spec


def _sure_over(encoder: Encoder, image: Any, rects: Sequence[Rect] | None,
               display: DisplayDesc, changed: float, budget: int) -> bool:
    """Whether a lossless frame of ``changed`` pixels (``rects``, or the whole display) is
    sure to be over ``budget`` bytes, told without encoding it: even at the best ratio a
    lossless codec gets, or by the encoder's estimate of it (with a margin)."""
    pixel_bytes = changed * 4
    if pixel_bytes / BEST_LOSSLESS_RATIO > budget:
        return True
    if pixel_bytes <= budget:
        return False
    whole = [Rect(0, 0, display.width, display.height)]
    estimate = encoder.estimate(image, whole if rects is None else rects)
    return estimate is not None and estimate > ESTIMATE_MARGIN * budget


def _begins_motion(share: float | None, motion_from: float | None) -> bool:
    """Whether a frame that changed ``share`` of the screen begins a motion
    (``ContentSwitch.motion_from``), and so goes out in video."""
    return motion_from is not None and share is not None and share >= motion_from


def _far_apart(built: int | None, now: int | None) -> bool:
    """Whether a video encoder built for a cap of ``built`` kbps should be rebuilt for
    ``now`` (``None``: no cap)."""
    if built is None or now is None:
        return built != now
    return max(built, now) > _REBUILD_RATIO * min(built, now)
