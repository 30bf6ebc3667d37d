"""The setting of the tables of multiples that resident keys' MSMs may use
(cuzk.kernels.msm_cpu.build_table), one for every proof system: the prover option
``msm_tables`` (the most groups of multiples per point set; 0, no tables), and the copies and
the cap the engine sets beside it (``msm_table_copies``: the copies of a key's tables its
devices may hold, one per CPU device process; ``msm_table_cap``: the most bytes all of them may
take for one key). Set by configure() in every process of an engine; a process never
configured (a one-shot command) builds none: tables are the daemon's.

What each system tabulates, and the bytes it plans, are its own: cuzk.groth16.tables (a
Groth16 key's point sets), cuzk.plonk.tables (a PLONK key's powers of tau).
"""

from __future__ import annotations

import os

_factor = 0
_copies = 1
_cap = None
# Threads a plan assumes (None: the device process's kernels run on all cores).
_threads = None


def configure(options: dict) -> None:
    """Take ``msm_tables`` from the prover's options (absent: 0, no tables), and the copies
    and the cap the engine sets beside it (``msm_table_copies``, ``msm_table_cap``)."""
    global _factor, _copies, _cap
    v = options.get("msm_tables", 0)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"msm_tables: expected a whole number >= 0, got {v!r}")
    copies = options.get("msm_table_copies", 1)
    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
        raise ValueError(f"msm_table_copies: expected a whole number >= 1, got {copies!r}")
    cap = options.get("msm_table_cap")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
        raise ValueError(f"msm_table_cap: expected a number of bytes >= 0, got {cap!r}")
    _factor, _copies, _cap = v, copies, cap


def factor() -> int:
    """The most groups per point set (msm_tables; 0: no tables)."""
    return _factor


def copies() -> int:
    """Copies of a key's tables the engine's devices may hold (msm_table_copies)."""
    return _copies


def cap() -> int | None:
    """The most bytes one key's tables may take, every copy together (msm_table_cap)."""
    return _cap


def plan_threads() -> int:
    """The threads a plan assumes (the device process's kernels run on all cores)."""
    return _threads or os.cpu_count() or 1
