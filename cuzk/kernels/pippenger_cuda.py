"""The CUDA bucket kernels of Pippenger's method for one group: built per (group, curve) (CUDA
target).

``get_target("cuda").load("cuzk.kernels.pippenger_cuda", group="g1")`` (or "g2"; BN254,
adding ``curve="bls12_381"`` for another curve: cuzk.arith.curves.build_params); the
kernels are plain functions (``T.kernel`` gives each its build's name, so Numba's disk cache
keeps the builds apart) that cuzk.kernels.msm_cuda registers, compiles and launches. See
msm_cuda's docstring for the launch order.
"""

from numba import cuda

from cuzk.arith.curves import DEFAULT, build_params
from cuzk.arith.jit import building

T = building()
GROUP = T.param("group")
CURVE = T.param("curve", DEFAULT)
G = T.load("cuzk.arith.group", group=GROUP, **build_params(CURVE))


@T.kernel
def bucket_accumulate(points, entries, starts, counts, buckets):
    """buckets[b] = sum of bucket b's points (Jacobian)."""
    b = cuda.grid(1)
    if b < buckets.shape[0]:
        acc = G.inf()
        s = starts[b]
        for j in range(counts[b]):
            e = entries[s + j]
            a = G.load_affine(points, e >> 1)
            if e & 1:
                a = G.neg_affine(a)
            acc = G.add_mixed(acc, a)
        G.store(buckets, b, acc)


@T.kernel
def bucket_reduce(buckets, H, seg_len, segs):
    """segs[w S + s] = sum over buckets m in segment s = [lo, lo + seg_len) of window w
    of (m + 1) B_m, as the sequence of additions
      1. running sums from the segment's top bucket down: R += B_m, A += R, giving
         R = sum B_m and A = sum (m - lo + 1) B_m;
      2. L = lo R by double-and-add over the bits of lo (doubling as L + L);
      3. A + L.
    All additions go through ONE call site of the (inlined, large) group addition:
    the step index picks the operands and the destination. This keeps the kernel's
    PTX about a fifth of what separate call sites give."""
    t = cuda.grid(1)
    S = H // seg_len
    if t < segs.shape[0]:
        w = t // S
        lo = (t - w * S) * seg_len
        top = 0  # bits in lo
        while (lo >> top) > 0:
            top += 1
        run = 2 * seg_len  # steps of phase 1
        steps = run + 2 * top + 1
        R = G.inf()
        A = G.inf()
        L = G.inf()
        for j in range(steps):
            if j < run:
                if j & 1 == 0:
                    x = R
                    y = G.load(buckets, w * H + lo + seg_len - 1 - (j >> 1))
                else:
                    x = A
                    y = R
            elif j < steps - 1:
                q = j - run
                if q & 1 == 0:
                    x = L
                    y = L
                elif (lo >> (top - 1 - (q >> 1))) & 1:
                    x = L
                    y = R
                else:
                    continue
            else:
                x = A
                y = L
            z = G.add(x, y)
            if j < run:
                if j & 1 == 0:
                    R = z
                else:
                    A = z
            elif j < steps - 1:
                L = z
            else:
                A = z
        G.store(segs, t, A)


@T.kernel
def window_sums(segs, S, wins):
    """wins[w] = sum of window w's S segment sums."""
    w = cuda.grid(1)
    if w < wins.shape[0]:
        acc = G.inf()
        for s in range(S):
            acc = G.add(acc, G.load(segs, w * S + s))
        G.store(wins, w, acc)
