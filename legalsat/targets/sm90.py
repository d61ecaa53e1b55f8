"""Hopper (H100 / H200), measured on an H100 with driver 580.159.04 (CUDA 13.0).

Beyond the driver documentation, the driver on this target (see README, "TMA legality"):
- rejects the sm100 packed dtypes (16u4_align8b, 16u4_align16b, 16u6_align16b) and the
  128B_atom_* swizzles outright;
- requires box_dim[0] bytes to be a multiple of 16 for interleaved layouts too;
- rejects a box whose footprint, prod(box_dim[i] // element_strides[i]) * element bytes,
  exceeds 233472 bytes (228 KiB, the shared memory of one SM), with integer division;
- rejects global addresses at or above 2^57;
- does not enforce the documented "interleave 32B requires swizzle 32B".
"""

from legalsat.targets.base import BankFacts, CostFacts, Target, TmaFacts
from legalsat.targets.calibration import load_cost
from legalsat.terms.dtypes import DTYPES

# analytic efficiencies on the measured 2.96 TB/s device-to-device copy of an H100: the
# starting point of a calibration (benchmarks/kernel_report.py)
ANALYTIC = CostFacts(source="analytic", copy_bandwidth_gbps=2960)

SM90 = Target(
    name="sm90",
    wgmma=True,
    description="NVIDIA Hopper (H100/H200); TMA rules verified against driver 580 on an H100",
    tma=TmaFacts(
        source="driver",
        address_limit=1 << 57,
        box_footprint_limit=233472,
        dtypes=frozenset(n for n, d in DTYPES.items() if not d.packed),
        swizzles=frozenset({"none", "32B", "64B", "128B"}),
        inner_16b_with_interleave=True,
        interleave_32b_needs_swizzle_32b=False,
    ),
    banks=BankFacts(banks=32, bank_bytes=4, lanes=32),
    smem_per_block_bytes=232448,
    # fitted to measured kernel times on an H100 (sm90_cost.json), else the analytic facts
    cost=load_cost("sm90", ANALYTIC),
)
