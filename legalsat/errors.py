"""legalsat's error catalogue: every failure a user can cause, in the user's terms.

An `InputError` carries a stable `code`, the offending `field` (dotted path, with list
indices as ``box_dim[1]``), a message saying what is wrong and a `fix` saying what to do.
The HTTP layer maps it to 422 with the JSON shape of DESIGN.md; the command line writes the
same object on the line of the input that caused it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorDetail:
    """One problem with an input: where, what, and how to fix it."""

    code: str
    message: str
    fix: str
    field: str | None = None

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "fix": self.fix, "field": self.field}


class InputError(ValueError):
    """Invalid input. `details` lists every problem found; the first is the headline."""

    def __init__(self, details: list[ErrorDetail] | tuple[ErrorDetail, ...]):
        self.details = tuple(details)
        super().__init__(self.details[0].message if self.details else "invalid input")

    @classmethod
    def single(cls, code: str, message: str, fix: str, field: str | None = None) -> InputError:
        """An InputError with one problem."""
        return cls([ErrorDetail(code, message, fix, field)])

    @property
    def headline(self) -> ErrorDetail:
        return self.details[0]

    def to_dict(self) -> dict:
        """The DESIGN.md error shape: {"error": {...}} plus every detail under "details"."""
        body = self.headline.to_dict()
        if len(self.details) > 1:
            body["details"] = [d.to_dict() for d in self.details]
        return {"error": body}


def internal_error(e: BaseException) -> ErrorDetail:
    """What a bug in legalsat (not in the input) answers: the exception, and whom to tell."""
    return ErrorDetail("internal", f"{type(e).__name__}: {e}", "report this request to the legalsat maintainers")
