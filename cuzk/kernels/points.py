"""One affine point set on one device: what the MSMs accept besides a plain array.

cuzk.kernels.resident places proving-key point sets on devices and keeps them; the MSM
drivers (cuzk.kernels.msm_cpu, msm_cuda) only need to recognise a placed set, which is this
class (kept apart from resident so the drivers do not import the registry that calls them).
"""

import time

G1_WIDTH = 8  # uint64 limbs per affine G1 row: x || y
G2_WIDTH = 16  # uint64 limbs per affine G2 row: x.c0 || x.c1 || y.c0 || y.c1


class ResidentPoints:
    """One affine point set ((n, 8) G1 or (n, 16) G2 uint64 rows) on one device."""

    def __init__(self, array, device: str, name: str = ""):
        width = array.shape[1]
        if len(array.shape) != 2 or width not in (G1_WIDTH, G2_WIDTH):
            raise ValueError(
                f"point set {name!r}: expected (n, 8) or (n, 16) rows, got {tuple(array.shape)}"
            )
        self.array = array
        self.device = device
        self.name = name
        self.group = 1 if width == G1_WIDTH else 2
        self.n = int(array.shape[0])
        self.nbytes = self.n * width * 8
        self.last_used = time.monotonic()

    def touch(self) -> None:
        self.last_used = time.monotonic()

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"<ResidentPoints {self.name!r} G{self.group} n={self.n} on {self.device}>"
