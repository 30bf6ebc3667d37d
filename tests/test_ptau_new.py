"""`cuzk ptau new` (cuzk.groth16.powers_of_tau): the development powers-of-tau maker. Its
points are the multiples of the generators its secrets say (py_ecc); its phase-2 sections are
the ones `snarkjs powersoftau prepare phase2` computes from its first seven, byte for byte;
`snarkjs plonk setup` and `cuzk setup --protocol plonk` make one key from it, whose proof
`snarkjs plonk verify` accepts; the same seed makes the same file; bad requests get one
line and exit 1, writing nothing."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from py_ecc import optimized_bn128 as bn

from cuzk.cli import main
from cuzk.formats.binfile import FILE_HEADER, SECTION_HEADER, BinFile
from cuzk.formats.curve import BN254
from cuzk.formats.ptau import PTau
from cuzk.formats.stored import g1_from_limbs, g2_from_limbs
from cuzk.groth16.powers_of_tau import draw_secrets

POWER, SEED = 6, "cuzk tests"  # 2^6 gates: the mulchain and nested fixtures' 2^5 domains fit


def _new(*args):
    return CliRunner().invoke(main, ["ptau", "new", "-q", *map(str, args)])


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    out = tmp_path_factory.mktemp("ptau") / f"pot{POWER}.ptau"
    res = _new(POWER, out, "--seed", SEED)
    assert res.exit_code == 0, res.output
    return out


def _affine(p):
    x, y = bn.normalize(p)
    return (
        (x.n, y.n)
        if isinstance(x, bn.FQ)
        else ((x.coeffs[0], x.coeffs[1]), (y.coeffs[0], y.coeffs[1]))
    )


def test_points_are_the_secrets_multiples(made):
    """The header, the section sizes (the reader's checks) and sampled points against py_ecc
    multiples of the generators by the seed's tau, alpha, beta."""
    p = PTau(made)
    assert (p.curve, p.power, p.ceremony_power, p.prepared) == (BN254, POWER, POWER, True)
    tau, alpha, beta = draw_secrets(BN254.r, POWER, SEED)
    r, n = BN254.r, 2**POWER
    g1 = p.tau_g1(2 * n - 1)
    assert g1_from_limbs(g1[0]) == _affine(bn.G1)
    assert g1_from_limbs(g1[2 * n - 2]) == _affine(bn.multiply(bn.G1, pow(tau, 2 * n - 2, r)))
    assert g2_from_limbs(p.tau_g2(n)[n - 1]) == _affine(bn.multiply(bn.G2, pow(tau, n - 1, r)))
    f = BinFile(made, "ptau", (1,))

    def point(sid, i, width):
        s = f.section(sid, str(sid))
        return f.limbs(s.offset + i * 8 * width, 1, width)[0]

    assert g1_from_limbs(point(4, 3, 8)) == _affine(bn.multiply(bn.G1, alpha * tau**3 % r))
    assert g1_from_limbs(point(5, 0, 8)) == _affine(bn.multiply(bn.G1, beta))
    assert g2_from_limbs(point(6, 0, 16)) == _affine(bn.multiply(bn.G2, beta))
    assert f.read_bytes(f.section(7, "contributions").offset, 4) == b"\0\0\0\0"
    # L_0 of the domain 2^1 at tau: (tau + 1)/2
    assert g1_from_limbs(p.lagrange_g1(1)[0]) == _affine(
        bn.multiply(bn.G1, (tau + 1) * pow(2, -1, r) % r)
    )


def test_same_seed_same_file(tmp_path):
    """A seed makes one file; without one, another (the OS's random source). 2^2: small."""
    one, again, other = (tmp_path / f"{name}.ptau" for name in ("one", "again", "other"))
    assert _new(2, one, "--seed", SEED).exit_code == 0
    assert _new(2, again, "--seed", SEED).exit_code == 0
    assert again.read_bytes() == one.read_bytes()
    assert _new(2, other).exit_code == 0
    assert other.stat().st_size == one.stat().st_size
    assert other.read_bytes() != one.read_bytes()


def _prepared_by_snarkjs(made, tmp_path):
    """`snarkjs powersoftau prepare phase2` of the file's sections 1-7 alone."""
    import interop

    f = BinFile(made, "ptau", (1,))
    raw = [FILE_HEADER.pack(b"ptau", 1, 7)]
    for sid in range(1, 8):
        s = f.section(sid, str(sid))
        raw += [SECTION_HEADER.pack(sid, s.size), f.read_bytes(s.offset, s.size)]
    unprepared, prepared = tmp_path / "raw.ptau", tmp_path / "prepared.ptau"
    unprepared.write_bytes(b"".join(raw))
    interop.snarkjs("powersoftau", "prepare", "phase2", unprepared, prepared)
    return prepared.read_bytes()


@pytest.mark.interop
def test_phase2_sections_equal_snarkjs(tools, made, tmp_path):
    """Sections 1-7 alone, prepared by `snarkjs powersoftau prepare phase2`: the same file."""
    assert _prepared_by_snarkjs(made, tmp_path) == made.read_bytes()


@pytest.mark.interop
def test_bls12_381(tools, circuit_named, tmp_path):
    """--curve bls12381 at 2^3: snarkjs's prepare phase2 gives the same file, and
    `snarkjs plonk setup` of tiny381 on it the key `cuzk setup --protocol plonk` writes."""
    import interop

    made, c = tmp_path / "pot3.ptau", circuit_named("tiny381")
    assert _new(3, made, "--curve", "bls12381", "--seed", SEED).exit_code == 0
    assert PTau(made).curve.name == "bls12381"
    assert _prepared_by_snarkjs(made, tmp_path) == made.read_bytes()
    ours, theirs = tmp_path / "cuzk.zkey", tmp_path / "snarkjs.zkey"
    res = CliRunner().invoke(
        main, ["setup", "--protocol", "plonk", "-q", str(c.r1cs), str(made), str(ours)]
    )
    assert res.exit_code == 0, res.output
    interop.plonk_setup(c.r1cs, made, theirs)
    assert ours.read_bytes() == theirs.read_bytes()


@pytest.mark.interop
def test_plonk_key_equal_snarkjs_and_proof_verifies(tools, circuit_named, made, tmp_path):
    """nested (additions, 14 public signals): `snarkjs plonk setup` and `cuzk setup
    --protocol plonk` on the made file write one key; `snarkjs plonk verify` accepts a
    `cuzk prove` proof on it."""
    import interop

    c = circuit_named("nested")
    ours, theirs = tmp_path / "cuzk.zkey", tmp_path / "snarkjs.zkey"
    runner = CliRunner()
    res = runner.invoke(
        main, ["setup", "--protocol", "plonk", "-q", str(c.r1cs), str(made), str(ours)]
    )
    assert res.exit_code == 0, res.output
    interop.plonk_setup(c.r1cs, made, theirs)
    assert ours.read_bytes() == theirs.read_bytes()
    vk = interop.export_vk(theirs, tmp_path / "vk.json")
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    res = runner.invoke(main, ["prove", str(ours), str(c.witness(0)), str(proof), str(public)])
    assert res.exit_code == 0, res.output
    assert interop.plonk_verify(vk, public, proof)
    assert not interop.plonk_verify(vk, c.plonk_public(1), proof)


@pytest.mark.parametrize(
    "args, message",
    [
        (["0"], "power 0 is out of range: BN254 files run from 1 to 27"),
        (["28"], "power 28 is out of range: BN254 files run from 1 to 27"),
        (["32", "--curve", "bls12381"], "power 32 is out of range: BLS12-381 files run from 1"),
        (["4", "--curve", "mnt4"], "unknown curve 'mnt4'"),
    ],
)
def test_bad_requests(tmp_path, args, message):
    out = tmp_path / "out.ptau"
    power, *rest = args
    res = _new(power, out, *rest)
    lines = res.output.strip().splitlines()
    assert res.exit_code == 1 and len(lines) == 1, res.output
    assert lines[0].startswith(f"cuzk ptau new: {message}")
    assert not out.exists()


def test_unwritable_output(tmp_path):
    out = tmp_path / "missing" / "out.ptau"
    res = _new(3, out)
    assert res.exit_code == 1
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cuzk ptau new: ") and "missing" in lines[0]
    assert not out.exists()
