"""The Groth16 prover in three stages, over plain arrays, cut where the engine cuts it.

    synthesize(key, w)                   CPU process: a, b, c on the domain, public signals
    prove_start(key, buffers, w, dev)    device: H = coset NTT pipeline; G1 MSMs A, B1, C, H
    prove_finish(key, partial, w)        finalizer thread: B in G2 (CPU MSM), blinding, proof

The key's curve (key.arith_curve: "bn254" or "bls12_381") picks the builds of the kernels
each stage runs (cuzk.arith.curves); the stages are the same for every curve.
Every stage takes and returns numpy arrays (or small dataclasses of them), so the engine can
keep a, b, c and the witness in shared memory between processes: a, b, c go between the
stages as {"a": .., "b": .., "c": ..}, the buffers the key declares (ProvingKey.buffers(),
cuzk.engine.contract). ``prove`` runs the three.
Phases are timed and logged at debug level under the ``cuzk.groth16`` logger (in a process
that has imported logging: one that has not has configured no handler for it either, and a
one-shot `cuzk prove` without --timings leaves logging's import out, ~3 ms).
"""

from __future__ import annotations

import secrets
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from cuzk.arith import curves
from cuzk.groth16.synthesis import evaluate_abc, evaluate_abc_pieces
from cuzk.wires import Synthesis


def _debug(message: str, *args) -> None:
    """logging.getLogger("cuzk.groth16").debug(message, *args) where logging is imported."""
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.getLogger("cuzk.groth16").debug(message, *args)


@contextmanager
def phase(name: str, timings: dict):
    t0 = time.perf_counter()
    try:
        yield
    finally:
        ms = (time.perf_counter() - t0) * 1e3
        timings[name] = timings.get(name, 0.0) + ms
        _debug("%s: %.2f ms", name, ms)


@dataclass
class Partial:
    """Output of prove_start: the four G1 MSM results (affine (8,) limb arrays)."""

    a: np.ndarray
    b1: np.ndarray
    c: np.ndarray
    h: np.ndarray
    timings: dict = field(default_factory=dict)


@dataclass
class Proof:
    """A Groth16 proof: affine limb arrays πA (2 NQ,), πB (4 NQ,), πC (2 NQ,) (NQ = 4 limbs
    per Fq element on BN254, 6 on BLS12-381), the public signals, and the curve (snarkjs's
    name, "bn128" or "bls12381")."""

    pi_a: np.ndarray
    pi_b: np.ndarray
    pi_c: np.ndarray
    public: list
    timings: dict = field(default_factory=dict)
    curve: str = "bn128"

    def points(self):
        """(πA, πB, πC) as affine Python-int points (None for infinity)."""
        from cuzk.formats.stored import g1_from_limbs, g2_from_limbs

        c = self.curve
        return g1_from_limbs(self.pi_a, c), g2_from_limbs(self.pi_b, c), g1_from_limbs(self.pi_c, c)

    def to_json(self) -> dict:
        """proof.json as snarkjs writes it."""
        from cuzk.formats.snarkjs_json import proof_to_json

        return proof_to_json(*self.points(), curve=self.curve)

    def public_json(self) -> list:
        """public.json: the public signals as decimal strings."""
        return [str(int(v)) for v in self.public]


def public_signals(key, w) -> list:
    from cuzk.arith.radix import limbs_to_ints

    return limbs_to_ints(w[1 : key.n_public + 1])


def arith_curve(key) -> str:
    """The kernels' name of the key's curve (cuzk.arith.curves): "bn254" or "bls12_381"."""
    return getattr(key, "arith_curve", curves.DEFAULT)


def done_with(key, *sections: str) -> None:
    """Tell a key that a step has read these sections (a one-shot process's key drops their
    pages, see ProvingKey.done_with); keys of other provers may lack the method."""
    release = getattr(key, "done_with", None)
    if release is not None:
        release(*sections)


def synthesize(key, w, out=None) -> Synthesis:
    """a = A·w, b = B·w, c = a∘b on the domain (Montgomery form), and w[1..nPublic]; into
    ``out`` ({"a", "b", "c"}: (domain_size, 4) uint64 arrays) when given."""
    timings: dict = {}
    from cuzk.groth16.device import readonly

    with phase("synthesize", timings):
        # read-only: one compiled build for mapped and shared-memory witnesses alike
        if out is not None:
            out = (out["a"], out["b"], out["c"])
        pieces = getattr(key, "coefficient_pieces", None)  # (keys of other provers: whole)
        if pieces is None:
            a, b, c = evaluate_abc(
                key.zkey.coefficients, readonly(w), key.domain_size, out=out, curve=arith_curve(key)
            )
        else:
            a, b, c = evaluate_abc_pieces(
                pieces(), readonly(w), key.domain_size, out=out, curve=arith_curve(key)
            )
    done_with(key, "coefficients")
    return Synthesis(a, b, c, public_signals(key, w), timings)


def prove_start(key, buffers, w, device) -> Partial:
    """The device stage: h from buffers a, b, c (they may be overwritten), then the G1 MSMs."""
    timings: dict = {}
    abc = [buffers["a"], buffers["b"], buffers["c"]]
    return g1_msms(key, compute_h(abc, device, timings, arith_curve(key)), w, device, timings)


def compute_h(abc: list, device, timings: dict, curve: str = curves.DEFAULT):
    """h from [a, b, c] (taken out of the list: when the caller holds no other reference,
    b and c are freed once h is computed, h reusing a's storage on the CPU; where they are a
    partition's shared buffers, their pages are handed back then: cuzk.pages)."""
    from cuzk.pages import release

    a, b, c = abc
    abc.clear()
    with phase("compute H (NTT pipeline)", timings):
        h = device.compute_h(a, b, c, curve=curve)
    if not (_shares(h, b) or _shares(h, c)):
        release(b)
        release(c)
    return h


def _shares(x, y) -> bool:
    """Whether host arrays x and y may share memory (a GPU's array is never a host buffer,
    and is not converted to ask)."""
    if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
        return False
    return bool(np.may_share_memory(x, y))


def g1_msms(key, h, w, device, timings: dict) -> Partial:
    """The G1 MSMs of prove_start: A, B1, C over the witness, H over h."""
    with phase("MSM A", timings):
        msm_a = device.msm_g1(key, "a", w)
    done_with(key, "points_a")
    with phase("MSM B1", timings):
        msm_b1 = device.msm_g1(key, "b1", w)
    done_with(key, "points_b1")
    with phase("MSM C", timings):
        msm_c = device.msm_g1(key, "c", w[key.n_public + 1 :])
    done_with(key, "points_c")
    with phase("MSM H", timings):
        msm_h = device.msm_g1(key, "h", h)
    done_with(key, "points_h")
    return Partial(msm_a, msm_b1, msm_c, msm_h, timings)


def random_scalar(curve: str = curves.DEFAULT) -> int:
    """A uniformly random nonzero element of the curve's Fr from the OS's cryptographic
    source."""
    r = curves.constants(curve).FR_MODULUS
    while True:
        k = secrets.randbelow(r)
        if k:
            return k


def prove_finish(key, partial: Partial, w, r: int | None = None, s: int | None = None) -> Proof:
    """The finalizer stage: B in G2 on the CPU, then blinding with fresh r, s."""
    from cuzk.groth16.assemble import assemble
    from cuzk.groth16.device import readonly
    from cuzk.groth16.tables import points_for
    from cuzk.kernels import msm_cpu

    timings = dict(partial.timings)
    curve = arith_curve(key)
    with phase("MSM B2 (G2)", timings):
        points = points_for(key, "b2", key.zkey.points_b2)  # its table where it has one
        b2 = msm_cpu.msm_g2(points, readonly(w), curve=curve)
    done_with(key, "points_b2")
    r = random_scalar(curve) if r is None else r
    s = random_scalar(curve) if s is None else s
    with phase("assemble", timings):
        pi_a, pi_b, pi_c = assemble(
            key.zkey, partial.a, partial.b1, partial.c, partial.h, b2, r, s, curve=curve
        )
    return Proof(pi_a, pi_b, pi_c, public_signals(key, w), timings, key.zkey.curve_info.name)


def prove(key, w, device=None) -> Proof:
    """Synthesize, prove_start and prove_finish in one call (device: "cpu" by default)."""
    from cuzk.groth16.device import open_device

    if device is None or isinstance(device, str):
        device = open_device(device or "cpu")
    syn = synthesize(key, w)
    abc = [syn.a, syn.b, syn.c]
    syn.a = syn.b = syn.c = None  # so compute_h holds the only references
    h = compute_h(abc, device, syn.timings, arith_curve(key))
    partial = g1_msms(key, h, w, device, syn.timings)
    del h  # not needed by the G2 MSM
    return prove_finish(key, partial, w)
