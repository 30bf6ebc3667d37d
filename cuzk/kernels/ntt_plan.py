"""The NTT's plan on the CPU (cuzk.kernels.ntt_cpu), without numpy: which domains run on one
thread and how the transforms block, shared by the numpy driver and the one-shot command's
driver on plain buffers (cuzk.groth16.lean).
"""

SERIAL_LOG = 11  # domains up to this size run on the calling thread only

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
