"""`cuzk top --server URL`: the status read over HTTP (GET /status, the API client), a farm's
nodes on screen, and the refusals: unreachable, 401, an answer that is not a status.

The server is a stand-in on loopback (serve_harness.StatusServer) answering a synthetic farm
gateway's snapshot (cuzk.testing.sample.farm_snapshot: the cluster contract's `nodes` and
`node` fields) or a one-machine one, so the command is pinned without a farm.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from serve_harness import StatusServer, closed_port_url, run_cli

from cuzk.cli import main as cuzk_main
from cuzk.testing.sample import busy_snapshot, farm_snapshot
from cuzk.top import runner as top_runner
from cuzk.top.render import short_node
from cuzk.top.source import EXIT_REFUSED, EXIT_UNREACHABLE

TOKEN = "top-server-test-token-0123456789"


class Ticking:
    """Snapshots one second apart, one per GET /status."""

    def __init__(self, make=farm_snapshot):
        self.make, self.n = make, 0

    def __call__(self):
        snap = self.make(tick=self.n)
        self.n += 1
        return snap


def _top(*args, env=None):
    # no CUZK_* from the shell: the tests say what they mean
    clean = {"CUZK_SERVER": None, "CUZK_TOKEN_FILE": None, "CUZK_TOP_BOARD": None}
    return CliRunner().invoke(cuzk_main, ["top", *args], env={**clean, **(env or {})})


@pytest.fixture
def farm():
    with StatusServer(Ticking()) as s:
        yield s


def _rows_after(lines, title):
    """The rows of the table whose header starts with `title` (up to the next header)."""
    head = next(i for i, line in enumerate(lines) if line.split()[:1] == [title])
    rows = []
    for line in lines[head + 1 :]:
        if not line.strip() or line.split()[0].isupper() or line.startswith(" . pending"):
            break
        rows.append(line.split())
    return lines[head].split(), rows


def test_once_shows_every_node_and_the_node_columns(farm):
    r = _top("--server", farm.url, "--once", "--interval", "0.1", "--width", "160", "--height", 50)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert len(lines) == 50 and lines[0].split()[:3] == ["cuzk", "top", "prover-a"]
    snap = farm_snapshot(tick=1)  # the second status read: the one drawn
    # the nodes panel: one row per node, alive or dead, devices, incarnation, seen, load
    cols, rows = _rows_after(lines, "NODE")
    assert cols == ["NODE", "HOST", "STATE", "DEVICES", "INC", "SEEN", "LOAD"]
    assert len(rows) == len(snap["nodes"]) == 3
    for n, row in zip(snap["nodes"], rows, strict=True):
        assert row[0] == n["node_id"][:8] == short_node(n["node_id"])
        assert row[1] == n["host"] and row[2] == ("alive" if n["alive"] else "dead")
        assert row[3] == ",".join(n["devices"]) and row[4] == str(n["incarnation"])
        assert row[6] == f"{n['outstanding']}/{n['capacity']}"
    assert rows[2][2] == "dead" and rows[2][5] == "1m35s"  # last seen 95 s before `now`
    # the worker table: a NODE column, each row the short id of the worker's node
    cols, rows = _rows_after(lines, "WORKER")
    assert cols[:3] == ["WORKER", "NODE", "DEVICE"]
    got = [(row[0], row[1]) for row in rows]
    want = [(str(w["worker_id"]), w["node"][:8]) for w in snap["gpu_workers"]]
    assert got == want  # grouped by node, in the order of `nodes`; ids repeat across nodes
    for title, items, id_key in (
        ("FINALIZER", snap["finalizers"], "finalizer_id"),
        ("SYNTH", snap["synthesis"]["workers"], "worker_id"),
    ):
        cols, rows = _rows_after(lines, title)
        assert cols[1] == "NODE", cols
        assert sorted((row[0], row[1]) for row in rows) == sorted(
            (str(it[id_key]), it["node"][:8]) for it in items
        )


def test_job_rows_name_the_nodes_of_their_partitions(farm):
    r = _top("--server", farm.url, "--once", "--interval", "0.1", "--width", "160", "--height", 50)
    assert r.exit_code == 0, r.output
    cols, rows = _rows_after(r.output.splitlines(), "JOB")
    at = cols.index("NODE")
    snap = farm_snapshot(tick=1)
    for p in snap["pipelines"]:
        row = next(row for row in rows if row[0] == p["job_id"])
        nodes = {q["node"][:8] for q in p["partitions"] if q["node"]}
        assert set(row[at].split(",")) == (nodes or {"-"}), (p["job_id"], row)


def test_utilisation_per_node_although_worker_ids_repeat(farm):
    r = _top("--server", farm.url, "--once", "--interval", "0.1", "--width", "160")
    _, rows = _rows_after(r.output.splitlines(), "WORKER")
    a, b = farm_snapshot(tick=0), farm_snapshot(tick=1)
    for w, row in zip(b["gpu_workers"], rows, strict=True):
        p = next(
            x
            for x in a["gpu_workers"]
            if (x["node"], x["worker_id"]) == (w["node"], w["worker_id"])
        )
        util = min(1.0, (w["busy_secs"] - p["busy_secs"]) / (b["now"] - a["now"]))
        assert f"{100 * util:.0f}%" in row, (w, row)


def test_json_passes_the_status_through(farm):
    r = _top("--server", farm.url, "--json")
    assert r.exit_code == 0, r.output
    assert r.output == json.dumps(farm_snapshot(tick=0), separators=(",", ":")) + "\n"
    r = _top("--server", farm.url, "--json", "-n", "2", "--interval", "0.1")
    docs = [json.loads(line) for line in r.output.splitlines()]
    assert docs == [farm_snapshot(tick=1), farm_snapshot(tick=2)]
    assert [len(d["nodes"]) for d in docs] == [3, 3]


def test_one_machine_over_http_draws_the_board_screen():
    """A local daemon's status (no `nodes`) over HTTP: the frame `top` draws from the board."""
    with StatusServer(Ticking(busy_snapshot)) as s:
        r = _top("--server", s.url, "--once", "--interval", "0.1")
    assert r.exit_code == 0, r.output
    from cuzk.top import Derived, RateWindow, render

    a, b = busy_snapshot(tick=0), busy_snapshot(tick=1)
    rates = RateWindow()
    rates.add(a)
    rates.add(b)
    assert r.output == render(b, 80, 24, derived=Derived.between(a, b, rates)).text()
    assert "NODE" not in r.output


def test_token_file_and_cuzk_server_from_the_environment(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with StatusServer(Ticking(), token=TOKEN) as s:
        r = _top("--json", env={"CUZK_SERVER": s.url, "CUZK_TOKEN_FILE": str(token_file)})
        assert r.exit_code == 0, r.output
        assert json.loads(r.output)["nodes"]
        r = _top("--server", s.url, "--token-file", str(token_file), "--json")
        assert r.exit_code == 0 and json.loads(r.output)["nodes"]


@pytest.mark.parametrize("args", [["--json"], ["--once"], []])
def test_unreachable_is_one_line_and_exit_3(args):
    url = closed_port_url()
    r = CliRunner().invoke(cuzk_main, ["top", "--server", url, *args])
    assert r.exit_code == EXIT_UNREACHABLE
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("cuzk top: cannot reach cuzk serve")
    assert url in r.stderr


def test_401_without_or_with_a_wrong_token_exit_2(tmp_path):
    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-token-at-all-0123456789\n")
    with StatusServer(Ticking(), token=TOKEN) as s:
        r = _top("--server", s.url, "--once")
        assert r.exit_code == EXIT_REFUSED and r.stdout == ""
        assert r.stderr == (
            f"cuzk top: {s.url}/status: HTTP 401: the server requires a token "
            "(--token-file FILE or CUZK_TOKEN_FILE)\n"
        )
        r = _top("--server", s.url, "--token-file", str(wrong), "--json")
        assert r.exit_code == EXIT_REFUSED and r.stdout == ""
        assert r.stderr == f"cuzk top: {s.url}/status: HTTP 401: the server refused the token\n"
        assert s.requests == 0
    r = _top("--server", s.url, "--token-file", str(tmp_path / "absent"), "--once")
    assert r.exit_code == EXIT_REFUSED
    assert r.stderr.startswith("cuzk top: token file ") and r.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "answer, why",
    [
        ((200, "text/html", b"<html>hello</html>"), "the answer is not JSON"),
        ((200, "application/json", b'{"status":"ok"}'), "not a cuzk status"),
        ((200, "application/json", b"[1,2]"), "list JSON, not a cuzk status"),
        ((503, "application/json", b'{"error":"draining"}'), "HTTP 503: draining"),
        ((404, "text/plain", b"no such page"), "HTTP 404: no such page"),
    ],
)
def test_an_answer_that_is_not_a_status_is_refused(answer, why):
    with StatusServer(Ticking()) as s:
        s.answer = answer
        r = _top("--server", s.url, "--once")
    assert r.exit_code == (EXIT_REFUSED if answer[0] == 404 else EXIT_UNREACHABLE), r.output
    assert r.stdout == "" and r.stderr.count("\n") == 1 and why in r.stderr, r.stderr


def test_a_server_lost_after_the_first_status_ends_with_its_reason(farm):
    snapshots = Ticking()

    def twice():  # two statuses, then the gateway answers 502
        snap = snapshots()
        if snapshots.n == 2:
            farm.answer = (502, "application/json", b'{"error":"gateway lost"}')
        return snap

    farm.snapshot = twice
    r = _top("--server", farm.url, "-n", "5", "--interval", "0.1")
    assert r.exit_code == EXIT_UNREACHABLE
    assert r.stdout.count("cuzk top  prover-a") == 2
    assert r.stderr == f"cuzk top: {farm.url}/status: HTTP 502: gateway lost\n"


def test_board_and_server(monkeypatch, farm):
    """Both on the command line: a usage error. A --board beats a server named only in the
    environment; a --server on the command line beats CUZK_TOP_BOARD."""
    attached = []

    class Board:
        def __init__(self, name):
            attached.append(name)

        def read(self):
            return busy_snapshot()

    monkeypatch.setattr(top_runner, "BoardSource", Board)
    r = _top("--board", "cuzk-1-aa", "--server", farm.url, "--json")
    assert r.exit_code == 2 and "exclude each other" in r.output
    r = _top("--board", "cuzk-1-aa", "--json", env={"CUZK_SERVER": farm.url})
    assert r.exit_code == 0 and attached == ["cuzk-1-aa"] and "nodes" not in json.loads(r.output)
    r = _top("--server", farm.url, "--json", env={"CUZK_TOP_BOARD": "cuzk-1-aa"})
    assert r.exit_code == 0 and attached == ["cuzk-1-aa"] and json.loads(r.output)["nodes"]


def test_the_real_command_and_cuzk_status_against_a_farm(farm):
    r = run_cli("top", "--server", farm.url, "--once", "--interval", "0.1", "--width", "120")
    assert r.returncode == 0, r.stderr
    for n in farm_snapshot()["nodes"]:
        assert n["node_id"][:8] in r.stdout
    r = run_cli("top", "--server", closed_port_url(), "--json")
    assert r.returncode == EXIT_UNREACHABLE and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and "cannot reach cuzk serve" in r.stderr
    # `cuzk status` draws its frame through the same source
    r = run_cli("status", "--server", farm.url, "--width", "120")
    assert r.returncode == 0, r.stderr
    assert "NODE" in r.stdout and farm_snapshot()["nodes"][0]["node_id"][:8] in r.stdout


def test_the_sample_farm_follows_the_cluster_contract():
    snap = farm_snapshot(tick=3)
    ids = {n["node_id"] for n in snap["nodes"]}
    for n in snap["nodes"]:
        assert set(n) >= {"node_id", "host", "alive", "devices", "incarnation", "last_seen"}
    holders = [*snap["gpu_workers"], *snap["finalizers"], *snap["synthesis"]["workers"]]
    assert holders and all(h["node"] in ids for h in holders)
    parts = [q for p in snap["pipelines"] for q in p["partitions"]]
    assert all(q["node"] is None or q["node"] in ids for q in parts)
    assert any(q["node"] is None for q in parts)  # queued in the gateway
