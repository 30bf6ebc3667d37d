"""Fq, Fr and Fq2 arithmetic on Montgomery limb tuples, for any curve: one source for CPU and
CUDA.

An element is a tuple of n uint64 limbs, little-endian, in Montgomery form (a*R mod p,
R = 2^(64 n)) unless a name says "plain"; n is the field's limb count (BN254: 4 for both
fields; BLS12-381: 6 for Fq, 4 for Fr). Tuples stay in registers inside hot loops
(measured: arrays per call cost 4x). An Fq2 element is a pair of Fq elements (c0, c1)
meaning c0 + c1*u, u^2 = -1.

Every function here is a device function of the target being built (see cuzk.arith.jit): import
this module normally for the CPU build of BN254, ``get_target("cuda").load("cuzk.arith.field")``
for its CUDA build, and ``T.load("cuzk.arith.field", curve="bls12_381")`` for another curve
(cuzk.arith.curves). Inputs must be reduced (< p); outputs are reduced.

The multi-precision routines (CIOS multiplication, reduction, addition, subtraction, ...)
are written once, as a template for n limbs (``limb_source(n)``, unrolled over the limbs as
a hand-written 4-limb routine is), and generated for each limb count the curve needs under
names ending in ``_{n}`` (``mont_mul_cios_6``). The unsuffixed names (``mont_mul``,
``mont_mul_cios``, ``mod_add``, ``is_zero``, ``eq``, ``load``, ``store``, ...) are the 4-limb
routines, taking the modulus as an argument. Field-level names (``fq_mul``, ``fr_inv``,
``fq_load``, ...) bind each field's routines and constants.
"""

import numpy as np

from cuzk.arith.curves import DEFAULT, constants
from cuzk.arith.jit import building

T = building()
device_fn = T.device_fn
row_fn = T.row_fn
mac, adc, sbb, mul_lo = T.prims

CURVE = T.param("curve", DEFAULT)
K = constants(CURVE)  # the curve's constants module (cuzk.arith.constants for BN254)
if K.FQ2_MODULUS_COEFFS != (1, 0):
    raise NotImplementedError(f"{CURVE}: Fq2 here is Fq[u]/(u^2 + 1)")

NQ, NR = K.FQ_LIMBS, K.FR_LIMBS  # limbs per Fq and per Fr element
Q_LIMBS, Q_INV, Q_R2, Q_ONE, Q_MINUS_2 = K.Q_LIMBS, K.Q_INV, K.Q_R2, K.Q_ONE, K.Q_MINUS_2
Q_ZERO, Q_PLAIN_ONE = K.Q_ZERO, K.Q_PLAIN_ONE
R_LIMBS, R_INV, R_R2, R_ONE, R_MINUS_2 = K.R_LIMBS, K.R_INV, K.R_R2, K.R_ONE, K.R_MINUS_2
R_ZERO, R_PLAIN_ONE = K.R_ZERO, K.R_PLAIN_ONE
G1_B_MONT, G2_B_MONT = K.G1_B_MONT, K.G2_B_MONT  # the curve coefficients, Montgomery form
ZERO, PLAIN_ONE = K.R_ZERO, K.R_PLAIN_ONE  # on 4 limbs (BN254's names for both fields)

Z = np.uint64(0)
ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)  # br * ALL_ONES: a borrow (0 or 1) as a mask, no overflow
ONE_BIT = np.uint64(1)


# --- modular arithmetic over an n-limb modulus p, generated for each n ---------------------


def limb_source(n: int, mul: str) -> str:
    """The text of the n-limb routines: every loop over the limbs unrolled, so the limbs stay
    scalars (registers); ``mul`` names the n-limb Montgomery multiplication mont_pow uses.

    - ``_mont_round_{n}``: one outer iteration of CIOS (Koc, Acar, Kaliski 1996, "Analyzing
      and comparing Montgomery multiplication algorithms"): t = (t + a*b_i + m*p) / 2^64 with
      m = t0*INV mod 2^64. "No-carry" variant (valid as p's top limb < 2^63 - 1,
      cuzk.arith.curves.no_carry_ok): the carry word above t[n-1] is folded into t[n-1]
      instead of kept in an extra limb.
    - ``mont_mul_cios_{n}(a, b, p, inv)``: a*b*R^{-1} mod p, n rounds, one final subtraction.
    - ``_reduce_once_{n}``: t - p if t >= p else t, for t < 2p, branch-free: the outcome is
      data-dependent, so a branch mispredicts half the time (keep = all ones when t < p).
    - ``add_nored_{n}``: a + b as it comes (below 2p, not reduced), for an operand of a
      product only: see ``fq_add_unreduced``; ``sub_nored_{n}``: a - b + p (in (0, 2p) for
      a, b < p, not reduced), likewise (``fq_sub_unreduced``).
    - ``mod_add_{n}`` (no overflow: a + b < 2p < 2^(64 n)), ``mod_sub_{n}`` (p added back
      under a mask, no branch), ``mod_neg_{n}`` (0 stays 0), ``is_zero_{n}``, ``eq_{n}``.
    - ``mont_pow_{n}(a, e, one, p, inv)``: a^e for Montgomery a and e given as n plain limbs,
      left-to-right square-and-multiply (multiplying with ``mul``: mont_mul_{n}, the
      assembly where the field has it).
    - ``load_{n}(arr, i, col)`` / ``store_{n}(arr, i, col, a)``: the element in row i,
      columns col..col+n-1.
    """
    r = range(n)
    ts, As, ps = [f"t{i}" for i in r], [f"a{i}" for i in r], [f"p{i}" for i in r]
    T_, A_, P_ = ", ".join(ts), ", ".join(As), ", ".join(ps)
    rnd = [f"def _mont_round_{n}({T_}, {A_}, bi, {P_}, inv):"]
    c = "Z"
    for i in r:
        rnd.append(f"    t{i}, c = mac(a{i}, bi, t{i}, {c})")
        c = "c"
    rnd += [f"    t{n} = c", "    m = mul_lo(t0, inv)", "    _, c = mac(m, p0, t0, Z)"]
    rnd += [f"    t{i - 1}, c = mac(m, p{i}, t{i}, c)" for i in range(1, n)]
    rnd += [f"    t{n - 1}, _ = adc(c, t{n}, Z)", f"    return {T_}"]

    p_args = ", ".join(f"p[{i}]" for i in r)
    cios = [f"def mont_mul_cios_{n}(a, b, p, inv):", f"    {A_} = a"]
    zeros = ", ".join(["Z"] * n)
    cios.append(f"    {T_} = _mont_round_{n}({zeros}, {A_}, b[0], {p_args}, inv)")
    cios += [f"    {T_} = _mont_round_{n}({T_}, {A_}, b[{i}], {p_args}, inv)" for i in r[1:]]
    cios.append(f"    return _reduce_once_{n}({T_}, p)")

    def borrow_chain(dst, x, y):  # dst_i, br = sbb(x_i, y_i, br)
        out, br = [], "Z"
        for i in r:
            out.append(f"    {dst}{i}, br = sbb({x.format(i=i)}, {y.format(i=i)}, {br})")
            br = "br"
        return out

    red = [f"def _reduce_once_{n}({T_}, p):", *borrow_chain("s", "t{i}", "p[{i}]")]
    red += ["    keep = br * ALL_ONES", "    return ("]
    red += [f"        s{i} ^ ((s{i} ^ t{i}) & keep)," for i in r] + ["    )"]

    add = [f"def mod_add_{n}(a, b, p):"]
    c = "Z"
    for i in r:
        add.append(f"    s{i}, c = adc(a[{i}], b[{i}], {c})")
        c = "c"
    add.append(f"    return _reduce_once_{n}({', '.join(f's{i}' for i in r)}, p)")

    nored = [f"def add_nored_{n}(a, b):"]
    c = "Z"
    for i in r:
        nored.append(f"    s{i}, c = adc(a[{i}], b[{i}], {c})")
        c = "c"
    nored.append(f"    return ({', '.join(f's{i}' for i in r)},)")

    # a - b + p for a, b < p: the borrow chain, then p added back whatever the borrow
    subn = [f"def sub_nored_{n}(a, b, p):", *borrow_chain("d", "a[{i}]", "b[{i}]")]
    c = "Z"
    for i in r:
        subn.append(f"    d{i}, c = adc(d{i}, p[{i}], {c})")
        c = "c"
    subn.append(f"    return ({', '.join(f'd{i}' for i in r)},)")

    sub = [f"def mod_sub_{n}(a, b, p):", *borrow_chain("d", "a[{i}]", "b[{i}]")]
    sub.append("    mask = br * ALL_ONES")
    c = "Z"
    for i in r:
        sub.append(f"    d{i}, c = adc(d{i}, p[{i}] & mask, {c})")
        c = "c"
    sub.append(f"    return ({', '.join(f'd{i}' for i in r)},)")

    words = " | ".join(f"a[{i}]" for i in r)
    diffs = " | ".join(f"(a[{i}] ^ b[{i}])" for i in r)
    elements = ", ".join(f"arr[i, col + {i}]" for i in r)
    text = [
        *rnd, "", *cios, "", *red, "", *add, "", *nored, "", *subn, "", *sub, "",
        f"def is_zero_{n}(a):", f"    return ({words}) == Z", "",
        f"def eq_{n}(a, b):", f"    return ({diffs}) == Z", "",
        f"def mod_neg_{n}(a, p):",
        f"    if is_zero_{n}(a):", "        return a", f"    return mod_sub_{n}(p, a, p)", "",
        f"def mont_pow_{n}(a, e, one, p, inv):",
        "    acc = one",
        f"    for limb in range({n - 1}, -1, -1):",
        "        word = e[limb]",
        "        for bit in range(63, -1, -1):",
        f"            acc = {mul}(acc, acc, p, inv)",
        "            if (word >> np.uint64(bit)) & ONE_BIT:",
        f"                acc = {mul}(acc, a, p, inv)",
        "    return acc", "",
        f"def load_{n}(arr, i, col):", f"    return ({elements},)", "",
        f"def store_{n}(arr, i, col, a):",
        *[f"    arr[i, col + {i}] = a[{i}]" for i in r],
    ]  # fmt: skip
    return "\n".join(text) + "\n"


LIMB_ROUTINES = (
    "_mont_round mont_mul_cios _reduce_once mod_add add_nored sub_nored mod_sub is_zero eq mod_neg "
    "mont_pow"
)
ROW_ROUTINES = "load store"  # array access: inlined on the CPU (T.row_fn)


def _define_limb_routines(n: int) -> None:
    """Generate the n-limb routines (limb_source) as device functions of this build. The text
    is compiled under this file's name, and each function keeps its own name (``_{n}`` and
    the build's suffix in its qualified name), so Numba caches them like hand-written ones."""
    scope: dict = {}
    exec(compile(limb_source(n, f"mont_mul_{n}"), __file__, "exec"), globals(), scope)
    for names, decorate in ((LIMB_ROUTINES, device_fn), (ROW_ROUTINES, row_fn)):
        for name in names.split():
            globals()[f"{name}_{n}"] = decorate(scope[f"{name}_{n}"])


# The target's assembly multiplication for each of the curve's moduli, where it has one (the
# CPU build on x86-64 with BMI2 and ADX: cuzk.arith.limbs.x86_mont_mul), else None.
_fq_mul_asm = T.mont_mul_asm(Q_LIMBS, Q_INV)
_fr_mul_asm = T.mont_mul_asm(R_LIMBS, R_INV)


def _dispatch_source(n: int) -> str:
    """mont_mul_{n}(a, b, p, inv) for n-limb p: the assembly for the fields of n limbs that
    have it (p is a constant at every call site, so LLVM folds the choice away), CIOS for any
    other p."""
    text = [f"def mont_mul_{n}(a, b, p, inv):"]
    limbs = ", ".join([f"a[{i}]" for i in range(n)] + [f"b[{i}]" for i in range(n)])
    for asm, modulus, count in (("_fq_mul_asm", "Q_LIMBS", NQ), ("_fr_mul_asm", "R_LIMBS", NR)):
        if count == n and globals()[asm] is not None:
            text.append(f"    if p[0] == {modulus}[0] and p[{n - 1}] == {modulus}[{n - 1}]:")
            text.append(f"        return {asm}({limbs})")
    if len(text) == 1:
        return ""
    text.append(f"    return mont_mul_cios_{n}(a, b, p, inv)")
    return "\n".join(text) + "\n"


def _define_mont_mul(n: int) -> None:
    """mont_mul_{n}: the dispatcher above where a field of n limbs has assembly, else the
    generated CIOS itself."""
    text = _dispatch_source(n)
    if not text:
        globals()[f"mont_mul_{n}"] = globals()[f"mont_mul_cios_{n}"]
        return
    scope: dict = {}
    exec(compile(text, __file__, "exec"), globals(), scope)
    globals()[f"mont_mul_{n}"] = device_fn(scope[f"mont_mul_{n}"])


LIMB_COUNTS = tuple(sorted({4, NQ, NR}))  # 4 always: the unsuffixed routines below
for _n in LIMB_COUNTS:
    _define_limb_routines(_n)
    _define_mont_mul(_n)
del _n

# The unsuffixed names: the 4-limb routines, for any 4-limb modulus given as an argument.
_mont_round, mont_mul_cios, _reduce_once = _mont_round_4, mont_mul_cios_4, _reduce_once_4  # noqa: F821
mod_add, mod_sub, mod_neg, mont_pow = mod_add_4, mod_sub_4, mod_neg_4, mont_pow_4  # noqa: F821
is_zero, eq, load, store = is_zero_4, eq_4, load_4, store_4  # noqa: F821
mont_mul = mont_mul_4  # noqa: F821

# --- Fq and Fr: the prime fields, written once -----------------------------------------------


def prime_field_source(f: str, P: str, n: int) -> str:
    """The text of one prime field's routines, named ``{f}_*`` (fq_mul, fr_inv, ...): the
    n-limb routines above bound to the field's constants {P}_LIMBS (the modulus), {P}_INV,
    {P}_R2, {P}_ONE, {P}_ZERO, {P}_PLAIN_ONE and {P}_MINUS_2 (module constants: Numba
    compiles them straight through).

    - ``{f}_mul``, ``{f}_sqr``, ``{f}_add``, ``{f}_sub``, ``{f}_neg``, ``{f}_dbl``: Montgomery
      form in and out.
    - ``{f}_inv``: a^(p-2) (Fermat); the inverse of 0 is 0 here, so callers that can meet 0
      check ``{f}_is_zero`` first (the Python-level API raises ZeroDivisionError).
    - ``{f}_to_mont`` (a R^2 R^-1 = a R), ``{f}_from_mont`` (a 1 R^-1), ``{f}_zero``,
      ``{f}_one`` (Montgomery), ``{f}_is_zero``, ``{f}_eq``.
    - ``{f}_load(arr, i, col)`` / ``{f}_store(arr, i, col, a)``: the element in row i,
      columns col .. col + n - 1 (limbs, little-endian).
    """
    return f"""
def {f}_mul(a, b):
    return mont_mul_{n}(a, b, {P}_LIMBS, {P}_INV)

def {f}_sqr(a):
    return mont_mul_{n}(a, a, {P}_LIMBS, {P}_INV)

def {f}_add(a, b):
    return mod_add_{n}(a, b, {P}_LIMBS)

def {f}_sub(a, b):
    return mod_sub_{n}(a, b, {P}_LIMBS)

def {f}_neg(a):
    return mod_neg_{n}(a, {P}_LIMBS)

def {f}_dbl(a):
    return mod_add_{n}(a, a, {P}_LIMBS)

def {f}_inv(a):
    return mont_pow_{n}(a, {P}_MINUS_2, {P}_ONE, {P}_LIMBS, {P}_INV)

def {f}_to_mont(a):
    return mont_mul_{n}(a, {P}_R2, {P}_LIMBS, {P}_INV)

def {f}_from_mont(a):
    return mont_mul_{n}(a, {P}_PLAIN_ONE, {P}_LIMBS, {P}_INV)

def {f}_zero():
    return {P}_ZERO

def {f}_one():
    return {P}_ONE

def {f}_is_zero(a):
    return is_zero_{n}(a)

def {f}_eq(a, b):
    return eq_{n}(a, b)

def {f}_load(arr, i, col):
    return load_{n}(arr, i, col)

def {f}_store(arr, i, col, a):
    store_{n}(arr, i, col, a)
"""


FIELD_ROUTINES = "mul sqr add sub neg dbl inv to_mont from_mont zero one is_zero eq"
FIELD_ROW_ROUTINES = "load store"


def _prime_field(f: str, P: str, n: int) -> tuple:
    """One prime field's routines (prime_field_source) as device functions of this build, in
    the order of FIELD_ROUTINES then FIELD_ROW_ROUTINES; each keeps its own name, so Numba
    caches them like hand-written ones (as _define_limb_routines)."""
    scope: dict = {}
    exec(compile(prime_field_source(f, P, n), __file__, "exec"), globals(), scope)
    return tuple(
        decorate(scope[f"{f}_{name}"])
        for names, decorate in ((FIELD_ROUTINES, device_fn), (FIELD_ROW_ROUTINES, row_fn))
        for name in names.split()
    )


# the base field
(fq_mul, fq_sqr, fq_add, fq_sub, fq_neg, fq_dbl, fq_inv, fq_to_mont, fq_from_mont, fq_zero,
 fq_one, fq_is_zero, fq_eq, fq_load, fq_store) = _prime_field("fq", "Q", NQ)  # fmt: skip
# the scalar field
(fr_mul, fr_sqr, fr_add, fr_sub, fr_neg, fr_dbl, fr_inv, fr_to_mont, fr_from_mont, fr_zero,
 fr_one, fr_is_zero, fr_eq, fr_load, fr_store) = _prime_field("fr", "R", NR)  # fmt: skip


# An Fq sum left unreduced, for the Fq2 products' Karatsuba sums: fq_mul / fq_sqr take
# operands below 2p and return a fully reduced product when 4q < R = 2^(64 NQ) (both curves:
# q < R / 5 on BN254, q < R / 14 on BLS12-381). The product before its one final subtraction is
# below ab/R + q < 4q^2/R + q < 2q, and the CIOS accumulator stays below 3q < R (the assembly
# keeps a spare word anyway). Not for Fr: BLS12-381's r is above 2^256 / 4.
if 4 * K.FQ_MODULUS >= 1 << (64 * NQ):
    raise ValueError("fq_add_unreduced needs 4q < 2^(64 n): this modulus leaves too little room")
_fq_add_nored = globals()[f"add_nored_{NQ}"]
_fq_sub_nored = globals()[f"sub_nored_{NQ}"]


@device_fn
def fq_add_unreduced(a, b):
    """a + b for a, b < q, below 2q and not reduced: only ever an operand of fq_mul / fq_sqr
    (which reduce it fully; see above). Saves the sum's conditional subtraction."""
    return _fq_add_nored(a, b)


@device_fn
def fq_sub_unreduced(a, b):
    """a - b + q for a, b < q: in (0, 2q), not reduced (p added back whatever the borrow, no
    mask): only ever an operand of fq_mul / fq_sqr, like fq_add_unreduced."""
    return _fq_sub_nored(a, b, Q_LIMBS)


# fq_mul_unreduced(a, b): a b R^-1 mod q for operands below 2q, the result below 2q and not
# fully reduced (the same bound as above): for a product that only enters other products (or
# fq_inv, whose products take it) — the batch-affine additions' running products and slope.
# The assembly without its final subtraction where the target has it, else fq_mul itself.
_fq_mul_unreduced_asm = T.mont_mul_asm(Q_LIMBS, Q_INV, reduce=False)
if _fq_mul_unreduced_asm is not None:
    _limbs = ", ".join([f"a[{i}]" for i in range(NQ)] + [f"b[{i}]" for i in range(NQ)])
    _scope: dict = {}
    exec(
        compile(
            f"def fq_mul_unreduced(a, b):\n    return _fq_mul_unreduced_asm({_limbs})\n",
            __file__,
            "exec",
        ),
        globals(),
        _scope,
    )
    fq_mul_unreduced = device_fn(_scope["fq_mul_unreduced"])
    del _limbs, _scope
else:
    fq_mul_unreduced = fq_mul


# --- Fq2 = Fq[u] / (u^2 + 1) --------------------------------------------------------------


@device_fn
def fq2_add(a, b):
    return (fq_add(a[0], b[0]), fq_add(a[1], b[1]))


@device_fn
def fq2_sub(a, b):
    return (fq_sub(a[0], b[0]), fq_sub(a[1], b[1]))


@device_fn
def fq2_neg(a):
    return (fq_neg(a[0]), fq_neg(a[1]))


@device_fn
def fq2_dbl(a):
    return (fq_dbl(a[0]), fq_dbl(a[1]))


@device_fn
def fq2_mul(a, b):
    """(a0 + a1 u)(b0 + b1 u) with Karatsuba: 3 Fq multiplications."""
    v0 = fq_mul(a[0], b[0])
    v1 = fq_mul(a[1], b[1])
    # the sums only enter the product: unreduced (below 2p; see fq_add_unreduced)
    s = fq_mul(fq_add_unreduced(a[0], a[1]), fq_add_unreduced(b[0], b[1]))
    return (fq_sub(v0, v1), fq_sub(fq_sub(s, v0), v1))


@device_fn
def fq2_sqr(a):
    """(a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: 2 Fq multiplications."""
    c0 = fq_mul(fq_add_unreduced(a[0], a[1]), fq_sub(a[0], a[1]))
    t = fq_mul(a[0], a[1])
    return (c0, fq_add(t, t))


@device_fn
def fq2_mul_fq(a, k):
    """(a0 + a1 u) * k for k in Fq."""
    return (fq_mul(a[0], k), fq_mul(a[1], k))


@device_fn
def fq2_inv(a):
    """1/(a0 + a1 u) = (a0 - a1 u) / (a0^2 + a1^2); the inverse of 0 is 0."""
    t = fq_inv(fq_add(fq_sqr(a[0]), fq_sqr(a[1])))
    return (fq_mul(a[0], t), fq_neg(fq_mul(a[1], t)))


@device_fn
def fq2_is_zero(a):
    return fq_is_zero(a[0]) and fq_is_zero(a[1])


@device_fn
def fq2_eq(a, b):
    return fq_eq(a[0], b[0]) and fq_eq(a[1], b[1])


@device_fn
def fq2_zero():
    return (Q_ZERO, Q_ZERO)


@device_fn
def fq2_one():
    return (Q_ONE, Q_ZERO)


# --- array access: elements stored as rows of (n, k) uint64 arrays --------------------------
# An Fq element occupies NQ consecutive columns (limbs, little-endian), an Fr element NR, an
# Fq2 element 2 NQ (c0 limbs, then c1 limbs). Kernels of both targets read and write through
# these (and through load/store, the 4-limb ones).


@row_fn
def fq2_load(arr, i, col):
    """The Fq2 element in row i, columns col..col+2NQ-1 (c0 then c1)."""
    return (fq_load(arr, i, col), fq_load(arr, i, col + NQ))


@row_fn
def fq2_store(arr, i, col, a):
    fq_store(arr, i, col, a[0])
    fq_store(arr, i, col + NQ, a[1])
