"""The PLONK prover on CUDA: cuzk.plonk.fr.CudaFrOps against the CPU's FrOps step by step
(transforms, elementwise steps, the permutation factors, the quotient, a commitment), and a
whole proof on the dispatching prover's CUDA device (cuzk.prover.open_device("cuda"), the
key resident on the GPU) equal to the CPU's with the same blinding, accepted by cuzk's PLONK
verifier and by `snarkjs plonk verify`.

Without a GPU the kernels run in numba's CUDA simulator (tests/conftest.py), which is slow
(an MSM of 14 points takes seconds there: the proof runs on tiny's key, n = 8); with
CUZK_TEST_CUDA=gpu on a GPU machine (bench/gpu_check.sh) they run on the GPU.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from conftest import fixture_circuit, one_cpu_under_simulator

import cuzk.prover
from cuzk.arith.jit import cuda_available
from cuzk.formats import curve as curves
from cuzk.formats.plonk_zkey import PlonkZKey
from cuzk.formats.wtns import read_wtns
from cuzk.plonk import prover, stages
from cuzk.plonk.fr import CudaFrOps, FrOps, on_device

pytestmark = [
    pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU and no simulator"),
    pytest.mark.cuda,  # under the simulator: on one CPU (conftest.simulator_on_one_cpu)
]

CURVES = {"bn254": curves.BN254, "bls12_381": curves.BLS12_381}


def _ops(name):
    curve = CURVES[name]
    return FrOps(curve), CudaFrOps(curve)


def _random(ops, m: int, rng) -> np.ndarray:
    return ops.from_ints([rng.randrange(ops.r) for _ in range(m)])


def _host(a):
    return a.copy_to_host() if on_device(a) else a


@pytest.mark.parametrize("name", CURVES)
def test_transforms_match_cpu(name):
    """intt, coset_evaluations (kept on the device) and coset_coefficients (back on the
    host, from a device or a host vector) give the CPU's values; round trips are exact."""
    cpu, gpu = _ops(name)
    rng = random.Random(1)
    v = _random(cpu, 8, rng)
    before = v.copy()
    got = gpu.intt(v)
    assert isinstance(got, np.ndarray) and np.array_equal(got, cpu.intt(v))
    assert np.array_equal(v, before)  # intt leaves its input alone, as the CPU's
    coefs = _random(cpu, 10, rng)
    ev = gpu.coset_evaluations(coefs, 32)
    assert on_device(ev)
    want = cpu.coset_evaluations(coefs, 32)
    assert np.array_equal(ev.copy_to_host(), want)
    back = gpu.coset_coefficients(ev)
    assert isinstance(back, np.ndarray)
    assert np.array_equal(back[:10], coefs) and not back[10:].any()
    host = want.copy()
    assert gpu.coset_coefficients(host) is host and np.array_equal(host[:10], coefs)


def test_elementwise_match_cpu():
    """scale, copy and roll leave device vectors; axpy adds into a device vector on the GPU
    and into a host one on the host; both equal the CPU's."""
    cpu, gpu = _ops("bn254")
    rng = random.Random(2)
    a, x = _random(cpu, 32, rng), _random(cpu, 32, rng)
    k = rng.randrange(cpu.r)
    for got, want in (
        (gpu.scale(a, k), cpu.scale(a, k)),
        (gpu.copy(a), a),
        (gpu.roll(a, 12), np.roll(a, 12, axis=0)),
        (gpu.roll(gpu.to_device(a), 0), a),
    ):
        assert on_device(got) and np.array_equal(got.copy_to_host(), want)
    acc = gpu.to_device(a)
    gpu.axpy(acc, gpu.to_device(x[:20]), k)
    want = a.copy()
    cpu.axpy(want, x[:20], k)
    assert np.array_equal(acc.copy_to_host(), want)
    host = a.copy()
    gpu.axpy(host, gpu.to_device(x[:20]), k)
    assert np.array_equal(host, want)


@pytest.mark.parametrize("name", CURVES)
def test_permutation_and_quotient_match_cpu(name):
    """The permutation factors (GPU) and their running product (host) give the CPU's z and
    closing value; the quotient kernel the CPU kernel's values, into a device or a host out
    (which may be a, as the prover passes it)."""
    cpu, gpu = _ops(name)
    rng = random.Random(3)
    r = cpu.r
    n = 8
    vec = [_random(cpu, n, rng) for _ in range(7)]  # a, b, c, x, s1, s2, s3
    consts = cpu.constants(beta=rng.randrange(r), gamma=rng.randrange(r), k1=2, k2=3)
    z, last = gpu.grand_product(*vec, consts)
    z_cpu, last_cpu = cpu.grand_product(*vec, consts)
    assert last == last_cpu and last not in (0, 1)  # random wires: no copy constraint holds
    assert np.array_equal(z, z_cpu)

    m = 4 * n
    vec = [_random(cpu, m, rng) for _ in range(14)]
    zh_inv = [rng.randrange(r) for _ in range(4)]
    k = cpu.constants(
        beta=rng.randrange(r), gamma=rng.randrange(r), k1=2, k2=3, alpha=rng.randrange(r),
        zh_inv=zh_inv,
    )  # fmt: skip
    want = cpu.quotient(np.empty((m, 4), np.uint64), *vec, k)
    dev = [gpu.to_device(v) for v in vec]
    got = gpu.quotient(dev[0], *dev, k)  # out = a, on the device
    assert got is dev[0] and np.array_equal(got.copy_to_host(), want)
    host = vec[0].copy()
    assert gpu.quotient(host, host, *vec[1:], k) is host  # out = a, on the host
    assert np.array_equal(host, want)


def test_commit_matches_cpu():
    """A commitment by the CUDA G1 MSM (the coefficients leave Montgomery form on the GPU)
    equals the CPU's, with the powers of tau copied in for the call; too many coefficients
    are refused."""
    cpu, gpu = _ops("bn254")
    key = PlonkZKey(fixture_circuit("tiny").plonk_zkey)
    coefs = _random(cpu, len(key.ptau), random.Random(4))
    assert gpu.commit(coefs, key.ptau) == cpu.commit(coefs, key.ptau)
    with pytest.raises(ValueError, match="needs 15 powers of tau"):
        gpu.commit(_random(cpu, 15, random.Random(5)), key.ptau)


class Blinding:
    """secrets.randbelow for the prover's blinding scalars, from a seeded generator: two
    proofs made under one seed draw the same scalars."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def __call__(self, bound: int) -> int:
        return self.rng.randrange(bound)


@pytest.fixture(scope="module")
def cuda_proof():
    """tiny's PLONK key loaded on the dispatching prover's CUDA device and one proof made
    there by the engine's stages (synthesize, prove_start, prove_finish), the CPU's proof
    with the same blinding scalars, and what the device held."""
    c = fixture_circuit("tiny")
    device = cuzk.prover.open_device("cuda")
    key = cuzk.prover.ProvingKey.open(c.plonk_zkey)
    w = read_wtns(c.witness(1)).values
    device.load_key(key)
    out = {"circuit": c, "key": key, "device": device, "w": w}
    out["resident"] = device.resident_bytes(key.key_id)
    held = device.plonk.held(key.key_id).extended
    out["extended"] = {k: _host(v) for k, v in held.items()}
    out["on_device"] = all(map(on_device, held.values()))
    syn = cuzk.prover.synthesize(key, w)
    buffers = {"a": syn.a, "b": syn.b, "c": syn.c}
    with pytest.MonkeyPatch.context() as mp, one_cpu_under_simulator():
        mp.setattr(prover.secrets, "randbelow", Blinding(9))
        partial = cuzk.prover.prove_start(key, buffers, w, device)
        out["proof"] = cuzk.prover.prove_finish(key, partial, w)
        mp.setattr(prover.secrets, "randbelow", Blinding(9))
        out["cpu"] = prover.prove(key.zkey, w, FrOps(key.zkey.curve_info))
    yield out
    device.evict_key(key.key_id)


@pytest.mark.slow
def test_the_dispatching_prover_proves_plonk_on_the_gpu(cuda_proof):
    """A CUDA device process's PLONK keys go to the GPU: the key's extended values and
    powers of tau resident there (equal to the CPU's extended values), gone on eviction."""
    device, key = cuda_proof["device"], cuda_proof["key"]
    assert device.kind == "cuda" and device.for_key(key) is device.plonk
    assert isinstance(device.plonk, stages.CudaDevice) and device.plonk.kind == "cuda"
    assert "PLONK on CUDA kernels" in device.plonk.describe()
    assert cuda_proof["on_device"]
    cpu_ext = prover.extended(key.zkey, FrOps(key.zkey.curve_info))
    assert cuda_proof["extended"].keys() == cpu_ext.keys()
    for name, values in cpu_ext.items():
        assert np.array_equal(cuda_proof["extended"][name], values), name
    n = key.domain_size
    # on the GPU: every extended vector (the key's, copied in, and the points), the powers
    assert cuda_proof["resident"] == n * 4 * 32 * len(cpu_ext) + key.zkey.ptau.nbytes
    other = stages.open_device("cuda")
    other.load_key(key)
    assert other.resident_bytes(key.key_id) == cuda_proof["resident"]
    other.evict_key(key.key_id)
    other.evict_key(key.key_id)  # evicting what is not resident is a no-op
    assert other.resident_bytes(key.key_id) == 0 and other.resident_keys() == []


@pytest.mark.slow
def test_cuda_proof_equals_cpu_and_verifies(cuda_proof):
    """The same blinding gives the CPU's proof bit for bit; cuzk's verifier accepts it for
    the witness's public signals only."""
    proof, cpu = cuda_proof["proof"], cuda_proof["cpu"]
    assert proof.commitments == cpu.commitments
    assert proof.evaluations == cpu.evaluations
    assert all(p is not None for p in proof.commitments.values())
    c = cuda_proof["circuit"]
    public = json.loads(c.public(1).read_text())
    assert [str(x) for x in proof.public] == public
    vk = cuda_proof["key"].validate()
    assert stages.verify(vk, proof.public, proof)
    wrong = [proof.public[0] + 1, *proof.public[1:]]
    assert not stages.verify(vk, wrong, proof)


@pytest.mark.slow
@pytest.mark.interop
def test_cuda_proof_verifies_in_snarkjs(tools, cuda_proof, tmp_path):
    from interop import plonk_verify

    from cuzk.formats.plonk_json import verification_key, write_proof_and_public

    proof = cuda_proof["proof"]
    vk = tmp_path / "vk.json"
    vk.write_text(json.dumps(verification_key(cuda_proof["key"].zkey)))
    write_proof_and_public(
        tmp_path / "proof.json", tmp_path / "public.json", proof.to_json(), proof.public
    )
    assert plonk_verify(vk, tmp_path / "public.json", tmp_path / "proof.json")


def test_cuzk_prove_names_a_missing_gpu(tmp_path):
    """`cuzk prove --device cuda:N` on a PLONK key where that GPU is not: one line naming
    the device, exit 1, no output files."""
    from click.testing import CliRunner

    from cuzk.cli import main

    c = fixture_circuit("tiny")
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    args = ["prove", "--device", "cuda:99", str(c.plonk_zkey), str(c.witness(0))]
    res = CliRunner().invoke(main, [*args, str(proof), str(public)])
    assert res.exit_code == 1
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cuzk prove: device cuda:99: no such GPU")
    assert not proof.exists() and not public.exists()


def test_open_device_specs():
    assert stages.open_device("cpu").kind == "cpu"
    assert stages.open_device("cpu:1").name == "cpu:1"
    for bad in ("tpu", "cuda:x", "cpu:-1"):
        with pytest.raises(ValueError, match="expected cpu, cpu:N, cuda or cuda:N"):
            stages.open_device(bad)
