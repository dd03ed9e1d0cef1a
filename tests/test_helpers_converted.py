"""Helpers are converted too: a plain Python function (or method) the jitted function calls, with loops and
branches on traced values, runs them as numfn's loops and branches, as the jitted function's own statements do
(numfn.trace.convert: calls in converted code go through Runtime.callee). Compared with NumPy on both backends."""
import numpy as np
import pytest

import numfn
from numfn.errors import RunTimeLengthError
from numfn.ir.uop import Ops
from helpers import check


def _scale_until(x, limit):
    while x.sum() < limit:
        x = x * 2.0
    return x


def _clip_sign(x):
    if x.sum() > 0:
        return x - 1.0
    return -x


def _relax(x, n):
    y = x
    for i in range(n.sum()):
        y = 0.5 * (y + x / y)
    return y


def uses_helpers(x, n):
    return _scale_until(x, 100.0) + _clip_sign(x) + _relax(x + 2.0, n)


def with_nested_def(x, n):
    def smooth(v):
        for _ in range(n.sum()):
            v = 0.5 * v + 0.25 * (np.roll(v, 1) + np.roll(v, -1))
        return v
    return smooth(x) + smooth(x * 2)


class Model:
    def __init__(self, steps):
        self.steps = steps

    def step(self, v):
        for _ in range(self.steps):
            v = np.tanh(v) + 0.1
        return v

    def __call__(self, x):
        return self.step(x) * 2


def uses_a_method(x):
    return Model(9)(x)


def _static_depth(x, k):
    if k == 0:
        return x
    return _static_depth(x * 2, k - 1) + 1


def uses_static_recursion(x):
    return _static_depth(x, 6)


def _traced_depth(x):
    if x.sum() > 100:
        return x
    return _traced_depth(x * 2)


def uses_traced_recursion(x):
    return _traced_depth(x)


@pytest.mark.parametrize("fn, args", [
    (uses_helpers, (np.array([1.0, 2.0, 3.0]), np.array(6))),
    (uses_helpers, (np.array([-1.0, -2.0, 0.5]), np.array(0))),
    (with_nested_def, (np.linspace(-1, 1, 7), np.array(5))),
    (uses_a_method, (np.linspace(-1, 1, 5),)),
    (uses_static_recursion, (np.arange(3.0),)),
], ids=lambda v: getattr(v, "__name__", None))
def test_helpers_run_like_python(fn, args, backend):
    check(fn, *args, backend=backend)


def test_a_helpers_static_loop_is_a_native_loop():
    # (before: the helper ran as Python, its 9 iterations unrolled into the graph)
    graph = numfn.jit(uses_a_method).specialize(np.linspace(-1, 1, 5)).function_graph
    assert any(u.op is Ops.LOOP for u in graph.toposort())


def halve(x, n):
    if n == 0:
        return x
    return halve(x * 0.5, n - 1)


def vcycle(u, f, level):   # a multigrid-style recursion on a Python int
    if level == 0:
        return u + f * 0.25
    coarse = vcycle(u[::2] * 0, (f - u)[::2], level - 1)
    u = u.copy()
    u[::2] += coarse
    return u + 0.1 * (f - u)


def test_recursion_a_python_int_ends_compiles(backend):
    """`n`, a Python int, would be traced (one program for every n) and the recursion never end while tracing: after
    the first trace meets that, the Python ints among the arguments are static (one program per value)."""
    x = np.arange(16.0)
    for n in (3, 0, 3):
        check(halve, x, n, backend=backend)
    check(vcycle, x, x + 1, 3, backend=backend)


def test_recursion_a_traced_value_ends_is_refused():
    with pytest.raises(numfn.NumfnError, match="_traced_depth calls itself too deep .* write it as a loop"):
        numfn.jit(uses_traced_recursion)(np.ones(3))


def test_helpers_with_defaults_and_annotations_of_their_scope(backend):
    # the defaults and annotations name what only the defining scope has: the converted helper takes the
    # function's own defaults and drops its annotations
    for scale in (2.0, -1.0):
        class Local:
            pass

        def helper(x: Local, s=scale) -> Local:
            return x * s + np.float64(1)

        def top(x):
            return helper(x) + helper(x, 3.0)
        check(top, np.arange(3.0), backend=backend)


def _made_by_exec(name: str, source: str, filename: str):
    namespace: dict = {"np": np}
    exec(compile(source, filename, "exec"), namespace)   # noqa: S102 - code without a file, as a notebook tool makes
    return namespace[name]


def test_code_without_source_warns_that_its_loops_unroll():
    looping = _made_by_exec("f", "def f(x):\n    for i in range(3):\n        x = x + 1\n    return x\n", "<made>")
    with pytest.warns(numfn.trace.convert.NoSourceWarning, match=r"cannot read the source of f \(<made>\)"):
        out = numfn.jit(looping)(np.ones(3))
    np.testing.assert_array_equal(out, np.full(3, 4.0))


def test_code_without_source_and_without_loops_does_not_warn(recwarn):
    straight = _made_by_exec("g", "def g(x):\n    return x * 2\n", "<made-straight>")
    np.testing.assert_array_equal(numfn.jit(straight)(np.ones(3)), np.full(3, 2.0))
    assert not [w for w in recwarn if issubclass(w.category, numfn.trace.convert.NoSourceWarning)]


def nearest_labels(train, labels, test, k):
    d = ((test[:, None, :] - train[None, :, :]) ** 2).sum(-1)
    idx = np.argsort(d, axis=1, kind="stable")[:, :k]
    return labels[idx], idx


def labels_of_selection(labels, x):
    return labels[np.argsort(x)[x > 0][:, None]]   # a 2-D index of run-time length: refused whatever the ints


def test_a_python_int_that_makes_a_refused_run_time_length_becomes_static(backend):
    """`idx[:, :k]` with a traced k is a window of run-time length, and indexing with it (2-D) is refused; after that
    first trace the Python ints among the arguments are static (as for a recursion they end), and it compiles."""
    rng = np.random.default_rng(7)
    args = (rng.standard_normal((20, 2)), rng.integers(0, 3, 20), rng.standard_normal((6, 2)))
    jf = numfn.jit(nearest_labels, backend=backend)
    for k in (4, 1, 4):
        check(nearest_labels, *args, k, backend=backend, jitted=jf)
    assert jf._sizing_ints == (3,)


def test_a_run_time_length_the_ints_do_not_make_stays_refused():
    jf = numfn.jit(lambda labels, x, n: labels_of_selection(labels, x) + n)
    with pytest.raises(RunTimeLengthError, match="index of run-time length"):
        jf(np.arange(5), np.linspace(-1.0, 1.0, 5), 3)
    assert jf._sizing_ints == ()   # (they were tried static, and are not kept)
