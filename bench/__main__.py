"""`python -m bench [--profile quick|full|gpu] [--suite NAME ...]`: run benchmark suites.

Each suite is a module with ``run(profile) -> dict`` that prints its own progress and table
and returns its figures; this runner adds the machine, versions, commit and date, writes
``bench/results/<suite>.json`` and a combined ``bench/results/latest.json``, and regenerates
``docs/benchmarks.md`` (with PNG plots when matplotlib is installed).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback

from bench import report

# name -> (module, what it measures)
SUITES = {
    "arith": ("bench.bench_arith", "field multiplication, G1 mixed addition"),
    "ntt": ("bench.bench_ntt", "NTT / iNTT by size"),
    "msm": ("bench.bench_msm", "MSM G1 and G2 by size"),
    "pairing": ("bench.bench_pairing", "pairing and proof verification"),
    "prove": ("bench.bench_prove", "cuzk prove vs snarkjs groth16 prove, same files"),
    "engine": ("bench.bench_engine", "jobs through the engine: throughput, busy, gaps"),
    "board": ("bench.bench_board", "status board write and snapshot costs"),
    "top": ("bench.bench_top", "cuzk top CPU use"),
}
PROFILES = ("quick", "full", "gpu", "smoke")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", choices=PROFILES, default="quick",
                    help="quick: <= 10 min on 2 cores; full: every size; gpu: device sizes "
                         "(needs a CUDA GPU); smoke: tiny sizes, for the test suite")
    ap.add_argument("--suite", action="append", choices=sorted(SUITES), metavar="NAME",
                    help=f"run only these suites (repeatable): {', '.join(SUITES)}")
    ap.add_argument("--list", action="store_true", help="list the suites and exit")
    ap.add_argument("--no-report", action="store_true",
                    help="do not rewrite docs/benchmarks.md")
    ap.add_argument("--results", default=None, help="results folder (default bench/results)")
    args = ap.parse_args(argv)

    if args.list:
        for name, (_, what) in SUITES.items():
            print(f"{name:8s} {what}")
        return 0
    if args.profile == "gpu":
        from cuzk.jit import cuda_available, cuda_simulated

        if cuda_simulated() or not cuda_available():
            print("make bench-gpu: no CUDA GPU is present on this machine; "
                  "nothing to measure (run `make bench` for the CPU suites)", file=sys.stderr)
            return 2
    names = args.suite or list(SUITES)
    results_dir = report.results_dir(args.results)
    meta = report.machine_info()
    combined = {"meta": meta, "profile": args.profile, "suites": {}}
    failed = []
    t_all = time.perf_counter()
    for i, name in enumerate(names, 1):
        module_name, what = SUITES[name]
        print(f"\n[{i}/{len(names)}] {name}: {what} (profile {args.profile})", flush=True)
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(module_name)
            result = module.run(args.profile)
        except Exception:  # one broken suite must not hide the others' figures
            traceback.print_exc()
            failed.append(name)
            continue
        seconds = time.perf_counter() - t0
        entry = {"meta": meta, "profile": args.profile, "seconds": seconds, "result": result}
        report.write_json(results_dir / f"{name}.json", entry)
        combined["suites"][name] = entry
        print(f"[{i}/{len(names)}] {name}: done in {seconds:.1f} s", flush=True)
    combined["seconds"] = time.perf_counter() - t_all
    report.write_json(results_dir / "latest.json", combined)
    if not args.no_report:
        path = report.write_markdown(results_dir)
        print(f"\nreport: {path}")
    if failed:
        print(f"suites that failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
