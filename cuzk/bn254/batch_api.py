"""The batch entry points' table: one definition of every elementwise operation's operands,
shared by the CPU (batch_cpu) and CUDA (batch_cuda) backends.

Each backend supplies its kernels (named ``_<op>``) and one ``run(kernel, operands,
out_width)`` that checks and places the operands ((array, width, name) triples), launches
the kernel over their rows and returns the output ((n, out_width) uint64, or a bool per row
when out_width is None). Widths are uint64 columns per row: Fq/Fr 4, Fq2 8, G1 affine 8,
G1 Jacobian 12, G2 affine 16, G2 Jacobian 24.
"""

from __future__ import annotations

# op -> (operand (name, width) pairs, output width or None for a bool per row, doc line)
OPS: dict[str, tuple[tuple[tuple[str, int], ...], int | None, str]] = {}


def _field(prefix: str, width: int) -> None:
    for op in ("add", "sub", "mul"):
        OPS[f"{prefix}_{op}"] = ((("a", width), ("b", width)), width, f"elementwise {op}")
    for op in ("neg", "to_mont", "from_mont"):
        OPS[f"{prefix}_{op}"] = ((("a", width),), width, f"elementwise {op}")
    OPS[f"{prefix}_inv"] = ((("a", width),), width, "elementwise inverse; 0 maps to 0")


def _curve(g: str, affine: int, jacobian: int) -> None:
    J, A, K = ("P", jacobian), ("a", affine), ("k", 4)
    OPS[f"{g}_add"] = ((J, ("Q", jacobian)), jacobian, "Jacobian + Jacobian -> Jacobian")
    OPS[f"{g}_add_mixed"] = ((J, A), jacobian, "Jacobian + affine -> Jacobian")
    OPS[f"{g}_add_affine"] = ((A, ("b", affine)), jacobian,
                              "affine + affine -> Jacobian, or affine when affine=True")
    OPS[f"{g}_dbl"] = ((J,), jacobian, "doubling")
    OPS[f"{g}_neg"] = ((J,), jacobian, "negation")
    OPS[f"{g}_from_affine"] = ((A,), jacobian, "affine -> Jacobian")
    OPS[f"{g}_to_affine"] = ((J,), affine, "Jacobian -> affine")
    OPS[f"{g}_eq"] = ((J, ("Q", jacobian)), None, "projective equality per row")
    OPS[f"{g}_mul"] = ((J, K), jacobian, "k_i P_i for plain scalars k (double-and-add)")
    OPS[f"{g}_is_on_curve_affine"] = ((A,), None, "on-curve check per affine row")


_field("fq", 4)
_field("fr", 4)
_field("fq2", 8)
for _op in ("neg", "to_mont", "from_mont"):
    del OPS[f"fq2_{_op}"]
OPS["fq2_sqr"] = ((("a", 8),), 8, "elementwise square")
_curve("g1", 8, 12)
_curve("g2", 16, 24)


def entry_points(run, kernels: dict) -> dict:
    """The public functions of a backend: ``kernels`` maps "_<op>" to its kernel."""
    funcs = {}
    for op, (operands, out_width, doc) in OPS.items():
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
