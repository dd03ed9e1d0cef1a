"""The distance of numfn's complex functions to NumPy's, in ulps per part: one table row per function and dtype.

    python benchmarks/ulp_complex.py [--n 1048576] [--backend llvm] [names...]

Each function runs on n points per dtype (default 2**20): every pair of special parts (signed zeros, the smallest
denormal and normal numbers, the largest finite, infinities, NaN, ordinary values) as real and imaginary part,
then random values: uniform parts in [-10, 10], log-uniform magnitudes over the dtype's range with random phases,
points near the unit circle (log's cancellation), near the axes and on both sides of the branch cut (the negative
real axis with +-0 and tiny imaginary parts). Binary functions (power, divide, multiply) get pairs.

Columns, per function and dtype, over all points:
  ulp NumPy   the largest distance to NumPy's result in either part, on the line of float bit patterns (+0 == -0);
  specials    points where NumPy has NaN and numfn a number or the reverse, or a zero of the other sign, or another
              infinity (counted, not part of the ulp column);
  norm        the largest |numfn - NumPy| in a part, in ulps of |NumPy's value| (the error relative to the
              complex magnitude: what parts that cancel in NumPy's own formula can be held to);
  numfn/NumPy exact   each one's largest error in ulps of a part against the exact value (NumPy's clongdouble loop,
              64-bit significand), where that part is finite and above the smallest normal number; only where that
              loop computes the function itself (EXACT_REFERENCE), not a formula of NumPy's whose error is its own.
power's rows leave out the points where |b log a| > 1e6 (the result's angle is rounding noise there) and report
its conditioned error: |numfn - NumPy| in ulps of |NumPy's value| times (1 + |b log a|).
Not part of the test run (tests/numpy/test_complex.py checks the same functions on fewer points).
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

import numfn

UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "exp2", "expm1", "log2", "log10",
         "log1p", "reciprocal", "sign", "square"]
BINARY = ["power", "divide", "multiply"]
# the functions whose clongdouble loop is a reference for the exact value (for the others NumPy's formula itself,
# which numfn follows, decides the error: exp2 = exp(z ln 2), expm1, log1p, and the arithmetic)
EXACT_REFERENCE = {"exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "log2", "log10"}
DTYPES = (np.complex64, np.complex128)


def real_of(dt) -> type:
    return np.float32 if np.dtype(dt) == np.complex64 else np.float64


def special_parts(rt) -> np.ndarray:
    fi = np.finfo(rt)
    denormal = np.array(1, np.uint64 if rt == np.float64 else np.uint32).view(rt)
    v = [0.0, float(denormal), float(fi.tiny), 1e-8, 0.5, 1.0, 2.0, 3.0, 100.0, float(fi.max) / 8, float(fi.max),
         np.inf, np.nan]
    return np.array(v + [-x for x in v], rt)


def points(dt, n: int, rng: np.random.Generator) -> np.ndarray:
    """n complex values of dtype dt: the special grid first, then the random families in equal shares."""
    rt = real_of(dt)
    s = special_parts(rt)
    re, im = np.meshgrid(s, s)
    grid = re.ravel() + 1j * im.ravel()
    k = (n - grid.size) // 5
    top = np.log10(float(np.finfo(rt).max)) - 0.5
    bottom = np.log10(float(np.finfo(rt).tiny))
    uniform = rng.uniform(-10, 10, k) + 1j * rng.uniform(-10, 10, k)
    wide = 10.0 ** rng.uniform(bottom, top, k) * np.exp(1j * rng.uniform(-np.pi, np.pi, k))
    circle = (1 + rng.standard_normal(k) * 10.0 ** rng.uniform(-12, -1, k)) * np.exp(1j * rng.uniform(-np.pi, np.pi, k))
    axes = np.where(rng.random(k) < 0.5, 1, 1j) * rng.uniform(-10, 10, k) + \
        np.where(rng.random(k) < 0.5, 1j, 1) * 10.0 ** rng.uniform(bottom, 0, k) * rng.choice([-1, 1], k)
    rest = n - grid.size - 4 * k
    cut = -10.0 ** rng.uniform(-5, 5, rest) + 1j * rng.choice([0.0, -0.0, 1e-30, -1e-30, 1e-9, -1e-9], rest)
    z = np.concatenate([grid, uniform, wide, circle, axes, cut])
    out = np.empty(z.size, dt)
    out.real, out.imag = z.real.astype(rt), z.imag.astype(rt)   # parts rounded on their own (-0.0 kept)
    return out


def line(a: np.ndarray) -> np.ndarray:
    """Float bit patterns mapped to integers in the order of the values, +0 and -0 both to 0."""
    ut = np.uint64 if a.dtype == np.float64 else np.uint32
    top = ut(a.dtype.itemsize * 8 - 1)
    bits = np.ascontiguousarray(a).view(ut)
    mag = (bits & ~(ut(1) << top)).astype(np.int64)
    return np.where((bits >> top) == 1, -mag, mag)


def part_distance(g: np.ndarray, w: np.ndarray, exact: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(ulp distance, special mismatch) of one part: a NaN against a number, an infinity against anything else, or
    a zero against a zero of the other sign where the exact part is zero too (an underflow's sign is rounding
    noise) is a mismatch (distance 0 there)."""
    d = np.abs(line(g) - line(w)).astype(np.float64)
    gn, wn = np.isnan(g), np.isnan(w)
    zero_sign = (g == 0) & (w == 0) & (np.signbit(g) != np.signbit(w))
    if exact is not None: zero_sign &= exact == 0
    bad = (gn ^ wn) | zero_sign | ((np.isinf(g) | np.isinf(w)) & (g != w) & ~(gn & wn))
    d[gn | wn | bad] = 0
    return d, bad


def exact_error(g: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|g - exact| in ulps of the part's dtype, where the exact part is finite, normal and g finite."""
    with np.errstate(all="ignore"):
        rounded = exact.astype(g.dtype)
        err = np.abs(g.astype(np.longdouble) - exact) / np.spacing(np.abs(rounded)).astype(np.longdouble)
    keep = np.isfinite(rounded) & np.isfinite(g) & (np.abs(rounded) >= np.finfo(g.dtype).tiny)
    return np.where(keep & np.isfinite(err), err, 0).astype(np.float64)


def _worst(part: np.ndarray, exact: np.ndarray) -> float:
    return float(exact_error(np.ascontiguousarray(part), exact).max(initial=0))


def row(name: str, got: np.ndarray, want: np.ndarray, exact: np.ndarray | None, magnitude: np.ndarray) -> str:
    """One line of the table; `magnitude` is what the norm column measures errors against (in ulps: eps times it,
    at least the smallest normal number: below that, errors are absolute)."""
    ulp, special, norm = 0.0, 0, 0.0
    rt = got.real.dtype
    eps, tiny = np.finfo(rt).eps, float(np.finfo(rt).tiny)
    with np.errstate(all="ignore"):
        unit = eps * np.fmax(np.asarray(magnitude, np.float64), tiny)
        for part in ("real", "imag"):
            g, w = np.ascontiguousarray(getattr(got, part)), np.ascontiguousarray(getattr(want, part))
            d, bad = part_distance(g, w, None if exact is None else getattr(exact, part))
            ulp, special = max(ulp, float(d.max(initial=0))), special + int(bad.sum())
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
            rel = np.where(np.isfinite(diff) & np.isfinite(unit) & ~bad, diff / unit, 0)
            norm = max(norm, float(np.nan_to_num(rel, nan=0.0).max(initial=0)))
        errs = ["-", "-"]
        if exact is not None:
            errs = [f"{max(_worst(y.real, exact.real), _worst(y.imag, exact.imag)):.2f}" for y in (got, want)]
    return (f"{name:11s} {str(got.dtype):10s} {got.size:9d} {ulp:10.0f} {special:8d} {norm:9.2f} {errs[0]:>11s} "
            f"{errs[1]:>11s}")


def _apply_each(names: list[str]):
    return lambda *xs: tuple(getattr(np, n)(*xs) for n in names)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1 << 20)
    p.add_argument("--backend", default="llvm")
    p.add_argument("names", nargs="*")
    args = p.parse_args()
    names = args.names or UNARY + BINARY
    rng = np.random.default_rng(2016)
    warnings.simplefilter("ignore")
    print(f"numfn {numfn.__version__}, NumPy {np.__version__}, {args.n} points per function and dtype")
    print(f"{'function':11s} {'dtype':10s} {'points':>9s} {'ulp NumPy':>10s} {'specials':>8s} {'norm':>9s} "
          f"{'numfn exact':>11s} {'NumPy exact':>11s}")
    for dt in DTYPES:
        z = points(dt, args.n, rng)
        w = points(dt, args.n, rng)[::-1].copy()
        unary = [n for n in names if n in UNARY]
        binary = [n for n in names if n in BINARY]
        t0 = time.perf_counter()
        got_u = numfn.jit(_apply_each(unary), backend=args.backend)(z)
        got_b = numfn.jit(_apply_each(binary), backend=args.backend)(z, w)
        print(f"# {np.dtype(dt).name}: compiled and ran in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        zl, wl = z.astype(np.clongdouble), w.astype(np.clongdouble)
        with np.errstate(all="ignore"):
            for name, got in zip(unary, got_u):
                fn = getattr(np, name)
                want = fn(z)
                magnitude = np.abs(want).astype(np.float64)
                if name == "log1p": magnitude = np.fmax(magnitude, 1.0)   # log(hypot(1 + x, y)): absolute error
                print(row(name, got, want, fn(zl) if name in EXACT_REFERENCE else None, magnitude), flush=True)
            for name, got in zip(binary, got_b):
                fn = getattr(np, name)
                want, exact = fn(z, w), fn(zl, wl) if name == "power" else None
                magnitude = np.abs(want).astype(np.float64)
                if name == "power":   # leave out the points whose angle is noise; errors scale with |b log a|
                    cond = np.abs(w).astype(np.float64) * np.abs(np.log(z.astype(np.complex128)))
                    keep = ~(cond > 1e6)
                    got, want, exact = got[keep], want[keep], None
                    magnitude = magnitude[keep] * (1 + np.nan_to_num(cond[keep], nan=0.0, posinf=0.0))
                print(row(name, got, want, exact, magnitude), flush=True)


if __name__ == "__main__":
    main()
