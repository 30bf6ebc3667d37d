"""snarkjs's JSON files: proof.json, public.json, verification_key.json (read and write).

Shapes (decimal strings, affine points with a trailing "1" coordinate):
  proof.json   {"pi_a": [x, y, "1"], "pi_b": [[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]],
                "pi_c": [x, y, "1"], "protocol": "groth16", "curve": "bn128"}
  public.json  [w[1], ..., w[nPublic]]
  verification_key.json  {"protocol", "curve", "nPublic", "vk_alpha_1", "vk_beta_2",
                "vk_gamma_2", "vk_delta_2", "vk_alphabeta_12", "IC"}
Files are written as snarkjs writes them (one-space indentation, no trailing newline),
atomically. Points here are Python ints in plain form: G1 = (x, y), G2 = ((x.c0, x.c1),
(y.c0, y.c1)), None for the point at infinity.
"""

from __future__ import annotations

import itertools
import json
import os
import re

from cuzk.formats.atomic import atomic_write_text
from cuzk.formats.errors import BadJson
from cuzk.formats.limbs import BN254_Q, BN254_R, g1_from_limbs, g2_from_limbs

CURVE_NAME = "bn128"
BN254_X = 4965661367192848881  # the BN parameter x: q = 36x^4 + 36x^3 + 24x^2 + 6x + 1
# snarkjs's pairing is the textbook reduced optimal ate pairing to this power (see alphabeta_12).
SNARKJS_PAIRING_EXPONENT = 2 * BN254_X * (6 * BN254_X**2 + 3 * BN254_X + 1)
PROTOCOL = "groth16"


def dumps(obj) -> str:
    """JSON text as snarkjs writes it (bfj, space 1): one-space indent, no final newline."""
    return json.dumps(obj, indent=1)


def _write(path, obj) -> None:
    atomic_write_text(path, dumps(obj))


# --- points <-> JSON -------------------------------------------------------------------


def g1_to_json(p) -> list[str]:
    """Affine G1 (x, y) as snarkjs's projective triple; infinity is ["0", "1", "0"]."""
    if p is None:
        return ["0", "1", "0"]
    return [str(p[0]), str(p[1]), "1"]


def g2_to_json(p) -> list[list[str]]:
    """Affine G2 ((x0, x1), (y0, y1)) as snarkjs's triple of Fq2 pairs."""
    if p is None:
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    (x0, x1), (y0, y1) = p
    return [[str(x0), str(x1)], [str(y0), str(y1)], ["1", "0"]]


_DECIMAL = re.compile(r"[0-9]+\Z")  # ASCII digits only (str.isdigit also takes "²", "٣")
FIELD_DIGITS = 77  # q and r both have 77 decimal digits: a longer number is not below either


class JsonNumber:
    """A number written as a JSON number (not a string), kept as its text by `load_json`.
    snarkjs reads JSON numbers as doubles, which round above 2^53, so a field element written
    that way would be read one way by snarkjs and another by cuzk: refused as bad input."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self):
        return f"the JSON number {self.text}"


MAX_DEPTH = 64  # snarkjs's files nest 4 deep (vk_alphabeta_12 inside the key's object)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth(text: str) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings aside)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(itertools.accumulate(1 if c in "[{" else -1 for c in brackets), default=0)


def load_json(f):
    """json.load with every JSON number kept as its text (JsonNumber), never converted: a
    field element written as a number can be refused, and a 100,000-digit number does not
    reach Python's int conversion limit. Raises ValueError (not JSON) or RecursionError
    (nested deeper than MAX_DEPTH: checked before parsing, because json's C parser recurses
    on the C stack and overflows it when a library has raised the recursion limit — py_ecc
    sets it to 100,000 — which kills the process instead of raising)."""
    text = f.read()
    if json_depth(text) > MAX_DEPTH:
        raise RecursionError(f"JSON nested deeper than {MAX_DEPTH} levels")
    return json.loads(text, parse_int=JsonNumber, parse_float=JsonNumber,
                      parse_constant=JsonNumber)


def _short(v, limit: int = 40) -> str:
    text = repr(v)
    return text if len(text) <= limit else f"{text[:limit - 14]}... ({len(text)} chars)"


def _decimal(path, where, s, prime: int, name: str) -> int:
    """A decimal string of ASCII digits below `prime`; a JSON number is refused."""
    if type(s) is not str or not _DECIMAL.match(s):
        extra = " (snarkjs reads JSON numbers as doubles)" if isinstance(s, JsonNumber) else ""
        raise BadJson(path, f"{where}: expected a decimal string, got {_short(s)}{extra}")
    if len(s.lstrip("0")) > FIELD_DIGITS:
        raise BadJson(path, f"{where}: a {len(s.lstrip('0'))}-digit number is not below the "
                            f"{name}")
    v = int(s)
    if v >= prime:
        raise BadJson(path, f"{where}: {s} is not below the {name}")
    return v


def _fq(path, where, s) -> int:
    return _decimal(path, where, s, BN254_Q, "base field prime q")


def _fq2(path, where, pair) -> tuple[int, int]:
    if not isinstance(pair, list) or len(pair) != 2:
        raise BadJson(path, f"{where}: expected a pair of decimal strings")
    return _fq(path, f"{where}[0]", pair[0]), _fq(path, f"{where}[1]", pair[1])


def g1_from_json(obj, path=None, where="point"):
    """snarkjs's [x, y, z] (Jacobian, z usually "1") as affine (x, y) ints, None for infinity."""
    if not isinstance(obj, list) or len(obj) not in (2, 3):
        raise BadJson(path, f"{where}: expected a G1 point [x, y, z]")
    x, y = _fq(path, f"{where}[0]", obj[0]), _fq(path, f"{where}[1]", obj[1])
    z = _fq(path, f"{where}[2]", obj[2]) if len(obj) == 3 else 1
    if z == 0:
        return None
    zi = pow(z, -1, BN254_Q)
    zi2 = zi * zi % BN254_Q
    return x * zi2 % BN254_Q, y * zi2 * zi % BN254_Q


def _fq2_mul(a, b):
    return (a[0] * b[0] - a[1] * b[1]) % BN254_Q, (a[0] * b[1] + a[1] * b[0]) % BN254_Q


def _fq2_inv(a):
    t = pow((a[0] * a[0] + a[1] * a[1]) % BN254_Q, -1, BN254_Q)
    return a[0] * t % BN254_Q, -a[1] * t % BN254_Q


def g2_from_json(obj, path=None, where="point"):
    """snarkjs's [[x0,x1],[y0,y1],[z0,z1]] as affine ((x0, x1), (y0, y1)), None for infinity."""
    if not isinstance(obj, list) or len(obj) not in (2, 3):
        raise BadJson(path, f"{where}: expected a G2 point [[x0,x1],[y0,y1],[z0,z1]]")
    x, y = _fq2(path, f"{where}[0]", obj[0]), _fq2(path, f"{where}[1]", obj[1])
    z = _fq2(path, f"{where}[2]", obj[2]) if len(obj) == 3 else (1, 0)
    if z == (0, 0):
        return None
    if z == (1, 0):
        return x, y
    zi = _fq2_inv(z)
    zi2 = _fq2_mul(zi, zi)
    return _fq2_mul(x, zi2), _fq2_mul(y, _fq2_mul(zi2, zi))


# --- proof.json and public.json --------------------------------------------------------


def proof_to_json(pi_a, pi_b, pi_c) -> dict:
    """A proof (affine int points) as snarkjs's proof.json object."""
    return {
        "pi_a": g1_to_json(pi_a),
        "pi_b": g2_to_json(pi_b),
        "pi_c": g1_to_json(pi_c),
        "protocol": PROTOCOL,
        "curve": CURVE_NAME,
    }


def write_proof(path: os.PathLike | str, pi_a, pi_b, pi_c) -> None:
    """Write proof.json atomically (points as affine ints)."""
    _write(path, proof_to_json(pi_a, pi_b, pi_c))


def _load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return load_json(f)
    except UnicodeDecodeError:
        raise BadJson(path, "not a text file") from None
    except RecursionError:
        raise BadJson(path, "JSON nested too deeply") from None
    except ValueError as e:  # json.JSONDecodeError
        raise BadJson(path, f"not valid JSON ({_short(str(e), 120)})") from None


def read_proof(path: os.PathLike | str):
    """proof.json as (pi_a, pi_b, pi_c) affine int points; BadJson if malformed."""
    path = os.fspath(path)
    obj = _load(path)
    if not isinstance(obj, dict):
        raise BadJson(path, "expected a JSON object with pi_a, pi_b, pi_c")
    for key in ("pi_a", "pi_b", "pi_c"):
        if key not in obj:
            raise BadJson(path, f"missing {key!r}")
    if obj.get("protocol", PROTOCOL) != PROTOCOL:
        raise BadJson(path, f"protocol {_short(obj.get('protocol'))} is not groth16")
    if obj.get("curve", CURVE_NAME) != CURVE_NAME:
        raise BadJson(path, f"curve {_short(obj.get('curve'))} is not bn128")
    return (
        g1_from_json(obj["pi_a"], path, "pi_a"),
        g2_from_json(obj["pi_b"], path, "pi_b"),
        g1_from_json(obj["pi_c"], path, "pi_c"),
    )


def public_to_json(signals) -> list[str]:
    return [str(int(s)) for s in signals]


def write_public(path: os.PathLike | str, signals) -> None:
    """Write public.json atomically: the public signals w[1..nPublic] as decimal strings."""
    _write(path, public_to_json(signals))


def read_public(path: os.PathLike | str) -> list[int]:
    """public.json as a list of ints; BadJson if malformed or a value is not below r."""
    path = os.fspath(path)
    obj = _load(path)
    if not isinstance(obj, list):
        raise BadJson(path, "expected a JSON array of decimal strings")
    return [_decimal(path, f"signal {i}", s, BN254_R, "scalar field prime r")
            for i, s in enumerate(obj)]


# --- verification_key.json -------------------------------------------------------------


def fq12_from_py_ecc(f) -> list:
    """A py_ecc (optimized_)bn128 FQ12 as snarkjs's tower coefficients, [[[c, c] x3] x2].

    py_ecc writes F_q12 = F_q[w]/(w^12 - 18 w^6 + 82); snarkjs (ffjavascript) the tower
    F_q2 = F_q[u]/(u^2 + 1), F_q6 = F_q2[v]/(v^3 - (9 + u)), F_q12 = F_q6[w]/(w^2 - v).
    With v = w^2 and u = w^6 - 9, the tower element sum_j (a_j + b_j w) v^j, a_j = x + y u,
    puts x - 9y on w^(2j) and y on w^(2j+6) (b_j likewise on the odd powers), so
    y = c[2j+6] and x = c[2j] + 9 c[2j+6].
    """
    c = [int(getattr(x, "n", x)) % BN254_Q for x in f.coeffs]
    out = []
    for half in (0, 1):  # a (even powers of w), b (odd powers)
        fq6 = []
        for j in range(3):
            lo, hi = c[2 * j + half], c[2 * j + half + 6]
            fq6.append(((lo + 9 * hi) % BN254_Q, hi))
        out.append(fq6)
    return out


def fq12_to_json(tower) -> list:
    """snarkjs tower coefficients [[[c0, c1] x3] x2] (ints) as vk_alphabeta_12's JSON.

    The one place that knows the Fq12 layout of verification_key.json.
    """
    return [[[str(int(c0)), str(int(c1))] for (c0, c1) in fq6] for fq6 in tower]


def alphabeta_12(alpha1, beta2) -> list:
    """e(alpha1, beta2) as snarkjs tower coefficients, equal to snarkjs's own value.

    snarkjs (wasmcurves) uses the Fuentes-Castaneda et al. hard part of the final
    exponentiation, which yields the optimal ate pairing raised to
    SNARKJS_PAIRING_EXPONENT = 2x(6x^2 + 3x + 1) (x = BN254's parameter) relative to the
    textbook (q^12 - 1)/r exponent; cuzk's pairing (cuzk.bn254.pairing) uses the same chain,
    so this matches snarkjs's file exactly (the formats tests compare them byte for byte).
    """
    from cuzk.bn254.pairing import pairing

    return pairing(tuple(alpha1), tuple(beta2))


def verification_key(zkey, alphabeta=None) -> dict:
    """The verification_key.json object of a ZKey, as `snarkjs zkey export verificationkey`.

    `alphabeta` (tower coefficients of e(alpha1, beta2)) is computed when not given.
    """
    alpha1 = g1_from_limbs(zkey.alpha1)
    beta2 = g2_from_limbs(zkey.beta2)
    if alphabeta is None:
        alphabeta = alphabeta_12(alpha1, beta2)
    return {
        "protocol": PROTOCOL,
        "curve": CURVE_NAME,
        "nPublic": int(zkey.n_public),
        "vk_alpha_1": g1_to_json(alpha1),
        "vk_beta_2": g2_to_json(beta2),
        "vk_gamma_2": g2_to_json(g2_from_limbs(zkey.gamma2)),
        "vk_delta_2": g2_to_json(g2_from_limbs(zkey.delta2)),
        "vk_alphabeta_12": fq12_to_json(alphabeta),
        "IC": [g1_to_json(g1_from_limbs(p)) for p in zkey.ic],
    }


def write_verification_key(path: os.PathLike | str, vk: dict) -> None:
    """Write verification_key.json atomically."""
    _write(path, vk)


class VerificationKey:
    """verification_key.json parsed: alpha1 (G1), beta2, gamma2, delta2 (G2), ic (list of G1),
    n_public, and alphabeta (tower coefficients, as in the file; not checked)."""

    def __init__(self, path: os.PathLike | str):
        self.path = path = os.fspath(path)
        obj = _load(path)
        if not isinstance(obj, dict):
            raise BadJson(path, "expected a JSON object")
        for key in ("vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "IC"):
            if key not in obj:
                raise BadJson(path, f"missing {key!r}")
        if obj.get("protocol", PROTOCOL) != PROTOCOL:
            raise BadJson(path, f"protocol {_short(obj.get('protocol'))} is not groth16")
        if obj.get("curve", CURVE_NAME) != CURVE_NAME:
            raise BadJson(path, f"curve {_short(obj.get('curve'))} is not bn128")
        self.alpha1 = g1_from_json(obj["vk_alpha_1"], path, "vk_alpha_1")
        self.beta2 = g2_from_json(obj["vk_beta_2"], path, "vk_beta_2")
        self.gamma2 = g2_from_json(obj["vk_gamma_2"], path, "vk_gamma_2")
        self.delta2 = g2_from_json(obj["vk_delta_2"], path, "vk_delta_2")
        if not isinstance(obj["IC"], list) or not obj["IC"]:
            raise BadJson(path, "IC: expected a non-empty list of G1 points")
        self.ic = [g1_from_json(p, path, f"IC[{i}]") for i, p in enumerate(obj["IC"])]
        n_public = obj.get("nPublic", JsonNumber(str(len(self.ic) - 1)))
        if not (isinstance(n_public, JsonNumber) and _DECIMAL.match(n_public.text)
                and len(n_public.text) <= 9):
            raise BadJson(path, f"nPublic: expected a count, got {_short(n_public)}")
        self.n_public = int(n_public.text)
        if self.n_public != len(self.ic) - 1:
            raise BadJson(path, f"nPublic = {self.n_public} but IC has {len(self.ic)} points")
        ab = obj.get("vk_alphabeta_12")
        self.alphabeta = None
        if ab is not None:
            try:
                self.alphabeta = [[[_fq(path, "vk_alphabeta_12", c0),
                                    _fq(path, "vk_alphabeta_12", c1)] for c0, c1 in fq6]
                                  for fq6 in ab]
            except (TypeError, ValueError):
                raise BadJson(
                    path, "vk_alphabeta_12: expected [[[c0, c1] x3] x2] decimal strings"
                ) from None


def read_verification_key(path: os.PathLike | str) -> VerificationKey:
    return VerificationKey(path)
