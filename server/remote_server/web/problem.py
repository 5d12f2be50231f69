"""RFC 9457 problem details: the one shape every HTTP error of the API takes (CONTRACT 2).

Each problem carries a stable ``type`` URI (:mod:`.problem_types`); the code raising one
names its type where the status alone does not say which error it is."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from remote_core.errors import ConflictError, NotFoundError, StoreError

from .problem_types import BY_SLUG, BY_STATUS, ProblemType

__all__ = [
    "PROBLEM_MEDIA_TYPE",
    "Problem",
    "exception_handlers",
    "problem_response",
    "problem_type",
    "validation_problem",
]

log = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE = "application/problem+json"


class Problem(Exception):
    """Raised anywhere in a handler; turned into a problem+json response.

    ``detail`` is shown to the client, so it must never carry a secret.
    """

    def __init__(self, status: int, detail: str, *, kind: str | None = None,
                 headers: Mapping[str, str] | None = None,
                 extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.kind = problem_type(status, kind)
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})

    @classmethod
    def unauthorized(cls, detail: str, kind: str = "unauthorized") -> Problem:
        return cls(401, detail, kind=kind, headers={"WWW-Authenticate": "Bearer"})

    @classmethod
    def rate_limited(cls, retry_after: float, detail: str) -> Problem:
        seconds = max(1, math.ceil(retry_after))
        return cls(429, detail, headers={"Retry-After": str(seconds)},
                   extra={"retry_after": seconds})


def problem_type(status: int, kind: str | None = None) -> ProblemType | None:
    """The type named ``kind`` (its status must be ``status``), else the status's own;
    ``None`` (``about:blank``) for a status the API has no type for."""
    if kind is None:
        return BY_STATUS.get(status)
    found = BY_SLUG[kind]
    if found.status != status:
        raise ValueError(f"problem type {kind!r} is a {found.status}, not a {status}")
    return found


def problem_response(status: int, detail: str, *, kind: ProblemType | None = None,
                     headers: Mapping[str, str] | None = None,
                     extra: Mapping[str, Any] | None = None) -> JSONResponse:
    kind = kind or problem_type(status)
    uri, title = (kind.uri, kind.title) if kind else ("about:blank", HTTPStatus(status).phrase)
    body = {"type": uri, "title": title, "status": status, "detail": detail,
            **(extra or {})}
    return JSONResponse(body, status_code=status,
                        headers={"Cache-Control": "no-store", **(headers or {})},
                        media_type=PROBLEM_MEDIA_TYPE)


def _where(loc: Sequence[int | str]) -> str:
    return ".".join(str(part) for part in loc) or "body"


def validation_problem(exc: ValidationError, source: str) -> Problem:
    """A 422 naming every offending field, e.g. ``body field 'password': Field required``."""
    errors = [{"field": _where(e["loc"]), "message": e["msg"]} for e in exc.errors()]
    first = errors[0] if errors else {"field": source, "message": "invalid"}
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    detail = f"{source} field '{first['field']}': {first['message']}{more}"
    return Problem(422, detail, extra={"errors": errors})


async def _on_problem(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Problem)
    return problem_response(exc.status, exc.detail, kind=exc.kind, headers=exc.headers,
                            extra=exc.extra)


async def _on_http_exception(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code < 400:
        return Response(status_code=exc.status_code, headers=exc.headers)
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    return problem_response(exc.status_code, detail, headers=exc.headers)


async def _on_store_error(_request: Request, exc: Exception) -> Response:
    """A row that vanished or collided between a handler's check and its write."""
    if isinstance(exc, NotFoundError):
        return problem_response(404, "the resource no longer exists")
    return problem_response(409, "the change conflicts with the current state; retry",
                            kind=BY_SLUG["conflict"])


async def _on_store_unavailable(request: Request, exc: Exception) -> Response:
    """The database failed or cannot be reached: the client may retry, and it gets the
    API's one error shape rather than a 500 (the store's message never carries statement
    parameters, so it is logged as it is, on one line)."""
    log.error("database unavailable on %s %s: %s", request.method, request.url.path, exc)
    return problem_response(503, "the database is unavailable; try again shortly")


async def _on_unexpected(request: Request, exc: Exception) -> Response:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response(500, "internal server error")


exception_handlers: dict[Any, Any] = {
    Problem: _on_problem,
    HTTPException: _on_http_exception,
    NotFoundError: _on_store_error,
    ConflictError: _on_store_error,
    StoreError: _on_store_unavailable,
    Exception: _on_unexpected,
}
"""Starlette ``exception_handlers`` for the whole app."""
