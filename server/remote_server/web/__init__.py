"""The Starlette edge: app factory, WebSocket endpoints, REST routes, auth."""

from __future__ import annotations

from .app import create_app

__all__ = ["create_app"]
