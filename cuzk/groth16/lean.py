"""`cuzk prove` without numpy: a Groth16 proof on the native library's kernels, driven from
plain buffers.

A one-shot command that imports numpy pays ~50-90 ms for it before any work (issue 36: the
command's own cost was 90-170 ms at 2^12-2^16 against ~20-40 ms for what it cannot avoid:
the interpreter, the library, reading the key and the witness). This module proves the
common case, a Groth16 key and a witness file on the CPU with the native library built for
the key's curve, without numpy: each section of the key and the witness is read into a
bytearray of its own (os.preadv), the library's kernels take their addresses and shapes
(cuzk.native.entries: the same entries the full path calls through numpy), and the plans
are the full path's own (cuzk.kernels.msm_plan, cuzk.kernels.ntt_plan), so the two make the
same kernel calls for the same key and witness. The proof is checked as the full path checks
it (the key's header and every point section it reads, the coefficients' indices, the
witness's values; the proof's points in their groups and, unless --no-verify, the pairing
equation: cuzk.groth16.verifier with this module's ops), then written as snarkjs writes it.

``prove`` returns False, having written nothing, for everything it does not take: another
protocol (PLONK), another device, no library for the curve (CUZK_NATIVE=0), and any input it
finds wrong or unusual. The full path (cuzk.groth16.files.run_prove) then runs from the start
and words the error, so every message stays the one the full reader gives; a valid input
that this module declines is proved there, only slower.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct
import sys
import time

from cuzk.formats.errors import FormatError

G16 = 1  # the zkey's protocol id for Groth16
ZKEY_VERSION = 1
WTNS_VERSIONS = (1, 2)
# zkey sections (cuzk.formats.zkey)
HEADER, GROTH16_HEADER, IC, COEFS = 1, 2, 3, 4
POINTS = {"points_a": 5, "points_b1": 6, "points_b2": 7, "points_c": 8, "points_h": 9}
COEF_BYTES = 44  # u32 matrix, u32 constraint, u32 signal, 32-byte value
N8 = 32  # bytes of an Fr element (both curves)


class NotTaken(Exception):
    """This module does not prove this job: the full path does (and words any error)."""


def _debug(message: str, *args) -> None:
    logging = sys.modules.get("logging")  # configured by --timings (cuzk.groth16.local_cli)
    if logging is not None:
        logging.getLogger("cuzk.groth16").debug(message, *args)


class _Phase:
    """Times a step as cuzk.groth16.stages.phase does (the same names under --timings)."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        _debug("%s: %.2f ms", self.name, (time.perf_counter() - self.t0) * 1e3)


# --- files ------------------------------------------------------------------------------------


class _Container:
    """An iden3 container (magic, version, sections) read with preads: its section table, and
    each section's payload read into a bytearray of its own when asked for (8-byte aligned
    rows for the kernels). Anything but a plain, whole file with one section per id is
    NotTaken."""

    def __init__(self, path, kind: bytes, versions):
        self.path = os.fspath(path)
        self.fd = os.open(self.path, os.O_RDONLY)
        try:
            st = os.fstat(self.fd)
            if not stat.S_ISREG(st.st_mode):
                raise NotTaken("not a regular file")
            size = st.st_size
            head = self.read_at(0, 12)
            magic, version, n = struct.unpack("<4sII", head)
            if magic != kind or version not in versions:
                raise NotTaken("magic or version")
            self.sections: dict[int, tuple[int, int]] = {}
            pos = 12
            for _ in range(n):
                sid, length = struct.unpack("<IQ", self.read_at(pos, 12))
                pos += 12
                if pos + length > size or sid in self.sections:
                    raise NotTaken("section table")
                self.sections[sid] = (pos, length)
                pos += length
        except BaseException:
            os.close(self.fd)
            raise

    def close(self) -> None:
        os.close(self.fd)

    def read_at(self, offset: int, n: int, into: bytearray | None = None) -> bytearray:
        """n bytes from ``offset``: a new bytearray, or at the start of ``into``."""
        buf = bytearray(n) if into is None else into
        view, got = memoryview(buf), 0
        while got < n:
            k = os.preadv(self.fd, [view[got:n]], offset + got)
            if k == 0:
                raise NotTaken("file ends early")
            got += k
        return buf

    def size(self, sid: int) -> int:
        if sid not in self.sections:
            raise NotTaken(f"no section {sid}")
        return self.sections[sid][1]

    def read(self, sid: int, skip: int = 0, into: bytearray | None = None) -> bytearray:
        """The section's payload from byte ``skip``: a new bytearray, or ``into`` (at least as
        long) with it at its start: the point sections share one buffer, faulted in once."""
        offset, length = self.sections[sid]
        return self.read_at(offset + skip, length - skip, into)


# --- the library ------------------------------------------------------------------------------


def _addr(buf: bytearray, offset: int = 0) -> int:
    """The address of buf[offset] (buf must stay alive and unresized while it is used)."""
    if len(buf) == 0:
        return 0
    return ctypes.addressof(ctypes.c_char.from_buffer(buf)) + offset


# --- the curve's numbers ----------------------------------------------------------------------


class _Curve:
    """What the driver needs of a cuzk.formats.curve Curve: sizes, Montgomery conversions."""

    def __init__(self, curve):
        from cuzk.arith.curves import constants

        self.info = curve
        self.arith = curve.arith
        self.nq = curve.q_limbs
        self.fq_bytes = 8 * self.nq
        self.g1 = 2 * self.fq_bytes  # bytes of a stored point
        self.g2 = 4 * self.fq_bytes
        self.q, self.r = curve.q, curve.r
        self.mont = 1 << (64 * self.nq)
        self.mont_inv = pow(self.mont, -1, self.q)
        self.r_bits = self.r.bit_length()
        k = constants(curve.arith)
        self.two_adicity = k.FR_TWO_ADICITY
        self.roots = k.fr_roots_of_unity()

    def fq(self, raw, j: int) -> int:
        """Coordinate j (plain int) of a stored point's Montgomery limbs."""
        v = int.from_bytes(raw[j * self.fq_bytes : (j + 1) * self.fq_bytes], "little")
        return v * self.mont_inv % self.q

    def fq_stored(self, x: int) -> bytes:
        return (x * self.mont % self.q).to_bytes(self.fq_bytes, "little")

    def below_q(self, raw) -> bool:
        n = len(raw) // self.fq_bytes
        return all(
            int.from_bytes(raw[j * self.fq_bytes : (j + 1) * self.fq_bytes], "little") < self.q
            for j in range(n)
        )

    def g1_point(self, raw):
        if not any(raw):
            return None
        return (self.fq(raw, 0), self.fq(raw, 1))

    def g2_point(self, raw):
        if not any(raw):
            return None
        return ((self.fq(raw, 0), self.fq(raw, 1)), (self.fq(raw, 2), self.fq(raw, 3)))

    def g1_stored(self, p) -> bytes:
        if p is None:
            return bytes(self.g1)
        return self.fq_stored(p[0]) + self.fq_stored(p[1])

    def g2_stored(self, p) -> bytes:
        if p is None:
            return bytes(self.g2)
        (x0, x1), (y0, y1) = p
        return b"".join(self.fq_stored(v) for v in (x0, x1, y0, y1))

    def fr_plain(self, k: int) -> bytes:
        return (k % self.r).to_bytes(N8, "little")

    def fr_mont(self, k: int) -> bytes:
        return ((k % self.r) * (1 << 256) % self.r).to_bytes(N8, "little")


# --- MSMs (cuzk.kernels.msm_cpu's _msm, on buffers) -----------------------------------------


def _msm(lib, cv: _Curve, g: int, points, n: int, scalars, s_off: int = 0) -> bytearray:
    """sum_i scalars[i] points[i] over n rows of G{g} (points: a bytearray of stored rows;
    scalars: plain 4-limb rows from byte s_off of their bytearray), as one stored affine row.
    The plan is msm_cpu's: the classes by size from PARTITION_MIN points, one dense class in
    order, the sums of ones, a Pippenger over each other class."""
    from cuzk.kernels import msm_plan as plan

    width = cv.g1 if g == 1 else cv.g2  # bytes a row
    limbs = width // 8
    out = bytearray(width)
    if n == 0:
        return out
    rows = plan.CHUNK_BYTES // width
    threads = lib.runtime.get_num_threads()
    nbits = cv.r_bits
    P = _addr(points)
    S = _addr(scalars, s_off)
    every = bytearray(0)

    def pippenger(idx, m, bits, part, k):
        c = plan.window_bits(m, bits, threads)
        K = 0 if c == 1 else plan.windows_for(c, bits)
        digits_t = plan.digit_type(c, bits)
        digits = bytearray(K * m * (2 if digits_t == "int16" else 4))
        lib.call(
            f"pippenger_g{g}_{digits_t}",
            P,
            n,
            limbs,
            S,
            n,
            4,
            _addr(idx),
            len(idx) // 4 if idx is not every else 0,
            bits,
            c,
            plan.LANES,
            rows,
            threads,
            _addr(digits),
            K,
            m,
            _addr(part, k * width),
            1,
            limbs,
        )

    if n < plan.PARTITION_MIN:
        pippenger(every, n, nbits, out, 0)
        return out
    bits = bytearray(2 * n)
    lib.call(f"scalar_classes_g{g}", P, n, limbs, S, n, 4, _addr(bits), n)
    hist_buf = bytearray(8 * (nbits + 1))
    lib.call(f"bits_histogram_g{g}", _addr(bits), n, _addr(hist_buf), nbits + 1)
    hist = list(memoryview(hist_buf).cast("q"))
    classes = plan.plan_classes(hist, nbits)
    if not classes:
        return out
    parts = bytearray(len(classes) * width)
    for k, (lo, hi, count, top) in enumerate(classes):
        if len(classes) == 1 and top >= nbits - 1:
            pippenger(every, n, nbits, parts, k)
            continue
        idx = bytearray(4 * count)
        m = lib.call(f"class_index_g{g}", _addr(bits), n, lo, hi, _addr(idx), count, returns=True)
        if m != count:
            raise RuntimeError(f"class [{lo}, {hi}]: {m} indices, the histogram says {count}")
        if top <= 1:
            lib.call(
                f"points_sum_g{g}",
                P,
                n,
                limbs,
                _addr(idx),
                m,
                rows,
                threads,
                _addr(parts, k * width),
                1,
                limbs,
            )
        else:
            pippenger(idx, m, top, parts, k)
    if len(classes) == 1:
        return parts
    lib.call(f"rows_sum_g{g}", _addr(parts), len(classes), limbs, _addr(out), 1, limbs)
    return out


def _sum(lib, cv, g, rows, ks) -> bytearray:
    """sum_i ks[i] rows[i] (stored rows of G{g}, ints): the blinding sums of the proof."""
    points = bytearray(b"".join(bytes(r) for r in rows))
    scalars = bytearray(b"".join(cv.fr_plain(k) for k in ks))
    return _msm(lib, cv, g, points, len(rows), scalars)


# --- the verifier's ops (cuzk.groth16.verifier backend) --------------------------------------


class _Ops:
    """The verifier's subgroup test, pairing product and linear combination on the library,
    on plain buffers (cuzk.kernels.verifier_ops does the same through numpy); anything else
    (the G1 subgroup test) is cuzk.arith.pairing_int's."""

    def __init__(self, lib, cv: _Curve):
        from cuzk.arith import pairing_int

        self._lib, self._cv = lib, cv
        self._int = pairing_int.for_curve(cv.arith)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._int, name)

    def g2_in_subgroup(self, p) -> bool:
        if p is None:
            return True
        row = bytearray(self._cv.g2_stored(p))
        out = bytearray(1)
        self._lib.call("g2_rows_in_subgroup", _addr(row), 1, 4 * self._cv.nq, _addr(out), 1)
        return bool(out[0])

    def pairing_product_is_one(self, pairs) -> bool:
        cv, n, nq = self._cv, len(pairs), self._cv.nq
        ps = bytearray(b"".join(cv.g1_stored(p) for p, _ in pairs))
        qs = bytearray(b"".join(cv.g2_stored(q) for _, q in pairs))
        one = self._lib.call(
            "pairing_product_is_one",
            _addr(ps),
            n,
            2,
            nq,
            _addr(qs),
            n,
            2,
            2,
            nq,
            returns=True,
        )
        return bool(one)

    def g1_linear_combination(self, points, scalars):
        if not points:
            return None
        cv = self._cv
        row = _sum(self._lib, cv, 1, [cv.g1_stored(p) for p in points], scalars)
        return cv.g1_point(row)


# --- the proof --------------------------------------------------------------------------------


def _first_bad(lib, rows: bytearray, n: int, limbs: int, test: int) -> int:
    """The first of n stored rows that fails row test ``test`` (cuzk.groth16.row_tests), or -1."""
    from cuzk.groth16.row_tests import CHUNK

    if n == 0:
        return -1
    chunks = (n + CHUNK - 1) // CHUNK
    first = bytearray(8 * chunks)
    lib.call("first_bad", _addr(rows), n, limbs, _addr(first), chunks, test)
    bad = [i for i in memoryview(first).cast("q") if i >= 0]
    return min(bad) if bad else -1


def _powers(lib, cv, base: int, count: int, rev_bits: int, threads: int) -> bytearray:
    """ntt_cpu.powers_table on a buffer: base^i (Montgomery) for i < count, in the chunks
    cuzk.kernels.ntt_plan.power_chunks gives, bit-reversed with rev_bits."""
    from cuzk.kernels.ntt_plan import power_chunks

    out = bytearray(32 * count)
    starts = power_chunks(count, threads)
    nchunks = len(starts) - 1
    starts_buf = bytearray(struct.pack(f"<{nchunks + 1}q", *starts))
    firsts = bytearray(b"".join(cv.fr_mont(pow(base, s, cv.r)) for s in starts[:-1]))
    base_buf = bytearray(cv.fr_mont(base))
    lib.call(
        "powers",
        _addr(out),
        count,
        4,
        _addr(base_buf),
        4,
        _addr(starts_buf),
        nchunks + 1,
        _addr(firsts),
        nchunks,
        4,
        rev_bits,
    )
    return out


def _compute_h(lib, cv, a, b, c, log_n: int) -> bytearray:
    """ntt_cpu.compute_h on buffers: h (plain form) into a's storage."""
    from cuzk.kernels.ntt_plan import blocking, schedule

    n = 1 << log_n
    threads = lib.runtime.get_num_threads()
    tw = _powers(lib, cv, cv.roots[log_n], n // 2, 0, threads)
    g_rev = _powers(lib, cv, cv.roots[log_n + 1], n, log_n, threads)
    inv_n = pow(n, -1, cv.r)
    n_mont = bytearray(cv.fr_mont(n))
    inv_n2 = bytearray(cv.fr_plain(inv_n * inv_n))
    with schedule(log_n, lib.runtime):
        vec = (n, 4)
        lib.call(
            "h_pipeline",
            _addr(a),
            *vec,
            _addr(b),
            *vec,
            _addr(c),
            *vec,
            _addr(a),
            *vec,
            _addr(tw),
            n // 2,
            4,
            _addr(g_rev),
            n,
            4,
            log_n,
            *blocking(log_n),
            _addr(n_mont),
            4,
            _addr(inv_n2),
            4,
        )
    return a


def _strided(base: int, n: int, field_offset: int, itemsize: int, inner: int = 0):
    """A field of the coefficient entries as the library's strided argument: address, span in
    items, shape, strides (cuzk.native._c_args)."""
    from cuzk.native import strided_span

    shape, strides = ((n, inner), (COEF_BYTES, itemsize)) if inner else ((n,), (COEF_BYTES,))
    return (base + field_offset, strided_span(shape, strides, itemsize), *shape, *strides)


def prove(zkey, wtns, proof_json, public_json, verify: bool = True, device: str = "cpu") -> bool:
    """Prove and write proof_json / public_json (both or neither), or return False having
    written nothing: the full path (cuzk.groth16.files.run_prove) takes every case this one
    does not (see the module's doc)."""
    if device != "cpu":
        return False
    try:
        return _prove(zkey, wtns, proof_json, public_json, verify)
    except (NotTaken, FormatError, OSError, ValueError):
        return False


def _random_scalar(r: int) -> int:
    """A uniformly random nonzero element of Fr from the OS's cryptographic source (as
    cuzk.groth16.stages.random_scalar)."""
    import secrets

    while True:
        k = secrets.randbelow(r)
        if k:
            return k


def _key_curve(f: _Container):
    """The key's curve from its Groth16 header (cuzk.formats.zkey.read_primes's checks)."""
    from cuzk.formats import curve as curves

    head = f.read(GROTH16_HEADER)
    n8q = struct.unpack_from("<I", head, 0)[0]
    if n8q not in (c.n8q for c in curves.CURVES.values()) or len(head) < 4 + n8q + 4 + N8:
        raise NotTaken("n8q")
    curve = curves.by_q(int.from_bytes(head[4 : 4 + n8q], "little"))
    if curve is None or curve.n8q != n8q:
        raise NotTaken("q")
    pos = 4 + n8q
    if struct.unpack_from("<I", head, pos)[0] != curve.n8r:
        raise NotTaken("n8r")
    if int.from_bytes(head[pos + 4 : pos + 4 + curve.n8r], "little") != curve.r:
        raise NotTaken("r")
    return curve, head, pos + 4 + curve.n8r


def _prove(zkey, wtns, proof_json, public_json, verify: bool) -> bool:
    from cuzk import native
    from cuzk.formats.atomic import check_apart

    check_apart((proof_json, public_json), (zkey, wtns, None))
    key = _Container(zkey, b"zkey", (ZKEY_VERSION,))
    try:
        with native.used(True):  # (CUZK_NATIVE=0 keeps it off: no library, not taken)
            return _prove_key(key, wtns, proof_json, public_json, verify)
    finally:
        key.close()


def _prove_key(key: _Container, wtns, proof_json, public_json, verify) -> bool:
    from cuzk import native
    from cuzk.formats.atomic import check_outputs
    from cuzk.groth16 import row_tests

    if key.size(HEADER) != 4 or struct.unpack("<I", key.read(HEADER))[0] != G16:
        raise NotTaken("not a Groth16 key")
    curve, head, pos = _key_curve(key)
    cv = _Curve(curve)
    g1w, g2w = cv.g1, cv.g2
    if len(head) != pos + 12 + 3 * (g1w + g2w):
        raise NotTaken("header size")
    n_vars, n_public, domain = struct.unpack_from("<III", head, pos)
    pos += 12
    if n_public + 1 > n_vars or domain < 2 or domain & (domain - 1):
        raise NotTaken("sizes")
    log_n = domain.bit_length() - 1
    if log_n > curve.fr_two_adicity - 1:
        raise NotTaken("domain")
    if not native.serves(cv.arith):
        return False
    lib = native.library(cv.arith)  # a cuzk.native.Library: call() takes addresses
    header = {}
    for name, w in (
        ("alpha1", g1w),
        ("beta1", g1w),
        ("beta2", g2w),
        ("gamma2", g2w),
        ("delta1", g1w),
        ("delta2", g2w),
    ):
        header[name] = bytes(head[pos : pos + w])
        pos += w
    counts = {
        "points_a": (n_vars, g1w),
        "points_b1": (n_vars, g1w),
        "points_b2": (n_vars, g2w),
        "points_c": (n_vars - n_public - 1, g1w),
        "points_h": (domain, g1w),
    }
    for attr, (count, w) in counts.items():
        if key.size(POINTS[attr]) != count * w:
            raise NotTaken(f"{attr} size")
    if key.size(IC) != (n_public + 1) * g1w:
        raise NotTaken("IC size")
    n_coefs = (
        struct.unpack("<I", key.read_at(key.sections[COEFS][0], 4))[0]
        if key.size(COEFS) >= 4
        else -1
    )
    if n_coefs <= 0 or key.size(COEFS) != 4 + n_coefs * COEF_BYTES:
        raise NotTaken("coefficients")

    # the verifying key: header points (validate_key's checks) and IC, on the library
    vk, ops = _verifying_key(lib, cv, key, header, n_public)

    # the witness (cuzk.formats.wtns.read_wtns and the key's checks)
    w = _witness(lib, cv, wtns, n_vars)
    check_outputs(proof_json, public_json)  # before the work, as the full path

    with _Phase("synthesize"):
        coefs = key.read(COEFS, 4)
        base = _addr(coefs)
        fields = (
            _strided(base, n_coefs, 0, 4)
            + _strided(base, n_coefs, 4, 4)
            + _strided(base, n_coefs, 8, 4)
        )
        bad = lib.call("first_bad_coefficient", *fields, domain, n_vars, returns=True)
        if bad >= 0:
            raise NotTaken("coefficient index")
        a, b, c = (bytearray(32 * domain) for _ in range(3))
        vec = (domain, 4)
        lib.call(
            "evaluate_abc",
            *fields,
            *_strided(base, n_coefs, 12, 8, inner=4),
            _addr(w),
            n_vars,
            4,
            _addr(a),
            *vec,
            _addr(b),
            *vec,
            _addr(c),
            *vec,
        )
        del coefs
    with _Phase("compute H (NTT pipeline)"):
        h = _compute_h(lib, cv, a, b, c, log_n)
        del b, c

    results = {}
    tests = {1: row_tests.ON_CURVE_G1, 2: row_tests.ON_CURVE_G2}
    pool = bytearray(max(count * width for count, width in counts.values()))
    for attr, name, g, scalars, s_off in (
        ("points_a", "MSM A", 1, w, 0),
        ("points_b1", "MSM B1", 1, w, 0),
        ("points_c", "MSM C", 1, w, 32 * (n_public + 1)),
        ("points_h", "MSM H", 1, h, 0),
        ("points_b2", "MSM B2 (G2)", 2, w, 0),
    ):
        count, width = counts[attr]
        with _Phase(name):
            pts = key.read(POINTS[attr], into=pool)
            if _first_bad(lib, pts, count, width // 8, tests[g]) >= 0:
                raise NotTaken(f"a point of {attr}")  # the full path names it
            results[attr] = _msm(lib, cv, g, pts, count, scalars, s_off)
    del h, pool, pts

    r = _random_scalar(cv.r)
    s = _random_scalar(cv.r)
    with _Phase("assemble"):
        d1 = header["delta1"]
        pi_a = _sum(lib, cv, 1, [header["alpha1"], results["points_a"], d1], [1, 1, r])
        pi_b = _sum(
            lib, cv, 2, [header["beta2"], results["points_b2"], header["delta2"]], [1, 1, s]
        )
        b1s = _sum(lib, cv, 1, [header["beta1"], results["points_b1"], d1], [1, 1, s])
        pi_c = _sum(
            lib,
            cv,
            1,
            [results["points_c"], results["points_h"], pi_a, b1s, d1],
            [1, 1, s, r, -(r * s)],
        )
    public = [int.from_bytes(w[32 * i : 32 * (i + 1)], "little") for i in range(1, n_public + 1)]
    points = (cv.g1_point(pi_a), cv.g2_point(pi_b), cv.g1_point(pi_c))

    from cuzk.groth16.verifier import Proof
    from cuzk.groth16.verifier import verify as check

    try:  # the proof's points on their curves and in their groups, verified or not
        pts = Proof.from_points(*points, backend=ops, curve=curve)
    except FormatError:
        raise NotTaken("the proof's points") from None
    if verify and not check(vk, public, pts, backend=ops):
        raise NotTaken("the proof does not verify")
    from cuzk.formats.snarkjs_json import write_proof_and_public

    write_proof_and_public(proof_json, public_json, points, public, curve)
    return True


def _verifying_key(lib, cv: _Curve, key: _Container, header: dict, n_public: int):
    """The checked VerifyingKey of the key (cuzk.groth16.validate.validate_key's header and IC
    checks), and the verifier's ops on the library."""
    from cuzk.formats.snarkjs_json import check_g1
    from cuzk.groth16 import row_tests
    from cuzk.groth16.verifier import VerifyingKey

    for raw in header.values():
        if any(raw) and not cv.below_q(raw):
            raise NotTaken("a header coordinate")
    ops = _Ops(lib, cv)
    for name in ("beta1", "delta1"):  # (not in the verifying key) on the curve
        check_g1(cv.g1_point(header[name]), name, cv.info)
    ic_raw = key.read(IC)
    if _first_bad(lib, ic_raw, n_public + 1, cv.g1 // 8, row_tests.ON_CURVE_G1) >= 0:
        raise NotTaken("IC")
    ic = [cv.g1_point(ic_raw[i * cv.g1 : (i + 1) * cv.g1]) for i in range(n_public + 1)]
    vk = VerifyingKey.from_points(
        cv.g1_point(header["alpha1"]),
        cv.g2_point(header["beta2"]),
        cv.g2_point(header["gamma2"]),
        cv.g2_point(header["delta2"]),
        ic,
        n_public,
        key.path,
        ops,
        cv.info,
    )
    if ops.G1_COFACTOR != 1:
        for name in ("beta1", "delta1"):
            p = cv.g1_point(header[name])
            if p is not None and not ops.g1_in_subgroup(p):
                raise NotTaken(f"{name} outside G1")
    return vk, ops


def _witness(lib, cv: _Curve, path, n_vars: int) -> bytearray:
    """The witness's values (plain 4-limb rows), checked as cuzk.formats.wtns.read_wtns and the
    key check them: the key's prime, nVars values, w[0] = 1, every value below r."""
    f = _Container(path, b"wtns", WTNS_VERSIONS)
    try:
        if f.size(1) != 4 + N8 + 4:
            raise NotTaken("wtns header")
        head = f.read(1)
        if struct.unpack_from("<I", head, 0)[0] != N8:
            raise NotTaken("n8")
        if int.from_bytes(head[4 : 4 + N8], "little") != cv.r:
            raise NotTaken("another prime")
        count = struct.unpack_from("<I", head, 4 + N8)[0]
        if count != n_vars or f.size(2) != count * N8:
            raise NotTaken("wtns count")
        w = f.read(2)
    finally:
        f.close()
    if w[:N8] != (1).to_bytes(N8, "little"):
        raise NotTaken("w[0]")
    r = bytearray(cv.r.to_bytes(N8, "little"))
    if lib.call("first_not_below", _addr(w), n_vars, 4, _addr(r), 4, returns=True) >= 0:
        raise NotTaken("a witness value")
    return w
