"""Measure shared-memory wavefronts per warp instruction with Nsight Compute (GPU machine).

    python -m tools.bank_probe --out DIR [--seed 7] [--batch 400] [--limit N]

Builds the corpus (`corpus(seed)`: strides, padded pitches, TMA-swizzled tile rows and
columns, ldmatrix-style 8x16-byte row groups, broadcasts, partial masks, random offsets;
4-, 8- and 16-byte accesses; loads and stores), compiles tools/bank_probe.cu with nvcc for
sm_90, runs it under `ncu --clock-control none` in batches (one kernel launch per case,
exactly one shared-memory instruction per launch), and writes DIR/bank_measured.jsonl:
one line per case with its op, width, 32 lane offsets (null = inactive) and the measured
counters. The first cases are `nop` launches: the counters' baseline, which must be zero.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
METRICS = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__inst_executed_op_shared_ld.sum",
    "smsp__inst_executed_op_shared_st.sum",
)
SMEM = 48 * 1024
SWIZZLE_SPAN = {"none": 0, "32B": 32, "64B": 64, "128B": 128}


def swizzle(offset: int, mode: str) -> int:
    """TMA swizzle of a byte offset in a tile whose rows are 128-byte aligned.

    The 16-byte chunk index (bits 4..6) is XORed with the row-of-span bits: for span S
    (32/64/128) the chunk bits inside S are XORed with (offset // 128) mod (S // 16).
    """
    span = SWIZZLE_SPAN[mode]
    if not span:
        return offset
    chunks = span // 16
    chunk = (offset >> 4) & (chunks - 1)
    row = (offset >> 7) & (chunks - 1)
    return (offset & ~((chunks - 1) << 4)) | ((chunk ^ row) << 4)


def _case(family: str, op: str, width: int, offs: list[int | None]) -> dict:
    return {"family": family, "op": op, "access_bytes": width, "addresses": offs}


def corpus(seed: int) -> list[dict]:
    """The measured corpus: deterministic in `seed`, every offset aligned to its width."""
    rng = random.Random(seed)
    cases: list[dict] = []
    ops = ("ld", "st")
    for w in (4, 8, 16):
        for op in ops:
            # 1. plain strides (in units of the width and in odd byte multiples)
            for k in list(range(0, 34)) + [40, 48, 63, 64, 65, 96, 127, 128, 129, 256]:
                stride = k * w
                if 31 * stride + w <= SMEM:
                    cases.append(_case("stride", op, w, [lane * stride for lane in range(32)]))
            for base in (w, 2 * w, 16, 64, 128, 1000 // w * w):
                cases.append(_case("stride_base", op, w, [base + lane * w for lane in range(32)]))
            # 2. padded pitches: lanes over a row-major tile, k lanes per row
            for per_row in (1, 2, 4, 8, 16):
                for pitch in (128, 132, 136, 144, 160, 256, 264, 272, 512, 516, 528):
                    if pitch % w:
                        continue
                    offs = [(lane // per_row) * pitch + (lane % per_row) * w for lane in range(32)]
                    if max(offs) + w <= SMEM:
                        cases.append(_case("pitch", op, w, offs))
            # 3. TMA-swizzled 128-byte-row tiles: lanes read along a row or down a column
            for mode in ("none", "32B", "64B", "128B"):
                for col in (0, 16, 48, 112):
                    cases.append(_case(f"swz_col_{mode}", op, w,
                                       [swizzle(lane * 128 + col + 0, mode) for lane in range(32)]))
                for start_row in (0, 3):
                    offs = [swizzle(start_row * 128 + (lane * w) // 128 * 128 + (lane * w) % 128, mode)
                            for lane in range(32)]
                    cases.append(_case(f"swz_row_{mode}", op, w, offs))
                # 8 rows x 4 lanes (the mma fragment shape)
                offs = [swizzle((lane // 4) * 128 + (lane % 4) * w, mode) for lane in range(32)]
                cases.append(_case(f"swz_frag_{mode}", op, w, offs))
            # 4. ldmatrix-style: each group of 8 lanes addresses 8 rows of 16 bytes
            for pitch in (16, 32, 64, 128, 144, 256, 272):
                for mode in ("none", "128B", "64B"):
                    offs = [swizzle((lane % 8) * pitch + (lane // 8) * 8 * pitch, mode)
                            for lane in range(32)]
                    offs = [o - o % w for o in offs]
                    if max(offs) + w <= SMEM:
                        cases.append(_case(f"ldmatrix_{mode}", op, w, offs))
            # 5. broadcasts and duplicates
            cases.append(_case("broadcast_all", op, w, [64] * 32))
            for group in (2, 4, 8, 16):
                cases.append(_case(f"broadcast_groups{group}", op, w,
                                   [(lane // group) * w for lane in range(32)]))
                cases.append(_case(f"broadcast_groups{group}_strided", op, w,
                                   [(lane // group) * 128 for lane in range(32)]))
                cases.append(_case(f"dup_mod{group}", op, w,
                                   [(lane % group) * 128 for lane in range(32)]))
            for _ in range(6):
                pool = [rng.randrange(0, 2048 // w) * w for _ in range(rng.choice((1, 2, 3, 5, 8)))]
                cases.append(_case("broadcast_random", op, w, [rng.choice(pool) for _ in range(32)]))
            if w < 16:
                # same 16-byte chunk, different words: sub-word / intra-chunk sharing
                cases.append(_case("same_chunk", op, w, [(lane * w) % 16 for lane in range(32)]))
                cases.append(_case("same_8B", op, w, [(lane * w) % 8 for lane in range(32)]))
            # 6. partial masks over several base patterns
            for pattern in ("unit", "stride128", "stride_w2"):
                for _ in range(5):
                    keep = rng.random()
                    offs = []
                    for lane in range(32):
                        if pattern == "unit":
                            o = lane * w
                        elif pattern == "stride128":
                            o = lane * 128
                        else:
                            o = lane * 2 * w
                        offs.append(o if rng.random() < keep else None)
                    cases.append(_case(f"mask_{pattern}", op, w, offs))
            cases.append(_case("mask_none", op, w, [None] * 32))
            for active in ((0,), (31,), (0, 16), (0, 8, 16, 24), tuple(range(8)), tuple(range(16, 32))):
                cases.append(_case("mask_fixed", op, w,
                                   [lane * 128 if lane in active else None for lane in range(32)]))
            # 7. random offsets in small and large windows, some with masks
            for window in (256, 1024, 4096, SMEM):
                for _ in range(10):
                    offs = [rng.randrange(0, window // w) * w for _ in range(32)]
                    if rng.random() < 0.3:
                        offs = [o if rng.random() < 0.7 else None for o in offs]
                    cases.append(_case(f"random_{window}", op, w, offs))
            # 8. which lanes share a pass: two lanes (or two lane groups) on one bank
            if w > 4:
                for a_lane in (0, 1, 3, 7, 8, 15, 16, 24):
                    for b_lane in (1, 2, 4, 8, 9, 15, 16, 17, 23, 24, 31):
                        if b_lane <= a_lane:
                            continue
                        offs = [lane * w for lane in range(32)]
                        offs[b_lane] = offs[a_lane] + 1024  # same bank(s), other row
                        cases.append(_case("pair_conflict", op, w, offs))
                for group in (2, 4, 8, 16):
                    offs = [(lane % group) * w + (lane // group) * 512 for lane in range(32)]
                    cases.append(_case(f"group_rows{group}", op, w, offs))
            for _ in range(20 if w > 4 else 5):
                window = rng.choice((256, 512, 1024))
                offs = [rng.randrange(0, window // w) * w for _ in range(32)]
                cases.append(_case("random_dense", op, w, offs))
            # 9. permutations of a conflict-free pattern
            for _ in range(5):
                perm = list(range(32))
                rng.shuffle(perm)
                cases.append(_case("permuted_unit", op, w, [perm[lane] * w for lane in range(32)]))
    cases += phase_study(rng)
    cases += pair_rule_study(rng)
    cases += structured_cases()
    # de-duplicate (op, width, addresses), keep the first family name
    seen, out = set(), []
    for c in cases:
        key = (c["op"], c["access_bytes"], tuple(c["addresses"]))
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def phase_study(rng: random.Random) -> list[dict]:
    """Cases that separate hypotheses about which lanes share a pass and when duplicates merge.

    Two (or a few) distinct addresses spread over the lanes in structured and random ways,
    with the addresses chosen in one 16-byte chunk, one 128-byte row, one bank, or apart;
    and growing prefixes of active lanes, conflict-free, conflicting and broadcast.
    """
    cases: list[dict] = []
    quarter = [set(range(q * 8, q * 8 + 8)) for q in range(4)]
    for w in (4, 8, 16):
        pairs = [(0, 64), (0, 128), (0, 1024), (32, 1120), (1248, 1760)]
        if w < 16:
            pairs.insert(0, (0, 8))
        for op in ("ld", "st"):
            for a, b in pairs:
                subsets = [set(range(k)) for k in (1, 2, 4, 8, 12, 16, 20, 24, 31)]
                subsets += [{lane for lane in range(32) if lane >> bit & 1} for bit in range(5)]
                subsets += quarter + [quarter[0] | quarter[1], quarter[0] | quarter[2],
                                      quarter[1] | quarter[3], quarter[0] | quarter[3]]
                subsets += [{lane for lane in range(32) if rng.random() < 0.5} for _ in range(8)]
                for sub in subsets:
                    cases.append(_case("pair_pattern", op, w,
                                       [b if lane in sub else a for lane in range(32)]))
            for k in (3, 4):
                for spread in ("row", "bank", "apart"):
                    if spread == "row":
                        addrs = [i * 16 for i in range(k)]
                    elif spread == "bank":
                        addrs = [i * 128 for i in range(k)]
                    else:
                        addrs = [rng.randrange(0, 4096 // w) * w for _ in range(k)]
                    for layout in ("mod", "div8", "random", "random"):
                        if layout == "mod":
                            offs = [addrs[lane % k] for lane in range(32)]
                        elif layout == "div8":
                            offs = [addrs[(lane // 8) % k] for lane in range(32)]
                        else:
                            offs = [rng.choice(addrs) for _ in range(32)]
                        cases.append(_case(f"multi_{spread}", op, w, offs))
            for k in range(1, 33):
                cases.append(_case("prefix_unit", op, w, [lane * w if lane < k else None for lane in range(32)]))
                cases.append(_case("prefix_bank", op, w, [lane * 128 if lane < k else None for lane in range(32)]))
                cases.append(_case("prefix_same", op, w, [64 if lane < k else None for lane in range(32)]))
    return cases


def pair_rule_study(rng: random.Random) -> list[dict]:
    """Loads and stores whose lanes agree pairwise (lane^m) or almost do: they separate the
    candidate rules for when an 8- or 16-byte load fuses its phases."""
    cases: list[dict] = []
    for w in (8, 16):
        for op in ("ld", "st"):
            # patterns that discriminate between near-equivalent rules
            def quad(f, w=w):
                return [w * f(i) for i in range(32)]

            cases.append(_case("pair_xor2_distinct", op, w, quad(lambda i: 2 * (i // 4) + (i & 1))))
            cases.append(_case("pair_halves_mixed", op, w,
                               [w * (i // 2) if i < 16 else 8 * w + w * (2 * ((i - 16) // 4) + (i & 1))
                                for i in range(32)]))
            cases.append(_case("pair_xor3", op, w, quad(lambda i: 2 * (i // 4) + ((i ^ (i >> 1)) & 1))))
            cases.append(_case("pair_quads_alternate", op, w, quad(
                lambda i: 2 * (i // 4) + (((i >> 1) & 1) if (i // 4) % 2 == 0 else (i & 1)))))
            cases.append(_case("pair_even_only", op, w, [w * (i // 2) if i % 2 == 0 else None
                                                          for i in range(32)]))
            perm = list(range(16))
            rng.shuffle(perm)
            cases.append(_case("pair_xor1_permuted", op, w, [w * perm[i // 2] for i in range(32)]))
            cases.append(_case("pair_xor1_permuted_conflict", op, w,
                               [w * (perm[i // 2] % 8) + 1024 * (perm[i // 2] // 8) for i in range(32)]))
            cases.append(_case("pair_abab_masked", op, w,
                               [None if i == 5 else (0 if i % 2 == 0 else 128) for i in range(32)]))
            # random pair-symmetric patterns, some perturbed in one lane, some masked
            for _ in range(24):
                m = rng.choice((1, 2, 3, 4, 8))
                span = rng.choice((256, 1024, 4096))
                base = [None] * 32
                for i in range(32):
                    if base[i] is None:
                        a = rng.randrange(0, span // w) * w
                        base[i] = a
                        base[i ^ m] = a
                if rng.random() < 0.3:
                    base[rng.randrange(32)] = rng.randrange(0, span // w) * w
                if rng.random() < 0.3:
                    for i in range(32):
                        if rng.random() < 0.25:
                            base[i] = None
                cases.append(_case(f"pair_random_xor{m}", op, w, base))
    return cases


def structured_cases() -> list[dict]:
    """The first instructions of structured tile walks (what the planner asks about), so
    the raw model is measured on exactly the addresses the structured form produces."""
    from legalsat.analyses.smem_layout import reduce_tile_access
    from legalsat.diagnostics import InputError
    from legalsat.targets import SM90
    from legalsat.terms.dtypes import dtype
    from legalsat.terms.smem import TILE_SWIZZLES, MemOp, SmemTile, TileAccess, WarpPattern

    cases: list[dict] = []
    for dt, cols in (("bfloat16", 64), ("float32", 32), ("uint8", 128), ("bfloat16", 128)):
        d = dtype(dt)
        row = cols * d.storage_bits // 8
        for pad in (0, 4, 8, 16, 128):
            for sw in TILE_SWIZZLES:
                for pattern in WarpPattern:
                    for vbytes in (4, 8, 16):
                        for op in (MemOp.LOAD, MemOp.STORE):
                            tile = SmemTile(d, 32, cols, row + pad, sw)
                            x = TileAccess(tile, pattern, vbytes * 8 // d.storage_bits, op)
                            try:
                                insts = reduce_tile_access(x, SM90)
                            except InputError:
                                continue
                            for a in insts[:2]:
                                cases.append(_case(f"tile_{pattern.value}_{sw.value}",
                                                   "ld" if op is MemOp.LOAD else "st",
                                                   a.access_bytes, list(a.addresses)))
    return [c for c in cases if max(o for o in c["addresses"] if o is not None) + 16 <= SMEM]


def _cases_text(cases: list[dict], baseline: int) -> str:
    lines = ["nop"] * baseline
    for c in cases:
        offs = " ".join(str(-1 if o is None else o) for o in c["addresses"])
        lines.append(f"{c['op']} {c['access_bytes']} {offs}")
    return "\n".join(lines) + "\n"


def _parse_ncu_csv(text: str) -> list[dict]:
    rows = [ln for ln in text.splitlines() if ln.startswith('"')]
    reader = list(csv.reader(io.StringIO("\n".join(rows))))
    if not reader:
        return []
    header = reader[0]
    out = []
    for r in reader[1:]:
        rec = dict(zip(header, r))
        if not rec.get("ID", "").isdigit():
            continue  # the units row
        out.append(rec)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--batch", type=int, default=400)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--time-budget", type=float, default=420.0)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    cases = corpus(a.seed)
    if a.limit:
        cases = cases[: a.limit]
    exe = os.path.join(a.out, "bank_probe")
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-std=c++17", "-o", exe,
                    os.path.join(HERE, "bank_probe.cu")], check=True)
    sass = subprocess.run(["cuobjdump", "-sass", exe], capture_output=True, text=True).stdout
    with open(os.path.join(a.out, "bank_probe.sass"), "w") as f:
        f.write(sass)
    t0 = time.time()
    results_path = os.path.join(a.out, "bank_measured.jsonl")
    done = 0
    with open(results_path, "w") as res:
        for start in range(0, len(cases), a.batch):
            if time.time() - t0 > a.time_budget:
                print(f"time budget reached after {done} cases", file=sys.stderr)
                break
            batch = cases[start:start + a.batch]
            baseline = 2 if start == 0 else 0
            path = os.path.join(a.out, "cases.txt")
            with open(path, "w") as f:
                f.write(_cases_text(batch, baseline))
            cmd = ["ncu", "--clock-control", "none", "--cache-control", "none", "--csv",
                   "--page", "raw", "--print-summary", "none", "-k", "regex:probe|nop",
                   "--metrics", ",".join(METRICS), exe, path]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(p.stdout[-3000:], p.stderr[-3000:], file=sys.stderr)
                return 1
            rows = _parse_ncu_csv(p.stdout)
            if len(rows) != len(batch) + baseline:
                print(f"expected {len(batch) + baseline} kernels, ncu reported {len(rows)}",
                      p.stdout[-2000:], file=sys.stderr)
                return 1
            for i, row in enumerate(rows):
                measured = {m: int(float(row[m].replace(",", ""))) for m in METRICS}
                if i < baseline:
                    rec = {"family": "nop", "measured": measured}
                else:
                    rec = dict(batch[i - baseline], measured=measured)
                res.write(json.dumps(rec) + "\n")
            done += len(batch)
            print(f"{done}/{len(cases)} cases, {time.time() - t0:.0f}s", file=sys.stderr)
    print(json.dumps({"cases": len(cases), "measured": done, "seconds": round(time.time() - t0, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
