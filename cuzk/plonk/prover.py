"""The PLONK prover: snarkjs's five rounds (plonk_prove.js; Gabizon, Williamson, Ciobotaru,
"PLONK", ePrint 2019/953, section 8) on a snarkjs PLONK key, proofs that `snarkjs plonk
verify` accepts.

With n = domainSize, H = {w^i} (w = w[power], snarkjs's roots), Z_H(X) = X^n - 1, the
gates qM a b + qL a + qR b + qO c + qC + PI = 0 on H, PI(X) = -sum_i p_i L_(i+1)(X) over
the public signals p, and the copy constraints sigma:

1. Wires a, b, c: each gate's signal values (the witness, extended by the key's additions;
   signal 0 counts as 0, as in snarkjs), interpolated on H, blinded as
   a(X) + (b1 X + b2) Z_H(X) (b, c likewise with b3..b6), committed: [a]_1, [b]_1, [c]_1.
2. beta, gamma from the transcript; the permutation product z on H,
   z(w^0) = 1, z(w^(i+1)) = z(w^i) prod_j (f_j,i + beta k_j w^i + gamma) /
   (f_j,i + beta sigma_j(w^i) + gamma) (k = 1, k1, k2), blinded by (b7 X^2 + b8 X + b9)
   Z_H(X), committed.
3. alpha; the quotient t = (gates + alpha (permutation numerator z(X) - denominator
   z(wX)) + alpha^2 (z - 1) L_1) / Z_H. As in snarkjs, the numerator N (degree 4n + 5) is
   evaluated on the domain of 4n itself, where the key stores its polynomials' values (no
   transform of the key's polynomials per proof), which gives N modulo X^4n - 1; its six
   coefficients past 4n come from the top coefficients of the blinded factors
   (numerator_high), and Z_H is divided out of the coefficients (divide_by_zh). t is split
   into T1, T2, T3 of n, n and n + 6
   coefficients with blinding b10, b11 (T1 + b10 X^n, T2 - b10 + b11 X^n, T3 - b11),
   committed.
4. xi; the evaluations a, b, c, s1, s2 at xi and z at xi w.
5. v; the linearisation r(X) (its constant r0 makes r(xi) = 0) and the openings
   Wxi = (r + v a + v^2 b + v^3 c + v^4 s1 + v^5 s2 - their values) / (X - xi),
   Wxiw = (z - z(xi w)) / (X - xi w), committed.

The challenges come from cuzk.plonk.transcript, shared with the verifier; the eleven
blinding scalars from the operating system's CSPRNG (`secrets`). Work on vectors goes
through `FrOps` (cuzk.plonk.fr: NTTs, MSMs, and the kernels of cuzk.kernels.plonk_cpu_kernels
for the additions, the gate check, the grand product with one inversion, the quotient's
numerator in one pass over the domain of 4n, Horner's evaluations, the scaled sums and the
divisions by X - x): no step runs per element in Python.

A witness that breaks a gate or a copy constraint is refused before any commitment
(ProveError names the gate), as snarkjs refuses one that breaks a copy constraint.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass

import numpy as np

from cuzk.arith.radix import limbs_to_ints
from cuzk.formats.plonk_json import proof_to_json
from cuzk.formats.stored import g1_from_limbs
from cuzk.plonk.fr import FrOps
from cuzk.plonk.transcript import Transcript
from cuzk.plonk.verifier import lagrange_at

log = logging.getLogger("cuzk.plonk")


class ProveError(ValueError):
    """A witness the key cannot prove (a gate or a copy constraint broken)."""


@dataclass
class PlonkProof:
    """A finished proof: commitments (affine ints), evaluations, the public signals."""

    curve: object  # cuzk.formats.curve Curve
    commitments: dict
    evaluations: dict
    public: list[int]
    timings: dict

    def to_json(self) -> dict:
        """snarkjs's proof.json object."""
        return proof_to_json(self.commitments, self.evaluations, self.curve)


def full_witness(key, values, ops: FrOps | None = None) -> np.ndarray:
    """The (nVars, 4) signal values in Montgomery form: the witness's (`values`, nVars -
    nAdditions plain rows, w[0] set to 0 as snarkjs does) then the key's additions in order,
    each fa w_a + fb w_b over earlier signals (one sequential kernel)."""
    ops = ops or FrOps(key.curve_info)
    m = len(values)
    w = np.zeros((m + key.n_additions, 4), np.uint64)
    w[:m] = values
    w[0] = 0
    w[:m] = ops.from_plain(w[:m])
    if key.n_additions:
        adds = key.additions
        ops.additions(w, adds["signal_a"], adds["signal_b"], adds["factor_a"], adds["factor_b"], m)
    return w


def divide_by_linear(coefs: np.ndarray, x: int, ops: FrOps) -> np.ndarray:
    """p(X) / (X - x) by synthetic division (Montgomery vectors); ProveError unless
    p(x) = 0."""
    q, rem = ops.divide_linear(coefs, x)
    if rem:
        raise ProveError("an opening polynomial does not vanish where it is opened")
    return q


def blind(coefs: np.ndarray, n: int, blinding: list[int], ops: FrOps) -> np.ndarray:
    """p(X) + (sum_k blinding[k] X^k) Z_H(X): coefficient k loses blinding[k], n + k gains
    it."""
    m = len(blinding)
    out = np.zeros((n + m, 4), np.uint64)
    out[:n] = coefs
    low = ops.to_ints(out[:m])
    out[:m] = ops.from_ints([x - bk for x, bk in zip(low, blinding, strict=True)])
    out[n : n + m] = ops.from_ints(blinding)
    return out


def wire_values(key, values, ops: FrOps) -> tuple:
    """Round 1's A, B, C: each gate's signal values (n, 4) on H, Montgomery form, from the
    witness `values` extended by the key's additions (full_witness)."""
    w = full_witness(key, values, ops)
    wires = []
    for m in (key.a_map, key.b_map, key.c_map):
        v = np.zeros((key.domain_size, 4), np.uint64)
        v[: key.n_constraints] = w[m]
        wires.append(v)
    return tuple(wires)


# The key's polynomials round 3 takes on the domain of 4n (attribute of the PlonkZKey, or
# "l1": its first Lagrange polynomial), in the quotient kernel's order; with the domain's
# points ("x") they are the key's extended values (extended()).
EXTENDED = ("qm", "ql", "qr", "qo", "qc", "s1", "s2", "s3", "l1")
# Up to this many public signals, PI's values on the domain of 4n are L1's rolled
# (pi_extended), one multiply-add each; past it one NTT of 4n costs less.
PI_ROLLS_MAX = 8
# The quotient's numerator has degree 4n + 5 (z a b c: n + 2 + 3 (n + 1)): its values on the
# domain of 4n give it modulo X^4n - 1, and its top HIGH coefficients come from the
# blinded polynomials' top coefficients (numerator_high).
HIGH = 6


def extended(key, ops: FrOps) -> dict:
    """The key's values on the domain of 4n that round 3 takes, the same for every proof:
    {name in EXTENDED: (4n, 4) Montgomery values at w4^j, j < 4n} and "x", those points.
    snarkjs's key stores them (its polynomials' evaluations on the domain of 4n), so all but
    "x" are views of the key: round 3 works on that domain, as snarkjs's prover does, and
    divides Z_H out of the numerator's coefficients (numerator_high, divide_by_zh). A
    daemon's device process makes them once when it loads the key and keeps them while the
    key is resident (cuzk.plonk.stages.Device); a one-shot proof, in its round 3."""
    n4 = 4 * key.domain_size
    out = {}
    for name in EXTENDED:
        p = key.lagrange[0] if name == "l1" else getattr(key, name)
        out[name] = p.evaluations
    out["x"] = ops.powers(ops.roots[key.power + 2], n4)
    return out


def extended_nbytes(domain_size: int) -> int:
    """The bytes extended()'s arrays take beside the key's own: the points "x"."""
    return 4 * domain_size * 32


def pi_extended(qc, l1, public: list, pi_h, ops: FrOps) -> np.ndarray:
    """qC + PI on the domain of 4n (a new array), PI(X) = -sum_i p_i L_(i+1)(X). L_(i+1)(X) =
    L_1(X w^-i), and a point of the domain times w^-i = w4^-4i is the point 4i places before
    it, so L_(i+1)'s values are L1's rolled by 4i: one multiply-add per public signal (up to
    PI_ROLLS_MAX of them; more take one NTT of PI's coefficients, `pi_h` its values on H)."""
    out = ops.copy(qc)  # where qc is (a CudaFrOps's: on the GPU)
    if len(public) > PI_ROLLS_MAX:
        ops.axpy(out, ops.evaluations(ops.intt(pi_h), len(qc)), 1)
        return out
    for i, p in enumerate(public):
        if p:
            ops.axpy(out, ops.roll(l1, 4 * i), -p)
    return out


def numerator_high(key, wires, z_coef, beta: int, alpha: int, ops: FrOps) -> list[int]:
    """The quotient numerator's coefficients of X^4n .. X^(4n+5) (lowest first), which its
    values on the domain of 4n fold onto X^0 .. X^5. Only alpha (z idf - z(wX) sgf) reaches
    that degree (module docstring, round 3: each factor of degree n + 1, z of n + 2), and the
    top six coefficients of a product are those of its factors' top six, multiplied out:
    Python ints, a few dozen products. `wires`: the blinded a, b, c coefficients."""
    r, n = ops.r, key.domain_size

    def top(coefs, degree):  # coefficients of X^degree .. X^(degree - 5), highest first
        return ops.to_ints(coefs[degree - HIGH + 1 : degree + 1])[::-1]

    def mul(p, q):  # the product's top six, highest first
        return [sum(p[i] * q[k - i] for i in range(k + 1)) % r for k in range(HIGH)]

    def with_sigma(wire, s):  # wire + beta s (+ gamma: degree 0), s of degree n - 1
        st = top(s.coefficients, n - 1)
        return [(wire[k] + beta * st[k - 2]) % r if k >= 2 else wire[k] for k in range(HIGH)]

    a, b, c = (top(p, n + 1) for p in wires)  # + beta k X + gamma: degrees 1 and 0
    z = top(z_coef, n + 2)
    w = ops.roots[key.power]
    zw = [x * pow(w, n + 2 - k, r) % r for k, x in enumerate(z)]  # z(wX)
    idf = mul(mul(mul(z, a), b), c)
    sgf = mul(mul(mul(zw, with_sigma(a, key.s1)), with_sigma(b, key.s2)), with_sigma(c, key.s3))
    return [alpha * (x - y) % r for x, y in zip(idf, sgf, strict=True)][::-1]


def divide_by_zh(folded: np.ndarray, high: list[int], n: int, ops: FrOps) -> np.ndarray:
    """t = N / (X^n - 1) as 3n + 6 coefficients, from `folded` (4n: N modulo X^4n - 1, which
    the values on the domain of 4n give) and `high` (N's coefficients of X^4n ..
    X^(4n+5)); ProveError unless X^n - 1 divides N (a witness that breaks the circuit). With
    N = t (X^n - 1), t_j = N_(j+n) + t_(j+n): t_j is the sum of N_(j+kn), k >= 1."""
    full = np.zeros((4 * n + HIGH, 4), np.uint64)
    full[: 4 * n] = folded
    full[:HIGH] = ops.from_ints(
        [x - h for x, h in zip(ops.to_ints(full[:HIGH]), high, strict=True)]
    )
    full[4 * n :] = ops.from_ints(high)
    t_coef = np.array(full[n:])
    for k in (2, 3, 4):
        ops.axpy(t_coef, full[k * n :], 1)
    rest = np.array(full[:n])  # N_j + t_j, j < n: zero when X^n - 1 divides N
    ops.axpy(rest, t_coef[:n], 1)
    if rest.any():
        raise ProveError(
            "the quotient is not a polynomial: the witness does not satisfy the circuit"
        )
    return t_coef


def prove(key, values, ops: FrOps | None = None, wires=None, ext=None, table=None) -> PlonkProof:
    """A proof for the witness `values` ((nVars - nAdditions, 4) plain limbs, a .wtns's
    values) under `key` (cuzk.formats.plonk_zkey.PlonkZKey). `wires`: wire_values(key,
    values, ops) when the caller has them already (the daemon computes them in its synthesis
    processes, cuzk.plonk.stages, which check every gate: not checked again here); they may
    be overwritten. `ext`: extended(key, ops) when
    the caller keeps it (a daemon's resident key; read only), else round 3 computes it.
    `table`: a table of multiples of the key's first powers of tau (a daemon's resident key,
    cuzk.plonk.tables) for the nine commitments: the same points, less work."""
    curve = key.curve_info
    ops = ops or FrOps(curve)
    r, n, power = curve.r, key.domain_size, key.power
    n4 = 4 * n
    k1, k2 = key.k1, key.k2
    timings: dict = {}
    clock = [time.perf_counter()]

    def lap(name):
        now = time.perf_counter()
        timings[name] = now - clock[0]
        clock[0] = now
        log.debug("%s %.3f s", name, timings[name])

    b = [None] + [secrets.randbelow(r) for _ in range(11)]  # b1 .. b11

    def commit(coefs):
        return ops.commit(coefs, key.ptau, table=table)

    # --- round 1: wires ---------------------------------------------------------------------
    public = [x % r for x in limbs_to_ints(np.asarray(values[1 : 1 + key.n_public]))]
    A, B, C = wire_values(key, values, ops) if wires is None else wires
    pi_h = np.zeros((n, 4), np.uint64)  # PI on H: -p_i at gate i
    pi_values = ops.to_ints(A[: key.n_public])  # the public gates' wires: p_i
    if key.n_public:
        pi_h[: key.n_public] = ops.from_ints([-x for x in pi_values])
    if wires is None:  # (given wires were checked where they were made: stages.synthesize)
        check_gates(key, A, B, C, pi_h, ops)
    lap("wires")
    a_coef = blind(ops.intt(A), n, [b[2], b[1]], ops)
    b_coef = blind(ops.intt(B), n, [b[4], b[3]], ops)
    c_coef = blind(ops.intt(C), n, [b[6], b[5]], ops)
    commitments = {
        "A": commit(a_coef),
        "B": commit(b_coef),
        "C": commit(c_coef),
    }
    lap("round 1")

    # --- round 2: the permutation product --------------------------------------------------
    t = Transcript(curve)
    for name in ("Qm", "Ql", "Qr", "Qo", "Qc", "S1", "S2", "S3"):
        t.add_point(g1_from_limbs(getattr(key, name), curve))
    for p in public:
        t.add_scalar(p)
    for name in ("A", "B", "C"):
        t.add_point(commitments[name])
    beta = t.challenge()
    t.add_scalar(beta)
    gamma = t.challenge()
    x_h = ops.powers(ops.roots[power], n)  # w^i
    consts = ops.constants(beta=beta, gamma=gamma, k1=k1, k2=k2)
    z, last = ops.grand_product(
        A, B, C, x_h, *(s.evaluations[::4] for s in (key.s1, key.s2, key.s3)), consts
    )
    if z is None:  # (a_i + beta sigma + gamma) = 0: negligible odds
        raise ProveError("a permutation denominator is zero for these challenges")
    if last != 1:
        raise ProveError(
            "the witness does not satisfy the key's copy constraints (wires that the "
            "circuit joins carry different values)"
        )
    del x_h
    z_coef = blind(ops.intt(z), n, [b[9], b[8], b[7]], ops)
    commitments["Z"] = commit(z_coef)
    lap("round 2")

    # --- round 3: the quotient -------------------------------------------------------------
    t.add_scalar(beta)
    t.add_scalar(gamma)
    t.add_point(commitments["Z"])
    alpha = t.challenge()

    def ev(coefs):
        return ops.evaluations(coefs, n4)

    Ae, Be, Ce, Ze = ev(a_coef), ev(b_coef), ev(c_coef), ev(z_coef)
    if ext is None:
        ext = extended(key, ops)
    # the numerator's values on the domain of 4n (z(w x) at x = w4^j is z at w4^(j+4): the
    # kernel reads Ze[j + 4]), undivided (1 / Z_H as 1: Z_H is zero on H, every fourth point)
    consts = ops.constants(beta=beta, gamma=gamma, k1=k1, k2=k2, alpha=alpha, zh_inv=[1] * 4)
    qcpi = pi_extended(ext["qc"], ext["l1"], pi_values, pi_h, ops)
    selectors = [ext[name] for name in ("qm", "ql", "qr", "qo")] + [qcpi]
    sigma = [ext[name] for name in ("s1", "s2", "s3")]
    numerator = ops.quotient(Ae, Ae, Be, Ce, Ze, *selectors, *sigma, ext["l1"], ext["x"], consts)
    del Be, Ce, Ze, selectors, sigma, qcpi, ext
    high = numerator_high(key, (a_coef, b_coef, c_coef), z_coef, beta, alpha, ops)
    t_coef = divide_by_zh(ops.intt(numerator), high, n, ops)
    del numerator
    t1 = np.zeros((n + 1, 4), np.uint64)
    t1[:n] = t_coef[:n]
    t1[n] = ops.mont(b[10])
    t2 = np.zeros((n + 1, 4), np.uint64)
    t2[:n] = t_coef[n : 2 * n]
    t2[0] = ops.shift(t2[:1], -b[10])[0]
    t2[n] = ops.mont(b[11])
    t3 = np.array(t_coef[2 * n : 3 * n + 6])
    t3[0] = ops.shift(t3[:1], -b[11])[0]
    for name, coefs in (("T1", t1), ("T2", t2), ("T3", t3)):
        commitments[name] = commit(coefs)
    lap("round 3")

    # --- round 4: evaluations --------------------------------------------------------------
    t.add_scalar(alpha)
    for name in ("T1", "T2", "T3"):
        t.add_point(commitments[name])
    xi = t.challenge()
    omega = ops.roots[power]
    xiw = xi * omega % r
    evaluations = {
        "eval_a": ops.evaluate(a_coef, xi),
        "eval_b": ops.evaluate(b_coef, xi),
        "eval_c": ops.evaluate(c_coef, xi),
        "eval_s1": ops.evaluate(np.array(key.s1.coefficients), xi),
        "eval_s2": ops.evaluate(np.array(key.s2.coefficients), xi),
        "eval_zw": ops.evaluate(z_coef, xiw),
    }
    lap("round 4")

    # --- round 5: openings -----------------------------------------------------------------
    t.add_scalar(xi)
    for name in ("eval_a", "eval_b", "eval_c", "eval_s1", "eval_s2", "eval_zw"):
        t.add_scalar(evaluations[name])
    v1 = t.challenge()
    v = [1, v1]
    for _ in range(4):
        v.append(v[-1] * v1 % r)
    ea, eb, ec = evaluations["eval_a"], evaluations["eval_b"], evaluations["eval_c"]
    es1, es2, ezw = evaluations["eval_s1"], evaluations["eval_s2"], evaluations["eval_zw"]
    zh, lag = lagrange_at(xi, max(1, key.n_public), power, curve)
    xin = (zh + 1) % r
    eval_pi = -sum(p * lag[i] for i, p in enumerate(public)) % r
    betaxi = beta * xi % r
    e2 = alpha * (ea + betaxi + gamma) * (eb + betaxi * k1 + gamma) % r
    e2 = e2 * (ec + betaxi * k2 + gamma) % r
    e3 = alpha * (ea + beta * es1 + gamma) * (eb + beta * es2 + gamma) % r * ezw % r
    e4 = lag[0] * alpha * alpha % r
    r0 = (eval_pi - e3 * (ec + gamma) - e4) % r
    # Wxi's numerator: r(X) + v a + v^2 b + v^3 c + v^4 s1 + v^5 s2, then its constant
    terms = [
        (key.qm.coefficients, ea * eb),
        (key.ql.coefficients, ea),
        (key.qr.coefficients, eb),
        (key.qo.coefficients, ec),
        (key.qc.coefficients, 1),
        (z_coef, e2 + e4),
        (key.s3.coefficients, -beta * e3),
        (t1, -zh),
        (t2, -zh * xin),
        (t3, -zh * xin * xin),
        (a_coef, v[1]),
        (b_coef, v[2]),
        (c_coef, v[3]),
        (key.s1.coefficients, v[4]),
        (key.s2.coefficients, v[5]),
    ]
    acc = np.zeros((n + 6, 4), np.uint64)
    for coefs, k in terms:
        ops.axpy(acc, coefs, k % r)
    const = (r0 - v[1] * ea - v[2] * eb - v[3] * ec - v[4] * es1 - v[5] * es2) % r
    acc[0] = ops.shift(acc[:1], const)[0]
    wxi_coef = divide_by_linear(acc, xi, ops)
    zs = np.array(z_coef)
    zs[0] = ops.shift(zs[:1], -ezw)[0]
    wxiw_coef = divide_by_linear(zs, xiw, ops)
    commitments["Wxi"] = commit(wxi_coef)
    commitments["Wxiw"] = commit(wxiw_coef)
    lap("round 5")
    return PlonkProof(curve, commitments, evaluations, public, timings)


def check_gates(key, A, B, C, pi_h, ops: FrOps) -> None:
    """ProveError naming the first gate with qM a b + qL a + qR b + qO c + qC + PI != 0 (the
    selectors' values on H are every fourth of their stored 4n evaluations)."""
    bad = ops.gate_residuals(
        A, B, C, *(p.evaluations[::4] for p in (key.qm, key.ql, key.qr, key.qo, key.qc)), pi_h
    )
    if len(bad):
        raise ProveError(
            f"the witness does not satisfy PLONK gate {int(bad[0])} of {key.n_constraints} "
            "(the circuit's constraints, as the key's gates)"
        )
