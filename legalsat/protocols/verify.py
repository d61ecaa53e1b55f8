"""Verify an asynchronous copy protocol: execute it, build its happens-before graph, check
the PTX contract.

For each trip count N the protocol is unrolled and executed (roles run until they block,
copies complete as soon as they are issued). Every executed operation, copy completion,
barrier-phase completion and store completion is an event in a happens-before DAG
(networkx): program order, issue -> completion, contributions -> phase completion,
phase completion -> the wait that observed it, store completion -> the wait_group that
covered it, setup -> roles -> teardown. Hazards are then judged on that graph, so they do
not depend on the schedule that was executed:

- deadlock: a wait no remaining operation can satisfy (the wait-for cycle is named);
- tx_mismatch: a phase whose expect_tx bytes differ from the bytes its copies complete;
- phase_reuse: a barrier completes phase k+1 while a role still has to observe phase k;
- use_before_complete: a consume (or TMA store) of a buffer no completed copy is ordered
  before, or of the copy of its own generation (i + shift) issued last, not yet complete;
- overwrite_before_release: a write to a buffer unordered with a consume of its old data, or
  a shared-memory store and a copy into one buffer unordered (two copies, or two stores, in
  flight into one stage may write disjoint parts: a stage's boxes, a tile's halves);
- missing_proxy_fence: a TMA store reading a generic write with no fence.proxy.async
  ordered in between;
- store_reuse_before_wait: a write to a buffer unordered with the completion (wait_group)
  of a TMA store reading it; store_pending_at_exit: a role ends with a store not waited;
- use_after_invalidate / barrier_uninitialized: a barrier used outside init..invalidate;
- buffer_overflow: a TMA load or store of more bytes than its buffer element declares;
- over_arrival: an arrive whose count exceeds the arrivals its phase still expects (they
  would complete it and count toward no phase the protocol waits on).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from legalsat.diagnostics import PROTOCOL_RULES, Code, ProtocolDiagnostic
from legalsat.protocols.model import Op, OpKind, Protocol, Slot

RULES = tuple(c.id for c in PROTOCOL_RULES)


@dataclass(frozen=True)
class ProtocolVerdict:
    """ok exactly when there are no violations; `trip_counts` lists the N checked."""

    violations: tuple[ProtocolDiagnostic, ...]
    trip_counts: tuple[int, ...]

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def rules(self) -> frozenset[str]:
        return frozenset(v.id for v in self.violations)


@dataclass
class _Inst:
    """One unrolled operation instance."""

    op: Op
    role: str
    op_index: int
    i: int


@dataclass
class _Barrier:
    arrivals: int
    init_event: int | None = None
    invalid_event: int | None = None
    pending: int = 0
    tx: int = 0
    completed: int = 0
    contributors: list[int] = field(default_factory=list)
    tx_insts: list[_Inst] = field(default_factory=list)
    phase_events: dict[int, int] = field(default_factory=dict)
    uses: list[tuple[int, _Inst]] = field(default_factory=list)


class _Run:
    """One execution of the protocol at trip count N."""

    def __init__(self, proto: Protocol, trip: int):
        self.p, self.N = proto, trip
        self.bar_arrays = {b.name: b for b in proto.barriers}
        self.buf_arrays = {b.name: b for b in proto.buffers}
        self.anc: list[int] = []  # ancestor bitsets, events in creation (= topological) order
        self.preds: list[tuple[int, ...]] = []  # each event's direct predecessors
        self.violations: list[ProtocolDiagnostic] = []
        self._reported: set[tuple[Code, str, int]] = set()  # (rule, role, op): the first occurrence is kept
        self.barriers = {(b.name, s): _Barrier(b.arrivals) for b in proto.barriers for s in range(b.count)}
        self.writes: dict[tuple, list[tuple[int, int, _Inst]]] = {}  # buf -> (write, visible, inst)
        self.reads: dict[tuple, list[tuple[int, _Inst]]] = {}
        self.store_reads: dict[tuple, list[tuple[int, _Inst]]] = {}
        self.store_done: dict[int, int] = {}
        self.fenced_by: dict[int, int] = {}
        self.programs = {r.name: self._unroll(r.blocks) for r in proto.roles}
        self.waits_ahead = self._index_waits()

    # -- unrolling ---------------------------------------------------------------------------
    def _unroll(self, blocks) -> list[_Inst]:
        out, idx = [], 0
        for b in blocks:
            start, count = max(0, b.start.at(self.N)), max(0, b.count.at(self.N))
            for i in range(start, start + count):
                for k, op in enumerate(b.ops):
                    g = op.when
                    if g is None or ((g.i_ge is None or i >= g.i_ge.at(self.N))
                                     and (g.i_lt is None or i < g.i_lt.at(self.N))):
                        out.append((op, idx + k, i))
            idx += len(b.ops)
        return out

    def _index_waits(self) -> dict[str, list]:
        """role -> per position, the (barrier key, parity) of each wait, for look-ahead."""
        return {name: [(self.bar_keys(op.bar, i)[0], self.parity(op, i)) if op.kind is OpKind.WAIT
                       else None for op, _, i in prog] for name, prog in self.programs.items()}

    def bar_keys(self, slot: Slot, i: int) -> list[tuple[str, int]]:
        arr = self.bar_arrays[slot.name]
        return [(slot.name, s) for s in _slots(slot, arr.count, i)]

    def buf_keys(self, slot: Slot, i: int) -> list[tuple[str, int]]:
        arr = self.buf_arrays[slot.name]
        return [(slot.name, s) for s in _slots(slot, arr.count, i)]

    def parity(self, op: Op, i: int) -> int:
        ph = op.phase
        if ph.fixed is not None:
            return ph.fixed & 1
        period = ph.period or self.bar_arrays[op.bar.name].count
        return (((i + ph.shift) // period) & 1) ^ int(ph.flip)

    # -- events --------------------------------------------------------------------------------
    def event(self, preds: list[int]) -> int:
        e = len(self.anc)
        a = 0
        for p in preds:
            a |= self.anc[p] | (1 << p)
        self.anc.append(a)
        self.preds.append(tuple(preds))
        return e

    def descendants(self) -> list[int]:
        """Per event, the bitset of the events it happens before (the transpose of `anc`), in
        one pass from the last event back."""
        desc = [0] * len(self.anc)
        for e in range(len(self.anc) - 1, -1, -1):
            d = desc[e] | (1 << e)
            for p in self.preds[e]:
                desc[p] |= d
        return desc

    def hb(self, a: int, b: int) -> bool:
        return a == b or bool(self.anc[b] >> a & 1)

    def known(self, code: Code, inst: _Inst) -> bool:
        """Whether `code` was reported for `inst`'s operation already (later occurrences add
        nothing: a pipeline that reuses its stages unsafely does so on every iteration, millions
        of read-write pairs in a long run)."""
        return (code, inst.role, inst.op_index) in self._reported

    def report(self, code: Code, inst: _Inst, message: str) -> None:
        if self.known(code, inst):
            return
        self._reported.add((code, inst.role, inst.op_index))
        self.violations.append(ProtocolDiagnostic(code, message, code.default_fix, role=inst.role,
                                                  op_index=inst.op_index, iteration=inst.i,
                                                  op=inst.op.kind.value, trip_count=self.N))

    # -- execution -------------------------------------------------------------------------------
    def run(self) -> None:
        start = self._run_sequential("setup", self.p.setup, None)
        roles = {name: _fresh_state(start) for name in self.programs}
        self.state = roles
        progress = True
        while progress:
            progress = False
            for name, st in roles.items():
                prog = self.programs[name]
                while st["pc"] < len(prog):
                    op, idx, i = prog[st["pc"]]
                    if not self.step(_Inst(op, name, idx, i), st):
                        break
                    st["pc"] += 1
                    progress = True
        blocked = {n: st for n, st in roles.items() if st["pc"] < len(self.programs[n])}
        if blocked:
            self._stall(blocked)
        for name, st in roles.items():
            if name in blocked:
                continue  # its deadlock is the finding
            pending = st["group"] + [s for g in st["groups"] for s in g]
            for _, inst in pending[:1]:
                self.report(Code.STORE_PENDING_AT_EXIT, inst,
                            f"{name} ends while the TMA store of {_ref(inst)} is still reading shared "
                            "memory; wait_group 0 before the kernel exits")
        ends = [st["last"] for st in roles.values() if st["last"] is not None]
        self._run_sequential("teardown", self.p.teardown, ends)
        self._judge()

    def _run_sequential(self, name: str, ops, preds: list[int] | None) -> int | None:
        """Run setup / teardown (barrier housekeeping only: they never block)."""
        st = _fresh_state()
        st["extra"] = list(preds or [])
        for k, op in enumerate(ops):
            self.step(_Inst(op, name, k, 0), st)
        if st["last"] is None and preds:
            return self.event(list(preds))
        return st["last"]

    def _new(self, st: dict, extra: list[int] = ()) -> int:
        preds = [] if st["last"] is None else [st["last"]]
        preds += st.pop("extra", [])
        preds += list(extra)
        e = self.event(preds)
        st["last"] = e
        return e

    def _barrier(self, key, inst: _Inst, e: int) -> _Barrier:
        b = self.barriers[key]
        if b.invalid_event is not None and inst.op.kind is not OpKind.INIT:
            self.report(Code.USE_AFTER_INVALIDATE, inst, f"{_key(key)} is used after it was invalidated")
        if b.init_event is None and inst.op.kind is not OpKind.INIT:
            self.report(Code.BARRIER_UNINITIALIZED, inst, f"{_key(key)} is used before mbarrier.init")
            b.init_event, b.pending = e, b.arrivals
        b.uses.append((e, inst))
        return b

    def step(self, inst: _Inst, st: dict) -> bool:
        """Execute one operation; False if it blocks (a wait whose phase has not completed)."""
        op, k = inst.op, inst.op.kind
        if k is OpKind.WAIT:
            key = self.bar_keys(op.bar, inst.i)[0]
            b = self.barriers[key]
            parity = self.parity(op, inst.i)
            last = st["last_obs"].get(key, -2)
            j = last + 1 if (last + 1) % 2 == parity else last + 2
            if last >= 0 and last % 2 == parity and b.completed == last + 1:
                # waited on again before another phase completed: try_wait.parity reads the
                # barrier's current phase, which still says the observed one completed
                j = last
            if b.completed < j + 1 and b.init_event is not None:
                return False
            if b.completed > j + 1:  # already reported as phase_reuse; observe the latest match
                j = b.completed - 1 if (b.completed - 1) % 2 == parity else b.completed - 2
            extra = [b.phase_events[j]] if j in b.phase_events else []
            e = self._new(st, extra)
            self._barrier(key, inst, e)
            st["last_obs"][key] = j
            return True
        if k is OpKind.WAIT_GROUP:
            done = []
            while len(st["groups"]) > op.count:
                for s_event, _ in st["groups"].popleft():
                    c = self.event([s_event])
                    self.store_done[s_event] = c
                    done.append(c)
            self._new(st, done)
            return True
        e = self._new(st)
        if k is OpKind.INIT:
            for key in self.bar_keys(op.bar, inst.i):
                b = self.barriers[key]
                b.init_event, b.invalid_event = e, None
                b.pending, b.tx, b.completed = op.count or b.arrivals, 0, 0
                b.arrivals = op.count or b.arrivals
                b.uses.append((e, inst))
        elif k is OpKind.INVALIDATE:
            for key in self.bar_keys(op.bar, inst.i):
                b = self._barrier(key, inst, e)
                b.invalid_event = e
        elif k in (OpKind.EXPECT_TX, OpKind.ARRIVE, OpKind.RELEASE):
            key = self.bar_keys(op.bar, inst.i)[0]
            b = self._barrier(key, inst, e)
            if k is OpKind.EXPECT_TX:
                b.tx += op.bytes
                b.tx_insts.append(inst)
            if k is not OpKind.EXPECT_TX or op.arrive:
                n = op.count if k is OpKind.ARRIVE else 1
                if n > b.pending:
                    self.report(Code.OVER_ARRIVAL, inst, f"{op.kind.value} of {n} on {_key(key)}, whose phase "
                                f"{b.completed} expects {b.pending} more arrival(s) (init's count: {b.arrivals})")
                b.pending -= n
            b.contributors.append(e)
            self._maybe_complete(key, b, inst)
        elif k is OpKind.TMA_LOAD:
            key = self.bar_keys(op.bar, inst.i)[0]
            b = self._barrier(key, inst, e)
            done = self.event([e])
            self._fits(op, inst)
            for buf in self.buf_keys(op.buffer, inst.i):
                self.writes.setdefault(buf, []).append((e, done, inst))
            b.tx -= op.bytes
            b.tx_insts.append(inst)
            b.contributors.append(done)
            self._maybe_complete(key, b, inst)
        elif k is OpKind.CONSUME:
            for buf in self.buf_keys(op.buffer, inst.i):
                self.reads.setdefault(buf, []).append((e, inst))
        elif k is OpKind.GENERIC_WRITE:
            for buf in self.buf_keys(op.buffer, inst.i):
                self.writes.setdefault(buf, []).append((e, e, inst))
            st.setdefault("unfenced", []).append(e)
        elif k is OpKind.FENCE_PROXY_ASYNC:
            for w in st.pop("unfenced", []):
                self.fenced_by[w] = e
        elif k is OpKind.TMA_STORE:
            self._fits(op, inst)
            for buf in self.buf_keys(op.buffer, inst.i):
                self.store_reads.setdefault(buf, []).append((e, inst))
            st["group"].append((e, inst))
        elif k is OpKind.COMMIT_GROUP:
            st["groups"].append(st["group"])
            st["group"] = []
        return True

    def _fits(self, op: Op, inst: _Inst) -> None:
        """A TMA copy moves at most what its buffer element holds (when the array declares it)."""
        held = self.buf_arrays[op.buffer.name].bytes
        if held and op.bytes > held:
            self.report(Code.BUFFER_OVERFLOW, inst, f"{op.kind.value} moves {op.bytes} bytes "
                        f"{'into' if op.kind is OpKind.TMA_LOAD else 'out of'} {op.buffer.name!r}, whose elements "
                        f"hold {held} bytes: it {'writes past' if op.kind is OpKind.TMA_LOAD else 'reads past'} "
                        "the element into the next one (or past the buffer)")

    def _maybe_complete(self, key, b: _Barrier, inst: _Inst) -> None:
        if b.pending > 0 or b.tx != 0:
            return
        k = b.completed
        # Every role that still has to observe an earlier phase of this barrier misses it now.
        for name, st in getattr(self, "state", {}).items():
            nxt = self._next_wait(name, st, key)
            if nxt is None:
                continue
            last = st["last_obs"].get(key, -2)
            j = last + 1 if (last + 1) % 2 == nxt else last + 2
            if j < k:
                seen = f"phase {j}" if j >= 0 else "the phase before its first"
                self.report(Code.PHASE_REUSE, inst,
                            f"{_key(key)} completes phase {k} while {name} has not observed {seen}: "
                            f"{name}'s next parity-{nxt} wait will hang or accept the wrong phase; "
                            "re-arm a stage only after every waiter observed its previous phase "
                            "(wait for its release first)")
        b.phase_events[k] = self.event(b.contributors)
        b.completed += 1
        b.pending, b.tx, b.contributors, b.tx_insts = b.arrivals, 0, [], []

    def _next_wait(self, name: str, st: dict, key) -> int | None:
        """The parity of `name`'s next wait on barrier `key` (None if it has none left)."""
        for entry in self.waits_ahead[name][st["pc"]:]:
            if entry is not None and entry[0] == key:
                return entry[1]
        return None

    def _stall(self, blocked: dict) -> None:
        """Explain why the blocked roles cannot go on: a phase whose byte count can never reach
        zero (tx_mismatch), else a deadlock, naming the wait-for cycle (networkx) if there is
        one. Roles that only wait, directly or not, on a tx-stuck role are not reported again."""
        import networkx as nx  # only a stalled protocol needs it (and it takes 0.2 s to import)

        waitfor = nx.DiGraph()
        stuck_tx, waits = set(), {}
        for name, st in blocked.items():
            op, idx, i = self.programs[name][st["pc"]]
            key = self.bar_keys(op.bar, i)[0]
            waits[name] = (_Inst(op, name, idx, i), key)
            b = self.barriers[key]
            waitfor.add_node(name)
            if b.tx != 0 and b.tx_insts:
                stuck_tx.add(name)
                first = b.tx_insts[0]
                announced = sum(x.op.bytes for x in b.tx_insts if x.op.kind is OpKind.EXPECT_TX)
                copied = sum(x.op.bytes for x in b.tx_insts if x.op.kind is OpKind.TMA_LOAD)
                self.report(Code.TX_MISMATCH, first,
                            f"phase {b.completed} of {_key(key)}: expect_tx announced {announced} "
                            f"bytes but its copies complete {copied}; announce exactly the bytes of "
                            "the copies issued to this barrier")
            for other, ost in self.state.items():
                if any(o.kind in (OpKind.ARRIVE, OpKind.RELEASE, OpKind.EXPECT_TX, OpKind.TMA_LOAD)
                       and key in self.bar_keys(o.bar, oi)
                       for o, _, oi in self.programs[other][ost["pc"]:]):
                    waitfor.add_edge(name, other)
        roots = stuck_tx | {n for n in waits if waitfor.out_degree(n) == 0}
        for name, (inst, key) in waits.items():
            if name in stuck_tx:
                continue
            phase = self.barriers[key].completed
            if name in roots:
                why = "no remaining operation arrives on it"
            else:
                try:
                    cycle = [u for u, _ in nx.find_cycle(waitfor, name)]
                except nx.NetworkXNoCycle:
                    continue  # it waits on a role that is itself stuck: reported there
                if name not in cycle:
                    continue
                why = " -> ".join(cycle + [cycle[0]]) + " wait on each other"
            self.report(Code.DEADLOCK, inst, f"{name} waits forever on phase {phase} of {_key(key)}: {why}")

    # -- happens-before judgement ---------------------------------------------------------------
    def _judge(self) -> None:
        desc: list[int] | None = None
        for buf, reads in self.reads.items():
            writes = self.writes.get(buf, [])
            # with bitsets: a read sees a complete write when some write's completion is among
            # its ancestors; a write races a read it does not follow unless the read follows
            # the write's completion. Reported in the order of (read, write) pairs.
            done_mask = 0
            for _, done, _ in writes:
                done_mask |= 1 << done
            found: list[tuple[int, int, _Inst, _Inst | None]] = []
            seen_mask, first_read = 0, {}
            latest, wk = None, 0  # the write issued last before the read (writes and reads run in event order)
            for pos, (r, rinst) in enumerate(reads):
                while wk < len(writes) and writes[wk][0] < r:
                    latest, wk = writes[wk], wk + 1
                if not (self.anc[r] | (1 << r)) & done_mask:
                    found.append((pos, -1, rinst, None))
                    continue
                if latest is not None and _reads_its_copy(latest[2], rinst) and not self.anc[r] >> latest[1] & 1:
                    # the copy of its own generation, issued last, not waited for: an older
                    # completed copy does not make the read safe (it reads the one in flight)
                    found.append((pos, -1, rinst, None))
                    continue
                seen_mask |= 1 << r
                first_read.setdefault(r, (pos, rinst))
            if seen_mask and writes:
                desc = desc if desc is not None else self.descendants()
                for wpos, (w, done, winst) in enumerate(writes):
                    if self.known(Code.OVERWRITE_BEFORE_RELEASE, winst):
                        continue
                    racing = seen_mask & ~(self.anc[w] | (1 << w)) & ~(desc[done] | (1 << done))
                    if racing:
                        pos, rinst = first_read[(racing & -racing).bit_length() - 1]
                        found.append((pos, wpos, rinst, winst))
            for _, _, rinst, winst in sorted(found, key=lambda f: (f[0], f[1])):
                if winst is None:
                    self.report(Code.USE_BEFORE_COMPLETE, rinst,
                                f"{rinst.role} reads {_key(buf)} before any copy into it is known "
                                "complete; wait on the copy's barrier phase first")
                else:
                    self.report(Code.OVERWRITE_BEFORE_RELEASE, winst,
                                f"{winst.role} writes {_key(buf)} while {rinst.role} may still read "
                                f"its previous contents (iteration {rinst.i}); wait for the "
                                "consumer's release before reusing the stage")
        for buf, writes in self.writes.items():
            # a shared-memory store and a copy into one buffer, the later not after the earlier is
            # complete (two TMA loads in flight into one stage are its boxes: disjoint parts)
            copy_before = generic_before = 0  # completions of earlier copies / shared-memory stores
            for w, done, winst in writes:
                generic = winst.op.kind is OpKind.GENERIC_WRITE
                # (two stores, like two copies, may write disjoint parts: only a store against a copy races)
                racing = (copy_before if generic else generic_before) & ~self.anc[w] & ~(1 << w)
                if racing and not self.known(Code.OVERWRITE_BEFORE_RELEASE, winst):
                    other = next(x for x in writes if x[1] == (racing & -racing).bit_length() - 1)
                    what = "copy" if generic else "shared-memory store"  # the other side is the other kind
                    self.report(Code.OVERWRITE_BEFORE_RELEASE, winst,
                                f"{winst.role} writes {_key(buf)} while the {what} of {other[2].role} "
                                f"(iteration {other[2].i}) into it may still be in flight; order the two (the copy's "
                                "barrier phase, or the store's fence and arrival) before writing the stage again")
                if generic:
                    generic_before |= 1 << done
                else:
                    copy_before |= 1 << done
        for buf, stores in self.store_reads.items():
            # with bitsets, as the reads: each hb test of two events shifts an ancestor set as
            # long as the run, and pairing every store with every write did so millions of times
            writes = self.writes.get(buf, [])
            by_done = {done: (w, winst) for w, done, winst in writes}  # done ids rise with w
            by_write = {w: winst for w, _, winst in writes}
            done_mask = write_mask = 0
            groups: dict[tuple[str, int], int] = {}  # writes of one operation (reported once)
            for w, done, winst in writes:
                done_mask |= 1 << done
                write_mask |= 1 << w
                groups[(winst.role, winst.op_index)] = groups.get((winst.role, winst.op_index), 0) | 1 << w
            reported = 0
            for s, sinst in stores:
                seen = self.anc[s] & done_mask
                if not seen:
                    self.report(Code.USE_BEFORE_COMPLETE, sinst,
                                f"TMA store reads {_key(buf)} before anything written to it is complete")
                else:
                    w, winst = by_done[seen.bit_length() - 1]  # the latest write complete before it
                    if winst.op.kind is OpKind.GENERIC_WRITE:
                        f = self.fenced_by.get(w)
                        if f is None or not self.hb(f, s):
                            self.report(Code.MISSING_PROXY_FENCE, sinst,
                                        f"the TMA store reads {_key(buf)} written through the generic "
                                        "proxy without fence.proxy.async in between; fence after the "
                                        "shared-memory store")
                done = self.store_done.get(s)
                racing = (write_mask >> (s + 1) << (s + 1)) & ~reported  # the writes issued after it
                if done is not None and racing:
                    desc = desc if desc is not None else self.descendants()
                    racing &= ~desc[done]
                while racing:
                    winst = by_write[(racing & -racing).bit_length() - 1]
                    group = groups[(winst.role, winst.op_index)]
                    racing &= ~group
                    reported |= group
                    if not self.known(Code.STORE_REUSE_BEFORE_WAIT, winst):
                        self.report(Code.STORE_REUSE_BEFORE_WAIT, winst,
                                    f"{winst.role} overwrites {_key(buf)} while the TMA store of "
                                    f"iteration {sinst.i} may still read it; wait_group first")
        for key, b in self.barriers.items():
            if b.invalid_event is None:
                continue
            for e, inst in b.uses:
                if e != b.invalid_event and not self.hb(e, b.invalid_event) \
                        and inst.op.kind is not OpKind.INVALIDATE:
                    self.report(Code.USE_AFTER_INVALIDATE, inst,
                                f"{_key(key)} is used concurrently with or after mbarrier.invalidate")
            if b.init_event is not None:
                for e, inst in b.uses:
                    if not self.hb(b.init_event, e):
                        self.report(Code.BARRIER_UNINITIALIZED, inst,
                                    f"{_key(key)} may be used before its mbarrier.init is visible")


def _fresh_state(last: int | None = None) -> dict:
    """Execution state of one role: program counter, last event, last observed phase per
    barrier, the open store group and the committed ones."""
    return {"pc": 0, "last": last, "last_obs": {}, "group": [], "groups": deque()}


def _slots(slot: Slot, count: int, i: int) -> range | list[int]:
    if slot.all_slots:
        return range(count)
    if slot.fixed is not None:
        return [slot.fixed % count]
    return [(i + slot.shift) % count]


def _reads_its_copy(winst: _Inst, rinst: _Inst) -> bool:
    """Whether a write carries the data a read means to read: the same generation of the
    stage, `i + shift` (a load S ahead carries iteration i + S's data; a consume of shift 0
    reads iteration i's)."""
    return _generation(winst) == _generation(rinst)


def _generation(inst: _Inst) -> int:
    slot = inst.op.buffer
    return inst.i + (slot.shift if slot is not None and slot.fixed is None and not slot.all_slots else 0)


def _key(key) -> str:
    return f"{key[0]}[{key[1]}]"


def _ref(inst: _Inst) -> str:
    return f"{inst.op.buffer.name if inst.op.buffer else '?'} (iteration {inst.i})"


def trip_count_range(proto: Protocol) -> range:
    """The trip counts checked, lazily (the lcm of coprime stage counts is large): the
    declared one, or 0 .. 2*period + the largest constant + 1, where the period is the lcm of
    the stage counts and the parity periods, and the constants are every shift (slots,
    parities) and every constant term of a block's count and start and of a guard: that
    covers every (stage, parity) pair in steady state, every short-loop case, and every
    iteration a guard or a block's bounds single out (a wait skipped from i = 10 on was never
    reached by the bound of the shifts alone, and a racy pipeline was answered ok)."""
    if proto.iterations is not None:
        return range(proto.iterations, proto.iterations + 1)
    ops = [op for r in proto.roles for op in r.ops()]
    periods = [a.count for a in proto.barriers] + [a.count for a in proto.buffers] + [
        op.phase.period for op in ops if op.phase is not None and op.phase.period]
    affines = [a for r in proto.roles for b in r.blocks for a in (b.count, b.start)] + [
        g for op in ops if op.when is not None for g in (op.when.i_ge, op.when.i_lt) if g is not None]
    constants = ([abs(s.shift) for op in ops for s in (op.bar, op.buffer) if s is not None]
                 + [abs(op.phase.shift) for op in ops if op.phase is not None] + [abs(a.c) for a in affines])
    return range(0, 2 * math.lcm(*periods or [1]) + max(constants, default=0) + 2)


def trip_counts(proto: Protocol) -> tuple[int, ...]:
    """`trip_count_range` as a tuple. Invariant: the parser bounded its length."""
    return tuple(trip_count_range(proto))


def verify_protocol(proto: Protocol) -> ProtocolVerdict:
    """Every violation of `proto`, first occurrence per (rule, role, op), over the trip counts
    of `trip_counts(proto)`. Invariant: the protocol is structurally valid (names resolve,
    waits have a phase, ...): the parser (legalsat.schemas.protocol) guarantees it."""
    seen: dict[tuple, ProtocolDiagnostic] = {}
    trips = trip_counts(proto)
    for n in trips:
        run = _Run(proto, n)
        run.run()
        for v in run.violations:
            seen.setdefault((v.id, v.role, v.op_index), v)
    return ProtocolVerdict(tuple(seen.values()), trips)
