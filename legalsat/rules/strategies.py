"""Strategy introduction and estimated time (ruleset `strategy`).

Each rule offers one way to run a movement that needs a plan (`Lower m`) and attaches its
estimated time in picoseconds as the node's extraction cost:

    time = launch + bytes * 2e6 / (bandwidth_GBps * efficiency_permille)

Efficiencies come from the target's cost facts (seeded as `Eff` / `EffWidth` tables) and the
bank model (`StagedWays eb`: the permille slowdown of the best staged tile's conflicts), so a
calibration changes numbers, not rules. Codes: 0 direct, 1 tma, 2 staged_smem, 3 shuffle, 4 inspector_executor;
`Eff 5` is a transposing TMA copy (boxes permuted in registers), `Eff 6` a window-local row
gather (shuffle), `Eff 100` element-wise access.
"""

# {L}: launch overhead (ps); {BW}: copy bandwidth (GB/s); {ROW}: row overhead (bytes); {SORT}:
# bytes a grouped gather's sort moves per slot; filled in from the target's CostFacts
STRATEGIES = """
(ruleset strategy)
; every Copy form costs its number of accesses (fewer, wider accesses extract first)
(rule ((= m (Copy eb sa da x)) (= e (Elems x))) ((set (cost_table_Copy eb sa da x) e)) :ruleset strategy)

; ---- copies: direct is always possible (element by element at worst) ----
(rule ((= p (Lower m)) (= b (Bytes m)) (= w (Width m)) (= e (EffWidth w)))
      ((union (Cand 0 m) (Direct m)) (Has 0 m)
       (set (cost_table_Direct m) (+ {L} (/ (* b 2000000) (* {BW} e))))) :ruleset strategy)
(rule ((= p (Lower m)) (= m (Copy eb sa da x)) (= b (Bytes m)) (= e (Eff 100)))
      ((union (Cand 0 m) (Direct m)) (Has 0 m)
       (set (cost_table_Direct m) (+ {L} (/ (* b 2000000) (* {BW} e))))) :ruleset strategy)
(rule ((= p (Lower m)) (TmaOk m) (= b (Bytes m)) (= w (Width m)) (= e (Eff 1)))
      ((union (Cand 1 m) (Tma m)) (Has 1 m)
       (set (cost_table_Tma m) (+ {L} (/ (* b 2000000) (* {BW} e))))) :ruleset strategy)
(rule ((= p (Lower m)) (TmaOk m) (Transp m) (= m (Copy eb sa da x)) (= b (Bytes m)) (= e (Eff 5))
       (= k (StagedWays eb)))
      ((union (Cand 1 m) (Tma m)) (Has 1 m)
       (set (cost_table_Tma m) (+ {L} (/ (* (/ (* b k) 1000) 2000000) (* {BW} e))))) :ruleset strategy)
; staged: a shared tile turns a transposing copy into contiguous loads and stores; small
; contiguous sides (< 32 bytes) waste sectors
(rule ((= p (Lower m)) (Transp m) (= m (Copy eb sa da x)) (= b (Bytes m)) (= e (Eff 2))
       (= k (StagedWays eb)) (= z (Small m)))
      ((union (Cand 2 m) (Staged m)) (Has 2 m)
       (set (cost_table_Staged m)
            (+ {L} (/ (* (/ (* b k) 1000) 2000000) (* {BW} (/ (* e (min z 32)) 32)))))) :ruleset strategy)
; shuffle: the smaller side fits a warp's registers (<= 64 bytes): exchange in registers
(rule ((= p (Lower m)) (Transp m) (= b (Bytes m)) (= z (Small m)) (<= z 64) (= e (Eff 3)))
      ((union (Cand 3 m) (Shuffle m)) (Has 3 m)
       (set (cost_table_Shuffle m) (+ {L} (/ (* b 2000000) (* {BW} e))))) :ruleset strategy)

; ---- gathers: the slab one index moves decides the access efficiency ----
; a direct gather of grouped (MoE) slots sorts them by group first (a device radix sort:
; launches and {SORT} bytes of keys and values per slot); other gathers sort nothing
(rule ((= p (Lower m)) (= m (Gath c k s))) ((set (SortPs m) 0)) :ruleset strategy)
(rule ((= p (Lower m)) (= m (Gath c k s)) (Groups g))
      ((set (SortPs m) (+ (* 4 {L}) (/ (* (* c {SORT}) 2000000) (* {BW} 500))))) :ruleset strategy)
(rule ((= p (Lower m)) (= m (Gath c k s)) (= b (Bytes s)) (= w (Width s)) (= ew (EffWidth w)) (= z (SortPs m)))
      ((union (Cand 0 m) (Direct m)) (Has 0 m)
       (set (cost_table_Direct m)
            (+ (+ {L} z) (/ (* (* c b) 2000000) (* {BW} (/ (* ew (/ (* b 1000) (+ b {ROW}))) 1000))))))
      :ruleset strategy)
(rule ((= p (Lower m)) (= m (Gath c k s)) (= b (Bytes s)) (= e (Eff 100)) (= z (SortPs m)))
      ((union (Cand 0 m) (Direct m)) (Has 0 m)
       (set (cost_table_Direct m) (+ (+ {L} z) (/ (* (* c b) 2000000) (* {BW} e))))) :ruleset strategy)
(rule ((= p (Lower m)) (= m (Gath c 4 s)) (= b (Bytes s)) (= w (Width s)) (= ew (EffWidth w)) (= e (Eff 6)))
      ((union (Cand 3 m) (Shuffle m)) (Has 3 m)
       (set (cost_table_Shuffle m) (+ {L} (/ (* (* c b) 2000000) (* {BW} (/ (* e ew) 1000))))))
      :ruleset strategy)
; inspector-executor: bucket indices on the GPU (three passes over them), then copy dense
; runs of rows; pays off when indices cluster (analysis `Clustered`)
(rule ((= p (Lower m)) (Clustered m) (= m (Gath c k s)) (= b (Bytes s)) (= w (Width s))
       (= ew (EffWidth w)) (= e (Eff 4)))
      ((union (Cand 4 m) (InspExec m)) (Has 4 m)
       (set (cost_table_InspExec m)
            (+ (* 3 {L}) (+ (/ (* (* c 24) 2000000) (* {BW} 500))
               (/ (* (* c b) 2000000) (* {BW} (/ (* (/ (* e ew) 1000) (/ (* b 4000) (+ (* b 4) {ROW}))) 1000)))))))
      :ruleset strategy)

; ---- plans of a padded movement are plans of the request (under their Pad wrapper) ----
(rule ((PadD m m2 d d2) (Has c m2)) ((Has c m) (union (Cand c m) (PadDst d d2 (Cand c m2)))) :ruleset strategy)
(rule ((PadS m m2 s s2) (Has c m2)) ((Has c m) (union (Cand c m) (PadSrc s s2 (Cand c m2)))) :ruleset strategy)

; ---- tile loads into shared memory ----
(rule ((= p (Lower m)) (= m (Tile k s)) (TmaOk s) (= b (Bytes s)) (= e (Eff 1)))
      ((union (Cand 1 m) (Tma m)) (Has 1 m) (set (cost_table_Tma m) (/ (* b 2000000) (* {BW} e)))) :ruleset strategy)
(rule ((= p (Lower m)) (= m (Tile k s)) (= b (Bytes s)) (= w (Width s)) (= e (EffWidth w)))
      ((union (Cand 0 m) (Direct m)) (Has 0 m)
       (set (cost_table_Direct m) (+ 1000 (/ (* b 2000000) (* {BW} e))))) :ruleset strategy)
(rule ((= p (Lower m)) (= m (Tile k s)) (Transp s) (= b (Bytes s)) (= e (Eff 100)))
      ((union (Cand 0 m) (Direct m)) (Has 0 m)
       (set (cost_table_Direct m) (+ 1000 (/ (* b 2000000) (* {BW} e))))) :ruleset strategy)
"""
