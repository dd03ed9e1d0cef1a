"""Matrix products with transposed operands and transposed results (issue 30, item 5: the MLP gradient's weight
products are X^T @ dH and h^T @ dlogits): `A.T @ B`, `A @ B.T`, `A.T @ B.T`, `(A @ B).T`, np.dot, einsum and
stacked products, with views (strided, reversed, column-major) as operands, against NumPy on the same inputs; and
what the schedule does with them, counted on `nf.schedule` (not timed): a transposed operand is passed to GEMM
with its transpose flag, never copied first; a product read transposed is computed transposed (b.T @ a.T) instead
of copied after the call (numfn.schedule.externs.transpose_products); an operand that must be copied (reversed)
is copied in its own order, and passed transposed."""
import numpy as np
import pytest

import numfn
import numfn.extern
from helpers import check, rand
from numfn.runtime import blas
from numfn.schedule import ExternKernel, all_items

RNG = np.random.default_rng(30005)
DTYPES = [np.float64, np.float32]
needs_blas = pytest.mark.skipif(blas.interface() is None, reason="no BLAS library found")


def dtype_id(d) -> str:
    return np.dtype(d).name


def operand(kind: str, shape: tuple, dtype) -> np.ndarray:
    """An array of `shape` laid out as `kind` says: contiguous, column-major (the transpose of a contiguous array),
    every other row, every other column, rows reversed, or reversed along both axes (negative strides)."""
    if kind == "contiguous": return rand(shape, dtype, RNG)
    if kind == "column-major": return rand(shape[::-1], dtype, RNG).T
    if kind == "rows-strided": return rand((2 * shape[0],) + shape[1:], dtype, RNG)[::2]
    if kind == "cols-strided": return rand(shape[:-1] + (2 * shape[-1],), dtype, RNG)[..., ::2]
    if kind == "rows-reversed": return rand(shape, dtype, RNG)[::-1]
    if kind == "reversed": return rand(shape, dtype, RNG)[::-1, ::-1]
    raise KeyError(kind)


KINDS = ["contiguous", "column-major", "rows-strided", "cols-strided", "rows-reversed", "reversed"]


def at_b(a, b): return a.T @ b
def a_bt(a, b): return a @ b.T
def at_bt(a, b): return a.T @ b.T
def ab_t(a, b): return (a @ b).T
def dot_at_b(a, b): return np.dot(a.T, b)
def einsum_at_b(a, b): return np.einsum("ki,kj->ij", a, b)
def einsum_at_b_t(a, b): return np.einsum("ki,kj->ji", a, b)
def at_b_then_tanh(a, b): return np.tanh(a.T @ b) + 1.0


# each product with the shapes of its operands for a product of n x k by k x m
PRODUCTS = [(at_b, lambda n, k, m: ((k, n), (k, m))), (a_bt, lambda n, k, m: ((n, k), (m, k))),
            (at_bt, lambda n, k, m: ((k, n), (m, k))), (ab_t, lambda n, k, m: ((n, k), (k, m))),
            (dot_at_b, lambda n, k, m: ((k, n), (k, m))), (einsum_at_b, lambda n, k, m: ((k, n), (k, m))),
            (einsum_at_b_t, lambda n, k, m: ((k, n), (k, m))), (at_b_then_tanh, lambda n, k, m: ((k, n), (k, m)))]
# (n, k, m): empty, a zero-length sum, single elements, generated kernels (small), GEMM from GEMM_MIN_MACS, and a
# narrow GEMM (m not a multiple of a vector: from SMALL_GEMM_MACS)
SIZES = [(0, 5, 3), (4, 0, 3), (1, 1, 1), (1, 70, 1), (7, 9, 5), (67, 131, 71), (33, 65, 17), (1, 300, 257)]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("fn,shapes", PRODUCTS, ids=lambda p: getattr(p, "__name__", ""))
def test_transposed_products_match_numpy(fn, shapes, size, dtype, backend):
    sa, sb = shapes(*size)
    check(fn, operand("contiguous", sa, dtype), operand("contiguous", sb, dtype), backend=backend,
          scale=10.0 * max(size[1], 1))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fn,shapes", PRODUCTS[:4], ids=lambda p: getattr(p, "__name__", ""))
def test_transposed_products_of_views_match_numpy(fn, shapes, kind, dtype, backend):
    # GEMM-sized and odd: every view kind for the first operand, the second one's layout varied too
    sa, sb = shapes(67, 131, 71)
    other = {"contiguous": "reversed", "reversed": "column-major"}.get(kind, "contiguous")
    check(fn, operand(kind, sa, dtype), operand(other, sb, dtype), backend=backend, scale=10.0 * 131)
    check(fn, operand(other, sa, dtype), operand(kind, sb, dtype), backend=backend, scale=10.0 * 131)


def stacked_at_b(a, b): return np.swapaxes(a, -1, -2) @ b
def stacked_a_bt(a, b): return a @ np.swapaxes(b, -1, -2)
def stacked_ab_t(a, b): return np.swapaxes(a @ b, -1, -2)
def einsum_stacked_t(a, b): return np.einsum("bij,bjk->bki", a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("batch", [((3,), (3,)), ((1,), (4,)), ((2, 1), (1, 3)), ((0,), (0,)), ((1,), (1,))],
                         ids=str)
def test_stacked_transposed_products_match_numpy(batch, dtype, backend):
    ba, bb = batch
    n, k, m = 40, 70, 97
    check(stacked_at_b, rand(ba + (k, n), dtype, RNG), rand(bb + (k, m), dtype, RNG)[..., ::-1, :],
          backend=backend, scale=10.0 * k)
    check(stacked_a_bt, rand(ba + (n, k), dtype, RNG), rand(bb + (m, k), dtype, RNG), backend=backend,
          scale=10.0 * k)
    check(stacked_ab_t, rand(ba + (n, k), dtype, RNG), rand(bb + (k, m), dtype, RNG).swapaxes(-1, -2).copy()
          .swapaxes(-1, -2), backend=backend, scale=10.0 * k)
    if ba == bb: check(einsum_stacked_t, rand(ba + (n, k), dtype, RNG), rand(bb + (k, m), dtype, RNG),
                       backend=backend, scale=10.0 * k)


def test_transposed_product_of_a_computed_operand_matches_numpy(backend):
    a, d = rand((70, 90), np.float64, RNG), rand((70, 80), np.float64, RNG)
    check(lambda a, d: (2.0 * a).T @ (d + 1.0), a, d, backend=backend, scale=1e4)
    check(lambda a, d: (a.T @ d).T @ a.T, a, d, backend=backend, scale=1e5)    # a transposed result read again
    check(lambda a, d: ((a.T @ d).T, a.T @ d), a, d, backend=backend, scale=1e4)   # read both ways


# ---------------------------------------------------------------------------------------------------------------
# structure: what the schedule does (no compilation)

def items(fn, *args):
    return all_items(numfn.jit(fn).specialize(*args).schedule)


def gemm_calls(schedule_items) -> int:
    return sum(isinstance(ei.kernel, ExternKernel) and ei.kernel.node.arg.routine == "gemm" for ei in schedule_items)


def copies(schedule_items) -> list:
    """The kernels that compute nothing: copies (of an operand before a call, or of a result after it)."""
    return [ei for ei in schedule_items if not isinstance(ei.kernel, ExternKernel) and ei.op_count == 0]


@needs_blas
@pytest.mark.nocompile
@pytest.mark.parametrize("fn,shapes", PRODUCTS[:-1] + [(stacked_at_b, lambda n, k, m: ((3, k, n), (3, k, m))),
                                                       (stacked_a_bt, lambda n, k, m: ((3, n, k), (3, m, k))),
                                                       (stacked_ab_t, lambda n, k, m: ((3, n, k), (3, k, m))),
                                                       (einsum_stacked_t, lambda n, k, m: ((3, n, k), (3, k, m)))],
                         ids=lambda p: getattr(p, "__name__", ""))
@pytest.mark.parametrize("kind", ["contiguous", "column-major", "rows-strided"])
def test_transposed_operands_and_results_are_gemm_flags_not_copies(fn, shapes, kind):
    sa, sb = shapes(67, 131, 71)
    a = operand(kind, sa, np.float64) if len(sa) == 2 else rand(sa, np.float64, RNG)
    schedule = items(fn, a, rand(sb, np.float64, RNG))
    assert gemm_calls(schedule) == 1
    assert copies(schedule) == [], [ei.kernel.name for ei in copies(schedule)]
    assert len(schedule) == 1   # the call writes the output itself


@needs_blas
@pytest.mark.nocompile
def test_a_transposed_product_read_by_a_kernel_is_computed_transposed():
    # tanh((a @ b).T): the call writes the transposed product; the elementwise kernel reads it in order
    schedule = items(lambda a, b: np.tanh((a @ b).T), rand((67, 131), np.float64, RNG),
                     rand((131, 71), np.float64, RNG))
    assert gemm_calls(schedule) == 1 and copies(schedule) == []
    call = next(ei.kernel for ei in schedule if isinstance(ei.kernel, ExternKernel))
    assert call.node.arg.results[0][0] == (71, 67)
    # read both ways: one call, and a transposing copy for the other reader (not two calls)
    schedule = items(lambda a, b: ((a @ b).T, a @ b), rand((67, 131), np.float64, RNG),
                     rand((131, 71), np.float64, RNG))
    assert gemm_calls(schedule) == 1


@needs_blas
@pytest.mark.nocompile
@pytest.mark.parametrize("fn,expected", [(lambda a, b: a[::-1].T @ b, 1), (lambda a, b: a[::-1].T @ b[::-1], 2),
                                         (lambda a, b: a[::-1][::-1].T @ b, 0)], ids=["a", "both", "twice"])
def test_a_reversed_operand_is_copied_in_its_own_order(fn, expected):
    # BLAS takes no negative strides: a[::-1] is copied, as the (k, n) matrix it is (runs of memory), then passed
    # transposed; never as its transpose (a kernel writing (n, k) reads a column at a time)
    schedule = items(fn, rand((131, 67), np.float64, RNG), rand((131, 71), np.float64, RNG))
    assert gemm_calls(schedule) == 1
    made = copies(schedule)
    assert len(made) == expected and all(ei.kernel.shape in ((131, 67), (131, 71)) for ei in made), \
        [(ei.kernel.name, ei.kernel.shape) for ei in made]


MLP_SHAPES = ((784, 256), (256,), (256, 10), (10,))


def mlp_loss(params, x, labels):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -(logp * labels).sum() / x.shape[0]


def mlp_args():
    params = tuple(rand(s, np.float64, RNG) * 0.05 for s in MLP_SHAPES)
    return params, rand((256, 784), np.float64, RNG), np.eye(10)[RNG.integers(0, 10, 256)]


@needs_blas
@pytest.mark.nocompile
def test_mlp_gradient_passes_every_transposed_operand_to_gemm():
    # issue 30's benchmark: x @ w1 and h @ w2 forward; dlogits @ w2.T, x.T @ dh and h.T @ dlogits backward: five
    # calls, and no kernel that only copies (a transposed operand or result)
    schedule = items(numfn.grad(mlp_loss), *mlp_args())
    assert gemm_calls(schedule) == 5
    assert copies(schedule) == [], [ei.kernel.name for ei in copies(schedule)]


def test_mlp_gradient_matches_its_numpy_formula():
    params, x, labels = mlp_args()
    grads = numfn.jit(numfn.grad(mlp_loss))(params, x, labels)
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    dlogits = (p * labels.sum(axis=1, keepdims=True) - labels) / x.shape[0]
    dh = (dlogits @ w2.T) * (1 - h ** 2)
    expected = (x.T @ dh, dh.sum(0), h.T @ dlogits, dlogits.sum(0))
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)
