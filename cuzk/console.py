"""The `cuzk` console script: `cuzk prove` (on a server or here) and `cuzk verify` without
click, the rest through cuzk.cli.

Importing click costs ~30 ms of CPU (measured: 48 ms for a bare interpreter, 78 ms with
click), a fifth of rapidsnark's whole command on a 2^12 circuit, which `cuzk prove --server`
is held against (issue 16). So a command line that is plainly a proof on a server
(cuzk.groth16.remote.fast_args: the four files, --server / CUZK_SERVER, --token-file,
--timings) runs cuzk.groth16.remote.run directly, and one that is plainly a local proof
(cuzk.groth16.local_cli.fast_args: the four files, --timings, --local, --[no-]verify) runs
cuzk.groth16.local_cli.run; every other one, including any usage error or --help, goes to the
click group (cuzk.cli.main), which handles both too, with the same result. Likewise
`cuzk verify` with three file arguments and nothing else
(cuzk.groth16.verify_cli.fast_args) runs cuzk.groth16.verify_cli.run directly.
"""

import os
import sys


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["prove"]:
        from cuzk.groth16 import local_cli, remote

        args = remote.fast_args(argv[1:], os.environ)
        run = remote.run
        if args is None:
            args = local_cli.fast_args(argv[1:], os.environ)
            run = local_cli.run
        if args is not None:
            try:
                code = run(**args)
            except KeyboardInterrupt:  # as click answers it: a new line, "Aborted!", exit 1
                print("\nAborted!", file=sys.stderr)
                code = 1
            if sys.stdout is not sys.__stdout__ or sys.stderr is not sys.__stderr__:
                return code  # called in process (a test): leave the interpreter alone
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)  # no teardown to wait for: the files are written and closed
    if argv[:1] == ["verify"]:
        from cuzk.groth16.verify_cli import fast_args, run

        files = fast_args(argv[1:])
        if files is not None:
            try:
                return run(*files)
            except KeyboardInterrupt:  # as click answers it
                print("\nAborted!", file=sys.stderr)
                return 1
    from cuzk.cli import main as cli

    return cli()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
