"""The s-expression form of movement terms: parse and print, inverse of each other.

    (copy (view bfloat16 (8192 8192) (8192 1) 16) (view bfloat16 (8192 8192) (1 8192) 16))
    (load_tile (view float16 (4096 4096) (4096 1) 128) (128 64) wgmma_a)
    (load_tile (view bfloat16 (4096 4096) (1 4096) 16) (64 128) (wgmma_b :major mn :instruction (64 128 16)))
    (gather (view bfloat16 (32000 4096) (4096 1) 16) 0 (index 8192 random))
    (gather (view bfloat16 (65536 8 128) (1024 128 1) 16) 0 (index 512 paged :page_size 16 :unique true))

A view's base_align may be left out (16). Parsing checks only the syntax; the request
validator checks the values and names the offending field.
"""

from __future__ import annotations

import re

from legalsat.diagnostics import Code, InputError

Sexp = str | int | list

_TOKEN = re.compile(r"\s*(?:(\()|(\))|([^\s()]+))")
_INT = re.compile(r"-?[0-9]+")  # ASCII digits only: int() would also read '١٢' and '１２'
MAX_TERM_CHARS = 1 << 16
# The planner's own terms nest one level per dim (TCons / DCons) inside a few wrappers: a
# rank-16 view (the most a request has) nests about 21 deep. Deeper is no term legalsat writes.
MAX_TERM_DEPTH = 32
# Integers of a term are extents, strides, byte counts and options: 64-bit at most (20
# digits); a longer one is refused here, before int() spends time on it or a message prints it.
MAX_INT_DIGITS = 24


def _err(message: str, fix: str) -> InputError:
    return Code.INVALID_TERM.error(message, fix, "term")


def check_term_length(text: str) -> None:
    """InputError (`invalid_term`) for a term longer than MAX_TERM_CHARS: the one check of a
    term's size, made by the reader and, before a request is queued, by the service."""
    if len(text) > MAX_TERM_CHARS:
        raise _err(f"term is {len(text)} characters; the limit is {MAX_TERM_CHARS}",
                   "send the request as JSON, or a smaller term")


def tokenize(text: str) -> list[str]:
    """Split into '(', ')' and atoms; raises InputError on a non-string or oversize term."""
    if not isinstance(text, str):
        raise _err("term must be a string", 'send the term as text, e.g. "(copy (view ...) (view ...))"')
    check_term_length(text)
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise _err(f"cannot read the term at character {pos}", "check the parentheses")
        out.append(m.group(1) or m.group(2) or m.group(3))
        pos = m.end()
    return out


def parse_sexp(text: str) -> Sexp:
    """Text -> nested lists of atoms (integers become int). Exactly one top-level form."""
    toks = tokenize(text)
    stack: list[list] = [[]]
    for t in toks:
        if t == "(":
            if len(stack) > MAX_TERM_DEPTH:
                raise _err(f"term nests deeper than {MAX_TERM_DEPTH} levels",
                           "a movement term nests a few levels (its views' shapes and strides are flat lists)")
            stack.append([])
        elif t == ")":
            if len(stack) == 1:
                raise _err("unbalanced ')' in term", "remove the extra ')'")
            done = stack.pop()
            stack[-1].append(done)
        elif _INT.fullmatch(t):
            if len(t.lstrip("-")) > MAX_INT_DIGITS:
                raise _err(f"term holds an integer of {len(t.lstrip('-'))} digits (starting {t[:12]}...)",
                           "give extents, strides and sizes as 64-bit integers")
            stack[-1].append(int(t))
        else:
            stack[-1].append(t)
    if len(stack) != 1:
        raise _err("unbalanced '(' in term", "close every '(' with a ')'")
    if len(stack[0]) != 1:
        raise _err(f"term must be one form; found {len(stack[0])}", "wrap the movement in one (copy ...), "
                   "(load_tile ...) or (gather ...)")
    return stack[0][0]


def show(x: Sexp) -> str:
    """Nested lists -> text (the inverse of parse_sexp)."""
    if isinstance(x, list):
        return "(" + " ".join(show(e) for e in x) + ")"
    if isinstance(x, bool):
        return "true" if x else "false"
    return str(x)


def _ints(x: Sexp, what: str) -> list[int]:
    if not isinstance(x, list) or not all(isinstance(e, int) for e in x):
        raise _err(f"{what} must be a parenthesised list of integers, got {show(x)}",
                   f"write {what} like (8192 8192)")
    return x


def _view(x: Sexp, where: str) -> dict:
    if not (isinstance(x, list) and x and x[0] == "view" and len(x) in (4, 5)):
        raise _err(f"{where} must be (view DTYPE (SHAPE...) (STRIDES...) [BASE_ALIGN]), got {show(x)}",
                   "write e.g. (view bfloat16 (8192 8192) (8192 1) 16)")
    out = {"dtype": str(x[1]), "shape": _ints(x[2], f"{where} shape"),
           "strides": _ints(x[3], f"{where} strides")}
    if len(x) == 5:
        out["base_align"] = x[4]
    return out


def _options(rest: list, what: str) -> list[tuple[object, object]]:
    """The :key value pairs of a term's options; a key given twice is an error (which of its
    values would count is not the writer's choice, as a JSON object's repeated key)."""
    pairs = list(zip(rest[::2], rest[1::2]))
    seen: set[str] = set()
    for k, _ in pairs:  # one pass: a term of 64 K characters holds thousands of options
        key = show(k)
        if key in seen:
            raise _err(f"the {what} option {key} is given twice", "give each option once")
        seen.add(key)
    return pairs


def _index(x: Sexp) -> dict:
    if not (isinstance(x, list) and len(x) >= 3 and x[0] == "index" and isinstance(x[1], int)):
        raise _err(f"a gather's index must be (index COUNT DISTRIBUTION [:page_size P] [:unique true] "
                   f"[:groups G]), got {show(x)}", "write e.g. (index 8192 random)")
    out: dict = {"count": x[1], "distribution": str(x[2])}
    rest = x[3:]
    if len(rest) % 2:
        raise _err(f"index options come in :key value pairs, got {show(rest)}", "write e.g. :page_size 16")
    for k, v in _options(rest, "index"):
        if k == ":unique":
            if v not in ("true", "false"):
                raise _err(f":unique is {show(v)}; it is true or false", "write :unique true (or leave it out)")
            out["unique"] = v == "true"
        elif k in (":page_size", ":groups"):
            out[k[1:]] = v
        else:
            raise _err(f"unknown index option {k!r}", "use :page_size, :unique or :groups")
    return out


def _consumer(x: Sexp):
    if isinstance(x, str):
        return x
    if not (isinstance(x, list) and x and isinstance(x[0], str) and len(x) % 2 == 1):
        raise _err(f"a tile's consumer must be a name or (NAME [:major k|mn] [:instruction (M N K)] "
                   f"[:element DTYPE]), got {show(x)}", "write e.g. wgmma_a or (wgmma_a :major k)")
    out: dict = {"kind": x[0]}
    for k, v in _options(x[1:], "consumer"):
        if k == ":major":
            out["major"] = str(v)
        elif k == ":instruction":
            out["instruction"] = _ints(v, "instruction")
        elif k == ":element":
            out["element"] = str(v)
        else:
            raise _err(f"unknown consumer option {k!r}", "use :major, :instruction or :element")
    return out


def op_from_sexp(text: str) -> dict:
    """A term's text -> the JSON form of its `op` (validated later by the request schema)."""
    x = parse_sexp(text)
    head = x[0] if isinstance(x, list) and x else None
    if head == "copy" and len(x) == 3:
        return {"kind": "copy", "src": _view(x[1], "src"), "dst": _view(x[2], "dst")}
    if head == "load_tile" and len(x) == 4:
        return {"kind": "load_tile", "src": _view(x[1], "src"), "tile": _ints(x[2], "tile"),
                "consumer": _consumer(x[3])}
    if head == "gather" and len(x) == 4 and isinstance(x[2], int):
        return {"kind": "gather", "src": _view(x[1], "src"), "axis": x[2], "index": _index(x[3])}
    forms = {"copy": (2, "(copy SRC DST)"), "load_tile": (3, "(load_tile SRC (TILE...) CONSUMER)"),
             "gather": (3, "(gather SRC AXIS (index ...))")}
    if head in forms:  # a known movement with the wrong arguments: said so, not "unknown"
        takes, form = forms[head]
        why = (f" takes {takes} arguments, got {len(x) - 1}" if len(x) - 1 != takes else
               f": its AXIS {show(x[2])[:20]} is not an integer")
        raise _err(f"({head} ...){why}: {show(x)[:80]}", f"write {form}")
    raise _err(f"unknown movement term {show(x)[:80]}",
               "use (copy SRC DST), (load_tile SRC (TILE...) CONSUMER) or (gather SRC AXIS (index ...))")


def _view_sexp(v: dict) -> list:
    return ["view", v["dtype"], list(v["shape"]), list(v["strides"]), v.get("base_align", 16)]


def op_to_sexp(op: dict) -> str:
    """The JSON form of an op -> its term text (inverse of op_from_sexp)."""
    if op["kind"] == "copy":
        return show(["copy", _view_sexp(op["src"]), _view_sexp(op["dst"])])
    if op["kind"] == "load_tile":
        c = op["consumer"]
        if isinstance(c, dict):
            opts = [[f":{k}", list(c[k]) if k == "instruction" else c[k]] for k in ("major", "instruction", "element")
                    if c.get(k) is not None]
            c = [c["kind"], *(x for pair in opts for x in pair)] if opts else c["kind"]
        return show(["load_tile", _view_sexp(op["src"]), list(op["tile"]), c])
    ix = op["index"]
    idx: list = ["index", ix["count"], ix.get("distribution", "random")]
    if ix.get("page_size") is not None:
        idx += [":page_size", ix["page_size"]]
    if ix.get("unique"):
        idx += [":unique", "true"]
    if ix.get("groups") is not None:
        idx += [":groups", ix["groups"]]
    return show(["gather", _view_sexp(op["src"]), op["axis"], idx])
