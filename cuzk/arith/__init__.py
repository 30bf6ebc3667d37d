"""Field and curve arithmetic (BN254; BLS12-381 by build), written once for Numba CPU and CUDA."""

# The flat public face (BN254's; another curve's builds: cuzk.arith.curves and
# batch(target, curve)), in the style of py_ecc.optimized_bn128: constants, conversions,
# Python-level arithmetic and the batch modules. Names resolve lazily (PEP 562) so that
# ``import cuzk.arith.constants`` does not import Numba.
#
# Python-level arithmetic (fq_mul, g1_add, ...) calls the CPU build of cuzk.arith.field /
# .curve with limbs as tuples of np.uint64, Montgomery form (cuzk.arith.convert.fq etc. make
# them); the inverses raise ZeroDivisionError for 0. Kernels use the device functions
# themselves: ``cuzk.arith.field`` / ``.curve`` on the CPU, ``cuzk.arith.jit.get_target("cuda")
# .load("cuzk.arith.curve")`` on CUDA.

import importlib

from cuzk.arith.constants import (
    FQ_MODULUS,
    FR_MODULUS,
    G1_GENERATOR,
    G2_GENERATOR,
)

field_modulus = FQ_MODULUS
curve_order = FR_MODULUS

_CONVERT = (
    "int_to_bytes32 bytes32_to_int bytes_to_limbs limbs_to_bytes ints_to_limbs limbs_to_ints "
    "rows fq fq_int fr fr_int fq2 fq2_int fq_array fq_array_to_ints fr_array fr_array_to_ints "
    "fq2_array fq2_array_to_ints g1_from_ints g1_to_ints g2_from_ints g2_to_ints g1_array "
    "g1_array_to_ints g2_array g2_array_to_ints g1_jacobian_to_ints g2_jacobian_to_ints "
    "g1_from_py_ecc g1_to_py_ecc g2_from_py_ecc g2_to_py_ecc as_limbs fq_inv fr_inv fq2_inv"
).split()

_FIELD = (
    "fq_add fq_sub fq_neg fq_dbl fq_mul fq_sqr fq_to_mont fq_from_mont fq_zero fq_one "
    "fr_add fr_sub fr_neg fr_mul fr_sqr fr_to_mont fr_from_mont fr_one "
    "fq2_add fq2_sub fq2_neg fq2_dbl fq2_mul fq2_sqr fq2_mul_fq fq2_is_zero fq2_eq fq2_zero "
    "fq2_one is_zero eq"
).split()

_CURVE = [
    f"{g}_{op}"
    for g in ("g1", "g2")
    for op in (
        "inf is_inf affine_is_inf from_affine to_affine neg neg_affine dbl add add_mixed eq "
        "mul is_on_curve_affine"
    ).split()
]

__all__ = [
    "FQ_MODULUS",
    "FR_MODULUS",
    "G1_GENERATOR",
    "G2_GENERATOR",
    "field_modulus",
    "curve_order",
    "G1",
    "G2",
    "batch",
    *_CONVERT,
    *_FIELD,
    *_CURVE,
]


def batch(target: str = "cpu", curve: str = "bn254"):
    """The batch module of ``target``: the build of cuzk.arith.batch_ops for "cpu" or "cuda"
    (same functions, numpy arrays in and out), for BN254 or another curve of
    cuzk.arith.curves ("bls12_381")."""
    if target not in ("cpu", "cuda"):
        raise ValueError(f"unknown target {target!r} (expected 'cpu' or 'cuda')")
    from cuzk.arith.curves import build_params
    from cuzk.arith.jit import get_target

    return get_target(target).load("cuzk.arith.batch_ops", **build_params(curve))


def __getattr__(name):
    if name in _CONVERT:
        value = getattr(importlib.import_module("cuzk.arith.convert"), name)
    elif name in _FIELD or name in _CURVE:
        convert = importlib.import_module("cuzk.arith.convert")
        module = importlib.import_module(
            "cuzk.arith.field" if name in _FIELD else "cuzk.arith.curve"
        )
        value = convert.python_level(getattr(module, name))
    elif name == "G1":  # the generators as Montgomery affine points
        value = importlib.import_module("cuzk.arith.convert").g1_from_ints(G1_GENERATOR)
    elif name == "G2":
        value = importlib.import_module("cuzk.arith.convert").g2_from_ints(G2_GENERATOR)
    else:
        raise AttributeError(f"module 'cuzk.arith' has no attribute {name!r}")
    globals()[name] = value
    return value
