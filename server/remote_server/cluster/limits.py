"""The rate limits and lockouts shared by every node of a cluster, kept in Redis.

The same two primitives as :class:`~remote_server.web.ratelimit.MemoryRateLimiter`
(a fixed-window counter and a failure count that locks a key out), each one
Lua script, so a check and its count are one atomic round trip: an attacker
spreading attempts over every node gets no more tries than on one.
"""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis

from ..web.ratelimit import RateLimiter

__all__ = ["RedisRateLimiter"]

_HIT = """
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if n > tonumber(ARGV[1]) then return redis.call('PTTL', KEYS[1]) end
return -1
"""

_FAILURE = """
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if n >= tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
  return 1
end
return 0
"""


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


class RedisRateLimiter(RateLimiter):
    """The limits in one Redis database, under keys that start with ``prefix``."""

    def __init__(self, url: str, prefix: str = "remote-support:") -> None:
        self._redis: Redis = Redis.from_url(url)
        self._prefix = prefix
        self._hit: Any = self._redis.register_script(_HIT)
        self._failure: Any = self._redis.register_script(_FAILURE)

    def _key(self, kind: str, bucket: str, key: str) -> str:
        return f"{self._prefix}{kind}:{bucket}:{key}"

    async def hit(self, bucket: str, key: str, limit: int, window: float) -> float | None:
        left = int(await self._hit(keys=[self._key("hits", bucket, key)],
                                   args=[limit, _ms(window)]))
        return None if left < 0 else left / 1000

    async def locked_for(self, bucket: str, key: str) -> float | None:
        left = int(await self._redis.pttl(self._key("lock", bucket, key)))
        return left / 1000 if left > 0 else None

    async def record_failure(self, bucket: str, key: str, threshold: int, window: float,
                             lockout: float) -> bool:
        locked = await self._failure(
            keys=[self._key("fails", bucket, key), self._key("lock", bucket, key)],
            args=[threshold, _ms(window), _ms(lockout)])
        return bool(int(locked))

    async def clear_failures(self, bucket: str, key: str) -> bool:
        removed = await self._redis.delete(self._key("lock", bucket, key))
        await self._redis.delete(self._key("fails", bucket, key))
        return bool(removed)

    async def close(self) -> None:
        await self._redis.aclose()
