"""The PLONK prover's kernels (cuzk.kernels.plonk_cpu_kernels through cuzk.plonk.fr.FrOps)
against the same steps on Python ints: the additions, the gate check, the grand product, the
quotient on the coset, Horner, the scaled sums, division by X - x. Small vectors (the
kernels' runs of 2^10 elements are crossed once)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk.formats.curve import BN254
from cuzk.plonk.fr import FrOps

R = BN254.r


@pytest.fixture(scope="module")
def ops():
    return FrOps(BN254)


def _rand(rng, m):
    return [rng.randrange(R) for _ in range(m)]


def test_additions_chain_in_order(ops):
    rng = random.Random(1)
    m, k = 9, 12
    w = _rand(rng, m) + [0] * k
    sa = [rng.randrange(m + i) for i in range(k)]  # may use earlier additions
    sb = [rng.randrange(m + i) for i in range(k)]
    fa, fb = _rand(rng, k), _rand(rng, k)
    vec = ops.from_ints(w)
    ops.additions(vec, np.array(sa, np.uint32), np.array(sb, np.uint32), ops.from_ints(fa),
                  ops.from_ints(fb), m)  # fmt: skip
    for i in range(k):
        w[m + i] = (fa[i] * w[sa[i]] + fb[i] * w[sb[i]]) % R
    assert ops.to_ints(vec) == w


@pytest.mark.parametrize("n", [1, 5, 1100])
def test_grand_product(ops, n):
    rng = random.Random(n)
    a, b, c, x, s1, s2, s3 = (_rand(rng, n) for _ in range(7))
    beta, gamma, k1, k2 = _rand(rng, 4)
    k = ops.constants(beta=beta, gamma=gamma, k1=k1, k2=k2)
    z, last = ops.grand_product(*(ops.from_ints(v) for v in (a, b, c, x, s1, s2, s3)), k)
    want, acc = [], 1
    for i in range(n):
        want.append(acc)
        num = (a[i] + beta * x[i] + gamma) * (b[i] + beta * k1 * x[i] + gamma)
        num = num * (c[i] + beta * k2 * x[i] + gamma) % R
        den = (a[i] + beta * s1[i] + gamma) * (b[i] + beta * s2[i] + gamma)
        den = den * (c[i] + beta * s3[i] + gamma) % R
        acc = acc * num * pow(den, -1, R) % R
    assert ops.to_ints(z) == want and last == acc
    # a zero denominator: no product
    s1[n // 2] = (-(a[n // 2] + gamma) * pow(beta, -1, R)) % R
    z, _ = ops.grand_product(*(ops.from_ints(v) for v in (a, b, c, x, s1, s2, s3)), k)
    assert z is None


def test_quotient_and_gates(ops):
    rng = random.Random(3)
    n = 1032
    vals = [_rand(rng, n) for _ in range(15)]
    a, b, c, z, qm, ql, qr, qo, qc, s1, s2, s3, l1, x, pi = vals
    beta, gamma, k1, k2, alpha = _rand(rng, 5)
    zh = _rand(rng, 4)
    k = ops.constants(beta=beta, gamma=gamma, k1=k1, k2=k2, alpha=alpha, zh_inv=zh)
    vecs = [ops.from_ints(v) for v in vals]
    out = ops.quotient(np.empty_like(vecs[0]), *vecs[:14], k)
    for j in rng.sample(range(n), 40) + [n - 1, n - 4, 0]:
        gate = (qm[j] * a[j] * b[j] + ql[j] * a[j] + qr[j] * b[j] + qo[j] * c[j] + qc[j]) % R
        idf = (a[j] + beta * x[j] + gamma) * (b[j] + beta * k1 * x[j] + gamma)
        idf = idf * (c[j] + beta * k2 * x[j] + gamma) % R
        sgf = (a[j] + beta * s1[j] + gamma) * (b[j] + beta * s2[j] + gamma)
        sgf = sgf * (c[j] + beta * s3[j] + gamma) % R
        zw = z[(j + 4) % n]
        num = gate + alpha * (z[j] * idf - zw * sgf) + alpha * alpha * (z[j] - 1) * l1[j]
        assert ops.to_ints(out[j : j + 1])[0] == num * zh[j % 4] % R, j
    # the gate check: make gates 7 and 1030 hold, the rest fail
    for j in (7, 1030):
        g = (qm[j] * a[j] * b[j] + ql[j] * a[j] + qr[j] * b[j] + qo[j] * c[j] + qc[j]) % R
        pi[j] = -g % R
    bad = ops.gate_residuals(*vecs[:3], *vecs[4:9], ops.from_ints(pi))
    assert list(bad) == [j for j in range(n) if j not in (7, 1030)]


def test_horner_division_axpy(ops):
    rng = random.Random(4)
    for m in (1, 2, 1030):
        p = _rand(rng, m)
        x, s = _rand(rng, 2)
        value = sum(ci * pow(x, i, R) for i, ci in enumerate(p)) % R
        assert ops.evaluate(ops.from_ints(p), x) == value
        if m > 1:
            q, rem = ops.divide_linear(ops.from_ints(p), x)
            assert rem == value
            # p = q (X - x) + p(x)
            q = ops.to_ints(q)
            back = [0] * m
            for i, ci in enumerate(q):
                back[i + 1] += ci
                back[i] -= x * ci
            back[0] += rem
            assert [v % R for v in back] == p
        acc = _rand(rng, m + 3)
        vec = ops.from_ints(acc)
        ops.axpy(vec, ops.from_ints(p), s)
        assert ops.to_ints(vec) == [(acc[i] + (s * p[i] if i < m else 0)) % R for i in range(m + 3)]
