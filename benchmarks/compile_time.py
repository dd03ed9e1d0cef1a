"""First-call (compile) time of the programs in benchmarks/compile_programs.py: each program is run in a fresh
process with an empty disk cache (cold), then in another process with the cache it left (warm), and the stages of
the cold compile are read from numfn's progress report. Results are checked against NumPy.

    python benchmarks/compile_time.py                     # every program: a markdown table
    python benchmarks/compile_time.py -k conv --timeout 60
    python benchmarks/compile_time.py --peers /path/to/venv/bin/python   # also JAX's and Numba's first calls

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

_STAGES = re.compile(r"numfn: compiled .* in [\d.]+ m?s \((.*)\)")


def run(python: str, name: str, mode: str, cache: str, timeout: float) -> dict | None:
    env = dict(os.environ, NUMFN_CACHE_DIR=cache, NUMFN_PROGRESS="1")
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", default="", help="only programs whose name contains this")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    ap.add_argument("--peers", default="", help="a Python with jax and numba installed")
    opts = ap.parse_args()
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
