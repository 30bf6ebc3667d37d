"""The verifier's edges (issue 17): huge numbers, deeply nested JSON and field elements written
as JSON numbers give `cuzk verify` one line and exit 2, never a traceback; the readers of
cuzk.formats.snarkjs_json refuse the same files with BadJson.

snarkjs reads JSON numbers as doubles (exact only below 2^53), so a field element written as
a number would be read one way by snarkjs and another by cuzk: both readers refuse it.
py_ecc is imported here on purpose: it raises the recursion limit, and with it json's C
parser overflowed the C stack on deep nesting (a segfault) before the depth was checked.
"""

import itertools
import json

import py_ecc  # noqa: F401  (raises the recursion limit to 100,000: see load_json)
import pytest
from click.testing import CliRunner
from conftest import fixture_circuit
from serve_harness import run_cli

from cuzk.formats.errors import BadJson, NotInField
from cuzk.formats.snarkjs_json import (
    MAX_BYTES,
    read_proof,
    read_public,
    read_verification_key,
)
from cuzk.groth16.verifier import verify_files
from cuzk.groth16.verify_cli import verify as verify_cmd

TINY = fixture_circuit("tiny")
BIG = "1" * 100_000
DEEP = "[" * 100_000 + "]" * 100_000
_seq = itertools.count()


def files(tmp_path, vk=None, public=None, proof=None, raw=None):
    """The tiny fixture's vk, public and proof files, with some replaced (objects dumped as
    JSON, or `raw` text for one of them: {"proof": "..."})."""
    d = tmp_path / f"case{next(_seq)}"  # a folder per case: cases() builds them all
    d.mkdir()
    out = {}
    for name, src, obj in (
        ("vk", TINY.vk, vk),
        ("public", TINY.public(0), public),
        ("proof", TINY.proof(0), proof),
    ):
        p = d / f"{name}.json"
        if raw and name in raw:
            p.write_text(raw[name])
        elif obj is not None:
            p.write_text(json.dumps(obj))
        else:
            p.write_text(src.read_text())
        out[name] = p
    return out["vk"], out["public"], out["proof"]


def as_numbers(obj):
    """Every decimal string of a snarkjs JSON object written as a JSON number instead."""
    if isinstance(obj, list):
        return [as_numbers(v) for v in obj]
    if isinstance(obj, dict):
        return {k: as_numbers(v) for k, v in obj.items()}
    if isinstance(obj, str) and obj.isdigit():
        return int(obj)
    return obj


def load(path):
    return json.loads(path.read_text())


def cases(tmp_path):
    proof, public, vk = load(TINY.proof(0)), load(TINY.public(0)), load(TINY.vk)
    big_a = dict(proof, pi_a=[BIG, proof["pi_a"][1], "1"])
    return {
        "100,000-digit string in pi_a": (
            files(tmp_path, proof=big_a),
            NotInField,
            "100000-digit number",
        ),
        "100,000-digit JSON number in pi_a": (
            files(tmp_path, raw={"proof": json.dumps(proof).replace(f'"{proof["pi_a"][0]}"', BIG)}),
            BadJson,
            "JSON number",
        ),
        "100,000-digit public signal": (
            files(tmp_path, public=[BIG] + public[1:]),
            NotInField,
            "100000-digit number",
        ),
        "100,000-digit JSON number as a public signal": (
            files(tmp_path, raw={"public": "[" + BIG + "]"}),
            BadJson,
            "JSON number",
        ),
        "deeply nested proof": (files(tmp_path, raw={"proof": DEEP}), BadJson, "nested too deeply"),
        "deeply nested public": (
            files(tmp_path, raw={"public": DEEP}),
            BadJson,
            "nested too deeply",
        ),
        "deeply nested vk": (
            files(tmp_path, raw={"vk": '{"IC": ' + DEEP + "}"}),
            BadJson,
            "nested too deeply",
        ),
        "proof coordinates as JSON numbers": (
            files(tmp_path, proof=as_numbers(proof)),
            BadJson,
            "JSON number",
        ),
        "public signals as JSON numbers": (
            files(tmp_path, public=as_numbers(public)),
            BadJson,
            "JSON number",
        ),
        "vk points as JSON numbers": (files(tmp_path, vk=as_numbers(vk)), BadJson, "JSON number"),
        "a float": (files(tmp_path, public=[1.5] + public[1:]), BadJson, "JSON number"),
        "NaN": (files(tmp_path, raw={"public": "[NaN]"}), BadJson, "JSON number"),
        "non-ASCII digits": (
            files(tmp_path, public=["\u0663"] + public[1:]),
            BadJson,
            "decimal string",
        ),
        "superscript digit": (
            files(tmp_path, public=["\u00b2"] + public[1:]),
            BadJson,
            "decimal string",
        ),
        "a 100,000-character protocol": (
            files(tmp_path, proof=dict(proof, protocol=BIG)),
            Exception,
            "chars)",
        ),
    }


NAMES = [
    "100,000-digit string in pi_a",
    "100,000-digit JSON number in pi_a",
    "100,000-digit public signal",
    "100,000-digit JSON number as a public signal",
    "deeply nested proof",
    "deeply nested public",
    "deeply nested vk",
    "proof coordinates as JSON numbers",
    "public signals as JSON numbers",
    "vk points as JSON numbers",
    "a float",
    "NaN",
    "non-ASCII digits",
    "superscript digit",
    "a 100,000-character protocol",
]


@pytest.mark.parametrize("name", NAMES)
def test_cuzk_verify_gives_one_line_and_exit_2(tmp_path, name):
    (vk, public, proof), exc, reason = cases(tmp_path)[name]
    with pytest.raises(exc) as info:
        verify_files(vk, public, proof)
    assert reason in str(info.value) and len(str(info.value)) < 300, str(info.value)[:400]
    r = CliRunner().invoke(verify_cmd, [str(vk), str(public), str(proof)])
    assert isinstance(r.exception, SystemExit) and r.exit_code == 2, r.exc_info
    assert r.stderr.startswith("cuzk verify: unusable input: ") and r.stderr.count("\n") == 1
    assert reason in r.stderr and len(r.stderr) < 300


def test_as_a_process_of_its_own(tmp_path):
    """The nested and the huge cases through a real `cuzk verify` process."""
    all_cases = cases(tmp_path)
    for name in ("deeply nested proof", "100,000-digit JSON number in pi_a"):
        (vk, public, proof), _, reason = all_cases[name]
        p = run_cli("verify", vk, public, proof)
        assert p.returncode == 2, (name, p.stderr[-2000:])
        assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr and reason in p.stderr


def test_the_untouched_files_still_verify(tmp_path):
    vk, public, proof = files(tmp_path)
    assert verify_files(vk, public, proof) is True
    r = CliRunner().invoke(verify_cmd, [str(vk), str(public), str(proof)])
    assert r.exit_code == 0


@pytest.mark.parametrize("name", NAMES[:-1])
def test_the_format_readers_refuse_the_same_files(tmp_path, name):
    (vk, public, proof), _, _ = cases(tmp_path)[name]
    reader = {"vk": read_verification_key, "public": read_public, "proof": read_proof}
    with pytest.raises(BadJson) as info:
        for what, path in (("vk", vk), ("public", public), ("proof", proof)):
            reader[what](path)
    assert len(str(info.value)) < 300 and "\n" not in str(info.value)


@pytest.mark.parametrize("which", ["vk", "public", "proof"])
def test_an_endless_file_is_refused_after_its_limit(tmp_path, which):
    """/dev/zero as any of the three files (issue 38): exit 2 and one line, the file read no
    further than its limit, in an address space of 1 GiB (read whole, it grew until a
    MemoryError traceback and exit 1)."""
    import resource
    import subprocess
    import sys

    args = dict(zip(("vk", "public", "proof"), files(tmp_path), strict=True))
    args[which] = "/dev/zero"

    def small():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    p = subprocess.run(
        [sys.executable, "-c", "import sys; from cuzk.console import main; sys.exit(main())"]
        + ["verify", *map(str, args.values())],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=small,
    )
    assert p.returncode == 2, p.stderr[-2000:]
    what = {"vk": "verification key", "public": "public signals", "proof": "proof"}[which]
    assert p.stderr == (
        f"cuzk verify: unusable input: /dev/zero: too large for {what} (more than "
        f"{MAX_BYTES[what] >> 20} MiB, the most read of such a file)\n"
    )


def test_a_file_over_its_limit_is_refused_and_one_at_it_read(tmp_path, monkeypatch):
    vk, public, proof = files(tmp_path)
    size = proof.stat().st_size
    monkeypatch.setitem(MAX_BYTES, "proof", size)
    assert verify_files(vk, public, proof) is True
    monkeypatch.setitem(MAX_BYTES, "proof", size - 1)
    said = rf"proof.json: too large for proof \(more than {size - 1} bytes"
    with pytest.raises(BadJson, match=said):
        read_proof(proof)
