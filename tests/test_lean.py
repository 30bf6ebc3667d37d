"""`cuzk prove` without numpy (cuzk.groth16.lean): the proof it makes is the full path's, byte
for byte, by the same kernel calls; whatever it declines (another protocol, no library, any
input it finds wrong) it leaves unwritten for the full path, which words the error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cuzk import native
from cuzk.formats.binfile import BinFile
from cuzk.groth16 import lean

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

pytestmark = pytest.mark.skipif(
    shutil.which(os.environ.get("CC", "cc")) is None, reason="no system C compiler (cc)"
)

R, S = 0x1234567890ABCDEF, 0xFEDCBA0987654321


@pytest.fixture
def library(native_dir, monkeypatch):
    """The library of BN254 (built for the suite) found by this process's lookups."""
    monkeypatch.setenv("CUZK_NATIVE_DIR", str(native_dir))
    monkeypatch.delenv("CUZK_NATIVE", raising=False)
    native.forget()
    yield native_dir
    native.forget()


@pytest.fixture
def fixed_randomness(monkeypatch):
    """lean's r and s: R, then S."""
    drawn = iter([R, S])
    monkeypatch.setattr(lean, "_random_scalar", lambda r: next(drawn))


def _full_path_proof(name: str) -> dict:
    """The proof JSON of the full path (the stages on numpy arrays) with r = R, s = S, on the
    library's kernels."""
    from cuzk.groth16 import ProvingKey, load_witness, open_device, stages

    c = FIXTURES / name
    with native.used(True):
        key = ProvingKey.open(c / "circuit.zkey")
        w = load_witness(c / "witness_0.wtns", key)
        syn = stages.synthesize(key, w)
        h = stages.compute_h([syn.a, syn.b, syn.c], open_device("cpu"), {}, key.arith_curve)
        partial = stages.g1_msms(key, h, w, open_device("cpu"), {})
        return stages.prove_finish(key, partial, w, r=R, s=S).to_json()


def _lean(name: str, tmp_path, **kw) -> bool:
    c = FIXTURES / name
    return lean.prove(
        kw.pop("zkey", c / "circuit.zkey"),
        kw.pop("wtns", c / "witness_0.wtns"),
        tmp_path / "proof.json",
        tmp_path / "public.json",
        **kw,
    )


MSM_ENTRIES = ("pippenger_", "points_sum_", "scalar_classes_", "rows_sum_")


@pytest.mark.parametrize("name", ["toyhash", "bits", "mulchain", "tiny381"])
def test_the_proof_is_the_full_paths_bytes_by_the_same_calls(
    name, library, fixed_randomness, tmp_path, monkeypatch
):
    """With the same r and s, lean's proof.json is the full path's, and public.json holds the
    same signals; its MSMs make the same calls into the library (the same plan: classes,
    window widths), and it imports no numpy itself (checked in a fresh process below).
    BLS12-381 (tiny381) where its library is built here (`cuzk warmup`; the suite builds
    BN254's only)."""
    if name == "tiny381":
        monkeypatch.delenv("CUZK_NATIVE_DIR")  # the default folders, where a warm-up builds
        native.forget()
        if native.library("bls12_381") is None:
            pytest.skip("no BLS12-381 library built on this machine (cuzk warmup builds it)")
    before = dict(native.calls)
    native.calls.clear()
    try:
        expected = _full_path_proof(name)
        expected_calls = {k: v for k, v in native.calls.items() if k.startswith(MSM_ENTRIES)}
        native.calls.clear()
        assert _lean(name, tmp_path)
        got_calls = {k: v for k, v in native.calls.items() if k.startswith(MSM_ENTRIES)}
    finally:
        native.calls.clear()
        native.calls.update(before)
    assert json.loads((tmp_path / "proof.json").read_text()) == expected
    public = json.loads((tmp_path / "public.json").read_text())
    assert public == json.loads((FIXTURES / name / "public_0.json").read_text())
    # the blinding sums: four in both; the verifier's vk_x: one more in lean (it verifies)
    expected_calls["pippenger_g1_int16"] = expected_calls.get("pippenger_g1_int16", 0) + 1
    assert got_calls == expected_calls


def test_a_fresh_command_proves_without_numpy(library, tmp_path):
    """`cuzk prove` in a fresh process: no numpy, no numba, a proof snarkjs's format verifies
    (cuzk's verifier; the interop suite runs snarkjs on `cuzk prove`'s proofs)."""
    c = FIXTURES / "toyhash"
    code = (
        "import sys; from cuzk.groth16 import local_cli; "
        f"code = local_cli.run({str(c / 'circuit.zkey')!r}, {str(c / 'witness_0.wtns')!r}, "
        f"{str(tmp_path / 'p.json')!r}, {str(tmp_path / 'pub.json')!r}); "
        "print(code, 'numpy' in sys.modules, 'numba' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUZK_NATIVE_DIR": str(library)}
    env.pop("CUZK_NATIVE", None)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.stdout.split() == ["0", "False", "False"], out.stderr[-2000:]
    from cuzk.groth16.verifier import verify_files

    assert verify_files(c / "verification_key.json", tmp_path / "pub.json", tmp_path / "p.json")


def _copy_with(tmp_path, src: Path, offset: int, new: bytes, name: str) -> Path:
    data = bytearray(src.read_bytes())
    data[offset : offset + len(new)] = new
    out = tmp_path / name
    out.write_bytes(bytes(data))
    return out


def _section(path: Path, kind: str, sid: int):
    versions = (1,) if kind == "zkey" else (1, 2)
    return BinFile(path, kind, versions).section(sid, "s")


def _declines(tmp_path, **kw) -> None:
    assert not _lean("toyhash", tmp_path, **kw)
    assert not (tmp_path / "proof.json").exists() and not (tmp_path / "public.json").exists()


def test_it_declines_and_writes_nothing_for_what_it_does_not_take(library, tmp_path, monkeypatch):
    """Another protocol (PLONK), another device, no library (CUZK_NATIVE=0), outputs over an
    input: nothing written, the full path takes it."""
    key = FIXTURES / "mulchain" / "plonk.zkey"
    _declines(tmp_path, zkey=key, wtns=FIXTURES / "mulchain" / "witness_0.wtns")
    _declines(tmp_path, device="cpu:1")
    c = FIXTURES / "toyhash"
    assert not lean.prove(c / "circuit.zkey", c / "witness_0.wtns", c / "circuit.zkey", tmp_path)
    with monkeypatch.context() as m:
        m.setenv("CUZK_NATIVE", "0")
        native.forget()
        _declines(tmp_path)
    native.forget()
    assert _lean("toyhash", tmp_path)  # (and with all that undone, it proves)


def test_it_declines_every_damaged_input(library, tmp_path):
    """A point off its curve in each point section and in the header, a coefficient index out
    of range, a witness value not below r, w[0] != 1, a witness of another curve or another
    length, a truncated key: each declined, nothing written (the full path names the fault:
    tests/test_key_validation.py, tests/test_formats.py)."""
    key, wtns = FIXTURES / "toyhash" / "circuit.zkey", FIXTURES / "toyhash" / "witness_0.wtns"
    assert _lean("toyhash", tmp_path, zkey=_copy_with(tmp_path, key, 0, b"z", "same.zkey"))
    for f in ("proof.json", "public.json"):  # (an undamaged copy proves)
        (tmp_path / f).unlink()
    for sid in (3, 5, 6, 7, 8, 9):  # IC, A, B1, B2, C, H: the last point's first limb
        s = _section(key, "zkey", sid)
        width = 64 if sid != 7 else 128
        last = s.offset + s.size - width
        raw = key.read_bytes()[last : last + 8]
        bumped = ((int.from_bytes(raw, "little") + 1) % 2**64).to_bytes(8, "little")
        _declines(tmp_path, zkey=_copy_with(tmp_path, key, last, bumped, f"s{sid}.zkey"))
    h = _section(key, "zkey", 2)
    alpha1 = h.offset + 4 + 32 + 4 + 32 + 12
    _declines(tmp_path, zkey=_copy_with(tmp_path, key, alpha1, b"\x07", "alpha.zkey"))
    coefs = _section(key, "zkey", 4)
    signal = coefs.offset + 4 + 8  # the first entry's signal index
    _declines(tmp_path, zkey=_copy_with(tmp_path, key, signal, b"\xff\xff\xff\x7f", "c.zkey"))
    values = _section(wtns, "wtns", 2)
    top = values.offset + 32 + 24  # w[1]'s top limb
    _declines(tmp_path, wtns=_copy_with(tmp_path, wtns, top, b"\xff" * 8, "r.wtns"))
    _declines(tmp_path, wtns=_copy_with(tmp_path, wtns, values.offset, b"\x02", "w0.wtns"))
    _declines(tmp_path, wtns=FIXTURES / "tiny381" / "witness_0.wtns")
    _declines(tmp_path, wtns=FIXTURES / "tiny" / "witness_0.wtns")
    short = tmp_path / "short.zkey"
    short.write_bytes(key.read_bytes()[:-100])
    _declines(tmp_path, zkey=short)


def test_the_command_words_what_lean_declines_as_before(library, tmp_path, capsys):
    """A damaged point through `cuzk prove`: lean declines, the full path refuses it in its
    one line naming the point, and nothing is written."""
    from cuzk.groth16 import local_cli

    key = FIXTURES / "toyhash" / "circuit.zkey"
    s = _section(key, "zkey", 5)
    bad = _copy_with(tmp_path, key, s.offset + s.size - 64, b"\x01", "bad.zkey")
    code = local_cli.run(
        bad, FIXTURES / "toyhash" / "witness_0.wtns", tmp_path / "p.json", tmp_path / "q.json"
    )
    assert code == 1
    assert "pointsA[" in capsys.readouterr().err
    assert not (tmp_path / "p.json").exists()


def test_the_new_kernels_agree_with_numpy(library):
    """The class histogram and index lists, the witness and coefficient checks: the library's
    against numpy's answers."""
    lib = native.library("bn254")
    rng = np.random.default_rng(5)
    bits = rng.integers(-254, 255, size=1000).astype(np.int16)
    hist = np.zeros(255, np.int64)
    lib.call("bits_histogram_g1", bits.ctypes.data, 1000, hist.ctypes.data, 255)
    assert (hist == np.bincount(np.abs(bits), minlength=255)).all()
    idx = np.zeros(1000, np.int32)
    m = lib.call(
        "class_index_g1", bits.ctypes.data, 1000, 17, 64, idx.ctypes.data, 1000, returns=True
    )
    size = np.abs(bits)
    want = np.flatnonzero((size >= 17) & (size <= 64)).astype(np.int32)
    want = np.where(bits[want] < 0, ~want, want)
    assert m == len(want) and (idx[:m] == want).all()

    from cuzk.arith.constants import FR_MODULUS

    r = np.array([(FR_MODULUS >> (64 * k)) & (2**64 - 1) for k in range(4)], np.uint64)
    w = rng.integers(0, 2**63, size=(50, 4), dtype=np.uint64)
    w[:, 3] >>= np.uint64(4)  # below r
    for row, expected in ((None, -1), (30, 30), (7, 7)):
        if row is not None:
            w[row] = r  # equal to r: not below it
        got = lib.call("first_not_below", w.ctypes.data, 50, 4, r.ctypes.data, 4, returns=True)
        assert got == expected


def test_it_reads_each_section_of_the_key_once(library, tmp_path, monkeypatch):
    """Each section of the key is read from the file once (each point section checked on its
    curve as it is read, then summed, then dropped), and the witness once."""
    reads = []
    real = lean._Container.read

    def read(self, sid, skip=0, into=None):
        reads.append((Path(self.path).suffix, sid))
        return real(self, sid, skip, into)

    monkeypatch.setattr(lean._Container, "read", read)
    assert _lean("mulchain", tmp_path)
    zkey = sorted(sid for kind, sid in reads if kind == ".zkey")
    assert zkey == list(range(1, 10)), reads  # header, Groth16 header, IC, coefficients, points
    assert sorted(sid for kind, sid in reads if kind == ".wtns") == [1, 2]
