"""Browser decoders of codec plugins, served from the server's own origin.

A codec plugin may ship an ES module that decodes its frames in the browser
(``CodecSpec.browser_decoder``). The browser viewer reads ``/codecs/index.json``
(every codec with a browser decoder, by wire name) and imports each module
from ``/codecs/<name>.js``: same origin, so the console's
``script-src 'self'`` admits it and nothing else. The files are read once at
start-up; a registered file that is missing stops start-up.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, Router

from remote_core.errors import PluginError
from remote_core.types import CodecSpec

__all__ = ["CODECS_PATH", "codec_modules"]

CODECS_PATH = "/codecs"
_HEADERS = {"x-content-type-options": "nosniff", "cache-control": "no-cache",
            "cross-origin-resource-policy": "same-origin"}


def codec_modules(specs: Sequence[CodecSpec]) -> Router:
    """The ASGI app mounted at :data:`CODECS_PATH`.

    :raises PluginError: a codec names a browser decoder that is not a readable ``.js``
        or ``.mjs`` file.
    """
    modules: dict[str, bytes] = {}
    for spec in specs:
        path = spec.browser_decoder
        if path is None:
            continue
        if path.suffix not in (".js", ".mjs"):
            raise PluginError(f"codec {spec.name!r}: browser_decoder {path} is not a .js module")
        try:
            modules[spec.wire_name] = path.read_bytes()
        except OSError as exc:
            raise PluginError(f"codec {spec.name!r}: browser_decoder {path} cannot be read: "
                              f"{exc.strerror or exc}") from None
    index = json.dumps([{"codec": name, "module": f"{CODECS_PATH}/{name}.js"}
                        for name in modules]).encode()

    async def listing(_request: Request) -> Response:
        return Response(index, media_type="application/json", headers=_HEADERS)

    async def module(request: Request) -> Response:
        body = modules.get(request.path_params["name"])
        if body is None:
            return Response(b"no such codec module\n", status_code=404,
                            media_type="text/plain", headers=_HEADERS)
        return Response(body, media_type="text/javascript; charset=utf-8", headers=_HEADERS)

    return Router(routes=[Route("/index.json", listing, methods=["GET", "HEAD"]),
                          Route("/{name}.js", module, methods=["GET", "HEAD"])])
