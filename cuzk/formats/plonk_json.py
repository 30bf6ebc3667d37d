"""snarkjs's PLONK JSON files: proof.json and verification_key.json (read and write).

Shapes (decimal strings; G1 points as snarkjs's [x, y, "1"], infinity ["0", "1", "0"]):
  proof.json  {"A", "B", "C", "Z", "T1", "T2", "T3", "Wxi", "Wxiw": G1,
               "eval_a", "eval_b", "eval_c", "eval_s1", "eval_s2", "eval_zw": Fr,
               "protocol": "plonk", "curve": "bn128"}
  verification_key.json  {"protocol": "plonk", "curve", "nPublic", "power", "k1", "k2",
               "Qm", "Ql", "Qr", "Qo", "Qc", "S1", "S2", "S3": G1, "X_2": G2,
               "w": the domain's root of unity w[power]}
public.json is Groth16's (cuzk.formats.snarkjs_json: write_public, parse_public). Files are
written as snarkjs writes them (one-space indentation, no final newline), atomically, in
the key order above. Points are affine Python ints, None for infinity; the readers check
what snarkjs's verifier assumes (points on the curve, field elements below their primes)
and raise the FormatError classes of cuzk.formats.errors with the file and field first.
Importing this module imports neither numpy nor numba (`cuzk verify` reads through it).
"""

from __future__ import annotations

import os

from cuzk.formats import curve as curves
from cuzk.formats.atomic import atomic_write_text, write_outputs
from cuzk.formats.errors import BadJson, NotInField, UnsupportedProtocol
from cuzk.formats.snarkjs_json import (
    dumps,
    g1_from_json,
    g1_to_json,
    g2_from_json,
    g2_to_json,
    load,
    named_curve,
    parse_count,
    parse_int,
    public_to_json,
    require_object,
    show,
)

PROTOCOL = "plonk"
# proof.json's commitments and evaluations, in snarkjs's order.
COMMITMENTS = ("A", "B", "C", "Z", "T1", "T2", "T3", "Wxi", "Wxiw")
EVALUATIONS = ("eval_a", "eval_b", "eval_c", "eval_s1", "eval_s2", "eval_zw")
# verification_key.json's G1 points, in snarkjs's order.
VK_G1 = ("Qm", "Ql", "Qr", "Qo", "Qc", "S1", "S2", "S3")
MAX_POWER = 32  # no curve cuzk knows has a larger 2-adicity


def json_protocol(obj) -> str | None:
    """The "protocol" a proof or key object names (snarkjs's name, e.g. "groth16", "plonk",
    "fflonk"); None for an object without one (snarkjs's Groth16 files of old) or no object."""
    if not isinstance(obj, dict):
        return None
    p = obj.get("protocol")
    return p if isinstance(p, str) else None


def check_plonk(obj, where: str, curves_allowed=None):
    """The Curve a PLONK object names, after UnsupportedProtocol unless its protocol is plonk
    and its curve one of `curves_allowed` (None: any curve cuzk knows)."""
    if not isinstance(obj, dict):
        raise BadJson(where, "expected a JSON object")
    protocol = obj.get("protocol")
    if protocol != PROTOCOL:
        raise UnsupportedProtocol(where, f"protocol {show(protocol)} is not plonk")
    return named_curve(obj, where, curves_allowed)


def parse_fr(v, where: str, curve) -> int:
    """A scalar field element: a snarkjs decimal string below the curve's r."""
    x = parse_int(v, where, curve.r_digits)
    if x >= curve.r:
        raise NotInField(where, f"{x} is not below the scalar field prime r")
    return x


# --- proof.json ---------------------------------------------------------------------------


def proof_to_json(commitments: dict, evaluations: dict, curve=curves.BN254) -> dict:
    """A PLONK proof as snarkjs's proof.json object: `commitments` maps COMMITMENTS to affine
    int G1 points (None = infinity), `evaluations` maps EVALUATIONS to ints."""
    obj = {name: g1_to_json(commitments[name]) for name in COMMITMENTS}
    obj.update({name: str(int(evaluations[name])) for name in EVALUATIONS})
    obj["protocol"] = PROTOCOL
    obj["curve"] = curves.by_name(curve).name
    return obj


def proof_from_json(obj, where: str = "proof.json", curves_allowed=None):
    """snarkjs's PLONK proof.json object as (curve, commitments, evaluations): points checked
    to lie on the curve, evaluations to be below r."""
    curve = check_plonk(obj, where, curves_allowed)
    require_object(obj, where, COMMITMENTS + EVALUATIONS)
    commitments = {n: g1_from_json(obj[n], f"{where}: {n}", curve) for n in COMMITMENTS}
    evaluations = {n: parse_fr(obj[n], f"{where}: {n}", curve) for n in EVALUATIONS}
    return curve, commitments, evaluations


def read_proof(path: os.PathLike | str, curves_allowed=None):
    """proof.json of a PLONK proof (see proof_from_json)."""
    return proof_from_json(load(path, "proof"), os.fspath(path), curves_allowed)


def write_proof_and_public(proof_path, public_path, proof: dict, signals) -> None:
    """Write proof.json (an object from proof_to_json) and public.json, both or neither."""
    write_outputs([(proof_path, dumps(proof)), (public_path, dumps(public_to_json(signals)))])


# --- verification_key.json ---------------------------------------------------------------


def verification_key(zkey) -> dict:
    """The verification_key.json object of a PlonkZKey, as `snarkjs zkey export
    verificationkey` writes it."""
    from cuzk.arith.curves import constants
    from cuzk.formats.stored import g1_from_limbs, g2_from_limbs  # numpy: not for `verify`

    curve = zkey.curve_info
    vk = {
        "protocol": PROTOCOL,
        "curve": curve.name,
        "nPublic": int(zkey.n_public),
        "power": int(zkey.power),
        "k1": str(zkey.k1),
        "k2": str(zkey.k2),
    }
    for name in VK_G1:
        vk[name] = g1_to_json(g1_from_limbs(getattr(zkey, name), curve))
    vk["X_2"] = g2_to_json(g2_from_limbs(zkey.X_2, curve))
    vk["w"] = str(constants(curve.arith).fr_roots_of_unity()[zkey.power])
    return vk


def write_verification_key(path: os.PathLike | str, vk: dict) -> None:
    atomic_write_text(path, dumps(vk))


def vk_from_json(obj, where: str = "verification_key.json", curves_allowed=None) -> dict:
    """snarkjs's PLONK verification_key.json object, checked, as a dict: curve (a Curve),
    n_public, power, k1, k2, w (ints), the VK_G1 points and X_2 (affine ints). "w" must be
    the curve's root of unity of order 2^power, as snarkjs's verifier takes it from the
    curve, not the file."""
    curve = check_plonk(obj, where, curves_allowed)
    require_object(obj, where, ("nPublic", "power", "k1", "k2", *VK_G1, "X_2"))
    power = parse_count(obj["power"], f"{where}: power")
    if not 1 <= power <= min(MAX_POWER, curve.fr_two_adicity):
        raise BadJson(f"{where}: power", f"{power} is not a domain size of {curve.title}")
    vk = {
        "curve": curve,
        "n_public": parse_count(obj["nPublic"], f"{where}: nPublic"),
        "power": power,
        "k1": parse_fr(obj["k1"], f"{where}: k1", curve),
        "k2": parse_fr(obj["k2"], f"{where}: k2", curve),
    }
    for name in VK_G1:
        vk[name] = g1_from_json(obj[name], f"{where}: {name}", curve)
    vk["X_2"] = g2_from_json(obj["X_2"], f"{where}: X_2", curve)
    return vk
