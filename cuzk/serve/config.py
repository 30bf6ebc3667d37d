"""`cuzk serve` configuration: flags > CUZK_* environment > TOML file > defaults.

As in uvicorn, `Config(...)` only stores what it was given and `Config.load()` resolves and
validates it, raising ConfigError with one clear sentence naming the setting and where its
value came from. Every setting is declared once in SETTINGS (name, default, parser, help);
the click options, the environment variables (CUZK_<NAME>), the TOML keys (<name>) and
`cuzk config show` are all derived from that table. The engine's settings in it are
cuzk.engine.settings.ENGINE_SETTINGS, the same entries `cuzk cluster join` and EngineConfig use.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import logging
import os
import re
import stat
import tomllib
from collections.abc import Mapping

from cuzk.engine.settings import (
    ENGINE_SETTING,
    ENGINE_SETTINGS,
    ENV_PREFIX,
    NODE_SETTINGS,
    TEST_PROVERS_ENV,
    EngineConfig,
    Setting,
    count_parser,
    format_size,
    is_test_prover,
    parse_optional_text,
    parse_size,
    parse_text,
    positive_size,
)

DEFAULT_PORT = 9820
SERVE_PROVER = "cuzk.prover"  # Groth16 and PLONK keys (the engine's own default: Groth16)
EX_CONFIG = 78  # sysexits.h EX_CONFIG: systemd's RestartPreventExitStatus= can name it
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


class ConfigError(ValueError):
    """A configuration cuzk serve cannot start with; str() is the one-line reason."""


# ---------------------------------------------------------------------------- value parsers
def _seconds(v) -> float:
    if isinstance(v, bool):
        raise ValueError(f"expected seconds, got {v!r}")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"expected seconds, got {v!r}") from None
    if not x >= 0 or x == float("inf"):
        raise ValueError(f"expected a finite number of seconds >= 0, got {v!r}")
    return x


_DURATION_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def _duration(v) -> float:
    """Seconds from a number or a string such as 90, "30m", "12h", "7d"."""
    if isinstance(v, str):
        s = v.strip().lower()
        for unit in sorted(_DURATION_UNITS, key=len, reverse=True):
            if s.endswith(unit) and s[: -len(unit)].strip():
                try:
                    return _seconds(float(s[: -len(unit)]) * _DURATION_UNITS[unit])
                except ValueError:
                    break
    try:
        return _seconds(v)
    except ValueError:
        raise ValueError(
            f"expected seconds or a duration such as 30m, 12h, 7d, got {v!r}"
        ) from None


def parse_listen(v) -> tuple[str, int]:
    """("127.0.0.1", 9820) from "HOST:PORT", "[::1]:PORT", ":PORT" or "HOST"."""
    s = parse_text(v)
    if s.startswith("["):  # [v6]:port
        host, sep, port = s[1:].partition("]")
        port = port.removeprefix(":")
    elif s.count(":") == 1:
        host, port = s.split(":")
    elif ":" in s:  # a bare IPv6 address
        host, port = s, ""
    else:
        host, port = s, ""
    host = host or "127.0.0.1"
    if not port:
        port_n = DEFAULT_PORT
    elif port.isdigit() and int(port) <= 65535:
        port_n = int(port)
    else:
        raise ValueError(f"{s!r}: expected HOST:PORT with a port from 0 to 65535")
    return host, port_n


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1); False for anything that
    other machines may reach, including 0.0.0.0 and ::."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def _rate(v) -> int:
    """Bytes per second from a size such as 64KiB; 0 turns the check off."""
    return parse_size(v)


def _items(v, sep: str, what: str) -> list:
    """A list setting given as a list, or as one string of items separated by `sep`."""
    if isinstance(v, str):
        return [p for p in v.split(sep) if p.strip()]
    if isinstance(v, (list, tuple)):
        return list(v)
    raise ValueError(f"expected a list of {what}, got {v!r}")


def _key_roots(v) -> list[str]:
    roots = []
    for p in _items(v, os.pathsep, "directories"):  # CUZK_KEY_ROOTS=/a:/b, or one path
        p = parse_text(p)
        real = os.path.realpath(os.path.expanduser(p))
        if not os.path.isdir(real):
            raise ValueError(f"{p!r} is not a directory")
        if real not in roots:
            roots.append(real)
    return roots


_LABEL = r"[a-z0-9_][a-z0-9_-]{0,62}"
_HOST_NAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*$")


def _host_names(v) -> list[str]:
    """Host names for --allow-host: a list, or one string of names separated by commas."""
    names = []
    for item in _items(v, ",", "host names"):
        name = parse_text(item).lower().removesuffix(".")
        if not _HOST_NAME.match(name):
            raise ValueError(
                f"{item!r} is not a host name (letters, digits, '-', '_' and "
                "dots; no port, no brackets)"
            )
        if name not in names:
            names.append(name)
    return names


def _log_level(v) -> str:
    s = parse_text(v).lower()
    if s not in LOG_LEVELS:
        raise ValueError(f"expected one of {', '.join(LOG_LEVELS)}, got {v!r}")
    return s


# ---------------------------------------------------------------------------- the table
_NODE_FLAGS = ", ".join(s.flag for s in NODE_SETTINGS[:-1]) + " and " + NODE_SETTINGS[-1].flag

# The engine's settings (cuzk.engine.settings.ENGINE_SETTINGS) among the daemon's own, in the
# order `--help` and `cuzk config show` list them.
SETTINGS: tuple[Setting, ...] = (
    Setting(
        "listen",
        "127.0.0.1:9820",
        parse_text,
        "Address to listen on, HOST:PORT (port 0: any "
        "free port). A non-loopback address requires --token-file.",
        "HOST:PORT",
    ),
    ENGINE_SETTING["devices"],
    ENGINE_SETTING["synth_workers"],
    ENGINE_SETTING["workers_per_device"],
    ENGINE_SETTING["finalizers_per_device"],
    ENGINE_SETTING["memory_budget"],
    ENGINE_SETTING["msm_tables"],
    Setting(
        "key_roots",
        [],
        _key_roots,
        "Directory under which proving keys and witness files "
        "given by path may lie (symlinks are resolved first). Repeatable; in TOML a list, "
        "in CUZK_KEY_ROOTS separated by ':'.",
        "DIR",
        "--key-root",
    ),
    ENGINE_SETTING["board"],
    ENGINE_SETTING["instance"],
    Setting(
        "token_file",
        None,
        parse_optional_text,
        "File holding the bearer token that API requests must present (Authorization: Bearer ...).",
        "FILE",
    ),
    Setting("log_level", "info", _log_level, "Log level.", "|".join(LOG_LEVELS)),
    ENGINE_SETTING["self_verify"],
    Setting(
        "max_body",
        "256MiB",
        positive_size,
        "Largest request body accepted (witnesses are "
        "uploaded base64 inside JSON, 4/3 of their size).",
        "SIZE",
    ),
    Setting(
        "max_wait",
        600.0,
        _seconds,
        "Longest a request may wait for a result (?wait=, one-shot prove).",
        "SECS",
    ),
    Setting(
        "max_connections",
        1024,
        count_parser(1),
        "Open HTTP connections; beyond it the connection "
        "waiting longest without a complete request head (one that never spoke, an idle "
        "keep-alive one, then one whose head is still arriving) is closed, or, when every "
        "connection is busy with a request, the new one is answered 503.",
        "N",
    ),
    Setting(
        "header_timeout",
        10.0,
        _seconds,
        "Seconds a request's line and headers may take "
        "to arrive (from the connection's opening, or a later request's first byte); "
        "then the connection is closed.",
        "SECS",
    ),
    Setting(
        "body_memory",
        "512MiB",
        positive_size,
        "Bytes of request bodies in flight (each "
        "holds what has arrived, rounded up to the next MiB), also charged to the memory "
        "budget; a body that cannot grow waits up to 5 s (younger bodies still arriving "
        "give way to it), then gets 503. Bodies over 1 MiB together hold at most 7/8 of it "
        "(one connection: one body, at most max_body); the last 1/8 is kept for bodies of "
        "at most 1 MiB (job submissions), each giving way to a new one once it has been "
        "arriving for 2 s. At least 8/7 of max_body.",
        "SIZE",
    ),
    Setting(
        "body_timeout",
        20.0,
        _seconds,
        "Seconds of grace a request body gets before it must keep body_min_rate; each "
        "body_min_rate bytes that arrive add a second (as Apache's mod_reqtimeout), but "
        "never to more than this many seconds ahead: a body sent fast that then stalls or "
        "trickles is cut this long after. A body that falls behind is cut with 408.",
        "SECS",
    ),
    Setting(
        "body_min_rate",
        "64KiB",
        _rate,
        "Bytes per second a request body must keep, at most body_timeout seconds behind "
        "(0: no minimum; a body then only may not stall for 60 s).",
        "SIZE",
    ),
    Setting(
        "allow_hosts",
        [],
        _host_names,
        "Without a token, a Host name served besides "
        "loopback addresses and localhost (DNS-rebinding defence). Repeatable; in TOML a "
        "list, in CUZK_ALLOW_HOSTS separated by ','.",
        "NAME",
        "--allow-host",
    ),
    Setting(
        "drain_timeout",
        30.0,
        _seconds,
        "On SIGTERM: seconds running jobs get to finish before they are cancelled.",
        "SECS",
    ),
    Setting(
        "ray",
        None,
        parse_optional_text,
        "Run as the gateway of a farm on a Ray cluster: the head's HOST:PORT, or auto (the "
        "cluster this machine belongs to). The proving runs on every machine that joined "
        f"with the cuzk_node resource (cuzk cluster join); {_NODE_FLAGS} are then each "
        "machine's settings, unless it joined with its own. See docs/cluster.md.",
        "ADDRESS|auto",
    ),
    Setting(
        "affinity_wait",
        2.0,
        _seconds,
        "With --ray: seconds a partition waits for a node that holds its key before it may "
        "go to one that must load it.",
        "SECS",
    ),
    Setting(
        "node_wait_timeout",
        0.0,
        _duration,
        "With --ray: how long jobs wait while no prover node is alive before they fail "
        "(0: they wait).",
        "DURATION",
    ),
    # `cuzk serve` proves every proof system's keys (cuzk.prover: Groth16 and PLONK side by
    # side), where the engine's own default is the Groth16 prover
    dataclasses.replace(
        ENGINE_SETTING["prover"],
        default=SERVE_PROVER,
        help=ENGINE_SETTING["prover"].help.replace(
            "(cuzk.engine.contract).",
            "(cuzk.engine.contract); the default proves Groth16 and PLONK keys side by side.",
        ),
    ),
    ENGINE_SETTING["prover_options"],
    Setting(
        "state_dir",
        None,
        parse_optional_text,
        "Directory of the job journal (accepted jobs and "
        "finished results, SQLite), the spool of uploaded witnesses and a lock (one daemon "
        "per directory); default $XDG_STATE_HOME/cuzk, else ~/.local/state/cuzk.",
        "DIR",
    ),
    Setting(
        "keep_results",
        "1d",
        _duration,
        "How long finished jobs and their proofs "
        "stay in the journal, fetchable by id (seconds, or 30m, 12h, 7d).",
        "DURATION",
    ),
)
BY_NAME = {s.name: s for s in SETTINGS}
TOML_ALIASES = {"key_root": "key_roots", "board_name": "board", "allow_host": "allow_hosts"}
ENV_ALIASES = {
    "key_roots": ENV_PREFIX + "KEY_ROOT",  # the flag's singular name works too
    "allow_hosts": ENV_PREFIX + "ALLOW_HOST",
}


class Config:
    """The serve configuration. Construct with flags (None = not given), then load().

    After load(): each setting is an attribute (parsed), `sources[name]` says where it came
    from ("flag --x", "env CUZK_X", "file PATH", "default"), and `host`, `port`, `token`,
    `engine_config()` are available.
    """

    def __init__(
        self, config_file: str | None = None, env: Mapping[str, str] | None = None, **flags
    ):
        unknown = set(flags) - set(BY_NAME)
        if unknown:
            raise TypeError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        self.config_file = config_file
        self.env = os.environ if env is None else env
        self.flags = {k: v for k, v in flags.items() if v is not None and v != ()}
        self.sources: dict[str, str] = {}
        self.loaded = False
        self.token: str | None = None

    # -------------------------------------------------------------------- resolution
    def _file_values(self) -> tuple[dict, str | None]:
        path = self.config_file
        where = "flag --config"
        if path is None and self.env.get(ENV_PREFIX + "CONFIG"):
            path, where = self.env[ENV_PREFIX + "CONFIG"], f"env {ENV_PREFIX}CONFIG"
        if path is None:
            return {}, None
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except OSError as e:
            raise ConfigError(f"config file {path} ({where}): {e.strerror or e}") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"config file {path}: not valid TOML: {e}") from None
        if isinstance(data.get("serve"), dict):  # a [serve] table is accepted too
            data = {**{k: v for k, v in data.items() if k != "serve"}, **data["serve"]}
        values = {}
        for key, v in data.items():
            name = key.replace("-", "_")
            name = TOML_ALIASES.get(name, name)
            if name not in BY_NAME:
                raise ConfigError(
                    f"config file {path}: unknown setting {key!r} (known: "
                    f"{', '.join(s.name for s in SETTINGS)})"
                )
            values[name] = v
        return values, path

    def load(self) -> Config:
        """Resolve every setting from flags, environment, file and defaults; validate."""
        file_values, file_path = self._file_values()
        for s in SETTINGS:
            if s.name in self.flags:
                raw, src = self.flags[s.name], f"flag {s.flag}"
            elif self.env.get(s.env, "") != "":
                raw, src = self.env[s.env], f"env {s.env}"
            elif self.env.get(ENV_ALIASES.get(s.name, "-"), "") != "":
                alias = ENV_ALIASES[s.name]
                raw, src = self.env[alias], f"env {alias}"
            elif s.name in file_values:
                raw, src = file_values[s.name], f"file {file_path}"
            else:
                raw, src = s.default, "default"
            try:
                value = s.parse(raw)
            except ValueError as e:
                raise ConfigError(f"{s.name} ({src}): {e}") from None
            setattr(self, s.name, value)
            self.sources[s.name] = src
        if is_test_prover(self.prover) and self.env.get(TEST_PROVERS_ENV) != "1":
            raise ConfigError(
                f"prover ({self.sources['prover']}): {self.prover} is the test suite's double, "
                "which proves nothing; a daemon refuses it (the suite sets "
                f"{TEST_PROVERS_ENV}=1)"
            )
        try:
            self.host, self.port = parse_listen(self.listen)
        except ValueError as e:
            raise ConfigError(f"listen ({self.sources['listen']}): {e}") from None
        if self.state_dir is None:
            from cuzk.serve.journal import default_state_dir

            self.state_dir = default_state_dir(self.env)
        self.state_dir = os.path.abspath(os.path.expanduser(self.state_dir))
        if self.body_memory - self.body_memory // 8 < self.max_body:
            raise ConfigError(
                f"body_memory ({self.sources['body_memory']}) is "
                f"{format_size(self.body_memory)}, less than 8/7 of max_body "
                f"({format_size(self.max_body)}): bodies over 1 MiB may hold 7/8 of it (the "
                "rest is kept for small ones), so a body of max_body could never be read"
            )
        self.token = self._read_token() if self.token_file else None
        if not is_loopback(self.host) and self.token is None:
            raise ConfigError(
                f"listen {self.host}:{self.port} ({self.sources['listen']}) is not a loopback "
                "address: other machines could submit jobs, so a bearer token is required "
                "(--token-file FILE, CUZK_TOKEN_FILE or token_file in the config file)"
            )
        try:
            engine = {s.engine_field: getattr(self, s.name) for s in ENGINE_SETTINGS}
            if self.ray:  # a gateway proves nothing itself: the devices are each node's
                engine["devices"] = "cpu:1"
            self._engine_config = EngineConfig(**engine).validated()
        except ValueError as e:
            raise ConfigError(f"engine: {e}") from None
        self.loaded = True
        return self

    def _read_token(self) -> str:
        path = self.token_file
        try:
            st = os.stat(path)
            with open(path, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as e:
            raise ConfigError(
                f"token_file {path} ({self.sources['token_file']}): {e.strerror or e}"
            ) from None
        except UnicodeDecodeError:
            raise ConfigError(f"token_file {path}: not UTF-8 text") from None
        if len(token) < 16 or any(c.isspace() for c in token):
            raise ConfigError(
                f"token_file {path}: the token must be one word of at least 16 "
                "characters (e.g. `openssl rand -hex 32 > FILE`)"
            )
        if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            logging.getLogger("cuzk.serve").warning(
                "token file %s is readable by group or others (chmod 600 it)", path
            )
        return token

    # -------------------------------------------------------------------- views
    def engine_config(self) -> EngineConfig:
        """The validated EngineConfig (devices resolved, sizes parsed)."""
        self._require_loaded()
        return dataclasses.replace(self._engine_config)

    def node_settings(self) -> dict:
        """With --ray: the engine settings each node starts with, unresolved (a machine
        resolves auto and counts its own cores and memory)."""
        self._require_loaded()
        own = ("board", "instance")  # the gateway's own board and name
        return {s.name: getattr(self, s.name) for s in ENGINE_SETTINGS if s.name not in own}

    def _require_loaded(self):
        if not self.loaded:
            raise RuntimeError("Config.load() first")

    def effective(self) -> dict:
        """{name: {"value", "source", "resolved"?}} for every setting (never the token)."""
        self._require_loaded()
        ec = self._engine_config
        resolved = {
            "devices": ",".join(ec.device_names),
            "synth_workers": ec.synth_workers,
            "memory_budget": f"{ec.memory_budget} bytes ({format_size(ec.memory_budget)})",
            "listen": f"{self.host}:{self.port}",
        }
        if self.ray:  # each node resolves its own
            for name in ("devices", "synth_workers"):
                resolved[name] = "per node"
        out = {}
        for s in SETTINGS:
            entry = {"value": getattr(self, s.name), "source": self.sources[s.name]}
            if s.name in resolved and str(resolved[s.name]) != str(entry["value"]):
                entry["resolved"] = resolved[s.name]
            out[s.name] = entry
        out["token"] = {
            "value": "set" if self.token else "none",
            "source": self.sources["token_file"],
        }
        return out

    def to_toml(self) -> str:
        """The effective configuration as a TOML file, each value's source as a comment."""
        lines = ["# cuzk serve: effective configuration (flags > CUZK_* env > file > defaults)"]
        for name, e in self.effective().items():
            if name == "token":
                continue
            v = e["value"]
            note = e["source"] + (f"; resolved: {e['resolved']}" if "resolved" in e else "")
            text = "# " + f"{name} = (unset)" if v is None else f"{name} = {_toml_value(v)}"
            lines.append(f"{text:<44} # {note}")
        return "\n".join(lines) + "\n"

    def to_json(self) -> str:
        return json.dumps(self.effective(), indent=2)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):  # as its JSON text, which the setting parses back
        return json.dumps(json.dumps(v))
    return json.dumps(str(v))  # a TOML basic string is a JSON string for these values
