"""The snarkjs-compatible Groth16 prover, cut into synthesize → prove_start → prove_finish, and
its verifier (cuzk.groth16.verifier, `cuzk verify`)."""

# OPENBLAS_NUM_THREADS=1 is set in cuzk/__init__.py, before any numpy import.

from cuzk.lazy import lazy_exports

# public name -> the module of this package that defines it (imported on first use)
_EXPORTS = {
    "CpuDevice": "device",
    "CudaDevice": "device",
    "open_device": "device",
    "ProvingKey": "key",
    "load_witness": "key",
    "Partial": "stages",
    "Proof": "stages",
    "Synthesis": "stages",
    "prove": "stages",
    "prove_finish": "stages",
    "prove_start": "stages",
    "synthesize": "stages",
    "first_unsatisfied": "synthesis",
}


def configure(options: dict) -> None:
    """The engine's `prover_options` (cuzk.engine.contract): ``msm_tables``, the groups of
    multiples per point set of a resident key (cuzk.groth16.tables; 0: none)."""
    from cuzk.groth16 import tables

    tables.configure(options or {})


def watch_compiles(say, on_change=None):
    """Report this process's kernel compiles (cache misses) from now on: ``say(line)`` for
    the notice and progress, ``on_change(state)`` for the engine's /healthz (cuzk.compiling)."""
    from cuzk.compiling import CompileWatch, install

    return install(CompileWatch(say, on_change=on_change))


def verify(vk, public, proof) -> bool:
    """Check a Proof from prove_finish against `ProvingKey.verification_key()` (the engine's
    self-verification; cuzk.groth16.verifier does the pairing check)."""
    from cuzk.groth16.verifier import verify as verify_json

    return verify_json(vk, public, proof.to_json())


__all__ = sorted([*_EXPORTS, "configure", "verify", "watch_compiles"])
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
