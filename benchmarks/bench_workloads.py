"""Workload benchmarks: numfn next to NumPy (and Numba, JAX when installed) on the same inputs, one group per
workload so the table shows them side by side. Every numfn result is checked against NumPy's.

    python -m pytest benchmarks/bench_workloads.py --benchmark-autosave          # store a baseline
    python -m pytest benchmarks/bench_workloads.py --benchmark-compare --benchmark-compare-fail=median:15%

(see README.md: the second run fails when a median got more than 15% slower than the stored baseline).
"""
import numpy as np
import pytest

import numfn
from workloads import WORKLOADS, jax_versions, numba_versions

IDS = [w.name for w in WORKLOADS]
_inputs: dict = {}
_jitted: dict = {}


def inputs(workload):
    if workload.name not in _inputs: _inputs[workload.name] = workload.make_inputs(np.random.default_rng(0))
    return _inputs[workload.name]


@pytest.fixture(scope="module")
def jax_fns():
    return jax_versions()


@pytest.fixture(scope="module")
def numba_fns():
    return numba_versions()


@pytest.mark.parametrize("workload", WORKLOADS, ids=IDS)
def test_numfn(benchmark, workload):
    args = inputs(workload)
    f = _jitted.setdefault(workload.name, numfn.jit(workload.fn))
    got = f(*args)   # compile outside the timing
    want = workload.fn(*args)
    np.testing.assert_allclose(got, want, rtol=workload.rtol, atol=workload.rtol * float(np.abs(want).max()))
    benchmark.group = workload.name
    benchmark(f, *args)


@pytest.mark.parametrize("workload", WORKLOADS, ids=IDS)
def test_numpy(benchmark, workload):
    benchmark.group = workload.name
    benchmark(workload.fn, *inputs(workload))


@pytest.mark.parametrize("workload", WORKLOADS, ids=IDS)
def test_jax(benchmark, workload, jax_fns):
    if workload.name not in jax_fns: pytest.skip("JAX is not installed")
    args, f = inputs(workload), jax_fns[workload.name]
    np.testing.assert_allclose(np.asarray(f(*args)), workload.fn(*args), rtol=1e-3, atol=1e-3)
    benchmark.group = workload.name
    benchmark(f, *args)


@pytest.mark.parametrize("workload", WORKLOADS, ids=IDS)
def test_numba(benchmark, workload, numba_fns):
    if workload.name not in numba_fns: pytest.skip("Numba is not installed")
    args, f = inputs(workload), numba_fns[workload.name]
    np.testing.assert_allclose(f(*args), workload.fn(*args), rtol=1e-3, atol=1e-3)
    benchmark.group = workload.name
    benchmark(f, *args)
