"""Shared test set-up.

CUDA kernels are checked in the normal suite: on a machine with an NVIDIA GPU they run on it;
elsewhere they run in numba's CUDA simulator, which must be switched on before numba is first
imported — hence this block at the very top of the first file pytest imports. Set
CUZK_TEST_CUDA=gpu to force the GPU, =sim to force the simulator.
"""

import contextlib
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

# The per-user cache (compiled circuit modules, validated keys) goes to a folder of this run,
# not the user's home: set for the test processes and every command they start.
if not os.environ.get("CUZK_CACHE_DIR"):
    import atexit
    import tempfile

    os.environ["CUZK_CACHE_DIR"] = tempfile.mkdtemp(prefix="cuzk-test-cache-")
    atexit.register(shutil.rmtree, os.environ["CUZK_CACHE_DIR"], ignore_errors=True)

# The prover double (cuzk.testing) in daemons the tests start: `cuzk serve` refuses it otherwise.
os.environ["CUZK_TEST_PROVERS"] = "1"

# ---- everything below may import numba ----

# ---- committed circuit fixtures (tests/fixtures/, remade by tests/fixtures/make_fixtures.py) ----
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FIXTURE_CIRCUITS = ("tiny", "mulchain", "bits", "toyhash")  # toyhash: ~900 constraints, 2^10
SMALL_CIRCUITS = ("tiny", "mulchain", "bits")  # up to ~70 constraints
# tiny on each curve: BN254's tiny and BLS12-381's tiny381 (circom2 -p bls12381, a snarkjs
# bls12381 ceremony); the BN254 fixtures above are all BN254
EACH_CURVE = ("tiny", "tiny381")


@dataclass(frozen=True)
class FixtureCircuit:
    """One committed circuit: snarkjs-made key, witnesses (sets k = 0, 1) and proofs."""

    name: str
    dir: Path
    n_sets: int = 2

    r1cs = property(lambda self: self.dir / "circuit.r1cs")
    wasm = property(lambda self: self.dir / "circuit.wasm")
    zkey = property(lambda self: self.dir / "circuit.zkey")
    vk = property(lambda self: self.dir / "verification_key.json")
    bad_witness = property(lambda self: self.dir / "bad_witness.wtns")  # breaks a constraint

    def input(self, k: int = 0) -> Path:
        return self.dir / f"input_{k}.json"

    def witness(self, k: int = 0) -> Path:
        return self.dir / f"witness_{k}.wtns"

    def proof(self, k: int = 0) -> Path:
        return self.dir / f"proof_{k}.json"

    def public(self, k: int = 0) -> Path:
        return self.dir / f"public_{k}.json"

    # PLONK (mulchain, nested, tiny381: tests/fixtures/make_fixtures.py's PLONK circuits)
    plonk_zkey = property(lambda self: self.dir / "plonk.zkey")
    plonk_vk = property(lambda self: self.dir / "plonk_vk.json")

    def plonk_proof(self, k: int = 0) -> Path:
        return self.dir / f"plonk_proof_{k}.json"

    def plonk_public(self, k: int = 0) -> Path:
        return self.dir / f"plonk_public_{k}.json"


def fixture_circuit(name: str) -> FixtureCircuit:
    return FixtureCircuit(name, FIXTURES / name)


@pytest.fixture(params=FIXTURE_CIRCUITS)
def any_circuit(request) -> FixtureCircuit:
    """Each committed circuit in turn."""
    return fixture_circuit(request.param)


@pytest.fixture(params=SMALL_CIRCUITS)
def small_circuit(request) -> FixtureCircuit:
    """Each small committed circuit in turn (not toyhash)."""
    return fixture_circuit(request.param)


@pytest.fixture(params=EACH_CURVE)
def each_curve(request) -> FixtureCircuit:
    """tiny on each curve in turn: BN254 (tiny), BLS12-381 (tiny381)."""
    return fixture_circuit(request.param)


PLONK_CIRCUITS = ("mulchain", "nested", "tiny381")  # with a PLONK key and proofs


@pytest.fixture(params=PLONK_CIRCUITS)
def plonk_circuit(request) -> FixtureCircuit:
    """Each committed circuit with snarkjs PLONK files: mulchain (BN254), nested (BN254,
    additions, 14 public signals), tiny381 (BLS12-381)."""
    return fixture_circuit(request.param)


@pytest.fixture
def circuit_named():
    """A function name -> FixtureCircuit ("tiny", "mulchain", "bits", "toyhash", "tiny381")."""
    return fixture_circuit


@pytest.fixture(scope="session")
def tools():
    """snarkjs and circom2 installed (runs `make tools` once if needed), else skip."""
    from interop import require_tools

    require_tools()


SESSION_CPUS = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()


def _current_cpu() -> int | None:
    """The CPU the calling thread runs on now (field 39 of /proc/thread-self/stat)."""
    try:
        with open("/proc/thread-self/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def one_cpu_under_simulator():
    """Within the block, under the CUDA simulator, this thread (and the threads and processes
    it starts) runs on one CPU; the CPUs it had, back after (simulator_on_one_cpu, below, and
    module fixtures that run the simulator, set up before any function fixture)."""
    if CUDA_MODE != "sim":
        yield
        return
    try:
        allowed = os.sched_getaffinity(0)
        # Numba's CPU thread pool (parallel kernels) is made once per process by the first
        # parallel kernel: made now, it keeps every CPU, whatever runs later in this block.
        from numba.np.ufunc.parallel import _launch_threads

        _launch_threads()
    except (AttributeError, ImportError, OSError):  # not Linux, or another Numba: as it is
        yield
        return
    cpu = _current_cpu()
    os.sched_setaffinity(0, {cpu if cpu in allowed else min(allowed)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


@pytest.fixture(autouse=True)
def simulator_on_one_cpu(request):
    """Under the CUDA simulator, a test marked cuda runs on one CPU (the thread that runs it,
    and the threads and processes it starts, pinned while it runs; the CPUs it had, back
    after). The simulator runs each thread of a block as a Python thread and its block
    manager polls them: one Python thread runs at a time (the GIL), handed over thousands of
    times a kernel, and a handover to a thread waiting on the other core waits for that core:
    test_msm's test_g1_naive_py_ecc_sum[cuda] took 2.6 s on one CPU, 4.1 s on two, 10 s on
    two beside one busy process and 106 s in a whole-suite run on the 2-core machine. What
    the kernels compute, and the order the simulator allows, are the same on one CPU."""
    if request.node.get_closest_marker("cuda") is None:
        yield
        return
    with one_cpu_under_simulator():
        yield


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """A test that takes the `tools` fixture runs snarkjs/circom2: it is interop, marked or not
    (so `make test-fast`, which leaves out interop, leaves it out too)."""
    for item in items:
        if "tools" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.interop)


# ---- status boards made by tests: one name prefix, one factory, nothing left in /dev/shm ----
BOARD_PREFIX = f"cuzk-t{os.getpid()}-"  # every board a test creates by name starts with this


def board_name() -> str:
    """A fresh board name under BOARD_PREFIX."""
    import secrets

    return BOARD_PREFIX + secrets.token_hex(4)


@pytest.fixture(scope="session", autouse=True)
def no_board_left_in_dev_shm():
    """After the whole session, no segment a test created under BOARD_PREFIX remains."""
    yield
    from cuzk.board import segment

    left = [n for n in os.listdir("/dev/shm") if n.startswith(BOARD_PREFIX)]
    for n in left:
        segment.unlink_segment(n)
    assert not left, f"board segments left in /dev/shm: {left}"


@pytest.fixture(scope="session", autouse=True)
def signal_handlers_put_back():
    """After the whole session, SIGTERM and SIGINT do what they did before it: a handler a
    test's library set in this process (Ray's head node sets one that exits) turns a SIGTERM
    meant for pytest into a failure of whatever test is running."""
    import signal

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    changed = {
        s.name: signal.getsignal(s) for s, h in before.items() if signal.getsignal(s) is not h
    }
    assert not changed, f"signal handlers left changed by a test: {changed}"


@pytest.fixture(scope="session", autouse=True)
def fixture_files_never_rewritten():
    """The committed fixture files (tests/fixtures) are read, mapped by some processes (the
    daemons' proving processes map keys), and never rewritten: a file truncated or rewritten
    in place under a map kills the process touching it with SIGBUS (issue 38: a whole-suite
    run died so at exit). A test that must damage a file damages a copy in its tmp_path."""
    root = FIXTURES

    def stamps():
        out = {}
        for dirpath, _, names in os.walk(root):
            for n in names:
                st = os.stat(os.path.join(dirpath, n))
                out[os.path.join(dirpath, n)] = (st.st_ino, st.st_size, st.st_mtime_ns)
        return out

    before = stamps()
    yield
    after = stamps()
    changed = sorted(p for p in before if after.get(p) != before[p])
    assert not changed, f"fixture files rewritten, replaced or removed by a test: {changed}"


@pytest.fixture
def board_factory():
    """make(instance="test", **counts) -> a new Board under BOARD_PREFIX; each one made is
    closed, unlinked and checked gone from /dev/shm when the test ends."""
    from cuzk.board import Board, segment

    made = []

    def make(instance: str = "test", **kw):
        b = Board.create(board_name(), instance=instance, **kw)
        made.append(b)
        return b

    yield make
    for b in made:
        name = b.name
        b.close()
        segment.unlink_segment(name)
        assert not os.path.exists(f"/dev/shm/{name}")


@pytest.fixture(scope="session")
def native_dir():
    """The folder holding BN254's native kernel library (cuzk.native), built there once (the
    suite's default folder, cuzk.native.folder(): a later `cuzk warmup` or bench run in the
    suite keeps it); the test is skipped where there is no C compiler to build it."""
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no system C compiler (cc)")
    from cuzk.native.build import build_library

    return build_library("bn254").parent
