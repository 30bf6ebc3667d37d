"""The errors of witness calculation: one class per reason, each a one-line message.

They subclass FormatError, so the message starts with the file at fault (the input JSON or
the circuit's .wasm) and every caller that already reports bad files reports these too.
"""

from __future__ import annotations

from cuzk.formats.errors import FormatError


class WitnessError(FormatError):
    """Inputs or a circuit from which no witness can be calculated."""


class MissingInput(WitnessError):
    """An input signal of the circuit that the input JSON does not set."""


class UnknownInput(WitnessError):
    """A name in the input JSON that is not an input signal of the circuit."""


class WrongLength(WitnessError):
    """An input array with more or fewer values than the signal has elements."""


class NotANumber(WitnessError):
    """An input value that is not an integer (snarkjs's BigInt rules), or not an object."""


class AssertFailed(WitnessError):
    """The circuit's own code failed while computing the witness (an `assert`, a division by
    zero, ...); the message carries circom's text (template and line)."""


class NotACircuit(WitnessError):
    """A .wasm that is not a circom 2 witness calculator (other imports or exports, circom 1)."""


class WrongCircuitPrime(WitnessError):
    """A circom witness calculator compiled for a prime that is not the scalar field r of a
    curve cuzk knows (BN254, BLS12-381)."""


class CircuitMismatch(WitnessError):
    """A circuit's .wasm and a proving key that do not belong to the same circuit."""


def check_same_circuit(circuit, zkey, key_name=None) -> None:
    """Raise CircuitMismatch unless the wasm's circuit and the key agree (prime, wires).
    `zkey`: a ZKey or an engine's ProvingKey (path, n_vars, and r, its prime, where it has
    one: a prover double has none); `key_name` names it in the message (default: its path)."""
    name = zkey.path if key_name is None else key_name
    r = getattr(zkey, "r", None)
    if r is not None and circuit.prime != r:
        raise CircuitMismatch(
            circuit.path,
            f"computes over the prime {circuit.prime:#x} but "
            f"{name} is for {r:#x}: not the same "
            "circuit",
        )
    if circuit.witness_size != zkey.n_vars:
        raise CircuitMismatch(
            circuit.path,
            f"has {circuit.witness_size} wires but "
            f"{name} has nVars = {zkey.n_vars}: not the "
            "same circuit",
        )
