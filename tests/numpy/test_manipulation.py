"""Shape manipulation, joining, splitting, repetition, rolling, padding, inserting and deleting against NumPy: one
table of cases run for every dtype and shape they apply to (0-d, size 0, size 1, several ranks, non-contiguous
views), both as numfn.numpy functions and as np.* calls on traced arrays, and the exceptions NumPy raises.

Each (dtype, shape) compiles one function returning every applicable case, so a table costs a handful of
compilations."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import numfn
import numfn.numpy as fnp
from helpers import assert_same, check, check_mutates, check_raises_like, check_xp, numpy_result, rand

SHAPES = [(), (0,), (1,), (5,), (3, 4), (1, 1), (2, 0, 3), (2, 3, 4)]
PAD_MODES = ["edge", "reflect", "symmetric", "wrap", "linear_ramp", "maximum", "minimum", "mean"]


def _counts(n: int) -> list[int]:
    return [i % 3 for i in range(n)]


# (name, applies to shape, case(xp, x)): every case is run on every shape it applies to
CASES = [
    ("flip", None, lambda xp, x: xp.flip(x)),
    ("atleast", None, lambda xp, x: (xp.atleast_1d(x), xp.atleast_2d(x), xp.atleast_3d(x), xp.atleast_1d(x, x[None]))),
    ("tile", None, lambda xp, x: (xp.tile(x, 2), xp.tile(x, (2, 1)), xp.tile(x, (1, 2, 1, 1)), xp.tile(x, 0))),
    ("repeat", None, lambda xp, x: (xp.repeat(x, 2), xp.repeat(x, 0), xp.repeat(x, [3]), x.repeat(1))),
    ("roll", None, lambda xp, x: (xp.roll(x, 1), xp.roll(x, -7), xp.roll(x, 0))),
    ("pad constant", None, lambda xp, x: (xp.pad(x, 1), xp.pad(x, 2, constant_values=7))),
    ("append", None, lambda xp, x: (xp.append(x, x), xp.append(x, 1), xp.append(x, [1, 0]))),
    ("copy", None, lambda xp, x: (xp.copy(x), x.copy())),
    ("stacks", None, lambda xp, x: (xp.hstack([x, x]), xp.vstack((x, x)), xp.dstack([x, x]), xp.column_stack([x, x]),
                                    xp.row_stack([x, x]) if xp is fnp else xp.vstack([x, x]))),
    ("block", None, lambda xp, x: (xp.block(x), xp.block([x, x]), xp.block([[x], [x]]))),
    ("dims", None, lambda xp, x: (xp.expand_dims(x, 0), xp.expand_dims(x, (0, -1)), xp.squeeze(x[None]),
                                  xp.broadcast_arrays(x, x), xp.broadcast_arrays(x, np.ones((2,) + x.shape, x.dtype)))),
    ("insert/delete flat", lambda s: int(np.prod(s)) >= 2,
     lambda xp, x: (xp.insert(x, 1, 5), xp.insert(x, [0, 1, -1], [7, 8, 9]), xp.delete(x, 0), xp.delete(x, [0, -1]),
                    xp.insert(x, slice(None, None, 2), 3), xp.delete(x, slice(1, None, 2)))),
    ("axis 0", lambda s: len(s) >= 1,
     lambda xp, x: (xp.flipud(x), xp.moveaxis(x, 0, -1), xp.rollaxis(x, -1), xp.unstack(x), xp.roll(x, 2, axis=0),
                    xp.repeat(x, 3, axis=0), xp.repeat(x, _counts(x.shape[0]), axis=0),
                    x.repeat(np.array(_counts(x.shape[0]), np.intp), axis=-x.ndim), xp.stack([x, x], axis=-1),
                    xp.stack((x, x), axis=1), xp.concatenate([x, x], axis=None), xp.concat([x, x[::-1]]),
                    xp.array_split(x, 3), xp.split(x, [1, 3]), xp.split(x, []), xp.append(x, x, axis=0),
                    xp.insert(x, [0, x.shape[0]], 4, axis=0), xp.delete(x, slice(None, None, 2), axis=0),
                    xp.tril(x), xp.triu(x, -1), xp.tril(x, 2), xp.hsplit(x, [1]), xp.flip(x, -1))),
    ("axis 0 nonempty", lambda s: len(s) >= 1 and s[0] >= 1,
     lambda xp, x: (xp.insert(x, 1, 9, axis=0), xp.insert(x, [1], x[:1], axis=0), xp.delete(x, [0], axis=0),
                    xp.delete(x, np.arange(x.shape[0]) % 2 == 1, axis=0))),
    ("pad modes", lambda s: 1 <= len(s) <= 2 and 0 not in s,
     lambda xp, x: tuple(xp.pad(x, (2, 3), mode=m) for m in PAD_MODES) + (
         xp.pad(x, 4, mode="reflect", reflect_type="odd"), xp.pad(x, (7, 1), mode="symmetric", reflect_type="odd"),
         xp.pad(x, 9, mode="wrap"), xp.pad(x, 11, mode="reflect"), xp.pad(x, 1, mode="linear_ramp", end_values=5),
         xp.pad(x, (3, 1), mode="mean", stat_length=2), xp.pad(x, 2, mode="maximum", stat_length=(1, 3)))),
    ("diag 1-d", lambda s: len(s) == 1,
     lambda xp, x: (xp.diag(x), xp.diag(x, 2), xp.diag(x, -1), xp.diagflat(x, 1))),
    ("matrix", lambda s: len(s) >= 2,
     lambda xp, x: (xp.fliplr(x), xp.rot90(x), xp.rot90(x, 2), xp.rot90(x, 3), xp.rot90(x, -1, axes=(1, 0)),
                    xp.diagonal(x), xp.diagonal(x, 1), xp.diagonal(x, -1, -1, -2), x.diagonal(2, 1, 0),
                    xp.swapaxes(x, 0, -1),
                    xp.matrix_transpose(x), x.mT, xp.vsplit(x, [1]), xp.hsplit(x, [0, 2]), xp.array_split(x, 2, 1),
                    xp.tile(x, (2, 1, 2)), xp.roll(x, (1, 2), axis=(0, -1)), xp.roll(x, (1, 1), axis=(1, 1)),
                    xp.pad(x, ((1, 2), (3, 0)) + ((1, 1),) * (x.ndim - 2),
                           constant_values=((1, 2), (3, 4)) + ((5, 6),) * (x.ndim - 2)),
                    xp.block([[x, x], [x, x]]), xp.reshape(x, (-1,), order="F"), x.flatten("F"), x.ravel("F"),
                    x.reshape(x.shape[::-1], order="F"), xp.diagflat(x), xp.moveaxis(x, (0, 1), (-1, 0)),
                    xp.permute_dims(x), xp.transpose(x, (1, 0) + tuple(range(2, x.ndim))), xp.unstack(x, axis=1),
                    xp.hsplit(x, 2) if x.shape[1] % 2 == 0 else xp.hsplit(x, 1))),
    ("matrix nonempty", lambda s: len(s) >= 2 and 0 not in s,
     lambda xp, x: (xp.insert(x, 1, x[:, 0], axis=1), xp.delete(x, [0], axis=1)) + tuple(
         xp.pad(x, ((1, 2), (3, 1)) + ((0, 1),) * (x.ndim - 2), mode=m) for m in PAD_MODES[:4] if x.ndim > 2)),
    ("trace", lambda s: len(s) >= 2, lambda xp, x: (xp.trace(x), xp.trace(x, -1), x.trace(1, dtype=np.float32))),
    ("diag 2-d", lambda s: len(s) == 2, lambda xp, x: (xp.diag(x), xp.diag(x, 1), xp.diag(x, -2))),
    ("3-d", lambda s: len(s) >= 3, lambda xp, x: (xp.dsplit(x, [1, 2]), xp.rot90(x, 1, (2, 0)),
                                                  xp.trace(x, 0, 1, 2), xp.diagonal(x, 1, 2, 0))),
]


# the cases whose arithmetic or conversions depend on the dtype; the others only move elements, the same way for
# every dtype
ARITHMETIC = {"pad constant", "append", "stacks", "insert/delete flat", "axis 0 nonempty", "pad modes",
              "matrix nonempty", "trace", "diag 1-d"}


def _table(xp, shape, names=None):
    """The function of every case (of `names`, default all) that applies to `shape`."""
    cases = [case for name, ok, case in CASES if (ok is None or ok(shape)) and (names is None or name in names)]
    return lambda x: tuple(case(xp, x) for case in cases)


def _input(shape, dtype, seed=60):
    return rand(shape, dtype, np.random.default_rng(seed), lo=-4, hi=4)


# every case on every shape for one float and one integer dtype; the cases whose arithmetic depends on the dtype
# for the other dtypes
TABLE = [(d, s, None) for d in (np.float64, np.int32) for s in SHAPES] + \
    [(d, s, ARITHMETIC) for d in (np.float32, np.int64, np.bool_) for s in [(), (5,)]]


@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("dtype,shape,names", TABLE, ids=lambda v: np.dtype(v).name if isinstance(v, type) else
                         str(v) if isinstance(v, tuple) else "arithmetic" if v else "all")
def test_table(backend, dtype, shape, names):
    x = _input(shape, dtype)
    check(_table(fnp, shape, names), x, backend=backend, expected=numpy_result(_table(np, shape, names), (x,)))


@pytest.mark.parametrize("shape", [(), (3, 4)], ids=str)
def test_table_as_numpy_calls(shape):
    # np.* on traced arrays dispatches to the same implementations: once per shape is enough
    check_xp(lambda xp: _table(xp, shape), _input(shape, np.float64), backend="llvm")


def test_table_on_c_backend():
    x = _input((5,), np.int32)
    check(_table(fnp, (5,)), x, backend="c", expected=numpy_result(_table(np, (5,)), (x,)))


def test_non_contiguous_arguments_and_views(backend):
    # arguments that are views in NumPy (copied by the dispatcher) and views made inside the function
    base = _input((6, 8), np.float32, seed=61)
    for x in (base[::2, ::-3], base.T):
        check(lambda x: (np.pad(x.T, ((1, 0), (2, 3)), mode="reflect"), np.roll(x[::-1], 3, axis=1),
                         np.tile(x[:, ::2], (2, 1)), np.repeat(x.T, [1, 2, 0, 1][:x.shape[1]] + [1] * (x.shape[1] - 4),
                                                                axis=0),
                         np.diagonal(x[::-1]), np.rot90(x.T), np.concatenate([x, x[::-1]], axis=None),
                         np.insert(x.T, 1, 0.5, axis=1), np.delete(x[:, ::-1], 0, axis=1), np.flip(x.T, 0)),
              x, backend=backend)


def test_mixed_dtypes_join_like_numpy(backend):
    rng = np.random.default_rng(62)
    a, b, c = rand((2, 3), np.int8, rng), rand((2, 3), np.float32, rng), rand((3,), np.uint8, rng)
    check_xp(lambda xp: lambda a, b, c: (xp.hstack([a, b]), xp.vstack([a, c]), xp.dstack([a, b]),
                                         xp.column_stack([c, c, a.T]), xp.block([[a, b], [c[None], c[None]]]),
                                         xp.append(a, c), xp.append(b, a, axis=0), xp.stack([a, b], dtype=np.float64),
                                         xp.concatenate([a, b], dtype=np.float32), xp.hstack([a, c[:2, None]]),
                                         xp.insert(a, 1, 2.7, axis=1), xp.insert(c, [0, 2], b[0, :2]),
                                         xp.pad(a, 1, constant_values=-1.9), xp.pad(c, 2, constant_values=(3, 255)),
                                         xp.concatenate([a, b], dtype=np.int64, casting="unsafe")),
             a, b, c, backend=backend)


def test_pad_corners_and_odd_reflections():
    # the corners of a padded matrix come from the last axis padded, as NumPy pads axis after axis; odd
    # reflections over several rounds compound the edge differences
    x = np.array([[1.0, 2.0, 7.0], [3.0, -4.0, 0.5]])
    check(lambda x: (np.pad(x, ((2, 3), (4, 1)), constant_values=((1, 2), (3, 4)) + ((5, 6),) * (x.ndim - 2)),
                     np.pad(x, ((5, 6), (7, 8)), mode="reflect", reflect_type="odd"),
                     np.pad(x, ((5, 6), (7, 8)), mode="symmetric", reflect_type="odd"),
                     np.pad(x, ((4, 2), (9, 5)), mode="linear_ramp", end_values=((1, -1), (10, 20))),
                     np.pad(x, ((3, 3), (2, 2)), mode="mean"), np.pad(x, 6, mode="wrap"),
                     np.pad(x, {1: (2, 3)}), np.pad(x, {0: 1}, mode="edge"),
                     np.pad(x[:1], 3, mode="reflect"), np.pad(x[:, :1], (0, 4), mode="symmetric")),
          x, backend="llvm")


def test_pad_integer_means_round_half_to_even():
    x = np.array([[1, 2], [4, 7], [-3, -4]], np.int32)
    check(lambda x: (np.pad(x, 2, mode="mean"), np.pad(x, (1, 3), mode="mean", stat_length=((1, 2), (2, 1))),
                     np.pad(x.astype(np.int64) * 3 + 1, 1, mode="mean"), np.pad(x, 3, mode="linear_ramp")),
          x, backend="llvm")


def test_roll_by_a_traced_shift(backend):
    x = np.arange(20.0).reshape(4, 5)
    f = numfn.jit(lambda x, s: (fnp.roll(x, s, axis=1), fnp.roll(x, s), fnp.roll(x, s * 2, axis=0)), backend=backend)
    for s in (0, 1, -3, 7, -21, 20):
        assert_same(f(x, s), (np.roll(x, s, axis=1), np.roll(x, s), np.roll(x, s * 2, axis=0)))


def test_views_share_memory_for_in_place_updates(backend):
    # a view (flip, diagonal, moveaxis, split parts) sees updates of its base, as in NumPy; copies (tile, pad,
    # np.copy) do not
    def f(x):
        y = x * 1.0
        z = np.copy(y)
        z += 1
        t = np.tile(y, 2)
        t *= 2
        return z, t
    check(f, np.arange(6.0), backend=backend)
    for view in (np.flip, np.diagonal, lambda y: np.moveaxis(y, 0, 1), lambda y: np.split(y, 2)[0],
                 lambda y: np.atleast_3d(y), np.matrix_transpose, lambda y: np.broadcast_arrays(y, y[:1])[1]):
        def g(x, view=view):
            y = x * 1.0
            v = view(y)
            y += 1
            return v
        check(g, np.arange(4.0).reshape(2, 2), backend=backend)


def test_fill_follows_the_in_place_rules(backend):
    def make(xp):
        def f(x):
            y = x + 1
            y.fill(3)
            w = (x[:2] * 0).astype(np.int8)
            w.fill(-2.7)
            v = x > 0
            v.fill(2)
            return y, w, v
        return f
    check(make(fnp), np.arange(4.0), backend=backend, expected=numpy_result(make(np), (np.arange(4.0),)))
    check_mutates(lambda x: x.fill(1), np.ones(3), backend=backend)   # the caller's array, as NumPy fills it
    with pytest.raises(OverflowError):
        numfn.jit(lambda x: (x + 1).astype(np.uint8).fill(-1), backend=backend)(np.ones(3))


def test_methods_that_delegate(backend):
    x = _input((3, 4), np.float64, seed=63)
    check(lambda x: (x.clip(-1, 1), x.clip(0.5), x.clip(max=0), x.dot(x.T), x[0].dot(x[1]), x.repeat(2, axis=1),
                     x.copy(), x.T.copy(), x.diagonal(), x.trace()), x, backend=backend)


ERRORS = [
    lambda x: np.moveaxis(x, [0, 0], [1, 0]), lambda x: np.moveaxis(x, 0, [1, 0]), lambda x: np.moveaxis(x, 3, 0),
    lambda x: np.rollaxis(x, 0, 5), lambda x: np.rot90(x, axes=(0, 0)), lambda x: np.rot90(x, axes=(0, 1, 2)),
    lambda x: np.rot90(x, axes=(0, 5)), lambda x: np.fliplr(x[0]), lambda x: np.flipud(x[0, 0]),
    lambda x: np.flip(x, 2), lambda x: np.diagonal(x[0]), lambda x: np.diagonal(x, 0, 0, -2),
    lambda x: np.diagonal(x, axis1=4), lambda x: np.trace(x[0]), lambda x: np.tril(x[0, 0]),
    lambda x: np.diag(x[None]), lambda x: np.repeat(x, [1, 2]), lambda x: np.repeat(x, -1),
    lambda x: np.repeat(x, [1, -1, 1], axis=0), lambda x: np.repeat(x, 2, axis=2), lambda x: np.tile(x, -1),
    lambda x: np.roll(x, [[1]], axis=0), lambda x: np.roll(x, 1, axis=2), lambda x: np.roll(x, [1, 2, 3], axis=[0, 1]),
    lambda x: np.split(x, 4, axis=1), lambda x: np.split(x, 0), lambda x: np.array_split(x, 0),
    lambda x: np.hsplit(x[0, 0], 1), lambda x: np.vsplit(x[0], 1), lambda x: np.dsplit(x, 1),
    lambda x: np.unstack(x[0, 0]), lambda x: np.delete(x, 5, axis=0), lambda x: np.insert(x, 5, 1, axis=0),
    lambda x: np.insert(x, [[1]], 1), lambda x: np.delete(x, 0, axis=3), lambda x: np.insert(x, [0, 1], [1, 2, 3]),
    lambda x: np.block([]), lambda x: np.block([[x], x]), lambda x: np.block((x, x)), lambda x: np.block([[x, x[0]]]),
    lambda x: np.pad(x, 1, mode="foo"), lambda x: np.pad(x, -1), lambda x: np.pad(x, 1.5),
    lambda x: np.pad(x[:0], 1, mode="edge"), lambda x: np.pad(x, 1, mode="edge", constant_values=2),
    lambda x: np.pad(x, ((1, 2), (3, 4), (5, 6))), lambda x: np.pad(x, 2, "maximum", stat_length=0),
    lambda x: np.pad(x, 1, constant_values=((1, 2, 3),)),
    lambda x: np.stack([x, x[0]]), lambda x: np.stack([]), lambda x: np.stack([x, x], axis=3),
    lambda x: np.concatenate([x, x], axis=2), lambda x: np.concatenate([x, x[0]]), lambda x: np.concatenate([]),
    lambda x: np.concatenate([x[0, 0], x[0, 0]]), lambda x: np.concatenate([x, x], dtype=np.int32),
    lambda x: np.hstack([x, x[0]]), lambda x: np.vstack([x, x[:, :1]]), lambda x: np.matrix_transpose(x[0]),
    lambda x: np.broadcast_arrays(x, x[:, :1].T[:2]), lambda x: np.swapaxes(x, 0, 2),
    lambda x: np.reshape(x, (5, -1)), lambda x: x.reshape(2, -1, -1), lambda x: np.squeeze(x, 0),
    lambda x: np.expand_dims(x, (0, 0)), lambda x: np.expand_dims(x, 4), lambda x: np.append(x, x[0], axis=0),
    lambda x: np.ravel(x, order="X"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_like_numpy(i):
    check_raises_like(ERRORS[i], np.ones((3, 2)), backend="llvm")


def test_refused_with_a_clear_error():
    x = np.ones((3, 2))
    # (repeat with computed counts is supported: tests/test_value_sizes.py)
    for fn in (lambda x: fnp.delete(x, x[0].astype(int)),
               lambda x: fnp.insert(x, x[0].astype(int), 1), lambda x: np.pad(x, 1, mode=lambda *a: None),
               lambda x: x.reshape(6, order="A")):
        with pytest.raises(numfn.NumfnError, match="not supported"):
            numfn.jit(fn, backend="llvm")(x)


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 9), st.integers(0, 9), st.sampled_from(["reflect", "symmetric", "wrap", "edge"]),
       st.sampled_from(["even", "odd"]), st.integers(1, 4))
def test_pad_widths_generated(before, after, mode, reflect_type, n):
    x = np.arange(1.0, n + 1.0) ** 2
    kw = {"reflect_type": reflect_type} if mode in ("reflect", "symmetric") else {}
    check(lambda x: np.pad(x, (before, after), mode=mode, **kw), x, backend="llvm")


def _fill_scalar_and_array(x):
    s = (x + 1).sum()
    s.fill(2)                    # a NumPy scalar: fill leaves it as it is
    a = np.array((x + 1).sum())
    a.fill(5)                    # a 0-d array: filled
    return s, a


def test_fill_of_a_numpy_scalar_and_of_a_0d_array(backend):
    check(_fill_scalar_and_array, np.ones((3, 2)), backend=backend)
