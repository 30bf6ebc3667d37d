"""What every engine child process does first: tie its life to the supervisor, load the prover.

A child must not outlive its supervisor, even one killed by SIGKILL (no cleanup code runs
then). Two guards, either sufficient on Linux:
- the command pipe: the child's main thread blocks on it, and when the supervisor dies its end
  closes, recv() raises EOFError and the child exits (Dask nanny's "parent alive" pipe);
- PR_SET_PDEATHSIG: the kernel sends SIGKILL when the thread that spawned us dies. Set after
  exec, so we re-check the parent pid afterwards (it may have died in between).
Children ignore SIGINT and SIGTERM: a terminal's Ctrl-C and systemd's SIGTERM reach the whole
process group, but only the supervisor decides how to drain; it stops children by message,
or by SIGKILL when they do not answer.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
import os
import signal
import sys
import threading

from cuzk.engine.board_writes import ChildStatus
from cuzk.engine.messages import Ping, Pong, Ready, Stop, Warming, pack, unpack

PR_SET_PDEATHSIG = 1


def tie_to_parent(parent_pid: int) -> None:
    from cuzk.pages import large_blocks_to_the_system

    large_blocks_to_the_system()  # what a proof frees goes back (cuzk.pages)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the pipe guard alone
        pass
    if os.getppid() != parent_pid:
        os._exit(70)  # the supervisor died before PDEATHSIG was armed


def key_is_current(key, key_id: str = "") -> bool:
    """Whether a key a process holds is still its file's content (the prover's optional
    check_unchanged(): a mapped key copied over in place reads another key, or faults past
    the new end; issue 38) and, given `key_id`, the key registered so. Open it again when
    not."""
    if key_id and key.key_id != key_id:
        return False
    check = getattr(key, "check_unchanged", None)
    if check is None:
        return True
    try:
        check()
    except Exception:
        return False
    return True


def check_key_id(key, expected: str, path: str) -> None:
    """Raise Changed when the key file opened is not the key registered as `expected`."""
    if expected and key.key_id != expected:
        from cuzk.formats.errors import Changed

        raise Changed(
            path,
            f"now holds key {key.key_id}, not key {expected} as when it was registered "
            "(rewritten or replaced since): register it again",
        )


def load_prover(name: str, options: dict):
    """Import the prover module (cuzk.engine.contract.Prover) and give it its options."""
    prover = importlib.import_module(name)
    prover.configure(options or {})
    return prover


def select_kernels(prover, device: str | None = None) -> str:
    """The prover's kernel choice for this process (optional ``select_kernels(device)``:
    cuzk.engine.contract), made once before the process reports Ready; what it names them
    ("native", "numba", ...) goes to the supervisor with Ready (GET /status "kernels")."""
    select = getattr(prover, "select_kernels", None)
    return str(select(device)) if select is not None else ""


class Channel:
    """The child's end of its pipe: sends from any thread (serialised), receives in main."""

    def __init__(self, conn):
        self.conn = conn
        self._lock = threading.Lock()

    def send(self, msg) -> None:
        with self._lock:
            try:
                self.conn.send_bytes(pack(msg))
            except (OSError, EOFError, BrokenPipeError):
                os._exit(71)  # supervisor gone

    def recv(self):
        try:
            return unpack(self.conn.recv_bytes())
        except (OSError, EOFError):
            os._exit(0)  # supervisor gone: nothing of ours is worth finishing


class ChildProcess:
    """What a synthesis and a device process share: logging, the channel, the prover, the
    board, and the main thread's command loop. A subclass handles its own commands."""

    def __init__(self, conn, opts: dict, device: str | None = None):
        setup_logging(opts.get("log_level", 30))
        self.opts = opts
        self.chan = Channel(conn)
        self.prover = load_prover(opts["prover"], opts.get("prover_options"))
        self.kernels = select_kernels(self.prover, device)
        self.status = ChildStatus.attach(opts.get("board_name"), pid=os.getpid())

    def run(self) -> None:
        """Start the process's threads and the board heartbeat, report Ready, then serve."""
        for target, name in [*self.threads(), (self.status.heartbeat_loop, "heartbeat")]:
            threading.Thread(target=target, name=name, daemon=True).start()
        self.chan.send(Ready(os.getpid(), self.kernels))
        threading.Thread(target=self._watch_compiles, name="compile-watch", daemon=True).start()
        self.serve()

    def _watch_compiles(self) -> None:
        """A prover whose kernels compile on a cold cache says so: in the log, and to the
        supervisor for GET /healthz (cuzk.compiling). After Ready, on a thread: installing
        the watch imports numba (~0.3 s), which the process then has done before its first
        job instead of delaying its start."""
        watch = getattr(self.prover, "watch_compiles", None)
        if watch is not None:
            watch(logging.getLogger("cuzk.kernels").warning, lambda s: self.chan.send(Warming(s)))

    def threads(self) -> list[tuple]:
        """(target, thread name) for each thread of the process."""
        raise NotImplementedError

    def serve(self) -> None:
        """The main thread, for good: answer pings, exit on Stop, hand the rest to handle()."""
        while True:
            match msg := self.chan.recv():
                case Ping(sent_at):
                    self.chan.send(Pong(sent_at))
                case Stop():
                    os._exit(0)
                case _:
                    self.handle(msg)

    def handle(self, msg) -> None:
        raise NotImplementedError


def setup_logging(level: int) -> None:
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(process)d %(name)s %(levelname)s %(message)s",
    )
