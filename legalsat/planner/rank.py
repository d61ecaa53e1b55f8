"""The order of a response's plans (`rank_plans`): by estimate, and launch-bound plans by what
they add to their launch.

Invariant: the key is read from the plan and the target's cost facts only, so the same plans
under the same facts always come in the same order.
"""

from __future__ import annotations

import math

from legalsat.planner.plan import Piece, Plan
from legalsat.targets.base import CostFacts
from legalsat.terms.strategy import Strategy

# a plan estimated within this factor of one launch is launch-bound: its bytes take a
# fraction of the fixed cost, and the estimates' differences are below what the model resolves
LAUNCH_BOUND = 1.1

# kernels that start with a fixed latency before their first store: a TMA pipeline (descriptor
# fetch, barrier set-up, one load's round trip) and a warp shuffle (its exchange rounds)
FIXED_LATENCY = frozenset({Strategy.TMA, Strategy.SHUFFLE})


def launch_bound(p: Plan, facts: CostFacts) -> bool:
    """Whether the plan's estimate is within `LAUNCH_BOUND` of one launch."""
    return p.cost.estimated_us <= LAUNCH_BOUND * facts.launch_ns / 1000


def longest_program_bytes(p: Plan) -> int:
    """What the plan's largest program reads (and as much it writes): a copy's piece tile
    within its extents; a row gather's rows (at most its entries) of one piece's slab, each
    piece being a kernel of its own; a 2-D gather tile's entries x slab step (index-major, or
    one entry's slab in parts)."""
    g = p.gather
    if g is None:  # a copy piece's tile within its extents (a direct copy's flat block within its elements)
        return max((_tile_elems(piece) * piece.element_bytes for piece in p.pieces), default=0)
    most = 0
    for piece in p.pieces:
        slab = math.prod(d.extent for d in piece.dims)
        if len(piece.tile) == 2:  # (entries, slab elements)
            elems = min(piece.tile[0], g.index_count) * min(piece.tile[1], slab)
        else:
            elems = min(g.rows_per_program, g.index_count) * slab
        most = max(most, elems * piece.element_bytes)
    return most


def _tile_elems(piece: Piece) -> int:
    extents = [d.extent for d in piece.dims]
    if len(piece.tile) == len(extents):
        return math.prod(min(t, n) for t, n in zip(piece.tile, extents))
    return min(piece.tile[0] if piece.tile else 1, math.prod(extents))


def longest_program_us(p: Plan, facts: CostFacts) -> float:
    """What the plan's largest program adds to a launch when it runs alone: its bytes, read
    and written, at one program's bandwidth (`CostFacts.program_gbps`)."""
    return 2 * longest_program_bytes(p) / (facts.program_gbps * 1e3)


def launch_key_us(p: Plan, facts: CostFacts) -> float:
    """What a launch-bound plan is ranked by: its estimate plus its largest program alone."""
    return p.cost.estimated_us + longest_program_us(p, facts)


def ranked_launch_bound(plans: list[Plan], facts: CostFacts) -> list[bool]:
    """Which of `plans` are ranked as launch-bound: those within `LAUNCH_BOUND` of a launch,
    and any other estimated below what one of those is ranked by (`launch_key_us`). Ranked by
    its estimate after them, such a plan came after plans it beats: a 624 x 62 bf16 direct copy
    estimated at 3.30 us (just past the bound) came after a staged tile ranked by 4.85 us (one
    program holding 62 KiB); on the H100 1.74 against 2.04 us of device time
    (tools/launch_bound_sweep.py, held-out cases)."""
    keys = [launch_key_us(p, facts) for p in plans if launch_bound(p, facts)]
    ceiling = max(keys, default=0.0)
    return [launch_bound(p, facts) or p.cost.estimated_us < ceiling for p in plans]


def rank_plans(plans: list[Plan], facts: CostFacts) -> tuple[list[Plan], list[bool]]:
    """`plans` best first (`plan_rank`, with `ranked_launch_bound` deciding which are ranked as
    launch-bound), and for each whether it was."""
    bound = ranked_launch_bound(plans, facts)
    order = sorted(range(len(plans)), key=lambda i: plan_rank(plans[i], facts, bound[i]))
    return [plans[i] for i in order], [bound[i] for i in order]


def plan_rank(p: Plan, facts: CostFacts, bound: bool) -> tuple:
    """Plans best first: by estimate; launch-bound plans (`LAUNCH_BOUND`) first, the pointer
    kernels before those of `FIXED_LATENCY`, each by its estimate plus its longest program
    (`longest_program_us`): at these sizes the launch hides the bandwidth, and what is left
    is one program's serial work. Timed on the H100 (tools/launch_bound_sweep.py: device time
    from CUDA graphs, 1.2-2.5 us per kernel), this order's first plan was within 3 % of the
    fastest on 14 of the 16 small benchmark cases that have more than one launch-bound plan and
    on all 14 such cases among 24 random small transposes and permutes held out from the rule
    (the direct copy first before it: 10 of 16 and 6 of 14, up to 56 % behind)."""
    if not bound:  # `bound`: ranked as launch-bound (rank_plans: ranked_launch_bound)
        return (True, False, p.cost.estimated_us)
    return (False, p.strategy in FIXED_LATENCY, launch_key_us(p, facts))
