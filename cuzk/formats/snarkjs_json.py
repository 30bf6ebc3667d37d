"""snarkjs's JSON files: proof.json, public.json, verification_key.json (read and write).

Shapes (decimal strings, affine points with a trailing "1" coordinate):
  proof.json   {"pi_a": [x, y, "1"], "pi_b": [[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]],
                "pi_c": [x, y, "1"], "protocol": "groth16", "curve": "bn128"}
  public.json  [w[1], ..., w[nPublic]]
  verification_key.json  {"protocol", "curve", "nPublic", "vk_alpha_1", "vk_beta_2",
                "vk_gamma_2", "vk_delta_2", "vk_alphabeta_12", "IC"}
"curve" is "bn128" (BN254) or "bls12381" (BLS12-381: coordinates below its 381-bit q, up to
115 digits; same shapes). Files are written as snarkjs writes them (one-space indentation,
no trailing newline), atomically. Points here are Python ints in plain form: G1 = (x, y),
G2 = ((x.c0, x.c1), (y.c0, y.c1)), None for the point at infinity.

This is the one reader of these files (the verifier, cuzk.groth16.verifier, reads through it).
The readers take `curves_allowed` (snarkjs names of the curves accepted; BN254 only unless
given: the verifier is BN254's) and read the points on the curve the file names (a file
without "curve" is bn128). Input that cannot be a Groth16 instance on its curve is refused
with a FormatError that names the file and the field: BadJson (not JSON, a missing key, a
wrong shape, a number that is not a decimal string), NotInField (a coordinate not below q, a
public signal not below r), NotOnCurve, UnsupportedProtocol (another protocol, or a curve
not allowed), CountMismatch (public signals or IC points against nPublic). The G2 subgroup
check needs the compiled curve code and is the verifier's.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re

from cuzk.arith.constants import FQ_MODULUS, FR_MODULUS
from cuzk.formats import curve as curves
from cuzk.formats.atomic import atomic_write_text, write_outputs
from cuzk.formats.errors import BadJson, CountMismatch, NotInField, NotOnCurve, UnsupportedProtocol
from cuzk.formats.json_limits import (
    MAX_PROOF_BYTES,
    MAX_PUBLIC_BYTES,
    MAX_VK_BYTES,
    TooLarge,
    read_limited,
)

CURVE_NAME = "bn128"
BN254_X = 4965661367192848881  # the BN parameter x: q = 36x^4 + 36x^3 + 24x^2 + 6x + 1
# snarkjs's pairing is the textbook reduced optimal ate pairing to this power (see alphabeta_12).
SNARKJS_PAIRING_EXPONENT = 2 * BN254_X * (6 * BN254_X**2 + 3 * BN254_X + 1)
PROTOCOL = "groth16"
Q, R = FQ_MODULUS, FR_MODULUS
BN254 = curves.BN254
BN254_ONLY = curves.BN254_ONLY


def dumps(obj) -> str:
    """JSON text as snarkjs writes it (bfj, space 1): one-space indent, no final newline."""
    return json.dumps(obj, indent=1)


def _write(path, obj) -> None:
    atomic_write_text(path, dumps(obj))


# --- points -> JSON -------------------------------------------------------------------------


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


# --- JSON text -> Python objects --------------------------------------------------------------


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
    return json.loads(text, parse_int=JsonNumber, parse_float=JsonNumber, parse_constant=JsonNumber)


# The most read of each file (cuzk.formats.json_limits), by the `what` of load().
MAX_BYTES = {
    "proof": MAX_PROOF_BYTES,
    "public signals": MAX_PUBLIC_BYTES,
    "verification key": MAX_VK_BYTES,
}


def load(path, what: str):
    """The JSON object of the file `path` (`what` names it in messages: "proof", ...);
    BadJson when it cannot be read, is larger than MAX_BYTES[what] (read no further) or is
    not JSON."""
    path = os.fspath(path)
    try:
        data = read_limited(path, MAX_BYTES.get(what, MAX_VK_BYTES))
        return load_json(io.StringIO(data.decode("utf-8")))
    except OSError as e:
        raise BadJson(path, f"cannot read {what}: {e.strerror or e}") from None
    except TooLarge as e:
        raise BadJson(path, f"too large for {what} ({e})") from None
    except RecursionError:
        raise BadJson(path, f"{what} is nested too deeply to be one") from None
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError is a ValueError
        raise BadJson(path, f"{what} is not valid JSON ({show(str(e), 120)})") from None


# --- JSON values -> checked ints and points ---------------------------------------------------
# `where` names the file and the field ("proof.json: pi_a[0]"); it starts every message.

_DECIMAL = re.compile(r"[0-9]+\Z")  # ASCII digits only (str.isdigit also takes "²", "٣")
FIELD_DIGITS = 77  # BN254's q and r have 77 decimal digits: a longer number is not below either


def show(v, limit: int = 40) -> str:
    """A value for a one-line message: its repr, cut to `limit` characters."""
    text = repr(v)
    if len(text) > limit:
        text = f"{text[: limit - 14]}... ({len(text)} chars)"
    return text


def parse_count(v, where: str) -> int:
    """A count (nPublic): a JSON number of at most 9 digits, or a Python int."""
    if isinstance(v, JsonNumber) and _DECIMAL.match(v.text) and len(v.text) <= 9:
        return int(v.text)
    if type(v) is int and v >= 0:
        return v
    raise BadJson(where, f"expected a count, got {show(v)}")


def parse_int(v, where: str, max_digits: int = FIELD_DIGITS) -> int:
    """A snarkjs number: a decimal string of ASCII digits (or, from Python callers, a
    non-negative int). JSON numbers are refused (see JsonNumber); a string of more than
    `max_digits` significant digits (77: BN254's q and r) is not below the field's prime and
    is refused without being converted."""
    if type(v) is str and _DECIMAL.match(v):
        digits = len(v.lstrip("0"))
        if digits > max_digits:
            raise NotInField(where, f"a {digits}-digit number is not below the field's prime")
        return int(v)
    if type(v) is int and v >= 0:
        return v
    if isinstance(v, JsonNumber):
        raise BadJson(
            where,
            f"expected a decimal string, got {show(v)} (snarkjs reads JSON "
            "numbers as doubles, which lose precision)",
        )
    raise BadJson(where, f"expected a decimal string, got {show(v)}")


def parse_fq(v, where: str, curve=BN254) -> int:
    """A coordinate: a snarkjs number below the curve's q."""
    x = parse_int(v, where, curve.q_digits)
    if x >= curve.q:
        raise NotInField(where, f"{x} is not below the base field prime q")
    return x


def _list(v, n: int, where: str, what: str):
    if not isinstance(v, list) or len(v) != n:
        raise BadJson(where, f"expected {what}")
    return v


def g1_from_json(v, where: str, curve=BN254):
    """snarkjs's G1 [x, y, z] (Jacobian; z is "1" for affine, "0" for infinity) or [x, y]
    as affine (x, y) ints, None for infinity; checked to lie on the curve."""
    if not isinstance(v, list) or len(v) not in (2, 3):
        raise BadJson(where, "expected a G1 point [x, y, z] of decimal strings")
    q = curve.q
    x, y = parse_fq(v[0], f"{where}[0]", curve), parse_fq(v[1], f"{where}[1]", curve)
    z = parse_fq(v[2], f"{where}[2]", curve) if len(v) == 3 else 1
    if z == 0:
        return None
    if z != 1:
        zi = pow(z, -1, q)
        x, y = x * zi * zi % q, y * zi * zi * zi % q
    if (y * y - x * x * x - curve.g1_b) % q:
        raise NotOnCurve(where, f"point is not on the curve y^2 = x^3 + {curve.g1_b}")
    return (x, y)


def ic_from_json(v, where: str, last: bool, curve=BN254):
    """A verification key's IC[i], i >= 1, read as snarkjs 0.7.6 reads it: groth16_verify
    copies each point that ffjavascript's G1.fromObject makes into a buffer of affine (x, y)
    slots for multiExpAffine. fromObject makes z = 0 the point at infinity and z = 1 (or no z)
    an affine point, but keeps any other z as a Jacobian triple, whose x and y then land in
    the slot as they are and whose z spills into the next slot, overwritten by the next point:
    snarkjs reads [x, y, z] as the affine (x, y), z ignored. For the last point, IC[nPublic],
    the spill runs past the buffer and snarkjs fails ("RangeError: offset is out of bounds")
    without a verdict; cuzk refuses it (BadJson). IC[0] and the other points of the key and
    the proof are Jacobian to both (g1_from_json)."""
    if isinstance(v, list) and len(v) == 3:
        z = parse_fq(v[2], f"{where}[2]", curve)
        if z == 0:
            return None
        if z != 1 and last:
            raise BadJson(
                f"{where}[2]",
                f"z = {show(v[2])}: the last IC point must have z = 1 or 0 "
                "(snarkjs fails on any other)",
            )
        v = v[:2]  # snarkjs ignores z here
    return g1_from_json(v, where, curve)


def g2_from_json(v, where: str, curve=BN254):
    """snarkjs's G2 [[x0, x1], [y0, y1], [z0, z1]] (Jacobian over Fq2) as affine
    ((x0, x1), (y0, y1)) ints, None for infinity; checked to lie on the twist (not checked to
    lie in the order-r subgroup: that is the verifier's, compiled)."""
    if not isinstance(v, list) or len(v) not in (2, 3):
        raise BadJson(where, "expected a G2 point [[x0, x1], [y0, y1], [z0, z1]]")
    c = []
    for i, pair in enumerate(v):
        pair = _list(pair, 2, f"{where}[{i}]", "a pair of decimal strings")
        c.append(
            (
                parse_fq(pair[0], f"{where}[{i}][0]", curve),
                parse_fq(pair[1], f"{where}[{i}][1]", curve),
            )
        )
    x, y = c[0], c[1]
    z = c[2] if len(c) == 3 else (1, 0)
    if z == (0, 0):
        return None
    mul, q, b = curve.fq2_mul, curve.q, curve.g2_b
    if z != (1, 0):
        zi = curve.fq2_inv(z)
        zi2 = mul(zi, zi)
        x, y = mul(x, zi2), mul(y, mul(zi2, zi))
    rhs = mul(mul(x, x), x)
    rhs = ((rhs[0] + b[0]) % q, (rhs[1] + b[1]) % q)
    if mul(y, y) != rhs:
        raise NotOnCurve(where, f"point is not on the twist y^2 = x^3 + {curve.g2_b_text()}")
    return (x, y)


def check_g1(p, where: str, curve=BN254):
    """A G1 point given as ints (or None): in range and on the curve."""
    return None if p is None else g1_from_json([p[0], p[1]], where, curve)


def check_g2(p, where: str, curve=BN254):
    """A G2 point given as ints (or None): in range and on the twist."""
    return None if p is None else g2_from_json([list(p[0]), list(p[1])], where, curve)


def check_protocol(obj: dict, where: str, curves_allowed=BN254_ONLY):
    """The Curve the object names (bn128 when it names none), after UnsupportedProtocol
    unless its protocol is groth16 (or absent) and its curve one of `curves_allowed`
    (snarkjs names; None: any curve cuzk knows). snarkjs reads the curve's name with case and
    punctuation folded ("BN-254", "bls12_381"), and so does this."""
    protocol = obj.get("protocol", PROTOCOL)
    if protocol != PROTOCOL:
        raise UnsupportedProtocol(where, f"protocol {show(protocol)} is not groth16")
    return named_curve(obj, where, curves_allowed)


def named_curve(obj: dict, where: str, curves_allowed=None):
    """The Curve the object's "curve" names (bn128 when it names none), after
    UnsupportedProtocol unless it is one of `curves_allowed` (snarkjs names; None: any curve
    cuzk knows): for the files of every proof system."""
    name = obj.get("curve", CURVE_NAME)
    curve = curves.by_json_name(name)
    allowed = curves.CURVES if curves_allowed is None else curves_allowed
    if curve is None or curve.name not in allowed:
        names = " or ".join(str(curves.CURVES[a]) for a in allowed)
        raise UnsupportedProtocol(where, f"curve {show(name)} is not {names}")
    return curve


def require_object(obj, where: str, keys) -> dict:
    """`obj` if it is a JSON object with every key of `keys`, else BadJson."""
    if not isinstance(obj, dict):
        raise BadJson(where, "expected a JSON object")
    for k in keys:
        if k not in obj:
            raise BadJson(where, f"missing {k!r}")
    return obj


def parse_public(
    obj, n_public: int | None = None, where: str = "public.json", curve=BN254
) -> list[int]:
    """public.json (a list of decimal strings) as ints, each checked to be below the curve's
    r, and (given n_public) checked to number n_public."""
    if not isinstance(obj, (list, tuple)):
        raise BadJson(where, "expected a JSON array of decimal strings")
    out = []
    for i, v in enumerate(obj):
        s = parse_int(v, f"{where}[{i}]", curve.r_digits)
        if s >= curve.r:
            raise NotInField(f"{where}[{i}]", f"{s} is not below the scalar field prime r")
        out.append(s)
    if n_public is not None and len(out) != n_public:
        raise CountMismatch(
            where, f"{len(out)} public signals, but the key has nPublic = {n_public}"
        )
    return out


def proof_from_json(obj, where: str = "proof.json", curves_allowed=BN254_ONLY):
    """snarkjs's proof.json object as (pi_a, pi_b, pi_c) affine int points, checked to be
    points of the curve and the twist (the curve the proof names: json_curve)."""
    require_object(obj, where, ("pi_a", "pi_b", "pi_c"))
    curve = check_protocol(obj, where, curves_allowed)
    return (
        g1_from_json(obj["pi_a"], f"{where}: pi_a", curve),
        g2_from_json(obj["pi_b"], f"{where}: pi_b", curve),
        g1_from_json(obj["pi_c"], f"{where}: pi_c", curve),
    )


def json_curve(obj, where: str, curves_allowed=None):
    """The Curve a proof or verification key object names (check_protocol; bn128 when it
    names none), for a caller that reads either curve."""
    if not isinstance(obj, dict):
        raise BadJson(where, "expected a JSON object")
    return check_protocol(obj, where, curves_allowed)


def check_ic_count(ic, n_public: int, where: str) -> None:
    """CountMismatch unless the key has nPublic + 1 IC points."""
    if len(ic) != n_public + 1:
        raise CountMismatch(
            where, f"IC has {len(ic)} points but nPublic = {n_public} needs {n_public + 1}"
        )


def vk_from_json(obj, where: str = "verification_key.json", curves_allowed=BN254_ONLY):
    """snarkjs's verification_key.json object as (n_public, alpha1, beta2, gamma2, delta2,
    ic): points checked to lie on their curves, IC checked to number nPublic + 1
    (vk_alphabeta_12 is not read here); IC[1..] are read as snarkjs reads them (ic_from_json)."""
    require_object(
        obj, where, ("nPublic", "vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "IC")
    )
    curve = check_protocol(obj, where, curves_allowed)
    n_public = parse_count(obj["nPublic"], f"{where}: nPublic")
    if not isinstance(obj["IC"], list) or not obj["IC"]:
        raise BadJson(f"{where}: IC", "expected a non-empty list of G1 points")
    points = (
        g1_from_json(obj["vk_alpha_1"], f"{where}: vk_alpha_1", curve),
        g2_from_json(obj["vk_beta_2"], f"{where}: vk_beta_2", curve),
        g2_from_json(obj["vk_gamma_2"], f"{where}: vk_gamma_2", curve),
        g2_from_json(obj["vk_delta_2"], f"{where}: vk_delta_2", curve),
    )
    ic = [
        ic_from_json(p, f"{where}: IC[{i}]", i == n_public, curve)
        if i
        else g1_from_json(p, f"{where}: IC[0]", curve)
        for i, p in enumerate(obj["IC"])
    ]
    check_ic_count(ic, n_public, where)
    return (n_public, *points, ic)


# --- proof.json and public.json --------------------------------------------------------


def proof_to_json(pi_a, pi_b, pi_c, curve=BN254) -> dict:
    """A proof (affine int points) as snarkjs's proof.json object on `curve` (a Curve or its
    name; BN254 unless given)."""
    return {
        "pi_a": g1_to_json(pi_a),
        "pi_b": g2_to_json(pi_b),
        "pi_c": g1_to_json(pi_c),
        "protocol": PROTOCOL,
        "curve": curves.by_name(curve).name,
    }


def write_proof(path: os.PathLike | str, pi_a, pi_b, pi_c, curve=BN254) -> None:
    """Write proof.json atomically (points as affine ints)."""
    _write(path, proof_to_json(pi_a, pi_b, pi_c, curve))


def read_proof(path: os.PathLike | str, curves_allowed=BN254_ONLY):
    """proof.json as (pi_a, pi_b, pi_c) affine int points (see proof_from_json)."""
    return proof_from_json(load(path, "proof"), os.fspath(path), curves_allowed)


def public_to_json(signals) -> list[str]:
    return [str(int(s)) for s in signals]


def write_public(path: os.PathLike | str, signals) -> None:
    """Write public.json atomically: the public signals w[1..nPublic] as decimal strings."""
    _write(path, public_to_json(signals))


def write_proof_and_public(proof_path, public_path, points, signals, curve=BN254) -> None:
    """Write proof.json and public.json, both or neither (cuzk.formats.atomic.write_outputs):
    `points` is (pi_a, pi_b, pi_c) as for write_proof."""
    write_outputs(
        [
            (proof_path, dumps(proof_to_json(*points, curve))),
            (public_path, dumps(public_to_json(signals))),
        ]
    )


def read_public(path: os.PathLike | str, curve=BN254) -> list[int]:
    """public.json as a list of ints, each below the curve's r (see parse_public)."""
    return parse_public(load(path, "public signals"), None, os.fspath(path), curves.by_name(curve))


# --- verification_key.json -------------------------------------------------------------


def fq12_from_py_ecc(f, curve=BN254) -> list:
    """A py_ecc (optimized_)bn128 FQ12 as snarkjs's tower coefficients, [[[c, c] x3] x2].
    (On BLS12-381, py_ecc's F_q12 is F_q[w]/(w^12 - 2w^6 + 2) and xi = 1 + u: the same
    mapping with u = w^6 - 1, so x = c[2j] + c[2j+6]; `curve` selects it.)

    py_ecc writes F_q12 = F_q[w]/(w^12 - 18 w^6 + 82); snarkjs (ffjavascript) the tower
    F_q2 = F_q[u]/(u^2 + 1), F_q6 = F_q2[v]/(v^3 - (9 + u)), F_q12 = F_q6[w]/(w^2 - v).
    With v = w^2 and u = w^6 - 9, the tower element sum_j (a_j + b_j w) v^j, a_j = x + y u,
    puts x - 9y on w^(2j) and y on w^(2j+6) (b_j likewise on the odd powers), so
    y = c[2j+6] and x = c[2j] + 9 c[2j+6].
    """
    curve = curves.by_name(curve)
    q, xi0 = curve.q, curve.xi[0]
    c = [int(getattr(x, "n", x)) % q for x in f.coeffs]
    out = []
    for half in (0, 1):  # a (even powers of w), b (odd powers)
        fq6 = []
        for j in range(3):
            lo, hi = c[2 * j + half], c[2 * j + half + 6]
            fq6.append(((lo + xi0 * hi) % q, hi))
        out.append(fq6)
    return out


def fq12_to_json(tower) -> list:
    """snarkjs tower coefficients [[[c0, c1] x3] x2] (ints) as vk_alphabeta_12's JSON.

    The one place that knows the Fq12 layout of verification_key.json.
    """
    return [[[str(int(c0)), str(int(c1))] for (c0, c1) in fq6] for fq6 in tower]


# snarkjs's pairing on a curve other than BN254, as a power of cuzk's Python-int pairing
# (cuzk.arith.pairing_int.for_curve): wasmcurves' BLS12-381 final exponentiation (the
# zkcrypto chain) gives the reduced optimal ate pairing cubed.
def alphabeta_12(alpha1, beta2, curve=BN254, where=None) -> list:
    """e(alpha1, beta2) as snarkjs tower coefficients, equal to snarkjs's own value.

    snarkjs (wasmcurves) computes the optimal ate pairing with a final exponentiation whose
    hard part is a multiple of the textbook one: on BN254 the Fuentes-Castaneda et al. chain,
    the reduced pairing to the power 2x(6x^2 + 3x + 1) (x = BN254's parameter); on
    BLS12-381 the reduced pairing cubed. cuzk's pairings use the same exponents (compiled,
    cuzk.arith.pairing, for BN254; on Python ints, cuzk.arith.pairing_int built for the
    curve, for the others), so this matches snarkjs's file exactly (the formats tests compare
    them byte for byte). `where` names the file in errors.
    """
    curve = curves.by_name(curve)
    if curve is BN254:
        from cuzk.arith.pairing import pairing

        return pairing(tuple(alpha1), tuple(beta2))
    from cuzk.arith.pairing_int import for_curve

    return for_curve(curve.arith).multi_pairing([(tuple(alpha1), tuple(beta2))])


def verification_key(zkey, alphabeta=None) -> dict:
    """The verification_key.json object of a ZKey, as `snarkjs zkey export verificationkey`.

    `alphabeta` (tower coefficients of e(alpha1, beta2)) is computed when not given. The
    curve is the key's (`zkey.curve`; BN254 for an object without one).
    """
    from cuzk.formats.stored import g1_from_limbs, g2_from_limbs  # numpy: not for `cuzk verify`

    curve = curves.by_name(getattr(zkey, "curve", None) or BN254)
    alpha1 = g1_from_limbs(zkey.alpha1, curve)
    beta2 = g2_from_limbs(zkey.beta2, curve)
    if alphabeta is None:
        alphabeta = alphabeta_12(alpha1, beta2, curve, getattr(zkey, "path", None))
    return {
        "protocol": PROTOCOL,
        "curve": curve.name,
        "nPublic": int(zkey.n_public),
        "vk_alpha_1": g1_to_json(alpha1),
        "vk_beta_2": g2_to_json(beta2),
        "vk_gamma_2": g2_to_json(g2_from_limbs(zkey.gamma2, curve)),
        "vk_delta_2": g2_to_json(g2_from_limbs(zkey.delta2, curve)),
        "vk_alphabeta_12": fq12_to_json(alphabeta),
        "IC": [g1_to_json(g1_from_limbs(p, curve)) for p in zkey.ic],
    }


def write_verification_key(path: os.PathLike | str, vk: dict) -> None:
    """Write verification_key.json atomically."""
    _write(path, vk)


class VerificationKey:
    """verification_key.json read and checked (vk_from_json): alpha1 (G1), beta2, gamma2,
    delta2 (G2), ic (list of G1), n_public, curve (snarkjs's name), and alphabeta (tower
    coefficients as in the file, each below q; not checked against the pairing). The
    verifier's VerifyingKey (cuzk.groth16.verifier) adds the G2 subgroup check and the
    compiled pairing. `curves_allowed` as for vk_from_json (BN254 only unless given)."""

    def __init__(self, path: os.PathLike | str, curves_allowed=BN254_ONLY):
        self.path = path = os.fspath(path)
        obj = load(path, "verification key")
        (self.n_public, self.alpha1, self.beta2, self.gamma2, self.delta2, self.ic) = vk_from_json(
            obj, path, curves_allowed
        )
        curve = json_curve(obj, path, curves_allowed)
        self.curve = curve.name
        ab = obj.get("vk_alphabeta_12")
        self.alphabeta = None
        if ab is not None:
            where = f"{path}: vk_alphabeta_12"
            shape = "[[[c0, c1] x3] x2] decimal strings"
            fq6s = _list(ab, 2, where, shape)
            self.alphabeta = [
                [
                    [parse_fq(c, where, curve) for c in _list(pair, 2, where, shape)]
                    for pair in _list(fq6, 3, where, shape)
                ]
                for fq6 in fq6s
            ]


def read_verification_key(path: os.PathLike | str, curves_allowed=BN254_ONLY) -> VerificationKey:
    return VerificationKey(path, curves_allowed)
