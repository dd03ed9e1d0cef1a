"""numpy.linalg on complex input (LAPACK's z routines; complex64 computed in complex128 and cast back, as NumPy does)
and the general eigensolver (eig, eigvals) against NumPy: norms of every order, solvers, factorizations,
determinants, least squares, over complex64 and complex128, stacked, empty, non-contiguous and negative-stride
inputs. Each case is one jitted function computing many results, so a (dtype, shape) compiles once."""
import numpy as np
import pytest

import numfn
from numfn.runtime import blas
from helpers import assert_same, check, check_raises_like, numpy_result, rand

L = np.linalg
needs_blas = pytest.mark.skipif(blas.interface() is None, reason="no BLAS/LAPACK library")
COMPLEX = (np.complex64, np.complex128)


def crand(shape, dtype, rng, lo=-3.0, hi=3.0) -> np.ndarray:
    """Random complex values (both parts uniform in [lo, hi)) of a complex dtype, or real ones of a real dtype."""
    if np.dtype(dtype).kind != "c": return rand(shape, dtype, rng, lo, hi)
    return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dtype)


def _rtol(dtype) -> float:
    return 2e-4 if np.dtype(dtype) in (np.dtype(np.complex64), np.dtype(np.float32)) else 1e-10


# ---------------------------------------------------------------------------------------------------------------
# norms: NumPy's |x|^2 is (x.conj() * x).real, not x * x (the first bug: norm of a complex matrix was wrong)

def test_norm_of_a_complex_matrix_is_numpys():
    a = np.array([[4, 1 + 1j], [1 - 1j, 3]])
    got = numfn.jit(lambda a: (L.norm(a), L.norm(a, "fro"), L.matrix_norm(a), L.vector_norm(a), L.norm(a, axis=0),
                               L.norm(a[0], 2), L.norm(a[0], 3)))(a)
    want = (np.sqrt(29.0), np.sqrt(29.0), np.sqrt(29.0), np.sqrt(29.0), np.array([np.sqrt(18.0), np.sqrt(11.0)]),
            np.sqrt(18.0), (4.0 ** 3 + 2 ** 1.5) ** (1 / 3))
    for g, w in zip(got, want):
        assert g.dtype == np.float64
        np.testing.assert_allclose(g, w, rtol=1e-14)


VECTOR_ORDS = (None, 2, np.inf, -np.inf, 0, 1, -1, 3, 0.5, -2.5)
MATRIX_ORDS = (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)


def _norms(x):
    """Every vector norm over the last axis and every matrix norm over the last two (x: (..., m, n), m, n > 0),
    plus the defaults over all axes and the array-API spellings."""
    out = [L.norm(x), L.norm(x, keepdims=True), L.vector_norm(x), L.vector_norm(x, ord=1, axis=(0, -1)),
           L.matrix_norm(x), L.matrix_norm(x, ord="nuc", keepdims=True)]
    out += [L.norm(x, o, axis=-1) for o in VECTOR_ORDS]
    out += [L.norm(x, o, axis=(-2, -1)) for o in MATRIX_ORDS]
    out += [L.norm(x, o, axis=(-1, -2), keepdims=True) for o in (1, np.inf)]
    out += [L.norm(x[..., 0, :]), L.norm(x[..., 0, :], 2), L.norm(x.reshape(-1)),
            L.norm(x.reshape(-1, x.shape[-1]), "fro")]
    return tuple(out)


def _views(a):
    """a itself, a non-contiguous view (every other row) and a negative-stride view (columns reversed)."""
    return a, a[..., ::2, :], a[..., ::-1]


@pytest.mark.parametrize("dtype,shape", [(np.complex128, s) for s in [(1, 1), (4, 3), (2, 5, 3)]] +
                         [(np.complex64, (2, 5, 3)), (np.float32, (4, 3))],
                         ids=lambda x: np.dtype(x).name if isinstance(x, type) else str(x))
def test_norms_of_every_order_match_numpy(dtype, shape):
    rng = np.random.default_rng(1)
    a = crand(shape, dtype, rng)
    a.flat[0] = 0   # a zero entry: ord 0 counts it out, negative orders see it
    f = numfn.jit(_norms)
    for x in _views(a):
        check(_norms, x, backend="llvm", jitted=f, rtol=_rtol(dtype), scale=10.0)


def _empty_norms(x):
    """The norms NumPy defines on empty input (x: (..., m, n) with m or n 0): maxima start from 0 (NumPy's
    initial=0 for the vector inf-norm and the matrix 1-, inf- and 2-norms), sums are 0."""
    return (L.norm(x), L.norm(x, axis=-1), L.norm(x, 2, axis=-1), L.norm(x, 0, axis=-1), L.norm(x, 1, axis=-1),
            L.norm(x, np.inf, axis=-1), L.norm(x, np.inf, axis=-2), L.norm(x, 3, axis=-1), L.vector_norm(x),
            *(L.norm(x, o, axis=(-2, -1)) for o in ("fro", "nuc", 1, np.inf, 2)), L.matrix_norm(x, ord=1))


@pytest.mark.parametrize("dtype", COMPLEX + (np.float64,), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (2, 0, 3), (2, 3, 0)], ids=str)
def test_norms_of_empty_arrays(dtype, shape):
    check(_empty_norms, np.zeros(shape, dtype), backend="llvm")


# ---------------------------------------------------------------------------------------------------------------
# square matrices: every function in one jitted program per (dtype, shape)

def _hermitian_pd(a):
    """A Hermitian positive definite matrix (stack) from a: a a^H + n I."""
    n = a.shape[-1]
    return a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n, dtype=a.dtype)


def _from_eigh(w, q):
    """q diag(w) q^H: what eigh's vectors must give back, whatever their phases."""
    return q @ (w[..., :, None] * np.conj(np.swapaxes(q, -1, -2)))


def _square_suite(a, b, v, h, view):
    """a (..., n, n) well conditioned, b (..., n, 2), v (n,), h Hermitian positive definite, view: a non-contiguous,
    negative-stride view of the same shape as a. NumPy raises for maxima over empty matrices (cond, the 2-norm):
    those only where a is not empty."""
    w, q = L.eigh(h)
    wu, qu = L.eigh(h, UPLO="U")
    sign, logdet = L.slogdet(a)
    u, s, vh = L.svd(a)
    ew, ev = L.eig(a)
    out = [L.solve(a, b), L.solve(a, v), L.inv(a), L.det(a), sign, logdet, L.cholesky(h), L.cholesky(h, upper=True),
           w, q, _from_eigh(w, q), wu, _from_eigh(wu, qu), L.eigvalsh(h), L.eigvalsh(h, UPLO="U"), s, u, vh,
           L.svd(a, compute_uv=False), L.svdvals(a), L.matrix_rank(a), L.matrix_power(a, 3), L.matrix_power(a, 0),
           L.matrix_power(a, -2), L.trace(a), L.trace(a, offset=1), L.pinv(a), ew, ev, L.eigvals(a),
           L.qr(a).Q @ L.qr(a).R, L.qr(a, mode="r"), L.matrix_norm(a, ord="nuc"), L.norm(a, axis=(-2, -1)),
           L.det(view), L.solve(view, b), L.inv(view), L.eigvals(view), L.svdvals(view), L.cholesky(_hermitian(view))]
    if a.size:
        out += [L.cond(a), L.cond(a, -2), L.cond(a, 1), L.cond(a, np.inf), L.cond(a, "fro"), L.cond(a, "nuc"),
                L.norm(a, 2, axis=(-2, -1)), L.norm(a, 1, axis=(-2, -1)), L.norm(a, -np.inf, axis=(-2, -1))]
    return tuple(out)


def _hermitian(x):
    """A Hermitian positive definite matrix made of x inside the traced function (x x^H + n I)."""
    n = x.shape[-1]
    return x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)


def _square_inputs(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    n = shape[-1]
    a = (crand(shape, dtype, rng, -1, 1) + (2 * n * np.eye(n) if n else 0)).astype(dtype)   # well conditioned
    b = crand(shape[:-1] + (2,), dtype, rng)
    v = crand((n,), dtype, rng)
    big = crand(shape[:-2] + (2 * n, 2 * n), dtype, rng, -1, 1)
    view = big[..., ::2, ::-2]   # every other row and column, the columns reversed
    view += 2 * n * np.eye(n, dtype=dtype)[:, ::-1] if n else 0
    assert not view.flags.c_contiguous or view.size <= 1
    return a, b, v, _hermitian_pd(a), view


# each case compiles one large program: one matrix, 1x1 and empty ones in complex128, a stack of two batch axes in
# complex64; the test after takes a stack in complex128 on both backends
SQUARE_CASES = [(np.complex128, s) for s in [(4, 4), (1, 1), (0, 0), (0, 3, 3)]] + \
    [(np.complex64, s) for s in [(2, 2, 3, 3), (0, 0)]]


@needs_blas
@pytest.mark.parametrize("dtype,shape", SQUARE_CASES, ids=lambda x: np.dtype(x).name if isinstance(x, type) else str(x))
def test_square_functions_match_numpy(dtype, shape):
    args = _square_inputs(dtype, shape, seed=len(shape) * 10 + shape[-1])
    check(_square_suite, *args, backend="llvm", rtol=_rtol(dtype), scale=30.0)


@needs_blas
def test_square_functions_of_stacks_on_both_backends(backend):
    args = _square_inputs(np.complex128, (3, 4, 4), seed=5)
    check(_square_suite, *args, backend=backend, rtol=_rtol(np.complex128), scale=30.0)


# ---------------------------------------------------------------------------------------------------------------
# rectangular matrices: SVD, QR in every mode, pseudo-inverse, rank, least squares

def _rectangular_suite(a):
    u, s, vh = L.svd(a)
    ur, sr, vhr = L.svd(a, full_matrices=False)
    q, r = L.qr(a)
    qc, rc = L.qr(a, mode="complete")
    h, tau = L.qr(a, mode="raw")
    out = [u, s, vh, ur, sr, vhr, q, r, qc, rc, L.qr(a, mode="r"), h, tau, L.pinv(a), L.pinv(a, rtol=0.1),
           L.matrix_rank(a), L.matrix_rank(a, tol=1.0), L.svdvals(a)]
    if a.size: out += [L.norm(a, 2, axis=(-2, -1)), L.norm(a, "nuc", axis=(-2, -1)), L.norm(a, -1, axis=(-2, -1))]
    return tuple(out)


@needs_blas
@pytest.mark.parametrize("dtype,shape", [(np.complex128, s) for s in [(5, 3), (3, 5), (1, 4), (2, 6, 4), (0, 3),
                                                                      (3, 0), (2, 0, 4)]] +
                         [(np.complex64, (2, 3, 4))],
                         ids=lambda x: np.dtype(x).name if isinstance(x, type) else str(x))
def test_rectangular_functions_match_numpy(dtype, shape):
    rng = np.random.default_rng(sum(shape))
    a = crand(shape, dtype, rng)
    check(_rectangular_suite, a, backend="llvm", rtol=_rtol(dtype), scale=30.0)
    wide = crand(shape[:-2] + (shape[-2], 2 * shape[-1]), dtype, rng)[..., ::-2]   # a negative-stride view
    check(_rectangular_suite, wide, backend="llvm", rtol=_rtol(dtype), scale=30.0)


@needs_blas
@pytest.mark.parametrize("dtype", COMPLEX + (np.float32,), ids=lambda d: np.dtype(d).name)
def test_lstsq_matches_numpy(dtype):
    rng = np.random.default_rng(7)
    a, b, c = crand((6, 3), dtype, rng), crand((6,), dtype, rng), crand((6, 2), dtype, rng)

    def fn(a, b, c):
        return (L.lstsq(a, b), L.lstsq(a, c, rcond=1e-3), L.lstsq(a.T, c[:3]), L.lstsq(np.conj(a.T), c[:3, ::-1]),
                L.lstsq(a, c[:, :0]), L.lstsq(a[:0], c[:0]), L.lstsq(a[::-2], b[::2]))
    check(fn, a, b, c, backend="llvm", rtol=_rtol(dtype), scale=30.0)


@needs_blas
@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: np.dtype(d).name)
def test_products_and_helpers_of_complex_input(dtype):
    rng = np.random.default_rng(8)
    a, b, c = crand((4, 7), dtype, rng), crand((7, 3), dtype, rng), crand((3, 5), dtype, rng)
    u, v, m = crand((3,), dtype, rng), crand((2, 3), dtype, rng), crand((2, 3, 3), dtype, rng)

    def fn(a, b, c, u, v, m):
        return (L.multi_dot([a, b, c]), L.multi_dot([a[0], b, c[:, 0]]), L.cross(u, v), L.cross(v, v[::-1]),
                L.outer(u, v[0]), L.trace(m), L.trace(a, offset=-1), L.diagonal(m, offset=1), L.matrix_transpose(m),
                L.matrix_power(m, 5), L.matmul(a, b),
                L.tensorsolve(np.eye(6).reshape(2, 3, 6) * (2 + 1j) + 0.5 * a[:2, :3, None], c[:2, :3]),
                L.tensorinv(np.eye(6).reshape(6, 2, 3) * (1 - 1j) + 0.25 * m[0, 0, 0], ind=1))
    check(fn, a, b, c, u, v, m, backend="llvm", rtol=_rtol(dtype), scale=30.0)


# ---------------------------------------------------------------------------------------------------------------
# the general eigensolver: eig and eigvals (LAPACK geev)

def _eig_suite(a):
    w, v = L.eig(a)
    return w, v, L.eigvals(a)


def _check_eig(a, rtol, jitted=None):
    """numfn's eig/eigvals of a against NumPy's: complex results always (NumPy's are real for real input whose
    eigenvalues are all real: numfn's imaginary parts are then exactly zero), the same values in the same order
    (the same LAPACK routine), and A v = v w."""
    got = (jitted or numfn.jit(_eig_suite))(a)
    want = numpy_result(_eig_suite, (a,))
    complex_type = np.result_type(a.dtype, np.complex64)
    for g, e, name in zip(got, want, ("w", "v", "eigvals")):
        assert g.dtype == complex_type and g.shape == e.shape, (name, g.dtype, g.shape, e.shape)
        if e.dtype.kind != "c": assert np.all(g.imag == 0), f"{name}: NumPy's result is real, numfn's is not"
        assert_same(g, e.astype(complex_type), rtol=rtol, scale=10.0, path=name)
    w, v, _ = got
    if a.size:
        a64, v64, w64 = a.astype(np.complex128), v.astype(np.complex128), w.astype(np.complex128)
        residual = np.abs(a64 @ v64 - v64 * w64[..., None, :]).max()
        assert residual <= rtol * 100 * max(1.0, np.abs(a64).max()), residual
        np.testing.assert_allclose(np.linalg.norm(v64, axis=-2), 1.0, rtol=rtol * 10)


def _real_eig_inputs(rng, dtype):
    """(3, 5, 5) stacks: general matrices (complex conjugate pairs of eigenvalues), and symmetric ones (all real)."""
    general = rand((3, 5, 5), dtype, rng)
    symmetric = general + np.swapaxes(general, -1, -2)
    return general, symmetric


@needs_blas
@pytest.mark.parametrize("dtype", (np.float64, np.float32), ids=lambda d: np.dtype(d).name)
def test_eig_of_real_input_is_numpys_as_complex(dtype):
    rng = np.random.default_rng(11)
    general, symmetric = _real_eig_inputs(rng, dtype)
    f = numfn.jit(_eig_suite)
    for a in (general, symmetric, general[::-1, ::-1, :]):   # one specialization: shapes and dtypes alike
        _check_eig(a, _rtol(dtype), f)
    assert np.linalg.eigvals(symmetric).dtype.kind == "f"    # (what NumPy returns: the one documented difference)


@needs_blas
def test_eig_of_special_real_matrices():
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])       # eigenvalues +-i
    defective = np.array([[1.0, 1.0], [0.0, 1.0]])       # a double eigenvalue, one eigenvector direction
    triangular = np.array([[2.0, 3.0], [0.0, -1.0]])
    scaled_rotation = np.array([[1.0, -4.0], [1.0, 1.0]])   # 1 +- 2i
    _check_eig(np.stack([rotation, defective, triangular, scaled_rotation]), 1e-10)
    for shape in [(1, 1), (0, 0), (0, 3, 3)]:
        _check_eig(np.full(shape, 2.5), 1e-10)


@needs_blas
@pytest.mark.parametrize("dtype,shape", [(np.complex128, (4, 4)), (np.complex128, (2, 3, 3)), (np.complex128, (1, 1)),
                                         (np.complex128, (0, 2, 2)), (np.complex64, (2, 3, 3))],
                         ids=lambda x: np.dtype(x).name if isinstance(x, type) else str(x))
def test_eig_of_complex_input_matches_numpy(dtype, shape):
    rng = np.random.default_rng(12)
    a = crand(shape, dtype, rng)
    f = check(_eig_suite, a, backend="llvm", rtol=_rtol(dtype), scale=10.0)
    _check_eig(a, _rtol(dtype), f)
    hermitian = a + np.conj(np.swapaxes(a, -1, -2))   # real eigenvalues, as complex numbers: NumPy's too
    check(_eig_suite, hermitian, backend="llvm", rtol=_rtol(dtype), scale=10.0, jitted=f)


@needs_blas
def test_eig_under_vmap_is_numpys_on_each_matrix():
    rng = np.random.default_rng(13)
    a = crand((4, 3, 3), np.complex128, rng)
    w, v = numfn.vmap(L.eig)(a)
    want = L.eig(a)
    assert_same((w, v), (want.eigenvalues, want.eigenvectors), rtol=1e-10, scale=10.0)


# ---------------------------------------------------------------------------------------------------------------
# errors: NumPy's types and messages

SINGULAR = np.array([[1, 1j], [1j, -1]])          # exactly singular: LU's second pivot is -1 - 1j * 1j = 0
INDEFINITE = np.array([[1, 2j], [-2j, 1]])        # Hermitian, eigenvalues -1 and 3
NOT_FINITE = np.array([[1, np.nan], [0, 1j]])


@needs_blas
@pytest.mark.parametrize("fn,args,match", [
    (L.solve, (SINGULAR, np.ones(2, complex)), "Singular matrix"),
    (L.inv, (SINGULAR,), "Singular matrix"),
    (L.inv, (np.stack([np.eye(2, dtype=complex), SINGULAR]),), "Singular matrix"),
    (L.cholesky, (INDEFINITE,), "Matrix is not positive definite"),
    (L.cholesky, (INDEFINITE.astype(np.complex64),), "Matrix is not positive definite"),
    (L.eig, (NOT_FINITE,), "Array must not contain infs or NaNs"),
    (L.eigvals, (np.array([[1.0, np.inf], [0.0, 1.0]]),), "Array must not contain infs or NaNs"),
    (L.eig, (np.ones((2, 3), complex),), "Last 2 dimensions of the array must be square"),
    (L.det, (np.ones(3, complex),), "1-dimensional array given. Array must be at least two-dimensional"),
    (L.svd, (np.ones(3, complex),), "1-dimensional array given"),
    (lambda a: L.eigh(a, "X"), (np.eye(2, dtype=complex),), "UPLO argument must be 'L' or 'U'"),
    (L.inv, (np.eye(2, dtype=np.float16),), "array type float16 is unsupported in linalg"),
    (L.eig, (np.eye(2, dtype=np.float16),), "array type float16 is unsupported in linalg"),
    (L.cond, (np.eye(2, dtype=np.float16),), "array type float16 is unsupported in linalg"),
], ids=["solve", "inv", "inv stacked", "cholesky", "cholesky complex64", "eig nan", "eigvals inf", "eig not square",
        "det 1-d", "svd 1-d", "eigh uplo", "inv float16", "eig float16", "cond float16"])
def test_errors_are_numpys(fn, args, match):
    check_raises_like(fn, *args, backend="llvm", match=match)


def test_what_numpy_computes_on_float16():
    """NumPy refuses float16 in LAPACK's functions (above), but norms, and the pseudo-inverse of an empty matrix (an
    empty float16 array), it gives."""
    def fn(x): return L.pinv(x[:, :0]), L.norm(x), L.norm(x, 1, axis=-1)
    check(fn, np.arange(6, dtype=np.float16).reshape(2, 3), backend="llvm")


@needs_blas
def test_singular_complex_determinants_are_numpys():
    def fn(a): return L.det(a), L.slogdet(a), L.matrix_rank(a), L.cond(a, 1)
    check(fn, np.stack([SINGULAR, np.eye(2) * (1 + 2j), SINGULAR[::-1]]), backend="llvm", rtol=1e-12)
