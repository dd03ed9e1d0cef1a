"""Reverse mode through native loops (numfn/autodiff/reverse_loops.py): grad, vjp and jacrev of functions whose
`for` loops over ranges, fori_loop and scan compile to native loops (more than UNROLL iterations), against
derivatives written out by hand in NumPy, JAX's gradients of functional rewrites (the heat equation, an RK4
rollout), forward mode (jacfwd) and finite differences (check_grads); with
branches, break, in-place writes and nested loops inside; derivatives of derivatives; the errors for `while`
loops and unbounded trip counts."""
from __future__ import annotations

import numpy as np
import pytest

import numfn
from numfn.ir.uop import Ops
from numfn.ir.walk import toposort

RNG = np.random.default_rng(30)


def native_loops(transformed, *args) -> int:
    """How many loops the compiled derivative runs natively (so a test cannot pass by unrolling)."""
    def count(roots) -> int:
        loops = [u for u in toposort(roots) if u.op is Ops.LOOP]
        return sum((u.arg.kind == "while") + count([*u.arg.bodies]) for u in loops)
    return count([transformed.specialize(*args).function_graph])


# ---------------------------------------------------------------------------------------------------------------
# the heat equation: in-place stencil updates, 50 steps

K, STEPS = 0.2, 50


def heat(u):
    u = u.copy()
    for _ in range(STEPS):
        u[1:-1] += K * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def heat_loss(u, k):
    u = u.copy()
    for _ in range(STEPS):
        u[1:-1] += k * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def heat_matrix(n: int, k: float) -> np.ndarray:
    """One step of the stencil as a matrix (the ends are fixed)."""
    m = np.eye(n)
    for i in range(1, n - 1):
        m[i, i - 1:i + 2] += k * np.array([1.0, -2.0, 1.0])
    return m


U0 = np.sin(np.linspace(0, np.pi, 12)) + np.linspace(0, 1, 12) ** 2


def test_heat_jacobian_by_reverse_mode_is_the_matrix_power():
    jac = numfn.jacrev(heat)
    got = jac(U0)
    want = np.linalg.matrix_power(heat_matrix(12, K), STEPS)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, numfn.jacfwd(heat)(U0), rtol=1e-12, atol=1e-14)
    assert native_loops(jac, U0) >= 1


# jax.grad (jax 0.10.2, x64) of the functional rewrite, in a side environment:
#     def heat_loss(u, k):
#         for _ in range(STEPS):
#             u = u.at[1:-1].add(k * (u[2:] - 2 * u[1:-1] + u[:-2]))
#         return jnp.sum(u ** 2)
#     jax.grad(heat_loss, argnums=(0, 1))(jnp.asarray(U0), K)
HEAT_JAX_GRAD_U = np.array([3.0053648054772517, 0.22662957536894346, 0.4377687767709246, 0.6183112409737697,
                            0.7541364564481859, 0.8330693944865254, 0.8461948476759005, 0.7893460059300946,
                            0.6644268881895828, 0.48014935289426675, 0.2518189478511925, 7.653301103393817])
HEAT_JAX_GRAD_K = -14.256626115141481


def test_heat_gradient_in_the_state_and_the_coefficient():
    gu, gk = numfn.grad(heat_loss, argnums=(0, 1))(U0, K)
    np.testing.assert_allclose(gu, HEAT_JAX_GRAD_U, rtol=1e-12)
    np.testing.assert_allclose(gk, HEAT_JAX_GRAD_K, rtol=1e-12)
    m = heat_matrix(12, K)
    uT = np.linalg.matrix_power(m, STEPS) @ U0
    np.testing.assert_allclose(gu, 2 * np.linalg.matrix_power(m, STEPS).T @ uT, rtol=1e-12)
    # d/dk by central differences of NumPy's own loop (a captured scalar: its cotangent accumulates over steps)
    def numpy_loss(k):
        return float(np.sum((np.linalg.matrix_power(heat_matrix(12, k), STEPS) @ U0) ** 2))
    eps = 1e-6
    np.testing.assert_allclose(gk, (numpy_loss(K + eps) - numpy_loss(K - eps)) / (2 * eps), rtol=1e-7)
    numfn.check_grads(heat_loss, (U0, K), modes=("rev",))


def test_heat_gradient_on_both_backends(backend):
    step = numfn.jit(lambda u, k: numfn.grad(heat_loss)(u, k), backend=backend)
    m = np.linalg.matrix_power(heat_matrix(12, K), STEPS)
    np.testing.assert_allclose(step(U0, K), 2 * m.T @ (m @ U0), rtol=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# an RK4 rollout of a damped pendulum (200 steps, four stages a step), with respect to its parameters and its
# initial state

def rk4_final_energy(theta, y0):
    damping, stiffness = theta[0], theta[1]
    y, dt = y0, 0.01
    for _ in range(200):
        def rate(s):
            return np.stack([s[1], -stiffness * np.sin(s[0]) - damping * s[1]])
        k1 = rate(y)
        k2 = rate(y + 0.5 * dt * k1)
        k3 = rate(y + 0.5 * dt * k2)
        k4 = rate(y + dt * k3)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return 0.5 * y[1] ** 2 + stiffness * (1.0 - np.cos(y[0]))


THETA, Y0 = np.array([0.1, 2.0]), np.array([1.0, 0.0])
# jax.grad (jax 0.10.2, x64) of the same code with jnp for np (functional already), argnums=(0, 1)
RK4_JAX_GRAD_THETA = np.array([-1.6428710649436435, 0.3939107000837761])
RK4_JAX_GRAD_Y0 = np.array([1.3430745126213826, 0.01746101653694826])


def test_rk4_rollout_gradient_against_jax_and_finite_differences():
    grad = numfn.grad(rk4_final_energy, argnums=(0, 1))
    g_theta, g_y0 = grad(THETA, Y0)
    np.testing.assert_allclose(g_theta, RK4_JAX_GRAD_THETA, rtol=1e-11)
    np.testing.assert_allclose(g_y0, RK4_JAX_GRAD_Y0, rtol=1e-11)
    # central differences of NumPy running the same function
    eps = 1e-6
    for x, g, other in ((THETA, g_theta, lambda v: rk4_final_energy(v, Y0)),
                        (Y0, g_y0, lambda v: rk4_final_energy(THETA, v))):
        fd = [(other(x + eps * e) - other(x - eps * e)) / (2 * eps) for e in np.eye(2)]
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
    assert native_loops(grad, THETA, Y0) >= 2   # the rollout forward and backward, not 200 unrolled steps


# ---------------------------------------------------------------------------------------------------------------
# an RNN: h = tanh(W @ h + x[t]), against backpropagation through time written in NumPy

def rnn_loss(W, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h ** 2)


def rnn_grads_by_hand(W, xs, h0):
    hs = [h0]
    for t in range(len(xs)): hs.append(np.tanh(W @ hs[-1] + xs[t]))
    gW, gx, gh = np.zeros_like(W), np.zeros_like(xs), 2 * hs[-1]
    for t in reversed(range(len(xs))):
        pre = gh * (1 - hs[t + 1] ** 2)
        gW += np.outer(pre, hs[t])
        gx[t] = pre
        gh = W.T @ pre
    return gW, gx, gh


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rnn_gradient_against_backpropagation_through_time(dtype):
    W = (RNG.standard_normal((4, 4)) * 0.5).astype(dtype)
    xs, h0 = RNG.standard_normal((7, 4)).astype(dtype), RNG.standard_normal(4).astype(dtype)
    got = numfn.grad(rnn_loss, argnums=(0, 1, 2))(W, xs, h0)
    want = rnn_grads_by_hand(*(a.astype(np.float64) for a in (W, xs, h0)))
    tol = 1e-12 if dtype == np.float64 else 2e-5
    for g, w in zip(got, want):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_rnn_check_grads_and_per_example_gradients():
    W, xs, h0 = RNG.standard_normal((3, 3)) * 0.5, RNG.standard_normal((6, 3)), RNG.standard_normal(3)
    numfn.check_grads(rnn_loss, (W, xs, h0), modes=("rev",))
    batch = RNG.standard_normal((4, 6, 3))
    per_example = numfn.vmap(numfn.grad(rnn_loss), in_axes=(None, 0, None))(W, batch, h0)
    for b in range(4):
        np.testing.assert_allclose(per_example[b], rnn_grads_by_hand(W, batch[b], h0)[0], rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------------------------------------------
# products and accumulations, recurrences written into a buffer, break

def running_products_sum(x):
    p, acc = 1.0, 0.0
    for i in range(x.shape[0]):
        p = p * x[i]
        acc = acc + p
    return acc


def test_product_accumulation_loop_against_analytic():
    x = RNG.uniform(0.5, 1.5, 9)
    got = numfn.grad(running_products_sum)(x)
    prods = np.cumprod(x)
    want = np.array([np.sum(prods[k:]) / x[k] for k in range(9)])   # d/dx_k of sum_i prod_{j<=i} x_j
    np.testing.assert_allclose(got, want, rtol=1e-13)


def recurrence(x, a):
    y = np.zeros_like(x)
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = y[i - 1] * a + x[i]
    return y


def test_recurrence_into_a_buffer_with_a_loop_dependent_window():
    x, a = RNG.standard_normal(8), 0.7
    jac = numfn.jacrev(recurrence)(x, a)
    want = np.array([[a ** (i - j) if j <= i else 0.0 for j in range(8)] for i in range(8)])
    np.testing.assert_allclose(jac, want, rtol=1e-13, atol=1e-15)
    numfn.check_grads(recurrence, (x, a), modes=("rev",))


def grow_until(x):
    for _ in range(10):
        x = x * 1.3 + 0.1
        if np.sum(x) > 5.0:
            break
    return x


def test_loop_with_break():
    x = np.array([0.1, 0.2])
    steps = 0
    y = x.copy()
    while steps < 10:   # NumPy: how many steps run
        y, steps = y * 1.3 + 0.1, steps + 1
        if np.sum(y) > 5.0: break
    np.testing.assert_allclose(numfn.jacrev(grow_until)(x), 1.3 ** steps * np.eye(2), rtol=1e-13)


# ---------------------------------------------------------------------------------------------------------------
# branches and loops inside, fori_loop, scan

def branchy(v):
    for _ in range(6):
        if np.sum(v) > 0:
            v = v * 0.9 - 0.3
        else:
            v = np.sin(v) + 0.5
    return v


def nested(a):
    s = a.copy()
    for _ in range(5):
        for _ in range(6):
            s = s * 0.5 + np.cos(s) * a
    return s


@pytest.mark.parametrize("fn", [branchy, nested], ids=["branch_inside", "nested"])
def test_reverse_mode_matches_forward_mode(fn):
    x = RNG.standard_normal(3)
    np.testing.assert_allclose(numfn.jacrev(fn)(x), numfn.jacfwd(fn)(x), rtol=1e-12, atol=1e-14)
    numfn.check_grads(fn, (x,), modes=("rev",))


def over_rows(X, w):   # `for row in X`: a native loop over the first axis
    acc = np.zeros(3)
    for row in X:
        acc = acc * 0.5 + np.tanh(row * w)
    return np.sum(acc ** 2)


def running_argmax(x):   # integer state (no tangent) chosen by a branch, read after the loop
    best = 0
    for i in range(x.shape[0]):
        if x[i] > x[best]:
            best = i
        x = x * 0.9 + 0.01
    return x[best] * np.sum(x)


def test_loops_over_rows_and_with_integer_state():
    numfn.check_grads(over_rows, (RNG.standard_normal((7, 3)), RNG.standard_normal(3)), modes=("rev",))
    numfn.check_grads(running_argmax, (RNG.standard_normal(6),), modes=("rev",))


def test_nested_loops_stay_native():
    x = RNG.standard_normal(3)
    # the recording loop and the inner loop in it; the backward loop and in its body the inner loop's recording and
    # backward loops
    assert native_loops(numfn.jacrev(nested), x) == 5


def test_fori_loop_and_scan():
    def fori(x):
        return numfn.fori_loop(0, 8, lambda i, v: np.sin(v) * v + 0.1 * i, x)

    def scanned(w, xs):
        c, ys = numfn.scan(lambda c, x: (np.tanh(c * w + x), c * x), np.zeros(3), xs)
        return np.sum(c) + np.sum(ys ** 2)
    x = RNG.standard_normal(3)
    np.testing.assert_allclose(numfn.jacrev(fori)(x), numfn.jacfwd(fori)(x), rtol=1e-12, atol=1e-14)
    numfn.check_grads(scanned, (RNG.standard_normal(3), RNG.standard_normal((6, 3))), modes=("rev",))


def test_run_time_trip_count_with_a_static_bound():
    def f(x, n):   # at most 10 iterations: the stacks hold 10
        return np.sum(numfn.fori_loop(0, np.minimum(n, 10), lambda i, v: np.sin(v) + v * 0.5, x))

    def numpy_f(x, n):
        for _ in range(min(n, 10)): x = np.sin(x) + x * 0.5
        return np.sum(x)
    x, eps = RNG.standard_normal(3), 1e-6
    grad = numfn.grad(f)
    for n in (0, 3, 12):
        want = [(numpy_f(x + eps * e, n) - numpy_f(x - eps * e, n)) / (2 * eps) for e in np.eye(3)]
        np.testing.assert_allclose(grad(x, n), want, rtol=1e-7, atol=1e-8)


# ---------------------------------------------------------------------------------------------------------------
# derivatives of derivatives

def sin_steps(x):
    for _ in range(6):
        x = np.sin(x) * x + 0.1
    return np.sum(x ** 2)


def test_hessian_and_grad_of_grad_through_a_loop():
    x, eps = RNG.standard_normal(3), 1e-6
    g = numfn.grad(sin_steps)
    numeric = np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(numfn.hessian(sin_steps)(x), numeric, rtol=1e-7, atol=1e-9)   # forward over reverse
    gg = numfn.grad(lambda x: np.sum(numfn.grad(sin_steps)(x) ** 2))(x)                   # reverse over reverse
    np.testing.assert_allclose(gg, 2 * numeric.T @ g(x), rtol=1e-7, atol=1e-9)


# ---------------------------------------------------------------------------------------------------------------
# loops without a bound on their trip count, and the recompute policy

def test_while_loops_in_reverse_mode_recompute_their_carries():
    def grow(x):
        return numfn.while_loop(lambda v: np.sum(v) < 10.0, lambda v: v * 1.5, x)
    np.testing.assert_allclose(numfn.jacrev(grow)(np.ones(3)), 1.5 ** 3 * np.eye(3), rtol=1e-14)   # 3 iterations

    def grow_with(x, a):
        return np.sum(numfn.while_loop(lambda v: np.sum(v) < 10.0, lambda v: v * 1.2 + a * np.sin(v) ** 2, x))

    def native_while(x):
        while np.sum(x) < 10.0:
            x = x * 1.2 + 0.1 * np.sin(x)
        return x
    x = np.array([0.3, 0.5, 0.2])
    numfn.check_grads(grow_with, (x, 0.7), modes=("rev",))
    np.testing.assert_allclose(numfn.jacrev(native_while)(x), numfn.jacfwd(native_while)(x), rtol=1e-12)


def test_recomputed_carries_on_both_backends(backend):
    def grow(x, a):
        while np.sum(x) < 10.0:
            x = x * 1.2 + a * np.sin(x) ** 2
        return np.sum(x ** 2)
    x = np.array([0.3, 0.5, 0.2])
    got = numfn.jit(lambda x, a: numfn.grad(grow, argnums=(0, 1))(x, a), backend=backend)(x, 0.7)
    forward = [numfn.jacfwd(grow, argnums=k)(x, 0.7) for k in (0, 1)]   # forward mode: no replay
    np.testing.assert_allclose(got[0], forward[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], forward[1], rtol=1e-12)


def test_unbounded_run_time_trip_count():
    def f(x, n):
        return np.sum(numfn.fori_loop(0, n, lambda i, v: np.sin(v) + 0.5 * v, x))

    def numpy_f(x, n):
        for _ in range(n): x = np.sin(x) + 0.5 * x
        return np.sum(x)
    x, eps, grad = RNG.standard_normal(3), 1e-6, numfn.grad(f)
    for n in (0, 1, 6):
        want = [(numpy_f(x + eps * e, n) - numpy_f(x - eps * e, n)) / (2 * eps) for e in np.eye(3)]
        np.testing.assert_allclose(grad(x, n), want, rtol=1e-7, atol=1e-8)


def test_recompute_policy_gives_the_stored_gradient(monkeypatch):
    import numfn.autodiff.reverse_loops as reverse_loops
    stored = numfn.grad(heat_loss, argnums=(0, 1))(U0, K)
    monkeypatch.setattr(reverse_loops, "MAX_STACK_BYTES", 0)

    def heat_loss_again(u, k):   # (a new function: traced again under the policy)
        u = u.copy()
        for _ in range(STEPS):
            u[1:-1] += k * (u[2:] - 2 * u[1:-1] + u[:-2])
        return np.sum(u ** 2)
    grad = numfn.grad(heat_loss_again, argnums=(0, 1))
    recomputed = grad(U0, K)
    assert native_loops(grad, U0, K) == 3   # the counting loop, the backward loop and the replay in its body
    np.testing.assert_allclose(recomputed[0], stored[0], rtol=1e-14)
    np.testing.assert_allclose(recomputed[1], stored[1], rtol=1e-14)
