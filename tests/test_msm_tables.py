"""MSMs over tables of multiples (msm_cpu.build_table, pippenger_cpu.pippenger_table) against
the plain MSM and the exponent sum (points a_i G, so sum k_i P_i = (sum k_i a_i) G by py_ecc),
on folded window counts from one window to all of them, scalar classes, edge cases, both
groups and BLS12-381."""

import random

import numpy as np
import pytest
from py_ecc import optimized_bn128 as ob
from reference import point_rows, py_ecc_ints, row_ints, scalar_rows
from test_msm import _progression, _sized_scalars

from cuzk.arith.constants import FR_MODULUS
from cuzk.kernels import msm_cpu
from cuzk.kernels.resident import ResidentKey

R = FR_MODULUS


@pytest.fixture(scope="module")
def progression_300():
    return _progression(300, 424242, 1010101)


def _exponent(points, a, k, group="g1"):
    gen = ob.G1 if group == "g1" else ob.G2
    total = sum(ki * ai for ki, ai in zip(k, a, strict=True) if ai is not None) % R
    return py_ecc_ints(ob.multiply(gen, total), "bn254")


def test_table_rows_are_the_multiples(progression_300):
    """Row g n + i of a table is 2^(c Kf g) P_i (py_ecc), infinity stays zeros."""
    points, a = progression_300
    points = points[:40].copy()
    points[7] = 0  # infinity
    t = msm_cpu.build_table(points, 0, g=1, plan=(5, 3))
    assert (t.c, t.windows, t.factor, t.n) == (5, 3, 17, 40)  # K = ceil(255 / 5) = 51
    assert t.nbytes == 17 * 40 * 64
    for g in (0, 1, 16):
        for i in (0, 7, 39):
            want = 0 if i == 7 else (a[i] << (15 * g)) % R
            assert row_ints(t.rows[g * 40 + i], "bn254") == py_ecc_ints(
                ob.multiply(ob.G1, want) if want else ob.Z1, "bn254"
            )


@pytest.mark.parametrize("plan", [(4, 1), (7, 2), (9, 5), (13, 20), (16, 2)])
def test_table_msm_equals_plain_g1(progression_300, plan):
    """Dense and sized scalars, with and without the class split, equal the plain MSM and the
    exponent sum for folded window counts from one (every digit in one set of buckets) to K."""
    points, a = progression_300
    rng = random.Random(plan[0] * 100 + plan[1])
    t = msm_cpu.build_table(points, 0, g=1, plan=plan)
    for k in ([rng.randrange(R) for _ in a], _sized_scalars(rng, len(a))):
        s = scalar_rows(k)
        want = msm_cpu.msm_g1(points, s)
        assert row_ints(want, "bn254") == _exponent(points, a, k)
        for partition in (None, False, True):
            got = msm_cpu.msm_g1(t, s, partition=partition)
            np.testing.assert_array_equal(got, want)


def test_table_msm_edges_and_chunks(progression_300):
    """Zero scalars, points at infinity, scalars >= r, P and -P, a heavy bucket spread over
    chunks of a few rows."""
    points, a = progression_300
    pts = np.concatenate([points[:50], points[:50]])
    pts[50:, 4:] = np.asarray(point_rows([ob.neg(ob.multiply(ob.G1, x)) for x in a[:50]], "g1"))[
        :, 4:
    ]
    pts[3] = 0
    aa = a[:50] + [R - x for x in a[:50]]
    aa[3] = None
    k = [987654321] * 60 + [0] * 10 + [R - 1] * 10 + [(1 << 256) - 1] * 20
    t = msm_cpu.build_table(pts, 0, g=1, plan=(6, 4))
    want = msm_cpu.msm_g1(pts, scalar_rows(k))
    assert row_ints(want, "bn254") == _exponent(pts, aa, [x % R for x in k])
    for rows in (None, 2, 3, 16):
        np.testing.assert_array_equal(msm_cpu.msm_g1(t, scalar_rows(k), rows=rows), want)


def test_table_msm_g2_and_resident_points():
    """G2 through a ResidentPoints that holds its table (as the daemon's keys do)."""
    points, a = _progression(120, 31337, 2718281, "g2")
    rng = random.Random(5)
    k = _sized_scalars(rng, len(a))
    key = ResidentKey({"b2": points}, device="cpu")
    pts = key["b2"]
    pts.table = msm_cpu.build_table(pts, 0, plan=(8, 4))
    assert pts.table.group == 2 and pts.table.factor == 8
    got = msm_cpu.msm_g2(pts, scalar_rows(k))
    np.testing.assert_array_equal(got, msm_cpu.msm_g2(points, scalar_rows(k)))
    assert row_ints(got, "bn254") == _exponent(points, a, k, "g2")
    with pytest.raises(ValueError, match="table of G2"):
        msm_cpu.msm_g1(pts.table, scalar_rows(k))


def test_table_msm_bls12_381():
    points, a = _progression(100, 99, 12345, "g1", "bls12_381")
    from cuzk.arith.curves import constants

    r = constants("bls12_381").FR_MODULUS
    rng = random.Random(9)
    k = [rng.randrange(r) for _ in a]
    t = msm_cpu.build_table(points, 0, g=1, curve="bls12_381", plan=(10, 3))
    want = msm_cpu.msm_g1(points, scalar_rows(k), curve="bls12_381")
    np.testing.assert_array_equal(msm_cpu.msm_g1(t, scalar_rows(k), curve="bls12_381"), want)


def test_table_only_where_it_pays():
    """A table is planned only where its modelled work is at most 1 - TABLE_MIN_GAIN of the
    plain MSM's: small and mid-sized sets get one at the engine's default factor, sets of 2^20
    points and more (where one measured 0.96x the plain MSM for 7 times the memory) none, and
    a key whose every set is that large gets no tables at all."""
    from types import SimpleNamespace

    from cuzk.groth16 import tables as key_tables
    from cuzk.kernels import msm_plan
    from cuzk.kernels.table_setting import configure
    from cuzk.kernels.windows import windows_for

    for log_n in (8, 12, 16, 19):
        n = 1 << log_n
        c, Kf, f = msm_cpu.table_plan(n, 8, threads=2)
        work = Kf * msm_cpu._table_window_cost(n * windows_for(c) / Kf, c)
        plain = msm_plan._window_cost(n, 254, 2)[1]
        assert work <= (1 - msm_cpu.TABLE_MIN_GAIN) * plain
    for log_n in (20, 21, 22):
        assert msm_cpu.table_plan(1 << log_n, 8, threads=2) is None
        assert msm_cpu.table_nbytes(1 << log_n, 2, 8, threads=2) == 0

    def key(n):
        return SimpleNamespace(n_vars=n, n_public=1, domain_size=n, arith_curve="bn254")

    try:
        configure({"msm_tables": 8})
        assert key_tables.plan_factor(key(1 << 21)) == 0
        assert key_tables.planned_bytes(key(1 << 21)) == 0
        assert key_tables.plan_factor(key(1 << 14)) == 8
        assert key_tables.planned_bytes(key(1 << 14)) > 0
    finally:
        configure({})


def test_table_plan_and_bytes():
    """The plan keeps within the factor, no table below PARTITION_MIN or for factor < 2, and
    table_nbytes is what build_table allocates."""
    assert msm_cpu.table_plan(1 << 16, 0) is None
    assert msm_cpu.table_plan(1 << 16, 1) is None
    assert msm_cpu.table_plan(10, 8) is None
    for n in (1 << 12, 1 << 16, 1 << 20):
        for factor in (2, 4, 8, 16):
            plan = msm_cpu.table_plan(n, factor, threads=2)
            if plan is not None:
                c, Kf, f = plan
                assert 2 <= f <= factor and f * Kf >= -(-255 // c) > (f - 1) * Kf
    rng = np.random.default_rng(3)
    pts = _progression(200, 5, 7)[0]
    t = msm_cpu.build_table(pts, 4, g=1, threads=2)
    assert t.nbytes == msm_cpu.table_nbytes(200, 1, 4, threads=2) == t.factor * 200 * 64
    del rng
    with pytest.raises(ValueError, match="plan"):
        msm_cpu.build_table(pts, 0, g=1, plan=(13, 0))
