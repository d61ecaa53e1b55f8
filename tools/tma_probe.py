"""Ask the real CUDA driver which TMA descriptors it accepts (run on a GPU machine).

    python -m tools.tma_probe --out DIR [--chunks 64] [--per-chunk 20000] [--seed0 1000]

Probes `cuda.bindings.driver.cuTensorMapEncodeTiled` with the descriptors of
`tma_generator.descriptors(seed, n)` for seeds seed0 .. seed0+chunks-1 (and, with --grid,
the boundary grid `tma_generator.grid()`), in parallel worker
processes (each with its own primary context), and writes to DIR:

- `random-<seed>.bin` / `grid-<start>.bin`: one byte per descriptor, the driver's CUresult
  (0 success, 1 CUDA_ERROR_INVALID_VALUE, other codes as returned, capped at 250). The
  binding's answer is recorded; where the binding refuses the arguments (it cannot pass
  rank > 5), the same driver entry point is called through ctypes instead, and every
  descriptor is also cross-checked through ctypes;
- `probe.json`: driver version, GPU, binding version, per-chunk digests (so a corpus can be
  regenerated anywhere from its seed and checked), verdict counts, and side experiments
  (does the driver read the dummy stride of a rank-1 probe?).

The binding passes an empty list as NULL, which the driver rejects, so rank-1 (and rank-0)
probes get one dummy stride; the side experiment checks that its value does not matter.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time

from tools import tma_generator as gen

ENUM = {
    "interleave": {v: i for i, v in enumerate(gen.INTERLEAVES)},
    "swizzle": {v: i for i, v in enumerate(gen.SWIZZLES)},
    "l2_promotion": {v: i for i, v in enumerate(gen.L2S)},
    "oob_fill": {v: i for i, v in enumerate(gen.OOBS)},
}
DTYPE_CU = {name: i for i, name in enumerate(gen.DTYPES)}

_cu = None
_wrap = None


def _init_worker() -> None:
    """Create a context in this process and find how the binding wants its arrays."""
    global _cu, _wrap
    from cuda.bindings import driver as cu

    _cu = cu
    (err,) = cu.cuInit(0)
    assert int(err) == 0, err
    err, dev = cu.cuDeviceGet(0)
    err, ctx = cu.cuDevicePrimaryCtxRetain(dev)
    (err,) = cu.cuCtxSetCurrent(ctx)
    legal = {"dtype": "float16", "rank": 2, "global_address": 1 << 40, "global_dim": [64, 64],
             "global_strides": [128], "box_dim": [64, 8], "element_strides": [1, 1],
             "interleave": "none", "swizzle": "128B", "l2_promotion": "none", "oob_fill": "none"}
    tried = []
    for wrap in (False, True):
        _wrap = wrap
        try:
            code = encode(legal, raise_binding_errors=True)
        except (TypeError, OverflowError, ValueError) as e:
            tried.append(f"wrap={wrap}: {type(e).__name__}: {e}")
            continue
        if code == 0:
            return
        tried.append(f"wrap={wrap}: CUresult {code}")
    raise RuntimeError(f"cannot encode a known-legal descriptor: {tried}")


def encode(d: dict, dummy_stride: int = 16, raise_binding_errors: bool = False) -> int:
    """The driver's CUresult for descriptor `d` (254 if the binding refused the arguments)."""
    cu = _cu
    rank = d["rank"]
    dims = d["global_dim"] or [1]
    strides = d["global_strides"] or [dummy_stride]
    box = d["box_dim"] or [1]
    es = d["element_strides"] or [1]
    if _wrap:
        dims = [cu.cuuint64_t(x) for x in dims]
        strides = [cu.cuuint64_t(x) for x in strides]
        box = [cu.cuuint32_t(x) for x in box]
        es = [cu.cuuint32_t(x) for x in es]
    try:
        res, _ = cu.cuTensorMapEncodeTiled(
            cu.CUtensorMapDataType(DTYPE_CU[d["dtype"]]), rank, d["global_address"], dims,
            strides, box, es, cu.CUtensorMapInterleave(ENUM["interleave"][d["interleave"]]),
            cu.CUtensorMapSwizzle(ENUM["swizzle"][d["swizzle"]]),
            cu.CUtensorMapL2promotion(ENUM["l2_promotion"][d["l2_promotion"]]),
            cu.CUtensorMapFloatOOBfill(ENUM["oob_fill"][d["oob_fill"]]))
    except (TypeError, OverflowError, ValueError):
        if raise_binding_errors:
            raise
        return 254
    return min(int(res), 250)


_c_encode = None
_c_map = None


def _init_ctypes() -> None:
    """The same driver entry point through ctypes, for arguments the binding refuses (rank > 5)."""
    global _c_encode, _c_map
    import ctypes

    lib = ctypes.CDLL("libcuda.so.1")
    fn = lib.cuTensorMapEncodeTiled
    fn.restype = ctypes.c_int
    u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, u64p, u64p,
                   u32p, u32p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    buf = ctypes.create_string_buffer(128 + 64)
    _c_map = (buf, (ctypes.addressof(buf) + 63) & ~63)  # the map must be 64-byte aligned
    _c_encode = fn


def encode_c(d: dict) -> int:
    """The driver's CUresult for `d`, called through ctypes (arrays sized exactly `rank`)."""
    import ctypes

    def arr(t, xs, dummy):
        xs = xs or [dummy]
        return (t * len(xs))(*xs)

    res = _c_encode(
        _c_map[1], DTYPE_CU[d["dtype"]], d["rank"], d["global_address"],
        arr(ctypes.c_uint64, d["global_dim"], 1), arr(ctypes.c_uint64, d["global_strides"], 16),
        arr(ctypes.c_uint32, d["box_dim"], 1), arr(ctypes.c_uint32, d["element_strides"], 1),
        ENUM["interleave"][d["interleave"]], ENUM["swizzle"][d["swizzle"]],
        ENUM["l2_promotion"][d["l2_promotion"]], ENUM["oob_fill"][d["oob_fill"]])
    return min(int(res), 250)


def _probe_chunk(args: tuple[str, int, int, str]) -> dict:
    """Probe one chunk: ("random", seed, n) or ("grid", start, stop)."""
    kind, a, b, out = args
    if _c_encode is None:
        _init_ctypes()
    if kind == "random":
        ds = list(gen.descriptors(a, b))
        name = f"random-{a}"
    else:
        ds = gen.grid()[a:b]
        name = f"grid-{a}"
    binding = bytearray(encode(d) for d in ds)
    direct = bytearray(encode_c(d) for d in ds)
    # The corpus verdict is the binding's; ctypes answers only where the binding refused.
    verdict = bytearray(c if c != 254 else x for c, x in zip(binding, direct))
    disagree = sum(1 for c, x in zip(binding, direct) if c != 254 and c != x)
    dummy_diff = sum(
        1 for d, c in zip(ds, binding) if d["rank"] <= 1 and encode(d, dummy_stride=7) != c)
    with open(os.path.join(out, f"{name}.bin"), "wb") as f:
        f.write(verdict)
    return {"name": name, "kind": kind, "a": a, "b": b, "digest": gen.digest(ds),
            "binding_refused": binding.count(254), "binding_vs_ctypes_disagree": disagree,
            "dummy_stride_mattered": dummy_diff,
            "counts": {str(k): verdict.count(k) for k in sorted(set(verdict))}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--chunks", type=int, default=64)
    ap.add_argument("--per-chunk", type=int, default=20000)
    ap.add_argument("--seed0", type=int, default=1000)
    ap.add_argument("--grid", action="store_true", help="also probe the boundary grid")
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 4)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    ctx = mp.get_context("spawn")
    with ctx.Pool(a.procs, initializer=_init_worker) as pool:
        jobs = [("random", a.seed0 + i, a.per_chunk, a.out) for i in range(a.chunks)]
        if a.grid:
            n = len(gen.grid())
            jobs += [("grid", i, min(i + 2000, n), a.out) for i in range(0, n, 2000)]
        chunks = pool.map(_probe_chunk, jobs)
    _init_worker()
    cu = _cu
    meta = {
        "driver_version": cu.cuDriverGetVersion()[1],
        "gpu": cu.cuDeviceGetName(256, cu.cuDeviceGet(0)[1])[1].split(b"\0")[0].decode(),
        "compute_capability": [cu.cuDeviceGetAttribute(
            getattr(cu.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_{k}"),
            cu.cuDeviceGet(0)[1])[1] for k in ("MAJOR", "MINOR")],
        "binding": _binding_version(),
        "python": sys.version.split()[0],
        "wrapped_arrays": _wrap,
        "seconds": round(time.time() - t0, 1),
        "chunks": chunks,
    }
    try:
        import subprocess

        meta["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # the record is still useful without it
        meta["nvidia_smi"] = f"unavailable: {e}"
    with open(os.path.join(a.out, "probe.json"), "w") as f:
        json.dump(meta, f, indent=1)
    total = {}
    for c in chunks:
        for k, v in c["counts"].items():
            total[k] = total.get(k, 0) + v
    print(json.dumps({k: meta[k] for k in ("driver_version", "gpu", "binding", "seconds", "nvidia_smi")}))
    print("verdict counts:", total,
          "| binding refused:", sum(c["binding_refused"] for c in chunks),
          "| binding vs ctypes disagree:", sum(c["binding_vs_ctypes_disagree"] for c in chunks),
          "| dummy stride mattered:", sum(c["dummy_stride_mattered"] for c in chunks))
    return 0


def _binding_version() -> str:
    try:
        from importlib.metadata import version

        return version("cuda-bindings")
    except Exception:
        return "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
