"""The distance of numfn's elementwise math functions to NumPy's, in ulps: one table row per function and dtype.

    python benchmarks/ulp_table.py [--n 1048576] [--backend llvm] [names...]

Each function is evaluated on n points (default 2**20) per dtype: a dense grid over its interesting range,
random bit patterns of every exponent (both signs, denormals included), log-uniform magnitudes, and the special
values (+-0, the smallest denormal, the largest finite, +-inf, NaN); binary functions get pairs of these, with
every special combined with every other. The distance is measured on the line of float bit patterns (+0 == -0,
NaN == NaN; a NaN against a number, or a zero against a nonzero of the other sign, counts as inf), so the NaN, inf
and signed-zero behaviour must be NumPy's exactly. For the functions that round, two more columns give the error
of numfn and of NumPy against the exact result (NumPy's long double loop, 64-bit significand on x86), in ulps of
the result: where the distance to NumPy exceeds a few ulps, they show whose result is off. Not part of the test
run (tests/numpy/test_ufuncs.py checks the same functions on fewer points).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import numfn
import numfn.numpy as fnp

UNARY = {   # name: (float64 range, float32 range) of the dense grid
    "arcsin": (-1.0, 1.0), "arccos": (-1.0, 1.0), "arctan": (-10.0, 10.0), "sinh": (-30.0, 30.0),
    "cosh": (-30.0, 30.0), "arcsinh": (-10.0, 10.0), "arccosh": (1.0, 10.0), "arctanh": (-1.0, 1.0),
    "expm1": (-40.0, 40.0), "log1p": (-1.0, 4.0), "log10": (0.0, 1e4), "cbrt": (-10.0, 10.0),
    "reciprocal": (-10.0, 10.0), "rint": (-10.0, 10.0), "fix": (-10.0, 10.0), "fabs": (-10.0, 10.0),
    "sign": (-10.0, 10.0), "spacing": (-10.0, 10.0), "deg2rad": (-720.0, 720.0), "rad2deg": (-10.0, 10.0),
    "sinc": (-10.0, 10.0), "round": (-10.0, 10.0), "nan_to_num": (-10.0, 10.0),
    "frexp": (-10.0, 10.0), "modf": (-10.0, 10.0),
}
BINARY = {
    "arctan2": (-10.0, 10.0), "hypot": (-10.0, 10.0), "logaddexp": (-50.0, 50.0), "logaddexp2": (-50.0, 50.0),
    "copysign": (-10.0, 10.0), "nextafter": (-10.0, 10.0), "heaviside": (-2.0, 2.0), "fmod": (-10.0, 10.0),
    "fmax": (-10.0, 10.0), "fmin": (-10.0, 10.0), "float_power": (0.0, 10.0), "ldexp": (-10.0, 10.0),
}
DTYPES = (np.float32, np.float64)


def line(a: np.ndarray) -> np.ndarray:
    """Float bit patterns mapped to integers in the order of the values, +0 and -0 both to 0."""
    ut = np.uint64 if a.dtype == np.float64 else np.uint32
    top = ut(a.dtype.itemsize * 8 - 1)
    bits = a.view(ut)
    mag = (bits & ~(ut(1) << top)).astype(np.int64)
    return np.where((bits >> top) == 1, -mag, mag)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "f": return np.where(a == b, 0.0, np.inf)
    d = np.abs(line(a) - line(b)).astype(np.float64)
    na, nb = np.isnan(a), np.isnan(b)
    d[na & nb] = 0
    d[na ^ nb] = np.inf
    return d


def ulp_error(y: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|y - exact| in ulps of y's dtype (0 where the exact result or y is not finite in that dtype)."""
    with np.errstate(all="ignore"):
        rounded = exact.astype(y.dtype)
        err = np.abs(y.astype(np.longdouble) - exact) / np.spacing(np.abs(rounded)).astype(np.longdouble)
    err[~np.isfinite(rounded) | ~np.isfinite(y) | ~np.isfinite(err)] = 0
    return err.astype(np.float64)


EXACT = {"sinc", "reciprocal", "rint", "fix", "fabs", "sign", "spacing", "deg2rad", "rad2deg", "round", "nan_to_num",
         "frexp", "modf", "copysign", "nextafter", "heaviside", "fmod", "fmax", "fmin", "ldexp"}


def specials(dt) -> np.ndarray:
    fi = np.finfo(dt)
    tiny_denormal = np.array(1, np.uint64 if dt == np.float64 else np.uint32).view(dt)
    v = [0.0, 1.0, 0.5, 2.0, 3.0, float(fi.tiny), float(tiny_denormal), float(fi.max), np.inf, np.nan, 1e-8, 100.0]
    return np.array(v + [-x for x in v], dt)


def points(n: int, lo: float, hi: float, dt, rng) -> np.ndarray:
    ut = np.uint64 if dt == np.float64 else np.uint32
    sp = specials(dt)
    k = (n - sp.size) // 3
    grid = np.linspace(lo, hi, k).astype(dt)
    bits = rng.integers(0, np.iinfo(ut).max, k, dtype=ut, endpoint=True).view(dt)
    emax = 1023 if dt == np.float64 else 127
    mags = (2.0 ** rng.uniform(-emax - 20, emax, n - sp.size - 2 * k) * rng.choice([-1, 1], n - sp.size - 2 * k))
    with np.errstate(all="ignore"):
        return np.concatenate([sp, grid, bits, mags.astype(dt)])


def pairs(n: int, lo: float, hi: float, dt, rng) -> tuple[np.ndarray, np.ndarray]:
    sp = specials(dt)
    sx, sy = np.meshgrid(sp, sp)
    m = n - sx.size
    x, y = points(m, lo, hi, dt, rng), points(m, lo, hi, dt, rng)
    rng.shuffle(y)
    return np.concatenate([sx.ravel(), x]), np.concatenate([sy.ravel(), y])


def apply(xp, name: str, *args):
    if name == "ldexp": return xp.ldexp(args[0], np.clip(args[1], -1100, 1100).astype(np.int32)
                                        if xp is np else xp.clip(args[1], -1100, 1100).astype(np.int32))
    if name == "round": return xp.round(args[0], 2)
    return getattr(xp, name)(*args)


def measure(name: str, dt, n: int, backend: str, rng) -> tuple[float, float, float]:
    """(max ulp distance to NumPy, max error of numfn, max error of NumPy) for one function and dtype."""
    binary = name in BINARY
    lo, hi = (BINARY if binary else UNARY)[name]
    args = pairs(n, lo, hi, dt, rng) if binary else (points(n, lo, hi, dt, rng),)
    if name == "ldexp":
        with np.errstate(all="ignore"):
            args = (args[0], np.nan_to_num(args[1].astype(np.float64) * 100))
    with np.errstate(all="ignore"):
        expected = apply(np, name, *args)
        got = numfn.jit(lambda *a: apply(fnp, name, *a), backend=backend)(*args)
    exp = expected if isinstance(expected, tuple) else (expected,)
    out = got if isinstance(got, tuple) else (got,)
    worst = 0.0
    for g, e in zip(out, exp):
        assert g.dtype == e.dtype, (name, g.dtype, e.dtype)
        d = ulp_distance(g, e)
        worst = max(worst, float(d.max()))
    if name in EXACT or np.finfo(np.longdouble).nmant < 63: return worst, np.nan, np.nan
    with np.errstate(all="ignore"):
        exact = apply(np, name, *(a.astype(np.longdouble) for a in args))
    return worst, float(ulp_error(out[0], exact).max()), float(ulp_error(exp[0], exact).max())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--backend", default="llvm")
    ap.add_argument("names", nargs="*")
    opts = ap.parse_args()
    names = opts.names or list(UNARY) + list(BINARY)
    rng = np.random.default_rng(0)
    print(f"max ulp distance to NumPy {np.__version__}, {opts.n} points per function and dtype, "
          f"backend {opts.backend}")
    print("distance: numfn to NumPy; numfn, NumPy: error against the exact result (ulps)")
    print(f"{'':<12} {'float32':^29} {'float64':^29}")
    print(f"{'function':<12} " + f"{'distance':>9} {'numfn':>9} {'NumPy':>9} " * 2)
    for name in names:
        t0 = time.perf_counter()
        row = [v for dt in DTYPES for v in measure(name, dt, opts.n, opts.backend, rng)]
        cells = " ".join("        -" if v != v else f"{v:>9.3g}" for v in row)
        print(f"{name:<12} {cells}   ({time.perf_counter() - t0:.1f} s)")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
