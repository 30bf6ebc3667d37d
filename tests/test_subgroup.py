"""The compiled G1 and G2 subgroup tests (cuzk.arith.subgroup), built for BN254 and BLS12-381,
and pairing_int's, against [r]P = O on Python ints (cuzk.arith.pairing_int's builds): points
of the group, random points of the curve or the twist, their cofactor parts [r]P and sums with
group points; ψ's constants against pairing_int's; the CPU build called from Python and a CUDA
kernel (simulator here, GPU when present)."""

import random

import numpy as np
import pytest
from numba import cuda
from reference import random_curve_point, random_twist_point

from cuzk.arith import pairing_int
from cuzk.arith.curves import build_params, constants
from cuzk.arith.jit import get_target
from cuzk.arith.radix import int_to_limb_tuple

CURVES = ["bn254", "bls12_381"]
rng = random.Random(20261203)


class Curve:
    def __init__(self, name):
        self.name = name
        self.C = constants(name)
        self.PI = pairing_int.for_curve(name)
        self.q, self.r, self.n = self.C.FQ_MODULUS, self.C.FR_MODULUS, self.C.FQ_LIMBS
        self.mont_r = 1 << (64 * self.n)

    def mont(self, x):
        return int_to_limb_tuple(x * self.mont_r % self.q, self.n)

    def dev(self, p):
        """An affine twist point of ints (None = infinity) as the device's nested tuples."""
        if p is None:
            z = self.mont(0)
            return ((z, z), (z, z))
        return tuple(tuple(self.mont(c) for c in coord) for coord in p)

    def row(self, p):
        """The same as one uint64 row (x.c0, x.c1, y.c0, y.c1)."""
        return np.array([limb for coord in self.dev(p) for c in coord for limb in c], np.uint64)

    def jac(self, p):
        return (p[0], p[1], (1, 0))

    def affine(self, P):
        x, y, z = P
        if z == (0, 0):
            return None
        PI = self.PI
        zi = PI.fq2_inv(z)
        zi2 = PI.fq2_sqr(zi)
        return (PI.fq2_mul(x, zi2), PI.fq2_mul(y, PI.fq2_mul(zi2, zi)))

    def twist_points(self, n):
        return [random_twist_point(self.name, rng) for _ in range(n)]

    def cases(self):
        """(point, in G2) pairs: G2 points and infinity; twist points, cofactor parts, sums."""
        PI = self.PI
        G2 = tuple(tuple(c) for c in self.C.G2_GENERATOR)
        inside = [G2, self.affine(PI.g2_mul_jacobian(self.jac(G2), rng.randrange(1, self.r)))]
        outside = self.twist_points(2)
        cof = [self.affine(PI.g2_mul_jacobian(self.jac(p), self.r)) for p in outside]
        mixed = [self.affine(PI.g2_add_jacobian(self.jac(G2), self.jac(c))) for c in cof]
        out = [(p, True) for p in inside + [None]] + [(p, False) for p in outside + cof + mixed]
        for p, want in out:
            assert PI.g2_in_subgroup_by_order(p) == want
        return out

    def curve_points(self, n):
        return [random_curve_point(self.name, rng) for _ in range(n)]

    def g1_cases(self):
        """(point, in G1) pairs as cases() for G1: on BN254 (cofactor 1) every point is in G1
        and [r]P is infinity, so only BLS12-381 has points outside."""
        PI = self.PI

        def times(p, k):
            return PI.g1_to_affine(PI.g1_mul_jacobian((*p, 1), k))

        def plus(a, b):
            return PI.g1_to_affine(PI.g1_add_jacobian((*a, 1), (*b, 1)))

        G1 = tuple(self.C.G1_GENERATOR)
        inside = [G1, times(G1, rng.randrange(1, self.r))]
        points = self.curve_points(3)
        cof = [times(p, self.r) for p in points]
        if self.C.G1_COFACTOR == 1:
            assert cof == [None] * len(points)
            inside, outside = inside + points, []
        else:
            outside = points + cof + [plus(G1, c) for c in cof]
        out = [(p, True) for p in inside + [None]] + [(p, False) for p in outside]
        for p, want in out:
            assert PI.g1_in_subgroup_by_order(p) == want
        return out


@pytest.mark.parametrize("name", CURVES)
def test_g1_tests_agree_with_the_order(name):
    """pairing_int's and the compiled CPU build's G1 tests; the cube root of unity beta."""
    S = get_target("cpu").load("cuzk.arith.subgroup", **build_params(name))
    c = Curve(name)
    for p, want in c.g1_cases():
        assert c.PI.g1_in_subgroup(p) == want, (name, p)
        dev = tuple(c.mont(v) for v in (p or (0, 0)))
        assert bool(S.g1_in_subgroup(dev)) == want, (name, p)
    beta = c.PI.G1_BETA
    assert (beta is None) == (c.C.G1_COFACTOR == 1)
    if beta is not None:
        assert beta != 1 and pow(beta, 3, c.q) == 1 and S.G1_BETA_INT == beta


@pytest.mark.parametrize("name", CURVES)
def test_psi_constants_match_pairing_int(name):
    S = get_target("cpu").load("cuzk.arith.subgroup", **build_params(name))
    PI = pairing_int.for_curve(name)
    assert (S.PSI_X_INT, S.PSI_Y_INT) == (PI.PSI_X, PI.PSI_Y)
    assert int(S.X_ABS) == abs(PI.X) and S.FAMILY == PI.FAMILY


@pytest.mark.parametrize("name", CURVES)
def test_cpu_build_agrees_with_the_order(name):
    S = get_target("cpu").load("cuzk.arith.subgroup", **build_params(name))
    c = Curve(name)
    for p, want in c.cases():
        assert bool(S.g2_in_subgroup(c.dev(p))) == want, (name, p)


@pytest.mark.cuda
@pytest.mark.parametrize("name", CURVES)
def test_cuda_kernel_agrees_with_the_order(name):
    """The CUDA build's kernel, one thread per point (the simulator runs it here)."""
    S = get_target("cuda").load("cuzk.arith.subgroup", **build_params(name))
    c = Curve(name)
    cases = c.cases()[1:5]  # a multiple of the generator, infinity, two twist points
    rows = np.stack([c.row(p) for p, _ in cases])
    d_out = cuda.device_array(len(cases), dtype=np.bool_)
    S.CUDA_KERNELS.launch(S.KERNEL_NAME, len(cases), cuda.to_device(rows), d_out)
    assert [bool(v) for v in d_out.copy_to_host()] == [want for _, want in cases]
    assert S.KERNEL_NAME == "g2_rows_in_subgroup" + ("" if name == "bn254" else "_bls12_381")
