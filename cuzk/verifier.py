"""Groth16 verification for snarkjs proofs: strict input checks, then one pairing product.

A proof (piA, piB, piC) of public signals s_1..s_n verifies under a key
(alpha1, beta2, gamma2, delta2, IC_0..IC_n) when

    e(piA, piB) = e(alpha1, beta2) * e(vk_x, gamma2) * e(piC, delta2),
    vk_x = IC_0 + sum_i s_i IC_i,

checked as the single product  e(-piA, piB) e(alpha1, beta2) e(vk_x, gamma2) e(piC, delta2) = 1
with one shared final exponentiation (cuzk.bn254.pairing).

Input that cannot be a Groth16 instance on BN254 is refused with an UnusableInput subclass
that names the file and the field: malformed JSON shapes, non-decimal numbers, coordinates not
below q, public signals not below r, points off the curve or (G2) outside the order-r
subgroup, a count of public signals or IC points that disagrees with nPublic, another
protocol or curve. snarkjs answers some of these with "invalid" instead (a signal >= r) or
does not check them (subgroup membership of piB); cuzk refuses them, so a `False` from
verify() always means a well-formed proof that fails the pairing equation.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from cuzk.bn254 import curve as C
from cuzk.bn254.constants import FQ_MODULUS, FR_MODULUS, G1_B, G2_B, int_to_limbs
from cuzk.bn254.pairing import (
    alphabeta_12_json,
    g1_array,
    g2_array,
    pairing_product_is_one,
)
from cuzk.formats.snarkjs_json import JsonNumber, load_json

__all__ = [
    "CountMismatch",
    "MalformedInput",
    "NotInField",
    "NotInSubgroup",
    "NotOnCurve",
    "Proof",
    "UnsupportedProtocol",
    "UnusableInput",
    "VerifyingKey",
    "alphabeta_12_json",
    "parse_public",
    "verify",
    "verify_files",
    "verify_with_zkey",
]

Q, R = FQ_MODULUS, FR_MODULUS


# --- errors --------------------------------------------------------------------------------

class UnusableInput(ValueError):
    """Input that is not a Groth16/BN254 instance at all (exit status 2 of `cuzk verify`).
    `where` names the file or field, `problem` says what is wrong."""

    def __init__(self, where: str, problem: str):
        self.where, self.problem = where, problem
        super().__init__(f"{where}: {problem}")


class MalformedInput(UnusableInput):
    """Not JSON, a missing key, a wrong shape, or a number that is not a decimal string."""


class UnsupportedProtocol(UnusableInput):
    """A protocol other than groth16 or a curve other than bn128 (BN254)."""


class NotInField(UnusableInput):
    """A coordinate not below q, or a public signal not below r."""


class NotOnCurve(UnusableInput):
    """A point that does not satisfy its curve equation."""


class NotInSubgroup(UnusableInput):
    """A G2 point on the twist but outside the order-r subgroup (G1 has cofactor 1)."""


class CountMismatch(UnusableInput):
    """The number of public signals or IC points disagrees with nPublic."""


# --- parsing snarkjs JSON --------------------------------------------------------------------

_DECIMAL = re.compile(r"[0-9]+\Z")  # ASCII digits only (str.isdigit also takes "²", "٣")
FIELD_DIGITS = 77  # q and r both have 77 decimal digits: a longer number is not below either


def _show(v, limit: int = 40) -> str:
    """A value for a one-line message: its repr, cut to `limit` characters."""
    text = f"the JSON number {v.text}" if isinstance(v, JsonNumber) else repr(v)
    if len(text) > limit:
        text = f"{text[:limit - 14]}... ({len(text)} chars)"
    return text


def _count(v, where: str) -> int:
    """A count (nPublic): a JSON number of at most 9 digits, or a Python int."""
    if isinstance(v, JsonNumber) and _DECIMAL.match(v.text) and len(v.text) <= 9:
        return int(v.text)
    if type(v) is int and v >= 0:
        return v
    raise MalformedInput(where, f"expected a count, got {_show(v)}")


def _int(v, where: str) -> int:
    """A snarkjs number: a decimal string of ASCII digits (or, from Python callers, a
    non-negative int). JSON numbers are refused (see JsonNumber); a string of more than 77
    significant digits is not below q or r and is refused without being converted."""
    if type(v) is str and _DECIMAL.match(v):
        digits = len(v.lstrip("0"))
        if digits > FIELD_DIGITS:
            raise NotInField(where, f"a {digits}-digit number is not below the field's prime")
        return int(v)
    if type(v) is int and v >= 0:
        return v
    if isinstance(v, JsonNumber):
        raise MalformedInput(where, f"expected a decimal string, got {_show(v)} (snarkjs "
                                    "reads JSON numbers as doubles, which lose precision)")
    raise MalformedInput(where, f"expected a decimal string, got {_show(v)}")


def _fq(v, where: str) -> int:
    x = _int(v, where)
    if x >= Q:
        raise NotInField(where, f"{x} is not below the base field prime q")
    return x


def _f2_mul(a, b):
    return ((a[0] * b[0] - a[1] * b[1]) % Q, (a[0] * b[1] + a[1] * b[0]) % Q)


def _f2_inv(a):
    t = pow((a[0] * a[0] + a[1] * a[1]) % Q, -1, Q)
    return (a[0] * t % Q, -a[1] * t % Q)


def _list(v, n: int, where: str, what: str):
    if not isinstance(v, list) or len(v) != n:
        raise MalformedInput(where, f"expected {what}")
    return v


def g1_from_json(v, where: str):
    """snarkjs's G1 [x, y, z] (Jacobian; z is "1" for affine, "0" for infinity) or [x, y]
    as affine (x, y) ints, None for infinity; checked to lie on the curve."""
    if not isinstance(v, list) or len(v) not in (2, 3):
        raise MalformedInput(where, "expected a G1 point [x, y, z] of decimal strings")
    x, y = _fq(v[0], f"{where}[0]"), _fq(v[1], f"{where}[1]")
    z = _fq(v[2], f"{where}[2]") if len(v) == 3 else 1
    if z == 0:
        return None
    if z != 1:
        zi = pow(z, -1, Q)
        x, y = x * zi * zi % Q, y * zi * zi * zi % Q
    if (y * y - x * x * x - G1_B) % Q:
        raise NotOnCurve(where, "point is not on the curve y^2 = x^3 + 3")
    return (x, y)


def g2_from_json(v, where: str):
    """snarkjs's G2 [[x0, x1], [y0, y1], [z0, z1]] (Jacobian over Fq2) as affine
    ((x0, x1), (y0, y1)) ints, None for infinity; checked to lie on the twist (the subgroup
    check runs later, compiled)."""
    if not isinstance(v, list) or len(v) not in (2, 3):
        raise MalformedInput(where, "expected a G2 point [[x0, x1], [y0, y1], [z0, z1]]")
    c = []
    for i, pair in enumerate(v):
        pair = _list(pair, 2, f"{where}[{i}]", "a pair of decimal strings")
        c.append((_fq(pair[0], f"{where}[{i}][0]"), _fq(pair[1], f"{where}[{i}][1]")))
    x, y = c[0], c[1]
    z = c[2] if len(c) == 3 else (1, 0)
    if z == (0, 0):
        return None
    if z != (1, 0):
        zi = _f2_inv(z)
        zi2 = _f2_mul(zi, zi)
        x, y = _f2_mul(x, zi2), _f2_mul(y, _f2_mul(zi2, zi))
    rhs = _f2_mul(_f2_mul(x, x), x)
    rhs = ((rhs[0] + G2_B[0]) % Q, (rhs[1] + G2_B[1]) % Q)
    if _f2_mul(y, y) != rhs:
        raise NotOnCurve(where, "point is not on the twist y^2 = x^3 + 3/(9+u)")
    return (x, y)


def _check_g1(p, where: str):
    """A G1 point given as ints (or None): in range and on the curve."""
    if p is None:
        return None
    return g1_from_json([p[0], p[1]], where)


def _check_g2(p, where: str):
    if p is None:
        return None
    return g2_from_json([list(p[0]), list(p[1])], where)


_CURVE_NAMES = {"BN128", "BN254", "ALTBN128"}  # snarkjs's getCurveFromName accepts these


def _check_protocol(obj: dict, where: str) -> None:
    protocol = obj.get("protocol", "groth16")
    if protocol != "groth16":
        raise UnsupportedProtocol(where, f"protocol {_show(protocol)} is not groth16")
    curve = obj.get("curve", "bn128")
    if not isinstance(curve, str) or re.sub(r"[^A-Z0-9]", "", curve.upper()) not in _CURVE_NAMES:
        raise UnsupportedProtocol(where, f"curve {_show(curve)} is not bn128 (BN254)")


def _object(obj, where: str, keys) -> dict:
    if not isinstance(obj, dict):
        raise MalformedInput(where, "expected a JSON object")
    for k in keys:
        if k not in obj:
            raise MalformedInput(where, f"missing {k!r}")
    return obj


def parse_public(obj, n_public: int | None = None, where: str = "public.json") -> list[int]:
    """public.json (a list of decimal strings) as ints, each checked to be below r, and
    (given n_public) checked to number n_public."""
    if not isinstance(obj, (list, tuple)):
        raise MalformedInput(where, "expected a JSON array of decimal strings")
    out = []
    for i, v in enumerate(obj):
        s = _int(v, f"{where}[{i}]")
        if s >= R:
            raise NotInField(f"{where}[{i}]", f"{s} is not below the scalar field prime r")
        out.append(s)
    if n_public is not None and len(out) != n_public:
        raise CountMismatch(where, f"{len(out)} public signals, but the key has nPublic = "
                                   f"{n_public}")
    return out


# --- the subgroup check and the pairing product (compiled) -----------------------------------

R_PLAIN = int_to_limbs(FR_MODULUS)


@njit(cache=True, nogil=True)
def g2_in_subgroup(q):
    """[r]Q = O for an affine G2 point given as a (2, 2, 4) Montgomery array on the twist
    (the twist's group has order r * c2 with c2 > 1, so this is a real check)."""
    x = ((q[0, 0, 0], q[0, 0, 1], q[0, 0, 2], q[0, 0, 3]),
         (q[0, 1, 0], q[0, 1, 1], q[0, 1, 2], q[0, 1, 3]))
    y = ((q[1, 0, 0], q[1, 0, 1], q[1, 0, 2], q[1, 0, 3]),
         (q[1, 1, 0], q[1, 1, 1], q[1, 1, 2], q[1, 1, 3]))
    Qj = C.g2_from_affine((x, y))
    return C.g2_is_inf(C.g2_mul(Qj, R_PLAIN))


@njit(cache=True, nogil=True)
def groth16_product_is_one(neg_a, b, c, alpha1, vk_g2, ic, scalars):
    """e(-A, B) e(alpha1, beta2) e(vk_x, gamma2) e(C, delta2) == 1 with
    vk_x = IC_0 + sum_i s_i IC_i. G1 inputs (2, 4), ic (n+1, 2, 4): affine Montgomery limbs;
    b (2, 2, 4); vk_g2 (3, 2, 2, 4) = beta2, gamma2, delta2; scalars (n, 4) plain limbs."""
    acc = C.g1_from_affine(((ic[0, 0, 0], ic[0, 0, 1], ic[0, 0, 2], ic[0, 0, 3]),
                            (ic[0, 1, 0], ic[0, 1, 1], ic[0, 1, 2], ic[0, 1, 3])))
    for i in range(scalars.shape[0]):
        p = C.g1_from_affine(((ic[i + 1, 0, 0], ic[i + 1, 0, 1], ic[i + 1, 0, 2], ic[i + 1, 0, 3]),
                              (ic[i + 1, 1, 0], ic[i + 1, 1, 1], ic[i + 1, 1, 2], ic[i + 1, 1, 3])))
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
    def from_points(cls, alpha1, beta2, gamma2, delta2, ic, n_public=None,
                    where: str = "verifying key") -> VerifyingKey:
        """From affine int points; checks range, curve, subgroup and counts."""
        alpha1 = _check_g1(alpha1, f"{where}: vk_alpha_1")
        g2 = [_check_g2(p, f"{where}: {name}") for p, name in
              ((beta2, "vk_beta_2"), (gamma2, "vk_gamma_2"), (delta2, "vk_delta_2"))]
        for p, name in zip(g2, ("vk_beta_2", "vk_gamma_2", "vk_delta_2"), strict=True):
            _require_subgroup(p, f"{where}: {name}")
        ic = tuple(_check_g1(p, f"{where}: IC[{i}]") for i, p in enumerate(ic))
        if n_public is None:
            n_public = len(ic) - 1
        if len(ic) != n_public + 1:
            raise CountMismatch(where, f"IC has {len(ic)} points but nPublic = {n_public} "
                                       f"needs {n_public + 1}")
        return cls(n_public, alpha1, g2[0], g2[1], g2[2], ic,
                   g1_array([alpha1])[0], g2_array(g2), g1_array(ic))

    @classmethod
    def from_json(cls, obj, where: str = "verification_key.json") -> VerifyingKey:
        """From snarkjs's verification_key.json object (vk_alphabeta_12 is not needed)."""
        _object(obj, where, ("nPublic", "vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2",
                             "IC"))
        _check_protocol(obj, where)
        n_public = _count(obj["nPublic"], f"{where}: nPublic")
        if not isinstance(obj["IC"], list) or not obj["IC"]:
            raise MalformedInput(f"{where}: IC", "expected a non-empty list of G1 points")
        return cls.from_points(
            g1_from_json(obj["vk_alpha_1"], f"{where}: vk_alpha_1"),
            g2_from_json(obj["vk_beta_2"], f"{where}: vk_beta_2"),
            g2_from_json(obj["vk_gamma_2"], f"{where}: vk_gamma_2"),
            g2_from_json(obj["vk_delta_2"], f"{where}: vk_delta_2"),
            [g1_from_json(p, f"{where}: IC[{i}]") for i, p in enumerate(obj["IC"])],
            n_public, where)

    @classmethod
    def from_zkey(cls, zkey) -> VerifyingKey:
        """From a cuzk.formats ZKey (its header points and IC section)."""
        from cuzk.formats.limbs import g1_from_limbs, g2_from_limbs

        return cls.from_points(
            g1_from_limbs(zkey.alpha1), g2_from_limbs(zkey.beta2), g2_from_limbs(zkey.gamma2),
            g2_from_limbs(zkey.delta2), [g1_from_limbs(p) for p in zkey.ic],
            int(zkey.n_public), os.fspath(getattr(zkey, "path", "zkey")))

    def alphabeta_12_json(self) -> list:
        """vk_alphabeta_12 for this key, in snarkjs's layout."""
        return alphabeta_12_json(self.alpha1, self.beta2)


@dataclass(frozen=True)
class Proof:
    """A checked Groth16 proof: affine int points (None = infinity)."""

    pi_a: tuple | None
    pi_b: tuple | None
    pi_c: tuple | None

    @classmethod
    def from_points(cls, pi_a, pi_b, pi_c, where: str = "proof") -> Proof:
        a = _check_g1(pi_a, f"{where}: pi_a")
        b = _check_g2(pi_b, f"{where}: pi_b")
        _require_subgroup(b, f"{where}: pi_b")
        c = _check_g1(pi_c, f"{where}: pi_c")
        return cls(a, b, c)

    @classmethod
    def from_json(cls, obj, where: str = "proof.json") -> Proof:
        """From snarkjs's proof.json object."""
        _object(obj, where, ("pi_a", "pi_b", "pi_c"))
        _check_protocol(obj, where)
        return cls.from_points(g1_from_json(obj["pi_a"], f"{where}: pi_a"),
                               g2_from_json(obj["pi_b"], f"{where}: pi_b"),
                               g1_from_json(obj["pi_c"], f"{where}: pi_c"), where)


# --- verification --------------------------------------------------------------------------

def verify(vk, public_signals, proof) -> bool:
    """True iff `proof` proves `public_signals` under `vk`; False if the pairing check fails.

    vk: a VerifyingKey or a verification_key.json object; public_signals: a list of ints or
    decimal strings (public.json); proof: a Proof or a proof.json object. Raises an
    UnusableInput subclass for input that is not a Groth16/BN254 instance."""
    if not isinstance(vk, VerifyingKey):
        vk = VerifyingKey.from_json(vk)
    if not isinstance(proof, Proof):
        proof = Proof.from_json(proof)
    signals = parse_public(public_signals, vk.n_public)
    a = proof.pi_a
    neg_a = None if a is None else (a[0], (Q - a[1]) % Q)
    scalars = np.frombuffer(b"".join(s.to_bytes(32, "little") for s in signals),
                            dtype=np.uint64).reshape(len(signals), 4)
    return bool(groth16_product_is_one(
        g1_array([neg_a])[0], g2_array([proof.pi_b])[0], g1_array([proof.pi_c])[0],
        vk._alpha1, vk._g2, vk._ic, scalars))


def _load_json(path, what: str):
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            return load_json(f)
    except OSError as e:
        raise MalformedInput(path, f"cannot read {what}: {e.strerror or e}") from None
    except RecursionError:
        raise MalformedInput(path, f"{what} is nested too deeply to be one") from None
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError is a ValueError
        raise MalformedInput(path, f"{what} is not valid JSON ({_show(str(e), 120)})") from None


def verify_files(vk_json, public_json, proof_json) -> bool:
    """`snarkjs groth16 verify` on files: verification_key.json, public.json, proof.json."""
    vk = VerifyingKey.from_json(_load_json(vk_json, "verification key"), os.fspath(vk_json))
    public = parse_public(_load_json(public_json, "public signals"), vk.n_public,
                          os.fspath(public_json))
    proof = Proof.from_json(_load_json(proof_json, "proof"), os.fspath(proof_json))
    return verify(vk, public, proof)


def verify_with_zkey(zkey, public, points) -> bool:
    """Verify a freshly made proof against the key it was made with (the prover's --verify):
    zkey a cuzk.formats ZKey, public the ints w[1..nPublic], points (piA, piB, piC) as
    affine ints (None = infinity)."""
    return verify(VerifyingKey.from_zkey(zkey), public, Proof.from_points(*points))
