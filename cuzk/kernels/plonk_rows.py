"""The rows of the constants array the PLONK kernels take (cuzk.kernels.plonk): imported by
the kernels and by their driver (cuzk.plonk.fr), which must not import numba."""

BETA, GAMMA, BETA_K1, BETA_K2, ALPHA, ALPHA2, ONE, ZH_INV = range(8)  # ZH_INV .. ZH_INV + 3
CONSTANTS = ZH_INV + 4
