"""Window counts of the signed-digit Pippenger MSMs (cuzk.kernels.msm), for the drivers that
plan them without loading a compiler (cuzk.kernels.msm_cpu, msm_cuda)."""


def windows_for(c: int, bits: int = 254) -> int:
    """K = ceil((bits + 1) / c) windows of c bits for scalars below 2^bits: for any scalar
    below r, bits = R_BITS (254 on BN254, the default here; 255 on BLS12-381): see
    cuzk.kernels.msm's docstring; the extra bit holds the top carry."""
    return -(-(bits + 1) // c)
