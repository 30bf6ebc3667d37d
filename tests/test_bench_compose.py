"""bench.circuits.compose_r1cs / compose_witness (the scale family's circuit, issue #35): copies
of a circuit in one .r1cs, checked constraint by constraint with the slow reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.circuits import compose_r1cs, compose_witness
from cuzk.formats.r1cs import R1CS
from cuzk.formats.wtns import read_wtns

TOY = Path(__file__).resolve().parent / "fixtures" / "toyhash"


def _ints(values) -> list[int]:
    return [sum(int(x) << (64 * i) for i, x in enumerate(row)) for row in values]


@pytest.fixture(scope="module")
def composed(tmp_path_factory):
    d = tmp_path_factory.mktemp("composed")
    compose_r1cs(TOY / "circuit.r1cs", 3, d / "c.r1cs")
    units = [TOY / "witness_0.wtns", TOY / "witness_1.wtns", TOY / "witness_0.wtns"]
    compose_witness(units, d / "w.wtns")
    return R1CS(TOY / "circuit.r1cs"), R1CS(d / "c.r1cs"), d / "w.wtns"


def test_copies_share_the_one_wire_and_keep_the_first_public(composed):
    unit, big, wtns = composed
    assert big.n_wires == 1 + 3 * (unit.n_wires - 1)
    assert big.n_constraints == 3 * unit.n_constraints
    assert (big.n_pub_out, big.n_pub_in) == (unit.n_pub_out, unit.n_pub_in)
    assert big.n_labels == 3 * unit.n_labels
    # copy 2's first constraint is the unit's first with its wires moved by 2 (nWires - 1)
    shift = 2 * (unit.n_wires - 1)
    for m_unit, m_big in ((unit.A, big.A), (unit.B, big.B), (unit.C, big.C)):
        row = m_big.row(2 * unit.n_constraints)
        assert row == {(w + shift if w else 0): v for w, v in m_unit.row(0).items()}
    w = read_wtns(wtns).values
    assert len(w) == big.n_wires
    assert np.array_equal(
        w[1 : 1 + unit.n_public], read_wtns(TOY / "witness_0.wtns").values[1 : 1 + unit.n_public]
    )


def test_the_composed_witness_satisfies_every_copy_and_a_wrong_value_is_caught(composed, tmp_path):
    unit, big, wtns = composed
    values = _ints(read_wtns(wtns).values)
    assert big.first_unsatisfied(values) is None
    # a value of the last copy changed: a constraint of that copy fails, none before it
    bad = list(values)
    bad[-1] = (bad[-1] + 1) % big.prime
    at = big.first_unsatisfied(bad)
    assert at is not None and at >= 2 * unit.n_constraints
    # the copies' witnesses in another order still satisfy (each copy is the whole circuit)
    swapped = tmp_path / "s.wtns"
    compose_witness(
        [TOY / "witness_1.wtns", TOY / "witness_0.wtns", TOY / "witness_1.wtns"], swapped
    )
    assert big.first_unsatisfied(_ints(read_wtns(swapped).values)) is None
