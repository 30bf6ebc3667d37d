"""The node engine: one Ray actor per prover machine, wrapping that machine's local Engine.

The actor runs the same Engine as `cuzk serve` (its supervisor thread, synthesis and device
processes, finalizer threads, its shared-memory status board, so `cuzk top` on the machine
still works) and proves one partition per `prove()` call: the gateway (cuzk.cluster.gateway)
owns the queue, the jobs and the results; a node only proves what it is handed.

Placement and life (set by the gateway, see `actor_options`):
- pinned to its machine by node affinity (not soft) and the custom resource `cuzk_node`;
- named `cuzk-node-<node id>` in the `cuzk` namespace, detached (it outlives the gateway
  that created it, so a restarted gateway re-attaches by name), restartable (max_restarts
  -1: Ray restarts it in place; its calls are not retried: the gateway retries partitions);
- a threaded actor: every outstanding `prove()` waits in its own thread on the engine.

The engine's child processes die with the actor process (PR_SET_PDEATHSIG, cuzk.engine.child):
an actor killed by Ray, or a machine that dies, leaves nothing behind but the work, which the
gateway gives to another node.

Settings: the gateway passes its engine settings; a machine that joined with its own
(`cuzk cluster join --devices ...`, recorded as Ray node labels) overrides them here.

Each partition runs as a one-partition job of the local engine named
`<job id>.<partition>.<attempt>`, so the node's board and logs say which gateway job and
attempt a worker holds. `attach(epoch)` binds the node to one gateway; work submitted under an
older epoch (a gateway that has since restarted) is cancelled there and then.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid

log = logging.getLogger("cuzk.cluster.node")

MAX_CONCURRENCY = 256  # threads of the actor: outstanding prove() calls, status, control


class StaleEpoch(RuntimeError):
    """A call from a gateway that is no longer the one this node is attached to."""


def local_job_id(job_id: str, partition: int, attempt: int) -> str:
    return f"{job_id}.{partition}.{attempt}"


def parse_local_job_id(local: str) -> tuple[str, int, int] | None:
    """(gateway job id, partition, attempt) of a node's job id, None for another name."""
    parts = local.rsplit(".", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return parts[0], int(parts[1]), int(parts[2])


class NodeEngine:
    """One machine's engine (see the module docstring). Every method runs in the actor."""

    def __init__(self, settings: dict, epoch: str):
        import ray

        from cuzk.cluster.labels import from_labels

        ctx = ray.get_runtime_context()
        self.node_id = ctx.get_node_id()
        self.own = from_labels(_flat_labels(ctx.get_node_labels()))
        self.instance = uuid.uuid4().hex[:12]
        self.started_at = time.time()
        self.epoch = epoch
        self._lock = threading.Lock()
        self._keys: dict[tuple, str] = {}  # (path, wasm, size, mtime_ns) -> key id
        self.host = socket.gethostname()
        self.address = ray.util.get_node_ip_address()
        self.engine = None
        self._start_engine(settings)

    def _start_engine(self, settings: dict) -> None:
        """(Re)start the local engine with the gateway's settings, this machine's own on top."""
        from cuzk.engine import Engine
        from cuzk.engine.settings import EngineConfig

        self.gateway_settings = dict(settings)
        self.settings = {**settings, **self.own}
        fields = set(EngineConfig.__dataclass_fields__)
        cfg = EngineConfig(**{k: v for k, v in self.settings.items() if k in fields})
        cfg.instance = f"node-{self.node_id[:8]}"
        cfg.board_name = None
        if self.engine is not None:
            self.engine.stop(0)
            with self._lock:
                self._keys.clear()
        self.engine = Engine(cfg).start(timeout=600)
        log.info(
            "node engine %s (instance %s) on %s: devices %s, board %s%s",
            self.node_id[:8],
            self.instance,
            self.host,
            ",".join(self.engine.config.device_names),
            self.engine.board_name,
            f"; this machine's own settings: {', '.join(sorted(self.own))}" if self.own else "",
        )

    # ------------------------------------------------------------------ identity, liveness
    def info(self) -> dict:
        c = self.engine.config
        return {
            "node_id": self.node_id,
            "host": self.host,
            "address": self.address,
            "pid": os.getpid(),
            "instance": self.instance,
            "started_at": self.started_at,
            "devices": list(c.device_names),
            "capacity": len(c.device_names) * (c.workers_per_device + 1),
            "board": self.engine.board_name,
            "own_settings": sorted(self.own),
            "epoch": self.epoch,
            "running": self.engine.running,
        }

    def attach(self, epoch: str, settings: dict | None = None) -> dict:
        """Serve the gateway of `epoch` from now on: the work of any other is cancelled, and
        the engine restarts when the gateway's settings differ from those it runs with (a
        gateway restarted with other flags; an actor Ray restarted with its first ones)."""
        with self._lock:
            self.epoch = epoch
        dropped = 0
        for j in self.engine.jobs():
            if j["state"] in ("queued", "running") and not self._owned(j["job_id"], epoch):
                dropped += self.engine.cancel(j["job_id"])
        if dropped:
            log.info("attached to gateway %s: %d stale partition(s) cancelled", epoch, dropped)
        if settings is not None and settings != self.gateway_settings:
            log.info("gateway %s has other settings: the engine restarts with them", epoch)
            self._start_engine(settings)
        return self.status()

    def _owned(self, local: str, epoch: str) -> bool:
        return local.startswith(f"{epoch}:")

    def status(self) -> dict:
        """What the gateway shows and routes by: this node's board and keys."""
        return {
            "info": self.info(),
            "snapshot": self.engine.snapshot(),
            "keys": self.engine.keys(),
            "pids": self.engine.process_pids(),
        }

    # ------------------------------------------------------------------ keys
    def register_key(self, path: str, wasm: str | None = None) -> dict:
        """Register a key by path (the same path on every node: a shared key root). Raises
        the engine's errors (FormatError, OSError, WitnessError): the gateway routes none of
        the key's work here then."""
        key_id = self._key(path, wasm)
        for k in self.engine.keys():
            if k["key_id"] == key_id:
                return k
        raise RuntimeError(f"key {key_id} registered but not listed")  # pragma: no cover

    def _key(self, path: str, wasm: str | None) -> str:
        st = os.stat(path)
        stamp = (path, wasm, st.st_size, st.st_mtime_ns)
        with self._lock:
            key_id = self._keys.get(stamp)
        if key_id is not None and any(k["key_id"] == key_id for k in self.engine.keys()):
            return key_id
        key_id = self.engine.register_key(path, wasm=wasm)
        with self._lock:
            self._keys[stamp] = key_id
        return key_id

    def evict_key(self, key_id: str) -> bool:
        from cuzk.engine import UnknownKey

        try:
            return self.engine.evict_key(key_id)
        except UnknownKey:
            return False

    # ------------------------------------------------------------------ work
    def prove(
        self,
        epoch: str,
        job_id: str,
        partition: int,
        attempt: int,
        key_path: str,
        wasm: str | None,
        witness,
        kind: str,
        priority: str,
    ) -> dict:
        """Prove one partition and return its outcome ({"state": "done" | "failed" |
        "cancelled", "proof", "public", timings, "error"}). `witness`: the witness bytes (Ray
        hands the object-store value), a path this machine reads, or, with `wasm`, the
        circuit's inputs as JSON bytes."""
        if epoch != self.epoch:
            raise StaleEpoch(f"node attached to gateway {self.epoch}, not {epoch}")
        key_id = self._key(key_path, wasm)
        local = f"{epoch}:{local_job_id(job_id, partition, attempt)}"
        t0 = time.time()
        if wasm is not None:
            self.engine.submit(key_id, inputs=[witness], kind=kind, priority=priority, job_id=local)
        else:
            self.engine.submit(key_id, [witness], kind=kind, priority=priority, job_id=local)
        del witness  # the engine holds it until the partition is proved, then drops it
        res = self.engine.result(local)
        p = res["partitions"][0]
        error = p["error"] or res["error"]
        if error:  # said of the gateway's job and partition, as a local engine says it
            error = error.replace(f"job {local} partition 0", f"job {job_id} partition {partition}")
            error = error.replace(f"job {local}", f"job {job_id}")
        return {
            "state": res["state"],
            "proof": res["proofs"][0],
            "public": res["public"][0],
            "error": error,
            "synth_ms": p["synth_ms"],
            "witness_ms": p["witness_ms"],
            "abc_ms": p["abc_ms"],
            "gpu_ms": p["gpu_ms"],
            "finalize_ms": p["finalize_ms"],
            "device": p["device"],
            "node_attempts": p["attempts"],
            "node_secs": time.time() - t0,
            "node": self.node_id,
            "instance": self.instance,
        }

    def cancel(self, job_id: str) -> int:
        """Cancel every partition of a gateway job running here."""
        n = 0
        for j in self.engine.jobs():
            tail = j["job_id"].split(":", 1)[-1]
            ids = parse_local_job_id(tail)
            if ids is not None and ids[0] == job_id and j["state"] in ("queued", "running"):
                n += self.engine.cancel(j["job_id"])
        return n

    def stop(self, drain_deadline: float = 0.0) -> None:
        """Stop the engine (its processes, its board), then end the actor for good."""
        import ray

        self.engine.stop(drain_deadline)
        ray.actor.exit_actor()


def _flat_labels(labels: dict) -> dict:
    """Ray hands node labels as str -> str (older) or str -> [str] (newer)."""
    out = {}
    for k, v in (labels or {}).items():
        if isinstance(v, (list, tuple)):
            v = v[0] if v else ""
        out[str(k)] = str(v)
    return out


def actor_options(node_id: str) -> dict:
    """Ray options that pin the node engine to its machine (see the module docstring)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from cuzk.cluster.labels import ACTOR_PREFIX, NAMESPACE, NODE_RESOURCE

    return {
        "name": f"{ACTOR_PREFIX}{node_id}",
        "namespace": NAMESPACE,
        "lifetime": "detached",
        "max_restarts": -1,
        "max_task_retries": 0,
        "max_concurrency": MAX_CONCURRENCY,
        "num_cpus": 0,
        "resources": {NODE_RESOURCE: 1},
        "scheduling_strategy": NodeAffinitySchedulingStrategy(node_id, soft=False),
        "get_if_exists": True,
    }


def node_actor(node_id: str, settings: dict, epoch: str):
    """The node engine actor of a machine: the live one by name, else a new one."""
    import ray

    return ray.remote(NodeEngine).options(**actor_options(node_id)).remote(settings, epoch)
