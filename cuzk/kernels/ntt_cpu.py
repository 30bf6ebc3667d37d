"""NTT over Fr on the CPU: parallel (numba prange) radix-2 transforms, coset step, H pipeline.

Public API (in place on C-contiguous (n, 4) uint64 arrays of Montgomery-form elements,
n = 2^log_n, 1 <= n <= 2^(s-1) for a field of 2-adicity s, the coset of the largest needing
w[s]: 2^27 on BN254, 2^31 on BLS12-381), each for the curve named by ``curve`` (a name of
cuzk.arith.curves: "bn254", the default, or "bls12_381"):

    ntt(x, inverse=False, curve=)         forward NTT, or inverse NTT including the 1/n
    coset_shift(x, log2n, inverse=False, curve=)  x_i *= w_{2n}^i  (w_{2n}^{-i} with inverse)
    ntt_batch(xs, inverse=False, curve=)  ntt() of several same-size vectors in one pass
    compute_h(a, b, c, out=None, curve=) -> h   the Groth16 quotient evaluations (see below)
    tables(log_n, curve=)                 the domain's constants, cached per (curve, log_n)

compute_h is the prover's H step (snarkjs groth16_prove.js: ifft, batchApplyKey with
inc = w[log_n + 1], fft, then joinABC and batchFromMontgomery): for each of a, b, c an inverse
NTT, the coset shift, a forward NTT; then h_i = a_i b_i - c_i, returned in plain
(non-Montgomery) form, which is how the H MSM takes its scalars. a, b and c are overwritten
(with n times their coset evaluations); h goes to ``out``, by default a's storage.

Twiddle tables are computed once per curve and domain size and kept for later transforms
(``tables(log_n, curve)``; ``clear_tables()`` frees them), up to KEEP_BYTES in all: a daemon
that proves at many sizes, or once at a large one, does not keep every size's tables for
its life (2^22's are 192 MiB); past the bound the least recently used go.

The kernels are cuzk.kernels.ntt_cpu_kernels, built per curve; the functions here pick the
build their ``curve`` names (``kernels(curve)``: Numba's, or the native library's where a
one-shot command loaded it, cuzk.native). This module imports neither numba nor the kernels
until a transform runs.
"""

from __future__ import annotations

import functools
import os
import threading

# OpenMP threads that wait at a barrier sleep instead of spinning. On a machine whose cores
# are shared with other processes (synthesis workers, other provers) a spinning waiter holds
# the core the thread it waits for needs: measured here with the load at 3 per core, an NTT
# of 2^12 took 52 ms with the default policy and 1 ms with this one. It is read when the
# OpenMP runtime starts (the first parallel kernel of the process), so it only takes effect
# if this module (or an earlier setter) is imported before then; an explicit setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np  # noqa: E402

from cuzk.arith import curves  # noqa: E402
from cuzk.arith.curves import DEFAULT  # noqa: E402
from cuzk.kernels import threads  # noqa: E402
from cuzk.kernels.ntt_plan import (
    BLOCK_LOG,
    GROUP_LOG,
    blocking,
    power_chunks,
    schedule,
)  # noqa: E402

_M64 = (1 << 64) - 1


def kernels(curve: str = DEFAULT):
    """The kernels (cuzk.kernels.ntt_cpu_kernels) that work in ``curve``'s Fr."""
    from cuzk.native import kernels as native_kernels

    return native_kernels("cuzk.kernels.ntt_cpu_kernels", curve)


@functools.cache
def _field(curve: str):
    """(r, 2-adicity, snarkjs's roots w[k] as plain integers) of ``curve``'s Fr."""
    k = curves.constants(curve)
    return k.FR_MODULUS, k.FR_TWO_ADICITY, tuple(k.fr_roots_of_unity())


# --- conversions used to build constants ----------------------------------------------------


def mont_limbs(v: int, curve: str = DEFAULT) -> np.ndarray:
    """The Montgomery form (R = 2^256) of v mod r as a (4,) uint64 array."""
    r = _field(curve)[0]
    m = (v % r) * (1 << 256) % r
    return np.array([(m >> (64 * t)) & _M64 for t in range(4)], dtype=np.uint64)


def plain_limbs(v: int, curve: str = DEFAULT) -> np.ndarray:
    """v mod r as a (4,) uint64 array (plain form)."""
    m = v % _field(curve)[0]
    return np.array([(m >> (64 * t)) & _M64 for t in range(4)], dtype=np.uint64)


def domain_log2(x: np.ndarray, curve: str = DEFAULT) -> int:
    """log2 of the length of an (n, 4) uint64 vector; checks shape, dtype and layout, and
    that ``curve``'s Fr has the coset's root."""
    if x.ndim != 2 or x.shape[1] != 4 or x.dtype != np.uint64:
        raise ValueError(f"expected an (n, 4) uint64 array, got {x.shape} {x.dtype}")
    if not x.flags.c_contiguous:
        raise ValueError("expected a C-contiguous array")
    n = x.shape[0]
    if n < 1 or n & (n - 1):
        raise ValueError(f"domain size {n} is not a power of two")
    log_n = n.bit_length() - 1
    two_adicity = _field(curve)[1]
    if log_n > two_adicity - 1:
        raise ValueError(
            f"domain 2^{log_n} too large: the coset needs w[{log_n + 1}], "
            f"and {curve}'s Fr has 2-adicity {two_adicity}"
        )
    return log_n


def _schedule(log_n: int):
    """cuzk.kernels.ntt_plan.schedule on this process's threads (cuzk.kernels.threads)."""
    return schedule(log_n, threads)


def _blocking(log_n: int):
    """(log_b, log_g): block phase on 2^log_b elements, column tasks of 2^log_g columns
    (cuzk.kernels.ntt_plan.blocking at this module's BLOCK_LOG and GROUP_LOG)."""
    return blocking(log_n, BLOCK_LOG, GROUP_LOG)


# --- tables ---------------------------------------------------------------------------------


class Tables:
    """Per-domain constants of one curve's Fr: twiddles tw[e] = w_n^e (e < n/2), the coset
    table g_rev[p] = w_{2n}^{rev(p)} (p < n, bit-reversed order), and the scalars the
    transforms use, all Montgomery form unless named plain."""

    def __init__(self, log_n: int, curve: str = DEFAULT):
        r, _, w = _field(curve)
        n = 1 << log_n
        self.curve = curve
        self.log_n = log_n
        self.n = n
        self.tw = powers_table(w[log_n], n // 2, curve=curve)
        self.g_rev = powers_table(w[log_n + 1], n, rev_bits=log_n, curve=curve)
        inv_n = pow(n, -1, r)
        self.inv_n = mont_limbs(inv_n, curve)
        self.n_mont = mont_limbs(n, curve)
        self.inv_n2_plain = plain_limbs(inv_n * inv_n, curve)

    @property
    def nbytes(self) -> int:
        return self.tw.nbytes + self.g_rev.nbytes


def powers_table(base: int, count: int, rev_bits: int = 0, curve: str = DEFAULT) -> np.ndarray:
    """(count, 4) Montgomery table of base^i in ``curve``'s Fr, computed in parallel chunks
    (each chunk starts from a power taken in Python ints); with rev_bits, stored in
    bit-reversed order. Eight chunks a thread: each chunk's first power costs ~15 us in
    Python, so 256 chunks took ~4 ms of a one-shot command's 2^12 proof (two tables)."""
    out = np.empty((count, 4), dtype=np.uint64)
    if count == 0:
        return out
    r = _field(curve)[0]
    starts = np.array(power_chunks(count, threads.get_num_threads()), np.int64)
    firsts = np.stack([mont_limbs(pow(base, int(s), r), curve) for s in starts[:-1]])
    kernels(curve)._powers(out, mont_limbs(base, curve), starts, firsts, rev_bits)
    return out


# The most bytes of cached Tables a process keeps (the last used set always stays, whatever
# its size): room for 2^22's (192 MiB) beside every smaller size up to 2^20.
KEEP_BYTES = 320 << 20

_tables: dict[tuple[str, int], Tables] = {}  # in order of last use, the latest last
_tables_lock = threading.Lock()


def tables(log_n: int, curve: str = DEFAULT) -> Tables:
    """The cached Tables of the domain 2^log_n of ``curve``'s Fr (built on first use; the
    least recently used dropped past KEEP_BYTES)."""
    key = (curve, log_n)
    with _tables_lock:
        t = _tables.pop(key, None)
        if t is None:
            t = Tables(log_n, curve)
        _tables[key] = t
        held = tables_nbytes()
        for old in list(_tables):
            if held <= KEEP_BYTES or old == key:
                break
            held -= _tables.pop(old).nbytes  # (a transform using it keeps its reference)
    return t


def clear_tables() -> None:
    with _tables_lock:
        _tables.clear()


def tables_nbytes() -> int:
    """Bytes held by the cached tables."""
    return sum(t.nbytes for t in list(_tables.values()))


# --- API ------------------------------------------------------------------------------------


def ntt(x: np.ndarray, inverse: bool = False, curve: str = DEFAULT) -> np.ndarray:
    """In-place NTT of x over the domain of size len(x) (natural order in and out), with
    snarkjs's root w[log_n] of ``curve``'s Fr; inverse=True computes the inverse, 1/n
    included. Returns x."""
    log_n = domain_log2(x, curve)
    if log_n == 0:
        return x
    k = kernels(curve)
    t = tables(log_n, curve)
    with _schedule(log_n):
        if inverse:
            k._bit_reverse_scale(x, log_n, t.inv_n)
        else:
            k._bit_reverse(x, log_n)
        k._dit(x, x, x, 1, t.tw, log_n, inverse, *_blocking(log_n))
    return x


def ntt_batch(xs, inverse: bool = False, curve: str = DEFAULT):
    """ntt() of up to three same-size vectors, each stage run over all of them at once."""
    xs = list(xs)
    if not 1 <= len(xs) <= 3:
        raise ValueError("ntt_batch takes one to three vectors")
    log_n = domain_log2(xs[0], curve)
    if any(domain_log2(x, curve) != log_n for x in xs):
        raise ValueError("ntt_batch vectors differ in size")
    if log_n == 0:
        return xs
    k = kernels(curve)
    t = tables(log_n, curve)
    padded = xs + [xs[0]] * (3 - len(xs))
    with _schedule(log_n):
        for x in xs:
            if inverse:
                k._bit_reverse_scale(x, log_n, t.inv_n)
            else:
                k._bit_reverse(x, log_n)
        k._dit(padded[0], padded[1], padded[2], len(xs), t.tw, log_n, inverse, *_blocking(log_n))
    return xs


def coset_shift(
    x: np.ndarray, log2n: int, inverse: bool = False, curve: str = DEFAULT
) -> np.ndarray:
    """In place x_i *= w_{2n}^i for i < n = 2^log2n, w_{2n} = w[log2n + 1] (snarkjs's
    batchApplyKey(x, 1, w[log2n+1])) in ``curve``'s Fr; inverse=True multiplies by
    w_{2n}^{-i}. Returns x."""
    log_n = domain_log2(x, curve)
    if log_n != log2n:
        raise ValueError(f"vector of length 2^{log_n} given with log2n={log2n}")
    with _schedule(log_n):
        kernels(curve)._coset_shift(x, tables(log_n, curve).g_rev, log_n, inverse)
    return x


def compute_h(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    out: np.ndarray | None = None,
    keep_tables: bool = True,
    curve: str = DEFAULT,
):
    """Groth16 quotient evaluations h_i = A(g w^i) B(g w^i) - C(g w^i) on the coset g = w_{2n}
    of the domain where a, b, c hold A, B, C's evaluations (Montgomery form), in ``curve``'s
    Fr. Returns h as plain-form (n, 4) uint64 in ``out`` (default: a's storage); a, b, c are
    overwritten.

    The iNTTs run as DIF (natural in, bit-reversed out) without their 1/n, the coset step
    scales in bit-reversed order, the NTTs run as DIT (bit-reversed in, natural out); the
    three 1/n and the final from-Montgomery fold into the pointwise step. keep_tables=False:
    the domain's tables, unless already cached, are built for this call and dropped after
    it (a one-shot process: 6 MiB at 2^17)."""
    log_n = domain_log2(a, curve)
    if domain_log2(b, curve) != log_n or domain_log2(c, curve) != log_n:
        raise ValueError("a, b, c differ in size")
    if out is None:
        out = a
    elif domain_log2(out, curve) != log_n:
        raise ValueError("out differs in size from a")
    k = kernels(curve)
    if keep_tables:
        t = tables(log_n, curve)
    else:
        t = _tables.get((curve, log_n)) or Tables(log_n, curve)
    if log_n == 0:  # n = 1: the transforms and the coset factor g^0 are identities
        k._quotient(out, a, b, c, t.n_mont, t.inv_n2_plain)
        return out
    with _schedule(log_n):
        k._h_pipeline(
            a, b, c, out, t.tw, t.g_rev, log_n, *_blocking(log_n), t.n_mont, t.inv_n2_plain
        )
    return out
