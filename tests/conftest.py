"""Shared test set-up.

CUDA kernels are checked in the normal suite: on a machine with an NVIDIA GPU they run on it;
elsewhere they run in numba's CUDA simulator, which must be switched on before numba is first
imported — hence this block at the very top of the first file pytest imports. Set
CUZK_TEST_CUDA=gpu to force the GPU, =sim to force the simulator.
"""

import os
import shutil
import subprocess


def _has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


_mode = os.environ.get("CUZK_TEST_CUDA") or ("gpu" if _has_gpu() else "sim")
if _mode == "sim":
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
CUDA_MODE = _mode  # "gpu" or "sim"

# ---- everything below may import numba ----
