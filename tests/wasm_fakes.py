"""Synthetic wasm modules for the witness calculator's tests: circom 2's interface without a
circuit, so a test can choose what a real circom build never gives (another prime, another
major version, a trap or an unknown exception inside the circuit)."""

from __future__ import annotations

from cuzk.formats import BN254_R


def fake_circom(prime: int = BN254_R, version: int = 2, set_input: str = "") -> bytes:
    """A module with circom 2's interface whose getRawPrime leaves `prime` in its memory;
    `set_input` is the WAT body of its setInputSignal (e.g. "unreachable")."""
    import wasmtime

    words = "".join(f"\\{b:02x}" for b in prime.to_bytes(32, "little"))
    return wasmtime.wat2wasm(f"""(module
      (import "runtime" "exceptionHandler" (func $exc (param i32)))
      (memory (export "memory") 1)
      (data (i32.const 0) "{words}")
      (func (export "getVersion") (result i32) i32.const {version})
      (func (export "getFieldNumLen32") (result i32) i32.const 8)
      (func (export "getRawPrime"))
      (func (export "readSharedRWMemory") (param i32) (result i32)
        (i32.load (i32.mul (local.get 0) (i32.const 4))))
      (func (export "writeSharedRWMemory") (param i32 i32))
      (func (export "init") (param i32))
      (func (export "getInputSignalSize") (param i32 i32) (result i32) i32.const 1)
      (func (export "setInputSignal") (param i32 i32 i32) {set_input})
      (func (export "getWitnessSize") (result i32) i32.const 2)
      (func (export "getInputSize") (result i32) i32.const 1)
      (func (export "getWitness") (param i32)))""")
