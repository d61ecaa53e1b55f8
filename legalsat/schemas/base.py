"""What every boundary model shares: strict input models, the error shape, compact JSON."""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    """An input model: unknown fields are errors, types are not coerced, values are frozen."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Out(BaseModel):
    """An output model: exactly the documented fields."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ErrorOut(Out):
    """One problem: what it is (a stable code from the catalogue, `legalsat codes`), where
    (`field`), and what to do about it."""

    code: str = Field(description="stable machine-readable code, e.g. invalid_input, deadline_exceeded "
                      "(the catalogue: `legalsat codes`)")
    message: str = Field(description="what is wrong, in the caller's terms")
    fix: str = Field(description="what to do about it")
    field: str | None = Field(None, description="dotted path of the offending input field, list indices "
                              "as [i] (e.g. op.src.strides[1]); null when the problem is not one field's")


class ErrorBodyOut(ErrorOut):
    details: list[ErrorOut] | None = Field(None, description="every problem, when there are several "
                                           "(the first is the one above)")


def compact_json(obj: object) -> bytes:
    """JSON with no whitespace, as bytes: the one encoding of every streamed answer."""
    return json.dumps(obj, separators=(",", ":")).encode()
