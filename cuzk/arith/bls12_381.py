"""BLS12-381 constants, each with the formula it comes from (the same names as BN254's in
cuzk.arith.constants; see cuzk.arith.curves).

BLS12-381 (Bowe 2017, for Zcash Sapling; the curve of Filecoin's proofs and of Ethereum's
consensus layer) is the BLS12 curve of parameter x = -0xd201000000010000: both primes are
polynomials in x, derived below. Fq has 381 bits and lives on 6 little-endian 64-bit limbs
(R = 2^384); Fr has 255 bits on 4 limbs (R = 2^256). Both leave the top limb below 2^63 - 1,
so the "no-carry" CIOS multiplication applies to both (cuzk.arith.curves.no_carry_ok).

Importing this module does not import numpy: the limb forms (Q_LIMBS, Q_INV, ...,
G2_B_MONT) are built on first use (PEP 562), as in cuzk.arith.constants.
"""

NAME = "bls12_381"

# The BLS parameter (its low Hamming weight makes the pairing's Miller loop short).
X = -0xD201000000010000

# Scalar field Fr: r = x^4 - x^2 + 1 (the 12th cyclotomic polynomial at x), 255 bits.
FR_MODULUS = X**4 - X**2 + 1
# Base field Fq: q = (x - 1)^2 r / 3 + x, 381 bits.
FQ_MODULUS = (X - 1) ** 2 * FR_MODULUS // 3 + X

FQ_LIMBS = 6  # 64-bit limbs per Fq element (R = 2^384)
FR_LIMBS = 4  # per Fr element (R = 2^256)
FQ_MONT_R = 1 << (64 * FQ_LIMBS)
FR_MONT_R = 1 << (64 * FR_LIMBS)

# Cofactors: #E(Fq) = h1 r with h1 = (x - 1)^2 / 3; #E'(Fq2) = h2 r.
G1_COFACTOR = (X - 1) ** 2 // 3

# Fq2 = Fq[u]/(u^2 + 1): its modulus u^2 + c1 u + c0 as py_ecc writes it, (c0, c1).
FQ2_MODULUS_COEFFS = (1, 0)

# Curves. G1: y^2 = x^3 + 4 over Fq. G2: y^2 = x^3 + 4(1 + u) over Fq2, the M-type sextic
# twist: b' = b xi with xi = 1 + u (BN254's is the D-type, b' = b / xi).
G1_B = 4
FQ2_NONRESIDUE = (1, 1)  # xi = 1 + u
G2_B = (G1_B * FQ2_NONRESIDUE[0] % FQ_MODULUS, G1_B * FQ2_NONRESIDUE[1] % FQ_MODULUS)
# The pairing's shape: a BLS12 curve (Miller loop over |x|) and an M-type twist.
FAMILY = "bls12"
TWIST = "M"

# Generators (Zcash's, as in the IETF pairing-friendly-curves draft and py_ecc), plain ints.
G1_GENERATOR = (
    0x17F1D3A73197D7942695638C4FA9AC0FC3688C4F9774B905A14E3A3F171BAC586C55E83FF97A1AEFFB3AF00ADB22C6BB,
    0x08B3F481E3AAA0F1A09E30ED741D8AE4FCF5E095D5D00AF600DB18CB2C04B3EDD03CC744A2888AE40CAA232946C5E7E1,
)
G2_GENERATOR = (
    (
        0x024AA2B2F08F0A91260805272DC51051C6E47AD4FA403B02B4510B647AE3D1770BAC0326A805BBEFD48056C8C121BDB8,
        0x13E02B6052719F607DACD3A088274F65596BD0D09920B61AB5DA61BBDC7F5049334CF11213945D57E5AC7D055D042B7E,
    ),
    (
        0x0CE5D527727D6E118CC9CDC6DA2E351AADFD9BAA8CBDD3A76D429A695160D12C923AC9CC3BACA289E193548608B82801,
        0x0606C4A02EA734CC32ACD2B02BC28B99CB3E287E85A763AF267492AB572E99AB3F370D275CEC1DA1AAA9075FF05F79BE,
    ),
)


# NTT: snarkjs's roots of unity (cuzk.arith.curves.roots_of_unity). Fr* has 2-adicity 32
# (r - 1 = 2^32 t, t odd); 5 is the least quadratic non-residue mod r (2 and 3 are squares),
# the one ffjavascript's and wasmcurves' search from 2 finds, so w[32] = 5^((r-1)/2^32) has
# order 2^32 and w[k] = w[k+1]^2 has order 2^k.
FR_TWO_ADICITY = 32
FR_NONRESIDUE = 5


def fr_roots_of_unity() -> list:
    """w[k] for k = 0..32, plain integers, exactly as snarkjs/ffjavascript derive them."""
    from cuzk.arith.curves import roots_of_unity

    return roots_of_unity(FR_MODULUS, FR_TWO_ADICITY, FR_NONRESIDUE)


def _limb_constants() -> dict:
    from cuzk.arith.curves import curve_limb_constants

    return curve_limb_constants(FQ_MODULUS, FQ_LIMBS, FR_MODULUS, FR_LIMBS, G1_B, G2_B)


def __getattr__(name):
    from cuzk.arith.curves import LIMB_NAMES

    if name in LIMB_NAMES:
        globals().update(_limb_constants())
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    from cuzk.arith.curves import LIMB_NAMES

    return sorted(set(globals()) | set(LIMB_NAMES))
