"""E-class analyses (ruleset `analysis`). They only fill tables of terms that already exist,
so the ruleset always saturates; it is saturated before every layout round."""

ANALYSIS = """
(ruleset analysis)
(rule ((= x (DNil)))
      ((set (Elems x) 1) (set (Rank x) 0) (set (SrcRun x) 0) (set (DstRun x) 0)
       (set (MaxD x) 0) (set (MaxS x) 0)
       (Div x 1) (Div x 2) (Div x 4) (Div x 8) (Div x 16)) :ruleset analysis :name "dnil-facts")
(rule ((= x (DCons n s d r)) (= e (Elems r))) ((set (Elems x) (* n e))) :ruleset analysis :name "elems")
(rule ((= x (DCons n s d r)) (> n 1) (= k (Rank r))) ((set (Rank x) (+ k 1))) :ruleset analysis :name "rank")
(rule ((= x (DCons 1 s d r)) (= k (Rank r))) ((set (Rank x) k)) :ruleset analysis :name "rank-unit")
(rule ((= x (DCons n 1 d r)) (> n 1)) ((set (SrcRun x) n)) :ruleset analysis :name "src-run")
(rule ((= x (DCons n s 1 r)) (> n 1)) ((set (DstRun x) n)) :ruleset analysis :name "dst-run")
(rule ((= x (DCons n s d r)) (= k (SrcRun r))) ((set (SrcRun x) k)) :ruleset analysis :name "src-run-inner")
(rule ((= x (DCons n s d r)) (= k (DstRun r))) ((set (DstRun x) k)) :ruleset analysis :name "dst-run-inner")
(rule ((= x (DCons n s d r)) (> n 1) (= q (MaxD r))) ((set (MaxD x) (max q d))) :ruleset analysis :name "max-dst")
(rule ((= x (DCons 1 s d r)) (= q (MaxD r))) ((set (MaxD x) q)) :ruleset analysis :name "max-dst-unit")
(rule ((= x (DCons n s d r)) (> n 1) (= q (MaxS r))) ((set (MaxS x) (max q s))) :ruleset analysis :name "max-src")
(rule ((= x (DCons 1 s d r)) (= q (MaxS r))) ((set (MaxS x) q)) :ruleset analysis :name "max-src-unit")
(rule ((= x (DCons n s d r)) (Div r k) (= 0 (% s k)) (= 0 (% d k))) ((Div x k)) :ruleset analysis :name "div")
(rule ((= x (DCons 1 s d r)) (Div r k)) ((Div x k)) :ruleset analysis :name "div-unit")

(rule ((= m (Copy eb sa da x)) (= e (Elems x))) ((set (Bytes m) (* e eb))) :ruleset analysis :name "copy-bytes")
(rule ((= m (Copy eb sa da (DNil)))) ((set (Width m) eb)) :ruleset analysis :name "width-scalar")
(rule ((= m (Copy eb sa da (DCons n 1 1 r))) (> n 1)) ((set (Width m) eb)) :ruleset analysis :name "width-contiguous")
(rule ((= m (Pieces a b)) (= x (Bytes a)) (= y (Bytes b))) ((set (Bytes m) (+ x y))) :ruleset analysis :name "pieces-bytes")
(rule ((= m (Pieces a b)) (= w (Width a))) ((set (Width m) w)) :ruleset analysis :name "pieces-width")
(rule ((= m (Shift p q a)) (= x (Bytes a))) ((set (Bytes m) x)) :ruleset analysis :name "shift-bytes")
(rule ((= m (Shift p q a)) (= w (Width a))) ((set (Width m) w)) :ruleset analysis :name "shift-width")
(rule ((= m (Gath c k s)) (= x (Bytes s))) ((set (Bytes m) (* c x))) :ruleset analysis :name "gather-bytes")
; tile walks: sizes, rank, the innermost contiguous extent, stride divisibility, broadcast dims
(rule ((= x (TNil))) ((set (TElems x) 1) (set (TTiles x) 1) (set (TRank x) 0) (set (TBig x) 0) (set (TBcast x) 0)
                      (TOuterDiv x 1) (TOuterDiv x 2) (TOuterDiv x 4) (TOuterDiv x 8) (TOuterDiv x 16))
      :ruleset analysis :name "tnil-facts")
(rule ((= x (TCons g n s r)) (= e (TElems r))) ((set (TElems x) (* n e))) :ruleset analysis :name "tile-elems")
(rule ((= x (TCons g n s r)) (= t (TTiles r))) ((set (TTiles x) (* t (/ (+ g (- n 1)) n))))
      :ruleset analysis :name "tile-count")
(rule ((= x (TCons g n s r)) (= q (TRank r))) ((set (TRank x) (+ q 1))) :ruleset analysis :name "tile-rank")
(rule ((= x (TCons g n s r)) (> n 1) (= q (TBig r))) ((set (TBig x) (+ q 1))) :ruleset analysis :name "tile-big")
(rule ((= x (TCons g 1 s r)) (= q (TBig r))) ((set (TBig x) q)) :ruleset analysis :name "tile-big-unit")
(rule ((= x (TCons g n 1 (TNil)))) ((set (TInner x) n)) :ruleset analysis :name "tile-inner")
(rule ((= x (TCons g n s r)) (= k (TInner r))) ((set (TInner x) k)) :ruleset analysis :name "tile-inner-outer")
(rule ((= x (TCons g n 0 r)) (> g 1)) ((set (TBcast x) 1)) :ruleset analysis :name "tile-broadcast")
(rule ((= x (TCons g n s r)) (= b (TBcast r))) ((set (TBcast x) b)) :ruleset analysis :name "tile-broadcast-outer")
(rule ((= x (TCons g n s r)) (= r (TCons g2 n2 s2 r2)) (TOuterDiv r k) (= 0 (% s k))) ((TOuterDiv x k))
      :ruleset analysis :name "tile-div")
(rule ((= x (TCons g n s (TNil))) (TOuterDiv (TNil) k)) ((TOuterDiv x k)) :ruleset analysis :name "tile-div-inner")
(rule ((= m (Load c eb sa x)) (= e (TElems x)) (= t (TTiles x))) ((set (Bytes m) (* (* e t) eb)))
      :ruleset analysis :name "load-bytes")
; the widest access a pointer load of the tile's rows can make (16 bytes at most, as aligned)
(rule ((= m (Load c eb sa x))) ((set (LoadWidth m) eb)) :ruleset analysis :name "load-width-scalar")
(rule ((= m (Load c eb sa x)) (= n (TInner x)) (= v (* n eb)))
      ((set (LoadWidth m) (min 16 (min sa (& v (- 0 v)))))) :ruleset analysis :name "load-width")
; indices that cluster: a distribution whose entries come together (ClusteredDist), or routed to expert groups
(rule ((= m (Gath c k s)) (ClusteredDist k)) ((Clustered m)) :ruleset analysis :name "clustered-distribution")
(rule ((= m (Gath c k s)) (Groups g)) ((Clustered m)) :ruleset analysis :name "clustered-groups")

; a transposing form: one dim contiguous in src only, another contiguous in dst only
(rule ((= m (Copy eb sa da (DCons n1 1 d1 (DCons n2 s2 1 r)))) (> n1 1) (> n2 1) (!= d1 1) (!= s2 1))
      ((Transp m) (set (Small m) (* eb (min n1 n2))) (set (Run m) (* eb (min n1 n2)))) :ruleset analysis
      :name "transposing")
; a short side that is dense (the other dim's stride on that side is its extent: NCHW -> NHWC
; with 3 channels) is no short run for a tile holding it whole: the tile's rows continue each
; other there, so its stores (or loads) fill whole sectors
(rule ((= m (Copy eb sa da (DCons n1 1 d1 (DCons n2 s2 1 r)))) (Transp m) (= d1 n2))
      ((set (Run m) (* eb n1))) :ruleset analysis :name "transposing-dense-dst")
(rule ((= m (Copy eb sa da (DCons n1 1 d1 (DCons n2 s2 1 r)))) (Transp m) (= s2 n1))
      ((set (Run m) (* eb n2))) :ruleset analysis :name "transposing-dense-src")

; (TmaUnit): the target has a tensor memory accelerator (seeded per target)
; a tile load may be TMA-legal: contiguous inner dim whose tile extent is whole 16-byte units,
; 16-byte aligned base and strides, no broadcast dim, rank <= 5, or dims beyond 5 the tile
; does not span (folded into one descriptor dim, as CuTe does)
(rule ((TmaUnit) (= m (Load c eb sa x)) (= n (TInner x)) (= 0 (% (* n eb) 16)) (= 0 (% sa 16)) (TOuterDiv x k)
       (= 16 (* k eb)) (= 0 (TBcast x)) (= q (TRank x)) (<= q 5))
      ((TmaOk m)) :ruleset analysis :name "tma-ok-tile")
(rule ((TmaUnit) (= m (Load c eb sa x)) (= n (TInner x)) (= 0 (% (* n eb) 16)) (= 0 (% sa 16)) (TOuterDiv x k)
       (= 16 (* k eb)) (= 0 (TBcast x)) (= q (TRank x)) (> q 5) (= b (TBig x)) (<= b 4))
      ((TmaOk m)) :ruleset analysis :name "tma-ok-tile-folded")

; TMA may be legal: contiguous inner dim(s), 16-byte aligned bases and strides, rank <= 5,
; inner extents of at least 16 bytes (the driver's rules are checked again on the result)
(rule ((TmaUnit) (= m (Copy eb sa da (DCons n 1 1 r))) (<= eb 8) (Div r k) (= 16 (* k eb))
       (= 0 (% sa 16)) (= 0 (% da 16)) (>= (* n eb) 16) (= q (Rank r)) (<= q 4))
      ((TmaOk m)) :ruleset analysis :name "tma-ok")
(rule ((TmaUnit) (= m (Copy 16 sa da (DCons n 1 1 r))) (= 0 (% sa 16)) (= 0 (% da 16)) (= q (Rank r)) (<= q 4))
      ((TmaOk m)) :ruleset analysis :name "tma-ok-16B-elements")
(rule ((TmaUnit) (= m (Copy eb sa da (DCons n1 1 d1 (DCons n2 s2 1 r)))) (Transp m) (Div r k) (= 16 (* k eb))
       (= 0 (% (* d1 eb) 16)) (= 0 (% (* s2 eb) 16)) (= 0 (% sa 16)) (= 0 (% da 16))
       (>= (* n1 eb) 16) (>= (* n2 eb) 16) (= q (Rank r)) (<= q 3))
      ((TmaOk m)) :ruleset analysis :name "tma-ok-transpose")
"""
