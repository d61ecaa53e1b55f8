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
(rule ((= m (Tile k s)) (= x (Bytes s))) ((set (Bytes m) x)) :ruleset analysis :name "tile-bytes")
; indices that cluster: a distribution whose entries come together (ClusteredDist), or routed to expert groups
(rule ((= m (Gath c k s)) (ClusteredDist k)) ((Clustered m)) :ruleset analysis :name "clustered-distribution")
(rule ((= m (Gath c k s)) (Groups g)) ((Clustered m)) :ruleset analysis :name "clustered-groups")

; a transposing form: one dim contiguous in src only, another contiguous in dst only
(rule ((= m (Copy eb sa da (DCons n1 1 d1 (DCons n2 s2 1 r)))) (> n1 1) (> n2 1) (!= d1 1) (!= s2 1))
      ((Transp m) (set (Small m) (* eb (min n1 n2)))) :ruleset analysis :name "transposing")

; TMA may be legal: contiguous inner dim(s), 16-byte aligned bases and strides, rank <= 5,
; inner extents of at least 16 bytes (the driver's rules are checked again on the result)
(rule ((= m (Copy eb sa da (DCons n 1 1 r))) (<= eb 8) (Div r k) (= 16 (* k eb))
       (= 0 (% sa 16)) (= 0 (% da 16)) (>= (* n eb) 16) (= q (Rank r)) (<= q 4))
      ((TmaOk m)) :ruleset analysis :name "tma-ok")
(rule ((= m (Copy 16 sa da (DCons n 1 1 r))) (= 0 (% sa 16)) (= 0 (% da 16)) (= q (Rank r)) (<= q 4))
      ((TmaOk m)) :ruleset analysis :name "tma-ok-16B-elements")
(rule ((= m (Copy eb sa da (DCons n1 1 d1 (DCons n2 s2 1 r)))) (Transp m) (Div r k) (= 16 (* k eb))
       (= 0 (% (* d1 eb) 16)) (= 0 (% (* s2 eb) 16)) (= 0 (% sa 16)) (= 0 (% da 16))
       (>= (* n1 eb) 16) (>= (* n2 eb) 16) (= q (Rank r)) (<= q 3))
      ((TmaOk m)) :ruleset analysis :name "tma-ok-transpose")
"""
