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
import pickle
import signal
import sys
import threading
import traceback

PR_SET_PDEATHSIG = 1


def tie_to_parent(parent_pid: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the pipe guard alone
        pass
    if os.getppid() != parent_pid:
        os._exit(70)  # the supervisor died before PDEATHSIG was armed


def load_prover(name: str, options: dict):
    prover = importlib.import_module(name)
    if options and hasattr(prover, "configure"):
        prover.configure(options)
    return prover


def pack(msg) -> bytes:
    """Messages are small tuples of plain data: the standard pickle is enough (and several
    times faster than the dill pickler that multiprocess connections use by default)."""
    return pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)


unpack = pickle.loads


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


def describe_exception(exc: BaseException) -> dict:
    """A failure as plain data: type, message and the formatted traceback (kept as the
    supervisor-side exception's cause, as concurrent.futures does)."""
    return {
        "type": type(exc).__name__,
        "message": str(exc) or type(exc).__name__,
        "traceback": "".join(traceback.format_exception(exc)),
        "input_error": isinstance(exc, ValueError),
    }


def setup_logging(level: int) -> None:
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(process)d %(name)s %(levelname)s %(message)s")
