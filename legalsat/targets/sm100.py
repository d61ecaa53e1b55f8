"""Blackwell (B200), from the CUDA driver API documentation only (not yet driver-verified).

The documented rules are what NVIDIA states; on sm90 the driver turned out stricter (see
sm90.py), so treat sm100 verdicts of "legal" as provisional until a driver corpus exists.
"""

from legalsat.targets.base import BankFacts, CostFacts, Target, TmaFacts
from legalsat.terms.dtypes import DTYPES

SM100 = Target(
    name="sm100",
    description="NVIDIA Blackwell (B200); TMA rules from the driver documentation",
    tma=TmaFacts(
        source="documentation",
        dtypes=frozenset(DTYPES),
        swizzles=frozenset({"none", "32B", "64B", "128B", "128B_atom_32B",
                            "128B_atom_32B_flip_8B", "128B_atom_64B"}),
    ),
    banks=BankFacts(banks=32, bank_bytes=4, lanes=32),
    smem_per_block_bytes=232448,
    sm_count=148,
    l2_bytes=126 << 20,  # B200, both dies' partitions
    # analytic: HBM3e copy assumed ~6.5 TB/s until measured
    cost=CostFacts(source="analytic", copy_bandwidth_gbps=6500),
)
