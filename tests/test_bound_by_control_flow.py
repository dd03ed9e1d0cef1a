"""Variables that control flow on traced values binds on some paths only (numfn.trace.unbound.MaybeUnbound): a
loop of a traced trip count that binds `lab` in every iteration, read after it; a loop's own target read after it
(`for i in range(n): if ...: break`, then `i`); one side of a branch binding `y`.
Python reads them where they were bound and raises UnboundLocalError where they were not, at the read: so does
numfn, against Python's own run of the same function."""
import numpy as np
import pytest

from helpers import check, check_mutates, check_raises_like

X = np.arange(4.0)


def loop_last(x, n):
    for i in range(n):
        last = x * i
    return last


def loop_unused(x, n):   # bound only inside, never read after: no error where no iteration ran
    total = x * 0
    for i in range(n):
        tmp = x + i
        total = total + tmp
    return total


def while_last(x, n):
    i = 0
    while i < n:
        y = x + i
        i += 1
    return y, i


def loop_break(x, n):
    for i in range(n):
        v = x[i % x.size]
        if v > 2: break
    return v


def branch_one_side(x):
    if x.sum() > 0:
        y = x * 2
    return y


def branch_then_loop(x, n):
    if x.sum() > 0:
        y = x * 2
    for _ in range(n):
        y = y + 1
    return y


def branch_unused(x):
    if x.sum() > 0:
        y = x * 2
    else:
        z = x - 1
    return x + 1


def kmeans(X, C, iters):
    for _ in range(iters):
        d = ((X[:, None, :] - C[None, :, :]) ** 2).sum(-1)
        lab = np.argmin(d, axis=1)
        for k in range(C.shape[0]):
            m = lab == k
            if m.any():
                C[k] = X[m].mean(axis=0)
    return C, lab


def index_after_break(x):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0: break
        total += x[i]
    return total, i


def index_after_steps(x, n):
    x = x.copy()
    for i in range(2, n, 3):
        x[i] = 0.0
    return x, i


def index_bound_before(x, n):
    x = x.copy()
    i = -1
    for i in range(n):
        x[i % x.size] += 1.0
    return x, i


def element_after_break(x):
    for v in x:
        if v > 1.5: break
    return v


def index_after_short_loop(x):   # (unrolled)
    x = x.copy()
    for i in range(3):
        x[i] += 1.0
    return x, i


@pytest.mark.parametrize("fn, args", [
    (index_after_break, (np.array([1.0, 2.0, -3.0, 4.0, -1.0, 5.0]),)), (index_after_break, (X,)),
    (index_after_steps, (np.arange(12.0), 12)), (index_after_steps, (np.arange(12.0), 9)),
    (index_bound_before, (X, 7)), (index_bound_before, (X, 0)), (element_after_break, (np.arange(8.0) / 3,)),
    (index_after_short_loop, (X,)),
    (loop_last, (X, 3)), (loop_unused, (X, 0)), (loop_unused, (X, 3)), (while_last, (X, 2)), (loop_break, (X, 5)),
    (loop_break, (X, 1)), (branch_one_side, (X,)), (branch_then_loop, (X, 2)), (branch_unused, (X,)),
    (branch_unused, (-X,)),
], ids=lambda v: getattr(v, "__name__", None))
def test_bound_where_it_runs(fn, args, backend):
    check(fn, *args, backend=backend)


@pytest.mark.parametrize("fn, args", [
    (loop_last, (X, 0)), (while_last, (X, 0)), (loop_break, (X, 0)), (branch_one_side, (-X,)),
    (index_after_steps, (np.arange(12.0), 2)),
    (branch_then_loop, (-X, 2)),
], ids=lambda v: getattr(v, "__name__", None))
def test_unbound_where_read_raises_like_python(fn, args, backend):
    check_raises_like(fn, *args, backend=backend, match="cannot access local variable")


def test_the_last_labels_of_an_iteration(backend):
    """k-means: the labels of the last iteration returned (a loop of `iters` iterations, traced)."""
    rng = np.random.default_rng(5)
    X, C = rng.random((50, 2)), rng.random((3, 2))
    check_mutates(kmeans, X, C, 4, backend=backend)
    check_raises_like(kmeans, X, C.copy(), 0, backend=backend, match="'lab'")
