"""PLONK (snarkjs's, protocol 2): the transcript, the verifier, the one-shot prover, and the
engine's prover contract (cuzk.engine.contract) for PLONK keys: `EngineConfig.prover =
"cuzk.plonk"` serves PLONK keys alone; the daemon's default, cuzk.prover, serves Groth16 and
PLONK keys side by side through this module and cuzk.groth16."""

from cuzk.lazy import lazy_exports

# public name -> the module of this package that defines it (imported on first use)
_EXPORTS = {
    "ProvingKey": "key",
    "load_witness": "key",
    "CudaDevice": "stages",
    "Device": "stages",
    "Partial": "stages",
    "Proof": "stages",
    "ProveError": "stages",
    "Synthesis": "stages",
    "open_device": "stages",
    "prove_finish": "stages",
    "prove_start": "stages",
    "synthesize": "stages",
    "verify": "stages",
}


def configure(options: dict) -> None:
    """The engine's `prover_options` (cuzk.engine.contract): `device_processes`, how many
    device processes may each hold a key (each keeps its own copy of the key's extended
    values: cuzk.plonk.key.ProvingKey.nbytes counts them all; 1 when absent) and
    `msm_tables` (with `msm_table_copies`, `msm_table_cap`): a table of multiples of a
    resident key's powers of tau for its commitments (cuzk.plonk.tables; 0: none)."""
    from cuzk.plonk import key

    key.configure(options)


def watch_compiles(say, on_change=None):
    """Report this process's kernel compiles (cache misses) from now on (cuzk.compiling)."""
    from cuzk.compiling import CompileWatch, install

    return install(CompileWatch(say, on_change=on_change))


__all__ = sorted([*_EXPORTS, "configure", "watch_compiles"])
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
