"""Proving keys are validated once when loaded (issue 17): every point of a damaged key is
found, named by section and index, by `cuzk prove`, by the engine at registration and by the
daemon's `POST /v1/keys` (refused with the reason); `cuzk prove` verifies by default. The
point checks run on BN254 (mulchain) and BLS12-381 (tiny381), with the curve's equations, and
on BLS12-381 G1 subgroup checks as well (its G1 has a cofactor).

Points are damaged by adding 1 to a coordinate's top limb (Montgomery form): the point
leaves its curve (a random point of Fq x Fq is on y^2 = x^3 + b with probability ~1/q).
"""

import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import fixture_circuit
from serve_harness import request, serve_daemon

from cuzk.arith.constants import FQ_MODULUS, FR_MODULUS
from cuzk.arith.radix import int_to_limb_array
from cuzk.cli import main
from cuzk.formats import curve as curves
from cuzk.formats.binfile import BinFile
from cuzk.formats.errors import BadPoint
from cuzk.formats.zkey import (
    GROTH16_HEADER,
    HEADER_POINTS,
    IC,
    POINTS_A,
    POINTS_B1,
    POINTS_B2,
    POINTS_C,
    POINTS_H,
    ZKey,
    header_points,
)
from cuzk.groth16 import ProvingKey
from cuzk.groth16.validate import SECTIONS, validate_key

MULCHAIN = fixture_circuit("mulchain")
# A key of each curve: BN254's mulchain, BLS12-381's tiny381 (tests/fixtures/tiny381)
KEYS = {
    "bn254": MULCHAIN.zkey,
    "bls12_381": MULCHAIN.zkey.parent.parent / "tiny381" / "circuit.zkey",
}
CURVES = list(KEYS)
# the curve equations in the messages
EQUATIONS = {
    "bn254": ("y^2 = x^3 + 3", "y^2 = x^3 + 3/(9+u)"),
    "bls12_381": ("y^2 = x^3 + 4", "y^2 = x^3 + 4(1+u)"),
}
SECTION_NAMES = {
    IC: "IC",
    POINTS_A: "pointsA",
    POINTS_B1: "pointsB1",
    POINTS_B2: "pointsB2",
    POINTS_C: "pointsC",
    POINTS_H: "pointsH",
}


def point_bytes(curve: str, sid: int) -> int:
    """Bytes of a stored point of section `sid` on `curve`."""
    c = curves.by_name(curve)
    return 8 * (c.g2_limbs if sid == POINTS_B2 else c.g1_limbs)


def header_offset(curve: str, field: str) -> int:
    """Offset of a header point inside the Groth16 header section on `curve`: n8q, q, n8r,
    r, nVars, nPublic, domainSize, then the points."""
    c = curves.by_name(curve)
    pos = 4 + c.n8q + 4 + c.n8r + 12
    for name, limbs in header_points(c):
        if name == field:
            return pos
        pos += 8 * limbs
    raise KeyError(field)


def validate(path):
    """Validate the key at `path` on its curve (ProvingKey.validate for BN254 is this too)."""
    return validate_key(ZKey(path))


VK_NAMES = {
    "alpha1": "vk_alpha_1",
    "beta1": "vk_beta_1",
    "beta2": "vk_beta_2",
    "gamma2": "vk_gamma_2",
    "delta1": "vk_delta_1",
    "delta2": "vk_delta_2",
}


def damaged(tmp_path, src, offset: int, *, add: int = 1, name="damaged.zkey"):
    """A copy of src with the u64 limb at `offset` increased by `add` (wrapping)."""
    data = bytearray(src.read_bytes())
    v = (int.from_bytes(data[offset : offset + 8], "little") + add) % 2**64
    data[offset : offset + 8] = v.to_bytes(8, "little")
    out = tmp_path / name
    out.write_bytes(bytes(data))
    return out


def section_offset(path, sid: int) -> int:
    return BinFile(path, "zkey", (1,)).section(sid, "s").offset


def first_nonzero_point(path, sid, size) -> int:
    """Index of the first stored point that is not the all-zero infinity encoding."""
    f = BinFile(path, "zkey", (1,))
    s = f.section(sid, "s")
    raw = np.frombuffer(f.read_bytes(s.offset, s.size), dtype=np.uint8).reshape(-1, size)
    return int(np.flatnonzero(raw.any(axis=1))[-1])


def test_the_fixture_keys_pass_validation():
    for name in ("tiny", "mulchain", "bits", "toyhash"):
        vk = ProvingKey.open(fixture_circuit(name).zkey).validate()
        assert vk.n_public == ProvingKey.open(fixture_circuit(name).zkey).n_public
    vk = validate(KEYS["bls12_381"])
    assert (vk.curve.name, vk.n_public) == ("bls12381", 2)


def _off_curve_message(curve: str, sid: int) -> str:
    g1, g2 = EQUATIONS[curve]
    return (
        f"point is not on the twist {g2}" if sid == POINTS_B2 else f"point is not on the curve {g1}"
    )


@pytest.mark.parametrize("pieces", [None, 3], ids=["whole", "pieces"])
@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("sid", list(SECTION_NAMES), ids=list(SECTION_NAMES.values()))
def test_a_point_off_its_curve_is_named_by_section_and_index(
    tmp_path, sid, curve, pieces, monkeypatch
):
    """Named by its index in the section, whether the key's sections are checked whole or
    read in pieces of 3 rows (as a daemon reads a key: CHECK_ROWS)."""
    if pieces:
        from cuzk.groth16 import validate as validate_module

        monkeypatch.setattr(validate_module, "CHECK_ROWS", pieces)
    name, size, src = SECTION_NAMES[sid], point_bytes(curve, sid), KEYS[curve]
    i = first_nonzero_point(src, sid, size)  # the last non-infinity point of the section
    bad = damaged(tmp_path, src, section_offset(src, sid) + i * size + size - 8)
    with pytest.raises(BadPoint) as info:
        validate(bad)
    assert str(info.value) == f"{bad}: {name}[{i}]: {_off_curve_message(curve, sid)}"


def test_a_read_key_is_checked_a_piece_at_a_time(monkeypatch):
    """A key read, not mapped (the daemon's process), is validated CHECK_ROWS rows at a time:
    no point or coefficient section is read whole, and every row is checked once."""
    from cuzk.formats import zkey as zkey_module
    from cuzk.groth16 import validate as validate_module

    monkeypatch.setattr(validate_module, "CHECK_ROWS", 3)
    monkeypatch.setattr(zkey_module, "CHECK_ROWS", 5)
    reads, wholes = {}, []
    real_rows, real_section = ZKey.rows, ZKey._section

    def rows(self, attr, lo, hi):
        a = real_rows(self, attr, lo, hi)
        reads.setdefault(attr, []).append(len(a))
        return a

    def section(self, attr):
        wholes.append(attr)
        return real_section(self, attr)

    monkeypatch.setattr(ZKey, "rows", rows)
    monkeypatch.setattr(ZKey, "_section", section)
    for curve in CURVES:
        reads.clear()
        z = ZKey(KEYS[curve])
        validate_key(z)
        assert wholes == []
        assert set(reads) == {"coefficients", *(attr for _name, attr in SECTIONS)}
        for attr, sizes in reads.items():
            assert max(sizes) <= (5 if attr == "coefficients" else 3)
            assert sum(sizes) == z.section_rows(attr)


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("field", [f for f, _ in HEADER_POINTS])
def test_a_header_point_off_its_curve_is_named(tmp_path, field, curve):
    src = KEYS[curve]
    bad = damaged(tmp_path, src, section_offset(src, GROTH16_HEADER) + header_offset(curve, field))
    with pytest.raises(BadPoint) as info:
        validate(bad)
    equation = EQUATIONS[curve][0 if field.endswith("1") else 1]
    assert f"Groth16 header: {VK_NAMES[field]}: point is not on the" in str(info.value)
    assert str(info.value).endswith(equation), str(info.value)


def test_a_coordinate_not_below_q_is_refused(tmp_path):
    """x + q has the same residue as x: a reader that reduces would accept it."""
    src = MULCHAIN.zkey
    off = section_offset(src, POINTS_A) + 64 * 1  # pointsA[1].x
    data = bytearray(src.read_bytes())
    x = int.from_bytes(data[off : off + 32], "little")
    if x + FQ_MODULUS >= 2**256:
        pytest.skip("this coordinate has no second representative below 2^256")
    data[off : off + 32] = int_to_limb_array(x + FQ_MODULUS).tobytes()
    (tmp_path / "k.zkey").write_bytes(bytes(data))
    with pytest.raises(BadPoint, match=r"pointsA\[1\]: coordinate x .* not below"):
        ProvingKey.open(tmp_path / "k.zkey").validate()


def replaced(tmp_path, src, offset: int, row: np.ndarray, name="k.zkey"):
    """A copy of src with the stored point at `offset` replaced by `row` (Montgomery limbs)."""
    data = bytearray(src.read_bytes())
    data[offset : offset + row.nbytes] = row.tobytes()
    out = tmp_path / name
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("field", ["beta2", "gamma2", "delta2"])
def test_a_g2_header_point_outside_the_subgroup_is_refused(tmp_path, field, curve):
    """A header G2 point replaced by a random point of the twist (outside G2)."""
    import random

    from reference import random_twist_point

    from cuzk.formats.stored import g2_to_limbs

    src = KEYS[curve]
    row = g2_to_limbs(random_twist_point(curve, random.Random(3)), ZKey(src).curve_info)
    bad = replaced(
        tmp_path, src, section_offset(src, GROTH16_HEADER) + header_offset(curve, field), row
    )
    with pytest.raises(BadPoint) as info:
        validate(bad)
    assert str(info.value) == (
        f"{bad}: Groth16 header: {VK_NAMES[field]}: G2 point is on the twist but not in the "
        "order-r subgroup"
    )


# --- BLS12-381's G1 has a cofactor: on the curve is not yet in G1 ---------------------------
BLS = KEYS["bls12_381"]


def _g1_outside_row(seed: int = 5) -> np.ndarray:
    """A BLS12-381 G1 point plus a component of the cofactor's order: on the curve, not in
    G1, and paired by the pairing as its G1 part (see test_g1_torsion_...)."""
    import random

    from reference import random_curve_point

    from cuzk.arith import pairing_int
    from cuzk.formats.stored import g1_to_limbs

    ops = pairing_int.for_curve("bls12_381")
    g = ops._C.G1_GENERATOR
    t = ops.g1_mul_jacobian((*random_curve_point("bls12_381", random.Random(seed)), 1), ops.R)
    p = ops.g1_to_affine(ops.g1_add_jacobian((*g, 1), t))
    assert not ops.g1_in_subgroup(p) and not ops.g1_in_subgroup_by_order(p)
    return g1_to_limbs(p, ZKey(BLS).curve_info)


@pytest.mark.parametrize("field", ["alpha1", "beta1", "delta1"])
def test_a_g1_header_point_outside_g1_is_refused(tmp_path, field):
    off = section_offset(BLS, GROTH16_HEADER) + header_offset("bls12_381", field)
    bad = replaced(tmp_path, BLS, off, _g1_outside_row())
    with pytest.raises(BadPoint) as info:
        validate(bad)
    assert str(info.value) == (
        f"{bad}: Groth16 header: {VK_NAMES[field]}: G1 point is on the curve but not in the "
        "order-r subgroup"
    )


@pytest.mark.parametrize(
    "sid", [IC, POINTS_A, POINTS_B1, POINTS_C, POINTS_H], ids=lambda s: SECTION_NAMES[s]
)
def test_a_g1_section_point_outside_g1_is_refused(tmp_path, sid):
    """Every G1 section: refused by name and index; g1_subgroup=False (a proof verified
    before writing) leaves the sections' test out, never IC's (checked with the header)."""
    size = point_bytes("bls12_381", sid)
    i = first_nonzero_point(BLS, sid, size)
    bad = replaced(tmp_path, BLS, section_offset(BLS, sid) + i * size, _g1_outside_row())
    with pytest.raises(BadPoint) as info:
        validate(bad)
    where = f"Groth16 header: IC[{i}]" if sid == IC else f"{SECTION_NAMES[sid]}[{i}]"
    assert str(info.value) == (
        f"{bad}: {where}: G1 point is on the curve but not in the order-r subgroup"
    )
    if sid == IC:
        with pytest.raises(BadPoint):
            validate_key(ZKey(bad), g1_subgroup=False)
    else:
        validate_key(ZKey(bad), g1_subgroup=False)


def test_a_bls_b2_point_outside_g2_is_refused(tmp_path):
    import random

    from reference import random_twist_point

    from cuzk.formats.stored import g2_to_limbs

    i = first_nonzero_point(BLS, POINTS_B2, 192)
    row = g2_to_limbs(random_twist_point("bls12_381", random.Random(4)), ZKey(BLS).curve_info)
    bad = replaced(tmp_path, BLS, section_offset(BLS, POINTS_B2) + 192 * i, row)
    with pytest.raises(BadPoint) as info:
        validate(bad)
    assert str(info.value) == (
        f"{bad}: pointsB2[{i}]: G2 point is on the twist but not in the order-r subgroup"
    )
    validate_key(ZKey(bad), b2_subgroup=False)


def test_g1_torsion_is_invisible_to_the_pairing_but_refused_by_the_verifier():
    """Why the G1 sections of a BLS12-381 key need a subgroup test (cuzk.groth16.validate):
    e(P + T, Q) = e(P, Q) for T of the cofactor's order, so a proof whose pi_a carries such a
    T satisfies the pairing equation; cuzk's verifier refuses it (snarkjs's proof 0 of
    tiny381, pi_a moved off G1)."""
    import json

    from cuzk.arith import pairing_int
    from cuzk.formats.errors import NotInSubgroup
    from cuzk.formats.stored import g1_from_limbs
    from cuzk.groth16.verifier import Proof

    ops = pairing_int.for_curve("bls12_381")
    g, q2 = ops._C.G1_GENERATOR, ops._C.G2_GENERATOR
    p = g1_from_limbs(_g1_outside_row(), ZKey(BLS).curve_info)
    assert ops.multi_pairing([(p, q2)]) == ops.multi_pairing([(tuple(g), q2)])
    proof = json.loads((BLS.parent / "proof_0.json").read_text())
    t = ops.g1_add_jacobian((*p, 1), (g[0], -g[1] % ops.Q, 1))  # p - g: T alone
    a = ops.g1_add_jacobian((int(proof["pi_a"][0]), int(proof["pi_a"][1]), 1), t)
    proof["pi_a"] = [str(v) for v in ops.g1_to_affine(a)] + ["1"]
    with pytest.raises(NotInSubgroup, match="pi_a: G1 point is on the curve but not in the"):
        Proof.from_json(proof, "proof.json", backend="python")


# --- pointsB2: on the twist, and in G2 -----------------------------------------------------
def _twist_point(rng):
    """A random point of the twist E'(Fq2) (almost surely outside G2), in py_ecc's form."""
    from py_ecc import optimized_bn128 as bn
    from test_verifier import _f2_sqrt

    from cuzk.arith.constants import G2_B

    while True:
        x = bn.FQ2([rng.randrange(FQ_MODULUS), rng.randrange(FQ_MODULUS)])
        rhs = x * x * x + bn.FQ2(list(G2_B))
        y = _f2_sqrt(tuple(int(c) % FQ_MODULUS for c in rhs.coeffs))
        if y is not None:
            return (x, bn.FQ2(list(y)), bn.FQ2.one())


def _g2_rows(points) -> np.ndarray:
    """py_ecc points as (n, 16) stored rows (affine, Montgomery; infinity all zeros)."""
    from py_ecc import optimized_bn128 as bn

    from cuzk.formats.stored import g2_to_limbs

    rows = np.zeros((len(points), 16), dtype=np.uint64)
    for i, p in enumerate(points):
        if not bn.is_inf(p):
            x, y = bn.normalize(p)
            rows[i] = g2_to_limbs((tuple(map(int, x.coeffs)), tuple(map(int, y.coeffs))))
    return rows


# 2q - r, the order of the twist's group over r: squarefree, so each prime's part is cyclic
COFACTOR_PRIMES = (
    10069,
    5864401,
    1875725156269,
    197620364512881247228717050342013327560683201906968909,
)


def test_the_psi_test_is_the_order_r_test():
    """Scott's endomorphism test (validate.g2_row_in_subgroup) against [r]Q = O (the
    verifier's) and py_ecc, on points of G2, random twist points, and a point of each prime
    order of the cofactor group, alone and added to a G2 point. The test is a homomorphism,
    and psi acts on each (cyclic, prime-order) part of the cofactor group as a scalar, so a
    point of each prime order refused proves that it refuses every point outside G2."""
    import random
    from math import prod

    from py_ecc import optimized_bn128 as bn

    from cuzk.groth16.validate import first_outside_g2, g2_row_in_subgroup
    from cuzk.groth16.verifier_numba import g2_in_subgroup_array

    c2 = 2 * FQ_MODULUS - FR_MODULUS
    assert prod(COFACTOR_PRIMES) == c2
    rng = random.Random(29)
    inside = [bn.multiply(bn.G2, rng.randrange(1, FR_MODULUS)) for _ in range(4)] + [bn.Z2]
    outside = [_twist_point(rng) for _ in range(3)]
    for ell in COFACTOR_PRIMES:
        t = bn.multiply(_twist_point(rng), FR_MODULUS * (c2 // ell))
        assert not bn.is_inf(t) and bn.is_inf(bn.multiply(t, ell))  # of order ell
        outside += [t, bn.add(t, inside[0])]
    rows = _g2_rows(inside + outside)
    for i in range(len(rows)):
        want = i < len(inside)
        assert g2_row_in_subgroup(rows, i) is want, i
        assert bool(g2_in_subgroup_array(rows[i].reshape(2, 2, 4))) is want, i
    assert first_outside_g2(rows) == len(inside)
    assert first_outside_g2(rows[: len(inside)]) == -1


def test_a_b2_point_outside_g2_is_refused_in_one_line(tmp_path, monkeypatch):
    """pointsB2[i] replaced by a twist point outside G2 (one of order 10069 plus a G2 point:
    the hardest for the batched check): refused by validation, naming the point, and by
    `cuzk prove` in one line (with --no-verify the proof's pi_b comes out of G2 and the key's
    check then names the point; verified before writing, by the verifier's test of pi_b). A
    good key never runs the per-point sweep, nor the batched check in `cuzk prove`."""
    import random

    from py_ecc import optimized_bn128 as bn

    from cuzk.groth16 import validate

    src = MULCHAIN.zkey
    sweeps = []
    real = validate.first_outside_g2
    monkeypatch.setattr(validate, "first_outside_g2", lambda p: sweeps.append(1) or real(p))
    ProvingKey.open(src).validate()
    assert sweeps == []
    i = first_nonzero_point(src, POINTS_B2, 128)
    c2 = 2 * FQ_MODULUS - FR_MODULUS
    t = bn.multiply(_twist_point(random.Random(7)), FR_MODULUS * (c2 // COFACTOR_PRIMES[0]))
    data = bytearray(src.read_bytes())
    off = section_offset(src, POINTS_B2) + 128 * i
    data[off : off + 128] = _g2_rows([bn.add(bn.G2, t)])[0].tobytes()
    bad = tmp_path / "b2.zkey"
    bad.write_bytes(bytes(data))
    with pytest.raises(BadPoint) as info:
        ProvingKey.open(bad).validate()
    assert str(info.value) == (
        f"{bad}: pointsB2[{i}]: G2 point is on the twist but not in the order-r subgroup"
    )
    assert sweeps == [1]
    r = _prove("--no-verify", bad, MULCHAIN.witness(0), tmp_path / "p.json", tmp_path / "q.json")
    assert r.exit_code == 1 and r.output == f"cuzk prove: {info.value}\n", r.output
    assert not (tmp_path / "p.json").exists()
    batched = []  # a good key: `cuzk prove --no-verify` leaves the batched check out
    real_batched = validate.first_outside_g2_batched
    monkeypatch.setattr(
        validate, "first_outside_g2_batched", lambda p: batched.append(1) or real_batched(p)
    )
    r = _prove("--no-verify", src, MULCHAIN.witness(0), tmp_path / "g.json", tmp_path / "h.json")
    assert r.exit_code == 0 and batched == [], r.output
    # Verified before writing (the default), the command leaves the batch out: the proof's
    # pi_b is outside G2 and the verifier refuses it, in one line, writing nothing.
    r = _prove(bad, MULCHAIN.witness(0), tmp_path / "p.json", tmp_path / "q.json")
    assert r.exit_code == 1, r.output
    assert (
        r.output.startswith("cuzk prove: the proof does not verify: ") and r.output.count("\n") == 1
    ), r.output
    assert "subgroup" in r.output, r.output
    assert not (tmp_path / "p.json").exists() and not (tmp_path / "q.json").exists()


def _prove(*args):
    return CliRunner().invoke(main, ["prove", *map(str, args)])


# the circuit of each curve's key in KEYS, for its witnesses
CIRCUITS = {"bn254": MULCHAIN, "bls12_381": fixture_circuit("tiny381")}


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("sid", [POINTS_A, POINTS_B1, POINTS_B2, POINTS_C, POINTS_H])
def test_cuzk_prove_refuses_a_damaged_key_and_writes_nothing(tmp_path, curve, sid):
    """Every point section is checked on its curve by `cuzk prove`, as the proof's steps read
    it (ZKey.check_on_read), verified or not, with the line validation writes."""
    src, c = KEYS[curve], CIRCUITS[curve]
    size = point_bytes(curve, sid)
    i = min(3, first_nonzero_point(src, sid, size))  # a point stored, not infinity
    bad = damaged(tmp_path, src, section_offset(src, sid) + size * (i + 1) - 8)
    where = (
        f"point is not on the twist {EQUATIONS[curve][1]}"
        if sid == POINTS_B2
        else f"point is not on the curve {EQUATIONS[curve][0]}"
    )
    for flags in ([], ["--no-verify"]):  # the key is validated either way
        r = _prove(*flags, bad, c.witness(0), tmp_path / "p.json", tmp_path / "q.json")
        assert r.exit_code == 1, r.output
        # a cold kernel cache adds the compile notice's lines (docs/prover.md)
        said = "".join(x for x in r.output.splitlines(True) if " compil" not in x)
        assert said == f"cuzk prove: {bad}: {SECTION_NAMES[sid]}[{i}]: {where}\n"
        assert not (tmp_path / "p.json").exists() and not (tmp_path / "q.json").exists()


def test_cuzk_prove_reads_each_point_section_of_its_key_once(tmp_path, monkeypatch):
    """The one-shot command checks each point section as the proof reads it: one read of each
    from the file (before, validation read every section and the proof read it again), and
    each is still checked on its curve, once. The full path's (cuzk.groth16.files), which the
    command takes where cuzk.groth16.lean declines (tests/test_lean.py: lean's reads)."""
    from cuzk.groth16 import lean, validate

    monkeypatch.setattr(lean, "prove", lambda *a, **kw: False)

    src = MULCHAIN.zkey
    offsets = {section_offset(src, sid): SECTION_NAMES[sid] for sid in SECTION_NAMES}
    reads, checked = [], []
    real_view = BinFile.view

    def view(self, offset, dtype, count):
        if self.path == str(src) and offset in offsets:
            reads.append(offsets[offset])
        return real_view(self, offset, dtype, count)

    real_check = validate.check_points
    monkeypatch.setattr(BinFile, "view", view)
    monkeypatch.setattr(
        validate,
        "check_points",
        lambda path, name, *a: checked.append(name) or real_check(path, name, *a),
    )
    r = _prove(src, MULCHAIN.witness(0), tmp_path / "p.json", tmp_path / "q.json")
    assert r.exit_code == 0, r.output
    sections = ["IC", "pointsA", "pointsB1", "pointsB2", "pointsC", "pointsH"]
    assert sorted(reads) == sections, reads  # IC with the header, the others as proved
    assert sorted(checked) == sections, checked


@pytest.mark.parametrize("curve", CURVES)
def test_cuzk_prove_verifies_by_default(tools, tmp_path, curve):
    """A witness that does not satisfy the circuit: refused by default, with the reason; with
    --no-verify the proof is written, and snarkjs rejects it (what the check costs to skip)."""
    from interop import groth16_verify

    c = CIRCUITS[curve]
    proof, public = tmp_path / "p.json", tmp_path / "q.json"
    r = _prove(c.zkey, c.bad_witness, proof, public)
    assert r.exit_code == 1 and "the proof does not verify" in r.output, r.output
    assert r.output.count("\n") == 1 and not proof.exists() and not public.exists()
    r = _prove("--no-verify", c.zkey, c.bad_witness, proof, public)
    assert r.exit_code == 0, r.output
    assert groth16_verify(c.vk, public, proof) is False
    r = _prove(c.zkey, c.witness(1), proof, public)
    assert r.exit_code == 0, r.output
    assert groth16_verify(c.vk, public, proof) is True


def test_the_engine_validates_a_key_once_per_file_and_refuses_a_damaged_one(tmp_path, monkeypatch):
    from cuzk.engine import Engine
    from cuzk.groth16 import validate

    calls = []
    real = validate.validate_key
    monkeypatch.setattr(
        validate, "validate_key", lambda z, *a, **kw: calls.append(z.path) or real(z, *a, **kw)
    )
    good = tmp_path / "good.zkey"
    shutil.copy(MULCHAIN.zkey, good)
    bad = damaged(tmp_path, good, section_offset(good, POINTS_H) + 64 * 5 + 56)
    eng = Engine(prover="cuzk.groth16")  # registration needs no running engine
    with pytest.raises(BadPoint, match=r"pointsH\[5\]"):
        eng.register_key(bad)
    assert eng.keys() == []
    kid = eng.register_key(good)
    assert eng.register_key(good) == kid and calls == [str(bad), str(good)]  # cached
    good.touch()  # a new mtime: validated again
    eng.register_key(good)
    assert calls == [str(bad), str(good), str(good)]


def test_the_daemon_refuses_a_damaged_key_at_registration(tmp_path):
    root = tmp_path / "keys"
    root.mkdir()
    shutil.copy(MULCHAIN.zkey, root / "good.zkey")
    bad = damaged(
        root, MULCHAIN.zkey, section_offset(MULCHAIN.zkey, POINTS_A) + 64 * 2, name="bad.zkey"
    )
    s = serve_daemon(
        tmp_path / "serve.log", root, "--state-dir", tmp_path / "state", memory="256MiB"
    ).start()
    try:
        code, _, body = request(s.url, "POST", "/v1/keys", {"path": str(bad)})
        assert code == 422, body  # 422: well-formed request, unusable key file (docs/api.md)
        assert body["error"] == (
            "path: not a usable proving key: pointsA[2]: point is not on the curve y^2 = x^3 + 3"
        )
        code, _, body = request(
            s.url, "POST", "/v1/jobs", {"key": str(bad), "witnesses": [str(root / "none.wtns")]}
        )
        assert code == 422 and "pointsA[2]" in body["error"], body
        assert request(s.url, "GET", "/v1/keys")[2]["keys"] == []
        code, _, body = request(s.url, "POST", "/v1/keys", {"path": str(root / "good.zkey")})
        assert code == 201, body
        # a witness entry of the wrong shape: the reason shows the accepted shapes as written
        code, _, body = request(
            s.url,
            "POST",
            "/v1/jobs",
            {"key": str(root / "good.zkey"), "witnesses": [{"file": "x"}]},
        )
        assert code == 400, body
        assert body["error"] == (
            'witnesses[0]: expected {"data": BASE64} or {"path": PATH} (or a path string)'
        )
        assert "validated in" in s.log()
    finally:
        assert s.stop() == 0
