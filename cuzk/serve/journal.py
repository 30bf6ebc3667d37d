"""The job journal of `cuzk serve`: every accepted job and every finished result, in SQLite.

A state directory holds:

  lock              flock()ed by the daemon that owns the directory (a second one is refused)
  journal.sqlite3   one row per job: what was asked (key, witnesses or circuit inputs, kind,
                    priority, the original id and submission time) and, once finished, the
                    result JSON; circuit inputs (small JSON) are held in the row itself. Each
                    partition of an unfinished job that is proved (or failed alone) has a row
                    in `partitions` with its proof, so a restart proves only the others; the
                    rows go when the job's result is recorded
  spool/            uploaded witnesses, <job_id>.<partition>.wtns, until their job finishes

Durability (docs/operations.md): `accept()` writes the spool files, fsyncs them and the spool
directory, then commits the job's row with `PRAGMA synchronous=FULL` (in WAL mode: the WAL is
fsynced at that commit) before it returns, and the API answers 201 only after that. Finished
results are committed with `synchronous=NORMAL`: they survive a crash of the process at once,
and a power loss once the WAL is next fsynced (the next accept, or a checkpoint); a result lost
to a power cut only means its job is proved again under the same id. Finished partitions are
committed the same way.

An outcome that cannot be committed (a full disk, an I/O error) is never dropped: it is held
in memory ("pending"), served by result() and jobs_page() as if recorded, and committed again
before every later write and by retry_pending() (the daemon calls it every few seconds) until
it is. One that is still pending when the journal closes is logged by job id: its job stays
unfinished in the journal and is proved again at the next start.

A journal that cannot be read (not a database, damaged pages, a foreign database, a schema
newer than this program's) raises JournalError with one line; it is never dropped or
rewritten, because it may hold accepted jobs. A state disk that is full when the journal is
opened, or when a restart records its recovered jobs, raises DiskFull (a JournalError) that
says so: ENOSPC or EDQUOT, SQLite's SQLITE_FULL, or an I/O error while the disk's free space
(os.statvfs of the state directory) is below LOW_SPACE, which is how SQLite reports a -shm or
-wal file it could not grow. The journal is sound then; the daemon exits 75 (EX_TEMPFAIL) and
starts again once there is room.
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

SCHEMA_VERSION = 2  # PRAGMA user_version (1: without the partitions table)
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
SCHEMA_V2 = """
CREATE TABLE partitions (
    job_id       TEXT NOT NULL,
    partition    INTEGER NOT NULL,
    record       TEXT NOT NULL,            -- JSON: state (done | failed), proof, public, times
    PRIMARY KEY (job_id, partition)
) WITHOUT ROWID;
CREATE INDEX jobs_by_submission ON jobs (submitted_at, job_id);
"""
# What GET /v1/jobs lists of a journalled job (the engine's JobRecord.to_dict(detail=False)).
SUMMARY_FIELDS = (
    "job_id",
    "key_id",
    "kind",
    "priority",
    "state",
    "submitted_at",
    "started_at",
    "finished_at",
    "error",
    "total_partitions",
    "partitions_done",
    "partitions_failed",
    "recovered",
)
RETRY_MIN, RETRY_MAX = 1.0, 30.0  # seconds between two retries of pending outcomes
# Free space (bytes) under which an I/O error of the journal's files is blamed on a full disk:
# a WAL frame is a page (4 KiB) and a header, the -shm file grows 32 KiB at a time.
LOW_SPACE = 1 << 20


class JournalError(Exception):
    """The journal cannot be used (or a write failed); str() is the one-line reason."""


class DiskFull(JournalError):
    """The state directory's disk is full: the journal cannot be opened or written now, and
    nothing is wrong with it; once there is room the same call succeeds."""


def free_space(path: str) -> int | None:
    """Bytes an unprivileged process may still write on the file system of `path` (0 when it
    has no inode left), or None when it cannot be told."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    if st.f_files and not st.f_favail:  # (f_files 0: a file system without an inode count)
        return 0
    return st.f_bavail * st.f_frsize


def disk_full(e: BaseException, state_dir: str) -> int | None:
    """The free bytes of state_dir's disk when the error `e` comes from its being full, else
    None: ENOSPC / EDQUOT, SQLITE_FULL, or an I/O error (SQLITE_IOERR, "disk I/O error")
    while less than LOW_SPACE is free."""
    free = free_space(state_dir)
    if isinstance(e, OSError):
        full = e.errno in (errno.ENOSPC, errno.EDQUOT)
    elif isinstance(e, sqlite3.Error):
        code = getattr(e, "sqlite_errorcode", None)
        primary = None if code is None else code & 0xFF
        text = str(e).lower()
        full = primary == sqlite3.SQLITE_FULL or "database or disk is full" in text
        io = primary == sqlite3.SQLITE_IOERR or "disk i/o error" in text
        full = full or (io and free is not None and free < LOW_SPACE)
    else:
        full = False
    if not full:
        return None
    return free if free is not None else 0


def _size(n: int) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} bytes"


def _full_error(e: BaseException, state_dir: str, doing: str) -> DiskFull | None:
    """DiskFull naming the disk when `e` comes from its being full (see disk_full)."""
    free = disk_full(e, state_dir)
    if free is None:
        return None
    reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    return DiskFull(
        f"the disk of the state directory {state_dir} is full ({_size(free)} free): cannot "
        f"{doing} ({reason}); the journal is left as it is: free some space and start again"
    )


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
        # outcomes not committed yet (a full disk): job_id -> (state, finished_at, result)
        self._pending: dict[str, tuple[str, float, dict]] = {}
        self._retry_at = 0.0  # retry_pending() does nothing before this (time.monotonic)
        self._retry_delay = RETRY_MIN

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
            full = _full_error(e, state_dir, "create it")
            raise full or JournalError(f"state directory {state_dir}: {e.strerror or e}") from None
        lock_fd = _lock(state_dir)
        try:
            try:
                _private_files(state_dir)
            except OSError as e:
                full = _full_error(e, state_dir, "create the job journal")
                raise full or JournalError(
                    f"state directory {state_dir}: {e.strerror or e}"
                ) from None
            db = _connect(os.path.join(state_dir, DB_NAME))
            j = cls(state_dir, keep_results, db, lock_fd)
            try:
                j._sweep_spool()
            except (sqlite3.Error, OSError) as e:
                db.close()
                full = _full_error(e, state_dir, f"read the job journal {j.path}")
                raise full or JournalError(f"job journal {j.path}: cannot read it: {e}") from None
        except BaseException:
            os.close(lock_fd)  # releases the flock
            raise
        return j

    def close(self) -> None:
        if self._db is not None and self._pending:
            self.retry_pending(force=True)
        with self._mutex:
            if self._pending:
                log.error(
                    "journal: the outcome of %d finished job(s) could not be recorded: they stay "
                    "unfinished in the journal and are proved again at the next start: %s",
                    len(self._pending),
                    " ".join(sorted(self._pending)),
                )
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
                self._maybe_flush()
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
                db.execute("DELETE FROM partitions WHERE job_id=?", (job_id,))
        if row:
            self._unlink_spool(json.loads(row[0]))

    def finish(self, job_id: str, state: str, finished_at: float, result: dict) -> bool:
        """Record a job's outcome and result (proofs included), then drop its spool files and
        its partitions' rows. True once committed; False when it could not be (a full disk, an
        I/O error, a closed journal): the outcome is then held as pending, served as if
        recorded, and committed by a later write or retry_pending(); never dropped."""
        if state not in FINISHED:
            raise ValueError(f"not a finished state: {state!r}")
        with self._mutex:
            self._pending[job_id] = (state, finished_at, result)
            self._flush_pending(job_id)
            return job_id not in self._pending

    def retry_pending(self, force: bool = False) -> int:
        """Try again to commit the outcomes that could not be (at most every RETRY_MIN to
        RETRY_MAX seconds, backing off while they fail, unless `force`); returns how many are
        still pending."""
        with self._mutex:
            if force:
                self._flush_pending()
            else:
                self._maybe_flush()
            return len(self._pending)

    @property
    def pending(self) -> int:
        """Outcomes held in memory because they could not be committed yet."""
        return len(self._pending)

    def partition_done(self, job_id: str, partition: int, record: dict) -> bool:
        """Record one finished partition (proof, public signals, times; or a failure of its
        own) of an unfinished job, so that a restart does not prove it again. False when it
        could not be written (logged; the partition is then proved again after a crash)."""
        try:
            with self._mutex:
                self._maybe_flush()
                db = self._tx("NORMAL")
                with db:
                    db.execute(
                        "INSERT OR REPLACE INTO partitions (job_id, partition, record) "
                        "VALUES (?,?,?)",
                        (job_id, int(partition), json.dumps(record, separators=(",", ":"))),
                    )
            return True
        except (sqlite3.Error, OSError, JournalError) as e:
            log.warning(
                "job %s partition %d: cannot record it in the journal: %s (it is proved "
                "again if the daemon restarts before the job ends)",
                job_id,
                partition,
                e,
            )
            return False

    def done_partitions(self, job_id: str) -> dict[int, dict]:
        """The partitions of an unfinished job recorded by partition_done(), by index."""
        with self._mutex:
            rows = self._db.execute(
                "SELECT partition, record FROM partitions WHERE job_id=? ORDER BY partition",
                (job_id,),
            ).fetchall()
        return {int(i): json.loads(r) for i, r in rows}

    def _maybe_flush(self) -> None:
        """Before a write: commit pending outcomes unless their retry is not due yet."""
        if self._pending and time.monotonic() >= self._retry_at:
            self._flush_pending()

    def _flush_pending(self, only: str | None = None) -> None:
        """Commit pending outcomes (under self._mutex): all, or only job `only`. One that
        fails stays pending; the retry delay doubles while they fail."""
        spools = []
        for job_id in [only] if only is not None else list(self._pending):
            state, finished_at, result = self._pending[job_id]
            try:
                db = self._tx("NORMAL")
                with db:
                    row = db.execute("SELECT inputs FROM jobs WHERE job_id=?", (job_id,)).fetchone()
                    db.execute(
                        "UPDATE jobs SET state=?, finished_at=?, result=? WHERE job_id=?",
                        (state, finished_at, json.dumps(result, separators=(",", ":")), job_id),
                    )
                    db.execute("DELETE FROM partitions WHERE job_id=?", (job_id,))
            except (sqlite3.Error, OSError, JournalError) as e:
                self._retry_at = time.monotonic() + self._retry_delay
                self._retry_delay = min(RETRY_MAX, self._retry_delay * 2)
                log.error(
                    "job %s: cannot record its outcome (%s) in the journal: %s; kept in memory "
                    "and retried (%d outcome(s) pending)",
                    job_id,
                    state,
                    e,
                    len(self._pending),
                )
                if only is None:
                    break  # the others would fail alike: wait for the next retry
                return
            del self._pending[job_id]
            if only is None:
                log.info("job %s: its outcome (%s) is now recorded in the journal", job_id, state)
            if row:
                spools.append(json.loads(row[0]))
        if not self._pending:
            self._retry_delay, self._retry_at = RETRY_MIN, 0.0
        for inputs in spools:
            self._unlink_spool(inputs)

    def mark_recovered(self, job_id: str) -> None:
        """Count a re-queue of the job after a restart. DiskFull (a full disk) or JournalError
        (another failure), one line each, when it cannot be recorded."""
        try:
            with self._mutex:
                db = self._tx("NORMAL")
                with db:
                    db.execute(
                        "UPDATE jobs SET recovered = recovered + 1 WHERE job_id=?", (job_id,)
                    )
        except (OSError, sqlite3.Error) as e:
            full = _full_error(e, self.state_dir, f"record that job {job_id} was recovered")
            raise full or JournalError(
                f"job journal {self.path}: cannot record that job {job_id} was recovered: {e}"
            ) from None

    def prune(self, now: float | None = None) -> int:
        """Delete finished jobs older than keep_results; returns how many."""
        cutoff = (time.time() if now is None else now) - self.keep_results
        with self._mutex:
            self._maybe_flush()
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
        """A finished job's result as it was recorded, or is pending (None: unknown,
        unfinished or pruned)."""
        with self._mutex:
            if job_id in self._pending:
                return self._pending[job_id][2]
            row = self._db.execute(
                "SELECT result FROM jobs WHERE job_id=? AND state != 'accepted'", (job_id,)
            ).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def jobs_page(
        self,
        after: tuple[float, str] | None,
        limit: int,
        state: str | None = None,
        skip=frozenset(),
    ) -> list[dict]:
        """Up to `limit` journalled jobs in (submitted_at, job_id) order, after the position
        `after` (None: from the first), as GET /v1/jobs lists them (SUMMARY_FIELDS; an
        unfinished one is "queued"), leaving out the ids in `skip` (the jobs the engine
        holds, listed from it) and, with `state`, jobs in another state. Pending outcomes
        count as recorded."""
        if state == "running":  # a job runs only in the engine, which lists it itself
            return []
        out: list[dict] = []
        pos = after
        batch = max(64, min(1024, limit + len(skip)))
        while len(out) < limit:
            where, args = [], []
            if pos is not None:
                where.append("(submitted_at, job_id) > (?, ?)")
                args += [float(pos[0]), str(pos[1])]
            with self._mutex:
                if state is not None:
                    db_state = "accepted" if state == "queued" else state
                    if self._pending:  # a pending outcome's row still says 'accepted'
                        where.append("(state = ? OR state = 'accepted')")
                    else:
                        where.append("state = ?")
                    args.append(db_state)
                rows = self._db.execute(
                    "SELECT job_id, key_id, kind, priority, state, submitted_at, finished_at, "
                    "recovered, json_array_length(inputs), json_extract(result, '$.started_at'), "
                    "json_extract(result, '$.error'), json_extract(result, '$.partitions_done'), "
                    "json_extract(result, '$.partitions_failed'), "
                    "json_extract(result, '$.recovered') FROM jobs"
                    + (" WHERE " + " AND ".join(where) if where else "")
                    + " ORDER BY submitted_at, job_id LIMIT ?",
                    (*args, batch),
                ).fetchall()
                pending = {r[0]: self._pending[r[0]][2] for r in rows if r[0] in self._pending}
            for r in rows:
                job_id = r[0]
                if job_id in skip:
                    continue
                finished = r[4] != "accepted"
                d = {
                    "job_id": job_id,
                    "key_id": r[1],
                    "kind": r[2],
                    "priority": r[3],
                    "state": r[4] if finished else "queued",
                    "submitted_at": r[5],
                    "started_at": r[9],
                    "finished_at": r[6],
                    "error": r[10],
                    "total_partitions": r[8],
                    "partitions_done": r[11] if finished else 0,
                    "partitions_failed": r[12] if finished else 0,
                    "recovered": bool(r[13]) if finished else r[7] > 0,
                }
                if job_id in pending:  # the outcome, as it will be recorded
                    d.update((k, v) for k, v in pending[job_id].items() if k in SUMMARY_FIELDS)
                if state is None or d["state"] == state:
                    out.append(d)
                    if len(out) == limit:
                        break
            if len(rows) < batch:
                break
            pos = (rows[-1][5], rows[-1][0])
        return out

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
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError as e:
        os.close(fd)
        full = _full_error(e, state_dir, f"write its pid into {LOCK_NAME}")
        raise full or JournalError(
            f"state directory {state_dir}: cannot write {LOCK_NAME}: {e.strerror or e}"
        ) from None
    return fd


def _connect(path: str) -> sqlite3.Connection:
    """Open (or create) the journal database and check what it is. JournalError otherwise."""
    fresh = not os.path.exists(path) or os.path.getsize(path) == 0
    what = f"job journal {path}"
    advice = "move it aside to start with an empty journal (the jobs it holds are then not resumed)"
    state_dir = os.path.dirname(path)
    try:
        db = sqlite3.connect(path, timeout=10.0, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as e:
        full = _full_error(e, state_dir, f"open the {what}")
        raise full or JournalError(f"{what}: cannot open it: {e}") from None
    try:
        db.isolation_level = "DEFERRED"  # `with db:` commits or rolls back one transaction
        if fresh:
            db.execute("PRAGMA journal_mode=WAL")
            with db:
                db.executescript(
                    f"BEGIN; {SCHEMA} {SCHEMA_V2} PRAGMA application_id={APPLICATION_ID}; "
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
        if version < 1:
            raise JournalError(f"{what} has unknown schema version {version}; {advice}")
        check = db.execute("PRAGMA quick_check").fetchall()
        if check != [("ok",)]:
            raise JournalError(f"{what} is corrupt ({check[0][0]}); {advice}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        if version == 1:  # one table and one index more; nothing else changed
            with db:
                db.executescript(
                    f"BEGIN; {SCHEMA_V2} PRAGMA user_version={SCHEMA_VERSION}; COMMIT;"
                )
            log.info("journal %s: schema upgraded from version 1 to %d", path, SCHEMA_VERSION)
        return db
    except (sqlite3.Error, OSError) as e:
        db.close()
        full = _full_error(e, state_dir, f"open the {what}")
        if full is not None:  # SQLite says "disk I/O error" for a -shm or -wal it cannot grow
            raise full from None
        if isinstance(e, sqlite3.DatabaseError) and not _io_error(e):
            raise JournalError(f"{what} is corrupt or not a database ({e}); {advice}") from None
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise JournalError(f"{what}: cannot read it ({reason}): check the disk") from None
    except BaseException:
        db.close()
        raise


def _io_error(e: sqlite3.Error) -> bool:
    """An I/O error (the disk, not the file's content)."""
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF == sqlite3.SQLITE_IOERR
    return "disk i/o error" in str(e).lower()
