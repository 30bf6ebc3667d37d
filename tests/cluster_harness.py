"""A Ray cluster on this machine for the cluster tests: a head and prover nodes, loopback only.

`farm(n_nodes)` is a fixture body (`yield from farm(3)` in a module-scoped fixture): it moves
pytest's thread into a network namespace that has only loopback (cuzk.testing.netns: Ray
binds and dials the machine's interface address otherwise, and a test must never send
traffic anywhere but loopback), starts `ray.cluster_utils.Cluster` (a head with no CPUs, so
nothing runs there, and nodes with the `cuzk_node` resource and small object stores, fast
health checks), yields a Farm, then shuts everything down, puts pytest's SIGTERM and SIGINT
handlers back (Ray's head node sets its own in the process that starts it: a SIGTERM to pytest
later became a SystemExit in whatever test ran) and returns to the machine's network. One
cluster per module.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field

from need_tool import missing_tool

from cuzk.testing import netns

SYSTEM_CONFIG = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 4,
}
NODE_OBJECT_STORE = 96 * 1024**2


@dataclass
class Farm:
    cluster: object
    nodes: list = field(default_factory=list)  # ray.cluster_utils node handles, in order

    @property
    def address(self) -> str:
        return self.cluster.address

    def add_node(self, **labels):
        node = self.cluster.add_node(
            num_cpus=1,
            resources={"cuzk_node": 1},
            object_store_memory=NODE_OBJECT_STORE,
            labels=labels or None,
        )
        self.nodes.append(node)
        self.cluster.wait_for_nodes()
        return node

    def remove_node(self, node) -> None:
        """Take a node away at once (as a machine that dies: no graceful shutdown)."""
        self.cluster.remove_node(node, allow_graceful=False)
        self.nodes.remove(node)

    def node_id(self, node) -> str:
        return node.node_id

    def top_up(self, n: int) -> None:
        """Add nodes until there are n (after a test removed some)."""
        while len(self.nodes) < n:
            self.add_node()


def farm(n_nodes: int = 3):
    why = netns.available()
    if why is not None:
        missing_tool(f"the cluster tests run Ray in a loopback-only network namespace: {why}")
    try:
        from ray.cluster_utils import Cluster
    except ImportError:
        missing_tool("ray is not installed (the test extra installs it)")
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    with netns.loopback_only():
        assert netns.interfaces() == ["lo"]
        t0 = time.time()
        cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 0,
                "include_dashboard": False,
                "_system_config": SYSTEM_CONFIG,
            },
        )
        f = Farm(cluster)
        try:
            for _ in range(n_nodes):
                f.add_node()
            print(f"ray cluster of {n_nodes} node(s) up in {time.time() - t0:.1f} s")
            yield f
        finally:
            cluster.shutdown()
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
