"""tests/reference.py (pure-Python Groth16) against snarkjs: it verifies snarkjs's proofs,
rejects tampered ones, and its own proofs verify in snarkjs (interop)."""

from __future__ import annotations

import random

import pytest
import reference as ref
from py_ecc import optimized_bn128 as bn

from cuzk.arith.radix import limbs_to_ints
from cuzk.formats import (
    VerificationKey,
    ZKey,
    read_proof,
    read_public,
    read_wtns,
    write_proof,
    write_public,
)


def _witness(path) -> list[int]:
    return limbs_to_ints(read_wtns(path).values)


def test_roots_of_unity_have_exact_order():
    for k in (1, 2, 5, 10, 28):
        w = ref.root_of_unity(k)
        assert pow(w, 2**k, ref.R) == 1 and pow(w, 2 ** (k - 1), ref.R) == ref.R - 1
    assert ref.root_of_unity(11) ** 2 % ref.R == ref.root_of_unity(10)


def test_ntt_is_polynomial_evaluation():
    rng = random.Random(1)
    coeffs = [rng.randrange(ref.R) for _ in range(16)]
    w = ref.root_of_unity(4)
    evals = ref.ntt(coeffs, w)
    for i in (0, 1, 7, 15):
        x = pow(w, i, ref.R)
        assert evals[i] == sum(c * pow(x, j, ref.R) for j, c in enumerate(coeffs)) % ref.R
    assert ref.intt(evals, w) == coeffs


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_msm_matches_double_and_add(group):
    rng = random.Random(2)
    G, Z = (bn.G1, bn.Z1) if group == "g1" else (bn.G2, bn.Z2)
    points = [bn.multiply(G, rng.randrange(1, ref.R)) for _ in range(12)] + [Z]
    scalars = [rng.randrange(ref.R) for _ in points[:-3]] + [0, 1, ref.R - 1]
    assert bn.eq(ref.msm(points, scalars, Z), ref.msm_naive(points, scalars, Z))


def test_h_is_ab_minus_c_on_the_coset_and_divisible_by_z(circuit_named):
    """Schoolbook check of step 2: with A, B, C interpolated on the domain, A*B - C is
    divisible by Z = x^n - 1 (the witness satisfies every row), and h_on_coset holds its
    values at g w^i, g = w_2n."""
    c = circuit_named("mulchain")
    z = ZKey(c.zkey)
    a, b, cc = ref.synthesize(z, _witness(c.witness(0)))
    n, R = z.domain_size, ref.R
    omega, g = ref.root_of_unity(n.bit_length() - 1), ref.root_of_unity(n.bit_length())
    A, B, C = (ref.intt(v, omega) for v in (a, b, cc))
    P = [0] * (2 * n - 1)
    for i, x in enumerate(A):
        for j, y in enumerate(B):
            P[i + j] += x * y
    for i, x in enumerate(C):
        P[i] -= x
    assert all((P[i] + (P[i + n] if i + n < len(P) else 0)) % R == 0 for i in range(n))
    h = ref.h_on_coset(a, b, cc)
    for i in (0, 1, n - 1):
        x = g * pow(omega, i, R) % R
        assert h[i] == sum(coef * pow(x, j, R) for j, coef in enumerate(P)) % R


def test_reference_verifies_snarkjs_proofs(any_circuit):
    vk = VerificationKey(any_circuit.vk)
    ks = [0] if any_circuit.name == "toyhash" else range(any_circuit.n_sets)
    for k in ks:
        assert ref.verify(vk, read_public(any_circuit.public(k)), read_proof(any_circuit.proof(k)))


def test_reference_rejects_tampered_proofs_and_wrong_inputs(circuit_named):
    c = circuit_named("bits")
    vk = VerificationKey(c.vk)
    public, (pi_a, pi_b, pi_c) = read_public(c.public(0)), read_proof(c.proof(0))
    assert not ref.verify(vk, [public[0] + 1, *public[1:]], (pi_a, pi_b, pi_c))
    assert not ref.verify(vk, public[:-1], (pi_a, pi_b, pi_c))
    other_a = ref.g1_affine(bn.add(ref.g1_jac(pi_a), bn.G1))
    assert not ref.verify(vk, public, (other_a, pi_b, pi_c))
    assert not ref.verify(vk, public, (pi_a, pi_b, pi_a))
    # proof 1 with public signals of proof 0
    assert not ref.verify(vk, public, read_proof(c.proof(1)))


def test_reference_proofs_verify_and_are_blinded(circuit_named):
    c = circuit_named("mulchain")
    z, vk = ZKey(c.zkey), VerificationKey(c.vk)
    w = _witness(c.witness(1))
    pa, pb, pc, public = ref.prove(z, w, r=5, s=7)
    assert public == read_public(c.public(1))
    assert ref.verify(vk, public, (pa, pb, pc))
    assert ref.prove(z, w, r=5, s=7)[:3] == (pa, pb, pc)
    assert ref.prove(z, w)[:3] != (pa, pb, pc)


def test_reference_proof_of_bad_witness_does_not_verify(circuit_named):
    c = circuit_named("tiny")
    z, vk = ZKey(c.zkey), VerificationKey(c.vk)
    pa, pb, pc, public = ref.prove(z, _witness(c.bad_witness))
    assert not ref.verify(vk, public, (pa, pb, pc))


@pytest.mark.interop
def test_reference_proofs_verify_in_snarkjs(any_circuit, tools, tmp_path):
    from interop import groth16_verify

    z = ZKey(any_circuit.zkey)
    pa, pb, pc, public = ref.prove(z, _witness(any_circuit.witness(1)))
    write_proof(tmp_path / "proof.json", pa, pb, pc)
    write_public(tmp_path / "public.json", public)
    assert groth16_verify(any_circuit.vk, tmp_path / "public.json", tmp_path / "proof.json")
    assert (tmp_path / "public.json").read_bytes() == any_circuit.public(1).read_bytes()
    if any_circuit.name == "tiny":  # and snarkjs rejects the proof for other public inputs
        write_public(tmp_path / "public.json", [public[0] + 1, *public[1:]])
        assert not groth16_verify(any_circuit.vk, tmp_path / "public.json", tmp_path / "proof.json")
