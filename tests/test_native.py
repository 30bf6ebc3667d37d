"""The native kernel library (cuzk.native): the prover's CPU kernels compiled ahead of time and
loaded with ctypes. Each kernel agrees with Numba's build of the same source on the same
inputs; `cuzk prove` with the library proves without importing numba; a damaged library, or
none, leaves the command on Numba's kernels."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cuzk import native
from cuzk.formats.zkey import ZKey

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

pytestmark = pytest.mark.skipif(
    shutil.which(os.environ.get("CC", "cc")) is None, reason="no system C compiler (cc)"
)


@pytest.fixture
def native_on(native_dir, monkeypatch):
    """Within the test, this process's kernel lookups take the library."""
    monkeypatch.setenv("CUZK_NATIVE_DIR", str(native_dir))
    monkeypatch.delenv("CUZK_NATIVE", raising=False)
    native.forget()
    with native.used():
        assert native.library("bn254") is not None
        yield
    native.forget()


def both(fn):
    """fn() with Numba's kernels, then with the library's."""
    with native.used(False):
        expected = fn()
    with native.used(True):
        got = fn()
    return expected, got


def _key():
    return ZKey(FIXTURES / "toyhash" / "circuit.zkey")


def _scalars(rng, n: int, near_r=None):
    """(dense, mixed) scalars for n points: dense below 2^252; mixed the dense ones split by
    size, a quarter (a fifth, with ``near_r``: two scalars r - k as limbs) each zero, one, one
    limb, (near r,) dense."""
    dense = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    dense[:, 3] >>= np.uint64(4)
    mixed = dense.copy()
    kind = rng.integers(0, 4 if near_r is None else 5, size=n)
    mixed[kind == 0] = 0
    mixed[kind == 1] = [1, 0, 0, 0]
    mixed[kind == 2, 1:] = 0
    if near_r is not None:
        mixed[kind == 3] = np.array(near_r, np.uint64).reshape(2, 4)[rng.integers(0, 2)]
    return dense, mixed


def test_msm_drivers_agree_with_numba(native_on):
    """G1 and G2 MSMs over a key's points: dense scalars (the bucket method, int16 digits),
    a wide window (int32 digits), scalars split by size (0, 1, small, dense: points_sum and
    the class sums), and a handful of points (the binary method)."""
    from cuzk.kernels import msm_cpu

    z = _key()
    rng = np.random.default_rng(11)
    for g, pts in ((1, z.points_h), (2, z.points_b2)):
        dense, mixed = _scalars(rng, pts.shape[0])
        msm = msm_cpu.msm_g1 if g == 1 else msm_cpu.msm_g2
        cases = [
            ((pts, dense), {}),
            ((pts, dense), {"c": 17}),
            ((pts, mixed), {"partition": True}),
            ((pts[:5], dense[:5]), {}),
        ]
        for args, kw in cases:
            expected, got = both(lambda args=args, kw=kw, msm=msm: msm(*args, **kw))
            assert np.array_equal(expected, got), (g, kw)
    ran = {name for name, n in native.calls.items() if n}
    for g in ("g1", "g2"):  # the library's kernels ran, not a fallback to Numba's
        for name in ("scalar_classes", "points_sum", "pippenger", "rows_sum"):
            assert any(r.startswith(f"{name}_{g}") for r in ran), (name, g)
        assert f"pippenger_{g}_int16" in ran and f"pippenger_{g}_int32" in ran


def test_msm_tables_agree_with_numba(native_on):
    """Tables of multiples (a resident key's, msm_cpu.build_table) built and summed by the
    library (table_fill, pippenger_table) are Numba's bit for bit, in G1 and G2: the rows,
    and MSMs over them of dense scalars and of scalars split by size (index lists, points
    negated for scalars near r); int16 digits (c = 8, 3 windows folded) and int32 (c = 17,
    one window); each equals the plain MSM."""
    from cuzk.arith.constants import FR_MODULUS
    from cuzk.kernels import msm_cpu

    z = _key()
    rng = np.random.default_rng(21)
    near_r = [(FR_MODULUS - k) >> (64 * i) & (2**64 - 1) for k in (1, 7) for i in range(4)]
    for g, pts in ((1, z.points_h), (2, z.points_b2)):
        dense, mixed = _scalars(rng, pts.shape[0], near_r)
        msm = msm_cpu.msm_g1 if g == 1 else msm_cpu.msm_g2
        with native.used(False):
            plain = msm(pts, dense), msm(pts, mixed)
        for plan in ((8, 3), (17, 1)):

            def run(plan=plan, g=g, pts=pts, dense=dense, mixed=mixed, msm=msm):
                t = msm_cpu.build_table(pts, 0, g=g, plan=plan)
                return t.rows, msm(t, dense), msm(t, mixed)

            (rows, *expected), (got_rows, *got) = both(run)
            assert np.array_equal(rows, got_rows), (g, plan)
            for x, y, p in zip(expected, got, plain, strict=True):
                assert np.array_equal(x, y) and np.array_equal(y, p), (g, plan)
    ran = {name for name, n in native.calls.items() if n}
    for g in ("g1", "g2"):  # the library's kernels ran, not a fallback to Numba's
        assert {
            f"table_fill_{g}",
            f"pippenger_table_{g}_int16",
            f"pippenger_table_{g}_int32",
        } <= ran


def test_compute_h_and_tables_agree_with_numba(native_on):
    """The H pipeline (serial at 2^6, parallel regions at 2^12) and its power tables."""
    from cuzk.kernels import ntt_cpu

    rng = np.random.default_rng(12)
    for log_n in (6, 12):
        n = 1 << log_n
        abc = rng.integers(0, 2**64, size=(3, n, 4), dtype=np.uint64)
        abc[:, :, 3] >>= np.uint64(4)

        def run(abc=abc, log_n=log_n):
            ntt_cpu.clear_tables()
            a, b, c = (x.copy() for x in abc)
            h = ntt_cpu.compute_h(a, b, c)
            return np.concatenate([h, ntt_cpu.tables(log_n).g_rev])

        expected, got = both(run)
        assert np.array_equal(expected, got), log_n
    ntt_cpu.clear_tables()
    assert native.calls.get("h_pipeline") and native.calls.get("powers")


def test_synthesis_and_key_checks_agree_with_numba(native_on):
    """a, b, c of a key's matrices at its witness; the .r1cs check finds the same first
    unsatisfied constraint (none, then one of a changed witness); the point sweeps find the
    same first bad row (none, then a row moved off the curve)."""
    from cuzk.formats.r1cs import R1CS
    from cuzk.formats.wtns import read_wtns
    from cuzk.groth16 import validate
    from cuzk.groth16.synthesis import evaluate_abc, evaluate_abc_pieces, first_unsatisfied

    z = _key()
    witness = np.ascontiguousarray(read_wtns(FIXTURES / "toyhash" / "witness_0.wtns").values)
    expected, got = both(lambda: evaluate_abc(z.coefficients, witness, z.domain_size))
    for x, y in zip(expected, got, strict=True):
        assert np.array_equal(x, y)
    assert native.calls.get("evaluate_abc")
    c = z.coefficients  # the same in pieces (a resident key's large section: ProvingKey)
    cuts = [0, 1, 500, len(c) - 1, len(c)]
    pieces = [(c[lo:hi], hi == len(c)) for lo, hi in zip(cuts, cuts[1:], strict=False)]
    _, in_pieces = both(lambda: evaluate_abc_pieces(pieces, witness, z.domain_size))
    for x, y in zip(expected, in_pieces, strict=True):
        assert np.array_equal(x, y)
    assert native.calls.get("evaluate_abc_part")
    system = R1CS(FIXTURES / "toyhash" / "circuit.r1cs")  # --r1cs: a kernel that returns
    assert both(lambda: first_unsatisfied(system, witness)) == (None, None)
    bad = witness.copy()
    bad[5, 0] ^= np.uint64(1)
    expected, got = both(lambda: first_unsatisfied(system, bad))
    assert expected == got and isinstance(got, int)
    assert native.calls.get("first_unsatisfied")
    pts = np.array(z.points_c)
    assert both(lambda: validate.first_bad_point(pts)) == (-1, -1)
    pts[7, 2] ^= np.uint64(1)
    assert both(lambda: validate.first_bad_point(pts)) == (7, 7)
    assert native.calls.get("first_bad")


def test_the_daemons_stages_make_the_same_proof_bytes(native_on):
    """The stages as a daemon's processes run them (synthesize into shared buffers, prove_start
    on a long-lived CPU device, prove_finish with fixed r, s) give the same proof JSON with
    Numba's kernels and the library's; self-verification takes the library's pairing with
    the library (cuzk.groth16.verifier_backend: no numba) and accepts it."""
    from cuzk import groth16
    from cuzk.groth16 import ProvingKey, load_witness, open_device

    def proof():
        key = ProvingKey.open(FIXTURES / "toyhash" / "circuit.zkey")
        w = load_witness(FIXTURES / "toyhash" / "witness_0.wtns", key)
        out = {n: np.zeros(shape, dtype) for n, (shape, dtype) in key.buffers().items()}
        groth16.synthesize(key, w, out=out)
        partial = groth16.prove_start(key, out, w, open_device("cpu"))
        p = groth16.prove_finish(key, partial, w, r=12345, s=67890)
        vk = key.verification_key()
        backend = groth16.verifier_backend(key.arith_curve)
        return p.to_json(), backend, groth16.verify(vk, p.public, p)

    before = dict(native.calls)
    (numba_json, numba_backend, numba_ok), (native_json, native_backend, native_ok) = both(proof)
    assert numba_json == native_json
    assert (numba_backend, native_backend) == ("numba", "native") and numba_ok and native_ok
    ran = {k for k, n in native.calls.items() if n > before.get(k, 0)}
    assert {"evaluate_abc_part", "h_pipeline", "pippenger_g1_int16", "pippenger_g2_int16"} <= ran
    assert "pairing_product_is_one" in ran


def test_the_native_verifier_agrees_with_python_ints(native_on):
    """The "native" verifier backend (the library's G2 subgroup test, pairing product and MSM)
    gives pairing_int's verdicts and sums: G2 points in and outside G2, the toyhash fixture's
    proof accepted, the same proof with pi_c moved refused, a pair at infinity skipped, a
    linear combination of ~100 points (zero, one, 64-bit and r - 1 scalars among them); the
    library ran each kernel (no fallback to Numba's build)."""
    import json
    import random

    from reference import random_twist_point

    from cuzk.arith import pairing_int
    from cuzk.groth16.verifier import Proof, VerifyingKey, verify
    from cuzk.kernels.verifier_ops import NativeOps

    ops, ints = NativeOps("bn254"), pairing_int.for_curve("bn254")
    before = dict(native.calls)
    d = FIXTURES / "toyhash"
    vk = VerifyingKey.from_json(json.loads((d / "verification_key.json").read_text()))
    rng = random.Random(7)
    outside = [random_twist_point("bn254", rng) for _ in range(3)]
    for p in [*outside, vk.beta2, vk.gamma2, vk.delta2]:
        assert ops.g2_in_subgroup(p) == ints.g2_in_subgroup(p)
    assert not any(ops.g2_in_subgroup(p) for p in outside)
    assert ops.g2_in_subgroup(vk.delta2) and ops.g2_in_subgroup(None)
    proof = Proof.from_json(json.loads((d / "proof_0.json").read_text()))
    public = json.loads((d / "public_0.json").read_text())
    assert verify(vk, public, proof, "native")
    moved = Proof.from_points(proof.pi_a, proof.pi_b, vk.alpha1)
    assert not verify(vk, public, moved, "native")
    assert not verify(vk, public, moved, "python")
    assert ops.pairing_product_is_one([(None, vk.beta2), (vk.alpha1, None)])
    points = [*vk.ic, None, vk.alpha1] * 30  # ~100 points: the MSM's class pass and buckets
    ks = [rng.randrange(ints.R) for _ in points]
    ks[:4] = [0, 1, 2**64 - 1, ints.R - 1]
    assert ops.g1_linear_combination(points, ks) == ints.g1_linear_combination(points, ks)
    assert ops.g1_linear_combination(vk.ic[:1], [0]) is None
    ran = {k for k, n in native.calls.items() if n > before.get(k, 0)}
    assert {"g2_rows_in_subgroup", "pairing_product_is_one", "scalar_classes_g1"} <= ran


def _toyhash_prover():
    """The toyhash fixture's key, and proof(dev): its witness 0 proved on `dev` through the
    daemon's stages with fixed blinding (r, s), as proof JSON."""
    from cuzk.groth16 import prove_finish, prove_start, synthesize
    from cuzk.groth16.key import ProvingKey, load_witness

    key = ProvingKey.open(FIXTURES / "toyhash" / "circuit.zkey")
    w = load_witness(FIXTURES / "toyhash" / "witness_0.wtns", key)

    def proof(dev):
        syn = synthesize(key, w)
        partial = prove_start(key, syn.buffers, w, dev)
        return prove_finish(key, partial, w, r=12345, s=67890).to_json()

    return key, proof


def test_a_keys_tables_on_the_library_prove_the_same_bytes(native_on):
    """A resident key's tables (msm_tables) built by the library's kernels when a CPU device
    loads the key, and used by its MSMs (the G1 sets in prove_start, B2 in prove_finish): the
    proof is the same bytes as without tables, and the library's table kernels ran."""
    from cuzk.groth16 import configure, open_device

    key, proof = _toyhash_prover()
    plain = proof(open_device("cpu"))
    try:
        configure({"msm_tables": 4})
        before = dict(native.calls)
        dev = open_device("cpu")
        dev.load_key(key)  # (the tables are built beside the proofs: waited for here)
        assert dev.table_builds.wait(key.key_id, timeout=120)
        assert set(key.tables) == {"a", "b1", "c", "h", "b2"} and key.table_bytes > 0
        assert proof(dev) == plain
        dev.evict_key(key.key_id)
    finally:
        configure({})
    ran = {k for k, n in native.calls.items() if n > before.get(k, 0)}
    assert {"table_fill_g1", "table_fill_g2"} <= ran
    for g in ("g1", "g2"):
        assert any(r.startswith(f"pippenger_table_{g}_") for r in ran), (g, ran)


@pytest.fixture
def gated_tables(monkeypatch):
    """Table builds (msm_cpu.build_table) wait at a gate until it opens (set()) or their build
    is stopped; msm_tables = 4 with tables planned for the fixtures' small point sets."""
    import threading

    from cuzk.groth16 import configure
    from cuzk.kernels import msm_cpu

    real, gate = msm_cpu.build_table, threading.Event()

    def gated(*args, stop=None, **kwargs):
        while not gate.is_set() and not (stop is not None and stop()):
            gate.wait(0.01)
        return real(*args, stop=stop, **kwargs)

    monkeypatch.setattr(msm_cpu, "build_table", gated)
    monkeypatch.setattr(msm_cpu, "PARTITION_MIN", 8)
    configure({"msm_tables": 4})
    yield gate
    gate.set()
    configure({})


def test_a_keys_tables_build_beside_its_proofs_and_stop_with_it(native_on, gated_tables):
    """With the library, load_key returns while the tables are built on a thread of their own:
    proofs go on without them (the same bytes), each table is put in place when done, and a
    key evicted while they build stops the build (waited for) and keeps none."""
    from cuzk.groth16 import open_device

    key, proof = _toyhash_prover()
    dev = open_device("cpu")
    plain = proof(dev)
    dev.load_key(key)
    assert dev.table_builds.building(key.key_id) and key.tables == {}
    assert proof(dev) == plain  # proved while the build waits at its gate
    gated_tables.set()
    assert dev.table_builds.wait(key.key_id, timeout=120)
    assert set(key.tables) == {"a", "b1", "c", "h", "b2"}
    assert dev.resident_bytes(key.key_id) == key.table_bytes > 0
    assert proof(dev) == plain
    dev.evict_key(key.key_id)
    gated_tables.clear()
    dev.load_key(key)
    assert dev.table_builds.building(key.key_id)
    dev.evict_key(key.key_id)  # mid-build: returns once the build has stopped
    assert not dev.table_builds.building(key.key_id) and key.tables == {}
    assert dev.resident_bytes() == 0


def test_a_plonk_keys_table_builds_beside_its_proofs(native_on, gated_tables, circuit_named):
    """The same for a PLONK key on a CPU device: proved (and accepted) without the table while
    it builds; the table joins the held key when done; evicted mid-build, none is kept."""
    import json

    import cuzk.plonk
    from cuzk.plonk import stages
    from cuzk.plonk.key import ProvingKey
    from cuzk.plonk.key import configure as plonk_configure
    from cuzk.plonk.verifier import verify_objects

    plonk_configure({"msm_tables": 4})
    c = circuit_named("mulchain")
    key = ProvingKey.open(c.plonk_zkey)
    vk = json.loads(c.plonk_vk.read_text())
    w = cuzk.plonk.load_witness(c.witness(0), key)
    public = json.loads(c.plonk_public(0).read_text())

    def accepted(device):
        proof = stages.prove_start(key, stages.synthesize(key, w).buffers, w, device)
        return verify_objects(vk, public, proof.to_json())

    device = stages.open_device("cpu")
    device.load_key(key)
    assert device.table_builds.building(key.key_id) and device.held(key.key_id).table is None
    assert accepted(device)
    gated_tables.set()
    assert device.table_builds.wait(key.key_id, timeout=120)
    table = device.held(key.key_id).table
    assert table is not None and table.nbytes == key.table_bytes > 0
    assert device.resident_bytes(key.key_id) == key.extended_bytes + table.nbytes
    assert accepted(device)
    device.evict_key(key.key_id)
    gated_tables.clear()
    device.load_key(key)
    device.evict_key(key.key_id)
    assert not device.table_builds.building(key.key_id) and device.held(key.key_id) is None


def _prove_cmd(tmp_path, *python_flags):
    c = FIXTURES / "toyhash"
    return [
        sys.executable,
        *python_flags,
        "-m",
        "cuzk.console",
        "prove",
        str(c / "circuit.zkey"),
        str(c / "witness_0.wtns"),
        str(tmp_path / "proof.json"),
        str(tmp_path / "public.json"),
    ]


def _env(native_dir, **extra):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUZK_NATIVE_DIR": str(native_dir), **extra}
    env.pop("CUZK_NATIVE", None)
    return env


def _verify(tmp_path):
    from cuzk.groth16.verifier import verify_files

    c = FIXTURES / "toyhash"
    return verify_files(
        c / "verification_key.json", tmp_path / "public.json", tmp_path / "proof.json"
    )


# Every option of a local `cuzk prove` that the library serves: each subset of the fast path's
# flags (cuzk.groth16.local_cli), then the same through click (--device cpu is no fast-path
# flag); --local with a server configured (CUZK_SERVER); --r1cs (the constraint check), alone,
# with the others and through click.
_R1CS = ["--r1cs", str(FIXTURES / "toyhash" / "circuit.r1cs")]
_FLAGS = ("--no-verify", "--timings", "--local")
PROVE_OPTIONS = [[f for i, f in enumerate(_FLAGS) if mask >> i & 1] for mask in range(8)] + [
    ["--device", "cpu"],
    ["--device", "cpu", *_FLAGS],
    ["--verify", "--timings"],
    _R1CS,
    [*_R1CS, *_FLAGS],
    ["--device", "cpu", *_R1CS],
]


def test_prove_with_the_library_imports_no_numba(native_dir, tmp_path):
    """`cuzk prove` with the library built proves a valid proof and never imports numba, with
    every option the library serves (python -X importtime lists every import on stderr);
    --no-verify once imported all of numba (222 modules) for one G2 row test. Nor logging
    without --timings. Nor numpy, except with --r1cs (cuzk.groth16.lean)."""
    brought_numba = []
    for options in PROVE_OPTIONS:
        server = {"CUZK_SERVER": "http://127.0.0.1:9"} if "--local" in options else {}
        for f in ("proof.json", "public.json"):
            (tmp_path / f).unlink(missing_ok=True)
        p = subprocess.run(
            _prove_cmd(tmp_path, "-X", "importtime") + options,
            capture_output=True,
            text=True,
            timeout=300,
            env=_env(native_dir, **server),
        )
        assert p.returncode == 0, (options, p.stderr[-2000:])
        imported = [
            line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines() if "|" in line
        ]
        assert "cuzk.native" in imported, options
        # the common case proves without numpy (cuzk.groth16.lean); --r1cs on the full path
        lean = "--r1cs" not in options
        assert ("numpy" in imported) != lean, options
        assert ("cuzk.groth16.lean" in imported) == lean, options
        if "--timings" not in options and options in PROVE_OPTIONS[:8]:  # the fast path's
            assert "logging" not in imported, options  # ~3 ms: only --timings logs
        if [m for m in imported if m.split(".")[0] in ("numba", "llvmlite")]:
            brought_numba.append(" ".join(options))
        assert _verify(tmp_path), options
    assert not brought_numba


def test_a_damaged_library_leaves_the_command_on_numba(native_dir, tmp_path):
    """A library file that does not load is named on stderr and the proof is made with
    Numba's kernels; CUZK_NATIVE=0, or a folder without the library, take Numba's too."""
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in native_dir.iterdir():
        (bad / f.name).write_bytes(b"not a library" if f.name.startswith("kernels-") else b"")
    shutil.copy(next(native_dir.glob("runtime-*.so")), bad)
    p = subprocess.run(
        _prove_cmd(tmp_path), capture_output=True, text=True, timeout=600, env=_env(bad)
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "not using" in p.stderr and "kernels-bn254" in p.stderr
    assert _verify(tmp_path)
    for env in (_env(native_dir, CUZK_NATIVE="0"), _env(tmp_path / "empty")):
        (tmp_path / "proof.json").unlink()
        r = subprocess.run(
            _prove_cmd(tmp_path), capture_output=True, text=True, timeout=600, env=env
        )
        assert r.returncode == 0, r.stderr[-2000:]
        assert _verify(tmp_path)


def test_the_library_is_keyed_on_the_cpu_and_the_sources(native_dir):
    """A process told of another CPU (NUMBA_CPU_NAME, as Numba reads it) looks for a library
    of another name; the key covers every kernel source."""
    code = "from cuzk import native; print(native.key())"
    keys = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), **extra},
            check=True,
        ).stdout.strip()
        for extra in ({}, {"NUMBA_CPU_NAME": "generic"})
    ]
    assert keys[0] == native.key() and keys[1] != keys[0]
    names = {str(f.relative_to(native.PACKAGE)) for f in native._source_files()}
    for source in (
        "kernels/pippenger_cpu.py",
        "kernels/ntt_cpu_kernels.py",
        "arith/field.py",
        "groth16/synthesis_kernels.py",
        "groth16/point_sweeps.py",
        "native/runtime.c",
    ):
        assert source in names


def test_plonk_prove_with_the_library_imports_no_numba(native_dir, tmp_path):
    """`cuzk prove` on a PLONK key (nested: additions, 14 public signals) with the library:
    its NTT and PLONK kernels (entries ntt_*, plonk_*) serve the whole proof, numba is never
    imported, and the proof verifies."""
    from cuzk.plonk.verifier import verify_files

    c = FIXTURES / "nested"
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cuzk.console", "prove"]
        + [str(c / "plonk.zkey"), str(c / "witness_1.wtns"), str(proof), str(public)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(native_dir),
    )
    assert p.returncode == 0, p.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines() if "|" in line]
    assert "cuzk.native" in imported and "cuzk.plonk.prover" in imported
    assert not [m for m in imported if m.split(".")[0] in ("numba", "llvmlite")]
    assert verify_files(c / "plonk_vk.json", public, proof)


def test_the_build_shares_every_entry_once_a_build_in_one_worker():
    """The library's entries split for the build's workers (native.build._shares): each entry
    in exactly one share, the entries of one build (module, parameters) in the same share, no
    empty share, at most the workers asked for."""
    from cuzk.native.build import _shares
    from cuzk.native.entries import ENTRIES

    builds = {e.name: (e.module, e.params) for e in ENTRIES}
    for jobs in range(1, 9):
        shares = _shares(jobs)
        assert 1 <= len(shares) <= jobs and all(shares)
        names = [n for share in shares for n in share]
        assert sorted(names) == sorted(builds)
        owner = {builds[n]: i for i, share in enumerate(shares) for n in share}
        assert all(owner[builds[n]] == i for i, share in enumerate(shares) for n in share)


def test_the_build_workers_hand_back_their_objects_and_fail_aloud(tmp_path, monkeypatch):
    """native.build._compile_in_workers with stand-in workers (no compile): each worker's
    objects and undefined symbols come back in ENTRIES' order; a worker that dies fails the
    build with its last words, and no worker is left running."""
    from cuzk.native import build
    from cuzk.native.entries import ENTRIES

    fake = (
        "import sys, pathlib; curve, folder, names = sys.argv[1], sys.argv[2], sys.argv[3:]\n"
        "for n in names:\n"
        "    pathlib.Path(folder, n + '.undefined').write_text('memset\\n' + curve + '\\n')\n"
        "    pathlib.Path(folder, n + '.o').write_bytes(n.encode())\n"
    )
    monkeypatch.setattr(build, "WORKER", fake)
    (tmp_path / "ok").mkdir()
    got = build._compile_in_workers("bn254", build._shares(2), str(tmp_path / "ok"))
    assert [g[0] for g in got] == [e.name for e in ENTRIES]
    assert all(obj == name.encode() and und == {"memset", "bn254"} for name, obj, und in got)

    monkeypatch.setattr(
        build, "WORKER", "import sys; print('out of memory', file=sys.stderr); sys.exit(3)"
    )
    (tmp_path / "bad").mkdir()
    with pytest.raises(build.BuildError, match=r"exit status 3\): out of memory"):
        build._compile_in_workers("bn254", build._shares(2), str(tmp_path / "bad"))
