"""AMD CDNA3 (MI300): 64-lane waves over 32 LDS banks of 4 bytes; no TMA."""

from legalsat.targets.base import BankFacts, CostFacts, Target

GFX942 = Target(
    name="gfx942",
    description="AMD Instinct MI300 (CDNA3); LDS banking from the public ISA documentation",
    tma=None,
    banks=BankFacts(banks=32, bank_bytes=4, lanes=64),
    smem_per_block_bytes=65536,
    sm_count=304,
    l2_bytes=4 << 20,  # MI300X: one XCD's L2 (its 256 MiB Infinity Cache is memory-side)
    # analytic: HBM3 copy assumed ~4 TB/s until measured
    cost=CostFacts(source="analytic", copy_bandwidth_gbps=4000),
)
