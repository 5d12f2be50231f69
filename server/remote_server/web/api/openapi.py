"""The OpenAPI 3.1 document, built from the endpoint table so it cannot drift from the routes.

Every status an operation can answer is listed with the problem types it carries; what
every request may meet (405, 431, HEAD, the trailing-slash redirect) is said once in the
document's description. Schemas are shared: one named schema per model and per enum.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any, get_args, get_origin

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from ... import __version__
from ..problem import PROBLEM_MEDIA_TYPE
from ..problem_types import BY_SLUG, BY_STATUS, PROBLEM_TYPES
from ..serving import MAX_HEADER_BYTES, MAX_HEADER_FIELDS
from . import schemas as s
from .endpoint import JSON_MEDIA_TYPE, MAX_BODY_BYTES, Endpoint

__all__ = ["build_document"]

_PARAM = re.compile(r"{(\w+)}")
_REF = "#/components/schemas/{model}"

TAGS = {
    "health": "Liveness and readiness probes",
    "auth": "Logging in, the caller's account and password",
    "users": "Operator accounts, their permissions and client access (administrators)",
    "tenants": "The customers one server keeps apart (global administrators)",
    "machines": "Managed and attended machines: listing, placement, history, removal, updates",
    "keys": "Per-machine agent keys (administrators)",
    "sessions": "Live and past sessions, their removal, and viewer tokens",
    "codes": "One-time support codes for attended sessions",
    "releases": "Agent releases and the version agents poll",
    "recordings": "Session recordings: listing, checking, their segments ('recordings' "
                  "permission)",
    "audit": "The audit log (administrators)",
    "webhooks": "The webhook delivery log (administrators)",
    "console": "What the browser console needs from the server",
    "meta": "This document and the problem types",
}

DESCRIPTION = f"""\
The operators' HTTP API of remote-support (SPEC section 4, CONTRACT section 2).

**Authentication.** `Authorization: Bearer <token>` with a login token from
`POST /api/auth/login`; each operation says whether it is public, for any user, or for
administrators.

**Lists.** Every list answers a JSON array, one page of it. It takes `limit` (default
{s.DEFAULT_LIMIT}, at most {s.MAX_LIMIT}) and an opaque `cursor`; while more items exist, the
`Link` header (RFC 8288) holds `<URL>; rel="next"`, a relative reference to the next page
with the same parameters. Pages are keyset pages over creation time and id: items inserted
or removed between two requests neither repeat nor shift an item. A page may hold fewer
items than `limit` while more follow: follow `next` until there is none.

**Errors.** Every error is RFC 9457 `application/problem+json` with a stable `type` URI per
kind of error (the `ProblemType` schema lists them; each URI, relative to this server,
describes itself). Switch on `type`, not on `detail`.

**Parameters and bodies.** A query parameter an operation does not take, or one given twice,
is a 422 naming it. Request bodies are `application/json` (anything else is a 415), at most
{MAX_BODY_BYTES // 1024} KiB, and a field a body does not take is a 422.

**Every request.** The request line and headers together are bounded to
{MAX_HEADER_BYTES // 1024} KiB and {MAX_HEADER_FIELDS} header fields (431). A method a path
does not list answers 405 with an `Allow` header. Every GET also answers HEAD (same status
and headers, no body). A path with or without a stray trailing slash answers 307 with a
relative `Location` to the listed path. Responses carry `Cache-Control: no-store`. An
unexpected failure is a 500 problem, logged by the server.
"""


def _model_of(result: Any) -> tuple[type[BaseModel] | None, bool]:
    """``(model, is_list)`` for ``Model`` or ``list[Model]``."""
    if get_origin(result) is list:
        return get_args(result)[0], True
    return result, False


_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"description": "always Bearer", "schema": {"type": "string"}}},
    409: {"Retry-After": {"description": "awaiting-consent: seconds to wait before asking "
                                         "again", "schema": {"type": "string",
                                                             "pattern": "^[0-9]+$"}}},
    429: {"Retry-After": {"description": "seconds to wait", "required": True,
                          "schema": {"type": "string", "pattern": "^[0-9]+$"}}},
}
_LINK = {"Link": {"description": 'the next page, while more items exist: `<URL>; rel="next"` '
                                 "(RFC 8288), URL relative to this server",
                  "schema": {"type": "string"}}}
_ACCESS = {"public": "No authentication.", "user": "Any logged-in user.",
           "admin": "Administrators of the caller's tenant only.",
           "global": "Global administrators only (the default tenant's)."}


def _problem(status: int, meaning: str, kinds: Sequence[str]) -> dict[str, Any]:
    uris = ", ".join(f"`{BY_SLUG[kind].uri}`" for kind in kinds)
    response: dict[str, Any] = {
        "description": f"{meaning} (problem type {uris})" if uris else meaning,
        "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": _REF.format(model="ProblemOut")}}}}
    if status in _HEADERS:
        response["headers"] = _HEADERS[status]
    return response


def _query_parameters(model: type[BaseModel], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """One parameter per field; an optional one is absent rather than null, and the enums
    it names join the shared schemas."""
    schema = model.model_json_schema(ref_template=_REF)
    for name, definition in schema.get("$defs", {}).items():
        assert defs.setdefault(name, definition) == definition, f"two schemas named {name}"
    params = []
    for name, prop in schema["properties"].items():
        description = prop.pop("description", None)
        prop.pop("title", None)
        branches = [b for b in prop.pop("anyOf", []) if b != {"type": "null"}]
        if len(branches) == 1:
            prop.update(branches[0])
        if "default" in prop and prop["default"] is None:
            del prop["default"]
        param: dict[str, Any] = {"name": name, "in": "query",
                                 "required": name in schema.get("required", []),
                                 "schema": prop}
        if description:
            param["description"] = description
        params.append(param)
    return params


def _errors(ep: Endpoint) -> dict[int, tuple[str, tuple[str, ...]]]:
    """Every status ``ep`` can answer besides its success, with the problem types of each."""
    errors: dict[int, tuple[str, list[str]]] = {}

    def add(status: int, meaning: str, kinds: Sequence[str] = ()) -> None:
        known = errors.setdefault(status, (meaning, []))
        for kind in kinds or (BY_STATUS[status].slug,):
            if kind not in known[1]:
                known[1].append(kind)

    for answer in ep.responses:
        add(*answer)
    if ep.body is not None:
        add(400, "malformed JSON body, or none where one is required")
        add(408, "the body did not arrive in time")
        add(413, f"body larger than {MAX_BODY_BYTES // 1024} KiB")
        add(415, "body not sent as application/json")
    add(422, "a parameter or field is missing, unknown, repeated or of the wrong type")
    if ep.access != "public":
        add(401, "missing, invalid, expired or wrong-kind token")
    if ep.access == "admin":
        add(403, "administrators only")
    if ep.access == "global":
        add(403, "global administrators only")
    add(431, "request headers too large")
    if ep.store:
        add(503, "the database is unavailable")
    return {status: (meaning, tuple(kinds)) for status, (meaning, kinds) in errors.items()}


def _operation(ep: Endpoint, defs: dict[str, Any]) -> dict[str, Any]:
    module = ep.handler.__module__.rsplit(".", 1)[-1]
    paged = ep.query is not None and issubclass(ep.query, s.PageQuery)
    notes = [_ACCESS[ep.access]]
    if paged:
        notes.append("A list: paged with limit and cursor, the next page in the Link header.")
    op: dict[str, Any] = {"summary": ep.summary, "description": " ".join([ep.summary + ".",
                                                                         *notes]),
                          "operationId": f"{module}.{ep.handler.__name__}", "tags": [ep.tag]}
    params: list[dict[str, Any]] = [
        {"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
        for n in _PARAM.findall(ep.path)]
    if ep.query is not None:
        params += _query_parameters(ep.query, defs)
    if params:
        op["parameters"] = params
    if ep.body is not None:
        op["requestBody"] = {"required": not ep.body_optional, "content": {
            JSON_MEDIA_TYPE: {"schema": {"$ref": _REF.format(model=ep.body.__name__)}}}}
    ok: dict[str, Any] = {"description": HTTPStatus(ep.status).phrase}
    model, many = _model_of(ep.result)
    if model is not None:
        ref: dict[str, Any] = {"$ref": _REF.format(model=model.__name__)}
        ok["content"] = {JSON_MEDIA_TYPE: {
            "schema": {"type": "array", "items": ref} if many else ref}}
    if paged:
        ok["headers"] = _LINK
    responses: dict[str, Any] = {str(ep.status): ok}
    for status, (meaning, kinds) in sorted(_errors(ep).items()):
        responses[str(status)] = _problem(status, meaning, kinds)
    op["responses"] = responses
    op["security"] = [] if ep.access == "public" else [{"bearer": []}]
    return op


def _schemas(endpoints: Sequence[Endpoint]) -> dict[str, Any]:
    """Bodies as they are validated, answers as they are serialized."""
    models: set[type[BaseModel]] = {s.ProblemOut}
    for ep in endpoints:
        for candidate in (ep.body, _model_of(ep.result)[0]):
            if candidate is not None:
                models.add(candidate)
    _, defs = models_json_schema(
        [(m, "validation" if issubclass(m, s.Body) else "serialization")
         for m in sorted(models, key=lambda m: m.__name__)], ref_template=_REF)
    schemas: dict[str, Any] = defs.get("$defs", {})
    # A generated client names each problem type's member after its slug.
    schemas["ProblemType"]["x-enum-varnames"] = [p.name for p in PROBLEM_TYPES]
    return schemas


def build_document(endpoints: Sequence[Endpoint]) -> dict[str, Any]:
    schemas = _schemas(endpoints)
    paths: dict[str, dict[str, Any]] = {}
    for ep in endpoints:
        paths.setdefault(ep.path, {})[ep.method.lower()] = _operation(ep, schemas)
    paths["/api/openapi.json"] = {"get": {
        "summary": "This document", "operationId": "openapi", "tags": ["meta"],
        "description": "This OpenAPI 3.1 document. No authentication.", "security": [],
        "responses": {"200": {"description": "OK", "content": {
            JSON_MEDIA_TYPE: {"schema": {"type": "object"}}}}}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "remote-support API", "version": __version__,
                 "description": DESCRIPTION,
                 "contact": {"name": "remote-support",
                             "url": "https://github.com/remote-support/remote-support"},
                 "license": {"name": "MIT", "identifier": "MIT"}},
        "servers": [{"url": "..", "description": "this server (the document's own)"}],
        "tags": [{"name": name, "description": text} for name, text in TAGS.items()],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "bearerFormat": "JWT"}},
        },
    }
