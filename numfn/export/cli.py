"""`python -m numfn export module:function --args "float32[8,3], float32[3]" -o out/`: numfn.export from the
command line. The function is `module:function` (an importable module, or a file path ending in .py), `--args`
its array arguments' types (`float32[8,3]`, `int64[]` or `int64` for a 0-d array), `--static NAME=VALUE` its static
arguments (a Python literal, passed by keyword), `--name` the C name (default: the function's)."""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import os
import re
import sys

import numpy as np

from numfn.errors import NumfnError

USAGE = __doc__


def parse_args_spec(text: str) -> list[np.ndarray]:
    """Example arrays (zeros) for a list of types such as "float32[8,3], float32[3], int64"."""
    out = []
    for item in re.findall(r"[A-Za-z_][A-Za-z0-9_]*\s*(?:\[[^\]]*\])?", text):
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[([^\]]*)\])?", item.strip())
        assert m is not None
        try:
            dt = np.dtype(m.group(1))
        except TypeError:
            raise ValueError(f"--args: {m.group(1)!r} is not a NumPy dtype (e.g. float32, int64, complex64)") from None
        dims = [d.strip() for d in (m.group(2) or "").split(",") if d.strip()]
        if not all(d.isdigit() for d in dims):
            raise ValueError(f"--args: {item.strip()!r}: every dimension must be a number (export compiles for fixed "
                             "shapes)")
        out.append(np.zeros(tuple(int(d) for d in dims), dt))
    leftover = re.sub(r"[A-Za-z_][A-Za-z0-9_]*\s*(?:\[[^\]]*\])?", "", text).replace(",", "").strip()
    if leftover: raise ValueError(f"--args: cannot read {leftover!r} in {text!r} (write types as float32[8,3])")
    return out


def load_function(target: str):
    """The function `module:function` names (the module importable, or a path to a .py file)."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{target!r}: write the function as module:function (or path/to/file.py:function)")
    if module_name.endswith(".py"):
        spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(module_name))[0],
                                                      module_name)
        if spec is None or spec.loader is None or not os.path.exists(module_name):
            raise ValueError(f"{module_name}: no such file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module   # the tracer reads the function's source through its module
        spec.loader.exec_module(module)
    else:
        if "" not in sys.path and os.getcwd() not in sys.path: sys.path.insert(0, os.getcwd())
        module = importlib.import_module(module_name)
    fn = module
    for part in attr.split("."): fn = getattr(fn, part)
    return fn


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m numfn export", description=USAGE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("function", help="module:function or path/to/file.py:function")
    parser.add_argument("--args", default="", help='the array arguments\' types, e.g. "float32[8,3], float32[3]"')
    parser.add_argument("--static", action="append", default=[], metavar="NAME=VALUE",
                        help="a static argument, by keyword (a Python literal); repeatable")
    parser.add_argument("--name", help="the C function's name (default: the Python function's)")
    parser.add_argument("-o", "--output", default=".", help="the directory to write into (default: .)")
    parser.add_argument("--blas", choices=("portable", "system"), default="portable",
                        help="linear algebra as portable C (default) or calls of the system's CBLAS/LAPACKE")
    parser.add_argument("--threads", type=int, default=1,
                        help="POSIX threads for the parallel kernels (default 1: single-threaded)")
    ns = parser.parse_args(argv)
    try:
        from numfn.export import export
        fn = load_function(ns.function)
        args = parse_args_spec(ns.args)
        statics = {}
        for item in ns.static:
            key, eq, value = item.partition("=")
            if not eq or not key.isidentifier(): raise ValueError(f"--static {item!r}: write NAME=VALUE")
            statics[key] = ast.literal_eval(value)
        done = export(fn, *args, name=ns.name, dir=ns.output, static_argnames=tuple(statics), blas=ns.blas,
                      threads=ns.threads, **statics)
    except (ValueError, SyntaxError, ImportError, AttributeError, NumfnError, TypeError) as e:
        print(f"python -m numfn export: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(f"wrote {', '.join(done.files)}")
    for line in done.library.header.splitlines():   # the prototype
        if line.startswith("int "): print(f"  {line}")
    return 0
