"""`cuzk ptau new`: a development powers-of-tau file (snarkjs's .ptau, prepared for phase 2)
made by one process that knows tau.

FOR TESTS AND BENCHMARKS ONLY: the maker draws tau, alpha and beta itself (from the OS's
CSPRNG, or from a seed for reproducible files), so whoever ran it, or knows the seed, can
forge proofs against every key made from the file. A real key needs a real ceremony.

Because tau is known every point is a known multiple of a generator, so the file is made by
fixed-base scalar multiplication alone (cuzk.groth16.setup.FixedBase), with no ceremony
round and no group FFT. With n = 2^power, G1 and G2 the generators, the sections are
(cuzk.formats.ptau):

  2  tauG1       [tau^i]G1,            i < 2n - 1
  3  tauG2       [tau^i]G2,            i < n
  4  alphaTauG1  [alpha·tau^i]G1,      i < n
  5  betaTauG1   [beta·tau^i]G1,       i < n
  6  betaG2      [beta]G2
  7  contributions: none (the count 0, as `snarkjs powersoftau new` writes it)
 12..15  for each domain 2^k, k = 0..power (12 also k = power + 1), one after another:
         [L_i(tau)]G1, [L_i(tau)]G2, [alpha·L_i(tau)]G1, [beta·L_i(tau)]G1, i < 2^k

where L_i is the Lagrange basis of the domain {w^j} (w the 2^k-th root of unity snarkjs
uses): L_i(tau) = w^i (tau^N - 1) / (N (tau - w^i)), N = 2^k. `snarkjs powersoftau prepare
phase2` computes these sections as the inverse FFT of the tau^i points of each domain; for
the domain 2^(power+1) of section 12 tauG1 holds 2^(power+1) - 1 points and snarkjs takes
the last as zero, so there the point is [L_i(tau) - tau^(N-1)·w^i / N]G1 (the inverse FFT
without the missing term: (1/N)·sum_j w^(-ij)·tau^j over j < N - 1).

The header's power and ceremony power are both `power`. With no contribution recorded,
`snarkjs powersoftau verify` refuses the file (it checks the points against the record of
contributions); `snarkjs plonk setup` and `snarkjs groth16 setup` read only the points.
"""

from __future__ import annotations

import hashlib
import secrets
import time

import numpy as np

from cuzk.arith.radix import int_to_limb_tuple, ints_to_limbs, limbs_to_ints
from cuzk.formats import ptau as fmt

MIN_POWER = 1


class PtauError(ValueError):
    """A powers-of-tau file that cannot be made as asked (power out of range, unknown
    curve); the message says why."""


def max_power(curve) -> int:
    """The largest power a prepared file of `curve` can have: section 12 holds the domain
    2^(power+1), which Fr's roots of unity must reach (BN254: 2^28, so power 27)."""
    return curve.fr_two_adicity - 1


def curve_named(name: str):
    """A cuzk.formats.curve Curve by the names snarkjs accepts (bn128, bn254, bls12381, ...)."""
    from cuzk.formats import curve as curves

    found = curves.by_json_name(name)
    if found is None:
        raise PtauError(f"unknown curve {name!r} (known: bn128 (BN254), bls12381 (BLS12-381))")
    return found


def draw_secrets(r: int, power: int, seed: str | None = None) -> tuple[int, int, int]:
    """(tau, alpha, beta) in Fr*, tau off the domains' points (tau^(2^(power+1)) != 1, so
    every Lagrange denominator is nonzero). From the OS's CSPRNG, or, given `seed`, from
    SHA-512 of the seed, a label and a counter (the same seed, the same file)."""
    n = 2 ** (power + 1)

    def draws(label: str):
        for counter in range(1 << 30):
            if seed is None:
                yield secrets.randbelow(r)
            else:
                text = f"cuzk ptau new|{seed}|{label}|{counter}".encode()
                # 512 bits reduced mod r: the bias is below 2^-250
                yield int.from_bytes(hashlib.sha512(text).digest(), "little") % r

    def draw(label: str, ok) -> int:
        return next(x for x in draws(label) if x and ok(x))

    tau = draw("tau", lambda x: pow(x, n, r) != 1)
    return tau, draw("alpha", bool), draw("beta", bool)


def _powers(x: int, count: int, r: int, scale: int = 1) -> list[int]:
    out, acc = [], scale % r
    for _ in range(count):
        out.append(acc)
        acc = acc * x % r
    return out


class _Maker:
    """The scalars and points of one file: its Fr kernels, fixed-base tables and secrets."""

    def __init__(self, curve, power: int, tau: int, alpha: int, beta: int, say):
        from cuzk.arith.curves import constants
        from cuzk.groth16.setup import MONT_R, FixedBase, kernels

        self.curve, self.power, self.say = curve, power, say
        self.r = r = curve.r
        self.tau, self.alpha, self.beta = tau, alpha, beta
        self.k = kernels(curve.arith)
        self.mont_r = MONT_R  # Fr's Montgomery R on 4 limbs, both curves
        self.roots = constants(curve.arith).fr_roots_of_unity()
        t0 = time.perf_counter()
        self.fb = FixedBase(curve.arith)
        say(f"fixed-base tables in {time.perf_counter() - t0:.1f} s")
        self.tau_powers = _powers(tau, 2 ** (power + 1) - 1, r)

    def _mont(self, x: int) -> tuple:
        return int_to_limb_tuple(x * self.mont_r % self.r)

    def lagrange(self, log_n: int) -> np.ndarray:
        """L_i(tau), i < 2^log_n, Montgomery form (n, 4)."""
        r, n = self.r, 1 << log_n
        scale = (pow(self.tau, n, r) - 1) * pow(n, -1, r) % r
        out = np.empty((n, 4), dtype=np.uint64)
        step = self._mont(self.roots[log_n])
        self.k._lagrange_basis(self._mont(self.tau), self._mont(1), step, n, self._mont(scale), out)
        return out

    def plain(self, mont: np.ndarray, factor: int) -> np.ndarray:
        """plain(x·factor) for Montgomery x."""
        out = np.empty_like(mont)
        self.k._from_mont_scaled(mont, self._mont(factor), out)
        return out

    def truncated_lagrange(self, log_n: int) -> np.ndarray:
        """The inverse FFT of tau^j, j < N - 1, and 0 (module doc), plain: for the domain
        2^(power+1) of section 12."""
        r, n = self.r, 1 << log_n
        lag = limbs_to_ints(self.plain(self.lagrange(log_n), 1))
        c = pow(self.tau, n - 1, r) * pow(n, -1, r) % r
        w = self.roots[log_n]
        out = []
        for li in lag:
            out.append((li - c) % r)
            c = c * w % r
        return ints_to_limbs(out)

    def g1(self, scalars) -> np.ndarray:
        return self.fb.g1(np.ascontiguousarray(scalars))

    def g2(self, scalars) -> np.ndarray:
        return self.fb.g2(np.ascontiguousarray(scalars))

    def sections(self):
        """(id, size, chunks) of every section in snarkjs's order (1..7, 12..15)."""
        c, p, sizes = self.curve, self.power, fmt.section_sizes(self.curve, self.power)
        n = 2**p
        taus = ints_to_limbs(self.tau_powers)
        alpha_taus = ints_to_limbs(x * self.alpha % self.r for x in self.tau_powers[:n])
        beta_taus = ints_to_limbs(x * self.beta % self.r for x in self.tau_powers[:n])
        beta = ints_to_limbs([self.beta])
        header = fmt.header_payload(c, p)
        yield fmt.HEADER, len(header), [header]
        yield fmt.TAU_G1, sizes[fmt.TAU_G1], self._timed("tauG1", lambda: [self.g1(taus)])
        yield fmt.TAU_G2, sizes[fmt.TAU_G2], self._timed("tauG2", lambda: [self.g2(taus[:n])])
        yield (
            fmt.ALPHA_TAU_G1,
            sizes[fmt.ALPHA_TAU_G1],
            self._timed("alphaTauG1", lambda: [self.g1(alpha_taus)]),
        )
        yield (
            fmt.BETA_TAU_G1,
            sizes[fmt.BETA_TAU_G1],
            self._timed("betaTauG1", lambda: [self.g1(beta_taus)]),
        )
        yield fmt.BETA_G2, sizes[fmt.BETA_G2], [self.g2(beta)]
        contributions = (0).to_bytes(4, "little")
        yield fmt.CONTRIBUTIONS, len(contributions), [contributions]
        for sid, name, factor, group in (
            (fmt.LAGRANGE_G1, "lagrange tauG1", 1, "g1"),
            (fmt.LAGRANGE_G2, "lagrange tauG2", 1, "g2"),
            (fmt.LAGRANGE_ALPHA_G1, "lagrange alphaTauG1", self.alpha, "g1"),
            (fmt.LAGRANGE_BETA_G1, "lagrange betaTauG1", self.beta, "g1"),
        ):
            yield sid, sizes[sid], self._levels(name, factor, group, sid == fmt.LAGRANGE_G1)

    def _timed(self, name, make):
        t0 = time.perf_counter()
        chunks = make()
        self.say(
            f"{name}: {sum(len(x) for x in chunks)} points in {time.perf_counter() - t0:.1f} s"
        )
        yield from chunks

    def _levels(self, name, factor, group, beyond):
        """The points of the domains 2^0 .. 2^power (and 2^(power+1) when `beyond`)."""
        t0, count = time.perf_counter(), 0
        multiply = self.g1 if group == "g1" else self.g2
        for log_n in range(self.power + 1):
            scalars = self.plain(self.lagrange(log_n), factor)
            count += len(scalars)
            yield multiply(scalars)
        if beyond:
            scalars = self.truncated_lagrange(self.power + 1)
            count += len(scalars)
            yield multiply(scalars)
        self.say(f"{name}: {count} points in {time.perf_counter() - t0:.1f} s")


def check_request(power, out, curve: str = "bn128"):
    """The Curve of a file of `power` on `curve` to be written to `out`; PtauError (power,
    curve) or OutputError (`out` cannot be written) with one line otherwise."""
    from cuzk.formats.atomic import check_outputs

    c = curve_named(curve)
    if isinstance(power, bool) or not isinstance(power, int):
        raise PtauError(f"power {power!r} is not an integer")
    if not MIN_POWER <= power <= max_power(c):
        raise PtauError(
            f"power {power} is out of range: {c.title} files run from {MIN_POWER} to "
            f"{max_power(c)} (section 12 holds the domain 2^(power+1); Fr's roots reach "
            f"2^{c.fr_two_adicity})"
        )
    check_outputs(out)
    return c


def new_ptau(power: int, out, curve: str = "bn128", seed: str | None = None, log=None) -> dict:
    """Write a prepared powers-of-tau file of `power` on `curve` (snarkjs's name) to `out`,
    its secrets drawn as draw_secrets does. Returns stats (curve, power, seconds, bytes)."""
    say = log or (lambda msg: None)
    c = check_request(power, out, curve)
    t_start = time.perf_counter()
    tau, alpha, beta = draw_secrets(c.r, power, seed)
    maker = _Maker(c, power, tau, alpha, beta, say)
    fmt.write_ptau(out, c, power, maker.sections())
    seconds = time.perf_counter() - t_start
    size = sum(fmt.section_sizes(c, power).values())
    say(f"wrote {out} ({c.title}, 2^{power}) in {seconds:.1f} s")
    return {"curve": c.name, "power": power, "seconds": seconds, "points_bytes": size}
