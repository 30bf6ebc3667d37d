"""Suite `ntt`: NTT, inverse NTT and the whole H pipeline (compute_h) by domain size.

CPU: the Numba prange kernels on every core. GPU (profile gpu): the CUDA kernels on device
arrays, timed with the device synchronised, tables resident. Each figure is the median of
several runs after a warm-up (compiles, builds the tables); the CPU-time column shows how many
cores the process kept busy (a shared machine gives fewer than it has).
The floor (issue #35, bench.floor): a butterfly is one Fr product (none where the twiddle is 1)
and two modular additions, priced at the costs measured in this run (fr_mul_ns, fr_add_ns:
bench.bench_arith's four interleaved chains on one core, CPU time, the least of 5, before and
after the rows, the lesser of the two); x_floor = one NTT's least CPU time ÷ its floor,
h_x_floor the same for compute_h (6 transforms, the coset step and the quotient:
bench.floor.compute_h_floor_ns), whose CPU time excludes the copies that refill its inputs.
Run alone: ``python -m bench.bench_ntt [quick|full|gpu|smoke]`` (writes bench/results/ntt.json).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

from bench import floor
from bench.plots import figure, lines, mark_target, save
from bench.tables import busy_note, find_row, table, target

SIZES = {
    "smoke": [10],
    "quick": [10, 12, 14, 16],
    "full": [10, 12, 14, 16, 18, 20],
    "gpu": [16, 18, 20, 22],
}
REPEATS = {"smoke": 2, "quick": 7, "full": 5, "gpu": 10}
TARGET_MS = {("cpu", 16): 15.0, ("cuda", 20): 2.0}  # issue 3's targets for one NTT


def _random_vector(rng, log_n: int) -> np.ndarray:
    """n random reduced Fr elements (any value below r is some element's Montgomery form)."""
    from cuzk.arith.constants import FR_MODULUS

    x = rng.integers(0, 2**63, size=(1 << log_n, 4), dtype=np.uint64) * np.uint64(2)
    x[:, 3] %= np.uint64(FR_MODULUS >> 192)  # top limb below r's: every value < r
    return x


def _measure(fn, repeats: int, sync=None, before=None):
    """(median wall ms, median process-CPU ms, min wall ms, min process-CPU ms) of fn() over
    repeats runs; before() runs ahead of each, untimed."""
    walls, cpus = [], []
    for _ in range(repeats):
        if before:
            before()
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        if sync:
            sync()
        walls.append((time.perf_counter() - t0) * 1e3)
        cpus.append((time.process_time() - c0) * 1e3)
    return statistics.median(walls), statistics.median(cpus), min(walls), min(cpus)


def _cpu_rows(sizes, repeats, mul_ns=None, add_ns=None):
    from cuzk.kernels import ntt_cpu

    rows = []
    rng = np.random.default_rng(1)
    for log_n in sizes:
        t0 = time.perf_counter()
        tables = ntt_cpu.tables(log_n)
        tables_ms = (time.perf_counter() - t0) * 1e3
        x = _random_vector(rng, log_n)
        ntt_cpu.ntt(x)  # warm-up: compile (or load the cache)
        ntt_cpu.ntt(x, inverse=True)
        fwd, fwd_cpu, fwd_min, fwd_cpu_min = _measure(lambda x=x: ntt_cpu.ntt(x), repeats)
        inv, _, _, _ = _measure(lambda x=x: ntt_cpu.ntt(x, inverse=True), repeats)
        abc = [_random_vector(rng, log_n) for _ in range(3)]
        work = [v.copy() for v in abc]

        def fresh(abc=abc, work=work):
            for w, v in zip(work, abc, strict=True):
                np.copyto(w, v)

        fresh()
        ntt_cpu.compute_h(*work)
        h_ms, _, _, h_cpu_min = _measure(
            lambda work=work: ntt_cpu.compute_h(*work), max(2, repeats // 2), before=fresh
        )
        bfly = (1 << (log_n - 1)) * log_n
        row = {
            "log2n": log_n,
            "ntt_ms": fwd,
            "ntt_min_ms": fwd_min,
            "intt_ms": inv,
            "compute_h_ms": h_ms,
            "ns_per_butterfly": fwd * 1e6 / bfly,
            "cores_used": fwd_cpu / fwd if fwd else None,
            "tables_ms": tables_ms,
            "tables_mib": tables.nbytes / 2**20,
        }
        if mul_ns:
            row |= _floor_fields(log_n, fwd_cpu_min, h_cpu_min, mul_ns, add_ns)
        target = TARGET_MS.get(("cpu", log_n))
        if target:
            row["target_ms"] = target
        rows.append(row)
        floor_note = (
            f", {row['x_floor']:.2f}x floor (H {row['h_x_floor']:.2f}x)" if "x_floor" in row else ""
        )
        print(
            f"  cpu 2^{log_n}: ntt {fwd:.2f} ms (min {fwd_min:.2f}), intt {inv:.2f} ms, "
            f"H {h_ms:.1f} ms, {row['cores_used']:.2f} cores busy{floor_note}",
            flush=True,
        )
    return rows


def _floor_fields(log_n, ntt_cpu_ms, h_cpu_ms, mul_ns, add_ns):
    """The row's floor figures (bench.floor, issue #35): CPU ns per butterfly of one NTT and
    of compute_h's six transforms, against a product and two modular additions (at this run's
    costs), and x_floor = the least CPU time ÷ the floor, for the NTT and for compute_h."""
    k = floor.ntt_counts(log_n)
    ntt_floor = floor.ntt_floor_ns(log_n, mul_ns, add_ns) / 1e6
    h_floor = floor.compute_h_floor_ns(log_n, mul_ns, add_ns) / 1e6
    return {
        "butterflies": k["butterflies"],
        "h_ntts": 6,
        "ntt_cpu_min_ms": ntt_cpu_ms,
        "cpu_ns_per_butterfly": ntt_cpu_ms * 1e6 / k["butterflies"],
        "floor_ns_per_butterfly": mul_ns + 2 * add_ns,
        "ntt_floor_ms": ntt_floor,
        "x_floor": ntt_cpu_ms / ntt_floor,
        "h_cpu_min_ms": h_cpu_ms,
        "h_cpu_ns_per_butterfly": h_cpu_ms * 1e6 / (6 * k["butterflies"]),
        "h_floor_ms": h_floor,
        "h_x_floor": h_cpu_ms / h_floor,
    }


def _gpu_rows(sizes, repeats):
    from numba import cuda

    from cuzk.kernels import ntt_cuda

    rows = []
    rng = np.random.default_rng(1)
    for log_n in sizes:
        ntt_cuda.device_tables().get(log_n)
        d = cuda.to_device(_random_vector(rng, log_n))
        ntt_cuda.ntt(d)
        ntt_cuda.ntt(d, inverse=True)
        cuda.synchronize()
        fwd, _, fwd_min, _ = _measure(lambda d=d: ntt_cuda.ntt(d), repeats, cuda.synchronize)
        inv, _, _, _ = _measure(
            lambda d=d: ntt_cuda.ntt(d, inverse=True), repeats, cuda.synchronize
        )
        abc = [cuda.to_device(_random_vector(rng, log_n)) for _ in range(3)]
        ntt_cuda.compute_h(*abc)
        h_ms, _, _, _ = _measure(
            lambda abc=abc: ntt_cuda.compute_h(*abc), repeats, cuda.synchronize
        )
        row = {
            "log2n": log_n,
            "ntt_ms": fwd,
            "ntt_min_ms": fwd_min,
            "intt_ms": inv,
            "compute_h_ms": h_ms,
            "tables_mib": ntt_cuda.device_tables().nbytes / 2**20,
        }
        target = TARGET_MS.get(("cuda", log_n))
        if target:
            row["target_ms"] = target
        rows.append(row)
        print(f"  cuda 2^{log_n}: ntt {fwd:.3f} ms, intt {inv:.3f} ms, H {h_ms:.3f} ms", flush=True)
    return rows


def run(profile: str = "quick") -> dict:
    import numba

    sizes, repeats = SIZES[profile], REPEATS[profile]
    result = {
        "threads": numba.config.NUMBA_NUM_THREADS,
        "cores": os.cpu_count(),
        "load_average_before": os.getloadavg()[0],
    }
    if profile == "gpu":
        from numba import cuda

        result["device"] = str(cuda.get_current_device().name)
        result["gpu"] = _gpu_rows(sizes, repeats)
        print(
            table(
                result["gpu"],
                ["log2n", "ntt_ms", "ntt_min_ms", "intt_ms", "compute_h_ms", "target_ms"],
            )
        )
        sizes = SIZES["quick"]
    # Fr's product and modular addition in this run (bench.bench_arith's four interleaved
    # chains, CPU time on one core, the least of 5): what the floor is priced at.
    # before the rows and again after them, the less disturbed of the two pricing every row
    mul_ns, add_ns = floor.product_ns("fr_mul"), floor.product_ns("fr_add")
    result["cpu"] = _cpu_rows(sizes, repeats, mul_ns, add_ns)
    mul_ns = min(mul_ns, floor.product_ns("fr_mul"))
    add_ns = min(add_ns, floor.product_ns("fr_add"))
    result["fr_mul_ns"], result["fr_add_ns"] = mul_ns, add_ns
    for row in result["cpu"]:
        if "x_floor" in row:
            row |= _floor_fields(
                row["log2n"], row["ntt_cpu_min_ms"], row["h_cpu_min_ms"], mul_ns, add_ns
            )
    print(f"  Fr product {mul_ns:.2f} ns, addition {add_ns:.2f} ns")
    print(
        table(
            result["cpu"],
            [
                "log2n",
                "ntt_ms",
                "ntt_min_ms",
                "intt_ms",
                "compute_h_ms",
                "ns_per_butterfly",
                "cores_used",
                "target_ms",
            ],
        )
    )
    print(table(result["cpu"], FLOOR_COLUMNS))
    result["load_average_after"] = os.getloadavg()[0]
    print(
        f"  load average (1 min) {result['load_average_before']:.1f} before, "
        f"{result['load_average_after']:.1f} after, on {result['cores']} cores"
    )
    return result


# --- what the report shows: targets and plot ----------------------------------------------------


FLOOR_COLUMNS = [
    "log2n",
    "butterflies",
    "ntt_cpu_min_ms",
    "cpu_ns_per_butterfly",
    "floor_ns_per_butterfly",
    "x_floor",
    "h_ntts",
    "h_cpu_min_ms",
    "h_cpu_ns_per_butterfly",
    "h_floor_ms",
    "h_x_floor",
]
X_FLOOR_GOAL = 1.3  # issue #35: NTTs within 1.3x of their floor (bench.floor)
X_FLOOR_FROM = 12  # ... from 2^12 up


def floor_targets(ntt) -> list[dict]:
    """Issue #35's target 1 for the NTT: one NTT and compute_h from 2^12 within X_FLOOR_GOAL
    of their floor (bench.floor: a product and two modular additions a butterfly)."""
    out = []
    for row in (ntt and ntt.get("cpu")) or []:
        if row.get("x_floor") is None or row["log2n"] < X_FLOOR_FROM:
            continue
        costs = (
            f"Fr product {ntt.get('fr_mul_ns', 0):.2f} ns, addition "
            f"{ntt.get('fr_add_ns', 0):.2f} ns in the same run"
        )
        out.append(
            target(
                f"NTT 2^{row['log2n']}, CPU time ÷ its floor",
                "#35",
                X_FLOOR_GOAL,
                "x",
                row["x_floor"],
                note=(
                    f"{row['cpu_ns_per_butterfly']:.1f} ns per butterfly against "
                    f"{row['floor_ns_per_butterfly']:.1f}; {costs}"
                ),
                suite="ntt",
            )
        )
        out.append(
            target(
                f"compute_h 2^{row['log2n']}, CPU time ÷ its floor",
                "#35",
                X_FLOOR_GOAL,
                "x",
                row["h_x_floor"],
                note=(
                    f"6 transforms of {row['butterflies']} butterflies, "
                    f"{row['h_cpu_ns_per_butterfly']:.1f} ns each all in; {costs}"
                ),
                suite="ntt",
            )
        )
    return out


def targets(get) -> list[dict]:
    """Issue #3's targets: NTT 2^16 on the CPU <= 15 ms, 2^20 on a GPU <= 2 ms; issue #35's
    floor ratios (floor_targets)."""
    ntt = get()
    n16 = find_row(ntt and ntt.get("cpu"), log2n=16)
    gntt = get("gpu")
    t20 = find_row(gntt and gntt.get("gpu"), log2n=20)
    return floor_targets(ntt) + [
        target(
            "NTT 2^16, CPU",
            "#3",
            15.0,
            "ms",
            n16 and n16.get("ntt_ms"),
            best=n16 and n16.get("ntt_min_ms"),
            note=n16 and busy_note(None, n16.get("cores_used")),
            suite="ntt",
        ),
        target(
            "NTT 2^20, GPU",
            "#3",
            2.0,
            "ms",
            t20 and t20.get("ntt_ms"),
            best=t20 and t20.get("ntt_min_ms"),
            note=(f"on {gntt.get('device')}" if gntt else "needs a CUDA GPU: `make bench-gpu`"),
            suite="ntt",
            profile="gpu",
        ),
    ]


def plot(name, entry, res, img):
    made = []
    for part in ("cpu", "gpu"):
        rows = res.get(part)
        if not rows:
            continue
        fig, (ax,) = figure(f"NTT over Fr, {part.upper()}: ms by size", entry)
        lines(
            ax,
            rows,
            "log2n",
            ["ntt_ms", "intt_ms", "compute_h_ms"],
            labels={
                "ntt_ms": "NTT",
                "intt_ms": "inverse NTT",
                "compute_h_ms": "compute H (3 iNTT + 3 coset NTT)",
            },
        )
        for r in rows:
            if r.get("target_ms"):
                mark_target(ax, r["log2n"], r["target_ms"], f"target 2^{r['log2n']}")
        ax.set_xticks(sorted({r["log2n"] for r in rows}))
        ax.set_xlabel("log2 n")
        ax.set_ylabel("ms (median)")
        ax.legend(fontsize=7)
        made.append((f"NTT {part}", save(fig, f"bench-{name}-{part}.png", img)))
    return made


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(main(["--suite", "ntt", "--profile", sys.argv[1] if len(sys.argv) > 1 else "quick"]))
