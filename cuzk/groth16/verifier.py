"""Groth16 verification for snarkjs proofs: strict input checks, then one pairing product.

A proof (piA, piB, piC) of public signals s_1..s_n verifies under a key
(alpha1, beta2, gamma2, delta2, IC_0..IC_n) when

    e(piA, piB) = e(alpha1, beta2) * e(vk_x, gamma2) * e(piC, delta2),
    vk_x = IC_0 + sum_i s_i IC_i,

checked as the single product  e(-piA, piB) e(alpha1, beta2) e(vk_x, gamma2) e(piC, delta2) = 1
with one shared final exponentiation, computed by one of three backends with the same
verdicts: compiled (cuzk.groth16.verifier_numba on cuzk.arith.pairing, for processes that
verify many proofs), the same kernels from the native library (cuzk.kernels.verifier_ops, for a
process that proves on it: `cuzk prove`'s self-check, the daemon's devices) or on
Python ints (cuzk.arith.pairing_int, for the one-shot `cuzk verify`, which then imports
neither numpy nor numba).

Keys and proofs of either curve cuzk knows are verified (BN254, and BLS12-381, which snarkjs
names bls12381: the curve is the one the files name, and a proof must be on its key's
curve); asked for "numba", BLS12-381 is checked on Python ints (that compiled verifier is
BN254's), while "native" serves both curves. Input that cannot be a Groth16 instance is
refused with a FormatError (cuzk.formats.errors) that names the file and the field: the
snarkjs JSON reader (cuzk.formats.snarkjs_json) checks shapes, decimal numbers, coordinates
below q, public signals below r, points on their curves, the protocol and curve, and the
counts against nPublic; this module adds the order-r subgroup check of G2 points, and of G1
points on a curve whose G1 has a cofactor (BLS12-381: a G1 point with a component of the
cofactor's order pairs as its G1 part does, so the pairing equation alone would accept a
proof with one, which a verifier that checks membership, as Ethereum's BLS12-381 precompiles
do, refuses) (NotInSubgroup). snarkjs answers some of these with "invalid" instead (a signal
>= r) or does not check them (subgroup membership of piB); cuzk refuses them, so a `False`
from verify() always means a well-formed proof that fails the pairing equation.
"""

from __future__ import annotations

import functools
import os

from cuzk.formats import curve as curves
from cuzk.formats.errors import NotInSubgroup, UnsupportedProtocol
from cuzk.formats.snarkjs_json import (
    alphabeta_12,
    check_g1,
    check_g2,
    check_ic_count,
    fq12_to_json,
    json_curve,
    load,
    parse_public,
    proof_from_json,
    vk_from_json,
)
from cuzk.plain import Plain

__all__ = [
    "BACKENDS",
    "Proof",
    "VerifyingKey",
    "parse_public",
    "verify",
    "verify_files",
    "verify_with_zkey",
]

# How the subgroup checks and the pairing product are computed; the verdicts are the same.
#   "numba"   compiled (cuzk.groth16.verifier_numba): ~2 ms a proof once loaded, but loading
#             numpy, numba and the cached machine code costs about half a second;
#   "python"  Python ints (cuzk.arith.pairing_int): tens of ms a proof, nothing to load;
#   "native"  the G2 test and the pairing product of the native library, loaded with ctypes
#             (cuzk.kernels.verifier_ops; Numba's build of the same kernels where this
#             process does not use the library): a few ms a proof, for a process that has
#             numpy and the library loaded already, i.e. one that proves on it.
# A process that verifies many proofs uses "numba"; the one-shot `cuzk verify`, "python";
# one that proves, "native" where the library serves it (quick_backend, verifier_backend).
BACKENDS = ("numba", "python", "native")


BN254 = curves.BN254


def quick_backend(curve: str) -> str:
    """The backend for a check or two in a process that must not load numba for them:
    "native" where this process proves on the native library for `curve` (a cuzk.arith.curves
    name), else "python"."""
    from cuzk import native

    return "native" if native.serves(curve) else "python"


def _backend(name: str, curve=BN254):
    """The module that checks subgroups and pairing products for `curve`: BN254's compiled
    verifier, any curve's native-library kernels, or Python-int pairing; another curve than
    BN254 asked for "numba" gets the Python-int pairing."""
    if not isinstance(name, str):  # an ops object of its own (cuzk.groth16.lean's)
        return name
    if name not in BACKENDS:
        raise ValueError(f"unknown verifier backend {name!r} (expected one of {BACKENDS})")
    if name == "native":
        from cuzk.kernels import verifier_ops

        return verifier_ops.for_curve(curve.arith)
    if name == "numba" and curve is BN254:
        from cuzk.groth16 import verifier_numba

        return verifier_numba
    from cuzk.arith import pairing_int

    return pairing_int.for_curve(curve.arith)


def _require_subgroup(p, where: str, backend: str, curve=BN254) -> None:
    if p is not None and not _backend(backend, curve).g2_in_subgroup(p):
        raise NotInSubgroup(where, "G2 point is on the twist but not in the order-r subgroup")


def _require_g1_subgroup(p, where: str, curve=BN254) -> None:
    """G1 membership on Python ints (~0.6 ms a point on BLS12-381); nothing on BN254, whose
    E(Fq) is G1."""
    if curve is BN254 or p is None:
        return
    from cuzk.arith import pairing_int

    if not pairing_int.for_curve(curve.arith).g1_in_subgroup(p):
        raise NotInSubgroup(where, "G1 point is on the curve but not in the order-r subgroup")


# --- keys and proofs -----------------------------------------------------------------------


class VerifyingKey(Plain):
    """A checked Groth16 verifying key: affine int points (None = infinity) of `curve` (a
    cuzk.formats.curve Curve). Build with from_json / from_points / from_zkey; `backend`
    (BACKENDS) does the G2 subgroup checks."""

    FIELDS = ("n_public", "alpha1", "beta2", "gamma2", "delta2", "ic", "curve")

    def __init__(self, n_public, alpha1, beta2, gamma2, delta2, ic, curve=BN254):
        self._set(
            n_public=n_public,
            alpha1=alpha1,
            beta2=beta2,
            gamma2=gamma2,
            delta2=delta2,
            ic=ic,
            curve=curve,
        )

    @classmethod
    def from_points(
        cls,
        alpha1,
        beta2,
        gamma2,
        delta2,
        ic,
        n_public=None,
        where: str = "verifying key",
        backend: str = "numba",
        curve=BN254,
    ) -> VerifyingKey:
        """From affine int points; checks range, curve, subgroup and counts."""
        alpha1 = check_g1(alpha1, f"{where}: vk_alpha_1", curve)
        _require_g1_subgroup(alpha1, f"{where}: vk_alpha_1", curve)
        g2 = [
            check_g2(p, f"{where}: {name}", curve)
            for p, name in ((beta2, "vk_beta_2"), (gamma2, "vk_gamma_2"), (delta2, "vk_delta_2"))
        ]
        for p, name in zip(g2, ("vk_beta_2", "vk_gamma_2", "vk_delta_2"), strict=True):
            _require_subgroup(p, f"{where}: {name}", backend, curve)
        ic = tuple(check_g1(p, f"{where}: IC[{i}]", curve) for i, p in enumerate(ic))
        for i, p in enumerate(ic):
            _require_g1_subgroup(p, f"{where}: IC[{i}]", curve)
        if n_public is None:
            n_public = len(ic) - 1
        check_ic_count(ic, n_public, where)
        return cls(n_public, alpha1, g2[0], g2[1], g2[2], ic, curve)

    @classmethod
    def from_json(
        cls, obj, where: str = "verification_key.json", backend: str = "numba"
    ) -> VerifyingKey:
        """From snarkjs's verification_key.json object (vk_alphabeta_12 is not needed), on the
        curve it names."""
        n_public, alpha1, beta2, gamma2, delta2, ic = vk_from_json(obj, where, None)
        curve = json_curve(obj, where)
        return cls.from_points(alpha1, beta2, gamma2, delta2, ic, n_public, where, backend, curve)

    @classmethod
    def from_zkey(cls, zkey, backend: str = "numba") -> VerifyingKey:
        """From a cuzk.formats ZKey (its header points and IC section), on its curve."""
        from cuzk.formats.stored import g1_from_limbs, g2_from_limbs

        curve = getattr(zkey, "curve_info", BN254)
        return cls.from_points(
            g1_from_limbs(zkey.alpha1, curve),
            g2_from_limbs(zkey.beta2, curve),
            g2_from_limbs(zkey.gamma2, curve),
            g2_from_limbs(zkey.delta2, curve),
            [g1_from_limbs(p, curve) for p in zkey.ic],
            int(zkey.n_public),
            os.fspath(getattr(zkey, "path", "zkey")),
            backend,
            curve,
        )

    @functools.cached_property
    def _arrays(self):
        """The key's Montgomery arrays for the compiled product, built on first use."""
        from cuzk.groth16.verifier_numba import KeyArrays

        return KeyArrays(self)

    def alphabeta_12_json(self) -> list:
        """vk_alphabeta_12 for this key, in snarkjs's layout."""
        return fq12_to_json(alphabeta_12(self.alpha1, self.beta2, self.curve))


class Proof(Plain):
    """A checked Groth16 proof: affine int points (None = infinity) of `curve`."""

    FIELDS = ("pi_a", "pi_b", "pi_c", "curve")

    def __init__(self, pi_a, pi_b, pi_c, curve=BN254):
        self._set(pi_a=pi_a, pi_b=pi_b, pi_c=pi_c, curve=curve)

    @classmethod
    def from_points(
        cls, pi_a, pi_b, pi_c, where: str = "proof", backend: str = "numba", curve=BN254
    ) -> Proof:
        """From affine int points on `curve` (a Curve or its name); checks range, curve and
        subgroups."""
        curve = curves.by_name(curve)
        a = check_g1(pi_a, f"{where}: pi_a", curve)
        _require_g1_subgroup(a, f"{where}: pi_a", curve)
        b = check_g2(pi_b, f"{where}: pi_b", curve)
        _require_subgroup(b, f"{where}: pi_b", backend, curve)
        c = check_g1(pi_c, f"{where}: pi_c", curve)
        _require_g1_subgroup(c, f"{where}: pi_c", curve)
        return cls(a, b, c, curve)

    @classmethod
    def from_json(cls, obj, where: str = "proof.json", backend: str = "numba") -> Proof:
        """From snarkjs's proof.json object, on the curve it names."""
        points = proof_from_json(obj, where, None)
        return cls.from_points(*points, where, backend, json_curve(obj, where))


# --- verification --------------------------------------------------------------------------


def verify(vk, public_signals, proof, backend: str = "numba") -> bool:
    """True iff `proof` proves `public_signals` under `vk`; False if the pairing check fails.

    vk: a VerifyingKey or a verification_key.json object; public_signals: a list of ints or
    decimal strings (public.json); proof: a Proof or a proof.json object; backend: one of
    BACKENDS (same verdicts). Raises a FormatError (cuzk.formats.errors) for input that is
    not a Groth16 instance of one curve (a proof on another curve than its key's included)."""
    _backend(backend)  # an unknown name fails before any work
    if not isinstance(vk, VerifyingKey):
        vk = VerifyingKey.from_json(vk, backend=backend)
    if not isinstance(proof, Proof):
        proof = Proof.from_json(proof, backend=backend)
    curve = vk.curve
    if proof.curve is not curve:
        raise UnsupportedProtocol(
            "proof", f"the proof is on {proof.curve.title} but the key on {curve.title}"
        )
    signals = parse_public(public_signals, vk.n_public, curve=curve)
    a = proof.pi_a
    neg_a = None if a is None else (a[0], (curve.q - a[1]) % curve.q)
    ops = _backend(backend, curve)
    if backend == "numba" and curve is BN254:
        return ops.product_is_one(vk._arrays, neg_a, proof.pi_b, proof.pi_c, signals)
    # vk_x = IC_0 + sum_i s_i IC_i, then e(-A, B) e(alpha1, beta2) e(vk_x, gamma2) e(C, delta2)
    vk_x = ops.g1_linear_combination(vk.ic, [1, *signals])
    return ops.pairing_product_is_one(
        [(neg_a, proof.pi_b), (vk.alpha1, vk.beta2), (vk_x, vk.gamma2), (proof.pi_c, vk.delta2)]
    )


def verify_files(vk_json, public_json, proof_json, backend: str = "numba") -> bool:
    """`snarkjs groth16 verify` on files: verification_key.json, public.json, proof.json."""
    vk = VerifyingKey.from_json(
        load(vk_json, "verification key"), os.fspath(vk_json), backend=backend
    )
    public = parse_public(
        load(public_json, "public signals"), vk.n_public, os.fspath(public_json), vk.curve
    )
    proof = Proof.from_json(load(proof_json, "proof"), os.fspath(proof_json), backend=backend)
    if proof.curve is not vk.curve:
        raise UnsupportedProtocol(
            os.fspath(proof_json),
            f"the proof is on {proof.curve.title} but the key ({os.fspath(vk_json)}) on "
            f"{vk.curve.title}",
        )
    return verify(vk, public, proof, backend)


def verify_with_zkey(zkey, public, points, backend: str = "numba") -> bool:
    """Verify a freshly made proof against the key it was made with (the prover's --verify):
    zkey a cuzk.formats ZKey, public the ints w[1..nPublic], points (piA, piB, piC) as
    affine ints (None = infinity)."""
    return verify(
        VerifyingKey.from_zkey(zkey, backend),
        public,
        Proof.from_points(*points, backend=backend),
        backend,
    )
