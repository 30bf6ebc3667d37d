"""Witnesses from circuit inputs: circom 2 .wasm witness calculators run on wasmtime."""

from cuzk.witness.calculator import Circuit, WitnessCalculator, calculate_witness
from cuzk.witness.errors import (
    AssertFailed,
    CircuitMismatch,
    MissingInput,
    NotACircuit,
    NotANumber,
    UnknownInput,
    WitnessError,
    WrongCircuitPrime,
    WrongLength,
)
from cuzk.witness.inputs import fnv1a64, parse_inputs, read_inputs

__all__ = [
    "AssertFailed",
    "Circuit",
    "CircuitMismatch",
    "MissingInput",
    "NotACircuit",
    "NotANumber",
    "UnknownInput",
    "WitnessCalculator",
    "WitnessError",
    "WrongCircuitPrime",
    "WrongLength",
    "calculate_witness",
    "fnv1a64",
    "parse_inputs",
    "read_inputs",
]
