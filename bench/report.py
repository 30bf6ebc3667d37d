"""docs/benchmarks.md from the results: machine facts and what each suite returns, assembled.

Results live in ``bench/results/<suite>.json`` (profile quick, the committed figures) and
``bench/results/<suite>.<profile>.json`` for the other profiles, each ``{"meta", "profile",
"seconds", "result"}``. ``write_markdown`` turns every file there into ``docs/benchmarks.md``:
a summary of each target the issues set against what was measured (each suite's
``targets``), then one section per suite with its description (its module docstring), its
figures and tables, and its plots (its ``plot``; ``docs/img/bench-*.png``, when matplotlib
is installed), each captioned with the machine, date, load and commit it was measured at.
What a suite means lives in its own module (bench/suites.py says what one provides).
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.plots import caption, load_of
from bench.suites import SUITES, module
from bench.tables import fmt, table, target, targets_table

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
IMG = DOCS / "img"

# The order suites appear in the report.
SUITE_ORDER = (
    "arith",
    "ntt",
    "msm",
    "pairing",
    "prove",
    "prove-bls12381",
    "prove-server",
    "scale",
    "engine",
    "soak",
    "cluster",
    "board",
    "top",
)
PROFILE_ORDER = ("quick", "full", "gpu", "smoke")


# --- result files ------------------------------------------------------------------------------


def results_dir(path=None) -> Path:
    d = Path(path) if path else ROOT / "bench" / "results"
    d.mkdir(parents=True, exist_ok=True)
    return d


def result_path(results: Path, suite: str, profile: str) -> Path:
    """quick results are the plain ``<suite>.json``; other profiles ``<suite>.<profile>.json``."""
    return results / (f"{suite}.json" if profile == "quick" else f"{suite}.{profile}.json")


def write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    tmp.replace(path)


def load_results(results: Path) -> dict:
    """{(suite, profile): entry} for every readable result file (smoke runs left out)."""
    found = {}
    for path in sorted(results.glob("*.json")):
        suite, _, profile = path.stem.partition(".")
        if suite in ("latest", "partial") or profile == "smoke":
            continue
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(entry, dict) and "result" in entry:
            found[(suite, entry.get("profile") or profile or "quick")] = entry
    return found


# --- what the results hold: generic figures and tables ------------------------------------------


def _rows_of(result) -> list[tuple[str, list[dict]]]:
    """The tables in a suite's result: lists of dicts found at any depth, with their path."""
    found = []

    def walk(x, path):
        if isinstance(x, list) and x and all(isinstance(r, dict) for r in x):
            found.append((path or "results", x))
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{path}.{k}" if path else k)

    walk(result, "")
    return found


def _scalars_of(result, prefix="") -> list[tuple[str, object]]:
    """Top-level scalars, and those of nested dicts that hold only scalars (e.g. summary)."""
    if not isinstance(result, dict):
        return []
    out = []
    for k, v in result.items():
        if isinstance(v, (int, float, str, bool)) or v is None:
            out.append((prefix + k, v))
        elif (
            isinstance(v, dict)
            and v
            and all(isinstance(x, (int, float, str, bool)) or x is None for x in v.values())
        ):
            out += _scalars_of(v, f"{prefix}{k}.")
    return out


# --- targets: each suite's, plus the harness's own --------------------------------------------


def _getter(results: dict, suite: str):
    """get(profile="quick") -> the suite's result for that profile; for a CPU profile missing,
    the CPU figures of another profile's run."""

    def get(profile="quick"):
        e = results.get((suite, profile))
        if e is None and profile != "gpu":
            e = next(
                (results[(s, p)] for s, p in sorted(results) if s == suite and p != "gpu"), None
            )
        return e["result"] if e and isinstance(e.get("result"), dict) else None

    return get


def _suite_order(suite: str):
    return (SUITE_ORDER.index(suite) if suite in SUITE_ORDER else 99, suite)


def targets(results: dict) -> list[dict]:
    """Every suite's targets (see bench/suites.py) with what the results hold for them.

    results: {(suite, profile): entry}. Times are medians of several runs; "best" is the
    fastest run (the least disturbed by other processes on a shared machine).
    """
    out = []
    for suite in sorted(SUITES, key=_suite_order):
        fn = getattr(module(suite), "targets", None)
        if fn is not None:
            out += fn(_getter(results, suite))
    return out


def run_target(latest: dict | None) -> dict:
    """Issue #9's own target: the quick profile of every suite in <= 10 minutes on 2 cores."""
    ok = (latest or {}).get("profile") == "quick" and not latest.get("failed")
    minutes = latest["seconds"] / 60 if ok and latest.get("seconds") else None
    loads = [
        s.get("load_before")
        for s in (latest or {}).get("suites", [])
        if s.get("load_before") is not None
    ]
    note = (
        f"{len(latest['suites'])} suites, load {fmt(min(loads))}-{fmt(max(loads))}; "
        "a fresh clone also compiles the kernels (5.5 min in all with an empty Numba "
        "cache at load 3-4.5, 2026-11-29) and makes the circuits (about 40 s for the "
        "synthetic ones, about 6 min more for circomlib's at 2^15 and 2^17: circom2 and "
        "cuzk setup at load 4-10, 2026-12-02)"
        if minutes and loads
        else ""
    )
    return target(
        "`make bench`: every suite, quick profile",
        "#9",
        10.0,
        "min",
        minutes,
        note=note,
        suite="all",
    )


# --- plots -----------------------------------------------------------------------------------


def plots(suite: str, profile: str, entry, img: Path = IMG) -> list[tuple[str, str | None]]:
    """[(label, docs-relative png path)] for one result, from the suite's plot(); [] without
    matplotlib."""
    fn = getattr(module(suite), "plot", None) if suite in SUITES else None
    res = entry.get("result")
    if fn is None or not isinstance(res, dict):
        return []
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return []
    name = suite if profile == "quick" else f"{suite}-{profile}"
    try:
        return fn(name, entry, res, img)
    except Exception as exc:  # a plot must never lose the report; say what failed
        return [(f"plot failed: {type(exc).__name__}: {exc}", None)]


# --- the report ------------------------------------------------------------------------------


HEADER = """\
# Benchmarks

Generated by `make bench` (`python -m bench`; the text of this page lives in
`bench/report.py` and each suite's `bench/bench_*.py`, the figures in
`bench/results/*.json`). Do not edit by hand: rerun
`make bench` (quick profile, ≤ 10 minutes on 2 cores), `make bench-full` (every size) or
`make bench-gpu` (device sizes, on a machine with a CUDA GPU); each run rewrites this page
from every result file present.

## How to read these figures

- **The machine.** Unless a section says otherwise, every figure here was measured on a
  shared 2-core virtual machine with no GPU, while other people's builds and test suites ran
  on it. Every section and plot names its machine, date, commit and the 1-minute load
  average at its start; with a load above 2, a suite got only part of the two cores, and its
  wall-clock times are inflated by that much (the kernel suites also report how many cores
  they kept busy, and CPU-time figures, which the load inflates less).
- **Ratios, not absolutes.** Peers are run side by side in the same run on the same files
  (`cuzk prove` and `snarkjs groth16 prove` alternate), so their ratio carries over to other
  machines and loads; absolute times do not.
- **rapidsnark** (iden3's C++/assembly prover) is not in the package registries: it is built
  from its public source into bench/peers/rapidsnark (README.md, "rapidsnark as a peer") or
  named by `RAPIDSNARK=path`, and then run side by side with `cuzk prove` and snarkjs on the
  same files. Without it the prove suite has no rapidsnark columns.
- **Circuits** (bench/circuits.py, made on first use and cached in bench/work): synthetic
  ones with dense witnesses (squaring chain, toyhash) and circomlib's, the circuits people
  prove (issue #25): SHA-256 of a multi-block message, Poseidon Merkle paths of depth 20,
  EdDSA-Poseidon signature checks (signatures by circomlibjs), 64-bit range checks; and
  two shaped after applications (issue #35, prove suite only): Semaphore-shaped membership
  proofs (a BabyJubjub public key from the identity's secret, its Poseidon commitment in a
  binary Merkle tree of depth 20, a nullifier; 15.9k constraints each, so 2^14 is the
  smallest and 2^13 is listed as skipped) and chains of 2048-bit modular products in 32
  limbs of 64 bits, as RSA signature checks do (6.7k constraints each). Each is sized to
  fill its domain. `size` says how many blocks, paths, signatures, values, proofs or
  products; `witness_pct_0/1/small/dense` is the witness profile, the % of values that are
  0, 1, other values below 2^64, and the rest. Suite scale's rows (full profile): many
  8-block SHA-256 digests in one circuit, composed from one compiled by circom2, which
  cannot compile one SHA-256 of 2^21 constraints.
- **GPU targets** are measured only by `make bench-gpu` on a machine with a CUDA GPU; they
  read "not measured" until such a run's results are committed.
- "met by the best run only": the median misses the target, the fastest run meets it (on a
  loaded machine the fastest run is the least disturbed one).
"""


def summary_section(results: dict, latest: dict | None = None) -> list[str]:
    rows = targets(results) + [run_target(latest)]
    measured = [r for r in rows if r["status"] != "not measured"]
    met = [r for r in measured if r["status"] == "met"]
    best_only = [r for r in measured if r["status"] == "met by the best run only"]
    missed = [r for r in measured if r["status"] == "not met"]
    out = [
        "## Targets from the issues against what was measured",
        "",
        f"{len(measured)} of {len(rows)} targets measured: {len(met)} met, "
        f"{len(best_only)} met by the best run only, {len(missed)} not met"
        + (f" ({'; '.join(r['target'] for r in missed)})" if missed else "")
        + ". "
        "`vs_goal` is measured ÷ goal (below 1 is better for a ceiling, above 1 for a "
        "floor).",
        "",
    ]
    loads = {s: load_of(e) for (s, p), e in results.items() if p == "quick"}
    loads = {s: v for s, v in loads.items() if v is not None}
    out += [targets_table(rows)]
    if loads:
        out += [
            "Load average (1 minute) at the start of each quick suite: "
            + ", ".join(f"{s} {fmt(v)}" for s, v in loads.items())
            + " (2 cores: above 2, "
            "a suite had less than the whole machine).",
            "",
        ]
    for suite in sorted(SUITES, key=_suite_order):  # what a suite adds (prove: side by side)
        fn = getattr(module(suite), "summary", None)
        if fn is not None:
            out += fn(_getter(results, suite))
    return out


def suite_description(suite: str) -> str:
    """The suite module's docstring (what it measures and how), read without importing it."""
    import ast

    try:
        doc = ast.get_docstring(ast.parse((ROOT / "bench" / f"bench_{suite}.py").read_text()))
    except (OSError, SyntaxError):
        return ""
    lines = [ln for ln in (doc or "").splitlines() if not ln.startswith("Run alone")]
    return "\n".join(lines).strip()


def write_markdown(results: Path, docs: Path | None = None) -> Path:
    """Regenerate docs/benchmarks.md (and docs/img/bench-*.png) from every result present."""
    docs = Path(docs) if docs is not None else DOCS
    img_dir = docs / "img"
    found = load_results(results)
    try:
        latest = json.loads((results / "latest.json").read_text())
    except (OSError, ValueError):
        latest = None
    out = [HEADER] + summary_section(found, latest)
    suites = sorted({s for s, _ in found}, key=_suite_order)
    written = set()
    for suite in suites:
        for profile in sorted(
            {p for s, p in found if s == suite},
            key=lambda p: PROFILE_ORDER.index(p) if p in PROFILE_ORDER else 9,
        ):
            entry = found[(suite, profile)]
            meta = entry.get("meta", {})
            title = suite if profile == "quick" else f"{suite} ({profile} profile)"
            out += [f"## {title}", ""]
            about = (
                suite_description(suite)
                if profile
                == min(
                    (p for s_, p in found if s_ == suite),
                    key=lambda p: PROFILE_ORDER.index(p) if p in PROFILE_ORDER else 9,
                )
                else ""
            )
            if about:
                out += [about, ""]
            if meta:
                out += [
                    f"Measured {meta.get('date', '?')} on {meta.get('cpu', '?')} "
                    f"({meta.get('cores', '?')} cores, {meta.get('memory_gib', '?')} GiB"
                    f"{', GPU ' + meta['gpu'] if meta.get('gpu') else ', no GPU'}), "
                    f"load average {fmt(load_of(entry))}"
                    f" at the start, profile {entry.get('profile')}, commit "
                    f"{meta.get('commit')}{' (work tree modified)' * bool(meta.get('dirty'))}"
                    f", suite time {fmt(entry.get('seconds'))} s.",
                    "",
                ]
            else:
                out += [
                    f"Profile {entry.get('profile')}; written without machine facts "
                    "(run through `python -m bench` to get them).",
                    "",
                ]
            result = entry["result"]
            scalars = _scalars_of(result)
            if scalars:
                out += ["| figure | value |", "|---|---|"]
                out += [f"| {k} | {fmt(v)} |" for k, v in scalars]
                out.append("")
            for label, rows in _rows_of(result):
                out += [f"**{label}**", "", table(rows)]
            for label, img in plots(suite, profile, entry, img_dir):
                if img is None:
                    out += [f"({label})", ""]
                    continue
                written.add(Path(img).name)
                out += [f"![{suite} {label}]({img})", "", f"*{label}: {caption(entry)}.*", ""]
    # plots of results no longer present would mislead: remove them
    for old in img_dir.glob("bench-*.png") if img_dir.exists() else []:
        if old.name not in written:
            old.unlink()
    path = docs / "benchmarks.md"
    docs.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out).rstrip() + "\n")
    return path
