"""numfn.numpy's reductions, statistics, products and signal functions next to NumPy on the same realistic inputs,
one group per case; every numfn result is checked against NumPy's before timing.

    python -m pytest benchmarks/bench_numpy_functions.py --benchmark-columns=median,iqr
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import numfn


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable
    make_inputs: Callable
    rtol: float = 1e-9


def _rows(rng):
    return (rng.standard_normal((1000, 1000)),)


def _vector(rng):
    return (rng.standard_normal(1_000_000),)


def _attention(rng):
    # scores of a batch of attention heads: (batch, heads, queries, dim) x (batch, heads, keys, dim)
    return rng.standard_normal((8, 8, 128, 64)).astype(np.float32), \
        rng.standard_normal((8, 8, 128, 64)).astype(np.float32)


def _signal(rng):
    return rng.standard_normal(100_000), rng.standard_normal(101)


def _interp(rng):
    xp = np.cumsum(rng.uniform(0.1, 1.0, 1000))
    return rng.uniform(xp[0] - 10, xp[-1] + 10, 1_000_000), xp, np.sin(xp)


CASES = [
    Case("argmax rows 1000x1000", lambda x: np.argmax(x, axis=1), _rows, 0),
    Case("std 1e6", lambda x: np.std(x), _vector),
    Case("einsum bhqd,bhkd->bhqk", lambda q, k: np.einsum("bhqd,bhkd->bhqk", q, k), _attention, 1e-4),
    Case("convolve 1e5 x 101", lambda a, v: np.convolve(a, v, "same"), _signal),
    Case("interp 1e6 points, 1000 nodes", lambda x, xp, fp: np.interp(x, xp, fp), _interp),
    Case("nanmean rows 1000x1000", lambda x: np.nanmean(x, axis=1), _rows),
    Case("cumprod axis 0 1000x1000", lambda x: np.cumprod(1.0 + 1e-3 * x, axis=0), _rows),
]
IDS = [c.name for c in CASES]
_inputs: dict = {}
_jitted: dict = {}


def inputs(case: Case):
    if case.name not in _inputs: _inputs[case.name] = case.make_inputs(np.random.default_rng(0))
    return _inputs[case.name]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_numfn(benchmark, case):
    args = inputs(case)
    f = _jitted.setdefault(case.name, numfn.jit(case.fn))
    got, want = f(*args), case.fn(*args)   # compile outside the timing
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.rtol * float(np.abs(want).max()))
    benchmark.group = case.name
    benchmark(f, *args)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_numpy(benchmark, case):
    benchmark.group = case.name
    benchmark(case.fn, *inputs(case))
