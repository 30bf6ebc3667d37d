"""`cuzk setup --protocol plonk` (cuzk.plonk.setup): keys byte-identical to the committed
`snarkjs plonk setup` keys of the PLONK fixtures and to snarkjs's on a constraint system of
the gate builder's corner cases; its keys prove and verify (cuzk, and snarkjs once); the
refusals of inputs that do not fit, one line each."""

from __future__ import annotations

import struct

import pytest
from click.testing import CliRunner

from cuzk.cli import main
from cuzk.formats.binfile import FILE_HEADER, SECTION_HEADER, BinFile
from cuzk.formats.ptau import PTau

FIXTURE_PTAU = {"tiny381": "tiny381/pot3.ptau"}  # the others: pot10.ptau (BN254)


def _ptau(c):
    return c.dir.parent / FIXTURE_PTAU.get(c.name, "pot10.ptau")


def _setup(*args):
    return CliRunner().invoke(main, ["setup", "--protocol", "plonk", "-q", *map(str, args)])


def _container(kind: bytes, sections) -> bytes:
    out = [FILE_HEADER.pack(kind, 1, len(sections))]
    for sid, payload in sections:
        out += [SECTION_HEADER.pack(sid, len(payload)), payload]
    return b"".join(out)


def _smaller_ptau(src, dst, power: int) -> None:
    """The first 2^(power+1) - 1 tauG1 and 2^power tauG2 points of the ceremony `src` as an
    unprepared .ptau of that power (a ceremony's prefix is one of its own; no Lagrange
    sections): header, tauG1, tauG2 only."""
    f = BinFile(src, "ptau", (1,))
    p = PTau(src)
    head = f.section(1, "header")
    header = bytearray(f.read_bytes(head.offset, head.size))
    struct.pack_into("<I", header, 4 + p.curve.n8q, power)
    g1 = p.tau_g1(2 ** (power + 1) - 1).tobytes()
    g2 = p.tau_g2(2**power).tobytes()
    dst.write_bytes(_container(b"ptau", [(1, bytes(header)), (2, g1), (3, g2)]))


def test_keys_equal_snarkjs(plonk_circuit, tmp_path):
    """BN254 (mulchain), BN254 with additions and 14 public signals (nested), BLS12-381
    (tiny381): the key is the committed snarkjs key, byte for byte."""
    c = plonk_circuit
    out = tmp_path / "plonk.zkey"
    res = _setup(c.r1cs, _ptau(c), out)
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == c.plonk_zkey.read_bytes()


def test_unprepared_and_smaller_ceremony(circuit_named, tmp_path):
    """A ceremony without the Lagrange sections serves (the commitments come from tauG1):
    tiny's key from a 2^3 prefix of pot10 is snarkjs's key from pot10. nested (30 gates:
    2^5) does not fit it: one line, exit 1, nothing written."""
    pot3 = tmp_path / "pot3.ptau"
    _smaller_ptau(_ptau(circuit_named("tiny")), pot3, 3)
    assert not PTau(pot3).prepared
    tiny, nested = circuit_named("tiny"), circuit_named("nested")
    out = tmp_path / "tiny.zkey"
    res = _setup(tiny.r1cs, pot3, out)
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == tiny.plonk_zkey.read_bytes()
    out = tmp_path / "nested.zkey"
    res = _setup(nested.r1cs, pot3, out)
    assert res.exit_code == 1
    assert res.output == (
        f"cuzk setup: {pot3}: powers of tau of 2^3 are too few for this circuit: its 30 PLONK "
        "gates (10 constraints, 14 public, 6 additions) need 2^5\n"
    )
    assert not out.exists()


def test_bad_inputs(circuit_named, tmp_path):
    nested, bls = circuit_named("nested"), circuit_named("tiny381")
    out = tmp_path / "k.zkey"
    cases = [
        # another curve's ceremony
        ((nested.r1cs, _ptau(bls), out), "the circuit's prime is not BLS12-381's scalar field r"),
        ((bls.r1cs, _ptau(nested), out), "the circuit's prime is not BN254's scalar field r"),
        # not a .ptau
        ((nested.r1cs, nested.plonk_zkey, out), "not a .ptau file (magic b'zkey'"),
        ((nested.r1cs, nested.r1cs, out), "not a .ptau file (magic b'r1cs'"),
        # the output over an input
        ((nested.r1cs, _ptau(nested), _ptau(nested)), "writing it would destroy the input"),
    ]
    for args, reason in cases:
        res = _setup(*args)
        assert res.exit_code == 1, res.output
        lines = res.output.splitlines()
        assert len(lines) == 1 and lines[0].startswith("cuzk setup: ") and reason in lines[0]
    assert not out.exists()
    truncated = tmp_path / "short.ptau"
    truncated.write_bytes(_ptau(nested).read_bytes()[:-100])
    res = _setup(nested.r1cs, truncated, out)
    assert res.exit_code == 1 and len(res.output.splitlines()) == 1
    # the file count of each protocol: a usage error (exit 2)
    res = _setup(nested.r1cs, out)
    assert res.exit_code == 2 and "--protocol plonk takes R1CS PTAU ZKEY" in res.output
    res = CliRunner().invoke(main, ["setup", str(nested.r1cs), str(_ptau(nested)), str(out)])
    assert res.exit_code == 2 and "--protocol groth16 takes R1CS ZKEY" in res.output
    assert not out.exists()


def test_key_proves_and_verifies(circuit_named, tmp_path):
    """A cuzk-made key (nested: additions) proves with `cuzk prove`; `cuzk verify` accepts
    the proof on the key's exported verification key and refuses another witness's signals."""
    c = circuit_named("nested")
    key, vk = tmp_path / "plonk.zkey", tmp_path / "vk.json"
    assert _setup(c.r1cs, _ptau(c), key).exit_code == 0
    runner = CliRunner()
    res = runner.invoke(main, ["export-vk", str(key), str(vk)])
    assert res.exit_code == 0, res.output
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    res = runner.invoke(main, ["prove", str(key), str(c.witness(0)), str(proof), str(public)])
    assert res.exit_code == 0, res.output
    assert public.read_text() == c.plonk_public(0).read_text()
    assert runner.invoke(main, ["verify", str(vk), str(public), str(proof)]).exit_code == 0
    res = runner.invoke(main, ["verify", str(vk), str(c.plonk_public(1)), str(proof)])
    assert res.exit_code == 1


# --- the gate builder's corner cases against snarkjs ---------------------------------------

R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
# wires: 0 one, 1 public output, 2 public input, 3 4 private inputs, 5 6 internal
N_WIRES = 7
CORNER_CASES = [
    # A·B = C with A, B, C lists of (wire, factor), in the order written
    ([(1, 3)], [(2, 1)], [(0, 7), (3, 1), (4, 5), (5, 2)]),  # C of 3 signals: additions
    ([(0, 4)], [(3, 2), (4, 1)], [(5, 1)]),  # A constant: the sum 4·B - C
    ([], [(1, 1)], [(2, 1), (3, 1), (4, 1), (5, 1)]),  # A empty: C alone, 4 signals
    ([(3, 0), (4, 1)], [(0, 1), (5, 2)], [(1, 1)]),  # a zero factor is kept
    ([(6, 1), (2, 5), (2, 9)], [(4, 1)], []),  # a signal written twice: the last; C empty
    ([(3, 1)], [(0, 0)], [(0, 3)]),  # B constant zero
    ([(0, 2)], [(0, 3)], [(0, 6)]),  # both constant
    ([(4, 1), (3, R - 1)], [(6, 2), (5, 1)], [(6, 1), (2, 1)]),  # out of order: sorted
    ([(1, 1), (2, 1), (3, 1), (4, 1), (5, 1)], [(3, 1)], [(4, 1), (0, 1)]),  # A reduced
]


def _corner_r1cs(path) -> None:
    def lc(terms):
        return struct.pack("<I", len(terms)) + b"".join(
            struct.pack("<I", w) + f.to_bytes(32, "little") for w, f in terms
        )

    header = (
        struct.pack("<I", 32)
        + R.to_bytes(32, "little")
        + struct.pack("<4IQI", N_WIRES, 1, 1, 2, N_WIRES, len(CORNER_CASES))
    )
    constraints = b"".join(lc(a) + lc(b) + lc(c) for a, b, c in CORNER_CASES)
    path.write_bytes(_container(b"r1cs", [(1, header), (2, constraints)]))


@pytest.mark.interop
def test_corner_cases_equal_snarkjs(tools, circuit_named, tmp_path):
    """Constant, empty and reduced combinations, zero factors, a repeated and unsorted
    signals: the key is `snarkjs plonk setup`'s of the same files."""
    import interop

    r1cs = tmp_path / "corners.r1cs"
    _corner_r1cs(r1cs)
    ptau = _ptau(circuit_named("tiny"))
    ours, theirs = tmp_path / "cuzk.zkey", tmp_path / "snarkjs.zkey"
    res = _setup(r1cs, ptau, ours)
    assert res.exit_code == 0, res.output
    interop.plonk_setup(r1cs, ptau, theirs)
    assert ours.read_bytes() == theirs.read_bytes()


@pytest.mark.interop
def test_snarkjs_verifies_a_proof_on_a_cuzk_key(tools, circuit_named, tmp_path):
    """mulchain's key by cuzk, its verification key exported by snarkjs, a proof by cuzk:
    `snarkjs plonk verify` accepts it."""
    import interop

    c = circuit_named("mulchain")
    key = tmp_path / "plonk.zkey"
    assert _setup(c.r1cs, _ptau(c), key).exit_code == 0
    vk = interop.export_vk(key, tmp_path / "vk.json")
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    res = CliRunner().invoke(main, ["prove", str(key), str(c.witness(1)), str(proof), str(public)])
    assert res.exit_code == 0, res.output
    assert interop.plonk_verify(vk, public, proof)


def test_key_writer_streams_a_declared_section(tmp_path):
    """A section made chunk by chunk under its declared size (the Lagrange polynomials: one
    public signal's at a time) is the one written from a list; a size that differs from
    what the chunks hold is an error, not a key with a wrong section header."""
    import numpy as np

    from cuzk.plonk.setup import _KeyWriter

    chunks = [np.arange(8, dtype=np.uint64).reshape(2, 4), b"\x01\x02\x03"]
    with open(tmp_path / "listed", "wb") as f:
        _KeyWriter(f, 1).section(13, chunks)
    with open(tmp_path / "streamed", "wb") as f:
        _KeyWriter(f, 1).section(13, iter(chunks), nbytes=67)
    assert (tmp_path / "listed").read_bytes() == (tmp_path / "streamed").read_bytes()
    with open(tmp_path / "short", "wb") as f, pytest.raises(ValueError, match="section 13"):
        _KeyWriter(f, 1).section(13, iter(chunks), nbytes=99)
