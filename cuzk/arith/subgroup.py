"""G1 and G2 subgroup membership, compiled, for every curve: one source, built per (target,
curve).

G1: BN254's E(Fq) has prime order r, so a point on the curve is in G1 (g1_in_subgroup is
True). BLS12's E(Fq) has order h1 r, h1 = (x - 1)^2 / 3 = 3 * 11^2 * 10177^2 * 859267^2 *
52437899^2 for BLS12-381, and (Scott, ePrint 2021/1130 sec. 6; Dai, Lin, Zhao and Zhou,
ePrint 2022/352):
      P in G1  iff  phi(P) = [-x^2]P,   phi(x, y) = (beta x, y),
beta the cube root of unity in Fq acting as -x^2 on G1 (cuzk.arith.pairing_int.G1_BETA):
two multiplications by |x| (64 bits).

The twist's group E'(Fq2) has order r h2 with a large cofactor h2, so a point on the twist need
not be in G2 (order r). [r]Q = O costs a 254/255-bit multiplication; the endomorphism tests
below cost one by the curve parameter x (63/64 bits). psi = untwist o Frobenius o twist acts
on G2 as multiplication by q (mod r), and:

- BN curves (El Housni, Guillevic and Piellard, "Co-factor clearing and subgroup membership
  testing on pairing-friendly curves", Africacrypt 2022, sec. 5.1; it holds for BN254's x):
      Q in G2  iff  [x+1]Q + psi([x]Q) + psi^2([x]Q) = psi^3([2x]Q);
- BLS12 curves (M. Scott, "A note on group membership tests for G1, G2 and GT on BLS
  pairing-friendly curves", ePrint 2021/1130; it holds for BLS12-381):
      Q in G2  iff  psi(Q) = [x]Q.

psi(x, y) = (conj(x) PSI_X, conj(y) PSI_Y): for a D-type twist (BN254: the untwist is
(x w^2, y w^3)) PSI_X = xi^((q-1)/3), PSI_Y = xi^((q-1)/2); for an M-type one (BLS12-381: the
untwist is (x / w^2, y / w^3)) their inverses. Build: ``T.load("cuzk.arith.subgroup")`` for
BN254, ``curve="bls12_381"`` for BLS12-381; device functions of the target (CPU or CUDA), and
in the CUDA build one kernel over rows of points (CUDA_KERNELS, compiled to PTX by
tests/test_ptx.py).
cuzk.arith.pairing_int holds the same tests on Python ints; the tests compare both with
[r]Q = O.
"""

import numpy as np

from cuzk.arith.curves import DEFAULT, build_params, constants
from cuzk.arith.jit import CPU, KernelTable, building

T = building()
device_fn = T.device_fn
CURVE = T.param("curve", DEFAULT)
_C = constants(CURVE)
_PARAMS = build_params(CURVE)
F = T.load("cuzk.arith.field", **_PARAMS)
K = T.load("cuzk.arith.fq12", **_PARAMS)
G = T.load("cuzk.arith.curve", **_PARAMS)

fq_mul, fq2_mul, fq2_conj = F.fq_mul, F.fq2_mul, K.fq2_conj
g1_dbl, g1_add, g1_add_mixed, g1_eq = G.g1_dbl, G.g1_add, G.g1_add_mixed, G.g1_eq
g1_neg, g1_from_affine, g1_affine_is_inf = G.g1_neg, G.g1_from_affine, G.g1_affine_is_inf
g2_dbl, g2_add, g2_add_mixed, g2_eq = G.g2_dbl, G.g2_add, G.g2_add_mixed, G.g2_eq
g2_neg, g2_from_affine, g2_affine_is_inf = G.g2_neg, G.g2_from_affine, G.g2_affine_is_inf

FAMILY = _C.FAMILY
assert FAMILY in ("bn", "bls12") and _C.TWIST in ("D", "M")
assert 0 < abs(_C.X) < 1 << 64
X_ABS = np.uint64(abs(_C.X))
X_TOP_BIT = abs(_C.X).bit_length() - 1
ONE_BIT = np.uint64(1)


def _fq2_inv_int(a):
    q = _C.FQ_MODULUS
    t = pow((a[0] * a[0] + a[1] * a[1]) % q, -1, q)
    return (a[0] * t % q, -a[1] * t % q)


_q = _C.FQ_MODULUS
_psi = (
    K.fq2_pow_int(_C.FQ2_NONRESIDUE, (_q - 1) // 3),
    K.fq2_pow_int(_C.FQ2_NONRESIDUE, (_q - 1) // 2),
)
if _C.TWIST == "M":
    _psi = (_fq2_inv_int(_psi[0]), _fq2_inv_int(_psi[1]))
PSI_X_INT, PSI_Y_INT = _psi  # plain ints, for the tests
PSI_X, PSI_Y = K._f2_mont(PSI_X_INT), K._f2_mont(PSI_Y_INT)


@device_fn
def g2_psi(P):
    """psi on a Jacobian twist point: (conj(X) PSI_X, conj(Y) PSI_Y, conj(Z)) (conjugation is
    a field automorphism, so the affine map carries over)."""
    return (fq2_mul(fq2_conj(P[0]), PSI_X), fq2_mul(fq2_conj(P[1]), PSI_Y), fq2_conj(P[2]))


@device_fn
def g2_mul_x_abs(a):
    """[|x|]a for an affine twist point a (not infinity), left to right over |x|'s bits."""
    acc = g2_from_affine(a)
    for bit in range(X_TOP_BIT - 1, -1, -1):
        acc = g2_dbl(acc)
        if (X_ABS >> np.uint64(bit)) & ONE_BIT:
            acc = g2_add_mixed(acc, a)
    return acc


if FAMILY == "bn":

    @device_fn
    def g2_in_subgroup(a):
        """El Housni et al.'s test (module doc) for an affine point on the twist (checked
        before); the infinity encoding (0, 0) is in G2. x > 0 for BN254."""
        if g2_affine_is_inf(a):
            return True
        xa = g2_mul_x_abs(a)
        psi1 = g2_psi(xa)
        psi2 = g2_psi(psi1)
        lhs = g2_add(g2_add(g2_add_mixed(xa, a), psi1), psi2)
        return g2_eq(lhs, g2_dbl(g2_psi(psi2)))

elif _C.X < 0:

    @device_fn
    def g2_in_subgroup(a):
        """Scott's test psi(a) = [x]a = -[|x|]a (x < 0) for an affine point on the twist
        (checked before); the infinity encoding (0, 0) is in G2."""
        if g2_affine_is_inf(a):
            return True
        return g2_eq(g2_psi(g2_from_affine(a)), g2_neg(g2_mul_x_abs(a)))

else:

    @device_fn
    def g2_in_subgroup(a):
        """Scott's test psi(a) = [x]a (x > 0) for an affine point on the twist (checked
        before); the infinity encoding (0, 0) is in G2."""
        if g2_affine_is_inf(a):
            return True
        return g2_eq(g2_psi(g2_from_affine(a)), g2_mul_x_abs(a))


# --- G1 --------------------------------------------------------------------------------------

G1_COFACTOR = _C.G1_COFACTOR

if G1_COFACTOR == 1:

    @device_fn
    def g1_in_subgroup(a):
        """E(Fq) has prime order r: every point of the curve (checked before) is in G1."""
        return True

else:
    from cuzk.arith import pairing_int
    from cuzk.arith.radix import int_to_limb_tuple

    G1_BETA_INT = pairing_int.for_curve(CURVE).G1_BETA
    G1_BETA = int_to_limb_tuple(G1_BETA_INT * (1 << (64 * _C.FQ_LIMBS)) % _q, _C.FQ_LIMBS)

    @device_fn
    def g1_mul_x_abs(P):
        """[|x|]P for a Jacobian point P, left to right over |x|'s bits."""
        acc = P
        for bit in range(X_TOP_BIT - 1, -1, -1):
            acc = g1_dbl(acc)
            if (X_ABS >> np.uint64(bit)) & ONE_BIT:
                acc = g1_add(acc, P)
        return acc

    @device_fn
    def g1_in_subgroup(a):
        """phi(a) = [-x^2]a (module doc) for an affine point on the curve (checked before);
        the infinity encoding (0, 0) is in G1. [x^2] = [|x|]^2 whatever x's sign."""
        if g1_affine_is_inf(a):
            return True
        x2a = g1_mul_x_abs(g1_mul_x_abs(g1_from_affine(a)))
        return g1_eq(g1_neg(x2a), g1_from_affine((fq_mul(a[0], G1_BETA), a[1])))


# --- a kernel over rows of points: a loop on the CPU (the native library's entry, what a
# `cuzk prove` checks its key's and its proof's G2 points with), one thread per row on CUDA ---

if T.name == CPU:
    g2_load_affine = G.g2_load_affine

    @T.njit()
    def g2_rows_in_subgroup(rows, out):
        """out[i] = 1 if row i of rows (n, 4 limbs-per-Fq) uint64, an affine twist point in
        Montgomery form already checked to be on the twist, lies in G2, else 0."""
        for i in range(rows.shape[0]):
            out[i] = 1 if g2_in_subgroup(g2_load_affine(rows, i)) else 0

else:
    from numba import cuda, types

    g2_load_affine = G.g2_load_affine

    def g2_rows_in_subgroup(rows, out):
        """out[i] = whether row i of rows (n, 4 limbs-per-Fq) uint64, an affine twist point
        in Montgomery form already checked to be on the twist, lies in G2."""
        i = cuda.grid(1)
        if i < rows.shape[0]:
            out[i] = g2_in_subgroup(g2_load_affine(rows, i))

    # One text, a kernel per curve: named apart so that Numba's disk cache keeps one entry each.
    KERNEL_NAME = "g2_rows_in_subgroup" + ("" if CURVE == DEFAULT else f"_{CURVE}")
    g2_rows_in_subgroup.__name__ = g2_rows_in_subgroup.__qualname__ = KERNEL_NAME
    CUDA_KERNELS = KernelTable(
        {
            KERNEL_NAME: (
                g2_rows_in_subgroup,
                (types.Array(types.uint64, 2, "C"), types.Array(types.boolean, 1, "C")),
            )
        },
        expect={KERNEL_NAME: ["mul.hi.u64"]},
    )
