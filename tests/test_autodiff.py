"""numfn's derivative API (numfn/autodiff): grad, value_and_grad, jvp, vjp, jacfwd, jacrev, hessian, check_grads;
their compositions with jit, vmap and each other, values against analytic derivatives, pytrees, the errors JAX
raises, and the completeness of the rules in the table of primitives. (The rules one by one:
tests/test_autodiff_rules.py.)"""
from __future__ import annotations

import numpy as np
import pytest

import numfn
from numfn.autodiff.rules import JVP_RULES, NO_TANGENT, NOT_DIFFERENTIABLE, TRANSPOSE_RULES
from numfn.ir.primitives import PRIMITIVES, Kind, Ops

X = np.linspace(0.1, 1.3, 5)


def f_scalar(x):
    return np.sum(np.sin(x) * x ** 2) / np.max(x)


def df_scalar(x):   # by hand (the maximum is attained once, at the last element)
    m = x.max()
    g = (np.cos(x) * x ** 2 + 2 * x * np.sin(x)) / m
    g[np.argmax(x)] -= np.sum(np.sin(x) * x ** 2) / m ** 2
    return g


# ---------------------------------------------------------------------------------------------------------------
# values against analytic derivatives

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grad_of_sum_of_sin_is_cos(dtype):
    x = X.astype(dtype)
    g = numfn.grad(lambda x: np.sum(np.sin(x)))(x)
    assert g.dtype == dtype and g.shape == x.shape
    np.testing.assert_allclose(g, np.cos(x), rtol=1e-6 if dtype == np.float32 else 1e-15)


def test_grad_values_against_analytic():
    np.testing.assert_allclose(numfn.grad(f_scalar)(X), df_scalar(X), rtol=1e-13)
    np.testing.assert_allclose(numfn.grad(lambda x: np.sum(np.exp(2 * x)))(X), 2 * np.exp(2 * X), rtol=1e-14)
    np.testing.assert_allclose(numfn.grad(lambda x: np.log(x) * x)(2.0), np.log(2.0) + 1, rtol=1e-15)


def test_subgradient_conventions():
    # abs at 0: 0 (sign); maximum/minimum ties: half each (JAX); max reduction ties: shared equally
    assert numfn.grad(lambda x: np.abs(x))(0.0) == 0.0
    assert numfn.grad(lambda x: np.maximum(x, 1.0))(1.0) == 0.5
    assert numfn.grad(lambda x, y: np.minimum(x, y), argnums=(0, 1))(2.0, 2.0) == (0.5, 0.5)
    np.testing.assert_array_equal(numfn.grad(lambda x: np.max(x))(np.array([1.0, 3.0, 3.0, 2.0])),
                                  [0, 0.5, 0.5, 0])
    np.testing.assert_array_equal(numfn.grad(lambda x: np.sum(np.where(x > 0, x, 0.0)))(np.array([-1.0, 2.0])),
                                  [0, 1])
    # prod with zeros: the product of the others, exactly
    np.testing.assert_array_equal(numfn.grad(lambda x: np.prod(x))(np.array([2.0, 0.0, 3.0, 4.0])), [0, 24, 0, 0])
    np.testing.assert_array_equal(numfn.grad(lambda x: np.prod(x))(np.array([2.0, 0.0, 3.0, 0.0])), [0, 0, 0, 0])
    # 0 ** 0 has derivative 0 in both operands (JAX)
    assert numfn.grad(lambda x, y: x ** y, argnums=(0, 1))(0.0, 0.0) == (0.0, 0.0)


def test_empty_and_strided_arguments():
    assert numfn.grad(lambda x: np.sum(x ** 2))(np.zeros(0)).shape == (0,)
    assert numfn.grad(lambda x: np.sum(np.prod(x, axis=1)))(np.zeros((3, 0))).shape == (3, 0)
    assert numfn.jacrev(lambda x: x * 2)(np.ones(0)).shape == (0, 0)
    x = np.arange(24.0).reshape(4, 6)[::-1, ::2]   # a negative-stride view argument
    np.testing.assert_allclose(numfn.grad(lambda x: np.sum(x[::-2, 1:] ** 2))(x),
                               np.where(np.arange(4)[:, None] % 2 == 1, 2 * x, 0) * (np.arange(3) >= 1))


def test_value_and_grad_and_has_aux():
    v, g = numfn.value_and_grad(f_scalar)(X)
    np.testing.assert_allclose(v, f_scalar(X), rtol=1e-14)
    np.testing.assert_allclose(g, df_scalar(X), rtol=1e-13)
    g, aux = numfn.grad(lambda x: (np.sum(x ** 2), {"mean": x.mean()}), has_aux=True)(X)
    np.testing.assert_allclose(g, 2 * X)
    np.testing.assert_allclose(aux["mean"], X.mean())
    (v, aux), g = numfn.value_and_grad(lambda x: (np.sum(x ** 2), x * 2), has_aux=True)(X)
    np.testing.assert_allclose(v, np.sum(X ** 2))
    np.testing.assert_allclose(aux, 2 * X)


def test_pytrees_and_argnums():
    params = {"w": np.arange(6.0).reshape(2, 3) / 6, "b": np.array([0.5, -0.5])}
    x = np.linspace(-1, 1, 3)

    def loss(p, x, scale):
        return scale * np.sum(np.tanh(p["w"] @ x + p["b"]) ** 2)
    g = numfn.grad(loss)(params, x, 2.0)
    assert set(g) == {"w", "b"} and g["w"].shape == (2, 3)
    h = np.tanh(params["w"] @ x + params["b"])
    db = 2.0 * 2 * h * (1 - h ** 2)
    np.testing.assert_allclose(g["b"], db, rtol=1e-13)
    np.testing.assert_allclose(g["w"], np.outer(db, x), rtol=1e-13)
    gp, gx = numfn.grad(loss, argnums=(0, 1))(params, x, 2.0)
    np.testing.assert_allclose(gx, params["w"].T @ db, rtol=1e-13)
    np.testing.assert_allclose(gp["b"], db, rtol=1e-13)
    numfn.check_grads(lambda w, b: loss({"w": w, "b": b}, x, 2.0), (params["w"], params["b"]), order=2)


def test_jvp_and_vjp():
    t = np.linspace(1, 2, 5)
    out, tan = numfn.jvp(f_scalar, (X,), (t,))
    np.testing.assert_allclose(out, f_scalar(X), rtol=1e-14)
    np.testing.assert_allclose(tan, df_scalar(X) @ t, rtol=1e-13)
    out, vjp_fn = numfn.vjp(lambda x, y: np.sin(x) * y, X, 2.0)
    np.testing.assert_allclose(out, np.sin(X) * 2)
    gx, gy = vjp_fn(np.ones(5))
    np.testing.assert_allclose(gx, 2 * np.cos(X), rtol=1e-14)
    np.testing.assert_allclose(gy, np.sum(np.sin(X)), rtol=1e-14)
    # an integer primal has no tangent; an integer output has a zero one
    out, tan = numfn.jvp(lambda x, n: (x * n, n * 2), (X, np.int64(3)), (t, np.int64(0)))
    np.testing.assert_allclose(tan[0], 3 * t)
    assert tan[1] == 0


def test_jacobians_and_hessian():
    def f(x):
        return np.sin(x) * x[0] + x[::-1]
    J = np.diag(np.cos(X) * X[0]) + np.eye(5)[::-1]
    J[:, 0] += np.sin(X)
    np.testing.assert_allclose(numfn.jacfwd(f)(X), J, rtol=1e-14)
    np.testing.assert_allclose(numfn.jacrev(f)(X), J, rtol=1e-14)
    x2 = X.reshape(5, 1)
    assert numfn.jacrev(lambda x: x.T * 2)(x2).shape == (1, 5, 5, 1)
    H = numfn.hessian(lambda x: np.sum(x ** 3) * x[1])(X)
    want = np.diag(6 * X * X[1])
    want[1, :] += 3 * X ** 2
    want[:, 1] += 3 * X ** 2
    np.testing.assert_allclose(H, want, rtol=1e-13)


# ---------------------------------------------------------------------------------------------------------------
# compositions

def test_grad_of_grad():
    d2 = numfn.grad(numfn.grad(lambda x: np.sin(x) * x))
    for x in (0.0, 0.7, -2.0):
        np.testing.assert_allclose(d2(x), 2 * np.cos(x) - x * np.sin(x), rtol=1e-14, atol=1e-15)
    d3 = numfn.grad(numfn.grad(numfn.grad(lambda x: x ** 4)))
    np.testing.assert_allclose(d3(1.5), 24 * 1.5, rtol=1e-14)


def test_jit_of_grad_is_one_program():
    g = numfn.jit(numfn.grad(f_scalar))
    np.testing.assert_allclose(g(X), df_scalar(X), rtol=1e-13)
    nf = g.specialize(X)
    ops = {u.op for u in nf.function_graph.toposort()}
    assert Ops.PARAM in ops and not any(u.op is Ops.PARAM and not isinstance(u.arg[0], int)
                                        for u in nf.function_graph.toposort())   # no tangent placeholder is left

    @numfn.jit
    def step(x, lr):
        return x - lr * numfn.grad(lambda y: np.sum((y - 1) ** 2))(x)
    np.testing.assert_allclose(step(X, 0.25), X - 0.5 * (X - 1), rtol=1e-15)


def test_vmap_of_grad_and_grad_of_vmap():
    xs = np.linspace(0.1, 2, 12).reshape(4, 3)
    per = numfn.vmap(numfn.grad(lambda x: np.sum(x ** 3) * x[0]))(xs)
    want = 3 * xs ** 2 * xs[:, :1]
    want[:, 0] += np.sum(xs ** 3, axis=1)
    np.testing.assert_allclose(per, want, rtol=1e-14)
    g = numfn.grad(lambda x: np.sum(numfn.vmap(lambda r: np.sum(np.sin(r)))(x)))(xs)
    np.testing.assert_allclose(g, np.cos(xs), rtol=1e-14)


def test_jit_of_jacrev():
    J = numfn.jit(numfn.jacrev(lambda x: np.tanh(x) * x.sum()))(X)
    want = np.diag(1 - np.tanh(X) ** 2) * X.sum() + np.tanh(X)[:, None]
    np.testing.assert_allclose(J, want, rtol=1e-13)


def test_derivative_inside_a_loop_of_the_caller():
    @numfn.jit
    def descend(x):
        for _ in range(20):
            x = x - 0.1 * numfn.grad(lambda y: np.sum((y - 3.0) ** 2))(x)
        return x
    np.testing.assert_allclose(descend(np.zeros(3)), 3 - 3 * 0.8 ** 20, rtol=1e-13)


# ---------------------------------------------------------------------------------------------------------------
# errors

def test_integer_inputs_are_refused():
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs.*int64"):
        numfn.grad(lambda x: np.sum(x * 1.5))(np.arange(3))
    with pytest.raises(TypeError, match="bool"):
        numfn.grad(lambda x, y: np.sum(x * y), argnums=1)(X, np.ones(5, bool))
    # an integer argument that is not differentiated is fine
    np.testing.assert_allclose(numfn.grad(lambda x, n: np.sum(x ** n))(X, 3), 3 * X ** 2, rtol=1e-14)


def test_non_scalar_and_integer_outputs_are_refused():
    with pytest.raises(TypeError, match=r"scalar-output functions. Output had shape: \(5,\)"):
        numfn.grad(np.sin)(X)
    with pytest.raises(TypeError, match="real-valued outputs"):
        numfn.grad(lambda x: np.argmax(x))(X)


def test_argmax_through_grad_has_zero_derivative_paths():
    # the index argmax computes has no tangent; the value it selects has
    g = numfn.grad(lambda x: x[np.argmax(x)] * 2)(np.array([1.0, 5.0, 2.0]))
    np.testing.assert_array_equal(g, [0, 2, 0])


def _stencil_steps(x):   # a time loop with in-place stencil updates (a native loop: 50 steps are not unrolled)
    y = x.copy()
    for _ in range(50):
        y[1:-1] += 0.1 * (y[2:] - 2 * y[1:-1] + y[:-2]) + 0.01 * np.sin(y[1:-1])
    return y


def _grow_until(x):   # a while loop whose trip count depends on the values
    while np.sum(x) < 100:
        x = x * 1.5
    return x


def _branch(x):
    if np.sum(x) > 3:
        return np.sin(x) * 2
    return x ** 2


@pytest.mark.parametrize("fn", [_stencil_steps, _grow_until, _branch], ids=["for", "while", "if"])
def test_forward_mode_through_loops_and_branches(fn):
    numfn.check_grads(fn, (X,), modes=("fwd",))
    numfn.check_grads(fn, (X * 3,), modes=("fwd",))


def test_jacfwd_through_a_loop_and_vmap_of_it():
    J = numfn.jacfwd(lambda x: _stencil_steps(x) ** 2)(X)
    eps = 1e-6
    numeric = np.stack([(_stencil_steps(X + eps * e) ** 2 - _stencil_steps(X - eps * e) ** 2) / (2 * eps)
                        for e in np.eye(5)], axis=1)
    np.testing.assert_allclose(J, numeric, rtol=1e-7, atol=1e-9)
    Js = numfn.vmap(numfn.jacfwd(_grow_until))(np.stack([X, 2 * X]))
    # each example its own trip count: 3.5 * 1.5**9 and 7 * 1.5**7 pass 100
    np.testing.assert_allclose(Js[0], np.eye(5) * 1.5 ** 9, rtol=1e-14)
    np.testing.assert_allclose(Js[1], np.eye(5) * 1.5 ** 7, rtol=1e-14)


def _two_branches(x):
    if np.sum(x) > 3:
        y = np.sin(x) * x[0]
    else:
        y = x ** 2 + x[1:2]
    return y


@pytest.mark.parametrize("scale", [1.0, 3.0], ids=["else", "then"])
def test_reverse_mode_through_branches(scale):
    # the branch's tangents come from a branch region of their own, which reverse mode transposes (each side's
    # transposed body in a branch region chosen by the same condition)
    numfn.check_grads(_two_branches, (X * scale,))
    # (second order on one side only: each order compiles the branch's derivatives again)
    numfn.check_grads(lambda x: np.sum(numfn.jit(_two_branches)(x) ** 2), (X * scale,), order=2 if scale == 1 else 1)
    y = numfn.jit(_two_branches)(X * scale)
    np.testing.assert_allclose(numfn.grad(lambda x: np.sum(numfn.jit(_two_branches)(x) ** 2))(X * scale),
                               numfn.jacfwd(_two_branches)(X * scale).T @ (2 * y), rtol=1e-13)


def test_reverse_mode_through_native_and_unrolled_loops():
    # a jitted function's loop is native (reverse mode: numfn/autodiff/reverse_loops.py, tested in
    # tests/test_autodiff_loops.py); a loop in a function the traced one calls runs in Python, unrolled
    g = numfn.grad(lambda x: np.sum(numfn.jit(_stencil_steps)(x)))(X)
    np.testing.assert_allclose(g, numfn.jacfwd(_stencil_steps)(X).sum(axis=0), rtol=1e-13)
    g = numfn.grad(lambda x: np.sum(_stencil_few_steps(x)))(X)
    np.testing.assert_allclose(g, numfn.jacfwd(_stencil_few_steps)(X).sum(axis=0), rtol=1e-13)


def _stencil_few_steps(x):   # called from a lambda (not converted): the loop runs in Python, unrolled
    y = x.copy()
    for _ in range(6):
        y[1:-1] += 0.1 * (y[2:] - 2 * y[1:-1] + y[:-2]) + 0.01 * np.sin(y[1:-1])
    return y


def test_writing_into_arguments_is_refused():
    def f(x):
        x[0] = 1.0
        return np.sum(x)
    with pytest.raises(numfn.NumfnError, match="writes into its arguments"):
        numfn.grad(f)(X.copy())


def test_check_grads_finds_a_wrong_rule(monkeypatch):
    from numfn.ir.primitives import register
    wrong = lambda node, primals, tangents: tangents[0]   # noqa: E731  (as if d sin = dx)
    right = PRIMITIVES[Ops.SIN].jvp
    register(Ops.SIN, "jvp", wrong)
    try:
        with pytest.raises(AssertionError, match="jvp"):
            numfn.check_grads(lambda x: np.sin(x) * 3.0, (X,), modes=("fwd",))
    finally:
        register(Ops.SIN, "jvp", right)


# ---------------------------------------------------------------------------------------------------------------
# completeness of the rules in the table (compile-free)

@pytest.mark.nocompile
def test_every_differentiable_primitive_has_its_rules():
    differentiable = {op for op, p in PRIMITIVES.items()
                      if p.kind not in (Kind.LOOP_LEVEL, Kind.SOURCE) and not p.machine and op not in NO_TANGENT
                      and op not in (Ops.SINK, Ops.CALL)}
    missing = {op.name for op in differentiable if PRIMITIVES[op].jvp is None and op not in NOT_DIFFERENTIABLE}
    assert missing == set()
    assert all(PRIMITIVES[op].jvp is rule for op, rule in JVP_RULES.items())
    # every op a jvp rule emits on tangents is linear in them and has a transpose rule
    linear = {Ops.ADD, Ops.SUB, Ops.NEG, Ops.MUL, Ops.FDIV, Ops.WHERE, Ops.CAST, Ops.CONTIGUOUS, Ops.REDUCE_AXIS,
              Ops.SCAN, Ops.GATHER, Ops.SCATTER, Ops.EXTERN} | {op for op, p in PRIMITIVES.items()
                                                                 if p.kind is Kind.MOVEMENT}
    assert {op for op in linear if PRIMITIVES[op].transpose is None} == set()
    assert all(PRIMITIVES[op].transpose is rule for op, rule in TRANSPOSE_RULES.items())
    assert all(reason for reason in NOT_DIFFERENTIABLE.values())
