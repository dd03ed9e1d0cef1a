"""matmul, @ and dot against NumPy: vector and matrix operands, batches with broadcasting, dtypes, empty sizes."""
import numpy as np
import pytest

from helpers import check, check_raises_like, check_xp, magnitude, rand

MATMUL_SHAPES = [
    ((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 5)), ((3, 4), (4,)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)), ((1, 4), (4, 1)), ((3, 1), (1, 3)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)),
    ((3, 0), (0, 4)), ((0, 4), (4, 2)), ((2, 0, 3), (3, 1)), ((1, 1), (1, 1)), ((17, 33), (33, 9)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=str)
def test_matmul_shapes(backend, sa, sb):
    rng = np.random.default_rng(40)
    a, b = rand(sa, np.float64, rng), rand(sb, np.float64, rng)
    k = sa[-1]
    check_xp(lambda xp: lambda a, b: (xp.matmul(a, b), a @ b), a, b, backend=backend, scale=magnitude(a, b) ** 2 * k)


@pytest.mark.parametrize("da,db", [(np.float32, np.float32), (np.int32, np.int32), (np.int64, np.int64),
                                   (np.bool_, np.bool_), (np.int8, np.int8), (np.uint8, np.uint8),
                                   (np.int32, np.float32), (np.float32, np.float64), (np.bool_, np.int32),
                                   (np.int8, np.uint8)], ids=lambda d: np.dtype(d).name)
def test_matmul_dtypes(backend, da, db):
    # integer products wrap like NumPy's (int8 @ int8 accumulates in int8); bool @ bool is or-of-ands
    rng = np.random.default_rng(41)
    a, b = rand((3, 5, 7), da, rng, -40, 40), rand((7, 4), db, rng, -40, 40)
    v = rand((7,), db, rng, -40, 40)
    check(lambda a, b, v: (a @ b, np.matmul(a, v), v @ b, np.dot(a[0], b), np.dot(v, v)), a, b, v, backend=backend,
          scale=40.0 * 40.0 * 7)


def _dots(xp):
    def f(a, b, m, t, s):
        return (xp.dot(a, b), xp.dot(m, a), xp.dot(a, m.T), xp.dot(m, m.T), xp.dot(s, m), xp.dot(m, s), xp.dot(s, s),
                xp.dot(t, m.T), xp.dot(t, t.transpose(1, 2, 0)), xp.dot(a, t.transpose(0, 2, 1)), xp.dot(m, s * 2),
                xp.dot(t, a), xp.dot(m[:, :0], m[:0]))
    return f


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8], ids=lambda d: np.dtype(d).name)
def test_dot_every_form(backend, dtype):
    # scalars, 1-D, 2-D and N-D (sum over the last axis of a and the second-to-last of b)
    rng = np.random.default_rng(42)
    a, b = rand((4,), dtype, rng), rand((4,), dtype, rng)
    m, t, s = rand((3, 4), dtype, rng), rand((2, 3, 4), dtype, rng), rand((), dtype, rng)
    check_xp(_dots, a, b, m, t, s, backend=backend, scale=9.0 * 4 * 4)


def test_matmul_of_views_and_expressions(backend):
    rng = np.random.default_rng(43)
    a, b = rand((6, 8), np.float32, rng), rand((8, 6), np.float32, rng)
    check(lambda a, b: (a.T @ b.T, a[::2] @ b[:, ::-1], (a + 1) @ (b * 2), a @ a.T, (a @ b) @ a, a @ (b @ a),
                        (a @ b).sum(axis=0), np.maximum(a @ b, 0), a[:, :3] @ b[:3, ::3], a @ b[:, 0]),
          a, b, backend=backend, scale=3.0 ** 3 * 64 * 8)


def test_matmul_with_nan_and_inf(backend):
    a = np.array([[1.0, np.nan], [np.inf, 1.0], [np.inf, -np.inf], [0.0, 2.0]])
    b = np.array([[1.0, 0.0], [2.0, 3.0]])
    check(lambda a, b: (a @ b, np.dot(a, b[:, 0])), a, b, backend=backend)


def test_matmul_with_captured_constant(backend):
    w = rand((5, 3), np.float64, np.random.default_rng(44))
    x = rand((4, 5), np.float64, np.random.default_rng(45))
    check(lambda x: (x @ w, w.T @ x.T, np.dot(x, w) + 1), x, backend=backend, scale=100.0)


@pytest.mark.parametrize("make", [
    lambda a, b: a @ b,
    lambda a, b: np.matmul(a, b.T[:2]),
    lambda a, b: np.dot(a, b),
    lambda a, b: a[0, 0] @ b,
    lambda a, b: np.matmul(np.zeros((2, 3, 4)) + a[0, 0], np.zeros((3, 4, 5))),
    lambda a, b: np.dot(np.zeros((2, 3, 4)), np.zeros((5, 3, 2))),
], ids=["core", "core-2", "dot", "zero-d", "batch", "dot-nd"])
def test_shape_mismatch_raises_value_error(backend, make):
    a, b = np.zeros((3, 4)), np.zeros((3, 4))
    check_raises_like(make, a, b, backend=backend)


def test_dot_with_python_float(backend):
    m, i = np.ones((2, 3), np.float32), np.ones(3, np.int8)
    check(lambda m, i: (np.dot(m, 2.5), np.dot(2.5, m), np.dot(i, 3)), m, i, backend=backend)


# ---------------------------------------------------------------------------------------------------------------
# products as BLAS calls (numfn.extern): around the threshold, strided operands, epilogues, threads, fallback

import numfn  # noqa: E402
from numfn import extern as _extern  # noqa: E402
from numfn.runtime import blas  # noqa: E402

HAVE_BLAS = blas.interface() is not None
needs_blas = pytest.mark.skipif(not HAVE_BLAS, reason="no BLAS/LAPACK library")
T = _extern.GEMM_MIN_MACS // (64 * 64)   # (T, T) @ (T, 64) is the smallest such product that calls GEMM


def _kinds(nf) -> list[str]:
    return [ei.kernel.name.split("_")[0] for ei in nf.schedule]


@needs_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [T - 1, T, 2 * T + 3], ids=lambda n: f"n{n}")
def test_products_around_the_blas_threshold(backend, dtype, n):
    # generated below the threshold, a GEMM call at and above it; both agree with NumPy for every operand layout
    rng = np.random.default_rng(50)
    a, b = rand((n, n), dtype, rng), rand((n, 64), dtype, rng)
    f = check(lambda a, b: (a @ b, a.T @ b, np.maximum(a @ b + 1, 0), a @ b[:, ::-1], a[::-1] @ b), a, b,
              backend=backend, scale=9.0 * n)
    assert ("X" in _kinds(f.specializations[0])) == (n * n * 64 >= _extern.GEMM_MIN_MACS)
    # a narrow result (a few columns, or not a multiple of a vector) leaves generated code's tile half empty: GEMM
    # takes over at a smaller size
    g = check(lambda a, b: (a @ b[:, :6], a @ a.T), a, b, backend=backend, scale=9.0 * n)
    assert _kinds(g.specializations[0]).count("X") == (n * n * 6 >= _extern.SMALL_GEMM_MACS) + \
        (n * n * n >= _extern.SMALL_GEMM_MACS if n % (64 // np.dtype(dtype).itemsize) else
         n * n * n >= _extern.GEMM_MIN_MACS)


@needs_blas
def test_gemm_operands_take_their_strides_and_epilogues_fuse():
    rng = np.random.default_rng(51)
    x, w, bias = rand((96, 80), np.float32, rng), rand((96, 72), np.float32, rng), rand((72,), np.float32, rng)
    f = numfn.jit(lambda x, w, b: np.maximum(x.T @ w + b, 0))
    np.testing.assert_allclose(f(x, w, bias), np.maximum(x.T @ w + bias, 0), rtol=1e-5, atol=1e-4)
    nf = f.specializations[0]
    # a transposed operand is passed as it is (BLAS transposes), the bias and relu are one kernel after the call
    assert _kinds(nf) == ["X", "E"], str(nf.schedule)
    ext = next(ei.kernel for ei in nf.schedule if ei.lowered is None)
    assert {u.arg.category for u in ext.inputs} == {"input"}
    # a product with its own transpose is a symmetric rank-k update (SYRK: half the work) and a mirroring kernel
    g = numfn.jit(lambda x: (x @ np.swapaxes(x, -1, -2), np.swapaxes(x, -1, -2) @ x))
    xs = rand((2, 70, 90), np.float32, rng)
    for got, want in zip(g(xs), (xs @ np.swapaxes(xs, -1, -2), np.swapaxes(xs, -1, -2) @ xs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    assert [ei.kernel.name for ei in g.specializations[0].schedule if ei.lowered is None] == ["X_syrk", "X_syrkn1"]


@needs_blas
@pytest.mark.parametrize("sa,sb", [((3, 70, 65), (65, 66)), ((2, 1, 64, 70), (3, 70, 64)), ((70,), (4, 70, 66)),
                                   ((5, 66, 70), (70,))], ids=str)
def test_batched_gemm_broadcasts_like_matmul(sa, sb):
    rng = np.random.default_rng(52)
    a, b = rand(sa, np.float64, rng), rand(sb, np.float64, rng)
    check(lambda a, b: a @ b, a, b, backend="llvm", scale=9.0 * 70)


def _matrix_vector_products(a, x):
    """Every layout GEMV takes: a matrix row- or column-major (a, a.T), a vector contiguous, strided or reversed,
    on either side; stacked matrices; and what it does not take (a matrix with no unit stride, a broadcast vector),
    which is copied or generated."""
    return (a @ x[:a.shape[1]], x[:a.shape[0]] @ a, a.T @ x[:a.shape[0]], x[:a.shape[1]] @ a.T,
            a @ x[::2][:a.shape[1]], a @ x[::-1][:a.shape[1]], x[::-3][:a.shape[0]] @ a,
            a[::2, ::2] @ x[:(a.shape[1] + 1) // 2], np.stack([a, 2 * a]) @ x[:a.shape[1]],
            x[:a.shape[0]] @ np.stack([a, a[::-1]]), np.tanh(a @ x[:a.shape[1]]) + 1)


@needs_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(600, 500), (500, 601), (1, 700)], ids=str)
def test_matrix_vector_products_call_gemv(backend, dtype, shape):
    # a GEMM of one row or column is several times slower than GEMV (x @ A: 0.13x NumPy): products with a vector
    # operand call GEMV, for every operand layout it accepts
    rng = np.random.default_rng(54)
    a, x = rand(shape, dtype, rng), rand((3 * max(shape),), dtype, rng)
    if np.dtype(dtype).kind == "c":
        a, x = a + 1j * rand(shape, dtype, rng), x - 1j * rand(x.shape, dtype, rng)
    f = check(_matrix_vector_products, a, x, backend=backend, scale=9.0 * max(shape))
    externs = [ei.kernel.name for ei in f.specializations[0].schedule if ei.lowered is None]
    if shape[0] > 1:
        assert externs and all(name.startswith("X_gemv") for name in externs), externs


@pytest.fixture
def svmap_threads_stopped_after():
    """svmap's thread pool (started by a large batch) is shut down after the test: other tests count threads (the
    np.random guard of tests/test_random.py only raises while the process has one thread)."""
    yield
    from numfn import transforms
    if transforms._pool is not None:
        transforms._pool.shutdown(wait=True)
        transforms._pool = None


@needs_blas
def test_gemm_under_vmap_svmap_and_threads(svmap_threads_stopped_after):
    rng = np.random.default_rng(53)
    xs, w = rand((6, 64, 70), np.float32, rng), rand((70, 66), np.float32, rng)
    want = np.tanh(xs @ w)
    for mapped in (numfn.vmap(lambda x, w: np.tanh(x @ w), in_axes=(0, None)),
                   numfn.svmap(lambda x, w: np.tanh(x @ w), in_axes=(0, None))):
        np.testing.assert_allclose(mapped(xs, w), want, rtol=1e-5, atol=1e-5)
    f = numfn.jit(lambda x, w: x @ w)
    before = numfn.runtime.threads.thread_count()
    try:
        for threads in (1, 2):
            numfn.set_num_threads(threads)
            np.testing.assert_allclose(f(xs, w), xs @ w, rtol=1e-5, atol=1e-4)
    finally:
        numfn.set_num_threads(before)


def test_without_blas_products_are_generated_and_linalg_refuses(monkeypatch):
    monkeypatch.setenv("NUMFN_BLAS", "none")
    rng = np.random.default_rng(54)
    a = rand((70, 70), np.float64, rng)
    f = numfn.jit(lambda a: a @ a)
    np.testing.assert_allclose(f(a), a @ a, rtol=1e-12, atol=1e-10)
    assert "X" not in _kinds(f.specializations[0])
    with pytest.raises(numfn.NumfnError, match="BLAS"):
        numfn.jit(np.linalg.inv)(a)


# ---------------------------------------------------------------------------------------------------------------
# numpy.linalg against NumPy

L = np.linalg
LINALG_SHAPES = [(4, 4), (1, 1), (0, 0), (3, 5, 5), (2, 1, 3, 3), (0, 2, 2)]


def _tol(dtype):
    return (2e-4, 2e-4) if np.dtype(dtype) == np.float32 else (1e-9, 1e-9)


def _close(actual, expected, dtype, what, scale=1.0):
    expected = np.asarray(expected)
    assert isinstance(actual, np.ndarray), what
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, \
        (what, actual.dtype, expected.dtype, actual.shape, expected.shape)
    rtol, atol = _tol(dtype)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol * scale, equal_nan=True, err_msg=what)


def _spd(a):
    n = a.shape[-1]
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=a.dtype)


def _square_suite(a, b, v):
    """Every square-matrix function, in one jitted function (one compilation per shape and dtype)."""
    s = _spd(a)
    w, q = L.eigh(s)
    sign, logdet = L.slogdet(a)
    return (L.solve(a, b), L.solve(a.T if a.ndim == 2 else a, v), L.inv(a), L.det(a), sign, logdet,
            L.cholesky(s), L.cholesky(s, upper=True), w, L.eigvalsh(s), L.eigvalsh(s, UPLO="U"),
            q @ (w[..., None] * np.swapaxes(q, -1, -2)), L.svd(a, compute_uv=False), L.matrix_rank(a),
            L.matrix_power(a, 3), L.matrix_power(a, 0), L.trace(a), L.norm(a, axis=(-2, -1)),
            # NumPy raises for these norms of empty matrices (a maximum over nothing)
            *((L.norm(a, 1, axis=(-2, -1)), L.norm(a, np.inf, axis=(-2, -1)), L.norm(a, 2, axis=(-2, -1)))
              if a.size else (a.sum(),) * 3), L.norm(a, "nuc", axis=(-2, -1)), L.pinv(a))


# every shape in float64; a representative subset in float32 and int64 (each case compiles one large program)
SQUARE_CASES = [(np.float64, s) for s in LINALG_SHAPES] + [(np.float32, s) for s in LINALG_SHAPES[:4]] + \
    [(np.int64, s) for s in LINALG_SHAPES[::2]]


@needs_blas
@pytest.mark.parametrize("dtype,shape", SQUARE_CASES, ids=lambda x: np.dtype(x).name if isinstance(x, type) else str(x))
def test_square_functions_match_numpy(dtype, shape):
    rng = np.random.default_rng(60)
    n = shape[-1]
    a = (rand(shape, dtype, rng, -4, 4) + (4 * n * np.eye(n) if n else 0)).astype(dtype)   # well conditioned
    b = rand(shape[:-1] + (2,), dtype, rng)
    v = rand((n,), dtype, rng)
    got = numfn.jit(_square_suite)(a, b, v)
    want = _square_suite(a, b, v)
    names = ["solve", "solve1", "inv", "det", "sign", "logdet", "cholesky", "cholesky upper", "eigh w", "eigvalsh",
             "eigvalsh U", "eigh reconstruction", "svdvals", "matrix_rank", "matrix_power", "matrix_power 0", "trace",
             "fro", "norm 1", "norm inf", "norm 2", "nuc", "pinv"]
    for g, e, name in zip(got, want, names):
        if np.asarray(e).dtype.kind in "iu": np.testing.assert_array_equal(g, e, err_msg=name, strict=True)
        else: _close(g, e, dtype, name, scale=max(1.0, float(np.abs(e).max()) if np.size(e) else 1.0))


@needs_blas
@pytest.mark.parametrize("dtype,shape", [(np.float64, s) for s in [(5, 3), (3, 5), (1, 4), (4, 1), (2, 6, 4), (0, 3),
                                                                    (3, 0)]] +
                         [(np.float32, s) for s in [(5, 3), (2, 3, 4)]],
                         ids=lambda x: np.dtype(x).name if isinstance(x, type) else str(x))
def test_rectangular_functions_match_numpy(dtype, shape):
    rng = np.random.default_rng(61)
    a = rand(shape, dtype, rng)

    def suite(a):
        u, s, vt = L.svd(a)
        ur, sr, vtr = L.svd(a, full_matrices=False)
        qr_r, qc_r = L.qr(a), L.qr(a, mode="complete")
        h, tau = L.qr(a, mode="raw")
        k = min(a.shape[-2:])
        return (s, u[..., :, :k] @ (sr[..., :, None] * vtr), u @ np.swapaxes(u, -1, -2),
                vt @ np.swapaxes(vt, -1, -2), ur @ (sr[..., :, None] * vtr), qr_r.Q @ qr_r.R, qc_r.Q @ qc_r.R,
                np.abs(qr_r.R), np.abs(qc_r.R), L.qr(a, mode="r"), h.shape[-1] + 0 * tau.sum(), L.pinv(a),
                L.matrix_rank(a), L.norm(a, axis=(-2, -1)), L.norm(a, -1, axis=(-2, -1)) if a.size else a.sum())
    got, want = numfn.jit(suite)(a), suite(a)
    names = ["s", "u s vt", "u orthogonal", "vt orthogonal", "reduced u s vt", "reduced q r", "complete q r",
             "|r|", "|r| complete", "|r| mode r", "raw", "pinv", "rank", "fro", "norm -1"]
    for g, e, name in zip(got, want, names):
        if name == "|r| mode r": g, e = np.abs(g), np.abs(e)
        _close(np.asarray(g), e, dtype, name, scale=10.0)


@needs_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_lstsq_matches_numpy(dtype):
    rng = np.random.default_rng(62)
    a, b, c = rand((6, 3), dtype, rng), rand((6,), dtype, rng), rand((6, 2), dtype, rng)
    f = numfn.jit(lambda a, b, c: (L.lstsq(a, b), L.lstsq(a, c, rcond=1e-3), L.lstsq(a.T, c[:3]),
                                   L.lstsq(a, c[:, :0])))
    for got, want in zip(f(a, b, c), (L.lstsq(a, b), L.lstsq(a, c, rcond=1e-3), L.lstsq(a.T, c[:3]),
                                      L.lstsq(a, c[:, :0]))):
        for g, e in zip(got, want):
            if np.asarray(e).dtype.kind == "i": assert int(g) == int(e)
            else: _close(g, e, dtype, "lstsq", scale=10.0)


@needs_blas
def test_norms_and_conditions_over_axes_and_orders():
    rng = np.random.default_rng(63)
    x = rand((3, 4, 5), np.float64, rng)
    sq = rand((2, 4, 4), np.float64, rng) + 4 * np.eye(4)
    vec_orders = [None, 0, 1, 2, 3.5, -1, np.inf, -np.inf]
    mat_orders = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]

    def norms(x, sq, i):
        out = [L.norm(x), L.norm(x, keepdims=True), L.norm(x[0, 0]), L.norm(x[0], "fro"), L.norm(i)]
        out += [L.norm(x, o, axis=1) for o in vec_orders] + [L.norm(x, o, axis=-1, keepdims=True) for o in (2, 1)]
        out += [L.norm(x, o, axis=(2, 0)) for o in mat_orders] + [L.norm(x, "fro", axis=(0, 1), keepdims=True)]
        out += [L.cond(sq, p) for p in mat_orders if p is not None] + [L.cond(sq), L.cond(x[:, :2])]
        out += [L.vector_norm(x), L.vector_norm(x, axis=(0, 2)), L.vector_norm(x, ord=1, axis=1, keepdims=True),
                L.matrix_norm(x), L.matrix_norm(x, ord=2, keepdims=True), L.norm(x[0, 0], 2)]
        return tuple(out)
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    for k, (g, e) in enumerate(zip(numfn.jit(norms)(x, sq, i), norms(x, sq, i))):
        _close(g, e, np.float64, f"norm {k}", scale=100.0)


@needs_blas
def test_products_and_small_helpers():
    rng = np.random.default_rng(64)
    a, b, c, d = (rand(s, np.float64, rng) for s in ((4, 7), (7, 3), (3, 9), (9, 2)))
    u, v = rand((3,), np.float32, rng), rand((2, 3), np.float32, rng)
    m = rand((2, 3, 3), np.int32, rng)

    def products(a, b, c, d, u, v, m):
        return (L.multi_dot([a, b, c, d]), L.multi_dot([a[0], b, c]), L.multi_dot([a, b, c[:, 0]]),
                L.multi_dot([a[0], b, c[:, 0]]), L.multi_dot([a, b]), L.cross(u, v), L.cross(v, v[::-1]),
                L.outer(u, v[0]), L.trace(m), L.trace(a, offset=2), L.diagonal(a, offset=-1), L.matrix_transpose(m),
                L.matrix_power(m, 4), L.matrix_power(m.astype(np.float64), -2), L.matmul(a, b),
                L.tensorsolve(np.eye(6).reshape(2, 3, 6) * 2.0 + 0.5 * np.ones((2, 3, 6)), c[:2, :3]),
                L.tensorinv(np.eye(6).reshape(6, 2, 3) + 0.25, ind=1))
    for k, (g, e) in enumerate(zip(numfn.jit(products)(a, b, c, d, u, v, m), products(a, b, c, d, u, v, m))):
        e = np.asarray(e)
        if e.dtype.kind in "iu": np.testing.assert_array_equal(g, e, err_msg=f"product {k}", strict=True)
        else: _close(np.asarray(g), e, e.dtype, f"product {k}", scale=100.0)


@needs_blas
def test_views_and_transposed_operands():
    rng = np.random.default_rng(65)
    a, b = rand((6, 6), np.float64, rng) + 6 * np.eye(6), rand((6, 4), np.float64, rng)

    def views(a, b):
        return (L.solve(a.T, b[::-1]), L.solve(a[::2, ::2], b[:3, 1]), L.inv(a[:, ::-1]), L.det(a[1:4, 2:5]),
                L.cholesky(_spd(a[::-1, ::-1])), L.eigvalsh(_spd(a.T)), L.svd(b.T, compute_uv=False),
                L.qr(b[::2], mode="r"))
    for k, (g, e) in enumerate(zip(numfn.jit(views)(a, b), views(a, b))):
        if k == 7: g, e = np.abs(g), np.abs(e)
        _close(g, e, np.float64, f"view {k}", scale=10.0)


@needs_blas
def test_ill_conditioned_systems_follow_numpy():
    # Hilbert matrices: the same LAPACK algorithm, so the same answers to far more digits than the condition allows
    n = 8
    h = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)
    b = np.ones(n)
    f = numfn.jit(lambda h, b: (L.solve(h, b), L.cond(h), L.det(h), L.eigvalsh(h)))
    got = f(h, b)
    want = (L.solve(h, b), L.cond(h), L.det(h), L.eigvalsh(h))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-4)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-4)
    np.testing.assert_allclose(got[3], want[3], rtol=1e-6, atol=1e-16)


@needs_blas
def test_singular_and_indefinite_matrices_raise_numpys_errors(backend):
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    stack = np.stack([np.eye(2), singular, np.eye(2)])
    cases = [(L.inv, (singular,), "Singular matrix"), (lambda a, b: L.solve(a, b), (stack, np.ones((3, 2, 1))),
                                                      "Singular matrix"),
             (L.cholesky, (-np.eye(3),), "Matrix is not positive definite"),
             (L.cholesky, (np.float32([[1, 2], [2, 1]]),), "Matrix is not positive definite")]
    for fn, args, message in cases:
        with pytest.raises(L.LinAlgError, match=message):
            fn(*args)
        with pytest.raises(L.LinAlgError, match=message):
            numfn.jit(fn, backend=backend)(*args)
    # no error where NumPy gives none: the determinant of a singular matrix is 0, slogdet's sign 0
    check(lambda a: (L.det(a), L.slogdet(a), L.cond(a, 1), L.matrix_rank(a)), stack, backend=backend)


@needs_blas
def test_invalid_arguments_raise_like_numpy():
    sq, rect = np.ones((3, 3)), np.ones((2, 3))
    for fn, args in [(L.inv, (rect,)), (L.det, (np.ones(3),)), (L.cholesky, (rect,)), (L.eigh, (rect,)),
                     (lambda a, b: L.solve(a, b), (sq, np.ones(2))),
                     (lambda a, b: L.solve(a, b), (sq, np.ones((2, 1)))),
                     (lambda a: L.qr(a, mode="bad"), (sq,)), (lambda a: L.eigh(a, UPLO="X"), (sq,)),
                     (lambda a: L.norm(a, "bad"), (sq,)), (lambda a: L.norm(a, 3, axis=(0, 1)), (sq,)),
                     (lambda a: L.norm(a, axis=(0, 0)), (sq,)), (lambda a: L.lstsq(a, a[:2]), (sq,)),
                     (lambda a: L.multi_dot([a]), (sq,)), (lambda a: L.matrix_power(a, 1.5), (sq,)),
                     (lambda a: L.cross(a, a), (rect[:, :2],)), (lambda a: L.outer(a, a), (sq,)),
                     (lambda a: L.cond(a[:0]), (sq,))]:
        check_raises_like(fn, *args, backend="llvm")


@needs_blas
def test_linalg_under_vmap_and_svmap_with_errors(svmap_threads_stopped_after):
    rng = np.random.default_rng(66)
    a = rand((5, 4, 4), np.float64, rng) + 4 * np.eye(4)
    b = rand((5, 4), np.float64, rng)
    f = lambda a, b: (L.solve(a, b), L.det(a), L.eigvalsh(_spd(a)), L.svd(a, compute_uv=False))  # noqa: E731
    want = tuple(np.stack(x) for x in zip(*[f(a[i], b[i]) for i in range(5)]))
    for mapped in (numfn.vmap(f), numfn.svmap(f)):
        for g, e in zip(mapped(a, b), want): _close(g, e, np.float64, "mapped", scale=10.0)
        bad = a.copy()
        bad[3] = 0
        with pytest.raises(L.LinAlgError, match="Singular matrix"):
            mapped(bad, b)


@needs_blas
def test_linalg_results_with_threads_on_and_off():
    rng = np.random.default_rng(67)
    a = rand((96, 96), np.float64, rng) + 96 * np.eye(96)
    # a batch of small LAPACK calls (above SMALL_N: 8x8 systems are generated code) runs on numfn's threads
    many = rand((1200, 12, 12), np.float64, rng) + 12 * np.eye(12)
    rhs = rand((1200, 12, 2), np.float64, rng)
    f = numfn.jit(lambda a, m, r: (L.inv(a), L.eigvalsh(_spd(a)), L.svd(a, compute_uv=False), a @ a.T,
                                   L.solve(m, r), L.det(m)))
    assert any(k.program.parallel for k in f.specialize(a, many, rhs).rendered_kernels if k.name.startswith("X_gesv"))
    want = (L.inv(a), L.eigvalsh(_spd(a)), L.svd(a, compute_uv=False), a @ a.T, L.solve(many, rhs), L.det(many))
    before = numfn.runtime.threads.thread_count()
    try:
        for threads in (1, 2):
            numfn.set_num_threads(threads)
            for g, e in zip(f(a, many, rhs), want): _close(g, e, np.float64, f"threads={threads}", scale=1000.0)
    finally:
        numfn.set_num_threads(before)


@needs_blas
def test_np_linalg_dispatches_and_namedtuples():
    a = np.eye(3) * 2.0
    out = numfn.jit(lambda a: (np.linalg.eigh(a), np.linalg.svd(a), np.linalg.slogdet(a), np.linalg.qr(a)))(a)
    assert type(out[0]).__name__ == "EighResult" and type(out[1]).__name__ == "SVDResult"
    assert type(out[2]).__name__ == "SlogdetResult" and type(out[3]).__name__ == "QRResult"
    np.testing.assert_allclose(out[2].logabsdet, np.log(8.0))


def test_blas_is_numpys_own_library_when_numpy_ships_one():
    """One OpenBLAS (and one pool of BLAS threads) in the process: with a second copy loaded, each copy's idle
    workers starved the other's, and small products took milliseconds instead of microseconds on a busy machine."""
    from numfn.runtime import blas
    own = blas._from_numpy()
    if own is None or blas.interface() is None: pytest.skip("NumPy's wheel has no scipy-openblas here")
    assert blas.interface().path == own.path
