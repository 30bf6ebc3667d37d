"""Parametrized builds of one shared source (cuzk.arith.jit): one module per (target, params), and
two builds of one source never share a Numba disk-cache entry."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cuzk.arith.jit import Build, get_target

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_one_module_per_build():
    cpu = get_target("cpu")
    g1 = cpu.load("cuzk.arith.group", group="g1")
    g2 = cpu.load("cuzk.arith.group", group="g2")
    assert g1 is not g2
    assert cpu.load("cuzk.arith.group", group="g1") is g1
    assert g1.__name__ == "cuzk.arith.group[cpu:g1]"
    assert (g1.AFFINE_WIDTH, g2.AFFINE_WIDTH) == (8, 16)
    # every decorated function carries its build in its qualified name
    assert g1.add.py_func.__qualname__ == "add[g1]"
    assert g2.load_affine.py_func.__qualname__ == "load_affine[g2]"


def test_missing_parameter_is_named():
    with pytest.raises(LookupError, match="group"):
        Build(get_target("cpu")).param("group")
    with pytest.raises(ValueError, match="g3"):
        get_target("cpu").load("cuzk.arith.group", group="g3")


# Both builds' load_affine have the same Numba signature (uint64 2-D array, int64), so with
# one cache entry the second build would load the first build's machine code in a new
# process. The child compiles (first run) or loads from the cache (second run) and reports.
_CHILD = textwrap.dedent(
    """
    import json
    import numpy as np
    from cuzk.arith.jit import get_target

    cpu = get_target("cpu")
    row = np.arange(16, dtype=np.uint64).reshape(1, 16)
    out = {}
    for g in ("g1", "g2"):
        fn = cpu.load("cuzk.arith.group", group=g).load_affine
        value = fn(row, 0)
        flat = [int(v) for part in value for v in np.ravel(np.array(part, dtype=object))]
        out[g] = {"limbs": flat, "hits": sum(fn.stats.cache_hits.values()),
                  "misses": sum(fn.stats.cache_misses.values())}
    print("BUILDS " + json.dumps(out))
    """
)


def _run_child(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("BUILDS ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("BUILDS ") :])


def test_builds_never_share_a_cache_entry(tmp_path):
    first = _run_child(tmp_path)
    second = _run_child(tmp_path)
    expected = {"g1": list(range(8)), "g2": list(range(16))}
    for run in (first, second):
        assert {g: run[g]["limbs"] for g in run} == expected
    # the second process loaded each build's own entry from disk
    assert second["g1"]["hits"] >= 1 and second["g2"]["hits"] >= 1
    assert second["g1"]["misses"] == 0 and second["g2"]["misses"] == 0
    index = sorted(p.name for p in tmp_path.rglob("*.nbi") if "load_affine" in p.name)
    assert any("[g1]" in n for n in index) and any("[g2]" in n for n in index), index
