"""Every derivative rule (numfn/autodiff/rules.py) checked numerically: numfn.check_grads compares forward mode
(jvp) with central finite differences in float64 and reverse mode (vjp) with them by the dot-product test, on the
op's domain, in float64 (and float32 with looser tolerances), over shapes 0-d, size 1, broadcasting operands.

Each case is one small function; each compiles its f, jvp and vjp programs once (keep the table short per op)."""
from __future__ import annotations

import numpy as np
import pytest

import numfn

RNG = np.random.default_rng(7)


def _u(lo, hi, shape=(2, 3), dtype=np.float64):
    return RNG.uniform(lo, hi, shape).astype(dtype)


# (name, function, argument maker(dtype)): the arguments lie inside the function's domain, away from kinks
UNARY = [
    ("negative", np.negative, (-2, 2)), ("abs", np.abs, (0.2, 2)), ("abs_neg", np.abs, (-2, -0.2)),
    ("sqrt", np.sqrt, (0.5, 2)), ("exp", np.exp, (-1, 1)), ("exp2", np.exp2, (-1, 1)), ("log", np.log, (0.5, 2)),
    ("log2", np.log2, (0.5, 2)), ("log10", np.log10, (0.5, 2)), ("sin", np.sin, (-2, 2)), ("cos", np.cos, (-2, 2)),
    ("tan", np.tan, (-1, 1)), ("tanh", np.tanh, (-2, 2)), ("arcsin", np.arcsin, (-0.8, 0.8)),
    ("arccos", np.arccos, (-0.8, 0.8)), ("arctan", np.arctan, (-2, 2)), ("sinh", np.sinh, (-2, 2)),
    ("cosh", np.cosh, (-2, 2)), ("arcsinh", np.arcsinh, (-2, 2)), ("arccosh", np.arccosh, (1.5, 3)),
    ("arctanh", np.arctanh, (-0.8, 0.8)), ("expm1", np.expm1, (-1, 1)), ("log1p", np.log1p, (-0.5, 2)),
    ("cbrt", np.cbrt, (0.5, 2)), ("square", np.square, (-2, 2)), ("reciprocal", np.reciprocal, (0.5, 2)),
    ("floor", lambda x: np.floor(x) * x, (0.1, 0.9)), ("ceil", lambda x: np.ceil(x) * x, (0.1, 0.9)),
    ("trunc", lambda x: np.trunc(x) + x, (0.1, 0.9)), ("rint", lambda x: np.rint(x) + x, (0.1, 0.4)),
    ("sign", lambda x: np.sign(x) * x, (0.2, 2)),
    ("float_power", lambda x: x ** 2.5, (0.5, 2)), ("deg2rad", np.deg2rad, (-2, 2)),
]


@pytest.mark.parametrize("name,fn,domain", UNARY, ids=[c[0] for c in UNARY])
def test_unary_float64(name, fn, domain):
    numfn.check_grads(fn, (_u(*domain),), order=1)


BINARY = [
    ("add", np.add, (-2, 2), (-2, 2)), ("subtract", np.subtract, (-2, 2), (-2, 2)),
    ("multiply", np.multiply, (-2, 2), (-2, 2)), ("divide", np.divide, (-2, 2), (0.5, 2)),
    ("power", np.power, (0.5, 2), (-2, 2)), ("maximum", np.maximum, (-2, 2), (-2, 2)),
    ("minimum", np.minimum, (-2, 2), (-2, 2)), ("fmax", np.fmax, (-2, 2), (-2, 2)),
    ("arctan2", np.arctan2, (-2, 2), (0.5, 2)), ("hypot", np.hypot, (0.5, 2), (-2, -0.5)),
    ("mod", np.mod, (0.1, 3), (0.7, 0.9)), ("fmod", np.fmod, (0.1, 3), (0.7, 0.9)),
    ("logaddexp", np.logaddexp, (-2, 2), (-2, 2)),
]


@pytest.mark.parametrize("name,fn,da,db", BINARY, ids=[c[0] for c in BINARY])
def test_binary_float64(name, fn, da, db):
    numfn.check_grads(fn, (_u(*da), _u(*db)), order=1)


@pytest.mark.parametrize("shapes", [((), ()), ((3,), ()), ((1,), (4,)), ((2, 1), (1, 3)), ((1, 1), (1, 1))],
                         ids=["0d", "scalar-broadcast", "size1", "outer", "size1x1"])
def test_shapes_broadcasting(shapes):
    a, b = _u(0.5, 2, shapes[0]), _u(0.5, 2, shapes[1])
    numfn.check_grads(lambda x, y: np.sin(x) * y / (x + y) + x ** y, (a, b), order=1)


FLOAT32 = [
    ("transcendental", lambda x: np.exp(np.sin(x)) + np.log1p(x * x) + np.tanh(x) * np.sqrt(x + 3)),
    ("binary", lambda x: np.maximum(x, 0.3) * np.arctan2(x, 1.5) / (x + 4) + np.hypot(x, 2.0) ** 1.5),
    ("reductions", lambda x: np.sum(x, axis=0) * np.max(x, axis=1).mean() + np.prod(x + 2)),
    ("movement", lambda x: np.flip(np.pad(x.T, 1), 0)[1:, ::2].reshape(-1) * np.arange(3.0).repeat(2)[:4].sum()),
]


@pytest.mark.parametrize("name,fn", FLOAT32, ids=[c[0] for c in FLOAT32])
def test_float32(name, fn):
    numfn.check_grads(fn, (_u(0.2, 1.5, dtype=np.float32),), order=1)


REDUCTIONS = [
    ("sum", lambda x: np.sum(x)), ("sum_axis", lambda x: x.sum(axis=1)), ("mean", lambda x: np.mean(x, axis=0)),
    ("max", lambda x: np.max(x, axis=1)), ("min", lambda x: np.min(x)), ("prod", lambda x: np.prod(x, axis=0)),
    ("prod_all", lambda x: np.prod(x)), ("std", lambda x: np.std(x)), ("var", lambda x: np.var(x, axis=1)),
    ("cumsum", lambda x: np.cumsum(x, axis=1)), ("cumprod", lambda x: np.cumprod(x, axis=0)),
    ("logsumexp", lambda x: np.log(np.sum(np.exp(x - x.max()))) + x.max()),
    ("norm", lambda x: np.linalg.norm(x)), ("dot", lambda x: x @ x.T),
    ("einsum", lambda x: np.einsum("ij,ij->i", x, x)),
]


@pytest.mark.parametrize("name,fn", REDUCTIONS, ids=[c[0] for c in REDUCTIONS])
def test_reductions(name, fn):
    numfn.check_grads(fn, (_u(0.5, 2, (3, 4)),), order=1)


def _cumprod_jacobian(x):
    """d cumprod(x)_k / d x_i of a 1-d x by its definition: the product of x_j, j <= k, j != i (0 for i > k)."""
    n = len(x)
    return np.array([[np.prod(np.delete(x[:k + 1], i)) if i <= k else 0.0 for i in range(n)] for k in range(n)])


# (one length: every case runs the programs the first one compiled)
ZEROS = [np.array([0.5, 2.0, 0.0, 3.0, 1.5]), np.array([0.0, 2.0, 0.5, 3.0, 1.2]), np.array([1.5, 2.0, 3.0, 1.2, 0.0]),
         np.array([2.0, 0.0, 3.0, 0.0, 0.5]), np.array([0.0, 0.0, 2.0, 1.1, 0.9]), np.array([0.7, 1.3, 2.0, 0.9, 1.1])]


@pytest.mark.parametrize("x", ZEROS, ids=lambda x: f"zeros at {np.flatnonzero(x == 0).tolist()}")
def test_running_product_with_zeros_is_exact(x):
    """cumprod's derivative where x has zeros: before the first zero, cumprod(x) * cumsum(t / x) would divide by
    zero (a NaN); the products of the others are what it is. Forward, reverse, along an axis of a 2-d array, and
    the second derivatives (a rule exact only at first order would give wrong hessians at the zeros)."""
    want = _cumprod_jacobian(x)
    np.testing.assert_allclose(numfn.jacfwd(np.cumprod)(x), want, rtol=1e-14, atol=0)
    np.testing.assert_allclose(numfn.jacrev(np.cumprod)(x), want, rtol=1e-14, atol=0)
    rows = np.stack([x, x[::-1] + 1.0])   # along axis 1: one row with the zeros, one without
    got = numfn.jacrev(lambda a: np.cumprod(a, axis=1))(rows)
    for r in range(2):
        np.testing.assert_allclose(got[r, :, r, :], _cumprod_jacobian(rows[r]), rtol=1e-14, atol=0)
        np.testing.assert_array_equal(got[r, :, 1 - r, :], 0.0)
    numfn.check_grads(lambda a: np.sum(np.cumprod(a, axis=0) ** 2), (rows.T.copy(),), order=1)
    # second order: d2 sum(cumprod(x)) / dx_i dx_m, the products of the others up to each k past both (0 on i = m)
    n = len(x)
    want2 = np.array([[0.0 if i == m else sum(np.prod(np.delete(x[:k + 1], [i, m])) for k in range(max(i, m), n))
                       for m in range(n)] for i in range(n)])
    np.testing.assert_allclose(numfn.hessian(lambda a: np.sum(np.cumprod(a)))(x), want2, rtol=1e-14, atol=1e-15)


def test_product_hessian_with_zeros_is_exact():
    """prod's rule takes running products of the others; their own derivative (cumprod's) keeps it exact at zeros."""
    x = np.array([0.5, 2.0, 0.0, 3.0, 0.0])
    want = np.array([[0.0 if i == m else np.prod(np.delete(x, [i, m])) for m in range(5)] for i in range(5)])
    np.testing.assert_allclose(numfn.hessian(np.prod)(x), want, rtol=1e-14, atol=0)


MOVEMENT = [
    ("reshape", lambda x: x.reshape(4, 3) * np.arange(3.0)), ("transpose", lambda x: x.T * np.arange(3.0)),
    ("slice", lambda x: x[1:, ::2] * 2), ("negative_stride", lambda x: x[::-1, ::-2] ** 2),
    ("broadcast", lambda x: x[:, None, :] * x[None, :, :]), ("pad", lambda x: np.pad(x, ((1, 0), (0, 2))) ** 2),
    ("concatenate", lambda x: np.concatenate([x, x ** 2], axis=1)), ("stack", lambda x: np.stack([x, np.sin(x)])),
    ("roll", lambda x: np.roll(x, 1, axis=1) * x), ("tile", lambda x: np.tile(x, (2, 1)) ** 2),
    ("where", lambda x: np.where(x > 1, x ** 2, np.sin(x))), ("clip", lambda x: np.clip(x, 0.8, 1.6) * x),
    ("gather", lambda x: x[[2, 0, 0], [1, 1, 1]] ** 2), ("take", lambda x: np.take(x, [3, 1, 3], axis=1) * x[:, :3]),
    ("boolean_where", lambda x: np.where(x < 1.2, 0.0, x) ** 2),
    ("argmax_column", lambda x: x[:, np.argmax(x[0])] * x[:, 0]),
    ("diag", lambda x: np.diag(x[:3, :3]) ** 2), ("triu", lambda x: np.triu(x) ** 2),
]


@pytest.mark.parametrize("name,fn", MOVEMENT, ids=[c[0] for c in MOVEMENT])
def test_movement_and_indexing(name, fn):
    numfn.check_grads(fn, (_u(0.5, 2, (3, 4)),), order=1)


def _set_slice(x):
    y = x * 2
    y[1:] += np.sin(x[:1])
    y[:, 0] = x[:, 1] ** 2
    return y


def _set_repeated(x):
    y = np.zeros(4)
    y[[0, 1, 0]] = x[:3]   # the last write to y[0] lands: x[2]
    return y * x


def _add_at(x):
    y = np.zeros(4)
    np.add.at(y, [0, 1, 0], x[:3])
    return y * x


def _masked(x):
    y = x.copy()
    y[x > 1] = 0.5 * x[x > 1] ** 2
    return y


INPLACE = [("set_slice", _set_slice, (3, 4)), ("set_repeated", _set_repeated, (4,)), ("add_at", _add_at, (4,)),
           ("masked", _masked, (3, 4))]


@pytest.mark.parametrize("name,fn,shape", INPLACE, ids=[c[0] for c in INPLACE])
def test_in_place_writes(name, fn, shape):
    numfn.check_grads(fn, (_u(0.5, 2, shape),), order=1)


def test_copysign_is_refused_not_zero():
    # np.copysign works on the float's bits: its derivative would silently be zero, so it is an error
    with pytest.raises(NotImplementedError, match="bits"):
        numfn.grad(lambda x: np.sum(np.copysign(x, -1.0)))(np.ones(3))


@pytest.mark.parametrize("n", [64, 96])
def test_blas_products(n):
    # products large enough for BLAS's GEMM (and GEMV for a vector, SYRK for x @ x.T)
    a, b, v = _u(-1, 1, (n, n)), _u(-1, 1, (n, n)), _u(-1, 1, (n,))
    numfn.check_grads(lambda a, b: np.tanh(a @ b), (a, b), order=1, rtol=1e-4, atol=1e-4)
    numfn.check_grads(lambda a, v: np.sin(a @ v), (a, v), order=1, rtol=1e-4, atol=1e-4)
    numfn.check_grads(lambda a: a @ a.T, (a,), order=1, rtol=1e-4, atol=1e-4)


def test_cast_between_floats():
    # float32 -> float64 (the finite differences see float64 throughout) and float64 -> float32 -> float64
    numfn.check_grads(lambda x: x.astype(np.float64) ** 2, (_u(0.5, 2, dtype=np.float32),), order=1)
    # (linear: a large step keeps float32's rounding out of the finite difference)
    numfn.check_grads(lambda x: x.astype(np.float32).astype(np.float64) * 3, (_u(0.5, 2),), eps=1e-2, rtol=1e-3)


SECOND_ORDER = [
    ("elementwise", lambda x: np.sum(np.sin(x) * np.exp(x) / (1 + x * x))),
    ("pow", lambda x: np.sum(x ** 3 + np.sqrt(x) + x ** x)),
    ("reductions", lambda x: np.prod(x) + np.max(x) * np.std(x)),
    ("indexing", lambda x: np.sum(x[[0, 2, 2]] ** 3) + np.sum(np.cumsum(x) ** 2)),
]


@pytest.mark.parametrize("name,fn", SECOND_ORDER, ids=[c[0] for c in SECOND_ORDER])
def test_second_order(name, fn):
    numfn.check_grads(fn, (_u(0.5, 1.5, (4,)),), order=2, rtol=1e-4, atol=1e-4)
