"""The arithmetic floor of the MSM and NTT kernels (issue #35): the field products (and, for
the NTT, modular additions) an algorithm must do, counted exactly from the run it makes,
priced at the product cost measured in the same suite run (bench.bench_arith's chains).

"x floor" = the kernel's CPU time / (its counted operations x their measured cost). The
floor per operation (docs/kernels.md, "The floor"):

- batch-affine addition (Montgomery's trick): 6 products, 5M + 1S (the prefix product, two
  in the backward pass, the slope, its square, the y product); the batch's one inversion is
  left out (an ideal batch amortises it to nothing). G2: 15 Fq products, the batch inverted
  in Fq through the denominators' norms (cuzk.kernels.buckets: the norm's 2 squarings, the
  prefix product, two products in the backward pass, 2 for d^-1 = conj(d) / N(d)) and the
  slope, its square and the y product in Fq2 (Karatsuba: 3 Fq products a multiplication, 2 a
  squaring); 17 until 2026-12-05, when the batch ran in Fq2 (5 Fq2 multiplications, 1
  squaring);
- the few Jacobian operations a window's lanes and Horner add, at their product counts
  (cuzk.arith.group): mixed addition 7M + 4S, addition 11M + 5S, doubling 2M + 5S;
- NTT butterfly: 1 product (none where the twiddle is 1) + 2 modular additions; the H step's
  coset step 1 product an element, its quotient 3 products + 1 subtraction.
"""

from __future__ import annotations

import time

import numpy as np

# Products per operation, in the group's coordinate field (Fq products for G1; for G2 in
# Fq products, from Fq2 at 3 a multiplication and 2 a squaring).
_MS = {  # (multiplications, squarings)
    "affine": (5, 1),
    "add_mixed": (7, 4),
    "add": (11, 5),
    "dbl": (2, 5),
}


G2_AFFINE = 2 + 1 + 2 + 2 + 3 + 2 + 3  # norm, prefix, backward, d^-1, slope, square, y


def products(op: str, group: str) -> int:
    """Fq products of one group operation: G1 in Fq, G2 in Fq2 counted as Fq products (its
    batch-affine addition: G2_AFFINE, the batch in Fq)."""
    m, s = _MS[op]
    if group == "g1":
        return m + s
    return G2_AFFINE if op == "affine" else 3 * m + 2 * s


# --- the cost of a product, measured in the suite's own run ----------------------------------

_CHAIN_STEPS = 1 << 19


def product_ns(kind: str, repeats: int = 5, steps: int = _CHAIN_STEPS) -> float:
    """CPU ns per operation on one core: four interleaved chains (bench.bench_arith's
    kernels: what a batch loop sees), the least of repeats runs after a warm-up.
    kind: "fq_mul", "fr_mul", "bls12_381 fq_mul" or "fr_add"."""
    from bench import bench_arith as A
    from cuzk.arith.bls12_381 import FQ_MODULUS as BLS_Q
    from cuzk.arith.constants import FQ_MODULUS, FR_MODULUS

    chain, p, limbs = {
        "fq_mul": (A._fq_chain4, FQ_MODULUS, 4),
        "fr_mul": (A._fr_chain4, FR_MODULUS, 4),
        "bls12_381 fq_mul": (A._bls_fq_chain4, BLS_Q, 6),
        "fr_add": (A._fr_add_chain4, FR_MODULUS, 4),
    }[kind]
    y = A._mont(7**90, p, limbs)
    vals = [A._mont(5**k, p, limbs) for k in range(4)]
    m = steps // 4
    chain(*vals, y, 1)  # compile or load the cache
    best = float("inf")
    for _ in range(repeats):
        c0 = time.process_time()
        chain(*vals, y, m)
        best = min(best, time.process_time() - c0)
    return best * 1e9 / (4 * m)


# --- MSM: the operations of the run, counted from its digits ---------------------------------


def signed_digits(scalars: np.ndarray, c: int, K: int) -> np.ndarray:
    """(K, n) int64: the signed c-bit digits cuzk.kernels.msm.limbs_signed_digits writes for
    reduced scalars ((n, 4) uint64 limbs, below r): a window value >= 2^(c-1) becomes
    value - 2^c with a carry into the next window, but in the top window."""
    s = np.ascontiguousarray(scalars, dtype=np.uint64)
    n = s.shape[0]
    out = np.empty((K, n), np.int64)
    carry = np.zeros(n, np.int64)
    mask = np.uint64((1 << c) - 1)
    for w in range(K):
        o = w * c
        limb, sh = o // 64, o % 64
        v = np.zeros(n, np.uint64) if limb >= 4 else s[:, limb] >> np.uint64(sh)
        if sh and sh + c > 64 and limb + 1 < 4:
            v = v | (s[:, limb + 1] << np.uint64(64 - sh))
        d = (v & mask).astype(np.int64) + carry
        if w < K - 1:
            high = d >= (1 << (c - 1))
            d = np.where(high, d - (1 << c), d)
            carry = high.astype(np.int64)
        out[w] = d
    return out


def msm_counts(scalars, c: int, bits: int, lanes: int, group: str) -> dict:
    """The operations of pippenger_cpu.pippenger over dense scalars (one class, every point
    in order, no point at infinity) at window width c: bucket additions (each bucket of k
    points takes k - 1 pair additions, however its rounds and chunks fall), the lanes' affine
    additions that add two non-zero rows, and the Jacobian operations of the lanes' end and
    Horner. Returns the counts and the floor in Fq products."""
    from cuzk.kernels.windows import windows_for

    K = windows_for(c, bits)
    H = 1 << (c - 1)
    L = min(H, lanes)
    H_top = min(H, 1 << max(bits - c * (K - 1), 0))
    digits = signed_digits(scalars, c, K)
    bucket_adds = sum_adds = add_mixed = add = dbl = 0
    for w in range(K):
        Hw = H if w < K - 1 else H_top
        Lw = min(L, Hw)
        counts = np.bincount(np.abs(digits[w]), minlength=Hw + 1)[1 : Hw + 1]
        bucket_adds += int(np.maximum(counts - 1, 0).sum())
        # lanes: lane l holds buckets l s + 1 .. (l + 1) s, run from its top bucket down;
        # R += B adds when both are non-zero, S += R once R is (the first non-zero R is taken)
        s = Hw // Lw
        full = (counts > 0).reshape(Lw, s)[:, ::-1]
        first = np.where(full.any(axis=1), full.argmax(axis=1), s)
        for lane in range(Lw):
            f = first[lane]
            if f < s:
                sum_adds += int(full[lane, f + 1 :].sum()) + int(s - 1 - f)
        add_mixed += Lw + (Lw - 1)  # sum_l S_l; running sums over the lane totals
        add += (Lw - 1) + 1  # S += R, then total + weighted
        dbl += max(s.bit_length() - 1, 0)
    dbl += c * (K - 1)  # Horner
    add += K - 1
    floor = (
        (bucket_adds + sum_adds) * products("affine", group)
        + add_mixed * products("add_mixed", group)
        + add * products("add", group)
        + dbl * products("dbl", group)
    )
    return {
        "windows": K,
        "bucket_adds": bucket_adds,
        "sum_adds": sum_adds,
        "jacobian_ops": add_mixed + add + dbl,
        "floor_products": int(floor),
    }


# --- NTT --------------------------------------------------------------------------------------


def ntt_counts(log_n: int) -> dict:
    """One radix-2 transform of 2^log_n: butterflies n/2 log n, of which those with twiddle
    index 0 (n/2m a stage, n - 1 in all) multiply by nothing."""
    n = 1 << log_n
    butterflies = (n // 2) * log_n
    return {"butterflies": butterflies, "twiddled": butterflies - (n - 1)}


def ntt_floor_ns(log_n: int, mul_ns: float, add_ns: float) -> float:
    """One NTT's floor: a product per twiddled butterfly, two modular additions each."""
    k = ntt_counts(log_n)
    return k["twiddled"] * mul_ns + 2 * k["butterflies"] * add_ns


def compute_h_floor_ns(log_n: int, mul_ns: float, add_ns: float) -> float:
    """compute_h's floor: 6 transforms (3 inverse, 3 forward), the coset step (a product an
    element of each of a, b, c) and the quotient (3 products + 1 subtraction an element)."""
    n = 1 << log_n
    return 6 * ntt_floor_ns(log_n, mul_ns, add_ns) + 3 * n * mul_ns + n * (3 * mul_ns + add_ns)
