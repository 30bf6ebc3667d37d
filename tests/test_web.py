"""The web panel in a real headless Chromium against a real `cuzk serve` on CPU devices.

Selenium drives the Debian `chromium` through the Debian `chromedriver` (given by path, so
Selenium Manager never downloads a browser or a driver). The page is read through the DOM
the way a person reads it: cards carry data-state/data-job/data-partition, partition cells
data-state and a title (the hover text), and the samples are taken many times a second while
jobs run. What is checked:

- the page polls /status at the interval set on the page;
- worker, finalizer and synthesis cards and partition cells change state while partitioned
  jobs run and end idle / done;
- in every sample, a cell in state gpu has a proving worker card naming its job and
  partition (the seed's bug was the opposite: idle workers beside "gpu" partitions), a cell
  in finalizing a finalizer card, a cell in synthesizing a synthesis card, and back;
- full job ids are on the page (text, title, data-id), hover texts carry the timings;
- server data cannot inject markup (a job kind that is an HTML tag shows as text);
- a daemon with a token: the page asks once, keeps the token in the tab only, and a wrong
  token is asked again; when the daemon stops, the banner says so;
- a farm gateway's status (a stand-in serving cuzk.testing.sample.farm_snapshot): device
  cards grouped by node under a heading with host, alive state and incarnation; without
  `nodes`, no node boxes.

Set CUZK_WEB_SCREENSHOT=docs/img/panel-busy.png to refresh the screenshot in the docs.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
from conftest import fixture_circuit
from need_tool import missing_tool
from selenium.webdriver.common.keys import Keys
from serve_harness import StatusServer, request, serve_daemon
from waiting import wait_for

from cuzk.testing.sample import busy_snapshot, farm_snapshot

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
APT = "apt-get install -y chromium chromium-driver"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def chromium_present():
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        missing_tool(
            f"needs Debian's headless Chromium and its driver ({APT}; `make test` does it)"
        )


TOKEN = "t0k3n-for-the-web-panel-test-0123456789"

# One sample of what the page shows, read from the DOM by data attributes.
SAMPLE_JS = """
const cards = (sel) => Array.from(document.querySelectorAll(sel)).map((c) => ({
  state: c.dataset.state, job: c.dataset.job, part: c.dataset.partition,
  id: c.dataset.workerId ?? c.dataset.finalizerId, text: c.textContent}));
const jobs = {};
for (const tr of document.querySelectorAll("tr.job")) {
  jobs[tr.dataset.job] = {state: tr.dataset.state, text: tr.textContent,
    cells: Array.from(tr.querySelectorAll(".cell")).map((c) => ({
      index: c.dataset.index, state: c.dataset.state, title: c.title, glyph: c.textContent}))};
}
return {workers: cards(".card.worker"), finalizers: cards(".card.finalizer"),
        synth: cards(".card.synth"), jobs: jobs,
        banner: !document.getElementById("banner").hidden,
        updated: document.getElementById("updated").textContent};
"""


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    """A key root holding the toyhash fixture (about 900 constraints: a partition takes long
    enough on a CPU device to be seen in state gpu)."""
    base = tmp_path_factory.mktemp("web")
    root = base / "keys"
    toy = fixture_circuit("toyhash")
    (root / "toyhash").mkdir(parents=True)
    for f in ("circuit.zkey", "witness_0.wtns", "witness_1.wtns"):
        shutil.copy(toy.dir / f, root / "toyhash" / f)
    return {"base": base, "root": root}


@pytest.fixture(scope="module")
def server(roots):
    s = serve_daemon(
        roots["base"] / "serve.log", roots["root"], "--log-level", "info", devices="cpu:2"
    )
    try:
        yield s.start()
        assert s.stop() == 0, s.log()
        assert s.leftover_segments() == []
    finally:
        s.kill()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1100",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def open_panel(browser, url: str, query: str = ""):
    browser.get(url + "/" + query)
    wait_for(
        lambda: browser.execute_script("return document.body.classList.contains('live')"),
        30,
        "the first status drawn",
    )


def severe_console_errors(browser) -> list[str]:
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def witness_body(roots, n: int, **extra) -> dict:
    d = roots["root"] / "toyhash"
    return {
        "key": str(d / "circuit.zkey"),
        "witnesses": [{"path": str(d / f"witness_{k % 2}.wtns")} for k in range(n)],
        **extra,
    }


def submit(server, roots, n: int, **extra) -> str:
    code, _, job = request(server.url, "POST", "/v1/jobs", witness_body(roots, n, **extra))
    assert code == 201, job
    return job["job_id"]


def result(server, job_id: str) -> dict:
    code, _, r = request(server.url, "GET", f"/v1/jobs/{job_id}/result?wait=240", timeout=260)
    assert code == 200 and r["finished"], r
    return r


def status_fetches(browser) -> int:
    return browser.execute_script(
        "return performance.getEntriesByType('resource')"
        ".filter((e) => new URL(e.name).pathname === '/status').length"
    )


# ------------------------------------------------------------------------------- tests
def test_page_is_served_without_token_and_polls_at_the_set_interval(server, browser):
    code, headers, body = request(server.url, "GET", "/")
    assert code == 200 and headers["content-type"].startswith("text/html")
    assert b"ui/app.js" in body
    open_panel(browser, server.url)
    assert browser.find_element("id", "instance").text == "cuzk"
    assert browser.find_element("id", "interval").get_attribute("value") == "1"
    # default: one poll a second (a poll starts an interval after the previous one ended)
    n0 = status_fetches(browser)
    time.sleep(3.0)
    slow = status_fetches(browser) - n0
    assert 1 <= slow <= 4, slow
    # set 0.2 s on the page, as a person would (select, type, leave the field)
    field = browser.find_element("id", "interval")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("0.2", Keys.TAB)
    assert browser.execute_script("return document.getElementById('interval').value") == "0.2"
    n1 = status_fetches(browser)
    time.sleep(3.0)
    fast = status_fetches(browser) - n1
    assert fast >= max(6, 2 * slow), (slow, fast)
    assert severe_console_errors(browser) == []


def test_panel_follows_partitioned_jobs_and_gpu_cells_have_their_worker(
    server, roots, browser, tmp_path
):
    open_panel(browser, server.url, "?interval=0.2")
    done_before = int(
        browser.find_element("id", "stat-completed").find_element("class name", "v").text.split()[0]
    )
    # a mix like a prover's: a 16-partition snap update, a 10-partition PoRep, a window
    # PoSt at high priority; submitted back to back so they overlap
    jobs = {
        submit(server, roots, 16, kind="snap-update"): 16,
        submit(server, roots, 10, kind="porep-c2"): 10,
        submit(server, roots, 1, kind="window-post", priority="high"): 1,
    }
    shot = Path(os.environ.get("CUZK_WEB_SCREENSHOT") or tmp_path / "panel-busy.png")
    best, shots = (0, 0), 0
    # 420 s: a cold Numba cache (kernels edited since the last run) costs minutes on 2 cores
    samples, t_end = [], time.time() + 420
    cell_states: set[str] = set()
    worker_states: set[str] = set()
    checked = {"gpu": 0, "finalizing": 0, "synthesizing": 0}
    while time.time() < t_end:
        s = browser.execute_script(SAMPLE_JS)
        samples.append(s)
        mine = {j: s["jobs"].get(j) for j in jobs}
        for job_id, row in mine.items():
            if row is None:
                continue
            for c in row["cells"]:
                cell_states.add(c["state"])
                part = c["index"]
                holders = {
                    "gpu": s["workers"],
                    "finalizing": s["finalizers"],
                    "synthesizing": s["synth"],
                }.get(c["state"])
                if holders is not None:
                    named = [w for w in holders if w["job"] == job_id and w["part"] == part]
                    assert len(named) == 1, (
                        f"partition {part} of {job_id} is {c['state']} but the cards say {holders}"
                    )
                    assert named[0]["state"] != "idle" and job_id in named[0]["text"]
                    checked[c["state"]] += 1
        # and back: every busy card names a cell in the matching state
        for kind, want in (
            ("workers", "gpu"),
            ("finalizers", "finalizing"),
            ("synth", "synthesizing"),
        ):
            for w in s[kind]:
                if w["state"] != "idle" and w["job"] in mine and mine[w["job"]]:
                    cell = [c for c in mine[w["job"]]["cells"] if c["index"] == w["part"]]
                    assert cell and cell[0]["state"] == want, (kind, w, cell)
        worker_states.update(w["state"] for w in s["workers"])
        # the screenshot: the busiest moment seen (most partition states, then busy cards)
        states_now = {c["state"] for r in mine.values() if r for c in r["cells"]}
        busy_now = sum(w["state"] != "idle" for w in s["workers"] + s["finalizers"] + s["synth"])
        score = (len(states_now), busy_now)
        if "gpu" in states_now and score > best and shots < 6:
            shot.parent.mkdir(parents=True, exist_ok=True)
            assert browser.save_screenshot(str(shot))
            best, shots = score, shots + 1
        if all(r and r["state"] == "done" for r in mine.values()) and all(
            w["state"] == "idle" for w in s["workers"] + s["finalizers"] + s["synth"]
        ):
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"jobs not shown done in time; last sample: {samples[-1]}")

    # the states moved through the pipeline and ended done / idle
    assert {"gpu", "done"} <= cell_states and len(cell_states) >= 3, cell_states
    assert {"proving", "idle"} <= worker_states, worker_states
    assert checked["gpu"] > 0, checked
    assert shots and shot.stat().st_size > 10_000
    final = samples[-1]
    for job_id, n in jobs.items():
        row = final["jobs"][job_id]
        assert [c["state"] for c in row["cells"]] == ["done"] * n
        assert [c["glyph"] for c in row["cells"]] == ["#"] * n
        assert f"{n}/{n}" in row["text"] and job_id in row["text"]
        # the hover text of each cell: the job, the partition, its timings from the board
        r = result(server, job_id)
        for c, p in zip(row["cells"], r["partitions"], strict=True):
            assert c["title"].startswith(f"job {job_id} · partition {p['index']}: done")
            m = re.search(r"synthesis ([\d.]+) (ms|s) · device ([\d.]+) (ms|s)", c["title"])
            assert m, c["title"]
            synth_ms = float(m.group(1)) * (1000 if m.group(2) == "s" else 1)
            assert abs(synth_ms - p["synth_ms"]) <= max(1.0, 0.01 * p["synth_ms"]), (c, p)
    # the header counted them
    wait_for(
        lambda: (
            int(
                browser.find_element("id", "stat-completed")
                .find_element("class name", "v")
                .text.split()[0]
            )
            >= done_before + 3
        ),
        10,
        "the completed count",
    )
    # full ids: every job id on the page is whole in its text, title and copy target
    ids = browser.execute_script(
        "return Array.from(document.querySelectorAll('.idbox')).filter((b) => b.dataset.id)"
        ".map((b) => [b.dataset.id, b.querySelector('.id').textContent,"
        " b.querySelector('.id').title])"
    )
    for job_id in jobs:
        assert [job_id, job_id, f"job {job_id}"] in ids
    assert severe_console_errors(browser) == []


def test_server_data_is_shown_as_text_never_as_markup(server, roots, browser):
    kind = "<i id=pwn>x</i>"
    job_id = submit(server, roots, 1, kind=kind)
    result(server, job_id)
    open_panel(browser, server.url, "?interval=0.2")
    row = wait_for(
        lambda: browser.find_elements("css selector", f'tr.job[data-job="{job_id}"]'),
        10,
        "the job's row",
    )[0]
    assert row.find_element("css selector", "td.c-kind").text == kind
    assert browser.find_elements("id", "pwn") == []
    assert browser.execute_script("return document.querySelectorAll('i').length") == 0


def test_token_is_asked_once_kept_in_the_tab_and_banner_shows_when_daemon_stops(
    tmp_path, roots, browser
):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    s = serve_daemon(
        tmp_path / "serve.log",
        roots["root"],
        "--token-file",
        token_file,
        "--log-level",
        "info",
        memory="256MiB",
    )
    try:
        s.start()
        assert request(s.url, "GET", "/status")[0] == 401
        browser.get(s.url + "/?interval=0.3")
        form = browser.find_element("id", "token-form")
        wait_for(form.is_displayed, 10, "the token form")
        assert not browser.find_element("id", "head").is_displayed()
        field = browser.find_element("id", "token-input")
        assert field.get_attribute("type") == "password"
        # a wrong token is refused and asked for again, and not kept
        field.send_keys("not-the-token-at-all\n")
        wait_for(
            lambda: "refused" in browser.find_element("id", "token-why").text, 10, "the refusal"
        )
        assert form.is_displayed()
        assert browser.execute_script("return sessionStorage.getItem('cuzk.token')") is None
        # the right one: the panel appears, the token is in this tab's sessionStorage only
        browser.find_element("id", "token-input").send_keys(TOKEN + "\n")
        wait_for(
            lambda: browser.execute_script("return document.body.classList.contains('live')"),
            10,
            "the panel after the token",
        )
        assert not form.is_displayed()
        assert browser.find_element("id", "instance").text == "cuzk"
        assert browser.execute_script("return sessionStorage.getItem('cuzk.token')") == TOKEN
        assert browser.execute_script("return localStorage.length") == 0
        assert browser.get_cookies() == []
        assert TOKEN not in browser.current_url
        # a reload in the same tab does not ask again
        browser.refresh()
        wait_for(
            lambda: browser.execute_script("return document.body.classList.contains('live')"),
            10,
            "the panel after reload",
        )
        assert not browser.find_element("id", "token-form").is_displayed()
        banner = browser.find_element("id", "banner")
        assert not banner.is_displayed()
        # a hung daemon (stopped by SIGSTOP: connections are accepted, nothing answers): the
        # poll times out and the banner says so; it clears when the daemon answers again
        os.kill(s.pid, signal.SIGSTOP)
        try:
            wait_for(banner.is_displayed, 15, "the banner for a hung daemon")
            assert "no answer within 5 s" in banner.text, banner.text
        finally:
            os.kill(s.pid, signal.SIGCONT)
        wait_for(lambda: not banner.is_displayed(), 15, "the banner to clear")
        assert not browser.execute_script("return document.body.classList.contains('down')")
        # the daemon stops: the banner says so, and the last status stays on the page
        assert s.stop() == 0, s.log()
        assert s.leftover_segments() == []
        wait_for(banner.is_displayed, 10, "the banner")
        # a poll during the drain may have answered 503 first; the next one finds no listener
        wait_for(lambda: "connection failed" in banner.text, 10, "'connection failed'")
        text = banner.text
        assert "not answering" in text, text
        assert "last status received" in text, text
        assert browser.find_element("id", "instance").text == "cuzk"
        assert browser.execute_script("return document.body.classList.contains('down')")
    finally:
        s.kill()


def panel_files() -> dict:
    """The panel's files at the paths cuzk serve gives them (for a stand-in server)."""
    from cuzk.serve.http import StaticFiles

    files = {}
    for path, name in (
        ("/", "index.html"),
        ("/ui/app.js", "app.js"),
        ("/ui/style.css", "style.css"),
    ):
        resp = StaticFiles().get(name)
        files[path] = (resp.content_type, resp.body)
    return files


NODES_JS = """
return Array.from(document.querySelectorAll("#devices > .node")).map((n) => ({
  node: n.dataset.node, alive: n.dataset.alive, incarnation: n.dataset.incarnation,
  cls: n.className, head: n.querySelector(".node-head").textContent,
  workers: Array.from(n.querySelectorAll(".card.worker")).map((c) =>
    [c.dataset.node, c.dataset.workerId, c.dataset.state, c.dataset.job]),
  finalizers: Array.from(n.querySelectorAll(".card.finalizer")).map((c) =>
    [c.dataset.node, c.dataset.finalizerId, c.dataset.state])}));
"""


def test_farm_groups_device_cards_by_node(browser):
    ticks = iter(range(10**6))
    severe_console_errors(browser)  # read out what earlier tests left in the log
    with StatusServer(lambda: farm_snapshot(tick=next(ticks)), files=panel_files()) as s:
        open_panel(browser, s.url, "?interval=0.2")
        snap = farm_snapshot()
        nodes = wait_for(
            lambda: (got := browser.execute_script(NODES_JS)) and len(got) == 3 and got,
            10,
            "three node boxes",
        )
        assert [n["node"] for n in nodes] == [n["node_id"] for n in snap["nodes"]]
        for box, n in zip(nodes, snap["nodes"], strict=True):
            state = "alive" if n["alive"] else "dead"
            assert box["alive"] == state and state in box["cls"].split()
            assert box["incarnation"] == str(n["incarnation"])
            head = box["head"]
            assert head.startswith(f"node {n['node_id'][:8]} · {n['host']} · {state}"), head
            assert f"incarnation {n['incarnation']}" in head
            # the node's workers and finalizers, and only those, in its box (ids repeat
            # across nodes: every node numbers its own)
            assert sorted((w[1], w[2], w[3] or None) for w in box["workers"]) == sorted(
                (str(w["worker_id"]), w["state"], w["current_job"])
                for w in snap["gpu_workers"]
                if w["node"] == n["node_id"]
            )
            assert {w[0] for w in box["workers"] + box["finalizers"]} <= {n["node_id"]}
            assert len(box["finalizers"]) == sum(
                f["node"] == n["node_id"] for f in snap["finalizers"]
            )
        assert nodes[2]["workers"] == [] and "1m35s" in nodes[2]["head"]
        # synthesis cards (ids repeat across nodes too) all drawn, each naming its node
        synth = browser.execute_script(
            "return Array.from(document.querySelectorAll('.card.synth'))"
            ".map((c) => [c.dataset.node, c.dataset.workerId])"
        )
        assert sorted(synth) == sorted(
            [w["node"], str(w["worker_id"])] for w in snap["synthesis"]["workers"]
        )
        # a partition's hover text names its node
        title = browser.execute_script(
            "return document.querySelector('.cell[data-state=gpu]').title"
        )
        assert " · node " in title
        # one machine again (a snapshot without nodes): device groups straight in #devices
        s.snapshot = lambda: busy_snapshot(tick=next(ticks))
        wait_for(
            lambda: browser.execute_script(
                "return document.querySelectorAll('#devices > .node').length === 0"
                " && document.querySelectorAll('#devices > .device').length === 2"
            ),
            10,
            "the one-machine device groups",
        )
        assert (
            browser.execute_script("return document.querySelectorAll('.card[data-node]').length")
            == 0
        )
        assert severe_console_errors(browser) == []
        browser.get("about:blank")  # stop polling before the stand-in goes
