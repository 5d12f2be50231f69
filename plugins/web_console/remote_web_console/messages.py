"""The join page's words in the end user's language: ``GET /join/messages.json``.

The catalogue is gettext's ``.po`` format, like the agent's windows
(``locale/<lang>/LC_MESSAGES/remote_web_console.po``, read with the project's
pure-Python parser); the page, under the console's CSP, fetches the words as
JSON rather than having them written into its markup. The language is the best
of the browser's ``Accept-Language`` that has a catalogue; English (the strings
in the page's source) otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from remote_core.catalogue import parse_po

__all__ = ["DOMAIN", "MESSAGES_NAME", "catalogues", "chosen_language", "serve_messages"]

DOMAIN = "remote_web_console"
MESSAGES_NAME = "messages.json"
LOCALE = Path(__file__).resolve().parent / "locale"
SOURCE_LANGUAGE = "en"
MAX_HEADER = 512  # an Accept-Language longer than this is not read past it


def catalogues(locale: Path = LOCALE) -> dict[str, dict[str, str]]:
    """``language -> {English: translation}`` of every catalogue; English is empty."""
    found: dict[str, dict[str, str]] = {SOURCE_LANGUAGE: {}}
    for po in sorted(locale.glob(f"*/LC_MESSAGES/{DOMAIN}.po")):
        entries = parse_po(po.read_text(encoding="utf-8"))
        entries.pop("", None)  # the header
        found[po.parts[-3].lower()] = entries
    return found


def chosen_language(accept_language: str, available: set[str]) -> str:
    """The language of highest quality in ``accept_language`` that is ``available``, by
    its primary subtag (``de-DE`` is ``de``); English when none is."""
    best, best_q = SOURCE_LANGUAGE, 0.0
    for position, item in enumerate(accept_language[:MAX_HEADER].split(",")):
        tag, _, params = item.strip().partition(";")
        primary = tag.strip().split("-")[0].lower()
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                continue
        q -= position * 1e-6  # equal weights: the browser's order decides
        if primary in available and q > best_q:
            best, best_q = primary, q
    return best


def serve_messages(found: dict[str, dict[str, str]]) -> ASGIApp:
    """The ASGI app answering the catalogue for the request's ``Accept-Language``."""
    bodies = {lang: json.dumps({"lang": lang, "messages": words}, ensure_ascii=False,
                               sort_keys=True).encode()
              for lang, words in found.items()}
    available = set(found)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") not in {"GET", "HEAD"}:
            refused = PlainTextResponse("Method Not Allowed", 405, {"allow": "GET, HEAD"})
            await refused(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        wanted = headers.get(b"accept-language", b"").decode("latin-1")
        body = bodies[chosen_language(wanted, available)]
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"vary", b"accept-language")]})
        await send({"type": "http.response.body",
                    "body": body if scope["method"] == "GET" else b""})

    return app
