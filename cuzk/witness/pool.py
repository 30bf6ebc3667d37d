"""Witness calculators kept warm in a long-lived process (a synthesis worker of the daemon).

A `WitnessPool` holds, per circuit .wasm, the compiled Circuit and one ready calculator, and
writes each witness straight into the caller's (n, 4) uint64 array — a partition's
shared-memory `w` segment — so a worker pays compilation (or the disk cache's load) and
instantiation once per circuit, not once per partition. A calculator whose circuit failed is
dropped and the next call gets a fresh instance; a .wasm that changes on disk (size or
modification time) is loaded again. Not thread-safe: one pool per worker thread.
"""

from __future__ import annotations

import os

from cuzk.witness.calculator import Circuit
from cuzk.witness.inputs import loads_inputs, parse_inputs


class WitnessPool:
    def __init__(self):
        # path -> ((size, mtime_ns), Circuit, calculator or None)
        self._entries: dict[str, tuple[tuple[int, int], Circuit, object]] = {}

    def circuit(self, wasm_path, sym=None) -> Circuit:
        """The Circuit of wasm_path (loaded again when the file changed)."""
        path = os.fspath(wasm_path)
        st = os.stat(path)
        stamp = (st.st_size, st.st_mtime_ns)
        entry = self._entries.get(path)
        if entry is None or entry[0] != stamp:
            circuit = Circuit(path, sym)
            entry = (stamp, circuit, None)
            self._entries[path] = entry
        return entry[1]

    def calculate_into(self, wasm_path, inputs, out, name: str = "inputs") -> dict:
        """Compute the witness of `inputs` (a JSON object, its text or bytes, or parsed
        [(signal, values)]) into `out`; returns {"run_s", "gather_s"}. Raises WitnessError
        (messages name `name`, e.g. "job 12 partition 3 inputs") for inputs the circuit
        does not accept, and ValueError for an `out` of the wrong shape."""
        circuit = self.circuit(wasm_path)
        path = os.fspath(wasm_path)
        stamp, _, calc = self._entries[path]
        if isinstance(inputs, (bytes, bytearray, str)):
            inputs = loads_inputs(inputs, name)
        if isinstance(inputs, dict):
            inputs = parse_inputs(inputs, name)
        if calc is None or calc.broken:
            calc = circuit.calculator()
            self._entries[path] = (stamp, circuit, calc)
        calc.calculate(inputs, name, out=out)
        return dict(calc.timings)

    def memory_bytes(self, wasm_path) -> int:
        """What one calculator of this circuit holds (Circuit.instance_bytes), for a budget."""
        return self.circuit(wasm_path).instance_bytes

    def forget(self, wasm_path) -> None:
        """Drop a circuit (its key was evicted)."""
        self._entries.pop(os.fspath(wasm_path), None)
