"""The batch entry points' table: one definition of every elementwise operation (its operands,
its result, the element function it applies to each row), and the host-side helpers shared by
both targets. cuzk.arith.batch_ops builds its kernels and entry points from TABLE.

Row layouts (uint64 columns per row, see cuzk.arith.curve), for BN254 (``widths(nq, nr)``
for a curve with nq limbs per Fq and nr per Fr element: BLS12-381 has 6 and 4): fq/fr 4,
fq2 8, G1 affine "g1a" 8, G1 Jacobian "g1" 12, G2 affine "g2a" 16, G2 Jacobian "g2" 24, a
plain scalar 4; "bool" is one predicate result per row. Each backend supplies one
``run(kernel, operands, out_width)`` that checks and places the operands ((array, width,
name) triples), launches the kernel over their rows and returns the output ((n, out_width)
uint64, or a bool per row when out_width is None). This module imports only numpy.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


def widths(nq: int, nr: int) -> dict[str, int | None]:
    """The row width of each layout for nq limbs per Fq element and nr per Fr element."""
    return {
        "fq": nq, "fr": nr, "fq2": 2 * nq, "scalar": nr,
        "g1a": 2 * nq, "g1": 3 * nq, "g2a": 4 * nq, "g2": 6 * nq,
        "bool": None,
    }  # fmt: skip


WIDTH = widths(4, 4)  # BN254's


class Op(NamedTuple):
    """One elementwise operation.

    ``expr`` is the element function applied to one row, as the text the kernels are
    generated from: ``F.`` and ``C.`` name the field and curve builds of the target, and
    ``{name}`` stands for the operand of that name read from the row. ``cheap`` marks
    operations that only add, subtract or move limbs: memory-bound, so their CPU loop stays
    serial (measured: threads did not pay at the sizes the prover uses them for), and their
    PTX has no 64x64->128 multiplication.
    """

    operands: tuple[tuple[str, str], ...]  # (argument name, row layout) per input array
    result: str  # row layout of the output
    expr: str
    doc: str
    cheap: bool = False


TABLE: dict[str, Op] = {}


def _field(f: str, ops: str) -> None:
    a, b = (("a", f),), (("a", f), ("b", f))
    docs = {"inv": "elementwise inverse; 0 maps to 0", "sqr": "elementwise square"}
    for op in ops.split():
        binary = op in ("add", "sub", "mul")
        TABLE[f"{f}_{op}"] = Op(
            b if binary else a,
            f,
            f"F.{f}_{op}({{a}}, {{b}})" if binary else f"F.{f}_{op}({{a}})",
            docs.get(op, f"elementwise {op}"),
            cheap=op in ("add", "sub", "neg"),
        )


def _curve(g: str) -> None:
    J, Q, A, B = ("P", g), ("Q", g), ("a", g + "a"), ("b", g + "a")
    TABLE.update({
        f"{g}_add": Op((J, Q), g, f"C.{g}_add({{P}}, {{Q}})", "Jacobian + Jacobian -> Jacobian"),
        f"{g}_add_mixed": Op((J, A), g, f"C.{g}_add_mixed({{P}}, {{a}})",
                             "Jacobian + affine -> Jacobian"),
        f"{g}_add_affine": Op((A, B), g, f"C.{g}_add_mixed(C.{g}_from_affine({{a}}), {{b}})",
                              "affine + affine -> Jacobian, or affine when affine=True"),
        f"{g}_dbl": Op((J,), g, f"C.{g}_dbl({{P}})", "doubling"),
        f"{g}_neg": Op((J,), g, f"C.{g}_neg({{P}})", "negation", cheap=True),
        f"{g}_from_affine": Op((A,), g, f"C.{g}_from_affine({{a}})", "affine -> Jacobian",
                               cheap=True),
        f"{g}_to_affine": Op((J,), g + "a", f"C.{g}_to_affine({{P}})", "Jacobian -> affine"),
        f"{g}_eq": Op((J, Q), "bool", f"C.{g}_eq({{P}}, {{Q}})", "projective equality per row"),
        f"{g}_mul": Op((J, ("k", "scalar")), g, f"C.{g}_mul({{P}}, {{k}})",
                       "k_i P_i for plain scalars k (double-and-add)"),
        f"{g}_is_on_curve_affine": Op((A,), "bool", f"C.{g}_is_on_curve_affine({{a}})",
                                      "on-curve check per affine row"),
    })  # fmt: skip


_field("fq", "add sub mul neg to_mont from_mont inv")
_field("fr", "add sub mul neg to_mont from_mont inv")
_field("fq2", "add sub mul sqr inv")
_curve("g1")
_curve("g2")


def ops(width: dict) -> dict[str, tuple[tuple[tuple[str, int], ...], int | None, str]]:
    """op -> (operand (name, width) pairs, output width or None for a bool per row, doc
    line), for the row widths ``width`` (see widths)."""
    return {
        name: (tuple((a, width[layout]) for a, layout in op.operands), width[op.result], op.doc)
        for name, op in TABLE.items()
    }


OPS = ops(WIDTH)  # BN254's


def rows(a, width: int, name: str = "array") -> np.ndarray:
    """``a`` as a C-contiguous uint64 array of shape (n, width); a single row of ``width``
    values is taken as n = 1."""
    arr = np.ascontiguousarray(a, dtype=np.uint64)
    if arr.ndim == 1 and arr.shape[0] == width:
        arr = arr.reshape(1, width)
    if arr.ndim != 2 or arr.shape[1] != width:
        raise ValueError(f"{name}: expected shape (n, {width}), got {np.shape(a)}")
    return arr


def entry_points(run, kernels: dict, table_ops: dict | None = None) -> dict:
    """The public functions of a backend: ``kernels`` maps "_<op>" to its kernel;
    ``table_ops`` (``ops(widths(...))``, BN254's OPS by default) gives the row widths."""
    funcs = {}
    for op, (operands, out_width, doc) in (OPS if table_ops is None else table_ops).items():
        kernel = kernels[f"_{op}"]

        def f(*arrays, _k=kernel, _o=operands, _w=out_width, _op=op, affine=False):
            if len(arrays) != len(_o):
                raise TypeError(f"{_op}() takes {len(_o)} arrays ({', '.join(n for n, _ in _o)})")
            out = run(_k, [(a, w, n) for a, (n, w) in zip(arrays, _o, strict=True)], _w)
            if affine:
                if not _op.endswith("_add_affine"):
                    raise TypeError(f"{_op}() takes no 'affine' argument")
                return funcs[_op.split("_")[0] + "_to_affine"](out)
            return out

        f.__name__ = f.__qualname__ = op
        f.__doc__ = f"{op}({', '.join(n for n, _ in operands)}): {doc}."
        funcs[op] = f
    return funcs
