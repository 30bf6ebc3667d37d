"""The CPU kernels of the PLONK prover (cuzk.plonk.fr drives them): the key's additions, the
permutation's grand product, the quotient on the coset of 4n, and the sequential steps on
coefficients (evaluation, division by X - x, scaled sums), none of them per-element Python.

One source, a build per curve (as cuzk.kernels.ntt_cpu_kernels: the plain import is
BN254's, ``curve_build("cuzk.kernels.plonk_cpu_kernels", "bls12_381")`` BLS12-381's); the
per-element arithmetic is cuzk.kernels.plonk's, shared with a CUDA build. Vectors are
C-contiguous (n, 4) uint64 arrays of Montgomery-form elements; ``k`` the constants array of
cuzk.kernels.plonk (its rows BETA, GAMMA, ...).

Elementwise kernels run ``prange`` over runs of 2^RUN_LOG elements (one task an element
costs ~100 ns of scheduling: docs/kernels.md, "The floor"); the recurrences (additions,
the running product, Horner, synthetic division) are sequential, a few products an element.
"""

from numba import prange

from cuzk.arith import curves
from cuzk.arith.curves import DEFAULT
from cuzk.arith.jit import building

T = building()
CURVE = T.param("curve", DEFAULT)
P = T.load("cuzk.kernels.plonk", **curves.build_params(CURVE))
load, store, fr_add, fr_sub, fr_mul = P.load, P.store, P.fr_add, P.fr_sub, P.fr_mul
fr_inv, fr_is_zero = P.F.fr_inv, P.F.fr_is_zero
fr_to_mont, fr_from_mont = P.F.fr_to_mont, P.F.fr_from_mont
identity_factor, sigma_factor, gate = P.identity_factor, P.sigma_factor, P.gate
quotient_numerator, ZH_INV = P.quotient_numerator, P.ZH_INV
njit = T.njit

RUN_LOG = 10


@njit()
def _runs(n):
    """(runs, run length): runs of 2^RUN_LOG elements covering n (the last one shorter)."""
    step = 1 << RUN_LOG
    return (n + step - 1) // step, step


@njit()
def _additions(w, sa, sb, fa, fb, first):
    """w[first + i] = fa[i] w[sa[i]] + fb[i] w[sb[i]] in order (an addition may use earlier
    ones): snarkjs's PLONK additions, all in Montgomery form."""
    for i in range(sa.shape[0]):
        v = fr_add(fr_mul(load(fa, i), load(w, sa[i])), fr_mul(load(fb, i), load(w, sb[i])))
        store(w, first + i, v)


@njit(parallel=True)
def _gate_residuals(bad, a, b, c, qm, ql, qr, qo, qc, pi):
    """bad[i] = 1 where gate i's qM a b + qL a + qR b + qO c + qC + PI is not zero."""
    n = a.shape[0]
    nruns, step = _runs(n)
    for t in prange(nruns):
        for i in range(t * step, min(n, (t + 1) * step)):
            g = gate(load(a, i), load(b, i), load(c, i), load(qm, i), load(ql, i), load(qr, i),
                     load(qo, i), load(qc, i))  # fmt: skip
            bad[i] = 0 if fr_is_zero(fr_add(g, load(pi, i))) else 1


@njit(parallel=True)
def _copy_factors(num, den, a, b, c, x, s1, s2, s3, k):
    """num[i], den[i]: the identity and sigma factors at w^i (x[i] = w^i)."""
    n = a.shape[0]
    nruns, step = _runs(n)
    for t in prange(nruns):
        for i in range(t * step, min(n, (t + 1) * step)):
            ai, bi, ci = load(a, i), load(b, i), load(c, i)
            store(num, i, identity_factor(ai, bi, ci, load(x, i), k))
            store(den, i, sigma_factor(ai, bi, ci, load(s1, i), load(s2, i), load(s3, i), k))


@njit()
def _grand_product(z, num, den, one, last):
    """z[0] = 1, z[i + 1] = z[i] num[i] / den[i]; last[0] = z[n-1] num[n-1] / den[n-1] (1
    when the copy constraints hold), or zero when a denominator is zero (z then unset). One
    inversion: z[i] = N_(i-1) / D_(i-1) for the running products N, D; forward N into z and D
    in a register, then backward 1/D_(i-1) = den_i / D_i. num and den are left unchanged."""
    n = num.shape[0]
    pn = load(num, 0)
    pd = load(den, 0)
    for i in range(1, n):
        store(z, i, pn)
        pn = fr_mul(pn, load(num, i))
        pd = fr_mul(pd, load(den, i))
    if fr_is_zero(pd):
        store(last, 0, pd)
        return
    inv = fr_inv(pd)
    store(last, 0, fr_mul(pn, inv))
    for i in range(n - 1, 0, -1):
        inv = fr_mul(inv, load(den, i))
        store(z, i, fr_mul(load(z, i), inv))
    store(z, 0, load(one, 0))


@njit(parallel=True)
def _quotient(out, a, b, c, z, qm, ql, qr, qo, qc, s1, s2, s3, l1, x, k):
    """out[j] = the quotient's numerator at x[j] / Z_H(x[j]) on the coset of 4n (z(w x) is
    z[j + 4]; 1 / Z_H repeats with period 4: k's rows ZH_INV..ZH_INV + 3). out may be a."""
    n = a.shape[0]
    nruns, step = _runs(n)
    for t in prange(nruns):
        for j in range(t * step, min(n, (t + 1) * step)):
            jw = j + 4
            if jw >= n:
                jw -= n
            v = quotient_numerator(
                load(a, j), load(b, j), load(c, j), load(z, j), load(z, jw), load(qm, j),
                load(ql, j), load(qr, j), load(qo, j), load(qc, j), load(s1, j), load(s2, j),
                load(s3, j), load(l1, j), load(x, j), k,
            )  # fmt: skip
            store(out, j, fr_mul(v, load(k, ZH_INV + (j & 3))))


@njit(parallel=True)
def _axpy(acc, x, s):
    """acc[i] += s x[i] for i < len(x) (s one element, (1, 4))."""
    n = x.shape[0]
    st = load(s, 0)
    nruns, step = _runs(n)
    for t in prange(nruns):
        for i in range(t * step, min(n, (t + 1) * step)):
            store(acc, i, fr_add(load(acc, i), fr_mul(st, load(x, i))))


@njit()
def _horner(p, x, out):
    """out[0] = p(x) = sum_i p[i] x^i."""
    xt = load(x, 0)
    n = p.shape[0]
    acc = load(p, n - 1)
    for i in range(n - 2, -1, -1):
        acc = fr_add(fr_mul(acc, xt), load(p, i))
    store(out, 0, acc)


@njit()
def _divide_linear(q, p, x, rem):
    """q = p / (X - x) by synthetic division (len(q) = len(p) - 1); rem[0] = p(x)."""
    xt = load(x, 0)
    n = p.shape[0]
    carry = load(p, n - 1)
    for i in range(n - 1, 0, -1):
        store(q, i - 1, carry)
        carry = fr_add(load(p, i - 1), fr_mul(carry, xt))
    store(rem, 0, carry)


@njit(parallel=True)
def _scale(x, s):
    """x[i] *= s, in place (s one element, (1, 4))."""
    n = x.shape[0]
    st = load(s, 0)
    nruns, step = _runs(n)
    for t in prange(nruns):
        for i in range(t * step, min(n, (t + 1) * step)):
            store(x, i, fr_mul(load(x, i), st))


@njit(parallel=True)
def _to_mont(x, inverse):
    """x[i] to Montgomery form, in place (with inverse: from it), x reduced below r first."""
    n = x.shape[0]
    nruns, step = _runs(n)
    for t in prange(nruns):
        for i in range(t * step, min(n, (t + 1) * step)):
            if inverse:
                store(x, i, fr_from_mont(load(x, i)))
            else:
                store(x, i, fr_to_mont(load(x, i)))
