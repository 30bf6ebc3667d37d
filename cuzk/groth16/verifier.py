"""Groth16 verification for snarkjs proofs: strict input checks, then one pairing product.

A proof (piA, piB, piC) of public signals s_1..s_n verifies under a key
(alpha1, beta2, gamma2, delta2, IC_0..IC_n) when

    e(piA, piB) = e(alpha1, beta2) * e(vk_x, gamma2) * e(piC, delta2),
    vk_x = IC_0 + sum_i s_i IC_i,

checked as the single product  e(-piA, piB) e(alpha1, beta2) e(vk_x, gamma2) e(piC, delta2) = 1
with one shared final exponentiation (cuzk.arith.pairing).

Input that cannot be a Groth16 instance on BN254 is refused with a FormatError
(cuzk.formats.errors) that names the file and the field: the snarkjs JSON reader
(cuzk.formats.snarkjs_json) checks shapes, decimal numbers, coordinates below q, public
signals below r, points on their curves, the protocol and curve, and the counts against
nPublic; this module adds the order-r subgroup check of G2 points (NotInSubgroup). snarkjs
answers some of these with "invalid" instead (a signal >= r) or does not check them
(subgroup membership of piB); cuzk refuses them, so a `False` from verify() always means a
well-formed proof that fails the pairing equation.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from cuzk.arith import curve as C
from cuzk.arith.constants import FQ_MODULUS, FR_MODULUS
from cuzk.arith.pairing import g1_array, g2_array, pairing_product_is_one
from cuzk.formats.errors import NotInSubgroup
from cuzk.formats.limbs import int_to_limb_tuple
from cuzk.formats.snarkjs_json import (
    alphabeta_12,
    check_g1,
    check_g2,
    check_ic_count,
    fq12_to_json,
    load,
    parse_public,
    proof_from_json,
    vk_from_json,
)

__all__ = [
    "Proof",
    "VerifyingKey",
    "parse_public",
    "verify",
    "verify_files",
    "verify_with_zkey",
]

Q = FQ_MODULUS


# --- the subgroup check and the pairing product (compiled) -----------------------------------

R_PLAIN = int_to_limb_tuple(FR_MODULUS)


@njit(cache=True, nogil=True)
def g2_in_subgroup(q):
    """[r]Q = O for an affine G2 point given as a (2, 2, 4) Montgomery array on the twist
    (the twist's group has order r * c2 with c2 > 1, so this is a real check)."""
    x = (
        (q[0, 0, 0], q[0, 0, 1], q[0, 0, 2], q[0, 0, 3]),
        (q[0, 1, 0], q[0, 1, 1], q[0, 1, 2], q[0, 1, 3]),
    )
    y = (
        (q[1, 0, 0], q[1, 0, 1], q[1, 0, 2], q[1, 0, 3]),
        (q[1, 1, 0], q[1, 1, 1], q[1, 1, 2], q[1, 1, 3]),
    )
    Qj = C.g2_from_affine((x, y))
    return C.g2_is_inf(C.g2_mul(Qj, R_PLAIN))


@njit(cache=True, nogil=True)
def groth16_product_is_one(neg_a, b, c, alpha1, vk_g2, ic, scalars):
    """e(-A, B) e(alpha1, beta2) e(vk_x, gamma2) e(C, delta2) == 1 with
    vk_x = IC_0 + sum_i s_i IC_i. G1 inputs (2, 4), ic (n+1, 2, 4): affine Montgomery limbs;
    b (2, 2, 4); vk_g2 (3, 2, 2, 4) = beta2, gamma2, delta2; scalars (n, 4) plain limbs."""
    acc = C.g1_from_affine(
        (
            (ic[0, 0, 0], ic[0, 0, 1], ic[0, 0, 2], ic[0, 0, 3]),
            (ic[0, 1, 0], ic[0, 1, 1], ic[0, 1, 2], ic[0, 1, 3]),
        )
    )
    for i in range(scalars.shape[0]):
        p = C.g1_from_affine(
            (
                (ic[i + 1, 0, 0], ic[i + 1, 0, 1], ic[i + 1, 0, 2], ic[i + 1, 0, 3]),
                (ic[i + 1, 1, 0], ic[i + 1, 1, 1], ic[i + 1, 1, 2], ic[i + 1, 1, 3]),
            )
        )
        k = (scalars[i, 0], scalars[i, 1], scalars[i, 2], scalars[i, 3])
        acc = C.g1_add(acc, C.g1_mul(p, k))
    vk_x = C.g1_to_affine(acc)  # infinity becomes (0, 0), which the Miller loop skips
    ps = np.empty((4, 2, 4), dtype=np.uint64)
    qs = np.empty((4, 2, 2, 4), dtype=np.uint64)
    ps[0] = neg_a
    qs[0] = b
    ps[1] = alpha1
    qs[1] = vk_g2[0]
    for j in range(2):
        for k in range(4):
            ps[2, j, k] = vk_x[j][k]
    qs[2] = vk_g2[1]
    ps[3] = c
    qs[3] = vk_g2[2]
    return pairing_product_is_one(ps, qs)


def _require_subgroup(p, where: str) -> None:
    if p is not None and not g2_in_subgroup(g2_array([p])[0]):
        raise NotInSubgroup(where, "G2 point is on the twist but not in the order-r subgroup")


# --- keys and proofs -----------------------------------------------------------------------


@dataclass(frozen=True)
class VerifyingKey:
    """A checked Groth16 verifying key: affine int points (None = infinity), plus their
    Montgomery arrays for the compiled check. Build with from_json / from_points / from_zkey."""

    n_public: int
    alpha1: tuple | None
    beta2: tuple | None
    gamma2: tuple | None
    delta2: tuple | None
    ic: tuple
    _alpha1: np.ndarray = field(repr=False, compare=False)
    _g2: np.ndarray = field(repr=False, compare=False)
    _ic: np.ndarray = field(repr=False, compare=False)

    @classmethod
    def from_points(
        cls, alpha1, beta2, gamma2, delta2, ic, n_public=None, where: str = "verifying key"
    ) -> VerifyingKey:
        """From affine int points; checks range, curve, subgroup and counts."""
        alpha1 = check_g1(alpha1, f"{where}: vk_alpha_1")
        g2 = [
            check_g2(p, f"{where}: {name}")
            for p, name in ((beta2, "vk_beta_2"), (gamma2, "vk_gamma_2"), (delta2, "vk_delta_2"))
        ]
        for p, name in zip(g2, ("vk_beta_2", "vk_gamma_2", "vk_delta_2"), strict=True):
            _require_subgroup(p, f"{where}: {name}")
        ic = tuple(check_g1(p, f"{where}: IC[{i}]") for i, p in enumerate(ic))
        if n_public is None:
            n_public = len(ic) - 1
        check_ic_count(ic, n_public, where)
        return cls(
            n_public,
            alpha1,
            g2[0],
            g2[1],
            g2[2],
            ic,
            g1_array([alpha1])[0],
            g2_array(g2),
            g1_array(ic),
        )

    @classmethod
    def from_json(cls, obj, where: str = "verification_key.json") -> VerifyingKey:
        """From snarkjs's verification_key.json object (vk_alphabeta_12 is not needed)."""
        n_public, alpha1, beta2, gamma2, delta2, ic = vk_from_json(obj, where)
        return cls.from_points(alpha1, beta2, gamma2, delta2, ic, n_public, where)

    @classmethod
    def from_zkey(cls, zkey) -> VerifyingKey:
        """From a cuzk.formats ZKey (its header points and IC section)."""
        from cuzk.formats.stored import g1_from_limbs, g2_from_limbs

        return cls.from_points(
            g1_from_limbs(zkey.alpha1),
            g2_from_limbs(zkey.beta2),
            g2_from_limbs(zkey.gamma2),
            g2_from_limbs(zkey.delta2),
            [g1_from_limbs(p) for p in zkey.ic],
            int(zkey.n_public),
            os.fspath(getattr(zkey, "path", "zkey")),
        )

    def alphabeta_12_json(self) -> list:
        """vk_alphabeta_12 for this key, in snarkjs's layout."""
        return fq12_to_json(alphabeta_12(self.alpha1, self.beta2))


@dataclass(frozen=True)
class Proof:
    """A checked Groth16 proof: affine int points (None = infinity)."""

    pi_a: tuple | None
    pi_b: tuple | None
    pi_c: tuple | None

    @classmethod
    def from_points(cls, pi_a, pi_b, pi_c, where: str = "proof") -> Proof:
        a = check_g1(pi_a, f"{where}: pi_a")
        b = check_g2(pi_b, f"{where}: pi_b")
        _require_subgroup(b, f"{where}: pi_b")
        c = check_g1(pi_c, f"{where}: pi_c")
        return cls(a, b, c)

    @classmethod
    def from_json(cls, obj, where: str = "proof.json") -> Proof:
        """From snarkjs's proof.json object."""
        return cls.from_points(*proof_from_json(obj, where), where)


# --- verification --------------------------------------------------------------------------


def verify(vk, public_signals, proof) -> bool:
    """True iff `proof` proves `public_signals` under `vk`; False if the pairing check fails.

    vk: a VerifyingKey or a verification_key.json object; public_signals: a list of ints or
    decimal strings (public.json); proof: a Proof or a proof.json object. Raises a
    FormatError (cuzk.formats.errors) for input that is not a Groth16/BN254 instance."""
    if not isinstance(vk, VerifyingKey):
        vk = VerifyingKey.from_json(vk)
    if not isinstance(proof, Proof):
        proof = Proof.from_json(proof)
    signals = parse_public(public_signals, vk.n_public)
    a = proof.pi_a
    neg_a = None if a is None else (a[0], (Q - a[1]) % Q)
    scalars = np.frombuffer(
        b"".join(s.to_bytes(32, "little") for s in signals), dtype=np.uint64
    ).reshape(len(signals), 4)
    return bool(
        groth16_product_is_one(
            g1_array([neg_a])[0],
            g2_array([proof.pi_b])[0],
            g1_array([proof.pi_c])[0],
            vk._alpha1,
            vk._g2,
            vk._ic,
            scalars,
        )
    )


def verify_files(vk_json, public_json, proof_json) -> bool:
    """`snarkjs groth16 verify` on files: verification_key.json, public.json, proof.json."""
    vk = VerifyingKey.from_json(load(vk_json, "verification key"), os.fspath(vk_json))
    public = parse_public(load(public_json, "public signals"), vk.n_public, os.fspath(public_json))
    proof = Proof.from_json(load(proof_json, "proof"), os.fspath(proof_json))
    return verify(vk, public, proof)


def verify_with_zkey(zkey, public, points) -> bool:
    """Verify a freshly made proof against the key it was made with (the prover's --verify):
    zkey a cuzk.formats ZKey, public the ints w[1..nPublic], points (piA, piB, piC) as
    affine ints (None = infinity)."""
    return verify(VerifyingKey.from_zkey(zkey), public, Proof.from_points(*points))
