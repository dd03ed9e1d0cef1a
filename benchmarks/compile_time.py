"""First-call (compile) time of the programs in benchmarks/compile_programs.py: each program is run in a fresh
process with an empty disk cache (cold), then in another process with the cache it left (warm), and the stages of
the cold compile are read from numfn's progress report. Results are checked against NumPy.

    python benchmarks/compile_time.py                     # every program: a markdown table
    python benchmarks/compile_time.py -k conv --timeout 60
    python benchmarks/compile_time.py --peers /path/to/venv/bin/python   # also JAX's and Numba's first calls
    python benchmarks/compile_time.py --docs              # the examples of docs/*.md and README.md instead

With --docs, each page's examples run in a fresh process (cold, then warm), and every function they compile is
reported: how many, the slowest first call and the median one.

Peers (JAX, Numba) run in a side environment given by --peers, never numfn's own: JAX gets the function under
jax.jit with jax.numpy as np where it accepts it, Numba under numba.njit; a program a peer refuses shows as '-'."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

_CHILD = r"""
import json, sys, time, os
sys.path.insert(0, {here!r})
import numpy as np
from compile_programs import PROGRAMS
fn, make = PROGRAMS[{name!r}]
args = make()
mode = {mode!r}
if mode == "numfn":
    import numfn, numfn.progress
    numfn.progress.THRESHOLD = 0.0   # the stages of every compile, however short
    f = numfn.jit(fn)
    t0 = time.perf_counter(); out = f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    first = time.perf_counter() - t0
    want = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    ok = all(np.allclose(o, w, rtol=1e-6, atol=1e-9) for o, w in zip(
        out if isinstance(out, tuple) else (out,), want if isinstance(want, tuple) else (want,)))
elif mode == "jax":
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    g = fn.__globals__; g["np"] = jnp
    f = jax.jit(fn)
    t0 = time.perf_counter(); out = jax.block_until_ready(f(*args)); first = time.perf_counter() - t0
    ok = True
else:
    import numba
    f = numba.njit(fn)
    t0 = time.perf_counter(); out = f(*args); first = time.perf_counter() - t0
    ok = True
print("RESULT " + json.dumps({{"first": first, "ok": bool(ok)}}))
"""

def _child_env(cache: str) -> dict:
    """A child's environment: its disk cache, progress reports on, and Python's bytecode cache allowed, as an
    installed package has it (under PYTHONDONTWRITEBYTECODE=1 every child compiled numfn's modules from source: 0.5
    s of every first call's process start, 0.15 s inside the first call's lazy imports)."""
    env = dict(os.environ, NUMFN_CACHE_DIR=cache, NUMFN_PROGRESS="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _compile_numfn() -> None:
    """numfn's modules compiled to bytecode once, before the children start (see _child_env)."""
    import compileall
    import importlib.util
    spec = importlib.util.find_spec("numfn")
    if spec is not None and spec.origin: compileall.compile_dir(os.path.dirname(spec.origin), quiet=1)


_STAGES = re.compile(r"numfn: compiled .* in [\d.]+ m?s \((.*)\)")


def run(python: str, name: str, mode: str, cache: str, timeout: float) -> dict | None:
    env = _child_env(cache)
    try:
        p = subprocess.run([python, "-c", _CHILD.format(here=HERE, name=name, mode=mode)], capture_output=True,
                           text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"first": None, "ok": False, "stages": f"> {timeout:.0f} s (stopped)"}
    found = [json.loads(line[7:]) for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    if not found: return None if mode != "numfn" else {"first": None, "ok": False,
                                                         "stages": (p.stderr.strip().splitlines() or ["?"])[-1][:80]}
    out = found[0]
    stages = _STAGES.findall(p.stderr)
    out["stages"] = stages[-1] if stages else ""
    return out


_DOCS_CHILD = r"""
import json, linecache, sys
import numfn.progress
numfn.progress.THRESHOLD = 0.0   # a summary line for every compilation
namespace = {"__name__": "__main__"}
for line, code in json.load(sys.stdin):
    name = f"{sys.argv[1]}:{line}"
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)   # the source, as in the reader's file
    exec(compile(code, name, "exec"), namespace)
"""
_COMPILED = re.compile(r"numfn: compiled (.*) in ([\d.]+) (m?s) \(")


def docs_page(page: str, cache: str, timeout: float) -> list[tuple[str, float]] | str:
    """(function, first-call seconds) of every compilation of one page's examples, or why it failed."""
    from numfn.tools.docs_examples import python_blocks
    root = os.path.dirname(HERE)
    with open(os.path.join(root, page)) as f:
        blocks = [(line, code) for line, code, skipped in python_blocks(f.read()) if not skipped]
    if not blocks: return []
    env = _child_env(cache)
    try:
        p = subprocess.run([sys.executable, "-c", _DOCS_CHILD, page], input=json.dumps(blocks), capture_output=True,
                           text=True, timeout=timeout, env=env, cwd=root)
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} s (stopped)"
    if p.returncode: return (p.stderr.strip().splitlines() or ["failed"])[-1][:80]
    return [(name, float(t) / (1e3 if unit == "ms" else 1)) for name, t, unit in _COMPILED.findall(p.stderr)]


def docs_table(timeout: float) -> None:
    from numfn.tools.docs_examples import pages
    print("| page | compilations | slowest first call (cold) | median (cold) | slowest (warm) |")
    print("|---|---|---|---|---|")
    for page in pages(os.path.dirname(HERE)):
        with tempfile.TemporaryDirectory() as cache:
            cold = docs_page(page, cache, timeout)
            warm = docs_page(page, cache, timeout) if isinstance(cold, list) else []
        if isinstance(cold, str):
            print(f"| {page} | {cold} | | | |", flush=True)
            continue
        if not cold: continue
        times = sorted(t for _, t in cold)
        slowest = max(cold, key=lambda c: c[1])
        warm_max = max((t for _, t in warm), default=0.0) if isinstance(warm, list) else 0.0
        print(f"| {page} | {len(cold)} | {slowest[1]:.2f} s (`{slowest[0][:40]}`) | {times[len(times) // 2]:.3f} s | "
              f"{warm_max:.3f} s |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", default="", help="only programs whose name contains this")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    ap.add_argument("--peers", default="", help="a Python with jax and numba installed")
    ap.add_argument("--docs", action="store_true", help="time the examples of the documentation instead")
    opts = ap.parse_args()
    _compile_numfn()
    if opts.docs: return docs_table(opts.timeout)
    sys.path.insert(0, HERE)
    from compile_programs import PROGRAMS
    print("| program | numfn cold | stages (cold) | numfn warm | JAX | Numba |")
    print("|---|---|---|---|---|---|")
    for name in PROGRAMS:
        if opts.k not in name: continue
        with tempfile.TemporaryDirectory() as cache:
            cold = run(sys.executable, name, "numfn", cache, opts.timeout)
            warm = run(sys.executable, name, "numfn", cache, opts.timeout) if cold and cold["first"] else None
        peers = [run(opts.peers, name, m, "", opts.timeout) if opts.peers else None for m in ("jax", "numba")]

        def fmt(r):
            if r is None or r.get("first") is None: return "-"
            return f"{r['first']:.2f} s" + ("" if r.get("ok", True) else " (WRONG)")
        print(f"| {name} | {fmt(cold)} | {cold['stages'] if cold else ''} | {fmt(warm)} | {fmt(peers[0])} | "
              f"{fmt(peers[1])} |", flush=True)


if __name__ == "__main__":
    main()
