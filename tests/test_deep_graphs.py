"""Deep and repetitive graphs: every pass is iterative (a chain of operations as long as a Python loop makes it
compiles under a small recursion limit), the work of compiling grows linearly with the number of traced operations,
and fusion never multiplies work (an unrolled stencil loop is one kernel per step, not 5**steps evaluations).

The CI runs 8,000 chained operations through the front end (any recursion in a pass fails at a limit of 200
frames, and the chain is cut into about twenty kernels) and 3,000 through compilation; the long run,
`NUMFN_LONG_TESTS=1 python -m pytest tests/test_deep_graphs.py`, compiles and runs 100,000 (about two minutes on
two cores; see docs/reliability.md for measured times)."""
import math
import os
from collections import Counter
from contextlib import contextmanager

import numpy as np
import pytest

import numfn
from numfn.codegen import lower
from numfn.schedule import MAX_KERNEL_DEPTH, MAX_KERNEL_OPS
from numfn.ir.uop import ELEMENTWISE
from helpers import assert_same, recursion_limit

LONG = os.environ.get("NUMFN_LONG_TESTS", "") not in ("", "0")


def unrolled(fn, **options):
    """jit with every Python loop unrolled (these tests are about the graphs unrolling makes; a loop of more than
    a few iterations would otherwise compile to a native loop)."""
    return numfn.jit(fn, unroll=10**9, **options)


def chain(n: int):
    def f(x):
        for i in range(n):
            x = x * 1.0001 + 0.5 if i % 3 else x - 0.25   # 5 operations every 3 steps
        return x
    return f


def chain_ops(n: int) -> int:
    return sum(2 if i % 3 else 1 for i in range(n))


@contextmanager
def counting_expansions():
    """Counts how often lowering expands a (node, index) pair: the analysis work of scheduling and lowering."""
    counts = Counter()
    original = lower.Lowerer._lower

    def counted(self, u, idx):
        counts[u.op] += 1
        return original(self, u, idx)
    lower.Lowerer._lower = counted
    try:
        yield counts
    finally:
        lower.Lowerer._lower = original


def kernel_depths(nf) -> list[int]:
    """Elementwise operations on the longest chain of each kernel's stored values."""
    out = []
    for ei in nf.schedule:
        depth: dict = {}
        for u in ei.kernel.ast.toposort():
            depth[u] = max((depth[s] for s in u.src), default=0) + (u.op in ELEMENTWISE)
        out.append(max(depth[st] for st in ei.kernel.ast.src))
    return out


def test_a_long_chain_compiles_under_a_small_recursion_limit():
    n = 20_000 if LONG else 8_000
    unrolled(chain(10), backend="llvm")(np.ones(16))   # imports done before the limit is lowered
    nf = unrolled(chain(n), backend="llvm").specialize(np.ones(16))
    with recursion_limit(200):
        source = nf.source
    assert "define" in source
    ops = chain_ops(n)
    # chains beyond MAX_KERNEL_DEPTH are cut by storing a value: LLVM's time grows faster than a loop body
    assert all(d <= MAX_KERNEL_DEPTH for d in kernel_depths(nf))
    assert math.ceil(ops / MAX_KERNEL_DEPTH) <= len(nf.schedule) <= 2 * math.ceil(ops / MAX_KERNEL_DEPTH)


def test_a_long_chain_matches_numpy(backend):
    n = 3000 if backend == "llvm" else 600
    f = chain(n)
    x = np.linspace(-1, 1, 37)
    with recursion_limit(400):
        got = unrolled(f, backend=backend)(x)
    assert_same(got, f(x), rtol=1e-9)


def test_the_work_of_compiling_a_chain_grows_linearly():
    work = []
    for n in (1000, 2000, 4000):   # quadratic work would double the ratios at any size
        nf = unrolled(chain(n), backend="llvm").specialize(np.ones(8))
        with counting_expansions() as counts:
            _ = nf.rendered_kernels
        work.append(sum(counts.values()))
    assert work[1] <= 2.2 * work[0] and work[2] <= 2.2 * work[1], work


def test_wide_kernels_are_split_by_operation_count():
    # 300 unrelated results of one shape: grouped into kernels of at most MAX_KERNEL_OPS operations
    def f(x):
        return tuple((x * (1 + i) + i) * (2.0 + i) - i for i in range(300))
    x = np.linspace(0, 1, 5)
    jf = unrolled(f, backend="llvm")
    got = jf(x)
    nf = jf.specializations[0]
    assert len(nf.schedule) >= math.ceil(300 * 4 / MAX_KERNEL_OPS)
    assert_same(got, f(x))


# ---- stencils of stencils: an unrolled heat equation ------------------------------------------------------------

def heat(steps: int, xp=np):
    def f(u):
        for _ in range(steps):
            c = u[1:-1, 1:-1]
            interior = c + 0.1 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4 * c)
            row = xp.concatenate([u[1:-1, :1], interior, u[1:-1, -1:]], axis=1)
            u = xp.concatenate([u[:1], row, u[-1:]], axis=0)
        return u
    return f


def heat_per_step(steps: int):
    """The same loop with every step stored: one kernel per step, the baseline fusion must not be worse than."""
    def f(u):
        for _ in range(steps):
            u = heat(1)(u).contiguous() if hasattr(u, "contiguous") else heat(1)(u)
        return u
    return f


def test_unrolled_heat_loop_is_one_kernel_per_step(backend):
    steps = 10
    u = np.random.default_rng(0).random((48, 40))
    jf = unrolled(heat(steps), backend=backend)
    assert_same(jf(u), heat(steps)(u), rtol=1e-12)
    nf = jf.specializations[0]
    assert len(nf.schedule) == steps
    baseline = unrolled(heat_per_step(steps), backend=backend).specialize(u)
    # fused, the program does no more work than storing every step
    assert sum(ei.op_count for ei in nf.schedule) <= sum(ei.op_count for ei in baseline.schedule)


def test_the_work_of_compiling_an_unrolled_stencil_grows_linearly():
    # fused into one kernel, step k would evaluate step k-1 at 5 places: 5**steps evaluations. The analysis
    # stores a value as soon as its evaluations say so, and stops expanding it then.
    u = np.ones((24, 20))
    work, size = [], []
    for steps in (5, 10, 20):
        nf = unrolled(heat(steps), backend="llvm").specialize(u)
        with counting_expansions() as counts:
            _ = nf.rendered_kernels
        work.append(sum(counts.values()))
        size.append(len(nf.source))
        assert len(nf.schedule) == steps
    assert work[1] <= 2.5 * work[0] and work[2] <= 2.5 * work[1], work
    assert size[1] <= 2.5 * size[0] and size[2] <= 2.5 * size[1], size


def test_a_value_read_at_many_places_is_stored():
    # 40 shifted reads of one expensive value: recomputing it 40 times costs more than storing it once
    def f(x):
        y = np.exp(np.sin(x) * np.cos(x))
        return sum(y[i:i + 20] for i in range(40))
    x = np.linspace(0, 1, 60)
    jf = unrolled(f, backend="llvm")
    assert_same(jf(x), f(x))
    assert len(jf.specializations[0].schedule) == 2


@pytest.mark.skipif(not LONG, reason="the long run: NUMFN_LONG_TESTS=1")
def test_a_hundred_thousand_chained_operations_compile_and_run():
    n = 100_000
    f = chain(n)
    x = np.linspace(-1, 1, 16)
    unrolled(chain(10), backend="llvm")(x)
    with recursion_limit(200):
        got = unrolled(f, backend="llvm")(x)
    assert_same(got, f(x), rtol=1e-9)
