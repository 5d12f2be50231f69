"""One way to page every list of the API (CONTRACT 2): ``limit``, an opaque ``cursor``, and
a ``Link: <...>; rel="next"`` header (RFC 8288) while more items exist.

The body stays a JSON array. Pages are keyset pages: the cursor holds the creation time
and id of the last item a page held, and the next page starts just past it, so rows
inserted or removed between two requests neither repeat an item nor skip one (an offset
would do both).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote, urlencode

from starlette.requests import Request

from remote_core.records import Keyset

from ..problem import Problem
from .schemas import DEFAULT_LIMIT, MAX_LIMIT, PageQuery

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "Cursors", "PageQuery", "Paged", "collect",
           "next_link"]

SCANS = 10
"""Store reads one request may make to fill a page whose items the caller may not all see;
past that the page is answered short, with a ``next`` link where the scan stopped."""

_T = TypeVar("_T")


@dataclass(frozen=True)
class Paged(Generic[_T]):
    """A handler's answer for one page: the items, and the cursor of the next page."""

    items: list[_T]
    cursor: str | None


class Cursors:
    """Cursors of one list: its name and its ids' type, so a cursor of another list, or one
    typed by hand, is a 422 naming the parameter, never a 500."""

    def __init__(self, name: str, id_type: type[str] | type[int] = str) -> None:
        self.name = name
        self.id_type = id_type

    def encode(self, key: Keyset) -> str:
        payload = [self.name, key.created_at.astimezone(UTC).isoformat(), key.id]
        raw = json.dumps(payload, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    def decode(self, cursor: str | None) -> Keyset | None:
        if cursor is None:
            return None
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            name, created, ident = json.loads(raw)
            moment = datetime.fromisoformat(created)
        except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
            raise self.refused() from None
        if (name != self.name or moment.tzinfo is None or isinstance(ident, bool)
                or not isinstance(ident, self.id_type)):
            raise self.refused()
        return Keyset(moment.astimezone(UTC), ident)

    def refused(self) -> Problem:
        return Problem(422, f"query field 'cursor': not a cursor of the {self.name} list "
                            "(take it from the Link header of the previous page)",
                       extra={"errors": [{"field": "cursor",
                                          "message": f"not a cursor of the {self.name} list"}]})


Fetch = Callable[[Keyset | None, int], Awaitable[list[_T]]]


async def collect(fetch: Fetch[_T], key: Callable[[_T], Keyset], cursors: Cursors,
                  query: PageQuery, keep: Callable[[_T], Awaitable[bool]] | None = None,
                  ) -> Paged[_T]:
    """One page of a list the store pages: ``fetch(after, n)`` reads up to ``n`` items past
    ``after``; ``keep`` drops the ones the caller may not see (the page is then refilled,
    for up to :data:`SCANS` reads). One more item than the page holds is read, so a
    ``next`` cursor is given only when another item exists."""
    limit = query.limit
    position = cursors.decode(query.cursor)
    items: list[_T] = []
    for _ in range(SCANS):
        batch = await fetch(position, limit + 1)
        for item in batch:
            if len(items) == limit:
                return Paged(items, cursors.encode(position) if position else None)
            position = key(item)
            if keep is None or await keep(item):
                items.append(item)
        if len(batch) <= limit:
            return Paged(items, None)
    return Paged(items, cursors.encode(position) if position else None)


def next_link(request: Request, cursor: str) -> str:
    """The ``Link`` header of a page: this request's path and parameters with the next
    cursor, as a relative reference (right behind any proxy, whatever its scheme)."""
    scope = request.scope
    path = quote(scope.get("root_path", "") + scope["path"], safe="/:@!$&'()*+,;=-._~")
    params: list[tuple[str, Any]] = [(k, v) for k, v in request.query_params.multi_items()
                                     if k != "cursor"]
    params.append(("cursor", cursor))
    return f'<{path}?{urlencode(params)}>; rel="next"'
