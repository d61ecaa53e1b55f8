"""AMD CDNA3 (MI300): 64-lane waves over 32 LDS banks of 4 bytes; no TMA."""

from legalsat.analyses.targets.base import BankFacts, Target

GFX942 = Target(
    name="gfx942",
    description="AMD Instinct MI300 (CDNA3); LDS banking from the public ISA documentation",
    tma=None,
    banks=BankFacts(banks=32, bank_bytes=4, lanes=64),
    smem_per_block_bytes=65536,
)
