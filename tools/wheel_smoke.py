"""Smoke test of an installed numfn (tools/build_wheel.sh runs it from a fresh environment without a compiler).

Checks that numfn is imported from outside a checkout, that both C extensions loaded (no ExtensionWarning), that
a jitted function matches NumPy, prints the call overhead of a registered call and of NumPy on the same
expression, and runs a parallel kernel with 1 and 2 threads (same result). Exits non-zero on any failure.
"""
import os
import shutil
import sys
import time
import warnings

import numpy as np


def main() -> int:
    warnings.simplefilter("error")   # an ExtensionWarning (an extension missing) fails the smoke test
    import numfn
    from numfn.runtime import extensions
    where = os.path.dirname(numfn.__file__)
    print(f"numfn {numfn.__version__} from {where}")
    assert "site-packages" in where, "numfn was not imported from the installed wheel"
    assert extensions.problems() == [], extensions.problems()
    assert shutil.which("cc") is None and shutil.which("gcc") is None and shutil.which("clang") is None, \
        "a C compiler is on PATH: the test must show the wheel needs none"

    @numfn.jit
    def axpb(x):
        return x * 2.0 + 1.0

    x = np.arange(3.0)
    np.testing.assert_array_equal(axpb(x), x * 2.0 + 1.0)
    n = 20000
    best = {}
    for name, fn in (("numfn", axpb), ("numpy", lambda v: v * 2.0 + 1.0)):
        times = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(n): fn(x)
            times.append((time.perf_counter() - t) / n)
        best[name] = min(times)
    print(f"call overhead: numfn {best['numfn'] * 1e9:.0f} ns, numpy {best['numpy'] * 1e9:.0f} ns "
          "(x * 2.0 + 1.0 on float64[3], best of 5)")
    assert best["numfn"] < 5e-6, "a registered call should take well under 5 us: the fast path is not in use"

    @numfn.jit
    def heavy(a):
        return np.sqrt(a * a + 1.0).sum(axis=1)

    a = np.random.default_rng(0).standard_normal((2000, 2000))
    results = {}
    for threads in (1, 2):
        numfn.set_num_threads(threads)
        heavy(a)
        t = time.perf_counter()
        results[threads] = heavy(a)
        print(f"threads={numfn.set_num_threads(threads)}: {(time.perf_counter() - t) * 1e3:.1f} ms")
    np.testing.assert_allclose(results[1], np.sqrt(a * a + 1.0).sum(axis=1), rtol=1e-12)
    np.testing.assert_array_equal(results[1], results[2])
    print("smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
