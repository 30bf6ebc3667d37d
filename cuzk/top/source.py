"""Where `top` gets its snapshots: a board in shared memory, attached by name, read-only; or
`GET /status` of a cuzk serve (a farm's gateway, a daemon on another machine) with --server.

Choosing the board: a name given is used as is; with none, the only live board is used, and
with several or none `top` lists what it found and exits non-zero (AttachError). Reading: each
read() is one consistent board snapshot as a plain dict (the `GET /status` JSON shape). When
the board goes away (the supervisor unlinked it at shutdown, or its creator died) read()
raises BoardGone so the caller can exit cleanly with a message.

Over HTTP (ServerSource, through the API client cuzk.client): the first read is the
check, so an unreachable server, a refused token or an answer that is not a status ends
`top` before it draws anything (AttachError, with the client commands' exit statuses); a
server lost later ends it like a board that went away, with a message and status 3.
"""

from __future__ import annotations

import os

# Exit codes of `cuzk top` (besides 0 = normal exit, including "board went away").
EXIT_NO_BOARD = 3  # no live board, or the named one does not exist
EXIT_AMBIGUOUS = 4  # several live boards and no --board
# --server, as `cuzk status` and the other client commands: 2 the server refused (4xx: a
# missing or wrong token), 3 it could not be reached, failed (5xx) or did not answer a status
EXIT_REFUSED, EXIT_UNREACHABLE = 2, 3


class AttachError(Exception):
    """Could not choose or attach a board; `code` is the exit status to use."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


class BoardGone(Exception):
    """The board this viewer was attached to no longer exists; `code` is the exit status
    (0: serve stopped, a normal end)."""

    code = 0


class ServerLost(BoardGone):
    """The server --server names stopped answering a status after the first one."""

    code = EXIT_UNREACHABLE


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
        from cuzk.compiling import read_warming

        warming = read_warming(self.name)  # kernels compiling: published beside the board
        if warming:
            snap["warming"] = warming
        return snap

    def close(self) -> None:
        close = getattr(self.board, "close", None)
        if close:
            close()


# Keys every status snapshot has (cuzk/board/snapshot.py to_dict): enough to tell a status
# from some other JSON a URL may answer.
STATUS_LISTS = ("gpu_workers", "pipelines")


def check_status(snap, where: str) -> dict:
    """`snap` if it has the shape of a status snapshot, else ValueError saying why not."""
    if not isinstance(snap, dict):
        raise ValueError(f"{where} answered {type(snap).__name__} JSON, not a cuzk status")
    missing = [k for k in STATUS_LISTS if not isinstance(snap.get(k), list)]
    if missing or not isinstance(snap.get("now"), (int, float)):
        raise ValueError(
            f"{where} answered JSON that is not a cuzk status (no {', '.join(missing) or 'now'})"
        )
    return snap


class ServerSource:
    """Reads snapshots from GET /status of a cuzk serve with the API client (and its token).

    open() reads the first one (AttachError when there is none to read); read() returns it,
    then a fresh one per call (ServerLost when the server stops answering a status)."""

    def __init__(self, server: str | None = None, token_file=None, *, client=None):
        from cuzk.client import Client, read_token  # stdlib only: cheap to import

        if client is None:
            token = None
            if token_file:
                try:
                    token = read_token(token_file)
                except OSError as e:
                    raise AttachError(
                        f"token file {token_file}: {e.strerror or e}", EXIT_REFUSED
                    ) from None
            client = Client(server, token, timeout=10.0)  # a live view: no long hangs
        self.client = client
        self.name = client.server
        self._first: dict | None = None

    def _get(self) -> dict:
        from cuzk.client import ApiError, ClientError

        where = f"{self.name}/status"
        try:
            return check_status(self.client.status(), where)
        except ApiError as e:
            code = EXIT_REFUSED if e.status < 500 else EXIT_UNREACHABLE
            if e.status == 401:
                reason = "the server requires a token (--token-file FILE or CUZK_TOKEN_FILE)"
                if self.client.token:
                    reason = "the server refused the token"
                raise AttachError(f"{where}: HTTP 401: {reason}", code) from None
            raise AttachError(f"{where}: {e}", code) from None
        except ClientError as e:
            raise AttachError(str(e), EXIT_UNREACHABLE) from None
        except ValueError as e:
            raise AttachError(str(e), EXIT_UNREACHABLE) from None

    def open(self) -> ServerSource:
        """Read the first snapshot now: AttachError (with its exit status) when there is none."""
        self._first = self._get()
        return self

    def read(self) -> dict:
        if self._first is not None:
            snap, self._first = self._first, None
            return snap
        try:
            return self._get()
        except AttachError as err:
            raise ServerLost(str(err)) from None
