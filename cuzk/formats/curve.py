"""The curves cuzk's files can be over, as the formats see them: each curve's primes, byte
widths and point widths, and snarkjs's name for it, derived from its constants module in
cuzk.arith (cuzk.arith.curves.CURVES). Readers find the curve from the primes a file holds
(`by_q`, `by_r`), JSON files from their "curve" field (`by_json_name`).

snarkjs names the curves "bn128" (cuzk.arith's "bn254") and "bls12381" ("bls12_381").
A stored field element is n8 = 8 x limbs bytes; a stored G1 point x||y is 2 x q-limbs
uint64 limbs, a G2 point x.c0||x.c1||y.c0||y.c1 4 x q-limbs. Both curves' Fq2 is
Fq[u]/(u^2 + 1).

Importing this module imports neither numpy nor numba (the `cuzk verify` path reads JSON
through it).
"""

from __future__ import annotations

from cuzk.arith import curves as arith_curves
from cuzk.plain import Plain

# cuzk.arith's curve name -> snarkjs's (the "curve" field of its JSON files).
SNARKJS_NAMES = {"bn254": "bn128", "bls12_381": "bls12381"}
# How people write them; snarkjs's getCurveFromName folds case and drops everything but
# letters and digits before comparing (curves.js): these are its accepted names, so folded.
_ALIASES = {
    "bn128": ("BN128", "BN254", "ALTBN128"),
    "bls12381": ("BLS12381",),
}
# The name for people, in messages.
TITLES = {"bn128": "BN254", "bls12381": "BLS12-381"}

BN128 = "bn128"
BN254_ONLY = (BN128,)


class Curve(Plain):
    """One curve as the files see it. `name` is snarkjs's ("bn128"), `arith` cuzk.arith's
    ("bn254"), `title` the one for messages ("BN254"); q, r and their limbs, the curve's and
    the twist's b, xi (Fq6 = Fq2[v]/(v^3 - xi), the sextic twist's non-residue) and Fr's
    2-adicity."""

    FIELDS = (
        "name",
        "arith",
        "title",
        "q",
        "r",
        "q_limbs",
        "r_limbs",
        "g1_b",
        "g2_b",
        "xi",
        "fr_two_adicity",
    )
    name: str
    arith: str
    title: str
    q: int
    r: int
    q_limbs: int
    r_limbs: int
    g1_b: int
    g2_b: tuple[int, int]
    xi: tuple[int, int]
    fr_two_adicity: int

    def __init__(self, **fields):
        self._set(**fields)

    @property
    def n8q(self) -> int:
        return 8 * self.q_limbs

    @property
    def n8r(self) -> int:
        return 8 * self.r_limbs

    @property
    def g1_limbs(self) -> int:
        """uint64 limbs of a stored G1 point (x||y)."""
        return 2 * self.q_limbs

    @property
    def g2_limbs(self) -> int:
        """uint64 limbs of a stored G2 point (x.c0||x.c1||y.c0||y.c1)."""
        return 4 * self.q_limbs

    @property
    def q_digits(self) -> int:
        """Decimal digits of q: a longer number is not below it."""
        return len(str(self.q))

    @property
    def r_digits(self) -> int:
        return len(str(self.r))

    # Fq2 = Fq[u]/(u^2 + 1) on Python ints, for the JSON readers' curve checks.

    def fq2_mul(self, a, b) -> tuple[int, int]:
        q = self.q
        return ((a[0] * b[0] - a[1] * b[1]) % q, (a[0] * b[1] + a[1] * b[0]) % q)

    def fq2_inv(self, a) -> tuple[int, int]:
        q = self.q
        t = pow((a[0] * a[0] + a[1] * a[1]) % q, -1, q)
        return (a[0] * t % q, -a[1] * t % q)

    def g2_b_text(self) -> str:
        """The twist's b as a message shows it."""
        return "3/(9+u)" if self.name == BN128 else f"{self.g2_b[0]}(1+u)"

    def __str__(self) -> str:
        return f"{self.name} ({self.title})"


def _two_adicity(r: int) -> int:
    return ((r - 1) & -(r - 1)).bit_length() - 1


def _make(arith: str) -> Curve:
    c = arith_curves.constants(arith)
    name = SNARKJS_NAMES[arith]
    return Curve(
        name=name,
        arith=arith,
        title=TITLES[name],
        q=c.FQ_MODULUS,
        r=c.FR_MODULUS,
        q_limbs=c.FQ_LIMBS,
        r_limbs=c.FR_LIMBS,
        g1_b=c.G1_B,
        g2_b=tuple(c.G2_B),
        xi=tuple(c.FQ2_NONRESIDUE),
        fr_two_adicity=_two_adicity(c.FR_MODULUS),
    )


CURVES: dict[str, Curve] = {
    SNARKJS_NAMES[a]: _make(a) for a in arith_curves.CURVES if a in SNARKJS_NAMES
}
BN254 = CURVES[BN128]
BLS12_381 = CURVES["bls12381"]
_BY_Q = {c.q: c for c in CURVES.values()}
_BY_R = {c.r: c for c in CURVES.values()}


def known() -> str:
    """The curves, for messages: "BN254 or BLS12-381"."""
    return " or ".join(c.title for c in CURVES.values())


def by_q(q: int) -> Curve | None:
    """The curve whose base field prime is q, None if none."""
    return _BY_Q.get(q)


def by_r(r: int) -> Curve | None:
    """The curve whose scalar field prime is r, None if none."""
    return _BY_R.get(r)


def by_name(name) -> Curve:
    """A Curve, given as one or by snarkjs's or cuzk.arith's name; ValueError if unknown."""
    if isinstance(name, Curve):
        return name
    if name in CURVES:
        return CURVES[name]
    for arith, snark in SNARKJS_NAMES.items():
        if name == arith:
            return CURVES[snark]
    raise ValueError(f"unknown curve {name!r} (known: {', '.join(CURVES)})")


def by_json_name(text) -> Curve | None:
    """The curve a snarkjs JSON "curve" field names (as snarkjs reads it), None if none."""
    if not isinstance(text, str):
        return None
    folded = "".join(ch for ch in text.upper() if ch.isascii() and ch.isalnum())
    for name, aliases in _ALIASES.items():
        if folded in aliases:
            return CURVES[name]
    return None


def require(curve: Curve, allowed, where, what: str) -> None:
    """UnsupportedCurve naming `where` unless `curve` is one of `allowed` (snarkjs names);
    `allowed` None allows every curve. `what` says who refuses: "cuzk proves"."""
    if allowed is None or curve.name in allowed:
        return
    from cuzk.formats.errors import UnsupportedCurve

    names = " or ".join(str(CURVES[a]) for a in allowed)
    raise UnsupportedCurve(where, f"the curve is {curve}; {what} {names} only")
