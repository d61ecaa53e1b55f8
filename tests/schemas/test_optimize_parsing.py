"""Optimize requests: every invalid input names its field; the s-expression form and the
JSON form parse to one term and print back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import legalsat
from legalsat.diagnostics import Code, InputError
from legalsat.schemas.optimize import parse_request
from legalsat.terms.sexpr import op_from_sexp, op_to_sexp

V = {"dtype": "bfloat16", "shape": [64, 64], "strides": [64, 1]}


def copy(src=None, dst=None, **extra):
    return {"op": {"kind": "copy", "src": src or V, "dst": dst or V}, **extra}


@pytest.mark.parametrize("req, field", [
    (copy(src={**V, "strides": [64]}), "op.src.strides"),
    (copy(src={**V, "shape": [0, 64]}), "op.src.shape[0]"),
    (copy(src={**V, "dtype": "bfloat61"}), "op.src.dtype"),
    (copy(src={**V, "shape": [1 << 40, 1 << 30], "strides": [1 << 30, 1]}, dst={**V, "shape": [1 << 40, 1 << 30], "strides": [1 << 30, 1]}), "op.src.shape[0]"),
    (copy(src={**V, "shape": [1 << 20, 1 << 30], "strides": [1 << 30, 1]}, dst={**V, "shape": [1 << 20, 1 << 30], "strides": [1 << 30, 1]}), "op.src.shape"),
    (copy(options={"smem_bytes": 232449}), "options.smem_bytes"),
    (copy(options={"smem_bytes": 1 << 62}), "options.smem_bytes"),
    (copy(target="gfx942", options={"smem_bytes": 65537}), "options.smem_bytes"),
    (copy(src={**V, "shape": [2] * 9, "strides": [1] * 9}), "op.src.shape"),
    (copy(dst={**V, "strides": [1, 1]}), "op.dst.strides"),
    (copy(dst={**V, "shape": [64, 32]}), "op.dst.shape"),
    (copy(src={**V, "strides": [64, -1]}), "op.src.strides[1]"),
    ({"op": {"kind": "gather", "src": V, "axis": 0, "index": {"count": 0}}}, "op.index.count"),
    ({"op": {"kind": "gather", "src": V, "axis": 2, "index": {"count": 4}}}, "op.axis"),
    ({"op": {"kind": "load_tile", "src": V, "tile": [64], "consumer": "rows"}}, "op.tile"),
    # wgmma is sm_90a's: gfx942 (MFMA) and sm100 (tcgen05) got wgmma fields and no word
    ({"target": "gfx942", "op": {"kind": "load_tile", "src": V, "tile": [64, 64], "consumer": "wgmma_a"}},
     "op.consumer"),
    ({"target": "sm100", "op": {"kind": "load_tile", "src": V, "tile": [64, 64], "consumer": "wgmma_b"}},
     "op.consumer"),
    (copy(target="sm91"), "target"),
    (copy(options={"max_plans": 0}), "options.max_plans"),
    (copy(options={"timeout": 5}), "options.timeout"),
    ({**copy(), "term": "(copy)"}, "term"),
    ({"term": "(copy (view bfloat16 (4 4) (4 1)) (view bfloat16 (4 4) (4 1))"}, "term"),
])
def test_invalid_requests_name_their_field(req, field):
    with pytest.raises(InputError) as e:
        parse_request(req)
    d = e.value.headline
    assert d.field == field, (d.field, d.message)
    assert d.message and d.fix


def test_self_overlap_decided_exactly():
    # (2, 2) with strides (3, 2) does not overlap though the quick nested test fails
    ok = parse_request(copy(src={**V, "shape": [2, 2], "strides": [2, 1]},
                            dst={**V, "shape": [2, 2], "strides": [3, 2]}))
    assert ok.movement.dst.strides == (3, 2)
    with pytest.raises(InputError):
        parse_request(copy(src={**V, "shape": [3, 3], "strides": [3, 1]},
                           dst={**V, "shape": [3, 3], "strides": [2, 1]}))


view = st.builds(lambda dt, shape, data: {"dtype": dt, "shape": shape,
                                          "strides": [data * (k + 1) for k in range(len(shape))],
                                          "base_align": 16},
                 st.sampled_from(["bfloat16", "float32", "uint8"]),
                 st.lists(st.integers(1, 10_000), min_size=1, max_size=8), st.integers(1, 9))


@given(view, view)
def test_sexpr_round_trip(a, b):
    op = {"kind": "copy", "src": a, "dst": b}
    assert op_from_sexp(op_to_sexp(op)) == op


@given(st.integers(1, 1 << 20), st.sampled_from(["random", "sorted", "paged"]), st.booleans())
def test_gather_sexpr_round_trip(count, dist, unique):
    op = {"kind": "gather", "src": V, "axis": 0,
          "index": {"count": count, "distribution": dist, "page_size": 16, "unique": unique}}
    back = op_from_sexp(op_to_sexp(op))
    assert back["index"]["count"] == count and back["index"].get("unique", False) == unique
    assert op_to_sexp(back) == op_to_sexp(op)


def test_term_and_json_give_one_term():
    a = parse_request({"term": "(copy (view bfloat16 (64 64) (64 1) 16) (view bfloat16 (64 64) (1 64) 16))"})
    b = parse_request(copy(dst={**V, "strides": [1, 64]}))
    assert a.movement == b.movement and a.term_text == b.term_text


def tile(consumer="rows", tile=(64, 64), **src):
    return {"op": {"kind": "load_tile", "src": {**V, **src}, "tile": list(tile), "consumer": consumer}}


@pytest.mark.parametrize("req, field", [
    (tile(tile=(64, 0)), "op.tile[1]"),
    (tile(tile=(1 << 13, 1 << 12)), "op.tile"),
    (tile({"kind": "rows", "major": "k"}), "op.consumer"),
    (tile({"kind": "wgmma_a", "element": "float8_e4m3fn"}), "op.consumer.element"),
    (tile({"kind": "wgmma_a", "element": "float9"}), "op.consumer.element"),
    (tile({"kind": "wgmma_b", "instruction": [64, 100, 16]}), "op.consumer.instruction"),
    (tile({"kind": "wgmma_b", "major": "row"}), "op.consumer.major"),
    (tile(shape=[2] * 17, strides=[1] * 17, tile=[1] * 17), "op.src.shape"),
])
def test_invalid_tile_loads_name_their_field(req, field):
    with pytest.raises(InputError) as e:
        parse_request(req)
    assert e.value.headline.field == field, e.value.headline
    assert e.value.headline.fix


def test_tile_loads_take_what_compilers_send():
    # tiles over the tensor, 12 dims with unit and broadcast ones, fp8 read as e4m3 by wgmma
    shape = [2, 1, 3, 1, 2, 2, 1, 2, 2, 1, 40, 64]
    strides = [0, 1, 40960, 1, 20480, 10240, 1, 5120, 2560, 1, 64, 1]
    ok = parse_request(tile(tile=[1] * 10 + [64, 128], shape=shape, strides=strides, dtype="int16"))
    assert ok.movement.tile[-2:] == (64, 128) and len(ok.movement.src.shape) == 12
    fp8 = parse_request(tile({"kind": "wgmma_a", "major": "k", "instruction": [64, 128, 32],
                              "element": "float8_e4m3fn"}, dtype="uint8"))
    assert fp8.movement.consumer.element.name == "float8_e4m3fn"
    for dt in ("float8_e4m3fn", "float8_e5m2", "int8", "bool", "int16"):
        assert parse_request(tile(dtype=dt)).movement.src.dtype.name == dt
    # the consumer's old spelling stays valid
    assert parse_request(tile("wgmma_b")).movement.consumer.kind.value == "wgmma_b"


_COPY = ('{"op": {"kind": "copy", "src": {"dtype": "float32", "shape": [%s, 4], "strides": [4, 1]}, '
         '"dst": {"dtype": "float32", "shape": [4, 4], "strides": [4, %s]}}}')


@pytest.mark.parametrize("text,field", [
    (_COPY % ("9" * 4300, "1"), "op.src.shape[0]"),   # under CPython's 4,300-digit limit: products were over it
    (_COPY % ("9" * 5000, "1"), "op.src.shape[0]"),   # over it: json.loads itself raised
    (_COPY % ("4", "-" + "9" * 5000), "op.dst.strides[1]"),
    ('{"term": "(copy (view float32 (%s 4) (4 1)) (view float32 (4 4) (4 1)))"}' % ("9" * 5000), "term"),
    ('{"term": "(copy (view float32 (\\u0661\\u0662 4) (4 1)) (view float32 (4 4) (4 1)))"}', "term"),
    ('{"term": "(copy (view float32 (\\uff11\\uff12 4) (4 1)) (view float32 (4 4) (4 1)))"}', "term"),
], ids=["4300-digits", "5000-digits", "negative-5000", "term-5000", "arabic-indic", "fullwidth"])
def test_numbers_no_request_holds_are_named_not_crashed_on(text, field):
    with pytest.raises(InputError) as e:
        parse_request(text)
    assert e.value.headline.field == field and e.value.headline.fix
    assert len(e.value.headline.message) < 400  # the digits are described, not printed


def test_a_rank_16_tile_load_whose_dims_do_not_coalesce_plans():
    """16 dims (the most a tile load's source has), none mergeable: the planner's own term
    nests one level per dim, which the term reader must take."""
    import legalsat

    req = {"op": {"kind": "load_tile", "src": {"dtype": "bfloat16", "shape": [2] * 15 + [64],
                                               "strides": [2 ** (20 - k) * 64 for k in range(15)] + [1]},
                  "tile": [1] * 15 + [64], "consumer": "rows"}}
    out = legalsat.optimize(req)
    assert out["status"] == "ok" and out["plans"], out.get("rejected")


@pytest.mark.parametrize("text,field", [
    ('{"op": {"kind": "copy", "src": {"dtype": "float32", "shape": [4], "shape": [4], "strides": [1]}}}',
     "op.src.shape"),
    ('{"op": {"kind": "copy", "src": {"dtype": "float32", "shape": [4, NaN], "strides": [4, 1]}}}',
     "op.src.shape[1]"),
    ('{"options": {"timeout_ms": -Infinity}}', "options.timeout_ms"),
], ids=["repeated-key", "nan", "infinity"])
def test_json_that_is_not_json_names_where(text, field):
    with pytest.raises(InputError) as e:
        parse_request(text)
    assert e.value.headline.code is Code.INVALID_JSON and e.value.headline.field == field


def test_a_long_integer_survives_the_trip_to_a_worker():
    import pickle

    from legalsat.schemas.base import load_json

    v = pickle.loads(pickle.dumps(load_json("[" + "9" * 30 + ", -" + "9" * 40 + "]")))
    assert [repr(x) for x in v] == ["<an integer of 30 digits>", "<a negative integer of 40 digits>"]


def test_a_nested_field_gets_its_own_fix_not_the_op_hint():
    src = {"dtype": "float32", "shape": [4, 4], "strides": [4, 1], "base_align": 0}
    with pytest.raises(InputError) as e:
        parse_request({"op": {"kind": "copy", "src": src, "dst": {**src, "base_align": 16}}})
    assert e.value.headline.field == "op.src.base_align" and e.value.headline.fix == "use a value >= 1"
    with pytest.raises(InputError) as e:
        parse_request({"op": {"kind": "gathr"}})
    assert e.value.headline.field == "op.kind" and '"kind"' in e.value.headline.fix


def test_a_term_requests_problems_name_the_term():
    with pytest.raises(InputError) as e:
        parse_request({"term": "(copy (view bfloat61 (4 4) (4 1)) (view bfloat16 (4 4) (4 1)))"})
    assert e.value.headline.field == "term" and "op.src.dtype" in e.value.headline.message


def test_an_overlong_term_is_one_diagnostic_before_and_after_the_queue():
    """The service's check before it queues a request and the term reader give one answer
    (they were invalid_input "at most 65536" and invalid_term "the limit is 65536")."""
    from legalsat.schemas.optimize import check_request_shape

    answers = []
    for check in (check_request_shape, parse_request):
        with pytest.raises(InputError) as e:
            check({"term": "(" * 70_000})
        answers.append((e.value.headline.code, e.value.headline.field, e.value.headline.message))
    assert answers[0] == answers[1] and answers[0][:2] == (Code.INVALID_TERM, "term")


@pytest.mark.parametrize("levels", [100, 5000], ids=["past-the-bound", "past-the-parser"])
def test_a_request_nesting_too_deep_names_the_field_holding_it(levels):
    """5,000 levels stop json.loads itself (RecursionError): the field is found by a scan."""
    text = '{"op": {"kind": "copy", "sr\\"c": "x{[", "src": {"shape": %s}}}' % ("[" * levels + "]" * levels)
    with pytest.raises(InputError) as e:
        legalsat.optimize(text)
    assert e.value.headline.field == "op.src.shape" and "inside op.src.shape" in e.value.headline.message


@pytest.mark.parametrize("req,field,says", [
    ({"Target": "sm90"}, "Target", "unknown field 'Target'; did you mean 'target'?"),
    ({"options": {"Timeout_ms": 5}}, "options.Timeout_ms", "unknown field 'Timeout_ms'"),
    ({"op": {"kind": "copy", "src": 5, "dst": {}}}, "op.src", "op.src: expected a JSON object, got an integer"),
    ({"op": {"kind": "teleport"}}, "op.kind", "op.kind is 'teleport', not one of 'copy', 'load_tile', 'gather'"),
    ({"op": {"src": {}}}, "op", "op has no 'kind'"),
    ({"Options": {}}, "Options", "unknown field 'Options'"),  # a model's name, capitalised
    ({"copy": 1}, "copy", "unknown field 'copy'"),  # a union tag
    ({"int": 1}, "int", "unknown field 'int'"),  # a type's name
], ids=["capital-top", "capital-nested", "object-expected", "bad-kind", "no-kind", "model-name", "tag-name",
        "type-name"])
def test_errors_name_the_senders_own_fields_in_the_senders_words(req, field, says):
    """A field spelt with a capital kept its name (it was taken for a pydantic model's); no
    message speaks of dictionaries, model classes or discriminators."""
    base = {"term": "(copy (view float32 (4 4) (4 1)) (view float32 (4 4) (1 4)))"}
    with pytest.raises(InputError) as e:
        legalsat.optimize({**({} if "op" in req else base), **req})
    d = e.value.headline
    assert d.field == field and says in d.message, d
    assert not any(w in d.message for w in ("dictionary", "instance of", "discriminator", "ViewIn"))


def test_a_misspelt_field_is_matched_against_its_siblings():
    """op.gather was asked "did you mean 'term'?" (a top-level name); a view's stride gets strides."""
    view = {"dtype": "float32", "shape": [4], "strides": [1]}
    with pytest.raises(InputError) as e:
        legalsat.optimize({"op": {"kind": "copy", "gather": 1, "src": view, "dst": view}})
    assert e.value.headline.field == "op.gather" and "did you mean" not in e.value.headline.message
    with pytest.raises(InputError) as e:
        legalsat.optimize({"op": {"kind": "copy", "src": {**view, "stride": [1]}, "dst": view}})
    assert e.value.headline.message.endswith("did you mean 'strides'?")


@pytest.mark.parametrize("src,tile", [
    ({"dtype": "float32", "shape": [1, 4294967296], "strides": [4294967296, 1]}, [512, 1]),
    ({"dtype": "uint64", "shape": [2147483647, 1, 1], "strides": [1, 1, 1]}, [16, 128, 32]),
])
def test_a_tile_walk_past_a_tebibyte_is_named_not_overflowed(src, tile):
    """Edge tiles are loaded whole: a tile overhanging a huge tensor walks far more bytes than
    the tensor holds (an i64 overflow in the egglog cost rules, answered 500, before)."""
    with pytest.raises(InputError) as e:
        legalsat.optimize({"op": {"kind": "load_tile", "src": src, "tile": tile, "consumer": "rows"}})
    assert e.value.headline.field == "op.tile" and "2^40" in e.value.headline.message


@pytest.mark.parametrize("term,says", [
    ("(gather (view bfloat16 (65536 8 128) (1024 128 1) 16) 0 (index 512 paged :page_size 16 :unique TRUE))",
     ":unique is TRUE"),
    ("(gather (view bfloat16 (65536 8 128) (1024 128 1) 16) 0 (index 512 paged :page_size 16 :page_size 32))",
     ":page_size is given twice"),
    ("(load_tile (view bfloat16 (64 64) (64 1) 16) (64 64) (wgmma_a :major k :major mn))", ":major is given twice"),
])
def test_a_terms_options_are_read_as_written_or_refused(term, says):
    """`:unique TRUE` (or yes, 1) read as false, and an option given twice kept its last value:
    both silently; the JSON form refuses "unique": "yes" and a repeated key."""
    with pytest.raises(InputError) as e:
        parse_request({"term": term})
    assert e.value.headline.field == "term" and says in e.value.headline.message


def test_a_negative_extent_of_thirty_digits_is_not_shown_as_its_stand_in():
    """Past 24 digits a JSON integer is read as a stand-in (10^24 with its sign): the message
    said "is -1000000000000000000000000" for -10^30."""
    view = '{"dtype": "bfloat16", "shape": [-1000000000000000000000000000000, 4], "strides": [4, 1]}'
    with pytest.raises(InputError) as e:
        parse_request(f'{{"op": {{"kind": "copy", "src": {view}, "dst": {view}}}}}')
    assert "more than 24 digits" in e.value.headline.message and "1000000" not in e.value.headline.message


@pytest.mark.parametrize("example,command", [("descriptors.jsonl", "validate-descriptor"),
                                             ("bank_conflicts.jsonl", "bank-conflicts"),
                                             ("pipelines.jsonl", "verify-pipeline")])
def test_another_commands_input_is_named_not_told_to_drop_its_fields(example, command):
    """A descriptor fed to optimize or batch was told 'unknown field dtype: remove the field'."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for line in (root / "examples" / example).read_text().splitlines()[:5]:
        with pytest.raises(InputError) as e:
            parse_request(line)
        assert f"legalsat {command}" in e.value.headline.fix, e.value.headline


@pytest.mark.parametrize("spelled,says", [
    ("uint4", "4-bit, narrower than a byte"),  # was "did you mean 'uint64'?": 16 times the width
    ("int4", "[..., n / 2] uint8"),
    ("float4_e2m1fn_x2", "describe its bytes as uint8"),  # torch's packed fp4 (was: 'float8_e4m3fn')
    ("float6_e3m2fn", "6-bit"),
    ("fp8", "one of 'float8_e4m3fn', 'float8_e5m2'"),
    ("e4m3", "did you mean 'float8_e4m3fn'?"),  # no suggestion before
    ("fp8e4nv", "did you mean 'float8_e4m3fn'?"),  # Triton's name
    ("f8E5M2", "did you mean 'float8_e5m2'?"),  # MLIR's
    ("torch.bfloat16", "did you mean 'bfloat16'?"),
    ("half", "did you mean 'float16'?"),
    ("i1", "did you mean 'bool'?"),
])
def test_a_dtype_spelled_as_elsewhere_or_narrower_than_a_byte_is_answered_for_what_it_is(spelled, says):
    """An unknown dtype's suggestion was difflib's closest name, of any width (uint4 -> uint64,
    float4_e2m1fn_x2 -> float8_e4m3fn): taking it mis-sizes the view. Framework spellings map to
    legalsat's names; a sub-byte type is said to be one, with its bytes as uint8."""
    src = {"dtype": spelled, "shape": [8, 8], "strides": [8, 1]}
    with pytest.raises(InputError) as e:
        parse_request({"op": {"kind": "copy", "src": src, "dst": {**src, "strides": [1, 8]}}})
    assert e.value.headline.field == "op.src.dtype" and says in e.value.headline.message, e.value.headline.message
    assert "uint64" not in e.value.headline.message and "int64" not in e.value.headline.message


def test_a_descriptor_names_what_an_fp8_or_int8_view_moves_as():
    """A descriptor takes the driver's data types only: float8_e4m3fn and int8 get the one they
    move as (no suggestion before)."""
    from legalsat.api import validate_descriptor

    desc = {"rank": 2, "global_address": 1 << 47, "global_dim": [4096, 1024], "global_strides": [4096],
            "box_dim": [64, 64], "element_strides": [1, 1], "interleave": "none", "swizzle": "64B",
            "l2_promotion": "128B", "oob_fill": "none"}
    for name in ("float8_e4m3fn", "int8"):
        with pytest.raises(InputError) as e:
            validate_descriptor({**desc, "dtype": name})
        assert e.value.headline.field == "dtype" and f"did you mean 'uint8' (what {name} moves as)?" in \
            e.value.headline.message


@pytest.mark.parametrize("term, said", [
    ("(copy (view float32 (64 64) (64 1) 16))", "(copy ...) takes 2 arguments, got 1"),
    ("(load_tile (view float32 (64 64) (64 1) 16) (8 8))", "(load_tile ...) takes 3 arguments, got 2"),
    ("(gather (view float32 (64 64) (64 1) 16) x (index 4))", "(gather ...): its AXIS x is not an integer"),
])
def test_a_known_movement_with_the_wrong_arguments_is_not_called_unknown(term, said):
    """`(copy X)` was answered "unknown movement term": copy is known, its arity is wrong."""
    with pytest.raises(InputError) as e:
        parse_request({"term": term})
    assert e.value.headline.message.startswith(said) and "unknown" not in e.value.headline.message


@pytest.mark.parametrize("text, said", [(b"", "the input is empty"), (b" \n\t", "the input holds only white space")])
def test_an_empty_input_is_said_to_be_empty(text, said):
    """An empty file or stdin got "Expecting value: line 1 column 1 (char 0)"."""
    from legalsat.schemas.base import load_json

    with pytest.raises(InputError) as e:
        load_json(text)
    assert e.value.headline.code is Code.INVALID_JSON and e.value.headline.message == said


def test_an_extent_1_dims_stride_is_free_however_large():
    """A [1, 64] view whose extent-1 dim has a stride of 2^41 (never multiplied by anything but
    0) was refused as "past 2^40 (1 TiB)"; the same stride on a dim of extent 2 still is."""
    big = 1 << 41
    for op in ({"kind": "copy", "src": {"dtype": "bfloat16", "shape": [1, 64], "strides": [big, 1]},
                "dst": {"dtype": "bfloat16", "shape": [1, 64], "strides": [64, 1]}},
               {"kind": "load_tile", "src": {"dtype": "bfloat16", "shape": [1, 64], "strides": [big, 1]},
                "tile": [8, 64], "consumer": "rows"}):
        out = legalsat.optimize({"op": op})
        assert out["status"] == "ok" and out["plans"], out["rejected"]
    with pytest.raises(InputError) as e:
        parse_request({"op": {"kind": "copy", "src": {"dtype": "bfloat16", "shape": [2, 64], "strides": [big, 1]},
                              "dst": {"dtype": "bfloat16", "shape": [2, 64], "strides": [64, 1]}}})
    assert e.value.headline.field == "op.src.strides[0]"


def test_the_schema_offers_only_consumer_elements_the_planner_takes():
    """The schema listed sm100's packed types (16u4_align8b, ...) for consumer.element, which
    every request refused as unknown."""
    from legalsat.schemas.optimize import OptimizeRequest
    from legalsat.terms.dtypes import ELEMENT_TYPES

    def enums(node):
        if isinstance(node, dict):
            if "enum" in node and "float8_e4m3fn" in node["enum"]:
                yield node["enum"]
            for v in node.values():
                yield from enums(v)
        elif isinstance(node, list):
            for v in node:
                yield from enums(v)

    listed = [e for es in enums(OptimizeRequest.model_json_schema()) for e in es if e is not None]
    assert listed and not [e for e in listed if ELEMENT_TYPES[e].packed]


@pytest.mark.parametrize("request_obj, code", [
    ({"term": "(load_tile (view bfloat16 (64 64) (64 1) 16) (1 1) wgmma_a)"}, "wgmma_unreadable"),
    ({"term": "(copy (view bfloat16 (64 96) (192 2) 16) (view bfloat16 (64 96) (96 1) 16))"}, "strides_in_bytes"),
])
def test_a_term_requests_warnings_name_the_term(request_obj, code):
    """A term request has no op: its warnings, as its errors, name `term` and say the op path
    in the message (they named op.tile, op.src.strides: fields the request does not have)."""
    from legalsat.api import optimize

    out = optimize(request_obj)
    (w,) = [w for w in out["warnings"] if w["code"] == code]
    assert w["field"] == "term" and w["message"].startswith("in the term"), w
    notes = [p["tile_load"]["note"] for p in out["plans"] if p.get("tile_load") and p["tile_load"].get("note")]
    assert all(n.startswith("in the term") for n in notes)
