"""Who the end user has admitted to one attended session, with no I/O.

Consent is per technician: the end user allowed the one the support code
named, and anyone else who asks to join gets a ``ConsentRequest`` of their
own (SPEC 3.1 for the first; CONTRACT's 409 while asking for the rest).

Pairing answers with questions: a ``ConsentResponse`` names the session and
nothing else, so the book keeps at most one question open per session and
queues further asks; the next answer is the answer to the open question. The
agent shows one dialog at a time (it ignores a second request while one is
open), so the order of questions is the one thing both ends share. When the
server gives up on a question (its timeout runs a little past the agent's own
dialog), the agent may still answer it late: that late answer is discarded,
never taken for the next question, so a lost race can refuse a technician but
never admit one the end user did not allow.
"""

from __future__ import annotations

import enum
import time
from collections import deque
from dataclasses import dataclass

from remote_core.protocol import Channel

__all__ = ["Ask", "ConsentBook", "Standing"]


@dataclass(frozen=True, slots=True)
class Ask:
    """One question for the end user: may ``name`` view (and with ``control``, control)?
    With a ``channel``: may ``name`` open a terminal (a shell) on the machine, or move
    files to and from it?

    ``first`` is the session's own technician: that answer makes the session live
    or ends it; any other answer admits or refuses only the technician it names (a
    channel's answer only that channel: being allowed to view is no consent to a
    shell or to files, nor the other way round).
    """

    user_id: str | None
    name: str
    control: bool
    first: bool = False
    channel: Channel | None = None


class Standing(enum.Enum):
    """Where one technician stands with the end user of one session."""

    UNASKED = "unasked"
    ASKING = "asking"
    ADMITTED = "admitted"
    DENIED = "denied"
    TIMED_OUT = "timed out"


class ConsentBook:
    """The questions, open and queued, and the answers of one attended session.

    :param timeout: seconds the server waits for an answer to an open question.
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.open: Ask | None = None
        self.deadline: float | None = None
        self.waiting: deque[Ask] = deque()
        self.admitted: dict[str, bool] = {}  # user id -> whether control was consented
        self.refused: dict[str, Standing] = {}
        self.channels: dict[Channel, set[str]] = {c: set() for c in Channel}  # user ids allowed
        self.channels_refused: dict[Channel, dict[str, Standing]] = {c: {} for c in Channel}
        self.late = 0  # answers still owed to questions the server gave up on

    def standing(self, user_id: str, *, channel: Channel | None = None) -> Standing:
        """Where ``user_id`` stands for viewing, or for a ``channel`` (a terminal, files)."""
        admitted = self.admitted if channel is None else self.channels[channel]
        refused = self.refused if channel is None else self.channels_refused[channel]
        if user_id in admitted:
            return Standing.ADMITTED
        if user_id in refused:
            return refused[user_id]
        if any(a.user_id == user_id and a.channel is channel for a in self._asks()):
            return Standing.ASKING
        return Standing.UNASKED

    def _asks(self) -> list[Ask]:
        return ([self.open] if self.open is not None else []) + list(self.waiting)

    def queue(self, ask: Ask) -> None:
        """Add a question; :meth:`next` opens it once every earlier one is answered."""
        self.waiting.append(ask)

    def next(self, now: float | None = None) -> Ask | None:
        """Open the next queued question if none is open; return it for sending."""
        if self.open is not None or not self.waiting:
            return None
        self.open = self.waiting.popleft()
        self.deadline = (time.monotonic() if now is None else now) + self.timeout
        return self.open

    def answered(self) -> Ask | None:
        """The question an incoming answer belongs to, closed now; None for an answer nobody
        is waiting for (nothing asked, or the late answer to a question given up on)."""
        if self.late:
            self.late -= 1
            return None
        return self._close()

    def expire(self, now: float | None = None) -> Ask | None:
        """Give up on the open question if its time is over; return it."""
        now = time.monotonic() if now is None else now
        if self.open is None or self.deadline is None or now < self.deadline:
            return None
        self.late += 1
        return self._close()

    def _close(self) -> Ask | None:
        ask, self.open, self.deadline = self.open, None, None
        return ask

    def admit(self, ask: Ask) -> None:
        if ask.user_id is None:
            return
        if ask.channel is not None:
            self.channels[ask.channel].add(ask.user_id)
            self.channels_refused[ask.channel].pop(ask.user_id, None)
        else:
            self.admitted[ask.user_id] = ask.control
            self.refused.pop(ask.user_id, None)

    def refuse(self, ask: Ask, standing: Standing) -> None:
        if ask.user_id is not None:
            refused = self.refused if ask.channel is None else self.channels_refused[ask.channel]
            refused[ask.user_id] = standing
