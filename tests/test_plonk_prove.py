"""The PLONK prover (cuzk.plonk.prover, `cuzk prove` on a PLONK key): proofs that cuzk's
verifier and `snarkjs plonk verify` accept, of the public signals snarkjs writes; refused
witnesses; the prover's kernel steps against Python-int computation."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from cuzk.cli import main
from cuzk.plonk import prover
from cuzk.plonk.verifier import verify_files

R = 21888242871839275222246405745257275088548364400416034343698204186575808495617


def _prove(*args):
    return CliRunner().invoke(main, ["prove", *map(str, args)])


def _proved(c, k, tmp_path, *flags):
    proof, public = tmp_path / f"proof_{k}.json", tmp_path / f"public_{k}.json"
    res = _prove(*flags, c.plonk_zkey, c.witness(k), proof, public)
    assert res.exit_code == 0, res.output
    return proof, public


def test_proofs_verify(plonk_circuit, tmp_path):
    """Both witnesses of each PLONK fixture (BN254, with additions, BLS12-381): the proof
    verifies, the public signals are snarkjs's, a changed signal is refused."""
    c = plonk_circuit
    for k in (0, 1):
        proof, public = _proved(c, k, tmp_path)
        assert public.read_text() == c.plonk_public(k).read_text()
        obj = json.loads(proof.read_text())
        assert list(obj)[-2:] == ["protocol", "curve"] and obj["protocol"] == "plonk"
        assert verify_files(c.plonk_vk, public, proof)
        assert not verify_files(c.plonk_vk, c.plonk_public(1 - k), proof)


def test_blinding_is_fresh(circuit_named, tmp_path):
    c = circuit_named("mulchain")
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
    (p0, _), (p1, pub) = _proved(c, 0, tmp_path / "a"), _proved(c, 0, tmp_path / "b")
    a, b = json.loads(p0.read_text()), json.loads(p1.read_text())
    assert all(a[k] != b[k] for k in ("A", "B", "C", "Z", "T1", "T2", "T3", "Wxi", "Wxiw"))
    assert verify_files(c.plonk_vk, pub, p0) and verify_files(c.plonk_vk, pub, p1)


def test_unsatisfying_witness_refused(circuit_named, tmp_path):
    c = circuit_named("nested")
    proof, public = tmp_path / "p.json", tmp_path / "pub.json"
    res = _prove(c.plonk_zkey, c.bad_witness, proof, public)
    assert res.exit_code == 1
    assert res.output.startswith("cuzk prove: the witness does not satisfy PLONK gate ")
    assert len(res.output.strip().splitlines()) == 1
    res = _prove("--r1cs", c.r1cs, c.plonk_zkey, c.bad_witness, proof, public)
    assert res.exit_code == 1 and "does not satisfy constraint" in res.output
    assert not proof.exists() and not public.exists()


def test_quotient_check_catches_a_broken_gate(circuit_named, monkeypatch):
    """With the gate check taken out, the quotient's degree still refuses the witness."""
    from cuzk.formats.plonk_zkey import PlonkZKey
    from cuzk.formats.wtns import read_wtns

    c = circuit_named("mulchain")
    monkeypatch.setattr(prover, "check_gates", lambda *a: None)
    with pytest.raises(prover.ProveError, match="quotient is not a polynomial"):
        prover.prove(PlonkZKey(c.plonk_zkey), read_wtns(c.bad_witness).values)


def test_witness_of_another_circuit_refused(circuit_named, tmp_path):
    c, other = circuit_named("nested"), circuit_named("mulchain")
    res = _prove(c.plonk_zkey, other.witness(0), tmp_path / "p.json", tmp_path / "q.json")
    assert res.exit_code == 1 and "nVars - nAdditions = 28 - 6 = 22" in res.output


def test_evaluation_and_division():
    from cuzk.formats.curve import BN254
    from cuzk.plonk.fr import FrOps

    ops = FrOps(BN254)
    rng = random.Random(7)
    x = rng.randrange(R)
    for m in (1, 2, 9, 64):
        coefs = [rng.randrange(R) for _ in range(m)]
        value = sum(c * pow(x, i, R) for i, c in enumerate(coefs)) % R
        assert ops.evaluate(ops.from_ints(coefs), x) == value
    # p(X) - p(x) divided by X - x, multiplied back
    p = list(coefs)
    p[0] = (p[0] - value) % R
    q = ops.to_ints(prover.divide_by_linear(ops.from_ints(p), x, ops))
    back = [0] * len(p)
    for i, c in enumerate(q):
        back[i + 1] = (back[i + 1] + c) % R
        back[i] = (back[i] - x * c) % R
    assert back == p
    with pytest.raises(prover.ProveError):
        prover.divide_by_linear(ops.from_ints(coefs), x, ops)


@pytest.mark.interop
def test_snarkjs_accepts(tools, circuit_named, tmp_path):
    """`snarkjs plonk verify` accepts cuzk's proofs (BN254 with additions, BLS12-381) and
    refuses one with a changed public signal."""
    from interop import plonk_verify

    for name in ("nested", "tiny381"):
        c = circuit_named(name)
        proof, public = _proved(c, 1, tmp_path)
        assert plonk_verify(c.plonk_vk, public, proof), name
        signals = json.loads(public.read_text())
        signals[0] = str(int(signals[0]) + 1)
        public.write_text(json.dumps(signals))
        assert not plonk_verify(c.plonk_vk, public, proof), name


def test_fullprove(circuit_named, tmp_path):
    """`cuzk fullprove` with a PLONK key: the witness from the inputs, then the proof."""
    c = circuit_named("nested")
    proof, public = tmp_path / "p.json", tmp_path / "pub.json"
    res = CliRunner().invoke(
        main, ["fullprove", *map(str, (c.input(1), c.wasm, c.plonk_zkey, proof, public))]
    )
    assert res.exit_code == 0, res.output
    assert public.read_text() == c.plonk_public(1).read_text()
    assert verify_files(c.plonk_vk, public, proof)
    other = circuit_named("mulchain")
    res = CliRunner().invoke(
        main, ["fullprove", *map(str, (other.input(0), other.wasm, c.plonk_zkey, proof, public))]
    )
    assert res.exit_code == 1 and "additions) has nVars = 22" in res.output, res.output


def test_copy_check_catches_a_rewired_gate(circuit_named, monkeypatch):
    """A gate that reads another signal than the key's permutation joins it to (its a wire
    moved, the gate check taken out): the permutation product does not close."""
    import numpy as np

    from cuzk.formats.plonk_zkey import PlonkZKey
    from cuzk.formats.wtns import read_wtns

    c = circuit_named("mulchain")
    key = PlonkZKey(c.plonk_zkey)

    class Rewired:
        def __getattr__(self, name):
            return getattr(key, name)

    rewired = Rewired()
    a_map = np.array(key.a_map)
    gate = key.n_public + 2  # a circuit gate, after the public ones
    a_map[gate] = next(s for s in range(1, key.n_vars) if s != a_map[gate])
    rewired.a_map = a_map
    monkeypatch.setattr(prover, "check_gates", lambda *a: None)
    with pytest.raises(prover.ProveError, match="copy constraints"):
        prover.prove(rewired, read_wtns(c.witness(0)).values)


@pytest.mark.interop
def test_no_public_signals(tools, tmp_path):
    """A circuit without public signals (nPublic = 0): snarkjs accepts cuzk's proof."""
    import interop

    compiled = interop.compile_circuit(interop.ROOT / "tests/circuits/private.circom", tmp_path)
    wtns = interop.calculate_witness(compiled.wasm, {"a": 3, "b": 5}, tmp_path / "w.wtns")
    ptau = interop.ROOT / "tests/fixtures/pot10.ptau"
    zkey = interop.plonk_setup(compiled.r1cs, ptau, tmp_path / "k.zkey")
    vk = interop.export_vk(zkey, tmp_path / "vk.json")
    proof, public = tmp_path / "p.json", tmp_path / "pub.json"
    res = _prove(zkey, wtns, proof, public)
    assert res.exit_code == 0, res.output
    assert json.loads(public.read_text()) == []
    assert interop.plonk_verify(vk, public, proof) and verify_files(vk, public, proof)


def test_public_inputs_on_the_domain_of_4n_from_l1_rolled(circuit_named, monkeypatch):
    """qC + PI on the domain of 4n: L1's values rolled by 4i (a few public signals) equal the
    NTT of PI's coefficients (many), and zero public signals leave qC."""
    import numpy as np

    from cuzk.plonk.fr import FrOps
    from cuzk.plonk.key import ProvingKey

    key = ProvingKey.open(circuit_named("mulchain").plonk_zkey).zkey
    ops = FrOps(key.curve_info)
    ext = prover.extended(key, ops)
    n = key.domain_size
    public = [random.randrange(R) for _ in range(3)]
    pi_h = np.zeros((n, 4), np.uint64)
    pi_h[:3] = ops.from_ints([-p for p in public])
    rolled = prover.pi_extended(ext["qc"], ext["l1"], public, pi_h, ops)
    monkeypatch.setattr(prover, "PI_ROLLS_MAX", 0)
    by_ntt = prover.pi_extended(ext["qc"], ext["l1"], public, pi_h, ops)
    assert np.array_equal(rolled, by_ntt) and not np.array_equal(rolled, ext["qc"])
    assert np.array_equal(prover.pi_extended(ext["qc"], ext["l1"], [], pi_h * 0, ops), ext["qc"])


def test_quotient_from_the_domain_of_4n(circuit_named):
    """Round 3's pieces against schoolbook polynomial products in Python ints: the
    numerator's coefficients past 4n (numerator_high: only alpha (z idf - z(wX) sgf) gets
    there), and Z_H divided out of N folded modulo X^4n - 1 (divide_by_zh), which refuses an
    N that Z_H does not divide."""
    import numpy as np

    from cuzk.arith.curves import constants
    from cuzk.plonk.fr import FrOps
    from cuzk.plonk.key import ProvingKey

    key = ProvingKey.open(circuit_named("mulchain").plonk_zkey).zkey
    ops = FrOps(key.curve_info)
    n, rng = key.domain_size, random.Random(5)

    def mul(p, q):
        out = [0] * (len(p) + len(q) - 1)
        for i, x in enumerate(p):
            for j, y in enumerate(q):
                out[i + j] = (out[i + j] + x * y) % R
        return out

    def add(p, q):
        m = max(len(p), len(q))
        return [
            (x + y) % R for x, y in zip(p + [0] * (m - len(p)), q + [0] * (m - len(q)), strict=True)
        ]

    wires = [[rng.randrange(R) for _ in range(n + 2)] for _ in range(3)]
    z = [rng.randrange(R) for _ in range(n + 3)]
    beta, gamma, alpha = (rng.randrange(R) for _ in range(3))
    k = [1, key.k1, key.k2]
    w = constants("bn254").fr_roots_of_unity()[key.power]
    idf, sgf = z, [x * pow(w, i, R) % R for i, x in enumerate(z)]
    for j, (p, s) in enumerate(zip(wires, (key.s1, key.s2, key.s3), strict=True)):
        idf = mul(idf, add(p, [gamma, beta * k[j] % R]))
        sgf = mul(sgf, add(add(p, [gamma]), [beta * x % R for x in ops.to_ints(s.coefficients)]))
    perm = [alpha * (x - y) % R for x, y in zip(idf, sgf, strict=True)]
    assert len(perm) == 4 * n + 6
    as_limbs = [ops.from_ints(p) for p in wires]
    high = prover.numerator_high(key, as_limbs, ops.from_ints(z), beta, alpha, ops)
    assert high == perm[4 * n :]

    t = [rng.randrange(R) for _ in range(3 * n + 6)]
    N = add([-x % R for x in t], [0] * n + t)  # t (X^n - 1)
    folded = [(N[i] + (N[i + 4 * n] if i < 6 else 0)) % R for i in range(4 * n)]
    got = prover.divide_by_zh(ops.from_ints(folded), N[4 * n :], n, ops)
    assert ops.to_ints(got) == t
    folded[3] += 1
    with pytest.raises(prover.ProveError, match="quotient is not a polynomial"):
        prover.divide_by_zh(ops.from_ints(folded), N[4 * n :], n, ops)
    assert np.array_equal(ops.from_ints(t), got)
