"""A table of multiples for a resident PLONK key's commitments (cuzk.kernels.msm_cpu.
build_table): every commitment is a G1 MSM over the key's powers of tau, [p(tau)]_1 =
sum_i p_i [tau^i]_1, with at most n + 6 coefficients (T3's; n the domain), so one table of
the first n + 6 powers serves all nine (a shorter polynomial's scalars are padded with
zeros, which the MSM skips).

The option is Groth16's too (cuzk.kernels.table_setting: the prover option ``msm_tables``,
the copies and the cap the engine sets beside it; off in a process never configured, as in a
one-shot command), so one setting serves both systems, planned the same way: from the key's header
alone, so the engine's process (which charges the bytes to the memory budget,
ProvingKey.table_bytes) and the device process (which builds the table when it loads the
key, cuzk.plonk.stages.Device) agree without talking. Proofs are randomised by their
blinding, but a commitment with the table equals the one without, point for point.
"""

from __future__ import annotations

from cuzk.kernels import table_setting as shared

# The most coefficients a commitment takes beyond the domain: T3's n + 6.
EXTRA = 6


def points(zkey) -> int:
    """The powers of tau the table covers: n + 6, or every one the key has if fewer."""
    return min(len(zkey.ptau), zkey.domain_size + EXTRA)


def planned_bytes(key, factor_: int | None = None) -> int:
    """Bytes of the table build() makes for ``key`` (a cuzk.plonk.key.ProvingKey) in one
    device process, at ``factor_`` groups (default: plan_factor's)."""
    f = plan_factor(key) if factor_ is None else factor_
    if f < 2:
        return 0
    from cuzk.kernels import msm_cpu

    return msm_cpu.table_nbytes(points(key.zkey), 1, f, key.arith_curve, shared.plan_threads())


def plan_factor(key) -> int:
    """The groups the key's table gets: msm_tables, lowered until every copy fits the cap
    (a key too large for a table at any factor gets none and proves as without one; so does
    one whose table would save too little at the factor that fits: msm_cpu.TABLE_MIN_GAIN)."""
    f, cap = shared.factor(), shared.cap()
    while f >= 2 and cap is not None and shared.copies() * planned_bytes(key, f) > cap:
        f -= 1
    return f if f >= 2 and planned_bytes(key, f) > 0 else 0


def charged_bytes(key) -> int:
    """What the key's table costs the engine: every copy its CPU devices may build."""
    return shared.copies() * planned_bytes(key)


def build(key, stop=None):
    """The cuzk.kernels.msm_cpu.MsmTable of the key's first points() powers of tau, or None
    (off, or a plan of no table: fewer than msm_cpu.PARTITION_MIN powers; or ``stop``, asked
    while building, said True: a build beside the proofs, cuzk.kernels.table_builds)."""
    f = plan_factor(key)
    if f < 2:
        return None
    from cuzk.kernels import msm_cpu

    z = key.zkey
    return msm_cpu.build_table(
        z.ptau[: points(z)],
        f,
        g=1,
        curve=key.arith_curve,
        threads=shared.plan_threads(),
        stop=stop,
    )
