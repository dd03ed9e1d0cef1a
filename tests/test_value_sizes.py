"""Outputs sized by values with no static bound (issue 28, item 9): np.arange(int(x.sum())), np.zeros(x.max()),
np.repeat(x, counts), np.bincount(x), np.linspace(0, 1, k), compiled in two passes (numfn.trace.value_sizes,
numfn.value_specialization): a small program computes the size from the arguments, and the function is compiled
once per value.

Every case runs a sequence of calls against NumPy on the same arguments: values seen before reuse their program,
new ones compile once more (counted on the dispatcher's `value_specializations`). Sizes 0 and 1, non-contiguous
and reversed arguments, several dtypes; negative sizes raise NumPy's errors; constructs inside native loops are
refused with the rewrite; both backends (the `backend` fixture).
"""
import logging

import numpy as np
import pytest

import numfn
from numfn import value_specialization
from tests.helpers import assert_same, check_mutates, numpy_result


def run_calls(fn, calls, backend, jitted=None):
    """jit(fn) called on each argument tuple of `calls`, each result equal to NumPy's; returns the JitFunction."""
    jf = numfn.jit(fn, backend=backend) if jitted is None else jitted
    for args in calls:
        expected = numpy_result(fn, args)
        assert_same(jf(*args), expected, path=f"call with {args}")
        assert_same(jf(*args), expected, path=f"second call with {args}")
    return jf


def value_programs(jf) -> int:
    """How many specializations by value the function's dispatchers made (all rounds)."""
    def count(nf) -> int:
        if nf.size_request is None: return 0
        kids = list(nf.value_specializations.values())
        return len(kids) + sum(count(k) for k in kids)
    return sum(count(nf) for nf in jf.specializations)


# ---- the functions ---------------------------------------------------------------------------------------------
def arange_of_int_sum(x): return np.arange(int(x.sum()))
def arange_of_max(x): return np.arange(x.max()) * 2
def arange_float_bounds(x): return np.arange(x.min(), x.max(), 0.5)
def arange_start_stop_step(x): return np.arange(x[0], x[1], x[2])
def zeros_of_max(x): return np.zeros(x.max())
def ones_2d(x): return np.ones((2, x.max()), np.int32)
def empty_filled(x):
    e = np.empty((x.max(), 3))
    e[...] = x[0]
    return e
def full_of_sum(x): return np.full(int(x.sum()), 7.5)
def zeros_of_len(x): return np.zeros(int(len(x[x > 0])))   # the length of a selection, as a size
def zeros_of_selection_size(x): return np.zeros(x[x > 0].size)
def arange_of_len(x): return np.arange(len(x[x > 0]))
def zeros_of_int_argument(x, n): return np.zeros((n, 2)) + x[0]   # a Python int argument as a size
def ones_two_sizes(x): return np.ones((x.max(), x.min()))
def eye_of_max(x): return np.eye(x.max(), x.min() + 1, k=1)
def identity_of_len(x): return np.identity(len(x[x > 1]), np.int32)
def tri_of_max(x): return np.tri(x.max())
def indices_of_max(x): return np.indices((x.max(), 2))
def tile_of_max(x): return np.tile(x, (2, x.max()))
def repeat_counts(x, c): return np.repeat(x, c)
def repeat_axis1(x, c): return np.repeat(x, c, axis=1)
def repeat_one_count(x, c): return np.repeat(x, c[0])
def repeat_computed(x): return np.repeat(x, x % 3)
def bincount_plain(x): return np.bincount(x)
def bincount_weights(x, w): return np.bincount(x, weights=w)
def bincount_minlength(x): return np.bincount(x, minlength=4)
def run_length_histogram(idx): return np.bincount(np.diff(idx))
def linspace_int(k): return np.linspace(0, 1, int(k))
def linspace_num(k): return np.linspace(-1.0, 2.0, k, endpoint=False)


def two_sizes(x, y):   # the second size depends on the first (two rounds)
    a = np.arange(x.max())
    return np.zeros(a.size + y.max()) + a.sum()


def size_before_writing(x):   # the size reads x as it is at entry; the function then writes into a copy
    n = x.max()
    y = x.copy()
    y[:] = 0
    return np.ones(n) + y.sum()


I64 = np.int64
CASES = [
    (arange_of_int_sum, [(np.array([1, 2]),), (np.array([0, 3]),), (np.array([0, 0]),), (np.array([1, 0]),)], 3),
    (arange_of_max, [(np.array([1, 4], np.int32),), (np.array([4, 0], np.int32),), (np.array([-2, -1], np.int32),)],
     2),
    (arange_float_bounds, [(np.array([1.0, 4.0]),), (np.array([0.5, 1.0]),), (np.array([1.0, 1.0]),)], 5),
    (arange_start_stop_step, [(np.array([10, 0, -3]),), (np.array([0, 5, 2]),)], 6),
    (zeros_of_max, [(np.array([1, 4]),), (np.array([0, 0]),), (np.array([1, 1]),), (np.array([4, 2]),)], 3),
    (ones_2d, [(np.array([3, 2], np.int8),), (np.array([0, 1], np.int8),)], 2),
    (empty_filled, [(np.array([2, 1]),), (np.array([0, -1]),)], 2),
    (full_of_sum, [(np.array([True, True, False]),), (np.array([False] * 3),)], 2),
    (zeros_of_len, [(np.array([1.0, -1.0, 2.0]),), (np.array([-1.0, -1.0, -2.0]),)], 2),
    (zeros_of_selection_size, [(np.array([1.0, -1.0, 2.0]),), (np.array([-1.0]),), (np.zeros(0),)], 2),
    (arange_of_len, [(np.array([1.0, -1.0, 2.0]),), (np.array([3.0, 1.0, 2.0]),)], 2),
    # (a Python int argument that sizes arrays becomes static: no program by value, tests/test_static_fast_path.py)
    (zeros_of_int_argument, [(np.array([1.0]), 3), (np.array([2.0]), 0), (np.array([1.0]), 3)], 0),
    (ones_two_sizes, [(np.array([2, 3]),), (np.array([1, 3]),), (np.array([2, 1]),)], 5),
    (eye_of_max, [(np.array([3, 1]),), (np.array([0, -1]),), (np.array([3, 2]),)], 5),
    (identity_of_len, [(np.array([3, 1, 2]),), (np.array([0, 0, 0]),)], 2),
    (tri_of_max, [(np.array([3, 1]),), (np.array([1, 0]),)], 2),
    (indices_of_max, [(np.array([2, 1]),), (np.array([0, 0]),)], 2),
    (tile_of_max, [(np.array([1, 3]),), (np.array([0, -1]),)], 2),
    (repeat_counts, [(np.array([1.0, 2.0, 3.0]), np.array([2, 0, 3])), (np.array([1.0, 2.0, 3.0]), np.array([0, 0, 0])),
                     (np.array([4.0, 5.0, 6.0]), np.array([1, 3, 1])),
                     (np.array([1.0, 2.0, 3.0]), np.array([0, 1, 0]))],
     3),
    (repeat_counts, [(np.arange(6)[::-2], np.array([1, 2, 1], np.int32)[::-1])], 1),   # reversed views
    (repeat_axis1, [(np.arange(6.0).reshape(2, 3), np.array([1, 0, 2])),
                    (np.arange(6.0).reshape(2, 3).T, np.array([3, 1]))], 2),
    (repeat_one_count, [(np.arange(4).reshape(2, 2), np.array([2])), (np.arange(4).reshape(2, 2), np.array([0]))], 2),
    (repeat_computed, [(np.array([1, 2, 3, 4]),), (np.array([3, 6]),)], 2),
    (bincount_plain, [(np.array([1, 5, 1, 0]),), (np.array([0, 0]),), (np.array([2, 1, 1, 5]),), (np.zeros(0, I64),)],
     2),
    (bincount_plain, [(np.array([3, 1, 2], np.int32)[::-1],), (np.array([7], np.uint32),)], 2),
    (bincount_weights, [(np.array([1, 3, 1]), np.array([0.5, 1.0, 2.0])), (np.array([0, 0]), np.array([1.0, 2.0]))],
     2),
    (bincount_minlength, [(np.array([1, 9, 1]),), (np.array([0, 2]),)], 2),
    (run_length_histogram, [(np.array([0, 3, 4, 8, 9, 12]),), (np.array([0, 1, 2]),), (np.array([5, 5, 7]),)], 3),
    (linspace_int, [(np.array(5.7),), (np.array(0.5),), (np.array(1.0),)], 3),
    (linspace_num, [(np.array(4),), (np.array(0),), (np.array(1, np.int16),)], 3),
    (two_sizes, [(np.array([3, 1]), np.array([2])), (np.array([3, 0]), np.array([1])), (np.array([1]), np.array([0]))],
     5),
    (size_before_writing, [(np.array([2, 3]),), (np.array([1, 0]),)], 2),
]


@pytest.mark.parametrize("fn, calls, programs", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_sized_by_values_like_numpy(fn, calls, programs, backend):
    jf = run_calls(fn, calls, backend)
    assert value_programs(jf) == programs   # one per distinct value (per round), reused for a value seen before


def test_same_value_reuses_a_new_one_compiles_once(backend, caplog):
    jf = numfn.jit(zeros_of_max, backend=backend)
    with caplog.at_level(logging.DEBUG, logger="numfn"):
        jf(np.array([1, 3]))
        jf(np.array([3, 2]))
    new = [r.getMessage() for r in caplog.records if "a new value" in r.getMessage()]
    assert len(new) == 1 and "is 3" in new[0]   # NUMFN_DEBUG=1 says when a new size compiles
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="numfn"):
        assert_same(jf(np.array([5, 2])), np.zeros(5))
    assert sum("a new value" in r.getMessage() for r in caplog.records) == 1
    assert value_programs(jf) == 2
    nf = jf.specialize(np.array([5, 0]))   # the specialization these arguments run
    assert nf.sizes == (5,) and nf.size_request is None


def test_specializations_kept_are_bounded(backend, monkeypatch):
    monkeypatch.setattr(value_specialization, "VALUES_KEPT", 2)
    jf = numfn.jit(arange_of_max, backend=backend)
    for n in (1, 2, 3, 1):
        assert_same(jf(np.array([n])), np.arange(n) * 2)
    assert value_programs(jf) == 2


@pytest.mark.parametrize("fn, args", [
    (zeros_of_max, (np.array([-1, -4]),)),
    (repeat_counts, (np.array([1.0, 2.0]), np.array([1, -1]))),
    (repeat_one_count, (np.array([1.0, 2.0]), np.array([-2]))),
    (bincount_plain, (np.array([1, -5, 0]),)),
    (linspace_num, (np.array(-2),)),
    (eye_of_max, (np.array([-1, -3]),)),
    (tile_of_max, (np.array([-1, -3]),)),
    (lambda x: np.zeros(x[3]), (np.array([1, 2]),)),   # an index error comes before the size
    (lambda x: np.zeros(int(x[0])), (np.array([np.nan]),)),
    (lambda x: np.zeros(x.max()), (np.array([1.0, 2.0]),)),   # a float size
    (linspace_num, (np.array(2.0),)),
])
def test_errors_are_numpys(fn, args, backend):
    try:
        numpy_result(fn, args)
    except Exception as e:   # noqa: BLE001 - NumPy's exception is the oracle
        expected = e
    else:
        pytest.fail("the test is wrong: NumPy does not raise")
    jf = numfn.jit(fn, backend=backend)
    for _ in range(2):
        with pytest.raises(type(expected)):
            jf(*args)


def test_jitted_callee_sized_by_values(backend):
    inner = numfn.jit(lambda x: np.arange(x.max()), backend=backend)

    def outer(x):
        return inner(x) + 1
    run_calls(outer, [(np.array([2, 4]),), (np.array([0]),)], backend)


def size_in_native_loop(x):
    total = 0.0
    for i in range(x[0]):   # a trip count known when the program runs: a native loop
        total += np.zeros(x[i]).size
    return total


def test_size_inside_a_native_loop_is_refused_with_the_rewrite(backend):
    with pytest.raises(numfn.NumfnError, match="compute the size before the loop"):
        numfn.jit(size_in_native_loop, backend=backend)(np.arange(10))


def many_sizes(x):
    return [np.arange(x[k]) for k in range(9)]


def test_rounds_are_bounded(backend):
    assert_same(numfn.jit(lambda x: [np.arange(x[k]) for k in range(3)], backend=backend)(np.arange(9)),
                [np.arange(k) for k in range(3)])
    with pytest.raises(numfn.NumfnError, match="at most 8"):
        numfn.jit(many_sizes, backend=backend)(np.arange(9))


def write_then_size(x):   # the size reads x after the function's own write, as NumPy does; the size program
    x[0] = 4              # writes nothing (the function's program writes x, once)
    x += 1
    return np.arange(x.max())


def test_function_writing_its_argument(backend):
    from tests.helpers import check_mutates
    jf = check_mutates(write_then_size, np.array([0, 1, 2]), backend=backend, calls=3)
    assert value_programs(jf) == 1   # x.max() is 5 after the writes at every call


def test_a_specialization_called_with_other_values_refuses(backend):
    jf = numfn.jit(zeros_of_max, backend=backend)
    nf = jf.specialize(np.array([2, 1]))
    assert_same(nf(np.array([1, 2])), np.zeros(2))
    with pytest.raises(TypeError, match="specialized for the values"):
        nf(np.array([3, 1]))


WARM = """
import logging, sys
import numpy as np
import numfn
logging.getLogger("numfn").setLevel(logging.DEBUG)
logging.getLogger("numfn").addHandler(logging.StreamHandler(sys.stdout))
f = numfn.jit(lambda x: np.bincount(x), backend=sys.argv[1])
print(f(np.array([1, 3, 1])).tolist(), f(np.array([0, 0])).tolist())
"""


def test_a_new_process_loads_every_program_from_the_disk_cache(backend, tmp_path):
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "NUMFN_CACHE_DIR": str(tmp_path), "NUMFN_DEBUG": "0",
           "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    runs = [subprocess.run([sys.executable, "-c", WARM, backend], env=env, capture_output=True, text=True,
                           timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
        assert "[0, 2, 0, 1] [2]" in r.stdout
    cold, warm = (sum(line.startswith(w) for line in r.stdout.splitlines()) for r, w in zip(runs, ("compiled",
                                                                                                  "loaded")))
    assert cold == 4 and warm == 4   # for each of the two signatures, its size program and its specialization


def size_in_branch(x):
    s = 0.0
    if x.sum() > 0:   # a native branch: NumPy would not compute the size when it is not taken
        s = np.zeros(x.max()).sum() + 1
    return s


def size_before_native_loop(x):   # the rewrite the refusal names
    out = np.zeros(x.max())
    for i in range(x[0]):
        out[i] = i
    return out


def test_size_inside_a_branch_is_refused_and_the_rewrite_runs(backend):
    with pytest.raises(numfn.TracerConversionError, match="compute the size before the loop \\(or branch\\)"):
        numfn.jit(size_in_branch, backend=backend)(np.array([1, 2]))
    run_calls(size_before_native_loop, [(np.array([2, 3]),), (np.array([0, 1]),), (np.array([5, 5]),)], backend)


def kmeans_bincount(X, C, iters):
    k = C.shape[0]
    for _ in range(iters):
        d = np.linalg.norm(X[:, None, :] - C[None], axis=2)
        lab = d.argmin(1)
        cnt = np.bincount(lab, minlength=k)
        for j in range(X.shape[1]):
            C[:, j] = np.bincount(lab, weights=X[:, j], minlength=k) / np.maximum(cnt, 1)
    return C


def test_bincount_of_an_arg_reduction_has_its_static_length(backend):
    """np.argmin along an axis of n is below n (the bounds of its value say so), so np.bincount of it with
    minlength=n has the length n while tracing: inside a loop, where no second pass can ask for a length."""
    rng = np.random.default_rng(7)
    X, C = rng.random((60, 2)), rng.random((4, 2))
    check_mutates(kmeans_bincount, X, C, 3, backend=backend)
    d = rng.random((9, 5))
    jf = numfn.jit(lambda d: (np.bincount(d.argmax(axis=0), minlength=9), np.bincount(np.argmin(d, axis=1))),
                   backend=backend)
    for got, want in zip(jf(d), (np.bincount(d.argmax(axis=0), minlength=9), np.bincount(np.argmin(d, axis=1)))):
        assert_same(got, want)
