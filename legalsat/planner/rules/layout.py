"""Layout algebra (ruleset `layout`) and padding (ruleset `padding`).

Every `layout` rule keeps the element map: it rewrites a Dims or Mov term into another
that enumerates exactly the same (src, dst) pairs (tests/rules check start => goal, and that
no different map is ever reachable). Padding changes an allocation, so it never merges
classes: it offers a new movement (`PadD` / `PadS`: request, padded, old and new stride)
whose plans join the request's under a PadSrc / PadDst wrapper (ruleset `strategy`).
"""

LAYOUT = """
(ruleset layout)
; reorder: the loop order of a copy is free
(rewrite (DCons n1 s1 d1 (DCons n2 s2 d2 r)) (DCons n2 s2 d2 (DCons n1 s1 d1 r)) :ruleset layout :name "reorder")
; coalesce: an outer dim that continues the inner one on both sides merges with it
(rule ((= x (DCons n1 s1 d1 (DCons n2 s2 d2 r))) (= s1 (* n2 s2)) (= d1 (* n2 d2)))
      ((union x (DCons (* n1 n2) s2 d2 r))) :ruleset layout :name "coalesce")
; unit dims enumerate one offset: drop them
(rewrite (DCons 1 s d r) r :ruleset layout :name "drop-unit")
; split a long dim into 256-element boxes (TMA global dims and boxes are bounded)
(rule ((= x (DCons n s d r)) (>= n 65536) (= 0 (% n 256)))
      ((union x (DCons (/ n 256) (* s 256) (* d 256) (DCons 256 s d r)))) :ruleset layout :name "split-256")
; widen: two contiguous elements as one of twice the width, when alignment allows
(rule ((= m (Copy eb sa da (DCons n 1 1 r))) (> n 1) (= 0 (% n 2)) (<= (* 2 eb) 16)
       (= 0 (% sa (* 2 eb))) (= 0 (% da (* 2 eb))) (Div r 2))
      ((union m (Copy (* 2 eb) sa da (DCons (/ n 2) 1 1 (Halve r))))) :ruleset layout :name "widen")
(rewrite (Halve (DNil)) (DNil) :ruleset layout :name "halve-nil")
(rule ((= h (Halve (DCons n s d r))) (> n 1) (= 0 (% s 2)) (= 0 (% d 2)))
      ((union h (DCons n (/ s 2) (/ d 2) (Halve r)))) :ruleset layout :name "halve")
(rule ((= h (Halve (DCons 1 s d r)))) ((union h (Halve r))) :ruleset layout :name "halve-unit")
; ragged: a contiguous dim that 16-byte vectors do not divide = a core they do + a tail
(rule ((= m (Copy eb sa da (DCons n 1 1 r))) (< eb 16) (= w (/ 16 eb)) (> n w) (!= 0 (% n w))
       (Div r w) (= 0 (% sa 16)) (= 0 (% da 16)))
      ((let c (- n (% n w)))
       (union m (Pieces (Copy eb sa da (DCons c 1 1 r))
                        (Shift (* c eb) (* c eb) (Copy eb 16 16 (DCons (% n w) 1 1 r)))))) :ruleset layout :name "ragged")

; ---- tile walks (dims sorted by src stride, outermost first, when the request is built) ----
; coalesce: a dim the tile covers whole, continued by the next outer dim, merges with it
(rule ((= x (TCons g1 n1 s1 (TCons g2 n2 s2 r))) (= n2 g2) (= s1 (* g2 s2)))
      ((union x (TCons (* g1 g2) (* n1 n2) s2 r))) :ruleset layout :name "tile-coalesce")
; a dim of extent 1 the tile does not overhang enumerates one offset: drop it
(rewrite (TCons 1 1 s r) r :ruleset layout :name "tile-drop-unit")
; broadcast dims (stride 0) hold one value: a separate movement loads it once (its smem stride is 0)
(rewrite (Unbcast (TNil)) (TNil) :ruleset layout :name "unbcast-nil")
(rule ((= u (Unbcast (TCons g n 0 r))) (> g 1)) ((union u (Unbcast r))) :ruleset layout :name "unbcast-drop")
(rule ((= u (Unbcast (TCons g n s r))) (!= s 0)) ((union u (TCons g n s (Unbcast r)))) :ruleset layout
      :name "unbcast-keep")
(rule ((= u (Unbcast (TCons 1 n 0 r)))) ((union u (TCons 1 n 0 (Unbcast r)))) :ruleset layout :name "unbcast-unit")
(rule ((= p (Lower m)) (= m (Load c eb sa x)) (= 1 (TBcast x)))
      ((let m2 (Load c eb sa (Unbcast x))) (Lower m2) (BcastOf m m2)) :ruleset layout :name "unbroadcast")
"""

def _pad_rule(side: str) -> str:
    """Pad the outermost `side` stride of a movement that needs a plan to a 16-byte multiple:
    the padded movement needs a plan too, and `PadS` / `PadD` records the relayout."""
    x, biggest, record = ("s", "MaxS", "PadS") if side == "src" else ("d", "MaxD", "PadD")
    src, dst = ("x2", "d") if side == "src" else ("s", "x2")
    return f"""
(rule ((= p (Lower m)) (= m (Copy eb sa da (DCons n s d r))) (AllowPad) (> n 1) (> {x} 1)
       (!= 0 (% (* {x} eb) 16)) (<= eb 16) (= q ({biggest} r)) (> {x} q))
      ((let x2 (* (/ (+ (* {x} eb) 15) 16) (/ 16 eb)))
       (let m2 (Copy eb sa da (DCons n {src} {dst} r)))
       (Lower m2) ({record} m m2 (* {x} eb) (* x2 eb)))
      :ruleset padding :name "pad-{side}")"""


PADDING = "(ruleset padding)" + _pad_rule("dst") + _pad_rule("src") + "\n"
