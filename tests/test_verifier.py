"""Groth16 verification and `cuzk verify`: snarkjs-made fixture proofs, tampered proofs, wrong
public inputs, unusable input, and agreement with `snarkjs groth16 verify`."""

import copy
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from py_ecc import optimized_bn128 as bn

from cuzk.arith.constants import FQ_MODULUS, FR_MODULUS, G2_B, fq2_mul_int, fq2_pow_int
from cuzk.formats.errors import (
    BadJson,
    CountMismatch,
    FormatError,
    NotInField,
    NotInSubgroup,
    NotOnCurve,
    UnsupportedProtocol,
)
from cuzk.groth16.verifier import (
    BACKENDS,
    Proof,
    VerifyingKey,
    parse_public,
    verify,
    verify_files,
    verify_with_zkey,
)
from cuzk.groth16.verify_cli import verify as verify_cmd

q, r = FQ_MODULUS, FR_MODULUS


def load(circuit, k=0):
    vk = json.loads(circuit.vk.read_text())
    return vk, json.loads(circuit.public(k).read_text()), json.loads(circuit.proof(k).read_text())


def g1_ints(p):
    x, y = bn.normalize(p)
    return [str(int(x)), str(int(y)), "1"]


def py_g1(j):
    return (bn.FQ(int(j[0])), bn.FQ(int(j[1])), bn.FQ(1))


# --- a point on the twist outside G2 -------------------------------------------------------


def _f2_sqrt(a):
    """A square root in Fq2 for q = 3 mod 4 (Adj and Rodriguez-Henriquez 2012, Alg. 9), or
    None."""
    a1 = fq2_pow_int(a, (q - 3) // 4)
    alpha = fq2_mul_int(fq2_mul_int(a1, a1), a)
    x0 = fq2_mul_int(a1, a)
    if alpha == (q - 1, 0):
        x = fq2_mul_int((0, 1), x0)
    else:
        x = fq2_mul_int(fq2_pow_int(((1 + alpha[0]) % q, alpha[1]), (q - 1) // 2), x0)
    return x if fq2_mul_int(x, x) == a else None


def twist_point_outside_g2():
    for x0 in range(1, 100):
        x = (x0, 1)
        rhs = fq2_mul_int(fq2_mul_int(x, x), x)
        y = _f2_sqrt(((rhs[0] + G2_B[0]) % q, (rhs[1] + G2_B[1]) % q))
        if y is not None:
            pt = (bn.FQ2(list(x)), bn.FQ2(list(y)), bn.FQ2.one())
            assert bn.is_on_curve(pt, bn.b2)
            assert not bn.is_inf(bn.multiply(pt, r))  # not of order r
            return [[str(x[0]), str(x[1])], [str(y[0]), str(y[1])], ["1", "0"]]
    raise AssertionError("no twist point found")


# --- valid proofs --------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_snarkjs_fixture_proofs_verify(any_circuit, backend):
    for k in range(any_circuit.n_sets):
        c = any_circuit
        assert verify_files(c.vk, c.public(k), c.proof(k), backend=backend)


def test_unknown_backend_is_refused(circuit_named):
    vk, pub, proof = load(circuit_named("tiny"))
    with pytest.raises(ValueError, match="unknown verifier backend"):
        verify(vk, pub, proof, backend="gpu")


def test_projective_coordinates_are_accepted_like_snarkjs(circuit_named):
    vk, pub, proof = load(circuit_named("tiny"))
    z = 123456789
    x, y = int(proof["pi_a"][0]), int(proof["pi_a"][1])
    proof["pi_a"] = [str(x * z * z % q), str(y * z * z * z % q), str(z)]  # Jacobian
    assert verify(vk, pub, proof)


def test_verifying_key_from_zkey_and_self_check(circuit_named):
    from cuzk.formats import ZKey

    c = circuit_named("mulchain")
    vk_json, pub, proof = load(c)
    zkey = ZKey(c.zkey)
    vk = VerifyingKey.from_zkey(zkey)
    assert vk == VerifyingKey.from_json(vk_json)
    assert vk.alphabeta_12_json() == vk_json["vk_alphabeta_12"]
    p = Proof.from_json(proof)
    assert verify_with_zkey(zkey, parse_public(pub), (p.pi_a, p.pi_b, p.pi_c))
    assert not verify_with_zkey(
        zkey, [int(pub[0]) + 1] + parse_public(pub)[1:], (p.pi_a, p.pi_b, p.pi_c)
    )


# --- invalid proofs: well-formed, the pairing check fails -----------------------------------


def _neg_g1(j):
    return [j[0], str((q - int(j[1])) % q), "1"]


def _tamperings(circuit):
    """(name, vk, public, proof) cases that must verify False."""
    vk, pub, proof = load(circuit, 0)
    _, pub1, proof1 = load(circuit, 1)
    cases = []

    def case(name, pub_=pub, **changes):
        p = copy.deepcopy(proof)
        p.update(changes)
        cases.append((name, vk, pub_, p))

    case("pi_a negated", pi_a=_neg_g1(proof["pi_a"]))
    case("pi_c plus G1", pi_c=g1_ints(bn.add(py_g1(proof["pi_c"]), bn.G1)))
    pb = proof["pi_b"]
    case(
        "pi_b negated",
        pi_b=[pb[0], [str((q - int(pb[1][0])) % q), str((q - int(pb[1][1])) % q)], pb[2]],
    )
    case("pi_a and pi_c swapped", pi_a=proof["pi_c"], pi_c=proof["pi_a"])
    case("pi_b from the other proof", pi_b=proof1["pi_b"])
    case("pi_a at infinity", pi_a=["0", "1", "0"])
    case("pi_b at infinity", pi_b=[["0", "0"], ["1", "0"], ["0", "0"]])
    wrong = list(pub)
    wrong[-1] = str((int(wrong[-1]) + 1) % r)
    case("last public signal + 1", pub_=wrong)
    if pub != pub1:
        case("public signals of the other proof", pub_=pub1)
    return cases


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["tiny", "mulchain", "bits"])
def test_tampered_proofs_and_wrong_public_inputs_are_invalid(circuit_named, name, backend):
    for what, vk, pub, proof in _tamperings(circuit_named(name)):
        assert verify(vk, pub, proof, backend=backend) is False, what


# --- how a key's points are read: z coordinates (issue 29) ---------------------------------


def _with_point(vk, name, value, i=None):
    vk = copy.deepcopy(vk)
    if i is None:
        vk[name] = value
    else:
        vk[name][i] = value
    return vk


def _jacobian_g1(p, z):
    x, y = int(p[0]), int(p[1])
    return [str(x * z * z % q), str(y * z * z * z % q), str(z)]


def _jacobian_g2(p, z):
    (x0, x1), (y0, y1) = ([int(c) for c in p[0]], [int(c) for c in p[1]])
    z2, z3 = z * z % q, z * z * z % q  # z in Fq: scale each Fq2 coordinate
    return [
        [str(x0 * z2 % q), str(x1 * z2 % q)],
        [str(y0 * z3 % q), str(y1 * z3 % q)],
        [str(z), "0"],
    ]


def _z_cases(vk):
    """(name, vk with one point's z changed, cuzk's reading) for the tiny key (nPublic = 2):
    True/False a verdict (snarkjs's too), an exception class a refusal. snarkjs reads IC[0]
    and the other key points as Jacobian, IC[1..nPublic-1] as affine with z ignored, and
    fails on IC[nPublic] with z not 0 or 1 (cuzk.formats.snarkjs_json.ic_from_json)."""
    ic = vk["IC"]
    n = len(ic) - 1

    def ic_z(i, z):  # IC[i] with its x, y kept and z replaced
        return _with_point(vk, "IC", [*ic[i][:2], str(z)], i)

    def ic_jacobian(i, z):  # IC[i] written as the Jacobian triple of the same point
        return _with_point(vk, "IC", _jacobian_g1(ic[i], z), i)

    alpha = _jacobian_g1(vk["vk_alpha_1"], 5)
    delta = _jacobian_g2(vk["vk_delta_2"], 7)
    return [
        ("IC[0] Jacobian, z = 3", ic_jacobian(0, 3), True),
        ("IC[0] z = q - 1, x y kept (-IC[0])", ic_z(0, q - 1), False),
        ("IC[1] z = q - 1, x y kept", ic_z(1, q - 1), True),
        ("IC[1] z = 3, x y kept", ic_z(1, 3), True),
        ("IC[1] z = 0 (infinity)", ic_z(1, 0), False),
        ("IC[1] as [x, y]", _with_point(vk, "IC", ic[1][:2], 1), True),
        ("IC[1] Jacobian, z = 3: off the curve as affine", ic_jacobian(1, 3), NotOnCurve),
        (f"IC[{n}] z = q - 1", ic_z(n, q - 1), BadJson),
        (f"IC[{n}] Jacobian, z = 3", ic_jacobian(n, 3), BadJson),
        (f"IC[{n}] z = 0 (infinity)", ic_z(n, 0), False),
        ("vk_alpha_1 Jacobian, z = 5", _with_point(vk, "vk_alpha_1", alpha), True),
        ("vk_delta_2 Jacobian, z = 7", _with_point(vk, "vk_delta_2", delta), True),
    ]


@pytest.mark.parametrize("backend", BACKENDS)
def test_key_points_are_read_as_snarkjs_reads_them(circuit_named, backend):
    vk, pub, proof = load(circuit_named("tiny"))
    for what, vk_, expected in _z_cases(vk):
        if isinstance(expected, bool):
            assert verify(vk_, pub, proof, backend=backend) is expected, what
        else:
            with pytest.raises(expected) as info:
                verify(vk_, pub, proof, backend=backend)
            assert "\n" not in str(info.value), what


def _write_case(tmp_path, i, vk, pub, proof):
    paths = []
    for stem, obj in (("vk", vk), ("public", pub), ("proof", proof)):
        path = tmp_path / f"{stem}_{i}.json"
        path.write_text(json.dumps(obj))
        paths.append(path)
    return paths


@pytest.mark.interop
def test_verdicts_agree_with_snarkjs(tools, circuit_named, tmp_path):
    from interop import groth16_verify

    c = circuit_named("tiny")
    vk, pub, proof = load(c)
    cases = [("valid", vk, pub, proof)] + _tamperings(c)
    for i, (what, vk_, pub_, proof_) in enumerate(cases):
        paths = _write_case(tmp_path, i, vk_, pub_, proof_)
        ours = verify_files(*paths)
        assert ours == verify_files(*paths, backend="python") == groth16_verify(*paths), what
        assert ours == (what == "valid")


@pytest.mark.slow
@pytest.mark.interop
def test_key_point_readings_agree_with_snarkjs(tools, circuit_named, tmp_path):
    """The z cases of _z_cases through real snarkjs: every verdict is snarkjs's; where cuzk
    refuses, snarkjs fails too (IC[nPublic] with z not 0 or 1: a RangeError) or reads a
    point off the curve, which it does not check for the key's points (and says invalid)."""
    from interop import ToolError, groth16_verify

    vk, pub, proof = load(circuit_named("tiny"))
    for i, (what, vk_, expected) in enumerate(_z_cases(vk)):
        paths = _write_case(tmp_path, i, vk_, pub, proof)
        if isinstance(expected, bool):
            assert groth16_verify(*paths) is expected, what
            for backend in BACKENDS:
                assert verify_files(*paths, backend=backend) is expected, (what, backend)
        elif expected is NotOnCurve:
            assert groth16_verify(*paths) is False, what
        else:
            with pytest.raises(ToolError, match="RangeError"):
                groth16_verify(*paths)


# --- unusable input: a specific exception ---------------------------------------------------


def _mutations():
    """(name, target, mutate(obj) -> new obj, expected exception)."""

    def setp(key, value):
        def f(o):
            o = copy.deepcopy(o)
            o[key] = value(o)
            return o

        return f

    bad_g2 = twist_point_outside_g2()
    return [
        (
            "pi_a x not below q",
            "proof",
            setp("pi_a", lambda o: [str(q), o["pi_a"][1], "1"]),
            NotInField,
        ),
        (
            "pi_a off the curve",
            "proof",
            setp("pi_a", lambda o: [o["pi_a"][0], str((int(o["pi_a"][1]) + 1) % q), "1"]),
            NotOnCurve,
        ),
        (
            "pi_b off the twist",
            "proof",
            setp("pi_b", lambda o: [o["pi_b"][0], [o["pi_b"][1][1], o["pi_b"][1][0]], ["1", "0"]]),
            NotOnCurve,
        ),
        ("pi_b outside G2", "proof", setp("pi_b", lambda o: bad_g2), NotInSubgroup),
        ("pi_b wrong shape", "proof", setp("pi_b", lambda o: o["pi_b"][0]), BadJson),
        ("pi_c hex string", "proof", setp("pi_c", lambda o: ["0x1", "0x2", "1"]), BadJson),
        (
            "proof without pi_c",
            "proof",
            lambda o: {k: v for k, v in o.items() if k != "pi_c"},
            BadJson,
        ),
        ("proof protocol plonk", "proof", setp("protocol", lambda o: "plonk"), UnsupportedProtocol),
        # read as BLS12-381's, as it says: its BN254 points are not on that curve
        ("vk curve bls12381", "vk", setp("curve", lambda o: "bls12381"), NotOnCurve),
        ("vk curve mnt4", "vk", setp("curve", lambda o: "mnt4"), UnsupportedProtocol),
        ("vk gamma2 outside G2", "vk", setp("vk_gamma_2", lambda o: bad_g2), NotInSubgroup),
        ("vk IC short", "vk", setp("IC", lambda o: o["IC"][:-1]), CountMismatch),
        ("vk nPublic not a count", "vk", setp("nPublic", lambda o: "2"), BadJson),
        ("public signal = r", "public", lambda o: [str(r)] + o[1:], NotInField),
        ("public signal negative", "public", lambda o: ["-1"] + o[1:], BadJson),
        ("one public signal too many", "public", lambda o: o + ["1"], CountMismatch),
        ("one public signal too few", "public", lambda o: o[:-1], CountMismatch),
        ("public not a list", "public", lambda o: {"0": o[0]}, BadJson),
    ]


MUTATIONS = _mutations()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,target,mutate,exc", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_unusable_input_raises_a_specific_error(circuit_named, name, target, mutate, exc, backend):
    vk, pub, proof = load(circuit_named("tiny"))
    if target == "vk":
        vk = mutate(vk)
    elif target == "public":
        pub = mutate(pub)
    else:
        proof = mutate(proof)
    with pytest.raises(exc) as info:
        verify(vk, pub, proof, backend=backend)
    assert isinstance(info.value, FormatError)
    assert "\n" not in str(info.value)


# --- the command ---------------------------------------------------------------------------


def _run(*args):
    result = CliRunner().invoke(verify_cmd, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_cli_exit_codes(circuit_named, tmp_path):
    c = circuit_named("bits")
    code, out, _ = _run(c.vk, c.public(0), c.proof(0))
    assert code == 0 and "OK" in out

    code, _, err = _run(c.vk, c.public(1), c.proof(0))
    assert code == 1 and "INVALID" in err

    vk, pub, proof = load(c)
    bad = tmp_path / "public.json"
    bad.write_text(json.dumps([str(r)] + pub[1:]))
    code, _, err = _run(c.vk, bad, c.proof(0))
    assert code == 2
    assert err.count("\n") == 1 and "public.json[0]" in err and "below" in err

    garbage = tmp_path / "proof.json"
    garbage.write_text("{not json")
    code, _, err = _run(c.vk, c.public(0), garbage)
    assert code == 2 and err.count("\n") == 1 and "not valid JSON" in err

    code, _, err = _run(c.vk, c.public(0), tmp_path / "missing.json")
    assert code == 2 and err.count("\n") == 1 and "cannot read" in err


def test_cli_is_registered():
    from cuzk.cli import main

    result = CliRunner().invoke(main, ["verify", "--help"])
    assert result.exit_code == 0 and "VK_JSON PUBLIC_JSON PROOF_JSON" in result.output


def test_command_without_click_numpy_or_numba(circuit_named, tmp_path):
    """`cuzk verify VK PUBLIC PROOF` through the console script's fast path: the verdicts and
    exit codes of the click command, importing neither click nor numpy nor numba."""
    c = circuit_named("bits")
    bad = tmp_path / "public.json"
    bad.write_text(json.dumps([str(r)] + load(c)[1][1:]))
    code = (
        "import sys; from cuzk.console import main; sys.argv[0] = 'cuzk'; rc = main(); "
        "assert not {'click', 'numpy', 'numba'} & set(sys.modules), sys.modules.keys(); "
        "sys.exit(rc)"
    )
    for public, want, stream, text in (
        (c.public(0), 0, "stdout", "OK: the proof is valid"),
        (c.public(1), 1, "stderr", "INVALID"),
        (bad, 2, "stderr", "cuzk verify: unusable input: "),
    ):
        args = [str(c.vk), str(public), str(c.proof(0))]
        p = subprocess.run(
            [sys.executable, "-c", code, "verify", *args], capture_output=True, text=True
        )
        assert p.returncode == want, p.stderr[-2000:]
        assert getattr(p, stream).startswith(text) and getattr(p, stream).count("\n") == 1
        assert _run(*args)[0] == want  # the click command agrees


def test_fast_path_only_for_plain_command_lines(tmp_path):
    from cuzk.groth16.verify_cli import fast_args

    assert fast_args(["a", "b", "c"]) == ["a", "b", "c"]
    for argv in (["a", "b"], ["a", "b", "c", "d"], ["--help", "b", "c"], ["a", "-", "c"]):
        assert fast_args(argv) is None
    assert fast_args([str(tmp_path), "b", "c"]) is None  # click's usage error for a folder
