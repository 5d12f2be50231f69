"""The server's application factory: one Starlette app per settings object.

The lifespan builds the :class:`ServerContext` (store opened and migrated,
signing secret, tokens, rate limiter, audit, the session registry restored,
the write queue's drain task started) and tears it down in reverse; a failed
restore stops start-up (fail closed).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import RedirectResponse
from starlette.routing import Mount, Route

from remote_core.plugins import Plugins, get_plugin_manager

from ..observe.logs import RequestIds, set_node
from ..observe.metrics import Metrics, TimedStore
from ..recordings import keep_recordings
from ..relay.audit import Audit
from ..relay.writes import WriteQueue
from ..settings import ServerSettings
from .api import routes as api_routes
from .codecs import CODECS_PATH, codec_modules
from .context import ServerContext, open_store, readable_recordings
from .headerbounds import HeaderBounds
from .metrics import metrics_route
from .origin import accepted_origins_text
from .pending import PendingSockets
from .problem import exception_handlers
from .ratelimit import MemoryRateLimiter, RateLimiter
from .services import start_services
from .signing import keep_fresh, load_key_ring
from .slashes import relative_slash_redirects
from .sso import routes as sso_routes
from .tokens import VIEWER_TOKEN_TTL, TokenService
from .users import FIRST_ADMIN_NAME, ensure_first_admin
from .viewers import viewer_verifier

__all__ = ["create_app"]

log = logging.getLogger(__name__)


def create_app(settings: ServerSettings, plugins: Plugins | None = None, *,
               limiter: RateLimiter | None = None) -> Starlette:
    """Build the server app; plugins are loaded from ``settings`` unless given.

    :param limiter: the rate limiter (default: in process memory).
    """
    from ..relay.registry import Registry
    from .ws import routes as ws_routes

    plugins = plugins or get_plugin_manager(settings)
    services = start_services(plugins)  # bad plugin options stop start-up here
    sso = sso_routes(settings)  # so do bad single sign-on settings (checked once merged)
    routes: list[Any] = [*api_routes(), *ws_routes(), *sso,
                         Mount(CODECS_PATH, app=codec_modules(plugins.codecs()), name="codecs"),
                         metrics_route()]
    web_paths = []
    for spec in plugins.web_apps():
        if spec.factory is not None:
            routes.append(Mount(spec.path, app=spec.factory(plugins.options(spec)), name=spec.name))
            web_paths.append(spec.path.rstrip("/"))
    if web_paths and "" not in web_paths:
        # The bare address opens the first mounted web app (the console).
        home = web_paths[0] + "/"
        routes.append(Route("/", lambda _request: RedirectResponse(home), name="home"))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        store = open_store(settings, plugins)
        metrics = None
        if settings.metrics:
            metrics = app.state.metrics = Metrics(lambda: registry.index.sessions(),
                                                waiting=lambda: registry.agents_waiting)
            store = TimedStore.wrap(store, metrics)
        await store.open()
        try:
            password = await ensure_first_admin(store, settings.admin_password)
            if password is not None:
                # Shown once, on stdout only; never logged.
                print(f"first start: created user {FIRST_ADMIN_NAME!r} with password "
                      f"{password}  (change it after logging in)", flush=True)
            writes = WriteQueue()
            audit = Audit(store, plugins, writes, services)
            recordings = readable_recordings(settings, plugins)
            recording = settings.recording_rules().records_any
            if recordings is not None and recording:
                await recordings.open()
            registry = Registry(settings=settings, store=store, plugins=plugins, audit=audit,
                                recordings=recordings if recording else None)
            clustered = settings.bus_url is not None
            await registry.restore(sole=not clustered)
            log.info("viewer sockets accept %s", accepted_origins_text(settings))
            tokens = TokenService(await load_key_ring(settings, store),
                                  login_ttl=settings.login_token_ttl,
                                  viewer_ttl=VIEWER_TOKEN_TTL)
            async with contextlib.AsyncExitStack() as stack:
                cluster = None
                if clustered:
                    from ..cluster.limits import RedisRateLimiter
                    from ..cluster.node import ClusterNode

                    assert settings.limits_url is not None  # validated with the settings
                    shared = RedisRateLimiter(settings.limits_url,
                                              prefix=f"{settings.cluster_name}:")
                    stack.push_async_callback(shared.close)
                    limiter_in_use: RateLimiter = limiter or shared
                    cluster = await stack.enter_async_context(
                        ClusterNode.running(settings, registry, viewer_verifier(tokens)))
                    set_node(cluster.id)
                    if metrics is not None:
                        metrics.node = cluster.id
                else:
                    limiter_in_use = limiter or MemoryRateLimiter()
                app.state.ctx = ServerContext(
                    settings=settings, plugins=plugins, store=store, audit=audit,
                    tokens=tokens, limiter=limiter_in_use, registry=registry,
                    pending=PendingSockets(settings.max_pending_sockets_per_ip,
                                           settings.max_pending_sockets),
                    cluster=cluster, recordings=recordings,
                )
                async with anyio.create_task_group() as group:
                    writes.start(group)
                    group.start_soon(keep_fresh, tokens, settings, store)
                    group.start_soon(registry.keep_seen)
                    group.start_soon(registry.silence.run)
                    retention = settings.retention_rules()
                    if retention.shortest:
                        group.start_soon(keep_recordings, store, recordings, audit, retention)
                    if metrics is not None:
                        group.start_soon(metrics.watch_loop)
                    for service in services:
                        group.start_soon(service.run, store)
                    try:
                        yield
                    finally:
                        await registry.shutdown("server shutting down")
                        await writes.close()  # the writes an outage held back: a last chance
                        group.cancel_scope.cancel()
                        if recordings is not None:
                            await recordings.close()
        finally:
            await store.close()

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers=exception_handlers,
                    middleware=[Middleware(RequestIds), Middleware(HeaderBounds)])
    relative_slash_redirects(app.router)
    app.state.settings = settings
    app.state.plugins = plugins
    return app
