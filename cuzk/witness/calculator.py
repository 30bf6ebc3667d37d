"""The circom 2 witness calculator (.wasm) run on wasmtime, with circom_runtime's protocol.

A circom 2 .wasm exports its memory and a small API: `getVersion` (2), `getFieldNumLen32`
(8 for BN254 and BLS12-381), `getRawPrime` + `readSharedRWMemory` (the prime: the curve's
scalar field r, `circom --prime bn128` or `bls12381`), `getWitnessSize`,
`getInputSize`, `init`, `writeSharedRWMemory` + `setInputSignal(hMSB, hLSB, i)` (one input
value, the signal named by its FNV-1a hash; the last input runs the circuit),
`getWitness(i)` + `readSharedRWMemory` (one witness value, plain form, 8 words little-endian)
and, since circom 2.0.7 / 2.1, `getMessageChar`, `getInputSignalSize`,
`getMinor/PatchVersion`. It imports from "runtime" the host functions snarkjs's
circom_runtime (witness_calculator.js) provides: `exceptionHandler(code)` (1 signal not
found, 2 too many signals, 3 signal already set, 4 assert failed, 5 not enough memory,
6 input array access out of range), `printErrorMessage` / `writeBufferMessage` (a message
read with getMessageChar: the error text, e.g. "Error in template Num2Bits_1 line: 38", or a
log() item), `showSharedRWMemory` (log() of a field element); circom 1's `error`, `log`,
`printDebug`, `log*Signal`, `log*Component` are accepted too, as snarkjs does.

Per-value calls would cost a Python round trip each (about a microsecond): a million-wire
witness would spend seconds in calls. A helper module (`_HELPER_WAT`) linked to the
circuit's exports does the loops inside wasm instead: `set_inputs` feeds a table of input
records (hash, index, value words), `gather` calls getWitness for every wire and copies the
value from the circuit's shared memory (directly where the circuit exports its memory and
getSharedRWMemoryStart, else with readSharedRWMemory calls) into its own linear memory,
which is then copied out in one
piece (bytes for a .wtns file, or a numpy array). This module does not import numpy unless
an array is asked for: `cuzk wtns calculate` starts faster without it.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import struct
import time
from pathlib import Path

from cuzk.formats import curve as curves
from cuzk.witness.errors import (
    AssertFailed,
    MissingInput,
    NotACircuit,
    UnknownInput,
    WitnessError,
    WrongCircuitPrime,
    WrongLength,
)
from cuzk.witness.inputs import fnv1a64

N8 = 32  # bytes per field element: r of BN254 and of BLS12-381 are both below 2^256
N32 = N8 // 4  # 32-bit words per field element (circom's getFieldNumLen32)
RECORD_WORDS = 3 + N32  # an input record: hMSB, hLSB, index, value words (least significant first)
PAGE = 65536

EXCEPTION_CODES = {
    1: "Signal not found.",
    2: "Too many signals set.",
    3: "Signal already set.",
    4: "Assert Failed.",
    5: "Not enough memory.",
    6: "Input signal array access exceeds the size.",
}

# The imports snarkjs's circom_runtime supplies; a module asking for anything else is not a
# circom witness calculator (snarkjs would fail to instantiate it).
RUNTIME_IMPORTS = frozenset(
    {
        "exceptionHandler",
        "printErrorMessage",
        "writeBufferMessage",
        "showSharedRWMemory",
        "printDebug",
        "error",
        "log",
        "logGetSignal",
        "logSetSignal",
        "logStartComponent",
        "logFinishComponent",
    }
)
REQUIRED_EXPORTS = (
    "getVersion",
    "getFieldNumLen32",
    "getRawPrime",
    "readSharedRWMemory",
    "writeSharedRWMemory",
    "init",
    "setInputSignal",
    "getWitnessSize",
    "getInputSize",
    "getWitness",
)

# The helper, in two builds. Both import the four functions below; the "direct" build also
# imports the circuit's memory (wasm multi-memory) and copies each value straight from the
# circuit's shared read-write memory (address: getSharedRWMemoryStart) with four 64-bit
# loads, instead of eight readSharedRWMemory calls: one call per wire instead of nine.
_HELPER_WAT = """
(module
  (import "circuit" "getWitness" (func $getWitness (param i32)))
  (import "circuit" "readSharedRWMemory" (func $read (param i32) (result i32)))
  (import "circuit" "writeSharedRWMemory" (func $write (param i32 i32)))
  (import "circuit" "setInputSignal" (func $setInput (param i32 i32 i32)))
  {memory_import}
  (memory $own (export "memory") 1)
  {gather_direct}
  (global $done (export "done") (mut i32) (i32.const 0))
  ;; gather(first, count): witness values first .. first+count-1 -> memory[32 i], 8 words each
  (func (export "gather") (param $first i32) (param $count i32)
    (local $i i32) (local $p i32)
    (block $end
      (loop $next
        (br_if $end (i32.ge_u (local.get $i) (local.get $count)))
        (call $getWitness (i32.add (local.get $first) (local.get $i)))
        (i32.store $own offset=0 (local.get $p) (call $read (i32.const 0)))
        (i32.store $own offset=4 (local.get $p) (call $read (i32.const 1)))
        (i32.store $own offset=8 (local.get $p) (call $read (i32.const 2)))
        (i32.store $own offset=12 (local.get $p) (call $read (i32.const 3)))
        (i32.store $own offset=16 (local.get $p) (call $read (i32.const 4)))
        (i32.store $own offset=20 (local.get $p) (call $read (i32.const 5)))
        (i32.store $own offset=24 (local.get $p) (call $read (i32.const 6)))
        (i32.store $own offset=28 (local.get $p) (call $read (i32.const 7)))
        (local.set $p (i32.add (local.get $p) (i32.const 32)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next))))
  ;; set_inputs(count): records of 11 words at memory[44 k] (hMSB, hLSB, index, value words);
  ;; `done` counts the records set, so the host knows which one the circuit rejected
  (func (export "set_inputs") (param $count i32)
    (local $k i32) (local $p i32)
    (global.set $done (i32.const 0))
    (block $end
      (loop $next
        (br_if $end (i32.ge_u (local.get $k) (local.get $count)))
        (call $write (i32.const 0) (i32.load $own offset=12 (local.get $p)))
        (call $write (i32.const 1) (i32.load $own offset=16 (local.get $p)))
        (call $write (i32.const 2) (i32.load $own offset=20 (local.get $p)))
        (call $write (i32.const 3) (i32.load $own offset=24 (local.get $p)))
        (call $write (i32.const 4) (i32.load $own offset=28 (local.get $p)))
        (call $write (i32.const 5) (i32.load $own offset=32 (local.get $p)))
        (call $write (i32.const 6) (i32.load $own offset=36 (local.get $p)))
        (call $write (i32.const 7) (i32.load $own offset=40 (local.get $p)))
        (call $setInput (i32.load $own offset=0 (local.get $p))
                        (i32.load $own offset=4 (local.get $p))
                        (i32.load $own offset=8 (local.get $p)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (global.set $done (local.get $k))
        (local.set $p (i32.add (local.get $p) (i32.const 44)))
        (br $next))))
)
"""
_GATHER_DIRECT = """
  ;; gather_direct(first, count, src): as gather, reading the 32 bytes at circuit memory src
  (func (export "gather_direct") (param $first i32) (param $count i32) (param $src i32)
    (local $i i32) (local $p i32)
    (block $end
      (loop $next
        (br_if $end (i32.ge_u (local.get $i) (local.get $count)))
        (call $getWitness (i32.add (local.get $first) (local.get $i)))
        (i64.store $own offset=0 (local.get $p) (i64.load $circuit offset=0 (local.get $src)))
        (i64.store $own offset=8 (local.get $p) (i64.load $circuit offset=8 (local.get $src)))
        (i64.store $own offset=16 (local.get $p) (i64.load $circuit offset=16 (local.get $src)))
        (i64.store $own offset=24 (local.get $p) (i64.load $circuit offset=24 (local.get $src)))
        (local.set $p (i32.add (local.get $p) (i32.const 32)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next))))
"""
_helper_modules: dict[bool, object] = {}
atexit.register(_helper_modules.clear)  # before teardown: see cuzk.witness.cache


class _CircuitAbort(Exception):
    """Raised inside a host import to unwind the circuit (exceptionHandler, circom 1 error)."""

    def __init__(self, code: int, text: str):
        super().__init__(code, text)
        self.code, self.text = code, text


def _helper(wasm_runtime, direct: bool):
    """The helper module (compiled once per process; a few milliseconds)."""
    module = _helper_modules.get(direct)
    if module is None:
        import wasmtime

        wat = _HELPER_WAT.format(
            memory_import='(import "circuit" "memory" (memory $circuit 1))' if direct else "",
            gather_direct=_GATHER_DIRECT if direct else "",
        )
        module = _helper_modules.setdefault(
            direct, wasmtime.Module(wasm_runtime, wasmtime.wat2wasm(wat))
        )
    return module


def find_sym(wasm_path: Path) -> Path | None:
    """The circuit's .sym next to its .wasm: circom writes out/NAME.sym beside out/NAME_js/."""
    for d in (wasm_path.parent, wasm_path.parent.parent):
        p = d / (wasm_path.stem + ".sym")
        if p.is_file():
            return p
    return None


def main_signals(sym_path) -> dict[str, int]:
    """The main component's own signals in .sym order: name -> number of elements (an
    array's entries main.m[0][0], main.m[0][1], ... count once each)."""
    sizes: dict[str, int] = {}
    with open(sym_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split(",", 3)
            if len(parts) != 4 or not parts[3].startswith("main."):
                continue
            name = parts[3][5:].split("[", 1)[0]
            if "." not in name:
                sizes[name] = sizes.get(name, 0) + 1
    return sizes


class Circuit:
    """A compiled circom 2 witness calculator: the .wasm checked and compiled (cached).

    Facts read from a first instance: `version` (major, minor, patch), `prime` (the scalar
    field r of `curve`, a cuzk.formats.curve.Curve: BN254 or BLS12-381), `witness_size`
    (wires, = the zkey's nVars), `input_size` (input values)."""

    def __init__(
        self,
        wasm_path: os.PathLike | str,
        sym: os.PathLike | str | None = None,
        code: bytes | None = None,
    ):
        from cuzk.witness.cache import load_module, wasm_runtime

        self.path = Path(wasm_path)
        self.sym = Path(sym) if sym is not None else find_sym(self.path)
        if code is None:
            code = self.path.read_bytes()
        if code[:4] != b"\0asm":
            raise NotACircuit(
                self.path,
                "not a WebAssembly module (a circom 2 witness "
                "calculator .wasm from `circom --wasm` is expected)",
            )
        self.load_stats: dict = {}
        self._sym_signals = None
        try:
            self.module = load_module(code, self.load_stats)
        except Exception as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise NotACircuit(self.path, f"not a valid WebAssembly module: {first}") from None
        self.wasm_runtime = wasm_runtime()
        self._check_interface()
        calc = WitnessCalculator(self)
        self.version = calc.version
        self.prime = calc.prime
        self.curve = calc.curve
        self.witness_size = calc.witness_size
        self.input_size = calc.input_size
        self._spare = calc  # the first calculator, handed out once

    def _check_interface(self) -> None:
        import wasmtime

        for imp in self.module.imports:
            if (
                imp.module == "runtime"
                and imp.name in RUNTIME_IMPORTS
                and isinstance(imp.type, wasmtime.FuncType)
            ):
                continue
            if (imp.module, imp.name) == ("env", "memory") and isinstance(
                imp.type, wasmtime.MemoryType
            ):
                continue
            raise NotACircuit(
                self.path,
                f"imports {imp.module}.{imp.name}, which circom's "
                "runtime does not provide: not a circom witness "
                "calculator",
            )
        exports = {e.name for e in self.module.exports}
        if "getVersion" not in exports and "getFrLen" in exports:
            raise NotACircuit(
                self.path,
                "a circom 1 witness calculator: cuzk runs circom 2 "
                "circuits (recompile with circom 2)",
            )
        missing = [n for n in REQUIRED_EXPORTS if n not in exports]
        if missing:
            raise NotACircuit(
                self.path, f"exports no {', '.join(missing)}: not a circom 2 witness calculator"
            )

    @property
    def instance_bytes(self) -> int:
        """Memory one calculator holds once it has computed a witness: the circuit's linear
        memory (its declared size; circom sizes it at compile time) plus the helper's, which
        holds the witness (32 bytes a wire) or the input table, whichever is larger. For a
        memory budget; the input table of an input-heavy circuit can add 44 bytes a value."""
        import wasmtime

        circuit = 0
        for e in self.module.exports:
            if isinstance(e.type, wasmtime.MemoryType):
                circuit = max(circuit, e.type.limits.min * PAGE)
        for i in self.module.imports:
            if isinstance(i.type, wasmtime.MemoryType):
                circuit = max(circuit, i.type.limits.min * PAGE)
        helper = -(-max(self.witness_size * N8, PAGE) // PAGE) * PAGE
        return circuit + helper

    def calculator(self) -> WitnessCalculator:
        """A ready calculator (an instance of its own; not for use by two threads at once)."""
        calc, self._spare = self._spare, None
        return calc if calc is not None else WitnessCalculator(self)

    def sym_signals(self) -> dict[str, int] | None:
        """main_signals of the .sym file (read once); None without one."""
        if self.sym is None:
            return None
        if self._sym_signals is None:
            self._sym_signals = main_signals(self.sym)
        return self._sym_signals

    def input_names(self) -> list[str] | None:
        """The main component's input signal names, from the .sym file; None without one."""
        signals = self.sym_signals()
        if signals is None:
            return None
        calc = self._spare or WitnessCalculator(self)
        self._spare = calc
        return [n for n in signals if calc.input_signal_size(n) is not None]


class WitnessCalculator:
    """One wasmtime instance of a Circuit, plus its helper; `calculate(inputs)` -> witness."""

    def __init__(self, circuit: Circuit, direct: bool = True):
        """`direct=False` gathers with readSharedRWMemory calls even where the circuit
        exports its memory and getSharedRWMemoryStart (tests compare both paths)."""
        import wasmtime

        self.circuit = circuit
        self.path = circuit.path
        self._error_text: list[str] = []
        self._log_items: list[str] = []
        self.log = None  # a function of one line (circuit log() output); None: stderr
        self.store = wasmtime.Store(circuit.wasm_runtime)
        imports = []
        for imp in circuit.module.imports:
            if imp.module == "env":
                imports.append(wasmtime.Memory(self.store, imp.type))
            else:
                imports.append(wasmtime.Func(self.store, imp.type, self._host(imp.name, imp.type)))
        try:
            self.instance = wasmtime.Instance(self.store, circuit.module, imports)
        except (wasmtime.WasmtimeError, wasmtime.Trap) as e:
            raise NotACircuit(self.path, f"cannot be instantiated: {_first_line(e)}") from None
        ex = self.instance.exports(self.store)
        self.ex = {
            name: ex[name]
            for name in (
                *REQUIRED_EXPORTS,
                "getMinorVersion",
                "getPatchVersion",
                "getMessageChar",
                "getInputSignalSize",
                "memory",
            )
            if name in ex
        }
        s = self.store
        major = self.ex["getVersion"](s)
        if major != 2:
            raise NotACircuit(
                self.path, f"a circom {major} witness calculator: cuzk runs circom 2 circuits"
            )
        minor = self.ex["getMinorVersion"](s) if "getMinorVersion" in self.ex else 0
        patch = self.ex["getPatchVersion"](s) if "getPatchVersion" in self.ex else 0
        self.version = (major, minor, patch)
        self.n32 = self.ex["getFieldNumLen32"](s)
        self.ex["getRawPrime"](s)
        self.prime = self._read_shared()
        self.curve = curves.by_r(self.prime) if self.n32 == N32 else None
        if self.curve is None:
            raise WrongCircuitPrime(
                self.path,
                f"compiled for the prime {self.prime:#x} "
                f"({self.n32 * 32} bits): cuzk computes witnesses over the scalar field r "
                f"of {curves.known()} (circom --prime {' or '.join(curves.CURVES)})",
            )
        self.witness_size = self.ex["getWitnessSize"](s)
        self.input_size = self.ex["getInputSize"](s)
        funcs = [
            self.ex["getWitness"],
            self.ex["readSharedRWMemory"],
            self.ex["writeSharedRWMemory"],
            self.ex["setInputSignal"],
        ]
        start = ex.get("getSharedRWMemoryStart")
        self.direct = direct and start is not None and "memory" in self.ex
        if self.direct:
            self.shared_rw_start = start(s)
            self.helper = wasmtime.Instance(
                self.store, _helper(circuit.wasm_runtime, True), [*funcs, self.ex["memory"]]
            )
        else:
            self.helper = wasmtime.Instance(self.store, _helper(circuit.wasm_runtime, False), funcs)
        hx = self.helper.exports(self.store)
        self._gather, self._set_inputs = hx["gather"], hx["set_inputs"]
        if self.direct:
            direct_gather, src = hx["gather_direct"], self.shared_rw_start
            self._gather = lambda store, first, count: direct_gather(store, first, count, src)
        self._done, self._hmem = hx["done"], hx["memory"]
        self._prints_errors = any(i.name == "printErrorMessage" for i in circuit.module.imports)
        self.broken = False
        # the last calculation: inputs set and circuit run / witness gathered, seconds
        self.timings: dict[str, float] = {}

    # ---- host imports ----
    def _host(self, name: str, ftype):
        results = list(ftype.results)

        def reply():
            if not results:
                return None
            return 0 if len(results) == 1 else [0] * len(results)

        if name == "exceptionHandler":

            def exception_handler(code):
                text = EXCEPTION_CODES.get(code, "Unknown error.")
                said = "; ".join(m.strip() for m in self._error_text if m.strip())
                raise _CircuitAbort(code, f"{text} {said}" if said else text)

            return exception_handler
        if name == "printErrorMessage":

            def print_error_message():
                self._error_text.append(self._message())

            return print_error_message
        if name == "writeBufferMessage":

            def write_buffer_message():
                msg = self._message()
                if msg == "\n":
                    self._emit(" ".join(self._log_items))
                    self._log_items.clear()
                else:
                    self._log_items.append(msg)

            return write_buffer_message
        if name == "showSharedRWMemory":

            def show_shared_rw_memory():
                value = str(self._read_shared())
                major, minor, patch = getattr(self, "version", (2, 0, 0))
                if minor >= 1 or patch >= 7:
                    self._log_items.append(value)
                else:
                    self._emit(value)

            return show_shared_rw_memory
        if name == "error":  # circom 1

            def error(code, *args):
                raise _CircuitAbort(code, f"circuit error {code} {' '.join(map(str, args))}")

            return error

        def ignored(*args):  # printDebug, log, log*Signal, log*Component: nothing to do
            return reply()

        return ignored

    def _message(self) -> str:
        get = self.ex.get("getMessageChar")
        if get is None:
            return ""
        chars = []
        while (c := get(self.store)) != 0:
            chars.append(chr(c))
        return "".join(chars)

    def _emit(self, line: str) -> None:
        if self.log is not None:
            self.log(line)
        else:
            import sys

            print(line, file=sys.stderr)

    def _read_shared(self) -> int:
        read = self.ex["readSharedRWMemory"]
        v = 0
        for j in reversed(range(self.n32 if hasattr(self, "n32") else N32)):
            v = (v << 32) | (read(self.store, j) & 0xFFFFFFFF)
        return v

    # ---- facts ----
    def input_signal_size(self, name: str) -> int | None:
        """Values of input signal `name` (None: not an input). Needs circom >= 2.1's export;
        raises LookupError on circuits without it. circom answers 0 for a name that is not
        an input (snarkjs's `< 0` test never fires; it then reports "Too many values")."""
        f = self.ex.get("getInputSignalSize")
        if f is None:
            raise LookupError("getInputSignalSize")
        h = fnv1a64(name)
        n = f(self.store, h >> 32, h & 0xFFFFFFFF)
        return None if n <= 0 else n

    @property
    def memory_bytes(self) -> int:
        """Linear memory held by this instance (the circuit's and the helper's)."""
        n = self._hmem.data_len(self.store)
        if "memory" in self.ex:
            n += self.ex["memory"].data_len(self.store)
        return n

    # ---- calculation ----
    def _memory(self, nbytes: int) -> int:
        """The address of the helper's linear memory, grown to at least nbytes. Valid until
        the next growth (wasmtime may move a memory that grows)."""
        mem, s = self._hmem, self.store
        have = mem.data_len(s)
        if have < nbytes:
            mem.grow(s, (nbytes - have + PAGE - 1) // PAGE)
        return ctypes.cast(mem.data_ptr(s), ctypes.c_void_p).value

    def _run(self, inputs, input_path) -> int:
        """Run the circuit on `inputs` and gather the witness into the helper's memory;
        returns its address (witness_size x 32 bytes, valid until the next call)."""
        if self.broken:
            raise RuntimeError("this calculator failed before; take a new one")
        s = self.store
        t0 = time.perf_counter()
        records, names = self._records(inputs, input_path)
        try:
            self.ex["init"](s, 0)
            self._error_text.clear()
            self._log_items.clear()
            count = len(names)
            address = self._memory(max(len(records), self.witness_size * N8))
            if count:
                ctypes.memmove(address, records, len(records))
                self._set_inputs(s, count)
        except _CircuitAbort as e:
            self.broken = True
            raise self._input_error(e, names, input_path) from None
        except Exception as e:  # a wasm trap inside the circuit
            self.broken = True
            if isinstance(e, WitnessError):
                raise
            raise AssertFailed(input_path, f"the circuit trapped: {_first_line(e)}") from None
        if count < self.input_size:  # only reachable without getInputSignalSize
            self.broken = True
            raise MissingInput(input_path, self._missing_text(inputs, count))
        t1 = time.perf_counter()
        try:
            self._gather(s, 0, self.witness_size)
        except Exception as e:
            self.broken = True
            raise AssertFailed(
                input_path, f"reading the witness failed: {_first_line(e)}"
            ) from None
        self.timings = {"run_s": t1 - t0, "gather_s": time.perf_counter() - t1}
        return self._memory(self.witness_size * N8)

    def witness_view(self, inputs: list[tuple[str, list[int]]], input_path=None) -> memoryview:
        """The witness of `inputs` as a read-only view of the helper's memory (no copy):
        witness_size values of 32 bytes, little-endian, plain form (the values section of a
        .wtns). Valid until this calculator's next calculation; write it out (a file, a
        shared-memory segment) before then. Fresh memory costs page faults: copying a
        2^20-wire witness into a new bytes object measured ~60 ns a value, into memory
        already mapped ~3 ns, hence views."""
        address = self._run(inputs, input_path)
        return (
            memoryview((ctypes.c_char * (self.witness_size * N8)).from_address(address))
            .cast("B")
            .toreadonly()
        )

    def calculate_bytes(self, inputs: list[tuple[str, list[int]]], input_path=None) -> bytes:
        """The witness of `inputs` as bytes (a copy of witness_view)."""
        return bytes(self.witness_view(inputs, input_path))

    def calculate(self, inputs: list[tuple[str, list[int]]], input_path=None, out=None):
        """The witness of `inputs` ([(name, flat integer values)], inputs.parse_inputs;
        each taken mod the circuit's prime, as circom_runtime does) as an
        (witness_size, 4) uint64 numpy array, plain form (a new array, or written into `out`,
        a C-contiguous array of that shape, e.g. a shared-memory segment).

        Raises a WitnessError naming `input_path` for inputs the circuit does not accept."""
        import numpy as np

        if out is None:
            out = np.empty((self.witness_size, 4), dtype="<u8")
        elif out.shape != (self.witness_size, 4) or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous ({self.witness_size}, 4) array")
        address = self._run(inputs, input_path)
        ctypes.memmove(out.ctypes.data, address, self.witness_size * N8)
        return out

    def _records(self, inputs, input_path) -> tuple[bytes, list[str]]:
        """Check the names and lengths (when the circuit can tell) and build the input table:
        rows of 11 little-endian u32 (hMSB, hLSB, index, value words); and each row's name."""
        can_check = "getInputSignalSize" in self.ex
        # Circuits of circom before getInputSignalSize: the .sym, when there is one, knows
        # the main component's signals and their sizes (not which are inputs).
        sym = None if can_check else self.circuit.sym_signals()
        total = 0
        for name, values in inputs:
            if can_check or sym is not None:
                size = self.input_signal_size(name) if can_check else sym.get(name)
                if size is None:
                    raise UnknownInput(
                        input_path,
                        f"{name!r} is not an input signal of the circuit {self.path.name}",
                    )
                if size != len(values):
                    raise WrongLength(
                        input_path,
                        f"{name} has {len(values)} value"
                        f"{'s' if len(values) != 1 else ''}, but "
                        f"the circuit's {name} has {size}",
                    )
            total += len(values)
        if can_check and total < self.input_size:
            raise MissingInput(input_path, self._missing_text(inputs, total))
        rows: list[bytes] = []
        names: list[str] = []
        head = struct.Struct("<III")
        p = self.prime  # circom_runtime's normalize: BigInt(v) mod p, negatives to p - |v|
        for name, values in inputs:
            h = fnv1a64(name)
            hi, lo = h >> 32, h & 0xFFFFFFFF
            for i, v in enumerate(values):
                rows.append(head.pack(hi, lo, i))
                rows.append((v % p).to_bytes(N8, "little"))
            names.extend([name] * len(values))
        return b"".join(rows), names

    def _missing_text(self, inputs, given: int) -> str:
        names = self.circuit.input_names() if "getInputSignalSize" in self.ex else None
        if names:
            have = {n for n, _ in inputs}
            missing = [n for n in names if n not in have]
            if missing:
                plural = "s" if len(missing) > 1 else ""
                return (
                    f"missing input signal{plural} {', '.join(missing)} (the circuit "
                    f"{self.path.name} has inputs {', '.join(names)})"
                )
        why = (
            "the circuit's .sym file, from circom --sym, next to the .wasm would name them"
            if "getInputSignalSize" in self.ex
            else "this circuit's circom, before "
            "getInputSignalSize, cannot tell which signals are inputs"
        )
        return (
            f"missing input signals: the inputs set {given} of the {self.input_size} "
            f"input values of {self.path.name} ({why})"
        )

    def _input_error(self, e: _CircuitAbort, names: list[str], input_path) -> WitnessError:
        k = int(self._done.value(self.store))
        name = names[k] if k < len(names) else "?"
        text = " ".join(e.text.split())  # one line: circom's messages end in newlines
        if e.code == 1:
            return UnknownInput(
                input_path, f"{name!r} is not an input signal of the circuit {self.path.name}"
            )
        if e.code == 2:  # all inputs were set before this value
            return WrongLength(
                input_path,
                f"too many input values: {name} is not an input or "
                f"has more values than the circuit's {name} "
                f"({text})",
            )
        if e.code == 6:
            return WrongLength(
                input_path, f"{name} has more values than the circuit's {name} ({text})"
            )
        if e.code == 4:
            detail = text[len(EXCEPTION_CODES[4]) :].strip() or (
                "(no template or line: circom gives them since 2.0.7)"
                if "getMessageChar" not in self.ex or not self._prints_errors
                else "(circom gave no message)"
            )
            return AssertFailed(input_path, "the circuit's assert failed: " + detail)
        return AssertFailed(input_path, f"the circuit failed: {text}")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def calculate_witness(wasm_path, inputs, input_path=None, sym=None):
    """One-shot: the witness of `inputs` for the circuit at wasm_path (see Circuit)."""
    return Circuit(wasm_path, sym).calculator().calculate(inputs, input_path)
