"""Validation of a mapped proving key's points: once per key file, before any proof, on the
key's curve (BN254 or BLS12-381: the equations, q and the subgroup tests are the curve's).

`validate_key(zkey)` checks, in order, and raises `BadPoint` (a FormatError, one line naming
the file, the section and the index of the first bad point) at the first failure:

1. the Groth16 header's points (vk_alpha_1, vk_beta_1, vk_delta_1 in G1; vk_beta_2,
   vk_gamma_2, vk_delta_2 in G2): coordinates below q, on the curve / the twist, the G2
   points in the order-r subgroup (the twist's group has a large cofactor) and, on a curve
   whose G1 has a cofactor, the G1 points in G1 too (Python ints, cuzk.arith.pairing_int);
2. IC and every point section (pointsA, pointsB1, pointsB2, pointsC, pointsH): coordinates
   below q and every point on its curve, the all-zero encoding of infinity allowed. The
   messages name the curve's equation ("point is not on the curve y^2 = x^3 + 4").

Subgroups of the sections. BN254's G1 has cofactor 1: on the curve is in G1. BLS12-381's
E(Fq) has order h1 r, h1 = (x - 1)^2 / 3 (126 bits, with the small primes 3 and 11), and
the pairing does not see a point's component of the cofactor's order: e(P + T, Q) = e(P, Q)
for such a T and Q in G2 (checked in the tests). A G1 section point with such a component
therefore gives a proof whose pi_a or pi_c is outside G1 and which still satisfies the
pairing equation: snarkjs-style verification accepts it, a verifier that checks membership
(Ethereum's BLS12-381 precompiles) refuses it. So on BLS12-381, IC is checked to lie in G1
(with the header), and every point of pointsA, pointsB1, pointsC and pointsH too, by the
compiled per-point test phi(P) = [-x^2]P (cuzk.arith.subgroup): two 64-bit multiplications,
~60 us a point on this machine's two cores against ~0.12 us for the curve equation, ~20 s
for a 2^16 circuit. `g1_subgroup=False` leaves the section test out, which is sound where the
proof is verified before it is written: cuzk's verifier checks pi_a and pi_c for G1
membership on such a curve (cuzk.groth16.verifier), so a component that reaches the proof
refuses it, and one that does not (its witness coefficient kills it) changes nothing; a point
that is simply wrong fails the pairing equation. `cuzk prove` passes it when it verifies;
the daemon, which validates once per key and does not verify each proof, keeps it. A
batched test (random combinations, as for pointsB2 below) is not used on BLS12-381: a
component of order 3 escapes a round with probability 1/3, so 2^-64 would take ~40 MSMs.

pointsB2 is checked to lie in G2. On BN254 in batch (`first_outside_g2_batched`): B2_ROUNDS
random combinations sum_i rho_i Q_i (rho_i 64-bit, from secrets; one G2 MSM each) pass the
test (El Housni, Guillevic and Piellard's, cuzk.arith.subgroup) when every Q_i is in G2;
when one fails, the per-point sweep names the first bad point. A point outside G2 has a
component of prime order l in the twist's cofactor group (2q - r = 10069 * 5864401 *
1875725156269 * a 177-bit prime, each to the first power), which a round misses with
probability 1/l at most: 1/10069 for a point built for it, 2^-64 for a damaged or random
one; B2_ROUNDS = 2 make the first 1e-8. On BLS12-381 per point (Scott's psi(Q) = [x]Q): the
compiled MSM is BN254's, and the twist's cofactor has the primes 13 and 23, which would need
more rounds. A point of the twist outside G2 would give proofs that verification refuses;
the key is refused instead (`b2_subgroup=False` leaves it to that verification).

Section sizes against the header are checked when the file is opened (`ZKey`,
`BadSectionSize`). The sweeps are compiled per curve (cuzk.groth16.point_sweeps), one pass
per section, parallel over chunks of rows; measured figures are in docs/prover.md. A key
read, not mapped (the daemon's process), is checked a piece of CHECK_ROWS rows at a time
(ZKey.rows: each piece read, checked and dropped; pointsB2's batched test a combination a
piece), so its validation never holds a whole section.
"""

from __future__ import annotations

import os
import secrets

import numpy as np

from cuzk.formats import curve as curves
from cuzk.formats.errors import BadPoint, FormatError
from cuzk.formats.snarkjs_json import check_g1
from cuzk.formats.stored import g1_from_limbs
from cuzk.formats.zkey import CHECK_ROWS
from cuzk.groth16 import row_tests
from cuzk.groth16.row_tests import CHUNK
from cuzk.kernels.points import point_width


def sweeps(curve=None):
    """The compiled sweeps (cuzk.groth16.point_sweeps) of `curve` (a cuzk.formats Curve or
    a name; BN254 when None), built on first use."""
    from cuzk.native import kernels as native_kernels

    c = curves.BN254 if curve is None else curves.by_name(curve)
    return native_kernels("cuzk.groth16.point_sweeps", c.arith)


def _first_flagged(curve, test: int, pts: np.ndarray) -> int:
    """The first row of `pts` that fails row test `test` (point_sweeps.ON_CURVE_G1, ...) of
    `curve`'s sweep; -1 when every row passes."""
    n = pts.shape[0]
    if n == 0:
        return -1
    first = np.empty((n + CHUNK - 1) // CHUNK, dtype=np.int64)
    sweeps(curve).first_bad(_readonly(pts), first, test)
    bad = first[first >= 0]
    return int(bad.min()) if len(bad) else -1


def first_outside_g2(pts: np.ndarray, curve=None) -> int:
    """Index of the first row of a G2 array of twist points that is not in the order-r
    subgroup; -1 when every row is."""
    return _first_flagged(curve, row_tests.IN_SUBGROUP_G2, pts)


def first_outside_g1(pts: np.ndarray, curve=None) -> int:
    """Index of the first row of a G1 array of curve points that is not in the order-r
    subgroup; -1 when every row is (always, for a cofactor-1 curve: BN254)."""
    return _first_flagged(curve, row_tests.IN_SUBGROUP_G1, pts)


B2_ROUNDS = 2  # random combinations of the pointsB2 section (module doc)


def first_outside_g2_batched(pts: np.ndarray, rounds: int | None = None) -> int:
    """As first_outside_g2 for BN254 (on-twist rows), in `rounds` G2 MSMs with random 64-bit
    scalars plus one test each; the per-point sweep runs only when a round fails."""
    from cuzk.kernels.msm_cpu import msm_g2

    n = pts.shape[0]
    if n == 0:
        return -1
    scalars = np.zeros((n, 4), dtype=np.uint64)
    for _ in range(B2_ROUNDS if rounds is None else rounds):
        scalars[:, 0] = np.frombuffer(secrets.token_bytes(8 * n), dtype=np.uint64)
        total = msm_g2(_readonly(pts), scalars).reshape(1, 16)
        # the sweep's row test on the one row (the native library's where it serves: no numba)
        if _first_flagged(None, row_tests.IN_SUBGROUP_G2, total) >= 0:
            return first_outside_g2(pts)
    return -1


def first_bad_point(pts: np.ndarray, curve=None) -> int:
    """Index of the first row of a G1 or G2 point array of `curve` (BN254 when None) that is
    not a point of its curve with coordinates below q; -1 when every row is."""
    c = curves.BN254 if curve is None else curves.by_name(curve)
    g1 = pts.shape[1] == point_width(1, c.arith)
    test = row_tests.ON_CURVE_G1 if g1 else row_tests.ON_CURVE_G2
    return _first_flagged(curve, test, pts)


def _readonly(a: np.ndarray) -> np.ndarray:
    """Read-only view: the mapped sections are read-only, so every caller passes the same
    array type and a process loads one cached build of each kernel."""
    if not a.flags.writeable:
        return a
    v = a.view()
    v.flags.writeable = False
    return v


_COORDS = {2: ("x", "y"), 4: ("x.c0", "x.c1", "y.c0", "y.c1")}


def describe_bad_point(row, curve=None) -> str:
    """Why one stored point of `curve` (BN254 when None) is bad, in words."""
    c = curves.BN254 if curve is None else curves.by_name(curve)
    row = np.asarray(row, dtype=np.uint64)
    n = c.q_limbs
    names = _COORDS[len(row) // n]
    for j, name in enumerate(names):
        v = int.from_bytes(row[n * j : n * (j + 1)].tobytes(), "little")
        if v >= c.q:
            return f"coordinate {name} (Montgomery form) is not below the base field prime q"
    if len(names) == 2:
        return f"point is not on the curve y^2 = x^3 + {c.g1_b}"
    return f"point is not on the twist y^2 = x^3 + {c.g2_b_text()}"


def check_points(path, name: str, pts: np.ndarray, curve=None, first: int = 0) -> None:
    """Raise BadPoint naming `name`[first + i] for the first bad row i of `pts` (rows from
    row `first` of the section)."""
    i = first_bad_point(pts, curve)
    if i >= 0:
        raise BadPoint(path, f"{name}[{first + i}]: {describe_bad_point(pts[i], curve)}")


def check_g1_subgroup(path, name: str, pts: np.ndarray, curve, first: int = 0) -> None:
    """Raise BadPoint naming `name`[first + i] for the first row i of `pts` (on the curve)
    outside G1."""
    i = first_outside_g1(pts, curve)
    if i >= 0:
        raise BadPoint(
            path,
            f"{name}[{first + i}]: G1 point is on the curve but not in the order-r subgroup",
        )


# The header's points as snarkjs's verification key names them.
HEADER_NAMES = {
    "alpha1": "vk_alpha_1",
    "beta1": "vk_beta_1",
    "beta2": "vk_beta_2",
    "gamma2": "vk_gamma_2",
    "delta1": "vk_delta_1",
    "delta2": "vk_delta_2",
}

SECTIONS = (
    ("pointsA", "points_a"),
    ("pointsB1", "points_b1"),
    ("pointsB2", "points_b2"),
    ("pointsC", "points_c"),
    ("pointsH", "points_h"),
)


def validate_key(zkey, done_with=None, b2_subgroup=True, g1_subgroup=True, sections_on_read=False):
    """Check every point of a cuzk.formats ZKey, on its curve (see the module's doc); return
    its checked cuzk.groth16.verifier.VerifyingKey, ready to verify proofs made with the key.
    done_with(attr) is called after each point section is checked (a one-shot process drops
    its pages: cuzk.groth16.key.ProvingKey.done_with). b2_subgroup=False skips the G2
    subgroup test of pointsB2, g1_subgroup=False that of the G1 sections on a curve whose G1
    has a cofactor (BLS12-381) (cuzk.groth16.key.ProvingKey.validate says when).
    sections_on_read=True checks the header and IC now and each point section when it is
    first read (ZKey.check_on_read), raising from that read: for a one-shot proof of a key
    read section by section, which then reads each section once instead of twice."""
    from cuzk.arith import pairing_int
    from cuzk.groth16.verifier import VerifyingKey, quick_backend

    curve = getattr(zkey, "curve_info", curves.BN254)
    int_ops = pairing_int.for_curve(curve.arith)
    cofactor = int_ops.G1_COFACTOR != 1
    path = os.fspath(zkey.path)
    for attr, name in HEADER_NAMES.items():
        row = np.asarray(getattr(zkey, attr))
        if row.any():
            why = describe_bad_point(row, curve)
            if why.startswith("coordinate"):
                raise BadPoint(path, f"Groth16 header: {name}: {why}")
    for attr in ("beta1", "delta1"):  # in the header, not in the verification key
        try:  # coordinates are below q (checked above): this checks the curve equation
            check_g1(g1_from_limbs(getattr(zkey, attr), curve), HEADER_NAMES[attr], curve)
        except FormatError as e:
            raise BadPoint(path, f"Groth16 header: {e}") from None
    check_points(path, "IC", zkey.ic, curve)
    try:
        # curve, twist, G2 subgroup, IC count; the three subgroup checks on the native
        # library where this process proves on it, else on Python ints (~5 ms): less than
        # loading Numba's compiled code into a one-shot `cuzk prove`
        vk = VerifyingKey.from_zkey(zkey, backend=quick_backend(curve.arith))
    except FormatError as e:
        where = e.where[len(path) + 2 :] if e.where.startswith(path + ": ") else e.where
        raise BadPoint(path, f"Groth16 header: {where}: {e.problem}") from None
    if cofactor:  # on the curve is not yet in G1 (alpha1 and IC: checked by the VerifyingKey)
        for attr in ("beta1", "delta1"):
            if not int_ops.g1_in_subgroup(g1_from_limbs(getattr(zkey, attr), curve)):
                raise BadPoint(
                    path,
                    f"Groth16 header: {HEADER_NAMES[attr]}: G1 point is on the curve but not "
                    "in the order-r subgroup",
                )
    names = {attr: name for name, attr in SECTIONS}

    def check_section(attr: str, pts: np.ndarray, first: int = 0) -> None:
        name = names[attr]
        check_points(path, name, pts, curve, first)
        if attr == "points_b2" and b2_subgroup:  # on the twist is not yet in G2
            i = (
                first_outside_g2_batched(pts)
                if curve is curves.BN254
                else first_outside_g2(pts, curve)
            )
            if i >= 0:
                raise BadPoint(
                    path,
                    f"{name}[{first + i}]: G2 point is on the twist but not in the order-r "
                    "subgroup",
                )
        elif attr != "points_b2" and cofactor and g1_subgroup:
            check_g1_subgroup(path, name, pts, curve, first)

    if sections_on_read:
        zkey.check_on_read(lambda attr, a: check_section(attr, a) if attr in names else None)
        return vk
    for _name, attr in SECTIONS:
        if getattr(getattr(zkey, "file", None), "private", False):
            # read, not mapped (the daemon's process): a piece at a time, so that checking a
            # 2^22 key holds CHECK_ROWS rows of a section, not all of it (512 MiB of pointsB2)
            for lo, piece in zkey.pieces(attr, CHECK_ROWS):
                check_section(attr, piece, lo)
        else:
            check_section(attr, getattr(zkey, attr))
        if done_with is not None:
            done_with(attr)
    return vk


def __getattr__(name: str):
    # BN254's compiled row test of G2 membership, named here for the tests (imports Numba)
    if name == "g2_row_in_subgroup":
        from cuzk.groth16.point_sweeps import g2_row_in_subgroup

        return g2_row_in_subgroup
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
