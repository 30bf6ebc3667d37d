"""`python -m bench [--profile smoke|quick|full|gpu] [--suite NAME ...]`: run benchmark suites.

Each suite is a module with ``run(profile) -> dict`` that prints its own progress and tables
and returns its figures, and with its targets and plots (bench/suites.py). This runner adds
the machine, versions, commit, date and load average, writes ``bench/results/<suite>.json``
(``<suite>.<profile>.json`` for profiles other than quick) and ``latest.json`` (a run of every
suite: suites, times, targets; ``partial.json`` for a run of some), prints a summary table of
the issues' targets against the figures, and regenerates ``docs/benchmarks.md`` with its
plots.

Profiles: smoke (tiny sizes, seconds a suite: the test suite runs it), quick (`make bench`,
<= 10 minutes on 2 cores), full (every size), gpu (`make bench-gpu`: the device sizes; exits
with status 2 and a message when no CUDA GPU is present).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

from bench import machine, report
from bench.suites import SUITES, module
from bench.tables import table, targets_table

PROFILES = ("quick", "full", "gpu", "smoke")
NO_GPU_MESSAGE = (
    "make bench-gpu: no CUDA GPU is present on this machine (numba.cuda finds "
    "none), so there is nothing to measure; run `make bench` for the CPU suites"
)


def gpu_present() -> bool:
    """A real CUDA GPU (the simulator does not count: its timings mean nothing)."""
    from cuzk.arith.jit import cuda_available, cuda_simulated

    return not cuda_simulated() and cuda_available()


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def run_suite(name: str, profile: str, meta: dict) -> dict:
    """Run one suite; its entry for the results file (raises what the suite raises)."""
    device_part = SUITES[name][2]
    load_before = machine.load_average()
    t0 = time.perf_counter()
    result = module(name).run(profile)
    seconds = time.perf_counter() - t0
    if profile == "gpu" and device_part is None and isinstance(result, dict):
        result.setdefault(
            "device_part",
            "none: this suite measures CPU-side code only; "
            "the figures are its CPU ones at the quick sizes",
        )
    return {
        "meta": meta,
        "profile": profile,
        "seconds": seconds,
        "load_before": load_before,
        "load_after": machine.load_average(),
        "result": result,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--profile",
        choices=PROFILES,
        default="quick",
        help="quick: <= 10 min on 2 cores; full: every size; gpu: device sizes "
        "(needs a CUDA GPU); smoke: tiny sizes, for the test suite",
    )
    ap.add_argument(
        "--suite",
        action="append",
        choices=sorted(SUITES),
        metavar="NAME",
        help=f"run only these suites (repeatable): {', '.join(SUITES)}",
    )
    ap.add_argument("--list", action="store_true", help="list the suites and exit")
    ap.add_argument("--no-report", action="store_true", help="do not rewrite docs/benchmarks.md")
    ap.add_argument("--results", default=None, help="results folder (default bench/results)")
    args = ap.parse_args(argv)

    if args.list:
        for name, (_, what, device_part) in SUITES.items():
            print(f"{name:8s} {what}  [gpu: {device_part or 'no device part'}]")
        return 0
    if args.profile == "gpu" and not gpu_present():
        print(NO_GPU_MESSAGE, file=sys.stderr)
        return 2
    names = list(dict.fromkeys(args.suite or SUITES))
    results_dir = report.results_dir(args.results)
    meta = machine.machine_info()
    print(
        f"bench: profile {args.profile}, suites {', '.join(names)}; {meta['cpu']}, "
        f"{meta['cores']} cores, load average {meta['load_average']}, commit "
        f"{meta['commit']}",
        flush=True,
    )
    entries, summary, failed = {}, [], []
    t_all = time.perf_counter()
    for i, name in enumerate(names, 1):
        what = SUITES[name][1]
        print(
            f"\n[{i}/{len(names)}] {name}: {what} (profile {args.profile}; "
            f"{_clock(time.perf_counter() - t_all)} elapsed)",
            flush=True,
        )
        t0 = time.perf_counter()
        try:
            entry = run_suite(name, args.profile, meta)
        except Exception as exc:  # one broken suite must not hide the others' figures
            traceback.print_exc()
            failed.append(name)
            summary.append(
                {
                    "suite": name,
                    "seconds": time.perf_counter() - t0,
                    "status": f"failed: {type(exc).__name__}: {exc}"[:120],
                }
            )
            print(f"[{i}/{len(names)}] {name}: FAILED", flush=True)
            continue
        report.write_json(report.result_path(results_dir, name, args.profile), entry)
        entries[(name, args.profile)] = entry
        summary.append(
            {
                "suite": name,
                "seconds": entry["seconds"],
                "status": "ok",
                "load_before": entry["load_before"],
                "load_after": entry["load_after"],
            }
        )
        print(f"[{i}/{len(names)}] {name}: done in {entry['seconds']:.1f} s", flush=True)
    total = time.perf_counter() - t_all
    targets = [t for t in report.targets(entries) if t["suite"] in {n for n, _ in entries}]
    # latest[.<profile>].json records a run of every suite (the report reads its duration);
    # a run of some suites records itself apart, so as not to replace that record
    stem = "latest" if set(names) == set(SUITES) else "partial"
    report.write_json(
        results_dir
        / (f"{stem}.json" if args.profile == "quick" else f"{stem}.{args.profile}.json"),
        {
            "meta": meta,
            "profile": args.profile,
            "seconds": total,
            "suites": summary,
            "failed": failed,
            "targets": targets,
        },
    )
    print(
        f"\n== bench, profile {args.profile}: {len(names)} suites in {_clock(total)} "
        f"({total:.0f} s) =="
    )
    print(table(summary, ["suite", "seconds", "status", "load_before", "load_after"]))
    if targets:
        print(targets_table(targets))
    for (name, _), entry in entries.items():  # e.g. prove's side-by-side ratios, once more
        summary_of = getattr(module(name), "summary", None)
        lines = summary_of(lambda profile=None, e=entry: e["result"]) if summary_of else []
        if lines:
            print("\n".join(lines))
    if not args.no_report:
        path = report.write_markdown(results_dir)
        print(f"report: {path}")
    if failed:
        print(f"suites that failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
