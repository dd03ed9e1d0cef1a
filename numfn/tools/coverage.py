"""The NumPy coverage page (docs/numpy-coverage.md), generated from numfn's code.

    python -m numfn.tools.coverage            rewrite docs/numpy-coverage.md in this checkout
    python -m numfn.tools.coverage --check    exit 1 if the committed page differs from what the code gives
    python -m numfn.tools.coverage --stdout   print the page

Every public name of NumPy's main namespace, np.linalg, np.fft and np.random, and every public ndarray attribute,
is listed with whether numfn supports it: numfn.numpy (or its submodule) defines it, and, for functions, np.NAME on
a traced array dispatches to it. The parameters numfn takes come from its implementation's signature, less the
keywords it refuses with numfn.args.refuse (or with "the NAME= argument of ..." errors); NumPy's own come from
NumPy's signatures. An unsupported name shows the suggestion numfn's error gives for it (numfn.errors.SUGGESTIONS).
"""
from __future__ import annotations

import argparse
import ast
import functools
import inspect
import os
import re
import sys
import textwrap
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

PAGE = os.path.join("docs", "numpy-coverage.md")
COMMAND = "python -m numfn.tools.coverage"

# NumPy names whose numfn counterpart has another name
COUNTERPARTS = {("numpy.random", "Generator"): "KeyedGenerator"}


@dataclass(frozen=True)
class Entry:
    """One NumPy name: its kind, numfn's implementation (None if unsupported) and what the page says of it."""
    name: str
    kind: str                 # function, ufunc, type, constant
    supported: bool
    parameters: tuple[str, ...] = ()      # what numfn's implementation takes (names; * and ** forms marked)
    lacks: tuple[str, ...] = ()           # NumPy's keyword parameters numfn does not take
    note: str = ""


def _kind(obj: Any) -> str:
    if isinstance(obj, np.ufunc): return "ufunc"
    if isinstance(obj, type): return "type"
    if callable(obj): return "function"
    return "constant"


def _public_names(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    return sorted(n for n in names if not n.startswith("_") and not isinstance(getattr(module, n, None),
                                                                                 types.ModuleType))


def _signature(obj: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def _source(obj: Any) -> str:
    """The source of a function, or of the class of a callable object (a numfn ufunc)."""
    obj = inspect.unwrap(obj) if isinstance(obj, types.FunctionType) else obj   # (numfn.trace.dynamic.guard's)
    target = obj if isinstance(obj, (types.FunctionType, types.MethodType, type)) else type(obj)
    try:
        return textwrap.dedent(inspect.getsource(target))
    except (OSError, TypeError):
        return ""


_REFUSED_MESSAGE = re.compile(r"the (\w+)= argument of [\w.{}\[\]]+[\"']")


def refused_keywords(obj: Any, depth: int = 3) -> set[str]:
    """Keywords the implementation takes but refuses (unless left at their default): those passed to
    numfn.args.refuse, those named by an unconditional "the NAME= argument of FUNCTION" error, and those it passes
    on, as they are, to a numfn function or Tensor method that refuses them (`depth` calls deep)."""
    try:
        return set(_refused_keywords(obj, depth))
    except TypeError:   # unhashable: not memoized
        return set(_refused_keywords.__wrapped__(obj, depth))


@functools.cache
def _refused_keywords(obj: Any, depth: int) -> frozenset[str]:
    source = _source(obj)
    if not source: return frozenset()
    refused = set(_REFUSED_MESSAGE.findall(source))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset(refused)
    own = _keyword_names(_signature(obj))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call): continue
        if getattr(node.func, "id", getattr(node.func, "attr", None)) == "refuse":
            refused.update(k.arg for k in node.keywords if k.arg)
        elif depth > 0:
            callee, skip = _callee(obj, node.func)
            if callee is not None:
                passed = _passed_through(node, callee, skip, own)
                if passed: refused |= {passed[k] for k in refused_keywords(callee, depth - 1) if k in passed}
    return frozenset(refused)


def _callee(obj: Any, func: ast.expr) -> tuple[Any, int]:
    """The numfn function (or Tensor method) a call in `obj`'s source calls, and how many of its leading parameters
    the call does not pass (1 for a method's self); (None, 0) for anything else."""
    from numfn.trace.tensor import Tensor
    if isinstance(func, ast.Name):
        target = getattr(inspect.unwrap(obj), "__globals__", {}).get(func.id)
        if isinstance(target, types.FunctionType) and target.__module__.startswith("numfn.numpy"): return target, 0
    elif isinstance(func, ast.Attribute):
        target = inspect.getattr_static(Tensor, func.attr, None)
        receiver = getattr(func.value, "id", None)   # np.sum(...) calls NumPy, not a method
        # nor does a call through any other module (builtins.max(n, minlength) is Python's max, not Tensor.max)
        module = isinstance(getattr(inspect.unwrap(obj), "__globals__", {}).get(receiver), types.ModuleType)
        if isinstance(target, types.FunctionType) and receiver not in ("np", "numpy", "_np") and not module:
            return target, 1
    return None, 0


def _passed_through(call: ast.Call, callee: Any, skip: int, own: set[str]) -> dict[str, str]:
    """{callee's parameter: our parameter} for the arguments the call passes on unchanged (a bare name of ours)."""
    sig = _signature(callee)
    if sig is None: return {}
    params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][skip:]
    out = {}
    for p, arg in zip(params, call.args):
        if isinstance(arg, ast.Name) and arg.id in own: out[p.name] = arg.id
    for k in call.keywords:
        if k.arg and isinstance(k.value, ast.Name) and k.value.id in own: out[k.arg] = k.value.id
    return out


def _parameter_label(p: inspect.Parameter) -> str:
    if p.kind is p.VAR_POSITIONAL: return "*" + p.name
    if p.kind is p.VAR_KEYWORD: return "**" + p.name
    return p.name


def _keyword_names(sig: inspect.Signature | None) -> set[str]:
    if sig is None: return set()
    return {p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def describe(name: str, numpy_obj: Any, ours: Any, suggestion: str = "") -> Entry:
    """The entry of NumPy's `numpy_obj` (called `name`), implemented by `ours` (None when unsupported)."""
    kind = _kind(numpy_obj)
    if ours is None: return Entry(name, kind, False, note=suggestion)
    if kind in ("type", "constant"):
        if isinstance(ours, type) and ours.__name__ != name and ours.__module__.startswith("numfn"):
            # a class of numfn's standing for NumPy's (a KeyedGenerator for a Generator): what it offers is its methods
            methods = sorted(n for n, v in vars(ours).items() if not n.startswith("_") and callable(v))
            return Entry(name, kind, True, note="methods: " + _code_list(methods))
        return Entry(name, kind, True)
    sig = _signature(ours)
    # an `out=` the implementation refuses is taken all the same: numfn.trace.numpy_protocol computes the result
    # without it and writes it there, as NumPy's out= does
    refused = refused_keywords(ours) - {"out"}
    params = tuple(_parameter_label(p) for p in sig.parameters.values() if p.name not in refused) if sig else ()
    takes_any = sig is not None and any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    accepted = _keyword_names(sig) - refused
    lacks = () if takes_any else _ordered(numpy_obj, _keyword_names(_signature(numpy_obj)) - accepted)
    # the methods of a binary ufunc (a unary one's raise, in NumPy too); `at` works for some ufuncs only (the
    # section's introduction says which), reduceat for none
    methods = [m for m in ("reduce", "accumulate", "outer") if callable(getattr(ours, m, None))]
    note = f"methods: {_code_list(methods)}" if kind == "ufunc" and methods and getattr(ours, "nin", 2) == 2 else ""
    return Entry(name, kind, True, params, lacks, note)


def _ordered(numpy_obj: Any, names: set[str]) -> tuple[str, ...]:
    """`names` in the order of NumPy's signature."""
    sig = _signature(numpy_obj)
    order = list(sig.parameters) if sig else []
    return tuple(sorted(names, key=lambda n: order.index(n) if n in order else len(order)))


# ---- the namespaces ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Section:
    title: str
    numpy_name: str            # numpy, numpy.linalg, ...
    entries: tuple[Entry, ...]
    intro: str = ""

    @property
    def supported(self) -> int:
        return sum(e.supported for e in self.entries)


def _submodule(name: str) -> types.ModuleType | None:
    """numfn.numpy's counterpart of a NumPy submodule (numfn.numpy.linalg, ...), if numfn has one."""
    import importlib
    try:
        return importlib.import_module(f"numfn.numpy.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"numfn.numpy.{name}": raise
        return None


def _implementation(numpy_module: types.ModuleType, numpy_name: str, ours_module: types.ModuleType | None,
                    name: str) -> Any:
    """numfn's implementation of NumPy's `numpy_name`.`name`, or None."""
    from numfn.trace.tensor import NUMPY_IMPLEMENTATIONS
    obj = getattr(numpy_module, name)
    try:
        impl = NUMPY_IMPLEMENTATIONS.get(obj)
    except TypeError:   # unhashable
        impl = None
    if impl is not None: return impl
    if ours_module is None: return None
    exported = set(getattr(ours_module, "__all__", dir(ours_module)))
    counterpart = COUNTERPARTS.get((numpy_name, name), name)
    if counterpart not in exported: return None
    return getattr(ours_module, counterpart, None)


def _suggestion(qualified: str) -> str:
    from numfn.errors import suggestion
    return suggestion(qualified)


def namespace_entries(numpy_module: types.ModuleType, numpy_name: str,
                      ours_module: types.ModuleType | None) -> list[Entry]:
    out = []
    for name in _public_names(numpy_module):
        obj = getattr(numpy_module, name)
        impl = _implementation(numpy_module, numpy_name, ours_module, name)
        out.append(describe(name, obj, impl, "" if impl is not None else _suggestion(f"{numpy_name}.{name}")))
    return out


def ndarray_entries() -> list[Entry]:
    """ndarray's public methods and attributes against Tensor's."""
    from numfn.trace.tensor import Tensor
    out = []
    for name in sorted(n for n in dir(np.ndarray) if not n.startswith("_")):
        ours = inspect.getattr_static(Tensor, name, None)
        theirs = inspect.getattr_static(np.ndarray, name)
        kind = "attribute" if isinstance(theirs, (property, types.GetSetDescriptorType,
                                                  types.MemberDescriptorType)) else "method"
        if ours is None:
            out.append(Entry(name, kind, False, note=_suggestion(f"ndarray.{name}")))
            continue
        fn = ours.__func__ if isinstance(ours, (staticmethod, classmethod)) else ours
        if kind == "attribute" or not callable(fn):
            out.append(Entry(name, kind, True))
            continue
        if "._concrete(" in _source(fn):   # it exists to say why it cannot work: it needs the values
            out.append(Entry(name, kind, False, note="needs the values, which are unknown while tracing "
                                                      "(raises numfn.TracerConversionError)"))
            continue
        sig = _signature(fn)
        refused = refused_keywords(fn)
        params = list(sig.parameters.values())[1:] if sig else []   # the first is the array (self)
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
        accepted = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - refused
        lacks = () if takes_any else _ordered(theirs, _keyword_names(_signature(theirs)) - accepted)
        out.append(Entry(name, kind, True, tuple(_parameter_label(p) for p in params if p.name not in refused),
                         lacks))
    return out


def sections() -> list[Section]:
    """The page's sections, from the code as it is imported."""
    import numfn.numpy as fnp
    main = namespace_entries(np, "numpy", fnp)
    by_kind: dict[str, list[Entry]] = {}
    for e in main: by_kind.setdefault(e.kind, []).append(e)
    out = [
        Section("Functions", "numpy", tuple(by_kind.get("function", ())),
                "The functions of NumPy's main namespace."),
        Section("Universal functions", "numpy", tuple(by_kind.get("ufunc", ())),
                "NumPy's ufuncs: elementwise with broadcasting. The methods of binary ufuncs (`np.add.reduce`, "
                "`np.maximum.accumulate`, `np.subtract.outer`) are listed where numfn has them; `ufunc.at` works "
                "for the ufuncs one machine operation computes (add, subtract, multiply, divide, maximum, minimum, "
                "...), `ufunc.reduceat` for none yet."),
        Section("Types and dtype helpers", "numpy", tuple(by_kind.get("type", ())),
                "Scalar types, dtype classes and helpers. Inside a compiled function NumPy's own types work "
                "wherever a dtype is expected (`x.astype(np.float32)`); a ✓ means numfn.numpy also defines the "
                "name."),
        Section("Constants", "numpy", tuple(by_kind.get("constant", ())),
                "NumPy's constants are Python values, usable in traced code as they are; a ✓ means numfn.numpy "
                "also defines the name."),
    ]
    for sub in ("linalg", "fft", "random"):
        numpy_module = getattr(np, sub)
        out.append(Section(f"numpy.{sub}", f"numpy.{sub}",
                           tuple(namespace_entries(numpy_module, f"numpy.{sub}", _submodule(sub)))))
    out.append(Section("ndarray methods and attributes", "ndarray", tuple(ndarray_entries()),
                       "What a traced array (`numfn.Tensor`) offers of NumPy's ndarray."))
    return out


# ---- the page ------------------------------------------------------------------------------------------------------

def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code_list(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _anchor(title: str) -> str:
    """The id mkdocs gives a heading (its toc extension's default slugify)."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", title).strip().lower())


def render(secs: list[Section] | None = None) -> str:
    """The Markdown of the coverage page."""
    import numfn
    secs = sections() if secs is None else secs
    numpy_version = ".".join(np.__version__.split(".")[:2])
    lines = [
        "# NumPy coverage",
        "",
        f"<!-- generated by `{COMMAND}` from numfn's code: edit the code, then run it again; CI fails when this page "
        "is stale -->",
        "",
        f"What of NumPy {numpy_version} numfn {numfn.__version__} compiles. A ✓ means `numfn.numpy.NAME` exists and, "
        "for functions, that `np.NAME` called on a traced array inside a compiled function runs it, with NumPy's "
        "results, dtypes, shapes and errors. **Parameters** are those numfn's implementation takes (keywords it "
        "refuses unless left at their default are left out); **NumPy's parameters numfn lacks** are the keyword "
        "parameters of NumPy's signature that numfn does not take. A name without a ✓ raises `numfn.NumfnError` "
        "naming it and your line; where there is a better spelling, the error and this page suggest it.",
        "",
        "Random numbers made inside compiled functions come from [`numfn.random`](api.md#numfn.random) (keys passed "
        "as arguments) or from a `numpy.random.Generator` passed as an argument; see the "
        "[user guide](user-guide.md#random-numbers).",
        "",
        "| section | supported | names |",
        "|---|---:|---:|",
    ]
    lines += [f"| [{s.title}](#{_anchor(s.title)}) | {s.supported} | {len(s.entries)} |" for s in secs]
    for s in secs:
        lines += ["", f"## {s.title}", ""]
        if s.intro: lines += [s.intro, ""]
        prefix = "" if s.numpy_name in ("numpy", "ndarray") else s.numpy_name.removeprefix("numpy.") + "."
        if s.numpy_name == "ndarray": prefix = "ndarray."
        lines += ["| name | numfn | parameters | NumPy's parameters numfn lacks, notes |", "|---|:-:|---|---|"]
        for e in s.entries:
            notes = [f"lacks {_code_list(e.lacks)}"] if e.lacks else []
            if e.note: notes.append(e.note)
            lines.append(f"| `{prefix}{e.name}` | {'✓' if e.supported else '—'} | {_cell(_code_list(e.parameters))} "
                         f"| {_cell('; '.join(notes))} |")
    return "\n".join(lines) + "\n"


def stale_suggestions(secs: list[Section]) -> list[str]:
    """The keys of numfn.errors.SUGGESTIONS that name something the page lists as supported (dead entries)."""
    from numfn.errors import SUGGESTIONS
    supported = set()
    for s in secs:
        prefix = "ndarray." if s.numpy_name == "ndarray" else s.numpy_name + "."
        supported |= {prefix + e.name for e in s.entries if e.supported}
    return sorted(k for k in SUGGESTIONS if k in supported)


def repository_page() -> str:
    """docs/numpy-coverage.md of the checkout numfn is imported from."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), PAGE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description="Generate the NumPy coverage page from numfn's code.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="exit 1 if the page differs from what the code gives")
    group.add_argument("--stdout", action="store_true", help="print the page instead of writing it")
    parser.add_argument("--output", default=None, help=f"the page's path (default: {PAGE} of this checkout)")
    args = parser.parse_args(argv)
    secs = sections()
    page = render(secs)
    stale = stale_suggestions(secs)
    if stale:
        print(f"numfn supports these now; remove their entries from numfn.errors.SUGGESTIONS: {', '.join(stale)}",
              file=sys.stderr)
    if args.stdout:
        sys.stdout.write(page)
        return 0
    path = args.output or repository_page()
    if not os.path.isdir(os.path.dirname(path)):
        print(f"{os.path.dirname(path)} does not exist: numfn is not imported from a checkout; pass --output PATH "
              "or --stdout", file=sys.stderr)
        return 2
    if args.check:
        try:
            with open(path, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current == page:
            print(f"{path} is up to date")
            return 0
        print(f"{path} is stale: run `{COMMAND}` and commit the result", file=sys.stderr)
        return 1
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
