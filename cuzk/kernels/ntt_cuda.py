"""NTT over Fr on CUDA: the same butterflies as the CPU (cuzk.kernels.ntt), as kernels.

Public API (the CPU module's names; each takes device arrays, worked on in place, or numpy
arrays, copied in and back out; ``curve`` names the curve whose Fr they work in, "bn254" by
default or "bls12_381", as in cuzk.kernels.ntt_cpu):

    ntt(x, inverse=False, curve=)        forward NTT, or inverse NTT including the 1/n
    coset_shift(x, log2n, inverse=False, curve=)  x_i *= w_{2n}^i  (w_{2n}^{-i} with inverse)
    ntt_batch(xs, inverse=False, curve=) ntt() of up to three same-size vectors, batched
    compute_h(a, b, c, out=None, curve=) -> h   the Groth16 quotient evaluations, plain form
    DeviceTables / device_tables()       twiddle and coset tables resident per device, per
                                         (curve, domain size): ``.get(log_n, curve=)``

How the transforms run on the device:
  block phase   stages log_m < log_b (2^log_b <= 1024 elements, aligned blocks): one kernel,
                one CUDA block per element block, the block held in shared memory, one
                thread per butterfly, __syncthreads between stages. The H pipeline runs its
                iNTT's last block stages, the coset step and its NTT's first block stages in
                one such kernel (ntt_coset_block), so the middle costs one pass over memory.
  column phase  stages log_m >= log_b: one launch per stage, one thread per butterfly.
All kernels take up to three vectors (a, b, c; nvec of them used) so the three vectors of a
proof share each launch. Every kernel is in CUDA_KERNELS with its signature, compiled
at first launch and to PTX by tests/test_ptx.py.

One source, a build per curve (as cuzk.kernels.ntt_cpu): imported normally this module's
kernels use BN254's butterflies (cuzk.kernels.ntt's CUDA build); ``get_target("cuda").load(
"cuzk.kernels.ntt_cuda", curve="bls12_381")`` executes it again with BLS12-381's, every
kernel renamed for that build (``ntt_stage[bls12_381]``: its own disk-cache entries on a
GPU). The public functions are this module's and launch the kernels of the build their
``curve`` names (``kernels(curve)``).
"""

from __future__ import annotations

import threading

import numpy as np
from numba import cuda, types

from cuzk.arith.curves import DEFAULT, build_params, curve_build
from cuzk.arith.jit import KernelTable, building, cuda_simulated, get_target, require_cuda
from cuzk.kernels import ntt_cpu

_BUILD = building()  # the plain build when imported; the curve's when loaded for one
CURVE = _BUILD.param("curve", DEFAULT)
K = get_target("cuda").load("cuzk.kernels.ntt", **build_params(CURVE))
load, store = K.load, K.store
kernel_fn = _BUILD.kernel  # names each kernel for the build (no change for BN254)

BLOCK_LOG = 10  # largest block phase: 2^10 elements = 32 KiB of shared memory
_SHARED = (1 << BLOCK_LOG, 4)
THREADS = 256  # threads per block of the element-wise and per-stage kernels
SIMULATOR_THREADS = 16  # the simulator runs each thread as a Python thread


# --- kernels (plain Python functions; CUDA_KERNELS below compiles them) --------------------


@kernel_fn
def ntt_bit_reverse(x, log_n):
    """x[i] <-> x[rev(i)]."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        r = K.bit_reverse(i, log_n)
        if i < r:
            u = load(x, i)
            store(x, i, load(x, r))
            store(x, r, u)


@kernel_fn
def ntt_bit_reverse_scale(x, log_n, s):
    """x[i] <-> x[rev(i)], both times s[0] (the iNTT's 1/n)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        r = K.bit_reverse(i, log_n)
        st = load(s, 0)
        if i < r:
            u = load(x, i)
            store(x, i, K.fr_mul(load(x, r), st))
            store(x, r, K.fr_mul(u, st))
        elif i == r:
            store(x, i, K.fr_mul(load(x, i), st))


@kernel_fn
def ntt_stage(a, b, c, nvec, tw, log_m, log_n, inverse, dif):
    """One stage of half-size 2^log_m on nvec of a, b, c, decimation in frequency with dif,
    else in time: thread = butterfly (dif is the same for the whole grid: no divergence)."""
    k = cuda.grid(1)
    half = 1 << (log_n - 1)
    if k < nvec * half:
        v = k >> (log_n - 1)
        x = a
        if v == 1:
            x = b
        elif v == 2:
            x = c
        i, i2, e, flip = K.stage_indices(k & (half - 1), log_m, log_n, inverse)
        s, d = K.butterfly(
            load(x, i), load(x, i2), load(tw, e), e != 0, flip, log_m == log_n - 1, dif
        )
        store(x, i, s)
        store(x, i2, d)


@K.device_fn
def _block_vector(a, b, c, log_n, log_b):
    """(vector, first element) of this CUDA block in a block-phase kernel."""
    nblocks = 1 << (log_n - log_b)
    v = cuda.blockIdx.x // nblocks
    x = a
    if v == 1:
        x = b
    elif v == 2:
        x = c
    return x, (cuda.blockIdx.x % nblocks) << log_b


@K.device_fn
def _shared_stages(xs, tw, t, log_b, log_n, inverse, dif):
    """Stages of half-size 2^0 .. 2^(log_b-1) on a block in shared memory xs (thread t does
    butterfly t of each): DIT in that order, with dif DIF in the reverse order."""
    for k in range(log_b):
        log_m = log_b - 1 - k if dif else k
        i, i2, e, flip = K.stage_indices(t, log_m, log_n, inverse)
        s, d = K.butterfly(
            load(xs, i), load(xs, i2), load(tw, e), e != 0, flip, log_m == log_n - 1, dif
        )
        store(xs, i, s)
        store(xs, i2, d)
        cuda.syncthreads()


@K.device_fn
def _block_in(xs, x, base, t, hb):
    """Thread t copies its two elements of the block at base into shared memory xs; then all
    wait for the whole block."""
    store(xs, t, load(x, base + t))
    store(xs, t + hb, load(x, base + t + hb))
    cuda.syncthreads()


@K.device_fn
def _block_out(xs, x, base, t, hb):
    """Thread t writes its two elements back from shared memory."""
    store(x, base + t, load(xs, t))
    store(x, base + t + hb, load(xs, t + hb))


@kernel_fn
def ntt_dit_block(a, b, c, nvec, tw, log_b, log_n, inverse):
    """DIT stages 0 .. log_b-1 on blocks of 2^log_b elements in shared memory; grid =
    nvec * n / 2^log_b blocks of 2^(log_b-1) threads."""
    xs = cuda.shared.array(_SHARED, dtype=np.uint64)
    x, base = _block_vector(a, b, c, log_n, log_b)
    t = cuda.threadIdx.x
    hb = 1 << (log_b - 1)
    _block_in(xs, x, base, t, hb)
    _shared_stages(xs, tw, t, log_b, log_n, inverse, False)
    _block_out(xs, x, base, t, hb)


@kernel_fn
def ntt_coset_block(a, b, c, nvec, tw, g_rev, log_b, log_n):
    """The H pipeline's middle on one block in shared memory: iNTT (DIF) stages
    log_b-1 .. 0, times g_rev (the coset step, bit-reversed order), NTT (DIT) stages
    0 .. log_b-1."""
    xs = cuda.shared.array(_SHARED, dtype=np.uint64)
    x, base = _block_vector(a, b, c, log_n, log_b)
    t = cuda.threadIdx.x
    hb = 1 << (log_b - 1)
    _block_in(xs, x, base, t, hb)
    _shared_stages(xs, tw, t, log_b, log_n, True, True)
    store(xs, t, K.mul_lazy(load(g_rev, base + t), load(xs, t)))
    store(xs, t + hb, K.mul_lazy(load(g_rev, base + t + hb), load(xs, t + hb)))
    cuda.syncthreads()
    _shared_stages(xs, tw, t, log_b, log_n, False, False)
    _block_out(xs, x, base, t, hb)


@kernel_fn
def ntt_coset_shift(x, g_rev, log_n, inverse):
    """x[i] *= g^{+-i}, g = w_{2n}, natural order."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        p, negate = K.coset_factor_index(i, log_n, inverse)
        y = K.fr_mul(load(x, i), load(g_rev, p))
        if negate:
            y = K.fr_neg(y)
        store(x, i, y)


@kernel_fn
def ntt_quotient(h, a, b, c, consts):
    """h_i = a_i b_i - c_i, plain form, for unscaled coset evaluations a, b, c;
    consts = [n (Montgomery), n^{-2} (plain)]."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        store(
            h, i, K.quotient(load(a, i), load(b, i), load(c, i), load(consts, 0), load(consts, 1))
        )


_V = types.Array(types.uint64, 2, "C")  # an (n, 4) vector of elements, or a table
_I = types.int64
_B = types.boolean
_STAGE = (_V, _V, _V, _I, _V, _I, _I, _B)
# name -> (python function, argument types); tests/test_ptx.py compiles each for sm_90.
CUDA_KERNELS = KernelTable(
    {
        "ntt_bit_reverse": (ntt_bit_reverse, (_V, _I)),
        "ntt_bit_reverse_scale": (ntt_bit_reverse_scale, (_V, _I, _V)),
        "ntt_stage": (ntt_stage, (*_STAGE, _B)),
        "ntt_dit_block": (ntt_dit_block, _STAGE),
        "ntt_coset_block": (ntt_coset_block, (_V, _V, _V, _I, _V, _V, _I, _I)),
        "ntt_coset_shift": (ntt_coset_shift, (_V, _V, _I, _B)),
        "ntt_quotient": (ntt_quotient, (_V, _V, _V, _V, _V)),
    }
)
# Kernels that multiply field elements: their PTX must hold the 64-bit high product.
CUDA_KERNELS.expect = {name: ["mul.hi.u64"] for name in CUDA_KERNELS if name != "ntt_bit_reverse"}
kernel = CUDA_KERNELS.kernel  # compiled at first launch; cached on disk on a GPU


def kernels(curve: str = DEFAULT):
    """The build of this module whose kernels work in ``curve``'s Fr (this module for BN254)."""
    return curve_build("cuzk.kernels.ntt_cuda", curve, "cuda")


# --- resident tables ------------------------------------------------------------------------


class DeviceTables:
    """The NTT tables of each curve and domain size, resident on one device: twiddles tw
    (n/2 x 32 bytes), the coset table g_rev (n x 32 bytes) and the scalars the kernels take.
    Built from the CPU's cached tables, copied once; ``nbytes`` for a memory budget,
    ``clear()`` to evict."""

    def __init__(self, device_id: int):
        self.device_id = device_id
        self._by_log_n: dict[tuple[str, int], dict] = {}
        self._lock = threading.Lock()

    def get(self, log_n: int, curve: str = DEFAULT) -> dict:
        """The tables of the domain 2^log_n of ``curve``'s Fr (copied on first use)."""
        key = (curve, log_n)
        t = self._by_log_n.get(key)
        if t is None:
            with self._lock:
                t = self._by_log_n.get(key)
                if t is None:
                    t = self._by_log_n[key] = self._build(log_n, curve)
        return t

    def _build(self, log_n: int, curve: str) -> dict:
        host = ntt_cpu.tables(log_n, curve)
        arrays = {
            "tw": host.tw if len(host.tw) else np.zeros((1, 4), dtype=np.uint64),
            "g_rev": host.g_rev,
            "inv_n": host.inv_n.reshape(1, 4),
            "quotient": np.stack([host.n_mont, host.inv_n2_plain]),
        }
        if cuda_simulated():
            return {k: cuda.to_device(v) for k, v in arrays.items()}
        with cuda.gpus[self.device_id]:  # this device's memory, whichever is current
            return {k: cuda.to_device(v) for k, v in arrays.items()}

    @property
    def nbytes(self) -> int:
        """Device bytes held by the tables."""
        return sum(int(arr.nbytes) for t in list(self._by_log_n.values()) for arr in t.values())

    def clear(self) -> None:
        with self._lock:
            self._by_log_n.clear()


_devices: dict[int, DeviceTables] = {}
_devices_lock = threading.Lock()


def _current_device_id() -> int:
    try:
        return int(cuda.get_current_device().id)
    except AttributeError:  # the simulator's device has no id: there is one device
        return 0


def device_tables(device_id: int | None = None) -> DeviceTables:
    """The DeviceTables of a device (default: the current one)."""
    require_cuda()
    if device_id is None:
        device_id = _current_device_id()
    with _devices_lock:
        if device_id not in _devices:
            _devices[device_id] = DeviceTables(device_id)
        return _devices[device_id]


# --- launches -------------------------------------------------------------------------------


def _launch(name: str, count: int, stream, curve: str = DEFAULT):
    """Kernel ``name`` of ``curve``'s build configured with one thread per item of ``count``."""
    threads = SIMULATOR_THREADS if cuda_simulated() else THREADS
    return kernels(curve).CUDA_KERNELS.configure(name, max(1, count), stream, threads)


def _block_log(log_n: int, block_log: int | None) -> int:
    return min(log_n, BLOCK_LOG if block_log is None else block_log)


def _dit(vs, tables, log_n, inverse, block_log=None, stream=0, curve=DEFAULT):
    """All DIT stages on the device vectors vs (1..3 of them)."""
    a, b, c = (list(vs) + [vs[0]] * 3)[:3]
    nvec = len(vs)
    log_b = _block_log(log_n, block_log)
    tw = tables["tw"]
    kernels(curve).kernel("ntt_dit_block")[nvec << (log_n - log_b), 1 << (log_b - 1), stream](
        a, b, c, nvec, tw, log_b, log_n, inverse
    )
    stage = _launch("ntt_stage", nvec << (log_n - 1), stream, curve)
    for log_m in range(log_b, log_n):
        stage(a, b, c, nvec, tw, log_m, log_n, inverse, False)


def _device(x, curve=DEFAULT):
    """(device array, is_host): numpy arrays are copied to the device."""
    if isinstance(x, np.ndarray):
        ntt_cpu.domain_log2(x, curve)
        return cuda.to_device(x), True
    return x, False


def _log_n(x) -> int:
    n = x.shape[0]
    if len(x.shape) != 2 or x.shape[1] != 4 or n < 1 or n & (n - 1):
        raise ValueError(
            f"expected an (n, 4) uint64 vector with n a power of two, got {tuple(x.shape)}"
        )
    return n.bit_length() - 1


def ntt(x, inverse: bool = False, block_log: int | None = None, stream=0, curve: str = DEFAULT):
    """In-place NTT (inverse=True: inverse NTT, 1/n included) of x, natural order in and out,
    in ``curve``'s Fr. x: device array (kept there) or numpy array (copied to the device and
    back). Returns x."""
    return ntt_batch([x], inverse, block_log, stream, curve)[0]


def ntt_batch(
    xs, inverse: bool = False, block_log: int | None = None, stream=0, curve: str = DEFAULT
):
    """ntt() of up to three same-size vectors, each launch covering all of them."""
    require_cuda()
    xs = list(xs)
    if not 1 <= len(xs) <= 3:
        raise ValueError("ntt_batch takes one to three vectors")
    log_n = _log_n(xs[0])
    if any(_log_n(x) != log_n for x in xs):
        raise ValueError("ntt_batch vectors differ in size")
    if log_n == 0:
        return xs
    tables = device_tables().get(log_n, curve)
    moved = [_device(x, curve) for x in xs]
    ds = [d for d, _ in moved]
    for d in ds:
        if inverse:
            _launch("ntt_bit_reverse_scale", d.shape[0], stream, curve)(d, log_n, tables["inv_n"])
        else:
            _launch("ntt_bit_reverse", d.shape[0], stream, curve)(d, log_n)
    _dit(ds, tables, log_n, inverse, block_log, stream, curve)
    for x, (d, host) in zip(xs, moved, strict=True):
        if host:
            d.copy_to_host(x, stream=stream)
    if stream:
        stream.synchronize()
    return xs


def coset_shift(x, log2n: int, inverse: bool = False, stream=0, curve: str = DEFAULT):
    """In place x_i *= w_{2n}^i (inverse: w_{2n}^{-i}), i < n = 2^log2n, in ``curve``'s Fr.
    Returns x."""
    require_cuda()
    log_n = _log_n(x)
    if log_n != log2n:
        raise ValueError(f"vector of length 2^{log_n} given with log2n={log2n}")
    tables = device_tables().get(log_n, curve)
    d, host = _device(x, curve)
    _launch("ntt_coset_shift", d.shape[0], stream, curve)(d, tables["g_rev"], log_n, inverse)
    if host:
        d.copy_to_host(x, stream=stream)
    return x


def compute_h(a, b, c, out=None, block_log: int | None = None, stream=0, curve: str = DEFAULT):
    """h_i = A(g w^i) B(g w^i) - C(g w^i), g = w_{2n}, from evaluations a, b, c (Montgomery),
    as plain-form (n, 4) uint64 (see cuzk.kernels.ntt_cpu.compute_h), in ``curve``'s Fr.
    Device inputs: a, b, c are overwritten and h is a device array (``out``, default a's
    storage). Numpy inputs are copied in; h is copied back into ``out`` (default a) and
    returned."""
    require_cuda()
    log_n = _log_n(a)
    if _log_n(b) != log_n or _log_n(c) != log_n:
        raise ValueError("a, b, c differ in size")
    tables = device_tables().get(log_n, curve)
    (da, host), (db, _), (dc, _) = _device(a, curve), _device(b, curve), _device(c, curve)
    if host:
        dh = da
    else:
        dh = da if out is None else out
    if log_n:
        log_b = _block_log(log_n, block_log)
        tw = tables["tw"]
        stage = _launch("ntt_stage", 3 << (log_n - 1), stream, curve)
        for log_m in range(log_n - 1, log_b - 1, -1):
            stage(da, db, dc, 3, tw, log_m, log_n, True, True)
        kernels(curve).kernel("ntt_coset_block")[3 << (log_n - log_b), 1 << (log_b - 1), stream](
            da, db, dc, 3, tw, tables["g_rev"], log_b, log_n
        )
        for log_m in range(log_b, log_n):
            stage(da, db, dc, 3, tw, log_m, log_n, False, False)
    _launch("ntt_quotient", 1 << log_n, stream, curve)(dh, da, db, dc, tables["quotient"])
    if host:
        target = a if out is None else out
        dh.copy_to_host(target, stream=stream)
        if stream:
            stream.synchronize()
        return target
    return dh
