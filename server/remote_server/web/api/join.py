"""The join page's download: the attended agent for a pending support code (public)."""

from __future__ import annotations

import logging
import zipfile

import anyio
from starlette.responses import Response

from ...join_agent import attended_agent, download_name, join_agent_file
from ..problem import Problem
from . import schemas as s
from .codes import pending_code
from .endpoint import Call, Endpoint

__all__ = ["ENDPOINTS"]

log = logging.getLogger(__name__)


def _server_url(call: Call) -> str:
    """The configured ``join_server_url``, else the origin the browser reached us at."""
    configured = call.ctx.settings.join_server_url
    if configured:
        return configured.rstrip("/")
    url = call.request.base_url
    return f"{url.scheme}://{url.netloc}"


async def download_agent(call: Call) -> Response:
    body: s.CodeValidateIn = call.body
    code = await pending_code(call, body.code)  # counted like a validation, same lockout
    release = join_agent_file(call.ctx.settings)
    if release is None:
        raise Problem(404, "this server has no agent to hand out (setting join_agent_file)",
                      kind="no-join-agent")
    try:
        data = await anyio.to_thread.run_sync(attended_agent, release, _server_url(call),
                                              code.code, call.ctx.settings.join_ca_bundle)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        log.warning("join_agent_file cannot be handed out: %s", exc)
        raise Problem(404, "this server's agent for end users is misconfigured; tell the "
                           "technician", kind="no-join-agent") from None
    name = download_name(code.code)
    return Response(data, media_type="application/octet-stream", headers={
        "content-disposition": f'attachment; filename="{name}"'})


ENDPOINTS = [
    Endpoint("POST", "/api/codes/agent", download_agent,
             "The attended agent for a pending code, one file with the server and code "
             "inside (counts as a validation: same limit and lockout)", access="public",
             body=s.CodeValidateIn, tag="codes",
             responses=((404, "unknown, used or expired code, or no agent configured",
                         ("no-join-agent",)),
                        (429, "rate limit or lockout"))),
]
