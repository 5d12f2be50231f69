"""The Python viewer: connect with a viewer token, receive and decode frames, send input.

A reader task decodes video as it arrives (in a worker thread), acknowledges
every frame it decoded (``VideoAck``, which drives the agent's flow control)
and keeps only the newest image; every other message waits in a queue for
:meth:`ViewerClient.receive`. Heartbeats go out on their own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskGroup
from google.protobuf.message import Message

from remote_core.codecs import FrameDecoder, viewer_preference
from remote_core.errors import SessionRefused
from remote_core.plugins import Plugins, get_plugin_manager
from remote_core.protocol import Connection, Dropped, Inbound, RemoteProtocolError, Role, pb
from remote_core.settings import load_settings
from remote_core.video import from_wire
from remote_core.wsclient import ConnectionClosed, WebSocketClient, connect, ws_url

__all__ = ["Frame", "ViewerClient", "open_viewer"]

log = logging.getLogger(__name__)

INLINE_DECODE_BYTES = 64 * 1024
"""Frames up to this size are decoded on the event loop; larger ones in a worker thread."""


@dataclass(frozen=True)
class Frame:
    """One decoded frame: the full image and when it arrived and was decoded."""

    image: Any
    sequence: int
    timestamp_us: int
    display_id: int
    keyframe: bool
    codec: str
    size: int
    received_ns: int
    decoded_ns: int


class ViewerClient:
    """One viewer connection; build it with :func:`open_viewer`."""

    def __init__(self, ws: WebSocketClient, conn: Connection, response: pb.SessionResponse,
                 plugins: Plugins, *, ack: bool = True) -> None:
        self._ws = ws
        self._conn = conn
        self.session_id: str = response.session_id
        self.display_info: pb.DisplayInfo | None = (
            response.display_info if response.HasField("display_info") else None)
        self._decoder = FrameDecoder(plugins.codecs())
        self._ack = ack
        self._frame_ready = anyio.Event()
        self.latest: Frame | None = None
        self.frames_received = 0
        self.bytes_received = 0
        self._send_stream, self._messages = anyio.create_memory_object_stream[
            tuple[str, Message]](1000)
        self.closed: ConnectionClosed | None = None

    async def send(self, kind: str, payload: Message) -> None:
        await self._ws.send(self._conn.send(kind, payload))

    async def receive(self, *kinds: str, within: float = 10.0) -> tuple[str, Message]:
        """The next non-video message (of one of ``kinds``, if given; others are skipped)."""
        with anyio.fail_after(within):
            async for kind, payload in self._messages:
                if not kinds or kind in kinds:
                    return kind, payload
        raise ConnectionClosed(self.closed.code if self.closed else 1006, "viewer closed")

    async def next_frame(self, within: float = 10.0, *, after: int = 0) -> Frame:
        """The newest decoded frame whose sequence is above ``after``."""
        with anyio.fail_after(within):
            while self.latest is None or self.latest.sequence <= after:
                if self.closed is not None:
                    raise self.closed
                if self._frame_ready.is_set():
                    self._frame_ready = anyio.Event()
                await self._frame_ready.wait()
            return self.latest

    async def wait_for_image(self, check: Callable[[Any], bool], within: float = 10.0) -> Frame:
        """The first frame whose image satisfies ``check(image)``."""
        with anyio.fail_after(within):
            after = 0
            while True:
                frame = await self.next_frame(within, after=after)
                if check(frame.image):
                    return frame
                after = frame.sequence

    # -- background tasks ------------------------------------------------------------------
    async def _read(self) -> None:
        try:
            while True:
                data = await self._ws.receive()
                received = time.perf_counter_ns()
                event = self._conn.receive_data(data)
                if isinstance(event, Dropped):
                    continue
                assert isinstance(event, Inbound)
                if event.kind == "video_frame":
                    self.bytes_received += len(data)
                    try:
                        frame = event.parse(pb.VideoFrame)
                    except RemoteProtocolError as exc:
                        # The relay forwards video unparsed: a frame that does not parse is
                        # lost, like one that does not decode, never the end of the viewer.
                        log.warning("unparsable video frame dropped: %s", exc.reason)
                        continue
                    await self._video(frame, received, len(data))
                elif event.kind == "display_info":
                    self.display_info = event.parse(pb.DisplayInfo)
                    await self._send_stream.send((event.kind, self.display_info))
                elif event.kind != "heartbeat_ack":
                    await self._send_stream.send((event.kind, event.payload()))
        except ConnectionClosed as exc:
            self.closed = exc
        finally:
            self._frame_ready.set()
            self._send_stream.close()

    async def _video(self, video: pb.VideoFrame, received: int, size: int) -> None:
        """Unwrap (the one place the viewer reads a codec's frame out of the wire), decode
        and acknowledge one ``VideoFrame``; one that does not decode is lost, no more."""
        try:
            codec, frame = from_wire(video)
            if size <= INLINE_DECODE_BYTES:  # a thread hop costs more than the decode
                image = self._decoder.decode(codec, frame)
            else:
                image = await anyio.to_thread.run_sync(self._decoder.decode, codec, frame)
        except ValueError as exc:
            log.warning("undecodable frame %d: %s", video.sequence, exc)
            return
        if image is None:
            return
        self.frames_received += 1
        self.latest = Frame(image=image, sequence=video.sequence,
                            timestamp_us=video.timestamp, display_id=video.display_id,
                            keyframe=frame.keyframe, codec=codec, size=size,
                            received_ns=received, decoded_ns=time.perf_counter_ns())
        self._frame_ready.set()
        if self._ack:
            await self.send("video_ack", pb.VideoAck(sequence=video.sequence,
                                                     timestamp=video.timestamp))

    async def _heartbeats(self, interval: float) -> None:
        while True:
            await anyio.sleep(interval)
            await self.send("heartbeat", pb.Heartbeat(timestamp=int(time.time() * 1000)))

    # -- input helpers -----------------------------------------------------------------------
    async def move(self, x: int, y: int) -> None:
        await self.send("mouse_event", pb.MouseEvent(x=x, y=y, event_type=pb.MOUSE_MOVE))

    async def key(self, vk: int, down: bool) -> None:
        await self.send("key_event", pb.KeyEvent(down=down, key_type=pb.KEY_VK, vk_code=vk))


@asynccontextmanager
async def open_viewer(server: str, token: str, *, view_only: bool = False,
                      codec: int = pb.CODEC_AUTO, quality: pb.QualitySettings | None = None,
                      ack: bool = True, plugins: Plugins | None = None,
                      heartbeat: float = 15.0) -> AsyncIterator[ViewerClient]:
    """Connect to ``/ws/viewer`` with a viewer token; the client lives inside the block.

    :param codec: the ``CodecPreference`` wanted; sent as ``QualitySettings`` when it
        is not ``CODEC_AUTO`` or when ``quality`` is given.
    """
    plugins = plugins or get_plugin_manager(load_settings(environ={}))
    ws = await connect(ws_url(server, "/ws/viewer"))
    try:
        conn = Connection(Role.VIEWER, Role.SERVER)
        await ws.send(conn.send("session_request", pb.SessionRequest(
            session_token=token,
            session_type=pb.VIEW_ONLY if view_only else pb.SCREEN_CONTROL)))
        with anyio.fail_after(15):
            event = conn.receive_data(await ws.receive())
        assert isinstance(event, Inbound)
        response = event.parse(pb.SessionResponse)
        if not response.success:
            raise SessionRefused(response.error)
        conn.authenticated()
        client = ViewerClient(ws, conn, response, plugins, ack=ack)
        preference = viewer_preference(plugins.codecs(), codec)
        if quality is not None or preference != pb.CODEC_AUTO:
            settings = pb.QualitySettings()
            if quality is not None:
                settings.CopyFrom(quality)
            settings.codec = preference  # type: ignore[assignment]  # an enum value
            await client.send("quality_settings", settings)
        group: TaskGroup
        async with anyio.create_task_group() as group:
            group.start_soon(client._read)
            group.start_soon(client._heartbeats, heartbeat)
            try:
                yield client
            finally:
                group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await ws.close()
