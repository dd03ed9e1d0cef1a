"""Regressions in loops, branches and their scheduling found by the differential fuzzer (issue 29): each program
is compared with NumPy on both backends."""
import numpy as np
import numfn
import pytest

from helpers import check, check_mutates


# ---------------------------------------------------------------------------------------------------------------
# 1. a native loop's state swaps buffers each iteration: a write after the loop must land in the buffer that holds
# the last iteration's value, whatever the trip count's parity

def _newton_then_write(x):
    y = x + 0.0
    for i in range(5):
        y = 0.5 * (y + x / y)
    y[0] = -1.0
    return y


def _odd_loop_augmented(x):
    y = x * 1.0
    for i in range(7):
        y = y * 0.5 + 1.0
    y[1:] += 10.0
    return y


def _odd_loop_view_write(x):
    y = x + 0.0
    for i in range(9):
        y = y * 1.5 - 1.0
    v = y[::2]
    v += 100.0
    return y


def _runtime_for(x, n):
    y = x + 0.0
    for i in range(n.sum()):
        y = y * 1.5 + 1.0
    y[-1] = 0.25
    return y


def _runtime_while(x, n):
    y = x + 0.0
    k = 0
    while k < n.sum():
        y = 0.5 * (y + x / y)
        k += 1
    y[1:] *= 2.0
    return y


def _two_loops(x):   # the second loop writes in place into the returned array, starting from the first's state
    y = x + 0.0
    for i in range(5):
        y = 0.5 * (y + x / y)
    for i in range(5):
        y[i % 3] += 1.0
    return y


def _two_loops_then_write(x):   # the same, then a write after both: the first loop's state must not start in
    y = x + 0.0                   # the output (it swaps buffers; 7 trips leave it in the other one)
    for i in range(7):
        y = y - x
    for i in range(5):
        y[i % 2] = 3.0
    y[:1] = 0.5
    return y


def _swap_pair(x):
    y = x.copy()
    z = x * 2.0
    for i in range(5):
        y, z = z + 1.0, y
    z[0] = -5.0
    return y, z


def _write_and_reduce(x):
    y = x + 0.0
    for i in range(7):
        y = y * 0.5
    y[0] = -1.0
    return y, y.sum()


def _nested_write(x, n):   # a loop inside a loop's body, written after it
    y = x + 0.0
    for j in range(5):
        k = 0
        while k < n.sum():
            y = y * 0.5 + 1.0
            k += 1
        y[0] = y[0] + 3.0
    return y


def _two_d(x):
    y = x + 0.0
    for i in range(5):
        y = y @ x * 0.25
    y[:, 0] = 1.0
    return y


X3 = np.array([2.0, 3.0, 4.0])


# ---------------------------------------------------------------------------------------------------------------
# a body that writes into a state array and then binds the name to another array: Python's first iteration writes
# into the array the name held before the loop (which another name, a view's base or the caller holds too), the
# later ones into arrays the loop made (fuzz seed 20001493: the first write was lost). numfn runs the first
# iteration on its own (under a branch when the trip count is traced), then the loop from the second.

def _shared_local(x, n):
    v = x + 1.0
    w = v                       # w sees the first iteration's write only
    for i in range(6):
        v[0] += 2.0
        v = np.minimum(v, 3.0) - 1.0
    return v, w


def _shared_argument(x, n):     # the caller's x gets the first iteration's write
    v = x
    for i in range(n.sum()):
        v[0] += 1.0
        v = v * 2.0
    return v


def _shared_view(x, n):         # through a view: x[1] is written once
    v = x[1:]
    for i in range(6):
        v[0] = -1.0
        v = v + 1.0
    return v


def _shared_while(x, n):
    v = x + 1.0
    w = v
    k = 0
    while k < n.sum():
        v[-1] = 5.0
        v = v * 0.5
        k += 1
    return v, w


def _shared_with_break(x, n):   # the break is decided by a traced value, inside the first iteration too
    v = x + 0.0
    w = v
    for i in range(8):
        v[0] += 1.0
        if v.sum() > 40.0:
            break
        v = v * 3.0
    return v, w


@pytest.mark.parametrize("trip", [0, 1, 2, 7])
@pytest.mark.parametrize("fn", [_shared_local, _shared_argument, _shared_view, _shared_while, _shared_with_break],
                         ids=lambda f: f.__name__)
def test_first_iteration_writes_shared_memory(fn, trip, backend):
    check_mutates(fn, np.arange(4.0), np.array(trip), backend=backend)


@pytest.mark.parametrize("fn, args", [
    (_newton_then_write, (X3,)),
    (_odd_loop_augmented, (np.arange(4.0),)),
    (_odd_loop_view_write, (np.arange(5.0),)),
    (_runtime_for, (np.arange(5.0), np.array(5))),
    (_runtime_for, (np.arange(5.0), np.array(6))),
    (_runtime_for, (np.arange(5.0), np.array(0))),
    (_runtime_while, (X3, np.array(3))),
    (_runtime_while, (X3, np.array(4))),
    (_two_loops, (X3,)),
    (_two_loops_then_write, (np.array([1.0, 1.0]),)),
    (_swap_pair, (X3,)),
    (_write_and_reduce, (X3,)),
    (_nested_write, (X3, np.array(3))),
    (_nested_write, (X3, np.array(2))),
    (_two_d, (np.arange(9.0).reshape(3, 3) / 9,)),
], ids=lambda v: getattr(v, "__name__", None))
def test_write_after_odd_loop(fn, args, backend):
    check(fn, *args, backend=backend)


# ---------------------------------------------------------------------------------------------------------------
# 15. a branch whose condition can never (or always) hold: its index folds to a constant

def _never(x):
    if (x > 0).sum() >= 2:
        return x + 1
    return x - 1


def _never_in_loop(x):   # the index is a constant the loop captures
    y = x * 1.0
    for i in range(6):
        if (x > 0).sum() >= 2:
            y = y + 1
        else:
            y = y * 2
    return y


def _never_in_while(x, n):   # the index depends on the state: computed in the loop
    y = x + 0.0
    i = 0
    while i < n.sum():
        if (y > 0).sum() >= 2:
            y = y + 1
        else:
            y = y - 1
        i += 1
    return y


def _always_written(x):
    y = x * 2.0
    if (x > 5).sum() <= 1:
        y[0] = 9.0
    else:
        y = y - 1
    return y


@pytest.mark.parametrize("fn, args", [
    (_never, (np.array(3.0),)),
    (_never, (np.array(-3.0),)),
    (_never_in_loop, (np.array(3.0),)),
    (_never_in_while, (np.array(3.0), np.array(7))),
    (_always_written, (np.ones(1),)),
], ids=lambda v: getattr(v, "__name__", None))
def test_constant_branch(fn, args, backend):
    check(fn, *args, backend=backend)


# ---------------------------------------------------------------------------------------------------------------
# 13. kernel names are unique in a program: kernels inside branches and loops are scheduled apart, and a repeated
# `E_1` renamed `E_1_1` met the 1x1 kernel of that name

def _outer_of_branch(x, a):
    if x.sum() > 0:
        v = a * 2.0
    else:
        v = a - 1.0
    return np.outer(v, v) + x.sum()


def _outer_in_branch(x, a):
    if x.sum() > 0:
        m = np.outer(a, a + 1.0)
    else:
        m = np.outer(a - 1.0, a)
    return m * 2.0, a + x


def _outer_of_while(x, a):
    v = a + 0.0
    while v.sum() < 10.0:
        v = v * 2.0 + np.abs(x)
    return np.outer(v, a), np.outer(a, v) - 1.0


def _many_small_kernels(x, a):   # shapes (1,), (1, 1), (1, 1, 1) inside and outside a loop
    v = a + 0.0
    w = np.outer(a, a) * 0.1
    for i in range(6):
        v = v * 0.5 + x.sum()
        w = w.T @ w * 0.1 + np.outer(v, v) * 0.01
    return w[None] + v, np.outer(v, w.ravel())


@pytest.mark.parametrize("fn", [_outer_of_branch, _outer_in_branch, _outer_of_while, _many_small_kernels],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("size", [1, 2])
def test_unique_kernel_names(fn, size, backend):
    check(fn, np.linspace(-1.0, 1.0, size) + 0.5, np.linspace(0.5, 1.5, size), backend=backend)
    check(fn, np.linspace(-2.0, 0.0, size), np.linspace(0.5, 1.5, size), backend=backend)


def test_unique_names():
    from numfn.program_build import unique_names
    assert unique_names(["E_1", "E_1", "E_1_1", "E_1", "E_1_1"]) == ["E_1", "E_1_2", "E_1_1", "E_1_3", "E_1_1_1"]


# ---------------------------------------------------------------------------------------------------------------
# 2. a view chosen by a branch is a view: a write through it reaches the array (an argument: the caller's)

def _branch_slices(x, flag):
    if flag.sum() > 0:
        v = x[1:]
    else:
        v = x[:-1]
    v[0] = 7.0
    return v


def _branch_2d(x, flag):   # a transpose or a flip
    if flag.sum() > 0:
        v = x.T
    else:
        v = x[::-1]
    v[0] += 100.0
    return v.sum(), x * 1


def _branch_same_view(x, flag):   # the same view on both sides, written inside one of them too
    if flag.sum() > 0:
        v = x[1:]
        v[1] = -3.0
    else:
        v = x[1:]
    v *= 2.0
    return v


def _branch_view_of_variable(x, flag):   # a view of a variable the branch reassigns
    v = x[:4]
    if flag.sum() > 0:
        v = v[::-1]
    v[0] = 42.0
    return x + 0


def _branch_view_in_loop(x, flag):
    for i in range(6):
        if flag[i % 2] > 0:
            v = x[1:]
        else:
            v = x[:-1]
        v[i % 3] += 1.0
    return x + 0


def _branch_0d_view(x, flag):
    if flag.sum() > 0:
        v = x[2, ...]
    else:
        v = x[3, ...]
    v[...] = 1.5
    return x + 0


def _branch_view_reads_later_write(x, flag):   # the array written after: the view sees it
    if flag.sum() > 0:
        v = x[1:]
    else:
        v = x[:-1]
    x[2] = -8.0
    return v + 0


def _branch_local_view(x, flag):   # a local array, read after the write through the view
    y = x * 2.0
    if flag.sum() > 0:
        v = y[:, 1:]
    else:
        v = y[1:, :].T
    v -= 1.0
    return y


# a result that is a view of an array in some branches only (or of different arrays): linked to each array

def _branch_same_or_fresh(x, flag):
    if flag.sum() > 0:
        v = x
    else:
        v = x * 2
    v[0] = 5.0
    return x + 0, v


def _branch_two_arrays(x, flag):
    y = x[::-1] * 10.0
    if flag.sum() > 0:
        v = x[1:]
    else:
        v = y[:-1]
    v += 1.0
    return x + 0, y, v


def _branch_fresh_reads_later_write(x, flag):
    if flag.sum() > 0:
        v = x
    else:
        v = x * 2
    x[1] = -1.0
    return v + 0


def _branch_fresh_view_of_result(x, flag):
    if flag.sum() > 0:
        v = x[::-1]
    else:
        v = np.zeros(x.shape)
    w = v[::2]
    w[0] = 9.0
    return x + 0, v + 0


def _branch_fresh_written_in_loop(x, flag):
    if flag.sum() > 0:
        v = x
    else:
        v = x * 2
    for i in range(6):
        v[i % 3] += 1.0
    return x + 0, v + 0


def _branch_local_or_fresh(x, flag):
    y = x * 3.0
    if flag.sum() > 0:
        v = y[1:]
    else:
        v = y[:-1] + 1
    v *= 2.0
    return y


@pytest.mark.parametrize("fn, x", [
    (_branch_same_or_fresh, np.arange(5.0)),
    (_branch_two_arrays, np.arange(5.0)),
    (_branch_fresh_reads_later_write, np.arange(5.0)),
    (_branch_fresh_view_of_result, np.arange(5.0)),
    (_branch_fresh_written_in_loop, np.arange(5.0)),
    (_branch_local_or_fresh, np.arange(5.0)),
    (_branch_slices, np.arange(5.0)),
    (_branch_2d, np.arange(9.0).reshape(3, 3)),
    (_branch_same_view, np.arange(6.0)),
    (_branch_view_of_variable, np.arange(6.0)),
    (_branch_view_in_loop, np.arange(6.0)),
    (_branch_0d_view, np.arange(6.0)),
    (_branch_view_reads_later_write, np.arange(6.0)),
    (_branch_local_view, np.arange(9.0).reshape(3, 3)),
    (_branch_local_view, np.arange(4.0).reshape(2, 2)),
], ids=lambda v: getattr(v, "__name__", None))
@pytest.mark.parametrize("flag", [np.ones(2), np.array([1.0, -2.0]), -np.ones(2)], ids=["then", "mixed", "else"])
def test_branch_chosen_view(fn, x, flag, backend):
    check_mutates(fn, x, flag, backend=backend)


# ---------------------------------------------------------------------------------------------------------------
# 14. complex values in loops and branches: the state, operands and results in pair form (shape + (2,))

def _escape_time(c):
    z = np.zeros_like(c)
    count = np.zeros(c.shape, np.int64)
    for i in range(30):
        inside = np.abs(z) <= 2.0
        z = np.where(inside, z * z + c, z)
        count += inside
    return count, z


def _escape_while(c, n):
    z = c * 0
    k = 0
    while k < n.sum():
        z = z * z + c
        z[np.abs(z) > 4] = 0
        k += 1
    return z


def _complex_in_place(c):
    z = c.copy()
    for i in range(7):
        z[i % 3] = z[i % 3] * (1 + 0.5j) + c[0]
    return z


def _complex_inside_real_loop(x):
    y = x + 0.0
    for i in range(6):
        y = np.abs(y * 1j + 0.5)
    return y


def _complex_branch(c, n):
    z = c * 0
    for j in range(5):
        if (np.abs(z) > 1).sum() > n.sum():
            z = z * 0.5
        else:
            z = z * z + c
    return z, z.real.sum()


def _complex_branch_view(z, flag):
    if flag.sum() > 0:
        v = z[1:]
    else:
        v = z[:-1]
    v[0] = 3 - 2j
    return v * 1


def _complex_primitives(c):
    def step(carry, x):
        return carry * x + 1j, carry.real * x
    carry, ys = numfn.scan(step, c[0], c)
    w = numfn.while_loop(lambda z: np.abs(z).max() < 50, lambda z: z * (1 + 1j), c + 0.1)
    s = numfn.cond(c.real.sum() > 0, lambda a: a * 2j, lambda a: a - 1, c)
    return carry, ys, w, s


_PLANE = np.linspace(-2, 1, 5)[None, :] + 1j * np.linspace(-1, 1, 4)[:, None]


@pytest.mark.parametrize("fn, args", [
    (_escape_time, (_PLANE,)),
    (_escape_time, (_PLANE.astype(np.complex64),)),
    (_escape_while, (_PLANE, np.array(5))),
    (_escape_while, (_PLANE, np.array(0))),
    (_complex_in_place, (_PLANE[0],)),
    (_complex_inside_real_loop, (np.linspace(-2, 1, 5),)),
    (_complex_branch, (_PLANE, np.array(2))),
    (_complex_branch, (_PLANE.astype(np.complex64), np.array(30))),
    (_complex_branch_view, (_PLANE[0].copy(), np.ones(1))),
    (_complex_branch_view, (_PLANE[0].copy(), -np.ones(1))),
    (_complex_primitives, (_PLANE[1] * 0.5,)),
], ids=lambda v: getattr(v, "__name__", None))
def test_complex_in_control_flow(fn, args, backend):
    if fn is _complex_branch_view: check_mutates(fn, *args, backend=backend)
    else: check(fn, *args, backend=backend)


# ---------------------------------------------------------------------------------------------------------------
# views written through in native loops: a loop variable that shares memory with an outer array (a view of it, an
# array with views, a branch's result linked to it, an argument) and is written in place in the loop body writes
# into that memory, as NumPy does (the loop carries the base; the variable stays its view)

def _view_for(x):
    v = x[1:]
    for i in range(6):
        v += 1
    return x


def _view_for_returns_view(x):
    v = x[::2]
    for i in range(7):
        v *= 2
    return v, x


def _view_while(x, n):
    v = x[::-1]
    i = 0
    while i < n:
        v[0] = v[0] + 1
        v += 0.5
        i += 1
    v[1] = -1.0
    return x


def _view_runtime_for(x, n):
    v = x[..., 1:]
    for i in range(n):
        v *= 2
        v[...] = v + i
    v[..., 0] = -1.0   # after the loop (also after no iteration) v is still x's view
    return x.sum(), x


def _view_transpose_2d(x):
    v = x.T[::-1, ::2]
    for i in range(5):
        v[0] = v[0] + i
        v -= 1
    return x


def _view_reshape(x):
    v = x.reshape(-1)[2:]
    for i in range(6):
        v[1] += 1
        v += 0.5
    return x


def _view_of_local(x):
    y = np.zeros(5)
    v = y[::2]
    for i in range(6):
        v += x[:3]
    return y


def _local_with_view(x):
    y = x * 2
    w = y[1:]
    for i in range(5):
        y += 1
    return w


def _argument_in_loop(x):
    for i in range(6):
        x += 1
    return x.sum()


def _view_base_read(x):
    v = x[1:]
    s = 0.0
    for i in range(6):
        v += 1
        s = s + x.sum()
    return s, x


def _view_nested(x):
    v = x[:, 1:]
    for i in range(5):
        for j in range(6):
            v[:, j % 2] += j
            v -= 1
    return x


def _view_nested_runtime(x, n):
    v = x[1:]
    for i in range(n):
        w = v[::-1]
        for j in range(n):
            w += 1
    return x


def _view_reassigned(x):
    v = x[1:]
    for i in range(6):
        v = v + 1
    v += 1
    return x, v


def _view_taken_again(x):
    v = x[1:]
    for i in range(6):
        v += 1
        v = x[1:]
    return x, v


def _branch_view_loop(x, flag):
    if flag.sum() > 0:
        v = x[1:]
    else:
        v = x[:-1]
    for i in range(6):
        v += 1
    return x, v


def _branch_linked_loop(x, flag):
    if flag.sum() > 0:
        v = x
    else:
        v = x * 2
    for i in range(6):
        v[0] += 1
        v += 1
    return x, v


def _branch_in_loop_of_view(x, n):
    v = x[1:]
    s = 0.0
    for i in range(6):
        v += 1
        if n.sum() > 0:   # a result linked to x, made in the body (its link is the body's own)
            w = v
        else:
            w = v * 2
        s = s + w.sum()
    return x, v, s


def _runtime_window_loop(x, n):
    v = x[:n]          # a view of run-time length: passed through (it cannot be a placeholder)
    w = x[n:n + 2]
    for i in range(6):
        v += 1
        w *= 2
    return x


_A1 = np.arange(7.0)
_A2 = np.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize("fn, args", [
    (_view_for, (_A1,)),
    (_view_for, (_A2,)),
    (_view_for_returns_view, (_A1,)),
    (_view_while, (_A1, np.array(0))),
    (_view_while, (_A1, np.array(5))),
    (_view_while, (_A1, np.array(6))),
    (_view_runtime_for, (_A2, np.array(0))),
    (_view_runtime_for, (_A2, np.array(5))),
    (_view_runtime_for, (_A2, np.array(6))),
    (_view_transpose_2d, (_A2,)),
    (_view_reshape, (_A2,)),
    (_view_of_local, (_A1,)),
    (_local_with_view, (_A1,)),
    (_argument_in_loop, (_A2,)),
    (_argument_in_loop, (np.arange(5, dtype=np.int32),)),
    (_view_base_read, (_A1,)),
    (_view_nested, (_A2,)),
    (_view_nested_runtime, (_A1, np.array(5))),
    (_view_nested_runtime, (_A1, np.array(0))),
    (_view_reassigned, (_A1,)),
    (_view_taken_again, (_A1,)),
    (_branch_view_loop, (_A1, np.ones(1))),
    (_branch_view_loop, (_A1, -np.ones(1))),
    (_branch_linked_loop, (_A1, np.ones(1))),
    (_branch_linked_loop, (_A1, -np.ones(1))),
    (_branch_in_loop_of_view, (_A1, np.ones(1))),
    (_branch_in_loop_of_view, (_A1, -np.ones(1))),
    (_runtime_window_loop, (_A1, np.array(0))),
    (_runtime_window_loop, (_A1, np.array(3))),
    (_runtime_window_loop, (_A1, np.array(7))),
], ids=lambda v: getattr(v, "__name__", None))
def test_loop_writes_through_views(fn, args, backend):
    check_mutates(fn, *args, backend=backend)


def test_loop_rebinding_runtime_window_still_refused(backend):
    def f(x, n):
        v = x[:n]
        for i in range(6):
            v = v + 1
        return v
    with pytest.raises(numfn.NumfnError, match="run-time length"):
        numfn.jit(f, backend=backend)(np.arange(6.0), np.array(2))


# ---------------------------------------------------------------------------------------------------------------
# writes in a branch into an array from outside it (an argument, a local array, a view of either): the branch is
# given the array itself, so the write reaches its memory and every name and view of it, as in NumPy

def _if_view_write(x, n):
    v = x[1:]
    if n.sum() > 0:
        v += 1
    return x


def _if_argument_augmented(x, n):
    if n.sum() > 0:
        x += 1
    return x


def _if_argument_item(x, n):
    if n.sum() > 0:
        x[0] = 5
    return x


def _else_view_write(x, n):
    v = x[1:]
    if n.sum() > 0:
        pass
    else:
        v *= 2
    return x


def _both_sides_views(x, n):
    v = x[1:]
    w = x[:2]
    if n.sum() > 0:
        v += 1
    else:
        w -= 3
    return x, v, w


def _nested_branch_view(x, n):
    v = x[1:]
    if n.sum() > 0:
        if n.sum() > 1:
            v += 1
        else:
            v[0] = 7
    return x


def _branch_in_loop_view(x, n):
    v = x[1:]
    for i in range(6):
        if n.sum() > i:
            v += 1
    return x


def _branch_view_returned(x, n):
    v = x[1:]
    if n.sum() > 0:
        v += 1
    return v, v.sum()


def _branch_local_written(x, n):
    y = x * 2
    if n.sum() > 0:
        y += 1
    return y


def _branch_local_view_written(x, n):
    y = x * 2
    v = y[::2]
    if n.sum() > 0:
        v += 1
    return y, v


def _branch_alias_names(x, n):
    y = x * 2
    z = y                 # two names of one array
    if n.sum() > 0:
        y += 1
    return z


def _branch_2d_rows(x, n):
    r = x[n.sum()]        # a view of the row picked by a traced integer
    c = x[:, 1]
    if n.sum() > 0:
        r += 10
    else:
        c *= -1
    return x, r, c


def _branch_write_then_rebind(x, n):
    v = x[1:]
    if n.sum() > 0:
        v += 1
        v = v * 0     # the name moves on; the write stays in x
    return x, v


def _elif_views(x, n):
    a = x[:2]
    b = x[2:4]
    if n.sum() > 1:
        a += 1
    elif n.sum() > 0:
        b += 1
    else:
        x[-1] = -1
    return x


def _branch_write_read_after(x, n):
    v = x[1:]
    if n.sum() > 0:
        v += 1
    return x.sum() + v[0]


def _branch_int_dtype(x, n):
    v = x[::2]
    if n.sum() > 0:
        v //= 2
    return x


def _cond_api_write(x, n):
    def bump(a):
        a += 1
        return a.sum()

    def keep(a):
        return a.sum()
    return numfn.cond(n.sum() > 0, bump, keep, x[1:])


def _written_or_rebound(x, n):   # one side writes the argument, the other binds the name to a new array
    if n.sum() > 0:
        x[0] = 9.0
    else:
        x = x - 1
    x[1] = -2.0          # into the argument, or into the new array
    return x


def _view_written_or_rebound(x, n):
    v = x[2:]
    if n.sum() > 0:
        v[0] = 9.0
    else:
        v = v * 3
    v[-1] = -2.0
    return x, v


def _branch_0d_ellipsis_view(x, n):
    v = x[0, ...]
    if n.sum() > 0:
        v += 1
    return x


def _branch_in_while_view(x, n):
    v = x[1:]
    k = 0
    while k < n.sum():
        if k % 2 == 0:
            v += 1
        k += 1
    return x


def _branch_complex_view(x, n):
    v = x[1:]
    if n.sum() > 0:
        v += 1j
    return x


def _branch_bool_view(x, n):
    v = x[::2]
    if n.sum() > 0:
        v |= True
    return x


def _branch_row_fill(x, n):
    v = x[n.sum()]
    if n.sum() > 0:
        v[...] = 3
    return x


def _branch_transposed(x, n):
    v = x.T
    if n.sum() > 0:
        v[0] += 1
    return x


def _branch_flat_in_loop(x, n):
    v = x.reshape(-1)
    for i in range(3):
        if n.sum() > i:
            v[i] = -1
        else:
            v[i + 3] = -2
    return x


def _branch_copy_view(x, n):
    y = x.copy()
    v = y[1:]
    if n.sum() > 0:
        v += 1
    return y


def _branch_view_of_view(x, n):
    a = x[:3]
    if n.sum() > 0:
        b = a[1:]
        b += 1
    return x


_B1 = np.arange(6.0)
_B2 = np.arange(12.0).reshape(3, 4)
_BRANCH_WRITES = [
    (_written_or_rebound, _B1), (_view_written_or_rebound, _B1), (_view_written_or_rebound, _B2),
    (_if_view_write, _B1), (_if_argument_augmented, _B1), (_if_argument_item, _B1), (_else_view_write, _B1),
    (_both_sides_views, _B1), (_nested_branch_view, _B1), (_branch_in_loop_view, _B1), (_branch_view_returned, _B1),
    (_branch_local_written, _B1), (_branch_local_view_written, _B1), (_branch_alias_names, _B1),
    (_branch_2d_rows, _B2), (_branch_write_then_rebind, _B1), (_elif_views, _B1), (_branch_write_read_after, _B1),
    (_branch_int_dtype, np.arange(7, dtype=np.int32)), (_if_view_write, _B2), (_if_argument_augmented, _B2),
    (_cond_api_write, _B1), (_branch_0d_ellipsis_view, _B2), (_branch_in_while_view, _B1),
    (_branch_complex_view, _B1 + 0j), (_branch_bool_view, _B1 > 3), (_branch_row_fill, _B2), (_branch_transposed, _B2),
    (_branch_flat_in_loop, _B2), (_branch_copy_view, _B1), (_branch_view_of_view, _B1),
]


@pytest.mark.parametrize("n", [0, 1, 2])
@pytest.mark.parametrize("fn, x", _BRANCH_WRITES, ids=lambda v: getattr(v, "__name__", None))
def test_branch_writes_through(fn, x, n, backend):
    check_mutates(fn, x, np.array([n]), backend=backend)


def _branch_runtime_length_operand(x, n):
    y = x[x > 2]
    if n.sum() > 0:
        y += 1
    return y


@pytest.mark.parametrize("n", [0, 1])
def test_branch_runtime_length_operand(n, backend):
    # was refused; branches now carry run-time lengths (issue 28, tests/test_shrinking_loops.py)
    check(_branch_runtime_length_operand, np.arange(6.0), np.array([n]), backend=backend)


# x[n] with a traced integer n (a NumPy scalar in NumPy: n = a.sum()) is a view: writes through it reach x, also
# through x[n, 1:] and x[:, n], a view of it, and in loops and branches

def _traced_row(x, a):
    v = x[a.sum()]
    v += 1
    return x


def _traced_row_tail(x, a):
    v = x[a.sum(), 1:]
    v *= 2
    return x


def _traced_column(x, a):
    v = x[:, a.sum()]
    v -= 5
    return x


def _traced_row_view_of_view(x, a):
    v = x[a.sum()]
    w = v[1:]
    w += 1
    return x, v


def _traced_negative_row(x, a):
    v = x[-a.sum()]
    v[1:] = 0
    return x


def _loop_index_rows(x, a):
    for i in range(a.sum()):
        v = x[i]
        v += 1
    return x


def _traced_row_in_branch(x, a):
    v = x[a.sum()]
    if a.sum() > 0:
        v += 1
    else:
        v[0] = -1
    return x


@pytest.mark.parametrize("n", [0, 1, 2])
@pytest.mark.parametrize("fn", [_traced_row, _traced_row_tail, _traced_column, _traced_row_view_of_view,
                                _traced_negative_row, _loop_index_rows, _traced_row_in_branch],
                         ids=lambda v: v.__name__)
def test_traced_integer_index_is_view(fn, n, backend):
    check_mutates(fn, np.arange(12.0).reshape(3, 4), np.array([n]), backend=backend)


# ---------------------------------------------------------------------------------------------------------------
# layout questions about a view a branch chose (issue 29 item 2, found by the 20,000-program fuzz run): ravel,
# reshape and ascontiguousarray of `v = x[1:] if c else x[:-1]` are views in NumPy when the chosen view is
# contiguous; the branch view (a gather at the positions each branch gave) was taken as never contiguous, so ravel
# copied and the write through it was lost. Where the branches choose views of different layouts, NumPy's answer
# depends on the branch taken at run time: a clear error instead of a guess

_LAYOUT_VIEWS = {"rows_from_1": lambda x: x[1:3], "rows_from_0": lambda x: x[:2], "every_other": lambda x: x[::2],
                 "reversed": lambda x: x[::-1][:2], "cols_from_1": lambda x: x[:, 1:],
                 "cols_from_0": lambda x: x[:, :-1]}
_LAYOUT_OPS = {"np_ravel": lambda v: np.ravel(v), "ravel": lambda v: v.ravel(),
               "reshape": lambda v: v.reshape(-1),
               "ascontiguousarray": lambda v: np.ascontiguousarray(v)}
_SAME_LAYOUT = [("rows_from_1", "rows_from_0"), ("every_other", "reversed"), ("cols_from_1", "cols_from_0")]
_MIXED_LAYOUT = [("rows_from_1", "every_other"), ("reversed", "rows_from_0")]


def _layout_program(first: str, second: str, op: str):
    a, b, flat = _LAYOUT_VIEWS[first], _LAYOUT_VIEWS[second], _LAYOUT_OPS[op]

    def f(x, c):
        v = a(x)
        if c.sum() > 0:
            v = b(x)
        w = flat(v)
        w[1] += 100.0
        return w * 2.0
    return f


@pytest.mark.parametrize("op", list(_LAYOUT_OPS))
@pytest.mark.parametrize("first,second", _SAME_LAYOUT)
def test_layout_of_a_view_a_branch_chose(first, second, op, backend):
    f = _layout_program(first, second, op)
    for c in (np.ones(1), -np.ones(1)):   # each branch taken
        check_mutates(f, np.arange(12.0).reshape(4, 3), c, backend=backend, calls=1)


@pytest.mark.parametrize("op", ["ravel", "reshape", "ascontiguousarray"])
@pytest.mark.parametrize("first,second", _MIXED_LAYOUT)
def test_layout_that_depends_on_the_branch_taken_is_refused(first, second, op, backend):
    with pytest.raises(numfn.NumfnError, match="views of one layout"):
        numfn.jit(_layout_program(first, second, op), backend=backend)(np.arange(12.0).reshape(4, 3), np.ones(1))


def _loop_layout_program(op: str, second: str):
    # fuzz seed 72002192: a loop binds r to a view of x in some iterations (r = x[::-1]), to nothing in others
    flat, b = _LAYOUT_OPS[op], _LAYOUT_VIEWS[second]

    def f(x, n):
        r = x[:2].copy()
        for i in range(n.sum()):
            if i % 3 == 1:
                r = b(x)
        w = flat(r)
        w[0] = 7.0
        return r
    return f


@pytest.mark.parametrize("op", ["ravel", "reshape", "ascontiguousarray"])
def test_layout_that_depends_on_the_iterations_a_loop_ran_is_refused(op, backend):
    # NumPy's reshape of r is a view where no iteration bound it (its own copy), a copy where one bound it to the
    # reversed rows: numfn copied, and the write through it was lost where NumPy's reached r
    with pytest.raises(numfn.NumfnError, match="views of one layout"):
        numfn.jit(_loop_layout_program(op, "reversed"), backend=backend)(np.ones((4, 3)), np.array([0, 1]))


@pytest.mark.parametrize("op", ["ravel", "reshape"])
def test_layout_a_loop_binds_the_same_as_its_own_is_a_view(op, backend):
    for n in ([0, 1], [1, 1], [5, 2]):   # r contiguous either way: a view of it, whichever iterations ran
        check_mutates(_loop_layout_program(op, "rows_from_0"), np.arange(12.0).reshape(4, 3), np.array(n),
                      backend=backend, calls=1)


def _fuzz_20000017(x0, x1):   # the fuzz run's program, shrunk
    v0 = x0[:-1]
    if np.any(x1 > 0):
        v0 = x0[1:]
    v4 = np.ravel(v0)
    v4[0] += 2
    return ()


@pytest.mark.parametrize("dtype", [np.bool_, np.float64, np.int8])
def test_fuzz_ravel_of_a_branch_view(dtype, backend):
    x0 = (np.arange(15).reshape(5, 3) % 2).astype(dtype)
    for x1 in (np.ones((5, 3)), -np.ones((5, 3))):
        check_mutates(_fuzz_20000017, x0, x1, backend=backend, calls=1)


# the same questions about a branch's result *linked* to outer arrays (fuzz seed 46701199): `v = x[::-1]` on one
# side and `v = -x` on the other; NumPy's ravel copies the reversed view and is a view of the new array, so a later
# `v += v` shows through the ravel in one branch only. numfn took v as an array of its own everywhere (a view)

_LINKED_SIDES = {"rows_from_1": lambda x, y: x[1:3], "rows_of_y": lambda x, y: y[:2], "new": lambda x, y: x[:2] * 2.0,
                 "every_other": lambda x, y: x[::2], "reversed_rows": lambda x, y: x[::-2]}


def _linked_program(first: str, second: str, op: str):
    a, b, flat = _LINKED_SIDES[first], _LINKED_SIDES[second], _LAYOUT_OPS[op]

    def f(x, y, c):
        if c.sum() > 0:
            v = a(x, y)
        else:
            v = b(x, y)
        w = flat(v)
        v += 1.0         # shows through w where w is a view of v
        w[1] += 100.0    # writes into v (and x or y where the branch made v a view of it) where w is a view of v
        return w * 2.0, v
    return f


@pytest.mark.parametrize("op", list(_LAYOUT_OPS))
@pytest.mark.parametrize("first,second", [("rows_from_1", "new"), ("new", "rows_of_y"), ("rows_from_1", "rows_of_y")])
def test_layout_of_a_linked_branch_result(first, second, op, backend):
    f = _linked_program(first, second, op)
    for c in (np.ones(1), -np.ones(1)):   # each branch taken
        check_mutates(f, np.arange(12.0).reshape(4, 3), np.arange(6.0).reshape(2, 3) + 50, c, backend=backend,
                      calls=1)


@pytest.mark.parametrize("op", ["ravel", "reshape", "ascontiguousarray"])
@pytest.mark.parametrize("first,second", [("every_other", "new"), ("new", "reversed_rows")])
def test_layout_of_a_linked_result_that_depends_on_the_branch_taken_is_refused(first, second, op, backend):
    with pytest.raises(numfn.NumfnError, match="views of one layout"):
        numfn.jit(_linked_program(first, second, op), backend=backend)(np.arange(12.0).reshape(4, 3),
                                                                        np.ones((2, 3)), np.ones(1))


def _fuzz_46701199(x0, c):   # the fuzz run's program, shrunk
    if c > 0:
        v0 = x0[::-1]
    else:
        v0 = -x0
    v1 = np.ravel(v0)
    v0 += v0
    return v1


def test_fuzz_ravel_of_a_linked_branch_result(backend):
    # NumPy's answer depends on the branch: refused, not a guess
    with pytest.raises(numfn.NumfnError, match="views of one layout"):
        numfn.jit(_fuzz_46701199, backend=backend)(np.arange(4.0), np.float64(1.0))


# ---------------------------------------------------------------------------------------------------------------
# found by the 20,000-program fuzz run. Seed 20000056: a loop that updates an array in place (`v += 3`) under one
# name while another name is bound to the same array (`v = w` before the loop): in Python both names are one array
# after the loop; the loop's result was bound to `v` alone, so `w` kept its old value

def _alias_native_for(x):
    w = np.exp(np.clip(x, -4, 4))
    v = w
    for i in range(5, -1, -1):   # a native loop (more than 4 iterations)
        v += 3
    return w, v


def _alias_runtime_for(x, n):
    w = x * 2.0
    v = w
    for i in range(n.sum()):
        v += i
    return w


def _alias_while(x):
    w = x + 1.0
    v = w
    k = 0
    while v.sum() < 100.0:
        v *= 2.0
        k += 1
    return w, k


def _alias_setitem_loop(x, n):
    w = x - 1.0
    v = w
    for i in range(n.sum()):
        v[i % 3] = v[(i + 1) % 3] + 1.0
    return w


def _alias_rebound_in_loop(x):
    w = x * 1.0
    v = w
    for i in range(6):
        v = v + 1.0   # a new array: w keeps its value
    return w, v


def _alias_inner_loop(x):
    w = x * 1.0
    v = w
    for i in range(5):
        for j in range(5):
            v += 1.0
    return w


@pytest.mark.parametrize("fn,args", [
    (_alias_native_for, (np.array([[1, 1, 1]]),)),
    (_alias_runtime_for, (np.arange(4.0), np.array([3]))),
    (_alias_runtime_for, (np.arange(4.0), np.array([0]))),
    (_alias_while, (np.arange(3.0),)),
    (_alias_setitem_loop, (np.arange(4.0), np.array([7]))),
    (_alias_rebound_in_loop, (np.arange(3.0),)),
    (_alias_inner_loop, (np.arange(3.0),)),
], ids=lambda v: getattr(v, "__name__", None))
def test_a_loop_updating_an_array_in_place_updates_every_name_of_it(fn, args, backend):
    check(fn, *args, backend=backend)


# Seeds 20000049 and 20000073: a branch returning the same array in both branches (kept as that array) before a
# value of its own: the region's results were read shifted by one, so `x1[0]` came back as x1

def _same_array_then_value(x0, x1):
    if np.any(x0 > 0):
        return x1, x1[0] * 2
    else:
        return x1, x1[-1] * 3


def _value_then_same_array(x0, x1):
    if np.any(x0 > 0):
        return x1[0] * 2, x1, x1 + 1
    else:
        return x1[-1] * 3, x1, x1 - 1


@pytest.mark.parametrize("fn", [_same_array_then_value, _value_then_same_array], ids=lambda f: f.__name__)
@pytest.mark.parametrize("sign", [1, -1])
def test_branch_results_beside_an_array_both_branches_return(fn, sign, backend):
    check(fn, sign * np.ones(4, np.int8), np.arange(4.0).astype(np.float16), backend=backend)


# Seed 20000281: a native loop reading an argument (a capture of the loop) that the function writes after the loop
# (x0 += x0): the write into the argument's memory was ordered before the loop, which then read the new values. A
# loop's or extern call's reads of an argument's buffer now order the next write after it

def _loop_reads_argument_then_written(x0, n):
    v2 = x0.copy()
    for i in range(n.sum()):
        v2 = v2 - x0
    x0 += x0
    return v2


def _static_loop_reads_argument_then_written(x0, n):
    v2 = x0 * 1
    for i in range(8):
        v2 = v2 - x0
    x0[1:] = 7
    return v2


def _while_reads_argument_then_written(x0, n):
    s = x0 * 0
    k = 0
    while k < n.sum():
        s = s + x0
        k += 1
    x0[0] = 100
    return s


def _product_reads_argument_then_written(x0, n):
    y = np.outer(x0, x0).astype(np.float64) @ np.ones(x0.shape[0])
    x0 += 1
    return y


@pytest.mark.parametrize("fn", [_loop_reads_argument_then_written, _static_loop_reads_argument_then_written,
                                _while_reads_argument_then_written, _product_reads_argument_then_written],
                         ids=lambda f: f.__name__)
def test_a_write_into_an_argument_after_a_loop_that_reads_it(fn, backend):
    check_mutates(fn, np.arange(1, 5, dtype=np.int32), np.array([1, 2], np.int16), backend=backend)


# Seed 20000244: `v = x; for ...: v[i] = s; v = v[::-1] + 2` writes into x in the first iteration only (then v is
# a new array); the loop gave v a state of its own and the write was lost. Where the body writes into the memory a
# rebound name shares, the first iteration differs from the others: it runs on its own, then the loop

def _write_through_then_rebind(x0):
    v = x0
    for i in range(5):
        v[i % 5] = 10
        v = v[::-1] + 2
    return v


def _write_by_other_name_then_rebind(x0):
    v = x0
    for i in range(5):
        x0[0] = 10     # v is x0 in the first iteration: v + 2 reads the 10
        v = v + 2
    return v


@pytest.mark.parametrize("fn", [_write_through_then_rebind, _write_by_other_name_then_rebind],
                         ids=lambda f: f.__name__)
def test_a_name_sharing_written_memory_rebound_in_a_loop(fn, backend):   # (was refused: the first iteration runs
    check_mutates(fn, np.ones(5, np.uint16), backend=backend)               # on its own now)


def _rebound_without_writes(x0):
    v = x0
    for i in range(5):
        v = v[::-1] + 2   # no write into x0: v is a state of its own
    return v, x0


def test_a_name_sharing_memory_rebound_without_writes_still_compiles(backend):
    check(_rebound_without_writes, np.arange(5, dtype=np.uint16), backend=backend)


# Seed 20000228: a branch returning an array of run-time length (x[x > 0]) in both branches beside a view each
# branch chooses: comparing the results' shapes compared run-time lengths (TypeError: unhashable type 'Length')

def _runtime_length_beside_a_branch_view(x0, x1, x2):
    v4 = x0[x0 > 0]
    if x1.sum() > 1e9:
        return v4, x2[::-1]
    else:
        return v4, x2


def _runtime_length_assigned_in_branches(x0, x1):
    v4 = x0[x0 > 0]
    if x1.sum() > 1e9:
        w = v4 * 2
    else:
        w = v4 * 3
    return w


@pytest.mark.parametrize("fn", [_runtime_length_beside_a_branch_view, _runtime_length_assigned_in_branches],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("big", [False, True])
def test_a_branch_result_of_runtime_length(fn, big, backend):
    # it came back with the static bound's length, its tail uninitialized memory: refused until branches carried
    # run-time lengths (issue 28), now NumPy's result on both sides
    x1 = np.array([1e9, 1.0]) if big else np.array([1, 1])
    args = (np.array([1, -2, 3]), x1, np.array([1.0, 2.0], np.float16))[:fn.__code__.co_argcount]
    check(fn, *args, backend=backend, scale=4.0)


# Seeds 20001314, 20001511, 20001540: a view of a view that branches chose (each branch's chain holds the gather
# that picks the first branch's view): whether a further slice is strided lowered a gather without its indices
# (IndexError in the shape rule)

def _slice_of_branch_views(x0, x1):
    if (x1 == x1).all():
        v9 = x0[1:]
    else:
        v9 = x0[:-1]
    if (x1 == x1).all():
        v10 = v9[1:]
    else:
        v10 = v9[:-1]
    if v9.max() < 2:
        r = v10[::2]
    else:
        r = v10[1::2]
    r[0] = 9      # and written through: x0 changes
    return r


def _transpose_of_branch_view(x0, x1):
    if x1.max() < 2:
        v27 = x0[::-1]
    else:
        v27 = x0
    v29 = v27
    if np.isnan(x1).any():
        v29 = v27.T
    return v29[::2], v29.reshape(2, 2)


@pytest.mark.parametrize("fn", [_slice_of_branch_views, _transpose_of_branch_view], ids=lambda f: f.__name__)
def test_views_of_nested_branch_views(fn, backend):
    for x1 in (np.ones(4), np.array([5.0, np.nan, 1.0, 0.0])):
        check_mutates(fn, np.array([1, 2, 3, 4], np.int16), x1, backend=backend)


# Seed 20001311: a loop's copied initial state was ordered after the values that read the loop's results (walking
# another call's input first placed them), so a kernel joined a group it must run after: "the scheduler cannot
# order the writes of this program". Copied initial states come right before their loop now.

def _state_copy_before_loop(x0, x1, x2, x3):
    v9 = x1.copy()
    for i10 in range(x2.sum()):
        v9 = v9 - x0
    for i18 in range(5):
        v9[i18 % 3] = v9[(i18 + 1) % 3]
    v21 = x3 / (np.abs(v9[0]) + 1)
    v23 = v21
    if np.count_nonzero(x2) > 1:
        v23 = np.sort(v21, axis=-1)
    return v23, v9


@pytest.mark.parametrize("dtype", [np.complex128, np.float64])
def test_loop_state_copy_ordered_before_its_loop(dtype, backend):
    check(_state_copy_before_loop, np.array([1, 2, 3], np.int8), np.array([1, 1, 4], dtype), np.array([1, 2], np.uint8),
          np.array([1, 3], np.int32), backend=backend)


# A list the body appends to (not loop state: the name is never assigned in the loop) leaked the loop's
# placeholders into the program ("cannot lower CARRY inside a kernel"); in a branch on a traced value the append
# ran whichever way the branch went. A static loop that changes such a container runs as Python; otherwise a clear
# error names it.

def _append_in_static_loop(x):
    acc = []
    y = x + 0
    for i in range(10):
        y = y * 0.5 + 1
        acc.append(y)
    return acc[-1], acc[3], len(acc)


def _append_in_runtime_loop(x, n):
    acc = []
    for i in range(n.sum()):
        acc.append(x * i)
    return x


def _append_in_branch(x, n):
    acc = []
    if x.sum() > 0:
        acc.append(x)
    return x


def test_containers_changed_by_compiled_loops_and_branches(backend):
    check(_append_in_static_loop, np.arange(3.0), backend=backend)
    for fn, where in ((_append_in_runtime_loop, "a for loop"), (_append_in_branch, "a branch")):
        with pytest.raises(numfn.NumfnError, match=f"{where} at line .* changes 'acc', a Python list"):
            numfn.jit(fn, backend=backend)(np.ones(2), np.array(3))


# Seed 20001556: `v = np.real(x)` chosen by a branch (v or v[...]) and written through: the write did not reach x,
# whose real part v is a view of (a part step did not count as a view). Parts of views the branches chose
# differently (x[1:].real, x.real[:-1]) are a view of x, then its part.

def _same_part_view(x):
    r = np.real(x)
    if (r == r).all():
        v = r
    else:
        v = r[...]
    v[np.array([-1, -1])] += v[:2]
    return v


def _part_of_different_views(x):
    if (x.real > 0).all():
        v = x[1:].imag
    else:
        v = x.imag[:-1]
    v[0] += 1
    v *= 2
    return v


def _part_in_one_branch_only(x):
    if (x.real > 0).all():
        v = x.real
    else:
        v = x.real * 2
    v[0] += 1
    return v


def _same_imag_view(x):
    i = np.imag(x)
    if (i == i).all():
        v = i
    else:
        v = i[...]
    v[-1] = -1
    return v, x


def _imag_returned_by_both_sides(x):   # fuzz seed 20030394: the part was taken twice (IMAG of a float64)
    v = np.imag(x + 1)
    if x.real.max() < 2:
        return v
    else:
        return v


@pytest.mark.parametrize("fn", [_same_part_view, _part_of_different_views, _same_imag_view,
                                _imag_returned_by_both_sides], ids=lambda f: f.__name__)
def test_parts_of_complex_views_chosen_by_branches(fn, backend):
    for x in (np.array([0.9 + 1.5j, 2 - 1j, 3j], np.complex64), np.array([-0.5 + 1j, 2 - 1j, 1 + 0j])):
        check_mutates(fn, x, backend=backend)


def test_a_part_view_in_one_branch_only_is_refused(backend):
    with pytest.raises(numfn.NumfnError, match="real or imaginary part"):
        numfn.jit(_part_in_one_branch_only, backend=backend)(np.array([1 + 1j, 2 - 1j]))


# Seed 20010517: `v12 = v9` before a native loop, `v12 += v9` in it: one array in Python (it doubles each
# iteration), but the loop gave v12 a placeholder and v9 read the value before the loop. A state changed in place
# whose initial array the body also reads by another name is given to the body as that array itself.

def _aliased_in_place(x):
    v = x.copy()
    w = v
    for i in range(1, 6):
        w += v
    return w, v


def _aliased_in_place_with_writes(x):
    v = x * 1.0
    w = v
    for i in range(6):
        v += w
        v[0] = w[-1]
    return v, w


def _same_expression_not_aliased(x):   # the body recomputes the initial value's expression: no alias, same answer
    acc = x * 2
    for i in range(6):
        acc += x * 2
    return acc


@pytest.mark.parametrize("fn", [_aliased_in_place, _aliased_in_place_with_writes, _same_expression_not_aliased],
                         ids=lambda f: f.__name__)
def test_state_aliased_by_another_name(fn, backend):
    check(fn, np.arange(3.0), backend=backend)
    check(fn, np.array(0.2171630859375, np.float16).reshape(1), backend=backend)


# Seed 20010371: ravel of a view of branch-chosen views (a branch's chain holds the gather picking the first view):
# whether it is contiguous lowered the gather without its indices (IndexError), as seed 20001314's strides did

def _ravel_of_nested_branch_views(x):
    v = x[:-1]
    if x.max() < 2:
        v = x[1:]
    w = v
    if (np.abs(x) >= 0).all():
        w = v[::-1]
    w[0] = 2
    r = w.ravel()
    r[-1] = 7
    return r


def test_ravel_of_nested_branch_views(backend):
    for x in (np.array([-1, -1, 1, 3], np.int8), np.array([5, 1, 0, 2], np.int8)):
        check_mutates(_ravel_of_nested_branch_views, x, backend=backend)


# Seed 20010408: a complex sum compared with a float constant (`if x.sum() > 1e9:`): the constant's bounds were
# a complex number, and comparing bounds raised TypeError

def _complex_sum_decides(x):
    m = np.mean(x, axis=(-1, 0))
    if x.sum() > 1e9:
        v = x[1:]
    else:
        v = x[:-1]
    v[-1] = True
    k = np.nanargmax(v, axis=-2)   # (an index whose bounds are asked for: the comparison's too)
    if np.isnan(k).any():
        w = x[1:]
    else:
        w = x[:-1]
    w[np.clip(k, -3, 2)] -= m
    return w, k, x.sum() < 3.5


def test_complex_comparison_with_a_constant(backend):
    x = np.array([[1 + 1.5j, -1j], [-1 + 1j, 2.5j], [-0.5 - 1j, 0.5 + 1j], [1 - 0.5j, 3 - 2.5j]], np.complex64)
    check_mutates(_complex_sum_decides, x, backend=backend)
    check_mutates(_complex_sum_decides, x + 2e9, backend=backend)   # (the other side of the branch)


# Seed 20030548: on the C backend only, a write into an argument through a 0-d view that branches chose (of a sorted
# copy or of the argument itself) gave wrong values. The arena reused a sort's int32 buffer for an int64 one, and
# clang's type-based alias analysis moved loads across the stores (now -fno-strict-aliasing).

def _c_backend_views_after_branch(x0, x1):
    v1 = np.sqrt(np.abs(x0))
    if x0.sum() > 0:
        v2 = np.sort(x1, axis=-1)
    else:
        v2 = x1
    v3 = v2[-1]
    if np.abs(v1).min() < 0:
        v3 = v2[0]
    x1 -= v3
    v5 = x1.reshape(-1)
    v5 += v5
    if v5.max() < 2:
        v6 = x1[::-1]
    else:
        v6 = x1
    v6[1:] += -1
    v7 = v5[::-1]
    v7[...] += v7
    return v7, v6, v5


def _branch_chosen_sorted_element(x0, x1):
    if x0.sum() > 0:
        v2 = np.sort(x1, axis=-1)
    else:
        v2 = x1
    return v2[-1]


def test_views_after_branches(backend):
    check_mutates(_c_backend_views_after_branch, np.array([2, 0, 2], np.int16), np.array([-2, 2, -3], np.int32),
                  backend=backend)
    check_mutates(_branch_chosen_sorted_element, np.array([2, 0, 2], np.int16), np.array([-2, 2, -3], np.int32),
                  backend=backend)


# Seed 40000024: a write at positions computed from the array written (`v[np.clip(v, -5, 4)] *= s`) when that array
# is a loop's result: the scheduler looked for the index reading an argument or a write, not a loop's result, and
# stopped with StopIteration.

def _index_from_a_loop_result(x):
    w = np.full_like(x, 0)
    v = w.copy()
    s = 0
    for _ in range(5):
        v[...] = v + w
        s = s + v.max()
    v[np.clip(v, -5, 4)] *= s
    return v


def _index_from_a_loop_result_of_ones(x):
    w = np.full_like(x, 1)
    v = w.copy()
    s = 0
    for _ in range(5):
        v[...] = v + w
        s = s + v.max()
    v[np.clip(v, -5, 4)] *= s
    return v


def test_write_indexed_by_a_loop_result(backend):
    for fn in (_index_from_a_loop_result, _index_from_a_loop_result_of_ones):
        check(fn, np.array([2, 2, 0, 3, 1], np.uint16), backend=backend)


def _loop_writing_a_concrete_array(x):
    c = 0
    while c < 6:   # Python values only: runs as Python, c is the int 6
        c = c + 1
    v = np.repeat(c, 1)   # a NumPy array while tracing (made from Python values)
    for i in range(5):    # longer than the unroll limit, carries no variable, writes into that NumPy array
        v[...] = v + -1
        v[i % 1] = v[(i + 1) % 1]
    return x + v


def test_a_loop_writing_into_a_numpy_array_runs_as_python(backend):
    """Fuzz seed 41000627: a static loop that carries no variable but writes into an array made from Python values
    must run as Python (its first iteration, run as Python, finds that out); run as a native loop, its writes
    happened while tracing, once per trace of the body (the result was 0 instead of 1)."""
    x = np.arange(3.0)
    np.testing.assert_array_equal(numfn.jit(_loop_writing_a_concrete_array, backend=backend)(x),
                                  _loop_writing_a_concrete_array(x))


def _index_chosen_by_branch(c, x):
    if c.sum() > 0:
        v = x[0]
    else:
        v = x[-1]
    x += x
    return v


@pytest.mark.parametrize("n", [1, 2])
def test_a_branch_reading_a_reshaped_argument_runs_before_its_write(backend, n):
    """Fuzz seeds 41000149/290/372: with one element, x[0] and x[-1] are both a reshape of the whole argument, which
    the branch reads in the argument's own memory; the write `x += x` after the branch ran first (the result was
    -2 instead of -1)."""
    c = np.ones(1)
    want_x, got_x = np.arange(-1, n - 1), np.arange(-1, n - 1)
    want = _index_chosen_by_branch(c, want_x)
    got = numfn.jit(_index_chosen_by_branch, backend=backend)(c, got_x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_x, want_x)


def _zero_d_chosen_by_branch(c, x):
    if c.sum() > 0:
        v = x          # x itself: writes into v are writes into x, and the other way round
    else:
        v = -x         # a NumPy scalar for a 0-d x
    w = x
    for _ in range(6):
        w += v
    v += 1
    return x, v


@pytest.mark.parametrize("x", [np.array(1, np.int8), np.array([1, 2], np.int8)], ids=["0d", "1d"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_0d_array_chosen_by_a_branch_shares_its_memory(backend, x, sign):
    """Fuzz seeds 41000239/308: a branch's result that is a 0-d argument on one side and a new value on the other
    was not linked to the argument (links needed an axis), so writes into either did not reach the other."""
    c = np.array([sign])
    want_x, got_x = x.copy(), x.copy()
    want = _zero_d_chosen_by_branch(c, want_x)
    got = numfn.jit(_zero_d_chosen_by_branch, backend=backend)(c, got_x)
    for g, w in zip(got, want): np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got_x, want_x)


def _scalar_chosen_by_branch(x, y):
    v = x[-1]           # a NumPy scalar (x is 1-d): it shares no memory with x
    if x.sum() > 0:
        v = x[0]
    v *= y              # so this rebinds v to a new array, as NumPy does
    return v, x


def test_a_numpy_scalar_chosen_by_a_branch_shares_no_memory(backend):
    """Fuzz seed 43000387: a NumPy scalar chosen by a branch was linked like a 0-d array, so `v *= y` with a longer
    y raised 'non-broadcastable output operand' where NumPy rebinds v."""
    x, y = np.array([2, -1, 3]), np.array([1.5, 2.0, -1.0])
    want = _scalar_chosen_by_branch(x.copy(), y)
    got = numfn.jit(_scalar_chosen_by_branch, backend=backend)(x.copy(), y)
    for g, w in zip(got, want): np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------------------------------------------------------
# a name bound in a loop body to an array the body writes in place (`x[:] = x + 1; r = x`): x is given to the body
# as itself, and after the body was traced it got its value from before the loop back, which r, the same Python
# object, then took as its state: r came out as x's value before the loop (found while adding `return` inside
# loops: Gauss-Seidel's `return x, it`)

_IN_PLACE_WRITES = {
    "whole_setitem": lambda x: x.__setitem__(slice(None), x + 1.0),
    "element": lambda x: x.__setitem__(0, x[0] + 1.0),
    "augmented": lambda x: x.__iadd__(1.0),
    "inner_loop": None,   # a native loop writing every element
}


def _alias_program(write: str, alias_first: bool):
    step = _IN_PLACE_WRITES[write]

    def f(b):
        x = np.zeros_like(b)
        r = np.ones_like(b) * 7.0
        for k in range(10):
            if alias_first: r = x
            if step is None:
                for i in range(b.shape[0]):
                    x[i] = x[i] + 1.0
            else:
                step(x)
            if not alias_first: r = x
        return r, x
    return f


@pytest.mark.parametrize("alias_first", [False, True], ids=["alias_after", "alias_before"])
@pytest.mark.parametrize("write", list(_IN_PLACE_WRITES))
def test_a_name_bound_to_an_array_written_in_place_in_a_loop(write, alias_first, backend):
    check(_alias_program(write, alias_first), np.zeros(6), backend=backend)


# An outer loop whose body runs an inner loop writing x, then a branch binding r = x: the branch linked r to x
# (numfn.trace.branch_views) while x was not yet known to be the loop's state, and the link outlived the attempt,
# leaving its placeholder in the graph ("cannot lower CARRY inside a kernel"). Links a region's trace makes to
# outer arrays are now dropped after each trace (TraceRecord.links).
def test_a_branch_binding_an_array_an_inner_loop_wrote():
    def f(b):
        x = np.zeros_like(b)
        r = np.zeros_like(b)
        for k in range(10):
            for i in range(6):
                x[i] = x[i] + 1.0
            if x[0] > 5:
                r = x
        return r
    np.testing.assert_array_equal(numfn.jit(f)(np.zeros(6)), f(np.zeros(6)))
