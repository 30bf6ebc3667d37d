"""`cuzk setup --protocol plonk`: a PLONK key from an .r1cs and a powers-of-tau file, equal
byte for byte to what `snarkjs plonk setup` writes from the same two files.

A PLONK setup draws nothing: the key is a function of the circuit and the ceremony's points,
so the same files make the same bytes. The steps (Gabizon, Williamson, Ciobotaru, "PLONK",
eprint 2019/953, with snarkjs's choices; the layout is cuzk.formats.plonk_zkey's):

Gates. Every gate is qM·a·b + qL·a + qR·b + qO·c + qC = 0 on three wires. First one gate per
public signal s = 1..nPublic (a = s, qL = 1, the rest wire 0 and zero), then each R1CS
constraint A·B = C in order. A linear combination is read as snarkjs reads it: its terms by
ascending signal, a term written twice keeping its last value, a term with a zero factor
kept like any other (a combination is "constant" when signal 0 is its only one, "empty"
when it has none). Then:
  - A or B empty: the gate of C's combination alone (C·w = 0, a sum gate);
  - A constant k (B constant: the same with A and B swapped): the sum gate of k·B − C;
  - else the product gate: with A = fa·a + ka, B = fb·b + kb, C = fc·c + kc (each reduced to
    one signal), qM = fa·fb, qL = fa·kb, qR = ka·fb, qO = −fc, qC = ka·kb − kc.
A sum gate holds three signals (qL, qR, qO their factors, qC the constant). A combination
with more signals than its gate holds is reduced first, front to back: its first two terms
f1·s1 + f2·s2 become a new signal t (nVars, nVars + 1, ... in the order made) by the gate
−f1·s1 − f2·s2 + t = 0 and the addition (s1, s2, f1, f2) the prover replays, and t (factor
1) joins the back of the queue. Unused places are signal 0 with factor 0.

Domain: n = 2^max(3, bits(nGates − 1)). Selectors: qM..qC on the gates, zero past them.

Permutation. Position i of column A, B, C (i < n; past the gates every wire is signal 0)
is the point w^i, k1·w^i, k2·w^i, with k1 = 2, k2 = 3 (snarkjs's: three disjoint cosets of
the domain, checked). Visiting the positions row by row (A, B, C of row 0, then row 1, ...),
each position's sigma is the point of the previous position holding the same signal, the
first one's that of the last: sigma is the cycle of each signal's positions.

Polynomials. Each of qM, qL, qR, qO, qC, S1, S2, S3 and the Lagrange L_1..L_max(nPublic, 1)
(one at the i-th point) is stored as its n coefficients (inverse NTT of its values) and its
values on the 4n domain (NTT of the coefficients padded to 4n), Montgomery form. The header
commits to each selector and sigma: [p(tau)]_1 = sum_i p(w^i)·[L_i(tau)]_1, an MSM of the
values on the ceremony's Lagrange points, as snarkjs does (a selector's values are mostly 0
or small: cheap scalars); a ceremony not prepared for phase 2 has no Lagrange points, and
the MSM of the coefficients on tauG1, sum_i p_i·[tau^i]_1, gives the same point (snarkjs
refuses such a file). The key ends with the ceremony's first n + 6 tauG1 points; its header
holds [tau]_2.

Vectors run on the shared kernels (batched Fr operations, NTTs, the G1 MSM); the gates are
built in one pass over the constraints in Python ints.
"""

from __future__ import annotations

import struct
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from cuzk.arith.radix import ints_to_limbs, limbs_to_ints

K1, K2 = 2, 3  # snarkjs's coset shifts of the B and C columns
MIN_POWER = 3  # the quotient t has degree n + 5: at least 8 points


class SetupError(ValueError):
    """Inputs a PLONK setup cannot use together (the ceremony too small for the circuit, or of
    another curve); the message names the file and says what is wrong."""


@dataclass
class Gates:
    """The PLONK gates of a circuit: wire maps a, b, c (signal per gate), selectors (plain
    ints per gate), the additions (signal a, signal b, factor a, factor b) and the signal count
    with the additions' signals."""

    a: list[int]
    b: list[int]
    c: list[int]
    qm: list[int]
    ql: list[int]
    qr: list[int]
    qo: list[int]
    qc: list[int]
    additions: list[tuple[int, int, int, int]]
    n_vars: int
    n_public: int

    def __len__(self) -> int:
        return len(self.a)


def _combinations(m, values):
    """The rows of a CSR matrix as {signal: factor} dicts (a repeated signal: the last), made
    one at a time as they are read."""
    ptr = m.row_ptr.tolist()
    cols = m.cols.tolist()
    for lo, hi in zip(ptr[:-1], ptr[1:], strict=True):
        yield dict(zip(cols[lo:hi], values[lo:hi], strict=True))


def build_gates(r1cs) -> Gates:
    """The gates of `r1cs` (a cuzk.formats.r1cs R1CS) as snarkjs makes them (module doc)."""
    r = r1cs.prime
    n_public = r1cs.n_public
    a, b, c = list(range(1, n_public + 1)), [0] * n_public, [0] * n_public
    qm, ql, qr, qo, qc = (
        [0] * n_public,
        [1] * n_public,
        [0] * n_public,
        [0] * n_public,
        [0] * n_public,
    )
    additions = []
    next_signal = r1cs.n_wires

    def gate(sa, sb, sc, m, left, right, out, const):
        a.append(sa)
        b.append(sb)
        c.append(sc)
        qm.append(m)
        ql.append(left)
        qr.append(right)
        qo.append(out)
        qc.append(const)

    def reduce(lc, places):
        """(constant, [(signal, factor)] * places) of `lc`, adding gates while it has more
        signals than places."""
        nonlocal next_signal
        const = lc.get(0, 0)
        queue = deque((s, lc[s]) for s in sorted(lc) if s != 0)
        while len(queue) > places:
            (s1, f1), (s2, f2) = queue.popleft(), queue.popleft()
            t = next_signal
            next_signal += 1
            gate(s1, s2, t, 0, -f1 % r, -f2 % r, 1, 0)
            additions.append((s1, s2, f1, f2))
            queue.append((t, 1))
        terms = list(queue) + [(0, 0)] * (places - len(queue))
        return const, terms

    def sum_gate(lc):
        const, ((s1, f1), (s2, f2), (s3, f3)) = reduce(lc, 3)
        gate(s1, s2, s3, 0, f1, f2, f3, const)

    def scaled_minus(lc1, k, lc2):
        """k·lc1 − lc2."""
        out = {s: k * f % r for s, f in lc1.items()}
        for s, f in lc2.items():
            out[s] = (out.get(s, 0) - f) % r
        return out

    def kind(lc):
        if any(s != 0 for s in lc):
            return "signals"
        return "constant" if lc else "empty"

    rows = (_combinations(m, limbs_to_ints(m.vals)) for m in (r1cs.A, r1cs.B, r1cs.C))
    for lca, lcb, lcc in zip(*rows, strict=True):
        ka, kb = kind(lca), kind(lcb)
        if ka == "empty" or kb == "empty":
            sum_gate(lcc)
        elif ka == "constant":
            sum_gate(scaled_minus(lcb, lca[0], lcc))
        elif kb == "constant":
            sum_gate(scaled_minus(lca, lcb[0], lcc))
        else:
            ca, ((sa, fa),) = reduce(lca, 1)
            cb, ((sb, fb),) = reduce(lcb, 1)
            cc, ((sc, fc),) = reduce(lcc, 1)
            gate(sa, sb, sc, fa * fb % r, fa * cb % r, ca * fb % r, -fc % r, (ca * cb - cc) % r)
    return Gates(a, b, c, qm, ql, qr, qo, qc, additions, next_signal, n_public)


def domain_power(n_gates: int) -> int:
    """log2 of snarkjs's PLONK domain for n_gates gates."""
    return max(MIN_POWER, (n_gates - 1).bit_length())


def _check_cosets(r: int, n: int) -> None:
    """k1, k1·H, k2·H are distinct cosets of the domain H of n points: k1^n, k2^n and
    (k2/k1)^n differ from 1."""
    for k in (K1, K2, K2 * pow(K1, -1, r)):
        if pow(k, n, r) == 1:
            raise SetupError(f"k = {k} lies in the domain of {n} points: no PLONK permutation")


class _Polynomials:
    """Coefficients and 4n values of polynomials given by their n values (Montgomery)."""

    def __init__(self, fr, n: int):
        self.fr, self.n = fr, n

    def stored(self, values) -> tuple[np.ndarray, np.ndarray]:
        from cuzk.kernels.ntt_cpu import ntt

        coefficients = self.fr.intt(np.array(values, dtype=np.uint64, order="C"))
        extended = np.zeros((4 * self.n, 4), np.uint64)
        extended[: self.n] = coefficients
        return coefficients, ntt(extended, curve=self.fr.arith)


def _sigma(fr, gates: Gates, n: int) -> np.ndarray:
    """S1, S2, S3 values (3n, 4) Montgomery, in column order (module doc)."""
    m = len(gates)
    signal = np.zeros(3 * n, dtype=np.int64)  # position p = column * n + row
    for column, wires in enumerate((gates.a, gates.b, gates.c)):
        signal[column * n : column * n + m] = wires
    position = np.arange(3 * n)
    visit = (position % n) * 3 + position // n  # row by row, A B C within a row
    order = np.lexsort((visit, signal))  # by signal, then visiting order
    previous = np.roll(order, 1)  # the position visited before, within a signal's run
    sorted_signal = signal[order]
    starts = np.flatnonzero(np.r_[True, sorted_signal[1:] != sorted_signal[:-1]])
    ends = np.r_[starts[1:], len(order)] - 1
    previous[starts] = order[ends]  # a signal's first position takes its last one's point
    w = fr.roots[n.bit_length() - 1]
    row = fr.powers(w, n)
    points = np.concatenate([row, fr.mul(row, fr.full(K1, n)), fr.mul(row, fr.full(K2, n))])
    sigma = np.empty_like(points)
    sigma[order] = points[previous]
    return sigma


class _KeyWriter:
    """A container written section by section into an open file: each section's size is
    declared up front and checked against what is written."""

    def __init__(self, f, n_sections: int):
        from cuzk.formats.binfile import FILE_HEADER

        self.f = f
        f.write(FILE_HEADER.pack(b"zkey", 1, n_sections))

    def section(self, sid: int, chunks, nbytes: int | None = None) -> None:
        """Write section `sid` of the byte chunks (arrays or bytes). `nbytes`, when given, is
        its size, declared before the chunks are made: `chunks` may then be an iterator that
        makes them one at a time (a key's Lagrange polynomials, 160 bytes a gate each, are
        gigabytes at 2^19 with hundreds of public signals); ValueError if they differ."""
        from cuzk.formats.binfile import SECTION_HEADER

        def view(c):
            return memoryview(np.ascontiguousarray(c) if isinstance(c, np.ndarray) else c).cast("B")

        if nbytes is None:
            chunks = [view(c) for c in chunks]
            nbytes = sum(v.nbytes for v in chunks)
        self.f.write(SECTION_HEADER.pack(sid, nbytes))
        written = 0
        for c in chunks:
            v = view(c)
            self.f.write(v)
            written += v.nbytes
        if written != nbytes:
            raise ValueError(f"zkey section {sid}: {written} bytes written, {nbytes} declared")


def _additions_bytes(fr, additions) -> bytes:
    from cuzk.formats.plonk_zkey import additions_dtype

    out = np.zeros(len(additions), additions_dtype())
    if additions:
        sa, sb, fa, fb = zip(*additions, strict=True)
        out["signal_a"] = sa
        out["signal_b"] = sb
        out["factor_a"] = fr.from_plain(ints_to_limbs(fa))
        out["factor_b"] = fr.from_plain(ints_to_limbs(fb))
    return out.tobytes()


def setup(r1cs_path, ptau_path, zkey_path, log=None) -> dict:
    """Write the PLONK key of the circuit `r1cs_path` on the ceremony `ptau_path` to
    `zkey_path` (atomically). Raises FormatError for an unreadable file, SetupError for files
    that do not fit together. Returns stats; ``log(msg)`` gets stage lines."""
    from cuzk.formats.atomic import atomic_writer, check_apart
    from cuzk.formats.plonk_zkey import PTAU_EXTRA
    from cuzk.formats.ptau import PTau
    from cuzk.formats.r1cs import R1CS
    from cuzk.formats.zkey import PLONK_PROTOCOL_ID
    from cuzk.kernels.msm_cpu import msm_g1
    from cuzk.plonk.fr import FrOps

    check_apart((zkey_path,), (r1cs_path, ptau_path))  # the key over an input destroys it
    say = log or (lambda msg: None)
    t_start = time.perf_counter()
    ptau = PTau(ptau_path)
    r1cs = R1CS(r1cs_path)
    curve = ptau.curve
    if r1cs.prime != curve.r:
        raise SetupError(
            f"{r1cs_path}: the circuit's prime is not {curve.title}'s scalar field r, the curve "
            f"of the powers of tau {ptau_path}"
        )
    gates = build_gates(r1cs)
    power = domain_power(len(gates))
    n = 1 << power
    if power > ptau.power:
        raise SetupError(
            f"{ptau_path}: powers of tau of 2^{ptau.power} are too few for this circuit: its "
            f"{len(gates)} PLONK gates ({r1cs.n_constraints} constraints, {r1cs.n_public} "
            f"public, {len(gates.additions)} additions) need 2^{power}"
        )
    _check_cosets(curve.r, n)
    say(
        f"circuit: {r1cs.n_constraints} constraints, {r1cs.n_public} public -> {len(gates)} "
        f"gates ({len(gates.additions)} additions); domain 2^{power}; {curve.title}"
    )
    tau_g1 = ptau.tau_g1(n + PTAU_EXTRA)
    tau_g2 = ptau.tau_g2(2)
    fr = FrOps(curve)
    polys = _Polynomials(fr, n)
    commitments = {}

    # [p(tau)]_1 from p's values on the Lagrange points where the file has them (zero
    # values cost nothing: most selectors' are 0 or small), else from its coefficients
    lagrange = ptau.lagrange_g1(power) if ptau.prepared else None

    def committed(name, values):
        coefficients, extended = polys.stored(values)
        if lagrange is not None:
            commitments[name] = msm_g1(lagrange, fr.to_plain(values), curve=curve.arith)
        else:
            scalars = fr.to_plain(coefficients)
            commitments[name] = msm_g1(tau_g1[:n], scalars, curve=curve.arith)
        return [coefficients, extended]

    def padded(xs):
        out = np.zeros((n, 4), np.uint64)
        out[: len(xs)] = fr.from_plain(ints_to_limbs(xs))
        return out

    def u32(xs):
        return np.asarray(xs, dtype="<u4")

    # snarkjs's physical order: 3..14, then the headers 1 and 2 (which hold the commitments)
    with atomic_writer(zkey_path) as f:
        out = _KeyWriter(f, 14)
        out.section(3, [_additions_bytes(fr, gates.additions)])
        for sid, wires in zip((4, 5, 6), (gates.a, gates.b, gates.c), strict=True):
            out.section(sid, [u32(wires)])
        selectors = (
            (7, "Qm", gates.qm),
            (8, "Ql", gates.ql),
            (9, "Qr", gates.qr),
            (10, "Qo", gates.qo),
            (11, "Qc", gates.qc),
        )
        for sid, name, q in selectors:
            out.section(sid, committed(name, padded(q)))
        say("selectors written")
        sigma = _sigma(fr, gates, n)
        chunks = []
        for i, name in enumerate(("S1", "S2", "S3")):
            chunks += committed(name, sigma[i * n : (i + 1) * n])
        out.section(12, chunks)
        del sigma, chunks
        say("permutation written")

        def lagrange_polynomials():  # L_i's coefficients and 4n values, one at a time
            for i in range(units):
                unit = np.zeros((n, 4), np.uint64)
                unit[i] = fr.mont(1)
                yield from polys.stored(unit)

        units = max(gates.n_public, 1)
        out.section(13, lagrange_polynomials(), nbytes=units * 5 * n * 4 * 8)
        out.section(14, [tau_g1])
        header = b"".join(
            [
                struct.pack("<I", curve.n8q),
                curve.q.to_bytes(curve.n8q, "little"),
                struct.pack("<I", curve.n8r),
                curve.r.to_bytes(curve.n8r, "little"),
                struct.pack(
                    "<5I", gates.n_vars, gates.n_public, n, len(gates.additions), len(gates)
                ),
                fr.mont(K1).tobytes(),
                fr.mont(K2).tobytes(),
            ]
            + [commitments[name].tobytes() for name in ("Qm", "Ql", "Qr", "Qo", "Qc")]
            + [commitments[name].tobytes() for name in ("S1", "S2", "S3")]
            + [tau_g2[1].tobytes()]
        )
        out.section(1, [struct.pack("<I", PLONK_PROTOCOL_ID)])
        out.section(2, [header])
    seconds = time.perf_counter() - t_start
    say(f"wrote {zkey_path} in {seconds:.1f} s")
    return {
        "curve": curve.arith,
        "constraints": r1cs.n_constraints,
        "gates": len(gates),
        "additions": len(gates.additions),
        "domain_size": n,
        "n_public": gates.n_public,
        "seconds": seconds,
    }
