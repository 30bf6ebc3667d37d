"""`cuzk warmup`'s work: one setup, proof and verification of a small circuit (a chain of
squarings, written here) on each curve cuzk proves (BN254, BLS12-381), which compiles or loads
every kernel those commands use, each curve's build."""

from __future__ import annotations

import sys
import time

import click

#: constraints of the warm-up circuit: enough points that every MSM takes the bucket method
#: (the binary method serves up to 27), small enough to prove in milliseconds once compiled
WARMUP_CONSTRAINTS = 1000


def write_square_chain(
    r1cs_path, wtns_path, n: int = WARMUP_CONSTRAINTS, x: int = 3, curve: str = "bn254"
) -> None:
    """A circuit of n constraints x_{i+1} = x_i * x_i (public output x_n, private input x_0)
    over `curve`'s scalar field (any name cuzk.formats.curve knows) as a circom .r1cs, and its
    witness for x_0 = x as a .wtns."""
    from cuzk.arith.radix import N8, int_to_bytes
    from cuzk.formats.atomic import atomic_writer
    from cuzk.formats.binfile import write_container
    from cuzk.formats.curve import by_name
    from cuzk.formats.wtns import write_wtns

    if n < 1:
        raise ValueError(f"the warm-up circuit needs at least one constraint, not {n}")
    r = by_name(curve).r  # 255 bits on both curves: N8 = 32 bytes
    # wires: 0 = one, 1 = x_n (public output), 2 = x_0 (private input), 3.. = x_1 .. x_{n-1}
    n_wires = n + 2

    def wire(i):  # the wire of x_i
        return 2 if i == 0 else (1 if i == n else i + 2)

    one = int_to_bytes(1)
    header = (
        N8.to_bytes(4, "little")
        + int_to_bytes(r)
        + b"".join(v.to_bytes(4, "little") for v in (n_wires, 1, 0, 1))
        + n_wires.to_bytes(8, "little")
        + n.to_bytes(4, "little")
    )

    def term(w):  # a linear combination of one term: 1 * wire w
        return (1).to_bytes(4, "little") + w.to_bytes(4, "little") + one

    rows = b"".join(term(wire(i)) + term(wire(i)) + term(wire(i + 1)) for i in range(n))
    labels = b"".join(k.to_bytes(8, "little") for k in range(n_wires))
    with atomic_writer(r1cs_path) as f:
        write_container(f, "r1cs", 1, [(1, [header]), (2, [rows]), (3, [labels])])
    xs = [x % r]
    for _ in range(n):
        xs.append(xs[-1] * xs[-1] % r)
    values = [0] * n_wires
    values[0] = 1
    for i, v in enumerate(xs):
        values[wire(i)] = v
    write_wtns(wtns_path, values, prime=r)


#: the curves warmed: every curve cuzk proves (the kernels are built per curve)
WARMUP_CURVES = ("bn254", "bls12_381")


def warm(
    device: str = "cpu",
    constraints: int = WARMUP_CONSTRAINTS,
    workdir=None,
    curves=WARMUP_CURVES,
    native: bool = True,
    say=None,
) -> float:
    """Compile (or load) every kernel of `cuzk setup`, `cuzk prove` and `cuzk verify` on each
    of `curves` by running them once on a square chain of `constraints` constraints over that
    curve in a temporary folder; the proof is checked as `cuzk prove` checks it. With
    `native`, then build each curve's native kernel library (cuzk.native.build; kept when
    already built), `say`ing its progress. Returns the seconds it took."""
    import tempfile
    from pathlib import Path

    from cuzk.groth16.files import run_prove
    from cuzk.groth16.setup import setup

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cuzk-warmup-", dir=workdir) as tmp:
        d = Path(tmp)
        for curve in curves:
            r1cs, wtns, zkey = (d / f"{curve}.{ext}" for ext in ("r1cs", "wtns", "zkey"))
            write_square_chain(r1cs, wtns, constraints, curve=curve)
            setup(r1cs, zkey)
            run_prove(zkey, wtns, d / "proof.json", d / "public.json", device=device, native=False)
            if native:
                from cuzk.native.build import build_library

                build_library(curve, log=say)
    return time.perf_counter() - t0


@click.command("warmup")
@click.option(
    "--device",
    default="cpu",
    show_default=True,
    metavar="cpu|cuda[:N]",
    help="The device whose kernels to compile as well (the CPU's always are).",
)
@click.option(
    "--constraints",
    default=None,
    type=click.IntRange(1, 1 << 20),
    help="Size of the warm-up circuit (default: 1000).",
)
@click.option(
    "--native/--no-native",
    default=True,
    show_default=True,
    help="Also build the native kernel library of each curve (cuzk.native: `cuzk prove` and "
    "`cuzk fullprove` then start without Numba; needs a C compiler).",
)
def warmup(device, constraints, native):
    """Compile the proving kernels now, for this CPU, Numba and Python, into the kernel cache.

    Numba compiles cuzk's kernels at their first use and keeps them on disk (NUMBA_CACHE_DIR
    when set); the first command after an install or upgrade otherwise pays for it, minutes on
    a small machine. This runs one setup, proof and verification of a small circuit on each
    curve cuzk proves (BN254, BLS12-381) in a temporary folder, with progress on stderr, then
    builds each curve's native kernel library (the same kernels compiled ahead of time into a
    shared library, so that the one-shot commands start without importing Numba), and ends
    with one line saying where the kernels are kept. Run it in an image build or after
    `pip install`; it is quick when the kernels are already there.
    """
    from cuzk import native as native_kernels
    from cuzk.compiling import cache_location, compile_notice
    from cuzk.groth16.fast_exit import exit_now_if_a_process_of_its_own
    from cuzk.groth16.files import ProveError
    from cuzk.native.build import BuildError

    def say(line):
        click.echo(f"cuzk warmup: {line}", err=True)

    try:
        with compile_notice("cuzk warmup") as watch:
            secs = warm(device, constraints or WARMUP_CONSTRAINTS, native=native, say=say)
    except (ProveError, ValueError, OSError, BuildError) as e:
        click.echo(f"cuzk warmup: {e}", err=True)
        sys.exit(1)
    n = watch.total_compiled
    done = f"{n} functions compiled" if n else "all loaded from the cache, none compiled"
    where = f"kept in {cache_location()}"
    if native:
        found = {str(native_kernels.library_path(c).parent) for c in WARMUP_CURVES}
        where += f"; native kernels in {', '.join(sorted(found))}"
    click.echo(f"cuzk warmup: kernels ready in {secs:.1f} s ({done}); {where}")
    exit_now_if_a_process_of_its_own()
