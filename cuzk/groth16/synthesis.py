"""Synthesis: evaluate a circom circuit's constraint system at a witness (CPU, Numba).

For a circom circuit the witness is given, so "synthesis" is evaluating the matrices:
a_i = Σ coef·w over the A entries of row i, b_i likewise for B, and c_i = a_i·b_i — the zkey
carries no C matrix; C's evaluations on the domain are A∘B (snarkjs, rapidsnark do the same).

The zkey stores each coefficient as coef·R² mod r, so one Montgomery product with a plain
witness value gives coef·w·R: a, b and c come out in Montgomery form, ready for the NTT.

With the circuit's .r1cs, ``first_unsatisfied`` checks (A·w)∘(B·w) = C·w row by row, which a
zkey alone cannot: an unsatisfying witness would otherwise yield an invalid proof silently.

Both work in the scalar field Fr of a curve (``curve``: a name of cuzk.arith.curves, "bn254"
by default, or "bls12_381"; both Fr have 4 limbs). One source, a build per curve: imported
normally this module's kernels use BN254's Fr; ``get_target("cpu").load(
"cuzk.groth16.synthesis", curve="bls12_381")`` executes it again on BLS12-381's field build,
each kernel named for that build (its own Numba cache entries). The public functions are this
module's and run the kernels of the build their curve names (``kernels(curve)``).
"""

from __future__ import annotations

import numpy as np

from cuzk.arith.curves import DEFAULT, build_params, curve_build
from cuzk.arith.jit import building

T = building()
CURVE = T.param("curve", DEFAULT)
F = T.load("cuzk.arith.field", **build_params(CURVE))
if F.NR != 4:
    raise NotImplementedError(f"{CURVE}: synthesis works on 4-limb Fr elements")
eq, fr_add, fr_mul, fr_to_mont = F.eq, F.fr_add, F.fr_mul, F.fr_to_mont
njit = T.njit  # numba.njit(cache=True, nogil=True), each kernel named for its build


def kernels(curve: str = DEFAULT):
    """The build of this module whose kernels work in ``curve``'s Fr (this module for BN254)."""
    return curve_build("cuzk.groth16.synthesis", curve)


@njit()
def _evaluate_abc(matrix, constraint, signal, value, w, a, b, c):
    """a = A·w (matrix 0 entries), b = B·w (matrix 1), c = a∘b; Montgomery out.

    One serial entry point on purpose: at 2^15 the whole pass is ~5 ms of CPU (98k
    coefficients, 33k products), while each separately cached entry point costs a process
    10-25 ms to load and a parallel region its thread start-up."""
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
    for i in range(a.shape[0]):
        t = fr_mul((a[i, 0], a[i, 1], a[i, 2], a[i, 3]), (b[i, 0], b[i, 1], b[i, 2], b[i, 3]))
        c[i, 0], c[i, 1], c[i, 2], c[i, 3] = t


def evaluate_abc(coefficients, witness, domain_size, out=None, curve: str = DEFAULT):
    """a, b, c = (A·w, B·w, (A·w)∘(B·w)) on the domain, as (domain_size, 4) uint64 arrays in
    Montgomery form, in ``curve``'s Fr. ``out`` may supply the three arrays (e.g.
    shared-memory views); they are overwritten whole."""
    if out is None:
        a, b, c = (np.empty((domain_size, 4), dtype=np.uint64) for _ in range(3))
    else:
        a, b, c = out
    kernels(curve)._evaluate_abc(
        coefficients["matrix"],
        coefficients["constraint"],
        coefficients["signal"],
        coefficients["value"],
        witness,
        a,
        b,
        c,
    )
    return a, b, c


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


def r1cs_curve(r1cs, curve: str | None = None) -> str:
    """The cuzk.arith name of the curve whose Fr the constraint system is over: the one its
    prime names (``r1cs.curve``, snarkjs's name, as cuzk.formats.R1CS reads it), else
    ``curve``, else the default; ValueError when ``curve`` is given and the file names
    another."""
    from cuzk.formats import curve as curves

    named = getattr(r1cs, "curve", None)
    if named is None:
        return DEFAULT if curve is None else curves.by_name(curve).arith
    own = curves.by_name(named).arith
    if curve is not None and curves.by_name(curve).arith != own:
        raise ValueError(f"the constraint system is over {own}, not {curve}")
    return own


def first_unsatisfied(r1cs, witness, curve: str | None = None) -> int | None:
    """The index of the first constraint (A·w)·(B·w) ≠ C·w, or None when all hold.
    ``witness`` is the (n_wires, 4) plain-form array. The field is the r1cs's curve's Fr
    (``r1cs.curve``); ``curve``, if given, must agree with it (see r1cs_curve)."""
    A, B, C = r1cs.A, r1cs.B, r1cs.C
    i = kernels(r1cs_curve(r1cs, curve))._first_unsatisfied(
        int(r1cs.n_constraints),
        A.row_ptr,
        A.cols,
        A.vals,
        B.row_ptr,
        B.cols,
        B.vals,
        C.row_ptr,
        C.cols,
        C.vals,
        np.ascontiguousarray(witness),
    )
    return None if i < 0 else int(i)
