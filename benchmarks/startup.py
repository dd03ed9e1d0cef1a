"""Start-up times of numfn, each measured in fresh processes:

  cold    first call of a ~40-operation function (quaternion rotation) with an empty disk cache: trace + compile
  warm    first call of the same function in a new process whose disk cache holds it
  import  `import numfn` beyond NumPy's own import, in the cold and in the warm process (it compiles nothing: the
          native extensions are built with the package)

Run: python benchmarks/startup.py [--backend llvm|c] [--repeat N] [--no-extensions]
(--no-extensions simulates an install without a C compiler: NUMFN_NO_NATIVE_EXT=1 NUMFN_NO_DISPATCH_EXT=1; the
interpreter running this script is the one measured, so a venv where numfn was built without a compiler measures
that case for real.)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import numfn
t2 = time.perf_counter()

from numfn.tools.demo import quat_rotate   # after t2: import numfn is measured alone

f = numfn.jit(quat_rotate, backend=sys.argv[1])
q, v = np.array([0.9, 0.1, 0.2, 0.3]), np.array([1.0, 2.0, 3.0])
t3 = time.perf_counter()
r = f(q, v)
t4 = time.perf_counter()
assert np.allclose(r, quat_rotate(q, v))
print(json.dumps({"numpy_import": t1 - t0, "numfn_import": t2 - t1, "first_call": t4 - t3}))
'''


def run_child(backend: str, cache_dir: str, extra_env: dict) -> dict:
    env = dict(os.environ, NUMFN_CACHE_DIR=cache_dir, **extra_env)
    env.pop("NUMFN_DISABLE_CACHE", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)   # measure an installed package, which has its bytecode
    out = subprocess.run([sys.executable, "-c", CHILD, backend], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="llvm", choices=["llvm", "c"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-extensions", action="store_true", help="simulate an install without a C compiler")
    args = ap.parse_args()
    extra = {"NUMFN_NO_NATIVE_EXT": "1", "NUMFN_NO_DISPATCH_EXT": "1"} if args.no_extensions else {}
    cold, warm, imp_cold, imp_warm = [], [], [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as cache_dir:
            os.chmod(cache_dir, 0o700)
            c = run_child(args.backend, cache_dir, extra)
            w = run_child(args.backend, cache_dir, extra)
            cold.append(c["first_call"])
            warm.append(w["first_call"])
            imp_cold.append(c["numfn_import"])
            imp_warm.append(w["numfn_import"])
    ms = lambda xs: f"median {statistics.median(xs) * 1e3:7.2f} ms  (min {min(xs) * 1e3:.2f}, max {max(xs) * 1e3:.2f})"
    print(f"backend {args.backend}, {args.repeat} fresh-process runs each{' (no extensions)' if extra else ''}")
    print(f"  cold first call (trace + compile): {ms(cold)}")
    print(f"  warm first call (disk cache):      {ms(warm)}")
    print(f"  import numfn (after numpy), cold:  {ms(imp_cold)}")
    print(f"  import numfn (after numpy), warm:  {ms(imp_warm)}")


if __name__ == "__main__":
    main()
