"""ClusterEngine: the engine API of `cuzk serve --ray`, backed by a farm of node engines.

`cuzk serve` takes either an Engine (one machine) or a ClusterEngine (a Ray cluster) and
calls the same methods on it: cuzk.engine.contract.EngineAPI. The job calls and their
bookkeeping (intake, job records, journal, counters, the end of a job, waiting for results,
cancel) are cuzk.engine.jobs' (JobAPI over a JobLedger), shared with the local engine; this
module keeps what is Ray's: node membership, placement, remote calls, results and retries.

What runs where:

  gateway process (here)                           every machine with the `cuzk_node` resource
  ----------------------                           --------------------------------------------
  API threads: validate, record, queue     ray     node engine actor (cuzk.cluster.node)
  the loop thread (the only one that       ---->   a local Engine: supervisor, synthesis and
    waits): node discovery and status,     <----   device processes, finalizers, its board
    dispatch, results, retries

- The global queue is here: the engine's Scheduler, so the order is the local one (priority
  critical > high > normal, then submission, then partition). A partition leaves the queue
  only when a node has room for it: at most `capacity` = devices x (workers_per_device + 1)
  partitions outstanding per node, so a critical partition waits at most one partition per
  device, cluster-wide.
- Key affinity: a partition goes to the least loaded node where its key is resident on a
  device; when every such node is full it waits for one, up to `affinity_wait` seconds.
  Then (or when the key is resident nowhere) to a node where the key is registered, then to
  the least loaded node that can read the key, which loads it; nodes keep their own LRU.
  `register_key` registers the key on every live node (each checks it can read and use it)
  and a node that cannot is never sent the key's work.
- Witness bytes are put in Ray's object store once, when the partition is first dispatched,
  and the reference is dropped when the partition is done; a retry reuses it. A witness
  given as a path is read by the node (the key roots are a shared filesystem).
- Failures: a node whose machine Ray reports gone, or whose actor dies, loses its
  outstanding partitions to the queue (attempt + 1, counted against max_attempts); a late
  result of an old attempt is dropped (`stale_ends_ignored`). A restarted actor (a new
  instance) is re-attached and the work sent to its previous instance retried. Node actors
  are detached and named `cuzk-node-<node id>`: a restarted gateway finds them by name and
  attaches under a new epoch, which cancels the old gateway's work there.
- With no node alive, jobs wait (health() says so; GET /healthz answers 503), or fail after
  `node_wait_timeout` seconds when that is set.

Ray is imported only here and in cuzk.cluster.node (the `cluster` extra).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field

from cuzk.cluster.node import node_actor
from cuzk.engine.jobs import EngineError, JobAPI, JobLedger
from cuzk.engine.records import JobRecord, PartitionRecord
from cuzk.engine.scheduler import SYNTH_QUEUE, WorkKey
from cuzk.engine.settings import EngineConfig

log = logging.getLogger("cuzk.cluster")

POLL_INTERVAL = 0.5  # seconds between two status requests to a node
WAIT_SLICE = 0.005  # seconds the loop waits on Ray per turn while work is out
REGISTER_TIMEOUT = 600.0  # seconds a node may take to open and validate a key
ATTACH_RETRY = 2.0  # seconds between two attempts to attach a node whose actor failed
ANSWER_TIMEOUT = 60.0  # seconds a node may leave a status call unanswered before it is lost


@dataclass
class ClusterPartition(PartitionRecord):
    """A partition as the gateway sees it: where it runs (the node) and since when queued."""

    node: str | None = None
    queued_at: float = field(default_factory=time.time)
    node_secs: float | None = None  # the node's own time for it (prove() call, in the actor)
    witness_ref: object = None  # Ray ObjectRef of the witness bytes, while needed

    def to_dict(self, index: int) -> dict:
        d = super().to_dict(index)
        d["node"] = self.node
        return d


@dataclass
class GatewayKey:
    key_id: str
    path: str
    wasm: str | None
    meta: dict  # the key's record as the first node that registered it reported it
    unreadable: dict = field(default_factory=dict)  # node id -> why it cannot use the key
    checked: set = field(default_factory=set)  # node ids that registered it (can use it)
    live_jobs: int = 0
    last_used: float = field(default_factory=time.time)


@dataclass
class NodeRecord:
    """One machine of the farm, as the gateway last saw it."""

    node_id: str
    host: str = ""
    address: str = ""
    ray_alive: bool = True  # Ray lists the machine alive
    alive: bool = False  # attached and answering
    actor: object = None
    instance: str | None = None
    incarnation: int = 0
    last_seen: float = 0.0
    capacity: int = 0
    devices: list = field(default_factory=list)
    outstanding: dict = field(default_factory=dict)  # WorkKey -> instance it was sent to
    status: dict | None = None  # the last status() reply
    pending: str | None = None  # "attach" | "status" while a call is out
    pending_since: float = 0.0
    next_attach: float = 0.0
    error: str | None = None  # why the node is not alive, when it is not

    @property
    def free(self) -> int:
        return self.capacity - len(self.outstanding) if self.alive else 0

    def keys(self) -> dict:
        return {k["key_id"]: k for k in (self.status or {}).get("keys", [])}

    def to_dict(self) -> dict:
        return {
            "node_id": self.node_id,
            "host": self.host,
            "alive": self.alive,
            "devices": list(self.devices),
            "incarnation": self.incarnation,
            "last_seen": self.last_seen or None,
            "address": self.address,
            "outstanding": len(self.outstanding),
            "capacity": self.capacity,
            "error": self.error,
        }


def node_settings(config: EngineConfig) -> dict:
    """The engine settings a node starts with (before its own, from its labels)."""
    skip = {"device_names", "board_name", "instance"}
    return {
        f.name: getattr(config, f.name)
        for f in dataclasses.fields(EngineConfig)
        if f.name not in skip
    }


class ClusterEngine(JobAPI):
    """The engine API over a Ray cluster of node engines (see the module docstring); its job
    calls are cuzk.engine.jobs.JobAPI's, over a JobLedger of its own."""

    _partition_type = ClusterPartition
    _spool_inputs = False  # a node cannot read this machine's spool: the bytes travel

    def __init__(
        self,
        config: EngineConfig | None = None,
        *,
        address: str = "auto",
        journal=None,
        nodes: dict | None = None,
        affinity_wait: float = 2.0,
        node_wait_timeout: float = 0.0,
        poll_interval: float = POLL_INTERVAL,
        **overrides,
    ):
        base = config or EngineConfig()
        if overrides:
            base = dataclasses.replace(base, **overrides)
        # the gateway's own config: the memory budget counts request bodies here; the node
        # settings are the unresolved values (each machine resolves auto for itself)
        self.node_config = dict(nodes) if nodes is not None else node_settings(base)
        self.config = dataclasses.replace(base, devices="cpu:1").validated()
        self.address = address
        self._books = JobLedger(self.config, journal, log)
        self.affinity_wait = float(affinity_wait)
        self.node_wait_timeout = float(node_wait_timeout)
        self.poll_interval = float(poll_interval)
        self.epoch = uuid.uuid4().hex[:12]
        self.pid = os.getpid()
        self.started_at = time.time()
        self.nodes: dict[str, NodeRecord] = {}
        self.inflight: dict[object, tuple] = {}  # ObjectRef -> ("prove", node, WorkKey) | ...
        self.stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._drain_until: float | None = None
        self._no_node_since: float | None = time.time()
        self._ray = None

    # ================================================================ life cycle
    def start(self, timeout: float = 120.0) -> ClusterEngine:
        """Connect to the Ray cluster and start the loop; nodes attach as they are found."""
        if self._thread is not None:
            raise EngineError("engine already started")
        try:
            import ray
        except ImportError:
            raise EngineError(
                "--ray needs Ray, which is not installed: pip install 'cuzk[cluster]'"
            ) from None

        from cuzk.cluster.labels import NAMESPACE

        self._ray = ray
        # ray.init installs its own SIGTERM/SIGINT handlers in the main thread (they kill the
        # process): the daemon's, which drain, are put back.
        main = threading.current_thread() is threading.main_thread()
        saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)} if main else {}
        try:
            ray.init(
                address=self.address,
                namespace=NAMESPACE,
                log_to_driver=False,
                logging_level=logging.WARNING,
                configure_logging=False,
            )
        except Exception as e:  # ConnectionError, ValueError: no cluster at that address
            raise EngineError(f"cannot connect to the Ray cluster at {self.address}: {e}") from e
        finally:
            for sig, handler in saved.items():
                if handler is not None:
                    signal.signal(sig, handler)
        self._thread = threading.Thread(target=self._loop, name="cuzk-gateway", daemon=True)
        self._thread.start()
        log.info("gateway %s attached to the Ray cluster at %s", self.epoch, self.address)
        deadline = time.time() + min(timeout, 30.0)
        while time.time() < deadline and not self.health()[0]:
            time.sleep(0.1)  # give the nodes that are there a moment to attach
        return self

    def __enter__(self):
        return self if self._thread else self.start()

    def __exit__(self, *exc):
        self.stop(drain_deadline=0 if exc[0] else 30.0)

    def request_stop(self, drain_deadline: float = 30.0) -> None:
        """Stop intake; let live jobs finish for up to `drain_deadline` s, then cancel the rest
        (they stay unfinished in the journal) and disconnect. The node engines keep running:
        they belong to their machines."""
        with self._books.lock:
            until = time.time() + max(0.0, drain_deadline)
            if self._drain_until is None or until < self._drain_until:
                self._drain_until = until
            self._stopping = True
            self._books.changed.notify_all()
        if self._thread is None:
            self.stopped.set()

    def stop(self, drain_deadline: float = 30.0) -> None:
        self.request_stop(drain_deadline)
        if self._thread is not None:
            self._thread.join()

    def wait_stopped(self, timeout: float | None = None) -> bool:
        return self.stopped.wait(timeout)

    def install_signal_handlers(self, drain_deadline: float = 30.0) -> None:
        def handler(signum, frame):
            self.request_stop(drain_deadline)

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    @property
    def running(self) -> bool:
        return self._thread is not None and not self.stopped.is_set() and not self._stopping

    def health(self) -> tuple[bool, dict]:
        """(serving, detail): False when no prover node is alive (jobs wait)."""
        with self._books.lock:
            alive = sum(n.alive for n in self.nodes.values())
            return alive > 0, {"nodes": len(self.nodes), "nodes_alive": alive}

    board_name = ""  # the gateway has no board: each node has its own

    def process_pids(self) -> dict[str, list[int]]:
        out = {"synth": [], "device": []}
        with self._books.lock:
            for n in self.nodes.values():
                pids = (n.status or {}).get("pids") or {}
                for role in out:
                    out[role] += pids.get(role, [])
        return out

    # ================================================================ keys
    def register_key(self, path, wasm=None) -> str:
        """Open the key here (its id and sizes), then have every live node register it (each
        validates it once); nodes that cannot read it are never sent its work. Raises the
        first node's error when no node can use the key."""
        import importlib

        ProvingKey = importlib.import_module(self.config.prover).ProvingKey
        path = os.path.abspath(os.fspath(path))
        wasm = os.path.abspath(os.fspath(wasm)) if wasm is not None else None
        pk = ProvingKey.open(path, resident=False)  # read, not mapped (issue 38)
        key_id = pk.key_id
        meta = {
            "key_id": key_id,
            "path": path,
            "n_vars": int(pk.n_vars),
            "domain_size": int(pk.domain_size),
            "n_public": int(pk.n_public),
            "protocol": str(pk.protocol),
            "curve": str(getattr(pk, "curve", "") or ""),
            "bytes": int(pk.nbytes),
            "partition_bytes": int(pk.partition_bytes()),
            "wasm": wasm,
            "wasm_bytes": 0,
        }
        del pk
        with self._books.lock:
            targets = [n for n in self.nodes.values() if n.alive]
        refs = {n.node_id: n.actor.register_key.remote(path, wasm) for n in targets}
        errors, ok = {}, 0
        for node_id, ref in refs.items():
            try:
                rec = self._ray.get(ref, timeout=REGISTER_TIMEOUT)
                meta.update({k: rec[k] for k in ("bytes", "partition_bytes", "wasm_bytes")})
                ok += 1
            except Exception as e:
                errors[node_id] = _cause(self._ray, e)
        if targets and not ok:
            first = next(iter(errors.values()))
            if isinstance(first, Exception):
                raise first
            raise EngineError(str(first))
        with self._books.lock:
            k = self._books.keys.get(key_id)
            if k is None:
                k = self._books.keys[key_id] = GatewayKey(key_id, path, wasm, meta)
            elif wasm is not None:
                k.wasm, k.meta = wasm, meta
            for node_id, e in errors.items():
                k.unreadable[node_id] = f"{type(e).__name__}: {e}"
                log.warning("key %s: node %s cannot use it: %s", key_id, node_id[:8], e)
            for node_id in refs:
                if node_id not in errors:
                    k.unreadable.pop(node_id, None)
                    k.checked.add(node_id)
            for n in self.nodes.values():  # attached meanwhile: checked like any newcomer
                if n.alive and n.node_id not in refs:
                    self._check_keys(n)
        log.info(
            "key %s registered: %s on %d of %d node(s)%s",
            key_id,
            path,
            ok,
            len(targets),
            f", circuit {wasm}" if wasm else "",
        )
        return key_id

    def keys(self) -> list[dict]:
        with self._books.lock:
            now = time.time()
            out = []
            for k in self._books.keys.values():
                where, devices = {}, []
                for n in self.nodes.values():
                    nk = n.keys().get(k.key_id)
                    if k.unreadable.get(n.node_id):
                        where[n.node_id] = "unreadable"
                    elif nk is not None:
                        where[n.node_id] = "resident" if nk["devices"] else "registered"
                        devices += [f"{n.node_id[:8]}/{d}" for d in nk["devices"]]
                d = dict(k.meta)
                d.update(
                    devices=devices,
                    live_jobs=k.live_jobs,
                    last_used_secs_ago=now - k.last_used,
                    evictable=k.live_jobs == 0,
                    nodes=where,
                )
                out.append(d)
            return out

    def evict_key(self, key_id: str) -> bool:
        with self._books.lock:
            self._books.evictable_key(key_id)
            targets = [n for n in self.nodes.values() if n.alive]
        was = False
        for n in targets:
            try:
                was |= bool(self._ray.get(n.actor.evict_key.remote(key_id), timeout=60))
            except Exception as e:
                log.warning("node %s: evicting key %s failed: %s", n.node_id[:8], key_id, e)
        return was

    # ================================================================ jobs (JobAPI's hooks)
    def _taking_jobs(self) -> bool:
        return not self._stopping and self.running

    def _job_inputs(self, items: list, circuit: bool) -> list:
        if circuit:
            return items
        return [self._spooled(x) if isinstance(x, str) else x for x in items]

    def _spooled(self, path: str):
        """A witness path: the journal's own spool files live on this machine only, so their
        bytes travel; any other path is read by the node (a shared key root)."""
        j = self._books.journal
        if j is not None and os.path.dirname(path) == os.path.abspath(j.spool):
            with open(path, "rb") as f:
                return f.read()
        return path

    def _queued(self, job: JobRecord) -> None:
        self._dispatch()

    def _end_job(self, job: JobRecord, state: str, error: str | None, *, shutdown=False) -> None:
        """Finish a job: drop what is queued, cancel what runs on nodes, then the ledger's
        bookkeeping (JobLedger.record_end)."""
        self._books.sched.drop_job(job.job_id)
        nodes = set()
        for n in self.nodes.values():
            for wk in [w for w in n.outstanding if w.job_id == job.job_id]:
                del n.outstanding[wk]
                nodes.add(n.node_id)
        for node_id in nodes:
            n = self.nodes[node_id]
            if n.actor is not None:
                try:
                    n.actor.cancel.remote(job.job_id)
                except Exception:
                    pass
        for p in job.partitions:
            p.witness_ref = None
        self._books.record_end(job, state, error, shutdown)

    # ================================================================ the loop
    def _loop(self) -> None:
        ray = self._ray
        next_poll = 0.0
        try:
            while True:
                now = time.time()
                with self._books.lock:
                    if self._stopping and self._drained(now):
                        break
                    if now >= next_poll:
                        self._poll(now)
                        self._check_unusable_keys()
                        next_poll = now + self.poll_interval
                    self._dispatch()
                    self._check_no_node(now)
                    refs = list(self.inflight)
                if not refs:
                    with self._books.lock:
                        self._books.changed.wait(min(0.05, max(0.0, next_poll - time.time())))
                    continue
                ready, _ = ray.wait(refs, num_returns=1, timeout=WAIT_SLICE)
                if ready:
                    more, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
                    ready = list({*ready, *more})
                for ref in ready:
                    self._settle(ref)
        except Exception:
            log.exception("gateway loop failed")
            raise
        finally:
            self._shutdown()

    def _drained(self, now: float) -> bool:
        live = self._books.unfinished()
        if live and now < (self._drain_until or 0):
            return False
        self._cancel_unfinished()
        return True

    def _cancel_unfinished(self) -> None:
        """The gateway stops: every live job is cancelled on the nodes, unfinished in the
        journal (it resumes when the gateway starts again)."""
        reason = self._books.stop_reason("the gateway is stopping", "gateway")
        for job in self._books.unfinished():
            self._end_job(job, "cancelled", reason, shutdown=True)

    def _shutdown(self) -> None:
        with self._books.lock:
            self._stopping = True
            self._cancel_unfinished()
            self.inflight.clear()
            for n in self.nodes.values():
                n.actor = None
            self._books.changed.notify_all()
        try:
            self._ray.shutdown()
        except Exception:
            pass
        self.stopped.set()
        log.info("gateway %s stopped", self.epoch)

    # ---------------------------------------------------------------- nodes
    def _poll(self, now: float) -> None:
        """Find the cuzk machines, attach new ones, ask attached ones for their status."""
        from cuzk.cluster.labels import NODE_RESOURCE

        try:
            listed = self._ray.nodes()
        except Exception as e:
            log.warning("cannot list the Ray nodes: %s", e)
            return
        for info in listed:
            if not (info.get("Resources") or {}).get(NODE_RESOURCE):
                if info["NodeID"] not in self.nodes:
                    continue
            n = self.nodes.get(info["NodeID"])
            if n is None:
                n = self.nodes[info["NodeID"]] = NodeRecord(info["NodeID"])
                n.address = info.get("NodeManagerAddress", "")
                n.host = info.get("NodeManagerHostname", "") or n.address
                log.info("node %s found on %s", n.node_id[:8], n.host)
            was = n.ray_alive
            n.ray_alive = bool(info.get("Alive"))
            if was and not n.ray_alive:
                self._lose(n, "Ray reports its machine gone")
        for n in self.nodes.values():
            if n.pending == "status" and n.alive and now - n.pending_since > ANSWER_TIMEOUT:
                self._lose(n, f"no answer to a status call for {ANSWER_TIMEOUT:.0f} s")
            if not n.ray_alive or n.pending is not None:
                continue
            if n.actor is None or not n.alive:
                if now < n.next_attach:
                    continue
                self._call(n, "attach")
            else:
                self._call(n, "status")

    def _call(self, n: NodeRecord, what: str) -> None:
        try:
            if n.actor is None:
                n.actor = node_actor(n.node_id, self.node_config, self.epoch)
            if what == "attach":
                ref = n.actor.attach.remote(self.epoch, self.node_config)
            else:
                ref = n.actor.status.remote()
        except Exception as e:
            n.error = f"{type(e).__name__}: {e}"
            n.next_attach = time.time() + ATTACH_RETRY
            n.actor = None
            return
        n.pending, n.pending_since = what, time.time()
        self.inflight[ref] = (what, n.node_id, None)

    def _node_answer(self, n: NodeRecord, what: str, value, error) -> None:
        n.pending = None
        if error is not None:
            if n.alive or what == "status":
                self._lose(n, f"its actor failed: {error}")
            elif n.error != str(error):
                log.warning("node %s: cannot attach: %s", n.node_id[:8], error)
            n.error = str(error)
            n.actor = None if _actor_gone(self._ray, error) else n.actor
            n.next_attach = time.time() + ATTACH_RETRY
            return
        if not n.ray_alive:
            return  # a late answer from a machine Ray has since declared gone
        info = value["info"]
        if info["instance"] != n.instance:
            if n.instance is not None:
                self._lose(n, f"its actor restarted (instance {info['instance']})")
            n.instance = info["instance"]
            n.incarnation += 1
            if what == "status" or info.get("epoch") != self.epoch:
                n.alive = False
                self._call(n, "attach")  # bind the new instance to this gateway
                return
        n.status = value
        n.host = info.get("host") or n.host
        n.devices = list(info["devices"])
        n.capacity = int(info["capacity"])
        n.last_seen = time.time()
        n.error = None
        if not n.alive:
            n.alive = True
            self._no_node_since = None
            log.info(
                "node %s attached (incarnation %d): %s, devices %s, capacity %d",
                n.node_id[:8],
                n.incarnation,
                n.host,
                ",".join(n.devices),
                n.capacity,
            )
            self._books.event("node_up", n.node_id, n.incarnation, -1)
            self._check_keys(n)
            self._books.changed.notify_all()

    def _check_keys(self, n: NodeRecord) -> None:
        """Have a node that attached register the keys it has not checked yet: until it
        answers, none of their work goes there."""
        for k in self._books.keys.values():
            if n.node_id in k.checked or n.node_id in k.unreadable:
                continue
            try:
                ref = n.actor.register_key.remote(k.path, k.wasm)
            except Exception as e:
                log.warning("node %s: cannot check key %s: %s", n.node_id[:8], k.key_id, e)
                continue
            self.inflight[ref] = ("register", n.node_id, k.key_id)

    def _key_checked(self, node_id: str, key_id: str, error) -> None:
        k = self._books.keys.get(key_id)
        if k is None:
            return
        if error is None:
            k.checked.add(node_id)
            k.unreadable.pop(node_id, None)
            return
        k.unreadable[node_id] = f"{type(error).__name__}: {error}"
        log.warning("key %s: node %s cannot use it: %s", key_id, node_id[:8], error)

    def _lose(self, n: NodeRecord, why: str) -> None:
        """A node is gone (or restarted): its outstanding partitions go back to the queue."""
        if n.alive or n.outstanding:
            log.warning(
                "node %s lost: %s; %d partition(s) go to other nodes",
                n.node_id[:8],
                why,
                len(n.outstanding),
            )
            self._books.event("node_lost", n.node_id, len(n.outstanding), -1)
        n.alive = False
        n.error = why
        for wk in list(n.outstanding):
            self._retry(wk, f"node {n.node_id[:8]} lost: {why}")
        n.outstanding.clear()
        if not any(m.alive for m in self.nodes.values()) and self._no_node_since is None:
            self._no_node_since = time.time()

    def _check_unusable_keys(self) -> None:
        """A queued job whose key every live node has refused fails with their reasons."""
        alive = [n for n in self.nodes.values() if n.alive]
        if not alive:
            return
        for job in self._books.unfinished():
            k = self._books.keys.get(job.key_id)
            if k is None or not all(n.node_id in k.unreadable for n in alive):
                continue
            reasons = "; ".join(f"{nid[:8]}: {why}" for nid, why in k.unreadable.items())
            self._end_job(job, "failed", f"no prover node can use key {k.key_id} ({reasons})")

    def _check_no_node(self, now: float) -> None:
        t = self._no_node_since
        if t is None or self.node_wait_timeout <= 0 or now - t < self.node_wait_timeout:
            return
        for job in self._books.unfinished():
            self._end_job(job, "failed", f"no prover node alive for {self.node_wait_timeout:.0f} s")

    # ---------------------------------------------------------------- dispatch
    def _dispatch(self) -> None:
        """Hand queued partitions to nodes with room, in queue order (lock held)."""
        if not any(n.free > 0 for n in self.nodes.values()):
            return
        now = time.time()
        chosen: dict[WorkKey, NodeRecord] = {}

        def accept(wk: WorkKey) -> bool:
            node = self._place(wk, now)
            if node is not None:
                chosen[wk] = node
            return node is not None

        while True:
            wk = self._books.sched.pop(SYNTH_QUEUE, accept)
            if wk is None:
                return
            self._send(wk, chosen.pop(wk))
            if not any(n.free > 0 for n in self.nodes.values()):
                return

    def _place(self, wk: WorkKey, now: float) -> NodeRecord | None:
        """The node for a partition now, or None to leave it queued (see the docstring)."""
        job = self._books.jobs[wk.job_id]
        k = self._books.keys[job.key_id]
        usable = [n for n in self.nodes.values() if n.alive and n.node_id in k.checked]
        room = [n for n in usable if n.free > 0]
        if not room:
            return None

        def load(n):
            return (len(n.outstanding) / max(1, n.capacity), n.node_id)

        p = job.partitions[wk.partition]
        waited = now - p.queued_at
        resident = [n for n in usable if (n.keys().get(k.key_id) or {}).get("devices")]
        if resident:
            free = [n for n in resident if n.free > 0]
            if free:
                return min(free, key=load)
            if waited < self.affinity_wait:
                return None  # a node with the key on a device will have room soon
        registered = [n for n in room if k.key_id in n.keys()]
        if registered:
            return min(registered, key=load)
        if waited < self.affinity_wait and any(k.key_id in n.keys() for n in usable):
            return None
        return min(room, key=load)

    def _send(self, wk: WorkKey, n: NodeRecord) -> None:
        job = self._books.jobs[wk.job_id]
        k = self._books.keys[job.key_id]
        p = job.partitions[wk.partition]
        item = p.witness_ref if p.witness_ref is not None else job.inputs[wk.partition]
        if isinstance(item, bytes):  # into the object store once; a retry sends the same object
            item = p.witness_ref = self._ray.put(item)
            job.inputs[wk.partition] = None  # the gateway keeps no copy
        p.attempts = wk.attempt + 1
        p.node = n.node_id
        p.state = "running"
        if job.state == "queued":
            job.state, job.started_at = "running", time.time()
        ref = n.actor.prove.remote(
            self.epoch,
            job.job_id,
            wk.partition,
            wk.attempt,
            k.path,
            job.wasm,
            item,
            job.kind,
            job.priority,
        )
        n.outstanding[wk] = n.instance
        self.inflight[ref] = ("prove", n.node_id, wk)
        self._books.event("dispatch", job.job_id, wk.partition, wk.attempt)

    # ---------------------------------------------------------------- results
    def _settle(self, ref) -> None:
        ray = self._ray
        value, error = None, None
        try:
            value = ray.get(ref, timeout=0)
        except Exception as e:
            error = e
        with self._books.lock:
            tag = self.inflight.pop(ref, None)
            if tag is None:
                return
            what, node_id, wk = tag
            n = self.nodes.get(node_id)
            if what == "register":
                if not (error is not None and _actor_gone(ray, error)):
                    self._key_checked(node_id, wk, None if error is None else _cause(ray, error))
                return
            if what in ("attach", "status"):
                if n is not None:
                    self._node_answer(n, what, value, error)
                return
            sent_to = n.outstanding.pop(wk, None) if n is not None else None
            live = self._books.sched.live(wk.job_id, wk.partition)
            if live != wk or sent_to is None:
                self._books.counters["stale_ends_ignored"] += 1
                self._books.event("stale", wk.job_id, wk.partition, wk.attempt)
                return
            job = self._books.jobs[wk.job_id]
            if error is not None:
                why = f"node {node_id[:8]}: {_cause(ray, error)}"
                self._retry(wk, why)
                if _actor_gone(ray, error):  # and the rest of what it holds
                    self._lose(n, f"its actor failed: {_cause(ray, error)}")
                self._dispatch()
                return
            if value["state"] == "done":
                self._partition_done(job, wk, value)
            elif value["state"] == "cancelled":  # the node stopped or re-attached
                self._retry(wk, f"node {node_id[:8]}: {value['error'] or 'cancelled'}")
            else:
                self._partition_failed(job, wk, value)
            self._dispatch()

    def _partition_done(self, job: JobRecord, wk: WorkKey, r: dict) -> None:
        p = job.partitions[wk.partition]
        self._books.sched.give_up(wk)  # leaves the scheduler: done on a node
        p.state, p.proof, p.public, p.error = "done", r["proof"], r["public"], None
        for f in ("synth_ms", "witness_ms", "abc_ms", "gpu_ms", "finalize_ms", "device"):
            setattr(p, f, r.get(f))
        p.node_secs = r.get("node_secs")
        p.witness_ref = None  # the object store may drop the witness now
        job.n_done += 1
        self._books.event("done", job.job_id, wk.partition, wk.attempt)
        self._books.record_partition(job, wk.partition)
        if not job.partitions_left:
            self._end_job(job, *job.outcome())

    def _partition_failed(self, job: JobRecord, wk: WorkKey, r: dict) -> None:
        """The node proved and failed it (after its own retries): the input's fault."""
        p = job.partitions[wk.partition]
        self._books.sched.give_up(wk)
        p.state, p.error, p.witness_ref = "failed", r["error"], None
        log.warning(
            "job %s partition %d failed on node %s: %s",
            job.job_id,
            wk.partition,
            (p.node or "?")[:8],
            r["error"],
        )
        if job.wasm is not None:  # an input the circuit rejects: the rest goes on
            job.n_failed += 1
            self._books.record_partition(job, wk.partition)
            if not job.partitions_left:
                self._end_job(job, *job.outcome())
            return
        self._end_job(job, "failed", f"partition {wk.partition} failed: {r['error']}")

    def _retry(self, wk: WorkKey, reason: str) -> None:
        job = self._books.jobs.get(wk.job_id)
        if job is None or job.finished or self._books.sched.live(wk.job_id, wk.partition) != wk:
            return
        p = job.partitions[wk.partition]
        p.error = reason
        if wk.attempt + 1 >= self.config.max_attempts:
            self._books.sched.give_up(wk)
            p.state = "failed"
            n = wk.attempt + 1
            self._end_job(
                job,
                "failed",
                f"partition {wk.partition} failed after {n} attempt{'s' if n > 1 else ''}: "
                f"{reason}",
            )
            return
        log.warning(
            "job %s partition %d attempt %d: %s; retrying",
            wk.job_id,
            wk.partition,
            wk.attempt,
            reason,
        )
        self._books.counters["retries"] += 1
        new = self._books.sched.retry(wk, SYNTH_QUEUE)
        p.state, p.node, p.queued_at = "pending", None, time.time()
        self._books.event("retry", wk.job_id, wk.partition, new.attempt)

    # ================================================================ status
    def snapshot(self) -> dict:
        """GET /status: the local engine's shape, over every node, plus `nodes` and a `node`
        field on every worker, finalizer, synthesis worker and partition."""
        from cuzk.cluster.farm_status import farm_snapshot

        if self.stopped.is_set():
            raise RuntimeError("the gateway has stopped")
        with self._books.lock:
            return farm_snapshot(self)


def _cause(ray, e: BaseException):
    """The exception a node raised, out of Ray's wrapper."""
    if isinstance(e, ray.exceptions.RayTaskError):
        c = getattr(e, "cause", None)
        if isinstance(c, BaseException):
            return c
    return e


def _actor_gone(ray, e: BaseException) -> bool:
    return isinstance(
        e,
        (
            ray.exceptions.RayActorError,
            ray.exceptions.ActorUnavailableError,
            ray.exceptions.ActorDiedError,
        ),
    ) or (isinstance(e, ray.exceptions.RayError) and not isinstance(e, ray.exceptions.RayTaskError))
