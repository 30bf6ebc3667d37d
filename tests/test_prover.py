"""The Groth16 prover: stages, `cuzk prove` and `cuzk setup`, checked against snarkjs."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import FIXTURE_CIRCUITS

from cuzk.arith.constants import FR_MODULUS, MONT_R
from cuzk.arith.radix import limbs_to_ints
from cuzk.cli import main
from cuzk.groth16 import ProvingKey, first_unsatisfied, load_witness, synthesize

R_INV = pow(MONT_R, -1, FR_MODULUS)


def _ints_from_mont(arr):
    return [v * R_INV % FR_MODULUS for v in limbs_to_ints(arr)]


def test_synthesis_matches_python_ints(small_circuit):
    """a = A·w, b = B·w, c = a∘b against a plain-int evaluation of the zkey coefficients."""
    key = ProvingKey.open(small_circuit.zkey)
    w = load_witness(small_circuit.witness(0), key)
    syn = synthesize(key, w)
    wi = limbs_to_ints(w)
    n = key.domain_size
    a, b = [0] * n, [0] * n
    for e in key.zkey.coefficients:
        coef = limbs_to_ints(np.array([e["value"]]))[0] * R_INV * R_INV % FR_MODULUS
        vec = a if e["matrix"] == 0 else b
        vec[e["constraint"]] = (vec[e["constraint"]] + coef * wi[e["signal"]]) % FR_MODULUS
    assert _ints_from_mont(syn.a) == a
    assert _ints_from_mont(syn.b) == b
    assert _ints_from_mont(syn.c) == [x * y % FR_MODULUS for x, y in zip(a, b, strict=True)]
    assert syn.public == wi[1 : key.n_public + 1]


def test_r1cs_check_finds_the_broken_constraint(any_circuit):
    from cuzk.formats.r1cs import R1CS

    r1cs = R1CS(any_circuit.r1cs)
    good = load_witness(any_circuit.witness(0))
    assert first_unsatisfied(r1cs, good) is None
    bad = load_witness(any_circuit.bad_witness)
    i = first_unsatisfied(r1cs, bad)
    assert i is not None
    assert i == r1cs.first_unsatisfied(limbs_to_ints(bad))  # the formats' pure-Python check


@pytest.mark.interop
@pytest.mark.parametrize("name", [*FIXTURE_CIRCUITS, "tiny381"])
def test_cuzk_proofs_verify_in_snarkjs(tools, circuit_named, name, tmp_path):
    """`cuzk prove` of each witness, on either curve: snarkjs and `cuzk verify` accept it."""
    from interop import groth16_verify

    c = circuit_named(name)
    for k in range(c.n_sets):
        proof, public = tmp_path / f"proof{k}.json", tmp_path / f"public{k}.json"
        r = CliRunner().invoke(
            main, ["prove", str(c.zkey), str(c.witness(k)), str(proof), str(public)]
        )
        assert r.exit_code == 0, r.output
        assert json.loads(public.read_text()) == json.loads(c.public(k).read_text())
        assert groth16_verify(c.vk, public, proof)
        r = CliRunner().invoke(main, ["verify", str(c.vk), str(public), str(proof)])
        assert r.exit_code == 0, r.output


@pytest.mark.interop
def test_two_proofs_of_one_witness_differ_and_both_verify(tools, circuit_named, tmp_path):
    from interop import groth16_verify

    c = circuit_named("mulchain")
    outs = []
    for k in range(2):
        proof, public = tmp_path / f"p{k}.json", tmp_path / f"pub{k}.json"
        r = CliRunner().invoke(
            main, ["prove", str(c.zkey), str(c.witness(0)), str(proof), str(public)]
        )
        assert r.exit_code == 0, r.output
        assert groth16_verify(c.vk, public, proof)
        outs.append(json.loads(proof.read_text()))
    assert outs[0]["pi_a"] != outs[1]["pi_a"] and outs[0]["pi_c"] != outs[1]["pi_c"]


# `cuzk setup` per curve (the curve is the .r1cs's): the circuit set up, a witness of another
# circuit its key refuses and the words that refusal names.
SETUP_CASES = {
    "bn254": ("toyhash", "tiny", "nVars"),
    "bls12_381": ("tiny381", "tiny", "scalar field"),
}


@pytest.mark.interop
@pytest.mark.parametrize("curve", SETUP_CASES)
def test_cuzk_setup_keys_work_with_snarkjs(tools, curve, circuit_named, tmp_path):
    """cuzk setup → snarkjs groth16 prove → snarkjs verify; cuzk prove on that key → snarkjs
    verify and cuzk verify; the key validates on its curve, and the header names it."""
    from interop import export_vk, groth16_prove, groth16_verify

    from cuzk.formats import ZKey
    from cuzk.formats.curve import by_name
    from cuzk.groth16.validate import validate_key

    name, other, refusal = SETUP_CASES[curve]
    c = circuit_named(name)
    zkey = tmp_path / "k.zkey"
    r = CliRunner().invoke(main, ["setup", "-q", str(c.r1cs), str(zkey)])
    assert r.exit_code == 0, r.output
    assert "INSECURE" in r.output
    key = ZKey(zkey)
    assert key.curve_info is by_name(curve)  # the header's q and r are the .r1cs's curve's
    validate_key(key)
    vk = export_vk(zkey, tmp_path / "vk.json")
    proof, public = groth16_prove(zkey, c.witness(1), tmp_path / "p.json", tmp_path / "pub.json")
    assert groth16_verify(vk, public, proof)
    proof, public = tmp_path / "q.json", tmp_path / "qpub.json"
    r = CliRunner().invoke(main, ["prove", str(zkey), str(c.witness(0)), str(proof), str(public)])
    assert r.exit_code == 0, r.output
    assert groth16_verify(vk, public, proof)
    r = CliRunner().invoke(main, ["verify", str(vk), str(public), str(proof)])
    assert r.exit_code == 0 and r.output.startswith("OK"), r.output
    # A witness of another circuit is refused with the reason named.
    r = CliRunner().invoke(
        main,
        [
            "prove",
            str(zkey),
            str(circuit_named(other).witness(0)),
            str(tmp_path / "x.json"),
            str(tmp_path / "xp.json"),
        ],
    )
    assert r.exit_code != 0 and refusal in r.output


def _prove(args):
    return CliRunner().invoke(main, ["prove", *map(str, args)])


@pytest.mark.parametrize("name", ["mulchain", "tiny381"])
def test_prove_refuses_an_unsatisfying_witness_with_r1cs(circuit_named, name, tmp_path):
    c = circuit_named(name)
    proof, public = tmp_path / "p.json", tmp_path / "pub.json"
    r = _prove(["--r1cs", c.r1cs, c.zkey, c.bad_witness, proof, public])
    assert r.exit_code == 1
    assert "does not satisfy constraint" in r.output
    assert not proof.exists() and not public.exists()


@pytest.mark.parametrize("name", ["mulchain", "tiny381"])
def test_prove_refuses_an_unsatisfying_witness_with_verify(circuit_named, name, tmp_path):
    c = circuit_named(name)
    proof, public = tmp_path / "p.json", tmp_path / "pub.json"
    r = _prove(["--verify", c.zkey, c.bad_witness, proof, public])
    assert r.exit_code == 1
    assert "does not verify" in r.output
    assert not proof.exists() and not public.exists()


def test_prove_with_verify_and_r1cs_writes_a_good_proof(circuit_named, tmp_path):
    c = circuit_named("bits")
    proof, public = tmp_path / "p.json", tmp_path / "pub.json"
    r = _prove(["--verify", "--r1cs", c.r1cs, c.zkey, c.witness(1), proof, public])
    assert r.exit_code == 0, r.output
    assert json.loads(public.read_text()) == json.loads(c.public(1).read_text())


@pytest.mark.parametrize(
    "damage",
    ["truncate_zkey", "truncate_wtns", "corrupt_magic", "fflonk", "wrong_count", "missing"],
)
def test_prove_bad_inputs_named_error_no_output(each_curve, tmp_path, damage):
    from cuzk.formats.wtns import read_wtns, write_wtns

    c = each_curve
    zkey, wtns = tmp_path / "k.zkey", tmp_path / "w.wtns"
    shutil.copy(c.zkey, zkey)
    shutil.copy(c.witness(0), wtns)
    if damage == "truncate_zkey":
        zkey.write_bytes(zkey.read_bytes()[:-100])
    elif damage == "truncate_wtns":
        wtns.write_bytes(wtns.read_bytes()[:-7])
    elif damage == "corrupt_magic":
        zkey.write_bytes(b"zkez" + zkey.read_bytes()[4:])
    elif damage == "fflonk":  # a protocol cuzk does not prove
        if not (c.dir / "fflonk.zkey").exists():
            pytest.skip(f"{c.name} has no FFLONK key")
        shutil.copy(c.dir / "fflonk.zkey", zkey)
    elif damage == "wrong_count":  # a well-formed witness of the key's field, one value short
        w = read_wtns(c.witness(0))
        write_wtns(wtns, limbs_to_ints(w.values)[:-1], prime=w.prime)
    elif damage == "missing":
        wtns.unlink()
    proof, public = tmp_path / "p.json", tmp_path / "pub.json"
    r = _prove([zkey, wtns, proof, public])
    assert r.exit_code == 1, r.output
    assert r.output.startswith("cuzk prove: ")
    assert len(r.output.strip().splitlines()) == 1
    if damage == "wrong_count":
        assert "nVars" in r.output, r.output
    if damage == "fflonk":
        assert "fflonk" in r.output and "not supported" in r.output, r.output
    assert not proof.exists() and not public.exists()


@pytest.mark.parametrize("flag", ["witness", "--r1cs"])
@pytest.mark.parametrize(("name", "other"), [("tiny", "tiny381"), ("tiny381", "tiny")])
def test_prove_refuses_a_file_of_the_other_curve(circuit_named, name, other, flag, tmp_path):
    """A witness or --r1cs of the other curve: one line naming both curves, nothing written."""
    c, o = circuit_named(name), circuit_named(other)
    proof, public = tmp_path / "p.json", tmp_path / "pub.json"
    if flag == "witness":
        r = _prove([c.zkey, o.witness(0), proof, public])
    else:
        r = _prove(["--r1cs", o.r1cs, c.zkey, c.witness(0), proof, public])
    _one_line_error(r, "BN254", "BLS12-381")
    assert not proof.exists() and not public.exists()


def _one_line_error(r, *words):
    assert r.exit_code == 1, r.output
    assert r.output.startswith("cuzk prove: ") and len(r.output.strip().splitlines()) == 1
    for w in words:
        assert w in r.output, r.output


def test_prove_writes_both_outputs_or_neither(circuit_named, tmp_path, monkeypatch):
    """One file for both (two spellings too) is refused before proving; a public.json that
    cannot be written (a missing folder, /dev/full) leaves no proof.json either."""
    import os

    c = circuit_named("tiny")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "out.json").write_text("old")
    for second in ("out.json", "sub/../out.json", str(tmp_path / "out.json")):
        r = _prove([c.zkey, c.witness(0), "out.json", second])
        _one_line_error(r, f"out.json and {second} are the same file")
    assert sorted(os.listdir(tmp_path)) == ["out.json", "sub"]
    assert (tmp_path / "out.json").read_text() == "old"
    r = _prove([c.zkey, c.witness(0), "proof.json", "nodir/public.json"])
    _one_line_error(r, "nodir/public.json: no such directory")
    r = _prove([c.zkey, c.witness(0), "proof.json", "/dev/full"])
    _one_line_error(r, "/dev/full: No space left on device")
    assert sorted(os.listdir(tmp_path)) == ["out.json", "sub"]


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="mknod of a device node needs root")
def test_prove_into_a_device_node_writes_it_in_place(circuit_named, tmp_path):
    import os
    import stat

    c = circuit_named("tiny")
    full, null = tmp_path / "full", tmp_path / "null"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # copies of /dev/full, /dev/null
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    public = tmp_path / "public.json"
    _one_line_error(_prove([c.zkey, c.witness(0), full, public]), "No space left on device")
    assert not public.exists()
    r = _prove([c.zkey, c.witness(0), null, public])
    assert r.exit_code == 0, r.output
    assert json.loads(public.read_text()) == json.loads(c.public(0).read_text())
    assert stat.S_ISCHR(os.lstat(full).st_mode) and stat.S_ISCHR(os.lstat(null).st_mode)


def test_synthesis_into_reused_buffers_overwrites_them(small_circuit):
    """The engine hands synthesize shared-memory buffers that still hold the last partition:
    a, b, c must come out the same as into fresh arrays."""
    key = ProvingKey.open(small_circuit.zkey)
    w = load_witness(small_circuit.witness(0), key)
    fresh = synthesize(key, w)
    n = key.domain_size
    out = {name: np.full((n, 4), 0xDEADBEEF, dtype=np.uint64) for name in "abc"}
    syn = synthesize(key, np.array(w), out=out)  # a writable witness, as in shared memory
    assert list(syn.buffers) == list(key.buffers()) == ["a", "b", "c"]
    for name, buf in out.items():
        assert syn.buffers[name] is buf
        np.testing.assert_array_equal(buf, fresh.buffers[name])


def test_cpu_msms_of_one_proof_share_one_kernel_build(small_circuit, monkeypatch):
    """Numba caches a build per argument type and a process pays to load each one: the five
    MSMs of a proof (witness scalars, h scalars, G1 and G2) and the four small ones of its
    assembly must pass one point type and one scalar type."""
    import numba

    from cuzk.groth16 import open_device, prove
    from cuzk.kernels import msm_cpu

    seen = []

    def spy(real):
        def msm(points, scalars, c=None, curve="bn254"):
            seen.append((numba.typeof(points), numba.typeof(scalars)))
            return real(points, scalars, c, curve=curve)

        return msm

    monkeypatch.setattr(msm_cpu, "msm_g1", spy(msm_cpu.msm_g1))
    monkeypatch.setattr(msm_cpu, "msm_g2", spy(msm_cpu.msm_g2))
    key = ProvingKey.open(small_circuit.zkey)
    w = np.array(load_witness(small_circuit.witness(0), key))  # writable, as in shared memory
    proof = prove(key, w, open_device("cpu"))
    assert len(seen) == 5 + 4
    assert len(set(seen)) == 1, seen
    assert w.flags.writeable  # the caller's array is left as it was
    from cuzk.groth16.verifier import verify_with_zkey

    assert verify_with_zkey(key.zkey, proof.public, proof.points())


def _cuzk_process(*args, env=None):
    """`cuzk prove ...` as a process of its own (the fast exit and lean kernel loads apply)."""
    import os
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "cuzk.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("name", [*FIXTURE_CIRCUITS, "tiny381"])
def test_prove_as_a_process_writes_proofs_that_verify(circuit_named, name, tmp_path):
    """The real command (not CliRunner): lean cache loads, then an exit that skips the
    interpreter's teardown, must leave complete outputs and exit 0; bad input still exits 1."""
    from cuzk.groth16.verifier import VerifyingKey, verify

    any_circuit = circuit_named(name)

    proof, public = tmp_path / "p.json", tmp_path / "pub.json"
    p = _cuzk_process("prove", any_circuit.zkey, any_circuit.witness(0), proof, public)
    assert p.returncode == 0, p.stderr
    assert json.loads(public.read_text()) == json.loads(any_circuit.public(0).read_text())
    vk = VerifyingKey.from_zkey(ProvingKey.open(any_circuit.zkey).zkey)
    assert verify(vk, json.loads(public.read_text()), json.loads(proof.read_text()))
    p = _cuzk_process(
        "prove",
        any_circuit.zkey,
        tmp_path / "missing.wtns",
        tmp_path / "q.json",
        tmp_path / "qp.json",
    )
    assert p.returncode == 1 and p.stderr.startswith("cuzk prove: ")


def test_prove_process_writes_the_proof_to_dev_stdout(circuit_named, tmp_path):
    """`cuzk prove Z W /dev/stdout public.json | ...`: the proof goes down the pipe, and
    /dev/stdout stays what it is (checked first: never a rename over it)."""
    import os

    from cuzk.formats.atomic import Target
    from cuzk.groth16.verifier import VerifyingKey, verify

    assert Target.of("/dev/stdout").in_place
    c = circuit_named("tiny")
    public = tmp_path / "public.json"
    p = _cuzk_process("prove", c.zkey, c.witness(0), "/dev/stdout", public)
    assert p.returncode == 0, p.stderr
    vk = VerifyingKey.from_zkey(ProvingKey.open(c.zkey).zkey)
    assert verify(vk, json.loads(public.read_text()), json.loads(p.stdout))
    assert os.path.islink("/dev/stdout") and os.listdir(tmp_path) == ["public.json"]


_KERNEL_SOURCE = """
import numpy as np
from numba import njit


@njit(cache=True, parallel=True)
def poly(x, k):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * x[i] + k
    return out
"""


def test_lean_cache_loads_compiles_on_a_miss_loads_on_a_hit_and_restores(tmp_path):
    """Inside the block a kernel not in the cache still compiles (Numba's compiler refreshes
    its target itself), a cached one loads without the refresh in a fresh process and runs
    right, and Numba's own loader is back after the block (also after nested blocks).
    A cached kernel loads from its object code alone (its bitcode unparsed); a function
    compiled later that calls it gets the bitcode parsed then, and runs right."""
    from numba.core import caching
    from numba.core.codegen import CPUCodeLibrary

    from cuzk.groth16.startup import lean_cache_loads

    (tmp_path / "leankernel.py").write_text(_KERNEL_SOURCE)
    script = (
        "import sys, numpy as np; sys.path.insert(0, sys.argv[1]);"
        "from numba import njit\n"
        "from cuzk.groth16.startup import lean_cache_loads\n"
        "with lean_cache_loads():\n"
        "    import leankernel\n"
        "    print(leankernel.poly(np.arange(5, dtype=np.int64), 3).tolist(),"
        " len(leankernel.poly.stats.cache_hits))\n"
        "lib = leankernel.poly.overloads[leankernel.poly.signatures[0]].library\n"
        "deferred = hasattr(lib, '_cuzk_bitcode')\n"
        "caller = njit(lambda x, k: leankernel.poly(x, k)[2])\n"
        "print(deferred, caller(np.arange(5, dtype=np.int64), 1), hasattr(lib, '_cuzk_bitcode'),"
        " len(leankernel.poly.overloads))\n"
    )
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    import os
    import subprocess
    import sys

    def run():
        return subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, **env},
        )

    runs = [run(), run()]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    # Numba's runtime: compiled and written by the first process, loaded by the second; a
    # damaged file is compiled again and rewritten
    (runtime,) = (tmp_path / "cache" / "cuzk-runtime").glob("numba-runtime-*.nrt")
    written = runtime.read_bytes()
    runtime.write_bytes(b"damaged")
    again = run()
    assert again.returncode == 0 and again.stdout == runs[1].stdout, again.stderr
    assert runtime.read_bytes() == written
    # compiled (nothing deferred), then loaded with its bitcode deferred until the caller
    # compiled against it
    assert runs[0].stdout.split() == ["[3,", "4,", "7,", "12,", "19]"] + "0 False 5 False 1".split()
    assert runs[1].stdout.split() == ["[3,", "4,", "7,", "12,", "19]"] + "1 True 5 False 1".split()
    original = caching.Cache.load_overload
    unserialize = CPUCodeLibrary.__dict__["_unserialize"]
    with lean_cache_loads():
        with lean_cache_loads():
            assert caching.Cache.load_overload is not original
        assert caching.Cache.load_overload is not original
        assert CPUCodeLibrary.__dict__["_unserialize"] is not unserialize
    assert caching.Cache.load_overload is original
    assert CPUCodeLibrary.__dict__["_unserialize"] is unserialize


def test_elf_symbols_of_a_cached_kernel_name_its_entry_points():
    """The symbols a deferred load registers come from the object's ELF symbol table: they
    include what Numba looks up (the function and its CPython wrapper); non-ELF gives None."""
    from numba import njit

    from cuzk.groth16.startup import _elf_defined_symbols

    f = njit(lambda x: x * 3 + 1)
    assert f(2) == 7
    cres = f.overloads[f.signatures[0]]
    names = _elf_defined_symbols(cres.library._get_compiled_object())
    assert cres.fndesc.llvm_func_name in names
    assert cres.fndesc.llvm_cpython_wrapper_name in names
    assert _elf_defined_symbols(b"not an object file" * 4) is None


def test_stages_with_fixed_blinding_equal_the_pure_python_reference(circuit_named):
    """synthesize → prove_start → prove_finish with given r, s gives exactly the points of
    tests/reference.py (Python ints and py_ecc, snarkjs's steps), blinding included."""
    import reference

    from cuzk.formats.stored import g1_from_limbs, g2_from_limbs
    from cuzk.groth16 import open_device, prove_finish, prove_start

    c = circuit_named("tiny")
    key = ProvingKey.open(c.zkey)
    w = load_witness(c.witness(0), key)
    r, s = 0x1234567890ABCDEF << 130 | 99, FR_MODULUS - 12345
    syn = synthesize(key, w)
    partial = prove_start(key, syn.buffers, w, open_device("cpu"))
    proof = prove_finish(key, partial, w, r=r, s=s)
    want = reference.prove_files(key.zkey, w, r, s)
    got = (
        g1_from_limbs(proof.pi_a),
        g2_from_limbs(proof.pi_b),
        g1_from_limbs(proof.pi_c),
        proof.public,
    )
    assert got == want


def test_the_prove_command_module_loads_before_numpy():
    """`cuzk prove` sets up numpy's BLAS threads (one: the prover does no BLAS work and idle
    BLAS threads spin) before numpy is imported, so importing the command (and with it the
    cuzk.groth16 package) must not import numpy, numba or the kernels; the package's names
    still resolve."""
    import os
    import subprocess
    import sys

    code = (
        "import sys, os, cuzk.cli, cuzk.groth16.cli; "
        "print(sorted(m for m in ('numpy', 'numba', 'cuzk.kernels') if m in sys.modules), "
        "os.environ.get('OPENBLAS_NUM_THREADS')); "
        "from cuzk.groth16 import prove, ProvingKey, synthesis; import cuzk.groth16 as groth16; "
        "print(prove.__module__, ProvingKey.__module__, synthesis.__name__, "
        "sorted(groth16.__all__) == sorted(n for n in dir(groth16) if n in groth16.__all__))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [
        "[]",
        "1",
        "cuzk.groth16.stages",
        "cuzk.groth16.key",
        "cuzk.groth16.synthesis",
        "True",
    ]


def _mapped_kib(path) -> int:
    """KiB of this process's resident pages mapped from the file at path (Linux smaps)."""
    total, current = 0, None
    with open("/proc/self/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and len(parts) >= 5:  # a mapping's header line
                current = parts[5] if len(parts) > 5 else None
            elif parts[0] == "Rss:" and current == str(path):
                total += int(parts[1])
    return total


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/smaps"), reason="Linux smaps")
def test_a_key_read_once_drops_its_sections_and_a_resident_one_keeps_its_pages(
    circuit_named, tmp_path
):
    """ProvingKey.open(resident=False) (the `cuzk prove` process, a key's validation) maps
    nothing of the file (issue 38): each section is read when first used and done_with drops
    it (freed, read again if used again, the same values). A resident key (a daemon's proving
    processes) maps the file and keeps its pages."""
    import gc
    import weakref

    from cuzk.groth16.key import POINT_SECTIONS

    zkey = tmp_path / "k.zkey"
    shutil.copy(circuit_named("toyhash").zkey, zkey)
    sections = (*POINT_SECTIONS, "coefficients")
    for resident in (False, True):
        key = ProvingKey.open(zkey, resident=resident)
        arrays = {s: getattr(key.zkey, s) for s in sections}
        sums = {s: int(np.asarray(a).view(np.uint8).sum()) for s, a in arrays.items()}
        read = _mapped_kib(zkey.resolve())
        if resident:
            assert read >= 200, read  # the toyhash key's sections are ~350 KiB
        else:
            assert read == 0, read
        refs = [weakref.ref(a) for a in arrays.values()]
        del arrays
        key.done_with(*sections)
        gc.collect()
        if resident:
            assert _mapped_kib(zkey.resolve()) == read
        else:
            assert all(r() is None for r in refs)  # dropped: nothing holds them
        again = {s: int(np.asarray(getattr(key.zkey, s)).view(np.uint8).sum()) for s in sections}
        assert again == sums
        del key


def test_prove_frees_b_and_c_after_h_and_a_one_shot_device_keeps_no_tables(small_circuit):
    """prove(): once h is computed (in a's storage on the CPU) nothing holds b and c while
    the MSMs run; a one-shot device builds the NTT's tables for its proof and drops them."""
    import weakref

    from cuzk.groth16 import open_device, prove
    from cuzk.groth16.verifier import verify_with_zkey
    from cuzk.kernels import ntt_cpu

    ntt_cpu.clear_tables()
    device = open_device("cpu", one_shot=True)
    refs, alive = [], []

    class Spy:
        def compute_h(self, a, b, c, curve="bn254"):
            refs.extend([weakref.ref(b), weakref.ref(c)])
            return device.compute_h(a, b, c, curve=curve)

        def msm_g1(self, key, which, scalars):
            alive.append(sum(r() is not None for r in refs))
            return device.msm_g1(key, which, scalars)

    key = ProvingKey.open(small_circuit.zkey)
    proof = prove(key, load_witness(small_circuit.witness(0), key), Spy())
    assert len(refs) == 2 and alive == [0, 0, 0, 0]
    assert ntt_cpu.tables_nbytes() == 0
    assert verify_with_zkey(key.zkey, proof.public, proof.points())


def test_a_one_shot_process_returns_freed_arrays_to_the_system():
    """glibc's mmap threshold is pinned (so freed MSM scratch leaves the process) where
    glibc is the C library."""
    import platform

    from cuzk.groth16.startup import return_freed_arrays_to_the_system

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    assert return_freed_arrays_to_the_system() is True
