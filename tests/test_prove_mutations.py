"""`cuzk prove` on damaged files (issue 17): a fixed-seed sweep of mutated copies of a real
.zkey and .wtns (bit flips anywhere, flips in the headers, truncations, huge section sizes,
zeroed headers). `cuzk prove` must never exit 0 with a proof that `snarkjs groth16 verify`
rejects, never end in a traceback, never hang; a refusal is one line and writes nothing.

The sweep runs the command in this process (click's CliRunner: an exception that would print
a traceback is `result.exception`), with a watchdog that dumps every thread's stack and ends
the run if one mutation hangs; the proofs that exit 0 go to snarkjs in one node process. A few
mutations run again as processes of their own, as a user runs them. ~300 mutations of the
mulchain fixture (domain 2^5): about 20 s on the 2-core machine, snarkjs included; ~90 of
the tiny381 fixture (BLS12-381).
"""

import faulthandler
import json
import random
import subprocess
import time

import pytest
from click.testing import CliRunner
from conftest import fixture_circuit
from interop import ROOT, require_tools
from serve_harness import run_cli

from cuzk.cli import main

pytestmark = pytest.mark.interop

SEED = 17
# mutations of each circuit's key and witness: mulchain (BN254), tiny381 (BLS12-381, fewer)
SWEEPS = {"mulchain": (200, 100), "tiny381": (60, 30)}
CIRCUIT = fixture_circuit("mulchain")
HANG_SECS = 120  # one mutation taking this long is a hang: the watchdog ends the run


def _walk(data: bytes):
    """(header offset, payload offset, size) of each section of an intact container."""
    n = int.from_bytes(data[8:12], "little")
    pos, out = 12, []
    for _ in range(n):
        size = int.from_bytes(data[pos + 4 : pos + 12], "little")
        out.append((pos, pos + 12, size))
        pos += 12 + size
    return out


def mutate(rng: random.Random, data: bytes, kind: str) -> tuple[str, bytes]:
    """One damaged copy of `data` and a label saying what was done."""
    d = bytearray(data)
    secs = _walk(data)
    what = rng.choice(
        ["flip", "flip", "flip", "header flip", "truncate", "huge size", "zero header"]
    )
    if what == "flip":
        i = rng.randrange(len(d))
        d[i] ^= 1 << rng.randrange(8)
        return f"flip bit of byte {i}", bytes(d)
    if what == "header flip":
        # the container header, a section header, or (zkey) the Groth16 header's payload
        regions = [(0, 12)] + [(h, h + 12) for h, _, _ in secs]
        if kind == "zkey":
            hdr = [s for s in secs if int.from_bytes(data[s[0] : s[0] + 4], "little") == 2][0]
            regions.append((hdr[1], hdr[1] + hdr[2]))
        lo, hi = rng.choice(regions)
        i = rng.randrange(lo, hi)
        d[i] ^= 1 << rng.randrange(8)
        return f"flip bit of header byte {i}", bytes(d)
    if what == "truncate":
        n = rng.randrange(len(d))
        return f"truncate to {n} bytes", bytes(d[:n])
    if what == "huge size":
        h, _, size = rng.choice(secs)
        new = rng.choice([2**64 - 1, 2**63, 2**40, 2**32 + size, size + 1, size + 64])
        d[h + 4 : h + 12] = new.to_bytes(8, "little")
        return f"section at {h}: size {new}", bytes(d)
    # zeroed header: the container header, a section header, or a whole section's payload
    h, p, size = rng.choice(secs)
    lo, hi = rng.choice([(0, 12), (h, h + 12), (p, p + min(size, 512))])
    d[lo:hi] = bytes(hi - lo)
    return f"zero bytes {lo}..{hi}", bytes(d)


def snarkjs_verify_all(vk_path, items) -> list[bool]:
    """snarkjs's own groth16.verify on every (proof, public) pair, in one node process."""
    script = """
        const snarkjs = require(process.argv[1]);
        const fs = require("fs");
        const [vk, items] = JSON.parse(fs.readFileSync(0, "utf8"));
        (async () => {
            const out = [];
            for (const [proof, pub] of items) {
                let ok = false;
                try { ok = await snarkjs.groth16.verify(vk, pub, proof); } catch (e) { ok = false; }
                out.push(ok);
            }
            console.log(JSON.stringify(out));
            process.exit(0);
        })().catch((e) => { console.error(e); process.exit(2); });
    """
    vk = json.loads(vk_path.read_text())
    payload = json.dumps([vk, items])
    p = subprocess.run(
        ["node", "-e", script, str(ROOT / ".tools/node_modules/snarkjs")],
        input=payload,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(SWEEPS))
def test_mutated_keys_and_witnesses_never_give_an_invalid_proof(tmp_path, name):
    require_tools()
    rng = random.Random(SEED)
    circuit, (n_zkey, n_wtns) = fixture_circuit(name), SWEEPS[name]
    zkey, wtns = circuit.zkey.read_bytes(), circuit.witness(0).read_bytes()
    cases = [("zkey", *mutate(rng, zkey, "zkey")) for _ in range(n_zkey)]
    cases += [("wtns", *mutate(rng, wtns, "wtns")) for _ in range(n_wtns)]
    runner = CliRunner()
    accepted, outcomes, slowest = [], {"refused": 0, "proved": 0}, 0.0
    faulthandler.dump_traceback_later(HANG_SECS, repeat=True, exit=True)
    try:
        for n, (which, label, data) in enumerate(cases):
            z, w = tmp_path / "k.zkey", tmp_path / "w.wtns"
            z.write_bytes(data if which == "zkey" else zkey)
            w.write_bytes(data if which == "wtns" else wtns)
            proof, public = tmp_path / f"p{n}.json", tmp_path / f"q{n}.json"
            t0 = time.monotonic()
            r = runner.invoke(main, ["prove", str(z), str(w), str(proof), str(public)])
            slowest = max(slowest, time.monotonic() - t0)
            faulthandler.dump_traceback_later(HANG_SECS, repeat=True, exit=True)  # re-arm
            ctx = f"{which}: {label}: exit {r.exit_code}: {r.output!r}"
            assert r.exception is None or isinstance(r.exception, SystemExit), (
                ctx,
                r.exc_info,
            )  # an exception a user would see as a traceback
            assert r.exit_code in (0, 1), ctx
            if r.exit_code == 1:
                outcomes["refused"] += 1
                assert r.output.startswith("cuzk prove: ") and r.output.count("\n") == 1, ctx
                assert "Traceback" not in r.output, ctx
                assert not proof.exists() and not public.exists(), ctx
            else:
                outcomes["proved"] += 1
                accepted.append(
                    (ctx, json.loads(proof.read_text()), json.loads(public.read_text()))
                )
    finally:
        faulthandler.cancel_dump_traceback_later()
    # most damage is refused; some lands on bytes a proof does not use
    assert outcomes["refused"] > len(cases) // 2, outcomes
    if accepted:
        verdicts = snarkjs_verify_all(circuit.vk, [[p, s] for _, p, s in accepted])
        rejected = [ctx for (ctx, _, _), ok in zip(accepted, verdicts, strict=True) if not ok]
        assert rejected == [], f"exit 0 with a proof snarkjs rejects: {rejected}"
    print(f"\n{len(cases)} mutations: {outcomes}, slowest {slowest:.2f} s")


def test_mutated_files_as_processes_of_their_own(tmp_path):
    """A few of the damage kinds through a real `cuzk prove` process: exit 1, one line on
    stderr, no traceback, nothing written."""
    zkey, wtns = CIRCUIT.zkey, CIRCUIT.witness(0)
    zdata, wdata = zkey.read_bytes(), wtns.read_bytes()
    secs = _walk(zdata)
    pts_b2 = [s for s in secs if int.from_bytes(zdata[s[0] : s[0] + 4], "little") == 7][0]
    huge = bytearray(zdata)
    huge[secs[3][0] + 4 : secs[3][0] + 12] = (2**63).to_bytes(8, "little")
    flipped = bytearray(zdata)
    flipped[pts_b2[1] + 128 + 5] ^= 0x04
    bad_w = CIRCUIT.bad_witness.read_bytes()  # a valid file that breaks a constraint
    cases = [
        ("huge section size", bytes(huge), wdata, "declares"),
        ("pointsB2 bit flip", bytes(flipped), wdata, "pointsB2[1]: point is not on"),
        ("truncated", zdata[:777], wdata, ""),
        ("witness off the circuit", zdata, bad_w, "the proof does not verify"),
    ]
    for label, zd, wd, reason in cases:
        (tmp_path / "k.zkey").write_bytes(zd)
        (tmp_path / "w.wtns").write_bytes(wd)
        p = run_cli(
            "prove",
            tmp_path / "k.zkey",
            tmp_path / "w.wtns",
            tmp_path / "p.json",
            tmp_path / "q.json",
            timeout=HANG_SECS,
        )
        assert p.returncode == 1, (label, p.stderr)
        # a cold kernel cache (a fresh clone) adds the compile notice's lines (docs/prover.md)
        err = "".join(x for x in p.stderr.splitlines(True) if " compil" not in x)
        assert err.startswith("cuzk prove: ") and err.count("\n") == 1, (label, p.stderr)
        assert reason in err, (label, p.stderr)
        assert not (tmp_path / "p.json").exists() and not (tmp_path / "q.json").exists()
