"""The `cuzk` command line: a thin click group whose subcommands load lazily.

Each subsystem owns its command in its own module; this file only maps command names to
"module:attribute" so that `cuzk prove` does not pay for importing the HTTP server, and
`cuzk top` does not pay for compiling kernels. Add a subcommand by adding one line to
COMMANDS.
"""

import importlib

import click

from cuzk import __version__

# name -> "module:attribute" of a click.Command. Keep sorted by name.
COMMANDS: dict[str, str] = {
    "cancel": "cuzk.serve.cli:cancel",
    "cluster": "cuzk.cluster.join:cluster",
    "config": "cuzk.serve.cli:config",
    "export-vk": "cuzk.formats.cli:export_vk",
    "fullprove": "cuzk.groth16.cli:fullprove",
    "jobs": "cuzk.serve.cli:jobs",
    "prove": "cuzk.groth16.cli:prove",
    "ptau": "cuzk.groth16.cli:ptau",
    "serve": "cuzk.serve.cli:serve",
    "setup": "cuzk.groth16.cli:setup",
    "status": "cuzk.serve.cli:status",
    "submit": "cuzk.serve.cli:submit",
    "top": "cuzk.top.cli:top",
    "verify": "cuzk.groth16.verify_cli:verify",
    "warmup": "cuzk.groth16.warmup:warmup",
    "wtns": "cuzk.witness.cli:wtns",
}


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when that command runs."""

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx, name):
        if name in COMMANDS:
            module_name, attr = COMMANDS[name].split(":")
            return getattr(importlib.import_module(module_name), attr)
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cuzk")
def main():
    """cuzk: Groth16 proofs for circom/snarkjs circuits (BN254, BLS12-381) on GPUs and CPUs.

    Run `cuzk serve` on a prover machine, watch it with `cuzk top`, prove one file with
    `cuzk prove`. `cuzk COMMAND --help` describes each command.
    """


if __name__ == "__main__":  # pragma: no cover
    main()
