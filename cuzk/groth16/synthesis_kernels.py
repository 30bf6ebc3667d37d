"""The kernels of cuzk.groth16.synthesis (CPU, Numba): the a, b, c evaluations of a zkey's
matrices at a witness, and the row-by-row check of an .r1cs.

One source, a build per curve: imported normally these kernels use BN254's Fr;
``curve_build("cuzk.groth16.synthesis_kernels", "bls12_381")`` executes it again on
BLS12-381's field build, each kernel named for that build (its own Numba cache entries).
"""

import numpy as np

from cuzk.arith.curves import DEFAULT, build_params
from cuzk.arith.jit import building

T = building()
CURVE = T.param("curve", DEFAULT)
F = T.load("cuzk.arith.field", **build_params(CURVE))
if F.NR != 4:
    raise NotImplementedError(f"{CURVE}: synthesis works on 4-limb Fr elements")
eq, fr_add, fr_mul, fr_to_mont = F.eq, F.fr_add, F.fr_mul, F.fr_to_mont
njit = T.njit  # numba.njit(cache=True, nogil=True), each kernel named for its build


@njit()
def _evaluate_abc(matrix, constraint, signal, value, w, a, b, c):
    """a = A·w (matrix 0 entries), b = B·w (matrix 1), c = a∘b; Montgomery out.

    One serial entry point on purpose: at 2^15 the whole pass is ~5 ms of CPU (98k
    coefficients, 33k products), while each separately cached entry point costs a process
    10-25 ms to load and a parallel region its thread start-up."""
    _evaluate_abc_part(matrix, constraint, signal, value, w, a, b, c, 1, 1)


@njit()
def _evaluate_abc_part(matrix, constraint, signal, value, w, a, b, c, first, last):
    """_evaluate_abc over the coefficients in pieces, in order: this piece's terms added into
    a and b, which the first piece (first != 0) zeroes before, and c = a∘b after the last
    (last != 0). The same sums, in the same order, as one call over all of them."""
    if first:
        for i in range(a.shape[0]):
            for j in range(4):
                a[i, j] = np.uint64(0)
                b[i, j] = np.uint64(0)
    for k in range(matrix.shape[0]):
        s = signal[k]
        t = fr_mul(
            (value[k, 0], value[k, 1], value[k, 2], value[k, 3]),
            (w[s, 0], w[s, 1], w[s, 2], w[s, 3]),
        )
        i = constraint[k]
        if matrix[k] == 0:
            acc = fr_add((a[i, 0], a[i, 1], a[i, 2], a[i, 3]), t)
            a[i, 0], a[i, 1], a[i, 2], a[i, 3] = acc
        else:
            acc = fr_add((b[i, 0], b[i, 1], b[i, 2], b[i, 3]), t)
            b[i, 0], b[i, 1], b[i, 2], b[i, 3] = acc
    if last:
        for i in range(a.shape[0]):
            t = fr_mul((a[i, 0], a[i, 1], a[i, 2], a[i, 3]), (b[i, 0], b[i, 1], b[i, 2], b[i, 3]))
            c[i, 0], c[i, 1], c[i, 2], c[i, 3] = t


@njit()
def _row_dot(row_ptr, cols, vals, wm, i):
    """Σ val·w over row i; plain values times Montgomery w gives a plain result."""
    acc = (np.uint64(0), np.uint64(0), np.uint64(0), np.uint64(0))
    for k in range(row_ptr[i], row_ptr[i + 1]):
        s = cols[k]
        acc = fr_add(
            acc,
            fr_mul(
                (vals[k, 0], vals[k, 1], vals[k, 2], vals[k, 3]),
                (wm[s, 0], wm[s, 1], wm[s, 2], wm[s, 3]),
            ),
        )
    return acc


@njit()
def _first_unsatisfied(n, ap, ac, av, bp, bc, bv, cp, cc, cv, w):
    wm = np.empty_like(w)
    for s in range(w.shape[0]):
        t = fr_to_mont((w[s, 0], w[s, 1], w[s, 2], w[s, 3]))
        wm[s, 0], wm[s, 1], wm[s, 2], wm[s, 3] = t
    for i in range(n):
        aw = _row_dot(ap, ac, av, wm, i)
        bw = _row_dot(bp, bc, bv, wm, i)
        cw = _row_dot(cp, cc, cv, wm, i)
        # Mont(aw)·bw·R^{-1} = aw·bw (plain)
        if not eq(fr_mul(fr_to_mont(aw), bw), cw):
            return i
    return -1


@njit()
def _first_not_below(w, r):
    """The first row of w (n, 4) whose value is not below r (4 limbs, little-endian), else
    -1: the witness check (cuzk.formats.wtns) for a reader without numpy (cuzk.groth16.lean)."""
    for i in range(w.shape[0]):
        below = False
        for k in range(3, -1, -1):
            if w[i, k] != r[k]:
                below = w[i, k] < r[k]
                break
        if not below:
            return i
    return -1


@njit()
def _first_bad_coefficient(matrix, constraint, signal, rows, wires):
    """The first coefficient entry whose matrix is not 0 or 1, constraint not below rows or
    signal not below wires, else -1: ZKey.check_coefficients for a reader without numpy
    (cuzk.groth16.lean; the full reader words the error)."""
    for k in range(matrix.shape[0]):
        if matrix[k] > 1 or constraint[k] >= rows or signal[k] >= wires:
            return k
    return -1
