"""Specialization on new signatures, and the errors a traced function can run into: unsupported operations (named,
pointing at the user's line), using traced values as Python values, bad arguments, and shape mismatches."""
import inspect
import os
import warnings

import numpy as np
import pytest

import numfn
from helpers import assert_same, check_raises_like, numpy_exception

THIS_FILE = os.path.basename(__file__)


def line_of(fn, marker: str) -> int:
    """The line number in this file of the line of `fn`'s source that contains `marker`."""
    lines, start = inspect.getsourcelines(fn)
    found = [start + i for i, line in enumerate(lines) if marker in line]
    assert len(found) == 1, f"marker {marker!r} must occur exactly once"
    return found[0]


# ---- specialization ------------------------------------------------------------------------------------------------
def test_new_shape_or_dtype_compiles_a_new_specialization(backend):
    f = numfn.jit(lambda x: x * 2 + 1, backend=backend)
    calls = [np.ones(3, np.float32), np.ones(3, np.float64), np.ones(4, np.float32), np.ones((3, 1), np.float32),
             np.ones(3, np.int32), np.ones(3, np.float32), np.ones(3, np.int64), np.ones(3, np.bool_),
             np.arange(3.0, dtype=np.float32)]
    counts = []
    for x in calls:
        out = f(x)
        assert_same(out, x * 2 + 1)   # dtype never cast to a previous specialization's
        counts.append(len(f.specializations))
    assert counts == [1, 2, 3, 4, 5, 5, 6, 7, 7]
    specs = [nf.in_specs[0] for nf in f.specializations]
    assert len(set(specs)) == len(specs)


def test_specialize_returns_the_numerical_function(backend):
    f = numfn.jit(lambda x, y: x @ y, backend=backend)
    x, y = np.ones((2, 3)), np.ones(3)
    nf = f.specialize(x, y)
    assert isinstance(nf, numfn.NumericalFunction)
    assert_same(nf(x, y), x @ y)
    assert f.specialize(x, y) is nf and len(f.specializations) == 1
    with pytest.raises(TypeError):
        nf(np.ones((2, 4)), np.ones(4))    # a NumericalFunction runs only its own signature


def test_argument_structure_is_part_of_the_signature(backend):
    f = numfn.jit(lambda a: a[0] + a[1], backend=backend)
    x = np.ones(2)
    assert_same(f((x, x)), x + x)
    assert_same(f([x, x]), x + x)
    assert_same(f((x, 2.0)), x + 2.0)
    assert len(f.specializations) == 3


# ---- unsupported operations: NumfnError naming the operation and the user's line -----------------------------------
def _as_strided(x): return np.lib.stride_tricks.as_strided(x, (2,), (8,))   # marker: as_strided
def _getfield(x): return x.getfield(np.float64)  # marker: getfield
def _packbits(x): return np.packbits(x > 0)     # marker: packbits
def _tofile(x): return x.tofile("/dev/null")   # marker: tofile
def _setxor(x): return np.setxor1d(x, x)       # marker: np.setxor1d
def _reduceat(x): return np.add.reduceat(x, [0])  # marker: add.reduceat


def _busday(x):
    y = x + 1
    return np.busday_count(y, y)               # marker: busday_count


def _nested_helper(x):
    return x.byteswap()                        # marker: nested byteswap


def _calls_helper(x):
    y = x + 1
    return _nested_helper(y)


@pytest.mark.parametrize("fn,marker,name", [
    (_as_strided, "marker: as_strided", "as_strided"), (_getfield, "marker: getfield", "getfield"),
    (_packbits, "marker: packbits", "packbits"), (_tofile, "marker: tofile", "tofile"),
    (_setxor, "marker: np.setxor1d", "setxor1d"), (_reduceat, "marker: add.reduceat", "reduceat"),
    (_busday, "marker: busday_count", "busday_count"), (_calls_helper, "marker: nested byteswap", "byteswap"),
], ids=["as_strided", "getfield", "packbits", "tofile", "setxor1d", "ufunc.reduceat", "busday", "nested"])
def test_unsupported_operation_names_it_and_points_at_the_line(backend, fn, marker, name):
    x = np.ones((3, 3))
    with pytest.raises(numfn.NumfnError) as info:
        numfn.jit(fn, backend=backend)(x)
    msg = str(info.value)
    assert name in msg
    assert THIS_FILE in msg
    fn_with_marker = _nested_helper if fn is _calls_helper else fn
    assert f"{THIS_FILE}:{line_of(fn_with_marker, marker)}" in msg, msg


# ---- traced values used as Python values -----------------------------------------------------------------------------
# conditional expressions compile where numfn reads the source (test_constructs_leftovers.py); a lambda jitted as it
# is is traced unconverted
_if = lambda x: x if x.sum() > 0 else -x                     # noqa: E731 - marker: if
_and = lambda x: x if (x[0] > 0 and x[1] > 0) else x         # noqa: E731 - marker: and
def _tolist(x): return sum(x.tolist())                       # marker: tolist
def _range(x): return [x * i for i in range(x.sum())]      # marker: range
def _complex(x): return x * complex(x[0])                   # marker: complex


@pytest.mark.parametrize("fn,marker", [(_if, "marker: if"), (_and, "marker: and"), (_tolist, "marker: tolist"),
                                       (_range, "marker: range"), (_complex, "marker: complex")],
                         ids=["if", "and", "tolist", "range", "complex"])
def test_traced_value_as_python_value_explains_tracing(backend, fn, marker):
    x = np.arange(3, dtype=np.int64)
    with pytest.raises(numfn.TracerConversionError) as info:
        numfn.jit(fn, backend=backend)(x)
    assert isinstance(info.value, numfn.NumfnError) and isinstance(info.value, TypeError)
    msg = str(info.value)
    assert "trac" in msg and "where" in msg
    assert f"{THIS_FILE}:{line_of(fn, marker)}" in msg, msg


def test_tracer_conversion_error_is_catchable_as_type_error(backend):
    with pytest.raises(TypeError):
        numfn.jit(_if, backend=backend)(np.ones(2))


# ---- bad arguments -------------------------------------------------------------------------------------------------
def _quiet_matrix(rows):
    with warnings.catch_warnings():   # NumPy discourages np.matrix, which is why users still meet it
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return np.matrix(rows)


@pytest.mark.parametrize("bad", ["abc", object(), {1, 2}, np.ones(2, np.clongdouble), np.ones(2, np.longdouble),
                                 np.array(["a"]), [1, "a"], np.ma.masked_array([1.0, 2.0], mask=[0, 1]),
                                 _quiet_matrix([[1.0, 2.0]])],
                         ids=["str", "object", "set", "clongdouble", "longdouble", "unicode", "mixed-list", "masked",
                              "matrix"])
def test_bad_argument_raises_type_error_naming_it(backend, bad):
    def f(x, weights):
        return x * weights

    jf = numfn.jit(f, backend=backend)
    with pytest.raises(TypeError, match="weights"):
        jf(np.ones(2), bad)
    with pytest.raises(TypeError, match="weights"):
        jf(np.ones(2), weights=bad)
    with pytest.raises(TypeError, match="weights"):
        jf(x=np.ones(2), weights={"inner": bad})
    assert len(jf.specializations) == 0


def test_ragged_list_argument_raises_type_error_naming_it(backend):
    with pytest.raises(TypeError, match="weights"):
        numfn.jit(lambda x, weights: x * weights, backend=backend)(np.ones(2), [1, [2, 3]])


def test_huge_python_int_argument_raises_overflow(backend):
    # NumPy takes an int beyond int64 with a float array (as a float); with an integer array it raises
    f = numfn.jit(lambda x, n: x + n, backend=backend)
    np.testing.assert_array_equal(f(np.ones(2), 2**70), np.ones(2) + 2**70)
    with pytest.raises(OverflowError, match="Python int too large to convert to C long"):
        f(np.ones(2, np.int32), 2**70)


def test_unhashable_static_argument(backend):
    f = numfn.jit(lambda x, n: x * len(n), static_argnums=1, backend=backend)
    with pytest.raises(TypeError, match="hashable"):
        f(np.ones(2), [1, 2])


# ---- shape mismatches: ValueError like NumPy's ----------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda a, b: a + b, lambda a, b: a * b.T, lambda a, b: np.maximum(a, b[:, :2]), lambda a, b: np.where(a > 0, a, b),
    lambda a, b: a @ b, lambda a, b: np.matmul(a, b), lambda a, b: np.dot(a, b), lambda a, b: np.concatenate([a, b.T]),
    lambda a, b: np.stack([a, b]), lambda a, b: a.reshape(7, -1), lambda a, b: np.broadcast_to(a, (3, 3)),
    lambda a, b: np.clip(a, b, 1.0),
], ids=["add", "mul", "maximum", "where", "@", "matmul", "dot", "concatenate", "stack", "reshape", "broadcast_to",
        "clip"])
def test_shape_mismatch_is_value_error_like_numpy(backend, make):
    a, b = np.ones((2, 3)), np.ones((4, 3))
    info = check_raises_like(make, a, b, backend=backend)
    assert isinstance(info.value, ValueError)


def test_broadcast_error_message_shows_shapes(backend):
    with pytest.raises(ValueError, match=r"\(2,3\).*\(4,\)"):
        numfn.jit(lambda a, b: a + b, backend=backend)(np.ones((2, 3)), np.ones(4))


def test_dtype_errors_are_type_errors_like_numpy(backend):
    f, b = np.ones(3), np.ones(3, np.bool_)
    for make in (lambda f, b: f & f, lambda f, b: ~f, lambda f, b: b - b, lambda f, b: -b, lambda f, b: f ^ b,
                 lambda f, b: np.sign(b)):
        check_raises_like(make, f, b, backend=backend)


def test_errors_do_not_leave_a_specialization(backend):
    f = numfn.jit(_if, backend=backend)
    for _ in range(2):
        with pytest.raises(numfn.TracerConversionError):
            f(np.ones(2))
    assert len(f.specializations) == 0


# ---- keyword arguments: computed like NumPy, or refused with a NumfnError at the user's line ----------------------


@pytest.mark.parametrize("make", [
    pytest.param(lambda x: x.sum(dtype=np.float32), id="sum-dtype"),
    pytest.param(lambda x: np.sum(x, dtype=np.float32), id="np.sum-dtype"),
    pytest.param(lambda x: x.mean(dtype=np.float32), id="mean-dtype"),
    pytest.param(lambda x: np.mean(x, where=x > 1), id="mean-where"),
    pytest.param(lambda x: np.max(x, initial=100.0), id="max-initial"),
    pytest.param(lambda x: np.cumsum(x, dtype=np.int32), id="cumsum-dtype"),
    pytest.param(lambda x: np.concatenate([x, x], dtype=np.float32), id="concatenate-dtype"),
    pytest.param(lambda x: x.astype(np.complex64).real, id="astype-complex"),
    pytest.param(lambda x: np.clip(x, min=0, max=1), id="clip-min-max"),
    pytest.param(lambda x: np.ones_like(x, shape=(4,)), id="ones_like-shape"),
    pytest.param(lambda x: np.matmul(x, x, axes=[(-2, -1), (-1, -2), (-2, -1)]), id="matmul-axes"),
    pytest.param(lambda x: np.add(x.astype(np.int32), 1.5, casting="no"), id="add-casting"),
    pytest.param(lambda x: np.sin(x, out=np.empty((3, 3))), id="sin-out"),
    pytest.param(lambda x: np.add(x, 1, dtype=np.float32), id="add-dtype"),
    pytest.param(lambda x: np.abs(x, where=x > 0), id="abs-where"),
    pytest.param(lambda x: x.reshape(9, order="F"), id="reshape-F"),
    pytest.param(lambda x: np.add.accumulate(x), id="ufunc.accumulate"),
])
def test_keyword_arguments_computed_like_numpy_or_refused(backend, make):
    _computed_like_numpy_or_refused(make, np.arange(9.0).reshape(3, 3), backend)


def _computed_like_numpy_or_refused(make, x, backend):
    try:
        actual = numfn.jit(make, backend=backend)(x)
    except numfn.NumfnError as e:
        assert f"{THIS_FILE}:" in str(e), str(e)   # refused: the message points at the user's line
        return
    except TypeError as e:
        expected = numpy_exception(make, (x,))
        assert expected is not None and isinstance(expected, TypeError), f"numfn raised {e!r}, NumPy did not"
        return
    assert_same(actual, make(x), scale=100.0)



@pytest.mark.parametrize("make", [
    pytest.param(lambda x: x << 1, id="lshift"),
    pytest.param(lambda x: x >> 1, id="rshift"),
    pytest.param(lambda x: 1 << (x + 2), id="rlshift"),
    pytest.param(lambda x: np.left_shift(x, 2), id="np.left_shift"),
    pytest.param(lambda x: divmod(x, 2), id="divmod"),
    pytest.param(lambda x: np.divmod(x, -2), id="np.divmod"),
    pytest.param(lambda x: x * x.itemsize, id="itemsize"),
    pytest.param(lambda x: x.view(np.uint32), id="view"),
    pytest.param(lambda x: x + np.array(1, np.result_type(x, 1.0)), id="result_type"),
    pytest.param(lambda x: x.astype(np.result_type(x, 1.0)), id="astype-result_type"),
])
def test_python_operators_and_attributes_computed_like_numpy_or_refused(backend, make):
    _computed_like_numpy_or_refused(make, np.arange(6, dtype=np.int32).reshape(2, 3) - 2, backend)
