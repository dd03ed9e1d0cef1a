"""numfn's import graph, imports inside functions included (they only hide a cycle): the runtime and the IR core
import nothing above them, import no private names across modules, and the environment is read in one place.
`python tests/test_imports.py` prints the whole graph, one module a line, with every cycle and private import."""
from __future__ import annotations

import ast
import functools
import os
import sys

import pytest

pytestmark = pytest.mark.nocompile   # the compile-free tier (tests/conftest.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def modules(root: str = ROOT) -> dict[str, str]:
    """{module name: file} for every module of the numfn package."""
    out = {}
    for dirpath, _, filenames in os.walk(os.path.join(root, "numfn")):
        for name in filenames:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                module = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                out[module.removesuffix(".__init__")] = path
    return out


@functools.cache   # parsed once for the tests below (the compile-free tier's time); callers do not change it
def import_graph(root: str = ROOT) -> tuple[dict[str, set[str]], list[str]]:
    """({module: the numfn modules it imports}, private imports). An import of a name from a package counts as an
    edge to the package (its __init__ defines the name) unless the name is a submodule; a module's parent packages
    are not edges (Python initializes them first, but they define nothing the module uses)."""
    mods = modules(root)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    private = []

    def owner(name: str) -> str | None:
        while name and name not in mods: name = name.rpartition(".")[0]
        return name or None

    for module, path in mods.items():
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [owner(a.name) for a in node.names if a.name.split(".")[0] == "numfn"]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                if base.split(".")[0] != "numfn": continue
                targets = []
                for a in node.names:
                    full = f"{base}.{a.name}"
                    targets.append(full if full in mods else owner(base))
                    if a.name.startswith("_") and not a.name.startswith("__") and full not in mods:
                        private.append(f"{module} imports {a.name} from {base}")
            else:
                continue
            graph[module].update(t for t in targets if t and t != module)
    return graph, private


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found = []
    for start in sorted(graph):
        if start in index: continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work: low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node: break
                if len(component) > 1: found.append(sorted(component))
    return found


# The layers below the compiler: they import only each other, so no import cycle can pass through them (and the
# runtime loads without the tracer or the compiler). The rest of numfn is checked by the same graph when this file
# runs as a script; cycles there are listed, and should go.
LOWER_LAYERS = ("numfn.config", "numfn.version", "numfn.debug", "numfn.errors", "numfn.dtype", "numfn.pytree",
                "numfn.ir.walk", "numfn.ir.uop", "numfn.ir.primitives", "numfn.runtime", "numfn.locks")


def _lower(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in LOWER_LAYERS)


def test_lower_layers_import_only_lower_layers():
    graph, _ = import_graph()
    upward = {m: sorted(t for t in targets if not _lower(t)) for m, targets in graph.items() if _lower(m)}
    assert {m: t for m, t in upward.items() if t} == {}
    assert not [c for c in cycles(graph) if any(_lower(m) for m in c)]


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_private_names_imported_from_lower_layers_or_into_them():
    _, private = import_graph()
    assert [p for p in private if _lower(p.split()[0]) or _lower(p.split()[-1])] == []


def test_leaf_modules():
    # what the runtime's lower layers may import: the thread count and the extensions' loader know nothing of the
    # dispatcher or the compiler, and the target description nothing of the compiler
    graph, _ = import_graph()
    assert graph["numfn.runtime.threads"] <= {"numfn.config", "numfn.runtime.extensions", "numfn.locks"}
    assert graph["numfn.runtime.extensions"] <= {"numfn.config"}
    assert graph["numfn.runtime.target"] <= {"numfn.version", "numfn.runtime.clang"}
    assert graph["numfn.config"] == set() and graph["numfn.version"] == set() and graph["numfn.locks"] == set()


def test_the_environment_is_read_in_numfn_config_only():
    # one place for environment variables, with one parser for switches
    readers = []
    for module, path in modules().items():
        if module == "numfn.config": continue
        with open(path, encoding="utf-8") as f:
            source = f.read()
        if "os.environ" in source or "getenv" in source: readers.append(module)
    assert readers == []


if __name__ == "__main__":
    graph, private = import_graph()
    width = max(map(len, graph))
    for module in sorted(graph):
        print(f"{module:<{width}}  -> {', '.join(sorted(graph[module])) or '(nothing in numfn)'}")
    print(f"\ncycles: {cycles(graph) or 'none'}; private imports across modules: {private or 'none'}")
    sys.exit(1 if cycles(graph) or private else 0)
