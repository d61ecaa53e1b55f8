"""The ways a movement can be lowered. Each strategy is one constructor of the planner's
egglog `Plan` sort; `code` is its number in the planner's `(Cand code movement)` terms.
The planner's egglog program is assembled from these enums (legalsat.planner.rules.program),
so the Python and egglog sides cannot drift apart."""

from __future__ import annotations

from enum import StrEnum


class Strategy(StrEnum):
    DIRECT = "direct"                           # pointer loads and stores, no staging
    TMA = "tma"                                 # tensor-memory-accelerator boxes through shared memory
    STAGED_SMEM = "staged_smem"                 # a transposing tile staged through shared memory
    SHUFFLE = "shuffle"                         # data exchanged in registers (warp shuffles)
    INSPECTOR_EXECUTOR = "inspector_executor"   # index inspection on the GPU, then a dense copy

    @property
    def code(self) -> int:
        return _CODES[self]

    @property
    def constructor(self) -> str:
        """The egglog `Plan` constructor of this strategy."""
        return _CONSTRUCTORS[self]

    @classmethod
    def from_constructor(cls, name: str) -> Strategy:
        """The strategy of an egglog `Plan` constructor (KeyError if it is none)."""
        return _BY_CONSTRUCTOR[name]


_CODES = {s: i for i, s in enumerate(Strategy)}
_CONSTRUCTORS = {Strategy.DIRECT: "Direct", Strategy.TMA: "Tma", Strategy.STAGED_SMEM: "Staged",
                 Strategy.SHUFFLE: "Shuffle", Strategy.INSPECTOR_EXECUTOR: "InspExec"}
_BY_CONSTRUCTOR = {c: s for s, c in _CONSTRUCTORS.items()}
