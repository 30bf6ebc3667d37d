"""bench.bench_scale.TreePeak: a process tree's peak memory, the engine's shared-memory
segments counted by their allocated pages whether mapped or not, once."""

import os
import sys
import time

import pytest

from bench.bench_scale import TreePeak
from cuzk.engine.buffers import Segment, segment_name
from cuzk.pages import release

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, /dev/shm")


def _peak_kib(seconds=0.6) -> int:
    with TreePeak(os.getpid(), every=0.05) as peak:
        time.sleep(seconds)
    return peak.pss_kib


def test_a_segment_counts_once_mapped_or_not_and_not_after_its_pages_go():
    base = _peak_kib()
    seg = Segment.create(segment_name("peak-test"), 32 << 20)  # named by this pid: ours
    try:
        a = seg.array((1 << 20, 4))
        a[:] = 1  # 32 MiB allocated, mapped here
        mapped = _peak_kib() - base
        assert 28 << 10 < mapped < 40 << 10, mapped  # once, not also as this process's PSS
        del a
        seg.close()  # unmapped: still allocated, still counted
        unmapped = _peak_kib() - base
        assert 28 << 10 < unmapped < 40 << 10, unmapped
        again = Segment.attach(seg.name)
        release(again.array((1 << 20, 4)))
        again.close()
        assert _peak_kib() - base < 8 << 10  # handed back: gone from the count
    finally:
        seg.unlink()
