"""Shared-memory bank conflicts: how many wavefronts (passes) one warp instruction takes.

The cost of a set of lanes is the largest number of distinct 4-byte words any one bank must
deliver to them (identical words are broadcast for free). What differs between targets is
which lanes share a pass:

sm90 (measured with Nsight Compute on an H100; corpus in tests/data/bank_sm90_ncu.jsonl.gz):
- 4-byte accesses: the whole warp is one phase.
- 8- and 16-byte accesses: phases of 128 bytes of lanes (half-warps for 8 B, quarter-warps
  for 16 B), each costing at least one pass when it has an active lane.
- loads only: when lanes come in pairs asking for the same address (every active lane
  agrees with its active partner under lane^1, or under lane^2: one choice for the whole
  warp), neighbouring phases are fused two by two (8 B: the whole warp; 16 B: half-warps),
  so a broadcast or pairwise-duplicated load takes half the passes.

gfx942 (AMD Composable Kernel documentation, "Understanding AMD GPU LDS and Bank Conflicts"):
- ds_write_b128: eight phases of eight consecutive lanes;
- ds_read_b128: eight phases 0:3+20:23, 4:7+16:19, 8:11+28:31, 12:15+24:27 and the same
  plus 32 for the upper half-wave;
- 4- and 8-byte accesses: phases of 128 bytes of consecutive lanes (32 and 16 lanes): the
  documented 128-bytes-per-phase principle, not separately documented per instruction.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from legalsat.targets import Target
from legalsat.terms.smem import MemOp, SharedAccess


@dataclass(frozen=True)
class Phase:
    """A group of lanes served together, and the passes it took."""

    lanes: tuple[int, ...]
    wavefronts: int


@dataclass(frozen=True)
class BankReport:
    """Invariant: wavefronts == sum(p.wavefronts for p in phases); ideal_wavefronts counts
    the phases with an active lane (what a conflict-free access with the same lanes takes)."""

    wavefronts: int
    ideal_wavefronts: int
    phases: tuple[Phase, ...]

    @property
    def conflict_ways(self) -> float:
        return self.wavefronts / self.ideal_wavefronts if self.ideal_wavefronts else 1.0



def phase_cost(addresses: tuple[int | None, ...], lanes: tuple[int, ...], access_bytes: int,
               banks: int, bank_bytes: int) -> int:
    """Max over banks of the distinct words the active `lanes` need from it (0 if none)."""
    per_bank: dict[int, set[int]] = {}
    words = access_bytes // bank_bytes
    for lane in lanes:
        a = addresses[lane]
        if a is None:
            continue
        w0 = a // bank_bytes
        for w in range(w0, w0 + words):
            per_bank.setdefault(w % banks, set()).add(w)
    return max((len(s) for s in per_bank.values()), default=0)


def _consecutive(lanes: int, size: int) -> list[tuple[int, ...]]:
    return [tuple(range(s, s + size)) for s in range(0, lanes, size)]


def _pairs_agree(addresses: tuple[int | None, ...], mask: int) -> bool:
    for i, a in enumerate(addresses):
        if a is None:
            continue
        b = addresses[i ^ mask]
        if b is not None and b != a:
            return False
    return True


def _sm90_phases(access: SharedAccess) -> list[tuple[int, ...]]:
    w = access.access_bytes
    if w == 4:
        return [tuple(range(32))]
    size = 128 // w
    if access.op is MemOp.LOAD and (_pairs_agree(access.addresses, 1)
                                    or _pairs_agree(access.addresses, 2)):
        size *= 2
    return _consecutive(32, size)


_GFX942_READ_B128 = [tuple(range(a, a + 4)) + tuple(range(b, b + 4)) for a, b in
                     ((0, 20), (4, 16), (8, 28), (12, 24), (32, 52), (36, 48), (40, 60), (44, 56))]


def _gfx942_phases(access: SharedAccess) -> list[tuple[int, ...]]:
    w = access.access_bytes
    if w == 16 and access.op is MemOp.LOAD:
        return list(_GFX942_READ_B128)
    return _consecutive(64, 128 // w)


_PHASES = {"sm90": _sm90_phases, "sm100": _sm90_phases, "gfx942": _gfx942_phases}


def analyze_access(access: SharedAccess, target: Target) -> BankReport:
    """Wavefronts for one warp instruction on `target`.

    Invariant: `access` satisfies SharedAccess's invariants for this target (the parsers
    check lane count and alignment).
    """
    # moving every address by whole bank rows (banks x bank bytes) changes no bank and no
    # pairing: instructions of a tile walk that differ so are analysed once
    row = target.banks.banks * target.banks.bank_bytes
    active = [a for a in access.addresses if a is not None]
    base = min(active) // row * row if active else 0
    return _analyze(SharedAccess(access.op, access.access_bytes,
                                 tuple(None if a is None else a - base for a in access.addresses)), target)


@functools.lru_cache(maxsize=4096)  # a few MB: the shapes a tile walk repeats, not every request's
def _analyze(access: SharedAccess, target: Target) -> BankReport:
    b = target.banks
    phases = []
    total = ideal = 0
    for lanes in _PHASES[target.name](access):
        cost = phase_cost(access.addresses, lanes, access.access_bytes, b.banks, b.bank_bytes)
        active = tuple(lane for lane in lanes if access.addresses[lane] is not None)
        phases.append(Phase(active, cost))
        total += cost
        ideal += 1 if active else 0
    return BankReport(total, ideal, tuple(phases))
