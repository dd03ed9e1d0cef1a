"""Checks of counted loops computed before the loop (numfn.trace.hoisted_checks): a loop over a range of static
bounds whose checks read only the counter and arrays the loop does not write (`for v in data: counts[int(v)] += 1`)
evaluates them for every iteration first. Python's answer must not change: the error of the first failing
iteration (whichever check fails first, hoisted or not), its message, and the same results where nothing fails.
Every program runs more than four iterations (shorter loops are unrolled, not native)."""
import numpy as np
import pytest

import numfn
from helpers import assert_same


def histogram(data):
    counts = np.zeros(64, np.int64)
    for v in data:
        counts[int(v)] += 1
    return counts


def histogram_backwards(data):
    counts = np.zeros(64, np.int64)
    for i in range(len(data) - 1, -1, -1):
        counts[int(data[i])] += 1
    return counts


def every_other(data):
    counts = np.zeros(64, np.int64)
    for i in range(1, len(data), 2):
        counts[int(data[i])] += 1
    return counts


def by_fori_loop(data):   # numfn.fori_loop runs as Python's loop outside a trace (the oracle)
    def body(i, counts):
        counts[int(data[i])] += 1
        return counts
    return numfn.fori_loop(0, len(data), body, np.zeros(64, np.int64))


def table_lookup(data):   # the check is hoisted, the state (a sum) is not in it
    table = np.arange(64.0) * 0.5
    total = 0.0
    for v in data:
        total += table[int(v)]
    return total


def walk(data):   # int() is hoisted; the index check reads the state (pos), so it stays in the loop
    pos = 0
    total = 0.0
    for i in range(len(data)):
        pos = pos + int(data[i]) // 15   # leaves data near iteration 20 unless a planted value ends the loop
        total += data[pos]
    return total, pos


def in_a_branch(data):
    counts = np.zeros(64, np.int64)
    for v in data:
        if v > 10:
            counts[int(v) - 10] += 1
    return counts


def with_break(data):   # a loop that may end early: its checks stay in the loop
    counts = np.zeros(64, np.int64)
    for v in data:
        if v == 63:
            break
        counts[int(v)] += 1
    return counts


def nested(data):   # the inner loop's check reads the outer loop's counter (an outer value to the inner loop)
    m = data.reshape(8, -1)
    counts = np.zeros(64, np.int64)
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            counts[int(m[i, j])] += 1
    return counts


PROGRAMS = [histogram, histogram_backwards, every_other, by_fori_loop, table_lookup, walk, in_a_branch, with_break,
            nested]

# (position, value) planted into in-range data of 40 values (0..62): nothing, each kind of failure, two failures
# (the first must win, in loop order), a failure in the first and in the last iteration
PLANTED = {"clean": [], "nan": [(17, np.nan)], "inf": [(9, np.inf)], "too_big": [(23, 64.0)],
           "too_small": [(30, -65.0)], "huge": [(12, 1e19)], "first": [(0, np.nan)], "last": [(39, 70.0)],
           "index_then_nan": [(5, 99.0), (20, np.nan)], "nan_then_index": [(5, np.nan), (20, 99.0)],
           "same_iteration_twice": [(8, -100.0), (8, np.nan)]}


def _outcome(fn, data):
    try:
        return "value", fn(data)
    except (IndexError, ValueError, OverflowError) as e:
        return type(e).__name__, str(e)


@pytest.fixture(scope="module")
def compiled():
    return {}


@pytest.mark.parametrize("planted", list(PLANTED))
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_first_failing_iteration_raises_as_python(fn, planted, backend, compiled):
    data = (np.arange(40) * 7 % 63).astype(np.float64)
    for at, v in PLANTED[planted]: data[at] = v
    jf = compiled.setdefault((fn, backend), numfn.jit(fn, backend=backend))   # one compile per program
    kind, expected = _outcome(fn, data.copy())
    got_kind, got = _outcome(jf, data.copy())
    if kind == "value":
        assert got_kind == "value", got
        assert_same(got, expected)
    elif "int() of" in str(got) and "64-bit" in str(got):   # numfn's ints have 64 bits: int(1e19) raises
        assert planted == "huge"
    else:
        assert (got_kind, got) == (kind, expected)


def test_hoisted_checks_leave_the_loop_without_check_state():
    # the histogram's two checks (int() of a float, the index's range) are computed before the loop: the loop's
    # condition reads no check flag the body sets
    from numfn.ir.uop import Ops
    nf = numfn.jit(histogram).specialize(np.zeros(40))
    loops = [u for u in nf.function_graph.toposort() if u.op is Ops.LOOP]
    assert len(loops) == 1
    region = loops[0].arg
    body = region.bodies[0].src
    checks = [k for k, name in enumerate(region.names) if name == "a check's flag"]
    assert len(checks) == 2
    for k in checks:   # each flag is given back as it came in: loop-invariant
        assert body[k].op is Ops.CARRY and body[k].arg[1] == k


def test_empty_and_short_ranges():
    for n in (0, 1, 4, 5):
        data = np.full(n, 3.0)
        np.testing.assert_array_equal(numfn.jit(histogram)(data), histogram(data))
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        numfn.jit(histogram)(np.array([1.0, 2, 3, 4, 5, np.nan]))
