"""What a one-shot `cuzk prove` without numpy could not avoid (issue 36's route, measured by
the startup suite): the interpreter's start, loading the native kernel library with ctypes
(its runtime, then its kernels), reading the key and the witness whole into memory of the
process's own (os.preadv, as cuzk.formats.binfile reads a key), and writing the two output
files. No proof is made: the command's own cost can come down to this and no further, while
the process reads its key (a map instead would move the pages' cost into the proof).

Usage (run with -I -S, stdlib only): python numpy_free_floor.py RUNTIME.so KERNELS.so ZKEY
WTNS PROOF_JSON PUBLIC_JSON
"""

import ctypes
import os
import sys


def read_whole(path: str) -> bytearray:
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        buf = bytearray(size)
        view, got = memoryview(buf), 0
        while got < size:
            n = os.preadv(fd, [view[got:]], got)
            if n == 0:
                raise OSError(f"{path}: shorter than its size")
            got += n
        return buf
    finally:
        os.close(fd)


def main(argv) -> int:
    runtime, kernels, zkey, wtns, proof, public = argv
    ctypes.CDLL(runtime, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
    ctypes.CDLL(kernels, mode=os.RTLD_NOW)
    key, witness = read_whole(zkey), read_whole(wtns)
    for path, text in ((proof, "{}\n"), (public, "[]\n")):
        with open(path, "w") as f:
            f.write(text)
    return 0 if len(key) and len(witness) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
