"""Turn pydantic validation errors into diagnostics of legalsat's catalogue."""

from __future__ import annotations

import dataclasses
import difflib
import re
from types import UnionType
from typing import Annotated, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from legalsat.diagnostics import Code, Diagnostic, InputError, shown
from legalsat.terms.dtypes import ELEMENT_TYPES, dtype_spelled, sub_byte_bits

# how pydantic names a union's member in an error path (not a field of the input): a core
# schema's name, a plain type's, or a model class's (checked against the models, so that an
# unknown field spelt with a capital, "Target", keeps its name)
_UNION_MEMBER = re.compile(r"^(?:constrained-|literal\[|function-|json-or-python|lax-|strict-|tagged-union|"
                           r"(?:int|str|bool|float|list|dict|none)$)")


def _model_names() -> set[str]:
    names, todo = set(), [BaseModel]
    while todo:
        for sub in todo.pop().__subclasses__():
            names.add(sub.__name__)
            todo.append(sub)
    return names


def _not_a_field(part: object, tags: tuple[str, ...], models: set[str]) -> bool:
    return isinstance(part, str) and (part in tags or bool(_UNION_MEMBER.match(part)) or part in models)


def json_kind(obj: object) -> str:
    """What a parsed JSON value is, as a message says it: 'a string', 'an array', 'null'."""
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "a boolean"
    for kinds, name in ((str, "a string"), (int, "an integer"), (float, "a number"), ((list, tuple), "an array"),
                        (dict, "an object")):
        if isinstance(obj, kinds):
            return name
    return f"a {type(obj).__name__}"


def field_path(loc: tuple) -> str:
    """('box_dim', 1) -> 'box_dim[1]'; ('options', 'timeout_ms') -> 'options.timeout_ms'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


_FIXES = {
    "missing": "add the field",
    "extra_forbidden": "remove the field, or check its spelling against the documented names",
    "int_type": "send a JSON integer (no quotes, no decimal point)",
    "bool_type": "send true or false",
    "list_type": "send a JSON array",
    "literal_error": "use one of {expected}",
    "greater_than_equal": "use a value >= {ge}",
    "greater_than": "use a value > {gt}",
    "less_than_equal": "use a value <= {le}",
    "less_than": "use a value < {lt}",
    "too_long": "send at most {max_length} of them",
    "too_short": "send at least {min_length} of them",
    "string_too_long": "send at most {max_length} characters",
    "string_too_short": "send at least {min_length} characters",
    "model_type": "send a JSON object",
    "dict_type": "send a JSON object",
    "string_type": "send a JSON string",
}
# errors where a field's own hint (how to write the whole field) beats the generic fix
_FIELD_LEVEL = {"union_tag_invalid", "union_tag_not_found"}
_OBJECT_TYPE = {"model_attributes_type", "model_type", "dict_type"}


def _fix_for(etype: str, ctx: dict) -> str | None:
    fix = _FIXES.get(etype)
    try:
        return fix.format(**ctx) if fix else None
    except (KeyError, IndexError):
        return None


def did_you_mean(word: object, choices: list[str]) -> str:
    """"; did you mean 'x'?" for the choice closest to `word`, or "". A word over three times
    the longest choice is matched against none: difflib's ratio (2 x matches / both lengths)
    cannot reach the 0.6 cutoff, and its set-up is linear in the word (a 1 MB string held the
    event loop for 0.1 s)."""
    word = str(word)
    if not choices or len(word) > 3 * max(map(len, choices)):
        return ""
    folded = [c for c in choices if c.lower() == word.lower()]  # "FLOAT32", "BFloat16": the case alone
    close = folded or difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def dtype_did_you_mean(word: object, choices: list[str]) -> str:
    """`did_you_mean` for an element type: its name where `word` spells it as a framework does
    (bf16, torch.bfloat16, fp8e4nv), a sub-byte type said to be one (its bytes are uint8: the
    closest name, uint64 for uint4, would be another width), else the closest of the names of
    the width `word` names (float8: the fp8 types)."""
    w = str(word)
    if len(w) > 64:
        return ""
    named = dtype_spelled(w) or (w if w in ELEMENT_TYPES else None)
    if named in choices:
        return f"; did you mean {named!r}?"
    if named in ELEMENT_TYPES and ELEMENT_TYPES[named].moves_as in choices:
        return f"; did you mean {ELEMENT_TYPES[named].moves_as!r} (what {named} moves as)?"
    bits = sub_byte_bits(w)
    if bits is not None:
        packing = f"[..., n] of them are [..., n / {8 // bits}] uint8" if 8 % bits == 0 else \
            f"n of them are n * {bits} / 8 bytes"
        return (f"; its elements are {bits}-bit, narrower than a byte, and a view holds whole elements: "
                f"describe its bytes as uint8 ({packing})") if "uint8" in choices else ""
    width = re.search(r"(8|16|32|64)(?![0-9])", w)
    same = [c for c in choices if width and c in ELEMENT_TYPES and ELEMENT_TYPES[c].storage_bits == int(width[1])]
    floats = [c for c in same if ELEMENT_TYPES[c].is_float and w.lower().startswith("f")]
    if len(floats) > 1 and not did_you_mean(w, same):  # fp8: either of two
        return "; did you mean one of " + ", ".join(map(repr, floats)) + "?"
    return did_you_mean(w, same) or ("" if same else did_you_mean(w, choices))


def _siblings(known: type[BaseModel] | None, loc: tuple) -> list[str]:
    """The names an unknown field at `loc` stands beside: the model's fields at loc's parent (a
    list of names matched every unknown field, however deep, against the top level's)."""
    return fields_at(known, loc[:-1]) if known is not None else []


def _models_at(model: type[BaseModel], loc: tuple) -> list[type[BaseModel]]:
    """The models the object at `loc` under `model` may be (every member, where a union stands
    there; list items by their index)."""
    types: list = [model]
    for part in loc:
        nxt = []
        for t in types:
            for member in _members(t):
                if isinstance(part, int) and get_origin(member) in (list, tuple) and get_args(member):
                    nxt.append(get_args(member)[0])
                elif isinstance(member, type) and issubclass(member, BaseModel):
                    nxt += [f.annotation for name, f in member.model_fields.items() if part in (name, f.alias)]
        types = nxt
    return [m for t in types for m in _members(t) if isinstance(m, type) and issubclass(m, BaseModel)]


def fields_at(model: type[BaseModel], loc: tuple) -> list[str]:
    """The JSON names of the fields of the object at `loc` under `model` (every member's, where
    a union stands there; list items by their index)."""
    names: list[str] = []
    for member in _models_at(model, loc):
        names += [f.alias or n for n, f in member.model_fields.items() if (f.alias or n) not in names]
    return names


def _unknown_field(known: type[BaseModel] | None, loc: tuple, tag: str | None) -> tuple[str, str | None]:
    """The message (and fix, when it is not the catalogue's) for an unknown field at `loc`
    (`tag`: the kind the object was read as). A field of another member of a union there is
    said to be one, not offered as its own spelling: a gather's `dst` is a copy's, a tile bank
    request's `access_bytes` a raw instruction's."""
    name = str(loc[-1])
    models = _models_at(known, loc[:-1]) if known is not None else []
    fields = [[f.alias or n for n, f in m.model_fields.items()] for m in models]
    owners = [k for k, names in enumerate(fields) if name in names]
    where = field_path(loc[:-1]) or "the request"
    if not owners:
        return f"unknown field {shown(name)}{did_you_mean(name, _siblings(known, loc))}", None
    kinds = [str(get_args(f.annotation)[0]) for k in owners if (f := models[k].model_fields.get("kind")) is not None
             and get_origin(f.annotation) is Literal]
    if kinds:
        this = f" of kind {tag!r}" if tag else ""
        return (f"{where}{this} has no field {shown(name)}: {name} is a field of kind {' or '.join(map(repr, kinds))}",
                f"remove {name}, or set {where}.kind to the movement you mean")
    shared = set.intersection(*map(set, fields))
    mates = [n for n in fields[owners[0]] if n != name and n not in shared]
    return (f"{where} mixes two forms: {name} goes with {', '.join(mates)}, not with the other fields sent",
            f"send one form's fields: remove {name}, or send the form it belongs to")


def _members(t) -> list:
    """A type's alternatives: Annotated unwrapped, a union's members."""
    origin = get_origin(t)
    if origin is Annotated:
        return _members(get_args(t)[0])
    if origin in (Union, UnionType):
        return [m for a in get_args(t) for m in _members(a)]
    return [t]


# what a union's scalar branches say of an object: that it is not their scalar
_SCALAR_MISMATCH = frozenset({"int_type", "int_parsing", "string_type", "bool_type", "float_type", "literal_error",
                              "enum"})


def _other_branch(e: dict, etype: str, loc: tuple, inner: set[tuple]) -> bool:
    """Whether `e` is a union branch's complaint that an object is not its scalar, while
    another branch took the object and says what is wrong inside it (a count of {"n": 32} was
    headlined "should be a valid integer", its real problem, n <= 1, third). `inner`: every
    path that has an error below it."""
    return etype in _SCALAR_MISMATCH and isinstance(e.get("input"), dict) and loc in inner


def value_error(message: str, fix: str) -> ValueError:
    """A validator's refusal with its own fix (`details_from_validation` gives it in place of
    the generic one, which points at the JSON Schema's range)."""
    err = ValueError(message)
    err.fix = fix
    return err


def details_from_validation(err: ValidationError | list[dict], hints: dict[str, str] | None = None,
                            known_fields: type[BaseModel] | None = None,
                            tags: tuple[str, ...] = ()) -> list[Diagnostic]:
    """One `invalid_input` Diagnostic per pydantic error (of a ValidationError, or a list of
    them as FastAPI's RequestValidationError gives), each naming its field and a fix. (JSON
    text is parsed before, by legalsat.schemas.base.load_json.)

    `hints` maps a field name to a fix that is more specific than the generic one;
    `known_fields`, the model the input is validated as, lets a misspelt field name get a
    "did you mean" suggestion (matched against its siblings at its path); `tags`: the
    discriminator values of tagged unions, which pydantic puts in a path and a field is not
    named by.
    """
    out, models = [], _model_names()
    located = []
    for e in (err.errors(include_url=False) if isinstance(err, ValidationError) else err):
        etype = e.get("type", "value_error")
        raw = tuple(e.get("loc", ()))
        # an unknown field's own name ends its path, whatever it is spelt like ("Options", "copy")
        keep_last = etype == "extra_forbidden" and raw
        loc = tuple(p for p in (raw[:-1] if keep_last else raw) if not _not_a_field(p, tags, models))
        located.append((e, etype, loc + raw[-1:] if keep_last else loc))
    inner = {loc[:k] for _, _, loc in located for k in range(len(loc))}  # paths with an error below them
    for e, etype, loc in located:
        if _other_branch(e, etype, loc, inner):
            continue
        path = field_path(loc) or None
        msg = e.get("msg", "invalid value")
        if etype == "value_error" and msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        unknown_fix = None
        if etype == "extra_forbidden" and loc:
            raw = tuple(e.get("loc", ()))
            msg, unknown_fix = _unknown_field(known_fields, loc, next((str(p) for p in raw if p in tags), None))
        elif etype in _OBJECT_TYPE:  # pydantic says "a valid dictionary or instance of ViewIn"
            msg = f"{path or 'the input'}: expected a JSON object, got {json_kind(e.get('input'))}"
        elif etype in ("union_tag_not_found", "union_tag_invalid"):
            ctx = e.get("ctx") or {}
            key = str(ctx.get("discriminator", "kind")).strip("'")
            where = f"{path}.{key}" if path else key
            if etype == "union_tag_not_found":
                msg = f"{path or 'the input'} has no {key!r}"
            else:
                given = e["input"].get(key) if isinstance(e.get("input"), dict) else ctx.get("tag")
                msg, path = f"{where} is {shown(given)}, not one of {ctx.get('expected_tags')}", where
        elif etype == "literal_error":
            choices = re.findall(r"'([^']*)'", str(e.get("ctx", {}).get("expected", "")))
            near = (dtype_did_you_mean if loc and loc[-1] == "dtype" else did_you_mean)(e.get("input"), choices)
            msg = f"{path}: {shown(e.get('input'))} is not a valid value{near}"
        elif path and etype != "value_error":
            msg = f"{path}: {msg}"
        top = str(loc[0]) if loc else ""
        hint = (hints or {}).get(top)
        # a field's hint where the error is about the field as a whole; else the error's own fix
        own = _fix_for(etype, e.get("ctx") or {})
        fix = unknown_fix or (hint if len(loc) <= 1 or etype in _FIELD_LEVEL else None) or own or hint or \
            "give a value of the type and range the JSON Schema states for this field (legalsat schema)"
        if etype == "value_error" and e.get("ctx", {}).get("error") is not None:
            fix = getattr(e["ctx"]["error"], "fix", fix)
        out.append(Code.INVALID_INPUT.at(msg, fix, field=path))
    return out


# what gives each command's input away, and what the command and route are
_INPUTS = {
    "optimize": (lambda o: (isinstance(o.get("op"), dict) or "term" in o) and "plans" not in o and "strategy" not in o,
                 "an optimize request: plan it with `legalsat optimize` (POST /v1/optimize)"),
    "emit": (lambda o: "plans" in o or {"strategy", "pieces"} <= o.keys(),
             "an optimize response (or one of its plans): turn it into a kernel with `legalsat emit` "
             "(legalsat.clients.triton.build_kernel)"),
    "descriptor": (lambda o: {"global_dim", "box_dim"} <= o.keys(),
                   "a TMA descriptor: judge it with `legalsat validate-descriptor` (POST /v1/descriptors/validate)"),
    "protocol": (lambda o: "roles" in o,
                 "an asynchronous copy protocol: check it with `legalsat verify-pipeline` (POST /v1/verify/pipeline)"),
    "bank": (lambda o: "pattern" in o or "addresses" in o,
             "a shared-memory access: count its bank conflicts with `legalsat bank-conflicts` "
             "(POST /v1/analyze/bank-conflicts)"),
}


# the streaming command that answers a JSON Lines file of each input
STREAM_COMMANDS = {"optimize": "batch", "descriptor": "validate-descriptor", "protocol": "verify-pipeline",
                   "bank": "bank-conflicts"}


def input_kind(obj: object) -> str | None:
    """Which command's input `obj` plainly is (a key of `_INPUTS`: "optimize", "emit",
    "descriptor", "protocol", "bank"), or None."""
    if not isinstance(obj, dict):
        return None
    return next((name for name, (looks, _) in _INPUTS.items() if looks(obj)), None)


def naming_other_input(err: InputError, obj: object, own: str, own_shape: str) -> InputError:
    """`err`, refusing `obj` as the `own` command's input; where `obj` is plainly another
    command's (a descriptor sent to optimize, a protocol to the bank route), its first detail
    says which command and route take it instead of "remove the field" or "field required"."""
    if not isinstance(obj, dict):
        return err
    other = next((what for name, (looks, what) in _INPUTS.items() if name != own and looks(obj)), None)
    if other is None or _INPUTS[own][0](obj):
        return err
    first = dataclasses.replace(err.details[0], fix=f"this is {other}; {own_shape}")
    return InputError([first, *err.details[1:]])
