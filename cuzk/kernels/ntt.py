"""NTT over Fr: butterflies, index maps and per-element steps, one source for CPU and CUDA.

Every function here is a device function of the target being built (see cuzk.jit): the CPU
kernels (cuzk.kernels.ntt_cpu) call them from ``prange`` loops, the CUDA kernels
(cuzk.kernels.ntt_cuda) from one thread per butterfly or per element.

Conventions
-----------
- A vector is a C-contiguous (n, 4) uint64 array, element i = x[i, 0..3], 4 little-endian
  64-bit limbs in Montgomery form; n = 2^log_n.
- ``tw`` is the twiddle table of the domain: tw[e] = w_n^e for 0 <= e < n/2, w_n = w[log_n]
  (snarkjs's roots, cuzk.bn254.constants.fr_roots_of_unity), Montgomery form. Stage twiddles
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
"""

import numpy as np

from cuzk.jit import building

T = building()
device_fn = T.device_fn
F = T.load("cuzk.bn254.field")
fr_mul = F.fr_mul
fr_add = F.fr_add
fr_sub = F.fr_sub
fr_neg = F.fr_neg
mont_mul = F.mont_mul

_R_LIMBS = F.R_LIMBS
_R_INV = F.R_INV

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
def stage_indices(k, log_m, log_n, inverse):
    """Butterfly k of the stage of half-size m = 2^log_m: (i, i + m, e, flip). It pairs
    i = (k div m)*2m + (k mod m) with i + m; its twiddle is w_n^e = tw[e] with
    e = (k mod m) * n/(2m), except for the inverse with e != 0, where w_n^{-e} = -tw[n/2 - e]:
    then e is n/2 - e and flip says the sign must be folded in. e == 0 means w = 1."""
    j = k & ((1 << log_m) - 1)
    i = ((k >> log_m) << (log_m + 1)) | j
    e = j << (log_n - 1 - log_m)
    flip = False
    if inverse and e != 0:
        e = (1 << (log_n - 1)) - e
        flip = True
    return i, i + (1 << log_m), e, flip


@device_fn
def dit_butterfly(u, v, w, twiddled, flip):
    """Cooley-Tukey (decimation in time): (u, v) -> (u + w v, u - w v); w = 1 unless
    twiddled; with flip the twiddle is -w, which only swaps the two outputs."""
    t = v
    if twiddled:
        t = fr_mul(v, w)
    s = fr_add(u, t)
    d = fr_sub(u, t)
    if flip:
        return d, s
    return s, d


@device_fn
def dif_butterfly(u, v, w, twiddled, flip):
    """Gentleman-Sande (decimation in frequency): (u, v) -> (u + v, (u - v) w); w = 1 unless
    twiddled; with flip the twiddle is -w: (u - v)(-w) = (v - u) w."""
    s = fr_add(u, v)
    if flip:
        d = fr_sub(v, u)
    else:
        d = fr_sub(u, v)
    if twiddled:
        d = fr_mul(d, w)
    return s, d


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
