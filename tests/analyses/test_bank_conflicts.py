"""The bank model: exact against Nsight Compute on the H100 (replayed corpus), the measured
sm90 phase rules as unit examples, and the gfx942 examples of AMD's documentation."""

from __future__ import annotations

import collections
import gzip
import json
import os

from conftest import DATA

from legalsat.analyses.bank_conflicts import analyze_access
from legalsat.targets import GFX942, SM90
from legalsat.terms.descriptor import Swizzle
from legalsat.terms.smem import MemOp, SharedAccess

LD, ST = MemOp.LOAD, MemOp.STORE


def wf(op, width, addrs, target=SM90):
    return analyze_access(SharedAccess(op, width, tuple(addrs)), target).wavefronts


def test_model_matches_ncu_on_every_measured_instruction():
    per_kind = collections.Counter()
    misses = []
    with gzip.open(os.path.join(DATA, "bank_sm90_ncu.jsonl.gz"), "rt") as f:
        for line in f:
            r = json.loads(line)
            op = LD if r["op"] == "ld" else ST
            got = wf(op, r["access_bytes"], r["addresses"])
            per_kind[(r["op"], r["access_bytes"])] += 1
            if got != r["ncu_wavefronts"]:
                misses.append((r, got))
    assert sum(per_kind.values()) >= 500
    assert set(per_kind) == {(o, w) for o in ("ld", "st") for w in (4, 8, 16)}
    assert not misses, misses[:5]


def test_four_byte_accesses_count_distinct_words_per_bank():
    assert wf(LD, 4, [4 * i for i in range(32)]) == 1
    assert wf(LD, 4, [128 * i for i in range(32)]) == 32
    assert wf(ST, 4, [8 * i for i in range(32)]) == 2
    assert wf(LD, 4, [0] * 32) == 1  # broadcast
    assert wf(ST, 4, [(i % 2) * 128 for i in range(32)]) == 2  # identical words merge on stores too


def test_wide_accesses_are_served_in_128_byte_phases():
    assert wf(ST, 8, [8 * i for i in range(32)]) == 2
    assert wf(ST, 16, [16 * i for i in range(32)]) == 4
    # lanes 0 and 8 collide in bank 0 only if they are in the same 16-byte phase
    offs = [16 * i for i in range(32)]
    offs[1] = 1024
    assert wf(ST, 16, offs) == 5


def test_loads_fuse_phases_when_lanes_pair_up():
    assert wf(LD, 8, [64] * 32) == 1 and wf(ST, 8, [64] * 32) == 2
    assert wf(LD, 16, [64] * 32) == 2 and wf(ST, 16, [64] * 32) == 4
    alternating = [(i % 2) * 128 for i in range(32)]  # lane^2 pairs agree
    assert wf(LD, 16, alternating) == 4 and wf(ST, 16, alternating) == 8
    cycle4 = [(i % 4) * 128 for i in range(32)]  # neither lane^1 nor lane^2 pairs agree
    assert wf(LD, 16, cycle4) == 16
    one_odd_lane = [0] * 32
    one_odd_lane[0] = 16
    assert wf(LD, 16, one_odd_lane) == 4  # a single disagreeing lane disables the fusion


def test_inactive_lanes_cost_nothing():
    assert wf(LD, 16, [None] * 32) == 0
    assert wf(ST, 16, [0] + [None] * 31) == 1
    report = analyze_access(SharedAccess(LD, 16, tuple([16 * i if i < 8 else None for i in range(32)])), SM90)
    assert (report.wavefronts, report.ideal_wavefronts) == (1, 1)


# gfx942: AMD Composable Kernel documentation, "Understanding AMD GPU LDS and Bank Conflicts".

def _mfma_read_addresses(row_pitch: int, swizzle_rows: bool) -> list[int]:
    """The documented vertical read: lane l reads 16 bytes of row l % 16 at k-chunk l // 16
    (a 64 x fp16 = 128-byte row), optionally with the documented XOR preshuffle."""
    out = []
    for lane in range(64):
        row, chunk = lane % 16, lane // 16
        if swizzle_rows:
            chunk = (row % 8) ^ chunk
        out.append(row * row_pitch + chunk * 16)
    return out


def test_gfx942_consecutive_b128_writes_are_conflict_free():
    r = analyze_access(SharedAccess(ST, 16, tuple(16 * i for i in range(64))), GFX942)
    assert (r.wavefronts, r.ideal_wavefronts) == (8, 8)
    assert [p.lanes for p in r.phases][0] == tuple(range(8))


def test_gfx942_b128_read_phases_follow_the_documented_lane_groups():
    r = analyze_access(SharedAccess(LD, 16, tuple(16 * i for i in range(64))), GFX942)
    assert r.phases[0].lanes == (0, 1, 2, 3, 20, 21, 22, 23)
    assert r.phases[5].lanes == (36, 37, 38, 39, 48, 49, 50, 51)


def test_gfx942_documented_mfma_read_has_4_way_conflicts_and_xor_removes_them():
    plain = analyze_access(SharedAccess(LD, 16, tuple(_mfma_read_addresses(128, False))), GFX942)
    assert plain.conflict_ways == 4.0  # "4-way bank conflicts in every phase"
    assert all(p.wavefronts == 4 for p in plain.phases)
    xor = analyze_access(SharedAccess(LD, 16, tuple(_mfma_read_addresses(128, True))), GFX942)
    assert xor.conflict_ways == 1.0  # XOR preshuffle: conflict-free


def test_gfx942_write_and_read_group_lanes_differently():
    # Lanes 0-15 read chunks 0-3 of rows 0-3 (a quad per row); lanes 16-31 chunks 4-7.
    # Write phases (8 consecutive lanes) hold two rows of the same banks: 2-way.
    # Read phases pair a quad of 0-15 with a quad of 16-31: disjoint banks, conflict-free.
    addrs = []
    for i in range(64):
        j = i % 32
        row, half = (j % 16) // 4, j // 16
        addrs.append((i // 32) * 4096 + row * 128 + half * 64 + (j % 4) * 16)
    write = analyze_access(SharedAccess(ST, 16, tuple(addrs)), GFX942)
    read = analyze_access(SharedAccess(LD, 16, tuple(addrs)), GFX942)
    assert write.conflict_ways == 2.0
    assert read.conflict_ways == 1.0


def test_swizzle_matches_tma_definition():
    # 128B: chunk bits 4..6 XOR row bits 7..9
    assert Swizzle.B128.apply(1 * 128 + 0) == 128 + 16
    assert Swizzle.B128.apply(7 * 128 + 7 * 16) == 7 * 128
    assert Swizzle.B32.apply(3 * 128 + 16) == 3 * 128 + 0
    assert Swizzle.NONE.apply(5 * 128 + 48) == 5 * 128 + 48
