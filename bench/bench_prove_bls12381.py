"""Suite `prove-bls12381`: `cuzk prove` against `snarkjs groth16 prove` on BLS12-381 (issue #28).

The prove suite's measurement (bench.bench_prove.measure: the same commands, rounds,
in-process proof, witness profile and verification) on circuits compiled with circom2's
`--prime bls12381` (bench.circuits, bench/work/bls12381/): the squaring chain at every size,
circomlib's SHA-256 and range checks (Num2Bits/LessThan) at 2^15 and 2^17, the range checks
and the chain at 2^12 as well, 2^19 in the full profile. Each cuzk proof is checked by cuzk's
verifier and by `snarkjs groth16 verify`. snarkjs runs once per circuit from 2^16 (no untimed
warm-up there: a BLS12-381 proof in JavaScript takes minutes at 2^17) and every round below.
Not here: rapidsnark refuses BLS12-381 keys ("zkey curve not supported"); circomlib's Poseidon
Merkle paths and EdDSA-Poseidon, which circomlib defines for BN254 only: Poseidon's round
constants and MDS matrix were generated for BN254's r (over BLS12-381's r the circuit would
compile, as any constants do, but compute a hash no one uses), and BabyJubjub is a curve over
BN254's r, so circomlibjs's signatures cannot verify in a circuit over BLS12-381's r (not run
here: reasoned from circomlib's sources).
Keys: `snarkjs groth16 setup` where a BLS12-381 powers-of-tau file covers the circuit (made by
snarkjs on first use up to 2^12, ~3 min at 2^12 on 2 cores; a larger
bench/work/bls12381/pot<k>.ptau made by hand with snarkjs is used too), `cuzk setup` above.
The daemon: one `cuzk serve` on loopback (bench.bench_prove_server.start_daemon, key root
bench/work) serves every circuit; `cuzk prove --server` runs in the same rounds, after one
untimed request that registers the key (its points checked, G1's subgroup included), and the
daemon's own time per job (submitted -> finished) is recorded beside the whole command's.
Each proof, the command's and the daemon's, is checked by cuzk's verifier and by snarkjs.
Targets (issue #28): `cuzk prove` >= 10x faster than `snarkjs groth16 prove` as whole
commands at 2^15 and up; the warm daemon >= 20x, read both as the in-process proof with the
key resident (what `cuzk serve` pays per proof) and as the whole `cuzk prove --server`
command.
Run alone: ``python -m bench.bench_prove_bls12381 [smoke|quick|full|gpu]``.
"""

from __future__ import annotations

import sys
import tempfile

from bench import bench_prove, bench_prove_server
from bench.circuits import real_families
from bench.tables import family_row, fmt, table, target

CURVE = "bls12_381"
FAMILIES = ("squarechain",) + real_families(CURVE)  # sha256, range
CIRCUITS = {
    "smoke": [("squarechain", 8)],
    "quick": [("squarechain", 12), ("range", 12)] + [(f, k) for k in (15, 17) for f in FAMILIES],
    "full": [("squarechain", 12), ("range", 12)] + [(f, k) for k in (15, 17, 19) for f in FAMILIES],
    "gpu": [("squarechain", 16), ("squarechain", 18)],
}
SLOW_PEER_LOG2N = 16  # from 2^16 snarkjs proves once per circuit
TARGET_CMD = 10.0  # snarkjs's command ÷ cuzk's, at 2^15 and up
TARGET_WARM = 20.0  # snarkjs's command ÷ cuzk's in-process proof (the warm daemon)
NO_RAPIDSNARK = "rapidsnark refuses BLS12-381 keys (zkey curve not supported)"


def run(profile: str = "quick") -> dict:
    from cuzk.client import Client

    with tempfile.TemporaryDirectory(prefix="cuzk-bench-serve381-") as folder:
        proc, url = bench_prove_server.start_daemon(folder)  # key root bench/work
        try:
            res = bench_prove.measure(
                profile,
                CIRCUITS[profile],
                curve=CURVE,
                no_rapidsnark=NO_RAPIDSNARK,
                slow_peer_log2n=SLOW_PEER_LOG2N,
                snarkjs_verify=True,
                server=Client(url, timeout=1800),
            )
        finally:
            bench_prove_server.stop_daemon(proc)
    res["daemon"] = "cuzk serve on loopback, default devices, key root bench/work"
    return res


def targets(get) -> list[dict]:
    """Issue #28's speed targets on every family at 2^15, 2^17 (quick) and 2^19 (full):
    snarkjs's command ÷ `cuzk prove`'s >= 10x, ÷ the in-process proof >= 20x."""
    res = get()
    skipped = {(s["family"], s["log2n"]): s["why"] for s in (res or {}).get("skipped", [])}
    out = []
    for family in FAMILIES:
        for log2n in (15, 17, 19):
            r, where = family_row(get, family, log2n)
            why = skipped.get((family, log2n), "no run at this size")
            wit = f"; witness {r['witness_pct_0/1/small/dense']} %" if r else ""
            for name, goal, column, note in (
                (
                    f"BLS12-381 {family} 2^{log2n}: `snarkjs groth16 prove` ÷ `cuzk prove`",
                    TARGET_CMD,
                    "speedup_vs_snarkjs",
                    lambda r: f"cuzk {fmt(r['cuzk_cmd_s'])} s, snarkjs {fmt(r['snarkjs_s'])} s",
                ),
                (
                    f"BLS12-381 {family} 2^{log2n}: snarkjs ÷ cuzk, key loaded (daemon's case)",
                    TARGET_WARM,
                    "speedup_warm_vs_snarkjs",
                    lambda r: (
                        f"in process {fmt(r['cuzk_warm_s'])} s, snarkjs {fmt(r['snarkjs_s'])} s"
                    ),
                ),
                (
                    f"BLS12-381 {family} 2^{log2n}: snarkjs ÷ `cuzk prove --server` "
                    "(warm daemon, whole command)",
                    TARGET_WARM,
                    "speedup_server_vs_snarkjs",
                    lambda r: (
                        f"command {fmt(r['server_cmd_s'])} s (daemon "
                        f"{fmt(r['daemon_job_s'])} s), snarkjs {fmt(r['snarkjs_s'])} s"
                    ),
                ),
            ):
                out.append(
                    target(
                        name,
                        "#28",
                        goal,
                        "x",
                        r.get(column) if r else None,
                        upper=False,
                        note=(
                            (note(r) + wit + where)
                            if r and column in r
                            else (why[:160] if not r else "not in this run" + where)
                        ),
                        suite="prove-bls12381",
                        profile="full" if where else "quick",
                    )
                )
    return out


COLUMNS = [
    "family",
    "log2n",
    "constraints",
    "size",
    "witness_pct_0/1/small/dense",
    "cuzk_cmd_s",
    "cuzk_warm_s",
    "snarkjs_s",
    "speedup_vs_snarkjs",
    "speedup_warm_vs_snarkjs",
    "server_cmd_s",
    "daemon_job_s",
    "speedup_server_vs_snarkjs",
    "startup_s",
    "cuzk_rss_mib",
    "snarkjs_rss_mib",
    "cuzk_proof_valid",
    "snarkjs_verify",
]


def summary(get) -> list[str]:
    """The side-by-side table on BLS12-381, in words, and what was skipped."""
    res = get()
    if not res:
        return []
    lines = []
    if res.get("rows"):
        lines += [
            "**BLS12-381: `cuzk prove` against `snarkjs groth16 prove`, whole commands "
            "alternating on the same files** (seconds, medians; `speedup_*` is snarkjs's "
            "time ÷ cuzk's; RSS in MiB):",
            "",
            table(res["rows"], [c for c in COLUMNS if any(c in r for r in res["rows"])]),
            bench_prove.prose(res),
            "",
        ]
    if res.get("skipped"):
        lines += [
            "Not measured on BLS12-381: "
            + ", ".join(f"{s['family']} 2^{s['log2n']}" for s in res["skipped"])
            + ". Why, for the first: "
            + res["skipped"][0]["why"].split(": ", 1)[-1],
            "",
        ]
    return lines


def plot(name, entry, res, img):
    return bench_prove.plot(name, entry, res, img)


if __name__ == "__main__":
    from bench.__main__ import main

    profile = sys.argv[1] if len(sys.argv) > 1 else "quick"
    sys.exit(main(["--suite", "prove-bls12381", "--profile", profile]))
