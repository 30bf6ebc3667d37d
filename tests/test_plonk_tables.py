"""A resident PLONK key's table of multiples of its powers of tau (cuzk.plonk.tables, the
msm_tables option): a commitment over the table is the point the plain MSM gives (proofs are
blinded afresh, so the commitments are compared, not the proofs' bytes), a device builds the
table when it loads the key and drops it on eviction, the key's bytes count it, and its
proofs are accepted by snarkjs's verification key."""

import json

import numpy as np
import pytest

import cuzk.plonk
from cuzk.kernels import msm_cpu
from cuzk.plonk import stages
from cuzk.plonk import tables as plonk_tables
from cuzk.plonk.fr import FrOps
from cuzk.plonk.key import ProvingKey, configure
from cuzk.plonk.verifier import verify_objects


@pytest.fixture
def small_tables(monkeypatch):
    """msm_tables = 4 in this process, with tables planned for point sets as small as the
    fixtures' (n + 6 = 38 powers of tau), off again after the test."""
    monkeypatch.setattr(msm_cpu, "PARTITION_MIN", 8)
    configure({"msm_tables": 4})
    yield 4
    configure({})


def test_commitments_over_a_table_equal_the_plain_ones(circuit_named):
    key = ProvingKey.open(circuit_named("mulchain").plonk_zkey)
    ptau = key.zkey.ptau
    ops = FrOps(key.zkey.curve_info)
    rng = np.random.default_rng(7)
    for plan in ((4, 2), (8, 4), (6, 1)):  # (c, Kf): from 2 to 32 groups
        table = msm_cpu.build_table(ptau[:30], 0, g=1, curve="bn254", plan=plan)
        for m in (30, 26, 5, 1):  # every length up to the table's, padded with zeros
            coefs = ops.from_ints([int(x) for x in rng.integers(0, 2**62, m)])
            coefs[m // 2] = ops.mont(ops.r - 3)  # a full-size scalar among small ones
            assert ops.commit(coefs, ptau, table=table) == ops.commit(coefs, ptau)
        longer = ops.from_ints(list(range(1, 35)))  # past the table: the plain MSM
        assert ops.commit(longer, ptau, table=table) == ops.commit(longer, ptau)
        assert ops.commit(np.zeros((10, 4), np.uint64), ptau, table=table) is None


def test_a_device_builds_the_table_with_the_key_and_drops_it(circuit_named, small_tables):
    c = circuit_named("mulchain")
    key = ProvingKey.open(c.plonk_zkey)
    planned = key.table_bytes
    assert planned == plonk_tables.planned_bytes(key) > 0
    assert key.nbytes == key.zkey.file.file_size + key.extended_bytes + planned
    device = stages.open_device("cpu")
    device.load_key(key)
    table = device.held(key.key_id).table
    assert table.n == 38 and table.factor <= 4 and table.nbytes == planned
    assert device.resident_bytes(key.key_id) == key.extended_bytes + planned
    device.load_key(key)  # loaded again: kept, not rebuilt
    assert device.held(key.key_id).table is table
    vk = json.loads(c.plonk_vk.read_text())
    for k in (0, 1):
        w = cuzk.plonk.load_witness(c.witness(k), key)
        proof = stages.prove_start(key, stages.synthesize(key, w).buffers, w, device)
        assert verify_objects(vk, json.loads(c.plonk_public(k).read_text()), proof.to_json())
    device.evict_key(key.key_id)
    assert device.held(key.key_id) is None and device.resident_bytes(key.key_id) == 0


def test_the_cap_and_the_copies_shape_the_table(circuit_named, small_tables):
    key = ProvingKey.open(circuit_named("mulchain").plonk_zkey)
    one = key.table_bytes
    configure({"msm_tables": 4, "msm_table_copies": 2, "device_processes": 2})
    assert key.table_bytes == 2 * one
    assert key.nbytes == key.zkey.file.file_size + 2 * key.extended_bytes + 2 * one
    configure({"msm_tables": 4, "msm_table_copies": 2, "msm_table_cap": 1})
    assert plonk_tables.plan_factor(key) == 0 and key.table_bytes == 0
    assert plonk_tables.build(key) is None
    configure({"msm_tables": 0})
    device = stages.open_device("cpu")
    device.load_key(key)
    assert device.held(key.key_id).table is None
    assert device.resident_bytes(key.key_id) == key.extended_bytes
