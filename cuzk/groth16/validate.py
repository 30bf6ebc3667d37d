"""Validation of a mapped proving key's points: once per key file, before any proof.

`validate_key(zkey)` checks, in order, and raises `BadPoint` (a FormatError, one line naming
the file, the section and the index of the first bad point) at the first failure:

1. the Groth16 header's points (vk_alpha_1, vk_beta_1, vk_delta_1 in G1; vk_beta_2,
   vk_gamma_2, vk_delta_2 in G2): coordinates below q, on the curve / the twist, and the G2
   points in the order-r subgroup ([r]Q = O; the twist's group has a large cofactor);
2. IC and every point section (pointsA, pointsB1, pointsB2, pointsC, pointsH): coordinates
   below q and every point on its curve, the all-zero encoding of infinity allowed. G1 has
   cofactor 1, so on the curve is in the group. Every pointsB2 point is also checked to be
   in G2, by Scott's endomorphism test (M. Scott, "A note on group membership tests for G1,
   G2 and GT on BLS pairing-friendly curves", ePrint 2021/1130; for BN curves as in ePrint
   2022/348 §3 and 5.1, which holds for BN254's x since x mod 13 != 4 and x mod 97 != 92):
       Q in G2  iff  [x+1]Q + psi([x]Q) + psi^2([x]Q) == psi^3([2x]Q),
   psi the q-power Frobenius carried to the twist: one 63-bit multiplication per point
   instead of the 254-bit [r]Q. Per point that is still ~75x the rest of the validation, so
   the section is checked in batch (`first_outside_g2_batched`): B2_ROUNDS random
   combinations sum_i rho_i Q_i (rho_i 64-bit, from secrets; one G2 MSM each) pass the test
   when every Q_i is in G2; when one fails, the per-point sweep names the first bad point.
   A point outside G2 has a component of prime order l in the twist's cofactor group
   (2q - r = 10069 * 5864401 * 1875725156269 * a 177-bit prime, each to the first power),
   which a round misses with probability 1/l at most: 1/10069 for a point built for it,
   2^-64 for a damaged or random one; B2_ROUNDS = 2 make the first 1e-8. A point of the twist
   outside G2 would give proofs that verification refuses; the key is refused instead.

Section sizes against the header are checked when the file is opened (`ZKey`,
`BadSectionSize`). The sweep is one compiled pass per section, parallel over chunks of
rows; measured figures are in docs/prover.md.
"""

from __future__ import annotations

import os
import secrets

import numpy as np
from numba import njit, prange

from cuzk.arith import pairing
from cuzk.arith.constants import FQ_MODULUS, Q_LIMBS
from cuzk.arith.curve import (
    g1_is_on_curve_affine,
    g1_load_affine,
    g2_add,
    g2_add_mixed,
    g2_affine_is_inf,
    g2_dbl,
    g2_eq,
    g2_inf,
    g2_is_on_curve_affine,
    g2_load_affine,
)
from cuzk.formats.errors import BadPoint, FormatError
from cuzk.formats.snarkjs_json import check_g1
from cuzk.formats.stored import g1_from_limbs

CHUNK = 4096  # rows per parallel task; a task stops at its first bad row

_Q3, _Q2, _Q1, _Q0 = Q_LIMBS[3], Q_LIMBS[2], Q_LIMBS[1], Q_LIMBS[0]


@njit(cache=True, nogil=True)
def _below_q(pts, i, col):
    """The coordinate in limbs col..col+3 of row i is below q (limbs little-endian)."""
    for k, qk in ((3, _Q3), (2, _Q2), (1, _Q1), (0, _Q0)):
        v = pts[i, col + k]
        if v < qk:
            return True
        if v > qk:
            return False
    return False  # equal to q


@njit(cache=True, parallel=True, nogil=True)
def g1_first_bad(pts, first):
    """first[c] = the first row of chunk c whose coordinates are not below q or that is not
    on y^2 = x^3 + 3, else -1. pts (n, 8) affine Montgomery limbs; first (ceil(n/CHUNK),)."""
    n = pts.shape[0]
    for c in prange(first.shape[0]):
        first[c] = -1
        for i in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            if not (
                _below_q(pts, i, 0)
                and _below_q(pts, i, 4)
                and g1_is_on_curve_affine(g1_load_affine(pts, i))
            ):
                first[c] = i
                break


@njit(cache=True, parallel=True, nogil=True)
def g2_first_bad(pts, first):
    """As g1_first_bad for (n, 16) G2 rows and the twist y^2 = x^3 + 3/(9+u)."""
    n = pts.shape[0]
    for c in prange(first.shape[0]):
        first[c] = -1
        for i in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            if not (
                _below_q(pts, i, 0)
                and _below_q(pts, i, 4)
                and _below_q(pts, i, 8)
                and _below_q(pts, i, 12)
                and g2_is_on_curve_affine(g2_load_affine(pts, i))
            ):
                first[c] = i
                break


BN_X = np.uint64(pairing.BN_X)  # the BN parameter x = 4965661367192848881 (63 bits)


@njit(cache=True, nogil=True)
def _psi(Q):
    """psi on a Jacobian twist point: (conj(X) gx, conj(Y) gy, conj(Z)), the affine
    pairing.twist_frobenius with x = X/Z^2, y = Y/Z^3 (conjugation is a field automorphism)."""
    return (
        pairing.fq2_mul(pairing.fq2_conj(Q[0]), pairing.FROB_TWIST_X1),
        pairing.fq2_mul(pairing.fq2_conj(Q[1]), pairing.FROB_TWIST_Y1),
        pairing.fq2_conj(Q[2]),
    )


@njit(cache=True, nogil=True)
def g2_in_subgroup_psi(a):
    """Scott's test (module doc) for an affine twist point `a` (on the twist, checked
    before): [x+1]a + psi([x]a) + psi^2([x]a) == psi^3([2x]a). Infinity is in G2."""
    if g2_affine_is_inf(a):
        return True
    xa = g2_inf()
    for bit in range(62, -1, -1):  # [x]a, left to right (x has 63 bits)
        xa = g2_dbl(xa)
        if (BN_X >> np.uint64(bit)) & np.uint64(1):
            xa = g2_add_mixed(xa, a)
    psi1 = _psi(xa)
    psi2 = _psi(psi1)
    lhs = g2_add(g2_add(g2_add_mixed(xa, a), psi1), psi2)
    return g2_eq(lhs, g2_dbl(_psi(psi2)))


@njit(cache=True, nogil=True)
def g2_row_in_subgroup(pts, i):
    """Scott's test of row i of a (n, 16) array of affine twist points."""
    return g2_in_subgroup_psi(g2_load_affine(pts, i))


@njit(cache=True, parallel=True, nogil=True)
def g2_first_outside_subgroup(pts, first):
    """first[c] = the first row of chunk c that is not in G2 (rows on the twist), else -1."""
    n = pts.shape[0]
    for c in prange(first.shape[0]):
        first[c] = -1
        for i in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            if not g2_row_in_subgroup(pts, i):
                first[c] = i
                break


def _first_flagged(sweep, pts: np.ndarray) -> int:
    """The first row that `sweep` (a chunked kernel writing each chunk's first bad row, or -1,
    into `first`) flags in `pts`; -1 when it flags none."""
    n = pts.shape[0]
    if n == 0:
        return -1
    first = np.empty((n + CHUNK - 1) // CHUNK, dtype=np.int64)
    sweep(_readonly(pts), first)
    bad = first[first >= 0]
    return int(bad.min()) if len(bad) else -1


def first_outside_g2(pts: np.ndarray) -> int:
    """Index of the first row of a G2 (n, 16) array of twist points that is not in the
    order-r subgroup; -1 when every row is."""
    return _first_flagged(g2_first_outside_subgroup, pts)


B2_ROUNDS = 2  # random combinations of the pointsB2 section (module doc)


def first_outside_g2_batched(pts: np.ndarray, rounds: int | None = None) -> int:
    """As first_outside_g2 (on-twist rows), in `rounds` G2 MSMs with random 64-bit scalars
    plus one test each; the per-point sweep runs only when a round fails."""
    from cuzk.kernels.msm_cpu import msm_g2

    n = pts.shape[0]
    if n == 0:
        return -1
    scalars = np.zeros((n, 4), dtype=np.uint64)
    for _ in range(B2_ROUNDS if rounds is None else rounds):
        scalars[:, 0] = np.frombuffer(secrets.token_bytes(8 * n), dtype=np.uint64)
        total = msm_g2(_readonly(pts), scalars).reshape(1, 16)
        if not g2_row_in_subgroup(total, 0):
            return first_outside_g2(pts)
    return -1


def first_bad_point(pts: np.ndarray) -> int:
    """Index of the first row of a G1 (n, 8) or G2 (n, 16) point array that is not a point of
    its curve with coordinates below q; -1 when every row is."""
    return _first_flagged(g1_first_bad if pts.shape[1] == 8 else g2_first_bad, pts)


def _readonly(a: np.ndarray) -> np.ndarray:
    """Read-only view: the mapped sections are read-only, so every caller passes the same
    array type and a process loads one cached build of each kernel."""
    if not a.flags.writeable:
        return a
    v = a.view()
    v.flags.writeable = False
    return v


_COORDS = {8: ("x", "y"), 16: ("x.c0", "x.c1", "y.c0", "y.c1")}


def describe_bad_point(row) -> str:
    """Why one stored point (8 or 16 Montgomery limbs) is bad, in words."""
    row = np.asarray(row, dtype=np.uint64)
    names = _COORDS[len(row)]
    for j, name in enumerate(names):
        v = int.from_bytes(row[4 * j : 4 * j + 4].tobytes(), "little")
        if v >= FQ_MODULUS:
            return f"coordinate {name} (Montgomery form) is not below the base field prime q"
    if len(row) == 8:
        return "point is not on the curve y^2 = x^3 + 3"
    return "point is not on the twist y^2 = x^3 + 3/(9+u)"


def check_points(path, name: str, pts: np.ndarray) -> None:
    """Raise BadPoint naming `name`[i] for the first bad row of `pts`."""
    i = first_bad_point(pts)
    if i >= 0:
        raise BadPoint(path, f"{name}[{i}]: {describe_bad_point(pts[i])}")


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


def validate_key(zkey, done_with=None, b2_subgroup=True):
    """Check every point of a cuzk.formats ZKey (see the module's doc); return its checked
    cuzk.groth16.verifier.VerifyingKey, ready to verify proofs made with the key.
    done_with(attr) is called after each point section is checked (a one-shot process drops
    its pages: cuzk.groth16.key.ProvingKey.done_with). b2_subgroup=False skips the batched
    G2 subgroup test of pointsB2 (cuzk.groth16.key.ProvingKey.validate says when)."""
    from cuzk.groth16.verifier import VerifyingKey

    path = os.fspath(zkey.path)
    for attr, name in HEADER_NAMES.items():
        row = np.asarray(getattr(zkey, attr))
        if row.any():
            why = describe_bad_point(row)
            if why.startswith("coordinate"):
                raise BadPoint(path, f"Groth16 header: {name}: {why}")
    for attr in ("beta1", "delta1"):  # in the header, not in the verification key
        try:  # coordinates are below q (checked above): this checks the curve equation
            check_g1(g1_from_limbs(getattr(zkey, attr)), HEADER_NAMES[attr])
        except FormatError as e:
            raise BadPoint(path, f"Groth16 header: {e}") from None
    check_points(path, "IC", zkey.ic)
    try:
        # curve, twist, G2 subgroup, IC count; the three subgroup checks on Python ints (~4 ms)
        # cost less than loading the compiled pairing's code into a one-shot `cuzk prove`
        vk = VerifyingKey.from_zkey(zkey, backend="python")
    except FormatError as e:
        where = e.where[len(path) + 2 :] if e.where.startswith(path + ": ") else e.where
        raise BadPoint(path, f"Groth16 header: {where}: {e.problem}") from None
    for name, attr in SECTIONS:
        check_points(path, name, getattr(zkey, attr))
        if (
            attr == "points_b2" and b2_subgroup
        ):  # on the twist is not yet in G2 (G1's cofactor is 1)
            i = first_outside_g2_batched(zkey.points_b2)
            if i >= 0:
                raise BadPoint(
                    path, f"{name}[{i}]: G2 point is on the twist but not in the order-r subgroup"
                )
        if done_with is not None:
            done_with(attr)
    return vk
