"""The benchmark suites by name, and what a suite module provides.

A suite is a module bench/bench_<name>.py that owns everything about what it measures:

    run(profile) -> dict        measure (prints its own progress and tables); the result
    targets(get) -> [row]       the issues' targets against its figures, as tables.target rows;
                                get(profile="quick") is its result for a profile, or None
    plot(name, entry, res, img) -> [(label, docs-relative png)]   its figures (optional)
    summary(get) -> [str]       Markdown for the report's summary, after the targets (optional)

The module docstring is the suite's description in docs/benchmarks.md. The runner
(bench/__main__.py) adds machine facts and writes the results; bench/report.py only
assembles what the suites return.
"""

from __future__ import annotations

import importlib

# name -> (module, what it measures, its device part or None when it has none)
SUITES = {
    "arith": (
        "bench.bench_arith",
        "field multiplication, G1 mixed addition",
        "multiplication chains per CUDA thread, batch Fr multiplication",
    ),
    "ntt": ("bench.bench_ntt", "NTT / iNTT by size", "CUDA NTT 2^16..2^22"),
    "msm": ("bench.bench_msm", "MSM G1 and G2 by size", "CUDA MSM on resident points"),
    "pairing": ("bench.bench_pairing", "pairing and proof verification", None),
    "prove": (
        "bench.bench_prove",
        "cuzk prove vs rapidsnark and snarkjs, same files",
        "cuzk prove --device cuda",
    ),
    "prove-bls12381": (
        "bench.bench_prove_bls12381",
        "cuzk prove vs snarkjs on BLS12-381 (circom --prime bls12381), same files",
        "cuzk prove --device cuda",
    ),
    "prove-plonk": (
        "bench.bench_prove_plonk",
        "cuzk prove vs snarkjs plonk prove on PLONK keys, same files",
        None,
    ),
    "prove-server": (
        "bench.bench_prove_server",
        "cuzk prove --server (a warm cuzk serve) vs rapidsnark, same files",
        "the daemon on every GPU",
    ),
    "scale": (
        "bench.bench_scale",
        "a 2^21 and a 2^22 proof: cuzk prove, the daemon, rapidsnark; time and peak memory",
        None,
    ),
    "startup": (
        "bench.bench_startup",
        "cuzk prove's fixed cost, the thin client, daemon restart, a cold kernel cache",
        None,
    ),
    "engine": (
        "bench.bench_engine",
        "jobs through the engine: throughput, busy, gaps",
        "real prover on the CUDA devices",
    ),
    "witness": (
        "bench.bench_witness",
        "cuzk wtns calculate vs snarkjs wtns calculate, "
        "in-process witness time, host overhead per value",
        None,
    ),
    "cluster": (
        "bench.bench_cluster",
        "the farm on Ray: throughput by nodes, dispatch overhead, a node's death",
        None,
    ),
    "soak": (
        "bench.bench_soak",
        "cuzk serve for a set time under mixed work, kills and bad clients: nothing lost, "
        "nothing leaked",
        None,
    ),
    "board": ("bench.bench_board", "status board write and snapshot costs", None),
    "top": ("bench.bench_top", "cuzk top CPU use", None),
}


def module(name: str):
    """The suite's module (imported on first use: some import Numba and the kernels)."""
    return importlib.import_module(SUITES[name][0])
