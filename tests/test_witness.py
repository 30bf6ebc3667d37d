"""Witness calculation from circom 2 .wasm (cuzk.witness, `cuzk wtns calculate`, `cuzk fullprove`).

References from outside: the committed witnesses were written by `snarkjs wtns calculate`
(tests/fixtures/make_fixtures.py), and the interop tests run snarkjs live on the same files
(input forms, circomlib's Poseidon), compare bytes, and verify fullprove's proofs with
`snarkjs groth16 verify`. Every bad-input error has a CLI test that also checks that nothing
was written.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import interop
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wasm_fakes import fake_circom

from cuzk.cli import main as cli
from cuzk.formats import BN254_R as R
from cuzk.formats import read_wtns
from cuzk.formats.curve import BLS12_381, BN254
from cuzk.witness import (
    Circuit,
    NotANumber,
    WitnessError,
    fnv1a64,
    parse_inputs,
)
from cuzk.witness import cache as wcache

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CIRCUITS = Path(__file__).resolve().parent / "circuits"
# tiny381: tiny compiled for BLS12-381 (circom --prime bls12381), its witnesses snarkjs's
WITNESS_CIRCUITS = ("tiny", "mulchain", "bits", "toyhash", "nested", "tiny381")
# The fixtures of each curve's scalar field r: the same circuit (circuits/tiny.circom).
TINY = {BN254.r: "tiny", BLS12_381.r: "tiny381"}
PRIMES = pytest.mark.parametrize("r", list(TINY), ids=["bn254", "bls12_381"])


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Each test session compiles into its own module cache, never the user's."""
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "wasm-cache"))


def fx(name: str) -> Path:
    return FIXTURES / name


def run_cli(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


# ---- inputs as snarkjs reads them ----


def test_fnv1a64_known_values():
    # FNV-1a 64 reference values: offset basis for "", and the published vector for "a".
    assert fnv1a64("") == 0xCBF29CE484222325
    assert fnv1a64("a") == 0xAF63DC4C8601EC8C
    assert fnv1a64("foobar") == 0x85944171F73967E8


@PRIMES
def test_inputs_flatten_and_reduce_like_snarkjs(r):
    obj = {
        "m": [[1, "2"], ["0x1f", -1]],
        "n": "-5",
        "big": str(r + 7),
        "f": 1e3,
        "t": True,
        "sp": " 42 ",
        "o": "0o17",
        "b": "0b101",
    }
    assert parse_inputs(obj, prime=r) == [
        ("m", [1, 2, 31, r - 1]),
        ("n", [r - 5]),
        ("big", [7]),
        ("f", [1000]),
        ("t", [1]),
        ("sp", [42]),
        ("o", [15]),
        ("b", [5]),
    ]
    # Without a prime the values stay exact: the calculator reduces them mod its circuit's
    exact = dict(parse_inputs(obj))
    assert exact["m"] == [1, 2, 31, -1] and exact["n"] == [-5] and exact["big"] == [r + 7]


@pytest.mark.parametrize(
    "value, said",
    [
        ("abc", "is not a number"),
        ("1.5", "is not a number"),
        ("", "is not a number"),
        ("-0x5", "is not a number"),
        (1.5, "is not an integer"),
        (None, "is null"),
        ({"x": 1}, "is an object"),
        ([1, [2, "z"]], "x[1][1] = 'z'"),
    ],
)
def test_inputs_not_a_number(value, said):
    with pytest.raises(NotANumber, match=r"in\.json: .*") as e:
        parse_inputs({"x": value}, "in.json")
    assert said in str(e.value)


# ---- hostile input files: one line naming the file (and field), exit 1, nothing written ----
def _deep(n: int, kind: str) -> bytes:
    if kind == "arrays":
        return b'{"a": ' + b"[" * n + b"]" * n + b"}"
    return b'{"a": ' + b'{"b": ' * n + b"1" + b"}" * n + b"}"


HOSTILE = {
    "arrays 10^5 deep": (_deep(10**5, "arrays"), "nested more than 512 deep"),
    "objects 10^5 deep": (_deep(10**5, "objects"), "nested more than 512 deep"),
    "objects 3 deep": (_deep(3, "objects"), "a is an object, not a number"),
    "10^6-digit number": (b'{"a": 3, "b": ' + b"7" * 10**6 + b"}", "b has 1000000 digits"),
    "10^6-digit string": (b'{"a": "-' + b"7" * 10**6 + b'", "b": 1}', "a has 1000000 digits"),
    "long number in an array": (b'{"a": [1, ' + b"9" * 5000 + b"]}", "a[1] has 5000 digits"),
    "latin-1 bytes": (b'{"a": "caf\xe9", "b": 1}', "not UTF-8 text (byte 0xe9 at offset 10)"),
    "cut UTF-8": (b'{"a": 3, "b": "\xc3"}', "not UTF-8 text"),
    "bad UTF-16": (b'\xff\xfe{\x00"', "not UTF-16 text"),
}


def _hostile_run(tmp_path, command: str, data: bytes):
    """`cuzk COMMAND` on an input file holding `data`: (result, input path, outputs)."""
    inp = tmp_path / "in.json"
    inp.write_bytes(data)
    d = fx("tiny")
    if command == "wtns calculate":
        outs = [tmp_path / "out.wtns"]
        args = ["wtns", "calculate", d / "circuit.wasm", inp, *outs]
    else:
        outs = [tmp_path / "proof.json", tmp_path / "public.json"]
        args = ["fullprove", inp, d / "circuit.wasm", d / "circuit.zkey", *outs]
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r, inp, outs


def _assert_one_line_refusal(r, command, inp, outs, words=""):
    assert isinstance(r.exception, SystemExit) and r.exit_code == 1, (r.exception, r.output)
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.output, r.output
    assert lines[0].startswith(f"cuzk {command}: {inp}: "), lines[0]
    assert words in lines[0], lines[0]
    assert not any(o.exists() for o in outs)


@pytest.mark.parametrize("command", ["wtns calculate", "fullprove"])
@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_input_files_one_line_exit_1(case, command, tmp_path):
    data, words = HOSTILE[case]
    r, inp, outs = _hostile_run(tmp_path, command, data)
    _assert_one_line_refusal(r, command, inp, outs, words)


def test_utf16_and_utf8_bom_inputs_read_as_utf8(tmp_path):
    """A deliberate difference from snarkjs (docs/witness.md): PowerShell's `>` writes UTF-16
    with a byte-order mark; the witness is the same as from the UTF-8 file."""
    d = fx("tiny")
    text = (d / "input_0.json").read_text()
    for i, data in enumerate((text.encode("utf-16"), b"\xef\xbb\xbf" + text.encode())):
        (tmp_path / f"in{i}.json").write_bytes(data)
        out = tmp_path / f"w{i}.wtns"
        assert run_cli("wtns", "calculate", d / "circuit.wasm", tmp_path / f"in{i}.json", out)
        assert out.read_bytes() == (d / "witness_0.wtns").read_bytes()


_json_text = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=5,
).map(json.dumps)
_hostile = st.one_of(
    # nested deeper than MAX_DEPTH (512), or just about as deep
    st.builds(_deep, st.integers(400, 3 * 10**5), st.sampled_from(["arrays", "objects"])),
    # a decimal number or string longer than MAX_DIGITS, anywhere in a signal's array
    st.builds(
        lambda n, sign, quoted, pad: (
            b'{"a": '
            + b"[" * pad
            + (b'"' if quoted else b"")
            + sign
            + b"1" * n
            + (b'"' if quoted else b"")
            + b"]" * pad
            + b"}"
        ),
        st.integers(4301, 2 * 10**5),
        st.sampled_from([b"", b"-"]),
        st.booleans(),
        st.integers(0, 3),
    ),
    # JSON text with bytes that are not UTF-8 spliced in
    st.builds(
        lambda t, at, junk: t.encode()[:at] + junk + t.encode()[at:],
        _json_text,
        st.integers(0, 40),
        st.sampled_from([b"\xff", b"\xe9", b"\xc3", b"\x80", b"\xed\xa0\x80", b"\xf8"]),
    ),
    # any other JSON that is not an object of numbers
    _json_text.filter(lambda t: t != "{}").map(str.encode),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=_hostile, command=st.sampled_from(["wtns calculate", "fullprove"]))
def test_hostile_input_property(data, command, tmp_path):
    """Generated hostile input files: every one a one-line refusal naming the file, exit 1, no
    traceback, no output file (tmp_path is shared by the examples: each cleans up)."""
    for f in tmp_path.iterdir():
        f.unlink()
    r, inp, outs = _hostile_run(tmp_path, command, data)
    _assert_one_line_refusal(r, command, inp, outs)


# ---- witnesses byte-identical to snarkjs's ----


@pytest.mark.parametrize("name", WITNESS_CIRCUITS)
def test_witness_equals_snarkjs(name, tmp_path):
    d = fx(name)
    for k in (0, 1):
        out = tmp_path / f"w{k}.wtns"
        r = run_cli("wtns", "calculate", d / "circuit.wasm", d / f"input_{k}.json", out)
        assert r.exit_code == 0, r.output
        assert out.read_bytes() == d.joinpath(f"witness_{k}.wtns").read_bytes()


@PRIMES
def test_wtns_writer_equals_formats_writer(r, tmp_path):
    """The numpy-free writer of `cuzk wtns calculate` and cuzk.formats.write_wtns agree."""
    from cuzk.formats import write_wtns
    from cuzk.witness.wtnsfile import write_wtns_bytes

    values = [1, 2, r - 1, 2**200 + 3]
    write_wtns(tmp_path / "a.wtns", values, prime=r)
    write_wtns_bytes(tmp_path / "b.wtns", b"".join(v.to_bytes(32, "little") for v in values), r)
    assert (tmp_path / "a.wtns").read_bytes() == (tmp_path / "b.wtns").read_bytes()
    assert read_wtns(tmp_path / "b.wtns").prime == r
    with pytest.raises(ValueError, match="whole number"):
        write_wtns_bytes(tmp_path / "c.wtns", b"x" * 33, r)
    assert not (tmp_path / "c.wtns").exists()


def test_wtns_calculate_process_imports_no_numpy(tmp_path):
    """`cuzk wtns calculate` as a process of its own: right bytes, and numpy never imported
    (its import is a third of the command's start-up)."""
    d = fx("bits")
    out = tmp_path / "w.wtns"
    code = (
        "import sys; from cuzk.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "print('numpy' in sys.modules, code)"
    )
    p = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "wtns",
            "calculate",
            str(d / "circuit.wasm"),
            str(d / "input_1.json"),
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.stdout.split() == ["False", "0"], p.stdout + p.stderr
    assert out.read_bytes() == (d / "witness_1.wtns").read_bytes()


def test_calculator_reused_and_after_failure(tmp_path):
    """One instance computes witness after witness; a failed one is replaced, not reused."""
    from cuzk.witness import read_inputs

    d = fx("nested")
    circuit = Circuit(d / "circuit.wasm")
    assert circuit.witness_size == 22 and circuit.input_size == 11
    calc = circuit.calculator()
    for k in (0, 1, 0):
        w = calc.calculate(read_inputs(d / f"input_{k}.json"))
        assert np.array_equal(w, read_wtns(d / f"witness_{k}.wtns").values)
    with pytest.raises(WitnessError, match="assert failed"):
        calc.calculate(
            parse_inputs({"m": [[1, 2, 3], [4, 5, 6]], "v": [7, 8, 9], "s": 11, "limit": 10})
        )
    with pytest.raises(RuntimeError, match="failed before"):
        calc.calculate(read_inputs(d / "input_0.json"))
    fresh = circuit.calculator()
    out = np.zeros((circuit.witness_size, 4), dtype=np.uint64)
    fresh.calculate(read_inputs(d / "input_1.json"), out=out)
    assert np.array_equal(out, read_wtns(d / "witness_1.wtns").values)
    assert fresh.memory_bytes >= circuit.witness_size * 32


@pytest.mark.parametrize("name", WITNESS_CIRCUITS)
def test_gather_paths_agree(name):
    """The direct gather (the circuit's memory read by the helper) and the call-per-word
    gather (circuits that do not export their memory) give snarkjs's witness."""
    from cuzk.witness import read_inputs
    from cuzk.witness.calculator import WitnessCalculator

    d = fx(name)
    circuit = Circuit(d / "circuit.wasm")
    direct, calls = WitnessCalculator(circuit), WitnessCalculator(circuit, direct=False)
    assert direct.direct and not calls.direct
    for k in (0, 1):
        want = read_wtns(d / f"witness_{k}.wtns").values.tobytes()
        inputs = read_inputs(d / f"input_{k}.json")
        assert direct.calculate_bytes(inputs) == want
        assert calls.calculate_bytes(inputs) == want


def test_module_cache_on_disk(tmp_path, monkeypatch):
    """A new process (here: the in-process cache dropped) loads the serialized module; a
    damaged cache file is compiled again and replaced."""
    monkeypatch.setenv("CUZK_CACHE_DIR", str(tmp_path / "cache"))
    d = fx("mulchain")
    wcache.forget_process_cache()
    first = Circuit(d / "circuit.wasm")
    assert first.load_stats["source"] == "compiled"
    files = list((tmp_path / "cache" / "wasm").glob("*.cwasm"))
    assert [f.name.split(".")[0] for f in files] == [first.load_stats["sha256"]]
    assert Circuit(d / "circuit.wasm").load_stats["source"] == "process"
    wcache.forget_process_cache()
    assert Circuit(d / "circuit.wasm").load_stats["source"] == "disk"
    files[0].write_bytes(b"not a module")
    wcache.forget_process_cache()
    again = Circuit(d / "circuit.wasm")
    assert again.load_stats["source"] == "compiled"
    assert files[0].read_bytes() != b"not a module"
    from cuzk.witness import read_inputs

    w = again.calculator().calculate(read_inputs(d / "input_1.json"))
    assert np.array_equal(w, read_wtns(d / "witness_1.wtns").values)


# ---- bad inputs: one named line, exit 1, nothing written ----

NESTED_OK = {"m": [[1, 2, 3], [4, 5, 6]], "v": [7, 8, 9], "s": 5, "limit": 10}


def _calc_fails(tmp_path, wasm, inputs, *expected):
    inp = tmp_path / "input.json"
    inp.write_text(inputs if isinstance(inputs, str) else json.dumps(inputs))
    out = tmp_path / "out.wtns"
    r = run_cli("wtns", "calculate", wasm, inp, out)
    assert r.exit_code == 1, r.output
    line = r.output.strip()
    assert "\n" not in line and line.startswith("cuzk wtns calculate: "), r.output
    for text in expected:
        assert text in line, line
    assert not out.exists()
    return line


def test_missing_input_named(tmp_path):
    bad = {k: v for k, v in NESTED_OK.items() if k != "s"}
    _calc_fails(
        tmp_path,
        fx("nested") / "circuit.wasm",
        bad,
        "input.json: missing input signal s ",
        "has inputs m, v, limit, s",
    )


def test_missing_input_without_sym(tmp_path):
    wasm = tmp_path / "lone" / "circuit.wasm"
    wasm.parent.mkdir()
    shutil.copy(fx("nested") / "circuit.wasm", wasm)
    bad = {k: v for k, v in NESTED_OK.items() if k != "limit"}
    _calc_fails(tmp_path, wasm, bad, "missing input signals", "10 of the 11 input values", "--sym")


def test_missing_input_named_with_sym_option(tmp_path):
    wasm = tmp_path / "lone" / "circuit.wasm"
    wasm.parent.mkdir()
    shutil.copy(fx("nested") / "circuit.wasm", wasm)
    inp = tmp_path / "input.json"
    inp.write_text(json.dumps({k: v for k, v in NESTED_OK.items() if k != "limit"}))
    r = run_cli(
        "wtns", "calculate", "--sym", fx("nested") / "circuit.sym", wasm, inp, tmp_path / "o.wtns"
    )
    assert r.exit_code == 1 and "missing input signal limit " in r.output, r.output


@pytest.mark.interop
def test_circuit_log_goes_to_stderr(tmp_path, tools):
    """log() in a circuit: items joined by spaces, one line per log, on stderr (as snarkjs
    prints them on stdout); the witness is still snarkjs's."""
    src = tmp_path / "logs.circom"
    src.write_text(
        "pragma circom 2.1.0;\n"
        "template L() { signal input a; signal output b; b <== a * a;\n"
        '  log("square of", a, "is", b); log(a + 1); }\n'
        "component main = L();\n"
    )
    interop.circom2(src, "--wasm", "-o", tmp_path)
    wasm = tmp_path / "logs_js" / "logs.wasm"
    inp = tmp_path / "in.json"
    inp.write_text('{"a": "7"}')
    out, ref = tmp_path / "o.wtns", tmp_path / "ref.wtns"
    p = subprocess.run(
        [sys.executable, "-m", "cuzk.cli", "wtns", "calculate", str(wasm), str(inp), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines() == ["square of 7 is 49", "8"]
    assert p.stdout == ""
    interop.snarkjs("wtns", "calculate", wasm, inp, ref)
    assert out.read_bytes() == ref.read_bytes()


def test_unknown_signal(tmp_path):
    for name in ("q", "mv", "prod"):  # not a signal; an output; an intermediate signal
        _calc_fails(
            tmp_path,
            fx("nested") / "circuit.wasm",
            {**NESTED_OK, name: 1},
            f"'{name}' is not an input signal of the circuit",
        )


def test_wrong_array_length(tmp_path):
    _calc_fails(
        tmp_path,
        fx("nested") / "circuit.wasm",
        {**NESTED_OK, "v": [7, 8]},
        "v has 2 values, but the circuit's v has 3",
    )
    _calc_fails(
        tmp_path,
        fx("nested") / "circuit.wasm",
        {**NESTED_OK, "m": [[1, 2, 3], [4, 5, 6], [7]]},
        "m has 7 values, but the circuit's m has 6",
    )


def test_value_not_a_number(tmp_path):
    _calc_fails(
        tmp_path,
        fx("nested") / "circuit.wasm",
        {**NESTED_OK, "m": [[1, 2, 3], [4, "x5", 6]]},
        "m[1][1] = 'x5' is not a number",
    )
    _calc_fails(tmp_path, fx("nested") / "circuit.wasm", "{not json", "not valid JSON")
    _calc_fails(tmp_path, fx("nested") / "circuit.wasm", "[1, 2]", "must be a JSON object")


def test_failing_assert_shows_circom_message(tmp_path):
    _calc_fails(
        tmp_path,
        fx("nested") / "circuit.wasm",
        {**NESTED_OK, "s": 10},
        "the circuit's assert failed: Error in template Nested_0 line: 18",
    )


def test_not_a_circom_wasm(tmp_path):
    import wasmtime

    junk = tmp_path / "junk.wasm"
    junk.write_bytes(b"\x7fELF not wasm at all")
    _calc_fails(tmp_path, junk, NESTED_OK, "junk.wasm: not a WebAssembly module")
    broken = tmp_path / "broken.wasm"
    broken.write_bytes(b"\0asm\x01\0\0\0\x05garbage")
    _calc_fails(tmp_path, broken, NESTED_OK, "broken.wasm: not a valid WebAssembly module")
    other = tmp_path / "other.wasm"
    other.write_bytes(wasmtime.wat2wasm('(module (func (export "main")))'))
    _calc_fails(tmp_path, other, NESTED_OK, "exports no getVersion", "not a circom 2")
    imports = tmp_path / "imports.wasm"
    imports.write_bytes(wasmtime.wat2wasm('(module (import "wasi" "fd_write" (func)))'))
    _calc_fails(tmp_path, imports, NESTED_OK, "imports wasi.fd_write")


def test_circuit_traps_and_foreign_versions(tmp_path):
    """A trap inside the circuit, an exception code snarkjs knows no text for, circom 1 and
    an unknown major version: each a named line, nothing written."""
    import wasmtime

    trap = tmp_path / "trap.wasm"
    trap.write_bytes(fake_circom(set_input="unreachable"))
    _calc_fails(tmp_path, trap, {"a": 1}, "input.json: the circuit trapped: ")
    odd = tmp_path / "odd.wasm"
    odd.write_bytes(fake_circom(set_input="(call $exc (i32.const 77))"))
    _calc_fails(tmp_path, odd, {"a": 1}, "input.json: the circuit failed: Unknown error.")
    v3 = tmp_path / "v3.wasm"
    v3.write_bytes(fake_circom(version=3))
    _calc_fails(tmp_path, v3, {"a": 1}, "v3.wasm: a circom 3 witness calculator")
    c1 = tmp_path / "c1.wasm"
    c1.write_bytes(
        wasmtime.wat2wasm('(module (func (export "getFrLen") (result i32) i32.const 40))')
    )
    _calc_fails(tmp_path, c1, {"a": 1}, "c1.wasm: a circom 1 witness calculator")
    ok = tmp_path / "ok.wasm"
    ok.write_bytes(fake_circom())
    out = tmp_path / "ok.wtns"
    assert run_cli("wtns", "calculate", ok, tmp_path / "input.json", out).exit_code == 0
    # header 76 bytes, then two wires; the fake's shared memory always reads back r
    assert out.read_bytes()[76:] == 2 * R.to_bytes(32, "little")


def test_prime_of_no_known_curve_without_circom(tmp_path):
    """A wasm whose getRawPrime gives a prime of no curve cuzk knows (goldilocks, here in a
    fake: circom's own build of it is the interop test above)."""
    other = tmp_path / "goldilocks.wasm"
    other.write_bytes(fake_circom(prime=0xFFFFFFFF00000001))
    _calc_fails(
        tmp_path,
        other,
        {"a": 1},
        "goldilocks.wasm: compiled for the prime 0xffffffff00000001",
        "cuzk computes witnesses over the scalar field r of BN254 or BLS12-381",
    )


# ---- the prime is the circuit's: BN254's r or BLS12-381's, the same circuit on each ----


@PRIMES
def test_inputs_reduced_mod_the_circuits_own_prime(r, tmp_path):
    """Values >= r and negative ones are taken mod the r the wasm was compiled for (read
    from it, as snarkjs does), not mod BN254's: a = 3 + r, b = 11 - 2r give input_0's
    witness; the .wtns carries that r."""
    d = fx(TINY[r])
    circuit = Circuit(d / "circuit.wasm")
    assert (circuit.prime, circuit.curve.r) == (r, r)
    inp = tmp_path / "input.json"
    inp.write_text(json.dumps({"a": str(3 + r), "b": str(11 - 2 * r)}))
    out = tmp_path / "w.wtns"
    assert run_cli("wtns", "calculate", d / "circuit.wasm", inp, out).exit_code == 0
    assert out.read_bytes() == (d / "witness_0.wtns").read_bytes()
    assert read_wtns(out).prime == r


@PRIMES
def test_input_errors_on_either_curve(r, tmp_path):
    """The bad-input lines of the BN254 path, on the same circuit compiled for each curve."""
    wasm = fx(TINY[r]) / "circuit.wasm"
    ok = {"a": 3, "b": 11}
    _calc_fails(tmp_path, wasm, {**ok, "c": 1}, "'c' is not an input signal of the circuit")
    _calc_fails(tmp_path, wasm, {"a": 3}, "input.json: missing input signal b ", "has inputs a, b")
    _calc_fails(tmp_path, wasm, {**ok, "b": [1, 2]}, "b has 2 values, but the circuit's b has 1")
    _calc_fails(tmp_path, wasm, {**ok, "a": "3x"}, "a = '3x' is not a number")
    _calc_fails(tmp_path, wasm, {**ok, "a": "9" * 5000}, "a has 5000 digits")


def test_fullprove_across_curves_refused_in_one_line(tmp_path):
    """A wasm of one curve with a key of the other is another circuit: one line, exit 1,
    nothing written."""
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    cases = [
        ("tiny381", "tiny", "circuit.wasm: computes over the prime 0x73eda753"),
        ("tiny", "tiny381", "circuit.wasm: computes over the prime 0x30644e72"),
    ]
    for wasm, key, said in cases:
        r = run_cli(
            "fullprove",
            fx(wasm) / "input_0.json",
            fx(wasm) / "circuit.wasm",
            fx(key) / "circuit.zkey",
            proof,
            public,
        )
        assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1, r.output
        assert said in r.output, r.output
        assert not proof.exists() and not public.exists()


def test_missing_files_exit_1(tmp_path):
    r = run_cli(
        "wtns",
        "calculate",
        tmp_path / "none.wasm",
        fx("tiny") / "input_0.json",
        tmp_path / "o.wtns",
    )
    assert r.exit_code == 1 and "none.wasm" in r.output
    r = run_cli(
        "wtns",
        "calculate",
        fx("tiny") / "circuit.wasm",
        tmp_path / "none.json",
        tmp_path / "o.wtns",
    )
    assert r.exit_code == 1 and "none.json" in r.output
    assert not (tmp_path / "o.wtns").exists()


# ---- fullprove ----


def test_fullprove_rejects_wasm_of_another_circuit(tmp_path):
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    r = run_cli(
        "fullprove",
        fx("tiny") / "input_0.json",
        fx("tiny") / "circuit.wasm",
        fx("nested") / "circuit.zkey",
        proof,
        public,
    )
    assert r.exit_code == 1
    assert "circuit.wasm: has 4 wires but" in r.output and "nVars = 22" in r.output
    assert "not the same circuit" in r.output
    assert not proof.exists() and not public.exists()


def test_fullprove_bad_input_writes_nothing(tmp_path):
    inp = tmp_path / "in.json"
    inp.write_text(json.dumps({**NESTED_OK, "s": 99}))
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    r = run_cli(
        "fullprove",
        inp,
        fx("nested") / "circuit.wasm",
        fx("nested") / "circuit.zkey",
        proof,
        public,
    )
    assert r.exit_code == 1 and "assert failed" in r.output
    assert not proof.exists() and not public.exists()


def test_fullprove_writes_both_outputs_or_neither(tmp_path, monkeypatch):
    """As `cuzk prove`: one file for both refused before any work, a public.json that cannot
    be written (/dev/full: written in place, and full) leaves no proof.json."""
    monkeypatch.chdir(tmp_path)
    d = fx("tiny")
    for second in ("out.json", "./out.json"):
        r = run_cli(
            "fullprove",
            d / "input_0.json",
            d / "circuit.wasm",
            d / "circuit.zkey",
            "out.json",
            second,
        )
        assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1, r.output
        assert f"out.json and {second} are the same file" in r.output
    args = (d / "input_0.json", d / "circuit.wasm", d / "circuit.zkey", "proof.json")
    r = run_cli("fullprove", *args, "/dev/full")
    # (a cold kernel cache adds the compile notice's lines before the reason: the last line)
    assert r.exit_code == 1, r.output
    assert r.output.splitlines()[-1] == "cuzk fullprove: /dev/full: No space left on device"
    r = run_cli("fullprove", *args, "nodir/public.json")
    assert r.exit_code == 1 and "nodir/public.json: no such directory" in r.output
    assert os.listdir(tmp_path) == []


@pytest.mark.interop
@pytest.mark.parametrize("name", ["nested", "toyhash", "tiny381"])
def test_fullprove_verifies_with_snarkjs(name, tmp_path, tools):
    d = fx(name)
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    r = run_cli(
        "fullprove",
        d / "input_1.json",
        d / "circuit.wasm",
        d / "circuit.zkey",
        proof,
        public,
        "--verify",
    )
    assert r.exit_code == 0, r.output
    assert public.read_bytes() == d.joinpath("public_1.json").read_bytes()
    assert interop.groth16_verify(d / "verification_key.json", public, proof)


@pytest.mark.interop
def test_fullprove_process_of_its_own(tmp_path, tools):
    """The real command line (its own process, exit without teardown) and its exit codes."""
    d = fx("nested")
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    cmd = [
        sys.executable,
        "-m",
        "cuzk.cli",
        "fullprove",
        d / "input_0.json",
        d / "circuit.wasm",
        d / "circuit.zkey",
        proof,
        public,
    ]
    env = dict(os.environ)
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    assert interop.groth16_verify(d / "verification_key.json", public, proof)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**NESTED_OK, "zz": 1}))
    cmd[4] = bad
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 1
    assert p.stderr.strip() == (
        f"cuzk fullprove: {bad}: 'zz' is not an input signal of the circuit circuit.wasm"
    )


# ---- live snarkjs on the same files ----


@pytest.mark.interop
def test_input_forms_match_snarkjs(tmp_path, tools):
    """Hex strings, JSON numbers, negative values, values above r, nested arrays: the same
    bytes as `snarkjs wtns calculate` on the same input file."""
    inp = tmp_path / "forms.json"
    inp.write_text(
        json.dumps(
            {
                "m": [["0x1F", -3, str(R + 5)], [12, "-77", "0xabcdef0123456789abcdef"]],
                "v": [1e3, " 5 ", str(2**254)],
                "s": "-2",
                "limit": 9007199254740991,
            }
        )
    )
    ours, theirs = tmp_path / "ours.wtns", tmp_path / "theirs.wtns"
    wasm = fx("nested") / "circuit.wasm"
    assert run_cli("wtns", "calculate", wasm, inp, ours).exit_code == 0
    interop.snarkjs("wtns", "calculate", wasm, inp, theirs)
    assert ours.read_bytes() == theirs.read_bytes()
    assert interop.wtns_check(fx("nested") / "circuit.r1cs", ours)


@pytest.fixture(scope="session")
def poseidon(tmp_path_factory, tools):
    """circomlib's Poseidon(3), compiled from npm's circomlib by circom2 (with its .sym)."""
    out = tmp_path_factory.mktemp("poseidon")
    return interop.compile_circuit(
        CIRCUITS / "poseidon.circom", out, include=interop.ROOT / ".tools" / "node_modules"
    )


@pytest.mark.interop
def test_circomlib_poseidon_equals_snarkjs(poseidon, tmp_path):
    for k, inputs in enumerate(
        [{"inputs": [1, 2, 3]}, {"inputs": [str(R - 1), "0x" + "ab" * 31, "-12345"]}]
    ):
        inp = tmp_path / f"in{k}.json"
        inp.write_text(json.dumps(inputs))
        ours, theirs = tmp_path / f"ours{k}.wtns", tmp_path / f"theirs{k}.wtns"
        r = run_cli("wtns", "calculate", poseidon.wasm, inp, ours)
        assert r.exit_code == 0, r.output
        interop.snarkjs("wtns", "calculate", poseidon.wasm, inp, theirs)
        assert ours.read_bytes() == theirs.read_bytes()
        assert interop.wtns_check(poseidon.r1cs, ours)
    # Poseidon([1, 2, 3]), the reference value circomlibjs's tests give.
    w = read_wtns(tmp_path / "ours0.wtns").values
    out = int.from_bytes(np.ascontiguousarray(w[1]).tobytes(), "little")
    assert out == 0x0E7732D89E6939C0FF03D5E58DAB6302F3230E269DC5B968F725DF34AB36D732
    _calc_fails(
        tmp_path,
        poseidon.wasm,
        {"inputs": [1, 2]},
        "inputs has 2 values, but the circuit's inputs has 3",
    )
    _calc_fails(tmp_path, poseidon.wasm, {}, "missing input signal inputs ")


@pytest.mark.interop
def test_prime_of_no_known_curve(tmp_path, tools):
    src = tmp_path / "tinyp.circom"
    src.write_text((CIRCUITS / "tiny.circom").read_text())
    interop.circom2(src, "--wasm", "--prime", "goldilocks", "-o", tmp_path)
    wasm = tmp_path / "tinyp_js" / "tinyp.wasm"
    _calc_fails(
        tmp_path,
        wasm,
        {"a": 3, "b": 11},
        "tinyp.wasm: compiled for the prime 0xffffffff00000001 (64 bits)",
        "the scalar field r of BN254 or BLS12-381",
    )


@pytest.mark.interop
@pytest.mark.parametrize("name", ["nested", "toyhash"])
def test_bls12_381_witness_equals_snarkjs(name, tmp_path, tools):
    """Circuits compiled live for BLS12-381: snarkjs's bytes for the BN254 fixtures' inputs
    (near BN254's r, so reduced by nothing on this curve)."""
    src = tmp_path / f"{name}.circom"
    src.write_text((CIRCUITS / f"{name}.circom").read_text())
    interop.circom2(src, "--wasm", "--prime", "bls12381", "-o", tmp_path)
    wasm = tmp_path / f"{name}_js" / f"{name}.wasm"
    for k in (0, 1):
        inp = fx(name) / f"input_{k}.json"
        out, ref = tmp_path / f"o{k}.wtns", tmp_path / f"ref{k}.wtns"
        r = run_cli("wtns", "calculate", wasm, inp, out)
        assert r.exit_code == 0, r.output
        interop.snarkjs("wtns", "calculate", wasm, inp, ref)
        assert out.read_bytes() == ref.read_bytes()
        assert read_wtns(out).prime == BLS12_381.r


# ---- older circom 2 layouts (tests/fixtures/layouts/README.md) ----

LAYOUTS = ("circom2-0.2.0", "circom2-0.2.5", "circom2-0.2.12")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_witness_equals_snarkjs(layout, tmp_path):
    d = FIXTURES / "layouts" / layout
    for k in (0, 1):
        out = tmp_path / f"w{k}.wtns"
        r = run_cli("wtns", "calculate", d / "circuit.wasm", fx("nested") / f"input_{k}.json", out)
        assert r.exit_code == 0, r.output
        assert out.read_bytes() == (d / f"witness_{k}.wtns").read_bytes()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_errors(layout, tmp_path):
    """Each error of the current layout, as far as the older .wasm (and its .sym) can tell."""
    wasm = FIXTURES / "layouts" / layout / "circuit.wasm"
    old = layout == "circom2-0.2.0"  # no getInputSignalSize
    _calc_fails(
        tmp_path, wasm, {**NESTED_OK, "v": [7, 8]}, "v has 2 values, but the circuit's v has 3"
    )
    _calc_fails(tmp_path, wasm, {**NESTED_OK, "q": 1}, "'q' is not an input signal")
    missing = {k: v for k, v in NESTED_OK.items() if k != "s"}
    _calc_fails(
        tmp_path,
        wasm,
        missing,
        *(
            ["10 of the 11 input values", "cannot tell which signals are inputs"]
            if old
            else ["missing input signal s "]
        ),
    )
    message = (
        "Error in template Nested_0 line: 18"
        if layout == "circom2-0.2.12"
        else "(no template or line: circom gives them since 2.0.7)"
    )
    _calc_fails(tmp_path, wasm, {**NESTED_OK, "s": 10}, "assert failed: " + message)


def test_oldest_layout_without_sym(tmp_path):
    """No getInputSignalSize and no .sym: circom's own counts decide, as in snarkjs."""
    wasm = tmp_path / "lone" / "circuit.wasm"
    wasm.parent.mkdir()
    shutil.copy(FIXTURES / "layouts" / "circom2-0.2.0" / "circuit.wasm", wasm)
    _calc_fails(
        tmp_path,
        wasm,
        {**NESTED_OK, "q": 1},
        "too many input values: q is not an input or has more values",
        "(Too many signals set.)",
    )
    _calc_fails(tmp_path, wasm, {**NESTED_OK, "v": [7, 8]}, "missing input signals", "10 of the 11")
    _calc_fails(tmp_path, wasm, {**NESTED_OK, "v": [7, 8, 9, 10]}, "too many input values")


# ---- warm calculators for long-lived processes (cuzk.witness.pool) ----


def test_pool_writes_into_shared_array_and_survives_bad_inputs(tmp_path):
    from cuzk.witness.pool import WitnessPool

    pool = WitnessPool()
    wasm = fx("nested") / "circuit.wasm"
    n = pool.circuit(wasm).witness_size
    out = np.zeros((n, 4), dtype=np.uint64)
    timings = pool.calculate_into(wasm, fx("nested").joinpath("input_1.json").read_bytes(), out)
    assert np.array_equal(out, read_wtns(fx("nested") / "witness_1.wtns").values)
    assert set(timings) == {"run_s", "gather_s"}
    calc = pool._entries[str(wasm)][2]
    with pytest.raises(WitnessError, match="^job 7 partition 1: the circuit's assert failed"):
        pool.calculate_into(wasm, {**NESTED_OK, "s": 10}, out, name="job 7 partition 1")
    with pytest.raises(WitnessError, match="^p2: 'zz' is not an input"):
        pool.calculate_into(wasm, {**NESTED_OK, "zz": 1}, out, name="p2")
    with pytest.raises(WitnessError, match="^p3: not valid JSON"):
        pool.calculate_into(wasm, b"{oops", out, name="p3")
    with pytest.raises(ValueError, match="C-contiguous"):
        pool.calculate_into(wasm, NESTED_OK, np.zeros((n - 1, 4), dtype=np.uint64))
    pool.calculate_into(wasm, json.loads(fx("nested").joinpath("input_0.json").read_text()), out)
    assert np.array_equal(out, read_wtns(fx("nested") / "witness_0.wtns").values)
    assert pool._entries[str(wasm)][2] is not calc  # the failed instance was replaced
    again = pool._entries[str(wasm)][2]
    pool.calculate_into(wasm, NESTED_OK, out)
    assert pool._entries[str(wasm)][2] is again  # a good one is kept
    assert pool.memory_bytes(wasm) >= again.memory_bytes


def test_pool_reloads_a_changed_wasm(tmp_path):
    from cuzk.witness.pool import WitnessPool

    wasm = tmp_path / "c.wasm"
    shutil.copy(fx("tiny") / "circuit.wasm", wasm)
    pool = WitnessPool()
    assert pool.circuit(wasm).witness_size == 4
    shutil.copy(fx("toyhash") / "circuit.wasm", wasm)
    os.utime(wasm, ns=(1, 10**18))
    assert pool.circuit(wasm).witness_size == 905
    out = np.zeros((905, 4), dtype=np.uint64)
    pool.calculate_into(wasm, fx("toyhash").joinpath("input_0.json").read_text(), out)
    assert np.array_equal(out, read_wtns(fx("toyhash") / "witness_0.wtns").values)


def test_a_cache_file_rewritten_in_place_does_not_kill_the_process(tmp_path):
    """A module loaded from the disk cache must not map the file: one truncated or rewritten
    in place while the module lives (by hand, or by another tool sharing the folder) made the
    process die of SIGBUS when the module was freed (seen at pytest's exit)."""
    script = f"""
import gc, os, sys
os.environ["CUZK_CACHE_DIR"] = {str(tmp_path / "cache")!r}
from pathlib import Path
from cuzk.witness import cache as wcache, read_inputs
from cuzk.witness.calculator import Circuit
d = Path({str(fx("mulchain"))!r})
Circuit(d / "circuit.wasm")
wcache.forget_process_cache()
c = Circuit(d / "circuit.wasm")
assert c.load_stats["source"] == "disk", c.load_stats
(f,) = (Path({str(tmp_path / "cache")!r}) / "wasm").glob("*.cwasm")
f.write_bytes(b"x")  # in place: the same inode, truncated
c.calculator().calculate(read_inputs(d / "input_1.json"))
del c
wcache.forget_process_cache()
gc.collect()
print("alive")
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and out.stdout.strip() == "alive", (
        out.returncode,
        out.stderr[-2000:],
    )


@pytest.mark.parametrize("command", ["wtns", "fullprove", "submit"])
def test_endless_inputs_are_refused_after_the_limit(tmp_path, monkeypatch, command):
    """/dev/zero as input.json (issue 38): one line, exit 1 (submit: 2), nothing written, the
    file read no further than the limit (1 MiB here; MAX_INPUT_BYTES is 256 MiB)."""
    from cuzk.formats import json_limits
    from cuzk.witness import inputs

    monkeypatch.setattr(inputs, "MAX_INPUT_BYTES", 1 << 20)
    monkeypatch.setattr(json_limits, "MAX_INPUT_BYTES", 1 << 20)
    wasm, key = fx("tiny") / "circuit.wasm", fx("tiny") / "circuit.zkey"
    out, public = tmp_path / "out", tmp_path / "public.json"
    args = {
        "wtns": ("wtns", "calculate", wasm, "/dev/zero", out),
        "fullprove": ("fullprove", "/dev/zero", wasm, key, out, public),
        "submit": ("submit", "--server", "http://127.0.0.1:9", "--input", key, "/dev/zero"),
    }[command]
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exit_code == (2 if command == "submit" else 1), r.output
    assert r.output.endswith(
        "/dev/zero: too large for circuit inputs (more than 1 MiB, the most read of such a file)\n"
    )
    assert len(r.output.splitlines()) == 1 and os.listdir(tmp_path) == []
