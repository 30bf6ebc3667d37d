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


def select_kernels(device: str | None = None) -> str:
    """Pick this long-lived process's CPU kernels as a one-shot command does (cuzk.native: the
    native library where it is built for this machine and these sources, else Numba's JIT
    builds, compiled or loaded at first use) and name them for operators. Called once at the
    start of each `cuzk serve` process: the engine's children (``device`` a device process's
    device, None for synthesis) and the serve process itself. Each curve's library is loaded
    now, so a process on it loads and compiles nothing later and imports no numba.

    Returns "native" (every curve's kernels from the library), "numba" (none), or per curve,
    e.g. "native (bn254), numba (bls12_381)"; for a CUDA device "cuda" and its CPU kernels
    (the finalizer's G2 MSM and assembly), e.g. "cuda, CPU native": its prove_start kernels
    are Numba CUDA's either way."""
    from cuzk import native
    from cuzk.arith.curves import CURVES

    native.enable()
    have = {c: native.serves(c) for c in CURVES}
    if all(have.values()):
        cpu = "native"
    elif not any(have.values()):
        cpu = "numba"
    else:
        cpu = ", ".join(f"{'native' if ok else 'numba'} ({c})" for c, ok in have.items())
    if str(device or "").startswith("cuda"):
        return f"cuda, CPU {cpu}"
    return cpu


def verifier_backend(curve: str) -> str:
    """The backend (cuzk.groth16.verifier.BACKENDS) this process verifies ``curve``'s proofs
    with: the native library's kernels where it serves this process (no numba: a few ms a
    proof, against 15-20 ms on Python ints), else Numba's compiled one (~2 ms once loaded)."""
    from cuzk.groth16.verifier import quick_backend

    return "native" if quick_backend(curve) == "native" else "numba"


def watch_compiles(say, on_change=None):
    """Report this process's kernel compiles (cache misses) from now on: ``say(line)`` for
    the notice and progress, ``on_change(state)`` for the engine's /healthz (cuzk.compiling)."""
    from cuzk.compiling import CompileWatch, install

    return install(CompileWatch(say, on_change=on_change))


def verify(vk, public, proof) -> bool:
    """Check a Proof from prove_finish against `ProvingKey.verification_key()` (the engine's
    self-verification; cuzk.groth16.verifier does the pairing check)."""
    from cuzk.groth16.verifier import verify as verify_json

    return verify_json(vk, public, proof.to_json(), backend=verifier_backend(vk.curve.arith))


__all__ = sorted(
    [*_EXPORTS, "configure", "select_kernels", "verifier_backend", "verify", "watch_compiles"]
)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
