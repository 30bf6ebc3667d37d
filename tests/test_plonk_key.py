"""PLONK keys for the engine (cuzk.plonk.key) and the daemon's prover that opens keys of both
systems (cuzk.prover): what a key declares, its validation once per file (a damaged power of
tau, a stored value not below r), and the dispatch by the protocol a file names."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import cuzk.plonk
import cuzk.prover
from cuzk.formats.errors import BadPoint, BadValue, FormatError, UnsupportedProtocol
from cuzk.formats.plonk_zkey import PTAU, QM, PlonkZKey
from cuzk.formats.zkey import HEADER
from cuzk.plonk.key import ProvingKey, first_not_below


def _copy(c, tmp_path):
    path = tmp_path / "plonk.zkey"
    shutil.copy(c.plonk_zkey, path)
    return path


def _offset(path, sid: int) -> int:
    return PlonkZKey(path).file.section(sid, "section").offset


def test_a_plonk_key_declares_the_circuits_wires(circuit_named):
    c = circuit_named("nested")  # nVars 28, of which 6 additions
    mapped, read = ProvingKey.open(c.plonk_zkey), ProvingKey.open(c.plonk_zkey, resident=False)
    assert mapped.key_id == read.key_id
    assert read.zkey.file.private and not mapped.zkey.file.private  # mapped: shared pages
    assert (mapped.n_vars, mapped.n_additions, mapped.domain_size) == (22, 6, 32)
    assert mapped.witness_buffer() == ((22, 4), "uint64")
    assert mapped.buffers() == {k: ((32, 4), "uint64") for k in "abc"}
    assert mapped.protocol == "plonk" and mapped.curve == "bn128"
    groth16 = cuzk.prover.ProvingKey.open(c.zkey)
    assert groth16.protocol == "groth16" and groth16.key_id != mapped.key_id
    assert groth16.n_vars == mapped.n_vars  # the same circuit's wires
    vk = mapped.validate()
    assert vk["n_public"] == 14 and mapped.validate() is vk  # once per instance


def test_the_dispatching_prover_opens_each_protocol(circuit_named):
    c = circuit_named("tiny381")
    plonk = cuzk.prover.ProvingKey.open(c.plonk_zkey, resident=False)
    assert isinstance(plonk, ProvingKey) and isinstance(plonk, cuzk.prover.ProvingKey)
    assert plonk.curve == "bls12381"
    with pytest.raises(FormatError):
        cuzk.prover.ProvingKey.open(c.witness(0))  # a .wtns is no key
    device = cuzk.prover.open_device("cpu")
    device.load_key(plonk)
    assert device.for_key(plonk).held(plonk.key_id).key is plonk
    assert device.for_key(plonk).resident_keys() == [plonk.key_id]
    device.evict_key(plonk.key_id)
    assert device.plonk.resident_keys() == [] and device.resident_bytes(plonk.key_id) == 0
    with pytest.raises(ValueError, match="expected cpu, cpu:N, cuda or cuda:N"):
        cuzk.plonk.open_device("tpu:0")


def test_a_key_of_another_protocol_is_named(circuit_named, tmp_path):
    """A key whose header says FFLONK (id 10): the dispatching prover's refusal names it."""
    path = _copy(circuit_named("mulchain"), tmp_path)
    at = PlonkZKey(path).file.section(HEADER, "header").offset
    with open(path, "r+b") as f:
        f.seek(at)
        f.write((10).to_bytes(4, "little"))
    with pytest.raises(UnsupportedProtocol, match=r"protocol id 10 \(fflonk\) is not supported"):
        cuzk.prover.ProvingKey.open(path, resident=False)


def test_a_power_of_tau_off_the_curve_is_refused(circuit_named, tmp_path):
    path = _copy(circuit_named("mulchain"), tmp_path)
    at = _offset(path, PTAU) + 5 * 64  # the sixth power's x
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 1]))
    with pytest.raises(BadPoint, match=r"powers of tau\[5\]: point is not on the curve"):
        ProvingKey.open(path, resident=False).validate()


def test_a_selector_value_not_below_r_is_refused(circuit_named, tmp_path):
    c = circuit_named("mulchain")
    path = _copy(c, tmp_path)
    r = PlonkZKey(path).r
    at = _offset(path, QM) + 3 * 32  # Qm's fourth coefficient
    with open(path, "r+b") as f:
        f.seek(at)
        f.write((r + 1).to_bytes(32, "little"))
    with pytest.raises(BadValue, match=r"Qm coefficients\[3\] is not below"):
        ProvingKey.open(path, resident=False).validate()


def test_first_not_below():
    m = (1 << 200) + 12345
    rows = [m - 1, 0, m, m + (1 << 70), 7]
    limbs = np.array([[(x >> (64 * j)) & (2**64 - 1) for j in range(4)] for x in rows], np.uint64)
    assert first_not_below(limbs, m) == 2
    assert first_not_below(limbs[:2], m) == -1
    assert first_not_below(limbs[3:], m) == 0


def test_a_device_keeps_the_keys_extended_values_between_proofs(circuit_named):
    """A device process's load takes the key's values on the domain of 4n (views of the key)
    and makes the domain's points once (counted in the key's nbytes, one copy per device
    process); proofs read them and leave them as they were; evicting drops them."""
    from cuzk.plonk import key as plonk_key
    from cuzk.plonk import stages
    from cuzk.plonk.prover import EXTENDED, extended
    from cuzk.plonk.verifier import verify_objects

    c = circuit_named("mulchain")  # three public signals: PI from L1's values rolled
    key = ProvingKey.open(c.plonk_zkey)
    size = key.zkey.file.file_size
    assert key.extended_bytes == 4 * 32 * 32 and key.nbytes == size + key.extended_bytes
    try:
        plonk_key.configure({"device_processes": 3})
        assert key.nbytes == size + 3 * key.extended_bytes
        with pytest.raises(ValueError, match="device_processes"):
            plonk_key.configure({"device_processes": 0})
    finally:
        plonk_key.configure({})
    device = stages.open_device("cpu")
    device.load_key(key)
    assert device.resident_bytes(key.key_id) == key.extended_bytes
    kept = device.held(key.key_id).extended
    assert sorted(kept) == sorted((*EXTENDED, "x"))
    fresh = extended(key.zkey, stages.frops(key))
    assert all(np.array_equal(kept[k], fresh[k]) for k in kept)
    vk = json.loads(c.plonk_vk.read_text())
    for k in (0, 1):
        w = cuzk.plonk.load_witness(c.witness(k), key)
        proof = stages.prove_start(key, stages.synthesize(key, w).buffers, w, device)
        public = json.loads(c.plonk_public(k).read_text())
        assert verify_objects(vk, public, proof.to_json())
    assert all(np.array_equal(kept[k], fresh[k]) for k in kept)  # read, never written
    device.evict_key(key.key_id)
    assert device.resident_bytes(key.key_id) == 0 and device.held(key.key_id) is None
    with pytest.raises(RuntimeError, match="before key"):
        stages.prove_start(key, stages.synthesize(key, w).buffers, w, device)
