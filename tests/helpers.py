"""Shared comparison code for the differential tests: the same Python function run by NumPy is the oracle.

    check(f, x, y, backend=backend)          # jit(f)(x, y) must equal f(x, y) computed by NumPy
    check_xp(make, x, backend=backend)       # make(fnp) jitted and make(np) jitted, both against make(np) by NumPy
    check_raises_like(f, x, backend=backend)  # numfn raises the same exception type as NumPy

Results are compared leaf by leaf: same container types, same dtype and shape as NumPy's (NumPy scalars count
as 0-d arrays), exact values for integers and bools, and for floats np.testing.assert_allclose with dtype-aware
tolerances (equal_nan=True; infinities must match exactly); complex values part by part, as floats.
"""
from __future__ import annotations

import copy
import math
import sys
import warnings
from contextlib import contextmanager

import os

import numpy as np
import pytest

import numfn
import numfn.numpy as fnp

RTOL = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}
ALL_DTYPES = (np.float32, np.float64, np.int32, np.int64, np.bool_)
FLOAT_DTYPES = (np.float32, np.float64)
INT_DTYPES = (np.int32, np.int64)
SMALL_INT_DTYPES = (np.int8, np.uint8, np.uint32, np.uint64)


def leaves(tree) -> list:
    """The array-like leaves of nested tuples, lists and dicts (dict values in key order)."""
    if isinstance(tree, dict): return [v for k in sorted(tree, key=repr) for v in leaves(tree[k])]
    if isinstance(tree, (tuple, list)): return [v for x in tree for v in leaves(x)]
    return [tree]


def magnitude(*trees) -> float:
    """The largest finite absolute value among the numeric leaves (at least 1): the scale of absolute errors."""
    m = 1.0
    for leaf in leaves(list(trees)):
        if isinstance(leaf, (bool, np.bool_)) or leaf is None: continue
        try:
            a = np.asarray(leaf)
        except Exception:
            continue
        if a.dtype.kind not in "iufc" or a.size == 0: continue
        if a.dtype.kind == "c": a = np.concatenate([a.real.ravel(), a.imag.ravel()])
        a = a.astype(np.float64)
        a = a[np.isfinite(a)]
        if a.size: m = max(m, float(np.abs(a).max()))
    return m


def assert_same(actual, expected, *, scale: float = 1.0, rtol: float | None = None, atol: float | None = None,
                signed_zeros: bool = False, path: str = "result") -> None:
    """`actual` (numfn's result) equals `expected` (NumPy's) in container structure, dtype, shape and values."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected a dict, got {type(actual).__name__}"
        assert sorted(actual, key=repr) == sorted(expected, key=repr), f"{path}: keys differ"
        for k in expected:
            assert_same(actual[k], expected[k], scale=scale, rtol=rtol, atol=atol, signed_zeros=signed_zeros,
                        path=f"{path}[{k!r}]")
        return
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected), f"{path}: expected a {type(expected).__name__}, got {type(actual)}"
        assert len(actual) == len(expected), f"{path}: expected {len(expected)} items, got {len(actual)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, scale=scale, rtol=rtol, atol=atol, signed_zeros=signed_zeros, path=f"{path}[{i}]")
        return
    if expected is None:
        assert actual is None, f"{path}: expected None, got {actual!r}"
        return
    exp = np.asarray(expected)
    assert isinstance(actual, np.ndarray), f"{path}: expected an ndarray, got {type(actual).__name__}"
    assert actual.dtype == exp.dtype, f"{path}: dtype {actual.dtype}, NumPy gives {exp.dtype}"
    assert actual.shape == exp.shape, f"{path}: shape {actual.shape}, NumPy gives {exp.shape}"
    if exp.dtype.kind == "c":   # each part on its own: NaN and infinite parts, signed zeros
        for part in ("real", "imag"):
            assert_same(np.ascontiguousarray(getattr(actual, part)), np.ascontiguousarray(getattr(exp, part)),
                        scale=scale, rtol=rtol, atol=atol, signed_zeros=signed_zeros, path=f"{path}.{part}")
        return
    if exp.dtype.kind == "f":
        r = RTOL[exp.dtype] if rtol is None else rtol
        a = r * scale if atol is None else atol
        np.testing.assert_allclose(actual, exp, rtol=r, atol=a, equal_nan=True, err_msg=path, strict=True)
        if signed_zeros:
            zero = exp == 0
            np.testing.assert_array_equal(np.signbit(actual[zero]), np.signbit(exp[zero]),
                                          err_msg=f"{path}: signs of zeros differ")
    else:
        np.testing.assert_array_equal(actual, exp, err_msg=path, strict=True)


def numpy_result(fn, args, kwargs=None):
    """fn run by NumPy on private copies of the arguments (warnings about 0/0 and the like silenced)."""
    args, kwargs = copy.deepcopy(args), copy.deepcopy(kwargs or {})
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


def check_no_sharing(result, args, kwargs=None) -> None:
    """No output shares memory with an input, nor with another output."""
    outs = [x for x in leaves(result) if isinstance(x, np.ndarray)]
    ins = [x for x in leaves([args, kwargs or {}]) if isinstance(x, np.ndarray)]
    for i, o in enumerate(outs):
        for x in ins:
            assert not np.shares_memory(o, x), f"output {i} shares memory with an input"
        for j, o2 in enumerate(outs[:i]):
            if o.size and o2.size:
                assert not np.shares_memory(o, o2), f"outputs {j} and {i} share memory"


def run_jit(fn, args, kwargs=None, *, backend: str, jitted=None):
    """jit(fn)(*args) checking the arguments are left unchanged and that a second call (the fast path) gives the
    same result; returns (result, jitted function)."""
    kwargs = kwargs or {}
    jf = numfn.jit(fn, backend=backend) if jitted is None else jitted
    before = copy.deepcopy((args, kwargs))
    out = jf(*args, **kwargs)
    again = jf(*args, **kwargs)   # the first call compiles; later ones take the fast path (a registered entry)
    assert_same(again, out, rtol=0.0, atol=0.0, path="second call")
    for a, b in zip(leaves(again), leaves(out)):
        if isinstance(a, np.ndarray) and a.size: assert not np.shares_memory(a, b), "calls share an output buffer"
    for a, b in zip(leaves([args, kwargs]), leaves(list(before))):
        if isinstance(a, np.ndarray): np.testing.assert_array_equal(a, b, err_msg="an input was modified", strict=True)
    return out, jf


LONG_TESTS = os.environ.get("NUMFN_LONG_TESTS", "") not in ("", "0")


def long_only(*values, why: str = "another dtype of code the default run covers"):
    """A parametrize case that runs only in the long run (NUMFN_LONG_TESTS=1): the default run keeps under its time
    budget by leaving out cases that repeat another case's code (`why`)."""
    return pytest.param(*values, marks=pytest.mark.skipif(not LONG_TESTS, reason=f"the long run: {why}"))


def check(fn, *args, backend: str, scale: float | None = None, rtol: float | None = None, atol: float | None = None,
          signed_zeros: bool = False, expected=None, jitted=None, **kwargs):
    """numfn.jit(fn)(*args, **kwargs) equals fn(*args, **kwargs) computed by NumPy. Returns the JitFunction.

    The absolute tolerance of floats is rtol times `scale` (default: the largest finite input magnitude);
    tests that reduce n elements pass a larger scale."""
    if expected is None: expected = numpy_result(fn, args, kwargs)
    actual, jf = run_jit(fn, args, kwargs, backend=backend, jitted=jitted)
    s = magnitude(args, kwargs) if scale is None else scale
    assert_same(actual, expected, scale=s, rtol=rtol, atol=atol, signed_zeros=signed_zeros)
    check_no_sharing(actual, args, kwargs)
    return jf


def check_mutates(fn, *args, backend: str, calls: int = 2, **kw):
    """fn writes into its arguments: numfn.jit(fn) on copies of `args` must leave them (and return) what NumPy's fn
    leaves them, call after call (`calls` times: the first call compiles, later ones reuse the program)."""
    jf = numfn.jit(fn, backend=backend)
    ours, theirs = copy.deepcopy(args), copy.deepcopy(args)
    s = magnitude(args) * 4
    for k in range(calls):
        expected = _numpy_in_place(fn, theirs)
        actual = jf(*ours)
        assert_same(actual, expected, scale=s, path=f"call {k}: result", **kw)
        arrays = [i for i, a in enumerate(theirs) if isinstance(a, np.ndarray)]   # the rest cannot change
        assert_same([ours[i] for i in arrays], [theirs[i] for i in arrays], scale=s,
                    path=f"call {k}: arguments afterwards", **kw)
    return jf


def _numpy_in_place(fn, args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args)


def check_xp(make, *args, backend: str, **kw):
    """`make(xp)` builds a function over the array module xp. The oracle is make(np) run by NumPy; numfn must
    match it both for make(numfn.numpy) and for make(np) (np.* functions traced through __array_function__)."""
    expected = numpy_result(make(np), args)
    check(make(fnp), *args, backend=backend, expected=expected, **kw)
    check(make(np), *args, backend=backend, expected=expected, **kw)


def numpy_exception(fn, args, kwargs=None) -> BaseException | None:
    try:
        numpy_result(fn, args, kwargs)
    except Exception as e:   # noqa: BLE001 - any exception NumPy raises is the oracle
        return e
    return None


def public_type(e: BaseException) -> type:
    """The public class of an exception NumPy raises (its private _UFuncNoLoopError is a TypeError)."""
    return next(c for c in type(e).__mro__ if c.__module__ in ("builtins", "numpy.exceptions"))


def check_raises_like(fn, *args, backend: str, match: str | None = None, **kwargs):
    """NumPy raises for fn(*args); numfn raises an exception of the same type (while tracing)."""
    e = numpy_exception(fn, args, kwargs)
    assert e is not None, "the test is wrong: NumPy does not raise"
    with pytest.raises(public_type(e), match=match) as info:
        numfn.jit(fn, backend=backend)(*args, **kwargs)
    return info


def rand(shape, dtype, rng: np.random.Generator, lo: float = -3.0, hi: float = 3.0) -> np.ndarray:
    """Tame random values of `dtype`: floats uniform in [lo, hi), integers in [lo, hi] (>= 0 if unsigned)."""
    dt = np.dtype(dtype)
    shape = tuple(shape)
    if dt.kind == "b": return rng.random(shape) < 0.5
    if dt.kind == "f": return rng.uniform(lo, hi, shape).astype(dt)
    ilo, ihi = math.floor(lo), math.ceil(hi)
    if dt.kind == "u": ilo, ihi = max(0, ilo), max(ihi, 1)
    return rng.integers(ilo, ihi + 1, shape).astype(dt)


def specials(dtype) -> np.ndarray:
    """Edge values of a float dtype: signed zeros, infinities, NaN, tiny and huge values, ordinary numbers."""
    f = np.finfo(dtype)
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.5, 3.0, 7.25, -7.25,
                     float(f.tiny), -float(f.tiny), float(f.max), -float(f.max), 1e-3, 100.0], dtype=dtype)


def xfail_if(request, condition: bool, reason: str) -> None:
    """Mark the running test as a strict expected failure when `condition` holds (for example on one backend)."""
    if condition: request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


@contextmanager
def recursion_limit(extra: int = 60):
    """Python's recursion limit set to the current depth plus `extra` frames: a walker that recursed once per node
    of a deep graph fails."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + extra)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


# Windowed products in loops, written as NumPy users write them (the covariance and Cholesky patterns of
# benchmarks/bench_patterns.py): tests/test_gemv.py and tests/test_window_costs.py check them against NumPy.
def covariance(d):
    n, m = d.shape
    c = np.zeros((m, m), d.dtype)
    for i in range(m):
        c[i:, i] = c[i, i:] = d[:, i] @ d[:, i:] / (n - 1)
    return c


def cholesky_columns(a):
    n = a.shape[0]
    L = np.zeros_like(a)
    for j in range(n):
        L[j, j] = np.sqrt(a[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1:, j] = (a[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L
