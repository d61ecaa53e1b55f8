"""legalsat's one diagnostic catalogue: every problem it reports, with a stable code.

A `Code` names one kind of problem: its stable id (what clients match on), its category,
a summary (the catalogue's one-line description, and the message when the reporting site
has nothing more specific to say), a default fix, and, for TMA legality rules, the
descriptor field it is about. `legalsat codes` prints the catalogue.

A `Diagnostic` is one occurrence: a code, the message in the user's terms, a fix the user
can act on, the field it is about (dotted path, list indices as ``box_dim[1]``) and the
position in a list field. Invalid input (`InputError`), TMA legality violations, the
reasons a strategy got no plan and protocol hazards (`ProtocolDiagnostic`) are all
Diagnostics; the boundary (legalsat.schemas) gives each context its JSON shape.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from enum import Enum, StrEnum


class Category(StrEnum):
    """Whose problem it is, which decides how it is answered."""

    INPUT = "input"          # the caller's input is invalid (HTTP 422, exit code 2)
    LIMIT = "limit"          # a size or time limit was reached (413, 504)
    SERVICE = "service"      # the service's own state: auth, queue, workers (401, 404, 429, 503)
    LEGALITY = "legality"    # a rule `cuTensorMapEncodeTiled` enforces
    PLANNING = "planning"    # why a strategy has no plan for a request
    PROTOCOL = "protocol"    # a hazard of an asynchronous copy protocol
    INTERNAL = "internal"    # a bug in legalsat (HTTP 500)
    WARNING = "warning"      # the input is valid but likely not what was meant (answered, and said so)


class Code(Enum):
    """The catalogue (see the module docstring). Values: (id, category, summary, fix[, field])."""

    # --- input -------------------------------------------------------------------------------
    INVALID_JSON = ("invalid_json", Category.INPUT, "the input is not valid JSON",
                    "send one well-formed JSON value (one object per line for JSON Lines)")
    INVALID_INPUT = ("invalid_input", Category.INPUT, "a field has an invalid value",
                     "correct the field named in `field`")
    STRIDES_IN_BYTES = ("strides_in_bytes", Category.WARNING, "a view's strides look like byte counts",
                        "give strides in elements (divide each by the element size); if they are "
                        "elements, ignore this warning")
    WGMMA_UNREADABLE = ("wgmma_unreadable", Category.WARNING, "the tile lands where the tensor core cannot read it "
                        "as the consumer asks (the plan loads it; its tile_load.wgmma is null)",
                        "load a tile the instruction reads, or rearrange it in shared memory before the wgmma")
    EGRAPH_TOO_LARGE = ("egraph_too_large", Category.WARNING, "the request's e-graph is larger than the service "
                        "keeps: its plans are answered, the e-graph is not kept (no egraph.id)",
                        "lower options.node_limit (an e-node is about 390 bytes), or raise "
                        "LEGALSAT_EGRAPH_MAX_BYTES", "options.keep_egraph")
    INVALID_TERM = ("invalid_term", Category.INPUT, "the movement term cannot be read",
                    'write the term as e.g. "(copy (view bfloat16 (64 64) (64 1) 16) (view ...))"')
    UNKNOWN_TARGET = ("unknown_target", Category.INPUT, "the target is not one legalsat knows",
                      "use sm90, sm100 or gfx942")
    NO_TMA = ("no_tma", Category.INPUT, "the target has no tensor memory accelerator",
              "use target sm90 or sm100 for TMA descriptors")
    EMPTY_LINE = ("empty_line", Category.INPUT, "a JSON Lines input line is empty",
                  "put one JSON object on every line")
    LINE_TOO_LONG = ("line_too_long", Category.INPUT, "a JSON Lines input line is over the size limit",
                     "split the input, or raise LEGALSAT_MAX_BODY_BYTES")
    INVALID_PLAN = ("invalid_plan", Category.INPUT, "the plan given to the kernel client is not one the "
                    "planner returns", "send the plan as the planner returned it")
    PLAN_INCONSISTENT = ("plan_inconsistent", Category.INPUT, "the plan's fields disagree with each other in a "
                         "way no single field's check names (a plan edited by hand)",
                         "send the plan as the planner returned it; if it was, report it with the plan")
    INVALID_ARGUMENT = ("invalid_argument", Category.INPUT, "a kernel was called with tensors that are not "
                        "the views its plan was made for", "pass the tensors the plan was made for")
    DOES_NOT_FIT = ("does_not_fit", Category.INPUT, "the pipeline's stages do not fit the shared-memory "
                    "budget", "use fewer stages, smaller boxes, or a larger smem_bytes")
    # --- limits --------------------------------------------------------------------------------
    HEADERS_TOO_LARGE = ("headers_too_large", Category.LIMIT, "the request line and headers are over the limit",
                         "send smaller headers, or raise LEGALSAT_MAX_HEADER_BYTES on the server")
    BAD_HOST = ("bad_host", Category.SERVICE, "the request's Host is not one this service answers",
                "address the service by a host name in LEGALSAT_ALLOWED_HOSTS")
    UNSUPPORTED_MEDIA_TYPE = ("unsupported_media_type", Category.INPUT, "the body is not declared as JSON",
                              "send the body with Content-Type: application/json")
    BODY_TIMEOUT = ("body_timeout", Category.LIMIT, "the request body did not arrive in time",
                    "send the whole body at once")
    BAD_HTTP = ("bad_http", Category.LIMIT, "the request is not well-formed HTTP/1.1",
                "send a request line, headers of name: value with CRLF line ends, and at most one "
                "Content-Length (or chunked encoding alone)")
    HEAD_TIMEOUT = ("head_timeout", Category.LIMIT, "the request line and headers did not arrive in time",
                    "send the whole request head at once (or raise LEGALSAT_HEAD_TIMEOUT_S on the server)")
    CLIENT_DISCONNECTED = ("client_disconnected", Category.SERVICE, "the client closed the connection before "
                           "its request arrived", "nothing to do: the request was not answered")
    TOO_LARGE = ("too_large", Category.LIMIT, "the request is over the size limit",
                 "send a smaller request (split a batch), or raise LEGALSAT_MAX_BODY_BYTES")
    DEADLINE_EXCEEDED = ("deadline_exceeded", Category.LIMIT, "no answer within the request's deadline",
                         "raise options.timeout_ms (capped by LEGALSAT_DEADLINE_MS), lower "
                         "options.node_limit, or retry when the service is less busy")
    # --- service -------------------------------------------------------------------------------
    UNAUTHORIZED = ("unauthorized", Category.SERVICE, "the bearer token is missing or wrong",
                    "send the header 'Authorization: Bearer <token>' with the server's LEGALSAT_TOKEN")
    NOT_FOUND = ("not_found", Category.SERVICE, "no such resource", "see /docs for the routes")
    METHOD_NOT_ALLOWED = ("method_not_allowed", Category.SERVICE, "the route does not take this method",
                          "see /docs for the methods of this route")
    HTTP_ERROR = ("http_error", Category.SERVICE, "the HTTP request cannot be served", "see /docs")
    QUEUE_FULL = ("queue_full", Category.SERVICE, "every planning worker is busy and the queue is full",
                  "retry after a short wait, or raise LEGALSAT_QUEUE_SIZE / LEGALSAT_WORKERS")
    WORKER_LOST = ("worker_lost", Category.SERVICE, "the planning worker handling this request stopped",
                   "retry the request")
    SHUTTING_DOWN = ("shutting_down", Category.SERVICE, "the service is shutting down",
                     "retry against another instance, or after the restart")
    EGRAPH_NOT_KEPT = ("egraph_not_kept", Category.SERVICE, "the e-graph could not be kept: the shared "
                       "plan cache that holds kept e-graphs is unavailable",
                       "retry after a short wait; requests without options.keep_egraph are planned meanwhile")
    EGRAPH_UNAVAILABLE = ("egraph_unavailable", Category.SERVICE, "the shared plan cache that holds kept e-graphs "
                          "did not answer: whether this e-graph is kept is not known",
                          "retry after a short wait")
    INTERNAL = ("internal", Category.INTERNAL, "a bug in legalsat",
                "report this request to the legalsat maintainers")

    # --- TMA legality (what cuTensorMapEncodeTiled accepts; legalsat.analyses.tma_legality) -----
    RANK_RANGE = ("rank.range", Category.LEGALITY, "rank is between 1 and the target's maximum (5)",
                  "merge contiguous dimensions to reach rank <= 5", "rank")
    RANK_INTERLEAVE_MIN = ("rank.interleave_min", Category.LEGALITY, "interleaved layouts need rank >= 3",
                           'use interleave "none"', "rank")
    DTYPE_SUPPORTED = ("dtype.supported", Category.LEGALITY, "the target's TMA unit supports the dtype",
                       "copy packed data as uint8 / uint16 elements", "dtype")
    GLOBAL_ADDRESS_ALIGN = ("global_address.align", Category.LEGALITY, "base address aligned to 16 bytes "
                            "(32 for interleave 32B and 16-byte-aligned packed types)",
                            "allocate with 16-byte alignment", "global_address")
    GLOBAL_ADDRESS_RANGE = ("global_address.range", Category.LEGALITY, "address inside the 57-bit virtual "
                            "address space", "pass a device pointer", "global_address")
    GLOBAL_DIM_RANGE = ("global_dim.range", Category.LEGALITY, "every dimension between 1 and 2^32",
                        "split the dimension in two", "global_dim")
    GLOBAL_DIM_PACKED_MULTIPLE = ("global_dim.packed_multiple", Category.LEGALITY, "packed types: "
                                  "global_dim[0] multiple of 128 (16-byte-aligned packets) or 2 (16u4_align8b)",
                                  "pad the innermost dimension", "global_dim")
    GLOBAL_STRIDES_ALIGN = ("global_strides.align", Category.LEGALITY, "strides (bytes) multiples of 16 (32 "
                            "for interleave 32B / 16-byte-aligned packed types)",
                            "pad the row pitch to a multiple of 16 bytes", "global_strides")
    GLOBAL_STRIDES_RANGE = ("global_strides.range", Category.LEGALITY, "strides below 2^40 bytes",
                            "describe the tensor from a closer base", "global_strides")
    BOX_DIM_RANGE = ("box_dim.range", Category.LEGALITY, "every box dimension between 1 and 256",
                     "split the dimension, or issue several copies of <= 256", "box_dim")
    BOX_DIM_INNER_BYTES = ("box_dim.inner_bytes", Category.LEGALITY, "box_dim[0] x element size is a "
                           "multiple of 16 bytes", "widen the inner box to a multiple of 16 bytes", "box_dim")
    BOX_DIM_PACKED_INNER = ("box_dim.packed_inner", Category.LEGALITY, "16-byte-aligned packed types: "
                            "box_dim[0] == 128", "use box_dim[0] = 128", "box_dim")
    BOX_DIM_SWIZZLE_SPAN = ("box_dim.swizzle_span", Category.LEGALITY, "with a swizzle, the inner box fits "
                            "the swizzle span", "narrow the inner box or widen the swizzle", "box_dim")
    BOX_DIM_FOOTPRINT = ("box_dim.footprint", Category.LEGALITY, "one copy moves at most the target's shared "
                         "memory per SM", "shrink the box, or split the tile into several copies", "box_dim")
    ELEMENT_STRIDES_RANGE = ("element_strides.range", Category.LEGALITY, "every element stride between 1 "
                             "and 8", "use 1 for a dense box", "element_strides")
    SWIZZLE_SUPPORTED = ("swizzle.supported", Category.LEGALITY, "the target supports the swizzle mode",
                         'use swizzle "128B"', "swizzle")
    SWIZZLE_INTERLEAVE_32B = ("swizzle.interleave_32b", Category.LEGALITY, "interleave 32B requires swizzle "
                              "32B (documented)", 'use swizzle "32B" with interleave "32B"', "swizzle")
    SWIZZLE_PACKED = ("swizzle.packed", Category.LEGALITY, "16-byte-aligned packed types allow only some "
                      "swizzles", "use a swizzle the packed type allows", "swizzle")
    INTERLEAVE_PACKED = ("interleave.packed", Category.LEGALITY, "16u6_align16b requires interleave none",
                         'use interleave "none"', "interleave")
    OOB_FILL_FLOAT_ONLY = ("oob_fill.float_only", Category.LEGALITY, "NaN fill needs a (non-packed) "
                           "floating-point dtype", 'use oob_fill "none"', "oob_fill")

    # --- planning: why a strategy has no plan (legalsat.planner) ---------------------------------
    NOT_TRANSPOSING = ("not_transposing", Category.PLANNING, "src and dst are contiguous along the same "
                       "dim: staging through shared memory would only add a pass",
                       "nothing to change: staging pays only for copies that transpose; the direct "
                       "and TMA plans move this copy")
    NO_UNIT_STRIDE = ("no_unit_stride", Category.PLANNING, "staging through shared memory or registers pairs a "
                      "contiguous (stride-1) dim of the source with one of the destination; a side without a "
                      "stride-1 dim has none to pair", "nothing to change for the direct plan, which moves this "
                      "copy; for a staged or shuffle plan, give that side a dim of stride 1 (make it contiguous "
                      "first, or send its strides in elements, not bytes)")
    NOT_TRANSPOSING_SMALL = ("not_transposing_small", Category.PLANNING, "no transposing formulation whose "
                             "smaller contiguous side fits a warp (<= 64 bytes)",
                             "nothing to change: register shuffles pay only for transposes whose smaller "
                             "contiguous side is at most 64 bytes")
    INDICES_UNSTRUCTURED = ("indices_unstructured", Category.PLANNING, "inspector-executor pays off for "
                            "paged, clustered or expert-routed (groups) indices",
                            "describe the index distribution (paged / clustered / groups) if it has structure")
    NO_INDICES = ("no_indices", Category.PLANNING, "a copy has no indices to inspect",
                  "nothing to change: inspector-executor plans gathers; a copy's plans are the others")
    GATHER_STAGED = ("gather_staged", Category.PLANNING, "a gather's direct plan already loads and stores along "
                     "each side's contiguous dim (along an inner axis, the index entries are the stores' contiguous "
                     "dim): staging through shared memory would add a pass", "nothing to change: the gather's "
                     "direct plan is its staged-free form")
    NOT_WARP_LOCAL = ("not_warp_local", Category.PLANNING, "register shuffles need the gathered rows of a "
                      "warp within a 32-row window", 'use distribution "warp_local" if that holds')
    LOAD_TILE_STRATEGY = ("load_tile", Category.PLANNING, "tile loads use tma or direct staging",
                          "nothing to change: a tile is staged for its consumer by tma or direct copies")
    GATHER_TMA = ("gather_tma", Category.PLANNING, "an indexed row copy has no TMA plan: a tiled descriptor "
                  "walks boxes, not index lists (Blackwell's TMA gather4 is not planned)",
                  "use direct or inspector_executor")
    TMA_STORE_ROW = ("tma_store_row", Category.PLANNING, "a TMA store writes the rows of its box in whole 16-byte "
                     "chunks, past the end of a row whose bytes are not a multiple of 16 (measured on the H100: "
                     "tools/tma_store_row_probe.py)", "plan the copy with direct or staged_smem (they do), or give the "
                     "destination rows a multiple of 16 bytes")
    NO_TMA_UNIT = ("no_tma_unit", Category.PLANNING, "the target has no tensor memory accelerator",
                   "use another strategy")
    TMA_UNAVAILABLE = ("tma_unavailable", Category.PLANNING, "no formulation may be TMA-legal",
                       "see the legality reasons of the descriptors a compiler would write")
    INNER_EXTENT = ("inner_extent", Category.PLANNING, "no formulation has a contiguous inner extent of "
                    "16 bytes or more on both sides", "make the innermost contiguous extent at least 16 "
                    "bytes on both sides (pad the tensor, or allow_padding)")
    ALLOW_PADDING = ("allow_padding", Category.PLANNING, "a padded row pitch would make the strides 16-byte "
                     "multiples", "set options.allow_padding to let the plan re-allocate with a padded pitch")
    INNER_CONTIGUOUS = ("inner_contiguous", Category.PLANNING, "TMA's innermost descriptor dim must be "
                        "contiguous", "make one dim contiguous (stride 1)")
    RANK = ("rank", Category.PLANNING, "more dims than TMA descriptors take (5) after coalescing",
            "make adjacent dims contiguous so they coalesce")
    SHUFFLE_WORD = ("shuffle_word", Category.PLANNING, "a warp shuffle exchanges words of at most 8 bytes",
                    "use staged_smem for this transpose")
    SHUFFLE_EVEN_CHANNELS = ("shuffle_even_channels", Category.PLANNING, "for an even number of interleaved "
                             "channels the staged tile, which holds them whole, ran as fast as the register "
                             "interleave or faster", "use the staged_smem (or direct) plan")
    SMEM_BUDGET = ("smem_budget", Category.PLANNING, "the strategy's shared memory does not fit the budget",
                   "raise options.smem_bytes, or use a strategy without shared memory")
    INNER_BOX_16B = ("inner_box_16B", Category.PLANNING, "a TMA inner box must be a multiple of 16 bytes",
                     "make the innermost contiguous extent at least 16 bytes (pad the tensor, or allow_padding)")
    TILE_BOXES = ("tile_boxes", Category.PLANNING, "the tile takes more TMA boxes per stage than one pipeline "
                  "stage issues", "load a tile whose extents are powers of two or multiples of 8 (fewer, larger "
                  "boxes); the direct plan loads this one")
    SMEM_BOX_ALIGN = ("smem_box_align", Category.PLANNING, "each TMA box must land 128-byte aligned in shared "
                      "memory", "load a tile whose boxes hold a multiple of 128 bytes (a wider contiguous extent)")
    DST_INNER_BOX_16B = ("dst_inner_box_16B", Category.PLANNING, "the destination's contiguous extent must "
                         "hold a 16-byte TMA box", "use staged_smem for this transpose")
    TWO_STAGES = ("two_stages", Category.PLANNING, "a TMA pipeline needs at least two stages to overlap",
                  "raise options.smem_bytes")
    NO_FIELDS = ("no_fields", Category.PLANNING, "no tile, box or block satisfies the strategy's constraints "
                 "for this shape", "nothing to change: the other plans of the response move this request")
    RELAYOUT = ("relayout", Category.INTERNAL, "a plan's padding does not match a request dim",
                "report this request to the legalsat maintainers")
    MEMORY_LIMIT = ("memory_limit", Category.LIMIT, "the request needs more memory than a planning worker has "
                    "(LEGALSAT_WORKER_MEMORY_MB)", "lower options.node_limit, or raise LEGALSAT_WORKER_MEMORY_MB")
    SOLVER_TIMEOUT = ("solver_timeout", Category.LIMIT, "z3 found no field values within the request's time "
                      "budget", "raise options.timeout_ms (the solver gets what saturation left of it)")
    PROOF_BUDGET = ("proof_budget", Category.LIMIT, "islpy did not finish the plan's proof within the request's "
                    "time budget (a plan is returned only proven)", "raise options.timeout_ms")
    PLANNING_DEADLINE = ("planning_deadline", Category.LIMIT, "the request's time budget was spent before this "
                         "candidate was solved", "raise options.timeout_ms, or lower options.max_plans")
    NOT_REACHED = ("not_reached", Category.LIMIT, "saturation stopped at a limit before it found this strategy's "
                   "formulation", "raise the limit the response's egraph.stop_reason names: options.timeout_ms "
                   "or options.node_limit (an iteration_limit is the planner's own bound)")
    PROOF = ("proof", Category.INTERNAL, "the plan's element map is not the request's",
             "report this request to the legalsat maintainers: it is a planner bug")

    # --- asynchronous protocols (legalsat.protocols.verify) ----------------------------------------
    DEADLOCK = ("deadlock", Category.PROTOCOL, "a wait no remaining operation can satisfy",
                "make every waited phase reachable: arm and fill each stage before its wait")
    TX_MISMATCH = ("tx_mismatch", Category.PROTOCOL, "a phase's expect_tx bytes differ from the bytes its "
                   "copies complete", "announce exactly the bytes of the copies issued to the barrier")
    PHASE_REUSE = ("phase_reuse", Category.PROTOCOL, "a barrier completes a phase while a role has not "
                   "observed the previous one", "re-arm a stage only after every waiter observed its "
                   "previous phase (wait for its release first)")
    USE_BEFORE_COMPLETE = ("use_before_complete", Category.PROTOCOL, "a buffer is read before a copy into "
                           "it is known complete", "wait on the copy's barrier phase first")
    OVERWRITE_BEFORE_RELEASE = ("overwrite_before_release", Category.PROTOCOL, "a buffer is written while a "
                                "consumer may still read its previous contents",
                                "wait for the consumer's release before reusing the stage")
    MISSING_PROXY_FENCE = ("missing_proxy_fence", Category.PROTOCOL, "a TMA store reads a generic write with "
                           "no fence.proxy.async in between", "fence after the shared-memory store")
    STORE_REUSE_BEFORE_WAIT = ("store_reuse_before_wait", Category.PROTOCOL, "a buffer is overwritten while "
                               "a TMA store may still read it", "wait_group before reusing the buffer")
    STORE_PENDING_AT_EXIT = ("store_pending_at_exit", Category.PROTOCOL, "a role ends with a TMA store not "
                             "waited for", "wait_group 0 before the kernel exits")
    USE_AFTER_INVALIDATE = ("use_after_invalidate", Category.PROTOCOL, "a barrier is used after "
                            "mbarrier.invalidate", "invalidate barriers only after their last use")
    BARRIER_UNINITIALIZED = ("barrier_uninitialized", Category.PROTOCOL, "a barrier is used before "
                             "mbarrier.init", "initialize every barrier in setup")
    BUFFER_OVERFLOW = ("buffer_overflow", Category.PROTOCOL, "a copy moves more bytes than its buffer element "
                       "holds", "declare the buffer as large as the copy (buffers[].bytes), or move fewer bytes")
    OVER_ARRIVAL = ("over_arrival", Category.PROTOCOL, "a barrier phase gets more arrivals than it expects",
                    "arrive on each phase as many times as init's count (or raise the count)")

    def __init__(self, id: str, category: Category, summary: str, fix: str, field: str | None = None):
        self.id = id
        self.category = category
        self.summary = summary
        self.default_fix = fix
        self.field = field

    def at(self, message: str | None = None, fix: str | None = None, *, field: str | None = None,
           index: int | None = None, limit: int | None = None, value: int | None = None) -> Diagnostic:
        """One occurrence: `message` and `fix` default to the catalogue's; `field` to the
        code's own (legality rules); `limit` and `value` for a refusal by a limit."""
        return Diagnostic(self, message or self.summary, fix or self.default_fix,
                          field if field is not None else self.field, index, limit, value)

    def error(self, message: str | None = None, fix: str | None = None, field: str | None = None, *,
              limit: int | None = None, value: int | None = None) -> InputError:
        """An InputError with this one problem (`limit`, `value`: see Diagnostic)."""
        return InputError([self.at(message, fix, field=field, limit=limit, value=value)])

    @classmethod
    def by_id(cls, code_id: str) -> Code:
        """The code whose stable id is `code_id` (KeyError if none)."""
        return _BY_ID[code_id]


_BY_ID = {c.id: c for c in Code}
# "rule" families as the protocol verifier and the legality model report them
PROTOCOL_RULES = tuple(c for c in Code if c.category is Category.PROTOCOL)


@dataclass(frozen=True)
class Diagnostic:
    """One problem (see the module docstring). `index`: position in a list field, or None."""

    code: Code
    message: str
    fix: str
    field: str | None = None
    index: int | None = None
    # a refusal by a limit (as Triton's OutOfResources carries its): the limit and what the
    # input asked, in the limit's unit, for a caller that adapts (splits a batch, a line)
    limit: int | None = None
    value: int | None = None

    @property
    def id(self) -> str:
        return self.code.id

    def in_term(self) -> Diagnostic:
        """This problem as a request given as a term has it: such a request has no `op`, so a
        field under op is `term`, the op path said in the message ("in the term, op.tile ...")."""
        f = self.field or ""
        if not (f == "op" or f.startswith(("op.", "op["))):
            return self
        message = f"in the term, {self.message}" if self.message.startswith(f) else f"in the term ({f}): {self.message}"
        return replace(self, message=message, field="term")

    def to_error(self) -> dict:
        """The error shape of every route and command: code, message, fix, field (and, for a
        refusal by a limit, `limit` and `value`)."""
        out = {"code": self.code.id, "message": self.message, "fix": self.fix, "field": self.field}
        if self.limit is not None:
            out["limit"], out["value"] = self.limit, self.value
        return out


@dataclass(frozen=True)
class ProtocolDiagnostic(Diagnostic):
    """A protocol hazard: where it happens. `op_index` indexes Role.ops() (setup / teardown:
    their own lists); `iteration` is i; `trip_count` the N of the run that showed it."""

    role: str = ""
    op_index: int = 0
    iteration: int = 0
    op: str = ""
    trip_count: int = 0


MAX_DETAILS = 32  # details an error answer lists


class InputError(ValueError):
    """Invalid input. `details` lists every problem found; the first is the headline.
    Survives pickling (the streaming commands answer lines in worker processes)."""

    def __init__(self, details: list[Diagnostic] | tuple[Diagnostic, ...]):
        self.details = tuple(details)
        super().__init__(self.details[0].message if self.details else "invalid input")

    def __reduce__(self):
        return (type(self), (self.details,))

    @property
    def headline(self) -> Diagnostic:
        return self.details[0]

    def to_dict(self) -> dict:
        """The error shape: {"error": {...}} plus the details under "details" when there are
        several: the first MAX_DETAILS, and how many more there were (`more_details`): one
        misspelt name repeated over thousands of operations is thousands of details."""
        body = self.headline.to_error()
        if len(self.details) > 1:
            body["details"] = [d.to_error() for d in self.details[:MAX_DETAILS]]
            if len(self.details) > MAX_DETAILS:
                body["more_details"] = len(self.details) - MAX_DETAILS
        return {"error": body}


def shown(value: object, limit: int = 64) -> str:
    """`value` as a message quotes it, in the JSON the sender wrote (null, true, a string in
    quotes), cut to `limit` characters: input of any length is never echoed whole."""
    if value is None or isinstance(value, bool):
        text = "null" if value is None else str(value).lower()
    elif isinstance(value, float) and not math.isfinite(value):
        text = "a number past the range of a double"  # 1e400: JSON has no inf or NaN
    elif isinstance(value, (dict, list, tuple)):  # as JSON: ["128B"], {"a": null}, not Python's repr
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)[:4 * limit]
        except (TypeError, ValueError):
            text = repr(value)
    else:
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def internal_error(e: BaseException) -> Diagnostic:
    """What a bug in legalsat (not in the input) answers: the kind of exception and the first
    words of its message (never the planner's internals at length: the traceback goes to the
    log), and whom to tell."""
    text = str(e).splitlines()[0] if str(e) else ""
    return Code.INTERNAL.at(f"{type(e).__name__}: {text[:120]}" if text else type(e).__name__)


def catalogue() -> list[dict]:
    """Every code as a dict (id, category, summary, fix, field): what `legalsat codes` prints."""
    return [{"code": c.id, "category": c.category.value, "summary": c.summary, "fix": c.default_fix,
             "field": c.field} for c in Code]
