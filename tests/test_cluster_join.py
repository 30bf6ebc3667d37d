"""cuzk.cluster.labels (engine settings <-> Ray node labels) and `cuzk cluster join`.

No Ray cluster starts here: join runs with --dry-run, or with `ray` replaced by a script that
records what it was given. Ray's own label parser is the judge of the labels.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk.cli import COMMANDS, main
from cuzk.cluster import join as join_mod
from cuzk.cluster.labels import (
    ACTOR_PREFIX,
    NAMESPACE,
    NODE_RESOURCE,
    canonical_devices,
    devices_label,
    from_labels,
    to_labels,
)
from cuzk.engine import settings as engine_settings
from cuzk.engine.settings import parse_devices

label_utils = pytest.importorskip("ray._private.label_utils")

GiB, MiB = 1024**3, 1024**2
FIND_RAY = join_mod.find_ray  # the real one; the tests' `ray` is a stand-in (_no_real_ray)


def test_names_of_the_contract():
    assert (NODE_RESOURCE, ACTOR_PREFIX, NAMESPACE) == ("cuzk_node", "cuzk-node-", "cuzk")
    assert COMMANDS["cluster"] == "cuzk.cluster.join:cluster"


def test_the_package_does_not_import_ray():
    code = (
        "import sys, cuzk.cluster, cuzk.cluster.labels, cuzk.cluster.join, cuzk.cli\n"
        "assert not [m for m in sys.modules if m == 'ray' or m.startswith('ray.')]\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)


# ---------------------------------------------------------------------------- settings
def test_labels_of_the_contract():
    labels = to_labels(
        {
            "devices": "0,1",
            "synth_workers": 0,
            "workers_per_device": 2,
            "finalizers_per_device": 3,
            "memory_budget": 64 * GiB,
        }
    )
    assert labels == {
        "cuzk-devices": "0_1",
        "cuzk-synth-workers": "0",
        "cuzk-workers-per-device": "2",
        "cuzk-finalizers-per-device": "3",
        "cuzk-memory-budget": str(64 * GiB),
    }
    assert to_labels({"devices": "cpu:2"}) == {"cuzk-devices": "cpu.2"}
    assert to_labels({"devices": "auto", "memory_budget": None}) == {"cuzk-devices": "auto"}
    assert to_labels({}) == {}


@pytest.mark.parametrize(
    "spec, canonical, label",
    [
        ("auto", "auto", "auto"),
        (" AUTO ", "auto", "auto"),
        ("cpu", "cpu:1", "cpu.1"),
        ("cpu:03", "cpu:3", "cpu.3"),
        ("cuda:1, cuda:0", "1,0", "1_0"),
        ("0,1,2,3,5", "0,1,2,3,5", "0-3_5"),
        ("7,0,1,2", "7,0,1,2", "7_0-2"),
        (",".join(map(str, range(64))), ",".join(map(str, range(64))), "0-63"),
    ],
)
def test_device_spellings(spec, canonical, label):
    assert canonical_devices(spec) == canonical
    assert devices_label(spec) == label
    assert from_labels({"cuzk-devices": label}) == {"devices": canonical}
    assert parse_devices(canonical, n_gpus=64) == parse_devices(spec, n_gpus=64)


def _ordinals():
    """GPU ordinal lists: any order (short ones), and ascending runs (long ones)."""
    shuffled = st.lists(st.integers(0, 999), min_size=1, max_size=12, unique=True)
    runs = st.lists(st.tuples(st.integers(0, 4), st.integers(1, 300)), min_size=1, max_size=4)

    def from_runs(rs):
        out, at = [], 0
        for gap, length in rs:
            at += gap + (1 if out else 0)
            out.extend(range(at, at + length))
            at = out[-1]
        return out

    return shuffled | runs.map(from_runs)


_devices = st.one_of(
    st.just("auto"),
    st.integers(1, 10**6).map(lambda n: f"cpu:{n}"),
    _ordinals().map(lambda os_: ",".join(map(str, os_))),
)
_settings = st.fixed_dictionaries(
    {},
    optional={
        "devices": _devices,
        "synth_workers": st.integers(0, 10**4),
        "workers_per_device": st.integers(1, 10**4),
        "finalizers_per_device": st.integers(1, 10**4),
        "memory_budget": st.integers(1, 2**64),
    },
)


@settings(max_examples=300, deadline=None)
@given(_settings)
def test_labels_round_trip_and_ray_accepts_them(s):
    labels = to_labels(s)
    assert from_labels(labels) == s
    label_utils.validate_node_label_syntax(labels)
    label_utils.validate_node_labels(labels)
    if labels:  # as `ray start --labels` reads them
        assert label_utils.parse_node_labels_string(",".join(f"{k}={v}" for k, v in labels.items()))


@settings(max_examples=100, deadline=None)
@given(_ordinals(), st.sampled_from(["{}", "cuda:{}", " {} "]))
def test_other_spellings_of_gpus_round_trip_to_the_canonical_one(ordinals, fmt):
    spec = ",".join(fmt.format(o) for o in ordinals)
    back = from_labels(to_labels({"devices": spec}))["devices"]
    assert back == ",".join(map(str, ordinals))
    assert parse_devices(back, n_gpus=10**4) == parse_devices(spec, n_gpus=10**4)


def test_too_many_gpus_out_of_order_is_refused_clearly():
    spec = ",".join(map(str, range(40, 0, -1)))
    with pytest.raises(ValueError, match="Ray label"):
        to_labels({"devices": spec})


def test_from_labels_ignores_other_labels():
    labels = {
        "ray.io/node-id": "abc",
        "ray.io/accelerator-type": "H100",
        "cuzk-something-new": "x",
        "zone": "a",
        "cuzk-workers-per-device": "4",
    }
    assert from_labels(labels) == {"workers_per_device": 4}
    assert from_labels({}) == {}


@pytest.mark.parametrize(
    "key, value, reason",
    [
        ("cuzk-devices", "cpu.0", "at least one CPU"),
        ("cuzk-devices", "cpu:2", "not a Ray label value"),
        ("cuzk-devices", "0,1", "not a Ray label value"),
        ("cuzk-devices", "1_1", "named twice"),
        ("cuzk-devices", "0-3_2", "named twice"),
        ("cuzk-devices", "3-1", "does not ascend"),
        ("cuzk-devices", "0-99999999", "more than"),
        ("cuzk-devices", "gpu", "expected auto, cpu.N or GPU ordinals"),
        ("cuzk-devices", "", "not a Ray label value"),
        ("cuzk-memory-budget", "0", "at least 1"),
        ("cuzk-memory-budget", "8GiB", "decimal"),
        ("cuzk-memory-budget", "-5", "not a Ray label value"),
        ("cuzk-workers-per-device", "0", "at least 1"),
        ("cuzk-finalizers-per-device", "1.5", "decimal"),
        ("cuzk-synth-workers", 3, "not a Ray label value"),
    ],
)
def test_malformed_cuzk_labels_are_refused_naming_the_label(key, value, reason):
    with pytest.raises(ValueError, match=reason) as e:
        from_labels({"ray.io/node-id": "x", key: value})
    assert str(e.value).startswith(f"node label {key}=")


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(
        ["cuzk-devices", "cuzk-memory-budget", "cuzk-synth-workers", "cuzk-workers-per-device"]
    ),
    st.text(alphabet="0123456789_-.cpuatoGx", max_size=20),
)
def test_from_labels_answers_any_value_or_raises_value_error(key, value):
    try:
        s = from_labels({key: value})
    except ValueError as e:
        assert key in str(e)
    else:
        assert to_labels(s)  # what it read is a valid setting again


@pytest.mark.parametrize(
    "s, reason",
    [
        ({"instance": "x"}, "not a node setting: instance"),
        ({"devices": "cpu:0"}, "at least one CPU"),
        ({"devices": "0,0"}, "named twice"),
        ({"devices": "gpu0"}, "expected auto, cpu:N"),
        ({"workers_per_device": 0}, "at least 1"),
        ({"synth_workers": -1}, "at least 0"),
        ({"synth_workers": True}, "whole number"),
        ({"memory_budget": "auto"}, "whole number"),
        ({"memory_budget": 0}, "positive"),
        ({"devices": "cpu:" + "9" * 70}, "too long"),
    ],
)
def test_to_labels_refuses_bad_settings(s, reason):
    with pytest.raises(ValueError, match=reason):
        to_labels(s)


# ---------------------------------------------------------------------------- join
@pytest.fixture(autouse=True)
def _machine(monkeypatch):
    """A machine with 2 GPUs and 80 GiB of memory budget by default, whatever runs the tests."""
    monkeypatch.setattr(engine_settings, "cuda_device_count", lambda: 2)
    monkeypatch.setattr(engine_settings, "auto_memory_budget", lambda: 80 * GiB)
    for var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def _no_real_ray(tmp_path_factory, monkeypatch):
    """Never the real `ray start`: by default `ray` is a script that fails (status 99)."""
    ray = tmp_path_factory.mktemp("no-ray") / "ray"
    ray.write_text("#!/bin/sh\nexit 99\n")
    ray.chmod(0o755)
    monkeypatch.setattr(join_mod, "find_ray", lambda: str(ray))


def cli(*args):
    return CliRunner().invoke(main, ["cluster", "join", *map(str, args)])


def dry_run(*args):
    """(environment assignments, argv) of the printed command line."""
    r = cli("--dry-run", *args)
    assert r.exit_code == 0, r.output
    lines = [line for line in r.stdout.splitlines() if line.startswith("+ ")]
    assert len(lines) == 1 and r.stdout.count("\n") == 1, r.stdout
    words = shlex.split(lines[0][2:])
    env = {}
    while "=" in words[0] and not words[0].startswith("/"):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    return env, words


def opt(argv, name):
    return argv[argv.index(name) + 1]


def labels_of(argv):
    return label_utils.parse_node_labels_string(opt(argv, "--labels"))


def test_dry_run_prints_the_ray_start_line():
    env, argv = dry_run("10.0.0.1:6379", "--devices", "0,1", "--memory-budget", "64GiB")
    assert env == {}
    assert Path(argv[0]).name == "ray" and argv[1] == "start"
    assert opt(argv, "--address") == "10.0.0.1:6379"
    assert opt(argv, "--resources") == '{"cuzk_node": 1}'
    assert opt(argv, "--num-gpus") == "2"
    store = int(opt(argv, "--object-store-memory"))
    assert store == 4 * GiB  # 10 % of 64 GiB is over the cap
    assert labels_of(argv) == {"cuzk-devices": "0_1", "cuzk-memory-budget": str(60 * GiB)}


def test_settings_given_are_recorded_and_the_others_left_to_the_gateway():
    _, argv = dry_run(
        "head.example:6379",
        "--synth-workers",
        "0",
        "--workers-per-device",
        "3",
        "--finalizers-per-device",
        "4",
    )
    labels = labels_of(argv)
    assert "cuzk-devices" not in labels
    assert from_labels(labels) == {
        "synth_workers": 0,
        "workers_per_device": 3,
        "finalizers_per_device": 4,
        "memory_budget": 80 * GiB - 4 * GiB,
    }
    assert opt(argv, "--num-gpus") == "2"  # every GPU here, as for auto


@pytest.mark.parametrize(
    "devices, gpus_here, num_gpus",
    [("auto", 2, "2"), ("auto", 0, "0"), ("cpu:4", 2, "0"), ("cpu", 0, "0"), ("1", 2, "1")],
)
def test_num_gpus_follows_devices(monkeypatch, devices, gpus_here, num_gpus):
    monkeypatch.setattr(engine_settings, "cuda_device_count", lambda: gpus_here)
    _, argv = dry_run("h:1", "--devices", devices)
    assert opt(argv, "--num-gpus") == num_gpus
    assert from_labels(labels_of(argv))["devices"] == canonical_devices(devices)


def test_memory_rule():
    # default store: 10 % of the budget, capped at 4 GiB, at least Ray's 75 MiB
    for budget, store in [("8GiB", int(8 * GiB * 0.1)), ("100GiB", 4 * GiB), ("500MiB", 75 * MiB)]:
        _, argv = dry_run("h:1", "--memory-budget", budget)
        assert int(opt(argv, "--object-store-memory")) == store
        total = engine_settings.parse_size(budget)
        assert from_labels(labels_of(argv))["memory_budget"] == total - store
    _, argv = dry_run("h:1", "--memory-budget", "16GiB", "--object-store-memory", "6GiB")
    assert opt(argv, "--object-store-memory") == str(6 * GiB)
    assert labels_of(argv)["cuzk-memory-budget"] == str(10 * GiB)
    _, argv = dry_run("h:1", "--object-store-memory", "1GB")  # auto: 80 GiB here
    assert labels_of(argv)["cuzk-memory-budget"] == str(80 * GiB - 10**9)


def one_line_error(r, *fragments, code=2):
    assert r.exit_code == code, r.output
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("cuzk cluster join: "), r.stderr
    for f in fragments:
        assert f in r.stderr


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["--memory-budget", "4GiB", "--object-store-memory", "4GiB"], ["leaves nothing"]),
        (["--memory-budget", "1GiB", "--object-store-memory", "2GiB"], ["leaves nothing"]),
        (["--memory-budget", "60MiB"], ["leaves nothing"]),
        (["--object-store-memory", "10MiB"], ["at least 75.0 MiB"]),
        (["--object-store-memory", "lots"], ["--object-store-memory", "not a size"]),
        (["--memory-budget", "8 gigs"], ["--memory-budget", "not a size"]),
        (["--memory-budget", "0"], ["must be positive"]),
        (["--devices", "2"], ["--devices", "no CUDA device 2 (found 2)"]),
        (["--devices", "0,0"], ["named twice"]),
        (["--devices", "cpu:0"], ["at least one CPU"]),
        (["--devices", "gpus"], ["expected auto, cpu:N"]),
        (["--", "--num-gpus", "8"], ["--num-gpus is set by cuzk cluster join"]),
        (["--", "--labels=a=b"], ["--labels is set by cuzk cluster join"]),
    ],
)
def test_bad_options_are_one_line_errors(args, fragments):
    one_line_error(cli("h:6379", "--dry-run", *args), *fragments)


@pytest.mark.parametrize(
    "head", ["head", "head:", ":6379", "head:port", "head:0", "head:70000", "a b:1", "::1:6379",
             "[head]:6379", "[::1]", "http://head:6379"],
)  # fmt: skip
def test_bad_head_is_a_one_line_error(head):
    one_line_error(cli(head, "--dry-run"), "HOST:PORT")


@pytest.mark.parametrize("head", ["10.0.0.1:6379", "[fd00::1]:6379", "ray-head.lan:6379", "h:1"])
def test_good_heads(head):
    _, argv = dry_run(head)
    assert opt(argv, "--address") == head


def test_bad_counts_are_usage_errors():
    for args in (
        ["--workers-per-device", "0"],
        ["--synth-workers", "-1"],
        ["--synth-workers", "x"],
    ):
        r = cli("h:1", "--dry-run", *args)
        assert r.exit_code == 2 and "Invalid value" in r.stderr


def test_token_file_sets_token_auth(tmp_path, monkeypatch):
    token = tmp_path / "ray token"
    token.write_text("s3cret\n")
    monkeypatch.chdir(tmp_path)
    env, argv = dry_run("h:1", "--ray-token-file", "ray token")
    assert env == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    assert argv[1] == "start"


def test_token_file_must_be_readable_and_not_empty(tmp_path):
    one_line_error(cli("h:1", "--ray-token-file", str(tmp_path / "nope")), "No such file")
    (tmp_path / "empty").write_text("\n")
    one_line_error(cli("h:1", "--ray-token-file", str(tmp_path / "empty")), "empty")
    one_line_error(cli("h:1", "--ray-token-file", str(tmp_path)), "--ray-token-file")
    if os.geteuid() != 0:  # root reads anything
        (tmp_path / "secret").write_text("t")
        (tmp_path / "secret").chmod(0)
        one_line_error(cli("h:1", "--ray-token-file", str(tmp_path / "secret")), "ermission")


def test_extra_ray_start_arguments_pass_through():
    _, argv = dry_run("h:1", "--", "--node-ip-address", "10.0.0.5", "--block")
    assert argv[-3:] == ["--node-ip-address", "10.0.0.5", "--block"]


def test_without_ray_a_one_line_error_names_the_extra(monkeypatch):
    monkeypatch.setattr(join_mod, "find_ray", lambda: None)
    for dry in ([], ["--dry-run"]):
        one_line_error(cli("h:1", *dry), "pip install 'cuzk[cluster]'", code=1)


def test_find_ray_prefers_the_one_beside_python(tmp_path, monkeypatch):
    bin_dir, other = tmp_path / "venv-bin", tmp_path / "path-bin"
    bin_dir.mkdir()
    other.mkdir()
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.setenv("PATH", str(other))
    assert FIND_RAY() is None
    for d in (other, bin_dir):
        (d / "ray").write_text("#!/bin/sh\n")
        (d / "ray").chmod(0o755)
        assert FIND_RAY() == str(d / "ray")


def fake_ray(tmp_path, status):
    """A `ray` that records its arguments and its RAY_AUTH_* environment, then exits."""
    script = tmp_path / "bin" / "ray"
    script.parent.mkdir()
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > {shlex.quote(str(tmp_path / "args"))}\n'
        f"env | grep ^RAY_AUTH_ | sort > {shlex.quote(str(tmp_path / 'env'))}\n"
        f"exit {status}\n"
    )
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("status", [0, 3])
def test_join_runs_ray_start_and_exits_with_its_status(tmp_path, monkeypatch, status):
    ray = fake_ray(tmp_path, status)
    monkeypatch.setattr(join_mod, "find_ray", lambda: str(ray))
    token = tmp_path / "token"
    token.write_text("t0k3n")
    r = cli(
        "h:6379", "--devices", "cpu:2", "--memory-budget", "8GiB", "--ray-token-file", str(token)
    )
    assert r.exit_code == status, r.output
    printed = r.stdout.strip()
    assert printed.startswith(f"+ RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH={token} {ray} start ")
    ran = (tmp_path / "args").read_text().splitlines()
    assert ran == shlex.split(printed[2:])[3:]
    assert ran[:2] == ["start", "--address"]
    assert (tmp_path / "env").read_text().splitlines() == [
        "RAY_AUTH_MODE=token",
        f"RAY_AUTH_TOKEN_PATH={token}",
    ]
    assert "cuzk-devices=cpu.2" in ran[ran.index("--labels") + 1]


def test_dry_run_runs_nothing(tmp_path, monkeypatch):
    ray = fake_ray(tmp_path, 0)
    monkeypatch.setattr(join_mod, "find_ray", lambda: str(ray))
    assert cli("h:1", "--dry-run").exit_code == 0
    assert not (tmp_path / "args").exists()


def test_help_says_what_join_does():
    r = CliRunner().invoke(main, ["cluster", "join", "--help"])
    assert r.exit_code == 0
    text = " ".join(r.output.split())
    for words in (
        "each prover machine",
        "override the gateway's for this machine",
        "10% of the memory budget, at most 4.0 GiB",
        "RAY_AUTH_MODE=token",
        "cuzk_node",
    ):
        assert words in text
    assert "join" in CliRunner().invoke(main, ["cluster", "--help"]).output
