"""z3 chooses the exact fields of a candidate: tiles and boxes, vector width, stages, grid.

Every field problem is a small integer program over log2 sizes (tiles and boxes are powers of
two, as Triton's host descriptors require). Each constraint is tracked by a name; when a
problem is unsat, its unsat core is turned into an explanation that names the rule, the
numbers and what would make the candidate feasible.

Only constraints a user can act on (a request field, an option, the tensor's layout) carry a
catalogue code and appear in reasons as themselves; the planner's own choices (tile caps,
runs, extents) are summarised in one `no_fields` reason when they alone make a problem unsat.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field

from legalsat.diagnostics import Code, Diagnostic
from legalsat.planner.budget import budget_fix, solver_ms
from legalsat.planner.formulation import Region
from legalsat.terms.integers import cdiv, floor_log2, pow2_at_least, pow2_at_most
from legalsat.terms.movement import misaligned_pitch, sector_misaligned_pitch, sector_skewable
from legalsat.terms.smem import tma_pipeline_bytes

MAX_LOG = 20


def _lazy(name: str):
    """`name` imported on first use (importlib's LazyLoader): most field problems are solved
    in closed form, so a process that plans only those never pays z3's import."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


z3 = _lazy("z3")


class Infeasible(Exception):
    """A candidate cannot become a plan; `reasons` say why (catalogue diagnostics)."""

    def __init__(self, reasons: list[Diagnostic] | tuple[Diagnostic, ...]):
        self.reasons = tuple(reasons)
        super().__init__("; ".join(r.message for r in self.reasons))

    def __reduce__(self):  # survives pickling (planning runs in worker processes)
        return (type(self), (self.reasons,))


@dataclass
class FieldProblem:
    """A z3 Optimize problem whose constraints carry explanations (see the module docstring)."""

    what: str = "field values"
    explanations: dict[str, tuple[Code | None, str, str | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.opt = z3.Optimize()
        self.timeout_ms = solver_ms()  # the request's budget, as much as is left
        self.opt.set("timeout", self.timeout_ms)

    def log2_var(self, name: str, hi: int) -> z3.ArithRef:
        v = z3.Int(name)
        self.opt.add(v >= 0, v <= min(hi, MAX_LOG))
        return v

    def require(self, name: str, cond, message: str, fix: str | None = None, code: Code | None = None) -> None:
        """Track `cond` as `name`. With a `code`, the constraint is the user's to change and is
        reported as that code with `message` and `fix`; without, it is the planner's own."""
        self.explanations[name] = (code, message, fix)
        self.opt.assert_and_track(cond, name)

    def solve(self, maximize: list) -> z3.ModelRef:
        for obj in maximize:
            self.opt.maximize(obj)
        result = self.opt.check()
        if result == z3.unknown:
            raise Infeasible([Code.SOLVER_TIMEOUT.at(f"z3 found no {self.what} within its {self.timeout_ms} ms "
                                                     f"({self.opt.reason_unknown()})",
                                                     budget_fix(Code.SOLVER_TIMEOUT.default_fix))])
        if result != z3.sat:
            core = [self.explanations[str(c)] for c in self.opt.unsat_core()]
            actionable = [code.at(message, fix) for code, message, fix in core if code is not None]
            if not actionable:
                why = "; ".join(message for _, message, _ in core)
                actionable = [Code.NO_FIELDS.at(f"no {self.what} satisfies the planner's constraints: {why}")]
            raise Infeasible(actionable)
        return self.opt.model()


def pow2(v) -> z3.ArithRef:
    """2**v for an integer variable 0 <= v <= MAX_LOG, as a z3 term."""
    out = z3.IntVal(1 << MAX_LOG)
    for k in range(MAX_LOG - 1, -1, -1):
        out = z3.If(v == k, z3.IntVal(1 << k), out)
    return out


def warps_for(tile_bytes: int) -> int:
    """4 warps up to 8 KiB of tile, 8 beyond (enough bytes in flight per SM)."""
    return 4 if tile_bytes <= 8192 else 8


def transpose_warps(tile_bytes: int) -> int:
    """Warps of a plain staged tile: `warps_for`, 32 for a 32 KiB tile (32 bytes a thread: on
    the H100 the planned 32 KiB tiles of eight plain transposes ran 0.4-1.6 % faster from CUDA
    graphs with 32 warps than with 8, 0.0-1.3 % eagerly, where the skewed 50257-row tile ran 22 %
    slower, so skewed tiles keep 4; `python -m tools.peer_tile_probe warps`,
    benchmarks/peer_tile_warps.json), and 16 for a 64 KiB tile (a 256 x 256 uint8 transpose:
    2647 GB/s with 16 warps, 2620 with 8; tools/staged_sweep.py)."""
    if tile_bytes >= 65536:
        return 16
    return 32 if tile_bytes >= 32768 else warps_for(tile_bytes)


@dataclass(frozen=True)
class LinearFields:
    """A flat traversal: `block` elements of `vector_bytes` per program."""

    block: int
    grid: int
    num_warps: int
    vector_bytes: int


# Direct copies whose elements are narrower than a 16-byte word make at least one side's
# accesses scalar; measured on the H100 (tools/edge_sweep.py, a 16384 x 50257 bf16 copy into a
# padded pitch): 16 bytes per thread wins, 2048 x 8 warps at 1.097 ms (a same-size copy_ 1.093),
# 8192 x 8 warps at 1.221 ms
NARROW_BLOCK_BYTES = 4096
# 16-byte words too: one vector a thread, 8 KiB blocks of 16 warps. A flat copy of 2 x 268 MB
# on the H100 (tools/copy_limit_probe.py, benchmarks/copy_limit_probe.json): 0.999 / 1.002 of
# copy_ eagerly / from CUDA graphs, where 16 KiB blocks of 8 warps (64 bytes a thread) ran at
# 0.983 / 0.984 and 4 KiB of 8 warps at 0.997 / 0.999; BSHD->BHSD's row permutation had its
# fastest block there too (benchmarks/order_probe.json)
WIDE_BLOCK_BYTES = 8192
VECTOR_BYTES_PER_THREAD = 16
# the smallest block a small piece is split into so that every SM gets programs (a 517 x 33
# bf16 transpose copied directly: 512-element blocks 3.9-4.8 us, 8192-element 5.8-6.9 us)
MIN_BLOCK_BYTES = 1024


def solve_linear(p: Region, max_block_bytes: int = 16384, min_programs: int = 1) -> LinearFields:
    """Block size of a direct copy piece: the largest power of two of at most
    `max_block_bytes` (`NARROW_BLOCK_BYTES` for elements narrower than 16 bytes,
    `WIDE_BLOCK_BYTES` for 16-byte words) that the piece can fill, and small enough for
    `min_programs` programs where a block of `MIN_BLOCK_BYTES` allows. A thread moves 16 bytes
    (warps = block bytes / 512: at most 8 for narrow elements, 16 for words)."""
    narrow = p.eb < 16
    limit = min(max_block_bytes, NARROW_BLOCK_BYTES if narrow else WIDE_BLOCK_BYTES)
    limit = min(limit, max(MIN_BLOCK_BYTES, p.bytes // max(min_programs, 1)))
    cap = min(MAX_LOG, floor_log2(limit) - floor_log2(p.eb),
              (floor_log2(p.elems - 1) + 1 if p.elems > 1 else 0))
    if cap < 0:  # unsat: z3's core names the bound
        fp = FieldProblem("block size")
        e = fp.log2_var("block_log2", MAX_LOG)
        lb = floor_log2(p.eb)
        fp.require("block_bytes", e + lb <= floor_log2(limit), f"a block of more than {limit} bytes per program")
        fp.require("block_fits", e <= max(floor_log2(p.elems - 1) + 1, 0) if p.elems > 1 else e == 0,
                   f"a block larger than the {p.elems} elements of the piece")
        cap = fp.solve([e])[e].as_long()
    block = 1 << cap  # the largest block both bounds allow
    return LinearFields(block, cdiv(p.elems, block), linear_warps(block * p.eb, p.eb), p.eb)


def linear_warps(block_bytes: int, element_bytes: int) -> int:
    """A direct copy's warps: one `VECTOR_BYTES_PER_THREAD` vector a thread, at most 8 warps
    for elements narrower than 16 bytes and 16 for 16-byte words."""
    return max(1, min(8 if element_bytes < 16 else 16, block_bytes // (32 * VECTOR_BYTES_PER_THREAD)))


@dataclass(frozen=True)
class TmaFields:
    """Box per piece dim (outermost first, aligned with `order`), stages."""

    order: tuple[int, ...]  # piece dim indices, innermost (descriptor dim 0) first
    box: tuple[int, ...]    # box extent per descriptor dim, innermost first
    stages: int
    tile_bytes: int


def solve_tma_box(p: Region, order: tuple[int, ...], smem_bytes: int, dtype_bytes: int,
                  store_buffers: int = 1, max_tile_bytes: int = 32768,
                  inner_cap_bytes: int | None = None, dst_inner: int | None = None) -> TmaFields:
    """Box dims for descriptors over `order` (innermost first): each <= 256 and <= its extent,
    inner box a multiple of 16 bytes, 2..4 stages of the box (+ store staging) within
    `smem_bytes`. `dst_inner`: position in `order` of the dim the store descriptor takes
    innermost (a transpose), which needs 16 bytes too. `inner_cap_bytes` caps the inner box
    of every descriptor (the load's and, with `dst_inner`, the store's): a swizzled box spans
    at most its swizzle. Maximizes the inner box, then the store's inner box, then the box
    bytes, then each outer box dim in order (a unique optimum: the same piece always gets
    the same box)."""
    closed = _tma_box_closed(p, order, smem_bytes, dtype_bytes, store_buffers, max_tile_bytes, inner_cap_bytes,
                             dst_inner)
    if closed is not None:
        return closed
    if _tma_box_closed(p, order, 1 << 40, dtype_bytes, store_buffers, max_tile_bytes, inner_cap_bytes,
                       dst_inner) is not None:  # the budget alone rules every box out: say what it takes
        both = dst_inner is not None and dst_inner != 0
        least = 16 << (4 - floor_log2(dtype_bytes)) if both else 16
        need = tma_pipeline_bytes(2, least, store_buffers)
        held = f"2 stages and {store_buffers} store buffer{'s' if store_buffers > 1 else ''}"
        raise Infeasible([Code.SMEM_BUDGET.at(
            f"the smallest legal box takes {least} bytes (16 bytes along the source's contiguous dim"
            + (" and 16 along the destination's" if both else "") + "); "
            f"{held} of it and the stages' barriers need {need} bytes of shared memory; the budget is {smem_bytes}",
            f"raise options.smem_bytes to at least {need}, or use the plan's direct or staged_smem candidate",
            field="options.smem_bytes")])
    fp = FieldProblem("TMA box")  # unsat: z3's core names the constraints
    dims = [p.dims[k] for k in order]
    es = [fp.log2_var(f"box{k}_log2", 8) for k in range(len(dims))]
    lb = floor_log2(dtype_bytes)
    scale = p.eb // dtype_bytes  # 16-byte elements travel as pairs of 8-byte ones
    for k, (n, _, _) in enumerate(dims):
        ext = n * (scale if k == 0 else 1)
        fp.require(f"box{k}_within_extent", es[k] <= floor_log2(ext),
                   f"box dim {k} cannot exceed the extent {ext}")
    inner_bytes = dims[0][0] * p.eb
    fp.require("inner_box_16B", es[0] + lb >= 4,
               f"the contiguous extent is {inner_bytes} bytes; a TMA inner box must be a multiple "
               "of 16 bytes", code=Code.INNER_BOX_16B)
    if dst_inner is not None:
        fp.require("dst_inner_box_16B", es[dst_inner] + lb >= 4,
                   f"the destination's contiguous extent is {dims[dst_inner][0] * p.eb} bytes; a TMA "
                   "inner box must be a multiple of 16 bytes", code=Code.DST_INNER_BOX_16B)
    if inner_cap_bytes:
        fp.require("inner_box_swizzle_span", es[0] + lb <= floor_log2(inner_cap_bytes),
                   f"the inner box may span at most {inner_cap_bytes} bytes under its swizzle")
        if dst_inner is not None:
            fp.require("dst_inner_box_swizzle_span", es[dst_inner] + floor_log2(p.eb) <= floor_log2(inner_cap_bytes),
                       f"the store's inner box may span at most {inner_cap_bytes} bytes under its swizzle")
    total = z3.Sum(es) + lb
    fp.require("tile_bytes", total <= floor_log2(max_tile_bytes),
               f"a box of more than {max_tile_bytes} bytes")
    stages = z3.Int("stages")
    fp.opt.add(stages >= 1, stages <= 4)
    # linear per box size: (stages + store buffers) boxes and the barriers fit the budget
    hi = floor_log2(max_tile_bytes)
    fits = z3.Or([z3.And(total == k, tma_pipeline_bytes(stages, 1 << k, store_buffers) <= smem_bytes)
                  for k in range(4, hi + 1)])
    fp.require("smem_budget", fits,
               f"two stages of the smallest legal box do not fit {smem_bytes} bytes of shared memory",
               code=Code.SMEM_BUDGET)
    fp.require("two_stages", stages >= 2, "a TMA pipeline needs at least two stages to overlap",
               code=Code.TWO_STAGES)
    # the remaining box dims break ties in order (z3 returns any optimum otherwise, and which
    # one depended on the solver calls made before in the process)
    m = fp.solve([es[0]] + ([es[dst_inner]] if dst_inner is not None else []) + [total] + es[1:] + [stages])
    box = tuple(1 << m[e].as_long() for e in es)
    return TmaFields(order, box, m[stages].as_long(), 1 << m.eval(total).as_long())


def _tma_box_closed(p: Region, order: tuple[int, ...], smem_bytes: int, dtype_bytes: int, store_buffers: int,
                    max_tile_bytes: int, inner_cap_bytes: int | None, dst_inner: int | None) -> TmaFields | None:
    """`solve_tma_box`'s optimum in closed form; None when its constraints are unsat.

    Every constraint bounds one exponent from below or above, or bounds the box's total
    exponent from above (the tile cap, and two stages of the box within the shared memory);
    so the lexicographic optimum is greedy: each objective in turn takes the largest value
    that leaves the later exponents their lower bounds, the total then takes the most the
    bounds allow, the remaining exponents fill it in order, and the stages are the most that
    fit. A property test compares it with the z3 form on random pieces."""
    dims = [p.dims[k] for k in order]
    lb = floor_log2(dtype_bytes)
    scale = p.eb // dtype_bytes
    n = len(dims)
    lo = [0] * n
    hi = [min(8, floor_log2(d[0] * (scale if k == 0 else 1))) for k, d in enumerate(dims)]
    lo[0] = max(lo[0], 4 - lb)
    if dst_inner is not None:
        lo[dst_inner] = max(lo[dst_inner], 4 - lb)
    if inner_cap_bytes:
        hi[0] = min(hi[0], floor_log2(inner_cap_bytes) - lb)
        if dst_inner is not None:
            hi[dst_inner] = min(hi[dst_inner], floor_log2(inner_cap_bytes) - floor_log2(p.eb))
    if any(a > b for a, b in zip(lo, hi)):
        return None
    top = floor_log2(max_tile_bytes)
    fitting = [k for k in range(4, top + 1)
               if tma_pipeline_bytes(2, 1 << k, store_buffers) <= smem_bytes]
    if not fitting:
        return None
    cap = fitting[-1] - lb  # the most the exponents may sum to
    if sum(lo) > cap or sum(lo) + lb < 4:
        return None
    es = list(lo)
    fixed: set[int] = set()
    for k in [0] + ([dst_inner] if dst_inner is not None else []):
        if k not in fixed:
            es[k] = min(hi[k], cap - sum(es) + es[k])
            fixed.add(k)
    free = [k for k in range(n) if k not in fixed]
    total = min(cap, sum(es[k] for k in fixed) + sum(hi[k] for k in free))
    room = total - sum(es[k] for k in fixed)
    for i, k in enumerate(free):
        later = sum(lo[j] for j in free[i + 1:])
        es[k] = min(hi[k], room - later)
        room -= es[k]
    t = sum(es) + lb
    stages = max(s for s in range(2, 5)
                 if s == 2 or tma_pipeline_bytes(s, 1 << t, store_buffers) <= smem_bytes)
    return TmaFields(order, tuple(1 << e for e in es), stages, 1 << t)


@dataclass(frozen=True)
class TileFields:
    """A 2-D tile over the piece's src-contiguous dim (`a`) and dst-contiguous dim (`b`)."""

    a: int
    b: int
    tile_a: int
    tile_b: int
    num_warps: int


# A misaligned destination that stays in L2 (`skew=False`): plain tiles (scalar stores, as
# Inductor's tiled transposes) of at most 16 KiB, destination runs of up to 512 bytes, split so
# that every SM gets programs (down to 2 KiB). Measured on the H100 (tools/edge_sweep.py
# --plain, 1023 x 4097 bf16): 256 x 32 with 4 warps 11.2 us, torch.compile's 32 x 32 11.7 us,
# the sector-skewed 64 x 128 15.5 us (skewing pays where the destination outgrows L2: 50257 x
# 4096, benchmarks/RESULTS.md)
PLAIN_DST_RUN, PLAIN_MIN_TILE, PLAIN_MAX_TILE = 512, 2048, 16384
PLAIN_MIN_SRC_RUN = 32  # a sector: the measured plain tiles load 64 bytes and more


def solve_transpose_tile(p: Region, a: int, b: int, max_tile_bytes: int, min_run_bytes: int = 256,
                         small: bool = False, smem_budget: int | None = None, skew: bool = True,
                         min_programs: int = 1) -> TileFields:
    """Tile extents along dims a (src-contiguous) and b (dst-contiguous): powers of two
    within the extents, at most `max_tile_bytes` (and `smem_budget`), each side at least
    `min_run_bytes` of contiguous data when the extent and the budget allow (a budget too small
    for a square tile of such runs shortens both runs alike). `small`: the shuffle shape (the small side
    whole, padded to a power of two).

    Measured on the H100 (tools/staged_sweep.py): runs of 256 bytes on both sides and the
    largest tile win; when destination rows are not 16-byte aligned the emitter skews the
    tile to 32-byte sectors (as it does for rows on 16 bytes but off a sector, when `skew`:
    `sector_misaligned_pitch`), and 128-byte destination runs with 256-byte source runs win;
    with `skew` False such a tile is plain (see `PLAIN_DST_RUN`), at most the piece's bytes /
    `min_programs` (and at least `PLAIN_MIN_TILE`)."""
    closed = _transpose_tile_closed(p, a, b, max_tile_bytes, min_run_bytes, small, smem_budget, skew,
                                    min_programs)
    if closed is not None:
        return closed
    fp = FieldProblem("transpose tile")  # unsat: z3's core names the constraints
    na, nb = p.dims[a][0], p.dims[b][0]
    ea, eb_ = fp.log2_var("tile_a_log2", 10), fp.log2_var("tile_b_log2", 10)
    lb = floor_log2(p.eb)
    cap_a = floor_log2(na - 1) + 1 if na > 1 else 0
    cap_b = floor_log2(nb - 1) + 1 if nb > 1 else 0
    fp.require("tile_a_extent", ea <= cap_a, f"tile beyond the extent {na}")
    fp.require("tile_b_extent", eb_ <= cap_b, f"tile beyond the extent {nb}")
    if smem_budget is not None and smem_budget < max_tile_bytes:  # the request's budget is the cap
        fp.require("tile_bytes", ea + eb_ + lb <= floor_log2(smem_budget),
                   f"no staged tile fits {smem_budget} bytes of shared memory",
                   "raise options.smem_bytes, or use the plan's direct candidate", code=Code.SMEM_BUDGET)
    else:
        fp.require("tile_bytes", ea + eb_ + lb <= floor_log2(max_tile_bytes),
                   f"a tile of more than {max_tile_bytes} bytes")
    cap = floor_log2(smem_budget) if smem_budget is not None and smem_budget < max_tile_bytes \
        else floor_log2(max_tile_bytes)
    run = _fitting_run(floor_log2(min_run_bytes) - lb, cap, lb)
    unaligned_dst = misaligned_pitch(p.dims[a][2], p.eb)
    skewed_dst = _skews(p, a, b, skew)
    if small:
        small_dim = ea if na <= nb else eb_
        fp.require("small_side_whole", small_dim == min(cap_a, cap_b),
                   "the small side must be held whole by a warp")
        objective = [ea + eb_]
    elif unaligned_dst and not skew:
        fp.require("programs", ea + eb_ + lb <= _plain_budget(p, min_programs),
                   f"a plain tile larger than {PLAIN_MAX_TILE} bytes or 1/{min_programs} of the piece")
        fp.require("run_b", eb_ <= min(max(floor_log2(PLAIN_DST_RUN) - lb, 0), cap_b),
                   f"destination runs beyond {PLAIN_DST_RUN} bytes")
        fp.require("run_a", ea >= _plain_src_run(lb, cap_a, cap), f"source runs under {PLAIN_MIN_SRC_RUN} bytes")
        objective = [ea + eb_, eb_]
    elif skewed_dst:  # sector-skewed stores (legalsat.kernels.staged): 128-byte destination
        # runs, 256-byte source runs (measured best on the H100), shorter where the budget says
        fp.require("run_b", eb_ == min(max(floor_log2(128) - lb, 0), cap_b),
                   "a skewed tile stores 128-byte destination runs")
        fp.require("run_a", ea <= min(max(floor_log2(256) - lb, 0), cap_a),
                   "a skewed tile loads source runs of at most 256 bytes")
        objective = [ea + eb_]
    else:  # both sides contiguous for min_run_bytes where the extents allow
        fp.require("run_a", ea >= min(run, cap_a), f"less than {min_run_bytes} contiguous bytes")
        fp.require("run_b", eb_ >= min(run, cap_b), f"less than {min_run_bytes} contiguous bytes")
        objective = [ea + eb_, eb_]
    m = fp.solve(objective)
    ta, tb = 1 << m[ea].as_long(), 1 << m[eb_].as_long()
    # scalar stores: 4 warps per tile measured fastest (more programs per SM in flight)
    return TileFields(a, b, ta, tb, 4 if (unaligned_dst or skewed_dst) and not small
                      else transpose_warps(ta * tb * p.eb))


def _skews(p: Region, a: int, b: int, skew: bool) -> bool:
    """Whether the tile takes the sector-skewed shape (legalsat.kernels.staged), where the
    destination exceeds L2 (`skew`): rows off 16 bytes always; rows on 16 bytes but off a
    sector where that shape is skewed (`sector_skewable`, as `legalsat.planner.build.copy` and
    the kernels read it); other rows off a sector keep the tile of sector-aligned ones."""
    pitch = p.dims[a][2]
    if not skew or not sector_misaligned_pitch(pitch, p.eb):
        return False
    if misaligned_pitch(pitch, p.eb):
        return True
    na, nb = p.dims[a][0], p.dims[b][0]
    # the skewed shape's runs where the extents allow (the branch below): 128 bytes, 256 bytes
    tile_a, tile_b = min(max(256 // p.eb, 1), pow2_at_least(na)), min(max(128 // p.eb, 1), pow2_at_least(nb))
    return sector_skewable(tile_b * p.eb, nb, tile_b, tile_a * p.eb)


def _fitting_run(run_log2: int, budget_log2: int, eb_log2: int) -> int:
    """log2 of the run (elements) both sides of a tile must have: `run_log2`, or less when a
    square tile of such runs would not fit the budget (a small smem_bytes takes a smaller
    tile, not no tile)."""
    return max(min(run_log2, (budget_log2 - eb_log2) // 2), 0)


def _plain_src_run(eb_log2: int, cap_a: int, budget_log2: int) -> int:
    """log2 of the least source run (elements) of a plain tile: PLAIN_MIN_SRC_RUN bytes, less
    where the extent or a square tile of the budget is shorter (under a small budget the
    longest destination run took it all: 1023 x 4097 bf16 in 1 KiB got 256 x 2 tiles, 4-byte
    source runs)."""
    return min(_fitting_run(floor_log2(PLAIN_MIN_SRC_RUN) - eb_log2, budget_log2, eb_log2), cap_a)


def _plain_budget(p: Region, min_programs: int) -> int:
    """log2 of the most bytes a plain tile of `p` may take for `min_programs` programs."""
    return floor_log2(min(PLAIN_MAX_TILE, max(PLAIN_MIN_TILE, p.bytes // max(min_programs, 1))))


def _transpose_tile_closed(p: Region, a: int, b: int, max_tile_bytes: int, min_run_bytes: int, small: bool,
                           smem_budget: int | None, skew: bool = True, min_programs: int = 1) -> TileFields | None:
    """`solve_transpose_tile`'s optimum by enumeration of its at most 11 x 11 exponents (the
    same constraints and lexicographic objective as its z3 form, which a property test
    compares it with); None when no exponents satisfy them."""
    na, nb = p.dims[a][0], p.dims[b][0]
    lb = floor_log2(p.eb)
    cap_a = floor_log2(na - 1) + 1 if na > 1 else 0
    cap_b = floor_log2(nb - 1) + 1 if nb > 1 else 0
    budget = floor_log2(smem_budget) if smem_budget is not None and smem_budget < max_tile_bytes \
        else floor_log2(max_tile_bytes)
    run = _fitting_run(floor_log2(min_run_bytes) - lb, budget, lb)
    unaligned_dst = misaligned_pitch(p.dims[a][2], p.eb)
    skewed_dst = _skews(p, a, b, skew)
    best: tuple | None = None
    for ea in range(min(10, cap_a) + 1):
        for eb_ in range(min(10, cap_b) + 1):
            if ea + eb_ + lb > budget:
                continue
            if small:
                if (ea if na <= nb else eb_) != min(cap_a, cap_b):
                    continue
                key = (ea + eb_,)
            elif unaligned_dst and not skew:
                if (ea + eb_ + lb > _plain_budget(p, min_programs)
                        or eb_ > min(max(floor_log2(PLAIN_DST_RUN) - lb, 0), cap_b)
                        or ea < _plain_src_run(lb, cap_a, budget)):
                    continue
                key = (ea + eb_, eb_)
            elif skewed_dst:
                if eb_ != min(max(floor_log2(128) - lb, 0), cap_b) or ea > min(max(floor_log2(256) - lb, 0), cap_a):
                    continue
                key = (ea + eb_,)
            else:
                if ea < min(run, cap_a) or eb_ < min(run, cap_b):
                    continue
                key = (ea + eb_, eb_)
            if best is None or key > best[0]:
                best = (key, ea, eb_)
    if best is None:
        return None
    ta, tb = 1 << best[1], 1 << best[2]
    return TileFields(a, b, ta, tb, 4 if (unaligned_dst or skewed_dst) and not small
                      else transpose_warps(ta * tb * p.eb))


@dataclass(frozen=True)
class RowFields:
    rows: int
    num_warps: int
    vector_bytes: int
    slab_step: int | None = None  # slab elements per program (solve_index_major, solve_row_parts)


# an index-major program's entries x slab elements. Measured on the H100 (tools/gather_sweep.py,
# 1,000 of 4,096 fp32 columns x 2,048 rows): 4 KiB per program (1,024 entries x 1 row, 2,048
# programs) 24.9 us with 2 warps, 25.6 with 4 or 8 (torch.compile: 24.7); 8 KiB (x 2 rows)
# 27.6 us; 16 KiB (x 4 rows) 32.5 us (a program's rows' sectors no longer stay in L1 between
# the entries that share them); 512 entries x 1 row 32.7 us
INDEX_MAJOR_ENTRIES = 1024
INDEX_MAJOR_BLOCK_BYTES = 4096
INDEX_MAJOR_WARPS = 2


def solve_index_major(count: int, element_bytes: int, slab_elems: int) -> RowFields:
    """A gather along an inner axis (its entries are the output's contiguous dim): each program
    takes up to INDEX_MAJOR_ENTRIES entries (a power of two covering them where fewer) and as
    many slab elements as fill INDEX_MAJOR_BLOCK_BYTES, so there are programs for every SM
    however few the entries; INDEX_MAJOR_WARPS warps."""
    rows = min(INDEX_MAJOR_ENTRIES, pow2_at_least(count))
    step = min(pow2_at_least(max(slab_elems, 1)), pow2_at_most(max(INDEX_MAJOR_BLOCK_BYTES // (rows * element_bytes), 1)))
    return RowFields(rows, INDEX_MAJOR_WARPS, element_bytes, step)


# a gather of short rows (at most SHORT_ROW_BYTES) moves up to SHORT_ROWS_BLOCK_BYTES per program,
# 32 bytes a thread, at most SHORT_ROWS_WARPS warps (the shuffle and inspector gathers' programs
# take the same rows). Measured on the H100 (tools/gather_sweep.py
# --row-gathers, two processes, interleaved with torch.compile): 4M rows of 128 B, random /
# sorted / warp-local, 64 rows of 8 warps 391.4 / 311.6 / 321.9 us against 256 rows (32 KiB)
# 395.1 / 319.6 / 326.0 and torch.compile 395.2 / 316.5 / 325.0; 4M rows of 64 B, 128 rows
# 237.9 us against 512 rows 238.4, torch.compile 239.0
SHORT_ROW_BYTES = 128
SHORT_ROWS_BLOCK_BYTES = 8192
ROWS_BLOCK_BYTES = 32768  # longer rows (swept the same way); a direct gather's over 4 KiB: solve_row_parts
SHORT_ROWS_WARPS = 8


def rows_block_bytes(slab_bytes: int) -> int:
    """The most bytes a row gather's program moves for slabs of `slab_bytes`."""
    return SHORT_ROWS_BLOCK_BYTES if slab_bytes <= SHORT_ROW_BYTES else ROWS_BLOCK_BYTES


def rows_warps(slab_bytes: int, block_bytes: int) -> int:
    """Warps of a row gather's program moving `block_bytes` of `slab_bytes` slabs: 32 bytes a
    thread for short rows (at most SHORT_ROWS_WARPS), else the tiles' rule (`warps_for`)."""
    if slab_bytes <= SHORT_ROW_BYTES:
        return pow2_at_most(min(SHORT_ROWS_WARPS, block_bytes // 1024))
    return warps_for(block_bytes)


# a direct gather of long rows (slabs over SLAB_PART_BYTES) moves each entry's slab in parts of
# SLAB_PART_BYTES, a program each, of SLAB_PART_WARPS warps (32 bytes a thread), a slab's parts
# taken by consecutive programs. Measured on the H100 (tools/row_gather_probe.py,
# benchmarks/row_gather_probe.json, CUDA graphs): against 32 KiB programs of 8 warps (four 8 KiB
# rows, or one 32-128 KiB KV page), 4 KiB parts of 4 warps took 0.4-1.8 % less time on all six
# embeddings and paged KV caches (8 KiB rows 94.5 -> 93.7 us, 64-token pages 188.1 -> 184.7;
# torch.compile 93.4 and 184.8); 8 KiB parts of 8 warps tied them, 1 and 2 KiB parts were slower
# than 4 KiB on all six, and the parts of one slab taken by programs far apart 0.5-2 % slower
# than the 32 KiB programs; whole programs looping over rows (persistent, the next index loaded
# ahead or not) 2-4.5 % slower.
SLAB_PART_BYTES = 4096
SLAB_PART_WARPS = 4
SLAB_PART_ELEMENT_BYTES = 16


def solve_row_parts(slab_bytes: int, element_bytes: int) -> RowFields | None:
    """A direct row gather's one entry a program, its slab in parts of SLAB_PART_BYTES (as
    slab elements of `element_bytes`, each one access: the RowFields' slab step), SLAB_PART_WARPS warps. None
    (`solve_rows` decides) where the slab fits one part, where its elements are narrower than
    SLAB_PART_ELEMENT_BYTES (only 16-byte vectors were measured), or where its last part would
    be under half a part (programs moving a few bytes: a 4,112-byte row's second part is 16)."""
    tail = slab_bytes % SLAB_PART_BYTES
    if slab_bytes <= SLAB_PART_BYTES or element_bytes != SLAB_PART_ELEMENT_BYTES or 0 < tail < SLAB_PART_BYTES // 2:
        return None
    return RowFields(1, SLAB_PART_WARPS, element_bytes, SLAB_PART_BYTES // element_bytes)


def solve_rows(slab_bytes: int, vector_bytes: int, count: int) -> RowFields:
    """Rows (index entries) per program of a gather: as many as fit `rows_block_bytes` (one
    slab when a slab is larger), at most the entries (and 4096); warps by `rows_warps`."""
    block = rows_block_bytes(slab_bytes)
    within = floor_log2(count - 1) + 1 if count > 1 else 0
    fit = [e for e in range(min(12, within) + 1) if (1 << e) * slab_bytes <= max(block, slab_bytes)]
    if fit:  # closed form: the most rows both bounds allow
        rows = 1 << fit[-1]
        return RowFields(rows, rows_warps(slab_bytes, rows * slab_bytes), vector_bytes)
    fp = FieldProblem("rows per program")  # unsat: z3's core names the bound
    e = fp.log2_var("rows_log2", 12)
    fp.require("block_bytes", pow2(e) * slab_bytes <= max(block, slab_bytes),
               f"more than {block} bytes per program")
    fp.require("rows_within_count", e <= floor_log2(count - 1) + 1 if count > 1 else e == 0,
               f"more rows than the {count} indices")
    m = fp.solve([e])
    rows = 1 << m[e].as_long()
    return RowFields(rows, rows_warps(slab_bytes, rows * slab_bytes), vector_bytes)
