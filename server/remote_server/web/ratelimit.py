"""Rate limits and the support-code lockout (SPEC 8), behind a small interface.

:class:`RateLimiter` states the policy on top of two primitives, a fixed-window
counter and a consecutive-failure lockout; :class:`MemoryRateLimiter` keeps
them in process memory. A shared backend (PostgreSQL, Redis) implements the
same primitives so several server processes enforce one limit.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from ..observe.counters import rate_limited

__all__ = ["MemoryRateLimiter", "RateLimiter"]

Clock = Callable[[], float]


class RateLimiter(ABC):
    """Every limit is per client IP but the account guard. A ``float`` result is the
    seconds to wait."""

    LOGIN = ("login", 8, 60.0)
    CHANGE_PASSWORD = ("change_password", 5, 60.0)
    CODE_VALIDATION = ("code", 15, 60.0)
    CODE_FAILURES_BEFORE_LOCKOUT = 10
    CODE_FAILURE_WINDOW = 15 * 60.0
    """Failures are counted in this window, and a success does not reset them: one valid
    code every nine guesses would otherwise keep an address guessing forever."""
    CODE_LOCKOUT_SECONDS = 15 * 60.0
    CSP_REPORT = ("csp_report", 60, 60.0)
    ACCOUNT_GUARD = "login_account"
    ACCOUNT_FAILURES_BEFORE_GUARD = 20
    ACCOUNT_FAILURE_WINDOW = 15 * 60.0
    ACCOUNT_GUARD_SECONDS = 15 * 60.0
    """Failed logins to one account from all addresses together: the 20th within 15 minutes
    raises the account's guard for 15 minutes (T06, ASVS 6.1.1). While it is up, only the
    addresses the account has logged in from may try a password (the login route asks the
    store), so a distributed guesser is stopped without locking the owner out."""

    # -- primitives a backend implements ------------------------------------
    @abstractmethod
    async def hit(self, bucket: str, key: str, limit: int, window: float) -> float | None:
        """Count one request in ``key``'s fixed window; ``None`` if within ``limit``."""

    @abstractmethod
    async def locked_for(self, bucket: str, key: str) -> float | None:
        """Seconds left of ``key``'s lockout, or ``None``."""

    @abstractmethod
    async def record_failure(self, bucket: str, key: str, threshold: int, window: float,
                             lockout: float) -> bool:
        """One more failure in ``key``'s fixed ``window``; the ``threshold``-th within it
        locks ``key`` out for ``lockout`` seconds (and answers True)."""

    @abstractmethod
    async def clear_failures(self, bucket: str, key: str) -> bool:
        """Forget ``key``'s failures and lift its lockout; True when one was in force."""

    # -- the policy (SPEC 8) --------------------------------------------------
    async def check_login(self, client_ip: str) -> float | None:
        return rate_limited("login", await self.hit(*self._split(self.LOGIN, client_ip)))

    async def check_change_password(self, client_ip: str) -> float | None:
        return rate_limited("change_password",
                            await self.hit(*self._split(self.CHANGE_PASSWORD, client_ip)))

    async def check_csp_report(self, client_ip: str) -> float | None:
        """Browsers' policy-violation reports: public, so capped per client."""
        return rate_limited("csp_report",
                            await self.hit(*self._split(self.CSP_REPORT, client_ip)))

    async def check_code_attempt(self, client_ip: str) -> float | None:
        """``None`` = allowed (and counted against 15/min/IP); else seconds to wait."""
        bucket = self.CODE_VALIDATION[0]
        locked = await self.locked_for(bucket, client_ip)
        if locked is not None:
            return rate_limited("support_code_lockout", locked)
        return rate_limited("support_code",
                            await self.hit(*self._split(self.CODE_VALIDATION, client_ip)))

    async def record_code_result(self, client_ip: str, ok: bool) -> bool:
        """10 failures from one IP within 15 minutes lock it out for 15 minutes, whatever
        successes came between them. True when this result started a lockout."""
        if ok:
            return False
        return await self.record_failure(self.CODE_VALIDATION[0], client_ip,
                                         self.CODE_FAILURES_BEFORE_LOCKOUT,
                                         self.CODE_FAILURE_WINDOW, self.CODE_LOCKOUT_SECONDS)

    async def account_guard_for(self, username: str) -> float | None:
        """Seconds left of ``username``'s guard, or ``None`` when it is down."""
        return await self.locked_for(self.ACCOUNT_GUARD, username)

    async def record_account_failure(self, username: str) -> bool:
        """One more failed login to ``username`` from any address; True when this one
        raised the guard. Counted for any name asked for, existing or not, so the guard
        tells nothing about which accounts exist."""
        return await self.record_failure(self.ACCOUNT_GUARD, username,
                                         self.ACCOUNT_FAILURES_BEFORE_GUARD,
                                         self.ACCOUNT_FAILURE_WINDOW, self.ACCOUNT_GUARD_SECONDS)

    async def clear_account_guard(self, username: str) -> bool:
        """An administrator's unlock: the account's failed logins are forgotten and its
        guard comes down at once; True when the guard was up."""
        return await self.clear_failures(self.ACCOUNT_GUARD, username)

    @staticmethod
    def _split(rule: tuple[str, int, float], key: str) -> tuple[str, str, int, float]:
        bucket, limit, window = rule
        return bucket, key, limit, window


@dataclass
class _Window:
    start: float
    length: float
    count: int = 0

    def over(self, now: float) -> bool:
        return now >= self.start + self.length


@dataclass
class _Failures:
    window: _Window
    locked_until: float = 0.0


class MemoryRateLimiter(RateLimiter):
    """In-process state; one server process. Stale entries are swept so memory stays bounded."""

    SWEEP_AT = 10_000

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._windows: dict[tuple[str, str], _Window] = {}
        self._failures: dict[tuple[str, str], _Failures] = {}

    async def hit(self, bucket: str, key: str, limit: int, window: float) -> float | None:
        now = self._clock()
        slot = (bucket, key)
        current = self._windows.get(slot)
        if current is None or current.over(now):
            if len(self._windows) >= self.SWEEP_AT:
                self._sweep(now)
            current = self._windows[slot] = _Window(start=now, length=window)
        if current.count >= limit:
            return current.start + current.length - now
        current.count += 1
        return None

    async def locked_for(self, bucket: str, key: str) -> float | None:
        state = self._failures.get((bucket, key))
        if state is None:
            return None
        left = state.locked_until - self._clock()
        return left if left > 0 else None

    async def record_failure(self, bucket: str, key: str, threshold: int, window: float,
                             lockout: float) -> bool:
        now = self._clock()
        if len(self._failures) >= self.SWEEP_AT:
            self._sweep(now)
        state = self._failures.get((bucket, key))
        if state is None:
            state = self._failures[(bucket, key)] = _Failures(_Window(now, window))
        elif state.window.over(now):
            state.window = _Window(now, window)
        state.window.count += 1
        if state.window.count < threshold:
            return False
        state.window.count = 0
        state.locked_until = now + lockout
        return True

    async def clear_failures(self, bucket: str, key: str) -> bool:
        state = self._failures.pop((bucket, key), None)
        return state is not None and state.locked_until > self._clock()

    def _sweep(self, now: float) -> None:
        for slot, window in list(self._windows.items()):
            if window.over(now):
                del self._windows[slot]
        for slot, state in list(self._failures.items()):
            if state.locked_until <= now and state.window.over(now):
                del self._failures[slot]
