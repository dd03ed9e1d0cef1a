"""Control flow: Python loops and branches over traced values (converted to native loops and branches) and the
explicit primitives (numfn.fori_loop, while_loop, scan, cond, switch), against the same code run by NumPy."""
import numpy as np
import pytest

import numfn
from helpers import check, check_mutates

RNG = np.random.default_rng(14)


def native_steps(jf) -> list[str]:
    """The kinds of loops and branches in the last compiled program ("loop", "branch"), outermost first; a loop
    interchanged into one kernel (numfn/schedule/interchange.py, an "I_" kernel) is a "loop"."""
    out = []
    nf = jf.specializations[-1]

    def walk(steps):
        for s in steps:
            if isinstance(s, tuple):
                out.append(s[0])
                for part in s[2]: walk(part)
            elif isinstance(s, int) and nf.kernel_items[s].kernel.name.startswith("I_"): out.append("loop")
    walk(nf.steps)
    return out


# ---------------------------------------------------------------------------------------------------------------
# converted Python loops

def heat(u, steps):
    for _t in range(steps):
        u = u + 0.1 * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
    return u


def test_for_range_static_trip_count_is_a_native_loop(backend):
    u = np.sin(np.linspace(0, 3, 50))
    jf = numfn.jit(heat, static_argnums=(1,), backend=backend)
    check(heat, u, 100, backend=backend, jitted=jf)
    assert native_steps(jf) == ["loop"]
    # a few iterations unroll instead (no loop overhead, fused across iterations)
    check(heat, u, 3, backend=backend, jitted=jf)
    assert native_steps(jf) == []


def running(x, n):
    acc = np.zeros_like(x[0])
    for i in range(n):
        acc = acc * 0.5 + x[i % x.shape[0]]
    return acc


@pytest.mark.parametrize("n", [0, 1, 7, 19])
def test_for_range_traced_trip_count(backend, n):
    x = RNG.standard_normal((5, 3))
    jf = numfn.jit(running, backend=backend)
    check(running, x, np.int64(n), backend=backend, jitted=jf)
    assert native_steps(jf) == ["loop"]


def ranges(x, a, b, s):
    acc = x * 0
    for i in range(a, b, s):
        acc = acc + i * x
    return acc


@pytest.mark.parametrize("a,b,s", [(0, 10, 3), (10, 0, -3), (5, 5, 1), (3, -4, -1), (0, 9, 100), (2, 1, 1)])
def test_for_range_traced_start_stop_step(a, b, s):
    jf = numfn.jit(ranges)
    check(ranges, np.arange(3.0), np.int64(a), np.int64(b), np.int64(s), backend="llvm", jitted=jf)


def test_range_step_zero_raises_like_python():
    with pytest.raises(ValueError, match="zero"):
        numfn.jit(ranges)(np.arange(3.0), np.int64(0), np.int64(3), np.int64(0))


def newton_sqrt(x):
    y = x * 1.0
    err = 1.0
    while err > 1e-12:
        y_new = 0.5 * (y + x / y)
        err = np.abs(y_new - y).max()
        y = y_new
    return y


def test_while_traced_condition(backend):
    jf = numfn.jit(newton_sqrt, backend=backend)
    check(newton_sqrt, np.array([2.0, 9.0, 0.5, 1e6]), backend=backend, jitted=jf)
    assert "loop" in native_steps(jf)
    check(newton_sqrt, np.array([1.0]), backend=backend, jitted=jf)   # converges at once


def collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@pytest.mark.parametrize("n", [1, 6, 27, 97])
def test_while_with_branch_on_integers(n):
    jf = numfn.jit(collatz)
    got = jf(np.int64(n))
    assert got == collatz(n) and got.dtype == np.int64


def first_negative(x):
    acc = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            break
        acc = acc + x[i]
    return acc


def skip_negative(x):
    acc = 0.0
    count = 0
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        acc = acc + x[i]
        count += 1
    return acc, count


def search(x, target):
    i = 0
    while i < x.shape[0]:
        if x[i] == target:
            break
        i += 1
    return i


@pytest.mark.parametrize("x", [[1., 2, 3, -1, 5, 6, 7], [-1.0, 2, 3, 4, 5], [1.0, 2, 3, 4, 5, 6], []])
def test_break_and_continue(backend, x):
    x = np.array(x)
    check(first_negative, x, backend=backend)
    check(skip_negative, x, backend=backend)


@pytest.mark.parametrize("target", [0, 3, 9, 12])
def test_break_in_while(target):
    check(search, np.arange(0, 12, 3), np.int64(target), backend="llvm")


def nested(a, b):
    out = np.zeros((a.shape[0], b.shape[1]))
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            s = 0.0
            for k in range(a.shape[1]):
                s = s + a[i, k] * b[k, j]
            out[i, j] = s
    return out


def test_nested_loops_writing_by_loop_index(backend):
    a, b = RNG.standard_normal((6, 5)), RNG.standard_normal((5, 7))
    jf = numfn.jit(nested, backend=backend)
    check(nested, a, b, backend=backend, jitted=jf)
    assert native_steps(jf)[:2] == ["loop", "loop"]


def prefix_in_place(x):
    for i in range(1, x.shape[0]):
        x[i] = x[i] + x[i - 1]


def rows_in_place(m):
    for i in range(1, m.shape[0]):
        m[i, :] = m[i, :] * 0.5 + m[i - 1, :]
    return m.sum()


def test_loops_writing_into_arguments(backend):
    check_mutates(prefix_in_place, np.arange(10.0), backend=backend)
    check_mutates(rows_in_place, RNG.standard_normal((8, 4)), backend=backend)


def masked_in_loop(x):
    for i in range(6):
        x[x > i] -= 1.0
    return x


def test_masked_writes_inside_a_loop(backend):
    check_mutates(masked_in_loop, RNG.uniform(0, 8, 30), backend=backend)


def promote(x):
    acc = 0                     # a Python int that becomes float64 after the first iteration
    for i in range(x.shape[0]):
        acc = acc + x[i]
    n = 0
    for _i in range(x.shape[0]):
        n = n + 1               # stays an integer
    return acc, n


def test_loop_variable_type_settles_like_numpy():
    check(promote, np.linspace(0, 1, 9), backend="llvm")
    check(promote, np.arange(9, dtype=np.int32), backend="llvm")


def python_state_loop(x):
    parts = []
    for i in range(6):
        parts.append(x[i] * i)
    return np.stack(parts)


def test_loop_building_python_list_unrolls():
    check(python_state_loop, np.arange(8.0), backend="llvm")


def zero_trip(x, n):
    y = x + 1
    for _i in range(n):
        y = y * 2
    z = x * 0
    while n > 100:
        z = z + 1
        n = n - 1
    return y, z


def test_zero_trip_loops():
    check(zero_trip, np.arange(4.0), np.int64(0), backend="llvm")
    check(zero_trip, np.arange(4.0), np.int64(-3), backend="llvm")


# ---------------------------------------------------------------------------------------------------------------
# converted branches

def branch_return(x):
    if x.sum() > 0:
        return x * 2
    return -x


def branch_assign(x, t):
    if x.max() > t:
        y = x - t
        z = 1
    elif x.min() < -t:
        y = x + t
        z = 2
    else:
        y = x * 0
        z = 3
    return y, z


def branch_no_else(x):
    y = x
    if x[0] > 0:
        y = y * 10
    return y


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_if_with_traced_condition(backend, sign):
    x = sign * np.arange(1.0, 5.0)
    jf = numfn.jit(branch_return, backend=backend)
    check(branch_return, x, backend=backend, jitted=jf)
    assert native_steps(jf) == ["branch"]
    check(branch_no_else, x, backend=backend)


@pytest.mark.parametrize("t", [0.5, 2.5, 10.0])
def test_elif_chain(t):
    x = np.array([-3.0, 1.0, 2.0])
    jf = numfn.jit(branch_assign)
    for v in (x, -x, x / 10):
        check(branch_assign, v, t, backend="llvm", jitted=jf)


def clip_loop(x, lo, hi):
    for i in range(x.shape[0]):
        if x[i] < lo:
            x[i] = lo
        elif x[i] > hi:
            x[i] = hi


def test_branch_writes_inside_loop(backend):
    check_mutates(clip_loop, RNG.standard_normal(20) * 3, -1.0, 1.0, backend=backend)


def bool_ops(x, y):
    if x.sum() > 0 and y.sum() > 0:
        r = 1
    elif not (x.max() > 1 or y.max() > 1):
        r = 2
    else:
        r = 3
    return r


@pytest.mark.parametrize("xs,ys", [(1, 1), (1, -1), (-1, -1), (0.1, -0.1), (-0.1, 0.1)])
def test_and_or_not_on_traced_tests(xs, ys):
    jf = numfn.jit(bool_ops)
    check(bool_ops, np.full(3, xs), np.full(3, ys), backend="llvm", jitted=jf)


def static_branch(x, mode):
    if mode == "double":
        return x * 2
    return x + 1


def test_static_condition_stays_python():
    jf = numfn.jit(static_branch, static_argnums=(1,))
    check(static_branch, np.ones(3), "double", backend="llvm", jitted=jf)
    assert native_steps(jf) == []


# ---------------------------------------------------------------------------------------------------------------
# errors name the variable and the line

def changes_shape(x):
    y = x
    for _i in range(x.shape[0]):
        y = np.concatenate([y, x])
    return y


def branch_shapes(x):
    if x.sum() > 0:
        y = x
    else:
        y = x[:1]
    return y


def test_loop_state_changing_shape_is_refused():
    with pytest.raises(numfn.NumfnError, match=r"'y'.*shape|shape.*'y'"):
        numfn.jit(changes_shape)(np.ones(6))


def test_branches_of_different_shapes_are_refused():
    with pytest.raises(numfn.NumfnError, match="shape"):
        numfn.jit(branch_shapes)(np.ones(3))


def out_of_bounds_in_loop(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc + x[i]
    return acc


def test_index_check_inside_a_loop():
    jf = numfn.jit(out_of_bounds_in_loop)
    assert jf(np.arange(5.0), np.int64(5)) == 10.0
    with pytest.raises(IndexError, match="out of bounds"):
        jf(np.arange(5.0), np.int64(6))


# ---------------------------------------------------------------------------------------------------------------
# the explicit primitives

def test_fori_loop(backend):
    def f(x, n):
        return numfn.fori_loop(0, n, lambda i, c: (c[0] + i * x, c[1] * 1.5), (x * 0, x + 1))
    x = np.arange(4.0)
    jf = numfn.jit(f, backend=backend)
    for n in (0, 1, 10):
        got = jf(x, np.int64(n))
        want = (sum(i * x for i in range(n)) + 0 * x, (x + 1) * 1.5 ** n)
        np.testing.assert_allclose(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1])
    # called outside a trace it is a Python loop
    assert numfn.fori_loop(0, 4, lambda i, c: c + i, 0) == 6


def test_while_loop():
    def f(x):
        return numfn.while_loop(lambda c: c[0] < 100, lambda c: (c[0] * 2, c[1] + 1), (x, np.int64(0)))
    for v in (1.0, 3.0, 200.0):
        y, k = numfn.jit(f)(np.float64(v))
        y2, k2 = v, 0
        while y2 < 100: y2, k2 = y2 * 2, k2 + 1
        assert (y, k) == (y2, k2)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan(reverse):
    xs = RNG.standard_normal((9, 2))

    def f(xs):
        return numfn.scan(lambda c, x: (c + x, c * x), np.zeros(2), xs, reverse=reverse)
    got_c, got_y = numfn.jit(f)(xs)
    c, ys = np.zeros(2), []
    for x in (xs[::-1] if reverse else xs):
        c, y = c + x, c * x
        ys.append(y)
    if reverse: ys.reverse()
    np.testing.assert_allclose(got_c, c)
    np.testing.assert_allclose(got_y, np.stack(ys))


def test_cond_and_switch(backend):
    def f(x, k):
        a = numfn.cond(x.sum() > 0, lambda v: v * 2, lambda v: v - 1, x)
        b = numfn.switch(k, [lambda v: v, lambda v: v * 10, lambda v: -v], x)
        return a, b
    jf = numfn.jit(f, backend=backend)
    x = np.arange(3.0)
    for k, sign in ((0, 1), (1, -1), (2, 1), (7, -1), (-5, 1)):   # switch clamps the index, as JAX does
        a, b = jf(sign * x, np.int64(k))
        np.testing.assert_allclose(a, sign * x * 2 if (sign * x).sum() > 0 else sign * x - 1)
        np.testing.assert_allclose(b, [sign * x, sign * x * 10, -sign * x][min(max(k, 0), 2)])


# ---------------------------------------------------------------------------------------------------------------
# slices whose bounds are traced values (loop variables): windows of run-time length

def lu_nopivot(a):
    a = a.copy()
    n = a.shape[0]
    for k in range(n - 1):
        a[k + 1:, k] = a[k + 1:, k] / a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a


def cholesky(a):
    n = a.shape[0]
    L = np.zeros_like(a)
    for j in range(n):
        s = a[j, j] - np.dot(L[j, :j], L[j, :j])
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            L[i, j] = (a[i, j] - np.dot(L[i, :j], L[j, :j])) / L[j, j]
    return L


def forward_substitution(L, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def spd(n):
    m = RNG.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


@pytest.mark.parametrize("n", [1, 2, 9])
def test_factorizations_with_loop_dependent_slices(backend, n):
    a = spd(n)
    check(lu_nopivot, a, backend=backend, scale=10.0 * n)
    check(cholesky, a, backend=backend, scale=10.0 * n)
    check(forward_substitution, np.linalg.cholesky(a), RNG.standard_normal(n), backend=backend, scale=10.0 * n)


def cholesky_by_columns(a):
    n = a.shape[0]
    L = np.zeros_like(a)
    for j in range(n):
        L[j, j] = np.sqrt(a[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1:, j] = (a[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L


def test_window_loops_run_over_the_window_only(backend):
    """Large enough that the updates are split across threads: the loops over a window run to its run-time length
    (numfn.codegen.narrow), in every thread's part, and the update reads and writes the matrix in one kernel."""
    from numfn.codegen.narrow import is_narrowed
    a = spd(520)
    jf = numfn.jit(lu_nopivot, backend=backend)
    np.testing.assert_allclose(jf(a), lu_nopivot(a), rtol=1e-9, atol=1e-9 * 520)
    programs = [k.program for k in jf.specializations[-1].rendered_kernels]
    assert any(any(is_narrowed(u) for u in p.uops) and p.parallel is not None for p in programs)
    c = numfn.jit(cholesky_by_columns, backend=backend)
    np.testing.assert_allclose(c(a[:70, :70]), cholesky_by_columns(a[:70, :70]), rtol=1e-10)
    np.testing.assert_allclose(c(a[:1, :1]), cholesky_by_columns(a[:1, :1]))


def row_tiled(jf) -> bool:
    """Whether a kernel of jf's last specialization runs its rows in tiles (numfn.codegen.opt.choose_row_tile)."""
    from numfn.codegen.narrow import narrow
    from numfn.codegen.opt import choose_row_tile
    from numfn.schedule import LoopKernel

    def items(schedule):
        for ei in schedule:
            yield ei
            if isinstance(ei.kernel, LoopKernel):
                for s in ei.kernel.schedules: yield from items(s)
    return any(ei.lowered is not None and choose_row_tile(narrow(ei.lowered)) is not None
               for ei in items(jf.specializations[-1].schedule))


def window_product(x, k):
    return x[k + 1:, :k] @ x[k, :k] - x[k + 1:, k]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_tiles_of_a_window_product_every_remainder(backend, dtype):
    """The rows below k (their count a run-time value, every remainder modulo the tile) times row k's first k
    elements: the tile loop runs to the rows rounded up, and the copies past the last row store nothing."""
    x = RNG.standard_normal((40, 40)).astype(dtype)
    jf = numfn.jit(window_product, backend=backend)
    for k in (0, 1, 2, 3, 4, 20, 33, 34, 35, 36, 37, 38, 39):
        check(window_product, x, k, backend=backend, jitted=jf, scale=100.0)
    assert row_tiled(jf)
    for n in (1, 2, 3, 9, 37, 38, 39, 40):
        a = spd(n).astype(dtype)
        check(cholesky_by_columns, a, backend=backend, scale=10.0 * n)


def row_updates(x, a, y):
    for k in range(a.shape[0]):
        x[k:] -= a[k:, :k] @ y[:k]
    return x


def test_row_tiles_written_in_place(backend):
    """A window of rows updated in place by a product: a copy past the window's end must not store (it would
    subtract the last row's product twice)."""
    for n in (37, 38, 39, 40):
        a, y = RNG.standard_normal((n, n)), RNG.standard_normal(n)
        jf = check_mutates(row_updates, RNG.standard_normal(n), a, y, backend=backend)
    assert row_tiled(jf)


def matvec_plus(a, x):
    return a @ x + (a * x).sum(axis=-1) * 0.5


@pytest.mark.parametrize("shape", [(1, 40), (3, 40), (4, 8), (4, 32), (5, 33), (6, 64), (17, 33), (7, 1), (2, 6, 9),
                                   (3, 64, 64), (2, 7, 45)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_row_tiles_of_static_products(backend, shape, dtype):
    """Matrix-vector products whose rows are tiled when there are at least a tile's worth: row counts that are and
    are not multiples of it, stacks, integers, a non-contiguous matrix."""
    a = (RNG.standard_normal(shape) * 4).astype(dtype)
    x = (RNG.standard_normal(shape[-1]) * 4).astype(dtype)
    jf = check(matvec_plus, a, x, backend=backend, scale=16.0 * shape[-1])
    assert row_tiled(jf) == (shape[-2] >= 4 and shape[-1] >= 32)   # rows of at least opt.ROW_TILE_MIN_DEPTH
    check(matvec_plus, np.asfortranarray(a) if a.ndim == 2 else a[..., ::-1], x, backend=backend,
          scale=16.0 * shape[-1])


def windows(x, k):
    w = x[k:, :k]
    return (x[:k].sum(), x[k::-1, 0], x[k:1:-2].max(axis=0), x[-k:].mean(axis=1), np.cumsum(x[:k, 1])[-1],
            w.T @ w, np.argmax(w, axis=0), w.max(axis=1), x[1:k, k:] * 2, x[:k][::-1] + x[-k:])


def test_slices_with_traced_bounds(backend):
    x = RNG.standard_normal((6, 6))
    jf = numfn.jit(windows, backend=backend)
    for k in (2, 3, 5):
        check(windows, x, np.int64(k), backend=backend, jitted=jf)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        jf(x, np.int64(1))   # x[1:1:-2] is empty


def window_views(a, k):
    row = a[k, k:]          # a view: writing into it writes into a
    row *= 2
    col = a[k:, 0]
    col[1:] = -1.0
    a[:k, :k] += 100
    return a[k:].sum()


@pytest.mark.parametrize("k", [0, 1, 3])
def test_windows_are_views(backend, k):
    check_mutates(window_views, np.arange(16.0).reshape(4, 4), np.int64(k), backend=backend)


def window_errors(x, k):
    return x[:k] + x[:3]


def test_window_shape_mismatch_raises_like_numpy():
    jf = numfn.jit(window_errors)
    np.testing.assert_allclose(jf(np.arange(5.0), np.int64(3)), np.arange(3.0) * 2)
    with pytest.raises(ValueError, match="broadcast"):
        jf(np.arange(5.0), np.int64(2))


def sums_of_shrinking_prefixes(x):
    acc = 0.0
    n = x.shape[0]
    for i in range(n):
        acc = acc + x[:n - i].sum()
    return acc


def test_loop_over_shrinking_windows(backend):
    check(sums_of_shrinking_prefixes, np.arange(10.0), backend=backend, scale=1000.0)


# ---- names bound on some paths only: Python's rules, or an error saying why ---------------------------------------
def _bound_in_one_branch(x, flag):
    if flag:
        y = x + 1
    if flag:
        return y * 2
    return x


def _last_of_short_loop(x):
    for i in range(3):
        last = x[i] * 2
    return last


def _last_of_long_loop(x):
    for i in range(50):
        last = x[i] * 2
        x = x + 1
    return last


def _last_of_traced_loop(x, n):
    for i in range(n):
        last = x * i
        x = x + 1
    return last


def _one_sided_traced(x):
    if x.sum() > 0:
        y = x + 1
    return y


def _never_bound(x):
    for _ in range(0):
        z = x
    return z


def _python_temporary(x, n):
    for _ in range(n):
        pair = [x, x]
        x = pair[0] + 1
    return x


def test_names_bound_inside_statements_follow_python():
    x = np.arange(60.0)
    f = numfn.jit(_bound_in_one_branch, static_argnames="flag")   # static by name, passed by position
    np.testing.assert_array_equal(f(x[:3], True), _bound_in_one_branch(x[:3], True))
    np.testing.assert_array_equal(f(x[:3], False), _bound_in_one_branch(x[:3], False))
    assert numfn.jit(_last_of_short_loop)(x) == _last_of_short_loop(x)
    assert numfn.jit(_last_of_long_loop)(x) == _last_of_long_loop(x)     # first iteration binds it; then a loop
    np.testing.assert_array_equal(numfn.jit(_python_temporary)(x[:4], 5), _python_temporary(x[:4], 5))
    with pytest.raises(UnboundLocalError):
        numfn.jit(_never_bound)(x)


def _bound_in_an_elif(x, mode):   # the elif is an if inside the else: it binds w on one side only
    if mode == "a":
        v = x + 1
    elif mode == "b":
        w = x * 2
        v = w + 1
    else:
        v = x - 1
    return v


def _bound_in_a_loop_on_some_iterations(x):
    for i in range(4):
        if i == 2:
            w = x * i
    return w


@pytest.mark.parametrize("fn,args", [
    (_bound_in_an_elif, ("a",)), (_bound_in_an_elif, ("b",)), (_bound_in_an_elif, ("c",)),
    (_bound_in_a_loop_on_some_iterations, ()),
])
def test_names_bound_on_one_side_of_an_inner_branch(fn, args):
    # once a converted body ended by reading such a name, which Python leaves unbound there: UnboundLocalError
    x = np.arange(3.0)
    f = numfn.jit(fn, static_argnums=tuple(range(1, 1 + len(args))))
    np.testing.assert_array_equal(f(x, *args), fn(x, *args))


@pytest.mark.parametrize("fn,bound,unbound,words", [
    (_one_sided_traced, (np.ones(3),), (-np.ones(3),), "only one side of the branch"),
    (_last_of_traced_loop, (np.ones(3), 4), (np.ones(3), 0), "the loop at line"),
])
def test_names_bound_on_some_traced_paths_follow_python_saying_why(fn, bound, unbound, words):
    """Bound where the path that binds them ran (tests/test_bound_by_control_flow.py): read elsewhere, Python's
    UnboundLocalError, saying why."""
    f = numfn.jit(fn)
    np.testing.assert_array_equal(f(*bound), fn(*bound))
    with pytest.raises(UnboundLocalError, match=words):
        f(*unbound)


# ---- vmap and svmap of functions with loops and branches --------------------------------------------------------
def count_up(x, n):
    total = x * 0.0
    for i in range(n):
        total = total + x * i
    return total


def sign_branch(x):
    if x.sum() > 0:
        y = x * 2.0
    else:
        y = x - 1.0
    return y


@pytest.mark.parametrize("mapper", ["vmap", "svmap"])
def test_mapped_loops_and_branches_follow_each_example(mapper):
    """A mapped while loop runs until every example is done (each example stops where its own loop would), a
    trip count per example, a branch per example."""
    m = getattr(numfn, mapper)
    a = RNG.uniform(0.5, 1e4, (5, 3))
    a[2] = 1.0   # an example that converges at once
    got = m(newton_sqrt)(a)
    np.testing.assert_allclose(got, np.stack([newton_sqrt(r) for r in a]), rtol=1e-12)
    x = RNG.standard_normal((4, 3))
    n = np.array([0, 1, 5, 2], dtype=np.int64)
    np.testing.assert_allclose(m(count_up)(x, n), np.stack([count_up(r, k) for r, k in zip(x, n)]), rtol=1e-12)
    x[1] = -np.abs(x[1])
    x[0] = np.abs(x[0])
    np.testing.assert_allclose(m(sign_branch)(x), np.stack([sign_branch(r) for r in x]), rtol=1e-12)


def test_unroll_option_decides_which_static_loops_unroll():
    def f(x):
        for i in range(6):
            x = x * 0.5 + i
        return x
    x = np.arange(3.0)
    native = numfn.jit(f)                  # 6 > UNROLL: a native loop
    unrolled = numfn.jit(f, unroll=10)
    np.testing.assert_allclose(native(x), f(x))
    np.testing.assert_allclose(unrolled(x), f(x))
    assert native_steps(native) == ["loop"] and native_steps(unrolled) == []
    with pytest.raises(ValueError, match="unroll"):
        numfn.jit(f, unroll=-1)


def recurrence(x):
    out = np.zeros_like(x)
    out[0] = 1.0
    for i in range(1, x.shape[0]):
        out[i] = out[i - 1] * x[i]
    return out


def recurrence_and_start(x):
    out = x * 2.0
    for i in range(1, x.shape[0]):
        out[i] = out[i - 1] * x[i]
    return out, (x * 2.0).sum()   # the loop's initial value (the same graph node) is read after the loop


def start_read_after_the_loop(x):
    L = np.zeros_like(x)
    L[0] = 1.0
    t = L * 2.0                 # built from the loop's initial memory, used by the loop (c) and after it
    c = t.sum()

    def body(i, L):
        L[i] = L[i - 1] * x[i] + c
        return L
    return numfn.fori_loop(1, x.shape[0], body, L) + t


def start_read_after_the_loop_numpy(x):
    L = np.zeros_like(x)
    L[0] = 1.0
    t = L * 2.0
    c = t.sum()
    for i in range(1, x.shape[0]): L[i] = L[i - 1] * x[i] + c
    return L + t


def test_loop_state_is_computed_where_the_loop_updates_it(backend):
    """A loop's initial state that nothing else reads is computed in the state's memory, and a state the loop writes
    in place is the output's memory: no kernel only copies (the copies cost a pass over the array each)."""
    x = np.linspace(0.5, 1.5, 64)
    jf = numfn.jit(recurrence, backend=backend)
    check(recurrence, x, backend=backend, jitted=jf)
    assert native_steps(jf) == ["loop"]
    whole = [ei.kernel.name for ei in jf.specializations[-1].schedule if getattr(ei.kernel, "shape", ()) == x.shape]
    assert len(whole) == 1, whole   # np.zeros_like, into the output; no copy into the loop's state or out of it
    # the initial value read again after the loop keeps its own memory, also through a value built from it
    check(recurrence_and_start, x, backend=backend)
    np.testing.assert_allclose(numfn.jit(start_read_after_the_loop, backend=backend)(x),
                               start_read_after_the_loop_numpy(x), rtol=1e-12)


def sorted_masked_in_loop(x):
    for i in range(6):
        m = x > i
        x[m] = np.sort(x[m]) - 1.0
    return x


def test_masked_write_of_a_sorted_selection_inside_a_loop():
    """The versions of x met the sort calls' order in a cycle (the scheduler stopped with StopIteration); a write
    now starts from a copy where that happens."""
    check_mutates(sorted_masked_in_loop, RNG.uniform(0, 8, 30), backend="llvm")
    jf = numfn.jit(sorted_masked_in_loop, unroll=0)   # a native loop
    x = RNG.uniform(0, 8, 30)
    y = x.copy()
    np.testing.assert_array_equal(jf(x), sorted_masked_in_loop(y))
    np.testing.assert_array_equal(x, y)


def _nested_loops_one_target(x):   # both loops bind `_`: the outer loop's body function had it twice
    for _ in range(6):
        for _ in range(5):
            x = x * 0.9 + 1
    for i in range(7):
        for i in range(i):
            x = x - 0.01 * i
    return x


def test_nested_loops_with_the_same_target(backend):
    check(_nested_loops_one_target, np.ones(3), backend=backend)


# ---- Python's builtins on traced values, and loops over traced arrays ----------------------------------------------
# int(), float(), bool(), round(), min() and max() of traced scalars in converted code are Python's (a Python int or
# float, the first least or greatest element); `for v in array:` walks the array's first axis as a loop (native when
# long). Issue 26's CRC-16 and issue 28's dynamic-programming tables are written this way.

def _crc16(data):
    crc = 0
    for b in data:
        crc ^= int(b)
        for _ in range(8):
            if crc & 1:
                crc = (crc >> 1) ^ 0xA001
            else:
                crc >>= 1
    return crc


def _dtw(a, b):
    n, m = len(a), len(b)
    d = np.full((n + 1, m + 1), np.inf)
    d[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = abs(a[i - 1] - b[j - 1])
            d[i, j] = cost + min(d[i - 1, j], d[i, j - 1], d[i - 1, j - 1])
    return d[n, m]


def _best_prefix(s):
    t = np.zeros(len(s) + 1)
    for i in range(1, len(s) + 1):
        t[i] = max(t[i - 1] + s[i - 1], s[i - 1], 0.0)
    return t


def _builtins(x):
    total = 0.0
    for v in x:
        total = total + float(v) * 2 + int(v) + round(v) + max(v, 0.5) + min(v, -v) + abs(v) + bool(v)
    return total, round(x[0], 1), int(x.sum())


@pytest.mark.parametrize("fn, args", [
    (_crc16, (np.random.default_rng(0).integers(0, 256, 40).astype(np.uint8),)),
    (_dtw, (np.sin(np.linspace(0, 3, 17)), np.cos(np.linspace(0, 2, 13)))),
    (_best_prefix, (np.random.default_rng(1).standard_normal(25),)),
    (_builtins, (np.array([0.3, -1.7, 2.5, 3.5, -0.5, 7.25, -0.0]),)),
], ids=lambda v: getattr(v, "__name__", None))
def test_builtins_and_loops_over_arrays(fn, args, backend):
    check(fn, *args, backend=backend)


def _int_of(x):
    return x * int(x[-1])


@pytest.mark.parametrize("last, error", [(np.nan, ValueError), (np.inf, OverflowError)])
def test_int_of_a_value_python_cannot_convert(last, error, backend):
    with pytest.raises(error) as expected:
        _int_of(np.array([1.0, last]))
    with pytest.raises(error, match=str(expected.value)):
        numfn.jit(_int_of, backend=backend)(np.array([1.0, last]))


# a loop's state that the body broadcasts to a larger shape (the escape-time loop on ogrid-style inputs): with a static
# trip count the first iteration runs on its own and the loop goes on with the larger shape, as NumPy's values do

def escape_time_broadcast(cr, ci, maxiter):
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    n = np.zeros(np.broadcast_shapes(cr.shape, ci.shape), np.int32)
    for _ in range(maxiter):
        zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci
        n += zr * zr + zi * zi <= 4
    return n, zr


def growing_while(x, y, limit):
    z = x.copy()
    while z.sum() < limit:
        z = z * 2.0 + y
    return z


@pytest.mark.parametrize("maxiter", [1, 2, 30])
def test_state_broadcast_to_a_larger_shape_static_trip_count(maxiter, backend):
    cr = np.linspace(-2.0, 1.0, 7)[None, :]
    ci = np.linspace(-1.0, 1.0, 5)[:, None]
    with np.errstate(all="ignore"):
        check(escape_time_broadcast, cr, ci, maxiter, backend=backend,
              jitted=numfn.jit(escape_time_broadcast, backend=backend, static_argnums=(2,)))


def test_state_broadcast_to_a_larger_shape_run_time_trip_count_is_refused():
    cr, ci = np.zeros((1, 3)), np.zeros((2, 1))
    with pytest.raises(numfn.NumfnError, match=r"'zr' changes shape from \(1, 3\) to \(2, 3\) in the loop body .*"
                                                r"known only at run time"):
        numfn.jit(escape_time_broadcast)(cr, ci, 3)
    with pytest.raises(numfn.NumfnError, match=r"'z' changes shape from \(3,\) to \(2, 3\).*known only at run time"):
        numfn.jit(growing_while)(np.ones(3), np.ones((2, 1)), 100.0)
