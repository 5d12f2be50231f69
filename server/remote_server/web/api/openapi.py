"""The OpenAPI 3.1 document, built from the endpoint table so it cannot drift from the routes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any, get_args, get_origin

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from ... import __version__
from . import schemas as s
from .endpoint import Endpoint

__all__ = ["build_document"]

_PARAM = re.compile(r"{(\w+)}")
_REF = "#/components/schemas/{model}"


def _model_of(result: Any) -> tuple[type[BaseModel] | None, bool]:
    """``(model, is_list)`` for ``Model`` or ``list[Model]``."""
    if get_origin(result) is list:
        return get_args(result)[0], True
    return result, False


_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"description": "always Bearer", "schema": {"type": "string"}}},
    429: {"Retry-After": {"description": "seconds to wait", "required": True,
                          "schema": {"type": "string", "pattern": "^[0-9]+$"}}},
}


def _problem(status: int, meaning: str) -> dict[str, Any]:
    response: dict[str, Any] = {"description": meaning, "content": {
        "application/problem+json": {"schema": {"$ref": _REF.format(model="ProblemOut")}}}}
    if status in _HEADERS:
        response["headers"] = _HEADERS[status]
    return response


def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(ref_template=_REF)
    return [{"name": name, "in": "query", "required": name in schema.get("required", []),
             "schema": prop} for name, prop in schema["properties"].items()]


def _operation(ep: Endpoint) -> dict[str, Any]:
    module = ep.handler.__module__.rsplit(".", 1)[-1]
    op: dict[str, Any] = {"summary": ep.summary, "operationId": f"{module}.{ep.handler.__name__}",
                          "tags": [ep.tag] if ep.tag else []}
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
              for n in _PARAM.findall(ep.path)]
    if ep.query is not None:
        params += _query_parameters(ep.query)
    if params:
        op["parameters"] = params
    if ep.body is not None:
        op["requestBody"] = {"required": not ep.body_optional, "content": {
            "application/json": {"schema": {"$ref": _REF.format(model=ep.body.__name__)}}}}
    ok: dict[str, Any] = {"description": HTTPStatus(ep.status).phrase}
    model, many = _model_of(ep.result)
    if model is not None:
        ref: dict[str, Any] = {"$ref": _REF.format(model=model.__name__)}
        ok["content"] = {"application/json": {
            "schema": {"type": "array", "items": ref} if many else ref}}
    responses: dict[str, Any] = {str(ep.status): ok}
    errors = dict(ep.responses)
    if ep.body is not None:
        errors.setdefault(400, "malformed JSON body")
        errors.setdefault(413, "body too large")
    if ep.body is not None or ep.query is not None:
        errors.setdefault(422, "a field is missing, unknown or of the wrong type")
    if ep.access != "public":
        errors.setdefault(401, "missing, invalid, expired or wrong-kind token")
        op["security"] = [{"bearer": []}]
    else:
        op["security"] = []
    if ep.access == "admin":
        errors.setdefault(403, "administrators only")
    for status, meaning in sorted(errors.items()):
        responses[str(status)] = _problem(status, meaning)
    op["responses"] = responses
    return op


def build_document(endpoints: Sequence[Endpoint]) -> dict[str, Any]:
    models: set[type[BaseModel]] = {s.ProblemOut}
    for ep in endpoints:
        for candidate in (ep.body, _model_of(ep.result)[0]):
            if candidate is not None:
                models.add(candidate)
    _, defs = models_json_schema(
        [(m, "validation" if issubclass(m, s.Body) else "serialization")
         for m in sorted(models, key=lambda m: m.__name__)], ref_template=_REF)
    paths: dict[str, dict[str, Any]] = {}
    for ep in endpoints:
        paths.setdefault(ep.path, {})[ep.method.lower()] = _operation(ep)
    paths["/api/openapi.json"] = {"get": {
        "summary": "This document", "operationId": "openapi", "tags": ["meta"],
        "security": [],
        "responses": {"200": {"description": "OK", "content": {
            "application/json": {"schema": {"type": "object"}}}}}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "remote-support API", "version": __version__,
                 "description": "The operators' HTTP API (SPEC section 4, CONTRACT section 2). "
                                "Errors are RFC 9457 problem+json."},
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "bearerFormat": "JWT"}},
        },
    }
