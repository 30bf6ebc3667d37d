"""Parametrized builds of one shared source (cuzk.arith.jit): one module per (target, params), and
two builds of one source never share a Numba disk-cache entry; the cache folder is keyed on the
sources and the toolchain, and the Numba and llvmlite the suite runs on are the ones pinned."""

import configparser
import json
import os
import subprocess
import sys
import textwrap
from importlib import metadata

import pytest

from cuzk.arith import jit
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


def test_cache_folder_is_keyed_on_every_toolchain_part():
    """Another Numba, llvmlite, Python build, platform, CPU or CPU feature set, or another
    source, names another cache folder: nothing built under one key is loaded under another."""
    import llvmlite
    import numba

    key = jit.toolchain_key()

    assert key[0] == numba.__version__ and key[1] == llvmlite.__version__
    assert key[2] == sys.version and key[4] and key[5]
    base = jit.cache_folder_name(b"sources", key)
    assert base == jit.cache_folder_name(b"sources", tuple(key))
    for i in range(len(key)):
        changed = (*key[:i], f"{key[i]}+other", *key[i + 1 :])
        assert jit.cache_folder_name(b"sources", changed) != base
    assert jit.cache_folder_name(b"other sources", key) != base


_KERNEL = """
from numba import njit


@njit(cache=True)
def cube(x):
    return x * x * x
"""

_RUN = """
import sys
sys.path.insert(0, sys.argv[1])
import numba
from cuzk.arith import jit
if sys.argv[2] == "fake-key":
    numba.__version__ = "0.0.0+fake"  # before the folder is keyed: another folder
jit.key_numba_cache_on_sources()
if sys.argv[2] == "fake-index":
    numba.__version__ = "0.0.0+fake"  # after: the same folder, an index Numba must refuse
import cubekernel
from numba.core import config
print(cubekernel.cube(7), len(cubekernel.cube.stats.cache_hits), config.CACHE_DIR)
"""


@pytest.mark.slow
def test_cache_entries_of_another_numba_are_ignored_and_rebuilt(tmp_path):
    """A kernel cached under a faked Numba version, in its own keyed folder or (the index
    stamped with the fake) in the real one, is compiled again, never loaded; it runs right,
    and the rebuilt entry is loaded by the next process."""
    (tmp_path / "cubekernel.py").write_text(_KERNEL)
    env = {**os.environ, "PYTHONPATH": ROOT, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def run(mode):
        p = subprocess.run(
            [sys.executable, "-c", _RUN, str(tmp_path), mode],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
        assert p.returncode == 0, p.stderr
        value, hits, folder = p.stdout.split()
        return int(value), int(hits), folder

    fake = run("fake-key")
    real = run("real")
    assert fake[:2] == (343, 0) and real[:2] == (343, 0) and fake[2] != real[2]
    assert run("real")[:2] == (343, 1)  # the rebuilt entry loads
    stamped = run("fake-index")  # writes the real folder's index under the fake version
    assert stamped[:2] == (343, 0) and stamped[2] == real[2]
    assert run("real")[:2] == (343, 0)  # the fake-stamped index is refused: compiled again


def _version(text: str) -> tuple:
    return tuple(int(part) for part in text.split("+")[0].split(".")[:3] if part.isdigit())


@pytest.mark.parametrize("dist", ["numba", "llvmlite"])
def test_setup_cfg_pins_the_numba_and_llvmlite_the_suite_runs_on(dist):
    """setup.cfg's range for Numba and llvmlite holds the installed releases (those this
    suite tests, cuzk.groth16.startup's internals included) and stops below the next minor."""
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    lines = [
        line.strip()
        for line in cfg["options"]["install_requires"].splitlines()
        if line.strip().startswith(dist + ">")
    ]
    assert len(lines) == 1, lines
    low, high = lines[0][len(dist) :].split(",")
    assert low.startswith(">=") and high.startswith("<")
    installed = _version(metadata.version(dist))
    assert _version(low[2:]) <= installed < _version(high[1:])
    assert _version(high[1:])[:2] == (installed[0], installed[1] + 1)


def test_a_build_in_one_thread_is_not_another_threads_build():
    """While one thread executes a parametrized build (Target.load), a plain import of a shared
    source in another thread sees the plain build: the stack of builds is per thread."""
    import threading

    seen = {}
    build = Build(get_target("cpu"), {"curve": "bls12_381"})
    build.module_name = __name__  # as Target.load names the module it runs
    jit._building.stack.append(build)
    try:
        assert jit.building().params == (("curve", "bls12_381"),)
        other = threading.Thread(target=lambda: seen.update(params=jit.building().params))
        other.start()
        other.join()
    finally:
        jit._building.stack.pop()
    assert seen["params"] == ()
    assert jit.building().params == ()


def test_a_plain_import_inside_a_build_is_the_plain_build():
    """A shared source imported plainly for the first time while another one's parametrized
    build runs (BLS12-381's buckets build imports cuzk.kernels.msm) is the plain (BN254)
    build, not the outer build's: a fresh process, so msm is not imported before."""
    code = (
        "from cuzk.arith.curves import DEFAULT, curve_build\n"
        "curve_build('cuzk.kernels.buckets', 'bls12_381', group='g1')\n"
        "import cuzk.kernels.msm as m, cuzk.arith.field as f\n"
        "assert m.CURVE == DEFAULT and m.F is f, (m.CURVE, m.F.__name__)\n"
        "assert f.CURVE == DEFAULT, f.CURVE\n"
        "b = curve_build('cuzk.kernels.buckets', 'bls12_381', group='g1')\n"
        "assert b.CURVE == 'bls12_381' and b.M is not m, b.M.__name__\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]


DEADLOCK_SOURCES = {
    "sync.py": "import threading\nx_started, q_in_build = threading.Event(), threading.Event()\n",
    # a plain import that loads a parametrized build once the other thread is inside its own
    "x.py": (
        "from cuzk.arith.jit import building, get_target\n"
        "import shaped.sync as s\n"
        "T = building()\n"
        "s.x_started.set()\n"
        "assert s.q_in_build.wait(30)\n"
        "Y = get_target('cpu').load('shaped.y', curve='c1')\n"
    ),
    "y.py": "from cuzk.arith.jit import building\nT = building()\nCURVE = T.param('curve')\n",
    # a parametrized build that imports x plainly while x is being imported by the other thread
    "z.py": (
        "from cuzk.arith.jit import building\n"
        "import shaped.sync as s\n"
        "T = building()\n"
        "s.q_in_build.set()\n"
        "import shaped.x as X\n"
    ),
}

DEADLOCK_RUN = """
import sys, threading
sys.path.insert(0, sys.argv[1])
import shaped.sync as s
from cuzk.arith.jit import get_target
done = {}
def p():
    import shaped.x as x
    done["p"] = x.Y.CURVE
def q():
    assert s.x_started.wait(30)
    done["q"] = get_target("cpu").load("shaped.z", curve="c2").X.Y.CURVE
threads = [threading.Thread(target=f, daemon=True) for f in (p, q)]
for t in threads:
    t.start()
for t in threads:
    t.join(60)
assert done == {"p": "c1", "q": "c1"}, done
"""


def test_a_build_and_a_plain_import_in_two_threads_do_not_deadlock(tmp_path):
    """Thread P imports x plainly, and x loads a build of y; thread Q, meanwhile, executes a
    build of z that imports x plainly. With one lock held across every build's execution, Q
    held it waiting for x's import lock while P held x's waiting for it: both stopped (a
    device process of the soak, its worker and finalizer threads, every job on it stuck).
    Builds take their own import locks now: both finish."""
    package = tmp_path / "shaped"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in DEADLOCK_SOURCES.items():
        (package / name).write_text(text)
    p = subprocess.run(
        [sys.executable, "-c", DEADLOCK_RUN, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr[-2000:]


FIRST_PROOFS_OF_BOTH_CURVES = """
import json, sys, threading
from cuzk.groth16 import ProvingKey, load_witness, open_device, prove
fixtures, out = sys.argv[1], {}
dev = open_device("cpu")
def run(name):
    key = ProvingKey.open(f"{fixtures}/{name}/circuit.zkey")
    p = prove(key, load_witness(f"{fixtures}/{name}/witness_0.wtns", key), dev)
    out[name] = {"proof": p.to_json(), "public": [str(x) for x in p.public]}
threads = [threading.Thread(target=run, args=(n,)) for n in ("tiny381", "tiny")]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.parametrize("run", range(4))
def test_first_proofs_of_both_curves_at_once_are_valid(run):
    """What the soak found (bench/bench_soak.py): a fresh process (a restarted device process)
    whose first proofs were a BLS12-381 and a BN254 one at the same time built the BN254
    kernels with BLS12-381's constants (five runs in six), and every BN254 proof of that
    process failed verification."""
    from cuzk.groth16.verifier import verify

    fixtures = os.path.join(ROOT, "tests", "fixtures")
    p = subprocess.run(
        [sys.executable, "-c", FIRST_PROOFS_OF_BOTH_CURVES, fixtures],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout)
    for name in ("tiny", "tiny381"):
        with open(os.path.join(fixtures, name, "verification_key.json")) as f:
            vk = json.load(f)
        assert verify(vk, out[name]["public"], out[name]["proof"]), name
