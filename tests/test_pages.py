"""cuzk.pages.release: a dead array's pages handed back where it lives in a shared mapping (a
partition's buffers segment), nothing elsewhere."""

import platform
import sys

import numpy as np
import pytest

from cuzk.engine.buffers import Segment, segment_name
from cuzk.pages import release

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MADV_REMOVE is Linux's")
glibc = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="the allocator's threshold is glibc's",
)


def _shmem_kib() -> int:
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss_Shmem:"):
                return int(line.split()[1])
    return 0


@linux
def test_a_shared_buffer_gives_its_whole_pages_back_and_keeps_its_ends():
    seg = Segment.create(segment_name("pages-test"), 16 << 20)
    try:
        a = seg.array((1 << 19, 4))
        a[:] = 7
        before = _shmem_kib()
        dead = a[1:-1]  # starts and ends inside a page that neighbours share
        freed = release(dead)
        assert freed > (16 << 20) - 3 * 4096 and freed % 4096 == 0
        assert before - _shmem_kib() >= freed // 1024 - 8
        assert (a[0] == 7).all() and (a[-1] == 7).all()  # the edge pages kept
        assert not a[1000].any()  # a freed page reads zeros
    finally:
        del a, dead
        seg.close()
        seg.unlink()


def test_private_and_strided_arrays_are_left_alone():
    x = np.full((1 << 18, 4), 5, np.uint64)
    assert release(x) == 0 and (x == 5).all()  # its owner frees it
    assert release(x[::2]) == 0
    assert release(np.zeros(3, np.uint64)) == 0  # less than a page
    assert release("not an array") == 0


@glibc
@pytest.mark.parametrize("fixed", [False, True], ids=["glibc-default", "fixed"])
def test_large_blocks_go_back_to_the_system_when_freed(fixed):
    """After large_blocks_to_the_system (the daemon's processes), arrays of a few MiB freed
    below one still held leave the process's resident memory; by glibc's default (its
    threshold raised by a 16 MiB block freed) they stay in its heap."""
    import subprocess

    code = (
        "import sys, numpy as np\n"
        "from cuzk.pages import large_blocks_to_the_system\n"
        "def anon():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('RssAnon:'):\n"
        "            return int(line.split()[1])\n"
        f"assert {not fixed} or large_blocks_to_the_system()\n"
        "big = np.ones(16 << 20, np.uint8); del big\n"
        "before = anon()\n"
        "xs = [np.ones(8 << 20, np.uint8) for _ in range(8)]\n"
        "keep = np.ones(2 << 20, np.uint8)\n"
        "del xs\n"
        "print(anon() - before)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    kept_kib = int(out.stdout)
    if fixed:
        assert kept_kib < 8 << 10, out.stdout  # the 2 MiB held, none of the 64 freed
    else:
        assert kept_kib > 48 << 10, out.stdout  # (what the setting is for)


def test_a_resident_keys_coefficients_leave_the_process_piece_by_piece(monkeypatch):
    """A synthesis process reads a resident key's coefficients once a proof: from
    RELEASE_MIN_BYTES on, in pieces of CHECK_ROWS entries, each dropped from its resident set
    once used (the page cache keeps them); a, b, c come out the same as from one pass, and
    again at the next synthesis, read back."""
    from conftest import fixture_circuit

    from cuzk.formats import zkey as zkey_module
    from cuzk.formats.binfile import BinFile
    from cuzk.groth16 import key as key_module
    from cuzk.groth16 import load_witness, stages
    from cuzk.groth16.key import ProvingKey

    circuit = fixture_circuit("toyhash")
    key = ProvingKey.open(circuit.zkey)  # resident: mapped
    w = load_witness(circuit.witness(0), key)
    released = []
    real = BinFile.release
    monkeypatch.setattr(BinFile, "release", lambda f, v: released.append(len(v)) or real(f, v))
    whole = stages.synthesize(key, w)
    assert released == []  # a small key's section: one pass, kept mapped
    n = key.zkey.section_rows("coefficients")
    monkeypatch.setattr(key_module, "RELEASE_MIN_BYTES", 0)
    monkeypatch.setattr(zkey_module, "CHECK_ROWS", 1000)
    pieces = stages.synthesize(key, w)
    assert released == [min(1000, n - lo) for lo in range(0, n, 1000)] and len(released) > 2
    again = stages.synthesize(key, w)  # read back from the page cache
    for x, y, z in zip(
        (whole.a, whole.b, whole.c),
        (pieces.a, pieces.b, pieces.c),
        (again.a, again.b, again.c),
        strict=True,
    ):
        assert np.array_equal(x, y) and np.array_equal(y, z)
    read = ProvingKey.open(circuit.zkey, resident=False)  # a key read into memory: one pass
    assert [last for _piece, last in read.coefficient_pieces()] == [True]
