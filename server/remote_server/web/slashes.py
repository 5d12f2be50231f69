"""A path with a stray trailing slash, or without the one its route has, is redirected with
a relative ``Location`` (Starlette's own redirect names an absolute ``http://`` URL, wrong
behind a TLS-terminating proxy)."""

from __future__ import annotations

from urllib.parse import quote

from starlette.responses import RedirectResponse
from starlette.routing import Match, Router
from starlette.types import Receive, Scope, Send

__all__ = ["relative_slash_redirects"]


def relative_slash_redirects(router: Router) -> None:
    """Replace ``router``'s slash redirect with one whose ``Location`` is relative."""
    not_found = router.default
    router.redirect_slashes = False

    async def redirect_or_not_found(scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        if scope["type"] == "http" and path != "/":
            other = path.rstrip("/") if path.endswith("/") else path + "/"
            moved = {**scope, "path": other}
            if any(route.matches(moved)[0] is not Match.NONE for route in router.routes):
                location = quote(scope.get("root_path", "") + other, safe="/:@!$&'()*+,;=-._~")
                if scope.get("query_string"):
                    location += "?" + scope["query_string"].decode("latin-1")
                await RedirectResponse(location, status_code=307)(scope, receive, send)
                return
        await not_found(scope, receive, send)

    router.default = redirect_or_not_found
