"""The snarkjs-compatible Groth16 prover, cut into synthesize → prove_start → prove_finish."""

# OPENBLAS_NUM_THREADS=1 is set in cuzk/__init__.py, before any numpy import.

# public name -> the module of this package that defines it (imported on first use)
_EXPORTS = {
    "CpuDevice": "device", "CudaDevice": "device", "open_device": "device",
    "ProvingKey": "key", "load_witness": "key",
    "Partial": "stages", "Proof": "stages", "Synthesis": "stages", "prove": "stages",
    "prove_finish": "stages", "prove_start": "stages", "synthesize": "stages",
    "first_unsatisfied": "synthesis",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cuzk.prover' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"cuzk.prover.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
