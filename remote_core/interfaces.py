"""Small abstract contracts that plugins implement.

CPU-bound contracts (encode, decode, capture, input) are synchronous and are
run in worker threads by the caller; I/O contracts (authenticate, store) are
``async``. Images are C-contiguous BGRA buffers of shape ``(height, width, 4)``
and format ``B``: a numpy uint8 array or a ``memoryview`` cast to that shape
(typed ``Any``; neither the core nor a capture source needs numpy).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .records import (
    DEFAULT_TENANT_ID,
    AgentKey,
    AuditEvent,
    Keyset,
    LoginSession,
    Machine,
    MachineFilter,
    MachineReport,
    Passkey,
    RecordingRecord,
    Release,
    RestoreResult,
    SecondFactors,
    SessionRecord,
    SigningKey,
    SupportCode,
    Tenant,
    User,
    WebAuthnChallenge,
    WebhookDelivery,
)

if TYPE_CHECKING:
    from .types import (
        AgentCredential,
        AgentIdentity,
        ConsentAsk,
        DisplayDesc,
        EncodedFrame,
        Moves,
        Rect,
    )

__all__ = [
    "Authenticator",
    "CaptureSource",
    "ConsentPrompt",
    "Decoder",
    "Encoder",
    "InputSink",
    "Service",
    "Store",
    "StoreAdmin",
]

Image = Any


class Encoder(ABC):
    """Turns successive screen images of one stream into :class:`EncodedFrame` values.

    The encoder knows nothing of the wire: the agent puts each frame into the
    ``VideoFrame`` slot its :class:`~remote_core.types.CodecSpec` names.
    """

    @abstractmethod
    def encode(self, image: Image, *, keyframe: bool = False,
               dirty: Sequence[Rect] | None = None,
               moves: Moves | None = None) -> EncodedFrame | None:
        """Encode one image.

        :param keyframe: force a self-contained frame (StartStream, SwitchDisplay ...).
            Also send one unasked for the first image, on a size change and at least
            every 10 s (CONTRACT 1; :class:`remote_core.codecs.KeyframeClock`).
        :param dirty: rectangles the capture source knows changed, or ``None``
            when unknown (the encoder then finds them itself, if it cares).
        :param moves: what :meth:`find_moves` found for this same image, handed back to
            be sent. Only an encoder that finds moves is ever given any, and the agent
            leaves the argument out otherwise, so an encoder written before it works.
        :returns: the frame, or ``None`` when nothing changed and nothing need be sent.
        :raises ValueError: an image it cannot take (wrong shape, a size the codec
            cannot code); the agent then restarts the stream.
        """

    def find_moves(self, image: Image,
                   dirty: Sequence[Rect] | None = None) -> Moves | None:
        """The part of the change to ``image`` that is a move of what the viewers already
        have (a scrolled page), which this encoder can send as copies instead of pixels;
        ``None`` when nothing moved, or the encoder sends no moves (this default). An
        answer without copies is what changed, found by the encoder's own comparison,
        handed back so that :meth:`encode` need not compare again.

        Nothing changes until :meth:`encode` is given the result; the agent asks before it
        decides whether a large change is motion, so a scroll stays a small change."""
        return None

    def estimate(self, image: Image, rects: Sequence[Rect]) -> int | None:
        """About how many bytes a frame sending ``rects`` of ``image`` would take, told
        without encoding it (from a sample), so that the agent need not encode a large
        change only to find it too big for the link; ``None`` (this default): the encoder
        cannot tell. Nothing changes."""
        return None

    @property
    def pending(self) -> bool:
        """True while the viewers lack part of the picture: the last frame was too large
        for one message and went in parts. Call :meth:`encode` again, without waiting
        for the screen to change, until this is False; encoders that always send whole
        pictures keep this default."""
        return False

    @property
    def sharpening(self) -> bool:
        """True while frames of the same picture would still sharpen it: the last keyframe
        came out coarser than the codec's quality (a short rate buffer over a slow link,
        ``EncoderConfig.buffer_seconds``). The agent calls :meth:`encode` again at its
        frame rate, without waiting for the screen to change, and may stop at any time;
        :meth:`encode` then codes an unchanged picture too. Encoders whose keyframes
        come out whole keep this default."""
        return False

    def redraw(self, part_bytes: int) -> bool:
        """Send the whole picture again, drawn over what the viewers show now (another
        codec drew there since this encoder's last frame), in frames of about
        ``part_bytes`` each, so that the agent may stop between them; :attr:`pending`
        stays true and :attr:`redrawn` says how far it got until it is all sent. Only
        for viewers that draw this codec's frames over another codec's picture (an
        extension every viewer lists). False (this default): the encoder cannot, and
        the agent sends a keyframe instead."""
        return False

    def adopt(self, image: Image) -> bool:
        """The viewers show ``image`` as another codec drew it (a video frame of it, near
        enough): take that as their picture without sending it, and from the next frame on
        send only what changes over it, as frames they draw over it; until a keyframe,
        there is no picture of this encoder's own to repeat or send in parts
        (:meth:`repeat_keyframe`, :meth:`keyframe_in_parts`). For a screen whose whole
        lossless picture the link cannot carry in time: a typed word still goes exact.
        Only for viewers that draw this codec's frames over another codec's picture (an
        extension every viewer lists). False (this default): the encoder cannot."""
        return False

    @property
    def redrawn(self) -> float | None:
        """While a :meth:`redraw` goes on, the share of the picture sent so far (0 to 1);
        ``None`` otherwise."""
        return None

    def keyframe_in_parts(self, part_bytes: int) -> bool:
        """Send the next keyframe, if it takes more than ``part_bytes``, as a first part of
        about that size that the viewers draw over the picture they show, and the rest as
        a :meth:`redraw` in frames of that size, what changes meanwhile going between
        them: a keyframe due every 10 s holds nothing up for the second a slow link takes
        to carry it. Only for viewers that keep their picture where a keyframe part does not
        reach (an extension every viewer lists). False (this default): the encoder
        cannot, and the keyframe goes whole."""
        return False

    def repeat_keyframe(self) -> EncodedFrame | None:
        """A keyframe of exactly the picture the viewers have from this encoder's frames,
        with nothing new in it (``EncodedFrame.repeat``), made without a new image: the
        keyframe due every 10 s, which a viewer in step skips rather than decode (a
        typed word waited behind a 1080p one some 40 ms in a browser). The change on the
        screen meanwhile goes in the next frame. ``None`` (this default): the encoder
        cannot (it does not keep the viewers' picture, or part of it is owed), and the
        agent asks :meth:`encode` for a keyframe."""
        return None

    def downscale(self, factor: int) -> bool:
        """Code the picture at 1/``factor`` of the display's width and height from the next
        frame on (a keyframe), and at full size again with 1: a machine short of CPU
        keeps up with motion at a quarter of the pixels. Only for viewers that scale this
        codec's pictures up to the display's size (an extension every viewer lists).
        Whether the encoder codes at that size now; False (this default) for any factor
        but 1: it cannot."""
        return factor == 1

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release native resources."""


class Decoder(ABC):
    """Turns :class:`EncodedFrame` values of one stream back into images, keeping whatever
    state it needs (the last picture, reference frames)."""

    @abstractmethod
    def decode(self, frame: EncodedFrame) -> Image | None:
        """Decode one frame; return the full current image, or ``None`` if not yet (an
        incremental frame before any keyframe, a codec that holds a frame back).

        The frame came over the network: raise :class:`ValueError` on anything malformed,
        and nothing else; a decoder stays usable after garbage.
        """

    def begin_from(self, image: Image) -> None:  # noqa: B027 - optional hook
        """The picture another codec's decoder showed last, when this codec's frames come
        after it: a decoder whose incremental frames may draw over that picture (an
        extension its viewer lists: ``Encoder.redraw``) starts from it; this default
        ignores it."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release native resources."""


class CaptureSource(ABC):
    """Enumerates displays and grabs images of one of them."""

    @abstractmethod
    def displays(self) -> list[DisplayDesc]:
        """The displays, ids 1-based (CONTRACT 1), the primary one marked."""

    @abstractmethod
    def grab(self, display_id: int) -> tuple[Image, list[Rect] | None]:
        """Grab the display; also return the changed rectangles when the platform knows them."""

    def wait_for_change(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds for a change; ``True`` if one may have happened.

        Sources without change notification return ``True`` at once (polling).
        """
        return True

    def change_fd(self) -> int | None:
        """A descriptor that turns readable when :meth:`wait_for_change` may have news, so
        an event loop can watch it and then ask ``wait_for_change(0)`` instead of blocking
        a thread; ``None``: there is none, wait in a thread."""
        return None

    def pending_pixels(self) -> int | None:
        """How many pixels the changes the next :meth:`grab` takes in cover at most, or
        ``None`` when unknown: a small change is grabbed at once on the agent's event
        loop, a large or unknown one in a worker thread."""
        return None

    def interrupt(self) -> None:  # noqa: B027 - optional hook
        """End a :meth:`wait_for_change` blocked in another thread now (it answers as if
        its time ran out): the agent has something else to do, such as a keyframe a
        viewer asked for. A source that blocks in :meth:`wait_for_change` should offer it,
        or the agent notices such things only when the wait's time runs out."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release native resources."""


class InputSink(ABC):
    """Injects the technician's input into the local desktop."""

    @abstractmethod
    def mouse(self, event: Any, display: DisplayDesc) -> None:
        """Apply a ``MouseEvent`` whose x/y are pixels of ``display``."""

    @abstractmethod
    def key(self, event: Any) -> None:
        """Apply a ``KeyEvent``."""

    @abstractmethod
    def special_key(self, event: Any) -> None:
        """Apply a ``SpecialKeyEvent`` where the platform allows it."""

    def cursor(self) -> tuple[tuple[int, int] | None, Any | None]:
        """Poll the pointer: its virtual-screen position if it moved since the last poll,
        and a ``CursorShape`` if the shape changed; ``(None, None)`` where unknown."""
        return None, None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release native resources."""


class Authenticator(ABC):
    """One agent-authentication method (cak_ key, support code, shared key ...)."""

    @abstractmethod
    async def authenticate(self, credential: AgentCredential) -> AgentIdentity | None:
        """Return the identity if this method recognises the credential, else ``None``.

        Raise :class:`remote_core.types.AuthRejected` when the credential is of
        this method's kind but must be refused (revoked key, consumed code).
        """


class ConsentPrompt(ABC):
    """Asks the person at the machine whether a technician may connect."""

    @abstractmethod
    def ask(self, request: ConsentAsk) -> tuple[bool, str]:
        """Block until the user decides or ``request.timeout_secs`` passes.

        :returns: ``(granted, reason)``; a closed dialog or a timeout is a denial.
        """


class Store(ABC):
    """Everything durable. The only place SQL (or any other persistence) lives.

    Implementations must be safe for concurrent use from one event loop and
    across processes sharing one database.
    """

    # -- lifecycle -------------------------------------------------------
    @abstractmethod
    async def open(self) -> None:
        """Connect and apply pending migrations (idempotent)."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections."""

    @abstractmethod
    async def ping(self) -> bool:
        """True when the database answers (readiness)."""

    @abstractmethod
    async def get_or_create_secret(self, name: str, value: str) -> str:
        """Return the stored secret ``name``; store ``value`` first if there is none (race-free)."""

    @abstractmethod
    async def signing_keys(self, seed: SigningKey) -> list[SigningKey]:
        """The token-signing key ring, oldest first; when it is empty, ``seed`` is stored
        first (race-free: every process seeds with the same key)."""

    @abstractmethod
    async def rotate_signing_key(self, new: SigningKey,
                                 previous_until: datetime) -> list[SigningKey]:
        """Make ``new`` the current key: the current one verifies until ``previous_until``,
        keys past their ``verify_until`` are deleted. Serialised across processes, so two
        rotations at once leave one current key. Returns the ring, oldest first."""

    # -- tenants ----------------------------------------------------------------------
    @abstractmethod
    async def create_tenant(self, tenant: Tenant) -> Tenant:
        """Insert; :class:`ConflictError` on a duplicate name."""

    @abstractmethod
    async def get_tenant(self, tenant_id: str) -> Tenant | None: ...

    @abstractmethod
    async def list_tenants(self) -> list[Tenant]:
        """Every tenant, oldest first (the seeded default tenant first)."""

    @abstractmethod
    async def update_tenant(self, tenant_id: str, *, name: str | None = None,
                            disabled: bool | None = None) -> Tenant | None:
        """Rename or disable; ``None`` if there is none, :class:`ConflictError` on a
        duplicate name."""

    # -- machines (SPEC 2.4, 3.3, 5.4) --------------------------------------
    @abstractmethod
    async def upsert_machine(self, report: MachineReport) -> Machine:
        """Register or update a machine: conflict on ``machine_uid`` when given, else on
        ``agent_id``. A soft-deleted machine is revived (``deleted_at`` cleared).
        ``organization``, ``site`` and ``tags`` of an existing machine are the operator's:
        a report fills each only where it is empty."""

    @abstractmethod
    async def create_machine(self, agent_id: str, organization: str = "", site: str = "",
                             tags: Sequence[str] = (), *,
                             tenant_id: str = DEFAULT_TENANT_ID) -> Machine:
        """Pre-register a machine of ``tenant_id`` so a key can be issued before install."""

    @abstractmethod
    async def get_machine(self, agent_id: str) -> Machine | None:
        """A live machine; soft-deleted ones are ``None``."""

    @abstractmethod
    async def get_machine_by_id(self, agent_id: str) -> Machine | None:
        """Any machine, soft-deleted included (keyed reattach, SPEC 3.3)."""

    @abstractmethod
    async def get_machine_by_uid(self, machine_uid: str) -> Machine | None:
        """The live machine holding ``machine_uid``."""

    @abstractmethod
    async def list_machines(self, filter: MachineFilter | None = None) -> list[Machine]:
        """Live machines matching ``filter`` (``filter.tenant_id``: that tenant's alone),
        oldest first (creation time, then ``agent_id``); ``filter.after`` and
        ``filter.limit`` page them."""

    @abstractmethod
    async def update_machine(self, agent_id: str, *, organization: str | None = None,
                             site: str | None = None,
                             tags: Sequence[str] | None = None) -> Machine | None:
        """Operator edit of a live machine; ``None`` if there is none."""

    @abstractmethod
    async def set_machine_status(self, agent_id: str, status: str,
                                 last_seen: datetime | None = None) -> None:
        """Record online/offline and when the machine was last heard from."""

    async def set_machines_offline(self, agent_ids: Collection[str], last_seen: datetime) -> None:
        """Mark many machines offline, last seen at ``last_seen`` (a server shutting down).
        One write per machine here; a store overrides it with one statement."""
        for agent_id in agent_ids:
            await self.set_machine_status(agent_id, "offline", last_seen)

    @abstractmethod
    async def set_machines_seen(self, seen: Mapping[str, datetime]) -> None:
        """Record when each of many machines was last heard from, in one write: an idle
        fleet's reports, batched, instead of a write per agent per report."""

    @abstractmethod
    async def set_all_machines_offline(self, keep: Collection[str] = ()) -> int:
        """Mark every machine offline but the agents in ``keep`` (server start; in a
        cluster, those some live node holds); return how many changed."""

    @abstractmethod
    async def soft_delete_machine(self, agent_id: str) -> bool:
        """Set ``deleted_at`` and revoke the machine's keys, together; ``False`` if no live
        machine had that id."""

    @abstractmethod
    async def hard_delete_machine(self, agent_id: str) -> bool:
        """Delete the row and its keys; ``False`` if there was none."""

    @abstractmethod
    async def restore_machines(self) -> RestoreResult:
        """Machines for the in-memory registry at start-up. Raises if the keyed-machines
        query fails: restore fails closed (SPEC 5.2)."""

    # -- agent keys -------------------------------------------------------------
    @abstractmethod
    async def add_agent_key(self, agent_id: str, key_hash: str, label: str = "") -> AgentKey:
        """Store a new key's hash for a machine."""

    @abstractmethod
    async def find_agent_key(self, key_hash: str) -> AgentKey | None:
        """The non-revoked key with this hash, if any."""

    @abstractmethod
    async def list_agent_keys(self, agent_id: str, *, after: Keyset | None = None,
                              limit: int | None = None) -> list[AgentKey]:
        """Every key of a machine, revoked ones included, oldest first (creation time,
        then id): up to ``limit`` (``None``: all) of those past ``after``."""

    @abstractmethod
    async def revoke_agent_key(self, agent_id: str, key_id: str) -> AgentKey | None:
        """Set ``revoked_at``; ``None`` if the machine has no such key."""

    @abstractmethod
    async def touch_agent_key(self, key_id: str) -> None:
        """Record that the key was just used."""

    # -- support codes (SPEC 3.2) --------------------------------------------------
    @abstractmethod
    async def create_support_code(self, code: SupportCode) -> SupportCode:
        """Insert a code; :class:`ConflictError` if it exists."""

    @abstractmethod
    async def get_support_code(self, code: str) -> SupportCode | None:
        """Read a code without consuming it."""

    @abstractmethod
    async def consume_support_code(self, code: str, agent_id: str, session_id: str,
                                   now: datetime) -> bool:
        """One conditional UPDATE (``consumed_at IS NULL``, not cancelled, not expired):
        ``True`` for exactly one caller."""

    @abstractmethod
    async def list_support_codes(self, created_by: str | None = None, *,
                                 after: Keyset | None = None, limit: int | None = None,
                                 tenant_id: str | None = None) -> list[SupportCode]:
        """Codes, newest first (creation time, then code, both descending); only one
        user's when ``created_by`` is given, one tenant's when ``tenant_id`` is; up to
        ``limit`` of those past ``after``."""

    @abstractmethod
    async def cancel_support_code(self, code: str) -> bool:
        """Cancel a pending (unconsumed) code."""

    # -- sessions -------------------------------------------------------------------
    @abstractmethod
    async def create_session(self, session: SessionRecord) -> SessionRecord:
        """Insert a session row."""

    @abstractmethod
    async def update_session(self, session_id: str, *, consent_state: str | None = None,
                             ended_at: datetime | None = None,
                             end_reason: str | None = None) -> None:
        """Record consent or the end of a session."""

    @abstractmethod
    async def end_open_sessions(self, end_reason: str, ended_at: datetime, *,
                                keep: Collection[str] = (),
                                created_before: datetime | None = None) -> int:
        """End every session without ``ended_at`` (server start: a server that died left
        them open, and none is live in a process that has just started); return how many.

        In a cluster the sessions in ``keep`` are live on some node, and only those
        created before ``created_before`` are old enough to be known to be orphaned."""

    @abstractmethod
    async def get_session(self, session_id: str) -> SessionRecord | None:
        """A session that is not soft-deleted."""

    async def end_sessions(self, session_ids: Collection[str], ended_at: datetime,
                           end_reason: str) -> None:
        """End many sessions for one reason (a server shutting down). One write per session
        here; a store overrides it with one statement."""
        for session_id in session_ids:
            await self.update_session(session_id, ended_at=ended_at, end_reason=end_reason)

    async def ended_sessions(self, session_ids: Collection[str]) -> set[str]:
        """Those of ``session_ids`` that the database has ended (a cluster node cut off from
        the bus asks which of its live sessions the other nodes closed). Unknown ids are
        not ended. One read per id here; a store overrides it with one query."""
        ended = set()
        for session_id in session_ids:
            record = await self.get_session(session_id)
            if record is not None and record.ended_at is not None:
                ended.add(session_id)
        return ended

    @abstractmethod
    async def list_sessions(self, agent_id: str | None = None, limit: int = 100, *,
                            after: Keyset | None = None,
                            tenant_id: str | None = None) -> list[SessionRecord]:
        """Sessions that are not soft-deleted (of ``tenant_id`` alone when given), newest
        first (creation time, then id, both descending): up to ``limit`` of those past
        ``after``."""

    @abstractmethod
    async def soft_delete_session(self, session_id: str) -> bool:
        """Set ``deleted_at``."""

    # -- cluster nodes --------------------------------------------------------------
    async def beat_node(self, node_id: str, on_bus: bool, at: datetime) -> None:  # noqa: B027
        """Record that cluster node ``node_id`` was alive at ``at``, and whether it reached
        the bus then. A node cut off from the bus reads the others' beats
        (:meth:`nodes_on_bus`) to tell "only I am cut off" from "the bus is down". This
        default keeps none: such a node then learns it only from sessions the others
        closed (:meth:`ended_sessions`), so one that holds none never learns it."""

    async def nodes_on_bus(self, since: datetime) -> set[str]:
        """The nodes whose last beat, at or after ``since``, said they reached the bus."""
        return set()

    async def forget_node(self, node_id: str) -> None:  # noqa: B027 - optional
        """Drop a node's beat (it left the cluster, or the others found it gone)."""

    # -- users ---------------------------------------------------------------------------
    @abstractmethod
    async def create_user(self, user: User) -> User:
        """Insert; :class:`ConflictError` on a duplicate username."""

    @abstractmethod
    async def create_first_admin(self, user: User) -> bool:
        """Insert ``user`` only if no user exists; race-free across processes."""

    @abstractmethod
    async def get_user(self, user_id: str) -> User | None: ...

    @abstractmethod
    async def get_user_by_username(self, username: str) -> User | None: ...

    @abstractmethod
    async def list_users(self, *, after: Keyset | None = None, limit: int | None = None,
                         tenant_id: str | None = None) -> list[User]:
        """Users (of ``tenant_id`` alone when given), oldest first (creation time, then
        id): up to ``limit`` (``None``: all) of those past ``after``."""

    @abstractmethod
    async def update_user(self, user_id: str, *, password_hash: str | None = None,
                          role: str | None = None, disabled: bool | None = None,
                          permissions: Sequence[str] | None = None,
                          client_access: Sequence[str] | None = None) -> User | None:
        """Change the given fields; ``None`` if there is no such user."""

    @abstractmethod
    async def delete_user(self, user_id: str) -> bool: ...

    @abstractmethod
    async def record_login_address(self, user_id: str, client_ip: str, keep: int) -> None:
        """Remember a successful login of ``user_id`` from ``client_ip``; only the ``keep``
        most recent addresses of each user are kept."""

    @abstractmethod
    async def is_login_address(self, user_id: str, client_ip: str) -> bool:
        """True when ``user_id`` logged in from ``client_ip`` (among the addresses kept)."""

    # -- second factors and token generations ---------------------------------------------------
    @abstractmethod
    async def get_second_factors(self, user_id: str) -> SecondFactors:
        """The user's second factors; an unknown user or one without any gets the empty record."""

    @abstractmethod
    async def set_totp(self, user_id: str, secret: str | None,
                       recovery_hashes: Sequence[str] = ()) -> None:
        """Enrol (or with ``None`` remove) the TOTP secret, replacing the recovery codes."""

    @abstractmethod
    async def use_totp_step(self, user_id: str, step: int) -> bool:
        """Record that a TOTP code of time ``step`` logged in; False when that step or a
        later one was used already (a code works once, even on two nodes at once), or the
        user has no TOTP."""

    @abstractmethod
    async def consume_recovery_code(self, user_id: str, code_hash: str) -> bool:
        """Remove one stored recovery hash; False when it was not there (used once only)."""

    @abstractmethod
    async def bump_token_generation(self, user_id: str) -> int:
        """Raise the user's token generation by one and answer the new value."""

    @abstractmethod
    async def add_login_session(self, session: LoginSession) -> None:
        """Record a login; the user's expired logins are dropped here too."""

    @abstractmethod
    async def get_login_session(self, session_id: str) -> LoginSession | None: ...

    @abstractmethod
    async def list_login_sessions(self, user_id: str) -> list[LoginSession]:
        """The user's logins, newest first (expired ones may be among them)."""

    @abstractmethod
    async def end_login_sessions(self, user_id: str, session_id: str | None = None) -> int:
        """End one of the user's logins, or all of them; how many ended."""

    # -- passkeys (WebAuthn) -------------------------------------------------------------------
    @abstractmethod
    async def add_webauthn_challenge(self, challenge: WebAuthnChallenge) -> None:
        """Record a challenge handed out; the user's expired challenges are dropped here."""

    @abstractmethod
    async def take_webauthn_challenge(self, challenge: str, user_id: str,
                                      purpose: str) -> bool:
        """Use up a challenge: True when it was handed to ``user_id`` for ``purpose`` and
        has not expired, and it is deleted in the same step (it works once, even on two
        nodes at once); False otherwise."""

    @abstractmethod
    async def add_passkey(self, passkey: Passkey) -> None:
        """Record a credential; :class:`ConflictError` when its ``credential_id`` exists."""

    @abstractmethod
    async def list_passkeys(self, user_id: str) -> list[Passkey]:
        """The user's passkeys, oldest first."""

    @abstractmethod
    async def delete_passkeys(self, user_id: str, passkey_id: str | None = None) -> int:
        """Remove one of the user's passkeys, or all of them; how many were removed."""

    @abstractmethod
    async def use_passkey(self, passkey_id: str, seen_count: int, new_count: int) -> bool:
        """Record an assertion: the counter goes from ``seen_count`` to ``new_count`` and
        ``last_used_at`` is now, in one conditional update; False when the stored counter
        is no longer ``seen_count`` (another login used the credential meanwhile) or the
        passkey is gone."""

    # -- releases ----------------------------------------------------------------------------
    @abstractmethod
    async def create_release(self, release: Release) -> Release:
        """Insert; :class:`ConflictError` on a duplicate version."""

    @abstractmethod
    async def get_release(self, version: str) -> Release | None: ...

    @abstractmethod
    async def list_releases(self, *, after: Keyset | None = None, limit: int | None = None,
                            tenant_id: str | None = None) -> list[Release]:
        """Releases, newest first (creation time, then version, both descending): up to
        ``limit`` (``None``: all) of those past ``after``. With ``tenant_id``, the
        releases that tenant's machines may install: the default tenant's (the whole
        server's channel) and its own."""

    @abstractmethod
    async def update_release(self, version: str, *, download_url: str | None = None,
                             checksum_sha256: str | None = None, mandatory: bool | None = None,
                             notes: str | None = None) -> Release | None: ...

    @abstractmethod
    async def delete_release(self, version: str) -> bool: ...

    # -- audit -------------------------------------------------------------------------------
    @abstractmethod
    async def add_event(self, event: AuditEvent) -> None:
        """Append to the session-event log."""

    async def add_events(self, events: Sequence[AuditEvent]) -> None:
        """Append many events, in order (a server shutting down). One write per event here;
        a store overrides it with one statement."""
        for event in events:
            await self.add_event(event)

    @abstractmethod
    async def list_events(self, session_id: str | None = None, agent_id: str | None = None,
                          limit: int = 100, *, after: Keyset | None = None,
                          tenant_id: str | None = None) -> list[AuditEvent]:
        """Newest first (creation time, then id, both descending): up to ``limit`` of
        those past ``after`` (of ``tenant_id`` alone when given)."""

    # -- session recordings (their rows; the segments are a RecordingStore's) ---------------
    @abstractmethod
    async def add_recording(self, recording: RecordingRecord) -> None:
        """Insert a recording's row as it starts."""

    @abstractmethod
    async def finish_recording(self, recording_id: str, *, ended_at: datetime, state: str,
                               reason: str, segments: int, bytes: int, sha256: str,
                               technicians: Sequence[str] = ()) -> None:
        """Record how a recording ended: its state, why, its chain's hash, and who
        watched it."""

    @abstractmethod
    async def get_recording(self, recording_id: str) -> RecordingRecord | None: ...

    @abstractmethod
    async def list_recordings(self, *, session_id: str | None = None,
                              agent_id: str | None = None, technician: str | None = None,
                              since: datetime | None = None, limit: int = 100,
                              after: Keyset | None = None,
                              tenant_id: str | None = None) -> list[RecordingRecord]:
        """Newest first (start time, then id, both descending): up to ``limit`` of those
        past ``after``; ``technician`` one who watched, ``since`` started at or after,
        ``tenant_id`` that tenant's."""

    @abstractmethod
    async def delete_recording(self, recording_id: str) -> bool:
        """Remove a recording's row (its segments are the recording store's to remove)."""

    @abstractmethod
    async def end_open_recordings(self, reason: str, ended_at: datetime) -> int:
        """Mark every recording still ``recording`` incomplete (server start: a server
        that died left them so); return how many."""

    # -- webhook delivery log ----------------------------------------------------------------
    @abstractmethod
    async def add_webhook_delivery(self, delivery: WebhookDelivery) -> None:
        """Append one delivery attempt to the webhook delivery log."""

    @abstractmethod
    async def list_webhook_deliveries(self, limit: int = 100, *, after: Keyset | None = None,
                                      failed_only: bool = False) -> list[WebhookDelivery]:
        """Newest first (creation time, then id, both descending): up to ``limit`` of
        those past ``after``; ``failed_only`` keeps the attempts that did not deliver."""

    @abstractmethod
    async def prune_webhook_deliveries(self, before: datetime) -> int:
        """Delete the attempts logged before ``before``; return how many went."""


class Service(ABC):
    """A background service a plugin runs inside the server (webhook delivery ...).

    Built at start-up from the plugin's options (bad options raise
    :class:`~remote_core.errors.ConfigError` then, before the server listens); runs
    for the server's whole life; hears every audit event as it is written.
    """

    @abstractmethod
    async def run(self, store: Store) -> None:
        """Work until cancelled, with the server's store at hand."""

    @abstractmethod
    def audit_event(self, event: AuditEvent) -> None:
        """One audit event was written. Called on the server's event loop; must not block."""

class RecordingStore(ABC):
    """Where session recordings' segments are kept (a folder, object storage ...), chosen
    by the ``recordings_url`` setting's scheme. A segment is written once, whole, under its
    recording's id and its index; the hash chain that proves them unchanged is kept apart,
    in the database (:mod:`remote_core.recording`).

    Errors are :class:`~remote_core.errors.StoreError`; a missing segment is
    :class:`~remote_core.errors.NotFoundError`.
    """

    async def open(self) -> None:  # noqa: B027 - most stores need nothing
        """Prepare (create a folder, check a bucket); called once at start-up."""

    async def close(self) -> None:  # noqa: B027
        """Release connections."""

    @abstractmethod
    async def put_segment(self, recording_id: str, index: int, data: bytes) -> None:
        """Keep segment ``index`` of a recording (whole: a reader never sees half)."""

    @abstractmethod
    async def get_segment(self, recording_id: str, index: int) -> bytes: ...

    @abstractmethod
    async def delete_recording(self, recording_id: str) -> None:
        """Remove every segment of a recording (none there is no error)."""


class StoreAdmin(ABC):
    """An operator's tools for one store's database, for the command line: backups,
    restores, a copy into another database, and what ``doctor`` asks.

    Synchronous (nothing else runs beside a command) and safe while servers use the
    same database. Errors are :class:`~remote_core.errors.StoreError` with one line that
    names the problem and never a password.
    """

    @abstractmethod
    def backup(self, path: Path) -> str:
        """Write a consistent copy of the database to the new file ``path``; a summary."""

    @abstractmethod
    def restore(self, path: Path, *, force: bool = False) -> str:
        """Replace the database by the backup at ``path`` (refused over data unless
        ``force``, and for a schema newer than this release knows); a summary."""

    @abstractmethod
    def copy_to(self, target_url: str, progress: Callable[[str], None]) -> list[tuple[str, int]]:
        """Copy every row into the empty database at ``target_url`` (migrated to the newest
        schema first), verified table by table; each table's name and row count."""

    @abstractmethod
    def schema(self) -> tuple[str | None, str]:
        """The database's schema revision (``None``: no schema yet) and this release's."""

    @abstractmethod
    def clock(self) -> datetime | None:
        """The database server's clock, or ``None`` when it has none of its own (SQLite)."""
