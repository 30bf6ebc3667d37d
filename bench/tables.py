"""Markdown tables and target rows: what every suite reports its figures and targets with."""

from __future__ import annotations


def fmt(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 100:
            return f"{v:.0f}"
        if abs(v) >= 1:
            return f"{v:.2f}"
        return f"{v:.3g}"
    return "" if v is None else str(v)


def table(rows: list[dict], columns: list[str] | None = None) -> str:
    """A Markdown table of dict rows (columns: the union of keys, in first-seen order)."""
    if not rows:
        return "(no rows)\n"
    if columns is None:
        columns = []
        for r in rows:
            columns += [k for k in r if k not in columns and not isinstance(r[k], (dict, list))]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(fmt(r.get(c)).replace("|", "/") for c in columns) + " |")
    return "\n".join(lines) + "\n"


def find_row(rows, **match):
    """The first dict row whose fields equal `match`, else None."""
    for r in rows or []:
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def family_row(get, family: str, log2n: int):
    """(row, where) for a target at domain 2^log2n: the quick run's row of the family, or for
    2^19 (the full profile's size only) the full run's, with where = " (full profile)";
    (None, "") when no run has one. get: the report's getter for the suite."""
    row = find_row((get() or {}).get("rows"), family=family, log2n=log2n)
    if row is None and log2n == 19:
        row = find_row((get("full") or {}).get("rows"), family=family, log2n=19)
        return row, " (full profile)" if row is not None else ""
    return row, ""


def squarechain_row(get, log2n: int):
    """family_row for the squaring chain (issue #16's targets)."""
    return family_row(get, "squarechain", log2n)


def target(
    name,
    issue,
    goal,
    unit,
    measured,
    *,
    best=None,
    upper=True,
    note="",
    suite=None,
    profile="quick",
):
    """One row of the targets summary: `goal` in `unit` against `measured` (None: not
    measured). upper: the goal is a ceiling (time, CPU share); else a floor. best: the
    fastest run, which may meet the goal when the median does not."""
    out = {
        "target": name,
        "issue": issue,
        "goal": f"{'≤' if upper else '≥'} {fmt(goal)} {unit}",
        "measured": None,
        "vs_goal": None,
        "status": "not measured",
        "note": note,
        "suite": suite,
        "profile": profile,
    }
    if measured is None:
        return out
    out["measured"] = f"{fmt(measured)} {unit}" + (
        f" (best {fmt(best)})" if best is not None else ""
    )
    out["vs_goal"] = measured / goal if goal else None

    def ok(x):
        return x <= goal if upper else x >= goal

    if ok(measured):
        out["status"] = "met"
    elif best is not None and ok(best):
        out["status"] = "met by the best run only"
    else:
        out["status"] = "not met"
    return out


def busy_note(cpu_ms, cores_used) -> str:
    out = f"CPU time {fmt(cpu_ms)} ms; " if cpu_ms is not None else ""
    return out + (f"kept {fmt(cores_used)} of 2 cores busy" if cores_used is not None else "")


def targets_table(rows: list[dict]) -> str:
    return table(
        [
            {**r, "vs_goal": (f"{r['vs_goal']:.2f}" if r["vs_goal"] is not None else "")}
            for r in rows
        ],
        ["target", "issue", "goal", "measured", "vs_goal", "status", "note"],
    )
