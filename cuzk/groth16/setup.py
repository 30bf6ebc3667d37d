"""`cuzk setup`: a development-only, single-party Groth16 setup writing a snarkjs-format zkey.

INSECURE FOR PRODUCTION: one process draws the toxic waste (τ, α, β, γ, δ) and forgets it;
anyone who kept it could forge proofs. Use it to make test and benchmark keys quickly.

With L_j the Lagrange basis of the domain (size n, generator ω) and u_i, v_i, w_i the A, B, C
columns of variable i evaluated at τ (u_i(τ) = Σ_rows A[row][i]·L_row(τ)), the key holds:

    pointsA[i]  = u_i(τ)·G1          pointsB1[i] = v_i(τ)·G1       pointsB2[i] = v_i(τ)·G2
    IC[i]       = (β·u_i + α·v_i + w_i)(τ)/γ · G1        for i ≤ nPublic
    pointsC[i]  = (β·u_i + α·v_i + w_i)(τ)/δ · G1        for i > nPublic
    pointsH[i]  = L'_{2i+1}(τ)/δ · G1                     L' = Lagrange basis of the 2n domain

snarkjs adds, per public signal s (and the constant one, s = 0), an A row nConstraints + s with
coefficient 1 on signal s, so that the public inputs are bound to the proof; so do we.
The H points are the odd-index Lagrange points of the 2n domain over δ, as snarkjs derives
them from a powers-of-tau file; snarkjs's (and cuzk's) prover multiplies them by the h
vector its NTT pipeline computes. The interop test proves a cuzk-setup key with snarkjs.
Scalar multiples of the generators use fixed-base tables (32 windows of 8 bits).

The curve is the one whose prime the .r1cs names: BN254 or BLS12-381 (both Fr on 4 limbs).
One source, a build per curve: imported normally this module's kernels use BN254's Fr;
``get_target("cpu").load("cuzk.groth16.setup", curve="bls12_381")`` executes it again on
BLS12-381's field build, each kernel named for that build (its own Numba cache entries). The
public functions are this module's and run the kernels of the build their curve names
(``kernels(curve)``); the fixed-base tables are built per group and curve (``fixed_base``).
"""

from __future__ import annotations

import secrets
import time

import numpy as np
from numba import prange

from cuzk.arith.curves import DEFAULT, build_params, constants, curve_build
from cuzk.arith.jit import building
from cuzk.arith.radix import int_to_limb_array, int_to_limb_tuple, limbs_to_int

T = building()
CURVE = T.param("curve", DEFAULT)
F = T.load("cuzk.arith.field", **build_params(CURVE))
if F.NR != 4:
    raise NotImplementedError(f"{CURVE}: setup works on 4-limb Fr elements")
fr_add, fr_from_mont, fr_inv, fr_mul = F.fr_add, F.fr_from_mont, F.fr_inv, F.fr_mul
fr_one, fr_sub, fr_to_mont, load, store = F.fr_one, F.fr_sub, F.fr_to_mont, F.fr_load, F.fr_store
njit = T.njit  # numba.njit(cache=True, nogil=True, ...), each kernel named for its build
MONT_R = 1 << 256  # R of Fr's Montgomery form on 4 limbs, on both curves


def kernels(curve: str = DEFAULT):
    """The build of this module whose kernels work in ``curve``'s Fr (this module for BN254)."""
    return curve_build("cuzk.groth16.setup", curve)


@njit()
def _batch_inverse(d, out):
    """out[i] = 1/d[i] (Montgomery's trick: one inversion, 3(n−1) multiplications)."""
    n = d.shape[0]
    acc = fr_one()
    for i in range(n):
        store(out, i, 0, acc)
        acc = fr_mul(acc, load(d, i, 0))
    inv = fr_inv(acc)
    for i in range(n - 1, -1, -1):
        store(out, i, 0, fr_mul(load(out, i, 0), inv))
        inv = fr_mul(inv, load(d, i, 0))


@njit()
def _lagrange_basis(tau, start, step, n, scale, out):
    """out[j] = scale · x_j / (τ − x_j) for x_j = start·step^j (Montgomery in and out).
    With scale = (τ^n − c)/n this is the Lagrange basis of the set {x_j}, x_j^n = c."""
    d = np.empty((n, 4), dtype=np.uint64)
    xs = np.empty((n, 4), dtype=np.uint64)
    x = start
    for j in range(n):
        store(xs, j, 0, x)
        store(d, j, 0, fr_sub(tau, x))
        x = fr_mul(x, step)
    _batch_inverse(d, out)
    for j in range(n):
        store(out, j, 0, fr_mul(fr_mul(load(out, j, 0), load(xs, j, 0)), scale))


@njit()
def _accumulate_columns(row_ptr, cols, vals, lag, out):
    """out[col] += val·L[row] over a CSR matrix with plain values (Montgomery out)."""
    for i in range(row_ptr.shape[0] - 1):
        li = load(lag, i, 0)
        for k in range(row_ptr[i], row_ptr[i + 1]):
            c = cols[k]
            t = fr_mul(fr_to_mont(load(vals, k, 0)), li)
            store(out, c, 0, fr_add(load(out, c, 0), t))


@njit(parallel=True)
def _combine(u, v, w, alpha, beta, inv, lo, hi, out):
    """out[i − lo] = (β·u_i + α·v_i + w_i)·inv, plain form, for lo ≤ i < hi."""
    for i in prange(lo, hi):
        bu = fr_mul(beta, load(u, i, 0))
        t = fr_add(fr_add(bu, fr_mul(alpha, load(v, i, 0))), load(w, i, 0))
        store(out, i - lo, 0, fr_from_mont(fr_mul(t, inv)))


@njit(parallel=True)
def _from_mont_scaled(x, k, out):
    """out[i] = plain(x[i]·k)."""
    for i in prange(x.shape[0]):
        store(out, i, 0, fr_from_mont(fr_mul(load(x, i, 0), k)))


# --- fixed-base scalar multiplication (cuzk.groth16.fixed_base, per group and curve) -----


def fixed_base(group: str, curve: str = DEFAULT):
    """The build of cuzk.groth16.fixed_base for ``group`` ("g1" or "g2") of ``curve``."""
    return curve_build("cuzk.groth16.fixed_base", curve, group=group)


def _generators(curve: str):
    """``curve``'s G1 and G2 generators as the affine limb tuples the group builds take:
    ((x, y), ((x.c0, x.c1), (y.c0, y.c1))), each coordinate on the curve's q-limbs."""
    from cuzk.formats.curve import by_name
    from cuzk.formats.stored import g1_to_limbs, g2_to_limbs

    info, K = by_name(curve), constants(curve)
    g1 = g1_to_limbs(K.G1_GENERATOR, info).reshape(2, info.q_limbs)
    g2 = g2_to_limbs(K.G2_GENERATOR, info).reshape(4, info.q_limbs)
    x, y = (tuple(coord) for coord in g1)
    x_c0, x_c1, y_c0, y_c1 = (tuple(coord) for coord in g2)
    return (x, y), ((x_c0, x_c1), (y_c0, y_c1))


class FixedBase:
    """Tables for k·G1 and k·G2 of ``curve`` over many scalars, computed in chunks with
    progress."""

    CHUNK = 1 << 14

    def __init__(self, curve: str = DEFAULT):
        self.builds = {g: fixed_base(g, curve) for g in ("g1", "g2")}
        g1, g2 = _generators(curve)
        self.tables = {"g1": self.builds["g1"].table(g1), "g2": self.builds["g2"].table(g2)}

    def _multiply(self, group, scalars, progress):
        build = self.builds[group]
        out = np.zeros((len(scalars), build.AFFINE_WIDTH), dtype=np.uint64)
        for lo in range(0, len(scalars), self.CHUNK):
            hi = min(lo + self.CHUNK, len(scalars))
            build.multiply(self.tables[group], np.ascontiguousarray(scalars[lo:hi]), out[lo:hi])
            if progress:
                progress(hi - lo)
        return out

    def g1(self, scalars, progress=None) -> np.ndarray:
        return self._multiply("g1", scalars, progress)

    def g2(self, scalars, progress=None) -> np.ndarray:
        return self._multiply("g2", scalars, progress)


def domain_size_for(n_constraints: int, n_public: int) -> int:
    """snarkjs: 2^(floor(log2(nConstraints + nPublic)) + 1)."""
    return 1 << ((n_constraints + n_public).bit_length())


def _random_nonzero(r: int) -> int:
    while True:
        k = secrets.randbelow(r)
        if k:
            return k


def _coefficients(r1cs, n_public, curve: str, r: int):
    """The zkey coefficient section: A entries (plus one row per public signal) then B entries,
    values coef·R² mod r (``curve``'s r)."""
    from cuzk.formats.zkey import COEF_DTYPE

    parts = []
    for matrix, m in ((0, r1cs.A), (1, r1cs.B)):
        rows = np.repeat(np.arange(len(m.row_ptr) - 1, dtype=np.uint32), np.diff(m.row_ptr))
        e = np.zeros(len(m.cols), dtype=COEF_DTYPE)
        e["matrix"] = matrix
        e["constraint"] = rows
        e["signal"] = m.cols
        vals = np.ascontiguousarray(m.vals)
        e["value"] = _to_mont_twice(vals, curve)
        parts.append(e)
        if matrix == 0:
            pub = np.zeros(n_public + 1, dtype=COEF_DTYPE)
            pub["matrix"] = 0
            pub["constraint"] = r1cs.n_constraints + np.arange(n_public + 1)
            pub["signal"] = np.arange(n_public + 1)
            pub["value"] = int_to_limb_array(MONT_R * MONT_R % r)
            parts.append(pub)
    return np.concatenate(parts)


@njit(parallel=True)
def _to_mont_twice_kernel(x, out):
    for i in prange(x.shape[0]):
        store(out, i, 0, fr_to_mont(fr_to_mont(load(x, i, 0))))


def _to_mont_twice(vals, curve: str = DEFAULT):
    out = np.empty_like(vals)
    if len(vals):
        kernels(curve)._to_mont_twice_kernel(vals, out)
    return out


def setup(r1cs_path, zkey_path, progress=None, log=None):
    """Read the .r1cs, draw toxic waste, write a snarkjs-format Groth16 zkey over the curve
    whose scalar field the .r1cs names (BN254 or BLS12-381). Returns stats.

    ``progress(done, total)`` is called as point sets are computed; ``log(msg)`` for
    stage lines."""
    from cuzk.formats.atomic import check_apart
    from cuzk.formats.curve import by_name
    from cuzk.formats.r1cs import R1CS
    from cuzk.formats.zkey import ZKeyData, write_zkey

    check_apart((zkey_path,), (r1cs_path,))  # the key over the circuit destroys it
    say = log or (lambda msg: None)
    t_start = time.perf_counter()
    r1cs = R1CS(r1cs_path)
    c = by_name(r1cs.curve)
    curve, K, k = c.arith, constants(c.arith), kernels(c.arith)
    n_vars = r1cs.n_wires
    n_public = r1cs.n_public
    n_constraints = r1cs.n_constraints
    n = domain_size_for(n_constraints, n_public)
    log2n = n.bit_length() - 1
    if log2n + 1 > K.FR_TWO_ADICITY:
        raise ValueError(
            f"{r1cs_path}: domain 2^{log2n} needs a 2n domain beyond "
            f"{c.title}'s 2^{K.FR_TWO_ADICITY}"
        )
    say(
        f"circuit: {n_constraints} constraints, {n_vars} wires, {n_public} public; "
        f"domain 2^{log2n}; {c.title}"
    )

    r = c.r
    tau, alpha, beta, gamma, delta = (_random_nonzero(r) for _ in range(5))
    w = K.fr_roots_of_unity()
    omega, omega_2n = w[log2n], w[log2n + 1]

    def mont_r(x: int) -> tuple:  # x·R mod r as the 4-tuple the kernels take
        return int_to_limb_tuple(x * MONT_R % r)

    # Lagrange basis of the domain at τ: L_j = ω^j (τ^n − 1) / (n (τ − ω^j)).
    lag = np.empty((n, 4), dtype=np.uint64)
    scale = (pow(tau, n, r) - 1) * pow(n, -1, r) % r
    k._lagrange_basis(mont_r(tau), mont_r(1), mont_r(omega), n, mont_r(scale), lag)
    say("Lagrange basis evaluated")

    u = np.zeros((n_vars, 4), dtype=np.uint64)
    v = np.zeros((n_vars, 4), dtype=np.uint64)
    ww = np.zeros((n_vars, 4), dtype=np.uint64)
    for m, out in ((r1cs.A, u), (r1cs.B, v), (r1cs.C, ww)):
        k._accumulate_columns(m.row_ptr, m.cols, np.ascontiguousarray(m.vals), lag, out)
    # The public-input binding rows: A[nConstraints + s][s] = 1 (a sum of Montgomery forms).
    for s in range(n_public + 1):
        u[s] = int_to_limb_array((limbs_to_int(u[s]) + limbs_to_int(lag[n_constraints + s])) % r)

    one = mont_r(1)
    a_plain = np.empty_like(u)
    b_plain = np.empty_like(v)
    k._from_mont_scaled(u, one, a_plain)
    k._from_mont_scaled(v, one, b_plain)
    ic = np.empty((n_public + 1, 4), dtype=np.uint64)
    cs = np.empty((n_vars - n_public - 1, 4), dtype=np.uint64)
    ma, mb = mont_r(alpha), mont_r(beta)
    k._combine(u, v, ww, ma, mb, mont_r(pow(gamma, -1, r)), 0, n_public + 1, ic)
    k._combine(u, v, ww, ma, mb, mont_r(pow(delta, -1, r)), n_public + 1, n_vars, cs)

    # H: L'_{2i+1}(τ)/δ over the odd points x_i = ω_2n·ω^i of the 2n domain:
    # L'_{2i+1}(τ) = x_i (τ^{2n} − 1) / (2n (τ − x_i)).
    hscale = ((pow(tau, 2 * n, r) - 1) * pow(2 * n * delta, -1, r)) % r
    hl = np.empty((n, 4), dtype=np.uint64)
    k._lagrange_basis(mont_r(tau), mont_r(omega_2n), mont_r(omega), n, mont_r(hscale), hl)
    h_plain = np.empty_like(hl)
    k._from_mont_scaled(hl, one, h_plain)
    say("scalars ready")

    fb = FixedBase(curve)
    total = 3 * n_vars + n_vars + n  # A, B1, C+IC, B2, H
    done = [0]

    def tick(count):
        done[0] += count
        if progress:
            progress(done[0], total)

    points_a = fb.g1(a_plain, tick)
    points_b1 = fb.g1(b_plain, tick)
    points_ic = fb.g1(ic, tick)
    points_c = fb.g1(cs, tick)
    points_h = fb.g1(h_plain, tick)
    points_b2 = fb.g2(b_plain, tick)
    alpha1, beta1, delta1 = fb.g1(np.array([int_to_limb_array(x) for x in (alpha, beta, delta)]))
    beta2, gamma2, delta2 = fb.g2(np.array([int_to_limb_array(x) for x in (beta, gamma, delta)]))
    data = ZKeyData(
        n_vars=n_vars,
        n_public=n_public,
        domain_size=n,
        alpha1=alpha1,
        beta1=beta1,
        beta2=beta2,
        gamma2=gamma2,
        delta1=delta1,
        delta2=delta2,
        ic=points_ic,
        coefficients=_coefficients(r1cs, n_public, curve, r),
        points_a=points_a,
        points_b1=points_b1,
        points_b2=points_b2,
        points_c=points_c,
        points_h=points_h,
        n8q=c.n8q,
        q=c.q,
        n8r=c.n8r,
        r=c.r,
    )
    write_zkey(zkey_path, data)
    seconds = time.perf_counter() - t_start
    say(f"wrote {zkey_path} in {seconds:.1f} s")
    return {
        "curve": curve,
        "constraints": n_constraints,
        "domain_size": n,
        "n_vars": n_vars,
        "n_public": n_public,
        "seconds": seconds,
    }
