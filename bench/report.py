"""Benchmark results: machine facts, JSON files, the targets summary, docs/benchmarks.md and plots.

Results live in ``bench/results/<suite>.json`` (profile quick, the committed figures) and
``bench/results/<suite>.<profile>.json`` for the other profiles, each ``{"meta", "profile",
"seconds", "result"}``. ``write_markdown`` turns every file there into ``docs/benchmarks.md``:
a summary of each target the issues set against what was measured, then one section per
suite with its tables and PNG plots (``docs/img/bench-*.png``, when matplotlib is installed),
each captioned with the machine, date, load and commit it was measured at.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
IMG = DOCS / "img"
TOOLS = ROOT / ".tools" / "node_modules"

# The order suites appear in the report.
SUITE_ORDER = ("arith", "ntt", "msm", "pairing", "prove", "prove-server", "engine", "board",
               "top")
PROFILE_ORDER = ("quick", "full", "gpu", "smoke")


# --- machine facts ---------------------------------------------------------------------------


def results_dir(path=None) -> Path:
    d = Path(path) if path else ROOT / "bench" / "results"
    d.mkdir(parents=True, exist_ok=True)
    return d


def result_path(results: Path, suite: str, profile: str) -> Path:
    """quick results are the plain ``<suite>.json``; other profiles ``<suite>.<profile>.json``."""
    return results / (f"{suite}.json" if profile == "quick" else f"{suite}.{profile}.json")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


def _npm_version(package: str) -> str | None:
    try:
        return json.loads((TOOLS / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def _output(cmd) -> str | None:
    try:
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=20)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def _gpu() -> str | None:
    return _output(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"])


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def machine_info() -> dict:
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "gpu": _gpu(),
        "load_average": load_average(),
        "python": platform.python_version(),
        "numba": _version("numba"),
        "numba_cuda": _version("numba-cuda"),
        "numpy": _version("numpy"),
        "cuzk": _version("cuzk"),
        "node": _output(["node", "--version"]),
        "snarkjs": _npm_version("snarkjs"),
        "circom2": _npm_version("circom2"),
        "commit": _output(["git", "rev-parse", "--short", "HEAD"]),
        # the work tree differs from the commit (a shared tree where others are editing)
        "dirty": bool(_output(["git", "status", "--porcelain", "--untracked-files=no"])),
    }


def write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    tmp.replace(path)


# --- tables ----------------------------------------------------------------------------------


def fmt(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 100:
            return f"{v:.0f}"
        if abs(v) >= 1:
            return f"{v:.2f}"
        return f"{v:.3g}"
    return "" if v is None else str(v)


def table(rows: list[dict], columns: list[str] | None = None) -> str:
    """A Markdown table of dict rows (columns: the union of keys, in first-seen order)."""
    if not rows:
        return "(no rows)\n"
    if columns is None:
        columns = []
        for r in rows:
            columns += [k for k in r if k not in columns and not isinstance(r[k], (dict, list))]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(fmt(r.get(c)).replace("|", "/") for c in columns) + " |")
    return "\n".join(lines) + "\n"


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
        elif isinstance(v, dict) and v and all(
                isinstance(x, (int, float, str, bool)) or x is None for x in v.values()):
            out += _scalars_of(v, f"{prefix}{k}.")
    return out


# --- targets from the issues against what was measured --------------------------------------


def _row(rows, **match):
    for r in rows or []:
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def _get(results, suite, profile="quick"):
    e = results.get((suite, profile))
    if e is None and profile != "gpu":  # the CPU figures of another profile's run
        e = next((results[(s, p)] for s, p in sorted(results) if s == suite and p != "gpu"),
                 None)
    return e["result"] if e and isinstance(e.get("result"), dict) else None


def _target(name, issue, target, unit, measured, *, best=None, upper=True, note="",
            suite=None, profile="quick"):
    """One summary row. upper: the target is a ceiling (time, CPU share); else a floor."""
    row = {"target": name, "issue": issue, "goal": f"{'≤' if upper else '≥'} {fmt(target)} {unit}",
           "measured": None, "vs_goal": None, "status": "not measured", "note": note,
           "suite": suite, "profile": profile}
    if measured is None:
        return row
    row["measured"] = f"{fmt(measured)} {unit}" + (f" (best {fmt(best)})" if best is not None
                                                   else "")
    row["vs_goal"] = measured / target if target else None

    def ok(x):
        return x <= target if upper else x >= target

    if ok(measured):
        row["status"] = "met"
    elif best is not None and ok(best):
        row["status"] = "met by the best run only"
    else:
        row["status"] = "not met"
    return row


def _busy_note(cpu_ms, cores_used) -> str:
    out = f"CPU time {fmt(cpu_ms)} ms; " if cpu_ms is not None else ""
    return out + (f"kept {fmt(cores_used)} of 2 cores busy" if cores_used is not None else "")


def targets(results: dict) -> list[dict]:
    """Every target named in issues 2-7 with what the results hold for it.

    results: {(suite, profile): entry}. Times are medians of several runs; "best" is the
    fastest run (the least disturbed by other processes on a shared machine).
    """
    out = []
    arith = _get(results, "arith")
    fq = _row(arith and arith.get("cpu"), op="fq_mul")
    out.append(_target(
        "Fq multiplication, one core", "#2", 20.0, "ns",
        fq and fq.get("one_core_cpu_ns"),
        note=fq and ("CPU time per product, four interleaved chains on one core; wall clock "
                     f"{fmt(fq.get('one_core_ns'))} ns (best {fmt(fq.get('one_core_min_ns'))})"
                     f", CPU time / wall time {fmt(fq.get('cores_used'))}"),
        suite="arith"))

    msm = _get(results, "msm")
    g1 = _row(msm and msm.get("cpu"), group="g1", log2n=16)
    out.append(_target("MSM G1 2^16, CPU", "#3", 200.0, "ms", g1 and g1.get("ms"),
                       best=g1 and g1.get("min_ms"),
                       note=g1 and _busy_note(g1.get("cpu_ms"), g1.get("cores_used")),
                       suite="msm"))
    ntt = _get(results, "ntt")
    n16 = _row(ntt and ntt.get("cpu"), log2n=16)
    out.append(_target("NTT 2^16, CPU", "#3", 15.0, "ms", n16 and n16.get("ntt_ms"),
                       best=n16 and n16.get("ntt_min_ms"),
                       note=n16 and _busy_note(None, n16.get("cores_used")), suite="ntt"))
    gmsm = _get(results, "msm", "gpu")
    g20 = _row(gmsm and gmsm.get("gpu"), group="g1", log2n=20)
    out.append(_target("MSM G1 2^20, GPU", "#3", 20.0, "ms", g20 and g20.get("ms"),
                       best=g20 and g20.get("min_ms"),
                       note=(f"on {gmsm.get('device')}" if gmsm else
                             "needs a CUDA GPU: `make bench-gpu`"), suite="msm", profile="gpu"))
    gntt = _get(results, "ntt", "gpu")
    t20 = _row(gntt and gntt.get("gpu"), log2n=20)
    out.append(_target("NTT 2^20, GPU", "#3", 2.0, "ms", t20 and t20.get("ntt_ms"),
                       best=t20 and t20.get("ntt_min_ms"),
                       note=(f"on {gntt.get('device')}" if gntt else
                             "needs a CUDA GPU: `make bench-gpu`"), suite="ntt", profile="gpu"))

    out += prove_targets(_get(results, "prove"))
    out += server_targets(_get(results, "prove-server"))
    out += witness_targets(_get(results, "witness"))
    pairing = _get(results, "pairing")
    out.append(_target("verify one proof, one core", "#4", 50.0, "ms",
                       pairing and pairing.get("verify_ms"), suite="pairing",
                       note="proof.json parsed and checked, key parsed"))

    board = _get(results, "board")
    summ = (board or {}).get("summary") or {}
    out.append(_target("board: one record write", "#5", 1.0, "µs",
                       summ.get("us_per_slot_write"), suite="board",
                       note="per sequenced record write in claim + end"))
    out.append(_target("board: consistent 64-slot snapshot", "#5", 20.0, "µs",
                       summ.get("snapshot_64_us"), suite="board"))
    top = _get(results, "top")
    out.append(_target("`cuzk top` at 4 Hz, 64 slots, 32 pipelines", "#6", 1.0, "% of a core",
                       top and top.get("worst_core_pct"), suite="top",
                       note="worst screen size, whole process in a pty"))

    engine = _get(results, "engine")
    rows = (engine or {}).get("rows") or []
    pipe = next((r for r in rows if str(r.get("part", "")).startswith("pipeline")), None)
    out.append(_target("engine: device busy in steady state", "#7", 0.97, "", pipe and pipe.get(
        "busy_fraction"), upper=False, suite="engine",
        note=pipe and f"pipeline with the prover double on {pipe.get('devices')}"))
    out.append(_target("engine: median idle gap", "#7", 2.0, "ms",
                       pipe and pipe.get("gap_median_ms"), suite="engine",
                       note=pipe and f"p95 {fmt(pipe.get('gap_p95_ms'))} ms"))
    out.append(_target("engine: throughput vs the slower stage", "#7", 0.9, "x",
                       pipe and pipe.get("vs_slower_stage"), upper=False, suite="engine",
                       note=pipe and f"pipelined {fmt(pipe.get('vs_serial'))}x the serial "
                                     "baseline"))
    real = next((r for r in rows if str(r.get("part", "")).startswith("real")), None)
    if real and "vs_serial" in real:
        out.append(_target("engine, real prover: throughput vs the slower stage", "#7", 0.9,
                           "x", real.get("vs_slower_stage"), upper=False, suite="engine",
                           note=f"{real.get('part')}: pipelined {fmt(real.get('vs_serial'))}x "
                                "the serial baseline, busy "
                                f"{fmt(real.get('busy_fraction'))}"))
    return out


def witness_targets(witness: dict | None) -> list[dict]:
    """Issue #14's targets (suite `witness`, squaring chains): from 2^15 wires up, the
    in-process witness >= 3x faster than snarkjs's whole command and `cuzk wtns calculate`
    no slower than it; host overhead <= 50 ns a value."""
    rows = [r for r in (witness or {}).get("rows") or [] if r.get("log2_wires", 0) >= 15]
    over = ((witness or {}).get("host_overhead") or {}).get("host_overhead_ns")
    worst_in = min((r["snarkjs_cmd_over_in_process"] for r in rows), default=None)
    worst_cmd = max((r["cuzk_cmd_vs_snarkjs"] for r in rows), default=None)
    span = (f"2^{rows[0]['log2_wires']}..2^{rows[-1]['log2_wires']} wires, worst size"
            if rows else "")
    return [
        _target("witness in process: snarkjs's command ÷ cuzk's time", "#14", 3.0, "x",
                worst_in, upper=False, note=span, suite="witness"),
        _target("`cuzk wtns calculate` ÷ `snarkjs wtns calculate`", "#14", 1.0, "x",
                worst_cmd, note=span, suite="witness"),
        _target("witness: host overhead per value", "#14", 50.0, "ns", over, suite="witness"),
    ]


def server_targets(server: dict | None) -> list[dict]:
    """Issue #16's target 3: the whole `cuzk prove --server` command (warm daemon) <= 1.0x
    rapidsnark's whole command at every size from 2^12 (squaring-chain circuits)."""
    rows = (server or {}).get("rows") or []
    have = bool((server or {}).get("rapidsnark", {}).get("installed"))
    why = "" if have or not server else "rapidsnark not built here (README: rapidsnark as a peer)"
    out = []
    for log2n in (12, 15, 17, 19):
        r = _row(rows, family="squarechain", log2n=log2n)
        if r is None and log2n == 19:
            continue  # full profile only
        ok = bool(r and have)
        note = (f"command {fmt(r['server_cmd_s'])} s (daemon {fmt(r['daemon_job_s'])} s, "
                f"client {fmt(r['client_s'])} s), rapidsnark {fmt(r['rapidsnark_s'])} s"
                if ok else why)
        out.append(_target(f"`cuzk prove --server` 2^{log2n} (warm daemon), whole command ÷ "
                           "rapidsnark's", "#16", 1.0, "x",
                           r.get("server_vs_rapidsnark") if ok else None, note=note,
                           suite="prove-server"))
    return out


def prove_targets(prove: dict | None) -> list[dict]:
    """Issue #16's targets against rapidsnark, run side by side on the same files: the command
    <= 1.0x rapidsnark's and the in-process proof (the daemon's case) <= 0.5x at 2^15 and up,
    peak RSS <= 2x at 2^17 and up (squaring-chain circuits)."""
    rows = (prove or {}).get("rows") or []
    have = bool((prove or {}).get("rapidsnark", {}).get("installed"))
    why = "" if have or not prove else "rapidsnark not built here (README: rapidsnark as a peer)"
    out = []
    for log2n in (15, 17, 19):
        r = _row(rows, family="squarechain", log2n=log2n)
        if r is None and log2n == 19:
            continue  # full profile only
        ok = bool(r and have)
        note = (f"cuzk {fmt(r['cuzk_cmd_s'])} s, rapidsnark {fmt(r['rapidsnark_s'])} s, "
                f"snarkjs {fmt(r['snarkjs_s'])} s" if ok else why)
        out.append(_target(f"`cuzk prove` 2^{log2n}, whole command ÷ rapidsnark's", "#16", 1.0,
                           "x", r.get("cmd_vs_rapidsnark") if ok else None, note=note,
                           suite="prove"))
        out.append(_target(f"cuzk 2^{log2n}, key loaded (daemon's case) ÷ rapidsnark's command",
                           "#16", 0.5, "x", r.get("warm_vs_rapidsnark") if ok else None,
                           note=(f"in process {fmt(r['cuzk_warm_s'])} s" if ok else why),
                           suite="prove"))
        if log2n >= 17:
            out.append(_target(f"`cuzk prove` 2^{log2n}, peak RSS ÷ rapidsnark's", "#16", 2.0,
                               "x", r.get("rss_vs_rapidsnark") if ok else None,
                               note=(f"{fmt(r['cuzk_rss_mib'])} / "
                                     f"{fmt(r['rapidsnark_rss_mib'])} MiB" if ok else why),
                               suite="prove"))
    return out


def targets_table(rows: list[dict]) -> str:
    return table([{**r, "vs_goal": (f"{r['vs_goal']:.2f}" if r["vs_goal"] is not None
                                     else "")} for r in rows],
                 ["target", "issue", "goal", "measured", "vs_goal", "status", "note"])


# --- plots -----------------------------------------------------------------------------------


def load_of(entry) -> float | None:
    """The 1-minute load average when the suite started (the runner's, else the suite's own)."""
    if entry.get("load_before") is not None:
        return entry["load_before"]
    res = entry.get("result") if isinstance(entry.get("result"), dict) else {}
    summary = res.get("summary") if isinstance(res.get("summary"), dict) else {}
    for v in (res.get("load_average_before"), res.get("load_avg"), summary.get("load1_before"),
              entry.get("meta", {}).get("load_average")):
        if isinstance(v, (int, float)):
            return v
    return None


def _caption(entry) -> str:
    m = entry.get("meta", {})
    gpu = f"GPU {m['gpu']}" if m.get("gpu") else "no GPU"
    load = load_of(entry)
    return (f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores, {gpu}; "
            f"{str(m.get('date', '?'))[:16].replace('T', ' ')} UTC; "
            f"load {fmt(load) if load is not None else 'not recorded'}; "
            f"profile {entry.get('profile')}; commit {m.get('commit')}")


def _figure(title, entry, ncols=1, width=6.4):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols if ncols > 1 else width, 3.8))
    fig.suptitle(title, fontsize=10)
    fig.text(0.5, 0.005, _caption(entry), ha="center", va="bottom", fontsize=6.5, color="0.35")
    return fig, (axes if ncols > 1 else [axes])


def _save(fig, fname, img: Path) -> str:
    import matplotlib.pyplot as plt

    img.mkdir(parents=True, exist_ok=True)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(img / fname, dpi=90)
    plt.close(fig)
    return f"img/{fname}"


def _lines(ax, rows, x, ycols, *, group=None, labels=None):
    groups = sorted({r.get(group) for r in rows}) if group else [None]
    for g in groups:
        for c in ycols:
            pts = sorted((r[x], r[c]) for r in rows if (group is None or r.get(group) == g)
                         and isinstance(r.get(x), (int, float))
                         and isinstance(r.get(c), (int, float)) and r[c] > 0)
            if pts:
                name = (labels or {}).get(c, c)
                ax.plot(*zip(*pts, strict=True), marker="o", label=f"{g} {name}" if g else name)
    ax.set_yscale("log")
    ax.grid(True, alpha=0.3)


def _mark_target(ax, x, y, label):
    ax.plot([x], [y], marker="*", markersize=12, color="crimson", linestyle="none", label=label)


def _plot_ntt(name, entry, res, img):
    plots = []
    for part in ("cpu", "gpu"):
        rows = res.get(part)
        if not rows:
            continue
        fig, (ax,) = _figure(f"NTT over Fr, {part.upper()}: ms by size", entry)
        _lines(ax, rows, "log2n", ["ntt_ms", "intt_ms", "compute_h_ms"],
               labels={"ntt_ms": "NTT", "intt_ms": "inverse NTT",
                       "compute_h_ms": "compute H (3 iNTT + 3 coset NTT)"})
        for r in rows:
            if r.get("target_ms"):
                _mark_target(ax, r["log2n"], r["target_ms"], f"target 2^{r['log2n']}")
        ax.set_xticks(sorted({r["log2n"] for r in rows}))
        ax.set_xlabel("log2 n")
        ax.set_ylabel("ms (median)")
        ax.legend(fontsize=7)
        plots.append((f"NTT {part}", _save(fig, f"bench-{name}-{part}.png", img)))
    return plots


def _plot_msm(name, entry, res, img):
    plots = []
    for part in ("cpu", "gpu"):
        rows = res.get(part)
        if not rows:
            continue
        fig, (ax,) = _figure(f"MSM, {part.upper()}: ms by size", entry)
        _lines(ax, rows, "log2n", ["ms"], group="group", labels={"ms": "ms"})
        for r in rows:
            if r.get("target_ms"):
                _mark_target(ax, r["log2n"], r["target_ms"],
                             f"target {r['group']} 2^{r['log2n']}")
        ax.set_xticks(sorted({r["log2n"] for r in rows}))
        ax.set_xlabel("log2 n (points)")
        ax.set_ylabel("ms (median)")
        ax.legend(fontsize=7)
        plots.append((f"MSM {part}", _save(fig, f"bench-{name}-{part}.png", img)))
    return plots


def _plot_prove(name, entry, res, img):
    rows = res.get("rows") or []
    if not rows:
        return []
    fig, (ax, bx) = _figure("cuzk prove vs rapidsnark and snarkjs, same zkey and witness "
                            "(squaring chain)", entry, ncols=2, width=5.6)
    rows = [r for r in rows if r.get("family", "squarechain") == "squarechain"] or rows
    xs = [r["log2n"] for r in rows]
    for col, lo, hi, label in (("cuzk_cmd_s", "cuzk_min_s", "cuzk_max_s", "cuzk prove (command)"),
                               ("snarkjs_s", "snarkjs_min_s", "snarkjs_max_s",
                                "snarkjs groth16 prove"),
                               ("cuzk_warm_s", "cuzk_warm_min_s", "cuzk_warm_max_s",
                                "cuzk, key loaded (in process)"),
                               ("rapidsnark_s", "rapidsnark_min_s", "rapidsnark_max_s",
                                "rapidsnark prover (command)")):
        if not all(col in r for r in rows):
            continue
        ys = [r[col] for r in rows]
        err = [[max(0.0, r[col] - r.get(lo, r[col])) for r in rows],
               [max(0.0, r.get(hi, r[col]) - r[col]) for r in rows]]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=label)
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xlabel("log2 domain")
    ax.set_ylabel("seconds (median, min-max bars)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6.5)
    phases = res.get("phases_ms") or []
    if phases:
        keys = [k for k in phases[0] if k not in ("log2n", "circuit")]
        totals = [sum(float(p.get(k) or 0.0) for k in keys) or 1.0 for p in phases]
        bottom = [0.0] * len(phases)
        px = [p.get("circuit", f"2^{p['log2n']}").replace("squarechain ", "sq ")
              .replace("toyhash ", "toy ") for p in phases]
        for k in keys:
            vals = [100.0 * float(p.get(k) or 0.0) / t for p, t in zip(phases, totals,
                                                                         strict=True)]
            bx.bar(px, vals, bottom=bottom, label=k)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        for i, t in enumerate(totals):
            bx.text(i, 101, f"{t:.0f} ms", ha="center", va="bottom", fontsize=7)
        bx.set_ylim(0, 112)
        bx.set_xlabel("domain")
        bx.set_ylabel("% of a proof, key loaded (phases)")
        bx.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return [("prove", _save(fig, f"bench-{name}.png", img))]


def _bars(ax, labels, series: dict, log=False):
    import numpy as np

    x = np.arange(len(labels))
    w = 0.8 / max(1, len(series))
    for i, (lab, vals) in enumerate(series.items()):
        ax.bar(x + i * w - 0.4 + w / 2, [v or 0 for v in vals], w, label=lab)
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=7, rotation=15, ha="right")
    if log:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3, axis="y")


def _plot_arith(name, entry, res, img):
    rows = res.get("cpu") or []
    if not rows:
        return []
    fig, (ax,) = _figure("Field and curve operations, ns per operation, CPU", entry)
    _bars(ax, [r["op"] for r in rows],
          {"one core, wall": [r.get("one_core_ns") for r in rows],
           "one core, CPU time": [r.get("one_core_cpu_ns") for r in rows],
           "all cores, CPU time per core": [r.get("per_core_cpu_ns") for r in rows]}, log=True)
    ax.axhline(20.0, color="crimson", linestyle="--", label="target 20 ns (mul)")
    ax.set_ylabel("ns")
    ax.legend(fontsize=7)
    return [("arith", _save(fig, f"bench-{name}.png", img))]


def _plot_board(name, entry, res, img):
    snaps = res.get("snapshots") or []
    writes = res.get("writes") or []
    if not snaps and not writes:
        return []
    fig, (ax, bx) = _figure("Status board costs", entry, ncols=2, width=5.2)
    if writes:
        _bars(ax, [r["operation"] for r in writes],
              {"µs per call": [r.get("us_per_call") for r in writes],
               "µs per record write": [r.get("us_per_record_write") for r in writes]})
        ax.axhline(1.0, color="crimson", linestyle="--", label="target 1 µs per write")
        ax.set_ylabel("µs")
        ax.legend(fontsize=6.5)
    if snaps:
        _lines(bx, snaps, "slots", ["snapshot_us", "no_checks_us"],
               labels={"snapshot_us": "consistent snapshot",
                       "no_checks_us": "copy + unpack, no re-check"})
        bx.axhline(20.0, color="crimson", linestyle="--", label="target 20 µs at 64 slots")
        bx.set_xscale("log", base=2)
        bx.set_xlabel("device slots")
        bx.set_ylabel("µs")
        bx.legend(fontsize=6.5)
    return [("board", _save(fig, f"bench-{name}.png", img))]


def _plot_top(name, entry, res, img):
    rows = res.get("rows") or []
    if not rows:
        return []
    fig, (ax,) = _figure("`cuzk top` at 4 Hz: share of one core", entry)
    _bars(ax, [str(r.get("screen")) for r in rows],
          {"% of a core": [r.get("core_pct") for r in rows]})
    ax.axhline(res.get("target_core_pct", 1.0), color="crimson", linestyle="--", label="target")
    ax.set_ylabel("% of one core")
    ax.legend(fontsize=7)
    return [("top", _save(fig, f"bench-{name}.png", img))]


def _plot_engine(name, entry, res, img):
    rows = [r for r in res.get("rows") or [] if r.get("slower_stage_pps")]
    if not rows:
        return []
    fig, (ax,) = _figure("Engine throughput against the slower stage's capacity", entry)
    series = {"pipelined (engine), whole run": "throughput_pps",
              "pipelined, steady state": "steady_pps", "serial baseline": "serial_pps"}
    _bars(ax, [str(r.get("part")) for r in rows],
          {lab: [(r.get(c) or 0) / r["slower_stage_pps"] for r in rows]
           for lab, c in series.items()})
    w = 0.8 / len(series)
    for i, r in enumerate(rows):
        for j, c in enumerate(series.values()):
            v = r.get(c) or 0
            ax.text(i + j * w - 0.4 + w / 2, v / r["slower_stage_pps"] + 0.01,
                    f"{v:.1f}/s", ha="center", va="bottom", fontsize=6.5)
    ax.axhline(0.9, color="crimson", linestyle="--", label="target 0.9x")
    ax.set_ylabel("x the slower stage's capacity")
    ax.set_ylim(0, 1.45)
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    return [("engine", _save(fig, f"bench-{name}.png", img))]


def _plot_pairing(name, entry, res, img):
    rows = res.get("in_process") or []
    if not rows:
        return []
    fig, (ax,) = _figure("Pairing and verification, ms (one core)", entry)
    ax.barh([r["operation"] for r in rows], [r.get("median_ms") or 0 for r in rows])
    ax.axvline(res.get("target_verify_ms", 50.0), color="crimson", linestyle="--",
               label="target: verify <= 50 ms")
    ax.set_xscale("log")
    ax.tick_params(axis="y", labelsize=6.5)
    ax.set_xlabel("ms (median)")
    ax.legend(fontsize=7)
    return [("pairing", _save(fig, f"bench-{name}.png", img))]


PLOTS = {"ntt": _plot_ntt, "msm": _plot_msm, "prove": _plot_prove, "arith": _plot_arith,
         "board": _plot_board, "top": _plot_top, "engine": _plot_engine,
         "pairing": _plot_pairing}


def plots(suite: str, profile: str, entry, img: Path = IMG) -> list[tuple[str, str | None]]:
    """[(label, docs-relative png path)] for one result; [] without matplotlib."""
    fn = PLOTS.get(suite)
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


HEADER = """\
# Benchmarks

Generated by `make bench` (`python -m bench`; the text of this page lives in
`bench/report.py`, the figures in `bench/results/*.json`). Do not edit by hand: rerun
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
- **GPU targets** are measured only by `make bench-gpu` on a machine with a CUDA GPU; they
  read "not measured" until such a run's results are committed.
- "met by the best run only": the median misses the target, the fastest run meets it (on a
  loaded machine the fastest run is the least disturbed one).
"""


def run_target(latest: dict | None) -> dict:
    """Issue #9's own target: the quick profile of every suite in <= 10 minutes on 2 cores."""
    ok = (latest or {}).get("profile") == "quick" and not latest.get("failed")
    minutes = latest["seconds"] / 60 if ok and latest.get("seconds") else None
    loads = [s.get("load_before") for s in (latest or {}).get("suites", [])
             if s.get("load_before") is not None]
    note = (f"{len(latest['suites'])} suites, load {fmt(min(loads))}-{fmt(max(loads))}; "
            "a fresh clone also compiles the kernels (5.5 min in all with an empty Numba "
            "cache at load 3-4.5, 2026-11-29) and makes the circuits (about 40 s)"
            if minutes and loads else "")
    return _target("`make bench`: every suite, quick profile", "#9", 10.0, "min", minutes,
                   note=note, suite="all")


def summary_section(results: dict, latest: dict | None = None) -> list[str]:
    rows = targets(results) + [run_target(latest)]
    measured = [r for r in rows if r["status"] != "not measured"]
    met = [r for r in measured if r["status"] == "met"]
    best_only = [r for r in measured if r["status"] == "met by the best run only"]
    missed = [r for r in measured if r["status"] == "not met"]
    out = ["## Targets from the issues against what was measured", "",
           f"{len(measured)} of {len(rows)} targets measured: {len(met)} met, "
           f"{len(best_only)} met by the best run only, {len(missed)} not met"
           + (f" ({'; '.join(r['target'] for r in missed)})" if missed else "") + ". "
           "`vs_goal` is measured ÷ goal (below 1 is better for a ceiling, above 1 for a "
           "floor).", ""]
    loads = {s: load_of(e) for (s, p), e in results.items() if p == "quick"}
    loads = {s: v for s, v in loads.items() if v is not None}
    out += [targets_table(rows)]
    if loads:
        out += ["Load average (1 minute) at the start of each quick suite: "
                + ", ".join(f"{s} {fmt(v)}" for s, v in loads.items()) + " (2 cores: above 2, "
                "a suite had less than the whole machine).", ""]
    prove = _get(results, "prove")
    if prove and prove.get("rows"):
        out += ["**`cuzk prove` against rapidsnark and `snarkjs groth16 prove`, whole commands "
                "alternating on the same files** (seconds, medians; `*_vs_rapidsnark` is cuzk's "
                "time ÷ rapidsnark's, below 1 is faster; RSS in MiB):", "",
                table(prove["rows"], [c for c in PROVE_COLUMNS
                                      if any(c in r for r in prove["rows"])]),
                prove_prose(prove), ""]
    return out


PROVE_COLUMNS = ["family", "log2n", "constraints", "cuzk_cmd_s", "cuzk_warm_s", "rapidsnark_s",
                 "snarkjs_s", "cmd_vs_rapidsnark", "warm_vs_rapidsnark", "speedup_vs_snarkjs",
                 "startup_s", "cuzk_rss_mib", "rapidsnark_rss_mib"]


def prove_prose(prove: dict) -> str:
    """The side-by-side result in words, from the figures (issue #16's comparison)."""
    rows = sorted(prove["rows"], key=lambda r: (r["log2n"], r.get("family", "")))
    cmd = [r["speedup_vs_snarkjs"] for r in rows]
    warm = [r["speedup_warm_vs_snarkjs"] for r in rows]
    lo, hi = rows[0], rows[-1]
    faster = all(x > 1 for x in cmd)

    def span(xs):
        return f"{fmt(xs[0])}x" if len(xs) == 1 else f"{fmt(min(xs))}x to {fmt(max(xs))}x"

    where = (f"at 2^{lo['log2n']}" if lo is hi
             else f"from 2^{lo['log2n']} to 2^{hi['log2n']}")
    text = (f"As a whole command `cuzk prove` is {span(cmd)} "
            f"{'faster than' if faster else 'the speed of'} `snarkjs groth16 prove` {where}"
            + ("" if faster else " (below 1: slower)")
            + f"; with the key already loaded (the daemon's case) {span(warm)}. The command's "
            "start-up (interpreter, imports, cached kernels, mapping the key), the command's "
            f"time less the in-process proof's, is about "
            f"{fmt(statistics.median(r['startup_s'] for r in rows))} s (median over sizes).")
    rs = prove.get("rapidsnark") or {}
    if not rs.get("installed"):
        return text + " rapidsnark was not built on this machine, so it was not compared."
    parts = [f"2^{r['log2n']} {r.get('family', '')}: command {fmt(r['cmd_vs_rapidsnark'])}x, "
             f"in process {fmt(r['warm_vs_rapidsnark'])}x, RSS {fmt(r['rss_vs_rapidsnark'])}x"
             for r in rows if "cmd_vs_rapidsnark" in r]
    return text + (" Against rapidsnark, run side by side (cuzk's time ÷ rapidsnark's; below 1 "
                   "is faster): " + "; ".join(parts) + ".")


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
    suites = sorted({s for s, _ in found},
                    key=lambda s: (SUITE_ORDER.index(s) if s in SUITE_ORDER else 99, s))
    written = set()
    for suite in suites:
        for profile in sorted({p for s, p in found if s == suite},
                              key=lambda p: PROFILE_ORDER.index(p) if p in PROFILE_ORDER else 9):
            entry = found[(suite, profile)]
            meta = entry.get("meta", {})
            title = suite if profile == "quick" else f"{suite} ({profile} profile)"
            out += [f"## {title}", ""]
            about = suite_description(suite) if profile == min(
                (p for s_, p in found if s_ == suite),
                key=lambda p: PROFILE_ORDER.index(p) if p in PROFILE_ORDER else 9) else ""
            if about:
                out += [about, ""]
            if meta:
                out += [f"Measured {meta.get('date', '?')} on {meta.get('cpu', '?')} "
                        f"({meta.get('cores', '?')} cores, {meta.get('memory_gib', '?')} GiB"
                        f"{', GPU ' + meta['gpu'] if meta.get('gpu') else ', no GPU'}), "
                        f"load average {fmt(load_of(entry))}"
                        f" at the start, profile {entry.get('profile')}, commit "
                        f"{meta.get('commit')}{' (work tree modified)' * bool(meta.get('dirty'))}"
                        f", suite time {fmt(entry.get('seconds'))} s.", ""]
            else:
                out += [f"Profile {entry.get('profile')}; written without machine facts "
                        "(run through `python -m bench` to get them).", ""]
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
                out += [f"![{suite} {label}]({img})", "",
                        f"*{label}: {_caption(entry)}.*", ""]
    # plots of results no longer present would mislead: remove them
    for old in img_dir.glob("bench-*.png") if img_dir.exists() else []:
        if old.name not in written:
            old.unlink()
    path = docs / "benchmarks.md"
    docs.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out).rstrip() + "\n")
    return path
