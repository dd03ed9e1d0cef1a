"""numfn's import graph: no cycles, counting imports inside functions too (they only hide a cycle), and no private
name imported from another module. `python tests/test_imports.py` prints the graph, one module a line."""
from __future__ import annotations

import ast
import os
import sys

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


# Cycles and private imports that came with work merged after the runtime's were removed (numfn.numpy's modules
# use each other's functions; numfn.random compiles its eager samplers with jit; interpose patches NumPy with
# numfn.numpy). Their owners should remove them; until then they are listed here so that nothing new joins them.
KNOWN_CYCLES = [
    {"numfn.numpy.creation", "numfn.numpy.manipulation", "numfn.numpy.products", "numfn.numpy.ufuncs"},
    {"numfn.function", "numfn.interpose", "numfn.numpy", "numfn.numpy.random", "numfn.random"},
]
KNOWN_PRIVATE_IMPORTS = {
    "numfn.tensor imports _UFUNC from numfn.symbolic",
    "numfn.random imports _where from numfn.numpy.creation",
    "numfn.numpy.manipulation imports _strong from numfn.numpy.creation",
    "numfn.numpy.manipulation imports _where from numfn.numpy.creation",
}


def test_no_import_cycles():
    graph, _ = import_graph()
    unknown = [c for c in cycles(graph) if set(c) not in KNOWN_CYCLES]
    assert unknown == []


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_private_names_imported_across_modules():
    _, private = import_graph()
    assert set(private) <= KNOWN_PRIVATE_IMPORTS


def test_leaf_modules():
    # what the runtime's lower layers may import: the thread count and the extensions' loader know nothing of the
    # dispatcher or the compiler, and the target description nothing of the compiler
    graph, _ = import_graph()
    assert graph["numfn.runtime.threads"] <= {"numfn.config", "numfn.runtime.extensions"}
    assert graph["numfn.runtime.extensions"] <= {"numfn.config"}
    assert graph["numfn.runtime.target"] <= {"numfn.version", "numfn.runtime.clang"}
    assert graph["numfn.config"] == set() and graph["numfn.version"] == set()


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
