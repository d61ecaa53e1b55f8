"""What every boundary model shares: strict input models, the error shape, compact JSON."""

from __future__ import annotations

import json
import numbers
import re

from pydantic import BaseModel, ConfigDict, Field

from legalsat.diagnostics import Code
from legalsat.schemas.validation import field_path


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
    limit: int | None = Field(None, description="a refusal by a limit: the limit (bytes, JSON values or requests, "
                              "as the message says); absent otherwise")
    value: int | None = Field(None, description="with `limit`: what the input asked, in the limit's unit (null "
                              "where it was not read to its end)")


class ErrorBodyOut(ErrorOut):
    details: list[ErrorOut] | None = Field(None, description="the problems, when there are several (the "
                                           "first is the one above; at most 32 are listed)")
    more_details: int | None = Field(None, description="how many problems past the 32 listed there were")


MAX_DEPTH = 64  # far past any request's nesting; keeps every later step's recursion bounded
# objects and arrays in one input: past any request's (a protocol at the verifier's work bound
# has some 50,000), and what bounds the per-object work of parsing (about 2 us each)
MAX_CONTAINERS = 1 << 16
# values in one input (commas, an upper bound): past any request's, a protocol near the
# verifier's bound included (some 50,000); routes whose requests are small ask for fewer
MAX_VALUES = 1 << 17


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},]')


def _too_deep(what: str, path: tuple):
    """The error for a value nesting past MAX_DEPTH at `path`: its field is the innermost
    named field holding it (the brackets below it say nothing a sender can act on)."""
    keys = [i for i, p in enumerate(path) if isinstance(p, str)]
    field = field_path(path[:keys[-1] + 1]) if keys else None
    return Code.INVALID_INPUT.error(f"{what} nests deeper than {MAX_DEPTH} levels "
                                    f"{f'inside {field}' if field else 'from its root'}",
                                    "send the documented structure (no request nests this deep)", field)


def _deep_path(text: str) -> tuple:
    """Where JSON `text` first opens a container past MAX_DEPTH (the path of the containers
    around it), for text too deep for the parser to return; () if it does not. A scan of
    strings and brackets that stops there."""
    frames: list[list] = []  # per open container: [is_object, key or index]
    expect_key = False
    for m in _JSON_TOKEN.finditer(text):
        t = m.group()
        if t in "[{":
            if len(frames) >= MAX_DEPTH:
                return tuple(f[1] for f in frames)
            frames.append([t == "{", None if t == "{" else 0])
            expect_key = t == "{"
        elif t in "]}":
            if frames:
                frames.pop()
            expect_key = False
        elif t == ",":
            if frames and frames[-1][0]:
                expect_key = True
            elif frames:
                frames[-1][1] += 1
        elif expect_key and frames:
            try:
                frames[-1][1] = json.loads(t)
            except ValueError:
                frames[-1][1] = t[1:-1]
            expect_key = False
    return ()


_JSON_SCALARS = frozenset({int, float, bool, type(None)})


def check_json_value(obj: object, what: str = "the input") -> object:
    """`obj` (parsed JSON) if it nests at most MAX_DEPTH deep and every string is valid
    Unicode (a lone surrogate escape such as "\\ud800" parses but cannot be encoded again);
    else InputError naming where. Iterative: no recursion however deep the value. A value built
    in Python may hold tuples (a torch.Size) and integer scalars of numpy: it is returned as the
    JSON it stands for (lists, ints), a copy, the caller's left as it was."""
    stack: list[tuple[object, tuple, int]] = [(obj, (), 1)]
    plain = True
    while stack:
        value, path, depth = stack.pop()
        if type(value) in _JSON_SCALARS:  # most values: nothing to check (a marker is a subclass)
            continue
        if isinstance(value, (_Repeated, _Constant)):
            _refuse_marker(value, path, what)
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise Code.INVALID_INPUT.error(f"{field_path(path) or what} holds a lone surrogate escape "
                                               "(\\ud800-\\udfff), which is not Unicode text",
                                               "send valid UTF-8 text (a surrogate pair, or the character itself)",
                                               field_path(path) or None) from None
            continue
        if isinstance(value, tuple) or (isinstance(value, numbers.Integral) and type(value) not in (int, bool)):
            plain = False
        if isinstance(value, (dict, list, tuple)):
            if depth > MAX_DEPTH:
                raise _too_deep(what, path)
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in items:
                if isinstance(k, str) and isinstance(value, dict):
                    try:
                        k.encode("utf-8")
                    except UnicodeEncodeError:
                        raise Code.INVALID_INPUT.error(f"a field name under {field_path(path) or 'the root'} holds a "
                                                       "lone surrogate escape", "send valid UTF-8 text",
                                                       field_path(path) or None) from None
                stack.append((v, (*path, k), depth + 1))
    return obj if plain else _as_json(obj)


def _as_json(value: object) -> object:
    """Tuples as lists and integer scalars as ints, copied (nesting checked by the caller)."""
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_json(v) for v in value]
    if isinstance(value, numbers.Integral) and type(value) not in (int, bool):
        return int(value)
    return value


class _Repeated(dict):
    """An object that repeats a key, kept while parsing so the walk can name where it is."""

    key: str


class _Constant(float):
    """NaN / Infinity / -Infinity, kept while parsing so the walk can name where it is."""

    name: str


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        out = _Repeated(pairs)
        out.key = next(k for k, _ in pairs if k in seen or seen.add(k))
    return out


def _no_constants(name: str) -> object:
    out = _Constant(name.replace("Infinity", "inf"))
    out.name = name
    return out


def _refuse_marker(value: object, path: tuple, what: str) -> None:
    """InputError naming where a repeated key or a NaN / Infinity sits."""
    where = field_path(path)
    if isinstance(value, _Repeated):
        raise Code.INVALID_JSON.error(f"the key {value.key!r} appears twice in {where or 'the top-level object'} "
                                      "(which value counts is not the sender's choice)",
                                      "send each key once", field_path((*path, value.key)))
    if isinstance(value, _Constant):
        raise Code.INVALID_JSON.error(f"{where or what} is {value.name}, which is not JSON",
                                      "send a finite number (JSON has no NaN or Infinity)", where or None)


MAX_INT_DIGITS = 24  # past any 64-bit value a request holds (20 digits)
_LONG_DIGITS = re.compile(f"[0-9]{{{MAX_INT_DIGITS + 1}}}")


class LongInt(int):
    """A JSON integer of more digits than any request value has, kept as a stand-in of the
    same sign past every bound (10^24), which prints as what it was: the validator's bounds
    then refuse it naming its field, and no message ever converts thousands of digits
    (Python refuses past 4,300, and the arithmetic on them costs time)."""

    digits: int

    def __new__(cls, negative: bool, digits: int) -> LongInt:
        out = super().__new__(cls, -10 ** MAX_INT_DIGITS if negative else 10 ** MAX_INT_DIGITS)
        out.digits = digits
        return out

    def __reduce__(self):  # a request travels to a planning worker pickled
        return (LongInt, (self < 0, self.digits))

    def __repr__(self) -> str:
        return f"<{'a negative' if self < 0 else 'an'} integer of {self.digits} digits>"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)


def shown_int(x: int) -> str:
    """An integer for a message: a `LongInt` stand-in (which validation turns into a plain int)
    as what it stood for."""
    if abs(x) < 10 ** MAX_INT_DIGITS:
        return str(x)
    return f"{'a negative' if x < 0 else 'an'} integer of more than {MAX_INT_DIGITS} digits"


def _bounded_int(text: str) -> int:
    if len(text) <= MAX_INT_DIGITS:
        return int(text)
    negative = text.startswith("-")
    return LongInt(negative, len(text) - negative)


def _too_many_fix(what: str) -> str:
    """The fix for a body holding more values than any request does (a batch can be split)."""
    return "send the documented structure: no request holds this many" + (
        " (split the batch into smaller ones)" if "batch" in what else "")


def load_json(text: str | bytes, what: str = "the input", max_values: int = MAX_VALUES, check: bool = True) -> object:
    """JSON text -> a value every step after can handle (see check_json_value), or an
    InputError (`invalid_json`). Bytes must be UTF-8 without a byte order mark (RFC 8259); an
    object may not repeat a key (which of two values would count is not the sender's choice);
    NaN and Infinity are not JSON. `check=False`: the value as parsed, for a caller that
    checks its parts one by one (a batch's items, each of which fails alone)."""
    if isinstance(text, (bytes, bytearray)):
        if text[:3] == b"\xef\xbb\xbf":
            raise Code.INVALID_JSON.error(f"{what} starts with a byte order mark",
                                          "send UTF-8 JSON without a byte order mark")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise Code.INVALID_JSON.error(f"{what} is not UTF-8 text: {e.reason} at byte {e.start}",
                                          "send JSON encoded as UTF-8") from None
    if not text.strip():  # "Expecting value: line 1 column 1 (char 0)" said nothing of what happened
        raise Code.INVALID_JSON.error(f"{what} is empty" if text == "" else f"{what} holds only white space",
                                      f"send one JSON value in {what}")
    values = text.count(",") + 1  # at most this many (commas in strings count too)
    if values > max_values:
        raise Code.INVALID_INPUT.error(f"{what} holds {values} JSON values (or commas in its strings); at most "
                                       f"{max_values}", _too_many_fix(what), limit=max_values, value=values)
    containers = text.count("{") + text.count("[")  # at most this many (brackets in strings count too)
    if containers > MAX_CONTAINERS:
        raise Code.INVALID_INPUT.error(f"{what} holds {containers} JSON objects and arrays (or brackets in its "
                                       f"strings); at most {MAX_CONTAINERS}", _too_many_fix(what),
                                       limit=MAX_CONTAINERS, value=containers)
    try:
        marked: list[object] = []  # a repeated key or a NaN: the walk below names where

        def pairs(items: list[tuple[str, object]]) -> dict:
            out = _no_duplicates(items)
            if isinstance(out, _Repeated):
                marked.append(out)
            return out

        def constant(name: str) -> object:
            marked.append(name)
            return _no_constants(name)

        # the integer hook costs a Python call per number: only where a long digit run is
        long_ints = _bounded_int if _LONG_DIGITS.search(text) else None
        obj = json.loads(text, object_pairs_hook=pairs, parse_constant=constant, parse_int=long_ints)
    except RecursionError:
        raise _too_deep(what, _deep_path(text)) from None
    except ValueError as e:
        raise Code.INVALID_JSON.error(f"{what} is not valid JSON: {e}", "send one well-formed JSON value") from None
    # the walk only where it can find something: a lone surrogate comes only from a \\u escape
    # (strict UTF-8 has none), a text with few brackets cannot nest deep, and a repeated key
    # or NaN parses into a marker (named by the walk) only when the text has one
    if check and ("\\u" in text or text.count("[") + text.count("{") > MAX_DEPTH or marked):
        check_json_value(obj, what)
    return obj


def json_input(obj: object, what: str = "the input") -> object:
    """What a parse function takes, as a value it can validate: JSON text (str / bytes)
    through `load_json`, a parsed value through `check_json_value`, anything else (a model)
    as it is."""
    if isinstance(obj, (str, bytes, bytearray)):
        return load_json(obj, what)
    if isinstance(obj, (dict, list)):
        return check_json_value(obj, what)
    return obj


def model_json(model: BaseModel) -> bytes:
    """An answer model as the JSON the routes and commands write (aliases, set fields only)."""
    return model.model_dump_json(by_alias=True, exclude_unset=True).encode()


def compact_json(obj: object) -> bytes:
    """JSON with no whitespace, as bytes: the one encoding of every streamed answer."""
    return json.dumps(obj, separators=(",", ":")).encode()
