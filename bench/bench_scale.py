"""Suite `scale`: issue #35's target 5, a 2^21 and a 2^22 proof on this machine.

The full profile: 8 and 16 SHA-256 digests of 8-block messages in one proof
(bench.circuits' sha256batch, 2^21 and 2^22: circom2, circom in 32-bit
WebAssembly, runs out of its 4 GiB compiling a single SHA-256 of 67 blocks), one proof at a
time so that no two hold a key at once: rapidsnark's command and the `cuzk prove` command
alternating, SCALE_REPEATS rounds (the least time of each; cuzk's largest peak RSS against
rapidsnark's least), then a fresh `cuzk serve` with its defaults: `cuzk prove --server` once
to load the key (and build any tables of multiples it plans), then SCALE_REPEATS times with
it resident (the least), and the peak memory of the daemon's processes together over all of
it (PSS summed, its shared-memory segments by their allocated pages, sampled every 0.2 s:
TreePeak; RSS summed beside it), every proof checked by cuzk's verifier.
Targets: both times <= 0.7x rapidsnark's command, both memories <= its peak RSS. A circuit
that cannot be built or proved here gets a row with the reason.
The quick profile has no rows (the keys alone take ~11 minutes to make here); smoke runs the
same code on a tiny circuit. Run alone: ``python -m bench --profile full --suite scale``.
"""

from __future__ import annotations

import json
import os
import tempfile

from bench.bench_prove import _run_measured, cuzk_prove, find_rapidsnark, last_job_seconds
from bench.circuits import circuit
from bench.machine import compile_bytecode
from bench.tables import find_row, fmt, table, target

# (family, log2n) of the scale rows (issue #35's target 5): the `cuzk prove` command, through
# a fresh `cuzk serve` (a first job that loads the key, then jobs with it resident) and
# rapidsnark's command, with time and peak memory (SCALE_REPEATS rounds); the full profile's
# SHA-256 of 64 and 128 blocks in all (bench.circuits' sha256batch: circom2 cannot compile
# one SHA-256 that long); the smoke profile's tiny circuit runs the same code.
SCALE = {
    "smoke": [("toyhash", 10)],
    "quick": [],
    "full": [("sha256batch", 21), ("sha256batch", 22)],
    "gpu": [],
}
SCALE_TIME_GOAL = 0.7  # the command's and the warm daemon's time ÷ rapidsnark's command
# Rounds of each timed proof (commands alternating; the daemon's resident jobs): a 2^22 proof
# moved by ~10% between single runs on this shared machine (rapidsnark 21.8 s, then 20.0 s).
SCALE_REPEATS = {"smoke": 1, "quick": 1, "full": 3, "gpu": 1}


class TreePeak:
    """The peak, over samples every `every` seconds, of a process tree's memory summed over
    its processes (the root and every descendant alive at the sample): RSS (shared pages
    counted once per process that maps them: an upper bound) and PSS (each shared page split
    between its mappers: the tree's share of physical memory), from /proc/PID/smaps_rollup.
    The engine's shared-memory segments (/dev/shm/cuzkbuf.ROOT.*, cuzk.engine.buffers) count
    in PSS by the pages allocated to them, mapped or not (a partition's buffers wait unmapped
    between synthesis and the device; pages handed back early do not count): each process's
    PSS without its shared-memory part, plus the segments' allocated bytes."""

    def __init__(self, pid: int, every: float = 0.2):
        import threading

        self.pid, self.every = pid, every
        self.rss_kib = self.pss_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @staticmethod
    def _rollup(pid: int) -> tuple[int, int]:
        """(RSS, PSS without shared memory) of one process, KiB."""
        rss = pss = shmem = 0
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss = int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss = int(line.split()[1])
                    elif line.startswith("Pss_Shmem:"):
                        shmem = int(line.split()[1])
        except OSError:  # gone between listing and reading
            pass
        return rss, pss - shmem

    def _segments_kib(self) -> int:
        """KiB allocated to the engine's shared-memory segments (holes punched excluded)."""
        from cuzk.engine.buffers import SHM_DIR, list_segments

        total = 0
        for name in list_segments(self.pid):
            try:
                total += os.stat(os.path.join(SHM_DIR, name)).st_blocks * 512 // 1024
            except OSError:  # unlinked between listing and stat
                pass
        return total

    def _run(self):
        import psutil

        while not self._stop.is_set():
            try:
                root = psutil.Process(self.pid)
                pids = [self.pid] + [c.pid for c in root.children(recursive=True)]
            except psutil.Error:
                return
            rss, pss = 0, self._segments_kib()
            for pid in pids:
                r, p = self._rollup(pid)
                rss, pss = rss + r, pss + p
            self.rss_kib, self.pss_kib = max(self.rss_kib, rss), max(self.pss_kib, pss)
            self._stop.wait(self.every)


def _read_through(*paths) -> None:
    """Read files once (into the page cache), so that no command measured pays a cold read."""
    for path in paths:
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass


def _scale_row(
    family: str, log2n: int, device: str, rapidsnark: str | None, repeats: int = 1
) -> dict:
    """One scale row (see SCALE): the commands first, alternating, ``repeats`` rounds, then
    the daemon, one proof at a time, so that no two of them hold a large key at once."""
    from bench.bench_prove_server import start_daemon, stop_daemon, tables_ready
    from cuzk.client import Client
    from cuzk.groth16.verifier import verify_files

    files = circuit(family, log2n)
    work = files["zkey"].parent
    info = json.loads(files["info"].read_text())
    row = {
        "family": family,
        "log2n": log2n,
        "constraints": info.get("constraints"),
        "size": f"{info.get('steps')} {info.get('unit', 'steps')}",
        "key_by": " ".join(str(info.get("setup", "?")).split()[:2]),
        "key_mib": files["zkey"].stat().st_size / 2**20,
    }
    _read_through(files["zkey"], files["wtns"])
    tags = ["scale"]
    runs: dict = {"rapidsnark": [], "cuzk": []}
    for _ in range(max(1, repeats)):
        if rapidsnark:
            cmd = [
                rapidsnark,
                files["zkey"],
                files["wtns"],
                work / "p_rs.json",
                work / "pub_rs.json",
            ]
            runs["rapidsnark"].append(_run_measured(cmd))
            print(f"  scale {family} 2^{log2n}: rapidsnark {runs['rapidsnark'][-1][0]:.2f} s")
        runs["cuzk"].append(_run_measured(cuzk_prove(files, "scale", "--device", device)))
        print(f"  scale {family} 2^{log2n}: cuzk prove {runs['cuzk'][-1][0]:.2f} s", flush=True)
    if rapidsnark:
        row["rapidsnark_s"] = min(t for t, _ in runs["rapidsnark"])
        row["rapidsnark_rss_mib"] = min(m for _, m in runs["rapidsnark"])  # (ours: the most)
        row["rapidsnark_runs_s"] = [round(t, 3) for t, _ in runs["rapidsnark"]]
        tags.append("rs")
    row["cuzk_cmd_s"] = min(t for t, _ in runs["cuzk"])
    row["cuzk_rss_mib"] = max(m for _, m in runs["cuzk"])
    row["cuzk_cmd_runs_s"] = [round(t, 3) for t, _ in runs["cuzk"]]
    with tempfile.TemporaryDirectory(prefix="cuzk-bench-scale-") as folder:
        proc, url = start_daemon(folder)
        try:
            client = Client(url, timeout=7200)
            with TreePeak(proc.pid) as peak:
                row["server_first_s"] = _run_measured(
                    cuzk_prove(files, "scale_first", "--server", url)
                )[0]
                row["daemon_first_job_s"] = last_job_seconds(client)
                # the key's tables, built beside its first job: in place for the next
                row["daemon_tables_wait_s"] = tables_ready(client.keys, timeout=7200)
                served, jobs = [], []
                for _ in range(max(1, repeats)):
                    served.append(_run_measured(cuzk_prove(files, "server", "--server", url))[0])
                    jobs.append(last_job_seconds(client))
                row["server_cmd_s"], row["daemon_job_s"] = min(served), min(jobs)
                row["server_runs_s"] = [round(t, 3) for t in served]
        finally:
            stop_daemon(proc)
    tags += ["scale_first", "server"]
    row["daemon_rss_mib"] = peak.rss_kib / 1024.0
    row["daemon_pss_mib"] = peak.pss_kib / 1024.0
    print(
        f"  scale {family} 2^{log2n}: through the daemon {row['server_first_s']:.2f} s (key "
        f"loaded), then {row['server_cmd_s']:.2f} s (resident); its processes' peak "
        f"{row['daemon_pss_mib']:.0f} MiB (PSS)",
        flush=True,
    )
    row["proofs_valid"] = all(
        verify_files(files["vk"], work / f"pub_{t}.json", work / f"p_{t}.json") for t in tags
    )
    if rapidsnark:
        r_s, r_mib = row["rapidsnark_s"], row["rapidsnark_rss_mib"]
        row.update(
            cmd_vs_rapidsnark=row["cuzk_cmd_s"] / r_s,
            server_vs_rapidsnark=row["server_cmd_s"] / r_s,
            rss_vs_rapidsnark=row["cuzk_rss_mib"] / r_mib,
            daemon_mem_vs_rapidsnark=row["daemon_pss_mib"] / r_mib,
        )
    row["load_avg"] = round(os.getloadavg()[0], 1)
    if not row["proofs_valid"]:
        raise RuntimeError(f"a scale proof of {family} 2^{log2n} does not verify")
    return row


SCALE_COLUMNS = [
    "family",
    "log2n",
    "constraints",
    "key_mib",
    "cuzk_cmd_s",
    "server_first_s",
    "server_cmd_s",
    "daemon_job_s",
    "rapidsnark_s",
    "cmd_vs_rapidsnark",
    "server_vs_rapidsnark",
    "cuzk_rss_mib",
    "daemon_pss_mib",
    "rapidsnark_rss_mib",
    "rss_vs_rapidsnark",
    "daemon_mem_vs_rapidsnark",
    "load_avg",
    "error",
]


def scale(profile: str, circuits: list, rapidsnark: str | None) -> list[dict]:
    """The scale rows (SCALE), beside rapidsnark's command where there is one: a circuit that
    cannot be built or proved here gets a row with its error instead (the reason, e.g. what
    ran out of memory), and the rest still run."""
    device = "cuda" if profile == "gpu" else "cpu"
    rows = []
    for family, log2n in circuits:
        print(f"  scale: {family} 2^{log2n} ...", flush=True)
        try:
            rows.append(_scale_row(family, log2n, device, rapidsnark, SCALE_REPEATS[profile]))
        except Exception as exc:  # say why, keep the suite's other figures
            print(f"  scale {family} 2^{log2n} failed: {exc}", flush=True)
            rows.append({"family": family, "log2n": log2n, "error": str(exc)[-1500:]})
    print(table(rows, [c for c in SCALE_COLUMNS if any(c in r for r in rows)]))
    return rows


def kernels() -> str:
    """Which CPU kernels the commands and the daemon run here: the native library's where it
    is built for BN254 and this source, else Numba's builds (slower to load, more memory)."""
    from cuzk import native

    with native.used():
        if native.library("bn254") is not None:
            return "native"
    return "numba (the native library is not built for this source: python -m cuzk.native.build)"


def run(profile: str = "quick") -> dict:
    compile_bytecode()  # the commands run as installed (see bench.machine.compile_bytecode)
    rapidsnark, origin = find_rapidsnark()
    return {
        "kernels": kernels(),
        "rows": scale(profile, SCALE[profile], rapidsnark),
        "rapidsnark": {"installed": bool(rapidsnark), "origin": origin},
    }


def targets(get) -> list[dict]:
    """Issue #35's target 5, from the full profile's scale rows (SCALE): a 2^21 and a 2^22
    proof complete as a command and through the daemon, each in <= 0.7x rapidsnark's command
    (the daemon's with its key resident) and within rapidsnark's peak RSS (the daemon's: its
    processes' PSS summed, its tables of multiples included, as its memory budget allows)."""
    full = get("full") or {}
    have = bool(full.get("rapidsnark", {}).get("installed"))
    out = []
    for family, log2n in SCALE["full"]:
        r = find_row(full.get("rows"), family=family, log2n=log2n) or {}
        ok = have and "rapidsnark_s" in r
        if ok:
            why = ""
        elif r.get("error"):
            why = f"failed: {r['error'][-300:]}"
        elif full and not have:
            why = "rapidsnark not built here (README: rapidsnark as a peer)"
        else:
            why = "no full-profile run"
        goals = [
            (
                "`cuzk prove`, whole command ÷ rapidsnark's",
                SCALE_TIME_GOAL,
                "cmd_vs_rapidsnark",
                lambda r: f"cuzk {fmt(r['cuzk_cmd_s'])} s, rapidsnark {fmt(r['rapidsnark_s'])} s",
            ),
            (
                "`cuzk prove --server` (key resident) ÷ rapidsnark's command",
                SCALE_TIME_GOAL,
                "server_vs_rapidsnark",
                lambda r: (
                    f"command {fmt(r['server_cmd_s'])} s (daemon {fmt(r['daemon_job_s'])} s; "
                    f"its first job, loading the key, {fmt(r['server_first_s'])} s), "
                    f"rapidsnark {fmt(r['rapidsnark_s'])} s"
                ),
            ),
            (
                "`cuzk prove`, peak RSS ÷ rapidsnark's",
                1.0,
                "rss_vs_rapidsnark",
                lambda r: f"{fmt(r['cuzk_rss_mib'])} / {fmt(r['rapidsnark_rss_mib'])} MiB",
            ),
            (
                "the daemon's processes, peak memory (PSS) ÷ rapidsnark's peak RSS",
                1.0,
                "daemon_mem_vs_rapidsnark",
                lambda r: (
                    f"{fmt(r['daemon_pss_mib'])} / {fmt(r['rapidsnark_rss_mib'])} MiB "
                    f"(RSS summed {fmt(r['daemon_rss_mib'])} MiB)"
                ),
            ),
        ]
        for name, goal, column, note in goals:
            out.append(
                target(
                    f"{family} 2^{log2n}: {name}",
                    "#35",
                    goal,
                    "x",
                    r.get(column) if ok else None,
                    note=(note(r) + f"; load {fmt(r.get('load_avg'))}") if ok else why,
                    suite="scale",
                    profile="full",
                )
            )
    return out
