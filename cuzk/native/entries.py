"""The kernels the native library holds, and their C signatures (numba-free: read by the
loader as well as the build).

An entry is one Numba kernel of a build (cuzk.arith.curves.curve_build: module and curve,
plus build parameters such as the group) with one set of argument types. In the library it
is a function named ``cuzk_<name>`` taking, for each argument in order, an array as its data
pointer followed by its shape (int64 each), or an int64. Arrays are C-contiguous with the
entry's dtype and number of dimensions; an argument marked ``out`` is written by the kernel
(the caller's array must already be C-contiguous), an ``in`` array is copied when it is not.
A ``strided`` array is passed as its data pointer, span (items), shape and byte strides.
A kernel that returns an integer (``returns``) takes one more argument, last: a pointer to
the int64 the C function stores it in (the library's functions return nothing themselves).

These are the kernels a one-shot proof calls (`cuzk prove`, `cuzk fullprove`): the key
checks, synthesis, the H pipeline and its tables, the MSM drivers of both groups, the
constraint check of `--r1cs`, and the proof's self-check (G2 subgroup test, pairing
product); for a PLONK key the NTT's transforms and coset step and the PLONK prover's kernels
(_plonk_entries); and what the daemon adds for a resident key: its tables of multiples,
built and summed by the same MSM drivers (table_fill, pippenger_table).
"""

from __future__ import annotations

from cuzk.plain import Plain


class Arg(Plain):
    """One argument: an array of ``dtype`` (numpy name) and ``ndim`` dimensions, written by
    the kernel when ``out``; or an int64 when ``dtype`` is None. A ``strided`` array (an
    input) is taken as it lies, e.g. a field of a structured array: its data pointer, its
    span in items, its shape and its strides in bytes (no copy)."""

    FIELDS = ("dtype", "ndim", "out", "strided")

    def __init__(
        self, dtype: str | None = None, ndim: int = 0, out: bool = False, strided: bool = False
    ):
        self._set(dtype=dtype, ndim=ndim, out=out, strided=strided)


INT = Arg()


def IN(dtype: str, ndim: int) -> Arg:
    return Arg(dtype, ndim, False)


def OUT(dtype: str, ndim: int) -> Arg:
    return Arg(dtype, ndim, True)


def STRIDED(dtype: str, ndim: int) -> Arg:
    return Arg(dtype, ndim, False, True)


class Entry(Plain):
    """A library function: ``name`` (the symbol is cuzk_<name>), the build's ``module``
    (cuzk.arith.curves.curve_build) and its kernel ``function``, the build ``params``
    besides the curve ((("group", "g1"),)), the ``args`` (of Arg), and ``returns``: the kernel
    returns an int64 (stored through a last pointer)."""

    FIELDS = ("name", "module", "function", "params", "args", "returns")

    def __init__(self, name, module, function, params, args, returns: bool = False):
        self._set(
            name=name, module=module, function=function, params=params, args=args, returns=returns
        )

    @property
    def symbol(self) -> str:
        return f"cuzk_{self.name}"


def _msm_entries(g: str) -> list[Entry]:
    m, p = "cuzk.kernels.pippenger_cpu", (("group", g),)
    pts = IN("uint64", 2)
    entries = [
        Entry(
            f"scalar_classes_{g}",
            m,
            "scalar_classes",
            p,
            (pts, IN("uint64", 2), OUT("int16", 1)),
        ),
        Entry(
            f"points_sum_{g}", m, "points_sum", p, (pts, IN("int32", 1), INT, INT, OUT("uint64", 2))
        ),
        Entry(f"rows_sum_{g}", m, "rows_sum", p, (IN("uint64", 2), OUT("uint64", 2))),
        # the class plan's histogram and index lists (cuzk.groth16.lean: no numpy)
        Entry(f"bits_histogram_{g}", m, "bits_histogram", p, (IN("int16", 1), OUT("int64", 1))),
        Entry(
            f"class_index_{g}",
            m,
            "class_index",
            p,
            (IN("int16", 1), INT, INT, OUT("int32", 1)),
            returns=True,
        ),
        # a resident key's tables of multiples (msm_cpu.build_table): the rows, n, shift, chunk
        Entry(f"table_fill_{g}", m, "table_fill", p, (OUT("uint64", 2), INT, INT, INT)),
    ]
    for digits in ("int16", "int32"):
        entries.append(
            Entry(
                f"pippenger_{g}_{digits}",
                m,
                "pippenger",
                p,
                (pts, IN("uint64", 2), IN("int32", 1))
                + (INT,) * 5
                + (OUT(digits, 2), OUT("uint64", 2)),
            )
        )
        # an MSM over a table (msm_cpu._pippenger_table): the table's rows, n, scalars, idx,
        # K, c, lanes, rows, threads, the folded digits, the result
        entries.append(
            Entry(
                f"pippenger_table_{g}_{digits}",
                m,
                "pippenger_table",
                p,
                (pts, INT, IN("uint64", 2), IN("int32", 1))
                + (INT,) * 5
                + (OUT(digits, 2), OUT("uint64", 2)),
            )
        )
    return entries


def _plonk_entries() -> list[Entry]:
    """The NTT's transforms and coset step, and cuzk.kernels.plonk_cpu_kernels: what a PLONK
    proof runs besides the powers tables and the MSMs."""
    n, p = "cuzk.kernels.ntt_cpu_kernels", "cuzk.kernels.plonk_cpu_kernels"
    vec, out = IN("uint64", 2), OUT("uint64", 2)
    return [
        Entry("ntt_dit", n, "_dit", (), (out,) * 3 + (INT, vec) + (INT,) * 4),
        Entry("ntt_bit_reverse", n, "_bit_reverse", (), (out, INT)),
        Entry("ntt_bit_reverse_scale", n, "_bit_reverse_scale", (), (out, INT, IN("uint64", 1))),
        Entry("ntt_coset_shift", n, "_coset_shift", (), (out, vec, INT, INT)),
        Entry(
            "plonk_additions",
            p,
            "_additions",
            (),
            (out, IN("int64", 1), IN("int64", 1), vec, vec, INT),
        ),
        Entry("plonk_gate_residuals", p, "_gate_residuals", (), (OUT("uint8", 1),) + (vec,) * 9),
        Entry("plonk_copy_factors", p, "_copy_factors", (), (out, out) + (vec,) * 8),
        Entry("plonk_grand_product", p, "_grand_product", (), (out, vec, vec, vec, out)),
        Entry("plonk_quotient", p, "_quotient", (), (out,) + (vec,) * 15),
        Entry("plonk_axpy", p, "_axpy", (), (out, vec, vec)),
        Entry("plonk_horner", p, "_horner", (), (vec, vec, out)),
        Entry("plonk_divide_linear", p, "_divide_linear", (), (out, vec, vec, out)),
        Entry("plonk_scale", p, "_scale", (), (out, vec)),
        Entry("plonk_to_mont", p, "_to_mont", (), (out, INT)),
    ]


# evaluate_abc's arguments: the zkey's coefficients (fields of its structured array, read in
# place: matrix, constraint, signal, value), the witness, then a, b, c.
_ABC = (
    (STRIDED("uint32", 1),) * 3 + (STRIDED("uint64", 2), IN("uint64", 2)) + (OUT("uint64", 2),) * 3
)

ENTRIES: tuple[Entry, ...] = (
    Entry(
        "first_bad",
        "cuzk.groth16.point_sweeps",
        "first_bad",
        (),
        (IN("uint64", 2), OUT("int64", 1), INT),
    ),
    Entry("evaluate_abc", "cuzk.groth16.synthesis_kernels", "_evaluate_abc", (), _ABC),
    Entry(
        "evaluate_abc_part",
        "cuzk.groth16.synthesis_kernels",
        "_evaluate_abc_part",
        (),
        _ABC + (INT, INT),  # (first, last)
    ),
    Entry(
        "powers",
        "cuzk.kernels.ntt_cpu_kernels",
        "_powers",
        (),
        (OUT("uint64", 2), IN("uint64", 1), IN("int64", 1), IN("uint64", 2), INT),
    ),
    Entry(
        "h_pipeline",
        "cuzk.kernels.ntt_cpu_kernels",
        "_h_pipeline",
        (),
        (OUT("uint64", 2),) * 4 + (IN("uint64", 2),) * 2 + (INT,) * 3 + (IN("uint64", 1),) * 2,
    ),
    Entry(
        "first_unsatisfied",
        "cuzk.groth16.synthesis_kernels",
        "_first_unsatisfied",
        (),
        # n, then A, B, C of the .r1cs as CSR (row_ptr, cols, vals), then the witness
        (INT,) + (IN("int64", 1), IN("uint32", 1), IN("uint64", 2)) * 3 + (IN("uint64", 2),),
        returns=True,
    ),
    # the witness's and the coefficients' checks of a reader without numpy (cuzk.groth16.lean)
    Entry(
        "first_not_below",
        "cuzk.groth16.synthesis_kernels",
        "_first_not_below",
        (),
        (IN("uint64", 2), IN("uint64", 1)),
        returns=True,
    ),
    Entry(
        "first_bad_coefficient",
        "cuzk.groth16.synthesis_kernels",
        "_first_bad_coefficient",
        (),
        (STRIDED("uint32", 1),) * 3 + (INT, INT),
        returns=True,
    ),
    # the self-check of a proof before it is written: its pi_b's (and the key's) G2 test, and
    # the verifier's product of pairings (cuzk.kernels.verifier_ops: Groth16's four, PLONK's two)
    Entry(
        "g2_rows_in_subgroup",
        "cuzk.arith.subgroup",
        "g2_rows_in_subgroup",
        (),
        (IN("uint64", 2), OUT("uint8", 1)),
    ),
    Entry(
        "pairing_product_is_one",
        "cuzk.arith.pairing",
        "pairing_product_is_one",
        (),
        (IN("uint64", 3), IN("uint64", 4)),
        returns=True,
    ),
    *_msm_entries("g1"),
    *_msm_entries("g2"),
    *_plonk_entries(),
)


def for_build(module: str, params: dict) -> dict[str, list[Entry]]:
    """The entries of one build (module, parameters besides the curve), by kernel name (a
    kernel may have several entries, one per argument types)."""
    out: dict[str, list[Entry]] = {}
    for e in ENTRIES:
        if e.module == module and dict(e.params) == params:
            out.setdefault(e.function, []).append(e)
    return out
