"""The CPU kernels' thread settings, for whichever runs them: the native library's run-time
(cuzk.native, where a one-shot command loaded it) or Numba's threading layer.

Both keep the settings per calling thread, as Numba does: ``set_num_threads(1)`` around a small
transform runs the kernels this thread calls on it alone; ``set_parallel_chunksize(k)`` cuts a
parallel loop into tasks of about k iterations handed out one at a time (0: one per thread).
"""

from __future__ import annotations


def _runtime():
    from cuzk import native

    return native.runtime()


def get_num_threads() -> int:
    rt = _runtime()
    if rt is not None:
        return rt.get_num_threads()
    import numba

    return numba.get_num_threads()


def set_num_threads(n: int) -> None:
    rt = _runtime()
    if rt is not None:
        rt.set_num_threads(int(n))
        return
    import numba

    numba.set_num_threads(n)


def set_parallel_chunksize(n: int) -> int:
    """Set the chunk size; returns the previous one."""
    rt = _runtime()
    if rt is not None:
        return int(rt.set_parallel_chunksize(int(n)))
    import numba

    return numba.set_parallel_chunksize(n)
