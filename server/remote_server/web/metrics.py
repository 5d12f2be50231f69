"""``GET /metrics``: the Prometheus exposition, for whom the operator allowed.

Off unless ``REMOTE_SUPPORT_METRICS`` is on, and then only with a bearer token
(``METRICS_TOKEN``), from listed client networks (``METRICS_NETWORKS``), or both
(both must then hold). Metrics tell an outsider how busy the server is and when
its operators work: they are no public page.
"""

from __future__ import annotations

import hmac

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..observe.counters import auth_failed
from ..settings import ServerSettings
from .clientip import client_ip, in_networks
from .problem import Problem

__all__ = ["METRICS_PATH", "metrics_route"]

METRICS_PATH = "/metrics"


def _check_access(request: Request, settings: ServerSettings) -> None:
    """Raise the problem a request without the access the settings require gets."""
    if not settings.metrics:
        raise Problem(404, "metrics are off (REMOTE_SUPPORT_METRICS)")
    if settings.metrics_networks:
        address = client_ip(request.scope, settings)
        if not in_networks(address, tuple(settings.metrics_networks)):
            raise Problem(403, "this address may not read the metrics "
                               "(REMOTE_SUPPORT_METRICS_NETWORKS)")
    if settings.metrics_token:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
                given.strip().encode(), settings.metrics_token.encode()):
            auth_failed("metrics_token")
            raise Problem.unauthorized("the metrics token is required "
                                       "(Authorization: Bearer ...)")


async def _metrics(request: Request) -> Response:
    settings: ServerSettings = request.app.state.settings
    _check_access(request, settings)
    metrics = request.app.state.metrics
    return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST,
                    headers={"Cache-Control": "no-store"})


def metrics_route() -> Route:
    return Route(METRICS_PATH, _metrics, methods=["GET"], name="metrics")
