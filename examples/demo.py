"""`make demo`: the whole main job on this machine, from a circuit to verified proofs.

    python examples/demo.py [--devices cpu:2] [--keep]

1. proving keys made by `cuzk setup` (development-only single-party setup) for the demo
   circuit (tests/circuits/toyhash.circom) on each curve: on BN254 as compiled in
   tests/fixtures/toyhash/, on BLS12-381 compiled here by circom2 with `-p bls12381` (the
   committed tests/fixtures/tiny381 circuit if circom2 is not installed);
2. fresh witnesses for random inputs (snarkjs wtns calculate on the circuit's wasm; the
   committed witnesses if snarkjs is not installed); for BLS12-381 the daemon computes them
   from the inputs (the key is registered with its wasm);
   and a PLONK key (snarkjs's protocol: no per-circuit ceremony) of the committed mulchain
   circuit, made by `snarkjs plonk setup` from the committed powers of tau (the committed
   tests/fixtures/mulchain/plonk.zkey if snarkjs is not installed), registered with its
   wasm;
3. `cuzk serve` on CPU devices, as a real daemon process, with the three keys side by side
   (its default prover proves Groth16 and PLONK keys);
4. partitioned jobs of mixed kinds, priorities, curves and proof systems submitted into its
   one queue over its HTTP API, witnesses uploaded, given by path, or computed from circuit
   inputs; the critical job, submitted last, overtakes;
5. every proof verified by the project's verifiers against public signals computed here in
   plain Python (an outside reference), one of each key also by `snarkjs groth16 verify` or
   `snarkjs plonk verify`;
6. one `cuzk top --once` frame, a summary, and SIGTERM: the daemon drains and exits 0 with no
   shared-memory segment left behind.

Exit status 0 when every step succeeded.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from cuzk.arith.constants import FR_MODULUS as R
from cuzk.formats.curve import by_name

R381 = by_name("bls12_381").r  # BLS12-381's scalar field

ROOT = Path(__file__).resolve().parent.parent
CIRCUIT = ROOT / "tests" / "fixtures" / "toyhash"
TINY381 = ROOT / "tests" / "fixtures" / "tiny381"  # tiny on BLS12-381, if circom2 is missing
MULCHAIN = ROOT / "tests" / "fixtures" / "mulchain"  # the PLONK job's circuit
PTAU = ROOT / "tests" / "fixtures" / "pot10.ptau"  # powers of tau for its PLONK key
SNARKJS_DIR = ROOT / ".tools" / "node_modules" / "snarkjs"
SNARKJS_BIN = ROOT / ".tools" / "node_modules" / ".bin" / "snarkjs"
CIRCOM2_BIN = ROOT / ".tools" / "node_modules" / ".bin" / "circom2"
CLI = [sys.executable, "-m", "cuzk.cli"]
CURVE_TITLES = {"bn254": "BN254", "bls12_381": "BLS12-381", "plonk": "BN254"}

# (kind, priority, partitions, key), in submission order: the critical job comes last; a
# key is its curve's Groth16 key, or "plonk" (BN254)
JOBS = [
    ("porep-c2", "normal", 8, "bn254"),
    ("snap-update", "normal", 6, "bn254"),
    ("porep-c2", "normal", 4, "bls12_381"),  # circuit inputs: the daemon computes witnesses
    ("plonk-proof", "normal", 4, "plonk"),  # PLONK, circuit inputs too
    ("window-post", "high", 4, "bn254"),
    ("winning-post", "critical", 2, "bn254"),
]


def toyhash_public(x: int, k: int, rounds: int = 300, R: int = R) -> list[str]:
    """The circuit's public signals [h, h2, k] computed directly (tests/circuits/toyhash.circom:
    s <- (s + k + c_i)^5 for `rounds` rounds, c_0 = 7, c_{i+1} = c_i^2 + 13, all mod r, the
    scalar field R of the curve it is compiled for)."""
    s, c, states = x % R, 7, [x % R]
    for _ in range(rounds):
        s = pow((s + k + c) % R, 5, R)
        states.append(s)
        c = (c * c + 13) % R
    return [str((states[rounds] + k) % R), str((states[rounds // 2] * 2 + 1) % R), str(k % R)]


def mulchain_public(x: int, y: int, n: int = 8) -> list[str]:
    """tests/circuits/mulchain.circom's public signals [out, sum, x] computed directly: out =
    x * prod_{i=1..n} (y^i + 3), sum = x + y, mod r."""
    out = x % R
    for i in range(1, n + 1):
        out = out * (pow(y, i, R) + 3) % R
    return [str(out), str((x + y) % R), str(x % R)]


class Demo:
    def __init__(self, work: Path, devices: str):
        self.work = work
        self.devices = devices
        self.t0 = time.time()
        self.proc = None
        self.failures: list[str] = []
        self.names = {"bn254": "toyhash"}  # each curve's key files: NAME.zkey, NAME.vk.json

    def say(self, msg: str = "") -> None:
        print(f"[{time.time() - self.t0:6.1f}s] {msg}" if msg else "", flush=True)

    def fail(self, msg: str) -> None:
        self.failures.append(msg)
        self.say(f"FAILED: {msg}")

    # ------------------------------------------------------------------ 1-2: key, witnesses
    def make_key(self, r1cs: Path, name: str) -> Path:
        """`cuzk setup` on r1cs (its curve is the one its prime names) -> name.zkey, and its
        verification key name.vk.json."""
        from cuzk.formats.cli import export_vk_file
        from cuzk.groth16.setup import setup

        zkey = self.work / f"{name}.zkey"
        shown = r1cs.relative_to(ROOT) if r1cs.is_relative_to(ROOT) else r1cs.name
        self.say(f"cuzk setup {shown} -> {zkey.name} (development-only single-party setup)")
        setup(r1cs, zkey)
        export_vk_file(zkey, self.work / f"{name}.vk.json")
        return zkey

    def make_bls_circuit(self):
        """The demo circuit on BLS12-381: (r1cs, wasm under the key root, inputs(rng) -> a
        circuit input, public(input) -> the public signals computed in Python); sets the
        name of its key files."""
        if CIRCOM2_BIN.exists():
            out = self.work / "bls12381"
            out.mkdir()
            self.names["bls12_381"] = "toyhash381"
            self.say("circom2 -p bls12381 tests/circuits/toyhash.circom (the demo circuit)")
            subprocess.run(
                [str(CIRCOM2_BIN), str(ROOT / "tests" / "circuits" / "toyhash.circom")]
                + ["--r1cs", "--wasm", "-p", "bls12381", "-o", str(out)],
                check=True,
                capture_output=True,
                timeout=300,
            )
            return (
                out / "toyhash.r1cs",
                out / "toyhash_js" / "toyhash.wasm",
                lambda rng: {"x": rng.randrange(R381), "k": rng.randrange(R381)},
                lambda inp: toyhash_public(inp["x"], inp["k"], R=R381),
            )
        self.say("circom2 not installed (`make tools`): the committed tiny381 circuit")
        self.names["bls12_381"] = "tiny381"
        wasm = self.work / "tiny381.wasm"
        shutil.copy(TINY381 / "circuit.wasm", wasm)
        return (
            TINY381 / "circuit.r1cs",
            wasm,
            lambda rng: {"a": rng.randrange(R381), "b": rng.randrange(R381)},
            lambda inp: [str(inp["a"] * inp["b"] % R381), str(inp["a"])],  # c = a*b, then a
        )

    def make_plonk_key(self) -> tuple[Path, Path]:
        """The PLONK key of the mulchain circuit and its wasm under the key root, and its
        verification key plonk.vk.json (`cuzk export-vk`)."""
        from cuzk.formats.cli import export_vk_file

        zkey, wasm = self.work / "mulchain_plonk.zkey", self.work / "mulchain.wasm"
        shutil.copy(MULCHAIN / "circuit.wasm", wasm)
        made = False
        if SNARKJS_BIN.exists():
            self.say("snarkjs plonk setup tests/fixtures/mulchain/circuit.r1cs pot10.ptau (PLONK)")
            p = subprocess.run(
                [str(SNARKJS_BIN), "plonk", "setup", str(MULCHAIN / "circuit.r1cs"), str(PTAU)]
                + [str(zkey)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            made = p.returncode == 0
            if not made:
                self.say(f"snarkjs plonk setup failed ({p.stderr.strip()[-200:]})")
        if not made:
            self.say("the committed PLONK key tests/fixtures/mulchain/plonk.zkey")
            shutil.copy(MULCHAIN / "plonk.zkey", zkey)
        export_vk_file(zkey, self.work / "plonk.vk.json")
        self.names["plonk"] = "plonk"
        return zkey, wasm

    def make_witnesses(self, n: int) -> list[tuple[Path, list[str]]]:
        rng = random.Random()
        inputs = [{"x": rng.randrange(R), "k": rng.randrange(R)} for _ in range(n)]
        if shutil.which("node") and SNARKJS_DIR.is_dir():
            self.say(f"snarkjs wtns calculate: {n} witnesses for random inputs (x, k)")
            script = """
                const snarkjs = require(process.argv[1]);
                const [wasm, items] = JSON.parse(require("fs").readFileSync(0, "utf8"));
                (async () => {
                    for (const [inp, out] of items) await snarkjs.wtns.calculate(inp, wasm, out);
                    process.exit(0);
                })().catch((e) => { console.error(e); process.exit(2); });
            """
            items = [
                [{k: str(v) for k, v in inp.items()}, str(self.work / f"w{i}.wtns")]
                for i, inp in enumerate(inputs)
            ]
            p = subprocess.run(
                ["node", "-e", script, str(SNARKJS_DIR)],
                text=True,
                input=json.dumps([str(CIRCUIT / "circuit.wasm"), items]),
                capture_output=True,
                timeout=300,
            )
            if p.returncode == 0:
                return [
                    (self.work / f"w{i}.wtns", toyhash_public(inp["x"], inp["k"]))
                    for i, inp in enumerate(inputs)
                ]
            self.say(f"snarkjs failed ({p.stderr.strip()[-200:]}); using committed witnesses")
        else:
            self.say("snarkjs not installed (`make tools`): using the committed witnesses")
        out = []
        for i in range(n):
            k = i % 2
            inp = json.loads((CIRCUIT / f"input_{k}.json").read_text())
            dst = self.work / f"w{i}.wtns"
            shutil.copy(CIRCUIT / f"witness_{k}.wtns", dst)
            out.append((dst, toyhash_public(int(inp["x"]), int(inp["k"]))))
        return out

    def warm_up(self, zkey: Path, wtns: Path, bls) -> None:
        """One proof of each curve here first, so that Numba compiles the kernels once into
        its cache (NUMBA_CACHE_DIR) instead of in every device process at the same time. The
        BLS12-381 one is `cuzk fullprove` (inputs -> witness -> proof, verified), its public
        signals checked against Python's."""
        from cuzk.groth16 import ProvingKey, load_witness, open_device, prove
        from cuzk.groth16.files import run_fullprove

        t = time.time()
        self.say(
            "warming the Numba kernel cache with one proof of each curve (the first run on a "
            "machine compiles the kernels: a few minutes)"
        )
        key = ProvingKey.open(zkey)
        key.validate()
        prove(key, load_witness(wtns, key), open_device("cpu"))
        zkey381, wasm, make_input, public_of = bls
        inp = make_input(random.Random())
        (self.work / "input381.json").write_text(json.dumps({k: str(v) for k, v in inp.items()}))
        proof, public = self.work / "proof381.json", self.work / "public381.json"
        run_fullprove(self.work / "input381.json", wasm, zkey381, proof, public)
        if json.loads(public.read_text()) != public_of(inp):
            self.fail("cuzk fullprove on BLS12-381: public signals differ from Python's")
        self.say(f"kernels ready in {time.time() - t:.1f} s (BLS12-381 fullprove: verified)")

    # ------------------------------------------------------------------ 3: the daemon
    def start_server(self) -> tuple[str, str]:
        log_path = self.work / "serve.log"
        args = [
            *CLI,
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--devices",
            self.devices,
            "--synth-workers",
            "1",
            "--memory-budget",
            "2GiB",
            "--key-root",
            str(self.work),
            "--instance",
            "demo",
            "--drain-timeout",
            "10",
            "--state-dir",
            str(self.work / "state"),
        ]
        self.say("cuzk serve " + " ".join(args[4:]))
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            args, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        t_end = time.time() + 600
        while time.time() < t_end:
            text = log_path.read_text(errors="replace")
            m = re.search(r"listening on (http://\S+)", text)
            if m:
                for line in text.splitlines():
                    if re.search(r"cuzk.serve: (device |board |listening)", line):
                        print("    " + line.split(": ", 1)[1])
                board = re.search(r"board (\S+) \(watch", text).group(1)
                return m.group(1), board
            if self.proc.poll() is not None:
                raise RuntimeError(f"cuzk serve exited with {self.proc.returncode}:\n{text}")
            time.sleep(0.1)
        raise RuntimeError("cuzk serve did not start in 600 s")

    def stop_server(self, board: str) -> None:
        self.say("SIGTERM to the daemon (drain, then exit)")
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.fail("the daemon did not exit within 60 s of SIGTERM")
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return
        finally:
            self._log.close()
        left = [
            n
            for n in os.listdir("/dev/shm")
            if n == board or n.startswith(f"cuzkbuf.{self.proc.pid}.")
        ]
        if code != 0:
            self.fail(f"the daemon exited with status {code}")
        elif left:
            self.fail(f"shared-memory segments left behind: {left}")
        else:
            self.say("daemon exited 0; no shared-memory segment left behind")

    # ------------------------------------------------------------------ 4-6
    def run(self) -> int:
        from cuzk.client import Client
        from cuzk.groth16.verifier import VerifyingKey, verify

        zkey = self.make_key(CIRCUIT / "circuit.r1cs", "toyhash")
        r1cs381, wasm381, make_input, public_of = self.make_bls_circuit()
        zkey381 = self.make_key(r1cs381, self.names["bls12_381"])
        plonk_zkey, plonk_wasm = self.make_plonk_key()
        n = sum(p for _, _, p, curve in JOBS if curve == "bn254")
        witnesses = self.make_witnesses(n)
        self.warm_up(zkey, witnesses[0][0], (zkey381, wasm381, make_input, public_of))
        url, board = self.start_server()
        try:
            client = Client(url)
            keys = {"bn254": client.register_key(zkey)}
            keys["bls12_381"] = client.register_key(zkey381, wasm=wasm381)
            keys["plonk"] = client.register_key(plonk_zkey, wasm=plonk_wasm)
            for curve, key in keys.items():
                self.say(
                    f"key {key['key_id']} registered: {key.get('protocol', '')} "
                    f"{key['curve']} ({CURVE_TITLES[curve]}), "
                    f"{key['n_vars']} variables, domain {key['domain_size']}"
                    + (", with its wasm" if key.get("wasm") else "")
                )
            jobs, i = [], 0
            rng = random.Random()
            t_submit = time.time()
            for j, (kind, prio, parts, curve) in enumerate(JOBS):
                key = keys[curve]
                if curve == "plonk":  # circuit inputs: the daemon computes the witnesses
                    inputs = [{"x": rng.randrange(R), "y": rng.randrange(R)} for _ in range(parts)]
                    ws = [(None, mulchain_public(inp["x"], inp["y"])) for inp in inputs]
                    sent = [{k: str(v) for k, v in inp.items()} for inp in inputs]
                    job = client.submit(key["key_id"], kind=kind, priority=prio, inputs=sent)
                    how = "PLONK, circuit inputs"
                elif curve == "bls12_381":  # circuit inputs: the daemon computes the witnesses
                    inputs = [make_input(rng) for _ in range(parts)]
                    ws = [(None, public_of(inp)) for inp in inputs]
                    sent = [{k: str(v) for k, v in inp.items()} for inp in inputs]
                    job = client.submit(key["key_id"], kind=kind, priority=prio, inputs=sent)
                    how = "circuit inputs"
                else:
                    ws = witnesses[i : i + parts]
                    i += parts
                    # half the jobs upload their witnesses, half name files under the key root
                    job = client.submit(
                        key["key_id"],
                        [w for w, _ in ws],
                        kind=kind,
                        priority=prio,
                        upload=j % 2 == 0,
                    )
                    how = "uploaded" if j % 2 == 0 else "by path"
                jobs.append((job, ws, curve))
                self.say(
                    f"submitted job {job['job_id']}: {kind}, {prio}, {parts} partitions on "
                    f"{CURVE_TITLES[curve]} ({how})"
                )
            top = subprocess.Popen(
                [
                    *CLI,
                    "top",
                    "--once",
                    "--board",
                    board,
                    "--interval",
                    "0.5",
                    "--width",
                    "110",
                    "--height",
                    "34",
                    "--no-color",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            results = []
            for job, ws, curve in jobs:
                results.append((client.wait(job["job_id"], timeout=900), ws, curve))
            wall = time.time() - t_submit
            frame = top.communicate(timeout=120)[0]
            self.say("one `cuzk top --once` frame, taken while the jobs ran:")
            print(frame.rstrip())
            self.verify_all(results, VerifyingKey, verify)
            self.summary(results, wall)
        finally:
            self.stop_server(board)
        if self.failures:
            print(f"\ncuzk demo FAILED ({len(self.failures)}): " + "; ".join(self.failures))
            return 1
        print(f"\ncuzk demo OK in {time.time() - self.t0:.0f} s")
        return 0

    def verify_all(self, results, VerifyingKey, verify) -> None:
        from cuzk.plonk.verifier import verify_objects as plonk_verify

        vks = {
            curve: json.loads((self.work / f"{name}.vk.json").read_text())
            for curve, name in self.names.items()
        }
        checks = {  # (public, proof) -> bool, by key
            curve: partial(plonk_verify, vk)
            if curve == "plonk"
            else partial(verify, VerifyingKey.from_json(vk))
            for curve, vk in vks.items()
        }
        n_ok = n = 0
        for r, ws, curve in results:
            check = checks[curve]
            if r.get("state") != "done":
                self.fail(f"job {r['job_id']} ended {r.get('state')}: {r.get('error')}")
                continue
            for idx, (proof, public, (_, expected)) in enumerate(
                zip(r["proofs"], r["public"], ws, strict=True)
            ):
                n += 1
                if public != expected:
                    self.fail(
                        f"job {r['job_id']} partition {idx}: public signals differ from "
                        "the circuit computed in Python"
                    )
                elif not check(public, proof):
                    self.fail(f"job {r['job_id']} partition {idx}: the proof does not verify")
                else:
                    n_ok += 1
        self.say(f"project verifier: {n_ok}/{n} proofs valid, public signals as computed in Python")
        # and one of each curve by snarkjs itself: the last job of that curve
        if not SNARKJS_BIN.exists():
            self.say("snarkjs not installed: its check skipped")
            return
        for curve, name in self.names.items():
            r = [r for r, _, c in results if c == curve][-1]
            if r.get("state") != "done":
                continue
            (self.work / "proof.json").write_text(json.dumps(r["proofs"][0]))
            (self.work / "public.json").write_text(json.dumps(r["public"][0]))
            protocol = "plonk" if curve == "plonk" else "groth16"
            p = subprocess.run(
                [
                    str(SNARKJS_BIN),
                    protocol,
                    "verify",
                    str(self.work / f"{name}.vk.json"),
                    str(self.work / "public.json"),
                    str(self.work / "proof.json"),
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            if p.returncode == 0 and "OK" in p.stdout:
                self.say(
                    f"snarkjs {protocol} verify ({CURVE_TITLES[curve]}, job {r['job_id']}, "
                    "partition 0): OK"
                )
            else:
                self.fail(f"snarkjs {protocol} verify refused a proof: {p.stdout}{p.stderr}")

    def summary(self, results, wall: float) -> None:
        print()
        print(
            f"{'JOB':16}  {'KIND':13} {'CURVE':9} {'PRIORITY':8} {'PARTS':>5} {'STATE':6} "
            f"{'QUEUED→DONE':>11} {'DEVICE MS (median)':>19}"
        )
        total = 0
        for r, _, curve in sorted(results, key=lambda x: x[0].get("finished_at") or 0):
            gpu = sorted(p["gpu_ms"] for p in r["partitions"] if p.get("gpu_ms") is not None)
            med = f"{gpu[len(gpu) // 2]:.0f}" if gpu else "-"
            secs = (r.get("finished_at") or 0) - r["submitted_at"]
            total += r["partitions_done"]
            print(
                f"{r['job_id']:16}  {r['kind']:13} {CURVE_TITLES[curve]:9} {r['priority']:8} "
                f"{r['total_partitions']:>5} {r['state']:6} {secs:>10.1f}s {med:>19}"
            )
        print(
            f"{total} partitions proved in {wall:.1f} s on {self.devices} "
            f"({total / wall:.1f} proofs/s); rows in finishing order"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python examples/demo.py", description=__doc__.split("\n")[0])
    ap.add_argument("--devices", default="cpu:2", help="devices for cuzk serve (default cpu:2)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args(argv)
    if not (CIRCUIT / "circuit.r1cs").exists():
        print(
            f"cuzk demo: {CIRCUIT} is missing; run the demo from a clone of the repository",
            file=sys.stderr,
        )
        return 2
    os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))
    work = Path(tempfile.mkdtemp(prefix="cuzk-demo-"))
    demo = Demo(work, args.devices)
    print(
        "cuzk demo: circuit -> key -> witnesses -> cuzk serve -> partitioned jobs -> "
        "verified proofs\n"
    )
    try:
        code = demo.run()
    except Exception as e:
        print(f"\ncuzk demo FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        code = 1
    finally:
        if demo.proc is not None and demo.proc.poll() is None:
            os.killpg(demo.proc.pid, signal.SIGKILL)
            demo.proc.wait()
        if not args.keep and code == 0:
            shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
