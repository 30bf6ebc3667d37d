"""`cuzk top`: the click command (parse options, then call cuzk.top.runner.run)."""

from __future__ import annotations

import click


@click.command(
    context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "CUZK_TOP"}
)
@click.option(
    "--board",
    "board",
    metavar="NAME",
    default=None,
    help="Status board (shared-memory name) to watch; default: the only live one.",
)
@click.option(
    "--server",
    metavar="URL",
    envvar=["CUZK_TOP_SERVER", "CUZK_SERVER"],
    default=None,
    help="Read GET URL/status of a cuzk serve (a farm's gateway, another machine) instead "
    "of the board. [env CUZK_SERVER]",
)
@click.option(
    "--token-file",
    metavar="FILE",
    envvar=["CUZK_TOP_TOKEN_FILE", "CUZK_TOKEN_FILE"],
    default=None,
    help="With --server: file holding the API's bearer token. [env CUZK_TOKEN_FILE]",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1, clamp=True),
    default=1.0,
    show_default=True,
    help="Seconds between samples (values below 0.1 become 0.1).",
)
@click.option(
    "-n",
    "--iterations",
    type=click.IntRange(min=1),
    default=None,
    help="Exit after this many samples (default: run until q).",
)
@click.option(
    "--once",
    is_flag=True,
    help="Print one plain-text frame and exit (waits one interval so utilisation "
    "and rates have a value).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the snapshot JSON (the same body as GET /status) and exit; "
    "with -n, one JSON line per sample.",
)
@click.option("--no-color", is_flag=True, help="No colours (bold and reverse video remain).")
@click.option(
    "--width",
    type=click.IntRange(min=20),
    default=None,
    help="Frame width for --once or a pipe [default: the terminal's, else 80].",
)
@click.option(
    "--height",
    type=click.IntRange(min=5),
    default=None,
    help="Frame height for --once or a pipe [default: the terminal's, else 24].",
)
@click.pass_context
def top(ctx, **options):
    """Live view of a cuzk prover: device workers, finalizers, synthesis, pipelines, keys.

    Reads the status board in shared memory directly (no HTTP, no locks on writers), or with
    --server the GET /status of a cuzk serve (a farm's gateway adds its nodes).
    Keys: q quit, p pause, s cycle sort, ? help, arrows / PgUp / PgDn scroll the pipelines.
    """
    from cuzk.top.runner import run

    if options["board"] and options["server"]:
        # the one given on the command line wins; a --board beats a server named only in the
        # environment (CUZK_SERVER may be set for the client commands)
        given = {
            k: ctx.get_parameter_source(k) is click.core.ParameterSource.COMMANDLINE
            for k in ("board", "server")
        }
        if given["board"] and given["server"]:
            raise click.UsageError("--board and --server exclude each other")
        options["board" if given["server"] else "server"] = None

    raise SystemExit(run(**options))
