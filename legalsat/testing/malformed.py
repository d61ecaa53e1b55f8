"""A catalogue of malformed requests over every route of the service: broken encodings,
nesting, numbers at and past every bound, huge arrays, wrong types, duplicate keys, wrong
media types. Each must get a 4xx in the error shape, quickly; none may get a 5xx.

    for case in catalogue(): ...   # Case(name, method, path, body bytes, content type)
"""

from __future__ import annotations

import json
from dataclasses import dataclass

V = {"dtype": "bfloat16", "shape": [64, 96], "strides": [96, 1]}
COPY = {"op": {"kind": "copy", "src": V, "dst": {**V, "strides": [1, 64]}}}
TILE = {"op": {"kind": "load_tile", "src": V, "tile": [64, 64], "consumer": "wgmma_a"}}
GATHER = {"op": {"kind": "gather", "src": V, "axis": 0, "index": {"count": 8}}}
DESCRIPTOR = {"dtype": "bfloat16", "rank": 2, "global_address": 1 << 40, "global_dim": [64, 64],
              "global_strides": [128], "box_dim": [64, 64], "element_strides": [1, 1]}
BANK = {"op": "load", "pattern": "rows", "vector": 8, "tile": {"dtype": "bfloat16", "shape": [64, 64]}}
PROTOCOL = {"barriers": [{"name": "full", "count": 2}], "buffers": [{"name": "s", "count": 2, "bytes": 1024}],
            "setup": [{"op": "init", "bar": {"name": "full", "all": True}, "count": 1}],
            "roles": [{"name": "p", "blocks": [{"count": 4, "ops": [{"op": "expect_tx", "bar": "full", "bytes": 1024}]}]}]}

ROUTES = {  # path -> a valid body of it
    "/v1/optimize": COPY,
    "/v1/optimize/batch": [COPY],
    "/v1/descriptors/validate": DESCRIPTOR,
    "/v1/analyze/bank-conflicts": BANK,
    "/v1/verify/pipeline": PROTOCOL,
}


@dataclass(frozen=True)
class Case:
    """One request. `refused`: it must get a 4xx (the others may be valid at a bound: any
    status but a 5xx)."""

    name: str
    method: str
    path: str
    body: bytes | None
    content_type: str | None = "application/json"
    refused: bool = True


def _j(obj) -> bytes:
    return json.dumps(obj).encode()


def _set(obj, path: list, value):
    """A deep copy of obj with the value at path replaced."""
    out = json.loads(json.dumps(obj))
    cur = out
    for k in path[:-1]:
        if isinstance(cur, dict):
            cur = cur.setdefault(k, {})
        else:
            cur = cur[k]
    cur[path[-1]] = value
    return out


def _first_string(text: bytes) -> bytes:
    """The first string value of a JSON text (as it appears in it, quotes included)."""
    i = text.index(b': "') + 2
    return text[i:text.index(b'"', i + 1) + 1]


def _into_object(text: bytes, extra: bytes) -> bytes:
    """`extra` (', "k": v') added to the first object of a JSON text."""
    i = text.index(b"{") + 1
    return text[:i] + extra[2:] + b", " + text[i:]


def _encodings(path: str, valid) -> list[Case]:
    text = _j(valid)
    value = _first_string(text)
    return [
        Case("empty body", "POST", path, b""),
        Case("whitespace", "POST", path, b"   \n"),
        Case("null", "POST", path, b"null"),
        Case("number", "POST", path, b"42"),
        Case("a JSON string holding the request", "POST", path, _j(json.dumps(valid))),
        Case("truncated", "POST", path, text[: len(text) // 2]),
        Case("invalid UTF-8", "POST", path, text[:5] + b"\xff\xfe" + text[5:]),
        Case("UTF-16", "POST", path, json.dumps(valid).encode("utf-16")),
        Case("byte order mark", "POST", path, b"\xef\xbb\xbf" + text),
        Case("lone surrogate escape in a key", "POST", path, _into_object(text, b', "\\ud800": 1')),
        Case("lone surrogate in a value", "POST", path, text.replace(value, value[:-1] + b'\\udc00"', 1)),
        Case("NaN literal", "POST", path, _into_object(text, b', "x": NaN')),
        Case("Infinity literal", "POST", path, _into_object(text, b', "x": -Infinity')),
        Case("nested 2000 deep", "POST", path, b"[" * 2000 + b"]" * 2000),
        Case("object nested 2000 deep", "POST", path, b'{"a":' * 2000 + b"1" + b"}" * 2000),
        Case("nested 100 deep", "POST", path, b"[" * 100 + b"]" * 100),
        Case("duplicate keys", "POST", path, _into_object(text, b', "zz": 1, "zz": 2')),
        Case("trailing garbage", "POST", path, text + b" xyz"),
        Case("two values", "POST", path, text + b" " + text),
        Case("text/plain", "POST", path, text, "text/plain"),
        Case("form post", "POST", path, b"a=1&b=2", "application/x-www-form-urlencoded"),
        Case("multipart", "POST", path, b"--x\r\n\r\n--x--", "multipart/form-data; boundary=x"),
        Case("xml", "POST", path, b"<a/>", "application/xml"),
        Case("huge array", "POST", path, b"[" + b"1," * 300_000 + b"1]"),
        Case("huge string", "POST", path, _j({"x": "a" * 900_000})),
        Case("wrong method", "GET", path, None, None),
    ]


def _numbers(path: str, valid: dict, fields: list[list]) -> list[Case]:
    out = []
    for f in fields:
        name = ".".join(map(str, f))
        for label, value in (("-1", -1), ("0", 0), ("2^31", 1 << 31), ("2^63", 1 << 63), ("2^64", 1 << 64),
                             ("10^30", 10 ** 30), ("float", 1.5), ("1e309", "1e309"), ("string", "8"),
                             ("true", True), ("null", None), ("list", [1]), ("object", {"a": 1})):
            body = _set(valid, f, value)
            raw = _j(body)
            if value == "1e309":  # a number JSON allows that overflows a double
                raw = raw.replace(b'"1e309"', b"1e309")
            out.append(Case(f"{name} = {label}", "POST", path, raw, refused=False))
    return out


def catalogue() -> list[Case]:
    """Every case, over every route."""
    out: list[Case] = []
    for path, valid in ROUTES.items():
        out += [Case(f"{path}: {c.name}", c.method, c.path, c.body, c.content_type) for c in _encodings(path, valid)]
    out += [Case(f"{c.name}", c.method, c.path, c.body, c.content_type, c.refused) for c in _edge_cases()]
    out += [Case(f"optimize: {c.name}", c.method, c.path, c.body, c.content_type, False) for c in _numbers(
        "/v1/optimize", COPY, [["op", "src", "shape", 0], ["op", "src", "strides", 1], ["options", "timeout_ms"],
                               ["options", "node_limit"], ["options", "max_plans"], ["options", "smem_bytes"]])]
    out += [Case(f"tile: {c.name}", c.method, c.path, c.body, c.content_type, False) for c in _numbers(
        "/v1/optimize", TILE, [["op", "tile", 0], ["op", "src", "base_align"]])]
    out += [Case(f"gather: {c.name}", c.method, c.path, c.body, c.content_type, False) for c in _numbers(
        "/v1/optimize", GATHER, [["op", "axis"], ["op", "index", "count"]])]
    out += [Case(f"descriptor: {c.name}", c.method, c.path, c.body, c.content_type, False) for c in _numbers(
        "/v1/descriptors/validate", DESCRIPTOR, [["global_dim", 0], ["box_dim", 1], ["global_address"], ["rank"]])]
    out += [Case(f"bank: {c.name}", c.method, c.path, c.body, c.content_type, False) for c in _numbers(
        "/v1/analyze/bank-conflicts", BANK, [["vector"], ["tile", "shape", 0]])]
    out += [Case(f"protocol: {c.name}", c.method, c.path, c.body, c.content_type, False) for c in _numbers(
        "/v1/verify/pipeline", PROTOCOL, [["roles", 0, "blocks", 0, "count"], ["barriers", 0, "count"],
                                          ["roles", 0, "blocks", 0, "ops", 0, "bytes"]])]
    return out


def _edge_cases() -> list[Case]:
    big = {"dtype": "bfloat16", "shape": [1 << 30, 1 << 30], "strides": [1 << 30, 1]}
    return [
        Case("optimize: a movement of 2^61 bytes", "POST", "/v1/optimize",
             _j({"op": {"kind": "copy", "src": big, "dst": {**big, "strides": [1, 1 << 30]}}})),
        Case("optimize: 17 dims", "POST", "/v1/optimize", _j({"op": {"kind": "load_tile", "tile": [1] * 17,
             "consumer": "rows", "src": {"dtype": "uint8", "shape": [1] * 17, "strides": [1] * 17}}})),
        Case("optimize: unknown kind", "POST", "/v1/optimize", _j({"op": {"kind": "scatter"}})),
        Case("optimize: term and op", "POST", "/v1/optimize", _j({**COPY, "term": "(copy)"})),
        Case("optimize: term nested 5000 deep", "POST", "/v1/optimize", _j({"term": "(" * 5000 + ")" * 5000})),
        Case("optimize: term of 500 kB", "POST", "/v1/optimize", _j({"term": "(copy " + "1 " * 250_000 + ")"})),
        Case("optimize: request_id of 1 MB", "POST", "/v1/optimize", _j({**COPY, "request_id": "x" * 1_000_000})),
        Case("optimize: request_id a number", "POST", "/v1/optimize", _j({**COPY, "request_id": 7})),
        Case("optimize: unknown target", "POST", "/v1/optimize", _j({**COPY, "target": "sm91"})),
        Case("optimize: unknown option", "POST", "/v1/optimize", _j({**COPY, "options": {"timeout": 5}})),
        Case("batch: empty", "POST", "/v1/optimize/batch", b"[]"),
        Case("batch: an object", "POST", "/v1/optimize/batch", _j(COPY)),
        Case("batch: 257 items", "POST", "/v1/optimize/batch", _j([COPY] * 257)),
        Case("bank: 4096 x 4096 tile walked by columns", "POST", "/v1/analyze/bank-conflicts",
             _j({"op": "load", "pattern": "cols", "vector": 1, "tile": {"dtype": "float32", "shape": [4096, 4096]}})),
        Case("bank: 10^6 addresses", "POST", "/v1/analyze/bank-conflicts",
             _j({"op": "load", "access_bytes": 4, "addresses": list(range(0, 4_000_000, 4))})),
        Case("protocol: a block of 10^9 iterations", "POST", "/v1/verify/pipeline",
             _j(_set(PROTOCOL, ["roles", 0, "blocks", 0, "count"], 10 ** 9))),
        Case("descriptor: target query unknown", "POST", "/v1/descriptors/validate?target=sm91", _j(DESCRIPTOR)),
        Case("egraph: unknown id", "GET", "/v1/egraphs/" + "0" * 32, None, None),
        Case("egraph: id with a path", "GET", "/v1/egraphs/..%2F..%2Fetc%2Fpasswd", None, None),
        Case("egraph view: unknown id", "GET", "/v1/egraphs/" + "f" * 32 + "/view", None, None),
        Case("unknown route", "POST", "/v1/nothing", b"{}"),
        Case("trailing slash", "POST", "/v1/optimize/", _j(COPY)),
    ]
