"""Settings declared once: the job priorities, the memory budget rule, and the one table behind
`cuzk serve` (options, CUZK_* variables, TOML), `cuzk cluster join`, the Ray node labels and
EngineConfig.

Each test reads the modules as they are, so a second declaration slipped in anywhere fails here.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import click
import pytest

from cuzk.board import layout
from cuzk.board.layout import PRIORITIES, check_priority

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "cuzk"


# ---------------------------------------------------------------------------- priorities
def _string_collections(tree):
    """(line, strings) of every tuple, list, set or dict-key literal made of string constants."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elts = node.elts
        elif isinstance(node, ast.Dict):
            elts = node.keys
        else:
            continue
        strings = [
            e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
        if strings:
            yield node.lineno, set(strings)


def test_priorities_are_declared_in_one_module():
    """No module but board/layout.py spells two or more priority names in one literal (a
    tuple, list, set or dict), nor compares with them one by one."""
    names = set(PRIORITIES)
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "cuzk/board/layout.py":
            continue
        tree = ast.parse(path.read_text(), rel)
        for line, strings in _string_collections(tree):
            if len(strings & names) >= 2:
                found.append(f"{rel}:{line}")
    assert not found, f"priority names spelled outside cuzk/board/layout.py: {found}"


def test_the_declaration_is_found_in_a_copy():
    tree = ast.parse('PRIO = {"critical": 0, "high": 1}\nCHOICES = ["normal", "high"]\n')
    assert [line for line, s in _string_collections(tree) if len(s & set(PRIORITIES)) >= 2] == [
        1,
        2,
    ]


def test_every_priority_user_takes_the_one_declaration():
    scheduler = importlib.import_module("cuzk.engine.scheduler")
    serve_cli = importlib.import_module("cuzk.serve.cli")
    render = importlib.import_module("cuzk.top.render")

    assert scheduler.PRIORITIES is PRIORITIES
    assert render.PRIORITIES is PRIORITIES
    assert sorted(render.PRIORITY_RANK, key=render.PRIORITY_RANK.get) == list(PRIORITIES)
    assert set(render.PRIORITY_SHORT) == set(PRIORITIES)
    option = next(p for p in serve_cli.submit.params if p.name == "priority")
    assert isinstance(option.type, click.Choice)
    assert tuple(option.type.choices) == PRIORITIES


def test_priority_checks_all_say_the_same():
    """The engine's intake, the scheduler, the board and the HTTP API refuse a bad priority with
    the one message."""
    from cuzk.engine.engine import job_request
    from cuzk.engine.scheduler import Scheduler

    message = "priority must be one of critical, high, normal, got 'urgent'"
    for check in (
        lambda: check_priority("urgent"),
        lambda: job_request([b"w"], None, "k", "urgent"),
        lambda: Scheduler().add_job("j", "urgent", 1),
    ):
        with pytest.raises(ValueError) as e:
            check()
        assert str(e.value) == message
    for bad in (None, 0, ["normal"], "Normal", " normal"):
        with pytest.raises(ValueError, match="priority must be one of"):
            check_priority(bad)
    assert [check_priority(p) for p in PRIORITIES] == list(PRIORITIES)
    assert layout.PRIORITIES.index("critical") == 0  # the rank a job record stores


def test_documents_outside_python_list_the_same_priorities():
    """openapi.yaml's enums and the web panel's order agree with the declaration."""
    spec = (PACKAGE / "serve" / "openapi.yaml").read_text()
    enums = re.findall(r"enum: \[(critical[^\]]*)\]", spec)
    assert len(enums) == 2 and all(e.split(", ") == list(PRIORITIES) for e in enums)
    app = (PACKAGE / "serve" / "web" / "app.js").read_text()
    rank = re.search(r"PRIORITY_RANK = \{([^}]*)\}", app).group(1)
    pairs = dict(re.findall(r"(\w+): (\d+)", rank))
    assert pairs == {p: str(i) for i, p in enumerate(PRIORITIES)}


# ---------------------------------------------------------------------------- memory budget
GiB = 1024**3


@pytest.mark.parametrize(
    "value, normal",
    [
        ("auto", "auto"),
        (" AUTO ", "auto"),
        ("Auto", "auto"),
        ("16GiB", 16 * GiB),
        ("1.5 GB", 1_500_000_000),
        ("1", 1),
        (1, 1),
        (68719476736, 64 * GiB),
        (2.9, 2),  # whole bytes
    ],
)
def test_memory_budget_normal_form(monkeypatch, value, normal):
    from cuzk.engine import config

    monkeypatch.setattr(config, "auto_memory_budget", lambda: 80 * GiB)
    assert config.parse_memory_budget(value) == normal
    assert config.memory_budget_bytes(value) == (80 * GiB if normal == "auto" else normal)


@pytest.mark.parametrize(
    "value, reason",
    [
        (0, "positive"),
        ("0", "positive"),
        ("0GiB", "positive"),
        (0.5, "positive"),
        (-1, "negative"),
        ("-1GiB", "not a size"),
        ("lots", "not a size"),
        ("", "not a size"),
        ("auto2", "not a size"),
        (True, "not a size"),
        (None, "not a size"),
    ],
)
def test_memory_budget_refusals(value, reason):
    from cuzk.engine.config import memory_budget_bytes, parse_memory_budget

    for fn in (parse_memory_budget, memory_budget_bytes):
        with pytest.raises(ValueError, match=reason):
            fn(value)


def test_every_reader_of_the_memory_budget_uses_the_one_rule(monkeypatch, tmp_path):
    """serve's setting, EngineConfig, join and the node labels accept and refuse the same
    values, because each calls parse_memory_budget / memory_budget_bytes; a reader that
    parsed the budget itself would not see the rule change below."""
    from cuzk.cluster import join, settings
    from cuzk.engine import config
    from cuzk.serve.config import Config, ConfigError

    monkeypatch.setattr(config, "auto_memory_budget", lambda: 80 * GiB)
    monkeypatch.setattr(config, "cuda_device_count", lambda: 0)
    calls = []
    real = config.positive_size

    def counting(value):
        calls.append(value)
        return real(value)

    monkeypatch.setattr(config, "positive_size", counting)
    for module in (settings,):  # imported by name: patch its binding too
        monkeypatch.setattr(module, "positive_size", counting)

    state = {"state_dir": str(tmp_path)}
    assert Config(env={}, memory_budget="3GiB", **state).load().memory_budget == 3 * GiB
    assert config.EngineConfig(devices="cpu:1", memory_budget="2GiB").validated().memory_budget
    plan = join.plan_join("h:1", ray="ray", memory_budget="8GiB")
    assert settings.from_labels(plan.labels)["memory_budget"] == plan.engine_memory
    assert {"3GiB", "2GiB", "8GiB", plan.engine_memory} <= set(calls)

    for bad in ("0", "lots"):
        with pytest.raises(ConfigError, match=r"memory_budget \(flag --memory-budget\)"):
            Config(env={}, memory_budget=bad, **state).load()
        with pytest.raises(ValueError, match="memory_budget: "):
            config.EngineConfig(devices="cpu:1", memory_budget=bad).validated()
        with pytest.raises(join.JoinError, match="--memory-budget: "):
            join.plan_join("h:1", ray="ray", memory_budget=bad)
    with pytest.raises(ValueError, match="memory_budget: must be positive"):
        settings.to_labels({"memory_budget": 0})
    with pytest.raises(ValueError, match="cuzk-memory-budget='0': must be positive"):
        settings.from_labels({"cuzk-memory-budget": "0"})
