"""Loop state values that come to share memory (numfn.trace.loop_links): `r = x` in a native loop's body, or in a
branch inside it, makes r and x one array in NumPy, and `r = x[::2]` or `row = x[i]` a view of it, so a write
through either name later (in a later iteration, or after the loop) changes both. Each program is compared with
NumPy; the loops run more than UNROLL iterations (native)."""
from dataclasses import dataclass

import numpy as np
import pytest

import numfn

from helpers import check, check_mutates


def _branch_then_write_after(b):
    x = np.zeros_like(b)
    r = np.zeros_like(b)
    for _ in range(10):
        x = x + 1.0
        if x[0] > 5:
            r = x
    r[1] = -5.0
    return x, r


def _branch_then_in_place_later(b):
    x = np.zeros_like(b)
    r = np.zeros_like(b)
    for k in range(10):
        x += 1.0
        if k == 5:
            r = x
    return r


def _unconditional_then_write_after(b):
    x = np.zeros_like(b)
    r = np.zeros_like(b)
    for _ in range(10):
        x += b
        r = x
    r += 1.0
    return x


def _run_time_count(b, n):
    x = np.zeros_like(b)
    r = b * 2.0
    for k in range(n):
        x += 1.0
        if k == 3:
            r = x
    x[0] = 42.0
    return r, x


def _inner_loop_writes_outer(b):
    x = np.zeros_like(b)
    r = np.zeros_like(b)
    for _ in range(10):
        for i in range(6):
            x[i] = x[i] + 1.0
        if x[0] == 5:
            r = x
    x[2] = 99.0
    return r


def _the_other_way(b):
    x = np.zeros_like(b)
    r = b + 0.0
    for _ in range(8):
        r *= 2.0
        if r[0] > 8:
            x = r
        x += 1.0
    return r, x


def _aliased_before_the_loop(b):
    x = b + 0.0
    r = x
    for _ in range(8):
        x += 1.0
        if x[0] > 100:
            r = b.copy()
    r[0] = -1.0
    return x, r


def _zero_d(b):
    x = np.zeros(())
    r = np.ones(())
    for k in range(8):
        x += b[0]
        if k == 2:
            r = x
    x += 100.0
    return r


def _three_names(b):
    x = np.zeros_like(b)
    r = np.zeros_like(b)
    s = np.zeros_like(b)
    for k in range(9):
        x += 1.0
        if k == 2:
            r = x
        if k == 4:
            s = r
    s[0] = -7.0
    return x, r, s


def _view_in_a_branch(b):
    x = np.zeros_like(b)
    r = np.zeros(3)
    for k in range(10):
        x += 1.0
        if k == 5:
            r = x[::2]
    return r


def _view_then_write_after(b):
    x = np.zeros_like(b)
    r = np.zeros(3)
    for _ in range(10):
        x += b
        r = x[::2]
    r += 100.0
    return x


def _view_of_a_new_array(b):
    x = np.zeros_like(b)
    r = np.zeros(3)
    for _ in range(10):
        x = x + 1.0
        if x[0] > 3:
            r = x[1:4]
    r[0] = -1.0
    return x, r


def _reversed_view_while(b, n):
    x = b + 0.0
    r = np.zeros_like(b)
    k = 0
    while k < n:
        x *= 2.0
        if k % 2 == 0:
            r = x[::-1]
        k += 1
    x[0] = -3.0
    return r


def _row_of_a_matrix(m):
    a = m + 0.0
    row = np.zeros(m.shape[1])
    for i in range(m.shape[0]):
        a[i] += 1.0
        if a[i].sum() > 20.0:
            row = a[i]
    a *= 2.0
    return row


# fuzz seeds 52000148 and 52000194: a run-time trip count runs the first iteration on its own, under a branch on
# whether the loop runs at all; the link the `if` inside made (r = v) was that branch's own and was dropped
# (numfn.trace.branch_views.links_out now carries it through the outer branch)
def _first_iteration_links_then_write_after(x0, x1):
    v = x0.copy()
    r = x0.copy()
    for i in range(1, x1.sum(), 2):
        v[i % 3] += 3
        if v.sum() > r.sum():
            r = v
    r[np.clip(x0, -3, 2)] = x0
    return v


def _first_iteration_links_then_in_place(x0, x1):
    v = x0.copy()
    r = x0.copy()
    for i in range(x1.sum() - 1, -1, -1):
        v[...] = v + 1
        if i % 3 == 1:
            r = v
    return r


def _row_then_in_place(m):
    a = m + 0.0
    row = np.zeros(m.shape[1])
    for i in range(m.shape[0]):
        row = a[i]
        a += 1.0
    return row, a


# State related to an outer array the loop only reads (numfn.trace.loop_links: pairs with the arrays state values
# were found views of, or started as): a column the loop picks, and `y = x` before a loop that may not run
def _column_then_write_after(m):
    a = m + 0.0
    col = np.zeros(m.shape[0])
    for j in range(m.shape[1]):
        if a[0, j] > 2.0:
            col = a[:, j]
    a[1:] = 0.0
    return col


def _column_then_written(m):
    a = m + 0.0
    col = np.zeros(m.shape[0])
    for j in range(m.shape[1]):
        if a[0, j] > 2.0:
            col = a[:, j]
    col[0] = -5.0
    return a


def _starts_as_the_array_then_view(m, t):
    a = m + 0.0
    col = a
    for j in range(m.shape[1]):
        if a[0, j] > t:
            col = a[::-1]
    a[1:] = -1.0
    return col


def _starts_as_the_array_then_new(m, t):
    a = m + 0.0
    col = a
    for j in range(m.shape[1]):
        if m[0, j] > t:
            col = np.zeros((4, 6))
    a[1:] = -1.0
    return col


def _starts_as_a_view_then_new(m, t):
    a = m + 0.0
    col = a[::2]
    for j in range(m.shape[1]):
        if m[0, j] > t:
            col = np.zeros((2, 6))
    col[:] = -1.0
    return a


def _row_or_a_reversed_row(m, t):
    a = m + 0.0
    row = np.zeros(m.shape[1])
    for i in range(m.shape[0]):
        row = a[i]
        if a[i, 0] > t:
            row = a[0][::-1]    # (a branch's link to a: a changing view on one side, a static one on the other)
    a[:, 1:] = -1.0
    return row


def _chains_without_end(x0, x1):   # fuzz: r16 started as v0, itself linked to the array the first loop started as
    v0 = x0.copy()
    c1 = 0
    while c1 < 5:
        v0 = v0 - x1 * c1
        c1 = c1 + 1
    r16 = v0
    for i15 in range(9):
        if i15 == 2: r16 = v0[::-1]
    r16[0] = 4
    return v0, r16


def _links_to_arrays_no_name_holds(x0, x2, x3, x5):   # fuzz: each loop linked its state to the arrays the state
    v0 = x0.copy()                                     # started as, dead ones too; writes after the loops followed
    for i1 in range(x2[0], x2.sum()):                  # every link (minutes of compile; now links are weak)
        v0[i1 % 4] += -1
        v0 += x0
    v2 = v0.copy()
    for i3 in range(0, 14, 2):
        v2[i3 % 4] = 1
    v4 = x0.copy()
    for _ in range(0, 22, 2):
        v4 = v4 + 2

    def h9(h9_t, h9_0):
        for i7 in range(9):
            h9_t = h9_t * h9_0
            if h9_t.max() >= 9:
                return h9_t, i7
        return h9_t, -1
    v6, k8 = h9(x3.copy(), x3)
    v20 = v6.copy()
    r22 = v6
    for i21 in range(1, x5.sum(), 2):
        v20 = v20 - True
        if i21 == 2:
            r22 = v20
    v20[::2] = 2
    return v0, v2, v4, v6, v20, r22


def _argument_then_new_write_new(x, n):
    y = x
    for _ in range(n):
        y = y * 2
    y[0] = 5
    return x


def _argument_then_new_write_argument(x, n):
    y = x
    for _ in range(n):
        y = y * 2
    x[1] = 7
    return y


# fuzz seed 55500662: two results of one branch that the branch taken makes one array it made (`b = a` after
# `a = x * 2`; here the loop's first iteration, run under a branch, binds r = v inside an `if`): the results were
# arrays of their own (numfn.trace.branch_views: BranchViews.joined links them under that branch's flag)
def _results_of_one_branch_joined(x0, x1):
    v = x0.copy()
    r = x0.copy()
    for i in range(1, x1.sum(), 2):
        v[i % 2] = True
        v = v - 3
        if i % 3 == 1:
            r = v
    v[...] = True
    return r


def _branch_binds_two_names_to_one_array(x, c):
    if c.sum() > 0:
        a = x * 2
        b = a
    else:
        a = x * 3
        b = x * 4
    a[0] = -1
    b[1] = -7
    return a, b


CASES = {
    "branch-then-write-after": (_branch_then_write_after, (np.zeros(6),)),
    "branch-then-in-place-later": (_branch_then_in_place_later, (np.zeros(6),)),
    "unconditional-then-write-after": (_unconditional_then_write_after, (np.arange(6.0),)),
    "run-time-count-taken": (_run_time_count, (np.arange(6.0), 9)),
    "run-time-count-not-taken": (_run_time_count, (np.arange(6.0), 2)),
    "run-time-count-zero": (_run_time_count, (np.arange(6.0), 0)),
    "inner-loop-writes-outer": (_inner_loop_writes_outer, (np.zeros(6),)),
    "the-other-way": (_the_other_way, (np.arange(1.0, 7.0),)),
    "aliased-before-the-loop": (_aliased_before_the_loop, (np.arange(6.0),)),
    "zero-d": (_zero_d, (np.arange(1.0, 7.0),)),
    "three-names": (_three_names, (np.zeros(6),)),
    "view-in-a-branch": (_view_in_a_branch, (np.zeros(6),)),
    "view-then-write-after": (_view_then_write_after, (np.arange(6.0),)),
    "view-of-a-new-array": (_view_of_a_new_array, (np.zeros(6),)),
    "reversed-view-while": (_reversed_view_while, (np.arange(6.0), 7)),
    "reversed-view-while-zero": (_reversed_view_while, (np.arange(6.0), 0)),
    "row-of-a-matrix": (_row_of_a_matrix, (np.arange(24.0).reshape(6, 4),)),
    "row-then-in-place": (_row_then_in_place, (np.arange(24.0).reshape(6, 4),)),
    "results-of-one-branch-joined": (_results_of_one_branch_joined, (np.ones(2), np.array([1, 1]))),
    "results-of-one-branch-joined-long": (_results_of_one_branch_joined, (np.ones(2), np.array([4, 5]))),
    "branch-binds-two-names-taken": (_branch_binds_two_names_to_one_array, (np.arange(3.0), np.array([1]))),
    "branch-binds-two-names-not-taken": (_branch_binds_two_names_to_one_array, (np.arange(3.0), np.array([-1]))),
    "first-iteration-links-then-write-after": (_first_iteration_links_then_write_after,
                                               (np.array([1, 1, 1], np.int16), np.array([1, 1], np.uint8))),
    "first-iteration-links-then-in-place": (_first_iteration_links_then_in_place,
                                            (np.ones(3), np.array([1, 1], np.int64))),
    "first-iteration-links-then-in-place-long": (_first_iteration_links_then_in_place,
                                                 (np.ones(3), np.array([4, 5], np.int64))),
    "column-then-write-after": (_column_then_write_after, (np.arange(24.0).reshape(4, 6),)),
    "column-then-written": (_column_then_written, (np.arange(24.0).reshape(4, 6),)),
    "starts-as-the-array-then-view": (_starts_as_the_array_then_view, (np.arange(24.0).reshape(4, 6), 2.0)),
    "starts-as-the-array-kept": (_starts_as_the_array_then_view, (np.arange(24.0).reshape(4, 6), 99.0)),
    "starts-as-the-array-then-new": (_starts_as_the_array_then_new, (np.arange(24.0).reshape(4, 6), 2.0)),
    "starts-as-the-array-not-new": (_starts_as_the_array_then_new, (np.arange(24.0).reshape(4, 6), 99.0)),
    **{f"row-or-a-reversed-row-{t}": (_row_or_a_reversed_row, (np.arange(24.0).reshape(6, 4), t))
       for t in (99.0, 5.0, 15.0)},
    "chains-without-end": (_chains_without_end, (np.array([[1], [2], [3]], np.int32), np.array([1], np.uint16))),
    "links-to-arrays-no-name-holds": (_links_to_arrays_no_name_holds,
                                      (np.array([[0.0, 3.0, 0.5], [0.0, 2.5, -1.5], [-3.0, -3.0, 2.0],
                                                 [-0.5, -2.0, -1.5]], np.float16), np.zeros(2, np.uint8),
                                       np.array([0, 3, -1, -2], np.int8), np.array([3, 4], np.uint8))),
    "starts-as-a-view-then-new": (_starts_as_a_view_then_new, (np.arange(24.0).reshape(4, 6), 2.0)),
    "starts-as-a-view-kept": (_starts_as_a_view_then_new, (np.arange(24.0).reshape(4, 6), 99.0)),
}


@pytest.mark.parametrize("name", CASES)
def test_loop_state_that_becomes_one_array(name, backend):
    fn, args = CASES[name]
    check(fn, *args, backend=backend)


def _held_in_a_list(x, n):   # the array y starts as is held by another name only inside a list
    arrs = [x * 1.0]
    y = arrs[0]
    for _ in range(n):
        y = y * 2
    y[0] = 5
    return arrs[0], y


def _held_by_the_caller(x, n):   # ... only by the caller of the function whose loop it is
    a = x * 1.0

    def h(t):
        for _ in range(n):
            t = t * 2
        t[0] = 5
        return t
    r = h(a)
    return a, r


@dataclass(frozen=True)
class _Params:
    w: np.ndarray
    b: np.ndarray


def _held_in_a_dataclass(p, n):   # ... only as a field of a dataclass argument
    y = p.w
    for _ in range(n):
        y = y * 2
    y[0] = 5
    return p.w, y


@pytest.mark.parametrize("n", [0, 3])
def test_an_array_held_in_a_dataclass_the_state_started_as(n, backend):
    ours, theirs = _Params(np.arange(4.0), np.ones(2)), _Params(np.arange(4.0), np.ones(2))
    expected = _held_in_a_dataclass(theirs, n)
    check(_held_in_a_dataclass, ours, n, backend=backend, expected=expected)
    assert np.array_equal(ours.w, theirs.w)   # (the argument written as NumPy writes it: through y where n == 0)


@pytest.mark.parametrize("fn", [_held_in_a_list, _held_by_the_caller], ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [0, 3, 6])
def test_an_array_held_elsewhere_the_state_started_as(fn, n, backend):
    check(fn, np.arange(5.0), n, backend=backend)


@pytest.mark.parametrize("fn", [_argument_then_new_write_new, _argument_then_new_write_argument],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [0, 1, 6])
def test_an_argument_the_state_started_as(fn, n, backend):
    check_mutates(fn, np.arange(5.0), n, backend=backend)


def _zero_d_joined_twice(x0):
    v = np.minimum(2, x0)[...].copy()
    r = v.copy()
    for i in range(5):
        if i % 3 == 1:
            r = v
        v += True
    return r


# fuzz seed 56000589: `np.minimum(2, x0)[...]` gave a NumPy scalar (`...` not in a tuple was missed), so `v += True`
# rebound v and r kept an old value; NumPy's `...` of a scalar is a 0-d array
def test_a_zero_d_array_joined_at_two_iterations():
    check(_zero_d_joined_twice, np.array(-1.0), backend="llvm")


# fuzz seed 63000012: a helper writing its argument in place (the loop pairs its state with it), then loops over
# views of its result: every pair's links after the loops, to arrays no name held any more, were followed by every
# later write (3 minutes of scheduling; links are made after a loop only to arrays a name still holds)
def _fuzz_63000012(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12):
    def h3(h3_t, h3_0, h3_1):
        for i1 in range(9):
            h3_t += h3_0
            h3_t = h3_t - h3_1
            if h3_t.max() >= -4:
                return h3_t, i1
        return h3_t, -1
    v0, k2 = h3(x2.copy(), x2, x1)
    v4 = v0[::2]
    v5 = v4.copy()
    r7 = v4
    for i6 in range(x3[0] + x3[1]):
        v5 += k2
        if i6 == 2: r7 = v5
    v8 = x1.copy()
    r10 = x1
    for i9 in range(1, x4.sum(), 2):
        v8 = v8 * 1
        r10 = v8
    v8[...] *= x1
    v11 = r10.copy()
    for i12 in range(x5[0], x5.sum()):
        v11[i12 % 2] = True
    v13 = v4.copy()
    for i14 in range(6, -1, -1):
        v13 = np.maximum(v13, v5)
        v13[i14 % 1] = v13[(i14 + 1) % 1]
    v13[np.array([-1, 0, 0, 0])] = v13
    v15 = x0.copy()
    c16 = 0
    while c16 < 6:
        v15[c16 % 4] = v15[(c16 + 1) % 4]
        c16 = c16 + 1
    v17 = np.outer(v15, x5)
    v18 = np.where(v13 > 0, x5, v11)
    v19 = x6[0]
    if np.isnan(v19).any():
        v20 = x6.T
    else:
        v20 = x6
    x6[None, None, None] -= v20
    v21 = v20
    if v19.max() < 2:
        v21 = v20[::-1]
    v21[0] += True
    if np.any(v19 > 0):
        v22 = v20
    else:
        v22 = v21
    v22[...] += v22
    v23 = x7[::-1]
    v23[...] += 0.5
    v24 = np.clip(v23, -np.abs(v23), np.abs(v23))
    v25 = np.where(x8, x8, v24)
    if v25.min() >= 0:
        v26 = v23
    else:
        v26 = x7
    v26[1:] = True
    v27 = np.copysign(True, v26)
    v28 = v26[::-1]
    v28[-1] = -1
    v29 = np.where(x9 > 0, x10, x9)
    v30 = x10.copy()
    for i31 in range(1, 9):
        v30[i31 % 2] = v30[(i31 + 1) % 2]
        v30 = v30 - x10
    v32 = v30.reshape(-1)
    v33 = v32.copy()
    c34 = 0 * x11
    while c34 < x11.sum():
        v33 = np.maximum(v33, x10)
        v33 = v33[::-1] + v29
        c34 = c34 + 1
    v35 = np.outer(v33, v29)
    v36 = v35.copy()
    for i37 in range(x12.sum() - 1, -1, -1):
        v36 += v33
        v36 += x12
    v36[...] += x9
    def h41(h41_t, h41_0):
        for i39 in range(5):
            h41_t[i39 % 2] = h41_0
            if h41_t.max() >= 6:
                return h41_t, i39
        return h41_t, -1
    v38, k40 = h41(x10.copy(), c34)
    v42 = x9[-3:-1]
    v43 = v30.copy()
    s45 = 0
    for i44 in range(8):
        v43[...] = v43 + v30
        s45 = s45 + v43.min()
    v43[0] = 7
    return (v18, v0, v5, v8, v11, v13, v15, v22, v20, v21, v28, v23, v26, s45, v30, v33, c34, v36, v38, v43, )


def test_fuzz_63000012_links_to_arrays_no_name_holds(backend):
    x0 = np.array([[2, 0], [3, 0], [-1, -2], [1, 1]], dtype=np.int32)
    x1 = np.array([-1, 3], dtype=np.int32)
    x2 = np.array([-3, -3], dtype=np.int32)
    x3 = np.array([3, 6], dtype=np.int64)
    x4 = np.array([4, 5], dtype=np.int64)
    x5 = np.array([3, 3], dtype=np.int32)
    x6 = np.array([-3, 3, 1, -2], dtype=np.int8)
    x7 = np.array([[-0.787109375, -0.83837890625, -1.0419921875, 0.1859130859375],
                   [0.0802001953125, -0.8828125, 2.267578125, 0.335205078125],
                   [-2.28125, -1.7431640625, 1.2109375, -0.014556884765625],
                   [-2.654296875, -1.1748046875, 1.912109375, -2.31640625]], dtype=np.float16)
    x8 = np.array([True, True, True, False], dtype=np.bool)
    x9 = np.array([-1, 1], dtype=np.int16)
    x10 = np.array([0, -2], dtype=np.int32)
    x11 = np.array(5, dtype=np.int64)
    x12 = np.array([0, 7], dtype=np.int8)
    check_mutates(_fuzz_63000012, x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, backend=backend)


# fuzz seeds 68000062 and 69000099: a name the first iteration (run on its own) binds to an array another name holds;
# whether a name holds a state's initial value is asked of the state's own name (a first iteration's binding is
# not one): the results were not linked after the loop to that array
def _fuzz_68000062(x0):
    v18 = x0.copy()
    r20 = x0.copy()
    for i19 in range(1, 10):
        if i19 % 3 == 1: r20 = v18
        v18[...] = v18 + x0
    r20[-1] = True
    return v18


def _fuzz_69000099(x0):
    v66 = x0.copy()
    r68 = x0
    for _ in range(5):
        r68 = v66
        v66[...] = v66 + x0
    r68[::2] += 7
    x0[...] = v66


def test_fuzz_68000062_first_iteration_binds_a_name_to_another_names_array(backend):
    check(_fuzz_68000062, np.array([0], np.uint8), backend=backend)
    check(_fuzz_68000062, np.array([2, 1], np.int16), backend=backend)


def test_fuzz_69000099_first_iteration_binds_a_name_to_another_names_array(backend):
    check_mutates(_fuzz_69000099, np.arange(6).reshape(6, 1), backend=backend)


# Fuzz seeds 68000222 and 68000309: a name that starts as a 0-d array argument (the loop's placeholder for it was a
# scalar), then bound in the loop to a 0-d state array written in place, missed the later writes
def _fuzz_68000222(x0, x1):
    v10 = x0.copy()
    c11 = 0
    while c11 < 5:
        v10 = v10 * x0
        c11 = c11 + 1
    v17 = x1.copy()
    r19 = x1
    for i18 in range(5):
        v17 += c11
        if i18 == 2: r19 = v17
    return r19


def _fuzz_68000309(x0, x1):
    v22 = x0.copy()
    c23 = 0
    while c23 < 5:
        v22 = v22[::-1] + x1
        c23 = c23 + 1
    v31 = x1.copy()
    r34 = x1
    for i32 in range(0, 10, 2):
        v31 += c23
        if i32 % 3 == 1: r34 = v31
    return r34


@pytest.mark.parametrize("fn, args", [(_fuzz_68000222, (np.array([0], np.uint8), np.array(0, np.int64))),
                                      (_fuzz_68000309, (np.ones(3, np.float16), np.array(7, np.int8)))],
                         ids=["68000222", "68000309"])
def test_zero_d_argument_a_name_starts_as(fn, args):
    check(fn, *args, backend="llvm")



def _scalar_then_zero_d_array(x, stop):
    v = x.copy()
    r = x + 0            # a NumPy scalar
    for i in range(5):
        v += 1
        if i == stop: r = v   # from here on r is v: the later writes into v are r's
    return r


def _scalar_then_zero_d_array_at_2(x):
    v = x.copy()
    r = x + 0
    for i in range(5):
        v += 1
        if i == 2: r = v
    return r


@pytest.mark.parametrize("x", [np.array(3, np.int64), np.array(1.5, np.float32)], ids=["int64", "float32"])
def test_a_scalar_the_loop_binds_to_a_zero_d_array_sees_its_later_writes(x, backend):
    check(_scalar_then_zero_d_array_at_2, x, backend=backend)
    for stop in (0, 2, 4, 9):
        check(_scalar_then_zero_d_array, x, stop, backend=backend)


# ---- a name that starts as a read-only array (fuzz seed 77001731) ----------------------------------------------------
# v = np.imag(x) of a real x is read-only in NumPy; a loop may rebind v to a new array. A write through v after the
# loop raises in NumPy only where no iteration rebound it: numfn raised while compiling, for every trip count

def _fuzz_77001731(x0):
    v19 = np.imag(x0)
    v25 = v19
    for i26 in range(10, -1, -1):
        v25 = v25 - v19
    v25[...] = x0
    return v25


def _read_only_before_a_loop(x, n):
    w = np.imag(x)
    v = w
    for i in range(n):
        v = v - x
    v[...] = x
    return v, w


def test_a_name_that_starts_read_only_is_written_where_the_loop_rebound_it(backend):
    check(_fuzz_77001731, np.array([1, 1], np.int8), backend=backend)
    x = np.array([1.5, -2.0, 3.0])
    for n in (5, 1):
        check(_read_only_before_a_loop, x, n, backend=backend)
    f = numfn.jit(_read_only_before_a_loop, backend=backend)   # no iteration: v is the read-only array
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        f(x, 0)
    for got, want in zip(f(x, 2), _read_only_before_a_loop(x, 2)):   # the same program, later calls
        np.testing.assert_array_equal(got, want)
