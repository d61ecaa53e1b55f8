"""The egglog program of a target: language, rulesets and cost facts, assembled in one place.

Rule texts name codes by placeholder (`{tma}`, `{warp_local}`, `{eff_staged}`, ...); the
values come from the enums that the rest of legalsat uses (Strategy, Distribution,
CostFact), so Python and egglog agree by construction (tests/planner/test_program.py pins
the mapping). A request adds only its own facts and root term (`request_program`).
"""

from __future__ import annotations

from legalsat.analyses.tile_layouts import best_staged_ways
from legalsat.planner.rules.analysis import ANALYSIS
from legalsat.planner.rules.language import LANGUAGE
from legalsat.planner.rules.layout import LAYOUT, PADDING
from legalsat.planner.rules.strategies import (
    GROUP_SORT_EFFICIENCY,
    GROUP_SORT_LAUNCHES,
    INSPECTOR_LAUNCHES,
    STRATEGIES,
)
from legalsat.targets import CostFact, Target
from legalsat.terms.integers import lowbit
from legalsat.terms.movement import (
    INTERLEAVE_MAX_CHANNELS,
    SHUFFLE_SMALL_BYTES,
    Copy,
    Distribution,
    Gather,
    LoadTile,
    Movement,
    coalesced,
    contiguous_strides,
)
from legalsat.terms.strategy import Strategy

# The rulesets in the order one saturation round runs them (analysis saturates first so the
# rewrites see complete facts; strategy last, over the round's new forms).
# the element bytes of a Copy term (a request's element, or a word it is moved as)
COPY_ELEMENT_BYTES = (1, 2, 4, 8, 16)
ROUND = ("analysis", "layout", "padding", "analysis", "strategy")


def placeholders(target: Target) -> dict[str, int]:
    """Every placeholder of the rule texts and its value for `target`."""
    c = target.cost
    values = {s.value: s.code for s in Strategy}
    values.update({d.value: d.code for d in Distribution})
    values.update({f"eff_{f.name.lower()}": int(f) for f in CostFact})
    values.update(launch_ps=c.launch_ns * 1000, bandwidth=c.copy_bandwidth_gbps,
                  row_overhead=c.row_overhead_bytes, sort_bytes=c.sort_bytes_per_slot,
                  inspector_launches=INSPECTOR_LAUNCHES, sort_launches=GROUP_SORT_LAUNCHES,
                  sort_eff=GROUP_SORT_EFFICIENCY, shuffle_small=SHUFFLE_SMALL_BYTES,
                  interleave_channels=INTERLEAVE_MAX_CHANNELS)
    return values


def base_program(target: Target) -> str:
    """Language, rulesets and the target's cost facts: the part shared by every request."""
    c = target.cost
    seeds = [f"(set (EffWidth {w}) {e})" for w, e in c.by_width]
    seeds += [f"(set (Eff {int(f)}) {f.of(c)})" for f in CostFact]
    seeds += [f"(set (EffScatter {eb}) {c.scatter_share(eb)})" for eb in COPY_ELEMENT_BYTES]
    seeds += [f"(set (StagedWays {eb}) {1000 + c.way_penalty * (best_staged_ways(eb, target) - 1)})"
              for eb in (1, 2, 4, 8)]
    seeds += [f"(ClusteredDist {d.code})" for d in Distribution if d.clusters]
    if target.tma is not None:
        seeds.append("(TmaUnit)")
    rules = STRATEGIES.format(**placeholders(target))
    return "\n".join([LANGUAGE, ANALYSIS, LAYOUT, PADDING, rules, *seeds])


def dims_term(triples) -> str:
    """A Dims term from (extent, src stride, dst stride) triples, outermost first."""
    out = "(DNil)"
    for n, s, d in reversed(list(triples)):
        out = f"(DCons {n} {s} {d} {out})"
    return out


def root_term(m: Movement) -> str:
    """The egglog term of a request (dims in request order, outermost first). A copy starts
    coalesced (unit dims dropped, dims that continue each other on both sides merged: the
    same element map, see `coalesced`): the layout rules would reach that form anyway, but
    from a rank-n start only after exploring up to n! orders of dims that were never apart."""
    eb = m.src.esize
    if isinstance(m, Copy):
        dims = zip(*coalesced(m.src.shape, m.src.strides, m.dst.strides))
        return f"(Copy {eb} {m.src.base_align} {m.dst.base_align} {dims_term(dims)})"
    if isinstance(m, Gather):
        out_strides = contiguous_strides(m.out_shape)
        dims = [(n if k != m.axis else m.unit, s, o)
                for k, (n, s, o) in enumerate(zip(m.src.shape, m.src.strides, out_strides))]
        unit = m.unit * m.src.strides[m.axis] * eb
        sa = min(m.src.base_align, lowbit(unit))
        da = min(16, lowbit(m.unit * out_strides[m.axis] * eb))
        return f"(Gath {m.index.count} {m.index.distribution.code} (Copy {eb} {sa} {da} {dims_term(dims)}))"
    assert isinstance(m, LoadTile)
    return f"(Load {m.consumer.kind.code} {eb} {m.src.base_align} {tile_dims_term(m, tile_walk_order(m))})"


def tile_walk_order(m: LoadTile) -> list[int]:
    """The request's dims in the order a tile walk's term lists them: the request's own order
    (so the stage keeps the tile's row-major order, the order a compiler reshapes it in), with
    the contiguous dim (the smallest nonzero stride of a dim the tensor spans; the last of
    equals) moved last, where TMA's innermost box dim must be; broadcast dims (stride 0) go
    last of all, where Unbcast takes them out."""
    shape, strides = m.src.shape, m.src.strides
    bcast = [k for k in range(m.src.rank) if strides[k] == 0 and shape[k] > 1]
    live = [k for k in range(m.src.rank) if k not in bcast]
    spanned = [k for k in live if shape[k] > 1]
    inner = min(reversed(spanned), key=lambda k: strides[k]) if spanned else None
    return [k for k in live if k != inner] + ([inner] if inner is not None else []) + bcast


def tile_dims_term(m: LoadTile, order: list[int]) -> str:
    out = "(TNil)"
    for k in reversed(order):
        out = f"(TCons {m.src.shape[k]} {m.tile[k]} {m.src.strides[k]} {out})"
    return out


def request_program(m: Movement, allow_padding: bool) -> str:
    """The request's own facts and root term (bound to `$root`)."""
    lines = ["(AllowPad)"] if allow_padding else []
    if isinstance(m, Gather) and m.index.groups:
        lines.append(f"(Groups {m.index.groups})")
    if isinstance(m, LoadTile):
        lines.append(f"(LoadEb {m.src.esize})")
    lines += [f"(let $root {root_term(m)})", "(Lower $root)"]
    return "\n".join(lines)
