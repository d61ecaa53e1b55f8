"""legalsat: plans GPU data movement with equality saturation, verified against the hardware.

The Python API mirrors the HTTP routes and the command line (legalsat.api):

    >>> import legalsat
    >>> legalsat.validate_descriptor({"dtype": "bfloat16", "global_address": 1 << 40,
    ...     "global_dim": [4096, 1024], "global_strides": [8192], "box_dim": [64, 64],
    ...     "swizzle": "128B"}).legal
    True

Invalid input raises `legalsat.InputError` (its `details` name each field and a fix).
"""

from __future__ import annotations

from legalsat.diagnostics import InputError

__version__ = "0.3.0"


def validate_descriptor(descriptor, target: str = "sm90"):
    """Judge one `cuTensorMapEncodeTiled` argument set; see legalsat.api."""
    from legalsat.api import validate_descriptor as _validate

    return _validate(descriptor, target)


def analyze_bank_conflicts(request, target: str = "sm90"):
    """Wavefronts of one shared-memory access (raw or structured); see legalsat.api."""
    from legalsat.api import analyze_bank_conflicts as _analyze

    return _analyze(request, target)


def verify_pipeline(protocol):
    """Check an asynchronous copy protocol; see legalsat.api."""
    from legalsat.api import verify_pipeline as _verify

    return _verify(protocol)


def optimize(request):
    """Plan a data movement (dict, JSON text or OptimizeRequest); see legalsat.api."""
    from legalsat.api import optimize as _optimize

    return _optimize(request)


__all__ = ["InputError", "__version__", "analyze_bank_conflicts", "optimize", "validate_descriptor",
           "verify_pipeline"]
