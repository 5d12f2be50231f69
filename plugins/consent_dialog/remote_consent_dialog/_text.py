"""The words both prompts use, so the dialog and the console say the same thing.

Every string comes from the ``remote_consent_dialog`` catalogue (``locale/``), in the
language of the system locale (:mod:`remote_core.catalogue`).
"""

from __future__ import annotations

import gettext
from dataclasses import dataclass
from pathlib import Path

from remote_core.catalogue import translation
from remote_core.types import ConsentAsk

__all__ = ["DOMAIN", "LOCALE", "Wording", "catalogue", "question", "wording"]

DOMAIN = "remote_consent_dialog"
LOCALE = Path(__file__).resolve().parent / "locale"


def catalogue() -> gettext.NullTranslations:
    """The catalogue of the current locale (read again each time: the locale may change)."""
    return translation(DOMAIN, LOCALE)


@dataclass(frozen=True)
class Wording:
    """What the dialog shows, translated: one field per line or label."""

    title: str
    asks: str
    technician_label: str
    technician: str
    organization_label: str
    organization: str
    access_label: str
    access: str
    recording_label: str
    recording: str
    connected: str
    allow: str
    deny: str
    countdown: str
    """With ``{secs}`` left to fill."""
    timeout: str


def wording(request: ConsentAsk) -> Wording:
    """The dialog's words for ``request`` in the current language."""
    _ = catalogue().gettext
    who = request.technician_name or _("A technician")
    if request.backstage:
        asks = _("{who} asks to open a terminal (a command line) on this computer, with "
                 "your account's rights.").format(who=who)
        access = _("Terminal (command line)")
    elif request.file_transfer:
        asks = _("{who} asks to browse, download and upload files on this computer, with "
                 "your account's rights.").format(who=who)
        access = _("Files (browse, download, upload)")
    else:
        asks = (_("{who} asks to view and control this computer's screen.") if request.control
                else _("{who} asks to view this computer's screen.")).format(who=who)
        access = _("View and control") if request.control else _("View only")
    connected = (_("Connected now: {names}.").format(names=", ".join(request.connected))
                 if request.connected else "")
    return Wording(
        title=_("Remote support request"),
        asks=asks,
        technician_label=_("Technician:"), technician=who,
        organization_label=_("Organization:"),
        organization=request.organization or _("not stated"),
        access_label=_("Access:"),
        access=access,
        recording_label=_("Recording:"),
        recording=(_("This session will be recorded.") if request.recorded
                   else _("This session will not be recorded.")),
        connected=connected,
        allow=_("&Allow"), deny=_("&Deny"),
        countdown=_("Denied automatically in {secs} s"),
        timeout=_("Allow? The request is denied in {secs} seconds without an answer.").format(
            secs=request.timeout_secs),
    )


def question(request: ConsentAsk) -> str:
    """The whole question as text, for the console prompt."""
    words = wording(request)
    lines = [words.asks]
    if request.organization:
        lines.append(f"{words.organization_label} {words.organization}")
    lines.append(words.recording)
    if words.connected:
        lines.append(words.connected)
    lines.append(words.timeout)
    return "\n".join(lines)
