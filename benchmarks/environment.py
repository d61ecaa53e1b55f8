"""The machine a GPU benchmark ran on, recorded with its results."""

from __future__ import annotations

import platform
import subprocess


def driver_version() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, ValueError):
        return "unknown"


def gpu_environment(device) -> dict:
    """GPU, driver, CUDA, torch, triton and Python versions, and the SM count of `device`."""
    import torch
    import triton

    props = torch.cuda.get_device_properties(device)
    return {"gpu": props.name, "torch": torch.__version__, "triton": triton.__version__,
            "python": platform.python_version(), "driver": driver_version(), "cuda": torch.version.cuda,
            "sms": props.multi_processor_count, "capability": props.major * 10 + props.minor}
