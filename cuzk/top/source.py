"""Where `top` gets its snapshots: a board in shared memory, attached by name, read-only.

Choosing the board: a name given is used as is; with none, the only live board is used, and
with several or none `top` lists what it found and exits non-zero (AttachError). Reading: each
read() is one consistent board snapshot as a plain dict (the `GET /status` JSON shape). When
the board goes away (the supervisor unlinked it at shutdown, or its creator died) read()
raises BoardGone so the caller can exit cleanly with a message.
"""

from __future__ import annotations

import os

# Exit codes of `cuzk top` (besides 0 = normal exit, including "board went away").
EXIT_NO_BOARD = 3  # no live board, or the named one does not exist
EXIT_AMBIGUOUS = 4  # several live boards and no --board


class AttachError(Exception):
    """Could not choose or attach a board; `code` is the exit status to use."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


class BoardGone(Exception):
    """The board this viewer was attached to no longer exists."""


def _board_api():
    from cuzk import board  # imported lazily: `cuzk top --help` needs no shared memory

    return board


def choose(name: str | None) -> str:
    """The board name to attach: `name`, or the only live board."""
    if name:
        return name
    live = [_board_name(b) for b in _board_api().list_boards()]
    if len(live) == 1:
        return live[0]
    if not live:
        raise AttachError(
            "no live cuzk status board found (is `cuzk serve` running on this "
            "machine?); pass --board NAME to name one",
            EXIT_NO_BOARD,
        )
    listing = "\n".join(f"  {n}" for n in sorted(live))
    raise AttachError(
        f"{len(live)} live cuzk status boards; choose one with --board NAME:\n{listing}",
        EXIT_AMBIGUOUS,
    )


def _board_name(entry) -> str:
    # list_boards() may give names or small records describing each board.
    if isinstance(entry, str):
        return entry
    for attr in ("name", "board"):
        if hasattr(entry, attr):
            return getattr(entry, attr)
        if isinstance(entry, dict) and attr in entry:
            return entry[attr]
    return str(entry)


class BoardSource:
    """Reads snapshots from an attached board; never writes, never blocks writers."""

    def __init__(self, name: str):
        api = _board_api()
        self.name = name
        try:
            self.board = api.Board.attach(name)
        except FileNotFoundError:
            raise AttachError(
                f"no cuzk status board named {name!r} (see `ls /dev/shm`; "
                "is `cuzk serve` running?)",
                EXIT_NO_BOARD,
            ) from None
        except api.BoardError as err:  # not a board, or a layout this code cannot read
            raise AttachError(f"cannot read {name!r}: {err}", EXIT_NO_BOARD) from None
        self._supervisor_pid = None

    def alive(self) -> bool:
        """The segment still has a name and its creator still runs."""
        if not os.path.exists(os.path.join("/dev/shm", self.name.lstrip("/"))):
            return False
        pid = self._supervisor_pid
        if pid:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                pass  # alive, owned by another user
        return True

    def read(self) -> dict:
        if not self.alive():
            raise BoardGone(f"cuzk status board {self.name!r} went away (cuzk serve stopped)")
        snap = self.board.snapshot().to_dict()
        self._supervisor_pid = snap.get("supervisor_pid") or None
        return snap

    def close(self) -> None:
        close = getattr(self.board, "close", None)
        if close:
            close()
