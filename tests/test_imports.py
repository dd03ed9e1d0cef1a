"""numfn's layers (LAYERS, the one list of them) and its import graph, imports inside functions included (they
only hide a cycle): every import points down the layers, no import cycle, no private name imported across modules,
and the environment is read in one place. `python tests/test_imports.py` prints the whole graph, one module a
line, with every upward import, cycle and private import."""
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
    """({module: the numfn modules it imports}, private names it imports or reads from a module). An import of a
    name from a package counts as an edge to the package (its __init__ defines the name) unless the name is a
    submodule; a module's parent packages are not edges (Python initializes them first, but they define nothing the
    module uses)."""
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
        aliases: dict[str, str] = {}   # names bound to numfn modules: a private attribute of one is private too
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [owner(a.name) for a in node.names if a.name.split(".")[0] == "numfn"]
                aliases.update((a.asname, a.name) for a in node.names if a.asname and a.name in mods)
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
                    if full in mods: aliases[a.asname or a.name] = full
                    if a.name.startswith("_") and not a.name.startswith("__") and full not in mods:
                        private.append(f"{module} imports {a.name} from {base}")
            else:
                continue
            graph[module].update(t for t in targets if t and t != module)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                private.append(f"{module} uses {node.attr} of {aliases[node.value.id]}")
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


# numfn's layers, lowest first: every import (inside functions too) points down this list, to a module listed
# before the importing one. An entry is a module, or a package standing for all its modules (the modules inside it
# may import each other in any order without a cycle). Within a layer the order of its modules is the order listed.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("numfn.version", "numfn.config", "numfn.locks", "numfn.errors", "numfn.dtype", "numfn.pytree",
              "numfn.debug", "numfn.progress", "numfn.args")),
    ("ir", ("numfn.ir.walk", "numfn.ir.primitives", "numfn.ir.extern", "numfn.ir.uop", "numfn.ir.symbolic",
            "numfn.ir.batching", "numfn.ir")),
    ("runtime", ("numfn.runtime",)),
    ("compiler", ("numfn.codegen", "numfn.renderer", "numfn.beam.search", "numfn.beam.measure", "numfn.beam.store",
                  "numfn.beam.tuner", "numfn.beam", "numfn.schedule", "numfn.extern")),
    # the tracer: `tensor` is a closed core; the modules above it register what they add (tensor_method: indexing
    # and ndarray methods; NUMPY_IMPLEMENTATIONS and numpy_function: numfn.numpy; Links: branch views) or override
    # it (DynTensor, arrays of run-time length, which also fill subscript.RunTimeLength)
    ("trace", ("numfn.trace.record", "numfn.trace.pyscalar", "numfn.trace.complex_reductions",
               "numfn.trace.unbound", "numfn.trace.known", "numfn.trace.value_sizes", "numfn.trace.branch_layout",
               "numfn.trace.tensor", "numfn.trace.shape_methods",
               "numfn.trace.attributes",
               "numfn.trace.reduction_methods", "numfn.trace.pymath", "numfn.trace.numpy_protocol",
               "numfn.trace.subscript",
               "numfn.trace.dynamic", "numfn.trace.window_movement", "numfn.trace.shrinking", "numfn.trace.aliasing",
               "numfn.trace.branch_views",
               "numfn.trace.hoisted_checks", "numfn.trace.loop_links", "numfn.trace.control",
               "numfn.trace.statements", "numfn.trace.expressions", "numfn.trace.convert_expressions",
               "numfn.trace.convert", "numfn.trace")),
    # numfn.numpy: its families over the shared helpers; a family calls a family above it through
    # numfn.numpy._core.implementation (what the package registers), never by importing it
    ("numpy", ("numfn.numpy._typing", "numfn.numpy._core", "numfn.numpy.creation", "numfn.numpy.ufuncs",
               "numfn.numpy.ufunc_functions",
               "numfn.numpy.manipulation", "numfn.numpy.reductions", "numfn.numpy.products",
               "numfn.numpy.sorting", "numfn.numpy.statistics", "numfn.numpy.indexing", "numfn.numpy.extras",
               "numfn.numpy.signal", "numfn.numpy.linalg_small", "numfn.numpy.linalg_lapack", "numfn.numpy.linalg_eig",
               "numfn.numpy.linalg", "numfn.numpy.fft", "numfn.numpy.stride_tricks", "numfn.numpy.dtypes",
               "numfn.numpy.functional")),
    # numfn.random's keys are built from numfn.numpy's families; numfn.numpy.random (np.random while tracing:
    # Generators as keys) draws from them, and the numfn.numpy namespace gathers it with the families
    ("random", ("numfn.random", "numfn.numpy.random", "numfn.numpy")),
    ("pipeline", ("numfn.pickled", "numfn.probes", "numfn.signature", "numfn.value_specialization", "numfn.interpose",
                  "numfn.program_build", "numfn.fast_paths", "numfn.function", "numfn.transforms", "numfn.cache",
                  "numfn.export",
                  "numfn.autodiff.rules", "numfn.autodiff.jvp", "numfn.autodiff.transpose",
                  "numfn.autodiff.reverse_loops", "numfn.autodiff.custom", "numfn.autodiff.loops",
                  "numfn.autodiff.linalg_rules",
                  "numfn.autodiff.api", "numfn.autodiff.check", "numfn.autodiff", "numfn")),
    ("tools", ("numfn.tools", "numfn.__main__")),
)

# Imports that break the rules on purpose, each with its reason: none today. Nothing else may import upward.
KNOWN_UPWARD: set[tuple[str, str]] = set()
KNOWN_CYCLES: list[list[str]] = []
KNOWN_PRIVATE: set[str] = set()


def rank(module: str) -> tuple[int, str]:
    """(position of the module's entry in LAYERS, the entry): the module itself if listed, else its innermost
    listed package; KeyError for a module with no place."""
    entries = [e for _, layer in LAYERS for e in layer]
    name = module
    while name:
        if name in entries: return entries.index(name), name
        name = name.rpartition(".")[0]
        if name == "numfn": break   # the package numfn is its __init__ only
    raise KeyError(f"{module} has no place in LAYERS")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """The imports that do not point down LAYERS (within one package entry, only cycles are wrong)."""
    out = []
    for module, targets in graph.items():
        for target in targets:
            mine, theirs = rank(module)[0], rank(target)[0]
            if theirs > mine:
                out.append(f"{module} imports {target}")
    return sorted(out)


def _lower(module: str) -> bool:
    return rank(module)[0] < rank("numfn.codegen")[0]


def test_every_module_has_a_place_in_the_layers():
    entries = [e for _, layer in LAYERS for e in layer]
    assert len(entries) == len(set(entries))
    for module in modules(): rank(module)
    assert [e for e in entries if not any(m == e or m.startswith(e + ".") for m in modules())] == []


def test_imports_point_down_the_layers():
    graph, _ = import_graph()
    assert [u for u in upward_imports(graph) if tuple(u.split(" imports ")) not in KNOWN_UPWARD] == []


def test_no_import_cycles():
    graph, _ = import_graph()
    assert [c for c in cycles(graph) if c not in KNOWN_CYCLES] == []


def test_no_private_names_imported_across_modules():
    _, private = import_graph()
    assert [p for p in private if p not in KNOWN_PRIVATE] == []


def test_the_layer_check_finds_upward_imports():
    assert upward_imports({"numfn.dtype": {"numfn.trace.tensor"}, "numfn.trace.tensor": {"numfn.dtype"}}) == \
        ["numfn.dtype imports numfn.trace.tensor"]
    assert upward_imports({"numfn.runtime.elf": {"numfn.runtime.clang"}}) == []   # inside a package entry


def test_lower_layers_import_only_lower_layers():
    graph, _ = import_graph()
    upward = {m: sorted(t for t in targets if not _lower(t)) for m, targets in graph.items() if _lower(m)}
    assert {m: t for m, t in upward.items() if t} == {}
    assert not [c for c in cycles(graph) if any(_lower(m) for m in c)]


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


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
    upward = upward_imports(graph)
    print(f"\nupward imports: {upward or 'none'}")
    print(f"cycles: {cycles(graph) or 'none'}; private imports across modules: {private or 'none'}")
    sys.exit(1 if cycles(graph) or private or upward else 0)
