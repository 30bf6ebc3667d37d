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
    from cuzk.engine.jobs import job_request
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
    from cuzk.engine import settings

    monkeypatch.setattr(settings, "auto_memory_budget", lambda: 80 * GiB)
    assert settings.parse_memory_budget(value) == normal
    assert settings.memory_budget_bytes(value) == (80 * GiB if normal == "auto" else normal)


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
    from cuzk.engine.settings import memory_budget_bytes, parse_memory_budget

    for fn in (parse_memory_budget, memory_budget_bytes):
        with pytest.raises(ValueError, match=reason):
            fn(value)


def test_every_reader_of_the_memory_budget_uses_the_one_rule(monkeypatch, tmp_path):
    """serve's setting, EngineConfig, join and the node labels accept and refuse the same
    values, because each calls parse_memory_budget / memory_budget_bytes; a reader that
    parsed the budget itself would not see the rule change below."""
    from cuzk.cluster import join, labels
    from cuzk.engine import settings
    from cuzk.serve.config import Config, ConfigError

    monkeypatch.setattr(settings, "auto_memory_budget", lambda: 80 * GiB)
    monkeypatch.setattr(settings, "cuda_device_count", lambda: 0)
    calls = []
    real = settings.positive_size

    def counting(value):
        calls.append(value)
        return real(value)

    monkeypatch.setattr(settings, "positive_size", counting)
    for module in (labels,):  # imported by name: patch its binding too
        monkeypatch.setattr(module, "positive_size", counting)

    state = {"state_dir": str(tmp_path)}
    assert Config(env={}, memory_budget="3GiB", **state).load().memory_budget == 3 * GiB
    assert settings.EngineConfig(devices="cpu:1", memory_budget="2GiB").validated().memory_budget
    plan = join.plan_join("h:1", ray="ray", memory_budget="8GiB")
    assert labels.from_labels(plan.labels)["memory_budget"] == plan.engine_memory
    assert {"3GiB", "2GiB", "8GiB", plan.engine_memory} <= set(calls)

    for bad in ("0", "lots"):
        with pytest.raises(ConfigError, match=r"memory_budget \(flag --memory-budget\)"):
            Config(env={}, memory_budget=bad, **state).load()
        with pytest.raises(ValueError, match="memory_budget: "):
            settings.EngineConfig(devices="cpu:1", memory_budget=bad).validated()
        with pytest.raises(join.JoinError, match="--memory-budget: "):
            join.plan_join("h:1", ray="ray", memory_budget=bad)
    with pytest.raises(ValueError, match="memory_budget: must be positive"):
        labels.to_labels({"memory_budget": 0})
    with pytest.raises(ValueError, match="cuzk-memory-budget='0': must be positive"):
        labels.from_labels({"cuzk-memory-budget": "0"})


# ---------------------------------------------------------------------------- the one table
# Names other programs, scripts and files rely on: never renamed, only added to.
SERVE_FLAGS = """--listen --devices --synth-workers --workers-per-device --finalizers-per-device
--memory-budget --msm-tables --key-root --board --instance --token-file --log-level --self-verify
--max-body --max-wait --max-connections --header-timeout --body-memory --body-timeout
--body-min-rate --allow-host --drain-timeout --ray --affinity-wait --node-wait-timeout --prover
--prover-options --state-dir --keep-results""".split()
NODE_LABELS = {
    "devices": "cuzk-devices",
    "synth_workers": "cuzk-synth-workers",
    "workers_per_device": "cuzk-workers-per-device",
    "finalizers_per_device": "cuzk-finalizers-per-device",
    "memory_budget": "cuzk-memory-budget",
}


def _options(command) -> dict:
    """{setting name: click option} of a click command."""
    return {p.name: p for p in command.params if isinstance(p, click.Option)}


def test_the_names_of_the_contract_stay():
    from cuzk.cluster.labels import LABEL_KEYS
    from cuzk.serve.config import SETTINGS

    assert [s.flag for s in SETTINGS] == SERVE_FLAGS
    assert [s.env for s in SETTINGS] == ["CUZK_" + s.name.upper() for s in SETTINGS]
    assert LABEL_KEYS == NODE_LABELS
    from cuzk.serve.cli import serve

    opts = _options(serve)
    assert opts["self_verify"].secondary_opts == ["--no-self-verify"]
    assert opts["key_roots"].multiple and opts["allow_hosts"].multiple
    assert [n for n, o in opts.items() if o.multiple] == ["key_roots", "allow_hosts"]


def test_join_and_serve_take_the_node_settings_from_one_table():
    """The same flag, metavar and help (join adds what is particular to it after it) for
    every node setting, and join has no other copy of them."""
    from cuzk.cluster.join import join
    from cuzk.engine.settings import NODE_SETTINGS
    from cuzk.serve.cli import serve

    assert [s.name for s in NODE_SETTINGS] == list(NODE_LABELS)
    join_opts, serve_opts = _options(join), _options(serve)
    for s in NODE_SETTINGS:
        for opt in (join_opts[s.name], serve_opts[s.name]):
            assert opt.opts == [s.flag] and opt.metavar == s.metavar
            assert opt.help.startswith(s.help + " ")
    own = {"object_store_memory", "ray_token_file", "dry_run"}
    assert set(join_opts) == {s.name for s in NODE_SETTINGS} | own


def test_join_checks_counts_with_the_tables_parser():
    from cuzk.cluster import join
    from cuzk.engine import settings

    opts = _options(join.join)
    assert opts["synth_workers"].type.convert("0", None, None) == 0
    with pytest.raises(click.BadParameter, match="must be at least 1, got 0"):
        opts["workers_per_device"].type.convert("0", None, None)
    for name in ("synth_workers", "workers_per_device", "finalizers_per_device"):
        assert opts[name].type.setting is settings.ENGINE_SETTING[name]


def test_labels_follow_the_table():
    from cuzk.cluster.labels import from_labels, to_labels
    from cuzk.engine.settings import NODE_SETTINGS

    assert [s.label for s in NODE_SETTINGS] == list(NODE_LABELS.values())
    for s in NODE_SETTINGS:
        if hasattr(s.parse, "minimum"):  # a count: the table's minimum is the label's
            low = s.parse.minimum
            assert to_labels({s.name: low}) == {s.label: str(low)}
            with pytest.raises(ValueError, match=f"at least {low}"):
                to_labels({s.name: low - 1})
            if low > 0:  # a label cannot say -1
                with pytest.raises(ValueError, match=f"at least {low}"):
                    from_labels({s.label: str(low - 1)})


def test_engine_config_takes_defaults_and_rules_from_the_table():
    import dataclasses

    from cuzk.engine.settings import ENGINE_SETTINGS, EngineConfig

    fields = {f.name: f for f in dataclasses.fields(EngineConfig)}
    plain = EngineConfig()
    for s in ENGINE_SETTINGS:
        assert s.engine_field in fields
        if s.name != "self_verify":  # off in the library, on in the daemon (see EngineConfig)
            assert getattr(plain, s.engine_field) == s.default, s.name
    assert plain.self_verify is False and ENGINE_SETTINGS[7].name == "self_verify"
    for bad, reason in (
        (dict(workers_per_device="x"), "workers_per_device: expected a whole number"),
        (dict(synth_workers=-1), "synth_workers: must be at least 0"),
        (dict(instance=" "), "instance: expected a non-empty string"),
        (dict(prover="not a module"), "prover: expected a Python module name"),
        (dict(prover_options="[1]"), "prover_options: expected a JSON object"),
        (dict(self_verify="maybe"), "self_verify: expected true or false"),
        (dict(devices="gpu"), "devices: devices 'gpu'"),
        (dict(max_attempts=0), "max_attempts: must be at least 1"),
    ):
        with pytest.raises(ValueError) as e:
            EngineConfig(**{"devices": "cpu:1", **bad}).validated()
        assert str(e.value).startswith(reason), e.value
    c = EngineConfig(devices=" CPU:2 ", workers_per_device="3", self_verify="yes").validated()
    assert (c.devices, c.workers_per_device, c.self_verify) == ("cpu:2", 3, True)


def test_serve_hands_the_engine_every_engine_setting(tmp_path):
    import dataclasses

    from cuzk.engine.settings import ENGINE_SETTINGS, EngineConfig
    from cuzk.serve.config import SETTINGS, Config

    by_name = {t.name: t for t in SETTINGS}
    for s in ENGINE_SETTINGS:  # the same entries; the prover's with the daemon's default
        t = by_name[s.name]
        assert t is s or (
            s.name == "prover" and t == dataclasses.replace(s, default=t.default, help=t.help)
        )
    assert by_name["prover"].default == "cuzk.prover" != EngineConfig().prover
    c = Config(
        env={"CUZK_TEST_PROVERS": "1"},
        state_dir=str(tmp_path),
        devices="cpu:2",
        workers_per_device="3",
        finalizers_per_device="4",
        synth_workers="5",
        memory_budget="3GiB",
        board="b1",
        instance="i1",
        self_verify="false",
        prover="cuzk.testing.prover_double",
        prover_options='{"start_secs": 0.5}',
    ).load()
    ec = c.engine_config()
    assert (ec.devices, ec.workers_per_device, ec.finalizers_per_device) == ("cpu:2", 3, 4)
    assert (ec.synth_workers, ec.memory_budget, ec.board_name) == (5, 3 * GiB, "b1")
    assert (ec.instance, ec.self_verify, ec.prover) == ("i1", False, "cuzk.testing.prover_double")
    assert ec.prover_options == {"start_secs": 0.5}
    node = c.node_settings()
    assert set(node) == {s.name for s in ENGINE_SETTINGS} - {"board", "instance"}


def test_help_reads_the_same_in_both_commands():
    from click.testing import CliRunner

    from cuzk.cli import main
    from cuzk.engine.settings import NODE_SETTINGS

    serve = " ".join(CliRunner().invoke(main, ["serve", "--help"]).output.split())
    join = " ".join(CliRunner().invoke(main, ["cluster", "join", "--help"]).output.split())
    for s in NODE_SETTINGS:
        assert s.help in serve and s.help in join
    flags = ", ".join(s.flag for s in NODE_SETTINGS[:-1])
    assert f"{flags} and {NODE_SETTINGS[-1].flag} are then each machine's settings" in serve
    for shown in ("default: true", "default: 256MiB", "default: 64KiB", "default: 1d"):
        assert shown in serve
    assert "default: None" not in serve and "default: []" not in serve
    assert "[default: auto]" in join and "[default: the gateway's setting]" in join


def test_docs_list_every_setting():
    from cuzk.engine.settings import NODE_SETTINGS
    from cuzk.serve.config import SETTINGS

    ops = (ROOT / "docs" / "operations.md").read_text()
    for s in SETTINGS:
        assert f"| `{s.name}` | `{s.flag}" in ops, s.name
    cluster = (ROOT / "docs" / "cluster.md").read_text()
    for s in NODE_SETTINGS:
        assert f"| `{s.flag} {s.metavar.replace('|', chr(92) + '|')}` |" in cluster, s.flag
        assert f"| `{s.label}` | `{s.name}` |" in cluster, s.label


def test_plan_join_takes_exactly_the_node_settings(monkeypatch):
    from cuzk.cluster.join import plan_join
    from cuzk.engine import settings

    monkeypatch.setattr(settings, "cuda_device_count", lambda: 0)
    with pytest.raises(TypeError, match="not a node setting: instance"):
        plan_join("h:1", ray="ray", instance="x")
    plan = plan_join("h:1", ray="ray", workers_per_device=3, memory_budget="8GiB")
    assert plan.labels["cuzk-workers-per-device"] == "3"
