"""One affine point set on one device: what the MSMs accept besides a plain array.

cuzk.kernels.resident places proving-key point sets on devices and keeps them; the MSM
drivers (cuzk.kernels.msm_cpu, msm_cuda) only need to recognise a placed set, which is this
class (kept apart from resident so the drivers do not import the registry that calls them).

A row is an affine point, NQ uint64 limbs per Fq element (cuzk.arith.curves): G1 x || y is
2 NQ limbs, G2 x.c0 || x.c1 || y.c0 || y.c1 is 4 NQ (BN254: 8 and 16; BLS12-381: 12 and 24).
"""

import time

from cuzk.arith.curves import CURVES, DEFAULT, constants

G1_WIDTH = 8  # uint64 limbs per affine BN254 G1 row: x || y
G2_WIDTH = 16  # uint64 limbs per affine BN254 G2 row: x.c0 || x.c1 || y.c0 || y.c1


def point_width(group: int, curve: str = DEFAULT) -> int:
    """uint64 limbs of an affine row of G1 (group 1: 2 NQ) or G2 (group 2: 4 NQ) on curve."""
    if group not in (1, 2):
        raise ValueError(f"group must be 1 or 2, not {group!r}")
    return 2 * group * constants(curve).FQ_LIMBS


def groups_by_width(curve: str | None = None) -> dict[int, tuple[str, int]]:
    """{row width: (curve, group)} for one curve, or for every registered curve (None)."""
    out: dict[int, tuple[str, int]] = {}
    for name in CURVES if curve is None else (curve,):
        for group in (1, 2):
            width = point_width(group, name)
            if width in out:  # two registered curves with one width: say the curve
                raise RuntimeError(f"curves {out[width][0]} and {name}: same row width {width}")
            out[width] = (name, group)
    return out


class ResidentPoints:
    """One affine point set ((n, 2 NQ) G1 or (n, 4 NQ) G2 uint64 rows) on one device.

    ``curve`` (cuzk.arith.curves' name) is inferred from the row width when not given: the
    registered curves' widths are all different (BN254 8 and 16, BLS12-381 12 and 24);
    given, the width must be one of that curve's. ``group`` (1 or 2) follows from both."""

    def __init__(self, array, device: str, name: str = "", curve: str | None = None):
        shape = tuple(array.shape)
        found = groups_by_width(curve).get(shape[1]) if len(shape) == 2 else None
        if found is None:
            expect = ", ".join(
                f"(n, {w}) {c} G{g}" for w, (c, g) in sorted(groups_by_width(curve).items())
            )
            raise ValueError(f"point set {name!r}: expected {expect} rows, got {shape}")
        self.array = array
        self.device = device
        self.name = name
        self.curve, self.group = found
        self.n = int(shape[0])
        self.nbytes = self.n * shape[1] * 8
        self.last_used = time.monotonic()

    def touch(self) -> None:
        self.last_used = time.monotonic()

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        curve = "" if self.curve == DEFAULT else f" {self.curve}"
        return f"<ResidentPoints {self.name!r}{curve} G{self.group} n={self.n} on {self.device}>"
