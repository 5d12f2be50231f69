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
        return [CodecSpec(name="my_codec", preference=1, frame_field="raw",
                          encoder_factory=make_encoder, decoder_factory=make_decoder)]

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
        ConsentDecision,
        ConsentPromptSpec,
        InputSpec,
        SessionContext,
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
    "register_stores",
    "register_web_apps",
    "session_closed",
    "session_opened",
]


@hookspec
def register_codecs() -> list[CodecSpec]:
    """Return the video codecs this plugin provides.

    Called once at start-up on the agent and the viewers. All results are
    collected; two codecs with one name are an error. Encoders and decoders are
    built through the spec's factories, so heavy libraries load only when used.
    An encoder returns :class:`remote_core.types.EncodedFrame` values and a
    decoder takes them (:mod:`remote_core.interfaces`); the agent and the viewers
    carry them in the ``VideoFrame`` slot the spec names, so a codec never
    builds a protobuf message.

    Example: ``return [CodecSpec(name="raw_zstd", preference=1, frame_field="raw", ...)]``
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


@hookspec(firstresult=True)
def consent_policy(session: SessionContext) -> ConsentDecision | None:
    """Decide consent for a new session before the end user is asked.

    Called once per session (server). The first non-``None`` result wins;
    ``None`` from every plugin means the default policy: attended sessions ask
    the end user, managed sessions need no consent.

    Example: ``return ConsentDecision.DENY if session.technician_name == "eve" else None``
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
