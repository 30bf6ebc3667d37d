// The cuzk web panel: polls GET /status (the status board snapshot, the same JSON as
// `cuzk top --json`) and draws it. Mirrors cuzk/top/render.py: the same panels, state
// colours, partition glyphs, number formats and pipeline sorts.
//
// Rules this file keeps:
// - server data reaches the page only through textContent, title and data-* attributes,
//   never innerHTML (a job kind or instance name cannot inject markup);
// - one snapshot is drawn at a time, whole, so what a partition cell and a worker card say
//   always comes from the same board cut (the board guarantees "gpu" <=> a proving slot);
// - nodes are kept and updated in place by key (worker id, job id, partition index), so a
//   hover tooltip or a selection survives the next poll;
// - an API token (asked for on HTTP 401) is kept in sessionStorage only: this tab, this
//   origin, gone when the tab closes;
// - a farm gateway's snapshot (a top-level `nodes` list, a `node` on every worker, finalizer,
//   synthesis worker and partition) groups the device cards by node, under a heading per
//   node; without `nodes` the page is the one-machine page.
(function () {
  "use strict";

  const TOKEN_KEY = "cuzk.token";
  const STALE_SECS = 5;            // heartbeat age highlighted above this (as in cuzk top)
  const RATE_WINDOW_SECS = 60;     // done/failed per minute over this window
  const MAX_JOBS_SHOWN = 300;
  const GLYPHS = {
    pending: ".", synthesizing: "s", synth_done: "w", gpu: "G", finalizing: "f",
    done: "#", failed: "X",
  };
  const WORDS = {
    pending: "pending", synthesizing: "synth", synth_done: "wait", gpu: "gpu",
    finalizing: "finalize", done: "done", failed: "failed",
  };
  // a key's curve as its files name it -> its usual name (as in cuzk top)
  const CURVES = { bn128: "BN254", bls12381: "BLS12-381" };
  const PRIORITY_RANK = { critical: 0, high: 1, normal: 2 };
  const JOB_STATE_RANK = { running: 0, queued: 1, failed: 2, cancelled: 3, done: 4 };
  const FINISHED = new Set(["done", "failed", "cancelled"]);

  const NODE_ID_CHARS = 8;         // a node id is shown by its first characters (as in cuzk top)

  const $ = (id) => document.getElementById(id);
  const shortNode = (id) => (id ? String(id).slice(0, NODE_ID_CHARS) : "-");
  // What names a worker across snapshots: its id, or node and id on a farm (every node
  // numbers its own workers).
  const workerKey = (w) => ("node" in w ? w.node + "/" + w.worker_id : w.worker_id);

  // ------------------------------------------------------------------ formats (top/fmt.py)
  function fmtBytes(n) {
    if (n === null || n === undefined) return "-";
    for (const [unit, scale] of [["T", 2 ** 40], ["G", 2 ** 30], ["M", 2 ** 20], ["K", 2 ** 10]]) {
      if (n >= scale) {
        const v = n / scale;
        return (v < 100 ? v.toFixed(1) : v.toFixed(0)) + unit;
      }
    }
    return Math.round(n) + "B";
  }

  function fmtSecs(s) {
    if (s === null || s === undefined) return "-";
    s = Math.max(0, Number(s));
    if (s < 10) return s.toFixed(1) + "s";
    if (s < 60) return s.toFixed(0) + "s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + "m" + String(Math.floor(s % 60)).padStart(2, "0") + "s";
    const h = Math.floor(m / 60);
    if (h < 24) return h + "h" + String(m % 60).padStart(2, "0") + "m";
    return Math.floor(h / 24) + "d" + String(h % 24).padStart(2, "0") + "h";
  }

  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "-";
    return ms < 1000 ? ms.toFixed(ms < 10 ? 1 : 0) + " ms" : (ms / 1000).toFixed(2) + " s";
  }

  const fmtRate = (perMin) => (perMin === null ? "-/m" : perMin.toFixed(1) + "/m");
  const fmtPct = (frac) => (frac === null || frac === undefined ? "-" : Math.round(100 * frac) + "%");
  const clock = (t) => new Date(t).toLocaleTimeString([], { hour12: false });
  const num = (x) => (typeof x === "number" && isFinite(x) ? x : Infinity);

  // ------------------------------------------------------------------ DOM helpers
  // h("div", {cls: "card", text: "x", title: "y", data: {k: v}, on: {click: f}}, ...children)
  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    props = props || {};
    if (props.cls) el.className = props.cls;
    if (props.text !== undefined) el.textContent = props.text;
    if (props.title !== undefined) el.title = props.title;
    if (props.type) el.type = props.type;
    for (const [k, v] of Object.entries(props.data || {})) el.dataset[k] = v;
    for (const [k, v] of Object.entries(props.on || {})) el.addEventListener(k, v);
    for (const c of children) if (c) el.append(c);
    return el;
  }

  function setText(el, text) {
    text = text === null || text === undefined ? "" : String(text);
    if (el.textContent !== text) el.textContent = text;
  }

  function setTitle(el, title) {
    if (el.title !== title) el.title = title;
  }

  function setData(el, key, value) {
    value = value === null || value === undefined ? "" : String(value);
    if (el.dataset[key] !== value) el.dataset[key] = value;
  }

  function setClass(el, cls) {
    if (el.className !== cls) el.className = cls;
  }

  // Keep container's children in the order of items, one node per key: reuse, create, drop.
  function sync(container, items, keyOf, make, update) {
    const old = new Map();
    for (const c of Array.from(container.children)) old.set(c.dataset.key, c);
    let i = 0;
    for (const it of items) {
      const key = String(keyOf(it));
      let node = old.get(key);
      if (node) old.delete(key);
      else {
        node = make(it);
        node.dataset.key = key;
      }
      update(node, it);
      if (container.children[i] !== node) container.insertBefore(node, container.children[i] || null);
      i++;
    }
    for (const n of old.values()) n.remove();
  }

  // ------------------------------------------------------------------ job ids: full, copyable
  function copyText(text, button) {
    const done = () => {
      const was = button.textContent;
      button.textContent = "copied";
      button.classList.add("copied");
      setTimeout(() => { button.textContent = was; button.classList.remove("copied"); }, 1000);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, () => fallbackCopy(text) && done());
    } else if (fallbackCopy(text)) done();
  }

  function fallbackCopy(text) {
    const ta = h("textarea", { cls: "offscreen" });
    ta.value = text;
    document.body.append(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    ta.remove();
    return ok;
  }

  // An id shown in full (CSS may elide it visually; the text, the title and data-id stay
  // whole), selectable with one click, with a copy button.
  function makeId() {
    const label = h("span", { cls: "id" });
    const button = h("button", { cls: "copy", type: "button", text: "copy", title: "copy the full id" });
    const box = h("span", { cls: "idbox" }, label, button);
    button.addEventListener("click", (ev) => {
      ev.stopPropagation();
      if (box.dataset.id) copyText(box.dataset.id, button);
    });
    box._label = label;
    box._button = button;
    return box;
  }

  function setId(box, id, what) {
    const text = id === null || id === undefined ? "" : String(id);
    setData(box, "id", text);
    setText(box._label, text || "-");
    setTitle(box._label, text ? what + " " + text : "");
    box._button.hidden = !text;
  }

  // ------------------------------------------------------------------ state
  const st = {
    interval: 1.0,
    paused: false,
    timer: null,
    inFlight: false,
    token: null,
    prev: null,            // previous snapshot (utilisation)
    last: null,            // last snapshot drawn
    lastAt: null,          // browser time it arrived
    rates: [],             // [now, completed, failed] samples
    failures: 0,
    failingSince: null,
    sort: "priority",
    hideFinished: false,
  };

  function loadSettings() {
    try { st.token = sessionStorage.getItem(TOKEN_KEY); } catch (e) { st.token = null; }
    const q = new URLSearchParams(location.search);
    const iv = parseFloat(q.get("interval"));
    if (iv >= 0.2 && iv <= 60) st.interval = iv;
    $("interval").value = String(st.interval);
  }

  // ------------------------------------------------------------------ polling
  function statusUrl() {
    return new URL("status", document.baseURI).href;
  }

  function schedule(delaySecs) {
    if (st.timer !== null) clearTimeout(st.timer);
    st.timer = null;
    if (st.paused || !$("token-form").hidden) return;
    st.timer = setTimeout(poll, Math.max(0, delaySecs * 1000));
  }

  async function poll() {
    st.timer = null;
    if (st.inFlight) return;
    st.inFlight = true;
    const ctrl = new AbortController();
    const timeoutMs = Math.max(5000, 3000 * st.interval);
    const timeout = setTimeout(() => ctrl.abort(), timeoutMs);
    let next = st.interval;
    try {
      const headers = { Accept: "application/json" };
      if (st.token) headers.Authorization = "Bearer " + st.token;
      const resp = await fetch(statusUrl(), { headers, cache: "no-store", signal: ctrl.signal });
      if (resp.status === 401) {
        const had = !!st.token;
        forgetToken();
        askToken(had ? "The daemon refused the token; enter the right one."
                     : "This daemon requires a bearer token for GET /status.");
        return;
      }
      if (!resp.ok) throw new Error("HTTP " + resp.status + ": " + (await errorText(resp)));
      const snap = await resp.json();
      st.failures = 0;
      st.failingSince = null;
      showBanner(null);
      draw(snap);
    } catch (e) {
      st.failures++;
      if (st.failingSince === null) st.failingSince = Date.now();
      // fetch rejects with a TypeError when no HTTP answer came at all (refused, reset, DNS)
      showBanner(e.name === "AbortError" ? "no answer within " + Math.round(timeoutMs / 1000) + " s"
        : e.name === "TypeError" ? "connection failed (" + e.message + ")" : String(e.message || e));
      next = Math.max(1, st.interval);
    } finally {
      clearTimeout(timeout);
      st.inFlight = false;
      schedule(next);
    }
  }

  async function errorText(resp) {
    try {
      const body = await resp.json();
      return body && body.error ? String(body.error) : resp.statusText;
    } catch (e) {
      return resp.statusText;
    }
  }

  function showBanner(reason) {
    const banner = $("banner");
    document.body.classList.toggle("down", reason !== null);
    if (reason === null) {
      banner.hidden = true;
      return;
    }
    let text = "No answer from " + location.host + " since " + clock(st.failingSince) +
      " (" + st.failures + (st.failures === 1 ? " failed poll" : " failed polls") + "): " + reason + ".";
    text += st.lastAt ? " The panel shows the last status received, at " + clock(st.lastAt) + "."
                      : " No status has been received yet.";
    setText($("banner-text"), text);
    banner.hidden = false;
  }

  // ------------------------------------------------------------------ token
  function askToken(why) {
    setText($("token-why"), why);
    $("token-form").hidden = false;
    document.body.classList.add("locked");
    $("token-input").value = "";
    $("token-input").focus();
  }

  function forgetToken() {
    st.token = null;
    try { sessionStorage.removeItem(TOKEN_KEY); } catch (e) { /* storage disabled */ }
    $("forget-token").hidden = true;
  }

  function onTokenSubmit(ev) {
    ev.preventDefault();
    const token = $("token-input").value.trim();
    if (!token) return;
    st.token = token;
    try { sessionStorage.setItem(TOKEN_KEY, token); } catch (e) { /* memory only */ }
    $("token-input").value = "";
    $("token-form").hidden = true;
    document.body.classList.remove("locked");
    $("forget-token").hidden = false;
    schedule(0);
  }

  // ------------------------------------------------------------------ derived figures (top/derive.py)
  // Busy fraction of each device worker since the previous snapshot (null: no honest figure).
  function utilisation(prev, cur) {
    const out = new Map();
    if (!prev) return out;
    const dt = (cur.now || 0) - (prev.now || 0);
    if (dt <= 0) return out;
    const before = new Map((prev.gpu_workers || []).map((w) => [workerKey(w), w]));
    for (const w of cur.gpu_workers || []) {
      const p = before.get(workerKey(w));
      if (!p || p.pid !== w.pid) continue;
      const b0 = p.busy_secs, b1 = w.busy_secs;
      if (b0 === null || b0 === undefined || b1 === null || b1 === undefined || b1 < b0) continue;
      out.set(workerKey(w), Math.min(1, Math.max(0, (b1 - b0) / dt)));
    }
    return out;
  }

  function addRateSample(snap) {
    const c = snap.counters || {};
    const now = snap.now || 0;
    const s = st.rates;
    if (s.length && now < s[s.length - 1][0]) s.length = 0;   // another board, or a clock jump
    s.push([now, c.total_completed || 0, c.total_failed || 0]);
    while (s.length > 2 && s[1][0] <= now - RATE_WINDOW_SECS) s.shift();
  }

  function perMinute() {
    const s = st.rates;
    if (s.length < 2) return [null, null];
    const [t0, c0, f0] = s[0], [t1, c1, f1] = s[s.length - 1];
    if (t1 <= t0 || c1 < c0 || f1 < f0) return [null, null];
    return [60 * (c1 - c0) / (t1 - t0), 60 * (f1 - f0) / (t1 - t0)];
  }

  // ------------------------------------------------------------------ drawing
  function draw(snap) {
    if (st.prev && st.prev.board !== snap.board) { st.prev = null; st.rates = []; }
    const util = utilisation(st.prev, snap);
    addRateSample(snap);
    drawHeader(snap);
    drawDevices(snap, util);
    drawSynthesis(snap);
    drawJobs(snap);
    drawKeys(snap);
    st.prev = snap;
    st.last = snap;
    st.lastAt = Date.now();
    setText($("updated"), "updated " + clock(st.lastAt));
    document.body.classList.add("live");
  }

  // Header figures: one node per figure, made once and updated in place.
  function setStat(key, label, value, cls, title) {
    let el = $("stat-" + key);
    if (!el) {
      el = h("span", { cls: "stat" }, h("span", { cls: "k", text: label }), h("span", { cls: "v" }));
      el.id = "stat-" + key;
      $("stats").append(el);
    }
    setClass(el, "stat " + (cls || ""));
    setText(el.lastChild, value);
    setTitle(el, title || "");
  }

  function drawHeader(snap) {
    setText($("instance"), snap.instance || "?");
    document.title = "cuzk " + (snap.instance || "");
    setText($("meta"), "up " + fmtSecs(snap.uptime_secs) + " · pid " + (snap.supervisor_pid || "-") +
      " · board " + (snap.board || "-"));
    const torn = $("flag-torn");
    torn.hidden = snap.consistent !== false;

    // memory: one bar segment per use, out of the budget
    const mem = snap.memory || {};
    const total = mem.total_bytes || 0;
    let reserved = mem.reserved_bytes;
    if (reserved === null || reserved === undefined) reserved = mem.used_bytes || 0;
    const frac = total ? reserved / total : 0;
    const uses = Object.entries(mem.by_use || {}).sort((a, b) => b[1] - a[1]);
    const bar = $("membar");
    setClass(bar, "membar " + (frac < 0.75 ? "" : frac < 0.9 ? "mid" : "high"));
    sync(bar, uses, (u) => u[0], () => h("span", { cls: "seg" }), (seg, [label, bytes]) => {
      seg.style.width = (total ? Math.min(100, 100 * bytes / total) : 0).toFixed(3) + "%";
      setClass(seg, "seg use-" + useColour(label));
      setTitle(seg, label + ": " + fmtBytes(bytes));
    });
    setText($("memtext"), fmtBytes(reserved) + " / " + fmtBytes(total) + " reserved (" +
      fmtPct(total ? frac : null) + ") · " + fmtBytes(mem.available_bytes) + " available");
    sync($("memuses"), uses, (u) => u[0],
      () => h("span", { cls: "use" }, h("span", { cls: "swatch" }), h("span", { cls: "name" })),
      (el, [label, bytes]) => {
        setClass(el.firstChild, "swatch use-" + useColour(label));
        setText(el.lastChild, label + " " + fmtBytes(bytes));
      });

    const c = snap.counters || {};
    const [donePm, failedPm] = perMinute();
    const byKind = (o) => Object.entries(o || {}).map(([k, n]) => k + ": " + n).join(", ") || "none yet";
    setStat("queue", "queue", String(c.queue_depth || 0), c.queue_depth ? "warn" : "",
      "partitions waiting for synthesis or a device");
    setStat("completed", "completed", (c.total_completed || 0) + " · " + fmtRate(donePm), "good",
      "proofs completed (per minute over the last " + RATE_WINDOW_SECS + " s); by kind: " + byKind(c.completed_by_kind));
    setStat("failed", "failed", (c.total_failed || 0) + " · " + fmtRate(failedPm), c.total_failed ? "bad" : "",
      "proofs failed (per minute over the last " + RATE_WINDOW_SECS + " s); by kind: " + byKind(c.failed_by_kind));
    setStat("retries", "retries", String(c.retries || 0), c.retries ? "warn" : "", "partition attempts retried");
    setStat("restarts", "restarts", String(c.restarts || 0), c.restarts ? "warn" : "", "worker processes restarted");
    setStat("stale", "stale ends ignored", String(c.stale_ends_ignored || 0), "",
      "ends of a claim that arrived after the slot had moved on (generation mismatch): ignored, as designed");
  }

  const USE_COLOURS = new Map();
  function useColour(label) {
    if (!USE_COLOURS.has(label)) USE_COLOURS.set(label, USE_COLOURS.size % 6);
    return USE_COLOURS.get(label);
  }

  const busy = (state) => state !== null && state !== undefined && state !== "idle" && state !== "dead";

  // A card: a title line (name, state badge), then rows of label/value pairs.
  // rows: [[[field, label], ...], ...]; "job" is an id box, "util" a small gauge.
  function makeCard(kind, rows) {
    const name = h("span", { cls: "name" });
    const badge = h("span", { cls: "badge" });
    const card = h("div", { cls: "card " + kind, data: { kind } }, h("div", { cls: "card-head" }, name, badge));
    card._name = name;
    card._badge = badge;
    card._f = {};
    for (const row of rows) {
      const line = h("div", { cls: "row" });
      for (const [field, label] of row) {
        let value;
        if (field === "job") value = makeId();
        else if (field === "util") value = h("span", { cls: "util" }, h("span", { cls: "utilbar" }, h("span", { cls: "fill" })), h("span", { cls: "pct" }));
        else value = h("span", { cls: "v" });
        line.append(h("span", { cls: "kv f-" + field }, h("span", { cls: "k", text: label }), value));
        card._f[field] = value;
      }
      card.append(line);
    }
    return card;
  }

  function cardState(card, state, jobId, partition) {
    setClass(card._badge, "badge s-" + (state || "unknown"));
    setText(card._badge, state || "?");
    setData(card, "state", state || "");
    const on = busy(state);
    setData(card, "job", on && jobId ? jobId : "");
    setData(card, "partition", on && partition !== null && partition !== undefined ? partition : "");
    card.classList.toggle("busy", on);
    card.classList.toggle("dead", state === "dead");
    setId(card._f.job, on ? jobId : null, "job");
    setText(card._f.partition, on && partition !== null && partition !== undefined ? partition : "-");
  }

  function heartbeat(el, age, state) {
    setText(el, fmtSecs(age));
    const stale = age !== null && age !== undefined && state !== "dead" && age > STALE_SECS;
    el.classList.toggle("stale", stale);
    setTitle(el, stale ? "heartbeat older than " + STALE_SECS + " s: the process may be hung" : "");
  }

  function restarts(el, n) {
    setText(el, n || 0);
    el.classList.toggle("warn", !!n);
  }

  const WORKER_FIELDS = [[["job", "job"]], [["partition", "partition"], ["on", "on it"]], [["util", "util"]],
    [["generation", "gen"], ["restarts", "rst"], ["pid", "pid"], ["hb", "hb"]]];
  const FINALIZER_FIELDS = [[["job", "job"]], [["partition", "partition"], ["on", "on it"]],
    [["from", "from worker"]], [["generation", "gen"], ["pid", "pid"], ["hb", "hb"]]];
  const SYNTH_FIELDS = [[["job", "job"]], [["partition", "partition"], ["on", "on it"]],
    [["generation", "gen"], ["restarts", "rst"], ["pid", "pid"], ["hb", "hb"]]];

  function updateWorker(card, w, util) {
    setText(card._name, "worker " + w.worker_id);
    setData(card, "workerId", w.worker_id);
    cardState(card, w.state, w.current_job, w.current_partition);
    setText(card._f.on, busy(w.state) ? fmtSecs(w.started_secs_ago) : "-");
    if ("node" in w) setData(card, "node", w.node || "");
    const u = util.has(workerKey(w)) ? util.get(workerKey(w)) : null;
    const fill = card._f.util.querySelector(".fill");
    fill.style.width = (u === null ? 0 : 100 * u).toFixed(1) + "%";
    setClass(fill, "fill " + (u === null ? "" : u < 0.5 ? "lo" : u < 0.85 ? "mid" : "hi"));
    setText(card._f.util.querySelector(".pct"), fmtPct(u));
    setText(card._f.generation, w.generation ?? "-");
    restarts(card._f.restarts, w.restarts);
    setText(card._f.pid, w.pid || "-");
    heartbeat(card._f.hb, w.heartbeat_age_secs, w.state);
  }

  function updateFinalizer(card, f) {
    setText(card._name, "finalizer " + f.finalizer_id);
    setData(card, "finalizerId", f.finalizer_id);
    if ("node" in f) setData(card, "node", f.node || "");
    cardState(card, f.state, f.current_job, f.current_partition);
    setText(card._f.on, busy(f.state) ? fmtSecs(f.started_secs_ago) : "-");
    setText(card._f.from, busy(f.state) && f.from_worker !== null && f.from_worker !== undefined ? f.from_worker : "-");
    setText(card._f.generation, f.generation ?? "-");
    setText(card._f.pid, f.pid || "-");
    heartbeat(card._f.hb, f.heartbeat_age_secs, f.state);
  }

  function countStates(items) {
    const counts = new Map();
    for (const it of items) counts.set(it.state || "?", (counts.get(it.state || "?") || 0) + 1);
    return Array.from(counts).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .map(([s, n]) => n + " " + s).join(", ");
  }

  function drawDevices(snap, util) {
    const workers = (snap.gpu_workers || []).slice().sort((a, b) => num(a.worker_id) - num(b.worker_id));
    const fins = (snap.finalizers || []).slice().sort((a, b) => num(a.finalizer_id) - num(b.finalizer_id));
    if (Array.isArray(snap.nodes)) drawNodes(snap, workers, fins, util);
    else drawDeviceGroups($("devices"), workers, fins, util);
    $("devices-empty").hidden = workers.length + fins.length > 0 || (snap.nodes || []).length > 0;
    const nBusy = workers.filter((w) => busy(w.state)).length;
    setText($("devices-summary"), workers.length ? nBusy + "/" + workers.length + " workers busy: " + countStates(workers) : "");
  }

  // A farm: one box per node (in the order of `nodes`; a node named by a worker but not
  // listed comes last), headed by its host, alive state, incarnation and last status, holding
  // that node's device groups.
  function drawNodes(snap, workers, fins, util) {
    const nodes = snap.nodes.slice();
    const listed = new Set(nodes.map((n) => n.node_id));
    for (const it of workers.concat(fins)) {
      if (!listed.has(it.node)) {
        listed.add(it.node);
        nodes.push({ node_id: it.node, host: null, alive: null });
      }
    }
    sync($("devices"), nodes, (n) => "node:" + n.node_id, () => {
      const title = h("h3", { cls: "node-head" });
      const groups = h("div", { cls: "devices" });
      const el = h("div", { cls: "node" }, title, groups);
      el._title = title;
      el._groups = groups;
      return el;
    }, (el, n) => {
      const mine = workers.filter((w) => w.node === n.node_id);
      const myFins = fins.filter((f) => f.node === n.node_id);
      const state = n.alive === true ? "alive" : n.alive === false ? "dead" : "unknown";
      setClass(el, "node " + state);
      setData(el, "node", n.node_id || "");
      setData(el, "alive", state);
      setData(el, "incarnation", n.incarnation ?? "");
      const seen = n.last_seen !== undefined && n.last_seen !== null && snap.now ? snap.now - n.last_seen : null;
      const parts = ["node " + shortNode(n.node_id), n.host || "?", state];
      if (n.incarnation !== undefined) parts.push("incarnation " + n.incarnation);
      parts.push((n.devices || []).join(", ") || "no devices");
      if (seen !== null) parts.push("seen " + fmtSecs(seen) + " ago");
      if (n.outstanding !== undefined || n.capacity !== undefined) {
        parts.push((n.outstanding ?? "-") + "/" + (n.capacity ?? "-") + " outstanding");
      }
      setText(el._title, parts.join(" · "));
      setTitle(el._title, "node " + (n.node_id || "?"));
      drawDeviceGroups(el._groups, mine, myFins, util);
    });
  }

  function drawDeviceGroups(container, workers, fins, util) {
    // Group by device ordinal; finalizers carry the ordinal, workers also the device name.
    const groups = new Map();
    const group = (ord) => {
      if (!groups.has(ord)) groups.set(ord, { ordinal: ord, device: null, workers: [], finalizers: [] });
      return groups.get(ord);
    };
    for (const w of workers) {
      const g = group(w.gpu_ordinal);
      g.device = g.device || w.device;
      g.workers.push(w);
    }
    for (const f of fins) group(f.gpu_ordinal).finalizers.push(f);
    const list = Array.from(groups.values()).sort((a, b) => num(a.ordinal) - num(b.ordinal));

    sync(container, list, (g) => g.ordinal, () => {
      const title = h("h3");
      const cards = h("div", { cls: "cards" });
      const finCards = h("div", { cls: "cards finalizers" });
      const el = h("div", { cls: "device" }, title, cards, finCards);
      el._title = title;
      el._cards = cards;
      el._fins = finCards;
      return el;
    }, (el, g) => {
      const nBusy = g.workers.filter((w) => busy(w.state)).length;
      const nFin = g.finalizers.filter((f) => busy(f.state)).length;
      setText(el._title, (g.device || "device " + g.ordinal) + " — " + nBusy + "/" + g.workers.length +
        " workers busy, " + nFin + "/" + g.finalizers.length + " finalizers busy");
      setData(el, "device", g.device || "");
      sync(el._cards, g.workers, (w) => w.worker_id, () => makeCard("worker", WORKER_FIELDS),
        (card, w) => updateWorker(card, w, util));
      sync(el._fins, g.finalizers, (f) => f.finalizer_id, () => makeCard("finalizer", FINALIZER_FIELDS),
        updateFinalizer);
    });
  }

  function drawSynthesis(snap) {
    const syn = snap.synthesis || {};
    const workers = (syn.workers || []).slice().sort((a, b) => num(a.worker_id) - num(b.worker_id));
    sync($("synth"), workers, workerKey, () => makeCard("synth", SYNTH_FIELDS), (card, w) => {
      setText(card._name, "synth " + w.worker_id + ("node" in w ? " · " + shortNode(w.node) : ""));
      setData(card, "workerId", w.worker_id);
      if ("node" in w) setData(card, "node", w.node || "");
      cardState(card, w.state, w.job_id, w.partition);
      setText(card._f.on, busy(w.state) ? fmtSecs(w.started_secs_ago) : "-");
      setText(card._f.generation, w.generation ?? "-");
      restarts(card._f.restarts, w.restarts);
      setText(card._f.pid, w.pid || "-");
      heartbeat(card._f.hb, w.heartbeat_age_secs, w.state);
    });
    $("synth-empty").hidden = workers.length > 0;
    setText($("synth-summary"), "active " + (syn.active || 0) + "/" + (syn.max_concurrent ?? workers.length) +
      (workers.length ? ": " + countStates(workers) : ""));
  }

  // Pipeline orders, as `s` cycles through them in cuzk top.
  function sortPipelines(pipes, sort) {
    const submitted = (p) => num(p.submitted_at);
    let key;
    if (sort === "age") key = (p) => [submitted(p), String(p.job_id)];
    else if (sort === "progress") key = (p) => [p.total_partitions ? (p.partitions_done || 0) / p.total_partitions : 1, submitted(p)];
    else if (sort === "state") key = (p) => [JOB_STATE_RANK[p.state] ?? 9, submitted(p)];
    else key = (p) => [FINISHED.has(p.state) ? 1 : 0, PRIORITY_RANK[p.priority] ?? 9, submitted(p)];
    const keyed = pipes.map((p) => [key(p), p]);
    keyed.sort((a, b) => {
      for (let i = 0; i < a[0].length; i++) {
        if (a[0][i] < b[0][i]) return -1;
        if (a[0][i] > b[0][i]) return 1;
      }
      return 0;
    });
    return keyed.map((x) => x[1]);
  }

  function cellTitle(jobId, q) {
    return "job " + jobId + " · partition " + q.index + ": " + q.state +
      ("node" in q ? " · node " + shortNode(q.node) : "") +
      "\nsynthesis " + fmtMs(q.synth_ms) + " · device " + fmtMs(q.gpu_ms) +
      " · finalize " + fmtMs(q.finalize_ms) + " · attempts " + (q.attempts ?? "-");
  }

  function makeJobRow() {
    const id = makeId();
    const tds = ["job", "kind", "priority", "state", "age", "done", "strip"].map((k) =>
      h("td", { cls: "c-" + k + (k === "age" || k === "done" ? " num" : "") }));
    tds[0].append(id);
    const kind = h("span");
    tds[1].append(kind);
    const prio = h("span", { cls: "prio" });
    tds[2].append(prio);
    const state = h("span", { cls: "badge" });
    tds[3].append(state);
    const strip = h("div", { cls: "strip" });
    tds[6].append(strip);
    const tr = h("tr", { cls: "job" }, ...tds);
    Object.assign(tr, { _id: id, _kind: kind, _prio: prio, _state: state, _age: tds[4], _done: tds[5], _strip: strip });
    return tr;
  }

  function updateJobRow(tr, p, now) {
    setData(tr, "job", p.job_id);
    setData(tr, "state", p.state);
    setId(tr._id, p.job_id, "job");
    setText(tr._kind, p.proof_kind || "-");
    setText(tr._prio, p.priority || "-");
    setClass(tr._prio, "prio p-" + (p.priority || "none"));
    setText(tr._state, p.state || "?");
    setClass(tr._state, "badge s-" + (p.state || "unknown"));
    const age = p.submitted_at ? now - p.submitted_at : p.started_secs_ago;
    setText(tr._age, fmtSecs(age));
    const done = p.partitions_done || 0, total = p.total_partitions || 0, failed = p.partitions_failed || 0;
    setText(tr._done, done + "/" + total + (failed ? " (" + failed + " failed)" : ""));
    tr._done.classList.toggle("bad", failed > 0);
    const parts = (p.partitions || []).slice().sort((a, b) => num(a.index) - num(b.index));
    sync(tr._strip, parts, (q) => q.index, () => h("span", { cls: "cell" }), (cell, q) => {
      setClass(cell, "cell p-" + q.state);
      setText(cell, GLYPHS[q.state] || "?");
      setData(cell, "index", q.index);
      setData(cell, "state", q.state);
      if ("node" in q) setData(cell, "node", q.node || "");
      setTitle(cell, cellTitle(p.job_id, q));
    });
  }

  function drawJobs(snap) {
    const all = snap.pipelines || [];
    let pipes = sortPipelines(all, st.sort);
    if (st.hideFinished) pipes = pipes.filter((p) => !FINISHED.has(p.state));
    const shown = pipes.slice(0, MAX_JOBS_SHOWN);
    const now = snap.now || Date.now() / 1000;
    sync($("jobs"), shown, (p) => p.job_id, makeJobRow, (tr, p) => updateJobRow(tr, p, now));
    $("jobs-empty").hidden = shown.length > 0;
    const notShown = (pipes.length - shown.length) + ((snap.counters || {}).jobs_not_shown || 0);
    $("jobs-more").hidden = notShown <= 0;
    setText($("jobs-more"), "+" + notShown + " more jobs not shown (the board keeps the most recent ones)");
    const running = all.filter((p) => p.state === "running").length;
    const queued = all.filter((p) => p.state === "queued").length;
    setText($("jobs-summary"), running + " running, " + queued + " queued, " + all.length + " on the board");
  }

  function drawKeys(snap) {
    const keys = (snap.keys || []).slice().sort((a, b) => (String(a.key_id) < String(b.key_id) ? -1 : 1));
    sync($("keys"), keys, (k) => k.key_id, () => {
      const tr = h("tr", { cls: "key" });
      const id = makeId();
      const tds = ["id", "protocol", "curve", "size", "devices", "idle", "evict"].map((c) =>
        h("td", { cls: "c-" + c + (c === "size" || c === "idle" ? " num" : "") }));
      tds[0].append(id);
      tr.append(...tds);
      tr._id = id;
      tr._tds = tds;
      return tr;
    }, (tr, k) => {
      setId(tr._id, k.key_id, "key");
      setText(tr._tds[1], k.protocol || "-");
      setText(tr._tds[2], CURVES[k.curve] || k.curve || "-");
      setText(tr._tds[3], fmtBytes(k.bytes));
      setText(tr._tds[4], (k.devices || []).join(", ") || "-");
      setText(tr._tds[5], fmtSecs(k.last_used_secs_ago));
      setText(tr._tds[6], k.evictable ? "yes" : "no (in use)");
    });
    $("keys-empty").hidden = keys.length > 0;
    const total = keys.reduce((s, k) => s + (k.bytes || 0), 0);
    setText($("keys-summary"), keys.length + " resident, " + fmtBytes(total));
  }

  function drawLegend() {
    const legend = $("legend");
    for (const [state, glyph] of Object.entries(GLYPHS)) {
      legend.append(h("span", { cls: "legend-item" }, h("span", { cls: "cell p-" + state, text: glyph }),
        h("span", { text: WORDS[state] })));
    }
  }

  // ------------------------------------------------------------------ controls
  function init() {
    loadSettings();
    drawLegend();
    $("forget-token").hidden = !st.token;
    $("token-form").addEventListener("submit", onTokenSubmit);
    $("interval").addEventListener("change", () => {
      const v = parseFloat($("interval").value);
      if (v >= 0.2 && v <= 60) {
        st.interval = v;
        schedule(0);
      } else {
        $("interval").value = String(st.interval);
      }
    });
    $("pause").addEventListener("click", () => {
      st.paused = !st.paused;
      setText($("pause"), st.paused ? "resume" : "pause");
      document.body.classList.toggle("paused", st.paused);
      schedule(0);
    });
    $("forget-token").addEventListener("click", () => {
      forgetToken();
      schedule(0);
    });
    $("sort").addEventListener("change", () => {
      st.sort = $("sort").value;
      if (st.last) drawJobs(st.last);
    });
    $("hide-finished").addEventListener("change", () => {
      st.hideFinished = $("hide-finished").checked;
      if (st.last) drawJobs(st.last);
    });
    schedule(0);
  }

  document.addEventListener("DOMContentLoaded", init);
})();
