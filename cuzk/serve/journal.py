"""The job journal of `cuzk serve`: every accepted job and every finished result, in SQLite.

A state directory holds:

  lock              flock()ed by the daemon that owns the directory (a second one is refused)
  journal.sqlite3   one row per job: what was asked (key, witnesses or circuit inputs, kind,
                    priority, the original id and submission time) and, once finished, the
                    result JSON; circuit inputs (small JSON) are held in the row itself
  spool/            uploaded witnesses, <job_id>.<partition>.wtns, until their job finishes

Durability (docs/operations.md): `accept()` writes the spool files, fsyncs them and the spool
directory, then commits the job's row with `PRAGMA synchronous=FULL` (in WAL mode: the WAL is
fsynced at that commit) before it returns, and the API answers 201 only after that. Finished
results are committed with `synchronous=NORMAL`: they survive a crash of the process at once,
and a power loss once the WAL is next fsynced (the next accept, or a checkpoint); a result lost
to a power cut only means its job is proved again under the same id.

A journal that cannot be read (not a database, damaged pages, a foreign database, a schema
newer than this program's) raises JournalError with one line; it is never dropped or
rewritten, because it may hold accepted jobs.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import sqlite3
import stat
import threading
import time
from dataclasses import dataclass

log = logging.getLogger("cuzk.serve")

SCHEMA_VERSION = 1  # PRAGMA user_version
APPLICATION_ID = 0x637A6B6A  # PRAGMA application_id: "czkj"
DB_NAME = "journal.sqlite3"
LOCK_NAME = "lock"
SPOOL = "spool"
FINISHED = ("done", "failed", "cancelled")

SCHEMA = """
CREATE TABLE jobs (
    job_id       TEXT PRIMARY KEY,
    key_id       TEXT NOT NULL,
    key_path     TEXT NOT NULL,
    kind         TEXT NOT NULL,
    priority     TEXT NOT NULL,
    submitted_at REAL NOT NULL,
    inputs       TEXT NOT NULL,            -- JSON: [{"spool": name} | {"path": path}
                                           --   | {"json": circuit inputs, "wasm": path}, ...]
    state        TEXT NOT NULL,            -- accepted | done | failed | cancelled
    recovered    INTEGER NOT NULL DEFAULT 0,  -- times re-queued after a restart
    finished_at  REAL,
    result       TEXT                      -- JSON of the finished job with its proofs
);
CREATE INDEX jobs_by_finish ON jobs (state, finished_at);
"""


class JournalError(Exception):
    """The journal cannot be used (or a write failed); str() is the one-line reason."""


@dataclass(frozen=True)
class Entry:
    """One unfinished job as the journal recorded it."""

    job_id: str
    key_id: str
    key_path: str
    kind: str
    priority: str
    submitted_at: float
    inputs: list  # {"spool": name} | {"path": path} | {"json": text, "wasm": path}
    recovered: int

    @property
    def wasm(self) -> str | None:
        """The circuit's wasm of a job with circuit inputs (None: a job of witnesses)."""
        return self.inputs[0].get("wasm") if self.inputs else None


def default_state_dir(env=None) -> str:
    """$XDG_STATE_HOME/cuzk, else ~/.local/state/cuzk (the XDG base directory rule)."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or ""
    if not os.path.isabs(base):  # the spec says: relative values are ignored
        home = env.get("HOME") or os.path.expanduser("~")
        base = os.path.join(home, ".local", "state")
    return os.path.join(base, "cuzk")


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """The open journal of one state directory (thread-safe; one writer lock)."""

    def __init__(self, state_dir: str, keep_results: float, db: sqlite3.Connection, lock_fd: int):
        self.state_dir = state_dir
        self.keep_results = float(keep_results)
        self.path = os.path.join(state_dir, DB_NAME)
        self.spool = os.path.join(state_dir, SPOOL)
        self._db = db
        self._lock_fd = lock_fd
        self._mutex = threading.Lock()
        self._sync = ""

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, state_dir: str, keep_results: float = 86400.0) -> Journal:
        """Lock `state_dir` (created 0700 with the parents it lacks, whatever the umask; one
        open to group or others is warned about), open or create its journal (files 0600),
        check it, remove spool files no unfinished job needs. JournalError on any problem."""
        state_dir = os.path.abspath(os.path.expanduser(state_dir))
        try:
            _warn_if_open(state_dir)
            _private_dirs(os.path.join(state_dir, SPOOL))
        except OSError as e:
            raise JournalError(f"state directory {state_dir}: {e.strerror or e}") from None
        lock_fd = _lock(state_dir)
        try:
            try:
                _private_files(state_dir)
            except OSError as e:
                raise JournalError(f"state directory {state_dir}: {e.strerror or e}") from None
            db = _connect(os.path.join(state_dir, DB_NAME))
            j = cls(state_dir, keep_results, db, lock_fd)
            j._sweep_spool()
        except BaseException:
            os.close(lock_fd)  # releases the flock
            raise
        return j

    def close(self) -> None:
        with self._mutex:
            if self._db is not None:
                try:
                    self._db.close()
                finally:
                    self._db = None
                    os.close(self._lock_fd)

    # ------------------------------------------------------------------ writes
    def _tx(self, sync: str):
        """The connection, with PRAGMA synchronous set for the next transaction (under
        self._mutex)."""
        if self._db is None:
            raise JournalError("the journal is closed")
        if self._sync != sync:
            self._db.execute(f"PRAGMA synchronous={sync}")
            self._sync = sync
        return self._db

    def accept(
        self,
        job_id: str,
        key_id: str,
        key_path: str,
        kind: str,
        priority: str,
        submitted_at: float,
        inputs: list,
        wasm: str | None = None,
    ) -> list:
        """Record an accepted job durably. `inputs`: per partition the witness bytes (written
        to the spool) or a path (recorded as is); with `wasm`, circuit inputs (JSON bytes,
        recorded in the row with the wasm's path). Returns the inputs for the engine: spool
        paths for the uploads, the paths and circuit inputs unchanged. Raises JournalError if it
        could not be recorded (then nothing of it is left behind)."""
        recorded, out, written = [], [], []
        try:
            for i, w in enumerate(inputs):
                if wasm is not None:
                    recorded.append({"json": bytes(w).decode(), "wasm": os.fspath(wasm)})
                    out.append(w)
                elif isinstance(w, (bytes, bytearray, memoryview)):
                    name = f"{job_id}.{i}.wtns"
                    path = os.path.join(self.spool, name)
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    written.append(path)
                    try:
                        os.fchmod(fd, 0o600)  # whatever the umask
                        view = memoryview(w)
                        while view:
                            view = view[os.write(fd, view) :]
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                    recorded.append({"spool": name})
                    out.append(path)
                else:
                    p = os.fspath(w)
                    recorded.append({"path": p})
                    out.append(p)
            if written:
                _fsync_dir(self.spool)  # the names, not only the bytes, survive a power cut
            with self._mutex:
                db = self._tx("FULL")
                with db:
                    db.execute(
                        "INSERT INTO jobs (job_id, key_id, key_path, kind, priority, "
                        "submitted_at, inputs, state) VALUES (?,?,?,?,?,?,?,'accepted')",
                        (
                            job_id,
                            key_id,
                            key_path,
                            kind,
                            priority,
                            submitted_at,
                            json.dumps(recorded),
                        ),
                    )
        except BaseException as e:
            for path in written:
                _unlink(path)
            if isinstance(e, JournalError):
                raise
            if not isinstance(e, (OSError, sqlite3.Error)):
                raise
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise JournalError(f"cannot record the job in the journal: {reason}") from None
        return out

    def discard(self, job_id: str) -> None:
        """Forget a job recorded by accept() that was refused after all (engine stopping)."""
        with self._mutex:
            db = self._tx("FULL")
            with db:
                row = db.execute("SELECT inputs FROM jobs WHERE job_id=?", (job_id,)).fetchone()
                db.execute("DELETE FROM jobs WHERE job_id=?", (job_id,))
        if row:
            self._unlink_spool(json.loads(row[0]))

    def finish(self, job_id: str, state: str, finished_at: float, result: dict) -> None:
        """Record a job's outcome and result (proofs included), then drop its spool files."""
        if state not in FINISHED:
            raise ValueError(f"not a finished state: {state!r}")
        with self._mutex:
            db = self._tx("NORMAL")
            with db:
                row = db.execute("SELECT inputs FROM jobs WHERE job_id=?", (job_id,)).fetchone()
                db.execute(
                    "UPDATE jobs SET state=?, finished_at=?, result=? WHERE job_id=?",
                    (state, finished_at, json.dumps(result, separators=(",", ":")), job_id),
                )
        if row:
            self._unlink_spool(json.loads(row[0]))

    def mark_recovered(self, job_id: str) -> None:
        with self._mutex:
            db = self._tx("NORMAL")
            with db:
                db.execute("UPDATE jobs SET recovered = recovered + 1 WHERE job_id=?", (job_id,))

    def prune(self, now: float | None = None) -> int:
        """Delete finished jobs older than keep_results; returns how many."""
        cutoff = (time.time() if now is None else now) - self.keep_results
        with self._mutex:
            db = self._tx("NORMAL")
            with db:
                n = db.execute(
                    "DELETE FROM jobs WHERE state != 'accepted' AND finished_at < ?", (cutoff,)
                ).rowcount
        if n:
            log.info(
                "journal: %d finished job(s) older than %s pruned", n, _human(self.keep_results)
            )
        return n

    # ------------------------------------------------------------------ reads
    def unfinished(self) -> list[Entry]:
        """Accepted jobs without an outcome, in submission order."""
        with self._mutex:
            rows = self._db.execute(
                "SELECT job_id, key_id, key_path, kind, priority, submitted_at, inputs, "
                "recovered FROM jobs WHERE state='accepted' ORDER BY submitted_at, rowid"
            ).fetchall()
        return [Entry(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), r[7]) for r in rows]

    def result(self, job_id: str) -> dict | None:
        """A finished job's result as it was recorded (None: unknown, unfinished or pruned)."""
        with self._mutex:
            row = self._db.execute(
                "SELECT result FROM jobs WHERE job_id=? AND state != 'accepted'", (job_id,)
            ).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def spool_path(self, name: str) -> str:
        return os.path.join(self.spool, name)

    def counts(self) -> dict:
        with self._mutex:
            rows = self._db.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall()
        return dict(rows)

    def disk_bytes(self) -> int:
        total = 0
        for d in (self.state_dir, self.spool):
            with os.scandir(d) as it:
                total += sum(e.stat().st_size for e in it if e.is_file(follow_symlinks=False))
        return total

    # ------------------------------------------------------------------ internals
    def _unlink_spool(self, inputs: list) -> None:
        for x in inputs:
            if "spool" in x:
                _unlink(os.path.join(self.spool, x["spool"]))

    def _sweep_spool(self) -> None:
        """Spool files of jobs that are finished or were never recorded (a crash between the
        spool write and the commit) are removed."""
        keep = set()
        for e in self.unfinished():
            keep.update(x["spool"] for x in e.inputs if "spool" in x)
        for name in os.listdir(self.spool):
            if name not in keep:
                _unlink(os.path.join(self.spool, name))


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _human(secs: float) -> str:
    for unit, n in (("d", 86400), ("h", 3600), ("min", 60)):
        if secs >= n and secs % n == 0:
            return f"{secs // n:.0f} {unit}"
    return f"{secs:g} s"


def _warn_if_open(state_dir: str) -> None:
    """Log a warning when an existing state directory is open to group or others: the journal
    holds circuit inputs (often private) in clear. Its files are made 0600 all the same."""
    try:
        mode = stat.S_IMODE(os.stat(state_dir).st_mode)
    except FileNotFoundError:
        return
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning(
            "state directory %s is open to group or others (mode %04o): the journal holds "
            "circuit inputs; chmod 700 it",
            state_dir,
            mode,
        )


def _private_dirs(path: str) -> None:
    """Create `path` and every parent it lacks, each 0700 whatever the umask (os.makedirs's
    mode reaches the last one only, and the umask applies to it); the innermost one (the spool,
    the daemon's own) is made 0700 if it exists."""
    missing = []
    p = path
    while not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            if not os.path.isdir(d):
                raise
            continue
        os.chmod(d, 0o700)
    if not missing:
        os.chmod(path, 0o700)


def _private_files(state_dir: str) -> None:
    """The journal's files 0600: the lock, the database (created here, so that SQLite gives its
    -wal and -shm the same mode), those left by an older cuzk, and the spool's files."""
    db = os.path.join(state_dir, DB_NAME)
    os.close(os.open(db, os.O_RDWR | os.O_CREAT, 0o600))
    names = [LOCK_NAME, DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm", DB_NAME + "-journal"]
    paths = [os.path.join(state_dir, n) for n in names]
    paths += [os.path.join(state_dir, SPOOL, n) for n in os.listdir(os.path.join(state_dir, SPOOL))]
    for p in paths:
        try:
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != 0o600:
                os.chmod(p, 0o600)
        except FileNotFoundError:
            pass
        except OSError as e:  # another owner's file: say so, and let SQLite decide
            log.warning("state directory file %s: cannot make it 0600: %s", p, e.strerror or e)


def _lock(state_dir: str) -> int:
    """flock() the state directory's lock file for this process; its pid is written in it."""
    path = os.path.join(state_dir, LOCK_NAME)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as e:
        raise JournalError(
            f"state directory {state_dir}: cannot open {LOCK_NAME}: {e.strerror or e}"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        try:
            other = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        finally:
            os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise JournalError(
                f"state directory {state_dir} is in use by another cuzk serve "
                f"(pid {other}); give each daemon its own --state-dir"
            ) from None
        raise JournalError(
            f"state directory {state_dir}: cannot lock it: {e.strerror or e}"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _connect(path: str) -> sqlite3.Connection:
    """Open (or create) the journal database and check what it is. JournalError otherwise."""
    fresh = not os.path.exists(path) or os.path.getsize(path) == 0
    what = f"job journal {path}"
    advice = "move it aside to start with an empty journal (the jobs it holds are then not resumed)"
    try:
        db = sqlite3.connect(path, timeout=10.0, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as e:
        raise JournalError(f"{what}: cannot open it: {e}") from None
    try:
        db.isolation_level = "DEFERRED"  # `with db:` commits or rolls back one transaction
        if fresh:
            db.execute("PRAGMA journal_mode=WAL")
            with db:
                db.executescript(
                    f"BEGIN; {SCHEMA} PRAGMA application_id={APPLICATION_ID}; "
                    f"PRAGMA user_version={SCHEMA_VERSION}; COMMIT;"
                )
            db.execute("PRAGMA synchronous=FULL")
            _fsync_dir(os.path.dirname(path))
            return db
        app = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if app != APPLICATION_ID:
            raise JournalError(f"{what} is not a cuzk journal (application_id {app:#x}); {advice}")
        if version > SCHEMA_VERSION:
            raise JournalError(
                f"{what} has schema version {version}, newer than this cuzk's "
                f"{SCHEMA_VERSION}: run the cuzk that wrote it, or {advice}"
            )
        if version < SCHEMA_VERSION:  # no older schema has ever been released
            raise JournalError(f"{what} has unknown schema version {version}; {advice}")
        check = db.execute("PRAGMA quick_check").fetchall()
        if check != [("ok",)]:
            raise JournalError(f"{what} is corrupt ({check[0][0]}); {advice}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        return db
    except sqlite3.DatabaseError as e:
        db.close()
        raise JournalError(f"{what} is corrupt or not a database ({e}); {advice}") from None
    except BaseException:
        db.close()
        raise
