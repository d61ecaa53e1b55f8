"""legalsat: plans GPU data movement with equality saturation, verified against the hardware.

The Python API mirrors the HTTP routes and the command line:

    >>> import legalsat
    >>> legalsat.validate_descriptor({"dtype": "bfloat16", "global_address": 1 << 40,
    ...     "global_dim": [4096, 1024], "global_strides": [8192], "box_dim": [64, 64],
    ...     "swizzle": "128B"}).legal
    True
"""

from __future__ import annotations

__version__ = "0.1.0"


def validate_descriptor(descriptor, target: str = "sm90"):
    """Judge one `cuTensorMapEncodeTiled` argument set; see legalsat.schemas.descriptors."""
    from legalsat.schemas.descriptors import validate_descriptor as _validate

    return _validate(descriptor, target)


def analyze_bank_conflicts(request, target: str = "sm90"):
    """Wavefronts of one shared-memory access (raw or structured); see legalsat.schemas.bank."""
    from legalsat.schemas.bank import analyze_bank_conflicts as _analyze

    return _analyze(request, target)


def verify_pipeline(protocol):
    """Check an asynchronous copy protocol; see legalsat.schemas.pipeline."""
    from legalsat.schemas.pipeline import verify_pipeline as _verify

    return _verify(protocol)


def optimize(request):
    """Plan a data movement (dict, JSON text or OptimizeRequest); see legalsat.pipeline."""
    from legalsat.pipeline import optimize as _optimize

    return _optimize(request)


__all__ = ["__version__", "analyze_bank_conflicts", "optimize", "validate_descriptor", "verify_pipeline"]
