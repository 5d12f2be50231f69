"""The Python viewer: connect with a viewer token, receive and decode frames, send input.

A reader task decodes video as it arrives (in a worker thread), acknowledges
every frame it decoded (``VideoAck``, which drives the agent's flow control)
and keeps only the newest image; every other message waits in a queue for
:meth:`ViewerClient.receive`. Heartbeats go out on their own.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import quote

import anyio
import numpy as np
import numpy.typing as npt
from anyio.abc import TaskGroup
from google.protobuf.message import Message

from remote_core.codecs import FrameDecoder, decodable, usable_codecs
from remote_core.errors import SessionRefused
from remote_core.plugins import Plugins, get_plugin_manager
from remote_core.protocol import Connection, Dropped, Inbound, RemoteProtocolError, Role, pb
from remote_core.tlsclient import client_context
from remote_core.types import CodecSpec
from remote_core.video import from_wire
from remote_core.wsclient import ConnectionClosed, WebSocketClient, connect, ws_url

from .settings import ViewerSettings

__all__ = ["Frame", "ViewerClient", "beside", "join", "open_viewer", "wanted_quality"]

log = logging.getLogger(__name__)

INLINE_DECODE_BYTES = 64 * 1024
"""Frames up to this size are decoded on the event loop; larger ones in a worker thread."""


@dataclass(frozen=True)
class Frame:
    """One decoded frame: the full image (a ``(height, width, 4)`` BGRA numpy array) and
    when it arrived and was decoded; ``moves``: how many moves of the picture it carried
    (a scroll, ``RawFrame.copies``)."""

    image: npt.NDArray[np.uint8]
    sequence: int
    timestamp_us: int
    display_id: int
    keyframe: bool
    codec: str
    size: int
    received_ns: int
    decoded_ns: int
    moves: int = 0


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
        self.latest = Frame(image=np.asarray(image), sequence=video.sequence,
                            timestamp_us=video.timestamp, display_id=video.display_id,
                            keyframe=frame.keyframe, codec=codec, size=size,
                            received_ns=received, decoded_ns=time.perf_counter_ns(),
                            moves=len(frame.copies))
        self._frame_ready.set()
        if self._ack:
            # The server's close may already be in, behind what it said last (a Disconnect):
            # an ack it will not read is no reason to stop reading those.
            with contextlib.suppress(ConnectionClosed):
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


def wanted_quality(specs: Sequence[CodecSpec], codec: int | str = pb.CODEC_AUTO,
                   quality: pb.QualitySettings | None = None) -> pb.QualitySettings | None:
    """The ``QualitySettings`` a viewer sends for the codec and quality it wants, or ``None``
    when it leaves both to the agent.

    :param codec: a ``CodecPreference`` value, or a codec's registered or wire name.
    :raises ValueError: this viewer cannot decode that codec.
    """
    if codec in (pb.CODEC_AUTO, "", "auto") and quality is None:
        return None
    settings = pb.QualitySettings()
    if quality is not None:
        settings.CopyFrom(quality)
    if codec in (pb.CODEC_AUTO, "", "auto"):
        return settings
    usable = usable_codecs(specs, decode=True)
    spec = next((s for s in usable if codec in (s.name, s.wire_name)
                 or (isinstance(codec, int) and codec == s.preference)), None)
    if spec is None:
        raise ValueError(f"this viewer cannot decode codec {codec!r}; it decodes "
                         f"{', '.join(decodable(specs)) or 'nothing'}")
    settings.codec_name = spec.wire_name
    if spec.preference:
        settings.codec = spec.preference  # type: ignore[assignment]  # an enum value
    return settings


def _leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The exception that ended a task group, not the group: the first that is not a
    cancellation, so ``except TimeoutError`` around :func:`open_viewer` works."""
    leaves: list[BaseException] = []

    def walk(error: BaseException) -> None:
        if isinstance(error, BaseExceptionGroup):
            for inner in error.exceptions:
                walk(inner)
        else:
            leaves.append(error)

    walk(group)
    cancelled = anyio.get_cancelled_exc_class()
    return next((e for e in leaves if not isinstance(e, cancelled)), leaves[0])


@asynccontextmanager
async def beside(*tasks: Callable[[], Coroutine[Any, Any, object]]) -> AsyncIterator[None]:
    """Run ``tasks`` (a client's reader, its heartbeats) beside the block, cancelled when
    it ends; what ended them or the block is raised as itself, never an ExceptionGroup."""
    group: TaskGroup
    try:
        async with anyio.create_task_group() as group:
            for task in tasks:
                group.start_soon(task)
            try:
                yield
            finally:
                group.cancel_scope.cancel()
    except BaseExceptionGroup as failed:
        raise _leaf(failed) from failed


async def join(server: str, request: pb.SessionRequest, ca_bundle: str, *,
               node: str | None = None) -> tuple[WebSocketClient, Connection, pb.SessionResponse]:
    """Open ``/ws/viewer`` and send ``request``: the socket, its protocol state and the
    server's acceptance (any session type's; the caller closes the socket). ``node``: the
    cluster node the viewer token's answer named, for a balancer that routes by it.

    :raises SessionRefused: the server said no.
    """
    url = ws_url(server, "/ws/viewer") + (f"?node={quote(node)}" if node else "")
    ws = await connect(url, ssl_context=client_context(ca_bundle)
                       if url.startswith("wss:") else None)
    try:
        conn = Connection(Role.VIEWER, Role.SERVER)
        await ws.send(conn.send("session_request", request))
        with anyio.fail_after(15):
            event = conn.receive_data(await ws.receive())
        if not isinstance(event, Inbound) or event.kind != "session_response":
            raise SessionRefused(f"the server answered with {event.kind}, not a session_response")
        response = event.parse(pb.SessionResponse)
        if not response.success:
            raise SessionRefused(response.error)
        conn.authenticated()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await ws.close()
        raise
    return ws, conn, response


@asynccontextmanager
async def open_viewer(server: str, token: str, *, view_only: bool = False,
                      codec: int | str = pb.CODEC_AUTO,
                      quality: pb.QualitySettings | None = None,
                      ack: bool = True, plugins: Plugins | None = None,
                      heartbeat: float = 15.0,
                      ca_bundle: str | None = None,
                      node: str | None = None) -> AsyncIterator[ViewerClient]:
    """Connect to ``/ws/viewer`` with a viewer token; the client lives inside the block.

    The viewer lists the codecs it decodes (``SessionRequest.codecs``), so it is only
    ever sent frames it can draw. Whatever fails inside or around the block is raised
    as itself, never wrapped in an ``ExceptionGroup``.

    :param codec: the codec wanted, as a ``CodecPreference`` value or a codec's name
        (``"h264"``, ``"png"``); sent as ``QualitySettings`` with ``quality``. The agent
        streams in it while every viewer of the session decodes it.
    :param ca_bundle: PEM authorities trusted for ``wss://`` besides the system's
        (default: the ``REMOTE_VIEWER_CA_BUNDLE`` setting).
    :param node: in a cluster, the node the viewer token's answer named: a balancer that
        routes by it (deploy/haproxy) sends the socket straight there.
    :raises ValueError: this viewer cannot decode ``codec``, or nothing at all.
    """
    if plugins is None or ca_bundle is None:
        loaded = ViewerSettings.load()
        plugins = plugins or get_plugin_manager(loaded)
        ca_bundle = loaded.ca_bundle if ca_bundle is None else ca_bundle
    specs = plugins.codecs()
    codecs = decodable(specs)
    if not codecs:
        raise ValueError("no usable video decoder is installed (is codec_raw_zstd loaded?)")
    settings = wanted_quality(specs, codec, quality)
    ws, conn, response = await join(server, pb.SessionRequest(
        session_token=token, codecs=codecs,
        session_type=pb.VIEW_ONLY if view_only else pb.SCREEN_CONTROL), ca_bundle, node=node)
    try:
        client = ViewerClient(ws, conn, response, plugins, ack=ack)
        if settings is not None:
            await client.send("quality_settings", settings)
        async with beside(client._read, partial(client._heartbeats, heartbeat)):
            yield client
    finally:
        with anyio.CancelScope(shield=True):
            await ws.close()
