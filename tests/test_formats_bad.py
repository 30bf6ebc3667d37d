"""Bad inputs to cuzk.formats: every damaged file raises the named FormatError, and its
message names the file and what is wrong."""

from __future__ import annotations

import json
import shutil
import struct

import numpy as np
import pytest

from cuzk.arith.radix import int_to_limb_array
from cuzk.formats import (
    BN254_Q,
    BN254_R,
    R1CS,
    BadHeader,
    BadJson,
    BadMagic,
    BadSectionSize,
    BadValue,
    BadVersion,
    CountMismatch,
    DuplicateSection,
    FormatError,
    MissingSection,
    NotInField,
    Truncated,
    UnsupportedProtocol,
    VerificationKey,
    WrongPrime,
    ZKey,
    read_proof,
    read_public,
    read_wtns,
    write_wtns,
)
from cuzk.formats.binfile import BinFile

OTHER_PRIME = 2**255 - 19  # a 32-byte prime that is neither q nor r


def _copy(src, tmp_path, name=None):
    dst = tmp_path / (name or src.name)
    shutil.copy(src, dst)
    return dst


def _patch(path, offset, data: bytes):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def _section(path, kind, sid):
    return BinFile(path, kind, (1, 2)).section(sid, "")


def _table_entry_offset(path, sid):
    """File offset of section `sid`'s (u32 id, u64 size) table entry."""
    return _section(path, path.suffix[1:], sid).offset - 12


def _raises(exc, path, *words):
    """pytest.raises for `exc` whose message starts with `path` and contains `words`."""

    class _Check:
        def __enter__(self):
            self.cm = pytest.raises(exc)
            self.info = self.cm.__enter__()
            return self.info

        def __exit__(self, *a):
            handled = self.cm.__exit__(*a)
            msg = str(self.info.value)
            assert isinstance(self.info.value, FormatError)
            assert msg.startswith(str(path)), msg
            for w in words:
                assert w in msg, (w, msg)
            return handled

    return _Check()


@pytest.fixture
def zkey(circuit_named, tmp_path):
    return _copy(circuit_named("mulchain").zkey, tmp_path, "key.zkey")


@pytest.fixture
def wtns(circuit_named, tmp_path):
    return _copy(circuit_named("mulchain").witness(0), tmp_path, "w.wtns")


# --- .zkey ---------------------------------------------------------------------------------


@pytest.mark.parametrize("keep", [0, 5, 11, 30, 300, -1])
def test_truncated_zkey(zkey, keep):
    data = zkey.read_bytes()
    zkey.write_bytes(data[: keep if keep >= 0 else len(data) - 1])
    with _raises(Truncated, zkey):
        ZKey(zkey)


def test_truncated_zkey_names_the_section(zkey):
    h = _section(zkey, "zkey", 9)
    zkey.write_bytes(zkey.read_bytes()[: h.offset + 100])
    with _raises(Truncated, zkey, "section 9", "missing"):
        ZKey(zkey)


def test_zkey_bad_magic_and_version(zkey, wtns):
    with _raises(BadMagic, wtns, "not a .zkey file"):
        ZKey(wtns)
    _patch(zkey, 4, struct.pack("<I", 7))
    with _raises(BadVersion, zkey, "version 7"):
        ZKey(zkey)


def test_plonk_zkey_is_rejected(circuit_named):
    path = circuit_named("tiny").dir / "plonk.zkey"
    with _raises(UnsupportedProtocol, path, "plonk", "not groth16"):
        ZKey(path)


@pytest.mark.parametrize("protocol", [0, 2, 10, 99])
def test_other_protocol_ids_are_rejected(zkey, protocol):
    _patch(zkey, _section(zkey, "zkey", 1).offset, struct.pack("<I", protocol))
    with _raises(UnsupportedProtocol, zkey, f"protocol id {protocol}"):
        ZKey(zkey)


@pytest.mark.parametrize("which,offset", [("base field", 4), ("scalar field", 4 + 32 + 4)])
def test_zkey_wrong_prime(zkey, which, offset):
    _patch(zkey, _section(zkey, "zkey", 2).offset + offset, OTHER_PRIME.to_bytes(32, "little"))
    with _raises(WrongPrime, zkey, which, "not BN254"):
        ZKey(zkey)


def test_zkey_swapped_primes(zkey):
    s = _section(zkey, "zkey", 2).offset
    _patch(zkey, s + 4, BN254_R.to_bytes(32, "little"))
    with _raises(WrongPrime, zkey, "q ="):
        ZKey(zkey)


def test_zkey_wrong_n8q(zkey):
    _patch(zkey, _section(zkey, "zkey", 2).offset, struct.pack("<I", 48))
    with _raises(WrongPrime, zkey, "n8q = 48"):
        ZKey(zkey)


def test_zkey_nvars_disagrees_with_point_sections(zkey):
    s = _section(zkey, "zkey", 2).offset + 4 + 32 + 4 + 32
    n_vars = struct.unpack_from("<I", zkey.read_bytes(), s)[0]
    _patch(zkey, s, struct.pack("<I", n_vars + 1))
    with _raises(BadSectionSize, zkey, "pointsA", f"{n_vars + 1} G1 points"):
        ZKey(zkey)


def test_zkey_domain_not_power_of_two(zkey):
    s = _section(zkey, "zkey", 2).offset + 4 + 32 + 4 + 32 + 8
    _patch(zkey, s, struct.pack("<I", 48))
    with _raises(BadHeader, zkey, "domainSize = 48"):
        ZKey(zkey)


def test_zkey_npublic_not_below_nvars(zkey):
    s = _section(zkey, "zkey", 2).offset + 4 + 32 + 4 + 32 + 4
    _patch(zkey, s, struct.pack("<I", 10**6))
    with _raises(BadHeader, zkey, "nPublic"):
        ZKey(zkey)


@pytest.mark.parametrize("sid,name", [(5, "pointsA"), (7, "pointsB2"), (9, "pointsH"), (4, "coef")])
def test_zkey_missing_section(zkey, sid, name):
    _patch(zkey, _table_entry_offset(zkey, sid), struct.pack("<I", 77))
    with _raises(MissingSection, zkey, f"section {sid}", name):
        ZKey(zkey)


def test_zkey_duplicate_section(zkey):
    _patch(zkey, _table_entry_offset(zkey, 10), struct.pack("<I", 8))
    with _raises(DuplicateSection, zkey, "section 8", "2 times"):
        ZKey(zkey)


def test_zkey_coefficient_count_disagrees_with_section(zkey):
    s = _section(zkey, "zkey", 4).offset
    n = struct.unpack_from("<I", zkey.read_bytes(), s)[0]
    _patch(zkey, s, struct.pack("<I", n + 1))
    with _raises(BadSectionSize, zkey, "coefficients", f"{n + 1} entries"):
        ZKey(zkey)


@pytest.mark.parametrize(
    "field,value,words",
    [(0, 2, ["matrix id 2"]), (1, 1 << 20, ["constraint index"]), (2, 5000, ["signal index"])],
)
def test_zkey_coefficient_out_of_range(zkey, field, value, words, monkeypatch):
    s = _section(zkey, "zkey", 4).offset + 4 + 44 * 3  # entry 3
    _patch(zkey, s + 4 * field, struct.pack("<I", value))
    with _raises(BadValue, zkey, "coefficient 3", *words):
        ZKey(zkey)
    ZKey(zkey, check_coefficients=False)  # the cheap open skips the scan
    # a read key is scanned a piece at a time: the entry is named by its index in the section
    from cuzk.formats import zkey as zkey_module

    monkeypatch.setattr(zkey_module, "CHECK_ROWS", 2)
    with _raises(BadValue, zkey, "coefficient 3", *words):
        ZKey(zkey)


# --- .wtns ---------------------------------------------------------------------------------


@pytest.mark.parametrize("keep", [0, 11, 20, 60, -1])
def test_truncated_wtns(wtns, keep):
    data = wtns.read_bytes()
    wtns.write_bytes(data[: keep if keep >= 0 else len(data) - 1])
    with _raises(Truncated, wtns):
        read_wtns(wtns)


def test_wtns_bad_magic_version_prime(wtns, zkey, tmp_path):
    with _raises(BadMagic, zkey, "not a .wtns file"):
        read_wtns(zkey)
    bad = _copy(wtns, tmp_path, "v.wtns")
    _patch(bad, 4, struct.pack("<I", 3))
    with _raises(BadVersion, bad, "version 3"):
        read_wtns(bad)
    _patch(wtns, _section(wtns, "wtns", 1).offset + 4, BN254_Q.to_bytes(32, "little"))
    with _raises(WrongPrime, wtns, "not the scalar field r of BN254 or BLS12-381"):
        read_wtns(wtns)


def test_wtns_count_disagrees_with_section(wtns):
    s = _section(wtns, "wtns", 1).offset + 4 + 32
    n = struct.unpack_from("<I", wtns.read_bytes(), s)[0]
    _patch(wtns, s, struct.pack("<I", n - 1))
    with _raises(BadSectionSize, wtns, "values section", f"{n - 1} values"):
        read_wtns(wtns)


def test_wtns_values_out_of_range(tmp_path):
    path = tmp_path / "w.wtns"
    write_wtns(path, int_to_limb_array(0).reshape(1, 4))
    with _raises(BadValue, path, "w[0] is not 1"):
        read_wtns(path)
    for bad in (BN254_R, BN254_R + 1, 2**256 - 1):
        values = np.stack([int_to_limb_array(1), int_to_limb_array(5), int_to_limb_array(bad)])
        write_wtns(path, values)
        with _raises(BadValue, path, "w[2]", "not below"):
            read_wtns(path)
    values = np.stack([int_to_limb_array(1), int_to_limb_array(BN254_R - 1)])
    write_wtns(path, values)
    assert read_wtns(path).values.shape == (2, 4)


def test_witness_count_mismatch_names_both_files(circuit_named):
    z = ZKey(circuit_named("tiny").zkey)
    other = circuit_named("mulchain").witness(0)
    with _raises(CountMismatch, other, "witness has 20 values", str(z.path), "nVars = 4"):
        z.check_witness(read_wtns(other))


# --- .r1cs ---------------------------------------------------------------------------------


def test_r1cs_damage(circuit_named, tmp_path):
    path = _copy(circuit_named("bits").r1cs, tmp_path, "c.r1cs")
    with _raises(BadMagic, circuit_named("bits").zkey, "not a .r1cs file"):
        R1CS(circuit_named("bits").zkey)
    wrong = _copy(path, tmp_path, "p.r1cs")
    _patch(wrong, _section(wrong, "r1cs", 1).offset + 4, OTHER_PRIME.to_bytes(32, "little"))
    with _raises(WrongPrime, wrong, "prime"):
        R1CS(wrong)
    short = _copy(path, tmp_path, "t.r1cs")
    s = _section(short, "r1cs", 2)
    short.write_bytes(short.read_bytes()[: s.offset + s.size // 2])
    with _raises(Truncated, short, "section 2"):
        R1CS(short)
    # nConstraints larger than the section holds: the parser runs off the section's end
    more = _copy(path, tmp_path, "m.r1cs")
    h = _section(more, "r1cs", 1).offset + 4 + 32 + 16 + 8
    n = struct.unpack_from("<I", more.read_bytes(), h)[0]
    _patch(more, h, struct.pack("<I", n + 1))
    with _raises(Truncated, more, "constraint"):
        R1CS(more)
    fewer = _copy(path, tmp_path, "f.r1cs")
    _patch(fewer, h, struct.pack("<I", n - 1))
    with _raises(BadSectionSize, fewer, "bytes after"):
        R1CS(fewer)


# --- JSON ----------------------------------------------------------------------------------


def test_bad_json_files(circuit_named, tmp_path):
    c = circuit_named("tiny")
    p = tmp_path / "x.json"
    p.write_text("{not json")
    for reader in (read_proof, read_public, VerificationKey):
        with _raises(BadJson, p, "not valid JSON"):
            reader(p)
    proof = json.loads(c.proof(0).read_text())
    del proof["pi_b"]
    p.write_text(json.dumps(proof))
    with _raises(BadJson, p, "pi_b"):
        read_proof(p)
    proof = json.loads(c.proof(0).read_text())
    proof["pi_a"][0] = str(BN254_Q)
    p.write_text(json.dumps(proof))
    with _raises(NotInField, p, "pi_a[0]", "not below"):
        read_proof(p)
    p.write_text(json.dumps(["1", "x2"]))
    with _raises(BadJson, p, "x.json[1]", "decimal string"):
        read_public(p)
    p.write_text(json.dumps([str(BN254_R)]))
    with _raises(NotInField, p, "x.json[0]", "not below"):
        read_public(p)
    vk = json.loads(c.vk.read_text())
    vk["nPublic"] = 5
    p.write_text(json.dumps(vk))
    with _raises(CountMismatch, p, "nPublic = 5"):
        VerificationKey(p)
