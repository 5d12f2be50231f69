"""Every hook a plugin can implement, in one module.

Registration hooks (``register_*``) run once at start-up and return lists of
typed dataclasses from :mod:`remote_core.types`; the manager collects every
plugin's results, rejects duplicate names and selects by configured name. The
per-frame and per-event paths never call hooks: they call the objects the
factories built.

Example plugin module::

    from remote_core import hookimpl
    from remote_core.types import CodecSpec

    @hookimpl
    def register_codecs():
        return [CodecSpec(name="my_codec", encoder_factory=make_encoder,
                          decoder_factory=make_decoder)]

Hooks evolve by adding arguments only; a changed meaning gets a new hook name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import hookspec

if TYPE_CHECKING:
    from .records import AuditEvent, SessionRecord
    from .types import (
        AuthMethod,
        CaptureSpec,
        CodecSpec,
        ConsentAsk,
        ConsentDecision,
        ConsentPromptSpec,
        InputSpec,
        RecordingStoreSpec,
        ServiceSpec,
        StoreSpec,
        WebAppSpec,
    )

__all__ = [
    "audit_event",
    "consent_policy",
    "register_auth_methods",
    "register_capture_sources",
    "register_codecs",
    "register_consent_prompts",
    "register_input_sinks",
    "register_recording_stores",
    "register_services",
    "register_stores",
    "register_web_apps",
    "session_closed",
    "session_opened",
]


@hookspec
def register_codecs() -> list[CodecSpec]:
    """Return the video codecs this plugin provides.

    Called once at start-up on the agent, the viewers and the server (which serves
    browser decoders). All results are collected; a clash stops start-up naming both
    codecs: two codecs with one name, one ``VideoFrame`` slot, or one non-zero
    ``CodecPreference`` value.

    **Factories.** ``encoder_factory(EncoderConfig) -> Encoder`` and
    ``decoder_factory() -> Decoder`` (:mod:`remote_core.interfaces`); import heavy
    libraries inside them, so loading the plugin costs nothing. ``available()`` is a
    cheap check that the library works here. Images are C-contiguous BGRA buffers
    ``(height, width, 4)`` (a numpy array or a shaped ``memoryview``); check input
    with :func:`remote_core.codecs.as_image`, and take ``numpy.asarray`` of it if
    the codec works on numpy.

    **Frames.** ``Encoder.encode(image, keyframe=, dirty=)`` returns a
    :class:`~remote_core.types.EncodedFrame` (bytes, keyframe flag, display size,
    dirty rectangles, timestamps), never a protobuf message, or ``None`` when nothing
    changed (``dirty == []``, or identical pixels). ``Decoder.decode(frame)`` returns
    the full current image, ``None`` while it lacks a keyframe, and raises
    :class:`ValueError`, and nothing else, on any malformed frame: frames come from
    the network. An encoder sends a keyframe first, on request, on a size change and
    at least every 10 s on a still screen (CONTRACT 1;
    :class:`remote_core.codecs.KeyframeClock` does the timing).

    **Extensions.** A feature of a codec's frames that older viewers cannot draw (the
    raw codec's moves, ``raw_copy``) is named in ``extensions`` (each name begins with
    the codec's wire name). Viewers list the ones they draw after the codec, and the
    encoder is built with those every viewer lists (``EncoderConfig.extensions``). An
    encoder that sends moves of what the viewers have also answers
    ``Encoder.find_moves(image, dirty)``, which the agent asks before it decides that a
    large change is motion, and takes the answer back in ``encode(..., moves=)``. An
    encoder whose viewers draw its frames over another codec's picture (the raw
    codec's ``raw_over``) answers ``Encoder.redraw(part_bytes)``: the agent then
    restores the picture after motion in parts, and the viewer's decoder is handed
    the last picture first (``Decoder.begin_from``). An encoder whose viewers scale a
    smaller picture up to the display's size (H.264's ``h264_scaled``) answers
    ``Encoder.downscale(factor)``: the agent asks for half size while its motion
    frames take most of their time to make, and full size when the next motion begins.
    An encoder whose viewers keep their picture below a keyframe's first part (the raw
    codec's ``raw_keep``) answers ``Encoder.keyframe_in_parts(part_bytes)``: the agent
    asks for it before the keyframe due every 10 s over a link that takes a while to
    carry one. An encoder that keeps the picture its viewers have answers
    ``Encoder.repeat_keyframe()``: over a link that carries it in a frame time, the
    keyframe due is that picture, marked for viewers in step to skip.

    **Slot and name.** Leave ``frame_field`` empty: the frames travel as plugin frames
    (``VideoFrame.plugin``) carrying the codec's ``name``, which is also how viewers
    list it (``CodecSpec.wire_name``). Only a codec that produces a format the wire
    defines names that slot (``raw``, ``vp9``, ``h264``, ``h265``). ``preference``
    stays 0 for a plugin codec: viewers ask for it by name, not by ``CodecPreference``.

    **Choice.** Each viewer lists the codecs it decodes; the agent streams only in a
    codec every current viewer of the session decodes, choosing again whenever one
    joins or leaves: the one a control viewer asked for (by name, or by
    ``CodecPreference``), else the highest ``auto_rank`` among the codecs with a slot
    of their own; a plugin codec is chosen unasked only when it is the one codec
    every viewer decodes. Left to the agent, a ``lossless`` slot codec carries small
    changes and the best lossy one every viewer decodes carries motion, and any
    change too large for the link's rate. The relay never passes a viewer a frame of
    a codec it did not list.

    **Browser.** ``browser_decoder`` names an ES module in the plugin's package; the
    server serves it from its own origin (``/codecs/<name>.js``) and the console's
    viewer imports it and lists the codec (the module's contract is at the top of
    ``plugins/web_console/web_src/src/codecs.js``).

    **Tests.** Subclass :class:`remote_core.testing.codec_contract.CodecContract`
    with ``spec`` and ``min_psnr`` (``None`` for a lossless codec): round trips
    through the wire, keyframes, the 10 s interval, sizes, garbage, and living beside
    every built-in codec in one viewer.

    Example (``examples/codec_png`` is the whole plugin)::

        def make_encoder(config):          # EncoderConfig -> Encoder
            from .codec import PngEncoder   # Pillow loads only here
            return PngEncoder(config)

        @hookimpl
        def register_codecs():
            return [CodecSpec(name="png", encoder_factory=make_encoder,
                              decoder_factory=make_decoder, auto_rank=5,
                              browser_decoder=Path(__file__).with_name("png.js"))]
    """


@hookspec
def register_capture_sources() -> list[CaptureSpec]:
    """Return screen-capture backends (agent). All results are collected.

    Example: ``return [CaptureSpec(name="mss", factory=MssCapture)]``
    """


@hookspec
def register_input_sinks() -> list[InputSpec]:
    """Return input-injection backends (agent). All results are collected.

    Example: ``return [InputSpec(name="pynput", factory=PynputInput)]``
    """


@hookspec
def register_auth_methods() -> list[AuthMethod]:
    """Return agent-authentication methods (server). All results are collected.

    The server tries them in ascending ``order``; the first that recognises the
    credential decides. A user JWT is never an agent credential.

    Example: ``return [AuthMethod(name="agentkey", order=10, factory=AgentKeyAuth)]``
    """


@hookspec
def register_stores() -> list[StoreSpec]:
    """Return storage backends (server). The database URL's scheme selects one.

    Example: ``return [StoreSpec(name="sql", schemes=("sqlite", "postgresql"), factory=...)]``
    """


@hookspec
def register_recording_stores() -> list[RecordingStoreSpec]:
    """Return where session recordings can go (server). The ``recordings_url`` setting's
    scheme selects one.

    Example: ``return [RecordingStoreSpec(name="s3", schemes=("s3",), factory=S3Store)]``
    """


@hookspec
def register_consent_prompts() -> list[ConsentPromptSpec]:
    """Return end-user consent prompts (agent). The agent uses the available one of
    highest priority.

    Example: ``return [ConsentPromptSpec(name="tk", priority=10, factory=TkPrompt)]``
    """


@hookspec
def register_web_apps() -> list[WebAppSpec]:
    """Return ASGI apps to mount into the server (the browser console ...).

    Example: ``return [WebAppSpec(name="console", path="/console", factory=make_app)]``
    """


@hookspec
def register_services() -> list[ServiceSpec]:
    """Return background services the server runs for its whole life (server).

    Each factory gets its plugin's options at start-up (before the server listens, so a
    bad option stops it with a clear error); the service's ``run(store)`` then works
    until shutdown and its ``audit_event(event)`` hears every audit event as it is
    written (the webhooks plugin delivers them).

    Example: ``return [ServiceSpec(name="webhooks", factory=WebhookService.from_options)]``
    """


@hookspec(firstresult=True)
def consent_policy(ask: ConsentAsk) -> ConsentDecision | None:
    """Decide a technician's request to view or control a session before the end user
    is asked (server).

    Called when a session opens (``ask.attended`` tells whether anyone is there to
    ask) and again for each further technician who joins an attended session. The
    first non-``None`` result wins; ``None`` from every plugin means the default
    policy: attended sessions ask the end user, managed sessions need no consent.

    Also called, with ``ask.backstage`` true, each time a technician asks for a
    BACKSTAGE terminal (a shell) on the machine (``ask.agent_id``): ``DENY`` forbids
    it, ``APPROVE`` opens it without asking, ``ASK`` or ``None`` asks the end user of an
    attended session; on a managed session ``None`` needs no consent and ``ASK`` is
    refused (nobody is there to answer).

    Example: ``return ConsentDecision.DENY if ask.technician_name == "eve" else None``;
    ``return ConsentDecision.DENY if ask.backstage and ask.agent_id in KIOSKS else None``
    """


@hookspec
def session_opened(session: SessionRecord) -> None:
    """Notification: a session row was created (server). Must not block."""


@hookspec
def session_closed(session: SessionRecord, reason: str) -> None:
    """Notification: a session ended (server). Must not block."""


@hookspec
def audit_event(event: AuditEvent) -> None:
    """Notification: an audit event was written (server). Must not block."""
