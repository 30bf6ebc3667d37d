"""cuzk: a Groth16 (BN254) proving daemon for circom/snarkjs circuits on Numba CPU and CUDA."""

import os as _os

__version__ = "0.1.0"

# Numba's OpenMP threading layer spins idle worker threads by default. On a shared prover
# (synthesis processes, device processes and finalizers all competing for cores) the spinning
# threads steal the cores the other stages need: an NTT of 2^12 measured 52 ms with the
# default and 1 ms with passive waits at a load of ~3 per core. It only takes effect before a
# process's first parallel kernel, so it is set here, the first cuzk module any process loads.
_os.environ.setdefault("OMP_WAIT_POLICY", "passive")

# numpy's OpenBLAS starts a spinning worker thread per core when numpy is imported; cuzk does
# no BLAS work. Measured in `cuzk prove` at 2^15: the numpy + numba imports cost 235 ms of CPU
# with them and 125 ms with one BLAS thread; daemon processes (synthesis, device) gain the
# same. Effective only before numpy's first import, hence here. An explicit setting wins.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
