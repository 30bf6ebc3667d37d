"""bench.bench_scale.TreePeak: a process tree's peak memory, the engine's shared-memory
segments counted by their allocated pages whether mapped or not, once. The tree measured is a
child of its own (the test process may hold other tests' engines and their segments)."""

import subprocess
import sys
import time

import pytest

from bench.bench_scale import TreePeak
from cuzk.engine.buffers import Segment, segment_name
from cuzk.pages import release

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, /dev/shm")

# The child maps the segment named on its stdin and fills it, then unmaps it when told.
CHILD = """
import sys
from cuzk.engine.buffers import Segment
print("ready", flush=True)
seg = Segment.attach(sys.stdin.readline().strip())
a = seg.array((1 << 20, 4))
a[:] = 1
print("mapped", flush=True)
sys.stdin.readline()
del a
seg.close()
print("unmapped", flush=True)
sys.stdin.readline()
"""


def _peak_kib(pid: int, seconds=0.6) -> int:
    with TreePeak(pid, every=0.05) as peak:
        time.sleep(seconds)
    return peak.pss_kib


def test_a_segment_counts_once_mapped_or_not_and_not_after_its_pages_go():
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    seg = None
    try:
        assert child.stdout.readline().strip() == "ready"  # (its imports done)
        base = _peak_kib(child.pid)
        seg = Segment.create(segment_name("peak-test", pid=child.pid), 32 << 20)  # the tree's
        seg.close()  # (this process keeps no mapping)
        child.stdin.write(seg.name + "\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "mapped"
        mapped = _peak_kib(child.pid) - base
        assert 28 << 10 < mapped < 40 << 10, mapped  # once, not also as the child's PSS
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "unmapped"
        unmapped = _peak_kib(child.pid) - base
        assert 28 << 10 < unmapped < 40 << 10, unmapped  # unmapped: still allocated, counted
        again = Segment.attach(seg.name)
        release(again.array((1 << 20, 4)))
        again.close()
        assert _peak_kib(child.pid) - base < 8 << 10  # handed back: gone from the count
    finally:
        child.kill()
        child.wait()
        if seg is not None:
            seg.unlink()
