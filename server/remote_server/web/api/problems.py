"""``GET /api/problems/{slug}``: what a problem type means, at the URI its ``type`` names."""

from __future__ import annotations

from ..problem import Problem
from ..problem_types import BY_SLUG
from . import schemas as s
from .endpoint import Call, Endpoint

__all__ = ["ENDPOINTS"]


async def problem_type(call: Call) -> s.ProblemTypeOut:
    found = BY_SLUG.get(call.param("slug"))
    if found is None:
        raise Problem(404, "no such problem type")
    return s.ProblemTypeOut(type=s.ProblemType(found.uri), title=found.title,
                            status=found.status, description=found.meaning)


ENDPOINTS = [
    Endpoint("GET", "/api/problems/{slug}", problem_type,
             "Describe a problem type: the type URI of every problem resolves here",
             access="public", result=s.ProblemTypeOut, tag="meta", store=False,
             responses=((404, "no such problem type"),)),
]
