"""PLONK's per-element steps over Fr: one source for the CPU and CUDA targets and every curve
(device functions of the target being built, cuzk.arith.jit), the prover's arithmetic
(cuzk.plonk.prover) written once.

Elements are 4-limb tuples in Montgomery form (R = 2^256), as cuzk.kernels.ntt's; vectors
are C-contiguous (n, 4) uint64 arrays (``load``/``store``). The challenges and constants a
step needs travel as rows of one (m, 4) array (``CONSTANTS``: the row of each name), so a
kernel takes one argument for all of them.

- ``identity_factor``, ``sigma_factor``: the permutation argument's factors
  (a + beta x + gamma)(b + beta k1 x + gamma)(c + beta k2 x + gamma) and
  (a + beta s1 + gamma)(b + beta s2 + gamma)(c + beta s3 + gamma);
- ``quotient_numerator``: at one point of the coset of the domain of 4n, the quotient's
  numerator qM a b + qL a + qR b + qO c + (qC + PI)
  + alpha (z idf - z(wX) sgf) + alpha^2 (z - 1) L1 (snarkjs plonk_prove.js round 3).
"""

from cuzk.arith.curves import DEFAULT, build_params
from cuzk.arith.jit import building
from cuzk.kernels import plonk_rows as R

T = building()
device_fn = T.device_fn
CURVE = T.param("curve", DEFAULT)
F = T.load("cuzk.arith.field", **build_params(CURVE))
if F.NR != 4:
    raise NotImplementedError(f"{CURVE}: the PLONK kernels work on 4-limb Fr elements")
fr_add, fr_sub, fr_mul = F.fr_add, F.fr_sub, F.fr_mul

# Rows of the constants array the kernels take (Montgomery form).
BETA, GAMMA, BETA_K1, BETA_K2, ALPHA = R.BETA, R.GAMMA, R.BETA_K1, R.BETA_K2, R.ALPHA
ALPHA2, ONE, ZH_INV, CONSTANTS = R.ALPHA2, R.ONE, R.ZH_INV, R.CONSTANTS


@device_fn
def load(x, i):
    """Element i of an (n, 4) array as a limb tuple."""
    return (x[i, 0], x[i, 1], x[i, 2], x[i, 3])


@device_fn
def store(x, i, v):
    x[i, 0] = v[0]
    x[i, 1] = v[1]
    x[i, 2] = v[2]
    x[i, 3] = v[3]


@device_fn
def identity_factor(a, b, c, x, k):
    """(a + beta x + gamma)(b + beta k1 x + gamma)(c + beta k2 x + gamma); k the constants."""
    gamma = load(k, GAMMA)
    fa = fr_add(fr_add(a, fr_mul(load(k, BETA), x)), gamma)
    fb = fr_add(fr_add(b, fr_mul(load(k, BETA_K1), x)), gamma)
    fc = fr_add(fr_add(c, fr_mul(load(k, BETA_K2), x)), gamma)
    return fr_mul(fr_mul(fa, fb), fc)


@device_fn
def sigma_factor(a, b, c, s1, s2, s3, k):
    """(a + beta s1 + gamma)(b + beta s2 + gamma)(c + beta s3 + gamma)."""
    beta, gamma = load(k, BETA), load(k, GAMMA)
    fa = fr_add(fr_add(a, fr_mul(beta, s1)), gamma)
    fb = fr_add(fr_add(b, fr_mul(beta, s2)), gamma)
    fc = fr_add(fr_add(c, fr_mul(beta, s3)), gamma)
    return fr_mul(fr_mul(fa, fb), fc)


@device_fn
def gate(a, b, c, qm, ql, qr, qo, qc):
    """qM a b + qL a + qR b + qO c + qC."""
    t = fr_add(fr_mul(fr_mul(a, b), qm), fr_mul(a, ql))
    t = fr_add(t, fr_mul(b, qr))
    return fr_add(fr_add(t, fr_mul(c, qo)), qc)


@device_fn
def quotient_numerator(a, b, c, z, zw, qm, ql, qr, qo, qc, s1, s2, s3, l1, x, k):
    """The quotient's numerator at a point x (every argument its value there; zw = z(w x))."""
    g = gate(a, b, c, qm, ql, qr, qo, qc)
    perm = fr_sub(
        fr_mul(z, identity_factor(a, b, c, x, k)), fr_mul(zw, sigma_factor(a, b, c, s1, s2, s3, k))
    )
    first = fr_mul(fr_sub(z, load(k, ONE)), l1)
    return fr_add(fr_add(g, fr_mul(perm, load(k, ALPHA))), fr_mul(first, load(k, ALPHA2)))
