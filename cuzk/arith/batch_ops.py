"""Batch entry points: elementwise field and curve operations over arrays, one source for the
CPU and CUDA (a shared module, see cuzk.arith.jit).

``cuzk.arith.batch("cpu")`` is this module (Numba ``prange`` loops over numpy arrays);
``cuzk.arith.batch("cuda")`` is its CUDA build (one GPU thread per row; host operands give
host results, and if any operand is already a device array the result stays on the
device). Both have the same functions, one per entry of cuzk.arith.batch_api.TABLE.
``cuzk.arith.batch(target, curve="bls12_381")`` is the build for another curve
(``T.load("cuzk.arith.batch_ops", curve=...)``): the same functions on its layouts.

Array layouts (uint64, C order, one element per row; see cuzk.arith.curve), BN254's
(BLS12-381's: 6 limbs per Fq element, so 6 / 12 / 12 / 18 / 24 / 36 for the Fq, Fq2 and
point layouts; Fr 4): Fq/Fr (n, 4), Fq2 (n, 8), G1 affine (n, 8), G1 Jacobian (n, 12), G2
affine (n, 16), G2 Jacobian (n, 24). Field elements are in Montgomery form except where a name says
otherwise (``*_to_mont`` takes plain values, scalars ``k`` of ``*_mul`` are plain).
Inverses of 0 are 0 here (no exceptions inside kernels); the Python-level ``fq_inv`` etc. in
cuzk.arith raise ZeroDivisionError.

How the kernels are made: each TABLE entry names its element function once; a loop shape
of this target (LOOPS) walks the rows around it. The kernel's source text is generated and
executed with this module's globals, so F, C, np, prange and cuda are module constants to
Numba (compiled straight through, and cacheable on disk like a hand-written function).
``kernel_source(name)`` shows the text. CPU loops: ``serial`` for the memory-bound ``cheap``
operations, ``parallel`` (prange over rows) for the rest, and ``chunked`` for Jacobian ->
affine (one inversion per chunk of rows). CUDA: ``grid``, one thread per row.
"""

from __future__ import annotations

import hashlib

import numpy as np
from numba import njit, prange, types  # noqa: F401 (prange: in the generated kernels)

from cuzk.arith.batch_api import TABLE, entry_points, ops, rows, widths
from cuzk.arith.curves import DEFAULT, build_params
from cuzk.arith.jit import CPU, KernelTable, building

T = building()
CURVE = T.param("curve", DEFAULT)
F = T.load("cuzk.arith.field", **build_params(CURVE))
C = T.load("cuzk.arith.curve", **build_params(CURVE))
WIDTH = widths(F.NQ, F.NR)  # row width per layout
OPS = ops(WIDTH)
if T.name != CPU:
    from numba import cuda

# Rows per inversion in the CPU Jacobian -> affine conversions (and per prange task).
AFFINE_CHUNK = 1024

# ===================================== kernel text ========================================
# How one row of each layout is read ({x}: the array) and written ({v}: the value).
GET = {
    "fq": "F.fq_load({x}, i, 0)", "fr": "F.fr_load({x}, i, 0)", "scalar": "F.fr_load({x}, i, 0)",
    "fq2": "F.fq2_load({x}, i, 0)",
    "g1": "C.g1_load({x}, i)", "g1a": "C.g1_load_affine({x}, i)",
    "g2": "C.g2_load({x}, i)", "g2a": "C.g2_load_affine({x}, i)",
}  # fmt: skip
PUT = {
    "fq": "F.fq_store(out, i, 0, {v})", "fr": "F.fr_store(out, i, 0, {v})",
    "fq2": "F.fq2_store(out, i, 0, {v})",
    "g1": "C.g1_store(out, i, {v})", "g1a": "C.g1_store_affine(out, i, {v})",
    "g2": "C.g2_store(out, i, {v})", "g2a": "C.g2_store_affine(out, i, {v})",
    "bool": "out[i] = {v}",
}  # fmt: skip

# Loop shapes: {name} the kernel, {args} its input arrays, {row} the statement for row i.
LOOPS = {
    "serial": """
def {name}({args}, out):
    for i in range(out.shape[0]):
        {row}
""",
    "parallel": """
def {name}({args}, out):
    for i in prange(out.shape[0]):
        {row}
""",
    "grid": """
def {name}({args}, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        {row}
""",
    # Jacobian -> affine with one inversion per chunk of rows (Montgomery's simultaneous
    # inversion trick: prefix products of the Z's, one inverse, then back-substitution),
    # about 7 multiplications per row instead of a ~380-multiplication inversion. Rows at
    # infinity (Z = 0) are skipped in the products and come out as (0, 0). {f}: the
    # coordinate field's names (see _COORDS), {w} its width.
    "chunked": """
def {name}(P, out):
    n = out.shape[0]
    n_chunks = (n + AFFINE_CHUNK - 1) // AFFINE_CHUNK
    for c in prange(n_chunks):
        lo = c * AFFINE_CHUNK
        hi = min(n, lo + AFFINE_CHUNK)
        prefix = np.empty((hi - lo, {w}), dtype=np.uint64)
        acc = {one}()
        for i in range(lo, hi):
            {store}(prefix, i - lo, 0, acc)
            Z = {load}(P, i, {z})
            if not {is_zero}(Z):
                acc = {mul}(acc, Z)
        inv = {inv}(acc)  # 1 / (Z_lo ... Z_hi-1)
        for i in range(hi - 1, lo - 1, -1):
            Z = {load}(P, i, {z})
            if {is_zero}(Z):
                {store}(out, i, 0, {zero}())
                {store}(out, i, {w}, {zero}())
                continue
            zinv = {mul}(inv, {load}(prefix, i - lo, 0))  # 1/Z_i
            inv = {mul}(inv, Z)  # 1 / (Z_lo ... Z_i-1)
            zinv2 = {sqr}(zinv)
            {store}(out, i, 0, {mul}({load}(P, i, 0), zinv2))
            {store}(out, i, {w}, {mul}({load}(P, i, {w}), {mul}(zinv2, zinv)))
""",
}


def _coords(f: str, load: str, store: str, is_zero: str, w: int) -> dict:
    ops = {op: f"F.{f}_{op}" for op in ("one", "zero", "mul", "sqr", "inv")}
    return dict(ops, load=load, store=store, is_zero=is_zero, w=w, z=2 * w)


# The coordinate field of each group, for the chunked loop.
_COORDS = {
    "g1": _coords("fq", "F.fq_load", "F.fq_store", "F.fq_is_zero", WIDTH["fq"]),
    "g2": _coords("fq2", "F.fq2_load", "F.fq2_store", "F.fq2_is_zero", WIDTH["fq2"]),
}


def loop_of(name: str) -> str:
    """The loop shape of kernel ``name`` on this target."""
    if T.name != CPU:
        return "grid"
    if name.endswith("_to_affine"):
        return "chunked"
    return "serial" if TABLE[name].cheap else "parallel"


def kernel_source(name: str) -> str:
    """The generated source text of kernel ``name`` on this target."""
    op, loop = TABLE[name], loop_of(name)
    if loop == "chunked":
        return LOOPS[loop].format(name=name, **_COORDS[name.split("_")[0]])
    value = op.expr.format(**{arg: GET[layout].format(x=arg) for arg, layout in op.operands})
    args = ", ".join(arg for arg, _ in op.operands)
    return LOOPS[loop].format(name=name, args=args, row=PUT[op.result].format(v=value))


def _define(name: str):
    """Kernel ``name`` as a plain Python function of this module."""
    text = kernel_source(name)
    scope: dict = {}
    exec(compile(text, __file__, "exec"), globals(), scope)
    fn = scope[name]
    # Numba's disk cache is keyed by file, qualified name and first line: a name per target,
    # per text and per build (the curve: BN254's and BLS12-381's fr_mul have one text) keeps
    # two builds (and an edited TABLE) from ever sharing an entry.
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    fn.__qualname__ = f"batch_{T.name}_{name}_{digest}{T.suffix}"
    return fn


# ================================= kernels and entry points ===============================

if T.name == CPU:
    KERNELS = {
        name: njit(cache=True, parallel=loop_of(name) != "serial")(_define(name)) for name in TABLE
    }

    def _run(kernel, operands, out_width):
        """Check the operands ((array, width, name) triples), run ``kernel`` over their rows
        into a fresh output of ``out_width`` columns (None: a bool per row)."""
        arrays = [rows(a, width, name) for a, width, name in operands]
        n = arrays[0].shape[0]
        if any(a.shape[0] != n for a in arrays):
            raise ValueError(f"operands differ in length: {[a.shape[0] for a in arrays]}")
        if out_width is None:
            out = np.empty(n, dtype=np.bool_)
        else:
            out = np.empty((n, out_width), dtype=np.uint64)
        kernel(*arrays, out)
        return out

else:
    # Plain Python functions, compiled at first launch (importing needs no GPU).
    KERNELS = {name: _define(name) for name in TABLE}

    U2 = types.Array(types.uint64, 2, "C")  # one element per row
    B1 = types.Array(types.boolean, 1, "C")  # one predicate result per row

    # name -> (python function, argument types): tests/test_ptx.py compiles every entry to
    # PTX for cc 9.0, GPU or not (docs/arithmetic.md). Kernels that multiply field elements
    # must show the 64x64->128 product as mul.hi.u64 there.
    CUDA_KERNELS = KernelTable(
        {
            name: (KERNELS[name], (U2,) * len(op.operands) + (B1 if op.result == "bool" else U2,))
            for name, op in TABLE.items()
        },
        expect={name: ["mul.hi.u64"] for name, op in TABLE.items() if not op.cheap},
    )

    def _is_device_array(a):
        # numba device arrays, on a GPU and in the simulator (which lacks cuda.is_cuda_array)
        return hasattr(a, "copy_to_host") and not isinstance(a, np.ndarray)

    def _operand(a, width, name):
        if _is_device_array(a):
            if len(a.shape) != 2 or a.shape[1] != width:
                raise ValueError(f"{name}: expected shape (n, {width}), got {a.shape}")
            return a, True
        return cuda.to_device(rows(a, width, name)), False

    def _run(fn, operands, out_width):
        """Launch ``fn`` over the rows of ``operands`` ((array, width, name) triples) into a
        fresh output of ``out_width`` columns (None: a bool per row)."""
        args, on_device = [], False
        for a, width, name in operands:
            d, dev = _operand(a, width, name)
            args.append(d)
            on_device |= dev
        n = args[0].shape[0]
        if any(d.shape[0] != n for d in args):
            raise ValueError(f"operands differ in length: {[d.shape[0] for d in args]}")
        if out_width is None:
            out = cuda.device_array(n, dtype=np.bool_)
        else:
            out = cuda.device_array((n, out_width), dtype=np.uint64)
        CUDA_KERNELS.launch(fn.__name__, n, *args, out)  # the op's name (see _define)
        return out if on_device else out.copy_to_host()


globals().update(entry_points(_run, {f"_{name}": k for name, k in KERNELS.items()}, OPS))
