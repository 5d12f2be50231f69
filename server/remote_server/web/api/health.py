"""Liveness and readiness probes (no authentication)."""

from __future__ import annotations

import logging

from ... import __version__
from ..problem import Problem
from . import schemas as s
from .endpoint import Call, Endpoint

__all__ = ["ENDPOINTS"]

log = logging.getLogger(__name__)


async def healthz(_call: Call) -> s.HealthOut:
    return s.HealthOut(status="ok", version=__version__)


async def readyz(call: Call) -> s.HealthOut:
    if call.ctx.registry.index.closing:  # a load balancer sends no one here any more
        raise Problem(503, "this server is shutting down")
    if call.ctx.cluster is not None and call.ctx.cluster.fenced:
        raise Problem(503, "this server node is cut off from the cluster's bus")
    try:
        ready = await call.ctx.store.ping()
    except Exception:
        log.exception("readiness check: the database did not answer")
        ready = False
    if not ready:
        raise Problem(503, "the database is not reachable")
    return s.HealthOut(status="ready", version=__version__)


ENDPOINTS = [
    Endpoint("GET", "/healthz", healthz, "Liveness: the process answers", access="public",
             result=s.HealthOut, tag="health", store=False),
    Endpoint("GET", "/readyz", readyz, "Readiness: the database answers", access="public",
             result=s.HealthOut, tag="health",
             responses=((503, "database unreachable, the server shutting down, or (a cluster "
                               "node) cut off from the bus"),)),
]
