"""BN254 field and curve arithmetic, written once and compiled for Numba CPU and CUDA."""
