"""The primitive layer of 64-bit limb arithmetic, one implementation per target.

Four primitives carry all multi-precision arithmetic above them (cuzk.bn254.field):

    mac(a, b, c, d) -> (lo, hi)     a*b + c + d as a 128-bit value; never overflows, since
                                    (2^64-1)^2 + 2(2^64-1) = 2^128 - 1
    adc(a, b, c)    -> (s, carry)   a + b + c, carry in {0, 1} for c in {0, 1}
    sbb(a, b, br)   -> (d, borrow)  a - b - br mod 2^64, borrow in {0, 1}
    mul_lo(a, b)    -> a*b mod 2^64

Numba has no 128-bit integer type, so on the CPU and on CUDA these are LLVM intrinsics that
widen to i128: LLVM lowers them to one mul/mulx (CPU) or mul.lo + mul.hi (PTX) and to
add-with-carry chains. The CUDA simulator runs device code as Python and cannot run
intrinsics, so it gets a pure-Python twin working on Python ints.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from llvmlite import ir

Primitives = namedtuple("Primitives", "mac adc sbb mul_lo")

_I64 = ir.IntType(64)
_I128 = ir.IntType(128)
_SHIFT64 = ir.Constant(_I128, 64)
_SHIFT127 = ir.Constant(_I128, 127)


def _split(context, builder, sig, wide):
    lo = builder.trunc(wide, _I64)
    hi = builder.trunc(builder.lshr(wide, _SHIFT64), _I64)
    return context.make_tuple(builder, sig.return_type, [lo, hi])


def _mac_codegen(context, builder, sig, args):
    a, b, c, d = (builder.zext(x, _I128) for x in args)
    return _split(context, builder, sig, builder.add(builder.add(builder.mul(a, b), c), d))


def _adc_codegen(context, builder, sig, args):
    a, b, c = (builder.zext(x, _I128) for x in args)
    return _split(context, builder, sig, builder.add(builder.add(a, b), c))


def _sbb_codegen(context, builder, sig, args):
    a, b, br = (builder.zext(x, _I128) for x in args)
    wide = builder.sub(builder.sub(a, b), br)
    d = builder.trunc(wide, _I64)
    borrow = builder.trunc(builder.lshr(wide, _SHIFT127), _I64)
    return context.make_tuple(builder, sig.return_type, [d, borrow])


def _mul_lo_codegen(context, builder, sig, args):
    return builder.mul(args[0], args[1])


def _make_intrinsics(intrinsic, types):
    u64 = types.uint64
    pair = types.UniTuple(u64, 2)

    @intrinsic
    def mac(typingctx, a, b, c, d):
        return pair(u64, u64, u64, u64), _mac_codegen

    @intrinsic
    def adc(typingctx, a, b, c):
        return pair(u64, u64, u64), _adc_codegen

    @intrinsic
    def sbb(typingctx, a, b, br):
        return pair(u64, u64, u64), _sbb_codegen

    @intrinsic
    def mul_lo(typingctx, a, b):
        return u64(u64, u64), _mul_lo_codegen

    return Primitives(mac, adc, sbb, mul_lo)


_cache: dict[str, Primitives] = {}


def cpu_primitives() -> Primitives:
    """Intrinsics for Numba's CPU target."""
    if "cpu" not in _cache:
        from numba import types
        from numba.extending import intrinsic

        _cache["cpu"] = _make_intrinsics(intrinsic, types)
    return _cache["cpu"]


def cuda_primitives() -> Primitives:
    """Intrinsics for numba-cuda (it has its own type system and intrinsic registry)."""
    if "cuda" not in _cache:
        from numba.cuda import types
        from numba.cuda.extending import intrinsic

        _cache["cuda"] = _make_intrinsics(intrinsic, types)
    return _cache["cuda"]


_M64 = (1 << 64) - 1
_u64 = np.uint64


def _py_mac(a, b, c, d):
    w = int(a) * int(b) + int(c) + int(d)
    return _u64(w & _M64), _u64(w >> 64)


def _py_adc(a, b, c):
    w = int(a) + int(b) + int(c)
    return _u64(w & _M64), _u64(w >> 64)


def _py_sbb(a, b, br):
    w = int(a) - int(b) - int(br)
    return _u64(w & _M64), _u64(1 if w < 0 else 0)


def _py_mul_lo(a, b):
    return _u64((int(a) * int(b)) & _M64)


def python_primitives() -> Primitives:
    """The pure-Python twin used by the CUDA simulator."""
    return Primitives(_py_mac, _py_adc, _py_sbb, _py_mul_lo)
