"""The snarkjs-compatible Groth16 prover, cut into synthesize → prove_start → prove_finish."""

from cuzk.prover.device import CpuDevice, CudaDevice, open_device
from cuzk.prover.key import ProvingKey, load_witness
from cuzk.prover.stages import (
    Partial,
    Proof,
    Synthesis,
    prove,
    prove_finish,
    prove_start,
    synthesize,
)
from cuzk.prover.synthesis import first_unsatisfied

__all__ = [
    "CpuDevice", "CudaDevice", "Partial", "Proof", "ProvingKey", "Synthesis",
    "first_unsatisfied", "load_witness", "open_device", "prove", "prove_finish",
    "prove_start", "synthesize",
]
