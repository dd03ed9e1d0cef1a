"""numfn.custom_jvp / numfn.custom_vjp (numfn/autodiff/custom.py): user-defined rules used by jvp, grad, jacrev and
hessian, inside jit and vmap, against NumPy's closed forms; the function itself outside a trace; JAX's errors."""
from __future__ import annotations

import numpy as np
import pytest

import numfn

X = np.array([-800.0, -3.0, -0.5, 0.0, 1.5, 800.0])


def stable_sigmoid(x):   # 1 / (1 + exp(-x)), never inf / inf, smooth at 0
    return 0.5 * (1 + np.tanh(0.5 * x))


@numfn.custom_jvp
def softplus(x):
    return np.logaddexp(x, 0.0)


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t * stable_sigmoid(x)


def naive_softplus(x):
    return np.log1p(np.exp(x))


def test_custom_jvp_rule_is_used_by_every_mode():
    with np.errstate(over="ignore", invalid="ignore"):
        naive = numfn.grad(lambda x: np.sum(naive_softplus(x)))(X)
    assert np.isnan(naive[-1])   # exp(800) / (1 + exp(800)): what the rule avoids
    want = stable_sigmoid(X)
    np.testing.assert_allclose(numfn.grad(lambda x: np.sum(softplus(x)))(X), want, rtol=1e-14)
    out, t = numfn.jvp(softplus, (X,), (np.full(6, 2.0),))
    np.testing.assert_allclose(out, np.logaddexp(X, 0.0), rtol=1e-14)
    np.testing.assert_allclose(t, 2 * want, rtol=1e-14)
    np.testing.assert_allclose(numfn.jacrev(softplus)(X), np.diag(want), rtol=1e-14)
    step = numfn.jit(lambda x: x - 0.1 * numfn.grad(lambda y: np.sum(softplus(y) ** 2))(x))
    np.testing.assert_allclose(step(X[1:5]), X[1:5] - 0.2 * np.logaddexp(X[1:5], 0.0) * want[1:5], rtol=1e-14)
    per_row = numfn.vmap(numfn.grad(lambda x: np.sum(softplus(x))))(np.stack([X, -X]))
    np.testing.assert_allclose(per_row, np.stack([want, stable_sigmoid(-X)]), rtol=1e-14)


def test_custom_jvp_rule_differentiated_again():
    x = X[1:5]
    s = stable_sigmoid(x)
    np.testing.assert_allclose(numfn.hessian(lambda x: np.sum(softplus(x)))(x), np.diag(s * (1 - s)), rtol=1e-12)
    numfn.check_grads(softplus, (x,), order=2)


def test_outside_a_trace_it_is_the_function():
    np.testing.assert_array_equal(softplus(X), np.logaddexp(X, 0.0))
    assert softplus.__name__ == "softplus"


@numfn.custom_vjp
def clip_gradient(x, lo, hi):
    return x


def clip_fwd(x, lo, hi):
    return x, (lo, hi)


def clip_bwd(residuals, g):
    lo, hi = residuals
    return (np.clip(g, lo, hi), None, None)


clip_gradient.defvjp(clip_fwd, clip_bwd)


def test_custom_vjp_rule_in_reverse_mode():
    x = np.array([1.0, -2.0, 0.1])
    g = numfn.grad(lambda x: np.sum(clip_gradient(x, -0.5, 0.5) * 3 * x))(x)
    np.testing.assert_allclose(g, np.clip(3 * x, -0.5, 0.5) + 3 * x, rtol=1e-14)
    jit_g = numfn.jit(lambda x: numfn.grad(lambda y: np.sum(clip_gradient(y, -1.0, 1.0) ** 2))(x))
    np.testing.assert_allclose(jit_g(x), np.clip(2 * x, -1, 1), rtol=1e-14)


def test_custom_vjp_in_forward_mode_is_a_type_error():
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        numfn.jvp(lambda x: clip_gradient(x, -0.5, 0.5), (np.ones(2),), (np.ones(2),))


# an implicit function: sqrt(a) by Newton's iteration (a native loop), differentiated by the implicit function
# theorem (y^2 = a: dy = da / (2 y)) rather than through the iterations
@numfn.custom_vjp
def newton_sqrt(a):
    return numfn.fori_loop(0, 3, lambda i, y: 0.5 * (y + a / y), a + 1.0)   # not converged: the rule shows


def newton_fwd(a):
    y = newton_sqrt(a)
    return y, y


def newton_bwd(y, g):
    return (g / (2 * y),)


newton_sqrt.defvjp(newton_fwd, newton_bwd)


def test_implicit_function_with_custom_vjp_and_tree_arguments():
    def numpy_newton(a):
        y = a + 1.0
        for _ in range(3): y = 0.5 * (y + a / y)
        return y
    a = np.array([0.25, 2.0, 9.0])
    y = numpy_newton(a)
    g = numfn.grad(lambda a: np.sum(newton_sqrt(a)))(a)
    np.testing.assert_allclose(g, 0.5 / y, rtol=1e-14)
    through_iterations = (numpy_newton(a + 1e-6) - numpy_newton(a - 1e-6)) / 2e-6
    assert not np.allclose(g, through_iterations, rtol=1e-3)

    @numfn.custom_vjp
    def weighted(p, x):
        return p["w"] * x + p["b"]

    def fwd(p, x): return weighted(p, x), (p["w"], x)
    def bwd(res, g): return ({"w": g * res[1], "b": g}, g * res[0])   # noqa: E704
    weighted.defvjp(fwd, bwd)
    p, x = {"w": np.array([2.0, 3.0]), "b": np.array([0.5, -1.0])}, np.array([1.0, 4.0])
    gp, gx = numfn.grad(lambda p, x: np.sum(weighted(p, x) ** 2), argnums=(0, 1))(p, x)
    r = 2 * (p["w"] * x + p["b"])
    np.testing.assert_allclose(gp["w"], r * x)
    np.testing.assert_allclose(gp["b"], r)
    np.testing.assert_allclose(gx, r * p["w"])


def test_derivative_of_a_vmapped_custom_function_is_refused():
    # (the rules are for one example; vmap of the derivative uses them: test_custom_jvp_rule_is_used_by_every_mode)
    with pytest.raises(NotImplementedError, match="vmapped custom_jvp/custom_vjp"):
        numfn.grad(lambda x: np.sum(numfn.vmap(lambda r: clip_gradient(r, -1.0, 1.0))(x) * 5.0))(np.ones((2, 3)))


def test_errors():
    @numfn.custom_jvp
    def no_rule(x):
        return x * 2
    with pytest.raises(TypeError, match="no jvp rule"):
        numfn.grad(lambda x: np.sum(no_rule(x)))(np.ones(2))

    def closes_over(x, y):
        @numfn.custom_jvp
        def inner(z):
            return z * x

        @inner.defjvp
        def inner_jvp(p, t):
            return inner(*p), t[0] * x
        return np.sum(inner(y)) + np.sum(inner(np.full(2, 3.0)))
    with pytest.raises(NotImplementedError, match="closes over a value being differentiated"):
        numfn.grad(closes_over)(np.ones(2), np.ones(2))


def test_custom_vjp_with_no_residuals():
    """fwd may return None as its residuals (JAX's clip_gradient example): no value is carried to bwd."""
    @numfn.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (np.clip(g, -1.0, 1.0),))
    g = numfn.grad(lambda x: (3.0 * clip_gradient(x)).sum())(np.ones(3))
    np.testing.assert_allclose(g, np.ones(3))
