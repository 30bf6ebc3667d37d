"""Suite `msm`: multi-scalar multiplication, G1 and G2, by size, on BN254 and BLS12-381.

CPU: cuzk.kernels.msm_cpu (batch-affine Pippenger, numba prange over windows, every core).
GPU (profile gpu): cuzk.kernels.msm_cuda against a resident point set (placed once, as the
engine does), scalars from the host each call, timed to the result on the host.
Points are P_i = P_0 + i Q (distinct, affine, Montgomery, as a zkey stores them), scalars
uniform below r. Each row names its curve: BN254's (4-limb Fq, G1 rows of 8 limbs) at every
size, BLS12-381's (6-limb Fq, 255-bit r; issue #28) at the sizes of BLS_SIZES, the same kernels
built for that curve (cuzk.kernels.msm_cpu/msm_cuda with curve="bls12_381"); vs_bn254 is a
BLS12-381 row's time ÷ BN254's at the same group and size.
Rows of their own (part "sized", issue #25's target 3; BN254) take scalars by size: all 0 or
1 ("bits", as most witness values of hash circuits), below 2^64 ("u64"), and "mixed" (90% 0
or 1, 10% dense), each against the dense MSM of the same n (vs_dense); the
mixed row also times its two parts as MSMs of their own (parts_ms: 0/1 part + dense part).
Rows of their own (part "tables", issue #35's target 2; BN254, dense scalars) run each MSM
over a table of multiples (msm_cpu.build_table at the engine's default msm_tables, as a
resident key gets) and without, alternating: CPU time of each (cpu_vs_plain), the table's
bytes against the point set's (x_memory) and its build time; on the native library's kernels
where it is built here (what the daemon's CPU devices run; column kernels), else Numba's.
Each figure is the median of several runs after a warm-up (compile or cache load); cpu_ms
is the process's CPU time (all threads) and cores_used = cpu_ms / ms shows how many cores
the process actually got (a shared machine gives fewer than it has).
The floor (issue #35, bench.floor): each CPU row counts the operations its run does, from the
digits of its scalars at the window width c the MSM picks (bucket_adds: k - 1 per bucket of k
points; sum_adds: the lanes' affine additions of two non-zero rows; a few Jacobian operations),
prices them in Fq products (6 an affine addition in G1, 17 in G2) at the Fq product's CPU time
measured in this run (fq_mul_ns: bench.bench_arith's four interleaved chains, the least of 5,
before and after the rows, the lesser of the two), and reports x_floor = the least CPU time of
the MSM ÷ that floor.
Run alone: ``python -m bench.bench_msm [quick|full|gpu|smoke]`` (writes bench/results/msm.json).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

from bench import floor, plots
from bench.tables import busy_note, find_row, table, target
from cuzk.arith.curves import constants

G1_SIZES = {
    "smoke": [8],
    "quick": [10, 12, 14, 16],
    "full": [10, 12, 14, 16, 17, 18, 20],
    "gpu": [16, 18, 20, 22],
}
G2_SIZES = {"smoke": [6], "quick": [10, 12], "full": [10, 12, 14, 16, 18], "gpu": [16]}
# BLS12-381's rows (issue #28): (group, log2 n) per profile
BLS_SIZES = {
    "smoke": [("g1", 6)],
    "quick": [("g1", 12), ("g1", 16), ("g2", 10), ("g2", 12)],
    "full": [("g1", 12), ("g1", 16), ("g1", 18), ("g2", 12), ("g2", 16)],
    "gpu": [("g1", 16), ("g1", 20), ("g2", 16)],
}
BLS = "bls12_381"
REPEATS = {"smoke": 1, "quick": 5, "full": 3, "gpu": 10}
TARGET_MS = {("cpu", "g1", 16): 200.0, ("cuda", "g1", 20): 20.0}  # issue 3's targets
# Scalar profiles of the "sized" rows (CPU), by group and size
SIZED = {
    "smoke": {"g1": [8], "g2": [6]},
    "quick": {"g1": [14, 16], "g2": [12]},
    "full": {"g1": [16, 17], "g2": [12, 14]},
    "gpu": {"g1": [14, 16], "g2": [12]},  # (the CPU rows of a gpu run)
}
SIZED_KINDS = ("dense", "bits", "u64", "mixed")
# Tables of multiples (issue #35's target 2, msm_cpu.build_table at the engine's default
# msm_tables): dense MSMs with and without a table, by group and size (BN254)
TABLES = {
    "smoke": {"g1": [8]},
    "quick": {"g1": [12, 14, 16], "g2": [10, 12]},
    "full": {"g1": [12, 14, 16, 17, 18], "g2": [12, 14, 16]},
    "gpu": {"g1": [12, 14, 16], "g2": [10, 12]},  # (the CPU rows of a gpu run)
}
# Issue #25's target 3: a 0/1 MSM at most 1/8 of a dense one, one below 2^64 about 1/4
SIZED_GOAL = {"bits": 1 / 8, "u64": 1 / 4}
MIXED_DENSE = 0.1  # share of dense scalars in the mixed profile


def points(group: str, n: int, curve: str = "bn254") -> np.ndarray:
    """n distinct affine points of G1 ((n, 2 NQ)) or G2 ((n, 4 NQ)) of the curve in the zkey
    layout (NQ: its limbs per Fq element)."""
    have = _CACHE.get((curve, group))
    if have is None or have.shape[0] < n:
        have = _CACHE[(curve, group)] = _make_points(group, n, curve)
    return have[:n]


_CACHE: dict = {}


# --- the points, in plain integers: affine arithmetic over Fq (G1) or Fq2 = Fq[u]/(u^2 + 1)
# (G2; both curves' quadratic extension), an element of Fq2 as (c0, c1). One inversion an
# addition, a few microseconds: 2^16 points in about a second.


def _fq2_ops(q: int):
    def mul(a, b):
        return ((a[0] * b[0] - a[1] * b[1]) % q, (a[0] * b[1] + a[1] * b[0]) % q)

    def inv(a):
        t = pow(a[0] * a[0] + a[1] * a[1], -1, q)
        return (a[0] * t % q, -a[1] * t % q)

    def add(a, b):
        return ((a[0] + b[0]) % q, (a[1] + b[1]) % q)

    def sub(a, b):
        return ((a[0] - b[0]) % q, (a[1] - b[1]) % q)

    return mul, inv, add, sub


def _fq_ops(q: int):
    return (
        lambda a, b: a * b % q,
        lambda a: pow(a, -1, q),
        lambda a, b: (a + b) % q,
        lambda a, b: (a - b) % q,
    )


def _affine_add(P, Q, ops):
    """P + Q in affine coordinates (None: infinity) with the field's (mul, inv, add, sub)."""
    mul, inv, add, sub = ops
    if P is None:
        return Q
    if Q is None:
        return P
    (x1, y1), (x2, y2) = P, Q
    if x1 == x2:
        if y1 != y2 or y1 == sub(y1, y1):  # Q = -P, or P of order 2
            return None
        xx = mul(x1, x1)
        lam = mul(add(add(xx, xx), xx), inv(add(y1, y1)))  # doubling: 3 x^2 / 2 y
    else:
        lam = mul(sub(y2, y1), inv(sub(x2, x1)))
    x3 = sub(sub(mul(lam, lam), x1), x2)
    return x3, sub(mul(lam, sub(x1, x3)), y1)


def _affine_mul(P, k: int, ops):
    R = None
    while k:
        if k & 1:
            R = _affine_add(R, P, ops)
        P = _affine_add(P, P, ops)
        k >>= 1
    return R


def _make_points(group: str, n: int, curve: str) -> np.ndarray:
    """P_i = 123456789 G + i 987654321 G, i < n, as Montgomery limb rows (x || y; Fq2 as
    c0 || c1)."""
    k = constants(curve)
    q, nq = k.FQ_MODULUS, k.FQ_LIMBS
    if group == "g1":
        ops, G = _fq_ops(q), k.G1_GENERATOR
    else:
        ops, G = _fq2_ops(q), tuple(tuple(c) for c in k.G2_GENERATOR)
    P, step = _affine_mul(G, 123456789, ops), _affine_mul(G, 987654321, ops)
    R = 1 << (64 * nq)
    parts = []
    for _ in range(n):
        coords = P if group == "g1" else (*P[0], *P[1])
        parts += [(c * R % q).to_bytes(8 * nq, "little") for c in coords]
        P = _affine_add(P, step, ops)
    width = (2 if group == "g1" else 4) * nq
    return np.frombuffer(b"".join(parts), dtype="<u8").astype(np.uint64).reshape(n, width)


def scalars(rng, n: int, curve: str = "bn254") -> np.ndarray:
    """n uniform scalars below the curve's r, plain form."""
    r = constants(curve).FR_MODULUS
    s = rng.integers(0, 2**63, size=(n, 4), dtype=np.uint64) * np.uint64(2)
    s[:, 0] |= rng.integers(0, 2, size=n, dtype=np.uint64)
    s[:, 3] %= np.uint64(r >> 192)  # top limb below r's: every value < r
    return s


def sized_scalars(rng, n: int, kind: str) -> np.ndarray:
    """n scalars of a profile: dense (uniform below r), bits (0 or 1), u64 (below 2^64),
    mixed (a MIXED_DENSE share dense, the rest 0 or 1)."""
    s = scalars(rng, n)
    if kind == "dense":
        return s
    bits = rng.integers(0, 2, size=n, dtype=np.uint64)
    if kind == "bits":
        keep = np.zeros(n, bool)
    elif kind == "u64":
        s[:, 1:] = 0
        return s
    else:
        keep = rng.random(n) < MIXED_DENSE
    s[~keep] = 0
    s[~keep, 0] = bits[~keep]
    return s


def _measure(fn, repeats: int):
    """(median wall ms, median process-CPU ms, min wall ms, min process-CPU ms) of fn() over
    repeats runs."""
    walls, cpus = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        walls.append((time.perf_counter() - t0) * 1e3)
        cpus.append((time.process_time() - c0) * 1e3)
    return statistics.median(walls), statistics.median(cpus), min(walls), min(cpus)


def _floor_fields(sc, n, curve, group, cpu_min, product_ns):
    """The row's floor figures (bench.floor, issue #35): the operations of the run counted
    from its digits, and (_price) its floor at the Fq product cost measured in this run."""
    from cuzk.kernels import msm_cpu, threads

    bits = msm_cpu.scalar_bits(curve)
    c = msm_cpu.window_bits(n, bits, threads.get_num_threads())
    k = floor.msm_counts(sc, c, bits, msm_cpu.LANES, group)
    row = {
        "window": c,
        "windows": k["windows"],
        "bucket_adds": k["bucket_adds"],
        "sum_adds": k["sum_adds"],
        "floor_products": k["floor_products"],
        "cpu_min_ms": cpu_min,
    }
    return row | _price(row, group, product_ns)


def _price(row, group, product_ns):
    """ns_per_add (the least CPU time over every affine addition), the floor at product_ns a
    product, and x_floor = the least CPU time ÷ the floor."""
    floor_ms = row["floor_products"] * product_ns / 1e6
    return {
        "ns_per_add": row["cpu_min_ms"] * 1e6 / (row["bucket_adds"] + row["sum_adds"]),
        "floor_ns_per_add": floor.products("affine", group) * product_ns,
        "floor_ms": floor_ms,
        "x_floor": row["cpu_min_ms"] / floor_ms,
    }


def _rows(target, group, sizes, repeats, curve="bn254", product_ns=None):
    from functools import partial

    if target == "cpu":
        from cuzk.kernels import msm_cpu as mod
    else:
        from cuzk.kernels import msm_cuda as mod
        from cuzk.kernels.resident import place_points
    fn = partial(mod.msm_g1 if group == "g1" else mod.msm_g2, curve=curve)
    rng = np.random.default_rng(7)
    rows = []
    for log_n in sizes:
        n = 1 << log_n
        t0 = time.perf_counter()
        pts = points(group, n, curve)
        gen_s = time.perf_counter() - t0
        sc = scalars(rng, n, curve)
        if target == "cuda":
            pts = place_points(pts, "cuda:0", f"bench-{curve}-{group}", curve=curve)
        fn(pts, sc)  # warm-up: compile or load the cache
        wall, cpu, best, cpu_min = _measure(lambda pts=pts, sc=sc: fn(pts, sc), repeats)
        window = (
            mod.window_bits(n, mod.scalar_bits(curve)) if target == "cpu" else mod.window_bits(n)
        )
        row = {
            "curve": curve,
            "group": group,
            "log2n": log_n,
            "ms": wall,
            "min_ms": best,
            "cpu_ms": cpu,
            "cpu_min_ms": cpu_min,
            "ns_per_point": wall * 1e6 / n,
            "window": window,
            "cores_used": cpu / wall if wall and target == "cpu" else None,
            "points_s": gen_s,
        }
        if target == "cpu" and product_ns:
            row |= _floor_fields(sc, n, curve, group, cpu_min, product_ns[curve])
        target_ms = TARGET_MS.get((target, group, log_n)) if curve == "bn254" else None
        if target_ms:
            row["target_ms"] = target_ms
        rows.append(row)
        cores = f", {row['cores_used']:.2f} cores busy" if row["cores_used"] else ""
        floor_note = f", {row['x_floor']:.2f}x floor" if "x_floor" in row else ""
        print(
            f"  {target} {curve} {group} 2^{log_n}: {wall:.1f} ms (min {best:.1f}, CPU {cpu:.1f}), "
            f"c = {row['window']}{cores}{floor_note}",
            flush=True,
        )
    return rows


def _sized_rows(group, sizes, repeats):
    """CPU rows by scalar profile (SIZED_KINDS): ms and vs_dense, the ratio to the dense MSM
    of the same n, run side by side (kinds alternate within each repeat)."""
    from cuzk.kernels import msm_cpu as mod

    fn = mod.msm_g1 if group == "g1" else mod.msm_g2
    rng = np.random.default_rng(11)
    rows = []
    for log_n in sizes:
        n = 1 << log_n
        pts = points(group, n)
        sc = {k: sized_scalars(rng, n, k) for k in SIZED_KINDS}
        dense_part = sc["mixed"][:, 1:].any(axis=1) | (sc["mixed"][:, 0] > 1)
        parts = {
            "part_bits": (np.ascontiguousarray(pts[~dense_part]), sc["mixed"][~dense_part]),
            "part_dense": (np.ascontiguousarray(pts[dense_part]), sc["mixed"][dense_part]),
        }
        calls = {k: (pts, v) for k, v in sc.items()} | parts
        for p, v in calls.values():
            fn(p, v)  # warm-up: compile or load the cache
        walls = {k: [] for k in calls}
        cpus = {k: [] for k in calls}
        for _ in range(repeats):
            for k, (p, v) in calls.items():
                c0, t0 = time.process_time(), time.perf_counter()
                fn(p, v)
                walls[k].append((time.perf_counter() - t0) * 1e3)
                cpus[k].append((time.process_time() - c0) * 1e3)
        ms = {k: statistics.median(v) for k, v in walls.items()}
        for kind in SIZED_KINDS:
            row = {
                "group": group,
                "log2n": log_n,
                "scalars": kind,
                "ms": ms[kind],
                "min_ms": min(walls[kind]),
                "cpu_ms": statistics.median(cpus[kind]),
                "vs_dense": ms[kind] / ms["dense"],
                "cpu_vs_dense": statistics.median(cpus[kind]) / statistics.median(cpus["dense"]),
            }
            if kind in SIZED_GOAL:
                row["goal_vs_dense"] = SIZED_GOAL[kind]
            if kind == "mixed":
                row["parts_ms"] = ms["part_bits"] + ms["part_dense"]
                row["parts_cpu_ms"] = sum(statistics.median(cpus[p]) for p in parts)
                row["vs_parts"] = ms[kind] / row["parts_ms"]
            rows.append(row)
            print(
                f"  cpu {group} 2^{log_n} {kind}: {row['ms']:.1f} ms "
                f"(CPU {row['cpu_ms']:.1f}), {row['vs_dense']:.3f}x dense"
                + (f", parts {row['parts_ms']:.1f} ms" if "parts_ms" in row else ""),
                flush=True,
            )
    return rows


def table_kernels() -> str:
    """The kernels the tables rows run on: the native library's where it is built for BN254
    here (cuzk.native: what the daemon's CPU devices run), else Numba's builds."""
    from cuzk import native

    with native.used():
        return "native" if native.library("bn254") is not None else "numba"


def _table_rows(group, sizes, repeats, kernels="numba"):
    """CPU rows of dense MSMs over a table of multiples (msm_cpu.build_table with the engine's
    default msm_tables) against the plain MSM of the same points and scalars, the two
    alternating within each repeat: CPU time (least), wall (median), the table's bytes
    against the point set's, its plan (factor f, window c, folded windows Kf) and build; on
    ``kernels`` ("native": the library's, checked to have run; "numba")."""
    from cuzk import native

    with native.used(kernels == "native"):
        before = dict(native.calls)
        rows = _table_rows_on(group, sizes, repeats)
        ran = {k for k, v in native.calls.items() if v > before.get(k, 0)}
    wanted = (f"table_fill_{group}", f"pippenger_table_{group}_", f"pippenger_{group}_")
    if kernels == "native" and not all(any(r.startswith(w) for r in ran) for w in wanted):
        raise AssertionError(f"{group}: the tables rows did not run on the native library: {ran}")
    return [{**r, "kernels": kernels} for r in rows]


def _table_rows_on(group, sizes, repeats):
    from cuzk.engine.settings import ENGINE_SETTING
    from cuzk.kernels import msm_cpu as mod

    factor = ENGINE_SETTING["msm_tables"].default
    fn = mod.msm_g1 if group == "g1" else mod.msm_g2
    rng = np.random.default_rng(13)
    rows = []
    for log_n in sizes:
        n = 1 << log_n
        pts = points(group, n)
        sc = scalars(rng, n)
        fn(pts, sc)  # warm-up: compile or load the cache
        c0, t0 = time.process_time(), time.perf_counter()
        table = mod.build_table(pts, factor, g=int(group[1]))
        build_s, build_cpu_s = time.perf_counter() - t0, time.process_time() - c0
        if table is None:
            continue
        if not np.array_equal(fn(table, sc), fn(pts, sc)):
            raise AssertionError(f"{group} 2^{log_n}: the table's MSM differs from the plain one")
        runs = {"plain": [], "table": []}
        for _ in range(repeats):
            for kind, src in (("plain", pts), ("table", table)):
                runs[kind].append(_measure(lambda src=src, sc=sc: fn(src, sc), 1))
        plain_cpu = min(r[3] for r in runs["plain"])
        table_cpu = min(r[3] for r in runs["table"])
        row = {
            "group": group,
            "log2n": log_n,
            "factor": table.factor,
            "window": table.c,
            "windows": table.windows,
            "plain_ms": statistics.median(r[0] for r in runs["plain"]),
            "table_ms": statistics.median(r[0] for r in runs["table"]),
            "plain_cpu_min_ms": plain_cpu,
            "table_cpu_min_ms": table_cpu,
            "cpu_vs_plain": table_cpu / plain_cpu,
            "points_bytes": int(pts.nbytes),
            "table_bytes": table.nbytes,
            "x_memory": table.nbytes / pts.nbytes,
            "build_s": build_s,
            "build_cpu_s": build_cpu_s,
        }
        rows.append(row)
        print(
            f"  cpu {group} 2^{log_n} table f = {table.factor} (c = {table.c}, Kf = "
            f"{table.windows}): CPU {table_cpu:.1f} ms against {plain_cpu:.1f} "
            f"({row['cpu_vs_plain']:.3f}x), {table.nbytes / 2**20:.1f} MiB, built in "
            f"{build_s:.1f} s",
            flush=True,
        )
    return rows


TABLE_COLUMNS = [
    "kernels",
    "group",
    "log2n",
    "factor",
    "window",
    "windows",
    "plain_ms",
    "table_ms",
    "plain_cpu_min_ms",
    "table_cpu_min_ms",
    "cpu_vs_plain",
    "points_bytes",
    "table_bytes",
    "x_memory",
    "build_s",
    "build_cpu_s",
]

SIZED_COLUMNS = [
    "group",
    "log2n",
    "scalars",
    "ms",
    "min_ms",
    "cpu_ms",
    "vs_dense",
    "cpu_vs_dense",
    "goal_vs_dense",
    "parts_ms",
    "parts_cpu_ms",
    "vs_parts",
]

COLUMNS = [
    "curve",
    "group",
    "log2n",
    "ms",
    "min_ms",
    "cpu_ms",
    "cpu_min_ms",
    "ns_per_point",
    "window",
    "cores_used",
    "vs_bn254",
    "target_ms",
]
FLOOR_COLUMNS = [
    "curve",
    "group",
    "log2n",
    "window",
    "windows",
    "bucket_adds",
    "sum_adds",
    "cpu_min_ms",
    "ns_per_add",
    "floor_ns_per_add",
    "floor_ms",
    "x_floor",
]
X_FLOOR_GOAL = 1.3  # issue #35: dense MSMs within 1.3x of their floor (bench.floor)
X_FLOOR_FROM = 12  # ... from 2^12 points up


def _bls_rows(target, profile, repeats, bn254_rows, product_ns=None):
    """BLS12-381's rows of BLS_SIZES, each with vs_bn254 (÷ the BN254 row of its group and
    size in this run, when there is one)."""
    rows = []
    for group, log_n in BLS_SIZES[profile]:
        (row,) = _rows(target, group, [log_n], repeats, BLS, product_ns)
        bn = find_row(bn254_rows, curve="bn254", group=group, log2n=log_n)
        if bn:
            row["vs_bn254"] = row["ms"] / bn["ms"]
        rows.append(row)
    return rows


def _product_costs():
    """The Fq product's CPU ns on one core, per curve (bench.floor.product_ns)."""
    return {"bn254": floor.product_ns("fq_mul"), BLS: floor.product_ns("bls12_381 fq_mul")}


def run(profile: str = "quick") -> dict:
    import numba

    repeats = REPEATS[profile]
    result = {"threads": numba.config.NUMBA_NUM_THREADS, "cores": os.cpu_count()}
    if profile == "gpu":
        from numba import cuda

        result["device"] = str(cuda.get_current_device().name)
        result["gpu"] = _rows("cuda", "g1", G1_SIZES["gpu"], repeats)
        result["gpu"] += _rows("cuda", "g2", G2_SIZES["gpu"], repeats)
        result["gpu"] += _bls_rows("cuda", "gpu", repeats, result["gpu"])
        print(table(result["gpu"], COLUMNS))
        profile = "quick"
    # The Fq product's cost in this run (bench.bench_arith's four interleaved chains, CPU
    # time on one core, the least of 5) before the rows ...
    product_ns = _product_costs()
    result["cpu"] = _rows("cpu", "g1", G1_SIZES[profile], REPEATS[profile], "bn254", product_ns)
    result["cpu"] += _rows("cpu", "g2", G2_SIZES[profile], REPEATS[profile], "bn254", product_ns)
    result["cpu"] += _bls_rows("cpu", profile, REPEATS[profile], result["cpu"], product_ns)
    # ... and again after the rows: the less disturbed of the two prices every row
    after = _product_costs()
    product_ns = {k: min(v, after[k]) for k, v in product_ns.items()}
    result["fq_mul_ns"] = product_ns["bn254"]
    result["bls12_381_fq_mul_ns"] = product_ns[BLS]
    for row in result["cpu"]:
        if "floor_products" in row:
            row |= _price(row, row["group"], product_ns[row["curve"]])
    print(f"  Fq product {product_ns['bn254']:.2f} ns, BLS12-381's {product_ns[BLS]:.2f} ns")
    print(table(result["cpu"], COLUMNS))
    print(table(result["cpu"], FLOOR_COLUMNS))
    result["sized"] = []
    for group, sizes in SIZED[profile].items():
        result["sized"] += _sized_rows(group, sizes, REPEATS[profile])
    print(table(result["sized"], SIZED_COLUMNS))
    result["tables"] = []
    kernels = table_kernels()
    for group, sizes in TABLES[profile].items():
        result["tables"] += _table_rows(group, sizes, REPEATS[profile], kernels)
    print(table(result["tables"], TABLE_COLUMNS))
    return result


# --- what the report shows: targets and plot ----------------------------------------------------


def _bn254(rows):
    """BN254's rows (results from before the curve column are all BN254's)."""
    return [r for r in rows or [] if r.get("curve", "bn254") == "bn254"]


def floor_targets(msm) -> list[dict]:
    """Issue #35's target 1: every dense BN254 MSM from 2^12 points within X_FLOOR_GOAL of its
    floor (bench.floor: CPU time over the counted products at this run's product cost)."""
    out = []
    for row in _bn254(msm and msm.get("cpu")):
        if row.get("x_floor") is None or row["log2n"] < X_FLOOR_FROM:
            continue
        out.append(
            target(
                f"MSM {row['group'].upper()} 2^{row['log2n']} dense, CPU time ÷ its floor",
                "#35",
                X_FLOOR_GOAL,
                "x",
                row["x_floor"],
                note=(
                    f"{row['ns_per_add']:.0f} ns per affine addition against "
                    f"{row['floor_ns_per_add']:.0f} ({row['bucket_adds']} bucket + "
                    f"{row['sum_adds']} bucket-sum additions, c = {row['window']}); Fq "
                    f"product {msm.get('fq_mul_ns', 0):.2f} ns in the same run"
                ),
                suite="msm",
            )
        )
    return out


def targets(get) -> list[dict]:
    """Issue #3's targets: MSM G1 2^16 on the CPU <= 200 ms, 2^20 on a GPU <= 20 ms."""
    msm = get()
    g1 = find_row(_bn254(msm and msm.get("cpu")), group="g1", log2n=16)
    gmsm = get("gpu")
    g20 = find_row(_bn254(gmsm and gmsm.get("gpu")), group="g1", log2n=20)
    sized = []
    for group, log_n in (("g1", 16), ("g2", 12)):
        for kind, goal in SIZED_GOAL.items():
            row = find_row(msm and msm.get("sized"), group=group, log2n=log_n, scalars=kind)
            sized.append(
                target(
                    f"MSM {group.upper()} 2^{log_n}, {kind} scalars ÷ dense, CPU",
                    "#25",
                    goal,
                    "x",
                    row and row.get("vs_dense"),
                    note=row and f"CPU time {row.get('cpu_vs_dense', 0):.3f}x dense",
                    suite="msm",
                )
            )
    return (
        sized
        + floor_targets(msm)
        + [
            target(
                "MSM G1 2^16, CPU",
                "#3",
                200.0,
                "ms",
                g1 and g1.get("ms"),
                best=g1 and g1.get("min_ms"),
                note=g1 and busy_note(g1.get("cpu_ms"), g1.get("cores_used")),
                suite="msm",
            ),
            target(
                "MSM G1 2^20, GPU",
                "#3",
                20.0,
                "ms",
                g20 and g20.get("ms"),
                best=g20 and g20.get("min_ms"),
                note=(f"on {gmsm.get('device')}" if gmsm else "needs a CUDA GPU: `make bench-gpu`"),
                suite="msm",
                profile="gpu",
            ),
        ]
    )


def plot(name, entry, res, img):
    made = []
    for part in ("cpu", "gpu"):
        rows = res.get(part)
        if not rows:
            continue
        fig, (ax,) = plots.figure(f"MSM, {part.upper()}: ms by size", entry)
        series = [{**r, "series": f"{r.get('curve', 'bn254')} {r['group']}"} for r in rows]
        plots.lines(ax, series, "log2n", ["ms"], group="series", labels={"ms": "ms"})
        for r in rows:
            if r.get("target_ms"):
                plots.mark_target(
                    ax, r["log2n"], r["target_ms"], f"target {r['group']} 2^{r['log2n']}"
                )
        ax.set_xticks(sorted({r["log2n"] for r in rows}))
        ax.set_xlabel("log2 n (points)")
        ax.set_ylabel("ms (median)")
        ax.legend(fontsize=7)
        made.append((f"MSM {part}", plots.save(fig, f"bench-{name}-{part}.png", img)))
    return made


if __name__ == "__main__":
    from bench.__main__ import main

    sys.exit(main(["--suite", "msm", "--profile", sys.argv[1] if len(sys.argv) > 1 else "quick"]))
