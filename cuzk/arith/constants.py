"""BN254 ("bn128" in snarkjs) constants, each with the formula it comes from, and Python-int
Fq2 arithmetic for building them and for checks outside the kernels.

The primes q and r are defined here and nowhere else. Field elements are 4 little-endian
64-bit limbs; Montgomery form uses R = 2^256. Both moduli are below 2^254, which leaves two
spare bits in the top limb: the "no-carry" CIOS multiplication applies (its last carry word
can be dropped) and a + b never overflows 256 bits.

Importing this module does not import numpy (the witness calculator reads r from here and
must start without it): the plain integers are defined at import, the limb forms the kernels
read (Q_LIMBS, Q_INV, ..., G2_B_MONT) are built on first use (PEP 562).
"""

# Base field Fq: the field of the curve's coordinates.
FQ_MODULUS = 21888242871839275222246405745257275088696311157297823662689037894645226208583
# Scalar field Fr: the order of G1 and G2, the field of witnesses and of the NTT.
FR_MODULUS = 21888242871839275222246405745257275088548364400416034343698204186575808495617

NAME = "bn254"
LIMBS = 4
FQ_LIMBS = FR_LIMBS = LIMBS  # 64-bit limbs per element of Fq and of Fr
MONT_R = 1 << 256  # R = 2^256
FQ_MONT_R = FR_MONT_R = MONT_R

# --- Fq2 = Fq[u]/(u^2 + 1) on Python ints: a = (a0, a1) means a0 + a1 u ------------------------


def fq2_mul_int(a, b) -> tuple[int, int]:
    """a * b in Fq2: (a0 b0 - a1 b1, a0 b1 + a1 b0), since u^2 = -1."""
    return ((a[0] * b[0] - a[1] * b[1]) % FQ_MODULUS, (a[0] * b[1] + a[1] * b[0]) % FQ_MODULUS)


def fq2_inv_int(a) -> tuple[int, int]:
    """1 / a in Fq2: conj(a) / N(a) with N(a) = a0^2 + a1^2 in Fq; ValueError for 0."""
    t = pow((a[0] * a[0] + a[1] * a[1]) % FQ_MODULUS, -1, FQ_MODULUS)
    return (a[0] * t % FQ_MODULUS, -a[1] * t % FQ_MODULUS)


def fq2_pow_int(a, e: int) -> tuple[int, int]:
    """a^e in Fq2 (e >= 0), square and multiply."""
    out = (1, 0)
    while e:
        if e & 1:
            out = fq2_mul_int(out, a)
        a = fq2_mul_int(a, a)
        e >>= 1
    return out


# Fq2 = Fq[u]/(u^2 + 1): its modulus u^2 + c1 u + c0 as py_ecc writes it, (c0, c1).
FQ2_MODULUS_COEFFS = (1, 0)

# Curves. G1: y^2 = x^3 + 3 over Fq.  G2: y^2 = x^3 + 3/(9+u) over Fq2.
G1_B = 3
FQ2_NONRESIDUE = (9, 1)  # xi = 9 + u, the sextic twist's non-residue
G2_B = fq2_mul_int((3, 0), fq2_inv_int(FQ2_NONRESIDUE))  # b' = 3 / (9 + u)

# The BN parameter: q = 36x^4 + 36x^3 + 24x^2 + 6x + 1, r = 36x^4 + 36x^3 + 18x^2 + 6x + 1.
X = 4965661367192848881
# The pairing's shape: a BN curve (Miller loop over 6x + 2) and a D-type twist (b' = b / xi).
FAMILY = "bn"
# #E(Fq) = q + 1 - t with the trace t = 6x^2 + 1: q + 1 - t = r, so G1 is all of E(Fq).
G1_COFACTOR = 1
TWIST = "D"

# Generators (as in snarkjs / py_ecc / EIP-197), plain integers.
G1_GENERATOR = (1, 2)
G2_GENERATOR = (
    (
        10857046999023057135944570762232829481370756359578518086990519993285655852781,
        11559732032986387107991004021392285783925812861821192530917403151452391805634,
    ),
    (
        8495653923123431417604973247489272438418190587263600148770280649306958101930,
        4082367875863433681332203403145435568316851327593401208105741076214120093531,
    ),
)

# NTT: snarkjs's roots of unity (cuzk.arith.curves.roots_of_unity). Fr* has 2-adicity 28;
# 5 is the least quadratic non-residue mod r, w[28] = 5^((r-1)/2^28) has order 2^28 and
# w[k] = w[k+1]^2 has order 2^k.
FR_TWO_ADICITY = 28
FR_NONRESIDUE = 5


def fr_roots_of_unity() -> list:
    """w[k] for k = 0..28, plain integers, exactly as snarkjs/ffjavascript derive them."""
    from cuzk.arith.curves import roots_of_unity

    return roots_of_unity(FR_MODULUS, FR_TWO_ADICITY, FR_NONRESIDUE)


# --- limb forms for the kernels (tuples of np.uint64), built on first use ---------------------


def _limb_constants() -> dict:
    from cuzk.arith.curves import curve_limb_constants

    out = curve_limb_constants(FQ_MODULUS, FQ_LIMBS, FR_MODULUS, FR_LIMBS, G1_B, G2_B)
    out["ZERO"] = out["Q_ZERO"]  # both fields have 4 limbs here: one zero, one plain 1
    out["PLAIN_ONE"] = out["Q_PLAIN_ONE"]
    return out


_LIMB_NAMES = (
    "Q_LIMBS Q_INV Q_R2 Q_ONE Q_MINUS_2 Q_ZERO Q_PLAIN_ONE R_LIMBS R_INV R_R2 R_ONE R_MINUS_2 "
    "R_ZERO R_PLAIN_ONE ZERO PLAIN_ONE G1_B_MONT G2_B_MONT"
).split()


def __getattr__(name):
    if name in _LIMB_NAMES:
        globals().update(_limb_constants())
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LIMB_NAMES))
