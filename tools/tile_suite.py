"""Regenerate legalsat/testing/data/tile_suite.jsonl: the TMA tile loads (and stores) of public
test suites, transcribed by the rules below (nothing is downloaded; the commits read are in
SOURCES, the conventions in legalsat/testing/data/tile_suite.md).

    python -m tools.tile_suite        # rewrites the suite and prints its counts

Conventions:
  * shape / strides / tile are outermost first, in elements; strides may be 0 (broadcast).
  * CuTe: hierarchical modes are flattened (every mode kept); the dims are listed outermost
    first: CuTe's default (LayoutLeft) order reversed, then the dims with a non-zero stride are
    stably re-sorted by global stride (largest first); stride-0 dims keep their slot.  A case may
    give an explicit order (the smem order) where gmem and smem orders differ.
  * wgmma operands: A is (..., M, K), B is (..., K, N) in that logical order; strides then say
    which dim is contiguous (major = "k" or "mn").
  * Triton: shapes, strides and block_shape are already outermost first.
"""
import json
import os
from collections import Counter, OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, os.pardir, "legalsat", "testing", "data", "tile_suite.jsonl")

SOURCES = {
    "cutlass": ("NVIDIA/cutlass", "7107b05535f8977f5ecb9d01ee203205b1fd9bc4"),
    "tt_desc": ("triton-lang/triton", "00e4b9ef4a2e3af796989b3d6568cbb1cc9b5af1"),  # language/test_tensor_descriptor.py
    "tt_exp": ("triton-lang/triton", "0d68adb03e1a82e9f5f0a388445193df85b5f8d3"),   # cuda/test_experimental_tma.py
    "tt_tmadesc": ("triton-lang/triton", "3007c4c791760ae9824343140687ee9c6b9e627e"),  # cuda/test_tma_descriptor.py
    "tt_ragged_tool": ("triton-lang/triton", "4316ab7322be3bdba01b3285ed62f6766dbe9c65"),  # tools/ragged_tma.py
    "tt_internal": ("triton-lang/triton", "075c3d259a8bf08d4d335e92a6f14af55e01ca2f"),  # _internal_testing.py
    "gl_core": ("triton-lang/triton", "012590c8ec2719b0d70fb6c15f7250535440f2ed"),   # gluon/test_core.py
    "gl_ragged": ("triton-lang/triton", "36fef4244a72acbb7199fdcf6b8ae4febb0b5f1e"),  # gluon/test_ragged_tma.py
}

CUTE_DIR = "test/unit/cute/hopper/"
P_LOAD = CUTE_DIR + "tma_load.cu"
P_STORE = CUTE_DIR + "tma_store.cu"
P_MCAST = CUTE_DIR + "tma_mcast_load.cu"
P_BULK_LD = CUTE_DIR + "bulk_load.cu"
P_BULK_ST = CUTE_DIR + "bulk_store.cu"
P_TT_DESC = "python/test/unit/language/test_tensor_descriptor.py"
P_TT_EXP = "python/test/unit/cuda/test_experimental_tma.py"
P_TT_TMADESC = "python/test/unit/cuda/test_tma_descriptor.py"
P_GL_CORE = "python/test/gluon/test_core.py"
P_GL_RAGGED = "python/test/gluon/test_ragged_tma.py"

BITS = {"uint8": 8, "int8": 8, "bool": 8, "float8_e4m3fn": 8, "float8_e5m2": 8, "uint16": 16, "int16": 16,
        "float16": 16, "bfloat16": 16, "float32": 32, "tfloat32": 32, "int32": 32, "uint32": 32,
        "float64": 64, "int64": 64, "uint64": 64}
CUTE_T = {"int8_t": "int8", "half_t": "float16", "float": "float32", "double": "float64",
          "uint16_t": "uint16", "tfloat32_t": "tfloat32", "uint8_t": "uint8", "uint64_t": "uint64",
          "uint32_t": "uint32"}
CUTE_T4 = ["int8_t", "half_t", "float", "double"]

RAW = []  # every transcribed case before de-duplication


def add(src, path, test, line, dtype, shape, strides, tile, consumer="rows", major=None, swizzle=None,
        base_align=16, notes="", direction="load"):
    assert dtype in BITS, dtype
    assert len(shape) == len(strides) == len(tile), (test, shape, strides, tile)
    assert consumer in ("rows", "cols", "wgmma_a", "wgmma_b")
    assert (major is None) == (consumer in ("rows", "cols")), (test, consumer, major)
    assert swizzle in (None, 0, 32, 64, 128)
    assert all(isinstance(v, int) and v >= 1 for v in shape + tile), (test, shape, tile)
    repo = SOURCES[src][0]
    RAW.append({
        "src": src, "direction": direction,
        "source": {"repo": repo, "path": path, "test": test, "line": line},
        "dtype": dtype, "shape": list(shape), "strides": list(strides), "tile": list(tile),
        "consumer": consumer, "major": major, "smem_swizzle_bytes": swizzle, "base_align": base_align,
        "notes": notes,
    })


# ----------------------------------------------------------------------------------------------
# CuTe helpers
# ----------------------------------------------------------------------------------------------

def cute_order(modes):
    """modes: list of (extent, gstride, tile) in CuTe flattened order (mode 0 first).
    Returns them outermost first: reversed CuTe order, non-zero-stride dims stably sorted by
    stride (largest first), stride-0 dims kept in their slot."""
    rev = list(reversed(modes))
    nz = [m for m in rev if m[1] != 0]
    nz_sorted = sorted(nz, key=lambda m: -m[1])  # stable
    out, it = [], iter(nz_sorted)
    for m in rev:
        out.append(m if m[1] == 0 else next(it))
    return out


def cute_case(path, test, line, T, modes, notes, order=None, direction="load", consumer="rows",
              major=None, swizzle=None, dtype=None):
    ms = [modes[i] for i in order] if order is not None else cute_order(modes)
    add("cutlass", path, test, line, dtype or CUTE_T[T], [m[0] for m in ms], [m[1] for m in ms],
        [m[2] for m in ms], consumer=consumer, major=major, swizzle=swizzle, base_align=16,
        notes=notes, direction=direction)


CUTE_ALIGN_NOTE = ("base_align 16: the smem buffer is cute::array_aligned<T> (alignas 16) at the start of "
                   "dynamic smem; gmem is a thrust::device_vector (cudaMalloc, >=256 B).")


def gmma_atom(kind, T):
    """GMMA smem layout atom of mma_traits_sm90_gmma.hpp in elements of T: (mode0, mode1), swizzle bytes."""
    b = BITS[CUTE_T[T]]
    major, sw = kind.split("_")  # e.g. "MN_SW128"
    span_bits = {"INTER": 128, "SW32": 256, "SW64": 512, "SW128": 1024}[sw]
    swz = {"INTER": 0, "SW32": 32, "SW64": 64, "SW128": 128}[sw]
    if major == "MN":
        return (span_bits // b, 8), swz
    return (8, span_bits // b), swz


def cute_tma_tests(path, direction):
    is_ld = direction == "load"
    d = "TMA load" if is_ld else "TMA store (SM90_TMA_STORE; same descriptor/box rules)"
    # line numbers of the call sites (HEAD of the CUTLASS commit above)
    if is_ld:
        L = dict(t1d=58, t1d_a=64, t1d_b=72, t1d_c=80, t1d_8=91, t1d_16=100, col=108, col_a=113, col_b=121,
                 col_c=129, row=136, row_a=141, row_b=149, row_c=157, atoms=196, atom0=198, tiles=257,
                 tile0=260, tensor=279, tens3=288, tens4=298, tens5=308, multi=313, mm1=321, mm2=330,
                 mm3=339, coal=343, coal1=353, coal2=366, coal3=379, coal4=392, itype=398, itype8=405,
                 itype64=413, itypec=421)
    else:
        L = dict(t1d=60, t1d_a=65, t1d_b=73, col=80, col_a=85, col_b=93, col_c=101, row=108, row_a=113,
                 row_b=121, row_c=129, atoms=154, atom0=156, tiles=215, tile0=218, tensor=237, tens3=246,
                 tens4=256, tens5=266, multi=271, mm1=279, mm2=288, mm3=297)
    test_1d = "SM90_CuTe_Hopper.Tma_Load_1D"
    # 1-D: smem Layout<_256,_1>
    for T in CUTE_T4:
        cute_case(path, test_1d, L["t1d_a"], T, [(256, 1, 256)],
                  f"{d}. gmem = smem = Layout<_256,_1>; one box of 256 elements. {CUTE_ALIGN_NOTE}",
                  direction=direction)
        cute_case(path, test_1d, L["t1d_b"], T, [(128, 1, 256)],
                  f"{d}. gmem make_layout(128) but smem/tile Layout<_256,_1>: the tile (256) is larger than "
                  f"the tensor (128); the box runs past the end (TMA OOB handling). {CUTE_ALIGN_NOTE}",
                  direction=direction)
        if is_ld:
            cute_case(path, test_1d, L["t1d_c"], T, [(384, 1, 256)],
                      f"{d}. gmem make_layout(384), tile 256: 2 tiles, the second partially out of bounds "
                      f"(256..511 of 384). {CUTE_ALIGN_NOTE}", direction=direction)
            cute_case(path, test_1d, L["t1d_8"], T, [(8, 1, 8), (8, 8, 8)],
                      f"{d}. gmem = smem = (8,8):(1,8) column-major, one 8x8 tile. {CUTE_ALIGN_NOTE}",
                      direction=direction)
            # tile_to_shape((8,8):(1,8), (16,16)) = ((8,2),(8,2)):((1,64),(8,128))
            cute_case(path, test_1d, L["t1d_16"], T, [(8, 1, 8), (2, 64, 1), (8, 8, 8), (2, 128, 1)],
                      f"{d}. gmem = tile_to_shape((8,8):(1,8),(16,16)) = ((8,2),(8,2)):((1,64),(8,128)), "
                      f"hierarchical modes flattened to 4 dims; tile (8,8) takes the inner 8 of each mode, "
                      f"4 stages. Test comment: 'This doesn't result in a 1D TMA, even though it could/should' "
                      f"(each 8x8 tile is 64 contiguous elements). {CUTE_ALIGN_NOTE}", direction=direction)
    # 32x32 col / row
    for kind, tname in (("col", "Tma_Load_32x32_Col" if is_ld else "Tma_Store_32x32_Col"),
                        ("row", "Tma_Load_32x32_Row" if is_ld else "Tma_Store_32x32_Row")):
        test = "SM90_CuTe_Hopper." + tname
        smem = "(32,32):(1,32)" if kind == "col" else "(32,32):(32,1)"
        for T in CUTE_T4:
            if kind == "col":
                m_a = [(32, 1, 32), (32, 32, 32)]
                m_c = [(32, 1, 32), (32, 1024, 32)]
                g_b, g_c = "make_layout((32,32), GenColMajor)", "make_layout((32,32), (_1,1024))"
            else:
                m_a = [(32, 32, 32), (32, 1, 32)]
                m_c = [(32, 1024, 32), (32, 1, 32)]
                g_b, g_c = "make_layout((32,32), GenRowMajor)", "make_layout((32,32), (1024,_1))"
            cute_case(path, test, L[kind + "_a"], T, m_a,
                      f"{d}. gmem = smem = {smem} (static layout); one 32x32 tile. {CUTE_ALIGN_NOTE}",
                      direction=direction)
            cute_case(path, test, L[kind + "_b"], T, m_a,
                      f"{d}. gmem {g_b} (dynamic), smem {smem}; one 32x32 tile. {CUTE_ALIGN_NOTE}",
                      direction=direction)
            cute_case(path, test, L[kind + "_c"], T, m_c,
                      f"{d}. gmem {g_c}: padded pitch of 1024 elements, smem {smem}; one 32x32 tile. "
                      f"{CUTE_ALIGN_NOTE}", direction=direction)
    # swizzle atoms: gmem = 2x atom, GenColMajor (MN atoms) or GenRowMajor (K atoms)
    test = "SM90_CuTe_Hopper." + ("Tma_Load_Swizzle_Atoms" if is_ld else "Tma_Store_Swizzle_Atoms")
    line = L["atom0"]
    for kind in ("MN_SW128", "MN_SW64", "MN_SW32", "MN_INTER", "K_SW128", "K_SW64", "K_SW32", "K_INTER"):
        for T in CUTE_T4:
            (s0, s1), swz = gmma_atom(kind, T)
            mn_major = kind.startswith("MN")
            g0, g1 = 2 * s0, 2 * s1
            # wgmma_a logical order (M, K) = CuTe (mode0, mode1)
            strides = [1, g0] if mn_major else [g1, 1]
            extra = ""
            if CUTE_T[T] == "float64" or (mn_major and BITS[CUTE_T[T]] != 16):
                extra = (" (No wgmma takes this dtype with this major: the test only uses the GMMA smem "
                         "layout atom as the TMA destination.)")
            add("cutlass", path, test, line, CUTE_T[T], [g0, g1], strides, [s0, s1], consumer="wgmma_a",
                major="mn" if mn_major else "k", swizzle=swz, base_align=16, direction=direction,
                notes=(f"{d}. smem = GMMA::Layout_{kind}_Atom<{T}> = ({s0},{s1}) "
                       f"{'M/N-major' if mn_major else 'K-major'} with Swizzle<{ {0:0,32:1,64:2,128:3}[swz] },4,3>; "
                       f"gmem = make_layout(({g0},{g1}), {'GenColMajor' if mn_major else 'GenRowMajor'}) "
                       f"(2x the atom each way): 4 tiles, one box each. CuTe (mode0, mode1) = (MN, K) is "
                       f"recorded as wgmma_a (M, K); the atom could equally feed B.{extra} {CUTE_ALIGN_NOTE}"))
            line += 1
        line += 1
    # swizzle tiles: tile_to_shape(atom, 128x128); load: gmem 128x128, store: 256x256
    if True:
        test = "SM90_CuTe_Hopper." + ("Tma_Load_Swizzle_Tiles" if is_ld else "Tma_Store_Swizzle_Tiles")
        line = L["tile0"]
        g = 128 if is_ld else 256
        for kind in ("MN_SW128", "MN_SW64", "MN_SW32", "MN_INTER", "K_SW128", "K_SW64", "K_SW32", "K_INTER"):
            for T in ("int8_t", "half_t"):
                (s0, s1), swz = gmma_atom(kind, T)
                mn_major = kind.startswith("MN")
                strides = [1, g] if mn_major else [g, 1]
                extra = ""
                if mn_major and BITS[CUTE_T[T]] == 8:
                    extra = " (wgmma has no M/N-major 8-bit operands; only the smem layout is GMMA's.)"
                add("cutlass", path, test, line, CUTE_T[T], [g, g], strides, [128, 128], consumer="wgmma_a",
                    major="mn" if mn_major else "k", swizzle=swz, base_align=16, direction=direction,
                    notes=(f"{d}. smem = tile_to_shape(GMMA::Layout_{kind}_Atom<{T}> ({s0},{s1}), (128,128)); "
                           f"gmem = make_layout(({g},{g}), {'GenColMajor' if mn_major else 'GenRowMajor'}); "
                           f"{'one 128x128 tile' if g == 128 else '4 tiles of 128x128'}. The 128x128 tile is "
                           f"wider than one swizzle span, so CuTe issues several boxes per tile. "
                           f"CuTe (mode0, mode1) = (MN, K) recorded as wgmma_a (M, K).{extra} {CUTE_ALIGN_NOTE}"))
                line += 1
    # Tensor by-mode
    test = "SM90_CuTe_Hopper." + ("Tma_Load_Tensor" if is_ld else "Tma_Store_Tensor")
    cute_case(path, test, L["tens3"], "half_t", [(128, 1, 64), (64, 128, 32), (5, 8192, 1)],
              f"{d}. gmem make_layout((128,64,5)) column-major, cta_tile (64,32) on the first two modes, smem "
              f"(64,32) column-major; the third mode is iterated (tile extent 1), 2*2*5 = 20 stages. "
              f"{CUTE_ALIGN_NOTE}", direction=direction)
    cute_case(path, test, L["tens4"], "half_t", [(80, 1, 16), (40, 80, 8), (32, 3200, 32), (12, 102400, 2)],
              f"{d}. gmem make_layout(((80,40),(32,12))) column-major, flattened to 4 dims; cta_tile "
              f"((16,8),(32,2)), smem (128,64) column-major (16x8 -> 128 rows, 32x2 -> 64 cols). {CUTE_ALIGN_NOTE}", direction=direction)
    cute_case(path, test, L["tens5"], "half_t",
              [(32, 1, 16), (32, 32, 4), (32, 1024, 2), (32, 32768, 16), (12, 1048576, 2)],
              f"{d}. gmem make_layout(((32,32,32),(32,12))) column-major, flattened to 5 dims; cta_tile "
              f"((16,4,2),(16,2)), smem (128,32) column-major. (The test's comment about the tiling is stale; "
              f"the cta_tile is what is used.) {CUTE_ALIGN_NOTE}", direction=direction)
    test = "SM90_CuTe_Hopper." + ("Tma_Load_Tensor_Multimode" if is_ld else "Tma_Store_Tensor_Multimode")
    cute_case(path, test, L["mm1"], "half_t",
              [(32, 1, 32), (3, 32, 1), (2, 96, 1), (2, 192, 1), (32, 384, 32), (4, 12288, 2), (2, 49152, 1)],
              f"{d}. gmem make_layout(((32,3,2,2),(32,4,2))) column-major: 7 modes kept as given (more than "
              f"the 5 TMA dims; CuTe packs residual modes into the last TMA mode). cta_tile ((32),(32,2)), smem "
              f"(32,64). {CUTE_ALIGN_NOTE}", direction=direction)
    cute_case(path, test, L["mm2"], "half_t",
              [(64, 1, 32), (3, 64, 3), (2, 192, 1), (2, 384, 1), (32, 768, 32), (4, 24576, 2), (2, 98304, 1)],
              f"{d}. gmem make_layout(((64,3,2,2),(32,4,2))) column-major, 7 modes; cta_tile ((32,3),(32,2)) "
              f"takes 32 of m0 (stride-1, extent 64) and all 3 of m1: the tile is not contiguous in gmem along "
              f"M (32 of every 64). smem (96,64). {CUTE_ALIGN_NOTE}", direction=direction)
    cute_case(path, test, L["mm3"], "half_t",
              [(64, 1, 32), (3, 64, 1), (2, 192, 1), (3, 384, 1), (2, 1152, 1), (32, 2304, 16), (4, 73728, 2),
               (2, 294912, 1), (2, 589824, 1)],
              f"{d}. gmem make_layout(((64,3,2,3,2),(32,4,2,2))) column-major: 9 modes kept as given; cta_tile "
              f"((32),(16,2)), smem (32,32). {CUTE_ALIGN_NOTE}", direction=direction)
    if not is_ld:
        return
    test = "SM90_CuTe_Hopper.Tma_Load_Coalesce"
    cute_case(path, test, L["coal1"], "int8_t", [(128, 4, 32), (4, 1, 4), (128, 512, 32)],
              f"{d}. 'Interleaved ColMajor': gmem (128,(_4,128)):(_4,(_1,512)), smem (_32,(_4,_32)):(_4,(_1,_128)), "
              f"cta_tile (32,128). Flattened to 3 dims (4-element interleave innermost); the test expects a "
              f"rank-2 TMA after coalescing. {CUTE_ALIGN_NOTE}")
    cute_case(path, test, L["coal2"], "int8_t", [(4, 1, 4), (128, 512, 32), (128, 4, 32)],
              f"{d}. 'Interleaved RowMajor': gmem ((_4,128),128):((_1,512),_4), smem ((_4,_32),_32):((_1,_128),_4), "
              f"cta_tile (128,32); expects a rank-2 TMA. {CUTE_ALIGN_NOTE}")
    cute_case(path, test, L["coal3"], "uint16_t", [(128, 1, 64), (32, 0, 32), (4, 128, 1)],
              f"{d}. stride-0 mode inside the tile: gmem (128,(_32,4)):(_1,(_0,128)), smem (_64,(_32)):(_1,(_0)), "
              f"cta_tile (64,32). The 32-extent dim is a broadcast (stride 0 in gmem and in smem): the 64x32 tile "
              f"holds 64 distinct elements; the TMA box leaves the stride-0 mode out; expected TMA rank 2. "
              f"{CUTE_ALIGN_NOTE}")
    cute_case(path, test, L["coal4"], "int8_t",
              [(32, 16, 32), (4, 4, 4), (4, 2048, 1), (32, 0, 32), (4, 1, 4), (4, 512, 1)],
              f"{d}. many modes + stride-0: gmem ((_32,_4,4),_32,(_4,4)):((_16,_4,2048),_0,(_1,_512)), smem "
              f"((_32,_4),_32,(_4)):((_16,_4),_0,(_1)), cta_tile (128,32,4). 6 dims kept; the stride-0 dim stays "
              f"at its CuTe position; the test expects a rank-4 TMA. {CUTE_ALIGN_NOTE}")
    test = "SM90_CuTe_Hopper.Tma_Load_InternalType"
    for T in CUTE_T4:
        cute_case(path, test, L["itype8"], T, [(64, 1, 32), (64, 64, 32)],
                  f"{d}. gmem make_layout((64,64)) column-major, smem (32,32):(1,32); the test forces the TMA "
                  f"element type TmaType=uint8_t (downcast: the descriptor sees bytes). {CUTE_ALIGN_NOTE}")
        cute_case(path, test, L["itype64"], T, [(64, 1, 32), (64, 64, 32)],
                  f"{d}. gmem make_layout((64,64)) column-major, smem (32,32):(1,32); TmaType=uint64_t (upcast: "
                  f"the descriptor packs {64 // BITS[CUTE_T[T]]} elements per uint64). {CUTE_ALIGN_NOTE}")
    # complex<double> (16 B, no TMA type): recorded in the TmaType the test uses
    cute_case(path, test, L["itypec"], "uint64_t", [(128, 1, 64), (64, 128, 32)],
              f"{d}. T = complex<double> (16 B, 'which the TMA has no concept of'), TmaType=uint64_t: gmem "
              f"(64,64) complex column-major, smem (32,32) complex, recorded as the uint64 view the descriptor "
              f"uses (inner dim x2). {CUTE_ALIGN_NOTE}", dtype="uint64")
    cute_case(path, test, L["itypec"] + 1, "uint32_t", [(256, 1, 128), (64, 256, 32)],
              f"{d}. T = complex<double>, TmaType=uint32_t: recorded as the uint32 view (inner dim x4). "
              f"{CUTE_ALIGN_NOTE}", dtype="uint32")


def cute_mcast():
    test = "SM90_CuTe_Hopper.Tma_Load_32x32_Col_MCast"
    line = 64
    for cs in ("Int<2>{}", "2"):
        for T in CUTE_T4:
            cute_case(P_MCAST, test, line, T, [(32, 1, 32), (32, 32, 32)],
                      f"TMA load, SM90_TMA_LOAD_MULTICAST with cluster size {cs} (2 CTAs): gmem "
                      f"make_layout((32,32), GenColMajor), smem (32,32):(1,32). The 32x32 tile lands in both CTAs; "
                      f"tma_partition splits it so each CTA issues one box of half the tile (32x16) multicast to "
                      f"the pair. {CUTE_ALIGN_NOTE}")
            line += 1
        line += 1


def cute_bulk(path, direction):
    d = ("cp.async.bulk (SM90_BULK_COPY_AUTO, the TMA unit without a tensor map) "
         + ("global->shared" if direction == "load" else "shared->global"))
    al = "base_align 16: smem is cute::array_aligned<T> (alignas 16); gmem is a thrust::device_vector."
    lines = {"ColMajor": 156, "RowMajor": 166, "NonCompact": 177} if direction == "load" else \
        {"ColMajor": 137, "RowMajor": 146, "NonCompact": 156}
    for T in ("int8_t", "half_t", "tfloat32_t"):
        cute_case(path, "SM90_CuTe_BLKCP.ColMajor", lines["ColMajor"], T, [(32, 1, 32), (32, 32, 32)],
                  f"{d}. gmem = smem = make_layout((32,32), GenColMajor): the whole 32x32 tensor is one tile. {al}",
                  direction=direction)
        cute_case(path, "SM90_CuTe_BLKCP.RowMajor", lines["RowMajor"], T, [(32, 32, 32), (32, 1, 32)],
                  f"{d}. gmem = smem = make_layout((32,32), GenRowMajor). {al}", direction=direction)
        cute_case(path, "SM90_CuTe_BLKCP.NonCompact", lines["NonCompact"], T, [(32, 1, 32), (32, 48, 32)],
                  f"{d}. gmem = smem = (32,32):(_1,_48): padded pitch 48 elements. {al}", direction=direction)
        # gmem ((16,2),(4,8)):((1,64),(16,128)), smem (32,32):(1,48); dims listed in smem order
        # flattened: m0 16 s1, m1 2 s64, k0 4 s16, k1 8 s128; smem strides m0 1, m1 16, k0 48, k1 192
        cute_case(path, "SM90_CuTe_BLKCP.NonCompact", lines["NonCompact"] + 7, T,
                  [(16, 1, 16), (2, 64, 2), (4, 16, 4), (8, 128, 8)],
                  f"{d}. gmem ((_16,_2),(_4,_8)):((_1,_64),(_16,_128)) (4 flattened dims), smem (32,32):(_1,_48). "
                  f"Dims are listed in SMEM order (k1,k0,m1,m0): the global strides are not monotone, i.e. the "
                  f"copy permutes the two middle dims; the common contiguous vector is 16 elements. {al}",
                  order=[3, 2, 1, 0], direction=direction)
        cute_case(path, "SM90_CuTe_BLKCP.NonCompact", lines["NonCompact"] + 14, T, [(32, 64, 32), (32, 1, 32)],
                  f"{d}. gmem = smem = (32,32):(_64,_1): row pitch 64 elements. {al}", direction=direction)


# ----------------------------------------------------------------------------------------------
# Triton helpers
# ----------------------------------------------------------------------------------------------

TMA_DTYPES = sorted({"int8", "int16", "int32", "uint8", "uint16", "uint32", "float16", "float32", "bfloat16"})
ESZ = {k: v // 8 for k, v in BITS.items()}
TT_NOTE_ALIGN = "base_align 16: torch allocation (>=256 B aligned); Triton requires a 16-byte aligned base."


def tt(src, path, test, dtype, shape, strides, tile, notes, **kw):
    add(src, path, test, None, dtype, shape, strides, tile, notes=notes + " " + TT_NOTE_ALIGN, **kw)


def contiguous_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return list(reversed(st))


def triton_tensor_descriptor():
    S, P = "tt_desc", P_TT_DESC
    blocks6 = [(2, 16), (8, 16), (8, 32), (8, 128), (512, 32), (1, 1024)]
    for dt in TMA_DTYPES:
        for nc in (1, 2):
            for mb, nb in blocks6:
                M, N = mb * 3, nb * 4
                big = ""
                if mb > 256 or nb > 256:
                    big = " The block exceeds 256 along a dim: Triton splits it into several TMA boxes."
                tt(S, P, f"test_tensor_descriptor_load[{mb}-{nb}-{nc}-{dt}]", dt, [M, N], [N, 1], [mb, nb],
                   f"TMA load (device-side tl.make_tensor_descriptor), one block at offset [M_BLOCK, 2*N_BLOCK] "
                   f"(in bounds). num_ctas={nc}.{big}")
                M2, N2 = mb * 2, nb * 2
                tt(S, P, f"test_tensor_descriptor_store[{mb}-{nb}-{nc}-{dt}]", dt, [M2, N2], [N2, 1], [mb, nb],
                   f"TMA store, 2x2 grid of blocks. num_ctas={nc}.{big}", direction="store")
        for mb, nb in blocks6[:4]:
            for nc in (1, 2):
                tt(S, P, f"test_host_tensor_descriptor_load[{mb}-{nb}-{nc}-{dt}]", dt, [mb * 3, nb * 4],
                   [nb * 4, 1], [mb, nb], f"TMA load (host TensorDescriptor). num_ctas={nc}.")
        tt(S, P, f"test_tensor_descriptor_functional_interface[{dt}]", dt, [32, 128], [128, 1], [8, 32],
           "TMA load + store (tl.load_tensor_descriptor / tl.store_tensor_descriptor), 4x4 grid of blocks.")
    # reduce (TMA reduce = store-direction); only dtypes the native path supports compile
    native = {"add": {"uint32", "int32", "uint64", "float32", "float16", "bfloat16"},
              "min": {"uint32", "int32", "uint64", "int64", "float16", "bfloat16"},
              "max": {"uint32", "int32", "uint64", "int64", "float16", "bfloat16"},
              "and": {"uint32", "int32", "uint64", "int64"}, "or": {"uint32", "int32", "uint64", "int64"},
              "xor": {"uint32", "int32", "uint64", "int64"}}
    for mb, nb in blocks6:
        for desc in ("host", "device"):
            for nc in (1, 2):
                for dt in TMA_DTYPES:
                    for kind in ("add", "min", "max", "and", "or", "xor"):
                        if dt not in native[kind]:
                            continue  # pytest.raises(CompilationError): no TMA runs
                        tt(S, P, f"test_tensor_descriptor_reduce[{mb}-{nb}-{desc}-{nc}-{dt}-{kind}]", dt,
                           [mb * 2, nb * 2], [nb * 2, 1], [mb, nb],
                           f"TMA reduce (cp.reduce.async.bulk.tensor, atomic_{kind}) of one block, 2x2 grid.",
                           direction="store")
    # 3-D
    for dt in TMA_DTYPES:
        for kb in (16, 32, 64, 128):
            if kb * ESZ[dt] < 32:
                continue  # pytest.skip("Invalid last dim size")
            tt(S, P, f"test_tensor_descriptor_load3d[{kb}-{dt}]", dt, [10, 50, 119], [8192, 128, 1], [8, 8, kb],
               "TMA load over a strided view: torch (10,64,128) sliced to [:, :50, :119] (strides 8192,128,1); "
               "every block of the grid, edge blocks partially out of bounds (119 is not a multiple of K_BLOCK).")
            tt(S, P, f"test_tensor_descriptor_store3d[{kb}-{dt}]", dt, [10, 50, 119], [8192, 128, 1], [8, 8, kb],
               "TMA store into (10,64,128) with descriptor shape (10,50,119); edge blocks clipped.",
               direction="store")
    # N-D
    for dt in TMA_DTYPES:
        for nc in (1, 2):
            for nd in (1, 2, 3, 4, 5):
                for ib in (16, 32, 64, 128):
                    if ib * ESZ[dt] < 32:
                        continue
                    alloc = [1, 1, 3, 7, ib][-nd:]
                    shape = [1, 1, 3, 7, ib - 3][-nd:]
                    block = [2, 2, 4, 8, ib][-nd:]
                    tt(S, P, f"test_tensor_descriptor_load_nd[{ib}-{nd}-{nc}-{dt}]", dt, shape,
                       contiguous_strides(alloc), block,
                       f"TMA load at offset 0 of a {nd}-D view: torch {tuple(alloc)} sliced [..., :{ib - 3}]; the "
                       f"block {tuple(block)} is larger than the tensor along EVERY dim (out-of-bounds zero fill). "
                       f"num_ctas={nc}.")
                    out_shape = [2, 2, 4, 8, ib][-nd:]
                    tt(S, P, f"test_tensor_descriptor_store_nd[{ib}-{nd}-{nc}-{dt}]", dt, [1, 1, 3, 7, ib][-nd:],
                       contiguous_strides(out_shape), block,
                       f"TMA store at offset 0: descriptor shape {tuple([1, 1, 3, 7, ib][-nd:])} with the strides "
                       f"of a contiguous {tuple(out_shape)} tensor; the block is larger than the descriptor shape "
                       f"(clipped). num_ctas={nc}.", direction="store")
            if nc == 1:
                for nd in (3, 4, 5):
                    for ib in (16, 32, 64, 128):
                        if ib * ESZ[dt] < 32:
                            continue
                        alloc = [1, 1, 1, 7, ib][-nd:]
                        tt(S, P, f"test_tensor_descriptor_rank_reducing_load[{ib}-{nd}-{dt}]", dt,
                           [1, 1, 1, 7, ib - 3][-nd:], contiguous_strides(alloc), [1, 1, 1, 8, ib][-nd:],
                           "TMA load of a block with leading unit dims (reshaped to 2-D after the load); block "
                           "larger than the tensor in the last two dims.")
    # padding
    tt(S, P, "test_tensor_descriptor_padding", "float32", [48, 48], [48, 1], [32, 32],
       "TMA load with padding_option='nan' (OOB fill NaN), device and host descriptors; 2x2 grid over a 64x64 "
       "output so the edge blocks are partially out of bounds.")
    for t in ("test_tensor_descriptor_in_function", "test_tensor_descriptor_return_value",
              "test_tensor_descriptor_argument"):
        tt(S, P, t, "float32", [32, 128], [128, 1], [8, 32], "TMA load + store, 4x4 grid (descriptor passed "
           "through a noinline function).")
    for dt in ("float16", "bfloat16"):
        tt(S, P, f"test_tensor_descriptor_store_downcast[{dt}]", dt, [32, 128], [128, 1], [8, 32],
           "TMA store with implicit fp32->dtype downcast, 4x4 grid.", direction="store")
    tt(S, P, "test_make_tensor_descriptor_loop_carried", "float32", [64, 512], [512, 1], [8, 128],
       "TMA load + store, descriptor re-created in a loop.")
    # matmuls
    M, N, K = 1024, 512, 256
    for test, cfgs in (("test_make_tensor_descriptor_matmul",
                        [(128, 128, 16, 1), (512, 64, 32, 2), (64, 512, 32, 2), (128, 128, 16, 4), (64, 128, 32, 4),
                         (32, 32, 32, 4), (256, 128, 32, 4)]),
                       ("test_host_tensor_descriptor_matmul",
                        [(128, 128, 16, 1), (256, 64, 32, 2), (64, 512, 32, 2), (128, 128, 16, 4), (64, 128, 32, 4),
                         (32, 32, 32, 4), (256, 128, 32, 4)])):
        for nc in (1, 2):
            for bm, bn, bk, ns in cfgs:
                pid = f"{test}[{bm}-{bn}-{bk}-{ns}-{nc}]"
                big = " Block > 256 along a dim: several TMA boxes." if max(bm, bn) > 256 else ""
                mma = " (BLOCK_M < 64: the dot lowers to mma.sync, not wgmma.)" if bm < 64 else ""
                tt(S, P, pid, "float16", [M, K], [K, 1], [bm, bk],
                   f"A operand of tl.dot, (M,K) K-major, num_warps=8, num_stages={ns}, num_ctas={nc}.{mma}{big}",
                   consumer="wgmma_a", major="k")
                tt(S, P, pid, "float16", [K, N], [N, 1], [bk, bn],
                   f"B operand of tl.dot, (K,N) N-major (row-major KxN tensor).{mma}{big}",
                   consumer="wgmma_b", major="mn")
                tt(S, P, pid, "float16", [M, N], [N, 1], [bm, bn], f"C epilogue TMA store.{big}",
                   direction="store")
    pid = "test_tensor_descriptor_batched_gemm_2d_tma"
    tt(S, P, pid, "float16", [1024, 128], [128, 1], [128, 64],
       "A of batch b: descriptor built on a_ptr + b*M*K (per-batch 2-D descriptor), (M,K) K-major; num_warps=8.",
       consumer="wgmma_a", major="k")
    tt(S, P, pid, "float16", [128, 1024], [1, 128], [64, 256],
       "B: descriptor [N,K]=[1024,128] strides [128,1] block [256,64], used as b.T; recorded in (K,N) order, so "
       "K is the contiguous dim (K-major B). Block N = 256.", consumer="wgmma_b", major="k")
    tt(S, P, pid, "float16", [1024, 1024], [1024, 1], [128, 256], "C epilogue TMA store.", direction="store")
    pid = "test_tensor_descriptor_batched_gemm_3d_tma"
    tt(S, P, pid, "float16", [2, 1024, 128], [131072, 128, 1], [1, 128, 64],
       "A: 3-D descriptor [B,M,K], block [1,BM,BK], reshaped to 2-D for the dot.", consumer="wgmma_a", major="k")
    tt(S, P, pid, "float16", [2, 128, 1024], [131072, 1, 128], [1, 64, 256],
       "B: 3-D descriptor [B,N,K] strides [N*K,K,1] block [1,256,64], used as b.T; recorded as (B,K,N).",
       consumer="wgmma_b", major="k")
    tt(S, P, pid, "float16", [2, 1024, 1024], [1048576, 1024, 1], [1, 128, 256], "C: 3-D TMA store.",
       direction="store")
    for dt in ("float16", "bfloat16", "float32"):
        pid = f"test_tensor_descriptor_rank_reducing_matmul[{dt}]"
        tt(S, P, pid, dt, [1, 256, 64], [16384, 64, 1], [1, 32, 32],
           "A: descriptor [1,M,K] block [1,32,32] (rank-reducing). BLOCK_M=32 -> mma.sync on Hopper; fp32 -> tf32.",
           consumer="wgmma_a", major="k")
        tt(S, P, pid, dt, [1, 64, 256], [16384, 1, 64], [1, 32, 32],
           "B: descriptor [1,N,K] block [1,32,32] used as b.T, recorded as (1,K,N).", consumer="wgmma_b", major="k")
        tt(S, P, pid, dt, [1, 256, 256], [65536, 256, 1], [1, 32, 32], "C: TMA store.", direction="store")
        pid = f"test_tensor_descriptor_reshape_matmul[{dt}]"
        tt(S, P, pid, dt, [2, 128, 128], [16384, 128, 1], [2, 32, 64],
           "A: host-rechunked tensor [2, M/2, K]; block [2, BM/2, BK] = the two halves of a 64-row M block sit in "
           "separate outer slabs; reshaped to (64,64) for the dot.", consumer="wgmma_a", major="k")
        tt(S, P, pid, dt, [2, 128, 128], [16384, 1, 128], [2, 64, 32],
           "B: [2, N/2, K] block [2, 32, 64] used as b.T; recorded as (2, K, N/2).", consumer="wgmma_b", major="k")
        tt(S, P, pid, dt, [256, 256], [256, 1], [64, 64], "C: TMA store.", direction="store")
    # mxfp8 x mxfp4: only the B (packed fp4) operand goes through TMA
    for (M, N, K) in ((1024, 512, 256), (128, 256, 256), (8192, 8192, 8192)):
        for bm, bn, bk in ((128, 128, 128), (128, 128, 256), (128, 256, 128), (128, 256, 256)):
            for ns in (1, 3):
                hop = ("runs on Hopper" if bk >= K else "skipped on Hopper ('Currently broken on hopper'); runs on "
                       "sm100")
                tt(S, P, f"test_mxfp8_mxfp4_matmul_tma[{ns}-{bm}-{bn}-{bk}-{M}-{N}-{K}]", "uint8",
                   [K // 2, N], [1, K // 2], [bk // 2, bn],
                   f"B of tl.dot_scaled: MXFP4 packed 2 per byte (uint8), descriptor [N, K/2] block [BN, BK/2], used "
                   f"as b.T; recorded as (K/2, N) in bytes. {hop}.", consumer="wgmma_b", major="k")


def triton_experimental():
    S, P = "tt_exp", P_TT_EXP
    for bv in ("True", "False"):
        tt(S, P, f"test_experimetal_descriptor_load[{bv}]", "float32", [128], [1], [128],
           f"TMA load, 1-D descriptor from create_1d_tma_descriptor (byval_tma={bv}): the whole tensor is one box.")
    for bv in ("True", "False"):
        for bm, bn, bk in ((32, 32, 32), (128, 64, 64), (128, 128, 64), (128, 256, 64)):
            for ns in (1, 4):
                pid = f"test_experimental_tma_matmul[{bv}-{bm}-{bn}-{bk}-{ns}]"
                tt(S, P, pid, "float16", [8192, 1024], [1024, 1], [bm, bk], "A of tl.dot (host 2-D descriptor).",
                   consumer="wgmma_a", major="k")
                tt(S, P, pid, "float16", [1024, 8192], [8192, 1], [bk, bn], "B of tl.dot, N-major.",
                   consumer="wgmma_b", major="mn")
                tt(S, P, pid, "float16", [8192, 8192], [8192, 1], [bm, bn], "C TMA store.", direction="store")
    for bm, bn, bk in ((32, 32, 32), (128, 64, 64), (128, 128, 64), (128, 256, 64)):
        for ns in (1, 4):
            pid = f"test_experimental_make_tensor_descriptor_matmul[{bm}-{bn}-{bk}-{ns}]"
            tt(S, P, pid, "float16", [8192, 1024], [1024, 1], [bm, bk], "A (device descriptor).",
               consumer="wgmma_a", major="k")
            tt(S, P, pid, "float16", [1024, 8192], [8192, 1], [bk, bn], "B, N-major.", consumer="wgmma_b", major="mn")
            tt(S, P, pid, "float16", [8192, 8192], [8192, 1], [bm, bn], "C TMA store.", direction="store")
    for dt in TMA_DTYPES:
        tt(S, P, f"test_device_tensormap2d[{dt}]", dt, [64, 128], [128, 1], [32, 64],
           "TMA load + store, descriptor written on device (experimental_device_tensormap_create2d). The test's "
           "shape is (M_BLOCK*M_GRID, M_BLOCK*N_GRID) = (64,128) but the grid is 2x4 blocks of 32x64, so blocks "
           "with noffset 128 and 192 lie entirely outside the tensor.")
        tt(S, P, f"test_device_tensormap1d[{dt}]", dt, [2048], [1], [256],
           "TMA load + store of 256-element 1-D blocks, descriptor written on device.")


def triton_ragged():
    S, P = "tt_tmadesc", P_TT_TMADESC
    max_int, billion = 0x7FFF0000, 0x40000000
    for dt in ("bfloat16", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
               "uint32", "uint64"):
        atomic = dt in ("bfloat16", "float16", "float32", "int32")
        tt(S, P, f"test_ragged_tma[{dt}]", dt, [max_int, max_int, billion, 80], [2 ** 34 - 80, 80, 80, 1],
           [1, 1, 32, 128],
           "Ragged descriptor (triton.tools.ragged_tma.create_ragged_descriptor on a (1024,80) tensor, block "
           "[32,128]): two virtual leading dims of extent 0x7fff0000 with strides 2**34-80 and 80 elements rely on "
           "64-bit address wrap-around; the ragged dim is set to 2**30. Loaded by load_ragged, written by "
           "store_ragged" + (" and atomic_add_ragged" if atomic else "") + ". The block (128) is wider than the "
           "tensor (80 columns).")
    S, P = "gl_ragged", P_GL_RAGGED
    for dt in ("bfloat16", "float16", "float32", "int8", "int16", "int32"):
        for mode in ("host", "device"):
            es = ESZ[dt]
            cfgs = [(2, 0, (128, 80), [32, 128], [80, 1])]
            if es >= 4:
                cfgs += [(3, 0, (64, 32, 32), [16, 16, 32], [1024, 32, 1]), (3, 1, (64, 32, 32), [32, 16, 32], [1024, 32, 1])]
            else:
                cfgs += [(3, 0, (64, 32, 64), [16, 32, 64], [2048, 64, 1]), (3, 1, (64, 32, 64), [32, 16, 64], [2048, 64, 1])]
            for nd, rd, tshape, block, strides in cfgs:
                shape = list(tshape)
                shape[rd] = billion
                tt(S, P, f"test_ragged_tma[{dt}-{mode}-{nd}-{rd}]", dt, [max_int, max_int] + shape,
                   [2 ** 34 - strides[rd], strides[rd]] + strides, [1, 1] + block,
                   f"Gluon ragged descriptor ({mode}), {nd}-D tensor {tshape} ragged along dim {rd}: virtual leading "
                   f"dims (0x7fff0000, strides 2**34-{strides[rd]} and {strides[rd]}) with 64-bit wrap-around, ragged "
                   f"dim = 2**30; TMA load then store. NVMMASharedLayout.get_default_for([1,1]+block). Blackwell-only "
                   f"test (skipif not is_blackwell)." + (" Block wider than the tensor (128 > 80)." if nd == 2 else ""),
                   direction="load")


def gluon_core():
    S, P = "gl_core", P_GL_CORE
    tt(S, P, "test_tma", "float16", [16, 16], [16, 1], [16, 16],
       "Gluon tma.async_store of a 16x16 block, NVMMASharedLayout(swizzle_byte_width=32, 16-bit).", swizzle=32,
       direction="store")
    tt(S, P, "test_proxy_fence_noinline_tma_store", "float16", [16, 16], [16, 1], [16, 16],
       "TMA store from a noinline function, NVMMASharedLayout(32, 16).", swizzle=32, direction="store")
    for pix in (32, 256, 512, 1024):
        for mc in ("unicast", "multicast"):
            for pol in ("policy0", "policy1"):
                tt(S, P, f"test_tma_im2col[{pol}-{mc}-32-32-{pix}]", "float32", [pix, 32], [32, 1], [pix, 32],
                   f"Tiled TMA store of the [{pix},32] fp32 block (NVMMASharedLayout swizzle 32, 32-bit); the load "
                   f"side of this test is an im2col TMA (not converted). 32 fp32 = 128 B rows with a 32 B swizzle: "
                   f"several boxes." + (" Rows > 256: several boxes along dim 0." if pix > 256 else ""),
                   swizzle=32, direction="store")
    tt(S, P, "test_gluon_tma_round_f32_to_tf32", "tfloat32", [16, 16], [16, 1], [16, 16],
       "TMA load with round_f32_to_tf32=True (descriptor element type TFLOAT32: fp32 data rounded to tf32 on the "
       "fly); NVMMASharedLayout(32, 32-bit).", swizzle=32)
    tt(S, P, "test_gluon_tma_round_f32_to_tf32", "float32", [16, 16], [16, 1], [16, 16],
       "TMA store of the rounded tile (plain fp32 descriptor).", swizzle=32, direction="store")
    for ci, cpc in enumerate(([2, 1], [1, 4], [4, 4])):
        split = [min(cpc[0], 2), min(cpc[1], 2)]
        bm, bn = 16 * split[0], 16 * split[1]
        for pol in ("policy0", "policy1"):
            pid = f"test_tma_multicast_copy[{pol}-ctas_per_cga{ci}]"
            tt(S, P, pid, "float16", [bm, bn], [bn, 1], [bm, bn],
               f"TMA load (multicast over a {cpc[0]}x{cpc[1]} CGA, CTA split {split}: each CTA issues a "
               f"{bm // split[0]}x{bn // split[1]} box) then TMA store; NVMMASharedLayout.get_default_for "
               f"(swizzle not stated).")
    for t in ("test_device_tma_load", "test_device_tma_store"):
        tt(S, P, t, "float16", [16, 16], [16, 1], [16, 16],
           "Device-side tma.make_tensor_descriptor, NVMMASharedLayout(32, 16-bit); one block.", swizzle=32,
           direction="load" if t.endswith("load") else "store")
    tt(S, P, "test_tma_slice", "float32", [128, 128], [128, 1], [128, 128],
       "TMA load into the second half of a [256,128] smem allocation (a subslice), then TMA store; "
       "NVMMASharedLayout.get_default_for (swizzle not stated).")
    tt(S, P, "test_proxy_fence_nested_multibuffer_prefix", "float32", [32, 32], [32, 1], [32, 32],
       "TMA store from stage 2 of a [4,32,32] multibuffer, NVMMASharedLayout(128, 32-bit).", swizzle=128,
       direction="store")
    for kind, rank in (("load", 1), ("load", 2), ("load", 5), ("store", 1), ("store", 2), ("store", 5)):
        shape = [2] * (rank - 1) + [256]
        for pi in range(9):
            tt(S, P, f"test_tma_cache_policy_copy[policy{pi}-True-{kind}-{rank}]", "float16", shape,
               contiguous_strides(shape), shape,
               f"TMA load + store of the whole rank-{rank} tensor with an L2 cache policy, NVMMASharedLayout(0, 16, "
               f"rank={rank}) (no swizzle). pred=False variants issue no copy.", swizzle=0)
    # test_tma_mma_shared_inputs: Hopper (instr M 16) and Blackwell (instr M 32) parametrizations
    for arch in ("hopper", "blackwell"):
        for wi, warps in enumerate(([8, 1], [4, 2], [4, 1])):
            for ri, reps in enumerate(([1, 1, 1], [2, 2, 2], [1, 4, 2])):
                for ci, cpc in enumerate(([1, 1], [2, 1], [4, 4])):
                    for two in ((False,) if arch == "hopper" else (False, True)):
                        if two and cpc[0] == 1:
                            continue
                        for mc in (False, True):
                            cpb = [cpc[0] // 2, 2 * cpc[1]] if two else cpc
                            instr = [32 if arch == "blackwell" else 16, 32, 16]
                            BM = instr[0] * warps[0] * cpc[0] * reps[0]
                            BN = instr[1] * warps[1] * cpb[1] * reps[1]
                            if arch == "blackwell" and BN >= 256 * cpc[1]:
                                BN = 256 * cpc[1]
                            BK = instr[2] * reps[2]
                            K = 64
                            pid = (f"test_tma_mma_shared_inputs[False-{mc}-{two}-ctas_per_cga{ci}-reps{ri}-"
                                   f"warps{wi}]")
                            cfg = (f"warps={warps}, reps={reps}, ctas_per_cga={cpc}"
                                   + ("; a 16-CTA cluster, skipped where unsupported" if cpc == [4, 4] else ""))
                            where = ("Hopper (warpgroup_mma)" if arch == "hopper" else
                                     "Blackwell (tcgen05_mma" + (", 2-CTA" if two else "") + ")")
                            tt(S, P, pid, "float16", [BM, K], [K, 1], [BM, BK],
                               f"A operand, {where}, {cfg}: a (BLOCK_M={BM}, K=64) fp16, block [BM, BK], 4 K tiles; "
                               f"CGA {cpc[0]}x{cpc[1]} split along M" + (", multicast" if mc else "") +
                               "; NVMMASharedLayout.get_default_for (swizzle != 0 asserted, value not stated).",
                               consumer="wgmma_a", major="k")
                            tt(S, P, pid, "float16", [K, BN], [BN, 1], [BK, BN],
                               f"B operand, {where}: b (K=64, BLOCK_N={BN}) row-major, block [BK, BN] (N-major).",
                               consumer="wgmma_b", major="mn")
    # Blackwell-only tile-mode loads/stores
    for gi, (cga, split) in enumerate((("[[1, 0]]", [2, 1]), ("[[0, 0], [1, 0]]", [2, 1]),
                                       ("[[1, 0], [0, 0]]", [2, 1]), ("[[1, 0], [2, 0]]", [4, 1]))):
        bm, bn = 32 * split[0], 128 * split[1]
        for pol in ("policy0", "policy1"):
            tt(S, P, f"test_tma_gather_scatter_multi_cta[{pol}-cga_layout{gi}]", "float16", [bm, bn], [bn, 1],
               [bm, bn], f"cga_layout={cga}: tiled TMA store of the gathered [BM,BN] block (the gather4/scatter4 "
               "parts are not converted). "
               "Blackwell-only test.", direction="store")
    for ci, cpc in enumerate(([2, 1], [2, 4], [4, 4])):
        for two in (True, False):
            cpb = [cpc[0] // 2, 2 * cpc[1]] if two else cpc
            BM, BN, BK = 128 * cpc[0], 64 * cpb[1], 32
            pid = f"test_tcgen05_mma_multicast_commit[{two}-ctas_per_cga{ci}]"
            tt(S, P, pid, "float16", [BM, BK], [BK, 1], [BM, BK],
               f"A of tcgen05_mma (multicast TMA load, CGA {cpc}, two_ctas={two}). Blackwell-only.",
               consumer="wgmma_a", major="k")
            tt(S, P, pid, "float16", [BK, BN], [BN, 1], [BK, BN],
               "B of tcgen05_mma, N-major (multicast TMA load). Blackwell-only." +
               (" BLOCK_N 512: several boxes." if BN > 256 else ""), consumer="wgmma_b", major="mn")
    pid = "test_tcgen05_mma_scaled_direct_multicast_barrier"
    tt(S, P, pid, "float8_e5m2", [256, 512], [512, 1], [256, 128],
       "A of tcgen05_mma_scaled (fp8e5), 4 K tiles, multicast over 4 CTAs. Blackwell-only.",
       consumer="wgmma_a", major="k")
    tt(S, P, pid, "float8_e5m2", [512, 256], [256, 1], [128, 256], "B (fp8e5), N-major. Blackwell-only.",
       consumer="wgmma_b", major="mn")
    for cga in ("two-ctas", "four-ctas", "multicast"):
        tt(S, P, f"test_cross_cta_tma[{cga}]", "int32", [128, 64], [64, 1], [128, 64],
           "TMA load into a cross-CTA subslice (rows 128..255 of a [256,64] allocation), NVMMASharedLayout(128, "
           "32-bit). Blackwell-only (the store/reduce variants must fail to compile and are not converted).",
           swizzle=128)
    # mma_scaled_tcgen05_copy (Blackwell): operands, 5-D scale tensors, C store
    M = N = 2048
    K = 4096
    for bk in (128, 256):
        for af, bf, vec in (("mxfp8", "mxfp8", 32), ("nvfp4", "nvfp4", 16), ("mxfp4", "mxfp8", 32),
                            ("mxfp8", "mxfp4", 32)):
            for ci, cpc in enumerate(((1, 1), (2, 1), (4, 1), (2, 2), (4, 2), (4, 4))):
                for mc in (True, False):
                    BM, BN = 128 * cpc[0], 128 * cpc[1]
                    pid = f"test_mma_scaled_tcgen05_copy[{mc}-ctas_per_cga{ci}-{af}_{bf}_block{vec}-{bk}-{M}-{N}-{K}]"
                    mixed = af != bf
                    for op, fmt, blk in (("A", af, BM), ("B", bf, BN)):
                        fp4 = fmt in ("mxfp4", "nvfp4")
                        epb = 2 if fp4 else 1
                        dt = "uint8" if fp4 else "float8_e4m3fn"
                        pad = (" fp4_padded layout (mixed precision): each fp4 is padded to a byte in smem." if
                               (fp4 and mixed) else "")
                        what = "packed fp4 (2 per byte, uint8)" if fp4 else "fp8e4m3"
                        if op == "A":
                            tt(S, P, pid, dt, [M, K // epb], [K // epb, 1], [blk, bk // epb],
                               f"A of tcgen05_mma_scaled: {what} [{M},{K // epb}] block [{blk},{bk // epb}]; CGA "
                               f"{cpc}.{pad} Blackwell-only.", consumer="wgmma_a", major="k")
                        else:
                            tt(S, P, pid, dt, [K // epb, N], [1, K // epb], [bk // epb, blk],
                               f"B of tcgen05_mma_scaled: descriptor [{N},{K // epb}] block [{blk},{bk // epb}] used "
                               f"permuted; recorded as (K,N).{pad} Blackwell-only.", consumer="wgmma_b", major="k")
                        rep_k_tot = (K // vec) // 4
                        sdt = "float8_e4m3fn" if fmt == "nvfp4" else "uint8"
                        sshape = [1, 2048 // 128, rep_k_tot, 2, 256]
                        tt(S, P, pid, sdt, sshape, contiguous_strides(sshape), [1, blk // 128, bk // (vec * 4), 2, 256],
                           f"{op} scales: 5-D packed-block scale tensor (M/128, K/{vec}/4, 32, 4, 4) viewed as "
                           f"[1, {sshape[1]}, {rep_k_tot}, 2, 256], block [1, BM/128, BK/({vec}*4), 2, 256], "
                           f"NVMMASharedLayout(swizzle 0, rank 5); copied to TMEM by tcgen05_copy. Blackwell-only.",
                           swizzle=0)
                    tt(S, P, pid, "float16", [M, N], [N, 1], [BM, BN],
                       f"C TMA store (fp16), block [{BM},{BN}]." + (" > 256 along a dim: several boxes." if max(BM, BN) > 256 else "")
                       + " Blackwell-only.", direction="store")


# ----------------------------------------------------------------------------------------------
# Build, de-duplicate, write
# ----------------------------------------------------------------------------------------------

FLAGS = [
    ("fp4_padded", "fp4_padded smem layout (mixed-precision fp4: each fp4 padded to a byte in smem)"),
    ("multicast", "multicast TMA over a CTA cluster"),
    ("TMA reduce", "TMA reduce (atomic add/min/max/and/or/xor) into the same tile"),
    ("cp.async.bulk (SM90_BULK_COPY_AUTO", "non-tensor bulk copy (cp.async.bulk) of the same tile"),
    ("TmaType=uint8_t", "TmaType=uint8_t (descriptor sees bytes)"),
    ("TmaType=uint64_t", "TmaType=uint64_t (descriptor packs elements into uint64)"),
    ("TMA store", "TMA store of the same tile"),
    ("skipped on Hopper", "some parametrizations run only on sm100"),
]

ABBR = {"cutlass": "cute", "tt_desc": "tt", "tt_exp": "ttexp", "tt_tmadesc": "ttrag", "gl_core": "gl",
        "gl_ragged": "glrag"}


def build():
    RAW.clear()
    cute_tma_tests(P_LOAD, "load")
    cute_mcast()
    cute_bulk(P_BULK_LD, "load")
    cute_tma_tests(P_STORE, "store")
    cute_bulk(P_BULK_ST, "store")
    triton_tensor_descriptor()
    triton_experimental()
    triton_ragged()
    gluon_core()

    groups = OrderedDict()
    for r in RAW:
        key = json.dumps([r["dtype"], r["shape"], r["strides"], r["tile"], r["consumer"], r["major"],
                          r["smem_swizzle_bytes"], r["base_align"]])
        groups.setdefault(key, []).append(r)
    cases = []
    counters = Counter()
    for rs in groups.values():
        loads = [r for r in rs if r["direction"] == "load"]
        prim = loads[0] if loads else rs[0]
        others = [r for r in rs if r is not prim]
        notes = prim["notes"]
        if others:
            seen = OrderedDict()
            for o in others:
                k = (o["source"]["path"].split("/")[-1], o["source"]["test"], o["direction"])
                seen.setdefault(k, None)
            listed = [f"{p}:{t} ({d})" for (p, t, d) in seen]
            if len(listed) > 12:
                by_fn = Counter((p, t.split("[")[0], d) for (p, t, d) in seen)
                listed = [f"{p}:{t} ({d}) x{n}" for (p, t, d), n in by_fn.items()]
            notes += " Same tile also in: " + "; ".join(listed) + "."
            flags = OrderedDict()
            for o in others:
                for pat, label in FLAGS:
                    if pat in o["notes"] and pat not in prim["notes"]:
                        flags.setdefault(label, None)
            if flags:
                notes += " Merged variants: " + "; ".join(flags) + "."
        counters[prim["src"]] += 1
        cid = f"{ABBR[prim['src']]}-{counters[prim['src']]:04d}"
        cases.append({
            "id": cid, "source": prim["source"], "dtype": prim["dtype"], "shape": prim["shape"],
            "strides": prim["strides"], "tile": prim["tile"], "consumer": prim["consumer"], "major": prim["major"],
            "smem_swizzle_bytes": prim["smem_swizzle_bytes"], "base_align": prim["base_align"],
            "notes": notes.strip(),
            "_direction": "load" if loads else prim["direction"], "_src": prim["src"], "_n_raw": len(rs),
        })
    return cases


def check_wgmma(c):
    """A: last two non-unit dims are (M,K); B: (K,N); major must match the contiguous dim."""
    dims = [i for i, s in enumerate(c["shape"]) if s != 1]
    a, b = dims[-2], dims[-1]
    if c["consumer"] == "wgmma_a":
        k_dim, mn_dim = b, a
    else:
        k_dim, mn_dim = a, b
    contig = [i for i, s in enumerate(c["strides"]) if s == 1]
    want = k_dim if c["major"] == "k" else mn_dim
    assert want in contig, (c["id"], c["major"], c["strides"])


def main():
    cases = build()
    for c in cases:
        if c["consumer"].startswith("wgmma"):
            check_wgmma(c)
    with open(SUITE, "w") as f:
        for c in cases:
            out = {k: v for k, v in c.items() if not k.startswith("_")}
            f.write(json.dumps(out) + "\n")
    stats = {
        "raw_transcriptions": len(RAW), "cases": len(cases),
        "by_source_file": Counter(c["source"]["path"] for c in cases),
        "by_dtype": Counter(c["dtype"] for c in cases),
        "by_rank": Counter(len(c["shape"]) for c in cases),
        "by_consumer": Counter(c["consumer"] for c in cases),
        "by_direction_primary": Counter(c["_direction"] for c in cases),
        "by_swizzle": Counter(str(c["smem_swizzle_bytes"]) for c in cases),
        "tile_gt_256_any_dim": sum(1 for c in cases if max(c["tile"]) > 256),
        "tile_exceeds_shape_any_dim": sum(1 for c in cases if any(t > s for t, s in zip(c["tile"], c["shape"]))),
        "has_stride0": sum(1 for c in cases if 0 in c["strides"]),
        "rank_gt_5": sum(1 for c in cases if len(c["shape"]) > 5),
        "blackwell_only": sum(1 for c in cases if "Blackwell-only" in c["notes"] or "skipped on Hopper" in c["notes"]),
    }
    print(json.dumps(stats, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
