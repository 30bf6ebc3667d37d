"""Build the native kernel library of a curve (see cuzk.native): ``python -m cuzk.native.build
[CURVE ...]``, or ``cuzk warmup``.

For each entry (cuzk.native.entries) a Numba ``cfunc`` with the entry's C signature wraps the
kernel: each array argument arrives as a pointer and its shape and is viewed with
``numba.carray`` (a strided one also with its span and strides, through ``as_strided``);
a kernel's integer result is stored through a last pointer argument.
The cfunc's final LLVM module (the kernel and everything it calls, Numba's reference counting
included) is taken from Numba, its C entry renamed ``cuzk_<name>`` and
every other definition made internal (the modules share callees), and compiled to
position-independent object code for this CPU with llvmlite. The objects are linked by the
system compiler (``cc -shared``) into ``kernels-<curve>-<key>.so``; the run-time the code calls
(runtime.c) is compiled into ``runtime-<key>.so`` once. Every symbol the objects leave
undefined must be the run-time's, the C library's or the interpreter's (used only on the
exception path): anything else fails the build, and the commands keep using Numba.
Files are written under a temporary name and renamed, so a reader never sees half a library.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cuzk import native
from cuzk.arith.curves import CURVES, DEFAULT
from cuzk.native.entries import ENTRIES, Entry

RUNTIME_SOURCE = Path(__file__).with_name("runtime.c")

# What runtime.c defines.
RUNTIME_SYMBOLS = frozenset(
    {
        "NRT_MemInfo_alloc_aligned",
        "NRT_MemInfo_alloc_safe_aligned",
        "NRT_MemInfo_alloc",
        "NRT_MemInfo_alloc_safe",
        "NRT_MemInfo_call_dtor",
        "NRT_Allocate",
        "NRT_Free",
        "numba_unpickle",
        "numba_runtime_build_excinfo_struct",
        "numba_do_raise",
        "numba_gil_ensure",
        "numba_gil_release",
        "get_num_threads",
        "set_num_threads",
        "set_parallel_chunksize",
        "get_parallel_chunksize",
        "get_sched_size",
        "allocate_sched",
        "deallocate_sched",
        "do_scheduling_signed",
        "do_scheduling_unsigned",
        "numba_parallel_for",
    }
)
LIBC_SYMBOLS = frozenset(
    {
        "memset",
        "memcpy",
        "memmove",
        "memcmp",
        "printf",
        "puts",
        "putchar",
        "abort",
        "malloc",
        "free",
    }
)


class BuildError(RuntimeError):
    """The library could not be built (no C compiler, an unknown symbol, a failed link)."""


def _compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise BuildError("no C compiler (cc) on PATH: the native kernels need one to link")
    return cc


def _target_machine():
    from llvmlite import binding as ll
    from numba.core import codegen  # noqa: F401 (numba's codegen sets LLVM up)

    from cuzk.arith.jit import cpu_target

    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    cpu, features = cpu_target()
    return ll.Target.from_default_triple().create_target_machine(
        cpu=cpu, features=features, opt=3, reloc="pic", codemodel="default"
    )


def _wrapper(entry: Entry, kernel):
    """The cfunc of ``entry`` around ``kernel`` (a Numba dispatcher)."""
    from numba import carray, cfunc, types

    params, call, sig = [], [], []
    for i, a in enumerate(entry.args):
        if a.dtype is None:
            params.append(f"i{i}")
            call.append(f"i{i}")
            sig.append(types.int64)
            continue
        dims = [f"a{i}_{d}" for d in range(a.ndim)]
        pointer = types.CPointer(getattr(types, a.dtype))
        if a.strided:
            strides = [f"a{i}_s{d}" for d in range(a.ndim)]
            params += [f"a{i}", f"a{i}_span", *dims, *strides]
            call.append(
                f"as_strided(carray(a{i}, (a{i}_span,)), ({', '.join(dims)},), "
                f"({', '.join(strides)},))"
            )
            sig += [pointer, types.int64] + [types.int64] * (2 * a.ndim)
            continue
        params += [f"a{i}", *dims]
        call.append(f"carray(a{i}, ({', '.join(dims)},))")
        sig += [pointer] + [types.int64] * a.ndim
    body = f"kernel({', '.join(call)})"
    if entry.returns:  # the kernel's int64 result, stored through the last argument
        params.append("result")
        sig.append(types.CPointer(types.int64))
        body = f"carray(result, (1,))[0] = {body}"
    src = f"def {entry.symbol}({', '.join(params)}):\n    {body}\n"
    from numpy.lib.stride_tricks import as_strided

    scope = {"kernel": kernel, "carray": carray, "as_strided": as_strided}
    exec(compile(src, f"<cuzk native entry {entry.name}>", "exec"), scope)
    return cfunc(types.void(*sig), nogil=True)(scope[entry.symbol])


def entry_object(entry: Entry, curve: str, machine) -> tuple[bytes, set]:
    """(object code, undefined symbols) of one entry for ``curve``."""
    from llvmlite import binding as ll

    from cuzk.arith.curves import curve_build

    kernel = getattr(curve_build(entry.module, curve, **dict(entry.params)), entry.function)
    wrapped = _wrapper(entry, kernel)
    mod = ll.parse_assembly(str(wrapped._library._final_module))
    c_entry = wrapped.native_name
    undefined = set()
    for fn in mod.functions:
        if fn.is_declaration:
            if not fn.name.startswith("llvm."):
                undefined.add(fn.name)
        elif fn.name == c_entry:
            fn.name = entry.symbol
        else:
            fn.linkage = "internal"
    for gv in mod.global_variables:
        if gv.is_declaration:
            undefined.add(gv.name)
        else:
            gv.linkage = "internal"
    mod.verify()
    return machine.emit_object(mod), undefined


def check_symbols(undefined: set) -> None:
    unknown = sorted(
        s
        for s in undefined
        if s not in RUNTIME_SYMBOLS and s not in LIBC_SYMBOLS and not s.startswith(("Py", "_Py"))
    )
    if unknown:
        raise BuildError(
            "the kernels call functions the native run-time does not provide: " + ", ".join(unknown)
        )


def _link(cc: str, inputs: list[str], out: Path, extra=()) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
    os.close(fd)
    try:
        p = subprocess.run(
            [cc, "-shared", "-o", tmp, *inputs, *extra], capture_output=True, text=True
        )
        if p.returncode != 0:
            why = p.stderr.strip() or f"exit status {p.returncode}"
            raise BuildError(f"{cc} failed linking {out.name}: {why}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def build_runtime(cc: str | None = None, into: Path | None = None) -> Path:
    """Compile runtime.c into runtime-<key>.so (kept when already there), in ``into`` when
    given, else where the loader looks (cuzk.native.folders())."""
    out = native.runtime_path() if into is None else Path(into) / f"runtime-{native.key()}.so"
    if out.exists():
        return out
    cc = cc or _compiler()
    with tempfile.TemporaryDirectory(prefix="cuzk-native-") as tmp:
        obj = os.path.join(tmp, "runtime.o")
        p = subprocess.run(
            [cc, "-O2", "-fPIC", "-pthread", "-c", str(RUNTIME_SOURCE), "-o", obj],
            capture_output=True,
            text=True,
        )
        if p.returncode != 0:
            why = p.stderr.strip() or f"exit status {p.returncode}"
            raise BuildError(f"{cc} failed compiling runtime.c: {why}")
        _link(cc, [obj], out, ["-pthread"])
    return out


def _entry_objects(curve: str, names: list[str]) -> list[tuple[str, bytes, set]]:
    """(name, object code, undefined symbols) of the entries named, for ``curve``, in this
    process."""
    machine = _target_machine()
    by_name = {e.name: e for e in ENTRIES}
    return [(n, *entry_object(by_name[n], curve, machine)) for n in names]


def _write_objects(curve: str, folder: str, names: list[str]) -> None:
    """A worker of build_library's (its own interpreter): the entries named, compiled into
    folder/<name>.o, their undefined symbols one a line in folder/<name>.undefined."""
    for n, obj, missing in _entry_objects(curve, names):
        Path(folder, f"{n}.undefined").write_text("".join(f"{m}\n" for m in sorted(missing)))
        Path(folder, f"{n}.o").write_bytes(obj)  # last: its presence says the entry is done


# A worker: python -c WORKER CURVE FOLDER NAME ... (a plain interpreter, not multiprocessing's
# spawn, which would run again the caller's main script where it has no __main__ guard).
WORKER = (
    "import sys; from cuzk.native.build import _write_objects; "
    "_write_objects(sys.argv[1], sys.argv[2], sys.argv[3:])"
)


def _compile_in_workers(curve: str, shares: list[list[str]], folder: str, log=None) -> list:
    """Each share compiled by a worker process at once (every worker imports this package:
    its folder goes first on PYTHONPATH); [(name, object code, undefined)] in ENTRIES' order.
    A worker that fails fails the build with its last lines."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(native.PACKAGE.parent), env.get("PYTHONPATH", "")) if p
    )
    workers = []
    for i, share in enumerate(shares):
        err = open(os.path.join(folder, f"worker-{i}.log"), "w+b")
        cmd = [sys.executable, "-c", WORKER, curve, folder, *share]
        workers.append((share, err, subprocess.Popen(cmd, env=env, stderr=err, cwd=folder)))
    try:
        for share, err, proc in workers:
            if proc.wait() != 0:
                err.seek(0)
                tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
                raise BuildError(
                    f"compiling {', '.join(share)} failed (exit status {proc.returncode}): "
                    + " | ".join(tail)
                )
            if log:
                log(f"native kernels ({curve}): {', '.join(share)}")
    finally:
        for _share, err, proc in workers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            err.close()
    out = []
    for e in ENTRIES:
        undefined = Path(folder, f"{e.name}.undefined").read_text().split()
        out.append((e.name, Path(folder, f"{e.name}.o").read_bytes(), set(undefined)))
    return out


# What an entry of a build costs to compile, relative to the others: the MSM drivers'
# (pippenger_cpu, per group) take most of a library's build. Measured for BN254 in two
# workers: the two groups' MSM builds (16 entries) 160 s, every other entry (19) 40 s.
COMPILE_WEIGHT = {"cuzk.kernels.pippenger_cpu": 4}


def _shares(jobs: int) -> list[list[str]]:
    """ENTRIES' names in at most ``jobs`` shares of about equal compile time, the entries of
    one build (module and parameters) kept together: they share the kernels' callees, which a
    process compiles once (the costliest builds placed first, each into the lightest share;
    COMPILE_WEIGHT)."""
    builds: dict[tuple, list[str]] = {}
    for e in ENTRIES:
        builds.setdefault((e.module, e.params), []).append(e.name)
    shares: list[list[str]] = [[] for _ in range(max(1, min(jobs, len(builds))))]
    loads = [0] * len(shares)

    def cost(build):
        return COMPILE_WEIGHT.get(build[0][0], 1) * len(build[1])

    for build in sorted(builds.items(), key=cost, reverse=True):
        i = loads.index(min(loads))
        shares[i].extend(build[1])
        loads[i] += cost(build)
    return [share for share in shares if share]


def build_jobs() -> int:
    """How many processes compile a library's entries: $CUZK_BUILD_JOBS, else one per core
    this process may run on, at most 8."""
    asked = os.environ.get("CUZK_BUILD_JOBS", "").strip()
    if asked:
        try:
            return max(1, int(asked))
        except ValueError:
            raise BuildError(f"CUZK_BUILD_JOBS: expected a whole number, got {asked!r}") from None
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def build_library(
    curve: str = DEFAULT, log=None, into: Path | None = None, jobs: int | None = None
) -> Path:
    """Build (or keep) the native library of ``curve``; returns its path. It is kept when
    one of the loader's folders (cuzk.native.folders()) already holds it, else built into
    cuzk.native.folder(); with ``into``, into that folder (kept when already there). The
    entries compile in ``jobs`` worker processes (default build_jobs(); 1: in this one), each
    a share of the builds: the compiles are independent and each single-threaded (Numba and
    LLVM)."""
    if curve not in CURVES:
        raise ValueError(f"unknown curve {curve!r} (expected one of {sorted(CURVES)})")
    name = f"kernels-{curve}-{native.key()}.so"
    out = native.library_path(curve) if into is None else Path(into) / name
    if out.exists():
        return out
    cc = _compiler()
    build_runtime(cc, into)
    shares = _shares(build_jobs() if jobs is None else jobs)
    t0 = time.perf_counter()
    if log:
        log(f"native kernels ({curve}): {len(ENTRIES)} entries in {len(shares)} process(es)")
    if len(shares) == 1:
        compiled = _entry_objects(curve, shares[0])
    else:
        with tempfile.TemporaryDirectory(prefix="cuzk-native-workers-") as folder:
            compiled = _compile_in_workers(curve, shares, folder, log)
    with tempfile.TemporaryDirectory(prefix="cuzk-native-") as tmp:
        objects, undefined = [], set()
        for entry_name, obj, missing in compiled:
            path = os.path.join(tmp, f"{entry_name}.o")
            Path(path).write_bytes(obj)
            objects.append(path)
            undefined |= missing
        check_symbols(undefined)
        _link(cc, objects, out)
    if log:
        log(f"native kernels ({curve}) built in {time.perf_counter() - t0:.1f} s: {out}")
    return out


def main(argv=None) -> int:
    """``python -m cuzk.native.build [--into DIR] [CURVE ...]`` (BN254 when no curve is
    named): build each curve's library where the loader looks, or into DIR (the install's
    build, setup.py: libraries of another key there are removed first); progress on stderr;
    exit 1 with one line when a build fails."""
    args = list(argv if argv is not None else sys.argv[1:])
    into = None
    if args[:1] == ["--into"]:
        if len(args) < 2:
            print("cuzk: --into needs a folder", file=sys.stderr)
            return 2
        into, args = Path(args[1]), args[2:]
        for old in (*into.glob("kernels-*.so"), *into.glob("runtime-*.so")):
            if not old.name.endswith(f"-{native.key()}.so"):
                old.unlink()  # an earlier build's, of other sources (a reused build folder)
    for c in args or [DEFAULT]:
        try:
            build_library(c, log=lambda m: print(m, file=sys.stderr), into=into)
        except (BuildError, ValueError) as e:
            print(f"cuzk: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
