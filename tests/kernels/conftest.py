"""Kernel tests run emitted Triton kernels in Triton's interpreter on the CPU (bit-exact
against PyTorch); tests/kernels/client.py says what they need."""

from __future__ import annotations

import os

# before triton is imported anywhere: the kernels the tests load must be interpreted
os.environ.setdefault("TRITON_INTERPRET", "1")
