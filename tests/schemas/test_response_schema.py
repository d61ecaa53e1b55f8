"""The published response schema describes every field, and types pieces, gather and
protocol completely (no free-form objects where the planner has a shape)."""

from __future__ import annotations

from legalsat.schemas.plan import OptimizeResponse


def _walk(schema: dict, defs: dict, path: str, seen: set, out: list) -> None:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in seen:
            seen.add(name)
            _walk(defs[name], defs, name, seen, out)
        return
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            _walk(sub, defs, path, seen, out)
    if "items" in schema:
        _walk(schema["items"], defs, path + "[]", seen, out)
    if isinstance(schema.get("additionalProperties"), dict):
        _walk(schema["additionalProperties"], defs, path + "{}", seen, out)
    for name, prop in schema.get("properties", {}).items():
        if "description" not in prop:
            out.append(f"{path}.{name}: no description")
        if prop.get("type") == "object" and "properties" not in prop and "additionalProperties" not in prop:
            out.append(f"{path}.{name}: an untyped object")
        _walk(prop, defs, f"{path}.{name}", seen, out)


def test_every_response_field_is_described_and_typed():
    schema = OptimizeResponse.model_json_schema(by_alias=True)
    problems: list[str] = []
    _walk(schema, schema.get("$defs", {}), "OptimizeResponse", set(), problems)
    assert problems == []


def test_pieces_gather_and_protocol_are_typed():
    defs = OptimizeResponse.model_json_schema(by_alias=True)["$defs"]
    assert defs["PlanOut"]["properties"]["pieces"]["items"] == {"$ref": "#/$defs/PieceOut"}
    assert "GatherOut" in defs and "ProtocolIn" in defs and "OpIn" in defs
    assert set(defs["PieceOut"]["properties"]) >= {"dims", "descriptors", "smem", "async", "strategy"}
