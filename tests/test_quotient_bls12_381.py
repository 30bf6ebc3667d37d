"""Synthesis and the quotient h on BLS12-381 against snarkjs's own setup: the tiny381 fixture
(circom2 -p bls12381, a snarkjs bls12381 ceremony). The zkey's H points are the odd-coset
Lagrange basis snarkjs built with its roots of unity (zkey_new.js takes the odd points of the
powers of tau's Lagrange section, which wasmcurves' FFT computed), so a proof whose H term
is sum h_i H_i verifies only if cuzk's h is on snarkjs's coset, in snarkjs's order: the
strongest check that cuzk's BLS12-381 roots are snarkjs's. The group sums are py_ecc's
(tests/reference.py unblinded_proof), the pairing cuzk's verifier on Python ints."""

from __future__ import annotations

import json

import numpy as np
import pytest
import reference
from conftest import fixture_circuit

from cuzk.arith import bls12_381
from cuzk.arith.radix import limbs_to_ints
from cuzk.formats import R1CS, ZKey, read_wtns, zkey_coef_to_int
from cuzk.groth16 import synthesis
from cuzk.groth16.verifier import Proof, VerifyingKey, verify
from cuzk.kernels import ntt_cpu

DIR = fixture_circuit("tiny381").dir
CURVE = "bls12_381"
R = bls12_381.FR_MODULUS


def _witness(k: int) -> np.ndarray:
    return np.ascontiguousarray(read_wtns(DIR / f"witness_{k}.wtns").values)


def _ints_from_mont(x) -> list[int]:
    r_inv = pow(1 << 256, -1, R)
    return [v * r_inv % R for v in limbs_to_ints(x)]


def test_quotient_makes_the_snarkjs_key_verify():
    zkey = ZKey(DIR / "circuit.zkey")
    assert zkey.curve == "bls12381"
    w = _witness(0)
    wi = limbs_to_ints(w)
    # step 1 (synthesis) against the zkey's coefficients in Python ints
    a, b, c = synthesis.evaluate_abc(zkey.coefficients, w, zkey.domain_size, curve=CURVE)
    ab = [[0] * zkey.domain_size, [0] * zkey.domain_size]
    for m, row, s, v in zkey.coefficients:
        ab[int(m)][int(row)] += zkey_coef_to_int(v, "bls12381") * wi[int(s)]
    ab = [[x % R for x in vec] for vec in ab]
    abc = [_ints_from_mont(x) for x in (a, b, c)]
    assert abc == [*ab, [x * y % R for x, y in zip(*ab, strict=True)]]
    # step 2 (the quotient) against snarkjs's, in Python ints
    h = limbs_to_ints(ntt_cpu.compute_h(a, b, c, curve=CURVE))
    assert h == reference.h_on_coset(*abc, R)

    vk_json = json.loads((DIR / "verification_key.json").read_text())
    vk = VerifyingKey.from_json(vk_json, backend="python")
    public = wi[1 : zkey.n_public + 1]

    def verifies(h_values) -> bool:
        points = reference.unblinded_proof(zkey, wi, h_values)
        proof = Proof.from_points(*points, backend="python", curve=vk.curve)
        return verify(vk, public, proof, "python")

    assert verifies(h)
    # another primitive root (w[k]^-1 for every k: the same domain, in another order) does
    # not give snarkjs's H term
    inverse_roots = [pow(x, -1, R) for x in reference.snarkjs_roots(R)]
    assert not verifies(reference.h_on_coset(*abc, R, roots=inverse_roots))


def test_first_unsatisfied_reads_the_curve_from_the_r1cs():
    r1cs = R1CS(DIR / "circuit.r1cs")
    good = _witness(1)  # set 1 has a value above BN254's r
    assert synthesis.first_unsatisfied(r1cs, good) is None
    assert synthesis.first_unsatisfied(r1cs, good, curve=CURVE) is None
    bad = good.copy()
    bad[-1, 0] ^= np.uint64(1)
    assert synthesis.first_unsatisfied(r1cs, bad) == r1cs.first_unsatisfied(limbs_to_ints(bad))
    with pytest.raises(ValueError, match="bls12_381"):
        synthesis.first_unsatisfied(r1cs, good, curve="bn254")
