"""G1 and G2 of a curve (BN254 unless built with ``curve=...``) for the target being built:
the two builds of cuzk.arith.group.

The group routines are written once in cuzk.arith.group and built per (target, group); this
module holds the target's two builds, ``G1`` and ``G2``, and exposes their routines under the
flat names the rest of the code uses: ``g1_add`` is ``G1.add``, ``g2_load_affine`` is
``G2.load_affine``, and so on for every name in ``group.ROUTINES``. Import this module for the
CPU build, or ``get_target("cuda").load("cuzk.arith.curve")`` for CUDA; another curve's:
``T.load("cuzk.arith.curve", curve="bls12_381")``.
"""

from cuzk.arith.curves import DEFAULT, build_params
from cuzk.arith.jit import building

T = building()
CURVE = T.param("curve", DEFAULT)
G1 = T.load("cuzk.arith.group", group="g1", **build_params(CURVE))
G2 = T.load("cuzk.arith.group", group="g2", **build_params(CURVE))

for _prefix, _build in (("g1", G1), ("g2", G2)):
    for _name in _build.ROUTINES:
        globals()[f"{_prefix}_{_name}"] = getattr(_build, _name)
del _prefix, _build, _name
