"""snarkjs's PLONK transcript (Keccak256Transcript.js): the Fiat-Shamir challenges.

A transcript collects G1 commitments and Fr scalars in order; a challenge is the
Keccak-256 digest of their concatenation, read as a big-endian integer and reduced mod r.
A G1 point is written uncompressed as x || y, each coordinate big-endian in n8q bytes
(32 on BN254, 48 on BLS12-381), affine, the point at infinity as all zero bytes; a scalar
big-endian in n8r = 32 bytes. snarkjs resets the transcript after each challenge and
starts the next with the previous challenges, so `challenges` below is the whole schedule,
shared by the prover and the verifier.
"""

from __future__ import annotations

from cuzk.plonk.keccak import keccak_256


class Transcript:
    """One Keccak-256 transcript on `curve` (a cuzk.formats.curve Curve)."""

    def __init__(self, curve):
        self.curve = curve
        self.parts: list[bytes] = []

    def add_point(self, p) -> None:
        """A G1 commitment: affine (x, y) ints, None for infinity."""
        n8 = self.curve.n8q
        if p is None:
            self.parts.append(bytes(2 * n8))
        else:
            self.parts.append(p[0].to_bytes(n8, "big") + p[1].to_bytes(n8, "big"))

    def add_scalar(self, s: int) -> None:
        self.parts.append((s % self.curve.r).to_bytes(self.curve.n8r, "big"))

    def challenge(self) -> int:
        """The challenge of what was added since the last one; then starts afresh."""
        if not self.parts:
            raise ValueError("a transcript challenge of nothing")
        digest = keccak_256(b"".join(self.parts))
        self.parts = []
        return int.from_bytes(digest, "big") % self.curve.r


def challenges(curve, vk_points: dict, public: list[int], commitments: dict, evaluations: dict):
    """beta, gamma, alpha, xi, v (v_1) and u, as snarkjs's prover and verifier draw them.

    vk_points: the key's Qm, Ql, Qr, Qo, Qc, S1, S2, S3; public: the public signals;
    commitments: A, B, C, Z, T1, T2, T3, Wxi, Wxiw; evaluations: eval_a .. eval_zw (as in
    proof.json). The prover draws them round by round: a round's challenge reads only
    what earlier rounds fixed, so a partial `commitments`/`evaluations` gives the leading
    challenges (`rounds` stops early)."""
    out = {}
    for name, value in rounds(curve, vk_points, public, commitments, evaluations):
        out[name] = value
    return out


def rounds(curve, vk_points, public, commitments, evaluations):
    """Yield (name, challenge) in order while the inputs each needs are present."""
    t = Transcript(curve)
    for name in ("Qm", "Ql", "Qr", "Qo", "Qc", "S1", "S2", "S3"):
        t.add_point(vk_points[name])
    for s in public:
        t.add_scalar(s)
    if not all(k in commitments for k in ("A", "B", "C")):
        return
    for name in ("A", "B", "C"):
        t.add_point(commitments[name])
    beta = t.challenge()
    yield "beta", beta
    t.add_scalar(beta)
    gamma = t.challenge()
    yield "gamma", gamma
    if "Z" not in commitments:
        return
    t.add_scalar(beta)
    t.add_scalar(gamma)
    t.add_point(commitments["Z"])
    alpha = t.challenge()
    yield "alpha", alpha
    if not all(k in commitments for k in ("T1", "T2", "T3")):
        return
    t.add_scalar(alpha)
    for name in ("T1", "T2", "T3"):
        t.add_point(commitments[name])
    xi = t.challenge()
    yield "xi", xi
    names = ("eval_a", "eval_b", "eval_c", "eval_s1", "eval_s2", "eval_zw")
    if not all(k in evaluations for k in names):
        return
    t.add_scalar(xi)
    for name in names:
        t.add_scalar(evaluations[name])
    yield "v", t.challenge()
    if not all(k in commitments for k in ("Wxi", "Wxiw")):
        return
    t.add_point(commitments["Wxi"])
    t.add_point(commitments["Wxiw"])
    yield "u", t.challenge()
