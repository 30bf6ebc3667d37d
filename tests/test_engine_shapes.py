"""The engine proves with a prover of another shape (tests/shaped_prover.py: a uint32
witness; buffers "sums", "flags", "grid" of three dtypes and unrelated sizes, none of them
a, b, c) through real processes, with nothing in cuzk/engine changed for it: the buffers are
sized, laid out, mapped and freed from what the key declares, the memory budget counts the
shared memory the engine creates, and a prove_start that consumed its buffers and failed is
retried from a new synthesis. Also `buffers.Layout`, which packs declared buffers into one
segment."""

import contextlib
import os

import numpy as np
import pytest
import shaped_prover as shaped
from waiting import wait_for

from cuzk.engine import BudgetError, Engine, EngineConfig, buffers

N_VARS, ROWS = 40, 77
PROVER = shaped.__name__  # imported by name in the spawned children (tests/ is on sys.path)


def _aligned(n: int) -> int:
    return -(-n // buffers.ALIGN) * buffers.ALIGN


# what the engine lays out for a key of this size, worked out by hand: "sums" 77 x 8 bytes,
# "flags" 80 x 1 from the next 64-byte boundary, "grid" 2 x 77 x 3 x 8 from the next one
SUMS, FLAGS, GRID = 8 * ROWS, ROWS + 3, 8 * 2 * ROWS * 3
LAID_OUT = _aligned(_aligned(SUMS) + FLAGS) + GRID
WITNESS = 4 * N_VARS


def test_layout_packs_declared_buffers_at_aligned_offsets():
    key = shaped.ProvingKey("k", "id", n_vars=N_VARS, rows=ROWS, n_public=3, nbytes=1)
    lay = buffers.Layout(key.buffers())
    assert [(n, s, str(d)) for n, (s, d, _) in lay.arrays.items()] == [
        ("sums", (ROWS,), "uint64"),
        ("flags", (ROWS + 3,), "uint8"),
        ("grid", (2, ROWS, 3), "float64"),
    ]
    offsets = [off for _, _, off in lay.arrays.values()]
    assert offsets == [0, _aligned(SUMS), _aligned(_aligned(SUMS) + FLAGS)]
    assert lay.nbytes == LAID_OUT
    assert buffers.nbytes(*key.witness_buffer()) == WITNESS
    name = buffers.segment_name("layout-test")
    with buffers.Segment.create(name, lay.nbytes) as seg:
        try:
            views = lay.views(seg)
            for i, (n, v) in enumerate(views.items()):
                assert v.shape == lay.arrays[n][0] and v.dtype == lay.arrays[n][1]
                v[...] = i + 1
            # each view is its own storage: writing one left the others whole
            assert all((v == i + 1).all() for i, v in enumerate(views.values()))
            del views, v
        finally:
            seg.unlink()
    with pytest.raises(ValueError, match="negative"):
        buffers.Layout({"x": ((-1,), "uint8")})


def _config(tmp_path, **kw):
    base = dict(
        devices="cpu:2",
        synth_workers=2,
        prover=PROVER,
        prover_options={"fault_dir": str(tmp_path), "start_secs": 0.01},
        memory_budget="64MiB",
        ping_interval=0.25,
        restart_backoff=0.05,
        board_partitions=64,
    )
    base.update(kw)
    return EngineConfig(**base)


@contextlib.contextmanager
def running(tmp_path, **kw):
    eng = Engine(_config(tmp_path, **kw)).start()
    try:
        yield eng
    finally:
        eng.stop(drain_deadline=5)
        assert buffers.list_segments(os.getpid()) == []  # every segment unlinked


def _key(tmp_path):
    path = tmp_path / "shaped.json"
    shaped.write_key(path, n_vars=N_VARS, rows=ROWS)
    return path


def _assert_proofs(result, ws, key_path):
    key = shaped.ProvingKey.open(key_path)
    assert result["state"] == "done", result
    assert len(result["proofs"]) == len(ws)
    for i, w in enumerate(ws):
        assert result["proofs"][i] == shaped.expected_proof(w, key), f"partition {i}"
        public = np.frombuffer(w[4:], dtype="<u4")[1 : 1 + key.n_public]
        assert result["public"][i] == [str(int(x)) for x in public], f"partition {i}"


def test_jobs_prove_end_to_end_with_a_prover_of_another_shape(tmp_path):
    key_path = _key(tmp_path)
    ws = [shaped.make_witness(N_VARS, seed) for seed in range(10)]
    (tmp_path / "w3.bin").write_bytes(ws[3])
    with running(tmp_path) as eng:
        kid = eng.register_key(key_path)
        (k,) = eng.keys()
        # the prover's estimate is the declared bytes; the engine charges its padding too
        assert shaped.ProvingKey.open(key_path).partition_bytes() < WITNESS + LAID_OUT
        assert k["partition_bytes"] == WITNESS + LAID_OUT
        assert k["domain_size"] == ROWS
        # the key's own protocol, copied by the engine to its record and the board's key row
        assert k["protocol"] == "shaped"
        assert [(b["key_id"], b["protocol"]) for b in eng.snapshot()["keys"]] == [(kid, "shaped")]
        inputs = [*ws[:3], str(tmp_path / "w3.bin"), *ws[4:]]  # bytes and a path mixed
        jobs = [eng.submit(kid, inputs), eng.submit(kid, ws[:2])]
        _assert_proofs(eng.result(jobs[0], timeout=60), ws, key_path)
        _assert_proofs(eng.result(jobs[1], timeout=60), ws[:2], key_path)
        assert eng.budget.by_use() == {"keys": k["bytes"]}  # every partition's bytes returned
        assert eng.budget.high_water <= eng.budget.total


def test_the_budget_counts_the_buffers_the_engine_lays_out(tmp_path):
    """A budget that holds the prover's own estimate but not the engine's padding refuses the
    partition; with the padding it proves, one partition at a time, within the budget."""
    key_path = _key(tmp_path)
    key = shaped.ProvingKey.open(key_path)
    w = shaped.make_witness(N_VARS, 7)
    need = WITNESS + LAID_OUT + len(w) + key.nbytes
    with running(tmp_path, memory_budget=need - 1, devices="cpu:1", synth_workers=1) as eng:
        kid = eng.register_key(key_path)
        assert key.partition_bytes() + len(w) + key.nbytes <= need - 1  # it would fit
        with pytest.raises(BudgetError):
            eng.submit(kid, [w])
    ws = [shaped.make_witness(N_VARS, 20 + i) for i in range(4)]
    with running(tmp_path, memory_budget=need, devices="cpu:1", synth_workers=2) as eng:
        kid = eng.register_key(key_path)
        _assert_proofs(eng.result(eng.submit(kid, ws), timeout=60), ws, key_path)
        assert eng.budget.high_water == need  # one partition at a time, all of it charged
        assert eng.counters["budget_waits"] > 0


def test_the_buffers_are_budgeted_under_the_label_metrics_and_status_report(tmp_path):
    """Whatever the prover names its buffers, their reservation is the use "abc" (its name
    from Groth16's a, b, c), as GET /metrics and /status have always reported it."""
    key_path = _key(tmp_path)
    ws = [shaped.make_witness(N_VARS, 40 + i) for i in range(3)]
    opts = {"fault_dir": str(tmp_path), "start_secs": 0.5}
    with running(tmp_path, devices="cpu:1", prover_options=opts) as eng:
        kid = eng.register_key(key_path)
        job = eng.submit(kid, ws)
        wait_for(lambda: "abc" in eng.budget.by_use(), timeout=30, what="buffers reserved")
        assert eng.budget.by_use()["abc"] % LAID_OUT == 0
        assert not {"sums", "flags", "grid", "buffers"} & set(eng.budget.by_use())
        _assert_proofs(eng.result(job, timeout=60), ws, key_path)


def test_a_prove_start_that_consumed_its_buffers_is_retried_from_a_new_synthesis(tmp_path):
    """prove_start overwrites the buffers and then raises once: the retry must synthesize them
    again (a retry from the consumed buffers would give another digest than expected_proof)."""
    key_path = _key(tmp_path)
    ws = [shaped.make_witness(N_VARS, 30 + i, fail_start=(i == 1)) for i in range(3)]
    with running(tmp_path) as eng:
        kid = eng.register_key(key_path)
        _assert_proofs(eng.result(eng.submit(kid, ws), timeout=60), ws, key_path)
        assert eng.counters["retries"] == 1
        synths = [e for e in list(eng.events) if e[1] == "synth" and e[3] == 1]
        assert [e[4] for e in synths] == [0, 1]  # partition 1 synthesized on each attempt
