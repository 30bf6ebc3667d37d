"""The NTT's plan on the CPU (cuzk.kernels.ntt_cpu), without numpy: which domains run on one
thread and how the transforms block, shared by the numpy driver and the one-shot command's
driver on plain buffers (cuzk.groth16.lean).
"""

import contextlib

SERIAL_LOG = 11  # domains up to this size run on the calling thread only


@contextlib.contextmanager
def schedule(log_n: int, threads):
    """The threads the kernels called inside use (settings per calling thread, through
    ``threads``: cuzk.kernels.threads, or the native run-time itself):
    - prange hands out tasks one at a time: with coarse tasks and a shared machine, a static
      split waits for the slowest core;
    - domains up to 2^SERIAL_LOG run on this thread alone: a parallel region costs tens of
      microseconds (far more when cores are shared), the whole transform a few hundred."""
    old_chunk = threads.set_parallel_chunksize(1)
    old_threads = threads.get_num_threads()
    if log_n <= SERIAL_LOG:
        threads.set_num_threads(1)
    try:
        yield
    finally:
        threads.set_num_threads(old_threads)
        threads.set_parallel_chunksize(old_chunk)


def power_chunks(count: int, threads: int) -> list[int]:
    """The first index of each chunk of a powers table of ``count`` entries, and count last:
    eight chunks a thread (each chunk's first power is taken in Python ints, ~15 us)."""
    nchunks = min(count, 8 * threads)
    return [i * count // nchunks for i in range(nchunks + 1)]


# Block phase on at least 2^BLOCK_LOG elements (64 KiB: an L2's share, not an L1's), column
# tasks of 2^GROUP_LOG columns (512 bytes a row). Measured on compute_h (2-core Xeon, CPU time,
# medians of 4-5, A/B in one process): 2^17 187 -> 177 ms, 2^19 1010 -> 894 ms, 2^16 85.6 ->
# 83.7 ms against blocks of 2^ceil(k/2) and 8 columns; 2^15 unchanged (it fits the L2 either
# way). Fewer column stages: those stride over the vector, the block stages run on
# contiguous memory.
BLOCK_LOG = 11
GROUP_LOG = 4


def blocking(log_n: int, block_log: int = BLOCK_LOG, group_log: int = GROUP_LOG):
    """(log_b, log_g): block phase on 2^log_b elements, column tasks of 2^log_g columns."""
    log_b = max(1, (log_n + 1) // 2, min(log_n, block_log))
    return log_b, min(log_b, group_log)
