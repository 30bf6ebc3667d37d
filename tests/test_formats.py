"""cuzk.formats against the committed snarkjs/circom2 fixtures (outside references: the
.r1cs circom wrote, the JSON snarkjs wrote, py_ecc's curve equations)."""

from __future__ import annotations

import json
import mmap
import os
import stat

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from py_ecc import optimized_bn128 as bn

from cuzk.arith.radix import int_to_limb_array, limbs_to_int, limbs_to_ints
from cuzk.formats import (
    BN254_Q,
    BN254_R,
    R1CS,
    VerificationKey,
    ZKey,
    from_mont_q,
    from_mont_r,
    g1_from_limbs,
    g1_to_limbs,
    g2_from_limbs,
    g2_to_limbs,
    int_to_zkey_coef,
    proof_to_json,
    read_proof,
    read_public,
    read_wtns,
    to_mont_q,
    to_mont_r,
    verification_key,
    write_public,
    write_wtns,
    write_zkey,
    zkey_coef_to_int,
)
from cuzk.formats.atomic import OutputError, Target, atomic_writer, check_outputs, write_outputs
from cuzk.formats.snarkjs_json import dumps, fq12_from_py_ecc

fq = st.integers(min_value=0, max_value=BN254_Q - 1)
fr = st.integers(min_value=0, max_value=BN254_R - 1)


def _mapped(a: np.ndarray) -> bool:
    """True if `a` is a view whose memory belongs to an mmap (not a copy)."""
    base = a
    while isinstance(base, np.ndarray):
        if base.flags.owndata:
            return False
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return isinstance(base, mmap.mmap)


def _on_g1(p) -> bool:
    return p is None or bn.is_on_curve((bn.FQ(p[0]), bn.FQ(p[1]), bn.FQ(1)), bn.b)


def _on_g2(p) -> bool:
    (x0, x1), (y0, y1) = p
    return bn.is_on_curve((bn.FQ2([x0, x1]), bn.FQ2([y0, y1]), bn.FQ2.one()), bn.b2)


# --- .zkey ---------------------------------------------------------------------------------


def test_zkey_header_matches_r1cs_and_snarkjs_vk(any_circuit):
    z, cs = ZKey(any_circuit.zkey), R1CS(any_circuit.r1cs)
    assert (z.q, z.r, z.n8q, z.n8r) == (BN254_Q, BN254_R, 32, 32)
    assert z.n_vars == cs.n_wires
    assert z.n_public == cs.n_pub_out + cs.n_pub_in == cs.n_public
    assert z.n_constraints == cs.n_constraints
    # domainSize = 2^(floor(log2(nConstraints + nPublic)) + 1)
    assert z.domain_size == 2 ** ((cs.n_constraints + z.n_public).bit_length())
    vk = json.loads(any_circuit.vk.read_text())
    assert [str(c) for c in g1_from_limbs(z.alpha1)] == vk["vk_alpha_1"][:2]
    for name in ("beta", "gamma", "delta"):
        (x0, x1), (y0, y1) = g2_from_limbs(getattr(z, f"{name}2"))
        assert [[str(x0), str(x1)], [str(y0), str(y1)]] == vk[f"vk_{name}_2"][:2]
    assert [[str(c) for c in g1_from_limbs(p)] for p in z.ic] == [p[:2] for p in vk["IC"]]


@pytest.mark.parametrize("private", [False, True])
def test_zkey_sections_are_mapped_views_or_read_of_the_right_shape(any_circuit, private):
    """private=False (a daemon's proving processes): views of the map, never copies; the
    default reads each into memory of its own (issue 38), the same values."""
    z = ZKey(any_circuit.zkey, private=private)
    n, npub, d = z.n_vars, z.n_public, z.domain_size
    shapes = {
        "ic": (npub + 1, 8),
        "points_a": (n, 8),
        "points_b1": (n, 8),
        "points_b2": (n, 16),
        "points_c": (n - npub - 1, 8),
        "points_h": (d, 8),
    }
    for name, shape in shapes.items():
        a = getattr(z, name)
        assert a.shape == shape and a.dtype == np.uint64, name
        assert _mapped(a) != private and not a.flags.writeable, f"{name}: mapped {not private}"
        if private:
            assert np.array_equal(a, getattr(ZKey(any_circuit.zkey, private=False), name))
    assert _mapped(z.coefficients) != private and z.coefficients.dtype.names == (
        "matrix",
        "constraint",
        "signal",
        "value",
    )
    for name in ("alpha1", "beta1", "delta1"):
        assert getattr(z, name).shape == (8,)
    for name in ("beta2", "gamma2", "delta2"):
        assert getattr(z, name).shape == (16,)


def test_zkey_points_decode_onto_the_curves(small_circuit):
    z = ZKey(small_circuit.zkey)
    for name in ("alpha1", "beta1", "delta1"):
        assert _on_g1(g1_from_limbs(getattr(z, name)))
    for name in ("beta2", "gamma2", "delta2"):
        assert _on_g2(g2_from_limbs(getattr(z, name)))
    for arr in (z.ic, z.points_a, z.points_b1, z.points_c, z.points_h):
        assert all(_on_g1(g1_from_limbs(p)) for p in arr)
    assert all(p is None or _on_g2(p) for p in map(g2_from_limbs, z.points_b2))


def test_zkey_coefficients_are_the_r1cs_a_and_b_matrices(any_circuit):
    z, cs = ZKey(any_circuit.zkey), R1CS(any_circuit.r1cs)
    rows: dict[tuple[int, int], dict[int, int]] = {}
    for m, c, s, v in z.coefficients:
        row = rows.setdefault((int(m), int(c)), {})
        row[int(s)] = (row.get(int(s), 0) + zkey_coef_to_int(v)) % BN254_R
    for i in range(cs.n_constraints):
        assert rows.get((0, i), {}) == cs.A.row(i)
        assert rows.get((1, i), {}) == cs.B.row(i)
    # snarkjs appends A rows nConstraints + s -> signal s with coefficient 1, s = 0..nPublic.
    for s in range(z.n_public + 1):
        assert rows[(0, cs.n_constraints + s)] == {s: 1}
    assert {m for m, _ in rows} <= {0, 1}


# --- .wtns and .r1cs -----------------------------------------------------------------------


def test_witness_matches_public_json_and_satisfies_r1cs(any_circuit):
    z, cs = ZKey(any_circuit.zkey), R1CS(any_circuit.r1cs)
    for k in range(any_circuit.n_sets):
        w = read_wtns(any_circuit.witness(k))
        assert w.prime == BN254_R and w.values.shape == (z.n_vars, 4)
        assert not _mapped(w.values) and not w.values.flags.writeable  # read (issue 38)
        z.check_witness(w)
        values = limbs_to_ints(w.values)
        assert values[0] == 1
        public = json.loads(any_circuit.public(k).read_text())
        assert [str(v) for v in values[1 : z.n_public + 1]] == public
        if any_circuit.name != "toyhash":  # the slow Python check: small circuits only
            assert cs.first_unsatisfied(values) is None


def test_bad_witness_breaks_a_constraint(small_circuit):
    cs = R1CS(small_circuit.r1cs)
    w = limbs_to_ints(read_wtns(small_circuit.bad_witness).values)
    assert cs.first_unsatisfied(w) is not None


def test_r1cs_header_of_tiny(circuit_named):
    cs = R1CS(circuit_named("tiny").r1cs)  # c <== a * b, public a, output c
    assert (cs.n_wires, cs.n_pub_out, cs.n_pub_in, cs.n_prv_in, cs.n_constraints) == (
        4,
        1,
        1,
        1,
        1,
    )
    # wires: 0 = one, 1 = c, 2 = a, 3 = b;  (-a) * b = -c
    assert cs.constraints() == [({2: BN254_R - 1}, {3: 1}, {1: BN254_R - 1})]
    assert cs.wire_to_label is not None and len(cs.wire_to_label) == 4


# --- writers -------------------------------------------------------------------------------


def test_zkey_writer_reproduces_snarkjs_setup_bytes(circuit_named, tmp_path):
    src = circuit_named("tiny").dir / "circuit_0000.zkey"  # snarkjs's 1,2,4,3,9,8,5,6,7,10 order
    write_zkey(tmp_path / "copy.zkey", ZKey(src))
    assert (tmp_path / "copy.zkey").read_bytes() == src.read_bytes()


def test_zkey_writer_round_trips_contributed_keys(any_circuit, tmp_path):
    z = ZKey(any_circuit.zkey)  # contributed keys are stored in id order; ours is snarkjs's
    write_zkey(tmp_path / "copy.zkey", z.data())
    c = ZKey(tmp_path / "copy.zkey")
    for name in ("n_vars", "n_public", "domain_size", "contributions"):
        assert getattr(c, name) == getattr(z, name)
    for name in ("alpha1", "beta1", "beta2", "gamma2", "delta1", "delta2", "ic", "points_a"):
        assert np.array_equal(getattr(c, name), getattr(z, name))
    for name in ("points_b1", "points_b2", "points_c", "points_h", "coefficients"):
        assert np.array_equal(getattr(c, name), getattr(z, name))


def test_wtns_writer_round_trips(any_circuit, tmp_path):
    src = any_circuit.witness(1)
    w = read_wtns(src)
    write_wtns(tmp_path / "a.wtns", w.values)
    write_wtns(tmp_path / "b.wtns", limbs_to_ints(w.values))
    assert (tmp_path / "a.wtns").read_bytes() == src.read_bytes()
    assert (tmp_path / "b.wtns").read_bytes() == src.read_bytes()


def test_verification_key_is_snarkjs_byte_for_byte(any_circuit):
    vk = verification_key(ZKey(any_circuit.zkey))
    assert dumps(vk) == any_circuit.vk.read_text()


def test_export_vk_command(any_circuit, tmp_path):
    from cuzk.cli import main

    out = tmp_path / "vk.json"
    res = CliRunner().invoke(main, ["export-vk", str(any_circuit.zkey), str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == any_circuit.vk.read_bytes()


def test_export_vk_command_rejects_fflonk_key_without_output(circuit_named, tmp_path):
    from cuzk.cli import main

    out = tmp_path / "vk.json"
    fflonk = circuit_named("tiny").dir / "fflonk.zkey"
    res = CliRunner().invoke(main, ["export-vk", str(fflonk), str(out)])
    assert res.exit_code == 2
    assert "fflonk" in res.output and str(fflonk) in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert not out.exists() and os.listdir(tmp_path) == []


def test_export_vk_command_takes_plonk_keys(circuit_named, tmp_path):
    """A PLONK key's verification key, byte for byte as snarkjs writes it."""
    from cuzk.cli import main

    out = tmp_path / "vk.json"
    c = circuit_named("nested")
    res = CliRunner().invoke(main, ["export-vk", str(c.plonk_zkey), str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == c.plonk_vk.read_bytes()


def test_proof_and_public_json_round_trip_byte_for_byte(any_circuit, tmp_path):
    for k in range(any_circuit.n_sets):
        pi_a, pi_b, pi_c = read_proof(any_circuit.proof(k))
        assert _on_g1(pi_a) and _on_g2(pi_b) and _on_g1(pi_c)
        assert dumps(proof_to_json(pi_a, pi_b, pi_c)) == any_circuit.proof(k).read_text()
        public = read_public(any_circuit.public(k))
        write_public(tmp_path / "public.json", public)
        assert (tmp_path / "public.json").read_bytes() == any_circuit.public(k).read_bytes()


def test_verification_key_json_parses(any_circuit):
    vk, z = VerificationKey(any_circuit.vk), ZKey(any_circuit.zkey)
    assert vk.n_public == z.n_public and len(vk.ic) == z.n_public + 1
    assert vk.alpha1 == g1_from_limbs(z.alpha1) and vk.delta2 == g2_from_limbs(z.delta2)
    assert vk.ic == [g1_from_limbs(p) for p in z.ic]


def test_fq12_layout_maps_multiplication_to_the_tower():
    """The tower coefficients of f*g equal the tower product of f's and g's (schoolbook over
    F_q2 with v^3 = 9 + u, w^2 = v): the py_ecc -> snarkjs layout is a ring isomorphism."""
    q = BN254_Q

    def m2(a, b):
        return ((a[0] * b[0] - a[1] * b[1]) % q, (a[0] * b[1] + a[1] * b[0]) % q)

    def add2(a, b):
        return ((a[0] + b[0]) % q, (a[1] + b[1]) % q)

    def xi(a):  # multiply by 9 + u
        return m2(a, (9, 1))

    def m6(a, b):
        out = [(0, 0)] * 5
        for i in range(3):
            for j in range(3):
                out[i + j] = add2(out[i + j], m2(a[i], b[j]))
        return [add2(out[0], xi(out[3])), add2(out[1], xi(out[4])), out[2]]

    def m12(f, g):
        a0b0, a1b1 = m6(f[0], g[0]), m6(f[1], g[1])
        v_a1b1 = [xi(a1b1[2]), a1b1[0], a1b1[1]]  # times v
        c0 = [add2(x, y) for x, y in zip(a0b0, v_a1b1, strict=True)]
        c1 = [add2(x, y) for x, y in zip(m6(f[0], g[1]), m6(f[1], g[0]), strict=True)]
        return [c0, c1]

    f = bn.FQ12(list(range(3, 15)))
    g = bn.FQ12([7 * i * i + 1 for i in range(12)])
    tf, tg = fq12_from_py_ecc(f), fq12_from_py_ecc(g)
    assert m12(tf, tg) == fq12_from_py_ecc(f * g)


def test_atomic_writer_leaves_old_file_on_error(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_writer(target, "w") as f:
        f.write("partial")
        raise RuntimeError("boom")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["out.json"]


def test_atomic_writer_into_a_missing_directory_names_the_target(tmp_path):
    target = tmp_path / "no-such-dir" / "out.json"
    with pytest.raises(FileNotFoundError) as e, atomic_writer(target, "w") as f:
        f.write("never")
    assert e.value.filename == str(target) and ".tmp" not in str(e.value)


# --- outputs written all or nothing (cuzk.formats.atomic.write_outputs) ---------------------
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a device node needs root")


def _listing(d) -> list[str]:
    return sorted(os.listdir(d))


def test_write_outputs_writes_both(tmp_path):
    a, b = tmp_path / "proof.json", tmp_path / "public.json"
    b.write_text("old public")
    write_outputs([(a, "A"), (b, b"B")])
    assert (a.read_text(), b.read_text()) == ("A", "B")
    assert oct(a.stat().st_mode & 0o777) == "0o644" and _listing(tmp_path) == [a.name, b.name]


@pytest.mark.parametrize("spelling", ["same", "dotdot", "symlink", "hardlink", "absolute"])
def test_one_file_for_both_outputs_is_refused(tmp_path, spelling, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    a = tmp_path / "out.json"
    a.write_text("old")
    b = {
        "same": "out.json",
        "dotdot": "sub/../out.json",
        "symlink": "link.json",
        "hardlink": "hard.json",
        "absolute": str(a),
    }[spelling]
    if spelling == "symlink":
        os.symlink("out.json", "link.json")
    if spelling == "hardlink":
        os.link("out.json", "hard.json")
    before = _listing(tmp_path)
    with pytest.raises(OutputError) as e:
        write_outputs([("out.json", "proof"), (b, "public")])
    assert str(e.value) == f"out.json and {b} are the same file: give each output its own path"
    assert a.read_text() == "old" and _listing(tmp_path) == before
    with pytest.raises(OutputError):  # the early check says the same
        check_outputs("out.json", b)


def test_a_missing_or_unwritable_directory_writes_neither(tmp_path):
    a = tmp_path / "proof.json"
    a.write_text("old proof")
    with pytest.raises(OutputError, match=r"nodir/public.json: no such directory .*/nodir$"):
        write_outputs([(a, "A"), (tmp_path / "nodir" / "public.json", "B")])
    assert a.read_text() == "old proof" and _listing(tmp_path) == ["proof.json"]
    with pytest.raises(OutputError, match="is a directory"):
        write_outputs([(a, "A"), (tmp_path, "B")])
    if os.geteuid() != 0:  # root writes into a 0555 directory
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
        with pytest.raises(OutputError, match="ro is not writable"):
            write_outputs([(a, "A"), (ro / "public.json", "B")])
        assert a.read_text() == "old proof"


def test_a_second_file_that_cannot_be_created_removes_the_first(tmp_path, monkeypatch):
    """The directory passes the check, then creating the temporary file fails (a full disk,
    a permission taken away meanwhile): no temporary file is left, no target touched."""
    from cuzk.formats import atomic

    real = atomic.mkstemp
    calls = []

    def mkstemp(*a, **kw):
        calls.append(kw["prefix"])
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(*a, **kw)

    monkeypatch.setattr(atomic, "mkstemp", mkstemp)
    a = tmp_path / "proof.json"
    a.write_text("old proof")
    with pytest.raises(OutputError, match=r"public.json: No space left on device$"):
        write_outputs([(a, "A"), (tmp_path / "public.json", "B")])
    assert a.read_text() == "old proof" and _listing(tmp_path) == ["proof.json"]


@pytest.mark.parametrize("first_existed", [True, False])
def test_a_failed_second_rename_restores_the_first(tmp_path, monkeypatch, first_existed):
    real = os.replace
    a, b = tmp_path / "proof.json", tmp_path / "public.json"
    if first_existed:
        a.write_text("old proof")
    b.write_text("old public")

    def replace(src, dst):
        if os.fspath(dst) == str(b) and str(src).endswith(".tmp"):
            raise OSError(30, "Read-only file system")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OutputError, match="public.json: Read-only file system"):
        write_outputs([(a, "A"), (b, "B")])
    assert b.read_text() == "old public"
    if first_existed:
        assert a.read_text() == "old proof"
    else:
        assert not a.exists()
    assert _listing(tmp_path) == (["proof.json"] if first_existed else []) + ["public.json"]


def test_a_symlinked_output_stays_a_link(tmp_path):
    (tmp_path / "store").mkdir()
    link = tmp_path / "proof.json"
    link.symlink_to(tmp_path / "store" / "p.json")  # dangling: the file is made where it points
    write_outputs([(link, "A"), (tmp_path / "public.json", "B")])
    assert link.is_symlink() and (tmp_path / "store" / "p.json").read_text() == "A"
    with atomic_writer(link, "w") as f:
        f.write("C")
    assert link.is_symlink() and link.read_text() == "C"


def test_a_fifo_is_written_in_place(tmp_path):
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_outputs([(fifo, "A"), (tmp_path / "public.json", "B")])
    reader.join(10)
    assert got == [b"A"] and (tmp_path / "public.json").read_text() == "B"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_stdout_through_proc_is_written_in_place(tmp_path):
    """/dev/stdout and /dev/fd/N lead to /proc/self/fd/N: a pipe is written, and a regular file
    (the shell's `> file`) is appended to, never replaced (the shell's descriptor would be
    left on a deleted file). The test's own link stands in for /dev/stdout."""
    r, w = os.pipe()
    out = tmp_path / "stdout"
    out.symlink_to(f"/proc/self/fd/{w}")
    try:
        assert Target.of(out).in_place and Target.of("/dev/stdout").in_place
        write_outputs([(out, "proof\n"), (tmp_path / "public.json", "B")])
        assert os.read(r, 100) == b"proof\n" and out.is_symlink()
    finally:
        os.close(r), os.close(w)
    shell = tmp_path / "shell.txt"
    with open(shell, "w") as f:
        f.write("before\n")
        f.flush()
        out.unlink()
        out.symlink_to(f"/proc/self/fd/{f.fileno()}")
        inode = os.fstat(f.fileno()).st_ino
        write_outputs([(out, "proof\n"), (tmp_path / "public.json", "B")])
    assert shell.read_text() == "before\nproof\n" and shell.stat().st_ino == inode


def test_dev_full_fails_in_place_and_writes_neither(tmp_path):
    assert Target.of("/dev/full").in_place  # checked first: never rename over /dev/full
    with pytest.raises(OutputError, match=r"^/dev/full: No space left on device$"):
        write_outputs([(tmp_path / "proof.json", "A"), ("/dev/full", "B")])
    assert _listing(tmp_path) == []
    with pytest.raises(OSError, match="No space left on device"), atomic_writer("/dev/full") as f:
        f.write(b"x")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


@AS_ROOT
def test_a_device_node_is_written_in_place_never_replaced(tmp_path):
    full, null = tmp_path / "full", tmp_path / "null"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    with pytest.raises(OutputError, match=r"full: No space left on device$"):
        write_outputs([(full, "A"), (tmp_path / "public.json", "B")])
    assert _listing(tmp_path) == ["full", "null"]
    write_outputs([(null, "A"), (tmp_path / "public.json", "B")])
    assert (tmp_path / "public.json").read_text() == "B"
    for dev in (full, null):
        assert stat.S_ISCHR(os.lstat(dev).st_mode)


# --- limits on JSON from outside (cuzk.formats.json_limits) -------------------------------
def _depth(v) -> int:
    if isinstance(v, list):
        return 1 + max(map(_depth, v), default=0)
    if isinstance(v, dict):
        return 1 + max(map(_depth, v.values()), default=0)
    return 0


_json_values = st.recursive(
    st.none() | st.integers() | st.text(alphabet='[]{}"\\ab', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet='[]{}"\\ab', max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(_json_values, st.integers(0, 6), st.booleans())
def test_nested_deeper_than_counts_brackets_outside_strings(v, limit, as_bytes):
    """Against the parsed value's depth, with brackets, quotes and backslashes in its strings."""
    from cuzk.formats.json_limits import nested_deeper_than

    text = json.dumps(v)
    assert nested_deeper_than(text.encode() if as_bytes else text, limit) == (_depth(v) > limit)


def test_nested_deeper_than_is_linear_on_hostile_text():
    from cuzk.formats.json_limits import MAX_DEPTH, nested_deeper_than

    assert nested_deeper_than("[" * 10**6, MAX_DEPTH)  # stops at the first 513 brackets
    assert not nested_deeper_than("[" * 512 + "]" * 512)
    assert nested_deeper_than(b"[" * 513 + b"]" * 513)
    assert not nested_deeper_than('["' + "[" * 10**5 + '"]')  # inside a string
    assert not nested_deeper_than("[[1], [2]], " * 10**5)  # many brackets, shallow


# --- conversions ---------------------------------------------------------------------------


@given(fq)
def test_montgomery_q_round_trip(x):
    limbs = to_mont_q(x)
    assert limbs_to_int(limbs) == x * 2**256 % BN254_Q and from_mont_q(limbs) == x


@given(fr)
def test_montgomery_r_and_coefficient_round_trip(x):
    assert from_mont_r(to_mont_r(x)) == x
    assert zkey_coef_to_int(int_to_zkey_coef(x)) == x
    assert limbs_to_int(int_to_limb_array(x)) == x


@given(st.integers(min_value=1, max_value=BN254_R - 1))
def test_point_limbs_round_trip(k):
    p = bn.normalize(bn.multiply(bn.G1, k))
    g1 = (int(p[0].n), int(p[1].n))
    assert g1_from_limbs(g1_to_limbs(g1)) == g1
    assert g1_from_limbs(g1_to_limbs(None)) is None
    q2 = bn.normalize(bn.multiply(bn.G2, k % 1000 + 1))
    g2 = (tuple(int(c) for c in q2[0].coeffs), tuple(int(c) for c in q2[1].coeffs))
    assert g2_from_limbs(g2_to_limbs(g2)) == g2


def test_read_wtns_from_bytes(circuit_named):
    src = circuit_named("bits").witness(1)
    data = src.read_bytes()
    w = read_wtns("<uploaded witness>", data=data)
    assert w.path == "<uploaded witness>"
    assert np.array_equal(w.values, read_wtns(src).values)
    from cuzk.formats import Truncated

    with pytest.raises(Truncated, match="^<uploaded witness>: section 2"):
        read_wtns("<uploaded witness>", data=data[:-7])
