"""The CPU kernels of cuzk.kernels.ntt_cpu (numba prange): radix-2 transforms in block and
column stages, the coset step, the H pipeline, power tables.

One source, a build per curve: this module, imported normally, holds BN254's kernels;
``curve_build("cuzk.kernels.ntt_cpu_kernels", "bls12_381")`` executes it again with the
butterflies of cuzk.kernels.ntt built for BLS12-381 and every kernel renamed for that build
(``_dit[bls12_381]``: its own Numba cache entries). The API (cuzk.kernels.ntt_cpu) picks a
curve's kernels with ``kernels(curve)``: these, or the same kernels compiled ahead of time into
the native library (cuzk.native) where a one-shot command loaded it.
"""

from numba import literally, prange

from cuzk.arith import curves
from cuzk.arith.curves import DEFAULT
from cuzk.arith.jit import building

T = building()
CURVE = T.param("curve", DEFAULT)
N = T.load("cuzk.kernels.ntt", **curves.build_params(CURVE))
bit_reverse, butterfly, coset_factor_index = N.bit_reverse, N.butterfly, N.coset_factor_index
fr_mul, fr_neg, load, store, mul_twiddle = N.fr_mul, N.fr_neg, N.load, N.store, N.mul_twiddle
powers_chunk, quotient, twiddle_index = N.powers_chunk, N.quotient, N.twiddle_index
njit = T.njit  # numba.njit(cache=True, nogil=True, ...), each kernel named for its build


@njit(parallel=True)
def _powers(out, base, starts, firsts, rev_bits):
    """out[i] = base^i (i < len(out)); chunk c starts at index starts[c] with value firsts[c];
    with rev_bits > 0 the table is stored in bit-reversed order."""
    base_t = (base[0], base[1], base[2], base[3])
    nchunks = starts.shape[0] - 1
    for c in prange(nchunks):
        first = (firsts[c, 0], firsts[c, 1], firsts[c, 2], firsts[c, 3])
        powers_chunk(out, base_t, starts[c], starts[c + 1] - starts[c], first, rev_bits)


# The per-element passes run prange over runs of 2^RUN_LOG elements, not over elements: the
# API hands prange's tasks out one at a time (set_parallel_chunksize(1), for the transforms'
# coarse tasks), and one task an element cost ~100 ns of scheduling each (the bit reversal at
# 2^16: 9.0 ms of CPU time, a third of the NTT; in runs: see docs/kernels.md).
RUN_LOG = 10


@njit()
def _runs(n):
    """(runs, run length) covering n = 2^k elements."""
    step = min(n, 1 << RUN_LOG)
    return n // step, step


@njit(parallel=True)
def _bit_reverse(x, log_n):
    nruns, step = _runs(x.shape[0])
    for t in prange(nruns):
        for i in range(t * step, (t + 1) * step):
            r = bit_reverse(i, log_n)
            if i < r:
                u = load(x, i)
                store(x, i, load(x, r))
                store(x, r, u)


@njit(parallel=True)
def _bit_reverse_scale(x, log_n, s):
    """The bit-reversal permutation with every element multiplied by s (the iNTT's 1/n)."""
    st = (s[0], s[1], s[2], s[3])
    nruns, step = _runs(x.shape[0])
    for t in prange(nruns):
        for i in range(t * step, (t + 1) * step):
            r = bit_reverse(i, log_n)
            if i < r:
                u = load(x, i)
                store(x, i, fr_mul(load(x, r), st))
                store(x, r, fr_mul(u, st))
            elif i == r:
                store(x, i, fr_mul(load(x, i), st))


# Both transforms run in two phases, each one parallel region over coarse tasks (few barriers:
# an OpenMP barrier costs much more than a stage when the machine is shared), and each task
# works on a cache-sized piece:
#   block phase:  stages log_m < log_b pair indices inside aligned blocks of 2^log_b
#                 elements; one task = one block through all those stages.
#   column phase: stages log_m >= log_b pair indices with equal low log_b bits (the
#                 "column" i mod 2^log_b); one task = 2^log_g adjacent columns (whole cache
#                 lines) through all those stages.
# Every butterfly is the same whichever task runs it; only the order changes.

# The butterfly bodies are written out in each loop rather than called through a function
# taking the arrays: such a call keeps reference-count updates per butterfly (measured 31 ns
# against 21.5 ns per butterfly inline).


@njit()
def _block(x, tw, base, log_b, lo, log_n, inverse, dif):
    """Stages of half-size 2^lo .. 2^(log_b-1) on x[base : base + 2^log_b]: DIT in that
    order, or with dif DIF in the reverse order. dif is a compile-time constant (literally:
    one build per kind, the butterfly's choice folded away)."""
    literally(dif)
    for k in range(log_b - lo):
        log_m = log_b - 1 - k if dif else lo + k
        m = 1 << log_m
        final = log_m == log_n - 1
        for g0 in range(base, base + (1 << log_b), 2 * m):
            for j in range(m):
                i = g0 + j
                e, flip = twiddle_index(j, log_m, log_n, inverse)
                s, d = butterfly(load(x, i), load(x, i + m), load(tw, e), e != 0, flip, final, dif)
                store(x, i, s)
                store(x, i + m, d)


@njit()
def _columns(x, tw, r0, log_g, log_b, log_n, inverse, dif):
    """Stages of half-size 2^log_b .. 2^(log_n-1) on the columns r0 .. r0 + 2^log_g - 1: DIT
    in that order, or with dif DIF in the reverse order (dif a constant, as in _block)."""
    literally(dif)
    for k in range(log_n - log_b):
        log_m = log_n - 1 - k if dif else log_b + k
        m = 1 << log_m
        final = log_m == log_n - 1
        for g0 in range(0, 1 << log_n, 2 * m):
            for jj in range(g0, g0 + m, 1 << log_b):
                for i in range(jj + r0, jj + r0 + (1 << log_g)):
                    e, flip = twiddle_index(i - g0, log_m, log_n, inverse)
                    s, d = butterfly(
                        load(x, i), load(x, i + m), load(tw, e), e != 0, flip, final, dif
                    )
                    store(x, i, s)
                    store(x, i + m, d)


@njit()
def _pick(a, b, c, v):
    if v == 0:
        return a
    if v == 1:
        return b
    return c


@njit(parallel=True)
def _dit(a, b, c, nvec, tw, log_n, inverse, log_b, log_g):
    """All DIT stages (bit-reversed in, natural out) on nvec of the vectors a, b, c."""
    nblocks = 1 << (log_n - log_b)
    for t in prange(nvec * nblocks):
        _block(
            _pick(a, b, c, t // nblocks),
            tw,
            (t % nblocks) << log_b,
            log_b,
            0,
            log_n,
            inverse,
            False,
        )
    if log_b < log_n:
        ngroups = 1 << (log_b - log_g)
        for t in prange(nvec * ngroups):
            _columns(
                _pick(a, b, c, t // ngroups),
                tw,
                (t % ngroups) << log_g,
                log_g,
                log_b,
                log_n,
                inverse,
                False,
            )


@njit()
def _coset_block(x, tw, g_rev, blk, log_b, log_n):
    """One block of the H pipeline's middle: the iNTT's last (block) stages, the coset step
    on the now bit-reversed coefficients, the NTT's first (block) stages. The iNTT's last
    stage, the coset step and the NTT's first stage (both of half-size 1, twiddle 1) run as
    one pass over the block's pairs: the same operations, one load and store of each element
    instead of three (measured in docs/kernels.md)."""
    base = blk << log_b
    _block(x, tw, base, log_b, 1, log_n, True, True)
    one = load(tw, 0)
    final = log_n == 1
    for p in range(base, base + (1 << log_b), 2):
        s, d = butterfly(load(x, p), load(x, p + 1), one, False, False, False, True)
        s = mul_twiddle(load(g_rev, p), s)
        d = mul_twiddle(load(g_rev, p + 1), d)
        s, d = butterfly(s, d, one, False, False, final, False)
        store(x, p, s)
        store(x, p + 1, d)
    _block(x, tw, base, log_b, 1, log_n, False, False)


@njit(parallel=True)
def _h_pipeline(a, b, c, h, tw, g_rev, log_n, log_b, log_g, n_mont, inv_n2_plain):
    """compute_h in three parallel regions: iNTT column stages; per block iNTT block stages +
    coset + NTT block stages; per column group NTT column stages + h_i of those columns."""
    nm = (n_mont[0], n_mont[1], n_mont[2], n_mont[3])
    k2 = (inv_n2_plain[0], inv_n2_plain[1], inv_n2_plain[2], inv_n2_plain[3])
    ngroups = 1 << (log_b - log_g)
    if log_b < log_n:
        for t in prange(3 * ngroups):
            x = _pick(a, b, c, t // ngroups)
            _columns(x, tw, (t % ngroups) << log_g, log_g, log_b, log_n, True, True)
    nblocks = 1 << (log_n - log_b)
    for t in prange(3 * nblocks):
        _coset_block(_pick(a, b, c, t // nblocks), tw, g_rev, t % nblocks, log_b, log_n)
    if log_b < log_n:
        for t in prange(ngroups):
            r0 = t << log_g
            _columns(a, tw, r0, log_g, log_b, log_n, False, False)
            _columns(b, tw, r0, log_g, log_b, log_n, False, False)
            _columns(c, tw, r0, log_g, log_b, log_n, False, False)
            for row in range(1 << (log_n - log_b)):
                for r in range(r0, r0 + (1 << log_g)):
                    i = (row << log_b) | r
                    store(h, i, quotient(load(a, i), load(b, i), load(c, i), nm, k2))
    else:
        for i in prange(1 << log_n):
            store(h, i, quotient(load(a, i), load(b, i), load(c, i), nm, k2))


@njit(parallel=True)
def _coset_shift(x, g_rev, log_n, inverse):
    nruns, step = _runs(x.shape[0])
    for t in prange(nruns):
        for i in range(t * step, (t + 1) * step):
            p, negate = coset_factor_index(i, log_n, inverse)
            y = fr_mul(load(x, i), load(g_rev, p))
            if negate:
                y = fr_neg(y)
            store(x, i, y)


@njit(parallel=True)
def _quotient(h, a, b, c, n_mont, inv_n2_plain):
    nm = (n_mont[0], n_mont[1], n_mont[2], n_mont[3])
    k2 = (inv_n2_plain[0], inv_n2_plain[1], inv_n2_plain[2], inv_n2_plain[3])
    for i in prange(a.shape[0]):
        store(h, i, quotient(load(a, i), load(b, i), load(c, i), nm, k2))
