"""cuzk: a Groth16 (BN254) proving daemon for circom/snarkjs circuits on Numba CPU and CUDA kernels."""

__version__ = "0.1.0"
