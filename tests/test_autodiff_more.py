"""What numfn/autodiff does beyond the core rules: its side tables die with the traces that made them; custom_jvp
and custom_vjp with JAX's nondiff_argnums; argnums tuples in every derivative function; checkpointed reverse mode
through loops (numfn/autodiff/reverse_loops.py) against the stored mode and finite differences; an LU
factorization written with loops and slices against finite differences and JAX's gradient of a functional rewrite."""
from __future__ import annotations

import functools
import gc

import numpy as np
import pytest

import numfn
from numfn.autodiff.custom import CUSTOM_CALLS, VJP_MARKERS
from numfn.autodiff.reverse_loops import TANGENT_LOOPS

RNG = np.random.default_rng(40)


# ---------------------------------------------------------------------------------------------------------------
# side tables: weak, keyed by the regions they describe

@numfn.custom_vjp
def doubled_gradient(x):
    return x


doubled_gradient.defvjp(lambda x: (x, None), lambda _, g: (2.0 * g,))


@numfn.custom_jvp
def square(x):
    return x * x


square.defjvp(lambda p, t: (square(p[0]), 2.0 * p[0] * t[0]))


def _distinct_function(k: int):
    def f(x):
        for _ in range(6 + k):                    # a native loop: reverse mode makes a tangent loop
            x = np.sin(x) * 0.9
        return np.sum(doubled_gradient(x) + square(x))
    return f


def _table_sizes() -> tuple[int, int, int]:
    gc.collect()
    return len(TANGENT_LOOPS), len(VJP_MARKERS), len(CUSTOM_CALLS)


@pytest.mark.nocompile
def test_side_tables_do_not_grow_with_the_functions_traced():
    before = _table_sizes()
    for k in range(6):
        g = numfn.grad(_distinct_function(k))
        graph = g.specialize(np.ones(3)).function_graph   # traced (not compiled): loops, custom calls, markers
        assert graph is not None
        del g, graph
        assert _table_sizes() == before


@pytest.mark.nocompile
def test_side_tables_hold_what_a_live_trace_needs():
    before = _table_sizes()[2]
    nf = numfn.jit(_distinct_function(0)).specialize(np.ones(3))
    graph = nf.function_graph
    assert len(CUSTOM_CALLS) == before + 2   # this trace's two custom calls, while its graph lives
    del nf, graph
    assert _table_sizes()[2] == before


# ---------------------------------------------------------------------------------------------------------------
# nondiff_argnums (JAX's: passed first to the rule, no derivative)

@functools.partial(numfn.custom_jvp, nondiff_argnums=(0, 2))
def apply_scaled(fn, x, power):
    return fn(x) ** power


@apply_scaled.defjvp
def apply_scaled_jvp(fn, power, primals, tangents):
    (x,), (t,) = primals, tangents
    y = fn(x)
    # the derivative of fn(x) ** power when fn is np.sin (the rule knows fn: a nondiff argument)
    return y ** power, power * y ** (power - 1) * np.cos(x) * t



def test_custom_jvp_nondiff_argnums_are_passed_first_to_the_rule():
    x = np.linspace(0.1, 1.2, 5)
    g = numfn.grad(lambda x: np.sum(apply_scaled(np.sin, x, 3)))(x)
    np.testing.assert_allclose(g, 3 * np.sin(x) ** 2 * np.cos(x), rtol=1e-13)
    out, t = numfn.jvp(lambda x: apply_scaled(np.sin, x, 2), (x,), (np.ones(5),))
    np.testing.assert_allclose(out, np.sin(x) ** 2, rtol=1e-14)
    np.testing.assert_allclose(t, 2 * np.sin(x) * np.cos(x), rtol=1e-13)
    np.testing.assert_allclose(apply_scaled(np.sin, x, 2), np.sin(x) ** 2)   # outside a trace: the function


@functools.partial(numfn.custom_jvp, nondiff_argnums=(0,))
def scaled_by(scale, x):
    return scale * x


@scaled_by.defjvp
def scaled_by_jvp(scale, primals, tangents):
    return scaled_by(scale, primals[0]), scale * tangents[0]



def test_custom_jvp_nondiff_array_argument_gets_no_derivative():
    # JAX: an array among a custom_jvp function's nondiff_argnums is stop_gradient-ed
    s, x = np.array([2.0, -1.0, 0.5]), np.array([0.3, 0.7, -1.1])
    gs, gx = numfn.grad(lambda s, x: np.sum(scaled_by(s, x) ** 2), argnums=(0, 1))(s, x)
    np.testing.assert_allclose(gx, 2 * s * s * x, rtol=1e-14)
    np.testing.assert_array_equal(gs, np.zeros(3))
    _, t = numfn.jvp(lambda s, x: scaled_by(s, x), (s, x), (np.ones(3), np.ones(3)))
    np.testing.assert_allclose(t, s, rtol=1e-14)


def _clip_fwd(lo, x, hi):
    return x, None


def _clip_bwd(lo, hi, _, g):
    return (np.clip(g, lo, hi),)


clip_cotangent = numfn.custom_vjp(lambda lo, x, hi: x, nondiff_argnums=(0, 2))
clip_cotangent.defvjp(_clip_fwd, _clip_bwd)


def test_custom_vjp_nondiff_argnums_are_passed_first_to_bwd():
    x = np.array([1.0, -2.0, 0.1])
    g = numfn.grad(lambda x: np.sum(clip_cotangent(-0.5, x, 0.5) * 3 * x))(x)
    np.testing.assert_allclose(g, np.clip(3 * x, -0.5, 0.5) + 3 * x, rtol=1e-14)
    step = numfn.jit(lambda x: numfn.grad(lambda y: np.sum(clip_cotangent(-1.0, y, 1.0) * 5.0))(x))
    np.testing.assert_allclose(step(x), np.ones(3))


def test_custom_vjp_nondiff_array_argument_is_a_type_error():
    bad = numfn.custom_vjp(lambda s, x: s * x, nondiff_argnums=(0,))
    bad.defvjp(lambda s, x: (s * x, None), lambda s, _, g: (s * g,))
    with pytest.raises(TypeError, match="nondiff_argnums"):
        numfn.grad(lambda s, x: np.sum(bad(s, x)), argnums=1)(np.ones(2), np.ones(2))


def test_nondiff_argnums_out_of_range_and_wrong_type():
    with pytest.raises(TypeError, match="integers"):
        numfn.custom_jvp(lambda x: x, nondiff_argnums=("x",))
    f = numfn.custom_jvp(lambda x: x, nondiff_argnums=(3,))
    f.defjvp(lambda p, t: (p[0], t[0]))
    with pytest.raises(ValueError, match="out of range"):
        numfn.grad(lambda x: np.sum(f(x)))(np.ones(2))


# ---------------------------------------------------------------------------------------------------------------
# argnums tuples

def three(a, b, c):
    return np.sum(np.sin(a) * b ** 2 + c * a)


def test_argnums_tuples_in_every_function():
    a, b, c = RNG.standard_normal(3), RNG.standard_normal(3), 0.7
    ga, gb, gc_ = np.cos(a) * b ** 2 + c, 2 * np.sin(a) * b, np.sum(a)
    got = numfn.grad(three, argnums=(0, 2))(a, b, c)
    assert isinstance(got, tuple) and len(got) == 2
    np.testing.assert_allclose(got[0], ga, rtol=1e-13)
    np.testing.assert_allclose(got[1], gc_, rtol=1e-13)
    value, (gb2, ga2) = numfn.value_and_grad(three, argnums=(1, 0))(a, b, c)
    np.testing.assert_allclose(value, three(a, b, c), rtol=1e-14)
    np.testing.assert_allclose(gb2, gb, rtol=1e-13)
    np.testing.assert_allclose(ga2, ga, rtol=1e-13)
    np.testing.assert_allclose(numfn.grad(three, argnums=(-1,))(a, b, c)[0], gc_, rtol=1e-13)
    elementwise = lambda a, b: np.sin(a) * b   # noqa: E731
    for jac in (numfn.jacfwd, numfn.jacrev):
        ja, jb = jac(elementwise, argnums=(0, 1))(a, b)
        np.testing.assert_allclose(ja, np.diag(np.cos(a) * b), rtol=1e-13)
        np.testing.assert_allclose(jb, np.diag(np.sin(a)), rtol=1e-13)


# ---------------------------------------------------------------------------------------------------------------
# checkpointing: every k-th carry stored, a segment's carries recomputed from its checkpoint

STEPS = 50


def heat_loss(u, k):
    u = u.copy()
    for _ in range(STEPS):                        # in-place stencil updates in a native loop
        u[1:-1] += k * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def numpy_heat_loss(u, k):
    u = u.copy()
    for _ in range(STEPS):
        u[1:-1] += k * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def _finite_differences(f, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    flat = [(f((x.ravel() + eps * e).reshape(x.shape)) - f((x.ravel() - eps * e).reshape(x.shape))) / (2 * eps)
            for e in np.eye(x.size)]
    return np.array(flat).reshape(x.shape)


def _stacks(transformed, *args) -> list[tuple[int, ...]]:
    """The leading dimension of every stacked carry the derivative's loops keep (shape (rows,) + a state's)."""
    from numfn.ir.uop import Ops
    from numfn.ir.walk import toposort
    graph = transformed.specialize(*args).function_graph
    found = []
    for u in toposort([graph]):
        if u.op is Ops.LOOP and u.arg.kind == "while":
            found += [s[0] for s, _ in u.arg.state if len(s) == 2 and s[1] == args[0].shape[0]]
    return found


def _while_loops(transformed, *args) -> int:
    """How many native loops the derivative's graph has at its top level."""
    from numfn.ir.uop import Ops
    from numfn.ir.walk import toposort
    graph = transformed.specialize(*args).function_graph
    return sum(u.op is Ops.LOOP and u.arg.kind == "while" for u in toposort([graph]))


U0 = np.sin(np.linspace(0, np.pi, 16))
K = 0.2


@pytest.mark.parametrize("every", [1, 7, 10, 49, 50, 200])
def test_checkpointed_gradient_equals_the_stored_one_and_finite_differences(every):
    stored = numfn.grad(heat_loss, argnums=(0, 1))(U0, K)
    grad = numfn.grad(heat_loss, argnums=(0, 1), checkpoint=every)
    du, dk = grad(U0, K)
    np.testing.assert_allclose(du, stored[0], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(dk, stored[1], rtol=1e-13)
    np.testing.assert_allclose(du, _finite_differences(lambda u: numpy_heat_loss(u, K), U0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dk, _finite_differences(lambda k: numpy_heat_loss(U0, k), K), rtol=1e-6)
    segments = -(-STEPS // every)
    # the forward pass stores ceil(50 / every) checkpoints (every <= 1 or >= 50: every iteration's state)
    assert _stacks(grad, U0, K) == ([STEPS] if not 1 < every < STEPS else [segments])


def test_automatic_policy_checkpoints_when_storing_does_not_fit(monkeypatch):
    import numfn.autodiff.reverse_loops as reverse_loops
    stored = numfn.grad(heat_loss, argnums=(0, 1))(U0, K)
    row = U0.nbytes + 8   # a carry: u and the loop index
    monkeypatch.setattr(reverse_loops, "MAX_STACK_BYTES", 20 * row)   # 50 rows do not fit, 8 do

    def heat_loss_again(u, k):   # (a new function: traced again under the policy)
        u = u.copy()
        for _ in range(STEPS):
            u[1:-1] += k * (u[2:] - 2 * u[1:-1] + u[:-2])
        return np.sum(u ** 2)
    grad = numfn.grad(heat_loss_again, argnums=(0, 1))
    du, dk = grad(U0, K)
    assert _stacks(grad, U0, K) == [7]   # ceil(sqrt(50)) = 8 iterations a segment: ceil(50 / 8) = 7 checkpoints
    np.testing.assert_allclose(du, stored[0], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(dk, stored[1], rtol=1e-13)


def rnn_loss(W, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h ** 2)


def test_checkpointed_rnn_and_fori_loop_with_run_time_bound():
    W, xs, h = RNG.standard_normal((4, 4)) * 0.5, RNG.standard_normal((30, 4)), RNG.standard_normal(4)
    stored = numfn.grad(rnn_loss, argnums=(0, 2))(W, xs, h)
    got = numfn.grad(rnn_loss, argnums=(0, 2), checkpoint=4)(W, xs, h)
    np.testing.assert_allclose(got[0], stored[0], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got[1], stored[1], rtol=1e-13, atol=1e-15)

    def rollout(x, n):   # a run-time trip count bounded by 40: segments stop where the loop stops
        return np.sum(numfn.fori_loop(0, np.minimum(n, 40), lambda i, v: np.sin(v) + 0.5 * v, x))

    def numpy_rollout(x, n):
        for _ in range(min(n, 40)): x = np.sin(x) + 0.5 * x
        return np.sum(x)
    x = RNG.standard_normal(3)
    grad = numfn.grad(rollout, checkpoint=6)
    for n in (0, 1, 6, 13, 40, 90):
        np.testing.assert_allclose(grad(x, n), _finite_differences(lambda x: numpy_rollout(x, n), x), rtol=1e-7,
                                   atol=1e-8)


def mixing(x):
    for _ in range(30):
        x = np.sin(x) * 0.9 + 0.1 * x[::-1]
    return np.sum(x ** 2)


def test_derivative_of_a_checkpointed_derivative():
    x = np.array([0.3, -0.2, 0.5])
    # d/dx |grad f(x)|^2 = 2 H grad f, the inner gradient through a loop checkpointed every 4 iterations
    got = numfn.grad(lambda x: np.sum(numfn.grad(mixing, checkpoint=4)(x) ** 2))(x)
    np.testing.assert_allclose(got, 2 * numfn.hessian(mixing)(x) @ numfn.grad(mixing)(x), rtol=1e-12, atol=1e-15)


def test_checkpoint_must_be_a_positive_int():
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="checkpoint"):
            numfn.grad(heat_loss, checkpoint=bad)


# ---------------------------------------------------------------------------------------------------------------
# an LU factorization written with loops and slices, against finite differences and JAX

def lu_loss(A):
    A = A.copy()
    n = A.shape[0]
    for i in range(n - 1):                        # a native loop: windows that move with i, written in place
        A[i + 1:, i] /= A[i, i]
        A[i + 1:, i + 1:] -= np.outer(A[i + 1:, i], A[i, i + 1:])
    L = np.tril(A, -1) + np.eye(n)
    U = np.triu(A)
    return np.sum(L ** 2) + np.sum(np.sin(U))


LU_A = np.array([
    [7.053115754486758, 1.776491303816993, -2.5532918384570134, -0.13796506137840808, 1.0137194090532766,
     1.3521418253819912],
    [0.6537883844162056, 7.497117852587838, 0.289957591366348, 0.5512671317684119, 0.17873768757050404,
     -1.073858701475369],
    [-0.8466289662382713, 0.37958424600772894, 5.419804798394299, 1.2715513764583872, 1.2923865934033114,
     1.7987863384903786],
    [-0.02607383754457069, 1.3837097563119558, -0.9058431408224087, 5.183685270309093, 0.08130305629403443,
     0.2814308365081419],
    [-1.5989883258714874, -1.730724189576384, 0.3550784031579345, -0.8621880728268713, 7.208357054651017,
     0.39454619699169213],
    [0.30718460927779667, 0.2084426281897281, 0.8954750922624016, -0.1530461454323981, 1.085630989593339,
     5.474085680444236]])

# jax.grad (jax 0.10.2, x64) of the functional rewrite, in /work/peers/bin/python:
#     def lu_loss(A):
#         n = A.shape[0]
#         for i in range(n - 1):
#             A = A.at[i + 1:, i].set(A[i + 1:, i] / A[i, i])
#             A = A.at[i + 1:, i + 1:].add(-jnp.outer(A[i + 1:, i], A[i, i + 1:]))
#         return jnp.sum((jnp.tril(A, -1) + jnp.eye(n)) ** 2) + jnp.sum(jnp.sin(jnp.triu(A)))
#     LU_A = np.random.default_rng(6).standard_normal((6, 6)) + 6 * np.eye(6)
#     print(repr(np.asarray(jax.grad(lu_loss)(jnp.asarray(LU_A)))))
LU_JAX_GRAD = np.array([
    [6.3025481569037889e-01, -2.3780799326865010e-01, -9.7669884882238656e-01, 9.4405321098626882e-01,
     5.6910645103102042e-01, 2.9714442418931736e-01],
    [5.9440613891134773e-02, 4.9147175791970538e-01, 9.3290754701747114e-01, 6.7003001468887902e-01,
     8.3628499413767232e-01, 3.8436851271628975e-01],
    [8.4897852149450573e-02, -9.1834294216209353e-02, 1.9225089408719165e-01, 4.7152740537743665e-01,
     3.6755520415408771e-01, -3.6415912314637300e-01],
    [-5.9732502761971917e-01, 1.7473565942231598e-01, -7.7634326123259589e-01, 5.3408681653229118e-01,
     9.8340354580094413e-01, 7.3198812836019389e-01],
    [-4.1242650176589934e-01, 1.1108851200482600e-01, -3.5218469531327723e-01, -2.0511060123827152e-01,
     3.0949404043501877e-01, 7.5203815081905923e-01],
    [-7.6292719142420778e-02, 6.4531083697644001e-02, -2.9788063930938049e-02, -8.2403297132300019e-02,
     2.6995418474649164e-05, 3.1292189438010903e-01]])


@pytest.mark.parametrize("checkpoint", [None, 2])
def test_lu_with_loops_and_slices_against_finite_differences_and_jax(checkpoint):
    grad = numfn.grad(lu_loss, checkpoint=checkpoint)
    g = grad(LU_A)
    np.testing.assert_allclose(g, LU_JAX_GRAD, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g, _finite_differences(lu_loss, LU_A), rtol=1e-6, atol=1e-8)   # (NumPy runs lu_loss)
    assert _while_loops(grad, LU_A) >= 2   # a native loop forward and one backward (not unrolled)


# ---------------------------------------------------------------------------------------------------------------
# svd, pinv, lstsq (LAPACK gesdd, gelsd: numfn/autodiff/linalg_rules.py); qr and eig: clear errors

def _routines(f, *args) -> set[str]:
    """The native routines f's traced graph calls."""
    from numfn.ir.uop import Ops
    from numfn.ir.walk import toposort
    graph = numfn.jit(f).specialize(*args).function_graph
    return {u.arg.routine for u in toposort([graph]) if u.op is Ops.EXTERN}


def _well_conditioned(shape, seed):
    """A matrix with distinct singular values well apart (1..2 spread) and random singular vectors."""
    rng = np.random.default_rng(seed)
    m, n = shape[-2:]
    k = min(m, n)
    u = np.linalg.qr(rng.standard_normal(shape[:-2] + (m, m)))[0][..., :, :k]
    v = np.linalg.qr(rng.standard_normal(shape[:-2] + (n, n)))[0][..., :, :k]
    s = np.linspace(2.0, 1.0, k)
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


SVD_FUNCTIONS = [
    ("singular values", lambda a: np.sum(np.linalg.svd(a, full_matrices=False)[1] ** 3)),
    ("u", lambda a: np.sum(np.linalg.svd(a, full_matrices=False)[0][..., 0] * np.arange(a.shape[-2]))
     + np.sum(np.linalg.svd(a, full_matrices=False)[0] ** 4)),
    ("vh", lambda a: np.sum(np.linalg.svd(a, full_matrices=False)[2][..., -1, :] ** 3)),
    ("svdvals", lambda a: np.sum(np.exp(np.linalg.svd(a, compute_uv=False)))),
    ("pinv", lambda a: np.sum(np.sin(np.linalg.pinv(a)))),
]


def _svd_everything(a):   # (one program for every function: each term is checked by the sum's derivative)
    return sum(np.cos(k + 1.0) * f(a) for k, (_, f) in enumerate(SVD_FUNCTIONS))


@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4)])
def test_svd_and_pinv_derivatives(shape):
    a = _well_conditioned(shape, 11)
    numfn.check_grads(_svd_everything, (a,), modes=("fwd", "rev"))


def test_svd_uses_lapack_and_square_full_matrices():
    a = _well_conditioned((5, 3), 12)
    assert "gesdd" in _routines(SVD_FUNCTIONS[0][1], a)
    sq = _well_conditioned((4, 4), 13)
    numfn.check_grads(lambda a: np.sum(np.linalg.svd(a)[0] ** 3 + np.linalg.svd(a)[2]), (sq,), modes=("rev",))
    with pytest.raises(NotImplementedError, match="full_matrices=True of a non-square matrix"):
        numfn.grad(lambda a: np.sum(np.linalg.svd(a)[0]))(a)


LSTSQ_FUNCTIONS = [
    ("solution", lambda a, b: np.sum(np.sin(np.linalg.lstsq(a, b)[0]))),
    ("vector b", lambda a, b: np.sum(np.linalg.lstsq(a, b[:, 0])[0] ** 2)),
    ("singular values", lambda a, b: np.sum(np.linalg.lstsq(a, b)[3] ** 2)),
]


def _lstsq_everything(a, b):
    return sum(np.cos(k + 1.0) * f(a, b) for k, (_, f) in enumerate(LSTSQ_FUNCTIONS))


@pytest.mark.parametrize("shape", [(6, 3), (3, 5)])
def test_lstsq_derivatives(shape):
    a, b = _well_conditioned(shape, 14), np.random.default_rng(15).standard_normal((shape[0], 2))
    numfn.check_grads(_lstsq_everything, (a, b), modes=("fwd", "rev"))


def test_lstsq_residuals_and_normal_equations():
    a, b = _well_conditioned((6, 3), 16), np.random.default_rng(17).standard_normal((6, 2))
    assert "gelsd" in _routines(LSTSQ_FUNCTIONS[0][1], a, b)
    numfn.check_grads(lambda a, b: np.sum(np.linalg.lstsq(a, b)[1]), (a, b), modes=("fwd", "rev"))
    # the gradient with respect to b of sum(x): the normal equations' solution, (A^T A)^-1 A^T applied to ones
    gb = numfn.grad(lambda b: np.sum(np.linalg.lstsq(a, b)[0]))(b)
    want = (np.linalg.solve(a.T @ a, a.T).T @ np.ones((3, 2)))
    np.testing.assert_allclose(gb, want, rtol=1e-12)


QR_FUNCTIONS = [
    ("r", lambda a: np.sum(np.linalg.qr(a)[1] ** 3)),
    ("q", lambda a: np.sum(np.sin(np.linalg.qr(a)[0]) * np.arange(a.shape[-1]))),
    ("mode r", lambda a: np.sum(np.linalg.qr(a, mode="r") ** 2)),
]


def _qr_everything(a):
    return sum(np.cos(k + 1.0) * f(a) for k, (_, f) in enumerate(QR_FUNCTIONS))


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3)])
def test_qr_derivatives_square_and_tall_reduced(shape):
    a = _well_conditioned(shape, 19)
    assert {"geqrf", "orgqr"} <= _routines(_qr_everything, a)
    numfn.check_grads(_qr_everything, (a,), modes=("fwd", "rev"))


def test_eigvals_of_a_real_matrix_with_complex_pairs():
    a = np.random.default_rng(8).standard_normal((5, 5))   # eigenvalues: 3 real, one complex conjugate pair
    assert np.sum(np.abs(np.linalg.eigvals(a).imag) > 0.1) == 2
    numfn.check_grads(lambda a: np.linalg.eigvals(a), (a,), modes=("fwd", "rev"))
    w = np.linalg.eigvals(a)
    # d w_k = (V^-1 dA V)_kk: d w_k / d A_ij = (V^-1)_ki V_jk
    g = numfn.grad(lambda a: np.sum(np.real(np.linalg.eigvals(a)) ** 2))(a)
    wv, v = np.linalg.eig(a)
    vinv = np.linalg.inv(v)
    want = np.real(sum(2 * wv[k].real * np.outer(vinv[k], v[:, k]) for k in range(5)))
    np.testing.assert_allclose(np.sort(wv.real), np.sort(w.real))
    np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)


def test_qr_wide_complete_and_eig_are_clear_errors():
    tall, wide = _well_conditioned((5, 3), 20), _well_conditioned((3, 5), 21)
    with pytest.raises(NotImplementedError, match="mode='complete' of a tall matrix"):
        numfn.grad(lambda a: np.sum(np.linalg.qr(a, mode="complete")[0]))(tall)
    with pytest.raises(NotImplementedError, match="qr of a wide matrix"):
        numfn.grad(lambda a: np.sum(np.linalg.qr(a)[1]))(wide)
    with pytest.raises(NotImplementedError, match="numpy.linalg.eig .its eigenvectors.: use numpy.linalg.eigvals"):
        numfn.grad(lambda a: np.sum(np.abs(np.linalg.eig(a)[0])))(_well_conditioned((4, 4), 22))


# ---------------------------------------------------------------------------------------------------------------
# Jacobians of functions returning a tree of arrays: the tree of each output's Jacobian(s), as JAX's

def _two_outputs(a):
    return {"scaled": a * 2.0, "total": (a * a).sum()}


def _mixed(x, y):
    return (x * y).sum() + (x ** 2).sum() * y.sum()


@pytest.mark.parametrize("mode", ["jacfwd", "jacrev"])
def test_jacobian_of_a_tree_of_outputs(mode):
    x = np.array([1.0, -2.0, 0.5])
    jac = getattr(numfn, mode)(_two_outputs)(x)
    assert set(jac) == {"scaled", "total"}
    np.testing.assert_allclose(jac["scaled"], 2.0 * np.eye(3), rtol=1e-14)
    np.testing.assert_allclose(jac["total"], 2.0 * x, rtol=1e-14)
    both = getattr(numfn, mode)(lambda a, b: (a * b, a.sum() * b[0]), argnums=(0, 1))(x, x + 1.0)
    assert len(both) == 2 and all(len(j) == 2 for j in both)
    np.testing.assert_allclose(both[0][0], np.diag(x + 1.0), rtol=1e-14)
    np.testing.assert_allclose(both[0][1], np.diag(x), rtol=1e-14)
    np.testing.assert_allclose(both[1][0], np.full(3, (x + 1.0)[0]), rtol=1e-14)
    np.testing.assert_allclose(both[1][1], [x.sum(), 0.0, 0.0], rtol=1e-14)


def test_hessian_with_respect_to_two_arguments():
    x, y = np.array([1.0, 2.0, -1.0]), np.array([0.5, -1.5, 2.0])
    (hxx, hxy), (hyx, hyy) = numfn.hessian(_mixed, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(hxx, 2.0 * y.sum() * np.eye(3), rtol=1e-13)
    np.testing.assert_allclose(hxy, np.eye(3) + 2.0 * x[:, None], rtol=1e-13)   # d2f / dx_i dy_j
    np.testing.assert_allclose(hyx, hxy.T, rtol=1e-13)
    np.testing.assert_allclose(hyy, np.zeros((3, 3)), atol=1e-13)


def _params_loss(p, x):
    return (p["w"] * x).sum() + p["b"] ** 2 * x[0]


@pytest.mark.parametrize("mode", ["jacfwd", "jacrev"])
def test_jacobian_with_respect_to_a_tree_of_arrays(mode):
    p = {"w": np.array([1.0, 2.0, 3.0]), "b": np.array(0.5)}
    x = np.array([0.1, -0.2, 0.3])
    by_params = getattr(numfn, mode)(_params_loss)(p, x)
    np.testing.assert_allclose(by_params["w"], x, rtol=1e-14)
    np.testing.assert_allclose(by_params["b"], 2 * 0.5 * x[0], rtol=1e-14)
    by_both = getattr(numfn, mode)(_params_loss, argnums=(0, 1))(p, x)
    np.testing.assert_allclose(by_both[0]["w"], x, rtol=1e-14)
    np.testing.assert_allclose(by_both[1], p["w"] + [0.25, 0.0, 0.0], rtol=1e-14)
