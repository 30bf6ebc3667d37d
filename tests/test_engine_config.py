"""Engine configuration parsing and the memory budget's accounting (pure, no processes)."""

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cuzk.engine import (
    BudgetError,
    EngineConfig,
    MemoryBudget,
    format_size,
    parse_devices,
    parse_size,
)
from cuzk.engine.settings import auto_memory_budget


@pytest.mark.parametrize(
    "text,n",
    [
        ("4096", 4096),
        ("8GiB", 8 << 30),
        ("8 GiB", 8 << 30),
        ("512MiB", 512 << 20),
        ("1.5G", 1_500_000_000),
        ("2kb", 2000),
        ("3Ki", 3072),
        ("1TiB", 1 << 40),
        (" 7 b ", 7),
        (1234, 1234),
        ("0", 0),
    ],
)
def test_parse_size(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize("bad", ["", "GiB", "8 XB", "-1", "1e9", "eight", None, True, -5])
def test_parse_size_refuses(bad):
    with pytest.raises(ValueError):
        parse_size(bad)


@given(st.integers(0, 1 << 50))
def test_format_then_parse_is_close(n):
    value, unit = format_size(n).split()  # one decimal: within half a tenth of the unit
    assert abs(parse_size(f"{value}{unit}") - n) <= max(1, n * 0.05 / 1.0)


def test_parse_devices():
    assert parse_devices("cpu:3") == ["cpu:0", "cpu:1", "cpu:2"]
    assert parse_devices("cpu") == ["cpu:0"]
    assert parse_devices("auto", n_gpus=0) == ["cpu:0"]
    assert parse_devices("auto", n_gpus=2) == ["cuda:0", "cuda:1"]
    assert parse_devices("0,1", n_gpus=2) == ["cuda:0", "cuda:1"]
    assert parse_devices("cuda:1", n_gpus=2) == ["cuda:1"]
    for bad, n in [("cpu:0", 0), ("0,0", 2), ("2", 2), ("gpu", 1), ("0,x", 2)]:
        with pytest.raises(ValueError):
            parse_devices(bad, n_gpus=n)


def test_simulator_is_not_a_gpu(monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert parse_devices("auto") == ["cpu:0"]
    with pytest.raises(ValueError, match="no CUDA device 0"):
        parse_devices("0")


def test_config_validation():
    c = EngineConfig(devices="cpu:2", memory_budget="1GiB", synth_workers=0).validated()
    assert c.device_names == ["cpu:0", "cpu:1"] and c.memory_budget == 1 << 30
    assert c.synth_workers >= 1 and c.max_synth_ahead > 0
    assert 0 < EngineConfig(devices="cpu:1").validated().memory_budget <= auto_memory_budget()
    for bad in (
        dict(workers_per_device=0),
        dict(max_attempts=0),
        dict(memory_budget="0"),
        dict(memory_budget="lots"),
        dict(devices="9,9"),
    ):
        with pytest.raises(ValueError):
            EngineConfig(**{"devices": "cpu:1", **bad}).validated()


def test_budget_reserves_all_or_nothing_and_releases_in_parts():
    b = MemoryBudget(100)
    assert b.try_reserve("p0", {"abc": 60, "witness": 20})
    assert not b.try_reserve("p1", {"abc": 15, "witness": 10})  # 105 > 100: nothing taken
    assert b.reserved == 80 and b.by_use() == {"abc": 60, "witness": 20}
    assert b.release("p0", "abc") == 60
    assert b.try_reserve("p1", {"abc": 15, "witness": 10})
    assert b.by_use() == {"abc": 15, "witness": 30}
    assert b.release("p0") == 20 and b.release("p0") == 0
    assert b.release("p1") == 25 and b.reserved == 0 and b.high_water == 80
    with pytest.raises(BudgetError):
        b.try_reserve("huge", {"abc": 101})


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["reserve", "release", "release_abc"]),
            st.integers(0, 5),
            st.integers(0, 60),
            st.integers(0, 60),
        )
    )
)
def test_budget_never_exceeds_total(ops):
    b = MemoryBudget(100)
    held = {}
    for op, owner, x, y in ops:
        if op == "reserve" and x + y > 100:
            with pytest.raises(BudgetError):
                b.try_reserve(owner, {"abc": x, "witness": y})
        elif op == "reserve":
            if b.try_reserve(owner, {"abc": x, "witness": y}):
                mine = held.setdefault(owner, {})
                mine["abc"] = mine.get("abc", 0) + x
                mine["witness"] = mine.get("witness", 0) + y
        elif op == "release":
            assert b.release(owner) == sum(held.pop(owner, {}).values())
        else:
            got = b.release(owner, "abc")
            assert got == held.get(owner, {}).pop("abc", 0)
        assert b.reserved == sum(sum(v.values()) for v in held.values()) <= 100
        assert b.high_water <= 100


def test_device_process_sees_only_its_gpu(monkeypatch):
    from cuzk.engine.device_process import visible_only

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert visible_only("cpu:1") == "cpu:1" and "CUDA_VISIBLE_DEVICES" not in os.environ
    assert visible_only("cuda:1") == "cuda:0" and os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 3")
    assert visible_only("cuda:1") == "cuda:0" and os.environ["CUDA_VISIBLE_DEVICES"] == "3"


def test_no_nvidia_driver_means_no_gpu_without_importing_numba(tmp_path):
    """Where no NVIDIA driver file exists, "auto" is the CPU and numba (and numba.cuda) stay
    unimported; where one does, numba.cuda is asked (a driver file without a usable GPU, as
    faked here: 0 devices all the same)."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from cuzk.engine import settings\n"
        "settings.NVIDIA_DRIVER_PATHS = (sys.argv[1],)\n"
        "print(settings.parse_devices('auto'), 'numba' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root

    def run(path):
        p = subprocess.run(
            [sys.executable, "-c", script, str(path)], capture_output=True, text=True, env=env
        )
        assert p.returncode == 0, p.stderr
        return p.stdout.split()

    assert run(tmp_path / "none") == ["['cpu:0']", "False"]
    (tmp_path / "version").write_text("NVRM version: fake\n")
    assert run(tmp_path / "version") == ["['cpu:0']", "True"]
