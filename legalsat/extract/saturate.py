"""Equality saturation of one request: build the egglog program, run it under limits,
extract the best term of every strategy.

Limits are results, not exceptions (egg's StopReason): the run stops when nothing changes
(`saturated`), or before an iteration would pass `node_limit` (that iteration is rolled back
with push/pop), or at the time budget, or after `MAX_ITERATIONS`. The request's deadline is
the caller's: a worker process that overruns is killed from outside.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from math import gcd

from egglog import bindings

from legalsat.analyses.staged_tile import best_staged_ways
from legalsat.analyses.targets import Target
from legalsat.extract.forms import formulation
from legalsat.rules.analysis import ANALYSIS
from legalsat.rules.language import CONSUMERS, DISTRIBUTIONS, LANGUAGE, STRATEGIES
from legalsat.rules.layout import LAYOUT, PADDING
from legalsat.rules.strategies import STRATEGIES as STRATEGY_RULES
from legalsat.terms.movement import Copy, Gather, LoadTile, Movement, contiguous_strides

MAX_ITERATIONS = 40
# e-class ids of non-primitive nodes in egraph-serialize JSON (primitives are literals)
_ECLASS = re.compile(r'"eclass":"((?!i64-|String-|bool-|f64-|Unit-)[^"]*)"')
_ROUND = "(run-schedule (saturate (run analysis)) (run layout) (run padding) (saturate (run analysis)) (run strategy))"
_FINISH = ("(run-schedule (saturate (run analysis)) (saturate (run strategy)) "
           "(saturate (run analysis)) (saturate (run strategy)))")


class StopReason(StrEnum):
    SATURATED = "saturated"
    NODE_LIMIT = "node_limit"
    TIME_LIMIT = "time_limit"
    ITERATION_LIMIT = "iteration_limit"


def lowbit(x: int, cap: int = 1 << 12) -> int:
    """Largest power of two dividing x (x == 0: `cap`), at most `cap`."""
    return min(x & -x, cap) if x else cap


def _dims(triples: list[tuple[int, int, int]]) -> str:
    out = "(DNil)"
    for n, s, d in reversed(triples):
        out = f"(DCons {n} {s} {d} {out})"
    return out


def root_term(m: Movement) -> str:
    """The egglog term of a request (dims in request order, outermost first)."""
    eb = m.src.esize
    if isinstance(m, Copy):
        dims = list(zip(m.src.shape, m.src.strides, m.dst.strides))
        return f"(Copy {eb} {m.src.base_align} {m.dst.base_align} {_dims(dims)})"
    if isinstance(m, Gather):
        out_strides = contiguous_strides(m.out_shape)
        dims = [(n if k != m.axis else m.unit, s, o)
                for k, (n, s, o) in enumerate(zip(m.src.shape, m.src.strides, out_strides))]
        unit = m.unit * m.src.strides[m.axis] * eb
        sa = min(m.src.base_align, lowbit(unit))
        da = min(16, lowbit(m.unit * out_strides[m.axis] * eb))
        code = DISTRIBUTIONS.index(m.index.distribution.value)
        return f"(Gath {m.index.count} {code} (Copy {eb} {sa} {da} {_dims(dims)}))"
    assert isinstance(m, LoadTile)
    tile_strides = contiguous_strides(m.tile)
    dims = list(zip(m.tile, m.src.strides, tile_strides))
    step = 0
    for t, s, n in zip(m.tile, m.src.strides, m.src.shape):
        if t < n:
            step = gcd(step, t * s * eb)
    sa = min(m.src.base_align, lowbit(step))
    return f"(Tile {CONSUMERS.index(m.consumer.value)} (Copy {eb} {sa} 1024 {_dims(dims)}))"


def base_program(target: Target) -> str:
    """Language, rulesets and the target's cost facts: the part shared by every request."""
    c = target.cost
    seeds = [f"(set (EffWidth {w}) {e})" for w, e in c.by_width]
    seeds += [f"(set (Eff {k}) {v})" for k, v in
              ((1, c.tma), (2, c.staged), (3, c.shuffle), (4, c.inspector), (5, c.tma_transpose),
               (6, c.shuffle_gather), (100, c.scatter))]
    seeds += [f"(set (StagedWays {eb}) {1000 + c.way_penalty * (best_staged_ways(eb, target) - 1)})"
              for eb in (1, 2, 4, 8)]
    rules = STRATEGY_RULES.replace("{L}", str(c.launch_ns * 1000)).replace(
        "{BW}", str(c.copy_bandwidth_gbps)).replace("{ROW}", str(c.row_overhead_bytes)).replace(
        "{SORT}", str(c.sort_bytes_per_slot))
    return "\n".join([LANGUAGE, ANALYSIS, LAYOUT, PADDING, rules, *seeds])


def request_program(m: Movement, allow_padding: bool, groups: int | None) -> str:
    """The request's own facts and root term."""
    lines = ["(AllowPad)"] if allow_padding else []
    if groups:
        lines.append(f"(Groups {groups})")
    lines += [f"(let $root {root_term(m)})", "(Lower $root)"]
    return "\n".join(lines)


# One template e-graph per target and process: rules are parsed and compiled once; each
# request runs between a push and a pop. An EGraph never leaves its process.
_TEMPLATES: dict[Target, tuple[bindings.EGraph, dict]] = {}


def _template(target: Target) -> tuple[bindings.EGraph, dict]:
    # keyed by the whole (frozen) target: the same name with other cost facts is another program
    if target not in _TEMPLATES:
        eg = bindings.EGraph()
        eg.run_program(*eg.parse_program(base_program(target)))
        cmds = {k: eg.parse_program(v) for k, v in (
            ("round", _ROUND), ("finish", _FINISH), ("size", "(print-size)"),
            ("push", "(push)"), ("pop", "(pop)"))}
        _TEMPLATES[target] = (eg, cmds)
    return _TEMPLATES[target]


@dataclass(frozen=True)
class Candidate:
    """The best term of one strategy: its s-expression and estimated time (ps, the
    strategy's cost alone)."""

    strategy: str
    term: str
    cost: int


@dataclass
class Saturation:
    """A saturated e-graph (lives in this process only) and what the run did."""

    egraph: bindings.EGraph
    iterations: int
    stop_reason: StopReason
    enodes: int
    eclasses: int

    def candidates(self) -> list[Candidate]:
        """Best term per strategy that has one, cheapest first."""
        out = []
        for code, name in enumerate(STRATEGIES):
            try:
                self.egraph.run_program(*self.egraph.parse_program(f"(check (Has {code} $root))"))
            except bindings.EggSmolError:
                continue  # no plan of this strategy exists for the request
            best = self.egraph.run_program(*self.egraph.parse_program(f"(extract (Cand {code} $root))"))[-1]
            term = best.termdag.to_string(best.term)
            # the extracted cost also holds the tie-break that prefers fewer, wider accesses
            # (each Copy node costs its element count in ps, rule `strategy`): not time
            tiebreak = sum(p.elems for p in formulation(term).pieces)
            out.append(Candidate(name, term, max(int(best.cost) - tiebreak, 0)))
        return sorted(out, key=lambda c: c.cost)

    snapshot: str  # egraph-serialize JSON of the saturated e-graph (for the viewer)


def _size(eg: bindings.EGraph, cmd) -> int:
    out = eg.run_program(*cmd)[-1]
    return sum(n for _, n in out.sizes)


@contextmanager
def saturation(m: Movement, target: Target, *, allow_padding: bool = False, node_limit: int = 20000,
               time_budget_s: float = 1.0, groups: int | None = None) -> Iterator[Saturation]:
    """Run the rulesets on the request until saturated or a limit (see the module docstring);
    the e-graph is valid inside the `with` block only."""
    eg, cmd = _template(target)
    eg.run_program(*cmd["push"])
    depth = 1  # snapshots this request holds on the template's stack
    try:
        eg.run_program(*eg.parse_program(request_program(m, allow_padding, groups)))
        base = size = _size(eg, cmd["size"])
        start = time.perf_counter()
        stop, it = StopReason.ITERATION_LIMIT, 0
        for it in range(1, MAX_ITERATIONS + 1):
            if time.perf_counter() - start > time_budget_s:
                stop, it = StopReason.TIME_LIMIT, it - 1
                break
            # snapshot only when an iteration could plausibly cross the limit (rounds at most
            # quadruple these e-graphs); a snapshot costs a copy of the e-graph
            guarded = 4 * (size - base) >= node_limit
            if guarded:
                eg.run_program(*cmd["push"])
                depth += 1
            updated = eg.run_program(*cmd["round"])[-1].report.updated
            size = _size(eg, cmd["size"])
            if size - base > node_limit:
                if guarded:
                    eg.run_program(*cmd["pop"])  # roll the iteration back
                    depth -= 1
                stop, it = StopReason.NODE_LIMIT, it - 1
                break
            if not updated:
                stop = StopReason.SATURATED
                break
        eg.run_program(*cmd["finish"])
        # one serialization gives the e-class count and the viewer's snapshot; the e-class ids
        # are read with a regex (same counts as parsing the JSON, ~10x faster on large graphs)
        snapshot = eg.serialize([]).to_json()
        classes = _ECLASS.findall(snapshot)
        yield Saturation(eg, it, stop, len(classes), len(set(classes)), snapshot)
    finally:
        for _ in range(depth):  # back to the bare template for the next request
            eg.run_program(*cmd["pop"])
