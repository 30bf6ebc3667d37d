"""Proving kernels (NTT, MSM) for Numba CPU and CUDA, built on cuzk.arith."""
