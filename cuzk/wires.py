"""What a prover's synthesis stage hands its device stage when the buffers it fills are three
wire vectors a, b, c (cuzk.engine.contract's ``synthesize``): Groth16's A·w, B·w, C·w on the
domain and PLONK's gate wires on H are both that shape. Neutral, so neither proof system
imports the other's stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Synthesis:
    """synthesize's output: the wires a, b, c ((domain, limbs) Montgomery arrays, the key's
    buffers), the public signals as ints, and the stage's timings (ms by phase)."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    public: list
    timings: dict = field(default_factory=dict)

    @property
    def buffers(self) -> dict:
        """a, b, c by name, as prove_start takes them."""
        return {"a": self.a, "b": self.b, "c": self.c}
