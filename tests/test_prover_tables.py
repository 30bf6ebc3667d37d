"""A resident key's tables of multiples (cuzk.groth16.tables, the msm_tables option): built
when a CPU device loads the key, counted in its bytes, dropped on eviction, and proofs made
with them are the same bytes as without (fixed blinding, as tests/test_prover.py does)."""

import pytest

from cuzk.arith.constants import FR_MODULUS
from cuzk.groth16 import configure, open_device, prove_finish, prove_start, synthesize
from cuzk.groth16 import tables as key_tables
from cuzk.groth16.key import ProvingKey, load_witness


@pytest.fixture
def tables_option():
    """msm_tables = 4 in this process for the test, off again after it."""
    configure({"msm_tables": 4})
    yield 4
    configure({})


def _proof(key, w, dev):
    r, s = 0x1234567890ABCDEF << 130 | 99, FR_MODULUS - 12345
    syn = synthesize(key, w)
    partial = prove_start(key, syn.buffers, w, dev)
    return prove_finish(key, partial, w, r=r, s=s).to_json()


def test_tables_prove_the_same_bytes_and_leave_with_the_key(circuit_named, tables_option):
    c = circuit_named("toyhash")  # ~900 constraints: every point set has a table
    key = ProvingKey.open(c.zkey)
    w = load_witness(c.witness(0), key)
    plain = _proof(key, w, open_device("cpu"))  # not loaded: no tables
    assert key.tables == {}
    dev = open_device("cpu")
    planned = key.table_bytes
    assert planned > 0 and key.nbytes == key.zkey.file.file_size + planned
    dev.load_key(key)
    assert set(key.tables) == {"a", "b1", "c", "h", "b2"}
    sizes = key_tables.set_sizes(key)  # from the header: the sections' lengths
    assert all(sizes[s] == len(getattr(key.zkey, a)) for s, (a, _) in key_tables.TABLE_SETS.items())
    assert all(t.factor <= 4 for t in key.tables.values())
    assert dev.resident_bytes(key.key_id) == dev.resident_bytes() == planned > 0
    assert key.tables_secs > 0
    assert _proof(key, w, dev) == plain  # B2's table in prove_finish, the G1 ones in the device
    dev.load_key(key)  # loaded again: the same tables, not rebuilt
    dev.evict_key(key.key_id)
    assert key.tables == {} and dev.resident_bytes() == 0
    assert _proof(key, w, dev) == plain


def test_tables_off_and_option_checks(circuit_named):
    c = circuit_named("toyhash")
    configure({"msm_tables": 0})
    key = ProvingKey.open(c.zkey)
    dev = open_device("cpu")
    dev.load_key(key)
    assert key.tables == {} and key.table_bytes == 0 and dev.resident_bytes() == 0
    for bad in (-1, "4", True):
        with pytest.raises(ValueError, match="msm_tables"):
            configure({"msm_tables": bad})
    configure({})
    assert key_tables.factor() == 0


def test_engine_hands_msm_tables_to_the_prover_on_cpu_devices_only():
    from cuzk.engine.settings import EngineConfig, parse_msm_tables, prover_options

    cfg = EngineConfig(devices="cpu:2", prover_options={"x": 1}, memory_budget="8GiB").validated()
    assert prover_options(cfg) == {  # the table's default; a copy per CPU device, 1/4 budget
        "x": 1,
        "device_processes": 2,
        "msm_tables": 8,
        "msm_table_copies": 2,
        "msm_table_cap": 2 * 1024**3,
    }
    cfg = EngineConfig(devices="cpu:1", msm_tables="off").validated()
    assert prover_options(cfg)["msm_tables"] == 0
    cfg = EngineConfig(devices="cpu:1", msm_tables=16).validated()
    gpu = EngineConfig(devices="cpu:1", msm_tables=16).validated()
    gpu.device_names = ["cuda:0"]
    assert prover_options(cfg)["msm_tables"] == 16 and prover_options(gpu)["msm_tables"] == 0
    assert parse_msm_tables(1) == 0 and parse_msm_tables("12") == 12
    for bad in ("x", -1, 65):
        with pytest.raises(ValueError):
            parse_msm_tables(bad)
    with pytest.raises(ValueError, match="msm_tables"):
        EngineConfig(devices="cpu:1", msm_tables="lots").validated()


def test_tables_shrink_to_their_cap_and_count_every_copy(circuit_named):
    """The engine's cap lowers a key's groups until every device's copy fits (down to none:
    the tables never make a key refused), and the charge counts each copy."""
    key = ProvingKey.open(circuit_named("toyhash").zkey)
    try:
        configure({"msm_tables": 8})
        one = key.table_bytes
        assert one > 0 and key_tables.plan_factor(key) == 8
        configure({"msm_tables": 8, "msm_table_copies": 3})
        assert key.table_bytes == 3 * one
        configure({"msm_tables": 8, "msm_table_copies": 3, "msm_table_cap": 3 * one - 1})
        f = key_tables.plan_factor(key)
        assert 2 <= f < 8 and key.table_bytes == 3 * key_tables.planned_bytes(key, f) < 3 * one
        configure({"msm_tables": 8, "msm_table_copies": 2, "msm_table_cap": 1})
        assert key_tables.plan_factor(key) == 0 and key.table_bytes == 0
        assert key_tables.build(key) == {}
        for bad in ({"msm_table_copies": 0}, {"msm_table_cap": -1}, {"msm_table_cap": True}):
            with pytest.raises(ValueError):
                configure({"msm_tables": 8, **bad})
    finally:
        configure({})
