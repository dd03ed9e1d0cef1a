"""What goes in and what comes out: argument kinds and memory layouts, captured constants, output containers, and
outputs that must be fresh copies (never views of an input, never one buffer twice)."""
from collections import namedtuple

import numpy as np
import pytest

import numfn
from helpers import assert_same, check, rand

RNG = np.random.default_rng(50)
GLOBAL_TABLE = rand((3, 4), np.float64, RNG)
GLOBAL_INTS = [1, 2, 3, 4]
GLOBAL_SCALE = 0.5


def _layouts(base: np.ndarray) -> dict:
    """Views of the same logical shape (4, 6) in different memory layouts."""
    big = np.ascontiguousarray(np.repeat(np.repeat(base, 2, axis=0), 3, axis=1))
    ro = base.copy()
    ro.flags.writeable = False
    return {
        "c": base.copy(),
        "fortran": np.asfortranarray(base),
        "transposed": np.ascontiguousarray(base.T).T,
        "strided": big[::2, ::3],
        "negative": np.ascontiguousarray(base[::-1, ::-1])[::-1, ::-1],
        "negative-rows": np.ascontiguousarray(base[::-1])[::-1],
        "readonly": ro,
        "broadcast": np.broadcast_to(base[0], base.shape),
        "misaligned": _misaligned(base),
    }


def _misaligned(base: np.ndarray) -> np.ndarray:
    """A copy of `base` whose data pointer is not a multiple of the itemsize."""
    raw = np.zeros(base.nbytes + 1, np.uint8)
    out = np.frombuffer(raw.data, dtype=base.dtype, count=base.size, offset=1).reshape(base.shape)
    out[...] = base
    assert not out.flags.aligned
    return out


LAYOUTS = ["c", "fortran", "transposed", "strided", "negative", "negative-rows", "readonly", "broadcast",
           "misaligned"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.int64], ids=lambda d: np.dtype(d).name)
def test_input_memory_layouts(backend, layout, dtype):
    base = rand((4, 6), dtype, np.random.default_rng(51))
    x = _layouts(base)[layout]
    y = _layouts(base[:, ::-1] * 2)[layout]
    np.testing.assert_array_equal(x, base if layout != "broadcast" else np.broadcast_to(base[0], base.shape))
    check(lambda x, y: (x + y, x.T, x[::-1, 1::2], x.sum(axis=0), x @ y.T, x), x, y, backend=backend, scale=500.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_non_native_byte_order(backend, dtype):
    # byte order is storage, not type: a big-endian array is an input (or a captured constant) of its dtype, and
    # the results are NumPy's, as fresh arrays in native order
    rng = np.random.default_rng(57)
    base, table = rand((4, 6), dtype, rng), rand((6,), dtype, rng)
    swapped, swapped_table = (a.astype(a.dtype.newbyteorder()) for a in (base, table))
    assert not swapped.dtype.isnative and not swapped_table.dtype.isnative

    def f(x):
        return x * 2 + swapped_table, x.sum(axis=0), x[::-1, 1::2], x

    jf = numfn.jit(f, backend=backend)
    for x in (swapped, swapped[::-1], base):
        assert_same(jf(x), f(x.astype(dtype)))   # NumPy's answers on native data: native dtypes throughout
    assert len(jf.specializations) == 1   # either byte order, any layout


def test_layouts_share_one_specialization(backend):
    base = rand((4, 6), np.float64, np.random.default_rng(52))
    f = numfn.jit(lambda x: x * 2 + x[::-1], backend=backend)
    for layout, x in _layouts(base).items():
        assert_same(f(x), x * 2 + x[::-1])
        assert len(f.specializations) == 1, layout


def test_repeated_calls_use_new_data(backend):
    f = numfn.jit(lambda x, y: (x * y).sum(axis=1) + x.max(), backend=backend)
    for seed in range(4):
        rng = np.random.default_rng(seed)
        x, y = rand((5, 3), np.float64, rng), rand((3,), np.float64, rng)
        assert_same(f(x, y), (x * y).sum(axis=1) + x.max(), scale=10.0)
    assert len(f.specializations) == 1


def test_size_zero_and_zero_d_inputs(backend):
    e, z, s = np.zeros((0, 3), np.float32), np.zeros((2, 0)), np.array(4.0)
    check(lambda e, z, s: (e + 1, e.T, e.sum(axis=0), z * s, s * 2, s, s + e, z.sum(axis=1), e.reshape(3, 0)),
          e, z, s, backend=backend)


# ---- argument kinds -----------------------------------------------------------------------------------------------
def test_python_scalars_as_arguments(backend):
    x = rand((3,), np.float32, np.random.default_rng(53))
    i = np.arange(3, dtype=np.int16)
    f = check(lambda x, i, a, b: (x * a, x + b, i * a, i + b, a * b, a + 1, b / 2, i // a), x, i, 3, 2.5,
              backend=backend)
    r = f(x, i, 3, 2.5)
    assert [v.dtype for v in r] == [np.float32, np.float32, np.int16, np.float64, np.float64, np.int64, np.float64,
                                    np.int16]


def test_python_scalar_values_are_not_baked_in(backend):
    # the value of a scalar argument is an input of the compiled code: a new value needs no new specialization
    x = rand((4,), np.float64, np.random.default_rng(54))
    f = numfn.jit(lambda x, s, n: (x * s + n, n * 2, s - 1), backend=backend)
    for s, n in [(2.0, 1), (-3.5, 7), (0.0, -2**40)]:
        assert_same(f(x, s, n), (x * s + n, np.asarray(n * 2), np.asarray(s - 1)))
    assert len(f.specializations) == 1
    f(x, 2, 1)      # an int where a float was: a new signature (weak int64 instead of weak float64)
    f(x, 2.0, 1.0)
    assert len(f.specializations) == 3


def test_python_bool_argument(backend):
    x = np.arange(3, dtype=np.int32)
    check(lambda x, b: (x * b, x > 0 & b), x, True, backend=backend)


def test_numpy_scalars_and_zero_d_arrays_are_strong(backend):
    # NEP 50: only Python scalars are weak; np.float64(2) and 0-d arrays take part in promotion
    x = rand((3,), np.float32, np.random.default_rng(55))
    i8 = np.arange(3, dtype=np.int8)
    check(lambda x, i8, a, b, c, d: (x * a, x * b, i8 + c, i8 * d, a + c), x, i8, np.float32(2.0), np.array(3.0),
          np.int32(300), np.array(7, np.int16), backend=backend)
    check(lambda x, i8, a: (x * a, i8 + a), x, i8, np.int64(3), backend=backend)


def test_numpy_float64_scalar_argument_is_strong(backend):
    x = np.ones(3, np.float32)
    check(lambda x, a: x * a, x, np.float64(2.0), backend=backend)


def test_lists_as_arguments(backend):
    check(lambda a, b: (a + 1, a * b, b), [1, 2, 3], [[0.5], [1.5]], backend=backend,
          expected=(np.asarray([1, 2, 3]) + 1, np.asarray([1, 2, 3]) * np.asarray([[0.5], [1.5]]),
                    np.asarray([[0.5], [1.5]])))


def test_containers_and_keywords_as_arguments(backend):
    rng = np.random.default_rng(56)
    p = {"w": rand((3, 2), np.float64, rng), "b": rand((2,), np.float64, rng)}
    xs = (rand((4, 3), np.float64, rng), [rand((4, 3), np.float64, rng), 2.0])
    P = namedtuple("P", "a b")

    def f(p, xs, *, factor, pt):
        (x0, (x1, k)) = xs
        return (x0 @ p["w"] + p["b"]) * factor + (x1 * k) @ p["w"] + pt.a * pt.b

    check(f, p, xs, factor=3.0, pt=P(np.ones(2), np.arange(2.0)), backend=backend, scale=100.0)


def test_static_arguments(backend):
    x = rand((2, 6), np.float32, np.random.default_rng(57))
    f = numfn.jit(lambda x, n, axis: x.reshape(n, -1).sum(axis=axis), static_argnums=(1,), static_argnames=("axis",),
                  backend=backend)
    assert_same(f(x, 3, axis=0), x.reshape(3, -1).sum(axis=0), scale=10.0)
    assert_same(f(x, 4, axis=1), x.reshape(4, -1).sum(axis=1), scale=10.0)
    assert_same(f(x, 3, axis=0), x.reshape(3, -1).sum(axis=0), scale=10.0)
    assert len(f.specializations) == 2


# ---- captured constants -------------------------------------------------------------------------------------------
def test_captured_globals_and_closures(backend):
    local_arr = rand((4,), np.int32, np.random.default_rng(58))
    local_list = [[1.5, 2.5, 3.5, 4.5]]
    one = np.array([2.0])               # a one-element array is folded into a constant
    f32 = np.float32(1.25)

    def f(x):
        return (x @ GLOBAL_TABLE.T, x * GLOBAL_INTS, x + local_arr, x - local_list, x * GLOBAL_SCALE, x * one, x * f32,
                x + 7, GLOBAL_TABLE, local_list, np.asarray(GLOBAL_INTS) * 2, (x > 0) & np.array([True, False] * 2),
                x * np.float64(3.0), x + (1, 2, 3, 4))

    x = rand((2, 4), np.float32, np.random.default_rng(59))
    check(f, x, backend=backend, scale=100.0)


def test_captured_constants_are_snapshots(backend):
    # the compiled code holds the values captured while tracing; changing the global afterwards needs a new trace,
    # which happens only for a new signature. (Documented tracing semantics, tested so that it stays explicit.)
    table = np.arange(3.0)
    f = numfn.jit(lambda x: x + table, backend=backend)
    x = np.zeros(3)
    assert_same(f(x), np.arange(3.0))
    table[:] = 100.0
    assert_same(f(x), np.arange(3.0))


def test_large_captured_constant(backend):
    w = rand((64, 64), np.float64, np.random.default_rng(60))
    x = rand((3, 64), np.float64, np.random.default_rng(61))
    check(lambda x: (x @ w, w[::-1].sum(axis=0) * x), x, backend=backend, scale=1000.0)


# ---- outputs ------------------------------------------------------------------------------------------------------
def test_outputs_that_are_inputs_or_views_are_copies(backend):
    x = rand((3, 4), np.float64, np.random.default_rng(62))
    y = rand((5,), np.int32, np.random.default_rng(63))
    f = check(lambda x, y: (x, x.T, x[::2], x[1], x.reshape(-1), x[..., None], y, y[::-1], y[2:3], x[0, 0],
                            np.broadcast_to(y, (2, 5)), x.astype(np.float64), y + 0), x, y, backend=backend)
    out = f(x, y)
    out[0][...] = -1.0      # writing into the outputs leaves the inputs alone
    out[6][...] = -1
    assert not (x == -1.0).any() and not (y == -1).any()
    for o in out:
        assert o.flags.writeable and o.flags.c_contiguous and o.flags.owndata


def test_outputs_are_not_shared_between_calls(backend):
    f = numfn.jit(lambda x: x + 1, backend=backend)
    x = np.zeros(3)
    a, b = f(x), f(x)
    assert not np.shares_memory(a, b)
    a[0] = 5
    assert_same(b, np.ones(3))


def test_one_node_returned_twice(backend):
    x = rand((4,), np.float32, np.random.default_rng(64))
    f = check(lambda x: ((x * 2, x * 2), [x, x], {"a": x.sum(), "b": x.sum()}), x, backend=backend)
    (a, b), (c, d), e = f(x)

    def node(x):
        y = x * 2
        return y, y, [y, {"z": y}]

    f2 = check(node, x, backend=backend)
    r = f2(x)
    arrays = [r[0], r[1], r[2][0], r[2][1]["z"]]
    for i, p in enumerate(arrays):
        for q in arrays[:i]:
            assert not np.shares_memory(p, q)
    assert not np.shares_memory(a, b) and not np.shares_memory(c, d) and not np.shares_memory(e["a"], e["b"])


def test_output_containers(backend):
    x = rand((2, 3), np.float64, np.random.default_rng(65))
    P = namedtuple("P", "mean total")

    def f(x):
        return {"sum": x.sum(), "nested": [x, (x.T, {"deep": [x * 2, None]})], "one": (x,), "empty": [],
                "named": P(x.mean(), x.sum(axis=0)), "z": 3.0, 1: x[0]}

    out = numfn.jit(f, backend=backend)(x)
    expected = f(x)
    assert isinstance(out["named"], P)
    assert_same(out, expected, scale=10.0)


@pytest.mark.parametrize("make", [lambda x: x, lambda x: (x,), lambda x: [x], lambda x: {"a": x}, lambda x: x.sum(),
                                  lambda x: 2.5, lambda x: 7, lambda x: [], lambda x: None, lambda x: (x, (x, [x]))],
                         ids=["leaf", "tuple1", "list1", "dict1", "0-d", "float", "int", "empty", "none", "nested"])
def test_simple_output_kinds(backend, make):
    check(make, rand((3,), np.int32, np.random.default_rng(66)), backend=backend)


@pytest.mark.parametrize("make", [lambda x: (x + 1, (x + 1).T), lambda x: (x.sum(axis=1), x.sum(axis=1)[::-1]),
                                  lambda x: (x @ x, (x @ x).T), lambda x: (np.exp(x / 9), np.exp(x / 9)[::-1]),
                                  lambda x: (x - 1, (x - 1)[::-1, ::-1])],
                         ids=["T", "reversed-sum", "matmul-T", "exp-reversed", "flipped"])
def test_output_and_a_view_of_it(backend, make):
    check(make, np.arange(9.0).reshape(3, 3), backend=backend, scale=100.0)


def test_out_argument_receives_the_results(backend):
    # out= (one array per output, in the flattened output order) is filled with NumPy's answer and returned
    x = rand((3, 4), np.float32, np.random.default_rng(67))
    f = numfn.jit(lambda x: (x * 2 - 1, x.sum(axis=0), (x > 0).sum()), backend=backend)
    expected = (x * 2 - 1, x.sum(axis=0), (x > 0).sum())
    outs = (np.empty((3, 4), np.float32), np.empty(4, np.float32), np.empty((), np.int64))
    for _ in range(2):   # the slow path, then the fast path
        for o in outs: o[...] = 0
        r = f(x, out=outs)
        assert all(a is b for a, b in zip(r, outs))
        assert_same(r, expected, scale=10.0)
    with pytest.raises(ValueError):
        f(x, out=(x, outs[1], outs[2]))      # an output overlapping an input
    with pytest.raises(TypeError):
        f(x, out=(outs[0].astype(np.float64), outs[1], outs[2]))


def test_python_int_argument_range_checked_on_every_call(backend):
    # NEP 50: int8_array + 1000 raises OverflowError; the value is an argument here, so every call must check it
    x = np.arange(-3, 3, dtype=np.int8)
    f = numfn.jit(lambda x, s: (x + s, x * 2 < s), backend=backend)
    for s in (5, 5, 127, -128, 0):
        assert_same(f(x, s), (x + s, x * 2 < s))
    for s in (1000, 128, -129, 2**63 - 1):
        with pytest.raises(OverflowError):
            x + s
        with pytest.raises(OverflowError):
            f(x, s)
    assert_same(f(x, 7), (x + 7, x * 2 < 7))


def test_python_int_converted_to_two_integer_types(backend):
    # the same int meets an int8 and a uint8 array: it must fit both, and the error names the type it crosses
    a, b = np.arange(3, dtype=np.int8), np.arange(3, dtype=np.uint8)
    f = numfn.jit(lambda a, b, s: (a + s, b + s), backend=backend)
    assert_same(f(a, b, 100), (a + 100, b + 100))
    for s, crossed in ((200, "int8"), (-1, "uint8"), (300, "int8")):
        with pytest.raises(OverflowError, match=f"for {crossed}"):
            f(a, b, s)
        with pytest.raises(OverflowError, match=f"for {crossed}"):
            a + s if crossed == "int8" else b + s


def test_functions_differing_only_in_captured_values(backend):
    # identical code and signatures, different captured constants: each compiled program (and any cache entry) must
    # belong to its own values, down to the sign of zero and the last element of a large array
    def make(c):
        return lambda x: x + c

    x = np.full(3, -0.0)
    big = np.random.default_rng(68).uniform(size=5000)
    big2 = big.copy()
    big2[-1] += 1
    for c in (np.array([1.0, 2, 3]), np.array([4.0, 5, 6]), 7.0, 8.0, 7, np.full(3, np.nan), np.full(3, -0.0),
              np.full(3, 0.0), np.float32(2.5), np.float64(2.5)):
        check(make(c), x, backend=backend, signed_zeros=True)
    for c in (big, big2):
        check(make(c), np.zeros(5000), backend=backend)


def test_misaligned_arguments_reach_native_code_aligned(monkeypatch):
    """Found by the sanitizer run: the first call (the Python path) passed a misaligned argument's own address to
    native code, which reads it as aligned (undefined behaviour in C); it is copied now, as the C dispatcher does."""
    from numfn.runtime import native
    seen = []
    original = native.pointer_table

    def recording(arrays, *rest):
        seen.extend(a for a in arrays if isinstance(a, np.ndarray))
        return original(arrays, *rest)
    monkeypatch.setattr(native, "pointer_table", recording)
    x = _misaligned(np.arange(6.0))
    np.testing.assert_array_equal(numfn.jit(lambda x: x * 2)(x), x * 2)
    assert seen and all(a.flags.aligned for a in seen)
