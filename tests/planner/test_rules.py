"""Rule tests: start => goal for every rewrite family, and what must never be reachable
(no rule may turn a copy into a different element map)."""

from __future__ import annotations

import pytest
from egglog import bindings

from legalsat.planner.saturate import saturate
from legalsat.targets import CostFact, resolve_target
from legalsat.terms.strategy import Strategy

SM90 = resolve_target("sm90")


def reaches(start: str, goal: str, *, facts: str = "", check: str | None = None) -> bool:
    """Saturate `start` (as a movement needing a plan) with the planner's own saturation loop
    and report whether `goal` is in its e-class (or, with `check`, whether that fact holds)."""
    with saturate(f"{facts}\n(let $root {start})\n(Lower $root)", SM90) as sat:
        assert sat.report.stop_reason == "saturated"
        eg = sat.egraph
        try:
            eg.run_program(*eg.parse_program(check or f"(check (= $root {goal}))"))
            return True
        except bindings.EggSmolError:
            return False


def dims(*triples) -> str:
    out = "(DNil)"
    for n, s, d in reversed(triples):
        out = f"(DCons {n} {s} {d} {out})"
    return out


def test_coalesce_contiguous_dims():
    start = f"(Copy 4 16 16 {dims((64, 8, 8), (8, 1, 1))})"
    assert reaches(start, f"(Copy 4 16 16 {dims((512, 1, 1))})")


def test_coalesce_needs_both_sides_contiguous():
    start = f"(Copy 4 16 16 {dims((64, 8, 16), (8, 1, 1))})"  # dst rows padded to 16
    assert not reaches(start, f"(Copy 4 16 16 {dims((512, 1, 1))})")


def test_reorder_loop_dims():
    start = f"(Copy 2 16 16 {dims((3, 64, 1), (64, 1, 3))})"
    assert reaches(start, f"(Copy 2 16 16 {dims((64, 1, 3), (3, 64, 1))})")


def test_drop_unit_dims():
    start = f"(Copy 2 16 16 {dims((1, 999, 7), (64, 1, 1))})"
    assert reaches(start, f"(Copy 2 16 16 {dims((64, 1, 1))})")


def test_widen_to_16_bytes():
    start = f"(Copy 2 16 16 {dims((128, 1, 1))})"
    assert reaches(start, f"(Copy 16 16 16 {dims((16, 1, 1))})")


def test_no_widen_past_base_alignment():
    start = f"(Copy 2 4 16 {dims((128, 1, 1))})"
    assert reaches(start, f"(Copy 4 4 16 {dims((64, 1, 1))})")
    assert not reaches(start, f"(Copy 8 4 16 {dims((32, 1, 1))})")


def test_no_widen_when_an_outer_stride_is_odd():
    start = f"(Copy 2 16 16 {dims((10, 1003, 1003), (1000, 1, 1))})"
    assert not reaches(start, f"(Copy 4 16 16 {dims((10, 1003, 1003), (500, 1, 1))})")


def test_split_long_dim():
    start = f"(Copy 2 16 16 {dims((65536, 1, 1))})"
    assert reaches(start, f"(Copy 2 16 16 {dims((256, 256, 256), (256, 1, 1))})")


def test_ragged_core_and_tail():
    start = f"(Copy 2 16 16 {dims((50257, 1, 1))})"
    core = f"(Copy 2 16 16 {dims((50256, 1, 1))})"
    tail = f"(Shift 100512 100512 (Copy 2 16 16 {dims((1, 1, 1))}))"
    assert reaches(start, f"(Pieces {core} {tail})")
    assert reaches(start, f"(Pieces (Copy 16 16 16 {dims((6282, 1, 1))}) {tail})")


def test_transpose_never_becomes_a_plain_copy():
    start = f"(Copy 2 16 16 {dims((64, 64, 1), (64, 1, 64))})"
    for goal in (dims((4096, 1, 1)), dims((64, 64, 64), (64, 1, 1)), dims((64, 1, 1), (64, 64, 64))):
        assert not reaches(start, f"(Copy 2 16 16 {goal})")
    assert not reaches(start, f"(Copy 4 16 16 {dims((64, 32, 1), (32, 1, 64))})")


@pytest.mark.parametrize("allow", [False, True])
def test_padding_only_when_allowed(allow):
    start = f"(Copy 2 16 16 {dims((4096, 1003, 1003), (1000, 1, 1))})"
    padded = f"(Copy 2 16 16 {dims((4096, 1003, 1008), (1000, 1, 1))})"
    fact = f"(check (PadD $root {padded} 2006 2016))"
    assert reaches(start, "", facts="(AllowPad)" if allow else "", check=fact) is allow
    # padding never merges classes: the padded copy is a different element map
    assert not reaches(start, padded, facts="(AllowPad)" if allow else "")


def test_strategies_follow_structure():
    transpose = f"(Copy 2 16 16 {dims((8192, 8192, 1), (8192, 1, 8192))})"
    staged, tma = Strategy.STAGED_SMEM.code, Strategy.TMA.code
    assert reaches(transpose, "", check=f"(check (Has {staged} $root))")
    straight = f"(Copy 2 16 16 {dims((8192, 8192, 8192), (8192, 1, 1))})"
    assert not reaches(straight, "", check=f"(check (Has {staged} $root))")
    assert reaches(straight, "", check=f"(check (Has {tma} $root))")
    misaligned = f"(Copy 2 8 16 {dims((8192, 8192, 8192), (8192, 1, 1))})"
    assert not reaches(misaligned, "", check=f"(check (Has {tma} $root))")


def _shuffle_ps(start: str) -> int:
    """The shuffle estimate (ps) the strategy rules give `start`."""
    with saturate(f"(let $root {start})\n(Lower $root)", SM90) as sat:
        out = sat.egraph.run_program(*sat.egraph.parse_program("(extract (cost_table_Shuffle $root))"))
    return int(str(out[-1]).split()[-1].strip("()"))


def test_an_odd_interleave_is_estimated_as_a_16_byte_copy():
    """shuffle-interleave-dst / -src: planes <-> 3 interleaved channels (either side dense)
    take the 16-byte copy's efficiency, below the shuffle's own; 4 channels (even), planes off
    16 bytes, or 9 channels (past INTERLEAVE_MAX_CHANNELS) keep the shuffle's estimate."""
    c = SM90.cost
    by_width = dict(c.by_width)
    n, hw = 64, 50176

    def planar_to(ch: int, plane: int = hw) -> str:  # (images, pixels, channels), planes `plane` apart
        return f"(Copy 2 16 16 {dims((hw, 1, ch), (ch, plane, 1), (n, ch * plane, ch * hw))})"

    def ps(eff: int, ch: int) -> int:
        return c.launch_ns * 1000 + (n * hw * ch * 2 * 2_000_000) // (c.copy_bandwidth_gbps * eff)

    assert _shuffle_ps(planar_to(3)) == ps(by_width[16], 3)
    back = f"(Copy 2 16 16 {dims((3, 1, hw), (hw, 3, 1), (n, 3 * hw, 3 * hw))})"
    assert _shuffle_ps(back) == ps(by_width[16], 3)
    shuffle = int(CostFact.SHUFFLE.of(c))
    assert _shuffle_ps(planar_to(4)) == ps(shuffle, 4)
    assert _shuffle_ps(planar_to(3, hw + 1)) == ps(shuffle, 3)  # 2-byte planes 100354 bytes apart
    nine = f"(Copy 1 16 16 {dims((hw, 1, 9), (9, hw, 1))})"  # uint8: 9 bytes a pixel, within a shuffle's 64
    assert _shuffle_ps(nine) == c.launch_ns * 1000 + (hw * 9 * 2_000_000) // (c.copy_bandwidth_gbps * shuffle)
