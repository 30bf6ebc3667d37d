"""A network namespace with only loopback, for tests and benchmarks that start Ray.

Ray binds and dials the machine's interface address unless it sees none; a test must never
send traffic anywhere but loopback. `loopback_only()` moves the calling thread (and every
process or thread it starts from then on) into a new network namespace whose only interface
is `lo`, brought up with iproute2's `ip`, and moves it back on exit (setns to the saved
namespace). The same as `unshare -n` then `ip link set lo up`, without leaving the process:
pytest fixtures and the bench keep running in the one interpreter.

Needs CAP_SYS_ADMIN (root, as CI runs) and `ip`; `available()` says why not otherwise.
Namespaces belong to threads: call both ends from the same thread (pytest's main thread).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import socket
import subprocess

CLONE_NEWNET = 0x40000000


def available() -> str | None:
    """None when loopback_only() can work here, else the reason it cannot."""
    if not hasattr(os, "getuid") or os.getuid() != 0:
        return "needs root (a new network namespace takes CAP_SYS_ADMIN)"
    if shutil.which("ip") is None:
        return "needs iproute2's `ip` (make system-deps installs it)"
    if not os.path.exists("/proc/thread-self/ns/net"):
        return "no /proc/thread-self/ns/net (not Linux?)"
    return None


def interfaces() -> list[str]:
    """The network interfaces the calling thread sees (asked of the kernel, not of /sys,
    which shows the namespace that mounted it)."""
    return sorted(name for _, name in socket.if_nameindex())


@contextlib.contextmanager
def loopback_only():
    """Run the body in a fresh network namespace that has only `lo` (up, 127.0.0.1)."""
    why = available()
    if why is not None:
        raise RuntimeError(f"cannot isolate the network: {why}")
    libc = ctypes.CDLL(None, use_errno=True)
    saved = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if libc.unshare(CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"unshare(CLONE_NEWNET): {os.strerror(err)}")
        try:
            subprocess.run(["ip", "link", "set", "lo", "up"], check=True, capture_output=True)
            yield
        finally:
            if libc.setns(saved, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"setns back to the original network: {os.strerror(err)}")
    finally:
        os.close(saved)
