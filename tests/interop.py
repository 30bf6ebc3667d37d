"""Run the reference tools (snarkjs, circom2 from npm, installed by `make tools`) from tests.

Binaries live in .tools/node_modules/.bin. Every helper raises ToolError (with the command
and its output) when a tool fails, except `groth16_verify`, which returns the verdict.
Tests that need the tools carry `@pytest.mark.interop` and call `require_tools()` (or use
the `tools` fixture from conftest.py), which installs them once if npm can, else skips (or
fails, under CUZK_REQUIRE_TOOLS: see need_tool.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS_BIN = ROOT / ".tools" / "node_modules" / ".bin"
SNARKJS = TOOLS_BIN / "snarkjs"
CIRCOM2 = TOOLS_BIN / "circom2"


class ToolError(RuntimeError):
    """A snarkjs or circom2 run that failed; the message carries the command and its output."""


def have_tools() -> bool:
    return SNARKJS.exists() and CIRCOM2.exists()


def install_tools() -> bool:
    """Run `make tools` (npm install into .tools) if the tools are missing; True if present."""
    if have_tools():
        return True
    if shutil.which("npm") is None or shutil.which("make") is None:
        return False
    subprocess.run(["make", "-s", "tools"], cwd=ROOT, capture_output=True, timeout=600)
    return have_tools()


def require_tools() -> None:
    """Skip the calling test (fail it under CUZK_REQUIRE_TOOLS) unless snarkjs and circom2 are
    (or can be) installed."""
    from need_tool import missing_tool

    if not install_tools():
        missing_tool("snarkjs/circom2 not installed and `make tools` could not install them")


def run_tool(binary: Path, *args, cwd=None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run a tool; raise ToolError on a non-zero exit."""
    cmd = [str(binary), *map(str, args)]
    env = dict(os.environ, NO_COLOR="1", FORCE_COLOR="0")
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise ToolError(
            f"{' '.join(cmd)} exited {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}"
        )
    return p


def snarkjs(*args, **kw) -> subprocess.CompletedProcess:
    return run_tool(SNARKJS, *args, **kw)


def circom2(*args, **kw) -> subprocess.CompletedProcess:
    return run_tool(CIRCOM2, *args, **kw)


@dataclass
class Compiled:
    """A compiled circuit: its .r1cs, witness-generator .wasm and symbol table (.sym)."""

    r1cs: Path
    wasm: Path
    sym: Path


def compile_circuit(
    circom_file: os.PathLike | str, out_dir: os.PathLike | str, include=None, prime=None
) -> Compiled:
    """circom2 --r1cs --wasm --sym [-l include] [-p prime]; returns the paths of the files it
    wrote. `prime` is circom's curve name ("bls12381"); circom's default is bn128."""
    circom_file, out_dir = Path(circom_file), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    extra = ["-l", include] if include is not None else []
    if prime is not None:
        extra += ["-p", prime]
    circom2(circom_file, "--r1cs", "--wasm", "--sym", *extra, "-o", out_dir)
    name = circom_file.stem
    return Compiled(
        out_dir / f"{name}.r1cs", out_dir / f"{name}_js" / f"{name}.wasm", out_dir / f"{name}.sym"
    )


def calculate_witness(wasm, inputs: dict, wtns_out) -> Path:
    """snarkjs wtns calculate: the witness of `inputs` (a dict of signal -> int or list)."""
    wtns_out = Path(wtns_out)
    input_json = wtns_out.with_suffix(".input.json")
    input_json.write_text(json.dumps(_stringify(inputs)))
    try:
        snarkjs("wtns", "calculate", wasm, input_json, wtns_out)
    finally:
        input_json.unlink(missing_ok=True)
    return wtns_out


def _stringify(x):
    if isinstance(x, dict):
        return {k: _stringify(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_stringify(v) for v in x]
    return str(x)


def powers_of_tau(
    power: int, out, work_dir=None, entropy: str = "cuzk tests", curve: str = "bn128"
) -> Path:
    """A prepared (phase 2) powers-of-tau file of 2^power on `curve` (snarkjs's name: bn128,
    bls12381): new, one contribution, prepare.

    About 12 s for power 10 on the CI machine; cache or commit the result.
    """
    out = Path(out)
    work = Path(work_dir or out.parent)
    p0, p1 = work / f"pot{power}_0000.ptau", work / f"pot{power}_0001.ptau"
    snarkjs("powersoftau", "new", curve, power, p0)
    snarkjs("powersoftau", "contribute", p0, p1, "--name=cuzk", f"-e={entropy}")
    snarkjs("powersoftau", "prepare", "phase2", p1, out, timeout=1800)
    p0.unlink()
    p1.unlink()
    return out


def groth16_setup(r1cs, ptau, zkey_out, contribute: bool = True, entropy: str = "cuzk") -> Path:
    """snarkjs groth16 setup (+ one zkey contribution, so delta is not the generator)."""
    zkey_out = Path(zkey_out)
    if not contribute:
        snarkjs("groth16", "setup", r1cs, ptau, zkey_out)
        return zkey_out
    z0 = zkey_out.with_suffix(".0000.zkey")
    snarkjs("groth16", "setup", r1cs, ptau, z0)
    try:
        snarkjs("zkey", "contribute", z0, zkey_out, "--name=cuzk", f"-e={entropy}")
    finally:
        z0.unlink(missing_ok=True)
    return zkey_out


def plonk_setup(r1cs, ptau, zkey_out) -> Path:
    """snarkjs plonk setup: a PLONK zkey (deterministic: no contribution)."""
    snarkjs("plonk", "setup", r1cs, ptau, zkey_out)
    return Path(zkey_out)


def fflonk_setup(r1cs, ptau, zkey_out) -> Path:
    """snarkjs fflonk setup: a key of a protocol cuzk does not prove (for refusal tests)."""
    snarkjs("fflonk", "setup", r1cs, ptau, zkey_out)
    return Path(zkey_out)


def plonk_prove(zkey, wtns, proof_out, public_out) -> tuple[Path, Path]:
    """snarkjs plonk prove."""
    snarkjs("plonk", "prove", zkey, wtns, proof_out, public_out)
    return Path(proof_out), Path(public_out)


def plonk_verify(vk, public, proof) -> bool:
    """snarkjs plonk verify: True for "OK!", False for "Invalid Proof"; ToolError otherwise."""
    return _verdict("plonk", vk, public, proof)


def export_vk(zkey, vk_out) -> Path:
    """snarkjs zkey export verificationkey."""
    snarkjs("zkey", "export", "verificationkey", zkey, vk_out)
    return Path(vk_out)


def groth16_prove(zkey, wtns, proof_out, public_out) -> tuple[Path, Path]:
    """snarkjs groth16 prove."""
    snarkjs("groth16", "prove", zkey, wtns, proof_out, public_out)
    return Path(proof_out), Path(public_out)


def groth16_verify(vk, public, proof) -> bool:
    """snarkjs groth16 verify: True for "OK!", False for "Invalid proof"; ToolError otherwise."""
    return _verdict("groth16", vk, public, proof)


def _verdict(protocol: str, vk, public, proof) -> bool:
    cmd = [str(SNARKJS), protocol, "verify", str(vk), str(public), str(proof)]
    env = dict(os.environ, NO_COLOR="1", FORCE_COLOR="0")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    out = p.stdout + p.stderr
    if p.returncode == 0 and "OK" in out:
        return True
    if "invalid proof" in out.lower():
        return False
    raise ToolError(f"{' '.join(cmd)} exited {p.returncode}\n{out}")


def wtns_check(r1cs, wtns) -> bool:
    """snarkjs wtns check: True if the witness satisfies the circuit's constraints."""
    cmd = [str(SNARKJS), "wtns", "check", str(r1cs), str(wtns)]
    env = dict(os.environ, NO_COLOR="1", FORCE_COLOR="0")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    return p.returncode == 0 and "WITNESS IS CORRECT" in (p.stdout + p.stderr)
