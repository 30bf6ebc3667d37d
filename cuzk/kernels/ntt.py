"""NTT over Fr: butterflies, index maps and per-element steps, one source for CPU and CUDA
and for every curve.

Every function here is a device function of the target being built (see cuzk.arith.jit): the CPU
kernels (cuzk.kernels.ntt_cpu) call them from ``prange`` loops, the CUDA kernels
(cuzk.kernels.ntt_cuda) from one thread per butterfly or per element. The curve is a build
parameter (cuzk.arith.curves): imported normally this is BN254's build,
``T.load("cuzk.kernels.ntt", curve="bls12_381")`` BLS12-381's.

Conventions
-----------
- A vector is a C-contiguous (n, 4) uint64 array, element i = x[i, 0..3], 4 little-endian
  64-bit limbs in Montgomery form (R = 2^256; both curves' Fr has 4 limbs); n = 2^log_n.
- ``tw`` is the twiddle table of the domain: tw[e] = w_n^e for 0 <= e < n/2, w_n = w[log_n]
  (snarkjs's roots, the curve's fr_roots_of_unity()), Montgomery form. Stage twiddles
  w_{2m}^j are read as tw[j * n/(2m)]. The inverse transform needs w_n^{-e}, and since
  w_n^{n/2} = -1, w_n^{-e} = -w_n^{n/2-e} for 0 < e < n/2: it reads the same table and folds the
  sign into the butterfly, so no second table is kept.
- Two butterflies (Cooley-Tukey 1965 decimation in time, Gentleman-Sande 1966 decimation in
  frequency). DIT takes bit-reversed input to natural output; DIF takes natural input to
  bit-reversed output. The H pipeline runs iNTT as DIF (natural -> bit-reversed), scales in
  bit-reversed order, then runs NTT as DIT (bit-reversed -> natural): no permutation pass.
- A butterfly is named by k in [0, n/2): in the stage of half-size m = 2^log_m it pairs
  i = (k div m)*2m + (k mod m) with i + m and uses twiddle exponent e = (k mod m) * n/(2m).
- The math (index maps, butterflies) is in pure functions of tuples; only load/store touch
  arrays. Measured on the CPU: a device function that takes arrays and branches keeps Numba's
  reference-count updates on every call (+5 ns per butterfly, ~15%); branch-free load/store
  lose them.
- Lazy reduction (Harvey 2014, "Faster arithmetic for number-theoretic transforms"): inside a
  transform, values are kept below 2L (DIT) or below L (DIF) instead of below r, for a bound
  L chosen per curve (below). A butterfly then needs one or two branch-free conditional
  subtractions instead of three reductions, and its Montgomery product skips the final
  subtraction (mul_lazy). DIT's last stage reduces its outputs to [0, r), so every transform
  still takes and returns reduced elements. Measured on the CPU (BN254): 23 ns per butterfly
  against 32 ns with fully reduced field operations.

The lazy bound L (R = 2^256)
----------------------------
WIDE curves, 4r < R (BN254, r < 2^254): L = 2r. NARROW curves, 2r < R <= 4r (BLS12-381,
r ~ 0.45 R: 2r < R < 3r): L = r. (Below, "x < B" for a limb tuple means its integer value.)

- mul_lazy(w, v), w < r reduced (a twiddle or coset factor), v < R (any 256-bit value):
  each CIOS round keeps t < w + r < 2r < R (see _mont_round), and the result is
  (w v + M r) / R < w v / R + r < 2r, M < R. mul_twiddle(w, v) is the same product with
  its final subtraction (the field's mont_mul, the assembly on the CPU): below r <= L.
- DIT butterfly, u, v < 2L: u' = sub_if_ge(u, L) < L; t = mul_twiddle(w, v) < L (or
  sub_if_ge(v, L) < L untwiddled); u' + t < 2L and u' - t + L in (0, 2L): outputs < 2L,
  and 2L < R (4r < R, resp. 2r < R), so no sum overflows 256 bits.
- DIF butterfly, u, v < L: u + v < 2L < R, minus L if >= L: < L; u - v + L in (0, 2L),
  times the twiddle by mul_twiddle: < L, or minus L if >= L: < L.
- The H pipeline's coset step: DIF output x < L, mul_twiddle(g, x) < r (CPU) or
  mul_lazy(g, x) < 2r (CUDA), below 2L either way: a DIT input.
- reduce_lazy: [0, 2L) -> [0, r): for WIDE minus 2r if >= 2r, then minus r if >= r; for
  NARROW minus r if >= r.
WIDE and L are module constants, so each build folds the choice at compile time: BN254 keeps
its bounds and its operations per butterfly; BLS12-381's L = r costs conditional
subtractions where BN254's 2L leaves room. (mul_lazy's reduced operand is the twiddle on
both: BN254's lazy operand v < 4r would also fit, v + r < 5r < R, but BLS12-381's v < 2r
would not: 3r > R.)
"""

import numpy as np

from cuzk.arith.curves import DEFAULT, build_params, constants
from cuzk.arith.jit import building
from cuzk.arith.radix import int_to_limb_tuple

T = building()
device_fn = T.device_fn
CURVE = T.param("curve", DEFAULT)
FR_MODULUS = constants(CURVE).FR_MODULUS
F = T.load("cuzk.arith.field", **build_params(CURVE))
if F.NR != 4:
    raise NotImplementedError(f"{CURVE}: the NTT works on 4-limb Fr elements")
fr_mul = F.fr_mul
fr_sub = F.fr_sub
fr_neg = F.fr_neg
mont_mul = F.mont_mul

mac, adc, sbb, mul_lo = T.prims

_R_LIMBS = F.R_LIMBS
_R_INV = F.R_INV
_P = F.R_LIMBS  # r, the modulus of Fr, as 4 limbs
# The lazy bound L (module docstring): 2r where 4r < 2^256, else r (2r < 2^256 needed).
WIDE = 4 * FR_MODULUS < 1 << 256
if not WIDE and 2 * FR_MODULUS >= 1 << 256:
    raise NotImplementedError(f"{CURVE}: the lazy NTT needs 2r < 2^256")
LAZY_BOUND = (2 if WIDE else 1) * FR_MODULUS
_L = int_to_limb_tuple(LAZY_BOUND)
_Z = np.uint64(0)
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)

# Masks for the 64-bit bit reversal (swap halves of ever larger groups).
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_M8 = np.uint64(0x00FF00FF00FF00FF)
_M16 = np.uint64(0x0000FFFF0000FFFF)
_S1 = np.uint64(1)
_S2 = np.uint64(2)
_S4 = np.uint64(4)
_S8 = np.uint64(8)
_S16 = np.uint64(16)
_S32 = np.uint64(32)
_S64 = np.uint64(64)


@device_fn
def load(x, i):
    """Element i of an (n, 4) array as a limb tuple."""
    return (x[i, 0], x[i, 1], x[i, 2], x[i, 3])


@device_fn
def store(x, i, v):
    x[i, 0] = v[0]
    x[i, 1] = v[1]
    x[i, 2] = v[2]
    x[i, 3] = v[3]


@device_fn
def bit_reverse(i, log_n):
    """The low log_n bits of i in reverse order."""
    if log_n == 0:
        return np.int64(0)
    v = np.uint64(i)
    v = ((v >> _S1) & _M1) | ((v & _M1) << _S1)
    v = ((v >> _S2) & _M2) | ((v & _M2) << _S2)
    v = ((v >> _S4) & _M4) | ((v & _M4) << _S4)
    v = ((v >> _S8) & _M8) | ((v & _M8) << _S8)
    v = ((v >> _S16) & _M16) | ((v & _M16) << _S16)
    v = (v >> _S32) | (v << _S32)
    return np.int64(v >> (_S64 - np.uint64(log_n)))


@device_fn
def twiddle_index(j, log_m, log_n, inverse):
    """(e, flip): position j of a block in the stage of half-size m = 2^log_m uses
    w_{2m}^j = w_n^e = tw[e], e = j * n/(2m). The inverse uses w_n^{-e}, which for e != 0 is
    -tw[n/2 - e]: then e is n/2 - e and flip says the sign is folded into the butterfly.
    e == 0 means w = 1."""
    e = j << (log_n - 1 - log_m)
    if inverse and e != 0:
        return (1 << (log_n - 1)) - e, True
    return e, False


@device_fn
def stage_indices(k, log_m, log_n, inverse):
    """Butterfly k of the stage of half-size m = 2^log_m: (i, i + m, e, flip). It pairs
    i = (k div m)*2m + (k mod m) with i + m; (e, flip) as in twiddle_index."""
    j = k & ((1 << log_m) - 1)
    i = ((k >> log_m) << (log_m + 1)) | j
    e, flip = twiddle_index(j, log_m, log_n, inverse)
    return i, i + (1 << log_m), e, flip


# --- lazy arithmetic (values below 2L; see the module docstring) -----------------------------


@device_fn
def _mont_round(t0, t1, t2, t3, a0, a1, a2, a3, bi):
    """t = (t + a b_i + m r) / 2^64, m = t_0 (-r^{-1}) mod 2^64: one CIOS iteration (Koc, Acar,
    Kaliski 1996) with the carry above t_3 folded into t_3. That cannot overflow here: if
    t < a + r, then t + a b_i + m r < (a + r) 2^64, so the new t < a + r again; with a < r
    (mul_lazy's reduced operand) t < 2r < 2^256 throughout, whatever b_i."""
    t0, c = mac(a0, bi, t0, _Z)
    t1, c = mac(a1, bi, t1, c)
    t2, c = mac(a2, bi, t2, c)
    t3, c = mac(a3, bi, t3, c)
    t4 = c
    m = mul_lo(t0, _R_INV)
    _, c = mac(m, _P[0], t0, _Z)
    t0, c = mac(m, _P[1], t1, c)
    t1, c = mac(m, _P[2], t2, c)
    t2, c = mac(m, _P[3], t3, c)
    t3, _ = adc(c, t4, _Z)
    return t0, t1, t2, t3


@device_fn
def mul_lazy(a, b):
    """a b R^{-1} mod r, up to one r, for a < r (reduced: it is added whole in every round)
    and any b < R (read word by word): the result (a b + M r) / R, M < R, is below
    a b / R + r < 2r, so the final subtraction of a Montgomery product is skipped."""
    a0, a1, a2, a3 = a
    t0, t1, t2, t3 = _mont_round(_Z, _Z, _Z, _Z, a0, a1, a2, a3, b[0])
    t0, t1, t2, t3 = _mont_round(t0, t1, t2, t3, a0, a1, a2, a3, b[1])
    t0, t1, t2, t3 = _mont_round(t0, t1, t2, t3, a0, a1, a2, a3, b[2])
    t0, t1, t2, t3 = _mont_round(t0, t1, t2, t3, a0, a1, a2, a3, b[3])
    return (t0, t1, t2, t3)


@device_fn
def mul_twiddle(w, v):
    """w v R^{-1} mod r, reduced (below r <= L), for w < r and any v < R: the field's
    Montgomery product (cuzk.arith.field.mont_mul: the x86 assembly on a CPU build that has
    it, else the CIOS with its final subtraction). Its rounds keep t < w + r < 2r whatever
    v's words (as _mont_round's), so one final subtraction reduces it. Measured on the CPU
    (BN254, CPU time, least of 15, alternating builds): the DIT transform at 2^16 16.3-16.4
    -> 15.3-15.5 ms, compute_h 107-110 -> 99-102 ms, against mul_lazy's CIOS without the
    final subtraction (which the CUDA coset step still uses)."""
    return mont_mul(w, v, _P, _R_INV)


@device_fn
def sub_if_ge(a, m):
    """a - m if a >= m else a, without a branch (a select on the borrow)."""
    d0, br = sbb(a[0], m[0], _Z)
    d1, br = sbb(a[1], m[1], br)
    d2, br = sbb(a[2], m[2], br)
    d3, br = sbb(a[3], m[3], br)
    keep = br * _ONES  # all ones when a < m (a product: no wrap-around, which the simulator flags)
    return (
        d0 ^ ((d0 ^ a[0]) & keep),
        d1 ^ ((d1 ^ a[1]) & keep),
        d2 ^ ((d2 ^ a[2]) & keep),
        d3 ^ ((d3 ^ a[3]) & keep),
    )


@device_fn
def add_lazy(a, b):
    """a + b, not reduced (callers keep it below 2^256)."""
    s0, c = adc(a[0], b[0], _Z)
    s1, c = adc(a[1], b[1], c)
    s2, c = adc(a[2], b[2], c)
    s3, _ = adc(a[3], b[3], c)
    return (s0, s1, s2, s3)


@device_fn
def sub_lazy(a, b):
    """a - b + L, not reduced: in (0, 2L) for a < L, b < L."""
    d0, br = sbb(a[0], b[0], _Z)
    d1, br = sbb(a[1], b[1], br)
    d2, br = sbb(a[2], b[2], br)
    d3, _ = sbb(a[3], b[3], br)
    d0, c = adc(d0, _L[0], _Z)
    d1, c = adc(d1, _L[1], c)
    d2, c = adc(d2, _L[2], c)
    d3, _ = adc(d3, _L[3], c)
    return (d0, d1, d2, d3)


@device_fn
def reduce_lazy(a):
    """[0, 2L) -> [0, r)."""
    if WIDE:
        a = sub_if_ge(a, _L)
    return sub_if_ge(a, _P)


# --- butterflies ----------------------------------------------------------------------------


@device_fn
def dit_butterfly(u, v, w, twiddled, flip, final):
    """Cooley-Tukey (decimation in time): (u, v) -> (u + w v, u - w v); w = 1 unless
    twiddled; with flip the twiddle is -w, which only swaps the two outputs. Inputs below 2L,
    outputs below 2L, or reduced (below r) when final."""
    u = sub_if_ge(u, _L)
    if twiddled:
        t = mul_twiddle(w, v)
    else:
        t = sub_if_ge(v, _L)
    s = add_lazy(u, t)
    d = sub_lazy(u, t)
    if final:
        s = reduce_lazy(s)
        d = reduce_lazy(d)
    if flip:
        return d, s
    return s, d


@device_fn
def dif_butterfly(u, v, w, twiddled, flip):
    """Gentleman-Sande (decimation in frequency): (u, v) -> (u + v, (u - v) w); w = 1 unless
    twiddled; with flip the twiddle is -w: (u - v)(-w) = (v - u) w. Inputs and outputs below
    L (reduced inputs are fine)."""
    s = sub_if_ge(add_lazy(u, v), _L)
    if flip:
        d = sub_lazy(v, u)
    else:
        d = sub_lazy(u, v)
    if twiddled:
        d = mul_twiddle(w, d)
    else:
        d = sub_if_ge(d, _L)
    return s, d


@device_fn
def butterfly(u, v, w, twiddled, flip, final, dif):
    """One butterfly of a stage, Gentleman-Sande with dif, else Cooley-Tukey: the kernels
    write each stage loop once for both kinds (the choice is the same for a whole stage, so
    it costs a predicted branch)."""
    if dif:
        return dif_butterfly(u, v, w, twiddled, flip)
    return dit_butterfly(u, v, w, twiddled, flip, final)


@device_fn
def quotient(a, b, c, n_mont, inv_n2_plain):
    """h = a b - c for a, b, c each an unscaled iNTT -> coset -> NTT result (n times the true
    value), in plain form: (a b - n c) * n^{-2}, the from-Montgomery step and the n^{-2}
    folded into one Montgomery product by a plain-form constant."""
    d = fr_sub(fr_mul(a, b), fr_mul(c, n_mont))
    return mont_mul(d, inv_n2_plain, _R_LIMBS, _R_INV)


@device_fn
def coset_factor_index(i, log_n, inverse):
    """(p, negate): x_i's coset factor g^{+-i} (g = w_{2n}) is -g_rev[p] if negate else
    g_rev[p], from the bit-reversed table g_rev[p] = g^{rev(p)}, p < n. For the inverse,
    g^{-i} = -g^{n-i} (g^n = -1) when 0 < i < n."""
    if inverse and i != 0:
        return bit_reverse((1 << log_n) - i, log_n), True
    return bit_reverse(i, log_n), False


@device_fn
def powers_chunk(out, base, start, count, first, rev_bits):
    """out[start + t] = first * base^t for t < count (a sequential run of one chunk); with
    rev_bits > 0 the element for index start + t goes to out[rev(start + t)] instead."""
    acc = first
    for t in range(count):
        if rev_bits > 0:
            store(out, bit_reverse(start + t, rev_bits), acc)
        else:
            store(out, start + t, acc)
        acc = fr_mul(acc, base)
