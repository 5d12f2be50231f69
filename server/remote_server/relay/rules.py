"""The small decisions the relay makes about a session, with no I/O.

Session types, who may control, who may view, how the consent policy's
verdict becomes a consent state, and what an agent's reports say.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from remote_core.errors import SessionRefused
from remote_core.protocol import Channel, pb
from remote_core.records import (
    CONSENT_GRANTED,
    CONSENT_NOT_REQUIRED,
    CONSENT_PENDING,
    MachineReport,
    User,
    tenant_of,
)
from remote_core.textrules import MAX_TAGS, acceptable, escaped
from remote_core.types import ConsentDecision

from ..settings import ServerSettings
from .consent import Standing

__all__ = [
    "CHANNEL_OF_TYPE",
    "CLOSED",
    "MAX_CODECS",
    "OPENED",
    "can_control",
    "can_use",
    "channel_consent_refusal",
    "channel_refusal",
    "check_session_type",
    "consent_refusal",
    "initial_consent_state",
    "reported_text",
    "shows_session_panel",
    "status_report",
    "update_status_detail",
    "viewer_codecs",
    "viewing_refusal",
]

_SERVED = frozenset({pb.SCREEN_CONTROL, pb.VIEW_ONLY})
_SERVED_VIEWERS = _SERVED | {pb.BACKSTAGE, pb.FILE_TRANSFER}
CHANNEL_OF_TYPE = {pb.BACKSTAGE: Channel.TERMINAL, pb.FILE_TRANSFER: Channel.FILES}
"""The viewer's own channel each session type opens (the screen's types open none)."""
_WHAT = {Channel.TERMINAL: "a backstage terminal", Channel.FILES: "file transfer"}
OPENED = {Channel.TERMINAL: "backstage.opened", Channel.FILES: "files.opened"}
"""The audit kind of a channel's opening."""
CLOSED = {Channel.TERMINAL: "backstage.closed", Channel.FILES: "files.closed"}
"""The audit kind of a channel's end."""

MAX_CODECS = 64
"""Most codec names a viewer may list in ``SessionRequest.codecs``."""
_CODEC_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")  # a registration name, bounded


def shows_session_panel(settings: ServerSettings, *, managed: bool, organization: str) -> bool:
    """Whether the end user of this machine's session sees the session panel: always when
    attended; when managed, as the policy for the machine's organization says
    (``session_panel_organizations``), or for every organization
    (``session_panel_managed``)."""
    return (not managed or settings.session_panel_managed
            or organization in settings.session_panel_organizations)


def check_session_type(session_type: int, *, viewer: bool = False) -> None:
    """SCREEN_CONTROL and VIEW_ONLY are served, and for a viewer BACKSTAGE (a terminal) and
    FILE_TRANSFER (an agent's own session is its screen's); others are refused clearly."""
    if session_type not in (_SERVED_VIEWERS if viewer else _SERVED):
        try:
            name = pb.SessionType.Name(session_type)
        except ValueError:
            name = str(session_type)
        if session_type in CHANNEL_OF_TYPE:
            raise SessionRefused(f"an agent opens its session as SCREEN_CONTROL; {name} "
                                 "is a viewer's session type")
        raise SessionRefused(f"session type {name} is not supported; use "
                             + ("SCREEN_CONTROL, VIEW_ONLY, BACKSTAGE or FILE_TRANSFER"
                                if viewer else "SCREEN_CONTROL or VIEW_ONLY"))


def viewer_codecs(codecs: Sequence[str]) -> tuple[str, ...]:
    """The codec names a viewer listed, checked: the relay keeps them for the viewer's
    whole stay and the agent is told them, so they must be few, short and well-formed.

    :raises SessionRefused: they are not.
    """
    if len(codecs) > MAX_CODECS:
        raise SessionRefused(f"SessionRequest.codecs lists {len(codecs)} codecs; "
                             f"at most {MAX_CODECS} are accepted")
    for name in codecs:
        if not _CODEC_NAME.match(name):
            raise SessionRefused(f"SessionRequest.codecs holds {escaped(name, 40)!r}, which is "
                                 "no codec name (lower-case letters, digits and '_', "
                                 "at most 64)")
    return tuple(dict.fromkeys(codecs))


def can_control(user: User) -> bool:
    return user.is_admin or "control" in user.permissions


def can_use(channel: Channel, user: User) -> bool:
    """Whether ``user`` holds the permission of ``channel`` (its value names it)."""
    return user.is_admin or channel.value in user.permissions


def channel_refusal(channel: Channel, user: User | None, organization: str, *,
                    tenant_id: str) -> str | None:
    """Why ``user`` may not open ``channel`` (a terminal, files) on a machine of
    ``organization`` in ``tenant_id`` now, or None if it may (its own permission: viewing
    or control is not enough)."""
    if user is None or user.disabled:
        return "the user is disabled or no longer exists"
    if tenant_of(user.tenant_id) != tenant_id:
        return "the machine is another tenant's"
    if not can_use(channel, user):
        return (f"{_WHAT[channel]} needs the '{channel.value}' permission, which the user "
                "lacks")
    if not (user.is_admin or "*" in user.client_access or organization in user.client_access):
        return "the user has no access to this machine's organization"
    return None


def channel_consent_refusal(channel: Channel, standing: Standing) -> str | None:
    """Why a technician standing so with the end user may not open ``channel`` now, or
    None."""
    what = _WHAT[channel]
    if standing is Standing.ADMITTED:
        return None
    if standing is Standing.ASKING:
        return (f"the end user is being asked to allow your {what.removeprefix('a ')}; ask "
                "again once they answer")
    if standing is Standing.DENIED:
        return f"the end user denied your request for {what}"
    if standing is Standing.TIMED_OUT:
        return f"the end user did not answer your request for {what} in time"
    return (f"the end user has not allowed {what}; request a viewer token for it to have "
            "them asked")


def viewing_refusal(user: User | None, organization: str, *, tenant_id: str) -> str | None:
    """Why ``user`` may not view a machine of ``organization`` in ``tenant_id`` now, or
    None if it may."""
    if user is None or user.disabled:
        return "the user is disabled or no longer exists"
    if tenant_of(user.tenant_id) != tenant_id:
        return "the machine is another tenant's"
    if not (user.is_admin or {"view", "control"} & set(user.permissions)):
        return "the user may not view sessions"
    if not (user.is_admin or "*" in user.client_access or organization in user.client_access):
        return "the user has no access to this machine's organization"
    return None


def consent_refusal(standing: Standing, technician_name: str) -> str | None:
    """Why a technician standing so with the end user may not join an attended session now,
    or None. The end user consented to the technician the support code named; anyone else
    is asked in turn (their first request for a viewer token asks), and a "no" stands."""
    if standing is Standing.ADMITTED:
        return None
    if standing is Standing.ASKING:
        return "the end user is being asked to admit you; ask again once they answer"
    if standing is Standing.DENIED:
        return "the end user denied your request to join this session"
    if standing is Standing.TIMED_OUT:
        return "the end user did not answer your request to join this session in time"
    return (f"the end user consented to {technician_name or 'another technician'} only; "
            "request a viewer token to have the end user asked")


def initial_consent_state(decision: ConsentDecision | None, attended: bool) -> str:
    """The session's starting consent state (SPEC 3.1); DENY is the caller's to refuse.

    No verdict means the default policy: attended sessions ask, managed ones need not.
    """
    if decision is ConsentDecision.ASK:
        return CONSENT_PENDING
    if decision is ConsentDecision.APPROVE:
        return CONSENT_GRANTED if attended else CONSENT_NOT_REQUIRED
    return CONSENT_PENDING if attended else CONSENT_NOT_REQUIRED


def reported_text(value: str) -> str | None:
    """An agent-reported text as stored: ``None`` ("not reported") when it is empty or
    breaks the one rule every stored text follows (remote_core.textrules)."""
    return value if value and acceptable(value) else None


def status_report(agent_id: str, status: Any) -> tuple[MachineReport, list[str]]:
    """An ``AgentStatus`` as a machine update, and the fields refused by the text rule.

    Empty fields mean "not reported"; so do refused ones, which the caller logs.
    """
    texts = {name: getattr(status, name) for name in
             ("hostname", "os_version", "agent_version", "organization", "site")}
    kept = {name: reported_text(value) for name, value in texts.items()}
    refused = [name for name, value in texts.items() if value and kept[name] is None]
    tags: tuple[str, ...] | None = tuple(status.tags) if status.tags else None
    if tags is not None and (len(tags) > MAX_TAGS or not all(map(acceptable, tags))):
        refused.append("tags")
        tags = None
    plugins: tuple[str, ...] | None = tuple(status.plugins) if status.plugins else None
    if plugins is not None and (len(plugins) > MAX_TAGS or not all(map(acceptable, plugins))):
        refused.append("plugins")
        plugins = None
    report = MachineReport(
        agent_id=agent_id, hostname=kept["hostname"], os_version=kept["os_version"],
        agent_version=kept["agent_version"], organization=kept["organization"],
        site=kept["site"], tags=tags, is_elevated=status.is_elevated, status="online",
        plugins=plugins)
    return report, refused


def update_status_detail(status: Any) -> dict[str, Any]:
    """An ``UpdateStatus`` as an audit event's detail; a progress outside 0-100 (SPEC 8) is
    recorded as unknown (``None``)."""
    state = (pb.UpdateState.Name(status.state) if status.state in pb.UpdateState.values()
             else str(status.state))
    progress = status.progress_percent if 0 <= status.progress_percent <= 100 else None
    return {"version": escaped(status.current_version, 64), "state": state,
            "error": escaped(status.error_message, 500), "progress": progress}
