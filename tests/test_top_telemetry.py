"""GPU telemetry for `cuzk top`: NVML rows when nvidia-ml-py and a GPU exist, nothing otherwise.

No GPU is needed: a stand-in `pynvml` module answers the same calls nvidia-ml-py does
(names and units from NVML: milliwatts, bytes, percent, degrees C).
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from cuzk.testing.sample import busy_snapshot
from cuzk.top import Derived, render
from cuzk.top.telemetry import Telemetry


class FakeNVML:
    NVML_TEMPERATURE_GPU = 0

    def __init__(self, n=2, fail_init=False):
        self.n, self.fail_init, self.calls, self.shut = n, fail_init, 0, False

    def nvmlInit(self):
        if self.fail_init:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetCount(self):
        return self.n

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H200" if h == 0 else "NVIDIA L4"

    def nvmlDeviceGetUtilizationRates(self, h):
        self.calls += 1
        return SimpleNamespace(gpu=97 if h == 0 else 3, memory=40)

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(used=(h + 1) * 2**30, total=80 * 2**30, free=0)

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 88 if h == 0 else 41

    def nvmlDeviceGetPowerUsage(self, h):
        return 612_500 if h == 0 else 30_000

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        if h == 1:
            raise RuntimeError("Not Supported")  # a field the device does not report
        return 700_000


@pytest.fixture
def nvml(monkeypatch):
    fake = FakeNVML()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    return fake


def test_rows_from_nvml(nvml):
    t = Telemetry(min_period=60)
    assert t.available
    rows = t.sample()
    assert rows == (
        {
            "index": 0,
            "name": "NVIDIA H200",
            "util": 97,
            "mem_used": 2**30,
            "mem_total": 80 * 2**30,
            "temp_c": 88,
            "power_w": 612.5,
            "power_limit_w": 700.0,
        },
        {
            "index": 1,
            "name": "NVIDIA L4",
            "util": 3,
            "mem_used": 2 * 2**30,
            "mem_total": 80 * 2**30,
            "temp_c": 41,
            "power_w": 30.0,
            "power_limit_w": None,
        },
    )
    assert t.sample() is rows and nvml.calls == 2  # within min_period: no new NVML calls
    t.close()
    assert nvml.shut and t.sample() == ()


def test_absent_without_package_or_driver(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    assert Telemetry().sample() == () and not Telemetry().available
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML(fail_init=True))
    assert Telemetry().sample() == ()
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML(n=0))  # driver, no device
    assert Telemetry().sample() == ()


def test_gpu_panel_only_with_telemetry(nvml):
    snap = busy_snapshot()
    rows = Telemetry(min_period=0).sample()
    with_gpu = render(snap, 120, 40, derived=Derived(gpus=rows))
    without = render(snap, 120, 40)
    assert not any(line.startswith("GPU ") for line in without.lines)
    head = next(i for i, line in enumerate(with_gpu.lines) if line.startswith("GPU "))
    h200, l4 = with_gpu.lines[head + 1].split(), with_gpu.lines[head + 2].split()
    assert h200[:3] == ["0", "NVIDIA", "H200"] and "97%" in h200
    assert "1.0G/80.0G" in h200 and "88C" in h200 and "612/700W" in h200
    assert "3%" in l4 and "30W" in l4 and "41C" in l4
    hot = [
        s for a, b, s in with_gpu.styles[head + 1] if with_gpu.lines[head + 1][a:b].strip() == "88C"
    ]
    assert hot == ["warn"]  # 85 C and above is highlighted
