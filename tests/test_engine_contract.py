"""The engine's contracts (cuzk.engine.contract). The prover contract: the real prover, the
prover double and a prover of another shape (tests/shaped_prover.py) all satisfy it — as
runtime isinstance checks on the module, a key, a device and a proof class, parameter by
parameter for every function and method the engine calls, and by running each one's stages
over the buffers its key declares, as the engine does. The engine API: the local Engine and
the Ray gateway (ClusterEngine) both satisfy what `cuzk serve` calls, the same way."""

import dataclasses
import importlib
import inspect
import json
import typing

import numpy as np
import pytest
import shaped_prover

from cuzk.cluster.gateway import ClusterEngine
from cuzk.engine import Engine, buffers, contract
from cuzk.engine.settings import EngineConfig
from cuzk.testing import prover_double

REAL = EngineConfig().prover  # the engine's default prover (Groth16)
# cuzk.prover: `cuzk serve`'s default, with a Groth16 key and (":plonk") a PLONK key;
# cuzk.plonk: the PLONK prover alone
PROVERS = [
    REAL,
    "cuzk.prover",
    "cuzk.prover:plonk",
    "cuzk.plonk",
    "cuzk.testing.prover_double",
    "shaped_prover",
]
PLONK = ("cuzk.prover:plonk", "cuzk.plonk")


def _module(name: str):
    return importlib.import_module(name.partition(":")[0])


def _proof_classes(prover) -> tuple:
    """The prover's proof classes: `Proof`, or each member of a union of them (cuzk.prover's:
    a proof of either system)."""
    return typing.get_args(prover.Proof) or (prover.Proof,)


def _params(fn, drop_first: bool) -> list[inspect.Parameter]:
    ps = list(inspect.signature(fn).parameters.values())
    return ps[1:] if drop_first else ps


def assert_same_call(want, got, *, drop_self: bool, what: str):
    """`got` takes every parameter `want` names, in order, by the same name and kind; any
    further parameter has a default (so the engine's calls stay valid)."""
    w, g = _params(want, drop_self), _params(got, False)
    assert [(p.name, p.kind) for p in w] == [(p.name, p.kind) for p in g[: len(w)]], (
        f"{what}: contract {inspect.signature(want)}, implementation {inspect.signature(got)}"
    )
    extra = [
        p.name
        for p in g[len(w) :]
        if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    assert not extra, f"{what}: parameters {extra} not in the contract and without a default"


def _callables(proto) -> list[str]:
    """The functions and methods a protocol names (its data members are annotations)."""
    return sorted(
        n
        for n, v in vars(proto).items()
        if not n.startswith("_") and (callable(v) or isinstance(v, classmethod))
    )


@pytest.fixture
def key_path(tmp_path, circuit_named):
    def path(prover):
        if prover in PLONK:
            return circuit_named("mulchain").plonk_zkey  # with additions and public signals
        if prover in (REAL, "cuzk.prover"):
            return circuit_named("tiny").zkey
        if prover == "shaped_prover":
            shaped_prover.write_key(tmp_path / "s.json")
            return tmp_path / "s.json"
        prover_double.write_key(tmp_path / "k.json")
        return tmp_path / "k.json"

    return path


@pytest.fixture
def witness(circuit_named):
    """A witness (a path or bytes) for each prover's key of `key_path`."""

    def source(prover, key):
        if prover in PLONK:
            return circuit_named("mulchain").witness(0)
        if prover in (REAL, "cuzk.prover"):
            return circuit_named("tiny").witness(0)
        if prover == "shaped_prover":
            return shaped_prover.make_witness(key.n_vars, seed=5)
        return prover_double.make_witness(key.n_vars, seed=5)

    return source


@pytest.mark.parametrize("name", PROVERS)
def test_prover_satisfies_the_contract(name, key_path):
    prover = _module(name)
    assert isinstance(prover, contract.Prover)
    for fn in _callables(contract.Prover):
        assert_same_call(
            getattr(contract.Prover, fn), getattr(prover, fn), drop_self=True, what=f"{name}.{fn}"
        )
    key = prover.ProvingKey.open(key_path(name))
    assert isinstance(key, contract.ProvingKey)
    assert isinstance(key.key_id, str) and key.n_vars > 0 and key.domain_size > 0
    assert key.partition_bytes() > 0 and key.nbytes > 0
    device = prover.open_device("cpu")
    assert isinstance(device, contract.Device)
    for proto, impl in (
        (contract.ProvingKey, prover.ProvingKey),
        (contract.ProvingKey, type(key)),
        (contract.Device, type(device)),
        *((contract.Proof, p) for p in _proof_classes(prover)),
    ):
        for m in _callables(proto):
            assert_same_call(
                getattr(proto, m),
                getattr(impl, m),
                drop_self=False,
                what=f"{name}.{impl.__name__}.{m}",
            )
    for p in _proof_classes(prover):
        assert "public" in {f.name for f in dataclasses.fields(p)}
    shape, dtype = key.witness_buffer()  # plain data: a shape and a numpy dtype
    assert buffers.nbytes(shape, dtype) > 0
    declared = key.buffers()
    assert declared and all(isinstance(n, str) for n in declared)
    assert buffers.Layout(declared).nbytes >= sum(buffers.nbytes(*v) for v in declared.values())


@pytest.mark.parametrize("name", PROVERS)
def test_stages_run_over_the_buffers_the_key_declares(name, key_path, witness, circuit_named):
    """As the engine runs them: the witness copied into an array shaped as witness_buffer()
    says, synthesize filling `out` (the declared buffers, over one segment's Layout) in place
    and giving the same as into fresh arrays, prove_start taking that mapping, and the proof
    self-verifying."""
    prover = _module(name)
    prover.configure({})
    key = prover.ProvingKey.open(key_path(name))
    shape, dtype = key.witness_buffer()
    w = np.zeros(shape, dtype)
    np.copyto(w, prover.load_witness(witness(name, key), key))
    layout = buffers.Layout(key.buffers())
    seg = buffers.Segment.create(
        buffers.segment_name(f"contract-{name.replace(':', '-')}"), layout.nbytes
    )
    try:
        out = layout.views(seg)
        for v in out.values():
            v.view(np.uint8)[...] = 0xA5  # what an earlier partition left
        syn = prover.synthesize(key, w, out=out)
        assert set(syn.buffers) == set(key.buffers())
        fresh = prover.synthesize(key, w).buffers
        for n, v in out.items():
            assert np.shares_memory(syn.buffers[n], v), f"{name}: {n} not written into out"
            np.testing.assert_array_equal(v, fresh[n])
        device = prover.open_device("cpu")
        device.load_key(key)
        partial = prover.prove_start(key, out, w, device)
        del syn, out, v
        proof = prover.prove_finish(key, partial, w)
        assert isinstance(proof, contract.Proof)
        assert prover.verify(key.verification_key(), proof.public, proof)
        if name in PLONK:  # snarkjs's public signals
            c = circuit_named("mulchain")
            public = [str(x) for x in proof.public]
            assert public == json.loads(c.plonk_public(0).read_text())
    finally:
        seg.close()
        seg.unlink()


def test_the_real_provers_self_verification(circuit_named):
    """cuzk.groth16.verify with ProvingKey.verification_key(): what a device process runs when
    self_verify is on. A snarkjs proof of the fixture passes; with another public signal it
    does not."""
    prover = importlib.import_module(REAL)
    c = circuit_named("tiny")
    vk = prover.ProvingKey.open(c.zkey).verification_key()
    proof_json = json.loads(c.proof(0).read_text())
    public = [int(x) for x in json.loads(c.public(0).read_text())]

    class Proof:
        def to_json(self):
            return proof_json

    assert prover.verify(vk, public, Proof())
    assert not prover.verify(vk, [public[0] + 1, *public[1:]], Proof())


# ------------------------------------------------------------------------------ the engine API
def _engine_api_mismatches(cls) -> list[str]:
    """What keeps `cls` from being a contract.EngineAPI: a missing member, a property that is
    not one, a method whose parameters differ (names, order, kinds; extras need defaults)."""
    out = []
    for name in ("running", "budget", "board_name"):
        if not hasattr(cls, name):
            out.append(f"{name}: missing")
    if not isinstance(inspect.getattr_static(cls, "running", None), property):
        out.append("running: not a property")
    for fn in _callables(contract.EngineAPI):
        got = getattr(cls, fn, None)
        if got is None:
            out.append(f"{fn}: missing")
            continue
        try:
            assert_same_call(
                getattr(contract.EngineAPI, fn), got, drop_self=False, what=f"{cls.__name__}.{fn}"
            )
        except AssertionError as e:
            out.append(str(e))
    return out


@pytest.mark.parametrize("cls", [Engine, ClusterEngine])
def test_both_engines_implement_the_engine_api(cls):
    """Every call `cuzk serve` makes, with the contract's parameters, on the class and on an
    instance that was never started (the gateway's needs no Ray for this)."""
    assert not _engine_api_mismatches(cls)
    engine = cls(prover="cuzk.testing.prover_double", devices="cpu:1", memory_budget="1GiB")
    assert isinstance(engine, contract.EngineAPI)
    assert engine.running is False and engine.board_name == ""
    assert engine.budget.total == 1024**3


def test_the_engine_api_check_catches_a_missing_call_and_a_changed_signature():
    class Short(Engine):  # no cancel
        cancel = None

    class Reordered(Engine):
        def result(self, timeout=None, job_id=""):
            return None

        def submit(self, key_id, witnesses=None, kind="default", priority="normal", *, inputs):
            return ""

    assert _engine_api_mismatches(Short) == ["cancel: missing"]
    assert not isinstance(
        type("Bare", (), {"start": lambda self, timeout=120.0: self})(), contract.EngineAPI
    )
    bad = _engine_api_mismatches(Reordered)
    assert [m.split(":")[0] for m in bad] == ["Reordered.result", "Reordered.submit"], bad
