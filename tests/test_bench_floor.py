"""bench/floor.py counts what the kernels do (issue #35's "x floor"): its digits are the MSM
kernel's own, its bucket additions those of a direct count over the buckets, its NTT counts
those of the stage index maps."""

from __future__ import annotations

import numpy as np

from bench import floor
from bench.bench_msm import points
from cuzk.arith.constants import FR_MODULUS
from cuzk.kernels import msm_cpu


def _scalars(n, seed=5):
    rng = np.random.default_rng(seed)
    ints = [int(rng.integers(0, 2**63)) * 2**192 % FR_MODULUS for _ in range(n)]
    ints[:4] = [0, 1, FR_MODULUS - 1, (1 << 253) + 12345]  # edges: zero, one, r - 1, 2^253
    sc = np.array([[(v >> (64 * k)) & (2**64 - 1) for k in range(4)] for v in ints], np.uint64)
    return ints, sc


def test_signed_digits_are_the_kernels():
    """The digits the MSM kernel writes (pippenger_cpu.pippenger fills the caller's array)
    equal floor.signed_digits', and they add back up to the scalars."""
    from cuzk.kernels.windows import windows_for

    ints, sc = _scalars(96)
    n = len(ints)
    pts = points("g1", n)
    P = msm_cpu.drivers("bn254", 1)
    for c in (5, 11, 13):
        K = windows_for(c, 254)
        mine = floor.signed_digits(sc, c, K)
        assert [sum(int(mine[w, i]) << (c * w) for w in range(K)) for i in range(n)] == ints
        digits = np.zeros((K, n), msm_cpu.digit_dtype(c))
        out = np.zeros((1, 8), np.uint64)
        empty = np.zeros(0, np.int32)
        P.pippenger(pts, sc, empty, 254, c, 8, 64, 1, digits, out)
        np.testing.assert_array_equal(digits.astype(np.int64), mine)


def test_msm_counts_match_a_direct_count():
    _, sc = _scalars(300, seed=9)
    c, lanes = 6, 4
    k = floor.msm_counts(sc, c, 254, lanes, "g1")
    digits = floor.signed_digits(sc, c, k["windows"])
    H = 1 << (c - 1)
    bucket_adds = sum_adds = 0
    for w in range(k["windows"]):
        Hw = H if w < k["windows"] - 1 else min(H, 1 << max(254 - c * (k["windows"] - 1), 0))
        count = [int(np.sum(np.abs(digits[w]) == m)) for m in range(1, Hw + 1)]
        bucket_adds += sum(max(x - 1, 0) for x in count)
        L = min(lanes, Hw)
        s = Hw // L
        for lane in range(L):  # R += B, S += R from the lane's top bucket down
            R = S = False
            for t in range(s):
                b = count[lane * s + s - 1 - t] > 0
                sum_adds += R and b
                R = R or b
                sum_adds += S and R
                S = S or R
    assert (k["bucket_adds"], k["sum_adds"]) == (bucket_adds, sum_adds)
    assert k["floor_products"] > 6 * (bucket_adds + sum_adds)


def test_ntt_counts_match_the_stage_index_maps():
    from cuzk.kernels import ntt

    for log_n in (1, 3, 6):
        n = 1 << log_n
        got = [
            ntt.stage_indices(k, log_m, log_n, False)[2]
            for log_m in range(log_n)
            for k in range(n // 2)
        ]
        want = floor.ntt_counts(log_n)
        assert len(got) == want["butterflies"]
        assert sum(e != 0 for e in got) == want["twiddled"]
