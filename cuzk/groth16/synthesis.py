"""Synthesis: evaluate a circom circuit's constraint system at a witness (CPU, Numba).

For a circom circuit the witness is given, so "synthesis" is evaluating the matrices:
a_i = Σ coef·w over the A entries of row i, b_i likewise for B, and c_i = a_i·b_i — the zkey
carries no C matrix; C's evaluations on the domain are A∘B (snarkjs, rapidsnark do the same).

The zkey stores each coefficient as coef·R² mod r, so one Montgomery product with a plain
witness value gives coef·w·R: a, b and c come out in Montgomery form, ready for the NTT.

With the circuit's .r1cs, ``first_unsatisfied`` checks (A·w)∘(B·w) = C·w row by row, which a
zkey alone cannot: an unsatisfying witness would otherwise yield an invalid proof silently.

Both work in the scalar field Fr of a curve (``curve``: a name of cuzk.arith.curves, "bn254"
by default, or "bls12_381"; both Fr have 4 limbs). The kernels are
cuzk.groth16.synthesis_kernels, built per curve; the functions here run the build their
curve names (``kernels(curve)``: Numba's, or the native library's where a one-shot command
loaded it, cuzk.native).
"""

from __future__ import annotations

import numpy as np

from cuzk.arith.curves import DEFAULT


def kernels(curve: str = DEFAULT):
    """The kernels (cuzk.groth16.synthesis_kernels) that work in ``curve``'s Fr."""
    from cuzk.native import kernels as native_kernels

    return native_kernels("cuzk.groth16.synthesis_kernels", curve)


def _outputs(domain_size, out):
    """a, b, c: ``out``'s three arrays, or three new (domain_size, 4) uint64 arrays."""
    if out is None:
        return tuple(np.empty((domain_size, 4), dtype=np.uint64) for _ in range(3))
    return tuple(out)


def evaluate_abc(coefficients, witness, domain_size, out=None, curve: str = DEFAULT):
    """a, b, c = (A·w, B·w, (A·w)∘(B·w)) on the domain, as (domain_size, 4) uint64 arrays in
    Montgomery form, in ``curve``'s Fr. ``out`` may supply the three arrays (e.g.
    shared-memory views); they are overwritten whole."""
    a, b, c = _outputs(domain_size, out)
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


def evaluate_abc_pieces(pieces, witness, domain_size, out=None, curve: str = DEFAULT):
    """evaluate_abc over coefficients given as consecutive pieces: an iterable of (structured
    array, last) in the section's order, last True for the final one
    (cuzk.groth16.key.ProvingKey.coefficient_pieces, which drops each piece's pages once the
    next is asked for); the same a, b, c."""
    a, b, c = _outputs(domain_size, out)
    k = kernels(curve)
    first = 1
    for piece, last in pieces:
        k._evaluate_abc_part(
            piece["matrix"],
            piece["constraint"],
            piece["signal"],
            piece["value"],
            witness,
            a,
            b,
            c,
            first,
            1 if last else 0,
        )
        first = 0
    if first:  # no coefficients at all: a = b = c = 0
        for x in (a, b, c):
            x[:] = 0
    return a, b, c


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
