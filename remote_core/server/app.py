"""The server's application factory: one Starlette app per settings object."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from .. import __version__
from ..plugins import Plugins, get_plugin_manager
from ..settings import Settings

__all__ = ["create_app"]


async def healthz(_request: Request) -> JSONResponse:
    """Liveness: the process answers."""
    return JSONResponse({"status": "ok", "version": __version__})


def create_app(settings: Settings, plugins: Plugins | None = None) -> Starlette:
    """Build the server app; plugins are loaded from ``settings`` unless given."""
    plugins = plugins or get_plugin_manager(settings)
    routes: list[Any] = [Route("/healthz", healthz)]
    for spec in plugins.web_apps():
        if spec.factory is not None:
            routes.append(Mount(spec.path, app=spec.factory(settings), name=spec.name))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.settings = settings
    app.state.plugins = plugins
    return app
