"""Registration dataclasses returned by hooks, and the value types the contracts share.

Every registration has a unique lower-case ``name``; the plugin manager rejects
duplicates and selects backends by configured name, never by load order.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from remote_core.errors import SessionRefused

if TYPE_CHECKING:
    from .interfaces import (
        Authenticator,
        CaptureSource,
        ConsentPrompt,
        Decoder,
        Encoder,
        InputSink,
        RecordingStore,
        Service,
        Store,
        StoreAdmin,
    )

__all__ = [
    "AgentCredential",
    "AgentIdentity",
    "AuthContext",
    "AuthMethod",
    "AuthRejected",
    "CaptureSpec",
    "CodecSpec",
    "ConsentAsk",
    "ConsentDecision",
    "ConsentPromptSpec",
    "CopyRect",
    "DisplayDesc",
    "EncodedFrame",
    "EncoderConfig",
    "InputSpec",
    "Moves",
    "RecordingStoreSpec",
    "Rect",
    "Registration",
    "ServiceSpec",
    "StoreSpec",
    "WebAppSpec",
]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Registration:
    """Base of every registration: a unique lower-case ``name``."""

    name: str

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(
                f"registration name {self.name!r} must be lower-case letters, digits and '_'"
            )


# -- value types -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rect:
    """A rectangle in display pixels, origin top-left."""

    x: int
    y: int
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class CopyRect:
    """A move of pixels the viewers already have: the ``width`` x ``height`` rectangle at
    ``(src_x, src_y)`` is copied to ``(x, y)`` (a scrolled page, as VNC's CopyRect)."""

    x: int
    y: int
    width: int
    height: int
    src_x: int
    src_y: int

    @property
    def source(self) -> Rect:
        return Rect(self.src_x, self.src_y, self.width, self.height)

    @property
    def target(self) -> Rect:
        return Rect(self.x, self.y, self.width, self.height)


@dataclass(frozen=True, slots=True)
class Moves:
    """What an encoder found of a change that it can send as moves (:meth:`Encoder.find_moves
    <remote_core.interfaces.Encoder.find_moves>`): the copies (none, when it only found
    what changed), and the rectangles whose pixels are still to be sent once they are
    done."""

    copies: tuple[CopyRect, ...]
    rest: tuple[Rect, ...]


@dataclass(frozen=True, slots=True)
class DisplayDesc:
    """One display as the agent reports it (ids 1-based, CONTRACT 1)."""

    id: int
    name: str
    x: int
    y: int
    width: int
    height: int
    is_primary: bool = False


@dataclass(frozen=True, slots=True)
class EncodedFrame:
    """One frame as a codec makes and takes it, with no wire format.

    An encoder returns it and a decoder is given it; the agent puts it into the
    wire's ``VideoFrame`` and a viewer takes it out in one place
    (:mod:`remote_core.video`), so a codec plugin never builds a protobuf message.
    A field the codec's slot cannot carry must keep its default.

    :param data: the codec's bytes for this frame.
    :param keyframe: self-contained: a viewer can start drawing here.
    :param width: the display's size in pixels, for slots that carry it (``raw`` and
        plugin frames; a VP9 keyframe coded smaller than the display, for viewers that
        list ``vp9_scaled``); 0 where the bitstream states it (VP9, H.264, H.265).
    :param height: likewise.
    :param rects: for an incremental frame of a codec that sends only what changed, the
        rectangles ``data`` covers, in order (``raw`` and plugin frames); empty otherwise.
    :param compressed: ``raw`` slot only: ``data`` is one Zstandard frame (CONTRACT 1).
    :param copies: ``raw`` slot only, incremental frames: moves done before ``rects`` are
        drawn (a scroll), sent only to viewers that decode the ``raw_copy`` extension.
    :param rows: ``raw`` slot only, keyframes: a keyframe part whose first ``rows`` rows are
        the screen and the rest the placeholder; a viewer that shows a picture of its size
        keeps that below them (sent only to viewers that decode ``raw_keep``). 0: all of it.
    :param repeat: ``raw`` slot only, keyframes: exactly the picture the frame before it
        left (:meth:`Encoder.repeat_keyframe`), which a viewer in step may skip.
    :param pts: presentation time in microseconds from the stream's start (VP9, H.264,
        H.265 and plugin frames).
    :param dts: decode time, likewise (VP9, H.264, H.265); equal to ``pts`` when the
        codec never reorders frames.
    """

    data: bytes
    keyframe: bool = False
    width: int = 0
    height: int = 0
    rects: tuple[Rect, ...] = ()
    compressed: bool = False
    pts: int = 0
    dts: int = 0
    copies: tuple[CopyRect, ...] = ()
    rows: int = 0
    repeat: bool = False


@dataclass(frozen=True, slots=True)
class EncoderConfig:
    """What an encoder is built for. ``bitrate_kbps`` 0 lets the codec choose."""

    width: int
    height: int
    fps: int = 30
    bitrate_kbps: int = 0
    preset: int = 0  # QualityPreset value
    extensions: frozenset[str] = frozenset()
    """The codec's :attr:`CodecSpec.extensions` every viewer decodes: the encoder may use
    these, and no others."""
    buffer_seconds: float = 1.0
    """Seconds of ``bitrate_kbps`` the rate control's buffer holds: the most a single frame
    (a keyframe) may take, in the link time of that bitrate. Shorter than a second over a
    slow link, so a keyframe does not hold up what follows it; the encoder then sharpens
    the coarser keyframe with the frames after it (:attr:`Encoder.pending`)."""

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise ValueError(f"frame size must be positive, got {self.width}x{self.height}")
        if not 1 <= self.fps <= 60:
            raise ValueError(f"fps must be 1-60 (SPEC 8), got {self.fps}")
        if self.bitrate_kbps < 0:
            raise ValueError(f"bitrate_kbps must be >= 0, got {self.bitrate_kbps}")
        if not self.buffer_seconds > 0:
            raise ValueError(f"buffer_seconds must be > 0, got {self.buffer_seconds}")


@dataclass(frozen=True, slots=True)
class AgentCredential:
    """What an agent presented in its ``SessionRequest``, plus where it came from."""

    token: str
    agent_id: str
    machine_uid: str | None = None
    client_version: str = ""
    client_ip: str | None = None


@dataclass(frozen=True, slots=True)
class AgentIdentity:
    """Who an authenticator says the agent is.

    ``authoritative`` (keyed agents): ``agent_id`` is the key's machine, and the
    claimed ``machine_uid`` is dropped (SPEC 5.2). ``attended`` sessions need
    consent (SPEC 3.1).
    """

    method: str
    agent_id: str
    machine_uid: str | None = None
    authoritative: bool = False
    attended: bool = False
    persistent: bool = True
    key_id: str | None = None
    support_code: str | None = None
    technician_name: str = ""
    technician_id: str | None = None


class AuthRejected(SessionRefused):
    """The credential belongs to this method but is refused; ``str()`` is shown to the agent."""


class ConsentDecision(enum.Enum):
    """A consent policy's verdict before (or instead of) asking the end user."""

    APPROVE = "approve"
    DENY = "deny"
    ASK = "ask"


ENDED_BY_END_USER = "ended by the end user"
"""The ``Disconnect`` reason of an agent whose user pressed End session; the server
records it as the session's end reason as it is."""


@dataclass(frozen=True, slots=True)
class ConsentAsk:
    """A technician asks to view (``control=False``) or control a session, to open a
    BACKSTAGE terminal on the machine (``backstage=True``), or to move files to and from
    it (``file_transfer=True``): what the server's consent policy decides on and what the
    agent's prompt shows the end user.

    ``agent_id``, ``method`` (the auth method that opened the session) and
    ``attended`` are the server's to fill; ``timeout_secs``, ``connected`` (the
    technicians already connected, ``"techa (view and control)"``), ``organization``
    and ``recorded`` the agent's, from the server's ``ConsentRequest``.
    """

    session_id: str
    technician_name: str
    control: bool
    timeout_secs: int = 60
    connected: tuple[str, ...] = ()
    agent_id: str = ""
    method: str = ""
    attended: bool = True
    organization: str = ""
    recorded: bool = False
    backstage: bool = False
    file_transfer: bool = False


@dataclass(frozen=True)
class AuthContext:
    """What an authenticator factory gets: its plugin's own options (``[plugins.NAME]``,
    never the server's secrets) and the store."""

    options: Mapping[str, Any]
    store: Store


# -- registrations --------------------------------------------------------------


@dataclass(frozen=True)
class CodecSpec(Registration):
    """A video codec: how it is built, which frames it makes, when it is chosen.

    The full rules, with an example, are in :func:`remote_core.hookspecs.register_codecs`.

    :param frame_field: the ``VideoFrame.encoding`` slot its frames go in. A codec the
        wire defines a slot for keeps it (``raw``, ``vp9``, ``h264``, ``h265``: the slot
        fixes the format, CONTRACT 1); leave it empty for any other codec, whose frames
        travel as plugin frames named by :attr:`name`.
    :param preference: the ``CodecPreference`` value it answers to (``CODEC_RAW`` = 1 ...),
        or 0 for none: a plugin codec is asked for by name.
    :param auto_rank: higher is preferred when the viewers leave the choice to the agent
        (``CODEC_AUTO``); plugin frames are chosen that way only when no codec with a slot
        of its own suits every viewer.
    :param lossless: its frames decode to exactly the captured pixels. Left to itself
        (``CODEC_AUTO``), the agent streams small changes in a lossless codec and switches
        to a lossy one while the screen moves (``remote_agent.adaptive``).
    :param available: cheap check that the native library is usable here.
    :param extensions: optional features of its frames that its decoder understands, by
        wire name (``raw_copy``: raw frames that move pixels). A viewer lists them beside
        the codec in ``SessionRequest.codecs``, and the encoder is built with those every
        viewer lists (:attr:`EncoderConfig.extensions`), so older viewers never get them.
    :param browser_decoder: an ES module file (shipped in the plugin's package) that
        decodes this codec's frames in the browser viewer; the server serves it at
        ``/codecs/<wire_name>.js``, from its own origin, so the console's CSP stays
        ``script-src 'self'``.
    """

    preference: int = 0
    frame_field: str = ""
    encoder_factory: Callable[[EncoderConfig], Encoder] | None = None
    decoder_factory: Callable[[], Decoder] | None = None
    auto_rank: int = 0
    lossless: bool = False
    available: Callable[[], bool] = field(default=lambda: True)
    browser_decoder: Path | None = None
    extensions: tuple[str, ...] = ()

    @property
    def wire_name(self) -> str:
        """How the wire and the viewers name this codec: its slot, or its own name for a
        plugin frame (what ``SessionRequest.codecs`` lists)."""
        return self.frame_field or self.name


@dataclass(frozen=True)
class CaptureSpec(Registration):
    """A screen-capture backend. ``factory(**options)`` builds the source from the
    plugin's options; the agent takes the one its settings name, else the available one
    of highest ``priority`` (ties by name)."""

    factory: Callable[..., CaptureSource] | None = None
    available: Callable[[], bool] = field(default=lambda: True)
    priority: int = 0


@dataclass(frozen=True)
class InputSpec(Registration):
    """An input-injection backend. ``factory(**options)`` builds the sink from the
    plugin's options; chosen like :class:`CaptureSpec`."""

    factory: Callable[..., InputSink] | None = None
    available: Callable[[], bool] = field(default=lambda: True)
    priority: int = 0


@dataclass(frozen=True)
class AuthMethod(Registration):
    """An agent-authentication method, tried in ascending ``order``.

    Built-ins: ``agentkey`` (10), ``supportcode`` (20), ``sharedkey`` (90).

    ``issue_key``, where given, mints a new agent key as ``(plain, stored)``:
    the plain key is shown to the operator once, ``stored`` is what
    ``Store.add_agent_key`` keeps (a hash) and what the method's authenticator
    later finds with ``Store.find_agent_key``. The REST API asks the first
    loaded method (by ``order``) that has one, so a key is only ever issued by a
    method that will accept it; with none loaded, issuing answers 501.
    """

    order: int = 50
    factory: Callable[[AuthContext], Authenticator] | None = None
    issue_key: Callable[[], tuple[str, str]] | None = None
    accepts_support_codes: bool = False
    """The method admits agents presenting the support codes the REST API issues; with
    none loaded that does, the API issues no codes (501), so no end user reads out a code
    that no method would accept."""


@dataclass(frozen=True)
class StoreSpec(Registration):
    """A storage backend for database URLs whose scheme is in ``schemes``."""

    schemes: tuple[str, ...] = ()
    factory: Callable[[str], Store] | None = None
    admin: Callable[[str], StoreAdmin] | None = None
    """Backups, restores, copies and health checks of a database URL (optional)."""


@dataclass(frozen=True)
class RecordingStoreSpec(Registration):
    """Where session recordings go, for ``recordings_url`` schemes in ``schemes``;
    ``factory(url)`` builds the :class:`~remote_core.interfaces.RecordingStore`."""

    schemes: tuple[str, ...] = ()
    factory: Callable[[str], RecordingStore] | None = None


@dataclass(frozen=True)
class ConsentPromptSpec(Registration):
    """An end-user consent prompt on the agent (desktop dialog, console ...).

    The agent picks the highest ``priority`` prompt whose ``available()`` is true.
    """

    factory: Callable[[], ConsentPrompt] | None = None
    priority: int = 0
    available: Callable[[], bool] = field(default=lambda: True)


@dataclass(frozen=True)
class WebAppSpec(Registration):
    """An ASGI app mounted into the server at ``path`` (the web console ...).

    ``factory(options)`` returns the ASGI application, given its plugin's options.
    """

    path: str = "/"
    factory: Callable[[Mapping[str, Any]], Any] | None = None


@dataclass(frozen=True)
class ServiceSpec(Registration):
    """A background service the server runs for its whole life (webhook delivery ...).

    ``factory(options)`` returns a :class:`~remote_core.interfaces.Service`, given its
    plugin's options; it raises :class:`~remote_core.errors.ConfigError` on bad ones.
    """

    factory: Callable[[Mapping[str, Any]], Service] | None = None
