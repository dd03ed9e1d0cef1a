"""The fast call path (numfn.runtime.dispatch, numfn/runtime/_dispatch.c), driven with real compiled numfn programs
registered on a small Dispatcher subclass whose _dispatch_miss records the calls that missed."""
import gc
import json
import os
import subprocess
import sys
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import numfn
from helpers import assert_same
from numfn.runtime import extensions
from numfn.runtime.dispatch import PyDispatcher, check_out, fast_arg_specs, register_specialization

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MISS = object()
F64 = np.dtype(np.float64).num


@pytest.fixture(scope="module")
def Base():
    """The C Dispatcher (skipped where numfn was installed without it)."""
    if extensions.dispatch is None: pytest.skip("numfn was installed without the fast call extension")
    return extensions.dispatch.Dispatcher


@pytest.fixture(scope="module")
def Recorder(Base):
    class Recorder(Base):
        """Records every call that reached the miss path; returns MISS for it."""

        def __init__(self):
            self.misses = []

        def _dispatch_miss(self, *args, **kwargs):
            self.misses.append((args, kwargs))
            return MISS

    return Recorder


def specialize(fn, *args, backend=None):
    return numfn.jit(fn, backend=backend).specialize(*args)


def make(Recorder, fn, *args, backend=None, **register):
    """A Recorder with the specialization of `fn` for `args` registered; returns (dispatcher, nf)."""
    nf = specialize(fn, *args, backend=backend)
    d = Recorder()
    assert register_specialization(d, nf, **register)
    return d, nf


def axpb(x):
    return x * 2.0 + 1.0


# ---- the fast path ---------------------------------------------------------------------------------------------------

def test_fast_path_equals_numpy(Recorder, backend):
    x = np.array([1.0, -2.5, 3.25])
    d, _ = make(Recorder, axpb, x, backend=backend)
    r1, r2 = d(x), d(x)
    np.testing.assert_array_equal(r1, x * 2.0 + 1.0)
    assert r1.dtype == np.float64 and r1.shape == (3,) and type(r1) is np.ndarray
    assert r1 is not r2 and not np.shares_memory(r1, r2) and not np.shares_memory(r1, x)
    assert r1.flags.c_contiguous and r1.flags.writeable and r1.flags.owndata
    assert d.misses == [] and d._entries() == 1


def test_raw_register(Recorder):
    """_register with hand-written specs, as the docs describe them."""
    x = np.arange(6.0).reshape(2, 3)
    nf = specialize(lambda x, y: (x + y, x * y), x, x)
    prog = nf.compiled
    d = Recorder()
    d._register(prog.address, (("array", F64, (2, 3)), ("array", F64, (2, 3))), ((F64, (2, 3)), (F64, (2, 3))),
                nf.pointer_constants, prog, None, False)
    s, p = d(x, x + 1)
    np.testing.assert_array_equal(s, 2 * x + 1)
    np.testing.assert_array_equal(p, x * (x + 1))
    assert d.misses == []


@pytest.mark.parametrize("fn, structure", [
    (lambda x, y: (x + y, x * y), tuple),
    (lambda x, y: [x + y, x * y], list),
    (lambda x, y: (x + y,), tuple),
    (lambda x, y: {"sum": x + y, "prod": x * y}, dict),
    (lambda x, y: (x + y, {"p": x * y, "q": (x - y,)}), tuple),
])
def test_output_structures(Recorder, fn, structure):
    x, y = np.arange(4.0), np.full(4, 3.0)
    d, _ = make(Recorder, fn, x, y)
    got, expected = d(x, y), fn(x, y)
    assert type(got) is structure and d.misses == []
    assert_same(got, expected)


def test_python_scalars(Recorder):
    f = lambda x, a, n, b: x * a + n + b
    x = np.arange(3.0)
    d, nf = make(Recorder, f, x, 1.5, 7, True)
    assert fast_arg_specs(nf) == (("array", F64, (3,)), ("float",), ("int",), ("bool",))
    for a, n, b in [(1.5, 7, True), (-0.25, -3, False), (2.0, 2**62, True), (0.0, -2**63, False),
                    (1.0, 2**63 - 1, False)]:
        np.testing.assert_array_equal(d(x, a, n, b), f(x, a, n, b))
    assert d.misses == []


def test_int_and_bool_arguments(Recorder):
    x = np.arange(3, dtype=np.int64)
    d, _ = make(Recorder, lambda x, n: x + n, x, 5)
    np.testing.assert_array_equal(d(x, -9), x - 9)
    xb = np.array([True, False, True])
    db, _ = make(Recorder, lambda x, b: x & b, xb, True)
    np.testing.assert_array_equal(db(xb, False), [False, False, False])
    np.testing.assert_array_equal(db(xb, True), xb)
    assert d.misses == [] and db.misses == []


def test_narrowed_int_ranges(Recorder):
    """A Python int the function converts to int8 must fit int8 (NumPy raises OverflowError): others miss."""
    x = np.arange(3, dtype=np.int8)
    d, nf = make(Recorder, lambda x, n: x + n, x, 5)
    assert fast_arg_specs(nf)[1] == ("int", -128, 127)
    for n in (-128, 0, 127):
        np.testing.assert_array_equal(d(x, n), x + np.int8(n))
    assert d.misses == []
    for n in (128, -129, 2**40):
        assert d(x, n) is MISS
    assert len(d.misses) == 3


def test_int_range_in_raw_specs(Recorder):
    nf = specialize(lambda x, n: x + n, np.arange(3.0), 1)
    d = Recorder()
    d._register(nf.compiled.address, (("array", F64, (3,)), ("int", -5, 10)), ((F64, (3,)),), (), nf.compiled)
    np.testing.assert_array_equal(d(np.zeros(3), 10), np.full(3, 10.0))
    np.testing.assert_array_equal(d(np.zeros(3), -5), np.full(3, -5.0))
    assert d(np.zeros(3), 11) is MISS and d(np.zeros(3), -6) is MISS
    d._register(nf.compiled.address, (("array", F64, (3,)), ("int", -5, 11)), ((F64, (3,)),), (), nf.compiled)
    assert d._entries() == 2   # another range: another entry
    with pytest.raises(OverflowError):
        d._register(nf.compiled.address, (("array", F64, (3,)), ("int", 0, 2**64)), ((F64, (3,)),), (), None)


def test_equivalent_type_numbers(Recorder):
    """int64 arrays made as long long (another type number, the same type on LP64) take the fast path."""
    x = np.arange(3, dtype=np.int64)
    d, _ = make(Recorder, lambda x: x * 3, x)
    y = np.arange(3, dtype=np.longlong)
    if np.dtype(np.longlong) != np.dtype(np.int64): pytest.skip("long long is not int64 here")
    np.testing.assert_array_equal(d(y), y * 3)
    assert d.misses == []


# ---- misses ----------------------------------------------------------------------------------------------------------

class Sub(np.ndarray):
    pass


@pytest.mark.parametrize("args, kwargs", [
    ((np.ones(3, np.float32),), {}),                    # dtype
    ((np.ones(4),), {}),                                # shape
    ((np.ones((3, 1)),), {}),                           # ndim
    ((np.ones(()),), {}),                               # 0-d
    ((np.ones(3, ">f8"),), {}),                         # byte order
    ((np.ones(3).view(Sub),), {}),                      # ndarray subclass
    (([1.0, 2.0, 3.0],), {}),                           # list
    (((1.0, 2.0, 3.0),), {}),                           # tuple
    ((1.0,), {}),                                       # a scalar
    ((None,), {}),
    ((), {}),                                           # too few
    ((np.ones(3), np.ones(3)), {}),                     # too many
    ((), {"x": np.ones(3)}),                            # keyword argument
    ((np.ones(3),), {"y": 1}),                          # unknown keyword
    ((np.ones(3),), {"out": np.empty(3), "y": 1}),      # out= with another keyword
])
def test_mismatches_miss(Recorder, args, kwargs):
    d, _ = make(Recorder, axpb, np.ones(3))
    assert d(*args, **kwargs) is MISS
    assert len(d.misses) == 1
    margs, mkwargs = d.misses[0]
    assert len(margs) == len(args) and all(a is b for a, b in zip(margs, args))
    assert mkwargs.keys() == kwargs.keys() and all(mkwargs[k] is kwargs[k] for k in kwargs)


@pytest.mark.parametrize("a, n, b", [
    (1, 1, True),                   # int for float
    (np.float64(1.0), 1, True),     # a NumPy scalar is not a Python float
    (1.0, 1.0, True),               # float for int
    (1.0, True, True),              # bool for int
    (1.0, np.int64(1), True),       # NumPy int for int
    (1.0, 2**63, True),             # int64 overflow
    (1.0, -2**63 - 1, True),
    (1.0, 10**30, True),
    (1.0, 1, 1),                    # int for bool
    (1.0, 1, np.True_),             # NumPy bool for bool
    (1.0, 1, None),
])
def test_scalar_mismatches_miss(Recorder, a, n, b):
    f = lambda x, a, n, b: x * a + n + b
    x = np.arange(3.0)
    d, _ = make(Recorder, f, x, 1.5, 7, True)
    assert d(x, a, n, b) is MISS and len(d.misses) == 1


def test_miss_without_override(Base):
    with pytest.raises(NotImplementedError):
        Base()(1)


def test_miss_errors_propagate(Base):
    class Failing(Base):
        def _dispatch_miss(self, *args, **kwargs):
            raise KeyError(args, kwargs)

    with pytest.raises(KeyError) as e:
        Failing()(1, 2, z=3)
    assert e.value.args == ((1, 2), {"z": 3})


# ---- layouts ---------------------------------------------------------------------------------------------------------

def misaligned(a: np.ndarray) -> np.ndarray:
    buf = bytearray(a.nbytes + 1)
    out = np.frombuffer(buf, dtype=a.dtype, count=a.size, offset=1).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned
    return out


def readonly(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("make_input", [
    lambda a: np.repeat(a, 2, axis=1)[:, ::2],          # strided
    lambda a: a[::-1, ::-1].copy()[::-1, ::-1],         # negative strides
    lambda a: np.asfortranarray(a),                     # Fortran order
    misaligned,
    readonly,
    lambda a: np.frombuffer(a.tobytes(), a.dtype).reshape(a.shape),   # read-only, on a bytes object
])
def test_layouts(Recorder, make_input):
    a = np.arange(12.0).reshape(3, 4) - 5.5
    d, _ = make(Recorder, axpb, a)
    x = make_input(a)
    np.testing.assert_array_equal(x, a)
    before = x.copy()
    r = d(x)
    np.testing.assert_array_equal(r, a * 2.0 + 1.0)
    np.testing.assert_array_equal(x, before)
    assert r.flags.c_contiguous and d.misses == []


def scale_in_place(x, y):
    x *= 2.0
    x[0] = y.sum()
    return x[1] + 1.0


@pytest.mark.parametrize("make_input", [
    lambda a: np.repeat(a, 2, axis=1)[:, ::2],          # strided
    lambda a: np.asfortranarray(a),                     # Fortran order
    misaligned,
    readonly,
], ids=["strided", "fortran", "misaligned", "readonly"])
def test_an_argument_written_into_takes_the_fast_path_only_in_place(Recorder, make_input, backend):
    """A function writing into an argument takes the fast path when the array can be written in place: C-contiguous,
    aligned, writeable, sharing no memory with the other arguments. Other arrays miss, and the Python path copies
    them in and back, raises NumPy's error for a read-only one, or compiles the function for shared memory."""
    a, y = np.arange(12.0).reshape(3, 4) - 5.5, np.arange(4.0)
    d, nf = make(Recorder, scale_in_place, a, y, backend=backend)
    assert nf.mutated_inputs == (0,)
    for _ in range(2):   # in place, twice: the caller's array changes as NumPy's would
        x, want = a.copy(), a.copy()
        expected = scale_in_place(want, y)
        assert_same(d(x, y), expected)
        assert_same(x, want)
    assert d.misses == []
    x = make_input(a)
    assert d(x, y) is MISS and len(d.misses) == 1
    w = a.copy()
    assert d(w, w[0]) is MISS   # y is a view of x
    f = numfn.jit(scale_in_place, backend=backend)   # the Python path behind those misses: NumPy's answers
    for x in (make_input(a), a.copy()):
        if not x.flags.writeable:
            with pytest.raises(ValueError, match="read-only"): f(x, y)
            continue
        want = np.array(x, copy=True)
        expected = scale_in_place(want, y)
        assert_same(f(x, y), expected)
        assert_same(x, want)
    w, want = a.copy(), a.copy()
    expected = scale_in_place(want, want[0])
    assert_same(f(w, w[0]), expected)
    assert_same(w, want)


def nonzero_and_sum(x):
    return np.nonzero(x > 0.5)[0], x.sum(), np.flatnonzero(x < 0)


def test_outputs_of_a_data_dependent_length_take_the_fast_path(Recorder, backend):
    """np.nonzero's length is known after the call: its output and its length are registered, and the builder cuts
    the output to it. out= cannot name such outputs: a call with it misses (the Python path's error)."""
    x = np.array([0.1, 0.9, -1.0, 0.7, 0.2])
    d, nf = make(Recorder, nonzero_and_sum, x, backend=backend)
    assert len(nf.cut_outputs) == 2
    for v in (x, -x, x * 0, np.array([1.0, 1, 1, 1, 1])):
        got = d(v)
        for g, w in zip(got, nonzero_and_sum(v)): assert_same(g, w)
    assert d.misses == []
    assert d(x, out=(np.empty(5, np.int64), np.empty(()), np.empty(5, np.int64))) is MISS


def nonzero_and_element(x, i):
    return np.nonzero(x > 0.5)[0], x[i]


def test_data_dependent_lengths_next_to_checks_take_the_fast_path(Recorder, backend):
    """A program with checks (here the bounds of x[i], i a Python int) and outputs of data-dependent length has
    its check slots between the outputs and their lengths in its buffer table; the fast path places them so (a
    rolling window `c[w:] - c[:-w]` with a Python int `w` is such a program: it took the Python path, 30x slower)."""
    x = np.array([0.1, 0.9, -1.0, 0.7, 0.2])
    d, nf = make(Recorder, nonzero_and_element, x, 1, backend=backend)
    assert nf.cut_outputs and nf.checks
    for v, i in ((x, 1), (-x, -5), (x * 0, 4), (np.ones(5), 0)):
        got = d(v, i)
        for g, w in zip(got, nonzero_and_element(v, i)): assert_same(g, w)
    assert d.misses == []
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"): d(x, 5)
    with pytest.raises(IndexError, match="index -6 is out of bounds"): d(x, -6)


def test_zero_size_and_0d(Recorder):
    e = np.ones((0, 3))
    d, _ = make(Recorder, axpb, e)
    r = d(e)
    assert r.shape == (0, 3) and r.dtype == np.float64
    z = np.array(2.0)
    d0, _ = make(Recorder, axpb, z)
    r0 = d0(z)
    assert r0.shape == () and r0 == 5.0 and type(r0) is np.ndarray
    assert d.misses == [] and d0.misses == []


# ---- out= ------------------------------------------------------------------------------------------------------------

def test_out_single(Recorder):
    x = np.arange(3.0)
    d, _ = make(Recorder, axpb, x)
    out = np.full(3, np.nan)
    before = sys.getrefcount(out)
    r = d(x, out=out)
    assert r is out
    np.testing.assert_array_equal(out, x * 2.0 + 1.0)
    assert d(x, out=(out,)) is out
    del r
    assert sys.getrefcount(out) == before
    np.testing.assert_array_equal(d(x, out=None), x * 2.0 + 1.0)
    assert d.misses == []


def test_out_several(Recorder):
    x, y = np.arange(3.0), np.ones(3)
    d, _ = make(Recorder, lambda x, y: (x + y, x * y), x, y)
    o = (np.empty(3), np.empty(3))
    r = d(x, y, out=o)
    assert r is o
    np.testing.assert_array_equal(o[0], x + y)
    np.testing.assert_array_equal(o[1], x * y)
    db, _ = make(Recorder, lambda x, y: {"s": x + y, "p": x * y}, x, y)
    r = db(x, y, out=o)
    assert r["p"] is o[0] and r["s"] is o[1]   # dict leaves in key order: p, s
    np.testing.assert_array_equal(r["s"], x + y)


def out_cases(x):
    base = np.zeros(8)
    ro = np.empty(3)
    ro.flags.writeable = False
    return [
        (np.empty(3, np.float32), TypeError, r"out\[0\] has dtype float32; .*dtype float64 and shape \(3,\)"),
        (np.empty(3, ">f8"), TypeError, r"out\[0\] has dtype >f8"),
        (np.empty(4), ValueError, r"out\[0\] has shape \(4,\); .*shape \(3,\)"),
        (np.empty((3, 1)), ValueError, r"out\[0\] has shape \(3, 1\)"),
        (base[::2][:3], ValueError, r"out\[0\] is not C-contiguous"),
        (ro, ValueError, r"out\[0\] is read-only"),
        (misaligned(np.zeros(3)), ValueError, r"out\[0\] is not aligned"),
        ([0.0, 0.0, 0.0], TypeError, r"out\[0\] is of type list; .*dtype float64"),
        (x, ValueError, r"out\[0\] shares memory with input argument 0"),
        ((np.empty(3), np.empty(3)), ValueError, r"a tuple of 2"),
    ]


def test_out_errors(Recorder):
    x = np.arange(3.0)
    d, _ = make(Recorder, axpb, x)
    for out, exc, pattern in out_cases(x):
        before = sys.getrefcount(out)
        with pytest.raises(exc, match=pattern):
            d(x, out=out)
        with pytest.raises(exc, match=pattern):   # the Python path's check says the same
            check_out(out, [((3,), np.float64)], [x])
        assert sys.getrefcount(out) == before
    assert d.misses == []


def test_out_overlap(Recorder):
    buf = np.arange(8.0)
    x, y = buf[:3], buf[5:8]
    d, _ = make(Recorder, lambda x, y: (x + y, x - y), x, y)
    with pytest.raises(ValueError, match=r"out\[1\] shares memory with input argument 1"):
        d(x, y, out=(np.empty(3), buf[4:7]))
    with pytest.raises(ValueError, match=r"out\[0\] shares memory with input argument 0"):
        d(x, y, out=(buf[2:5], np.empty(3)))
    o = np.empty(6)
    with pytest.raises(ValueError, match=r"out\[1\] shares memory with out\[0\]"):
        d(x, y, out=(o[:3], o[2:5]))
    with pytest.raises(TypeError, match=r"a tuple of 2 arrays"):
        d(x, y, out=np.empty(3))
    r = d(x, y, out=(o[:3], o[3:6]))   # adjacent but disjoint: fine
    np.testing.assert_array_equal(r[0], x + y)
    np.testing.assert_array_equal(o[3:6], x - y)
    # a strided input's whole span counts, even between its elements
    z = np.arange(12.0)
    ds, _ = make(Recorder, axpb, z[::4])
    with pytest.raises(ValueError, match="input argument 0"):
        ds(z[::4], out=z[5:8])
    np.testing.assert_array_equal(ds(z[::4], out=np.empty(3)), z[::4] * 2.0 + 1.0)


def test_out_zero_size_never_overlaps(Recorder):
    e = np.ones((0, 3))
    d, _ = make(Recorder, axpb, e)
    assert d(e, out=e) is e


def test_out_overlapping_a_pointer_constant(Recorder):
    table = np.arange(4096.0)   # 32 KiB: passed by pointer
    x = np.ones(4096)
    d, nf = make(Recorder, lambda x: x * table, x)
    assert nf.pointer_constants, "expected a pointer constant"
    np.testing.assert_array_equal(d(x + 1), 2 * table)
    np.testing.assert_array_equal(d(x, out=table), table)   # numfn captured a (read-only) copy of table
    # a constant that an out= can reach: register the program with a writeable constant of our own
    mine = np.arange(4096.0)
    d._register(nf.compiled.address, (("array", F64, (4096,)),), ((F64, (4096,)),), (mine,), nf.compiled)
    np.testing.assert_array_equal(d(x + 2), 3 * mine)
    with pytest.raises(ValueError, match=r"out\[0\] shares memory with an array the function captured"):
        d(x, out=mine)
    assert d.misses == []


# ---- registration ----------------------------------------------------------------------------------------------------

def test_entry_limit_and_lru(Recorder):
    d = Recorder()
    nfs = [specialize(axpb, np.ones(n)) for n in range(1, 18)]
    for nf in nfs: register_specialization(d, nf)
    assert d._entries() == 16                          # the first (size 1) was dropped
    assert d(np.ones(1)) is MISS
    np.testing.assert_array_equal(d(np.ones(2)), np.full(2, 3.0))   # size 2 is now the most recently used
    register_specialization(d, nfs[0])                 # drops the least recently used: size 3
    assert d(np.ones(3)) is MISS and len(d.misses) == 2
    for n in (1, 2, *range(4, 18)):
        np.testing.assert_array_equal(d(np.ones(n)), np.full(n, 3.0))
    register_specialization(d, nfs[5])                 # the same arguments: replaced, not added
    assert d._entries() == 16
    d._clear()
    assert d._entries() == 0 and d(np.ones(2)) is MISS


def test_keepalive_and_builder_released(Recorder):
    class Token:
        pass

    nf = specialize(axpb, np.ones(3))
    prog = nf.compiled
    keep, build = Token(), (lambda outs: outs[0])
    refs = weakref.ref(keep), weakref.ref(build)
    d = Recorder()
    d._register(prog.address, (("array", F64, (3,)),), ((F64, (3,)),), (), keep, build)
    del keep, build
    assert all(r() is not None for r in refs)
    np.testing.assert_array_equal(d(np.ones(3)), np.full(3, 3.0))
    d._clear()
    assert all(r() is None for r in refs)


def test_cycle_through_builder_is_collected(Recorder):
    nf = specialize(axpb, np.ones(3))
    d = Recorder()
    d._register(nf.compiled.address, (("array", F64, (3,)),), ((F64, (3,)),), (), nf.compiled,
                lambda outs, d=d: outs)   # the builder refers back to the dispatcher
    ref = weakref.ref(d)
    del d
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("specs, outs, consts, error", [
    ((("array", F64),), (), (), ValueError),
    ((("array", F64, [3]),), (), (), TypeError),
    ((("array", F64, (-1,)),), (), (), ValueError),
    ((("array", 999, (3,)),), (), (), ValueError),
    ((("array", np.dtype(object).num, (3,)),), (), (), ValueError),
    ((("complex",),), (), (), ValueError),
    (("float",), (), (), TypeError),
    (((1,),), (), (), TypeError),
    ([], (), (), TypeError),
    ((), ((F64,),), (), TypeError),
    ((), ((F64, (3,), 1),), (), TypeError),
    ((), (("f8", (3,)),), (), TypeError),
    ((), (), ([1.0],), TypeError),
    ((), (), [], TypeError),
    ((("array", F64, tuple(range(1, 70))),), (), (), ValueError),
])
def test_bad_registrations(Recorder, specs, outs, consts, error):
    nf = specialize(axpb, np.ones(3))
    d = Recorder()
    with pytest.raises(error):
        d._register(nf.compiled.address, specs, outs, consts, None)
    assert d._entries() == 0


def test_bad_address_and_builder(Recorder):
    d = Recorder()
    with pytest.raises(ValueError):
        d._register(0, (), (), (), None)
    with pytest.raises(TypeError):
        d._register("x", (), (), (), None)
    with pytest.raises(TypeError):
        d._register(1, (), (), (), None, 42)
    assert d._entries() == 0


def test_non_contiguous_constants_are_copied(Recorder):
    nf = specialize(lambda x: x, np.ones(3))   # any entry: we only check the constant is kept contiguous
    d = Recorder()
    c = np.arange(10.0)[::2]
    d._register(nf.compiled.address, (("array", F64, (3,)),), ((F64, (3,)),), (c,), None)
    assert d._entries() == 1
    np.testing.assert_array_equal(d(np.arange(3.0)), np.arange(3.0))


def test_builder_errors_propagate(Recorder):
    nf = specialize(axpb, np.ones(3))
    d = Recorder()

    def builder(outs):
        raise RuntimeError("from the builder")

    d._register(nf.compiled.address, (("array", F64, (3,)),), ((F64, (3,)),), (), None, builder)
    with pytest.raises(RuntimeError, match="from the builder"):
        d(np.ones(3))


@pytest.fixture(scope="module")
def failing_entry():
    """The address of a C function `int entry(void **)` that returns 1 (its scratch allocation failed)."""
    from numfn.runtime import compile_program
    prog = compile_program("c", "int fail_entry(void **b) { (void)b; return 1; }\n", "fail_entry")
    return prog.keepalive, prog.address


def test_nonzero_status_is_memory_error(Recorder, failing_entry):
    lib, addr = failing_entry
    for release in (False, True):
        d = Recorder()
        d._register(addr, (("array", F64, (3,)),), ((F64, (3,)),), (), lib, None, release)
        x = np.ones(3)
        before = sys.getrefcount(x)
        with pytest.raises(MemoryError):
            d(x)
        assert sys.getrefcount(x) == before


# ---- threads, references ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("release_gil", [False, True])
def test_threads(Recorder, release_gil):
    n = 1000
    d, _ = make(Recorder, lambda x, y: x * y + 1.0, np.ones(n), np.ones(n), release_gil=release_gil)
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(2000):
                x, y = rng.standard_normal(n), rng.standard_normal(n)
                r = d(x, y)
                if not np.allclose(r, x * y + 1.0, rtol=1e-12, atol=1e-15): errors.append(seed)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    run_in_threads(work, 4)
    assert errors == [] and d.misses == []


def run_in_threads(work, count: int) -> None:
    """work(0), ..., work(count - 1), each on its own thread, all at once."""
    threads = [threading.Thread(target=work, args=(s,)) for s in range(count)]
    for t in threads: t.start()
    for t in threads: t.join()


def test_clear_while_entries_run(Recorder):
    """_clear and _register from one thread while others run an entry without the GIL: entries stay alive."""
    n = 200_000
    d, nf = make(Recorder, lambda x: x * 2.0 + 1.0, np.ones(n), release_gil=True)
    x = np.arange(n, dtype=np.float64)
    stop, errors = threading.Event(), []

    def caller():
        while not stop.is_set():
            r = d(x)
            if r is not MISS and not np.array_equal(r, x * 2.0 + 1.0): errors.append("wrong")

    threads = [threading.Thread(target=caller) for _ in range(3)]
    for t in threads: t.start()
    for _ in range(300):
        d._clear()
        register_specialization(d, nf, release_gil=True)
    stop.set()
    for t in threads: t.join()
    assert errors == []


def test_no_reference_leaks(Recorder):
    x = np.arange(3.0)
    d, _ = make(Recorder, lambda x, a, n, b: x * a + n + b, x, 1.5, 7, True)
    a = 2.5
    n = 10**12
    counts = sys.getrefcount(x), sys.getrefcount(a), sys.getrefcount(n), sys.getrefcount(d)
    for _ in range(100_000):
        r = d(x, a, n, False)
    assert sys.getrefcount(r) == 2
    del r
    assert (sys.getrefcount(x), sys.getrefcount(a), sys.getrefcount(n), sys.getrefcount(d)) == counts
    xs = x[::-1]   # the copying path
    c = sys.getrefcount(xs)
    for _ in range(100_000): d(xs, a, n, False)
    assert sys.getrefcount(xs) == c
    out = np.empty(3)
    c = sys.getrefcount(out)
    for _ in range(100_000): d(x, a, n, False, out=out)
    assert sys.getrefcount(out) == c


def test_no_memory_growth(Recorder):
    x = np.arange(3.0)
    d, _ = make(Recorder, lambda x, y: (x + y, {"p": x * y}), x, x)
    out = (np.empty(3), np.empty(3))
    for _ in range(1000): d(x, x), d(x[::-1], x), d(x, x, out=out), d(x, 1)
    tracemalloc.start()
    try:
        gc.collect()   # numfn.pytree.unflatten (the builder here) leaves reference cycles for the collector
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(20_000):
            d(x, x)
            d(x[::-1], x)
            d(x, x, out=out)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 16 * 1024, f"{grown} bytes more after 60k calls"


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_a_million_calls_do_not_grow_memory(Recorder):
    x = np.arange(3.0)
    d, _ = make(Recorder, lambda x, a: x * a + 1.0, x, 2.0)
    for _ in range(10_000): d(x, 2.0)
    before = rss_bytes()
    for _ in range(1_000_000): d(x, 2.0)
    assert rss_bytes() - before < 4 << 20   # a leak of one small object per call would be 32 MB or more


# ---- kept memory: large outputs reuse the blocks of earlier ones (_dispatch.c) ---------------------------------------

KEEP_MIN = 128 * 1024   # KEEP_MIN_BYTES in _dispatch.c


def handler_name(a: np.ndarray) -> str:
    from numpy._core.multiarray import get_handler_name
    return get_handler_name(a)


@pytest.fixture
def kept(Base):
    """Memory kept as by default (whatever NUMFN_KEEP_MEMORY says outside), emptied before and after the test."""
    from numfn import config
    extensions.dispatch._keep_memory(0)
    extensions.dispatch._keep_memory(config.KEEP_MEMORY_DEFAULT)
    yield extensions.dispatch._keep_memory
    extensions.dispatch._keep_memory(0)
    extensions.dispatch._keep_memory(config.keep_memory())


def twice_minus(x):
    return 2.0 * x - 1.0


def test_large_outputs_reuse_freed_blocks(Recorder, kept):
    x = np.random.default_rng(0).standard_normal((256, 256))   # 512 KiB outputs
    d, _ = make(Recorder, twice_minus, x)
    y = d(x)
    assert handler_name(y) == "numfn"
    address = y.ctypes.data
    del y
    blocks, held = kept(1 << 30)
    assert blocks == 1 and 512 * 1024 <= held < 512 * 1024 + 4096   # the block's usable size
    for scale in (1.0, -3.0, 0.5):   # each call gets the block back and overwrites all of it
        y = d(x * scale)
        assert y.ctypes.data == address
        assert_same(y, twice_minus(x * scale))
        del y
    live = d(x)
    other = d(-x)   # a live output's block is never handed out again
    assert other.ctypes.data != live.ctypes.data
    assert_same(live, twice_minus(x))
    assert_same(other, twice_minus(-x))
    assert d.misses == []


def test_small_outputs_and_a_zero_limit_use_numpys_allocator(Recorder, kept):
    small = np.ones(KEEP_MIN // 8 - 1)
    d, _ = make(Recorder, twice_minus, small)
    assert handler_name(d(small)) == "default_allocator"
    big = np.ones(KEEP_MIN // 8)
    d, _ = make(Recorder, twice_minus, big)
    assert handler_name(d(big)) == "numfn"
    assert kept(0) == (0, 0)
    y = d(big)
    assert handler_name(y) == "default_allocator"
    assert_same(y, twice_minus(big))


def test_kept_memory_stays_under_its_limit(Recorder, kept):
    x = np.ones((512, 512))   # 2 MiB outputs
    d, _ = make(Recorder, twice_minus, x)
    kept(3 << 20)
    ys = [d(x) for _ in range(4)]
    del ys
    blocks, held = kept(3 << 20)
    assert blocks == 1 and 2 << 20 <= held <= 3 << 20
    kept(1 << 20)   # a lower limit frees what no longer fits, and larger blocks are not kept
    assert kept(1 << 20) == (0, 0)
    del x
    y = d(np.ones((512, 512)))
    del y
    assert kept(1 << 20) == (0, 0)


def test_kept_memory_on_the_python_path():
    """Calls that take the Python path (NumericalFunction.run; here with an output of run-time length, cut after
    the call, and a check, whose slots the program's table puts before the length) allocate through it too."""
    if extensions.dispatch is None: pytest.skip("numfn was installed without the fast call extension")

    def first_rows(x, k):
        return x[:k] * 2.0 + x[k - 1, 0]

    f = numfn.jit(first_rows)
    x = np.random.default_rng(1).standard_normal((256, 256))
    nf = f.specialize(x, 200)
    assert nf.cut_outputs and nf.checks
    for k in (200, 256, 3):
        y = nf.run([x, k])
        assert handler_name(y.base if y.base is not None else y) == "numfn"
        assert_same(y, first_rows(x, k))


@pytest.mark.parametrize("shape, dtype", [((), np.float64), ((0, 5), np.int32), ((300, 300), np.float32),
                                          ((2, 3), np.complex128), ((KEEP_MIN,), np.bool_)])
def test_empty(shape, dtype):
    from numfn.runtime.dispatch import empty
    a = empty(shape, dtype)
    assert type(a) is np.ndarray and a.shape == shape and a.dtype == np.dtype(dtype) and a.flags.c_contiguous
    a[...] = 1
    assert (a == 1).all()


def test_empty_rejects_bad_shapes():
    from numfn.runtime.dispatch import empty
    with pytest.raises(ValueError):
        empty((-1, 3), np.float64)
    with pytest.raises(TypeError):
        empty((2, 3), "not a dtype")


def test_threads_share_kept_memory(Recorder, kept):
    x = np.ones((256, 256))
    d, _ = make(Recorder, twice_minus, x, release_gil=True)
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(200):
                v = rng.standard_normal((256, 256))
                if not np.array_equal(d(v), twice_minus(v)): errors.append(seed)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    run_in_threads(work, 4)
    assert errors == [] and d.misses == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_kept_memory_in_a_forked_child(Recorder, kept):
    x = np.random.default_rng(2).standard_normal((256, 256))
    d, _ = make(Recorder, twice_minus, x)
    for _ in range(3): d(x)   # a kept block in the parent, inherited by the child
    pid = os.fork()
    if pid == 0:   # pragma: no cover - the child reports through its exit status
        ok = all(np.array_equal(d(x * s), twice_minus(x * s)) for s in (1.0, 2.0, -1.0))
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert np.array_equal(d(x), twice_minus(x))


def test_keep_memory_setting(monkeypatch):
    from numfn import config
    monkeypatch.setenv("NUMFN_KEEP_MEMORY", "0")
    assert config.keep_memory() == 0
    monkeypatch.setenv("NUMFN_KEEP_MEMORY", str(64 << 20))
    assert config.keep_memory() == 64 << 20
    monkeypatch.setenv("NUMFN_KEEP_MEMORY", "lots")
    with pytest.warns(RuntimeWarning, match="NUMFN_KEEP_MEMORY"):
        assert config.keep_memory() == config.KEEP_MEMORY_DEFAULT
    if extensions.dispatch is not None:
        with pytest.raises(ValueError):
            extensions.dispatch._keep_memory(-1)


# ---- the type --------------------------------------------------------------------------------------------------------

def test_subclass_keeps_vectorcall_and_can_override_call(Base, Recorder):
    HAVE_VECTORCALL = 1 << 11
    assert Recorder.__flags__ & HAVE_VECTORCALL

    class Custom(Base):
        def __call__(self, *args, **kwargs):
            return "custom"

    assert Custom()(1) == "custom"
    assert not Custom.__flags__ & HAVE_VECTORCALL


def test_instances_have_attributes_and_weakrefs(Recorder):
    d = Recorder()
    d.name = "f"
    r = weakref.ref(d)
    assert d.name == "f" and r() is d


def test_call_with_a_dict_of_keywords(Recorder):
    """Calls through tp_call (functools.partial, C code calling with a dict) behave the same."""
    import functools
    x = np.arange(3.0)
    d, _ = make(Recorder, axpb, x)
    out = np.empty(3)
    assert functools.partial(d, out=out)(x) is out
    assert functools.partial(d, y=1)(x) is MISS and d.misses[-1][1] == {"y": 1}


# ---- the pure-Python fallback and the build --------------------------------------------------------------------------

def test_python_dispatcher():
    class Py(PyDispatcher):
        def _dispatch_miss(self, *args, **kwargs):
            return ("miss", args, kwargs)

    p = Py()
    nf = specialize(axpb, np.ones(3))
    assert register_specialization(p, nf) and p._entries() == 1   # runs nf's Python path, skipping the signature
    x = np.arange(3.0)
    np.testing.assert_array_equal(p(x), nf(x))
    out = np.empty(3)
    assert p(x, out=out) is out and (out == nf(x)).all()
    for other in (np.ones(4), np.ones(3, np.float32), np.ones(3).astype(">f8"), [1.0, 2.0, 3.0]):
        assert p(other) == ("miss", (other,), {})   # another shape, dtype, byte order or type: not this entry
    assert p(x, y=1) == ("miss", (x,), {"y": 1})
    p._clear()
    assert p._entries() == 0
    assert p(x, out=None) == ("miss", (x,), {"out": None})
    with pytest.raises(NotImplementedError):
        PyDispatcher()(1)


SIMULATED = r'''
import json, sys, warnings
import numpy as np
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import numfn                                   # compiles nothing, warns about nothing
    from numfn.runtime import dispatch, extensions, threads
    f = numfn.jit(lambda x: x * 2.0 + 1.0)
    ok = [bool((f(np.arange(3.0)) == np.arange(3.0) * 2 + 1).all()) for _ in range(3)]
    g = numfn.jit(lambda x: x * 3.0)
    ok.append(bool((g(np.ones(2)) == 3.0).all()))
print(json.dumps({"ok": ok, "threads": numfn.set_num_threads(2), "pool": threads.parallel_for_address() != 0,
                  "python_path": dispatch.dispatcher_base() is dispatch.PyDispatcher,
                  "warnings": [(w.category.__name__, w.filename, w.lineno, str(w.message)) for w in caught]}))
'''


@pytest.mark.parametrize("off", [["NUMFN_NO_DISPATCH_EXT"], ["NUMFN_NO_NATIVE_EXT"],
                                 ["NUMFN_NO_DISPATCH_EXT", "NUMFN_NO_NATIVE_EXT"]])
def test_without_the_extensions(tmp_path, off):
    # an install without a C compiler, simulated: calls work, one warning at the user's line says what was lost,
    # set_num_threads tells the truth, and the pool does not depend on the dispatcher
    if extensions.native is None or extensions.dispatch is None: pytest.skip("numfn was installed without them")
    script = tmp_path / "user.py"
    script.write_text(SIMULATED)
    env = dict(os.environ, NUMFN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=REPO, **{v: "1" for v in off})
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["ok"] == [True] * 4
    assert r["python_path"] == ("NUMFN_NO_DISPATCH_EXT" in off)
    assert r["threads"] == (1 if "NUMFN_NO_NATIVE_EXT" in off else 2)
    assert r["pool"] == ("NUMFN_NO_NATIVE_EXT" not in off)
    [(category, filename, lineno, message)] = r["warnings"]
    assert category == "ExtensionWarning" and filename == str(script) and lineno == 9   # the first call's line
    assert ("fast call extension is unavailable" in message) == ("NUMFN_NO_DISPATCH_EXT" in off)
    assert ("kernels run on one thread" in message) == ("NUMFN_NO_NATIVE_EXT" in off)


def test_the_suite_runs_with_the_extensions():
    # where a C compiler exists, `pip install .` builds them (into the checkout too, which is what the tests import):
    # without them this suite would test only the Python path, and quietly
    import shutil
    if not any(shutil.which(cc) for cc in ("cc", "gcc", "clang")): pytest.skip("no C compiler: nothing was built")
    from numfn import config
    if config.no_native_extension() or config.no_dispatch_extension(): pytest.skip("switched off on purpose")
    assert extensions.problems() == [], "build them: pip install . (or pip install -e .) in this checkout"


def test_import_compiles_nothing(tmp_path):
    # the extensions come with the package: no compiler on PATH, an empty cache, and the fast path is there
    if extensions.dispatch is None: pytest.skip("numfn was installed without the fast call extension")
    code = ("import numfn, os, sys; from numfn.runtime import dispatch, extensions;"
            "assert 'subprocess' not in sys.modules, 'import numfn ran a program';"
            "assert dispatch.dispatcher_base() is extensions.dispatch.Dispatcher;"
            "assert not os.path.exists(os.environ['NUMFN_CACHE_DIR'])")
    env = dict(os.environ, NUMFN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=REPO, PATH="", NUMFN_CC="")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)


def test_a_build_without_a_compiler_installs_the_python_package(tmp_path):
    # setup.py's extensions are optional: without a working compiler the build succeeds, says so, and builds nothing
    env = dict(os.environ, CC=str(tmp_path / "no-such-cc"), LDSHARED=str(tmp_path / "no-such-cc"))
    out = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(tmp_path / "lib"),
                          "--build-temp", str(tmp_path / "tmp")], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "built without numfn.runtime._numfn_native, numfn.runtime._numfn_dispatch" in out.stderr
    assert "!" * 100 in out.stderr   # framed: it must stand out in a build log
    assert not list((tmp_path / "lib").rglob("*.so"))
    # a wheel build asks for the extensions: then their absence fails the build
    required = subprocess.run(out.args, cwd=REPO, env=dict(env, NUMFN_REQUIRE_EXTENSIONS="1"), capture_output=True,
                              text=True, timeout=120)
    assert required.returncode != 0 and "NUMFN_REQUIRE_EXTENSIONS is set" in required.stderr


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_extensions_compile_warning_free(cc, tmp_path):
    import shutil
    import sysconfig
    if shutil.which(cc) is None: pytest.skip(f"no {cc}")
    csrc = os.path.join(REPO, "numfn", "runtime", "csrc")
    sources = [os.path.join(REPO, "numfn", "runtime", "_dispatch.c")] + \
        sorted(os.path.join(csrc, f) for f in os.listdir(csrc) if f.endswith(".c"))
    # the front end's warnings by default; the optimizer's too (gcc's maybe-uninitialized) in the long run, where
    # each compiler builds sort.c's networks at -O2 (15 s)
    long = os.environ.get("NUMFN_LONG_TESTS") == "1"
    for src in sources:
        cmd = [cc, "-std=c99", "-O2" if long else "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-pthread",
               "-I", sysconfig.get_paths()["include"], "-I", np.get_include(), src]
        if long: cmd += ["-c", "-o", str(tmp_path / "x.o")]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{src}:\n{proc.stderr}"


# ---- the thread pool ---------------------------------------------------------------------------------------------

THREAD_CHANGES = r'''
import json, random, threading, time
import numpy as np, numfn

f = numfn.jit(lambda x: np.sqrt(x) * x + 1.0)      # a parallel kernel (2^21 elements, ~10 operations each)
x = np.arange(1 << 21, dtype=np.float64)
expected = np.sqrt(x) * x + 1.0
numfn.set_num_threads(1)
f(x)
bad, calls, stop = [], [0], threading.Event()

def call():
    while not stop.is_set():
        r = f(x)
        calls[0] += 1
        # counted twice: a late worker may still write into r after the call returned
        if not np.array_equal(r, expected): bad.append([int(np.count_nonzero(r != expected)) for _ in range(2)])

def change(seed):
    rng = random.Random(seed)
    while not stop.is_set(): numfn.set_num_threads(rng.randint(1, 6))

callers = [threading.Thread(target=call) for _ in range(3)]
for t in callers: t.start()
for k in range(2, 65):          # the pool grows while regions run: each new worker starts during one
    numfn.set_num_threads(k)
    time.sleep(0.001)
changers = [threading.Thread(target=change, args=(i,)) for i in range(2)]
for t in changers: t.start()    # then two threads change the count at random while three threads call
start = time.time()   # at least half a second and 30 calls (a slow machine, or instrumented code, takes longer)
while (time.time() < start + 0.5 or calls[0] < 30) and time.time() < start + 120: time.sleep(0.01)
stop.set()
for t in callers + changers: t.join()
print(json.dumps({"calls": calls[0], "bad": bad}))
'''


def test_changing_the_thread_count_while_kernels_run(tmp_path):
    # issue 18: set_num_threads while another thread ran a parallel kernel left parts of the output unwritten (a
    # worker created during a region joined it and reported done for a worker still running). A fresh process,
    # because the pool only grows once per process.
    if extensions.native is None: pytest.skip("numfn was installed without the thread pool")
    env = dict(os.environ, NUMFN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=REPO)
    out = subprocess.run([sys.executable, "-c", THREAD_CHANGES], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["calls"] > 10 and r["bad"] == [], r


def test_set_num_threads_tells_the_truth():
    if extensions.native is None:
        assert numfn.set_num_threads(4) == 1
        return
    from numfn.runtime import threads
    before = threads.thread_count()
    try:
        assert numfn.set_num_threads(3) == 3 and threads.thread_count() == 3 and threads.parallel_for_address()
        assert numfn.set_num_threads(1) == 1 and threads.parallel_for_address() == 0
        assert numfn.set_num_threads(0) == 1
    finally:
        numfn.set_num_threads(before)
