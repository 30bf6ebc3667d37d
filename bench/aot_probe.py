"""Probe of ahead-of-time CPU kernels (issue 26's route to a start without numba): one kernel
built as a shared library, loaded with ctypes in a process that never imports numba.

The kernel is cuzk's own Fr Montgomery multiplication (cuzk.arith.field.fr_mul) over rows of
two (n, 4) uint64 arrays, as a Numba ``cfunc`` with a C signature (pointers and a length). Its
LLVM module is compiled to position-independent object code for this CPU with llvmlite and
linked by the system compiler (``cc -shared``); a fresh interpreter loads the library with
ctypes (RTLD_LAZY: the module also holds Numba's CPython wrapper, whose references to Numba's
runtime and the C API are never called through the C entry point), runs it, and checks the
rows against Numba's own run of the same cfunc. Python ints check the Montgomery products.

Run: ``python -m bench.aot_probe`` (prints the library's size, the load time, the run's
agreement, and whether numba was imported by the loading process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

LOADER = """
import ctypes, json, os, sys, time
import numpy as np
folder, name = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
lib = ctypes.CDLL(os.path.join(folder, "libprobe.so"), mode=os.RTLD_LAZY)
fn = getattr(lib, name)
fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64]
load = time.perf_counter() - t0
a, b = np.load(os.path.join(folder, "a.npy")), np.load(os.path.join(folder, "b.npy"))
out = np.zeros_like(a)
t0 = time.perf_counter()
fn(a.ctypes.data, b.ctypes.data, out.ctypes.data, len(a))
run = time.perf_counter() - t0
np.save(os.path.join(folder, "out.npy"), out)
numba = "numba" in sys.modules
print(json.dumps({"load_ms": load * 1e3, "run_ms": run * 1e3, "numba_imported": numba}))
"""


def build(folder: Path, n: int = 4096) -> dict:
    """Compile the probe kernel into folder/libprobe.so; write its inputs and Numba's result."""
    import ctypes

    import numpy as np
    from llvmlite import binding as ll
    from numba import carray, cfunc, types

    from cuzk.arith.field import fr_mul

    ptr = types.CPointer(types.uint64)

    @cfunc(types.void(ptr, ptr, ptr, types.int64), nogil=True)
    def fr_mul_rows(a, b, out, n):
        x, y, z = carray(a, (n, 4)), carray(b, (n, 4)), carray(out, (n, 4))
        for i in range(n):
            r = fr_mul((x[i, 0], x[i, 1], x[i, 2], x[i, 3]), (y[i, 0], y[i, 1], y[i, 2], y[i, 3]))
            z[i, 0], z[i, 1], z[i, 2], z[i, 3] = r[0], r[1], r[2], r[3]

    machine = ll.Target.from_default_triple().create_target_machine(
        cpu=ll.get_host_cpu_name(),
        features=ll.get_host_cpu_features().flatten(),
        opt=3,
        reloc="pic",
        codemodel="default",
    )
    obj = machine.emit_object(ll.parse_assembly(str(fr_mul_rows._library._final_module)))
    (folder / "probe.o").write_bytes(obj)
    subprocess.run(
        ["cc", "-shared", "-o", str(folder / "libprobe.so"), str(folder / "probe.o")], check=True
    )
    rng = np.random.default_rng(26)
    a = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    b = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    a[:, 3] >>= np.uint64(3)  # below 2^253 < r: valid Montgomery inputs
    b[:, 3] >>= np.uint64(3)
    ref = np.zeros_like(a)
    voidp = ctypes.c_void_p
    proto = ctypes.CFUNCTYPE(None, voidp, voidp, voidp, ctypes.c_int64)
    proto(fr_mul_rows.address)(a.ctypes.data, b.ctypes.data, ref.ctypes.data, n)
    np.save(folder / "a.npy", a)
    np.save(folder / "b.npy", b)
    np.save(folder / "ref.npy", ref)
    return {
        "symbol": fr_mul_rows.native_name,
        "object_bytes": len(obj),
        "library_bytes": (folder / "libprobe.so").stat().st_size,
    }


def probe(folder: Path) -> dict:
    """Build, load in a fresh interpreter, compare; the figures as a dict."""
    import numpy as np

    from cuzk.arith.constants import FR_MODULUS

    built = build(folder)
    env = {**os.environ, "PYTHONPATH": ""}
    p = subprocess.run(
        [sys.executable, "-c", LOADER, str(folder), built["symbol"]],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    loaded = json.loads(p.stdout)
    a, b = np.load(folder / "a.npy"), np.load(folder / "b.npy")
    out, ref = np.load(folder / "out.npy"), np.load(folder / "ref.npy")

    def value(row):
        return sum(int(x) << (64 * j) for j, x in enumerate(row))

    r_inv = pow(2**256, -1, FR_MODULUS)
    montgomery = all(
        value(out[i]) % FR_MODULUS == value(a[i]) * value(b[i]) * r_inv % FR_MODULUS
        for i in range(0, len(a), 97)
    )
    return {
        **{k: v for k, v in built.items() if k != "symbol"},
        **loaded,
        "same_as_numba": bool((out == ref).all()),
        "montgomery_products": montgomery,
    }


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="cuzk-aot-") as tmp:
        print(json.dumps(probe(Path(tmp)), indent=1))
