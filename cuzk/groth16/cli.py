"""`cuzk prove`: one proof from a .zkey and a .wtns, in rapidsnark's argument order."""

from __future__ import annotations

import sys

import click

from cuzk.groth16.fast_exit import exit_now_if_a_process_of_its_own
from cuzk.groth16.files import ProveError, run_fullprove
from cuzk.witness.files import SYM_HELP

# Where `cuzk prove` and `cuzk fullprove` run their kernels.
DEVICE_OPTION = click.option(
    "--device",
    default="cpu",
    show_default=True,
    metavar="cpu|cuda[:N]",
    help="Where the NTT and G1 MSM kernels run.",
)


@click.command("prove")
@click.option(
    "--r1cs",
    type=click.Path(exists=True, dir_okay=False),
    help="The circuit's .r1cs: check every constraint before proving.",
)
@click.option(
    "--verify/--no-verify",
    default=True,
    show_default=True,
    help="Verify the proof against the key's verification key before writing it "
    "(the pairing takes a few ms; loading it adds ~0.1-0.2 s of CPU to the "
    "command, see docs/prover.md). --no-verify skips the check; the key's "
    "points are validated either way.",
)
@DEVICE_OPTION
@click.option("--timings", is_flag=True, help="Print per-phase timings to stderr.")
@click.option(
    "--server",
    metavar="URL",
    envvar="CUZK_SERVER",
    default=None,
    help="Prove on the `cuzk serve` at URL (warm: no kernel loading here); ZKEY "
    "must lie under its key roots. [env CUZK_SERVER]",
)
@click.option("--local", is_flag=True, help="Prove in this process even when CUZK_SERVER is set.")
@click.option(
    "--token-file",
    metavar="FILE",
    envvar="CUZK_TOKEN_FILE",
    help="With a server: file holding its API's bearer token. [env CUZK_TOKEN_FILE]",
)
@click.argument("zkey", type=click.Path(dir_okay=False))
@click.argument("wtns", type=click.Path(dir_okay=False))
@click.argument("proof_json", type=click.Path(dir_okay=False, writable=True))
@click.argument("public_json", type=click.Path(dir_okay=False, writable=True))
def prove(
    zkey, wtns, proof_json, public_json, r1cs, verify, device, timings, server, local, token_file
):
    """Prove ZKEY with witness WTNS; write PROOF_JSON and PUBLIC_JSON (snarkjs shapes).

    ZKEY is a Groth16 or a PLONK key (snarkjs's; its header says which), proved on the
    --device given, as a Groth16 key is (here or on a server).

    Outputs are written atomically, both or neither, and only for a good proof: a bad key
    (its points are validated when it is opened) or witness, an unsatisfied constraint
    (--r1cs), a proof that fails verification (on unless --no-verify) or outputs that cannot
    be written (one file for both, a missing folder) exit 1 with the reason. A device or
    pipe (/dev/stdout) is written in place.

    Where it proves: --local, else --server URL, else $CUZK_SERVER, else here. On a server
    (`cuzk serve`, docs/prover.md) the same files, messages and exit statuses; the daemon
    verifies (its --self-verify) and --r1cs / --device are refused (exit 2).
    """
    if server:  # the thin client: before anything imports numpy (cuzk/groth16/remote.py)
        from cuzk.groth16 import remote

        if remote.use_server(local):
            remote.prove_on_server(
                zkey,
                wtns,
                proof_json,
                public_json,
                server=server,
                token_file=token_file,
                r1cs=r1cs,
                device=device,
                timings=timings,
            )
            return
    from cuzk.groth16 import local_cli

    code = local_cli.run(
        zkey,
        wtns,
        proof_json,
        public_json,
        r1cs=r1cs,
        verify=verify,
        device=device,
        timings=timings,
    )
    if code:
        sys.exit(code)
    exit_now_if_a_process_of_its_own()


PROTOCOLS = ("groth16", "plonk")  # snarkjs's names: `snarkjs groth16 setup`, `plonk setup`


@click.command("setup")
@click.option(
    "--protocol",
    type=click.Choice(PROTOCOLS),
    default="groth16",
    show_default=True,
    help="groth16: R1CS ZKEY, a single-party Groth16 key (insecure, below). plonk: R1CS "
    "PTAU ZKEY, the PLONK key `snarkjs plonk setup R1CS PTAU ZKEY` writes from a powers-of-"
    "tau file (.ptau, prepared or not), byte for byte.",
)
@click.argument("files", nargs=-1, metavar="R1CS [PTAU] ZKEY")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
def setup(files, protocol, quiet):
    """Make a proving key ZKEY (snarkjs format) for the circuit R1CS, on the curve the R1CS is
    over: BN254 (bn128) or BLS12-381 (bls12381).

    --protocol groth16 (the default), R1CS ZKEY: a development-only single-party Groth16
    setup. INSECURE FOR PRODUCTION: this process draws the toxic waste alone. Use it for tests
    and benchmark keys; use a snarkjs ceremony (powers of tau + phase 2) for real keys.

    --protocol plonk, R1CS PTAU ZKEY: the PLONK key of the circuit on the powers of tau PTAU
    (a ceremony of the R1CS's curve holding 2^k points for the circuit's 2^k PLONK gates,
    which count its public signals and additions). Nothing is drawn: the key equals
    snarkjs's byte for byte, and is as sound as the ceremony.

    A file that cannot be used, or an output that names an input, exits 1 with one line.
    """
    from cuzk.formats.atomic import OutputError, check_apart

    count = 3 if protocol == "plonk" else 2
    if len(files) != count:
        form = "R1CS PTAU ZKEY" if protocol == "plonk" else "R1CS ZKEY"
        hint = " (a powers of tau file is --protocol plonk's)" if len(files) == 3 else ""
        raise click.UsageError(
            f"--protocol {protocol} takes {form}, {count} files; got {len(files)}{hint}"
        )
    *inputs, zkey = files
    for path in inputs:
        click.Path(exists=True, dir_okay=False).convert(path, None, click.get_current_context())
    try:  # before the warning: a refusal is one line
        check_apart((zkey,), inputs)
    except OutputError as e:
        click.echo(f"cuzk setup: {e}", err=True)
        sys.exit(1)
    if protocol == "plonk":
        _setup_plonk(*inputs, zkey, quiet)
        return
    (r1cs,) = inputs
    from cuzk.formats.errors import FormatError
    from cuzk.groth16.setup import setup as run_setup

    click.secho(
        "WARNING: `cuzk setup` is a single-party setup and is INSECURE for production "
        "use: whoever knows its randomness can forge proofs.",
        fg="yellow",
        err=True,
    )
    bar = {"last": -1.0}

    def progress(done, total):
        if quiet:
            return
        pct = 100.0 * done / total
        if pct - bar["last"] >= 5 or done == total:
            bar["last"] = pct
            click.echo(f"  points: {done}/{total} ({pct:.0f}%)", err=True)

    def log(msg):
        if not quiet:
            click.echo(f"cuzk setup: {msg}", err=True)

    from cuzk.compiling import compile_notice

    try:
        with compile_notice("cuzk setup"):
            run_setup(r1cs, zkey, progress=progress, log=log)
    except (FormatError, ValueError, OSError) as e:
        click.echo(f"cuzk setup: {e}", err=True)
        sys.exit(1)


def _setup_plonk(r1cs, ptau, zkey, quiet):
    """`cuzk setup --protocol plonk`: cuzk.plonk.setup, its refusals as one line, exit 1."""
    from cuzk.compiling import compile_notice
    from cuzk.formats.errors import FormatError
    from cuzk.plonk.setup import setup as run_setup

    def log(msg):
        if not quiet:
            click.echo(f"cuzk setup: {msg}", err=True)

    try:
        with compile_notice("cuzk setup"):
            run_setup(r1cs, ptau, zkey, log=log)
    except (FormatError, ValueError, OSError) as e:
        click.echo(f"cuzk setup: {e}", err=True)
        sys.exit(1)


@click.group("ptau")
def ptau():
    """Powers-of-tau files (snarkjs's .ptau). `cuzk ptau new` makes one for tests and
    benchmarks: INSECURE, its maker knows tau."""


@ptau.command("new")
@click.argument("power", type=int)
@click.argument("out", metavar="OUT.ptau", type=click.Path(dir_okay=False, writable=True))
@click.option(
    "--curve",
    default="bn128",
    show_default=True,
    help="bn128 (BN254) or bls12381 (BLS12-381), as snarkjs names them.",
)
@click.option(
    "--seed",
    metavar="TEXT",
    default=None,
    help="Derive tau, alpha and beta from TEXT (the same seed, the same file) instead of "
    "the OS's random source: for reproducible test files.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
def ptau_new(power, out, curve, seed, quiet):
    """Write OUT.ptau: a powers-of-tau file of 2^POWER, prepared for phase 2 (the layout
    `snarkjs powersoftau new`, `contribute` and `prepare phase2` write), for `cuzk setup
    --protocol plonk` and `snarkjs plonk setup` / `groth16 setup` of circuits up to 2^POWER.

    FOR TESTS AND BENCHMARKS ONLY, NEVER FOR REAL KEYS: this process draws tau itself, so
    whoever runs it (or knows --seed) can forge proofs against every key made from the file.
    It records no contribution, so `snarkjs powersoftau verify` refuses it ("This file has
    no contribution! It cannot be used in production"). Minutes where
    snarkjs takes hours: every point is a fixed-base multiple of a generator.

    POWER runs from 1 to 27 on BN254 (31 on BLS12-381). Bad input exits 1 with one line.
    """
    from cuzk.compiling import compile_notice
    from cuzk.groth16.powers_of_tau import check_request, new_ptau

    try:  # before the warning: a refusal is one line
        check_request(power, out, curve)
    except (ValueError, OSError) as e:
        click.echo(f"cuzk ptau new: {e}", err=True)
        sys.exit(1)
    click.secho(
        "WARNING: `cuzk ptau new` knows its tau: the file is for tests and benchmarks only, "
        "INSECURE for real keys.",
        fg="yellow",
        err=True,
    )

    def log(msg):
        if not quiet:
            click.echo(f"cuzk ptau new: {msg}", err=True)

    try:
        with compile_notice("cuzk ptau new"):
            new_ptau(power, out, curve=curve, seed=seed, log=log)
    except (ValueError, OSError) as e:
        click.echo(f"cuzk ptau new: {e}", err=True)
        sys.exit(1)


@click.command("fullprove")
@click.option(
    "--verify/--no-verify",
    default=True,
    show_default=True,
    help="Verify the proof before writing it, as `cuzk prove` does.",
)
@DEVICE_OPTION
@click.option("--sym", type=click.Path(dir_okay=False), help=SYM_HELP)
@click.argument("input_json", type=click.Path(dir_okay=False))
@click.argument("circuit_wasm", type=click.Path(dir_okay=False))
@click.argument("zkey", type=click.Path(dir_okay=False))
@click.argument("proof_json", type=click.Path(dir_okay=False, writable=True))
@click.argument("public_json", type=click.Path(dir_okay=False, writable=True))
def fullprove(input_json, circuit_wasm, zkey, proof_json, public_json, verify, device, sym):
    """Witness of INPUT_JSON for CIRCUIT_WASM, then a proof with ZKEY (snarkjs's fullprove).

    Writes PROOF_JSON and PUBLIC_JSON as `snarkjs groth16 fullprove` does, both or neither.
    A wasm and key of different circuits (wire count, prime), bad inputs, a proof that fails
    verification (on unless --no-verify) or outputs that cannot be written (one file for
    both, a missing folder) exit 1 with the reason, and nothing is written.
    """
    from cuzk.compiling import compile_notice
    from cuzk.formats.errors import FormatError

    try:
        with compile_notice("cuzk fullprove") as watch:
            run_fullprove(
                input_json, circuit_wasm, zkey, proof_json, public_json, verify, device, sym
            )
    except (ProveError, FormatError, OSError, ValueError) as e:
        click.echo(f"cuzk fullprove: {e}", err=True)
        sys.exit(1)
    from cuzk.groth16.local_cli import native_hint

    native_hint("cuzk fullprove", watch)
    exit_now_if_a_process_of_its_own()
