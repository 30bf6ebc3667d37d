"""Plot helpers the suites draw their figures with (matplotlib, imported only when drawing).

Every figure carries a caption naming the machine, date, load and commit of its result.
"""

from __future__ import annotations

from pathlib import Path

from bench.tables import fmt


def load_of(entry) -> float | None:
    """The 1-minute load average when the suite started (the runner's, else the suite's own)."""
    if entry.get("load_before") is not None:
        return entry["load_before"]
    res = entry.get("result") if isinstance(entry.get("result"), dict) else {}
    summary = res.get("summary") if isinstance(res.get("summary"), dict) else {}
    for v in (
        res.get("load_average_before"),
        res.get("load_avg"),
        summary.get("load1_before"),
        entry.get("meta", {}).get("load_average"),
    ):
        if isinstance(v, (int, float)):
            return v
    return None


def caption(entry) -> str:
    m = entry.get("meta", {})
    gpu = f"GPU {m['gpu']}" if m.get("gpu") else "no GPU"
    load = load_of(entry)
    return (
        f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores, {gpu}; "
        f"{str(m.get('date', '?'))[:16].replace('T', ' ')} UTC; "
        f"load {fmt(load) if load is not None else 'not recorded'}; "
        f"profile {entry.get('profile')}; commit {m.get('commit')}"
    )


def figure(title, entry, ncols=1, width=6.4):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols if ncols > 1 else width, 3.8))
    fig.suptitle(title, fontsize=10)
    fig.text(0.5, 0.005, caption(entry), ha="center", va="bottom", fontsize=6.5, color="0.35")
    return fig, (axes if ncols > 1 else [axes])


def save(fig, fname, img: Path) -> str:
    import matplotlib.pyplot as plt

    img.mkdir(parents=True, exist_ok=True)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(img / fname, dpi=90)
    plt.close(fig)
    return f"img/{fname}"


def lines(ax, rows, x, ycols, *, group=None, labels=None):
    groups = sorted({r.get(group) for r in rows}) if group else [None]
    for g in groups:
        for c in ycols:
            pts = sorted(
                (r[x], r[c])
                for r in rows
                if (group is None or r.get(group) == g)
                and isinstance(r.get(x), (int, float))
                and isinstance(r.get(c), (int, float))
                and r[c] > 0
            )
            if pts:
                name = (labels or {}).get(c, c)
                ax.plot(*zip(*pts, strict=True), marker="o", label=f"{g} {name}" if g else name)
    ax.set_yscale("log")
    ax.grid(True, alpha=0.3)


def mark_target(ax, x, y, label):
    ax.plot([x], [y], marker="*", markersize=12, color="crimson", linestyle="none", label=label)


def bars(ax, labels, series: dict, log=False):
    import numpy as np

    x = np.arange(len(labels))
    w = 0.8 / max(1, len(series))
    for i, (lab, vals) in enumerate(series.items()):
        ax.bar(x + i * w - 0.4 + w / 2, [v or 0 for v in vals], w, label=lab)
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=7, rotation=15, ha="right")
    if log:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3, axis="y")
