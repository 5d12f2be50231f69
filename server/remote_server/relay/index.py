"""Who is connected to this process: the live sessions and the identity indexes.

Synchronous and free of I/O, so a caller can read and change it with no
``await`` in between (registration must not interleave with another agent's).
It is the piece a deployment of several server processes replaces with a
shared directory; admission and lifecycle only ever reach sessions through it.
"""

from __future__ import annotations

from collections.abc import Iterable, KeysView, Mapping

from .session import Session

__all__ = ["SessionIndex"]


class SessionIndex:
    """Sessions by id, each agent's current session, unkeyed machines by uid, claimed codes.

    A support code is claimed from the moment an agent presents it until its session
    ends: the in-memory Pending -> Connected step of SPEC 3.2, taken before any
    database write so two presenters in one process never both get that far.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._by_agent: dict[str, Session] = {}
        self._by_uid: dict[str, str] = {}
        self._codes: set[str] = set()
        self._touched: set[str] = set()
        self.closing = False
        """Set at shutdown: nothing new is admitted."""
        self.fenced: str | None = None
        """Why agents are turned away for now, to retry elsewhere (a cluster node cut off
        from the bus whose sessions the other nodes closed); None: they are admitted."""

    # -- sessions ------------------------------------------------------------------------
    def get(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def for_agent(self, agent_id: str) -> Session | None:
        """The agent's current session (a newer connection replaces an older one)."""
        return self._by_agent.get(agent_id)

    def agent_ids(self) -> KeysView[str]:
        """The agents with a live session here."""
        return self._by_agent.keys()

    def sessions(self) -> list[Session]:
        return list(self._sessions.values())

    def touch(self, session: Session) -> None:
        """Note that what others see of ``session`` changed (for :meth:`drain_touched`)."""
        self._touched.add(session.session_id)

    def drain_touched(self) -> set[str]:
        """The sessions opened, ended or touched since the last call: what a cluster node
        tells the others at once, without looking at every session."""
        touched, self._touched = self._touched, set()
        return touched

    def add(self, session: Session) -> Session | None:
        """Index ``session`` as its agent's current one; return the one it replaces."""
        previous = self._by_agent.get(session.agent_id)
        self._sessions[session.session_id] = session
        self._touched.add(session.session_id)
        self._by_agent[session.agent_id] = session
        return previous

    def remove(self, session: Session) -> bool:
        """Forget ``session`` (and release its code); True if it was its agent's current."""
        self._sessions.pop(session.session_id, None)
        self._touched.add(session.session_id)
        if session.support_code is not None:
            # Single use from now on rests on the database (consumed_at): nothing to keep.
            self._codes.discard(session.support_code)
        if self._by_agent.get(session.agent_id) is session:
            del self._by_agent[session.agent_id]
            return True
        return False

    # -- unkeyed machines by uid (SPEC 5.4) ------------------------------------------------------
    @property
    def uids(self) -> Mapping[str, str]:
        """``machine_uid -> agent_id`` of unkeyed machines (keyed ones are never here)."""
        return self._by_uid

    def restore_uids(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._by_uid = dict(pairs)

    def remember_uid(self, machine_uid: str, agent_id: str) -> None:
        self._by_uid[machine_uid] = agent_id

    def forget_machine(self, agent_id: str) -> None:
        """Drop every uid that names ``agent_id`` (the machine was removed)."""
        for uid in [u for u, a in self._by_uid.items() if a == agent_id]:
            del self._by_uid[uid]

    # -- support codes --------------------------------------------------------------------------
    def claim_code(self, code: str) -> bool:
        """Claim ``code`` for one presenter; False if another holds it already."""
        if code in self._codes:
            return False
        self._codes.add(code)
        return True

    def release_code(self, code: str) -> None:
        """Give a claim back: the database never bound the code to a session."""
        self._codes.discard(code)
