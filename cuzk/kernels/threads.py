"""The CPU kernels' thread settings, for whichever runs them: the native library's run-time
(cuzk.native, where a one-shot command loaded it) or Numba's threading layer.

Both keep the settings per calling thread, as Numba does: ``set_num_threads(1)`` around a small
transform runs the kernels this thread calls on it alone; ``set_parallel_chunksize(k)`` cuts a
parallel loop into tasks of about k iterations handed out one at a time (0: one per thread).
"""

from __future__ import annotations


def _threads():
    """The native run-time where this process uses the library, else numba (the same three
    functions on both)."""
    from cuzk import native

    rt = native.runtime()
    if rt is not None:
        return rt
    import numba

    return numba


def get_num_threads() -> int:
    return int(_threads().get_num_threads())


def set_num_threads(n: int) -> None:
    _threads().set_num_threads(int(n))


def set_parallel_chunksize(n: int) -> int:
    """Set the chunk size; returns the previous one."""
    return int(_threads().set_parallel_chunksize(int(n)))
