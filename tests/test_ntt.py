"""NTT kernels (cuzk.kernels.ntt_cpu, ntt_cuda) against references computed here in Python
integers: the O(n^2) DFT, the coset product, the Groth16 quotient evaluations; and the roots
of unity against values printed by snarkjs's ffjavascript.

One body per property, run for both targets; CUDA runs in numba's simulator when no GPU is
present (tests/conftest.py), on tiny domains.
"""

import json
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from need_tool import missing_tool

from cuzk.arith.constants import FR_MODULUS as R
from cuzk.arith.constants import MONT_R, fr_roots_of_unity
from cuzk.kernels import ntt_cpu

W = fr_roots_of_unity()
R_INV = pow(MONT_R, -1, R)
ROOT = Path(__file__).resolve().parents[1]

# ffjavascript 0.3.1 (snarkjs's field library), buildBn128(): Fr.toString(Fr.w[k]).
# w[28] is also libsnark's bn128_Fr::root_of_unity (= nqr_to_t with nqr 5).
FFJS_W28 = 19103219067921713944291392827692070036145651957329286315305642004821462161904
FFJS_W8 = 3478517300119284901893091970156912948790432420133812234316178878452092729974


def _module(target):
    if target == "cpu":
        return ntt_cpu
    from cuzk.kernels import ntt_cuda

    return ntt_cuda


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def target(request):
    return request.param


def max_log(target):
    """Largest domain the naive references run on: the simulator is slow."""
    return 6 if target == "cpu" else 4


def to_mont(values):
    return np.stack([ntt_cpu.mont_limbs(v) for v in values])


def ints(x):
    return [sum(int(x[i, t]) << (64 * t) for t in range(4)) for i in range(x.shape[0])]


def from_mont(x):
    return [v * R_INV % R for v in ints(x)]


def rand_fr(rng, n):
    edge = [0, 1, R - 1]
    return [edge[i] if i < len(edge) and rng.random() < 0.3 else rng.randrange(R) for i in range(n)]


def dft(values, w):
    """sum_j x_j w^{ij}: the O(n^2) reference."""
    n = len(values)
    pw = [pow(w, e, R) for e in range(n)]
    return [sum(values[j] * pw[i * j % n] for j in range(n)) % R for i in range(n)]


def coset_evals(evals, log_n):
    """P(g w^i) for the polynomial P of degree < n with P(w^i) = evals[i], g = w_{2n}."""
    n = 1 << log_n
    w, g = W[log_n], W[log_n + 1]
    n_inv = pow(n, -1, R)
    coeffs = [v * n_inv % R for v in dft(evals, pow(w, -1, R))]
    return [
        sum(co * pow(g * pow(w, i, R), j, R) for j, co in enumerate(coeffs)) % R for i in range(n)
    ]


# --- roots of unity -------------------------------------------------------------------------


def test_roots_are_snarkjs_roots():
    assert W[28] == FFJS_W28
    assert W[8] == FFJS_W8
    assert W[28] == pow(5, (R - 1) >> 28, R)
    for k in range(1, 29):
        assert pow(W[k], 1 << k, R) == 1 and pow(W[k], 1 << (k - 1), R) == R - 1
        assert W[k - 1] == W[k] * W[k] % R


def _ffjavascript_dir():
    for base in (ROOT / ".tools" / "node_modules", ROOT / "node_modules"):
        if (base / "ffjavascript" / "package.json").exists():
            return base
    return None


@pytest.mark.interop
def test_roots_against_ffjavascript():
    """Fr.w[k] for every k, printed by the installed ffjavascript (snarkjs's dependency)."""
    base = _ffjavascript_dir()
    node = shutil.which("node")
    if base is None or node is None:
        missing_tool("ffjavascript / node not installed (make tools)")
    script = (
        "const ff = require('ffjavascript');"
        "ff.buildBn128(true).then(async c => {"
        " const w = []; for (let k = 0; k <= 28; k++) w.push(c.Fr.toString(c.Fr.w[k]));"
        " console.log(JSON.stringify(w)); await c.terminate(); });"
    )
    out = subprocess.run(
        [node, "-e", script],
        cwd=base.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert [int(v) for v in json.loads(out.stdout.strip().splitlines()[-1])] == W


def test_tables_hold_the_powers():
    for log_n in (1, 3, 5):
        t = ntt_cpu.Tables(log_n)
        n = 1 << log_n
        assert from_mont(t.tw) == [pow(W[log_n], e, R) for e in range(n // 2)]
        rev = [int(format(p, f"0{log_n}b")[::-1], 2) for p in range(n)]
        assert from_mont(t.g_rev) == [pow(W[log_n + 1], rev[p], R) for p in range(n)]


# --- transforms against the naive DFT -------------------------------------------------------


def test_ntt_matches_naive_dft(target):
    m = _module(target)
    rng = random.Random(1)
    for log_n in range(max_log(target) + 1):
        n = 1 << log_n
        values = rand_fr(rng, n)
        x = to_mont(values)
        m.ntt(x)
        assert from_mont(x) == dft(values, W[log_n]), f"n=2^{log_n}"
        y = to_mont(values)
        m.ntt(y, inverse=True)
        n_inv = pow(n, -1, R)
        assert from_mont(y) == [v * n_inv % R for v in dft(values, pow(W[log_n], -1, R))]


@pytest.mark.cuda
def test_cuda_stage_kernels_match_naive_dft():
    """Small shared-memory blocks, so the per-stage (column) kernels run too."""
    from cuzk.kernels import ntt_cuda

    rng = random.Random(2)
    log_n = 4
    for block_log in (1, 2):
        values = rand_fr(rng, 1 << log_n)
        x = to_mont(values)
        ntt_cuda.ntt(x, block_log=block_log)
        assert from_mont(x) == dft(values, W[log_n])
        ntt_cuda.ntt(x, inverse=True, block_log=block_log)
        assert from_mont(x) == values


def test_round_trip(target):
    m = _module(target)
    rng = np.random.default_rng(3)
    sizes = (1, 2, 7, 10, 13) if target == "cpu" else (1, 3, 5)
    for log_n in sizes:
        values = [int(v) for v in rng.integers(0, 2**62, size=1 << log_n, dtype=np.int64)]
        values = [v * 0x9E3779B97F4A7C15 % R for v in values]
        x = to_mont(values)
        orig = x.copy()
        m.ntt(x)
        assert not np.array_equal(x, orig) or log_n == 0
        m.ntt(x, inverse=True)
        assert np.array_equal(x, orig), f"n=2^{log_n}"


def test_ntt_batch_equals_single(target):
    m = _module(target)
    rng = random.Random(4)
    log_n = 5 if target == "cpu" else 3
    vecs = [to_mont(rand_fr(rng, 1 << log_n)) for _ in range(3)]
    for inverse in (False, True):
        for count in (1, 2, 3):
            single = [m.ntt(v.copy(), inverse=inverse) for v in vecs[:count]]
            batch = m.ntt_batch([v.copy() for v in vecs[:count]], inverse=inverse)
            for s, b in zip(single, batch, strict=True):
                assert np.array_equal(s, b)


def test_coset_shift(target):
    m = _module(target)
    rng = random.Random(5)
    for log_n in range(max_log(target) + 1):
        n = 1 << log_n
        g = W[log_n + 1]
        values = rand_fr(rng, n)
        x = to_mont(values)
        m.coset_shift(x, log_n)
        assert from_mont(x) == [v * pow(g, i, R) % R for i, v in enumerate(values)]
        m.coset_shift(x, log_n, inverse=True)
        assert from_mont(x) == values


def test_coset_shift_rejects_wrong_log(target):
    m = _module(target)
    with pytest.raises(ValueError):
        m.coset_shift(to_mont([1, 2, 3, 4]), 3)


# --- the H pipeline -------------------------------------------------------------------------


def test_compute_h_matches_naive_polynomials(target):
    """h_i = A(g w^i) B(g w^i) - C(g w^i), plain form, as snarkjs's joinABC +
    batchFromMontgomery leave it for the H multi-exponentiation."""
    m = _module(target)
    rng = random.Random(6)
    for log_n in range(max_log(target) + 1 - (target == "cuda")):
        n = 1 << log_n
        a, b, c = (rand_fr(rng, n) for _ in range(3))
        ea, eb, ec = (coset_evals(v, log_n) for v in (a, b, c))
        expected = [(ea[i] * eb[i] - ec[i]) % R for i in range(n)]
        h = m.compute_h(to_mont(a), to_mont(b), to_mont(c))
        assert ints(np.asarray(h)) == expected, f"n=2^{log_n}"


def test_compute_h_of_a_satisfied_system(target):
    """c = a*b on the domain: A B - C vanishes on the domain, so it is Z(x) H(x) with
    Z = x^n - 1, and Z(g w^i) = g^n - 1 = -2 on the coset: h_i = -2 H(g w^i) where H has degree
    at most n - 2, i.e. the coset iNTT of h/-2 has a zero top coefficient."""
    m = _module(target)
    rng = random.Random(7)
    log_n = 4 if target == "cpu" else 2
    n = 1 << log_n
    a, b = rand_fr(rng, n), rand_fr(rng, n)
    c = [x * y % R for x, y in zip(a, b, strict=True)]
    h = ints(np.asarray(m.compute_h(to_mont(a), to_mont(b), to_mont(c))))
    quotient = [v * pow(-2, -1, R) % R for v in h]  # H(g w^i)
    # coefficients of H(g x): inverse DFT of its values at w^i, then undo g^j
    g, w = W[log_n + 1], W[log_n]
    coeffs = [v * pow(n, -1, R) % R for v in dft(quotient, pow(w, -1, R))]
    coeffs = [co * pow(g, -j, R) % R for j, co in enumerate(coeffs)]
    assert coeffs[n - 1] == 0
    assert any(coeffs)


def test_compute_h_into_out_and_checks(target):
    m = _module(target)
    rng = random.Random(8)
    log_n = 3
    vs = [to_mont(rand_fr(rng, 1 << log_n)) for _ in range(3)]
    ref = m.compute_h(*[v.copy() for v in vs])
    out = np.zeros_like(vs[0])
    h = m.compute_h(*[v.copy() for v in vs], out=out)
    assert h is out and np.array_equal(np.asarray(h), np.asarray(ref))
    with pytest.raises(ValueError):
        m.compute_h(vs[0], vs[1], to_mont([1, 2]))


@pytest.mark.cuda
def test_cuda_compute_h_with_stage_kernels():
    from cuzk.kernels import ntt_cuda

    rng = random.Random(9)
    log_n = 3
    vs = [to_mont(rand_fr(rng, 1 << log_n)) for _ in range(3)]
    ref = ntt_cpu.compute_h(*[v.copy() for v in vs])
    for block_log in (1, 2):
        h = ntt_cuda.compute_h(*[v.copy() for v in vs], block_log=block_log)
        assert np.array_equal(h, ref)


@pytest.mark.cuda
def test_cuda_device_arrays_stay_resident():
    from numba import cuda

    from cuzk.kernels import ntt_cuda

    rng = random.Random(10)
    log_n = 3
    values = rand_fr(rng, 1 << log_n)
    d = cuda.to_device(to_mont(values))
    assert ntt_cuda.ntt(d) is d
    assert from_mont(d.copy_to_host()) == dft(values, W[log_n])
    tables = ntt_cuda.device_tables()
    assert tables.nbytes >= (1 << log_n) * 32 + (1 << (log_n - 1)) * 32
    vs = [cuda.to_device(to_mont(rand_fr(rng, 1 << log_n))) for _ in range(3)]
    ref = ntt_cpu.compute_h(*[v.copy_to_host() for v in vs])
    h = ntt_cuda.compute_h(*vs)
    assert np.array_equal(h.copy_to_host(), ref)


def test_cpu_mid_size_spot_checks():
    """n = 2^12: many blocks and column groups in both CPU phases; outputs checked one by one
    against sum_j x_j w^{ij} in Python integers."""
    rng = random.Random(11)
    log_n = 12
    n = 1 << log_n
    values = rand_fr(rng, n)
    x = to_mont(values)
    ntt_cpu.ntt(x)
    got = from_mont(x)
    w = W[log_n]
    for i in (0, 1, 2, 7, 1000, 2048, n - 1):
        wi = pow(w, i, R)
        acc = 0
        for v in reversed(values):  # Horner in w^i
            acc = (acc * wi + v) % R
        assert got[i] == acc, f"output {i}"


@pytest.mark.parametrize("block_log, group_log", [(1, 1), (1, 3), (2, 4), (3, 2)])
def test_cpu_column_phase_at_small_sizes(monkeypatch, block_log, group_log):
    """The CPU blocks are 2^BLOCK_LOG elements, so the naive-reference sizes above run the
    block phase only: here smaller blocks and column groups put those sizes through the column
    phase too (ntt both ways, and compute_h), against the naive references."""
    monkeypatch.setattr(ntt_cpu, "BLOCK_LOG", block_log)
    monkeypatch.setattr(ntt_cpu, "GROUP_LOG", group_log)
    rng = random.Random(13)
    for log_n in range(1, max_log("cpu") + 1):
        n = 1 << log_n
        values = rand_fr(rng, n)
        x = to_mont(values)
        ntt_cpu.ntt(x)
        assert from_mont(x) == dft(values, W[log_n]), f"n=2^{log_n}"
        ntt_cpu.ntt(x, inverse=True)
        assert from_mont(x) == values, f"n=2^{log_n}"
        a, b, c = (rand_fr(rng, n) for _ in range(3))
        ea, eb, ec = (coset_evals(v, log_n) for v in (a, b, c))
        h = ntt_cpu.compute_h(to_mont(a), to_mont(b), to_mont(c))
        assert ints(h) == [(ea[i] * eb[i] - ec[i]) % R for i in range(n)], f"n=2^{log_n}"


def test_cpu_compute_h_mid_size_matches_the_steps():
    """The fused pipeline (DIF, bit-reversed coset step, DIT, folded scalings) equals the
    separately tested steps run one after the other, at n = 2^12."""
    rng = np.random.default_rng(12)
    log_n = 12
    vs = [to_mont([int(v) % R for v in rng.integers(0, 2**63, size=1 << log_n)]) for _ in range(3)]
    evals = []
    for v in vs:
        y = v.copy()
        ntt_cpu.ntt(y, inverse=True)
        ntt_cpu.coset_shift(y, log_n)
        ntt_cpu.ntt(y)
        evals.append(from_mont(y))
    expected = [(a * b - c) % R for a, b, c in zip(*evals, strict=True)]
    h = ntt_cpu.compute_h(*[v.copy() for v in vs])
    assert ints(h) == expected


_LINK_CHILD = """
import json
from numba import cuda
from cuda.bindings import nvjitlink
from cuzk.kernels import ntt_cuda
out = {}
for name, (fn, sig) in ntt_cuda.CUDA_KERNELS.items():
    ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0))
    h = nvjitlink.create(2, ["-arch=sm_90", "-verbose"])
    nvjitlink.add_data(h, nvjitlink.InputType.PTX, ptx.encode(), len(ptx.encode()), name)
    nvjitlink.complete(h)
    buf = bytearray(nvjitlink.get_info_log_size(h))
    nvjitlink.get_info_log(h, buf)
    nvjitlink.destroy(h)
    out[name] = buf.decode(errors="replace")
print("LINK-REPORT " + json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.cuda
def test_cuda_kernels_fit_their_launch_shapes():
    """Linked for sm_90 by nvJitLink (no GPU needed): no register spills, registers x threads
    per block within the 64K register file, shared memory within the 48 KiB static limit, so
    the launches in ntt_cuda cannot fail for lack of resources on an H100/H200."""
    import os
    import re
    import sys

    pytest.importorskip("cuda.bindings.nvjitlink")
    from cuzk.kernels import ntt_cuda

    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run(
        [sys.executable, "-c", _LINK_CHILD],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("LINK-REPORT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    logs = json.loads(lines[-1][len("LINK-REPORT ") :])
    assert set(logs) == set(ntt_cuda.CUDA_KERNELS)
    block_threads = 1 << (ntt_cuda.BLOCK_LOG - 1)
    for name, log in logs.items():
        regs = int(re.search(r"Used (\d+) registers", log).group(1))
        spills = [int(v) for v in re.findall(r"(\d+) bytes spill", log)]
        smem = re.search(r"(\d+) bytes smem", log)
        threads = block_threads if name.endswith("_block") else ntt_cuda.THREADS
        assert not any(spills), (name, log)
        assert regs * threads <= 65536, (name, regs, threads)
        assert smem is None or int(smem.group(1)) <= 48 * 1024, (name, log)


def test_input_checks():
    with pytest.raises(ValueError):
        ntt_cpu.ntt(np.zeros((6, 4), np.uint64))
    with pytest.raises(ValueError):
        ntt_cpu.ntt(np.zeros((8, 3), np.uint64))
    with pytest.raises(ValueError):
        ntt_cpu.ntt(np.zeros((8, 4), np.int64))
    with pytest.raises(ValueError):
        ntt_cpu.ntt(np.zeros((8, 8), np.uint64)[:, :4])
