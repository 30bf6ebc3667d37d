"""The package's import graph has no cycles.

Every module under cuzk/ is parsed with `ast` (nothing is imported). An edge A -> B is an
import of cuzk module B by A. The import-time graph counts statements that run when A is
imported: at module level, including inside module-level if/try/with blocks and class bodies,
but not inside functions nor under `if TYPE_CHECKING:`; it must have no cycle at all. The full
graph also counts imports deferred into functions (the usual way to paper over a cycle); its
cycles outside KNOWN_CYCLES fail too.

`from pkg import name` is an edge to the submodule pkg.name when that is a module, else to pkg;
relative imports are resolved against the importing module's package. Importing a submodule
also runs its parents' __init__, but those implicit edges are not counted: a package's
__init__ re-exporting its own submodules is the normal layout, not a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "cuzk"

# Cycles (through deferred imports) that exist today outside the status board, top, serve and
# engine, each being removed by its own change. This list must only shrink, to empty; never add
# to it: break the cycle instead.
KNOWN_CYCLES: set[frozenset[str]] = set()  # empty: every cycle the issue named is gone


def modules() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the package."""
    out = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_time_statements(body):
    """Statements that run when the module is imported (not function bodies)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        yield node
        if isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _import_time_statements(node.body)
            yield from _import_time_statements(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _import_time_statements(block)
        elif isinstance(node, (ast.With, ast.ClassDef)):
            yield from _import_time_statements(node.body)


def _all_statements(body):
    for node in body:
        yield from ast.walk(node)


def imports_of(name: str, path: Path, known: set[str], deferred: bool = False) -> set[str]:
    """The package modules `name` imports at import time (and in functions, with deferred)."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    out = set()
    walk = _all_statements if deferred else _import_time_statements
    for node in walk(tree.body):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            targets = []
            for a in node.names:
                sub = f"{mod}.{a.name}"
                targets.append(sub if sub in known else mod)
        else:
            continue
        for t in targets:
            # `import cuzk.a.b` binds cuzk but runs cuzk.a.b: the edge is to the named module
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t.split(".")[0] == PACKAGE and t != name:
                out.add(t)
    return out


def import_graph(deferred: bool = False) -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(name, path, known, deferred) for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def a_path(graph: dict[str, set[str]], comp: list[str]) -> list[str]:
    """One concrete cycle through the first module of a component, for the failure message."""
    start, members = comp[0], set(comp)
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return [*reversed(path), start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def _report(graph, comps) -> str:
    return "import cycles:\n" + "\n".join(
        "  " + " -> ".join(a_path(graph, c)) + f"   (component: {', '.join(c)})" for c in comps
    )


def test_the_graph_is_read():
    graph = import_graph()
    assert "cuzk.board.board" in graph and "cuzk.top.render" in graph
    assert "cuzk.board.layout" in graph["cuzk.board.board"]
    # a deferred import (inside a function) is an edge of the full graph only
    assert "cuzk.top.runner" not in graph["cuzk.top.cli"]
    assert "cuzk.top.runner" in import_graph(deferred=True)["cuzk.top.cli"]


def test_no_import_time_cycles():
    graph = import_graph()
    assert not cycles(graph), _report(graph, cycles(graph))


def test_no_cycles_through_deferred_imports_but_the_known_ones():
    graph = import_graph(deferred=True)
    new = [c for c in cycles(graph) if frozenset(c) not in KNOWN_CYCLES]
    assert not new, _report(graph, new)
    gone = [sorted(c) for c in KNOWN_CYCLES if sorted(c) not in cycles(graph)]
    assert not gone, f"no longer cycles, remove them from KNOWN_CYCLES: {gone}"


# The floors of the house, lowest first: a package (or top-level module) imports only from
# floors below its own, deferred imports included. A new package gets a floor here.
FLOORS: list[set[str]] = [
    {"lean_json", "pages", "plain"},  # the standard library only (lean_json: its C parts)
    {"cuzk", "arith", "board", "client", "lazy", "wires"},  # lean_json below the client
    {"compiling", "formats"},  # arith beneath
    {"native"},  # the kernels compiled ahead of time: arith's builds beneath
    {"kernels", "witness", "top", "testing"},
    {"plonk"},  # the second proof system; groth16's commands dispatch to it
    {"groth16", "engine"},  # the prover; the engine, which loads a prover by name
    {"cluster", "prover"},  # the engine spread over machines; the daemon's prover (both systems)
    {"serve"},  # the daemon: engine or cluster, top's bytes for /status
    {"cli"},  # the `cuzk` command: its subcommands by name
    {"console"},  # its entry point (the thin paths first, then cli)
]


def room(module: str) -> str:
    """The package (or top-level module) a module belongs to: cuzk.serve.api -> serve."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def floor_of(name: str) -> int:
    for i, names in enumerate(FLOORS):
        if name in names:
            return i
    raise KeyError(name)


def test_every_room_has_a_floor():
    rooms = {room(m) for m in modules()}
    placed = set().union(*FLOORS)
    assert rooms - placed == set(), "give these a floor in FLOORS"
    assert placed - rooms == set(), "no longer in the package: remove from FLOORS"


def test_imports_run_down_the_floors():
    """No import, deferred or not, from a room to one on its own floor or above."""
    graph = import_graph(deferred=True)
    up = sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        if room(a) != room(b) and floor_of(room(a)) <= floor_of(room(b))
    )
    assert not up, "imports that do not run down the floors:\n  " + "\n  ".join(up)


def test_cycle_finder_finds_cycles():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(g) == [["a", "b", "c"]]
    assert a_path(g, ["a", "b", "c"]) == ["a", "b", "c", "a"]
