"""Request bodies read within bounds: size, time and JSON nesting.

Public endpoints read bodies before anyone is authenticated, so a body is
refused by its declared ``Content-Length`` before a byte of it is read,
capped while it streams, given a fixed time to arrive (a client that sends a
byte a minute holds nothing for long), and parsed as JSON only as deep as
Python's parser can go: deeper is a 400, never a ``RecursionError``.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from starlette.requests import Request

from .problem import Problem

__all__ = ["parse_json", "read_body"]

# A refused body is not drained: the connection closes after the answer.
_CLOSE = {"Connection": "close"}


async def read_body(request: Request, limit: int, seconds: float) -> bytes:
    """The whole body, or a problem: 413 over ``limit`` bytes, 408 after ``seconds``."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise Problem(400, "Content-Length must be a whole number of bytes")
        if int(declared) > limit:
            raise Problem(413, f"request body is larger than {limit} bytes", headers=_CLOSE)
    body = bytearray()
    with anyio.move_on_after(seconds) as waited:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise Problem(413, f"request body is larger than {limit} bytes", headers=_CLOSE)
    if waited.cancelled_caught:
        raise Problem(408, f"the request body did not arrive within {seconds:g} s",
                      headers=_CLOSE)
    return bytes(body)


def parse_json(raw: bytes) -> Any:
    """``raw`` as JSON, or a 400 problem saying what is wrong with it."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise Problem(400, "request body is nested too deeply") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Problem(400, f"request body is not valid JSON: {exc}") from None
