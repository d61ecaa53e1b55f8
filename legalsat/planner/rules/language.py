"""The term language the planner saturates (egglog sorts), and its analysis tables.

A movement's dims are a cons list of (extent, src stride, dst stride), strides in elements
of the movement's current element width `eb` (bytes). A Dims e-class stands for the *set*
of (src offset, dst offset) pairs its dims enumerate, so every member of a class has the
same element map: that is the invariant every layout rule must keep.

A tile load walks a tensor tile by tile: its dims are a cons list of (tensor extent, tile
extent, src stride), outermost first; a TDims e-class stands for the set of (tile position,
in-tile index, src offset) triples its dims enumerate, with the tiles landing in shared memory
in the order of the dims (the innermost dim contiguous, as TMA lands a box).

Codes are not written here: `Cand`'s first argument is a `Strategy.code`, `Gath`'s second a
`Distribution.code`, `Load`'s first a `Consumer.code`, `Eff`'s key a `CostFact` (see
legalsat.planner.rules.program, which fills the placeholders).
"""

LANGUAGE = """
(datatype Dims (DNil) (DCons i64 i64 i64 Dims))
(datatype TDims (TNil) (TCons i64 i64 i64 TDims)) ; tensor extent, tile extent, src stride (elements)
(datatype Mov
  (Copy i64 i64 i64 Dims)      ; element bytes, src base align, dst base align, dims
  (Pieces Mov Mov)             ; both movements: a core and a tail
  (Shift i64 i64 Mov)          ; the movement with src / dst bases advanced (bytes)
  (Gath i64 i64 Mov)           ; index count, distribution code, the slab one index moves
  (Load i64 i64 i64 TDims))    ; consumer code, element bytes, src base align, the tile walk
(datatype Plan
  (Direct Mov) (Tma Mov) (Staged Mov) (Shuffle Mov) (InspExec Mov)
  (PadSrc i64 i64 Plan :cost 2000000) ; needs the src pitch re-allocated (old, new stride, bytes):
  (PadDst i64 i64 Plan :cost 2000000) ; a relayout costs the caller, so 2 us are charged
  (Bcast Plan))                ; loads each broadcast (stride-0) value once: its smem stride is 0
(constructor Lower (Mov) Plan :unextractable)    ; a movement that needs a plan
(constructor Cand (i64 Mov) Plan :unextractable) ; every plan of one strategy for a movement
(constructor Halve (Dims) Dims :unextractable)   ; the dims with every stride halved
(constructor Unbcast (TDims) TDims :unextractable) ; the tile dims without their broadcast dims

; analysis tables: lattices (merge min / max) so members of one class agree
(function Elems (Dims) i64 :merge (min old new))
(function Rank (Dims) i64 :merge (min old new))      ; dims of extent > 1
(function SrcRun (Dims) i64 :merge (max old new))    ; extent of the src-contiguous dim
(function DstRun (Dims) i64 :merge (max old new))
(function MaxD (Dims) i64 :merge (max old new))      ; largest dst stride of a dim > 1
(function MaxS (Dims) i64 :merge (max old new))
(relation Div (Dims i64))                            ; every stride divisible by k
(function Bytes (Mov) i64 :merge (min old new))
(function Width (Mov) i64 :merge (max old new))      ; access bytes of a non-transposing form
(function Small (Mov) i64 :merge (max old new))      ; bytes of the smaller contiguous side
(function Run (Mov) i64 :merge (max old new))        ; bytes of the shorter run a staged tile moves
(relation Transp (Mov))                              ; src and dst contiguous along different dims
(relation TmaOk (Mov))                               ; a form whose descriptors may be legal
(relation TmaUnit ())                                ; the target has a tensor memory accelerator
(relation AllowPad ())
(relation Has (i64 Mov))                             ; a plan of strategy code exists
(relation PadD (Mov Mov i64 i64))                    ; movement, padded movement, old, new dst stride (bytes)
(relation PadS (Mov Mov i64 i64))
(relation Groups (i64))
(relation ClusteredDist (i64))                       ; distribution codes whose indices cluster
(relation Clustered (Mov))                           ; a gather whose indices cluster (clustered, paged, experts)
(function SortPs (Mov) i64 :merge (max old new))      ; ps to order a gather's slots first (grouped: by expert)

; tile walks
(function TElems (TDims) i64 :merge (min old new))   ; elements of one tile
(function TTiles (TDims) i64 :merge (min old new))   ; tile positions of the walk
(function TRank (TDims) i64 :merge (min old new))    ; dims (each a descriptor dim)
(function TBig (TDims) i64 :merge (min old new))     ; dims the tile spans (extent > 1)
(function TInner (TDims) i64 :merge (max old new))   ; tile extent of the innermost dim, if contiguous
(function TBcast (TDims) i64 :merge (max old new))   ; 1 when a dim is broadcast (stride 0)
(function LoadWidth (Mov) i64 :merge (max old new))  ; access bytes of a tile load's pointer loads
(relation TOuterDiv (TDims i64))                     ; every stride but the innermost divisible by k
(relation BcastOf (Mov Mov))                         ; a tile load, and the same load without broadcast dims

; cost tables read by egglog's extractor (estimated picoseconds)
(function cost_table_Direct (Mov) i64 :merge (min old new))
(function cost_table_Tma (Mov) i64 :merge (min old new))
(function cost_table_Staged (Mov) i64 :merge (min old new))
(function cost_table_Shuffle (Mov) i64 :merge (min old new))
(function cost_table_InspExec (Mov) i64 :merge (min old new))
(function cost_table_Copy (i64 i64 i64 Dims) i64 :merge (min old new))
(function cost_table_TCons (i64 i64 i64 TDims) i64 :merge (max old new)) ; boxes a tile dim needs
(relation LoadEb (i64))                              ; the element bytes of the request's tile load
(function EffWidth (i64) i64 :no-merge)              ; permille of copy bandwidth by access width
(function Eff (i64) i64 :no-merge)                   ; permille of copy bandwidth by CostFact
(function EffScatter (i64) i64 :no-merge)            ; permille of a copy element by element, by element bytes
(function StagedWays (i64) i64 :no-merge)            ; permille slowdown of the best staged tile
"""
