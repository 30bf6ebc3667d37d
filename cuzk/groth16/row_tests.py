"""The row tests of key validation, by number, and the rows of one sweep task: shared by the
compiled sweeps (cuzk.groth16.point_sweeps, Numba's or the native library's) and their caller
(cuzk.groth16.validate), which imports no compiler to name them."""

# One sweep for all four, each test chosen per row by a branch that costs nothing beside the
# point arithmetic. (A test passed as a function would make each caller's sweep a compilation
# of its own that Numba's disk cache does not keep.)
ON_CURVE_G1, ON_CURVE_G2, IN_SUBGROUP_G1, IN_SUBGROUP_G2 = 0, 1, 2, 3

CHUNK = 4096  # rows per parallel task; a task stops at its first bad row
