"""Request bodies in the OpenAPI document.

The routes read their bodies themselves (so that a bad body gets legalsat's own error, which
names the field and the fix, and so that the size limit holds while reading), hence FastAPI
does not see the body models. `json_body` declares them for the document; `install` puts the
models' JSON Schemas under components/schemas with OpenAPI-style references.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from legalsat.schemas.service import ErrorBody

_REF = "#/components/schemas/{model}"
# answers the HTTP layer gives before a request reaches its route (legalsat.server.http, errors)
_BEFORE_ROUTING = {"400": "a request the HTTP parser cannot read (bad_http), or a Host outside LEGALSAT_ALLOWED_HOSTS "
                          "(bad_host)",
                   "408": "the request head or body did not arrive in time (head_timeout, body_timeout)",
                   "431": "a request head over LEGALSAT_MAX_HEADER_BYTES (headers_too_large)"}
_MODELS: dict[str, type[BaseModel]] = {}


def _ref(model: type[BaseModel]) -> dict:
    _MODELS[model.__name__] = model
    return {"$ref": _REF.format(model=model.__name__)}


def json_body(*models: type[BaseModel], array: bool = False, description: str = "") -> dict:
    """`openapi_extra` of a route whose JSON body is one of `models` (or, with `array`, a JSON
    array of them, at most the server's LEGALSAT_MAX_BATCH_ITEMS: `install` writes it)."""
    schema: dict[str, Any] = _ref(models[0]) if len(models) == 1 else {"oneOf": [_ref(m) for m in models]}
    if array:
        schema = {"type": "array", "items": schema, "minItems": 1}
    return {"requestBody": {"required": True, "description": description,
                            "content": {"application/json": {"schema": schema}}}}


def install(app: FastAPI) -> None:
    """Make `app.openapi()` include the body models declared with `json_body`."""

    def openapi() -> dict:
        if app.openapi_schema:
            return app.openapi_schema
        doc = get_openapi(title=app.title, version=app.version, description=app.description,
                          routes=app.routes)
        settings = app.state.settings
        for path in doc.get("paths", {}).values():  # the limits this server enforces
            for op in path.values():
                if isinstance(op, dict) and settings.token is None:
                    op.pop("security", None)  # an open server asks no token (401 cannot happen either)
                    op.get("responses", {}).pop("401", None)
                if isinstance(op, dict):  # refused before any route: every operation can get them
                    for status, text in _BEFORE_ROUTING.items():
                        op.setdefault("responses", {}).setdefault(status, {
                            "description": text, "content": {"application/json": {"schema": _ref(ErrorBody)}}})
                body = op.get("requestBody") if isinstance(op, dict) else None
                if body is None:
                    continue
                body["description"] = (body.get("description", "") + f" (at most {settings.max_body_bytes} "
                                       "bytes: LEGALSAT_MAX_BODY_BYTES)").strip()
                schema = body["content"]["application/json"]["schema"]
                if schema.get("type") == "array":
                    schema["maxItems"] = settings.max_batch_items
        if settings.token is None:
            doc.get("components", {}).pop("securitySchemes", None)
        components = doc.setdefault("components", {}).setdefault("schemas", {})
        for name, model in _MODELS.items():
            schema = model.model_json_schema(ref_template=_REF)
            for sub, sub_schema in schema.pop("$defs", {}).items():
                components.setdefault(sub, sub_schema)
            components[name] = schema
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
