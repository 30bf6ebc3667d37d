"""The curves cuzk's arithmetic is built for: their registry, and the Montgomery constants every
curve derives the same way.

A curve is one constants module with the same names (``cuzk.arith.constants`` is BN254,
``cuzk.arith.bls12_381`` is BLS12-381): the plain integers (FQ_MODULUS, FR_MODULUS, G1_B,
G2_B, generators, FQ_LIMBS, FR_LIMBS, FR_TWO_ADICITY, FR_NONRESIDUE), the NTT's roots of
unity (``fr_roots_of_unity()``, by ``roots_of_unity`` below) and, built on first use from them by
``limb_constants`` below, the limb forms the kernels read (Q_LIMBS, Q_INV, Q_R2, ...).
The shared sources (cuzk.arith.field, .group, .curve, .batch_ops) take the curve as a build
parameter: ``T.load("cuzk.arith.field", **build_params("bls12_381"))``; BN254, the default,
is the plain build (no parameter), so its builds, names and caches are those it always had.
Adding a curve: a constants module, a line in CURVES, and its tests.

Importing this module imports neither numpy nor a constants module.
"""

from __future__ import annotations

import functools
import importlib

DEFAULT = "bn254"

# curve name -> its constants module
CURVES = {
    "bn254": "cuzk.arith.constants",
    "bls12_381": "cuzk.arith.bls12_381",
}


def constants(name: str):
    """The constants module of curve ``name``."""
    try:
        return importlib.import_module(CURVES[name])
    except KeyError:
        raise ValueError(f"unknown curve {name!r} (known: {', '.join(CURVES)})") from None


def build_params(name: str) -> dict:
    """The build parameters that select curve ``name`` in a shared source: none for the
    default curve (its builds keep their plain names), else ``{"curve": name}``."""
    constants(name)  # fails early on an unknown name
    return {} if name == DEFAULT else {"curve": name}


@functools.cache
def curve_build(module_name: str, curve: str = DEFAULT, target: str = "cpu", **params: str):
    """The build of shared source module ``module_name`` whose kernels work on ``curve`` (and
    any other build ``params``, e.g. ``group="g2"``) for ``target`` ("cpu" or "cuda"): the
    module imported normally for the default curve with no other parameter, else its build by
    cuzk.arith.jit's Target.load (made once per process, then kept there). Cached: kernel
    drivers call it per operation (ntt_cpu, ntt_cuda per launch)."""
    params = {**params, **build_params(curve)}
    if not params:
        return importlib.import_module(module_name)
    from cuzk.arith.jit import get_target

    return get_target(target).load(module_name, **params)


def roots_of_unity(r: int, two_adicity: int, nonresidue: int) -> list:
    """The 2-power roots of unity of F_r as snarkjs uses them (ffjavascript's WasmField1
    and wasmcurves' build_fft, which both compute the NTT tables and the powers of tau's
    Lagrange bases): with r - 1 = 2^s t, t odd, and nqr the least quadratic non-residue,
    w[s] = nqr^t, of order 2^s, and w[k] = w[k+1]^2, of order 2^k; w[0] = 1. A curve's
    constants module gives s (FR_TWO_ADICITY) and nqr (FR_NONRESIDUE)."""
    w = [0] * (two_adicity + 1)
    w[two_adicity] = pow(nonresidue, (r - 1) >> two_adicity, r)
    for k in range(two_adicity - 1, -1, -1):
        w[k] = w[k + 1] * w[k + 1] % r
    return w


def no_carry_ok(p: int, n: int) -> bool:
    """True when the "no-carry" CIOS multiplication and carry-free additions hold for an
    n-limb modulus p: its top limb is below 2^63 - 1 (so the CIOS accumulator never needs
    a word above n limbs, and a + b < 2p fits in n limbs)."""
    return (p >> (64 * (n - 1))) < (1 << 63) - 1


def limb_constants(p: int, n: int, prefix: str) -> dict:
    """The limb forms (tuples of np.uint64, little-endian) of the Montgomery arithmetic
    modulo p on n 64-bit limbs, R = 2^(64 n), under names starting with ``prefix``:

    - ``{prefix}_LIMBS``   p
    - ``{prefix}_INV``     -p^{-1} mod 2^64 (one np.uint64): CIOS's per-round factor
    - ``{prefix}_R2``      R^2 mod p: to_mont(a) = a * R2 * R^{-1}
    - ``{prefix}_ONE``     R mod p, the Montgomery form of 1
    - ``{prefix}_MINUS_2`` p - 2 as limbs, the exponent of the Fermat inversion
    - ``{prefix}_ZERO``, ``{prefix}_PLAIN_ONE``: 0 and 1 on n limbs (multiplying by plain 1
      leaves Montgomery form: from_mont(a))
    """
    import numpy as np

    from cuzk.arith.radix import int_to_limb_tuple

    if not (p % 2 and p < 1 << (64 * n) and no_carry_ok(p, n)):
        raise ValueError(f"modulus of {p.bit_length()} bits: not an odd no-carry {n}-limb prime")
    mont_r = 1 << (64 * n)
    return {
        f"{prefix}_LIMBS": int_to_limb_tuple(p, n),
        f"{prefix}_INV": np.uint64((-pow(p, -1, 1 << 64)) % (1 << 64)),
        f"{prefix}_R2": int_to_limb_tuple(mont_r * mont_r % p, n),
        f"{prefix}_ONE": int_to_limb_tuple(mont_r % p, n),
        f"{prefix}_MINUS_2": int_to_limb_tuple(p - 2, n),
        f"{prefix}_ZERO": int_to_limb_tuple(0, n),
        f"{prefix}_PLAIN_ONE": int_to_limb_tuple(1, n),
    }


def curve_limb_constants(q: int, nq: int, r: int, nr: int, g1_b: int, g2_b: tuple) -> dict:
    """Both fields' limb constants (prefixes Q and R) and the Montgomery forms of the curve
    coefficients (G1_B_MONT in Fq, G2_B_MONT in Fq2), for a curve's constants module."""
    from cuzk.arith.radix import int_to_limb_tuple

    out = {**limb_constants(q, nq, "Q"), **limb_constants(r, nr, "R")}
    mont_r = 1 << (64 * nq)
    out["G1_B_MONT"] = int_to_limb_tuple(g1_b * mont_r % q, nq)
    out["G2_B_MONT"] = tuple(int_to_limb_tuple(c * mont_r % q, nq) for c in g2_b)
    return out


LIMB_NAMES = tuple(
    f"{prefix}_{name}"
    for prefix in "QR"
    for name in ("LIMBS", "INV", "R2", "ONE", "MINUS_2", "ZERO", "PLAIN_ONE")
) + ("G1_B_MONT", "G2_B_MONT")
