"""The `cuzk top` screen as a pure function of (snapshot, width, height, view state).

render() reads only its arguments (the snapshot dict in the shape of `GET /status`, derived
figures, the view state): no clock, no terminal, no board. Times shown are taken from the
snapshot ("now", "*_secs_ago"), so one snapshot always draws the same frame, which is what
the golden tests rely on. The panels are built from the widget kit in widgets.py (tables,
sections, bars); this module decides what goes on screen and where.

Screen, top to bottom. Rows are shared out in render() by priority (workers up to half, the
pipelines at least a quarter, then the other panels); a panel short of room shrinks to a
"+k more" line or a one-line summary, a panel with many rows on a wide terminal is laid out
side by side, and the pipelines take what is left and scroll:

    header      instance, supervisor pid, uptime; memory bar, queue depth, done/failed rates
    NODE        a farm's machines (only when the snapshot has `nodes`: a gateway's status)
    WORKER      device workers: state, job, partition, time on it, utilisation, gen, pid, heartbeat
    GPU         NVML telemetry (only when a GPU and nvidia-ml-py exist)
    FINALIZER   finalizer threads: what each is finishing
    SYNTH       synthesis workers
    JOB         pipelines: kind, priority, age, done/total, a glyph per partition
    KEY         resident proving keys
    footer      keys, sort, scroll position

A farm gateway's snapshot (cluster contract: top-level `nodes`, a `node` on every worker,
finalizer, synthesis worker and partition) adds the NODE panel and a NODE column (the node id
cut to NODE_ID_CHARS) to the worker, finalizer, synthesis and job tables; without `nodes` the
screen is the one-machine screen, cell for cell.
"""

from __future__ import annotations

from cuzk.board.layout import PRIORITIES
from cuzk.top import fmt
from cuzk.top.derive import Derived, worker_key
from cuzk.top.frame import Frame, Line, build
from cuzk.top.widgets import Col, Rows, Section, Table, columns_for, count_states, num, util_bar

# Pipeline orders that `s` cycles through.
SORTS = ("priority", "age", "progress", "state")

# A heartbeat older than this many seconds is highlighted as stale.
STALE_SECS = 5.0

MIN_WIDTH, MIN_HEIGHT = 40, 10

# A node id (a Ray node id: 56 hex digits) is shown by its first characters.
NODE_ID_CHARS = 8

# Partition state -> glyph, in pipeline order. ASCII so that every terminal and locale shows it.
GLYPHS = {
    "pending": ".",
    "synthesizing": "s",
    "synth_done": "w",  # synthesized, waiting for a device
    "gpu": "G",
    "finalizing": "f",
    "done": "#",
    "failed": "X",
}
LEGEND_WORDS = {
    "pending": "pending",
    "synthesizing": "synth",
    "synth_done": "wait",
    "gpu": "gpu",
    "finalizing": "finalize",
    "done": "done",
    "failed": "failed",
}
PRIORITY_RANK = {p: rank for rank, p in enumerate(PRIORITIES)}  # the scheduler's order
PRIORITY_SHORT = {p: p[:4] for p in PRIORITIES}  # crit, high, norm
JOB_STATE_RANK = {"running": 0, "queued": 1, "failed": 2, "cancelled": 3, "done": 4}
STATE_STYLE = {
    "idle": "idle",
    "proving": "busy",
    "synthesizing": "busy",
    "finalizing": "finalizing",
    "dead": "dead",
    "running": "busy",
    "queued": "warn",
    "done": "good",
    "failed": "bad",
    "cancelled": "dim",
}


def _state(state) -> tuple[str, str | None]:
    state = state or "?"
    return state, STATE_STYLE.get(state)


def _busy(state) -> bool:
    return state not in (None, "idle", "dead")


def _heartbeat(age, state) -> tuple[str, str | None]:
    if age is None:
        return "-", None
    if state != "dead" and age > STALE_SECS:
        return fmt.secs(age), "stale"
    return fmt.secs(age), None


def short_node(node_id) -> str:
    """A node id as the screen shows it ('-' for none: a partition queued in the gateway)."""
    return str(node_id)[:NODE_ID_CHARS] if node_id else "-"


def _farm(snap: dict) -> bool:
    """A farm gateway's snapshot (it lists its nodes); else one machine's."""
    return snap.get("nodes") is not None


def _by_node(snap: dict, items, id_key: str) -> list:
    """Items in id order; on a farm grouped by node first, in the order of `nodes`."""
    if not _farm(snap):
        return sorted(items or (), key=lambda it: num(it.get(id_key)))
    rank = {n.get("node_id"): k for k, n in enumerate(snap.get("nodes") or ())}
    return sorted(
        items or (),
        key=lambda it: (
            rank.get(it.get("node"), len(rank)),
            str(it.get("node")),
            num(it.get(id_key)),
        ),
    )


def _node_col(farm: bool, cols: list, at: int, prio: int) -> list:
    """cols with the NODE column inserted at `at` on a farm; unchanged otherwise."""
    if farm:
        cols.insert(at, Col("NODE", NODE_ID_CHARS, prio=prio))
    return cols


def _node_cell(farm: bool, cells: list, at: int, item: dict) -> list:
    if farm:
        cells.insert(at, short_node(item.get("node")))
    return cells


def _job_cells(w: dict, job_key: str, part_key: str) -> tuple:
    if not _busy(w.get("state")):
        return "-", "-", "-"
    part = w.get(part_key)
    return (
        w.get(job_key) or "-",
        "-" if part is None else str(part),
        fmt.secs(w.get("started_secs_ago")),
    )


def _workers(snap: dict, d: Derived, width: int, room: int) -> Section:
    farm = _farm(snap)
    workers = _by_node(snap, snap.get("gpu_workers"), "worker_id")
    k, width = columns_for(len(workers), width, 76 + (NODE_ID_CHARS + 1) * farm, room)
    cols = _node_col(
        farm,
        [
            Col("WORKER", 6, ">"),
            Col("DEVICE", 7, prio=3),
            Col("STATE", 8),
            Col("JOB", 8, flex=28),
            Col("PART", 4, ">"),
            Col("TIME", 6, ">", prio=1),
            Col("UTIL", 4, ">"),
            Col("UTIL%", 12, prio=6, flex=20),
            Col("GEN", 5, ">", prio=4),
            Col("RST", 3, ">", prio=2),
            Col("PID", 7, ">", prio=5),
            Col("HB", 5, ">", prio=1),
        ],
        1,
        prio=3,
    )
    t = Table(cols, width)

    def draw(w):
        job, part, on = _job_cells(w, "current_job", "current_partition")
        u = d.util.get(worker_key(w))
        dev = w.get("device") or f"gpu:{w.get('gpu_ordinal')}"
        cells = [
            str(w.get("worker_id")),
            dev,
            _state(w.get("state")),
            job,
            part,
            on,
            fmt.pct(u),
            util_bar(u),
            str(w.get("generation", "-")),
            (str(w.get("restarts", 0)), "warn" if w.get("restarts") else None),
            str(w.get("pid") or "-"),
            _heartbeat(w.get("heartbeat_age_secs"), w.get("state")),
        ]
        return t.row(_node_cell(farm, cells, 1, w))

    rows = Rows(workers, draw, "no device workers")
    busy = sum(1 for w in workers if _busy(w.get("state")))
    summary = (
        Line()
        .add("WORKER ", "header")
        .add(f" {busy}/{len(workers)} busy: {count_states(workers) or 'none'}")
    )
    return Section(t.header(), rows, summary, "workers", k, width)


def _nodes(snap: dict, width: int) -> Section | None:
    """A farm's machines: id, host, alive, devices, incarnation (actor restarts + 1), time
    since the gateway last heard from it, and outstanding / capacity when the gateway says."""
    if not _farm(snap):
        return None
    nodes = list(snap.get("nodes") or ())
    now = snap.get("now")
    load = any("outstanding" in n or "capacity" in n for n in nodes)
    cols = [
        Col("NODE", NODE_ID_CHARS),
        Col("HOST", 8, prio=2, flex=16),
        Col("STATE", 5),
        Col("DEVICES", 7, prio=3, flex=24),
        Col("INC", 3, ">", prio=4),
        Col("SEEN", 6, ">", prio=1),
    ]
    if load:
        cols.append(Col("LOAD", 7, ">", prio=1))
    t = Table(cols, width)

    def draw(n):
        alive = bool(n.get("alive"))
        seen = n.get("last_seen")
        ago = None if seen is None or now is None else max(0.0, now - seen)
        cells = [
            short_node(n.get("node_id")),
            n.get("host") or "-",
            ("alive", "busy") if alive else ("dead", "dead"),
            ",".join(n.get("devices") or ()) or "-",
            str(n.get("incarnation", "-")),
            (fmt.secs(ago), "stale" if alive and ago is not None and ago > STALE_SECS else None),
        ]
        if load:
            out, cap = n.get("outstanding"), n.get("capacity")
            cells.append(f"{'-' if out is None else out}/{'-' if cap is None else cap}")
        return t.row(cells)

    alive = sum(1 for n in nodes if n.get("alive"))
    summary = (
        Line()
        .add("NODE ", "header")
        .add(f" {len(nodes)} nodes: {alive} alive")
        .add(f", {len(nodes) - alive} dead" if alive < len(nodes) else "", "bad")
    )
    return Section(t.header(), Rows(nodes, draw, "no nodes"), summary, "nodes")


def _finalizers(snap: dict, width: int, room: int) -> Section | None:
    farm = _farm(snap)
    fins = _by_node(snap, snap.get("finalizers"), "finalizer_id")
    if not fins:
        return None
    k, width = columns_for(len(fins), width, 70 + (NODE_ID_CHARS + 1) * farm, room)
    cols = _node_col(
        farm,
        [
            Col("FINALIZER", 9, ">"),
            Col("GPU", 3, ">", prio=2),
            Col("STATE", 10),
            Col("JOB", 8, flex=28),
            Col("PART", 4, ">"),
            Col("TIME", 6, ">", prio=1),
            Col("GEN", 5, ">", prio=3),
            Col("PID", 7, ">", prio=4),
        ],
        1,
        prio=2,
    )
    t = Table(cols, width)

    def draw(f):
        job, part, on = _job_cells(f, "current_job", "current_partition")
        cells = [
            str(f.get("finalizer_id")),
            str(f.get("gpu_ordinal", "-")),
            _state(f.get("state")),
            job,
            part,
            on,
            str(f.get("generation", "-")),
            str(f.get("pid") or "-"),
        ]
        return t.row(_node_cell(farm, cells, 1, f))

    rows = Rows(fins, draw)
    summary = Line().add("FINALIZER", "header").add(f" {len(fins)}: {count_states(fins)}")
    return Section(t.header(), rows, summary, "finalizers", k, width)


def _synthesis(snap: dict, width: int, room: int) -> Section | None:
    syn = snap.get("synthesis") or {}
    farm = _farm(snap)
    workers = _by_node(snap, syn.get("workers"), "worker_id")
    if not workers and not syn:
        return None
    active = f"ACTIVE {syn.get('active', 0)}/{syn.get('max_concurrent', len(workers))}"
    k, width = columns_for(len(workers), width, 74 + (NODE_ID_CHARS + 1) * farm, room)
    cols = _node_col(
        farm,
        [
            Col("SYNTH", 6, ">"),
            Col(active, 12),
            Col("JOB", 8, flex=28),
            Col("PART", 4, ">"),
            Col("TIME", 6, ">", prio=1),
            Col("GEN", 5, ">", prio=4),
            Col("RST", 3, ">", prio=2),
            Col("PID", 7, ">", prio=5),
            Col("HB", 5, ">", prio=1),
        ],
        1,
        prio=3,
    )
    t = Table(cols, width)

    def draw(w):
        job, part, on = _job_cells(w, "job_id", "partition")
        cells = [
            str(w.get("worker_id")),
            _state(w.get("state")),
            job,
            part,
            on,
            str(w.get("generation", "-")),
            (str(w.get("restarts", 0)), "warn" if w.get("restarts") else None),
            str(w.get("pid") or "-"),
            _heartbeat(w.get("heartbeat_age_secs"), w.get("state")),
        ]
        return t.row(_node_cell(farm, cells, 1, w))

    rows = Rows(workers, draw, "no synthesis workers")
    summary = (
        Line().add("SYNTH ", "header").add(f" {active.lower()}: {count_states(workers) or 'none'}")
    )
    return Section(t.header(), rows, summary, "synthesis workers", k, width)


def _gpus(d: Derived, width: int) -> Section | None:
    if not d.gpus:
        return None
    t = Table(
        [
            Col("GPU", 3, ">"),
            Col("NAME", 8, prio=3, flex=24),
            Col("UTIL", 4, ">"),
            Col("UTIL%", 12, prio=4, flex=20),
            Col("MEMORY", 13, ">"),
            Col("TEMP", 4, ">", prio=1),
            Col("POWER", 9, ">", prio=2),
        ],
        width,
    )

    def draw(g):
        u = None if g.get("util") is None else g["util"] / 100.0
        temp = g.get("temp_c")
        power, limit = g.get("power_w"), g.get("power_limit_w")
        return t.row(
            [
                str(g.get("index")),
                g.get("name") or "-",
                fmt.pct(u),
                util_bar(u),
                f"{fmt.bytes_(g.get('mem_used'))}/{fmt.bytes_(g.get('mem_total'))}",
                ("-" if temp is None else f"{temp:.0f}C", "warn" if (temp or 0) >= 85 else None),
                "-"
                if power is None
                else (f"{power:.0f}/{limit:.0f}W" if limit else f"{power:.0f}W"),
            ]
        )

    rows = Rows(d.gpus, draw)
    avg = sum(g.get("util") or 0 for g in d.gpus) / len(d.gpus)
    summary = Line().add("GPU ", "header").add(f" {len(d.gpus)} devices, mean util {avg:.0f}%")
    return Section(t.header(), rows, summary)


def _strip(parts: list):
    """One glyph per partition, runs of one state drawn as one styled segment."""

    def draw(width):
        states = [p.get("state") for p in parts]
        cut = len(states) > width
        if cut:
            states = states[: max(0, width - 1)]
        runs: list[tuple[str, str]] = []
        for st in states:
            glyph = GLYPHS.get(st, "?")
            if runs and runs[-1][1] == "p_" + str(st):
                runs[-1] = (runs[-1][0] + glyph, runs[-1][1])
            else:
                runs.append((glyph, "p_" + str(st)))
        return runs + [("+", "dim")] if cut else runs

    return draw


def _legend() -> Line:
    line = Line()
    for state, glyph in GLYPHS.items():
        line.add(" ")
        line.add(glyph, "p_" + state)
        line.add(" " + LEGEND_WORDS[state], "dim")
    return line


def sort_pipelines(pipelines, sort: str) -> list:
    """Pipelines in the order named by `sort` (one of SORTS)."""

    def submitted(p):
        return num(p.get("submitted_at"))

    def finished(p):
        return p.get("state") in ("done", "failed", "cancelled")

    if sort == "age":
        key = lambda p: (submitted(p), str(p.get("job_id")))  # noqa: E731
    elif sort == "progress":

        def key(p):
            total = p.get("total_partitions") or 0
            return ((p.get("partitions_done") or 0) / total if total else 1.0, submitted(p))
    elif sort == "state":
        key = lambda p: (JOB_STATE_RANK.get(p.get("state"), 9), submitted(p))  # noqa: E731
    else:  # priority: the scheduler's order, finished jobs last
        key = lambda p: (  # noqa: E731
            finished(p),
            PRIORITY_RANK.get(p.get("priority"), 9),
            submitted(p),
        )
    return sorted(pipelines or (), key=key)


def _job_nodes(snap: dict, parts: list):
    """The NODE cell of a job on a farm: the nodes its partitions are or were on, by short
    id when they fit the cell, else how many."""
    rank = {n.get("node_id"): k for k, n in enumerate(snap.get("nodes") or ())}
    nodes = sorted(
        {q.get("node") for q in parts if q.get("node")}, key=lambda n: (rank.get(n, len(rank)), n)
    )

    def draw(width):
        text = ",".join(short_node(n) for n in nodes) or "-"
        if len(text) > width:
            text = f"{len(nodes)} nodes"
        return [(text, None)]

    return draw


def _pipelines(snap: dict, width: int, sort: str):
    now = num(snap.get("now"))
    farm = _farm(snap)
    pipes = sort_pipelines(snap.get("pipelines"), sort)
    longest = max((len(p.get("partitions") or ()) for p in pipes), default=0)
    cols = [
        Col("JOB", 8, flex=24),
        Col("KIND", 12, prio=2),
        Col("PRIO", 4),
        Col("STATE", 9, prio=3),
        Col("AGE", 6, ">", prio=1),
        Col("DONE", 7, ">"),
        Col("PARTITIONS", 10, flex=max(0, longest - 10), grow=-1),
    ]
    if farm:
        cols.insert(6, Col("NODE", NODE_ID_CHARS, prio=2, flex=2 * NODE_ID_CHARS + 2))
    t = Table(cols, width)

    def draw(p):
        done, total, failed = (
            p.get("partitions_done") or 0,
            p.get("total_partitions") or 0,
            p.get("partitions_failed") or 0,
        )
        submitted = p.get("submitted_at")
        age = now - submitted if submitted else p.get("started_secs_ago")
        prio = p.get("priority")
        parts = sorted(p.get("partitions") or (), key=lambda q: num(q.get("index")))
        cells = [
            p.get("job_id"),
            p.get("proof_kind") or "-",
            (PRIORITY_SHORT.get(prio, prio or "-"), "warn" if prio == PRIORITIES[0] else None),
            _state(p.get("state")),
            fmt.secs(age),
            (f"{done}/{total}" + (f"!{failed}" if failed else ""), "bad" if failed else None),
            _strip(parts),
        ]
        if farm:
            cells.insert(6, _job_nodes(snap, parts))
        return t.row(cells)

    rows = Rows(pipes, draw)
    legend = _legend()
    header = t.header()
    if len(header) + len(legend) <= width:  # the legend fits on the header line
        header.add(" " * (width - len(header) - len(legend)))
        for text, style in legend.parts:
            header.add(text, style)
        legend = None
    return header, rows, legend


def _header(snap: dict, d: Derived, width: int, *, paused: bool, tall: bool) -> list[Line]:
    mem = snap.get("memory") or {}
    counters = snap.get("counters") or {}
    top = Line().add("cuzk top", "title").add(f"  {snap.get('instance') or '?'}", "bold")
    top.add(f"  up {fmt.secs(snap.get('uptime_secs'))}")
    top.add(f"  pid {snap.get('supervisor_pid') or '-'}")
    if width >= 100:
        top.add(f"  board {snap.get('board') or '-'}", "dim")
    flags = []
    if snap.get("consistent") is False:
        flags.append(("[torn snapshot]", "warn"))
    if paused:
        flags.append(("[PAUSED]", "warn"))
    right = " ".join(text for text, _ in flags)
    if flags and len(top) + len(right) + 1 <= width:
        top.add(" " * (width - len(top) - len(right)))
        for k, (text, style) in enumerate(flags):
            top.add((" " if k else "") + text, style)

    total, reserved = mem.get("total_bytes") or 0, mem.get("reserved_bytes")
    if reserved is None:
        reserved = mem.get("used_bytes") or 0
    frac = reserved / total if total else 0.0
    amounts = f" {fmt.bytes_(reserved)}/{fmt.bytes_(total)}"
    queue = f"  queue {counters.get('queue_depth', 0)}"
    done = f"  done {counters.get('total_completed', 0)} {fmt.rate(d.completed_per_min)}"
    failed_n = counters.get("total_failed", 0)
    failed = f"  failed {failed_n} {fmt.rate(d.failed_per_min)}"
    rest = len(amounts) + len(queue) + len(done) + len(failed)
    bar_w = max(4, width - rest - len("Mem[]"))
    mem_line = Line().add("Mem", "bold").add("[")
    style = "bar" if frac < 0.75 else "bar_mid" if frac < 0.9 else "bar_high"
    mem_line.add(fmt.bar(frac, bar_w), style).add("]").add(amounts)
    mem_line.add(queue, "warn" if counters.get("queue_depth") else None).add(done)
    mem_line.add(failed, "bad" if failed_n else None)
    lines = [top, mem_line]
    warming = snap.get("warming")
    if warming:  # kernels compiling on a cold cache: jobs wait for them (cuzk.compiling)
        line = Line().add("warming: ", "warn").add(warming.get("reason") or "compiling kernels")
        for p in warming.get("processes") or []:
            line.add(f"; {p.get('process')} {p.get('compiled', 0)} fns {p.get('secs', 0):.0f} s")
        lines.append(line)
    if tall:
        uses = mem.get("by_use") or {}
        third = Line().add("  by use:", "dim")
        for label, n in sorted(uses.items(), key=lambda kv: -kv[1]):
            third.add(f" {label} {fmt.bytes_(n)}")
        third.add(f"   avail {fmt.bytes_(mem.get('available_bytes'))}", "dim")
        for name in ("retries", "restarts", "stale_ends_ignored"):
            third.add(f"  {name.replace('_', ' ')} {counters.get(name, 0)}")
        if counters.get("jobs_recovered"):  # re-queued from the job journal at start
            third.add(f"  recovered {counters['jobs_recovered']}")
        lines.append(third)
    return lines


def _footer(frame_info: dict, *, sort: str, paused: bool) -> Line:
    line = Line()
    if frame_info.get("help"):
        return line.add(" any key", "key").add(" closes the help   ").add("q", "key").add(" quit")
    for key, what in (
        ("q", "quit"),
        ("p", "resume" if paused else "pause"),
        ("s", f"sort:{sort}"),
        ("?", "help"),
        ("arrows", "scroll"),
    ):
        line.add(" ").add(key, "key").add(" " + what)
    n, first, last = frame_info["n"], frame_info["first"], frame_info["last"]
    line.add(f"   jobs {first}-{last}/{n}" if n else "   no jobs", "dim")
    return line


HELP = [
    ("cuzk top", "live view of the cuzk status board (shared memory, read-only)"),
    ("", ""),
    ("q", "quit"),
    ("p", "pause / resume sampling (the screen keeps the last snapshot)"),
    ("s", "cycle the pipeline sort: " + ", ".join(SORTS)),
    ("?", "show / hide this help"),
    ("Up Down", "scroll pipelines one row"),
    ("PgUp PgDn", "scroll pipelines one page"),
    ("Home End", "first / last pipelines"),
    ("", ""),
    ("WORKER", "device workers: UTIL = busy share of the last interval;"),
    ("", "TIME = time on the current partition; HB = heartbeat age"),
    ("", f"(highlighted when older than {STALE_SECS:.0f}s); GEN = slot generation"),
    ("FINALIZER", "threads finishing proofs (prove_finish) after the device moved on"),
    ("SYNTH", "CPU synthesis workers; active/cap"),
    ("JOB", "recent jobs; one glyph per partition:"),
]


FARM_HELP = [
    ("NODE", "the farm's machines: INC = incarnation (restarts + 1), SEEN = last"),
    ("", "status from it, LOAD = outstanding / capacity; node ids cut to 8"),
]


def _help(width: int, farm: bool = False) -> list[Line]:
    entries = HELP[:10] + FARM_HELP + HELP[10:] if farm else HELP
    lines = [Line().add(" ").add(f"{key:<10}", "key").add(" " + text) for key, text in entries]
    legend = Line().add(" " * 11)
    for text, style in _legend().parts:
        legend.add(text, style)
    lines.append(legend)
    lines.append(
        Line()
        .add(" ")
        .add(f"{'KEY':<10}", "key")
        .add(" resident keys: PROTO, curve, size, TABLES, LOAD, devices, idle")
    )
    return lines


def render(
    snapshot: dict,
    width: int,
    height: int,
    *,
    derived: Derived | None = None,
    sort: str = "priority",
    scroll: int = 0,
    paused: bool = False,
    show_help: bool = False,
) -> Frame:
    """Draw one frame of `cuzk top` from a status snapshot (the `GET /status` JSON shape)."""
    d = derived or Derived()
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {SORTS}, not {sort!r}")
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        msg = f"too small: {width}x{height} (need {MIN_WIDTH}x{MIN_HEIGHT})"
        return build([Line().add(fmt.cut(msg, width), "warn")], width, height)

    head = _header(snapshot, d, width, paused=paused, tall=height >= 40)
    room = height - len(head) - 1
    if show_help:
        body = _help(width, farm=_farm(snapshot))[:room]
        info = {"n": len(snapshot.get("pipelines") or ()), "help": True}
        return build(
            [*head, *body, *[Line()] * (room - len(body)), _footer(info, sort=sort, paused=paused)],
            width,
            height,
            scroll=scroll,
            page=0,
            pipelines=info["n"],
        )

    p_header, p_rows, p_legend = _pipelines(snapshot, width, sort)
    sections = {
        "nodes": _nodes(snapshot, width),
        "workers": _workers(snapshot, d, width, room),
        "gpus": _gpus(d, width),
        "finalizers": _finalizers(snapshot, width, room),
        "synthesis": _synthesis(snapshot, width, room),
        "keys": _keys(snapshot, width),
    }
    sections = {k: v for k, v in sections.items() if v is not None}
    p_fixed = 1 + (1 if p_legend else 0)  # header (+ legend line)
    p_want = p_fixed + max(1, len(p_rows))
    p_min = p_fixed + min(max(3, room // 4), max(1, len(p_rows)))

    # Allocate rows: one per section first, then grow in priority order; pipelines last.
    alloc = {k: 0 for k in (*sections, "pipelines")}
    order = ["nodes", "workers", "pipelines", "gpus", "finalizers", "synthesis", "keys"]
    order = [k for k in order if k in alloc]
    for k in order:
        if room - sum(alloc.values()) > 0:
            alloc[k] = 1
    # Growth: no panel may crowd out the pipelines at first (caps), then each takes what it
    # wants in priority order, and the pipelines take whatever is left (they scroll).
    caps = {
        "nodes": max(4, room // 4),
        "workers": max(6, room // 2),
        "finalizers": max(4, room // 5),
        "synthesis": max(4, room // 4),
    }
    steps = [
        ("nodes", caps["nodes"]),
        ("workers", caps["workers"]),
        ("pipelines", p_min),
        ("gpus", None),
        ("finalizers", caps["finalizers"]),
        ("synthesis", caps["synthesis"]),
        ("keys", None),
        ("nodes", None),
        ("workers", None),
        ("finalizers", None),
        ("synthesis", None),
        ("pipelines", p_want),
    ]
    for k, cap in steps:
        if k not in alloc:
            continue
        want = p_want if k == "pipelines" else sections[k].want()
        want = want if cap is None else min(want, cap)
        free = room - sum(alloc.values())
        alloc[k] = max(alloc[k], min(want, alloc[k] + free))

    # Pipelines: a scrolled window of rows.
    p_lines: list[Line] = []
    n = alloc["pipelines"]
    visible = max(0, n - p_fixed)
    top_row = max(0, min(scroll, len(p_rows) - max(1, visible)))
    shown = p_rows[top_row : top_row + visible]
    if n == 1:
        busy = sum(1 for r in snapshot.get("pipelines") or () if r.get("state") == "running")
        p_lines = [Line().add("JOB ", "header").add(f" {len(p_rows)} jobs, {busy} running")]
    elif n > 1:
        p_lines = [p_header, *shown]
        if not p_rows:
            p_lines.append(Line().add("  (no jobs)", "dim"))
        p_lines += [Line()] * (n - p_fixed - max(len(shown), 0 if p_rows else 1))
        if p_legend:
            p_lines.append(p_legend)
        p_lines = p_lines[:n]
    info = {"n": len(p_rows), "first": top_row + 1 if shown else 0, "last": top_row + len(shown)}

    body: list[Line] = []
    for k in ("nodes", "workers", "gpus", "finalizers", "synthesis"):
        if k in sections:
            body += sections[k].lines(alloc[k])
    body += p_lines
    if "keys" in sections:
        body += sections["keys"].lines(alloc["keys"])
    body += [Line()] * (room - len(body))
    return build(
        [*head, *body, _footer(info, sort=sort, paused=paused)],
        width,
        height,
        scroll=top_row,
        page=max(1, visible),
        pipelines=len(p_rows),
    )


def _tables(k: dict) -> str:
    """A key's TABLES cell: their bytes, "…" after them while they are being built."""
    if not k.get("table_bytes"):
        return "-"
    return fmt.bytes_(k["table_bytes"]) + ("…" if k.get("tables") == "building" else "")


def _keys(snap: dict, width: int) -> Section | None:
    keys = sorted(snap.get("keys") or (), key=lambda k: str(k.get("key_id")))
    if not keys:
        return None
    t = Table(
        [
            Col("KEY", 8, flex=40),
            Col("PROTO", 7, prio=1),
            Col("CURVE", 9, prio=1),
            Col("SIZE", 6, ">"),
            Col("TABLES", 7, ">", prio=2),
            Col("LOAD", 6, ">", prio=2),
            Col("DEVICES", 8, prio=1, flex=30),
            Col("IDLE", 6, ">"),
            Col("EVICT", 5, prio=2),
        ],
        width,
    )
    rows = Rows(
        keys,
        lambda k: t.row(
            [
                k.get("key_id"),
                k.get("protocol") or "-",
                fmt.curve(k.get("curve")),
                fmt.bytes_(k.get("bytes")),
                _tables(k),
                fmt.secs(None if k.get("load_ms") is None else k["load_ms"] / 1e3),
                ",".join(k.get("devices") or ()) or "-",
                fmt.secs(k.get("last_used_secs_ago")),
                "yes" if k.get("evictable") else "no",
            ]
        ),
    )
    total = sum(k.get("bytes") or 0 for k in keys)
    summary = Line().add("KEY ", "header").add(f" {len(keys)} resident, {fmt.bytes_(total)}")
    return Section(t.header(), rows, summary, "keys")
