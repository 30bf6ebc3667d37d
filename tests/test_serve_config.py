"""`cuzk serve` configuration: precedence flags > CUZK_* env > TOML file > defaults, validation
with clear reasons, and `cuzk config show` (TOML that reads back, sources named)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from cuzk.serve.cli import config as config_cmd
from cuzk.serve.cli import serve as serve_cmd
from cuzk.serve.config import EX_CONFIG, SETTINGS, Config, ConfigError, is_loopback, parse_listen


def load(tmp_path=None, toml: str | None = None, env: dict | None = None, **flags) -> Config:
    path = None
    if toml is not None:
        path = tmp_path / "cuzk.toml"
        path.write_text(toml)
    return Config(config_file=path, env=env or {}, **flags).load()


def test_defaults(tmp_path):
    c = load()
    assert (c.host, c.port) == ("127.0.0.1", 9820)
    assert c.devices == "auto" and c.key_roots == [] and c.token is None
    assert c.workers_per_device == 2 and c.memory_budget == "auto"
    assert all(src == "default" for src in c.sources.values())
    ec = c.engine_config()
    assert ec.device_names  # resolved: GPUs, else cpu:0
    assert ec.memory_budget > 0 and ec.synth_workers >= 1


def test_precedence_flag_over_env_over_file_over_default(tmp_path):
    toml = 'devices = "cpu:3"\nworkers_per_device = 3\nlog_level = "debug"\nmax_wait = 5\n'
    env = {"CUZK_DEVICES": "cpu:2", "CUZK_WORKERS_PER_DEVICE": "4"}
    c = load(tmp_path, toml, env, devices="cpu:1")
    assert c.devices == "cpu:1" and c.sources["devices"] == "flag --devices"
    assert c.workers_per_device == 4
    assert c.sources["workers_per_device"] == "env CUZK_WORKERS_PER_DEVICE"
    assert c.log_level == "debug" and c.sources["log_level"] == f"file {tmp_path}/cuzk.toml"
    assert c.max_wait == 5.0
    assert c.synth_workers == 0 and c.sources["synth_workers"] == "default"
    assert c.engine_config().device_names == ["cpu:0"]
    assert c.engine_config().workers_per_device == 4


def test_config_file_from_env_and_serve_table(tmp_path):
    (tmp_path / "a.toml").write_text('[serve]\nlisten = "127.0.0.1:9999"\n')
    c = Config(env={"CUZK_CONFIG": str(tmp_path / "a.toml")}).load()
    assert c.port == 9999


def test_key_roots_from_each_source(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (tmp_path / "link").symlink_to(a)
    c = load(env={"CUZK_KEY_ROOTS": f"{a}{os.pathsep}{tmp_path / 'link'}{os.pathsep}{b}"})
    assert c.key_roots == [str(a), str(b)]  # real paths, each once
    c = load(env={"CUZK_KEY_ROOT": str(a)})
    assert c.key_roots == [str(a)] and c.sources["key_roots"] == "env CUZK_KEY_ROOT"
    c = load(tmp_path, f'key_roots = ["{b}"]\n')
    assert c.key_roots == [str(b)]
    c = load(tmp_path, f'key-root = ["{a}"]\n', key_roots=(str(b),))
    assert c.key_roots == [str(b)] and c.sources["key_roots"] == "flag --key-root"


@pytest.mark.parametrize(
    "flags, env, toml, reason",
    [
        ({"devices": "gpu:7"}, {}, None, "devices (flag --devices)"),
        ({}, {"CUZK_WORKERS_PER_DEVICE": "0"}, None, "workers_per_device (env "),
        ({}, {"CUZK_SYNTH_WORKERS": "two"}, None, "whole number"),
        ({"memory_budget": "lots"}, {}, None, "not a size"),
        ({}, {}, 'memory_budget = "0"\n', "must be positive"),
        ({}, {}, "listen = 9820\n", "listen (file"),
        ({"listen": "127.0.0.1:99999"}, {}, None, "port from 0 to 65535"),
        ({"log_level": "loud"}, {}, None, "log_level"),
        ({}, {}, 'self_verify = "maybe"\n', "true or false"),
        ({}, {}, "max_wait = -1\n", "max_wait"),
        ({}, {}, "unknown_thing = 1\n", "unknown setting 'unknown_thing'"),
        ({}, {}, "devices = \n", "not valid TOML"),
        ({"key_roots": ("/nonexistent/cuzk",)}, {}, None, "is not a directory"),
        ({"listen": "0.0.0.0:9820"}, {}, None, "a bearer token is required"),
        ({"listen": "[::]:9820"}, {}, None, "a bearer token is required"),
        ({"token_file": "/nonexistent/token"}, {}, None, "token_file /nonexistent/token"),
    ],
)
def test_bad_configurations_name_the_setting_and_source(tmp_path, flags, env, toml, reason):
    with pytest.raises(ConfigError) as e:
        load(tmp_path, toml, env, **flags)
    assert reason in str(e.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="config file .*absent.toml"):
        Config(config_file=tmp_path / "absent.toml", env={}).load()


def test_token_file(tmp_path):
    tf = tmp_path / "token"
    tf.write_text("short\n")
    with pytest.raises(ConfigError, match="at least 16"):
        load(token_file=str(tf))
    tf.write_text("a" * 32 + "\n")
    tf.chmod(0o600)
    c = load(token_file=str(tf), listen="0.0.0.0:0")
    assert c.token == "a" * 32 and (c.host, c.port) == ("0.0.0.0", 0)
    assert "a" * 32 not in c.to_toml() and "a" * 32 not in c.to_json()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("127.0.0.1:9820", ("127.0.0.1", 9820)),
        (":8000", ("127.0.0.1", 8000)),
        ("localhost", ("localhost", 9820)),
        ("[::1]:81", ("::1", 81)),
        ("::1", ("::1", 9820)),
        ("0.0.0.0:0", ("0.0.0.0", 0)),
    ],
)
def test_parse_listen(text, expected):
    assert parse_listen(text) == expected


def test_is_loopback():
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.3.4.5", "::1", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "prover7"))


def test_config_show_prints_toml_that_reads_back(tmp_path):
    (tmp_path / "c.toml").write_text('devices = "cpu:2"\nmax_connections = 9\n')
    r = CliRunner().invoke(
        config_cmd,
        [
            "show",
            "--config",
            str(tmp_path / "c.toml"),
            "--workers-per-device",
            "3",
            "--key-root",
            str(tmp_path),
        ],
        env={"CUZK_MEMORY_BUDGET": "3GiB", "CUZK_CONFIG": None},
    )
    assert r.exit_code == 0, r.output
    data = tomllib.loads(r.output)
    assert data["devices"] == "cpu:2" and data["max_connections"] == 9
    assert data["workers_per_device"] == 3 and data["memory_budget"] == 3 * 1024**3
    assert data["key_roots"] == [str(tmp_path)]
    lines = {ln.split("=")[0].strip(): ln for ln in r.output.splitlines() if "=" in ln}
    assert "flag --workers-per-device" in lines["workers_per_device"]
    assert "env CUZK_MEMORY_BUDGET" in lines["memory_budget"]
    assert f"file {tmp_path / 'c.toml'}" in lines["devices"]
    assert "resolved: cpu:0,cpu:1" in lines["devices"]
    # the printed file, fed back, gives the same configuration
    (tmp_path / "back.toml").write_text(r.output)
    back = Config(config_file=tmp_path / "back.toml", env={}).load()
    assert back.devices == "cpu:2" and back.memory_budget == 3 * 1024**3
    assert back.workers_per_device == 3 and back.key_roots == [str(tmp_path)]
    r = CliRunner().invoke(config_cmd, ["show", "--json"], env={"CUZK_DEVICES": "cpu:4"})
    assert r.exit_code == 0, r.output
    obj = json.loads(r.output)
    assert obj["devices"] == {
        "value": "cpu:4",
        "source": "env CUZK_DEVICES",
        "resolved": "cpu:0,cpu:1,cpu:2,cpu:3",
    }
    assert set(obj) == {s.name for s in SETTINGS} | {"token"}


def test_bad_configuration_exits_ex_config():
    r = CliRunner().invoke(config_cmd, ["show", "--devices", "nonsense"])
    assert r.exit_code == EX_CONFIG and "devices (flag --devices)" in r.output
    r = CliRunner().invoke(serve_cmd, ["--listen", "10.1.2.3:9820"])
    assert r.exit_code == EX_CONFIG and "token is required" in r.output


def test_every_setting_has_a_flag_and_help():
    r = CliRunner().invoke(serve_cmd, ["--help"])
    assert r.exit_code == 0
    for s in SETTINGS:
        assert s.flag in r.output and s.env in r.output


def test_openapi_document_lists_exactly_the_routes():
    """cuzk/serve/openapi.yaml (read with a line parser: no YAML library is a dependency)
    names every route the server has, with its methods, and nothing else."""
    import re
    from importlib import resources

    from cuzk.serve.api import Api

    text = resources.files("cuzk").joinpath("serve", "openapi.yaml").read_text()
    documented, path = set(), None
    in_paths = False
    for line in text.splitlines():
        if line == "paths:":
            in_paths = True
        elif in_paths and re.match(r"^  /\S*:$", line):
            path = line.strip()[:-1]
        elif in_paths and path and re.match(r"^    (get|post|put|delete|patch):", line):
            documented.add((line.strip()[:-1].upper(), path))

    class _Cfg:
        key_roots, max_wait = [], 1.0

    routes = Api(engine=None, config=_Cfg()).router().routes
    served = {(r.method, r.pattern) for r in routes} - {("GET", "/ui/{dir}/{file}")}
    assert documented == served


@pytest.mark.parametrize("source", ["flag", "env", "file"])
def test_a_daemon_refuses_the_test_suites_prover_double(tmp_path, source):
    """The prover double proves nothing: `cuzk serve` refuses it from any source unless
    CUZK_TEST_PROVERS=1 (the suite sets it); the real prover and other modules are taken."""
    double = "cuzk.testing.prover_double"
    flags, env, toml = {}, {}, None
    if source == "flag":
        flags = {"prover": double}
    elif source == "env":
        env = {"CUZK_PROVER": double}
    else:
        toml = f'prover = "{double}"\n'
    with pytest.raises(ConfigError, match=r"test suite's double.*CUZK_TEST_PROVERS=1"):
        load(tmp_path, toml, env=env, **flags)
    assert load(tmp_path, toml, env={**env, "CUZK_TEST_PROVERS": "1"}, **flags).prover == double
    assert load(tmp_path, None, env={"CUZK_PROVER": "my_site.prover"}).prover == "my_site.prover"
    assert load(tmp_path, None).prover == "cuzk.prover"  # Groth16 and PLONK keys


def test_the_wheel_leaves_the_test_support_out():
    """setup.cfg keeps cuzk.testing (the double, drills, simulators) out of an install."""
    from setuptools import find_packages

    text = (Path(__file__).resolve().parent.parent / "setup.cfg").read_text()
    excluded = [
        line.strip()
        for line in text.split("[options.packages.find]")[1].split("[")[0].splitlines()
        if line.strip() and not line.strip().startswith(("#", "exclude"))
    ]
    found = find_packages(str(Path(__file__).resolve().parent.parent), exclude=excluded)
    assert "cuzk.groth16" in found and "cuzk.testing" not in found
