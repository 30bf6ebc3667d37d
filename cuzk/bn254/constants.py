"""BN254 ("bn128" in snarkjs) constants, each with the formula it comes from.

Field elements are 4 little-endian 64-bit limbs; Montgomery form uses R = 2^256.
Both moduli are below 2^254, which leaves two spare bits in the top limb: the "no-carry"
CIOS multiplication applies (its last carry word can be dropped) and a + b never overflows
256 bits.
"""

import numpy as np

# Base field Fq: the field of the curve's coordinates.
FQ_MODULUS = 21888242871839275222246405745257275088696311157297823662689037894645226208583
# Scalar field Fr: the order of G1 and G2, the field of witnesses and of the NTT.
FR_MODULUS = 21888242871839275222246405745257275088548364400416034343698204186575808495617

LIMBS = 4
MONT_R = 1 << 256  # R = 2^256
MASK64 = (1 << 64) - 1


def int_to_limbs(x: int) -> tuple:
    """x (0 <= x < 2^256) as 4 little-endian uint64 limbs."""
    return tuple(np.uint64((x >> (64 * i)) & MASK64) for i in range(LIMBS))


def limbs_to_int(limbs) -> int:
    """The integer held by 4 little-endian 64-bit limbs (any sequence of 4 integers)."""
    return sum(int(v) << (64 * i) for i, v in enumerate(limbs))


def _mont_constants(p: int):
    return dict(
        limbs=int_to_limbs(p),
        inv=np.uint64((-pow(p, -1, 1 << 64)) % (1 << 64)),  # INV = -p^{-1} mod 2^64
        r2=int_to_limbs(MONT_R * MONT_R % p),  # R2 = R^2 mod p: to_mont(a) = a*R2*R^{-1}
        one=int_to_limbs(MONT_R % p),  # Montgomery form of 1: R mod p
        p_minus_2=p - 2,  # Fermat inverse exponent: a^{-1} = a^{p-2}
    )


_q = _mont_constants(FQ_MODULUS)
_r = _mont_constants(FR_MODULUS)

Q_LIMBS, Q_INV, Q_R2, Q_ONE = _q["limbs"], _q["inv"], _q["r2"], _q["one"]
R_LIMBS, R_INV, R_R2, R_ONE = _r["limbs"], _r["inv"], _r["r2"], _r["one"]
# Exponents p - 2 as limbs, read bit by bit by the Fermat inversion.
Q_MINUS_2 = int_to_limbs(FQ_MODULUS - 2)
R_MINUS_2 = int_to_limbs(FR_MODULUS - 2)
ZERO = int_to_limbs(0)
PLAIN_ONE = int_to_limbs(1)  # multiplying by plain 1 leaves Montgomery form: from_mont(a)

# Curves. G1: y^2 = x^3 + 3 over Fq.  G2: y^2 = x^3 + 3/(9+u) over Fq2 = Fq[u]/(u^2+1).
G1_B = 3
FQ2_NONRESIDUE = (9, 1)  # xi = 9 + u, the sextic twist's non-residue


def _fq2_inv(a):
    a0, a1 = a
    t = pow(a0 * a0 + a1 * a1, -1, FQ_MODULUS)
    return (a0 * t % FQ_MODULUS, -a1 * t % FQ_MODULUS)


def _fq2_mul(a, b):
    return ((a[0] * b[0] - a[1] * b[1]) % FQ_MODULUS, (a[0] * b[1] + a[1] * b[0]) % FQ_MODULUS)


G2_B = _fq2_mul((3, 0), _fq2_inv(FQ2_NONRESIDUE))  # b' = 3 / (9 + u)

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

# Montgomery forms of the curve coefficients, used by the on-curve checks.
G1_B_MONT = int_to_limbs(G1_B * MONT_R % FQ_MODULUS)
G2_B_MONT = (
    int_to_limbs(G2_B[0] * MONT_R % FQ_MODULUS),
    int_to_limbs(G2_B[1] * MONT_R % FQ_MODULUS),
)

# NTT: snarkjs's roots of unity. Fr* has 2-adicity 28; with non-residue 5,
# w[28] = 5^((r-1)/2^28) has order 2^28 and w[k] = w[k+1]^2 has order 2^k.
FR_TWO_ADICITY = 28
FR_NONRESIDUE = 5


def fr_roots_of_unity() -> list:
    """w[k] for k = 0..28, plain integers, exactly as snarkjs/ffjavascript derive them."""
    w = [0] * (FR_TWO_ADICITY + 1)
    w[FR_TWO_ADICITY] = pow(FR_NONRESIDUE, (FR_MODULUS - 1) >> FR_TWO_ADICITY, FR_MODULUS)
    for k in range(FR_TWO_ADICITY - 1, -1, -1):
        w[k] = w[k + 1] * w[k + 1] % FR_MODULUS
    return w
