"""Strategy introduction and estimated time (ruleset `strategy`).

Each rule offers one way to run a movement that needs a plan (`Lower m`) and attaches its
estimated time in picoseconds as the node's extraction cost:

    time = launch + bytes * 2e6 / (bandwidth_GBps * efficiency_permille)

Efficiencies come from the target's cost facts (seeded as `Eff` / `EffWidth` tables) and the
bank model (`StagedWays eb`: the permille slowdown of the best staged tile's conflicts), so a
calibration changes numbers, not rules.

Placeholders (filled by legalsat.planner.rules.program): `{direct}` ... `{inspector_executor}`
are Strategy codes, `{warp_local}` a Distribution code, `{eff_tma}` ... `{eff_scatter}`
CostFact keys of the `Eff` table (`eff_scatter`: element-wise access); `{launch_ps}`,
`{bandwidth}` (GB/s), `{row_overhead}` and `{sort_bytes}` (bytes) come from the target's
CostFacts; `{inspector_launches}`, `{sort_launches}` and `{sort_eff}` are INSPECTOR_LAUNCHES,
GROUP_SORT_LAUNCHES and GROUP_SORT_EFFICIENCY; `{shuffle_small}` and `{interleave_channels}` are
terms.movement's SHUFFLE_SMALL_BYTES and INTERLEAVE_MAX_CHANNELS (shared with the plan builder
and the kernels).
"""

def _interleave_rule(dense: str) -> str:
    """The rule of the shuffle plan in interleave form whose `dense` side ("dst" or "src")
    holds each pixel's channels together: the channels are the dim contiguous on that side (n2,
    or n1), which is the pixels' stride there (d1, or s2); the planes' stride on the other side
    (s2, or d1) keeps 16-byte vectors. Placeholders stay for `STRATEGIES.format`."""
    c, pixel_stride, plane = ("n2", "d1", "s2") if dense == "dst" else ("n1", "s2", "d1")
    return (f"(rule ((= p (Lower m)) (Transp m) (= m (Copy eb sa da (DCons n1 1 d1 (DCons n2 s2 1 r)))) "
            f"(= {pixel_stride} {c}) (= 1 (% {c} 2))\n"
            f"       (<= {c} {{interleave_channels}}) (<= (* eb {c}) {{shuffle_small}}) (Div r k) (= 16 (* k eb))\n"
            f"       (= 0 (% (* {plane} eb) 16)) (= 0 (% sa 16)) (= 0 (% da 16)) (= b (Bytes m)) (= e (EffWidth 16)))\n"
            "      ((union (Cand {shuffle} m) (Shuffle m)) (Has {shuffle} m)\n"
            "       (set (cost_table_Shuffle m) (+ {launch_ps} (/ (* b 2000000) (* {bandwidth} e))))) :ruleset strategy\n"
            f'      :name "shuffle-interleave-{dense}")')


# launches an inspector-executor's estimate charges: fewer than it makes (three or four passes
# over the indices, then the executor), whose passes are short kernels. Charged as passes + 1,
# a top-3 MoE of 40 fp32 rows of 9001 over 300 experts ranks its direct plan first, which
# measured 29.4 us against the inspector-executor's 10.9 (device time on the H100,
# benchmarks/launch_bound_sweep_cudagraph.json), and `inspector` refits to another value.
INSPECTOR_LAUNCHES = 3
# launches of the device radix sort that orders a direct gather's grouped (MoE) slots first,
# and the share of copy bandwidth (per mille) its keys and values move at, read and written
GROUP_SORT_LAUNCHES = 4
GROUP_SORT_EFFICIENCY = 500

STRATEGIES = """
(ruleset strategy)
; every Copy form costs its number of accesses (fewer, wider accesses extract first)
(rule ((= m (Copy eb sa da x)) (= e (Elems x))) ((set (cost_table_Copy eb sa da x) e))
      :ruleset strategy :name "copy-tiebreak")

; ---- copies: direct is always possible (element by element at worst) ----
(rule ((= p (Lower m)) (= b (Bytes m)) (= w (Width m)) (= e (EffWidth w)))
      ((union (Cand {direct} m) (Direct m)) (Has {direct} m)
       (set (cost_table_Direct m) (+ {launch_ps} (/ (* b 2000000) (* {bandwidth} e))))) :ruleset strategy :name "direct")
(rule ((= p (Lower m)) (= m (Copy eb sa da x)) (= b (Bytes m)) (= e (EffScatter eb)))
      ((union (Cand {direct} m) (Direct m)) (Has {direct} m)
       (set (cost_table_Direct m) (+ {launch_ps} (/ (* b 2000000) (* {bandwidth} e))))) :ruleset strategy :name "direct-elementwise")
(rule ((= p (Lower m)) (TmaOk m) (= b (Bytes m)) (= w (Width m)) (= e (Eff {eff_tma})))
      ((union (Cand {tma} m) (Tma m)) (Has {tma} m)
       (set (cost_table_Tma m) (+ {launch_ps} (/ (* b 2000000) (* {bandwidth} e))))) :ruleset strategy :name "tma")
(rule ((= p (Lower m)) (TmaOk m) (Transp m) (= m (Copy eb sa da x)) (= b (Bytes m)) (= e (Eff {eff_tma_transpose}))
       (= k (StagedWays eb)))
      ((union (Cand {tma} m) (Tma m)) (Has {tma} m)
       (set (cost_table_Tma m) (+ {launch_ps} (/ (* (/ (* b k) 1000) 2000000) (* {bandwidth} e))))) :ruleset strategy
      :name "tma-transpose")
; staged: a shared tile turns a transposing copy into contiguous loads and stores; short
; runs (< 32 bytes; a dense short side is none, see `Run`) waste sectors
(rule ((= p (Lower m)) (Transp m) (= m (Copy eb sa da x)) (= b (Bytes m)) (= e (Eff {eff_staged}))
       (= k (StagedWays eb)) (= z (Run m)))
      ((union (Cand {staged_smem} m) (Staged m)) (Has {staged_smem} m)
       (set (cost_table_Staged m)
            (+ {launch_ps} (/ (* (/ (* b k) 1000) 2000000) (* {bandwidth} (max 1 (/ (* e (min z 32)) 32))))))) :ruleset strategy
      :name "staged")
; shuffle: the smaller side fits a warp's registers (<= 64 bytes): exchange in registers
(rule ((= p (Lower m)) (Transp m) (= b (Bytes m)) (= z (Small m)) (<= z {shuffle_small})
       (= e (Eff {eff_shuffle})))
      ((union (Cand {shuffle} m) (Shuffle m)) (Has {shuffle} m)
       (set (cost_table_Shuffle m) (+ {launch_ps} (/ (* b 2000000) (* {bandwidth} e))))) :ruleset strategy :name "shuffle")
; shuffle in interleave form: planes <-> an odd number of interleaved channels (NCHW <-> NHWC with
; 3 channels; terms.movement.interleave_form). Whole 16-byte vectors on both sides, regrouped in
; each thread's registers (legalsat.kernels.interleave): a 16-byte direct copy's efficiency. A
; staged tile pads odd channels to a power of two and stores them element by element; for even
; ones it measured as fast or faster on the H100 (benchmarks/interleave_probe.json), so they keep
; the shuffle's own estimate (and the plan builder refuses them: shuffle_even_channels)
""" + _interleave_rule("dst") + "\n" + _interleave_rule("src") + """

; ---- gathers: the slab one index moves decides the access efficiency ----
; a direct gather of grouped (MoE) slots sorts them by group first (a device radix sort:
; launches and {sort_bytes} bytes of keys and values per slot); other gathers sort nothing
(rule ((= p (Lower m)) (= m (Gath c k s))) ((set (SortPs m) 0)) :ruleset strategy :name "gather-unsorted")
(rule ((= p (Lower m)) (= m (Gath c k s)) (Groups g))
      ((set (SortPs m) (+ (* {sort_launches} {launch_ps}) (/ (* (* c {sort_bytes}) 2000000) (* {bandwidth} {sort_eff})))))
      :ruleset strategy
      :name "gather-sorted-by-group")
(rule ((= p (Lower m)) (= m (Gath c k s)) (= b (Bytes s)) (= w (Width s)) (= ew (EffWidth w)) (= z (SortPs m)))
      ((union (Cand {direct} m) (Direct m)) (Has {direct} m)
       (set (cost_table_Direct m)
            (+ (+ {launch_ps} z) (/ (* (* c b) 2000000) (* {bandwidth} (max 1 (/ (* ew (/ (* b 1000) (+ b {row_overhead}))) 1000)))))))
      :ruleset strategy :name "gather-direct")
; sorted and warp-local indices read neighbouring rows: no row's access pays the overhead of
; a scattered one (on the H100, 128-byte rows: 318 / 326 us sorted / warp-local, 394 random)
(rule ((= p (Lower m)) (= m (Gath c {sorted} s)) (= b (Bytes s)) (= w (Width s)) (= ew (EffWidth w)) (= z (SortPs m)))
      ((set (cost_table_Direct m) (+ (+ {launch_ps} z) (/ (* (* c b) 2000000) (* {bandwidth} ew)))))
      :ruleset strategy :name "gather-direct-sorted")
(rule ((= p (Lower m)) (= m (Gath c {warp_local} s)) (= b (Bytes s)) (= w (Width s)) (= ew (EffWidth w))
       (= z (SortPs m)))
      ((set (cost_table_Direct m) (+ (+ {launch_ps} z) (/ (* (* c b) 2000000) (* {bandwidth} ew)))))
      :ruleset strategy :name "gather-direct-warp-local")
(rule ((= p (Lower m)) (= m (Gath c k s)) (= b (Bytes s)) (= e (Eff {eff_scatter})) (= z (SortPs m)))
      ((union (Cand {direct} m) (Direct m)) (Has {direct} m)
       (set (cost_table_Direct m) (+ (+ {launch_ps} z) (/ (* (* c b) 2000000) (* {bandwidth} e))))) :ruleset strategy
      :name "gather-direct-elementwise")
(rule ((= p (Lower m)) (= m (Gath c {warp_local} s)) (= b (Bytes s)) (= w (Width s)) (= ew (EffWidth w))
       (= e (Eff {eff_shuffle_gather})))
      ((union (Cand {shuffle} m) (Shuffle m)) (Has {shuffle} m)
       (set (cost_table_Shuffle m) (+ {launch_ps} (/ (* (* c b) 2000000) (* {bandwidth} (max 1 (/ (* e ew) 1000)))))))
      :ruleset strategy :name "gather-window")
; inspector-executor: bucket indices on the GPU (three or four passes over them), then copy
; dense runs of rows (launches charged: INSPECTOR_LAUNCHES); pays off when indices cluster
; (analysis `Clustered`)
(rule ((= p (Lower m)) (Clustered m) (= m (Gath c k s)) (= b (Bytes s)) (= w (Width s))
       (= ew (EffWidth w)) (= e (Eff {eff_inspector})))
      ((union (Cand {inspector_executor} m) (InspExec m)) (Has {inspector_executor} m)
       (set (cost_table_InspExec m)
            (+ (* {inspector_launches} {launch_ps}) (+ (/ (* (* c 24) 2000000) (* {bandwidth} 500))
               (/ (* (* c b) 2000000) (* {bandwidth} (max 1 (/ (* (/ (* e ew) 1000) (/ (* b 4000) (+ (* b 4) {row_overhead}))) 1000))))))))
      :ruleset strategy :name "inspector-executor")

; ---- plans of a padded movement are plans of the request (under their Pad wrapper) ----
(rule ((PadD m m2 d d2) (Has c m2)) ((Has c m) (union (Cand c m) (PadDst d d2 (Cand c m2)))) :ruleset strategy
      :name "padded-dst")
(rule ((PadS m m2 s s2) (Has c m2)) ((Has c m) (union (Cand c m) (PadSrc s s2 (Cand c m2)))) :ruleset strategy
      :name "padded-src")

; ---- tile loads into shared memory: every tile of the walk read once (bytes are the tiles') ----
; a walk's dims cost the boxes they need (at most 256 elements, an inner row at most one
; 128-byte swizzle span): coalescing is extracted where it saves boxes, not where it adds them
(rule ((= x (TCons g n s r))) ((set (cost_table_TCons g n s r) (+ 1 (/ (+ n 255) 256)))) :ruleset strategy
      :name "tile-dim-boxes")
(rule ((= x (TCons g n 1 (TNil))) (LoadEb eb)) ((set (cost_table_TCons g n 1 (TNil)) (+ 1 (/ (+ (* n eb) 127) 128))))
      :ruleset strategy :name "tile-inner-boxes")
(rule ((= p (Lower m)) (= m (Load c eb sa x)) (TmaOk m) (= b (Bytes m)) (= e (Eff {eff_tma})))
      ((union (Cand {tma} m) (Tma m)) (Has {tma} m)
       (set (cost_table_Tma m) (+ {launch_ps} (/ (* b 1000000) (* {bandwidth} e))))) :ruleset strategy :name "tile-tma")
; a pointer load moves each byte through registers on its way to shared memory: twice the traffic
(rule ((= p (Lower m)) (= m (Load c eb sa x)) (= b (Bytes m)) (= w (LoadWidth m)) (= e (EffWidth w)))
      ((union (Cand {direct} m) (Direct m)) (Has {direct} m)
       (set (cost_table_Direct m) (+ {launch_ps} (/ (* b 2000000) (* {bandwidth} e))))) :ruleset strategy
      :name "tile-direct")
(rule ((BcastOf m m2) (Has c m2)) ((Has c m) (union (Cand c m) (Bcast (Cand c m2)))) :ruleset strategy
      :name "broadcast")
"""
