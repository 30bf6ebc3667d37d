"""Every CUDA kernel of the project compiles to PTX for compute capability 9.0, GPU or not.

Convention (docs/arithmetic.md): a module with CUDA kernels defines
``CUDA_KERNELS = cuzk.arith.jit.KernelTable({name: (python_function, argument_types)}, expect)``
where ``expect = {name: [substring, ...]}`` is text its PTX must contain (e.g. "mul.hi.u64"
where the kernel multiplies field elements).
Add the module's name to KERNEL_MODULES below; a shared source module (cuzk.arith.jit) is listed
as "name[cuda]", its CUDA build, or "name[cuda,curve=bls12_381]", its CUDA build with those
build parameters.

The compile runs in subprocesses (one per core, up to 4, each a share of the modules) with
NUMBA_ENABLE_CUDASIM removed from their environment: the simulator (on in this test session
when no GPU exists) has no compiler.
"""

import inspect
import json
import os
import subprocess
import sys
import textwrap

import pytest

KERNEL_MODULES = [
    "cuzk.arith.batch_ops[cuda]",
    "cuzk.arith.batch_ops[cuda,curve=bls12_381]",
    "cuzk.arith.subgroup[cuda]",
    "cuzk.arith.subgroup[cuda,curve=bls12_381]",
    "cuzk.kernels.ntt_cuda",
    "cuzk.kernels.ntt_cuda[cuda,curve=bls12_381]",
    "cuzk.kernels.msm_cuda",
    "cuzk.kernels.plonk_cuda",
    "cuzk.kernels.plonk_cuda[cuda,curve=bls12_381]",
    "bench.bench_arith",
]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # modules import from here

CC = (9, 0)


def load_module(name):
    """The module listed as ``name``: "module[cuda]" is the CUDA build of a shared source,
    "module[cuda,key=value,...]" its CUDA build with those build parameters."""
    import importlib

    if name.endswith("]"):
        from cuzk.arith.jit import get_target

        module, spec = name[:-1].split("[")
        target, *params = spec.split(",")
        return get_target(target).load(module, **dict(p.split("=") for p in params))
    return importlib.import_module(name)


_CHILD = textwrap.dedent(
    """
    import importlib, json, sys, time
    from numba import cuda

    cc = tuple(json.loads(sys.argv[1]))
    report = {}
    for name in json.loads(sys.argv[2]):
        module = load_module(name)
        expect = module.CUDA_KERNELS.expect
        for kname, (fn, sig) in module.CUDA_KERNELS.items():
            t0 = time.perf_counter()
            try:
                ptx, _ = cuda.compile_ptx(fn, sig, cc=cc)
            except Exception as exc:
                report[f"{name}:{kname}"] = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            report[f"{name}:{kname}"] = {
                "seconds": round(time.perf_counter() - t0, 2),
                "entry": ".entry" in ptx,
                "target": f".target sm_{cc[0]}{cc[1]}" in ptx,
                "missing": [s for s in expect.get(kname, []) if s not in ptx],
                "mul_hi": ptx.count("mul.hi.u64"),
            }
    print("PTX-REPORT " + json.dumps(report))
    """
)
_CHILD = inspect.getsource(load_module) + _CHILD


def _shares(names: list, k: int) -> list:
    """``names`` dealt round-robin into at most ``k`` non-empty shares."""
    return [share for share in (names[i::k] for i in range(k)) if share]


@pytest.fixture(scope="module")
def ptx_report():
    """The modules' kernels compiled in one child per core (the compiles are independent and
    single-threaded: about 160 s of CPU in all on the 2-core CI machine), their reports
    merged."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, json.dumps(CC), json.dumps(share)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for share in _shares(KERNEL_MODULES, max(1, min(os.cpu_count() or 1, 4)))
    ]
    report = {}
    try:
        for proc in children:
            out, err = proc.communicate(timeout=1200)
            lines = [ln for ln in out.splitlines() if ln.startswith("PTX-REPORT ")]
            assert proc.returncode == 0 and lines, f"PTX compile child failed:\n{err[-4000:]}"
            report.update(json.loads(lines[-1][len("PTX-REPORT ") :]))
    finally:
        for proc in children:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return report


@pytest.mark.slow
def test_every_kernel_compiles_to_ptx(ptx_report):
    assert ptx_report, "no kernels listed"
    failed = {k: v["error"] for k, v in ptx_report.items() if "error" in v}
    assert not failed, failed
    for name, r in ptx_report.items():
        assert r["entry"] and r["target"], name


@pytest.mark.slow
def test_expected_instructions_present(ptx_report):
    """Kernels that multiply field elements lower the i128 product to mul.hi.u64."""
    missing = {k: v["missing"] for k, v in ptx_report.items() if v.get("missing")}
    assert not missing, missing


@pytest.mark.slow
def test_limb_products_per_multiplication(ptx_report):
    """A CIOS multiplication on n limbs takes 2 n^2 products 64x64 -> 128 (a_j b_i and m p_j),
    each a mul.hi.u64 in the PTX: 32 for BN254's 4-limb fields and BLS12-381's Fr, 72 for
    BLS12-381's 6-limb Fq (the same template, printed for 6 limbs)."""
    bn, bls = "cuzk.arith.batch_ops[cuda]", "cuzk.arith.batch_ops[cuda,curve=bls12_381]"
    counts = {
        f"{m}:{k}": ptx_report[f"{m}:{k}"]["mul_hi"]
        for m in (bn, bls)
        for k in ("fq_mul", "fr_mul")
    }
    assert counts == {
        f"{bn}:fq_mul": 32,
        f"{bn}:fr_mul": 32,
        f"{bls}:fq_mul": 72,
        f"{bls}:fr_mul": 32,
    }


def test_every_module_lists_kernels():
    # Importing needs no GPU (kernels compile lazily); the simulator is fine here.
    for name in KERNEL_MODULES:
        module = load_module(name)
        assert module.CUDA_KERNELS, name
        for kname, entry in module.CUDA_KERNELS.items():
            fn, sig = entry
            assert callable(fn) and isinstance(sig, tuple), kname
        for kname in getattr(module, "PTX_EXPECT", {}):
            assert kname in module.CUDA_KERNELS, f"{name}.PTX_EXPECT names unknown {kname}"
