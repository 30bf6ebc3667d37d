"""Tables of multiples for a resident key's MSMs (cuzk.kernels.msm_cpu.build_table): the
prover option ``msm_tables`` (the engine's setting of that name), what they cost a key, and
their build when a CPU device loads the key. The option, the copies and the cap
(cuzk.kernels.table_setting) are read by PLONK's tables too (cuzk.plonk.tables: a PLONK
key's powers of tau), so one setting serves both systems.

Each point set of the key (A, B1, C, H in G1; B2 in G2) gets at most ``msm_tables`` groups of
multiples, planned from its size alone (msm_cpu.table_plan), so the engine's process (which
charges a key's bytes to the memory budget) and the device process (which builds them) agree
on the bytes without talking. Off in a process that was not configured (a one-shot command):
tables are the daemon's. They are built and used by the MSM drivers' kernels wherever those
run: the native library's (cuzk.native, which holds the table kernels: a device process on
it never loads Numba) or Numba's builds.
"""

from __future__ import annotations

import time

# The setting (msm_tables, its copies and cap) is one for both proof systems; its functions
# are this module's too.
from cuzk.kernels.table_setting import (  # noqa: F401
    cap,
    configure,
    copies,
    factor,
    plan_threads,
)

#: set name -> (the ZKey attribute, its group)
TABLE_SETS = {
    "a": ("points_a", 1),
    "b1": ("points_b1", 1),
    "c": ("points_c", 1),
    "h": ("points_h", 1),
    "b2": ("points_b2", 2),
}


def plan_factor(key) -> int:
    """The groups per point set ``key``'s tables get: the msm_tables option, lowered until the
    tables of every copy fit the cap (a key too large for tables at any factor gets none, and
    proves as without the option: the tables never make a key refused; so does a key whose
    sets are all too large for a table to pay: msm_cpu.TABLE_MIN_GAIN)."""
    f, cap_ = factor(), cap()
    while f >= 2 and cap_ is not None and copies() * planned_bytes(key, f) > cap_:
        f -= 1
    return f if f >= 2 and planned_bytes(key, f) > 0 else 0


def charged_bytes(key) -> int:
    """What ``key``'s tables cost the engine: every copy its CPU devices may build."""
    return copies() * planned_bytes(key)


def planned_bytes(key, factor_: int | None = None) -> int:
    """Bytes of the tables build() makes for ``key`` (a cuzk.groth16.key.ProvingKey) in one
    device process, at ``factor_`` groups (default: plan_factor's)."""
    f = plan_factor(key) if factor_ is None else factor_
    if f < 2:
        return 0
    from cuzk.kernels import msm_cpu

    counts = set_sizes(key)
    return sum(
        msm_cpu.table_nbytes(counts[name], g, f, key.arith_curve, plan_threads())
        for name, (_attr, g) in TABLE_SETS.items()
    )


def set_sizes(key) -> dict:
    """Points in each set, from the key's header (reading no section: the engine's process
    reads a key's sections only to validate it): A, B1, B2 one a variable, C one a private
    variable, H one a domain point."""
    n, private = int(key.n_vars), int(key.n_vars) - int(key.n_public) - 1
    return {"a": n, "b1": n, "b2": n, "c": private, "h": int(key.domain_size)}


def each_table(key, factor_: int | None = None, stop=None):
    """(set name, cuzk.kernels.msm_cpu.MsmTable) for every point set of ``key`` that gets a
    table (sets below msm_cpu.PARTITION_MIN points get none), one after the other; none when
    off. ``stop``: asked while building (msm_cpu.build_table); once it says True, no more."""
    f = plan_factor(key) if factor_ is None else factor_
    if f < 2:
        return
    from cuzk.kernels import msm_cpu

    for name, (attr, g) in TABLE_SETS.items():
        t = msm_cpu.build_table(
            getattr(key.zkey, attr),
            f,
            g=g,
            curve=key.arith_curve,
            threads=plan_threads(),
            stop=stop,
        )
        if stop is not None and stop():
            return
        if t is not None:
            yield name, t


def build(key, factor_: int | None = None) -> dict:
    """{set name: MsmTable} for every point set of ``key`` that gets a table; {} when off."""
    return dict(each_table(key, factor_))


def load(key, builds=None):
    """Build ``key``'s tables into ``key.tables`` (once: kept while the key is; the seconds
    it took in ``key.tables_secs``). ``builds`` (a cuzk.kernels.table_builds.Builds): where
    the process can, build them there, beside the proofs, each set's table put in place when
    it is done, and return that build; else None."""
    if key.tables or plan_factor(key) < 2:
        return None
    from cuzk.kernels import table_builds

    if builds is not None and table_builds.beside(key.arith_curve):

        def make(stop, put):
            for item in each_table(key, stop=stop):
                put(item)

        def install(item):
            name, table = item
            key.tables = {**key.tables, name: table}  # (an MSM under way keeps its dict)

        return builds.start(key.key_id, f"key {key.key_id}", make, install)
    t0 = time.perf_counter()
    key.tables = build(key)
    key.tables_secs = time.perf_counter() - t0
    return None


def drop(key, builds=None) -> None:
    """Forget ``key``'s tables (the memory returns once no MSM holds them), its build beside
    the proofs stopped first (and waited for) where ``builds`` has one."""
    if builds is not None:
        builds.stop(key.key_id)
    key.tables = {}
    key.tables_secs = 0.0


def points_for(key, name: str, points):
    """What an MSM over point set ``name`` of ``key`` takes: its table where it has one,
    else ``points``."""
    tables = getattr(key, "tables", None)
    return (tables or {}).get(name, points)
