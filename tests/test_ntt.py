"""NTT kernels (cuzk.kernels.ntt_cpu, ntt_cuda) against references computed here in Python
integers: the O(n^2) DFT, the coset product, the Groth16 quotient evaluations; the roots of
unity against snarkjs's (its derivation, tests/reference.py snarkjs_roots, and values printed
by its ffjavascript); the lazy butterflies at the bounds of their inputs.

One body per property, run for both targets and for both curves (the ``field`` fixture:
BN254 and BLS12-381, whose r needs other lazy bounds, cuzk.kernels.ntt); CUDA runs in numba's
simulator when no GPU is present (tests/conftest.py), on tiny domains.
"""

import itertools
import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
import reference
from need_tool import missing_tool

from cuzk.arith import curves
from cuzk.arith.jit import get_target
from cuzk.kernels import ntt_cpu

ROOT = Path(__file__).resolve().parents[1]
MONT_R = 1 << 256

# ffjavascript 0.3.1 (snarkjs's field library), buildBn128(): Fr.toString(Fr.w[k]).
# w[28] is also libsnark's bn128_Fr::root_of_unity (= nqr_to_t with nqr 5).
FFJS_W28 = 19103219067921713944291392827692070036145651957329286315305642004821462161904
FFJS_W8 = 3478517300119284901893091970156912948790432420133812234316178878452092729974
# buildBls12381(): Fr.s, Fr.nqr and Fr.w[32].
FFJS_BLS_W32 = 937917089079007706106976984802249742464848817460758522850752807661925904159


class Field(NamedTuple):
    """One curve's Fr as the tests see it: the cuzk.arith name, r, and cuzk's roots w[k]."""

    curve: str
    r: int
    w: tuple

    @property
    def kw(self) -> dict:
        """The keyword the kernels' functions take."""
        return {"curve": self.curve}


def _field(curve: str) -> Field:
    k = curves.constants(curve)
    return Field(curve, k.FR_MODULUS, tuple(k.fr_roots_of_unity()))


BN254 = _field("bn254")
FIELDS = [BN254, _field("bls12_381")]
R, W = BN254.r, BN254.w  # the BN254-only tests below


@pytest.fixture(params=FIELDS, ids=lambda f: f.curve)
def field(request):
    return request.param


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


def to_mont(values, f=BN254):
    return np.stack([ntt_cpu.mont_limbs(v, f.curve) for v in values])


def ints(x):
    return [sum(int(x[i, t]) << (64 * t) for t in range(4)) for i in range(x.shape[0])]


def from_mont(x, f=BN254):
    r_inv = pow(MONT_R, -1, f.r)
    return [v * r_inv % f.r for v in ints(x)]


def rand_fr(rng, n, f=BN254):
    edge = [0, 1, f.r - 1]
    return [
        edge[i] if i < len(edge) and rng.random() < 0.3 else rng.randrange(f.r) for i in range(n)
    ]


def dft(values, w, f=BN254):
    """sum_j x_j w^{ij}: the O(n^2) reference."""
    n, r = len(values), f.r
    pw = [pow(w, e, r) for e in range(n)]
    return [sum(values[j] * pw[i * j % n] for j in range(n)) % r for i in range(n)]


def coset_evals(evals, log_n, f=BN254):
    """P(g w^i) for the polynomial P of degree < n with P(w^i) = evals[i], g = w_{2n}."""
    n, r = 1 << log_n, f.r
    w, g = f.w[log_n], f.w[log_n + 1]
    n_inv = pow(n, -1, r)
    coeffs = [v * n_inv % r for v in dft(evals, pow(w, -1, r), f)]
    return [
        sum(co * pow(g * pow(w, i, r), j, r) for j, co in enumerate(coeffs)) % r for i in range(n)
    ]


def quotient_reference(a, b, c, log_n, f=BN254):
    """h_i = A(g w^i) B(g w^i) - C(g w^i) from the naive coset evaluations."""
    ea, eb, ec = (coset_evals(v, log_n, f) for v in (a, b, c))
    return [(ea[i] * eb[i] - ec[i]) % f.r for i in range(1 << log_n)]


# --- roots of unity -------------------------------------------------------------------------


def test_roots_are_snarkjs_roots(field):
    """cuzk's roots are those snarkjs derives (least non-residue, 2-adicity, squaring down:
    reference.snarkjs_roots), and w[k] has order exactly 2^k."""
    r, w = field.r, field.w
    k = curves.constants(field.curve)
    assert w == reference.snarkjs_roots(r)
    assert (r - 1) % (1 << k.FR_TWO_ADICITY) == 0 and ((r - 1) >> k.FR_TWO_ADICITY) % 2 == 1
    assert len(w) == k.FR_TWO_ADICITY + 1 and w[0] == 1
    assert w[-1] == pow(k.FR_NONRESIDUE, (r - 1) >> k.FR_TWO_ADICITY, r)
    assert pow(k.FR_NONRESIDUE, (r - 1) // 2, r) == r - 1
    assert all(pow(q, (r - 1) // 2, r) == 1 for q in range(2, k.FR_NONRESIDUE))
    for e in range(1, len(w)):
        assert pow(w[e], 1 << e, r) == 1 and pow(w[e], 1 << (e - 1), r) == r - 1
        assert w[e - 1] == w[e] * w[e] % r
    if field.curve == "bn254":
        assert (w[28], w[8]) == (FFJS_W28, FFJS_W8)
    else:
        assert (k.FR_TWO_ADICITY, k.FR_NONRESIDUE, w[32]) == (32, 5, FFJS_BLS_W32)


def _ffjavascript_dir():
    for base in (ROOT / ".tools" / "node_modules", ROOT / "node_modules"):
        if (base / "ffjavascript" / "package.json").exists():
            return base
    return None


@pytest.mark.interop
def test_roots_against_ffjavascript(field):
    """Fr.w[k] for every k, printed by the installed ffjavascript (snarkjs's dependency)."""
    base = _ffjavascript_dir()
    node = shutil.which("node")
    if base is None or node is None:
        missing_tool("ffjavascript / node not installed (make tools)")
    build = {"bn254": "buildBn128", "bls12_381": "buildBls12381"}[field.curve]
    script = (
        "const ff = require('ffjavascript');"
        f"ff.{build}(true).then(async c => {{"
        " const w = []; for (let k = 0; k <= c.Fr.s; k++) w.push(c.Fr.toString(c.Fr.w[k]));"
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
    assert tuple(int(v) for v in json.loads(out.stdout.strip().splitlines()[-1])) == field.w


def test_tables_hold_the_powers(field):
    r, w = field.r, field.w
    for log_n in (1, 3, 5):
        t = ntt_cpu.tables(log_n, **field.kw)
        assert ntt_cpu.tables(log_n, **field.kw) is t and t.curve == field.curve
        n = 1 << log_n
        assert from_mont(t.tw, field) == [pow(w[log_n], e, r) for e in range(n // 2)]
        rev = [int(format(p, f"0{log_n}b")[::-1], 2) for p in range(n)]
        assert from_mont(t.g_rev, field) == [pow(w[log_n + 1], rev[p], r) for p in range(n)]
    assert ntt_cpu.tables(3) is ntt_cpu.tables(3, curve="bn254")
    assert ntt_cpu.tables(3, curve="bls12_381") is not ntt_cpu.tables(3)


def test_the_tables_kept_are_bounded(monkeypatch):
    """Past KEEP_BYTES the least recently used sizes' tables go (the latest always stays);
    one still in use is unaffected, and a size asked for again is built again, the same."""
    ntt_cpu.clear_tables()
    small, large = ntt_cpu.tables(4), ntt_cpu.tables(10)
    monkeypatch.setattr(ntt_cpu, "KEEP_BYTES", large.nbytes + small.nbytes)
    ntt_cpu.tables(4)  # used last: 2^10's are the older
    ntt_cpu.tables(6)
    held = set(ntt_cpu._tables)
    assert ("bn254", 6) in held and ("bn254", 10) not in held and ("bn254", 4) in held
    assert ntt_cpu.tables_nbytes() <= ntt_cpu.KEEP_BYTES
    monkeypatch.setattr(ntt_cpu, "KEEP_BYTES", 0)
    again = ntt_cpu.tables(10)
    assert set(ntt_cpu._tables) == {("bn254", 10)}  # the latest stays, whatever its size
    assert again is not large and np.array_equal(again.g_rev, large.g_rev)
    x = np.zeros((1 << 10, 4), np.uint64)
    ntt_cpu.ntt(x)  # (transforms run as before)
    ntt_cpu.clear_tables()


# --- lazy reduction at its bounds -----------------------------------------------------------


def _tup(v):
    return tuple(np.uint64((v >> (64 * t)) & (2**64 - 1)) for t in range(4))


def _int(t):
    return sum(int(x) << (64 * i) for i, x in enumerate(t))


def test_lazy_butterflies_at_their_bounds(field):
    """The butterflies of the curve's build (CPU: compiled LLVM, where a carry lost above 2^256
    would show) on inputs at the edges of their documented ranges (cuzk.kernels.ntt: DIT
    inputs below 2L, DIF inputs below L, twiddles below r, with L = 2r for BN254 and r for
    BLS12-381): outputs within range and congruent to the butterfly mod r."""
    n = get_target("cpu").load("cuzk.kernels.ntt", **curves.build_params(field.curve))
    r, lz = field.r, n.LAZY_BOUND
    assert lz == (2 * r if field.curve == "bn254" else r) and 2 * lz < MONT_R
    r_inv = pow(MONT_R, -1, r)
    twiddles = [1, 2, r - 1, r - 2, MONT_R % r]
    high = [v for v in (0, 1, r - 1, r, lz - 1, lz, 2 * lz - 2, 2 * lz - 1) if v < 2 * lz]
    for w, v in itertools.product(twiddles, [*high, MONT_R - 1]):
        m = _int(n.mul_lazy(_tup(w), _tup(v)))
        assert m < 2 * r and m % r == w * v * r_inv % r, (w, v)
    for u, v, w in itertools.product(high, high, twiddles):
        t = w * v * r_inv % r
        for final in (False, True):
            for twiddled, tv in ((True, t), (False, v)):
                out = n.dit_butterfly(_tup(u), _tup(v), _tup(w), twiddled, False, final)
                s, d = _int(out[0]), _int(out[1])
                bound = r if final else 2 * lz
                assert s < bound and d < bound, (u, v, w, final, twiddled)
                assert (s - u - tv) % r == 0 and (d - u + tv) % r == 0, (u, v, w, final)
    low = [v for v in (0, 1, r - 2, r - 1, lz - 2, lz - 1) if v < lz]
    for u, v, w in itertools.product(low, low, twiddles):
        for flip in (False, True):
            out = n.dif_butterfly(_tup(u), _tup(v), _tup(w), True, flip)
            s, d = _int(out[0]), _int(out[1])
            sign = -1 if flip else 1
            assert s < lz and d < lz, (u, v, w, flip)
            assert (s - u - v) % r == 0 and (d - sign * (u - v) * w * r_inv) % r == 0
    for v in high:
        assert _int(n.reduce_lazy(_tup(v))) == v % r


# --- transforms against the naive DFT -------------------------------------------------------


def test_ntt_matches_naive_dft(target, field):
    m = _module(target)
    rng = random.Random(1)
    r, w = field.r, field.w
    for log_n in range(max_log(target) + 1):
        n = 1 << log_n
        values = rand_fr(rng, n, field)
        x = to_mont(values, field)
        m.ntt(x, **field.kw)
        assert from_mont(x, field) == dft(values, w[log_n], field), f"n=2^{log_n}"
        y = to_mont(values, field)
        m.ntt(y, inverse=True, **field.kw)
        n_inv = pow(n, -1, r)
        inverse = dft(values, pow(w[log_n], -1, r), field)
        assert from_mont(y, field) == [v * n_inv % r for v in inverse]


@pytest.mark.cuda
def test_cuda_stage_kernels_match_naive_dft(field):
    """Small shared-memory blocks, so the per-stage (column) kernels run too."""
    from cuzk.kernels import ntt_cuda

    rng = random.Random(2)
    log_n = 4
    for block_log in (1, 2):
        values = rand_fr(rng, 1 << log_n, field)
        x = to_mont(values, field)
        ntt_cuda.ntt(x, block_log=block_log, **field.kw)
        assert from_mont(x, field) == dft(values, field.w[log_n], field)
        ntt_cuda.ntt(x, inverse=True, block_log=block_log, **field.kw)
        assert from_mont(x, field) == values


def test_round_trip(target, field):
    m = _module(target)
    rng = np.random.default_rng(3)
    sizes = (1, 2, 7, 10, 13) if target == "cpu" else (1, 3, 5)
    for log_n in sizes:
        values = [int(v) for v in rng.integers(0, 2**62, size=1 << log_n, dtype=np.int64)]
        values = [v * 0x9E3779B97F4A7C15 % field.r for v in values]
        values[: min(4, len(values))] = [field.r - 1, 0, field.r - 1, 1][: len(values)]
        x = to_mont(values, field)
        orig = x.copy()
        m.ntt(x, **field.kw)
        assert not np.array_equal(x, orig) or log_n == 0
        m.ntt(x, inverse=True, **field.kw)
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


def test_coset_shift(target, field):
    m = _module(target)
    rng = random.Random(5)
    r = field.r
    for log_n in range(max_log(target) + 1):
        n = 1 << log_n
        g = field.w[log_n + 1]
        values = rand_fr(rng, n, field)
        x = to_mont(values, field)
        m.coset_shift(x, log_n, **field.kw)
        assert from_mont(x, field) == [v * pow(g, i, r) % r for i, v in enumerate(values)]
        m.coset_shift(x, log_n, inverse=True, **field.kw)
        assert from_mont(x, field) == values


def test_coset_shift_rejects_wrong_log(target):
    m = _module(target)
    with pytest.raises(ValueError):
        m.coset_shift(to_mont([1, 2, 3, 4]), 3)


# --- the H pipeline -------------------------------------------------------------------------


def test_compute_h_matches_naive_polynomials(target, field):
    """h_i = A(g w^i) B(g w^i) - C(g w^i), plain form, as snarkjs's joinABC +
    batchFromMontgomery leave it for the H multi-exponentiation; and as snarkjs's step 2 in
    tests/reference.py (h_on_coset, with snarkjs's roots derived there)."""
    m = _module(target)
    rng = random.Random(6)
    for log_n in range(max_log(target) + 1 - (target == "cuda")):
        n = 1 << log_n
        a, b, c = (rand_fr(rng, n, field) for _ in range(3))
        expected = quotient_reference(a, b, c, log_n, field)
        if log_n == 3:
            assert reference.h_on_coset(a, b, c, field.r) == expected
        h = m.compute_h(to_mont(a, field), to_mont(b, field), to_mont(c, field), **field.kw)
        assert ints(np.asarray(h)) == expected, f"n=2^{log_n}"


def test_compute_h_of_a_satisfied_system(target, field):
    """c = a*b on the domain: A B - C vanishes on the domain, so it is Z(x) H(x) with
    Z = x^n - 1, and Z(g w^i) = g^n - 1 = -2 on the coset: h_i = -2 H(g w^i) where H has degree
    at most n - 2, i.e. the coset iNTT of h/-2 has a zero top coefficient."""
    m = _module(target)
    rng = random.Random(7)
    log_n = 4 if target == "cpu" else 2
    n, r = 1 << log_n, field.r
    a, b = rand_fr(rng, n, field), rand_fr(rng, n, field)
    c = [x * y % r for x, y in zip(a, b, strict=True)]
    abc = (to_mont(v, field) for v in (a, b, c))
    h = ints(np.asarray(m.compute_h(*abc, **field.kw)))
    quotient = [v * pow(-2, -1, r) % r for v in h]  # H(g w^i)
    # coefficients of H(g x): inverse DFT of its values at w^i, then undo g^j
    g, w = field.w[log_n + 1], field.w[log_n]
    coeffs = [v * pow(n, -1, r) % r for v in dft(quotient, pow(w, -1, r), field)]
    coeffs = [co * pow(g, -j, r) % r for j, co in enumerate(coeffs)]
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
def test_cuda_compute_h_with_stage_kernels(field):
    from cuzk.kernels import ntt_cuda

    rng = random.Random(9)
    log_n = 3
    vs = [to_mont(rand_fr(rng, 1 << log_n, field), field) for _ in range(3)]
    ref = ntt_cpu.compute_h(*[v.copy() for v in vs], **field.kw)
    for block_log in (1, 2):
        h = ntt_cuda.compute_h(*[v.copy() for v in vs], block_log=block_log, **field.kw)
        assert np.array_equal(h, ref)
    assert ntt_cuda.device_tables().get(log_n, **field.kw) is not None


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
def test_cpu_column_phase_at_small_sizes(monkeypatch, field, block_log, group_log):
    """The CPU blocks are 2^BLOCK_LOG elements, so the naive-reference sizes above run the
    block phase only: here smaller blocks and column groups put those sizes through the column
    phase too (ntt both ways, and compute_h), against the naive references."""
    monkeypatch.setattr(ntt_cpu, "BLOCK_LOG", block_log)
    monkeypatch.setattr(ntt_cpu, "GROUP_LOG", group_log)
    rng = random.Random(13)
    for log_n in range(1, max_log("cpu") + 1):
        n = 1 << log_n
        values = rand_fr(rng, n, field)
        x = to_mont(values, field)
        ntt_cpu.ntt(x, **field.kw)
        assert from_mont(x, field) == dft(values, field.w[log_n], field), f"n=2^{log_n}"
        ntt_cpu.ntt(x, inverse=True, **field.kw)
        assert from_mont(x, field) == values, f"n=2^{log_n}"
        a, b, c = (rand_fr(rng, n, field) for _ in range(3))
        h = ntt_cpu.compute_h(to_mont(a, field), to_mont(b, field), to_mont(c, field), **field.kw)
        assert ints(h) == quotient_reference(a, b, c, log_n, field), f"n=2^{log_n}"


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
for curve in ("bn254", "bls12_381"):
    for kname, (fn, sig) in ntt_cuda.kernels(curve).CUDA_KERNELS.items():
        name = f"{curve}:{kname}"
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
    """Linked for sm_90 by nvJitLink (no GPU needed), both curves' builds: no register spills,
    registers x threads per block within the 64K register file, shared memory within the
    48 KiB static limit, so the launches in ntt_cuda cannot fail for lack of resources on an
    H100/H200."""
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
    assert set(logs) == {f"{c}:{k}" for c in ("bn254", "bls12_381") for k in ntt_cuda.CUDA_KERNELS}
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
