"""GPU telemetry through NVML (nvidia-ml-py, `gpu` extra): utilisation, memory, temperature, power.

Optional by design: without the package, without a driver or without a GPU, Telemetry.sample()
returns an empty tuple and the GPU panel is simply absent. Rows are plain dicts handed to the
renderer as data; nothing here draws.
"""

from __future__ import annotations

import time


class Telemetry:
    """NVML sampler. Opens NVML once; each sample() reads every device (a few calls each),
    at most once per `min_period` seconds (NVML calls cost ~0.1-1 ms per device)."""

    def __init__(self, min_period: float = 1.0):
        self.min_period = min_period
        self._nvml = None
        self._handles = []
        self._last: tuple = ()
        self._last_at = float("-inf")
        try:
            import pynvml  # nvidia-ml-py

            pynvml.nvmlInit()
            self._handles = [
                pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())
            ]
            self._nvml = pynvml
        except Exception:  # no package, no driver, no device: telemetry is absent, not an error
            self._nvml, self._handles = None, []

    @property
    def available(self) -> bool:
        return bool(self._handles)

    def sample(self) -> tuple:
        """One row per GPU: index, name, util (%), mem_used, mem_total (bytes), temp_c,
        power_w, power_limit_w; a field is None when the device does not report it."""
        if not self._handles:
            return ()
        now = time.monotonic()
        if now - self._last_at < self.min_period:
            return self._last
        nv, rows = self._nvml, []
        for i, h in enumerate(self._handles):
            mem = _try(nv.nvmlDeviceGetMemoryInfo, h)
            util = _try(nv.nvmlDeviceGetUtilizationRates, h)
            mw = _try(nv.nvmlDeviceGetPowerUsage, h)
            limit = _try(nv.nvmlDeviceGetEnforcedPowerLimit, h)
            name = _try(nv.nvmlDeviceGetName, h)
            row = {
                "index": i,
                "name": None if name is None else _text(name),
                "util": getattr(util, "gpu", None),
                "mem_used": getattr(mem, "used", None),
                "mem_total": getattr(mem, "total", None),
                "temp_c": _try(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
                "power_w": None if mw is None else mw / 1000.0,
                "power_limit_w": None if limit is None else limit / 1000.0,
            }
            rows.append(row)
        self._last, self._last_at = tuple(rows), now
        return self._last

    def close(self) -> None:
        if self._nvml is not None:
            _try(self._nvml.nvmlShutdown)
            self._nvml, self._handles = None, []


def _try(fn, *args):
    try:
        return fn(*args)
    except Exception:  # a field this device or driver does not support
        return None


def _text(x) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)
