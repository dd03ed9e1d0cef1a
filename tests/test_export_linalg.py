"""numfn.export of linear algebra and threads: functions calling LAPACK (np.linalg.solve, inv, det, slogdet,
cholesky, eigh, qr, svd, and the matrix products beside them) exported as portable C (numfn.export.linalg), built
with clang and gcc (-std=c99 -Wall -Wextra -Werror; gcc on every case with NUMFN_LONG_TESTS=1), run from the
generated driver and compared with NumPy; one case of each routine under -fsanitize=address,undefined;
blas="system" against the system's LAPACKE/OpenBLAS where installed; threads=N against the single-threaded export
(bitwise).

Tolerances (documented in docs/export.md): on these well-conditioned float64 matrices (a + n I, condition number
below 10) the portable routines agree with NumPy's LAPACK to rtol 1e-10 / atol 1e-10 times the result's magnitude;
eigenvectors agree up to sign (each column compared by its absolute values and by a v = v w)."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

import numfn
from numfn.export import ExportError, driver
from numfn.pytree import flatten

pytestmark = pytest.mark.skipif(not (os.environ.get("NUMFN_CC") or shutil.which("clang") or shutil.which("cc")),
                                reason="export tests build C: no C compiler (clang or cc) on PATH")
# the whole compiler and library matrix (gcc, system LAPACKE on every case) runs with NUMFN_LONG_TESTS=1; the
# default run keeps one case of each (the suite's time budget)
LONG = os.environ.get("NUMFN_LONG_TESTS", "") not in ("", "0")
HAS_LAPACKE = os.path.exists("/usr/include/lapacke.h") and any(
    os.path.exists(os.path.join(d, "libopenblas.so")) for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"))


def _rng(seed=0):
    return np.random.default_rng(seed)


def _well(n, seed=0, dtype=np.float64, batch=()):
    """A well-conditioned matrix (or stack): random entries plus n on the diagonal."""
    return (_rng(seed).standard_normal(batch + (n, n)) + n * np.eye(n)).astype(dtype)


def _spd(n, seed=0):
    a = _rng(seed).standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def solve(a, b):
    return np.linalg.solve(a, b)


def inverse(a):
    return np.linalg.inv(a)


def determinant(a):
    return np.linalg.det(a), np.linalg.slogdet(a)


def cholesky(s):
    return np.linalg.cholesky(s)


def eigenvalues(s):
    return np.linalg.eigvalsh(s)


def eigh(s):
    return np.linalg.eigh(s)


def qr(a):
    return np.linalg.qr(a)


def svd(a):
    return np.linalg.svd(a)


def svd_reduced(a):
    return np.linalg.svd(a, full_matrices=False)


def singular_values(a):
    return np.linalg.svd(a, compute_uv=False)


def through_svd(a):
    """NumPy functions numfn computes from gesdd."""
    return np.linalg.pinv(a), np.linalg.matrix_rank(a), np.linalg.norm(a, 2), np.linalg.cond(a[:40])


def mixed(a, b, s):
    """Linear algebra with products around it: the products become GEMM calls, exported as C too."""
    x = np.linalg.solve(a, b)
    return a @ x - b, np.linalg.cholesky(s) @ a.T, x.sum()


# id -> (function, argument maker, relative tolerance)
CASES = {
    "solve_vector": (solve, lambda: [_well(40), _rng(1).standard_normal(40)], 1e-10),
    "solve_matrix": (solve, lambda: [_well(40), _rng(1).standard_normal((40, 7))], 1e-10),
    "solve_stacked": (solve, lambda: [_well(24, batch=(3,)), _rng(1).standard_normal((3, 24, 2))], 1e-10),
    "solve_float32": (solve, lambda: [_well(40, dtype=np.float32), _rng(1).standard_normal(40).astype(np.float32)],
                      1e-4),
    "inv": (inverse, lambda: [_well(40)], 1e-10),
    "det_slogdet": (determinant, lambda: [_well(40) / 40], 1e-10),
    "cholesky": (cholesky, lambda: [_spd(40)], 1e-10),
    "eigvalsh": (eigenvalues, lambda: [_spd(40)], 1e-10),
    "eigh": (eigh, lambda: [_spd(40)], 1e-9),
    "qr_tall": (qr, lambda: [_rng().standard_normal((50, 40))], 1e-10),
    "qr_wide": (qr, lambda: [_rng().standard_normal((40, 60))], 1e-10),
    "svd_tall": (svd, lambda: [_rng().standard_normal((50, 40))], 1e-10),
    "svd_wide": (svd, lambda: [_rng().standard_normal((40, 50))], 1e-10),
    "svd_reduced_wide": (svd_reduced, lambda: [_rng().standard_normal((2, 40, 45))], 1e-10),
    "svd_rank_deficient": (svd, lambda: [np.outer(_rng().standard_normal(40), _rng(1).standard_normal(36))], 1e-10),
    "singular_values": (singular_values, lambda: [_rng().standard_normal((45, 40))], 1e-10),
    "pinv_rank_norm_cond": (through_svd, lambda: [_rng().standard_normal((45, 40))], 1e-10),
    "mixed_products": (mixed, lambda: [_well(48), _rng(1).standard_normal((48, 48)), _spd(48, 2)], 1e-10),
}


def _leaves(tree):
    return [np.asarray(x) for x in flatten(tree)[0]]


def _compare(case, outs, want, rtol):
    assert len(outs) == len(want)
    for got, w in zip(outs, want):
        assert got.shape == w.shape and got.dtype == w.dtype, (case, got.shape, w.shape, got.dtype, w.dtype)
        scale = max(float(np.max(np.abs(w))), 1.0) if w.size else 1.0
        if case.startswith("svd") and got.ndim >= 2:   # singular vectors: checked in _check_svd
            continue
        if case == "eigh" and got.ndim == 2:   # eigenvectors: up to each column's sign
            np.testing.assert_allclose(np.abs(got), np.abs(w), rtol=rtol, atol=rtol * scale)
            continue
        np.testing.assert_allclose(got, w, rtol=rtol, atol=rtol * scale, err_msg=case)


def _check_svd(a, outs):
    """u, s, vt: an SVD of a (u s vt == a, u and vt orthonormal), s NumPy's singular values."""
    u, s, vt = outs
    k = s.shape[-1]
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-10, atol=1e-10 * s.max())
    np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :], a, atol=1e-10 * s.max())
    for q in (u, np.swapaxes(vt, -1, -2)):   # orthonormal columns of u, rows of vt
        eye = np.eye(q.shape[-1])
        np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(eye, q.shape[:-2] + eye.shape),
                                   atol=1e-12)


def _run(tmp_path, case, flags=driver.NUMFN_FLAGS + driver.STRICT_WARNINGS, compiler=None, **options):
    fn, make, _ = CASES[case]
    args = make()
    exported = numfn.export(fn, *args, name=case, dir=str(tmp_path), **options)
    exe = driver.build(exported, flags=flags, compiler=compiler)
    status, outs, _ = driver.run(exported, exe, args)
    return fn, args, exported, status, outs


# one case per routine: getrf/gesv (solve, det), potrf, syevd, geqrf/orgqr, gesdd, gemm; these are compared with
# NumPy under the sanitizers, the other cases in an ordinary build (every case with NUMFN_LONG_TESTS=1)
SANITIZED = ["solve_stacked", "det_slogdet", "cholesky", "eigh", "qr_wide", "svd_wide", "mixed_products"]


@pytest.mark.parametrize("case", [c for c in CASES if LONG or c not in SANITIZED])
def test_linalg_export_matches_numpy(tmp_path, case):
    fn, args, exported, status, outs = _run(tmp_path, case)
    assert status == 0
    assert "LAPACK" not in exported.library.source or "export_" in exported.library.source
    assert "lapacke" not in exported.library.source.lower() and "cblas" not in exported.library.source
    want = _leaves(fn(*args))
    _compare(case, outs, want, CASES[case][2])
    if case.startswith("svd"): _check_svd(args[0], outs)
    if case == "eigh":   # each pair is an eigenpair of the input: s v = w v
        w, v = outs
        np.testing.assert_allclose(args[0] @ v, v * w, atol=1e-9 * np.abs(w).max())
        np.testing.assert_allclose(v.T @ v, np.eye(len(w)), atol=1e-12)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
@pytest.mark.parametrize("case", ["mixed_products", "eigh"] + (["solve_matrix", "inv", "det_slogdet", "cholesky",
                                                                 "qr_tall", "solve_float32", "svd_wide"]
                                                                if LONG else []))
def test_linalg_export_with_gcc(tmp_path, case):
    flags = ("-O2", *driver.REQUIRED_CFLAGS, *driver.STRICT_WARNINGS, "-pedantic")
    fn, args, _, status, outs = _run(tmp_path, case, flags=flags, compiler=("gcc",))
    assert status == 0
    _compare(case, outs, _leaves(fn(*args)), CASES[case][2])


@pytest.mark.parametrize("case", SANITIZED)
def test_linalg_export_under_sanitizers(tmp_path, case):
    flags = ("-O1", *driver.REQUIRED_CFLAGS, *driver.STRICT_WARNINGS, *driver.SANITIZE)
    try:
        fn, args, _, status, outs = _run(tmp_path, case, flags=flags)
    except subprocess.CalledProcessError as e:
        if "sanitize" in e.stderr and "unsupported" in e.stderr: pytest.skip("the C compiler has no sanitizers")
        raise
    assert status == 0
    _compare(case, outs, _leaves(fn(*args)), CASES[case][2])
    if case.startswith("svd"): _check_svd(args[0], outs)
    if case == "eigh":
        w, v = outs
        np.testing.assert_allclose(args[0] @ v, v * w, atol=1e-9 * np.abs(w).max())


def test_singular_matrix_is_numpys_error_code(tmp_path):
    """LU finds a zero pivot: the call returns the check NumPy raises LinAlgError for, as numfn's own call."""
    a = _well(40)
    exported = numfn.export(solve, a, np.ones(40), dir=str(tmp_path))
    singular = a.copy()
    singular[:, 3] = 0
    status, _, _ = driver.run(exported, driver.build(exported), [singular, np.ones(40)])
    assert status > 0
    assert "LinAlgError" in exported.library.errors[status - 1]
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.solve(singular, np.ones(40))
    not_positive = -_spd(40)
    exported = numfn.export(cholesky, _spd(40), dir=str(tmp_path / "c"))
    status, _, _ = driver.run(exported, driver.build(exported), [not_positive])
    assert status > 0 and "LinAlgError" in exported.library.errors[status - 1]


@pytest.mark.skipif(not HAS_LAPACKE, reason="no system LAPACKE/OpenBLAS (liblapacke-dev, libopenblas-dev)")
@pytest.mark.parametrize("case", ["mixed_products", "eigh"] + (["solve_stacked", "det_slogdet", "cholesky", "qr_tall",
                                                                 "svd_tall", "svd_reduced_wide"] if LONG else []))
def test_system_blas_export(tmp_path, case):
    fn, args, exported, status, outs = _run(tmp_path, case, blas="system")
    assert status == 0
    source = exported.library.source
    assert "#include <lapacke.h>" in source and "-llapacke -lopenblas" in exported.library.makefile
    assert ("LAPACKE_d" in source or "cblas_d" in source) and "export_dgetrf_core" not in source
    _compare(case, outs, _leaves(fn(*args)), CASES[case][2])


def test_system_blas_cli_option(tmp_path):
    from numfn.__main__ import main
    assert main(["export", "tests.test_export_linalg:solve", "--args", "float64[40,40], float64[40]", "-o",
                 str(tmp_path), "--blas", "system"]) == 0
    assert "LAPACKE_dgesv_work" in (tmp_path / "solve.c").read_text()
    assert main(["export", "tests.test_export_linalg:solve", "--args", "float64[40,40], float64[40]", "-o",
                 str(tmp_path / "p")]) == 0
    assert "export_dgesv" in (tmp_path / "p" / "solve.c").read_text()
    assert "lapacke" not in (tmp_path / "p" / "solve.c").read_text()


def eigenvalues_general(a):
    return np.linalg.eig(a)[0]


def complex_solve(a, b):
    return np.linalg.solve(a, b)


def test_unsupported_linalg_is_refused_naming_the_line(tmp_path):
    with pytest.raises(ExportError) as info:
        numfn.export(eigenvalues_general, _well(40), dir=str(tmp_path))
    assert "numpy.linalg.eig calls LAPACK (geev)" in str(info.value)
    assert "return np.linalg.eig(a)[0]" in str(info.value)
    a = (_well(40) + 1j * _well(40, seed=1)).astype(np.complex128)
    with pytest.raises(ExportError, match=r"gesv of complex128.*return np.linalg.solve\(a, b\)"):
        numfn.export(complex_solve, a, np.ones(40, np.complex128), dir=str(tmp_path))
    with pytest.raises(ValueError, match="blas must be"):
        numfn.export(solve, _well(4), np.ones(4), dir=str(tmp_path), blas="mkl")
    with pytest.raises(ValueError, match="threads must be"):
        numfn.export(solve, _well(4), np.ones(4), dir=str(tmp_path), threads=0)


# ---- threads --------------------------------------------------------------------------------------------------
def heavy_rows(x, y):
    """Large elementwise work and row reductions: kernels numfn runs in parallel."""
    z = np.tanh(x) * y + np.exp(-x * x)
    return z, z.sum(axis=1), np.sort(z, axis=1)


def product_rows(a, b):
    """A matrix product as generated loops (the portable export traces it without BLAS), rows in parallel."""
    return np.maximum(a @ b, 0.0)


@pytest.mark.parametrize("fn, make", [
    (heavy_rows, lambda: [_rng().standard_normal((512, 512)), _rng(1).standard_normal((512, 512))]),
    (product_rows, lambda: [_rng().standard_normal((256, 200)), _rng(1).standard_normal((200, 160))]),
])
def test_threads_equal_single_threaded(tmp_path, fn, make):
    args = make()
    single = numfn.export(fn, *args, name="single", dir=str(tmp_path / "1"))
    threaded = numfn.export(fn, *args, name="threaded", dir=str(tmp_path / "4"), threads=4)
    assert "pthread" not in single.library.source and "NULL;   /* single-threaded */" in single.library.source
    assert "export_parallel_for" in threaded.library.source and "-lpthread" in threaded.library.makefile
    assert "4 POSIX threads" in threaded.library.header
    _, want, _ = driver.run(single, driver.build(single), args)
    flags = driver.NUMFN_FLAGS + driver.STRICT_WARNINGS + ("-pthread",)
    status, got, _ = driver.run(threaded, driver.build(threaded, flags=flags), args)
    assert status == 0 and len(got) == len(want)
    for g, w in zip(got, want):
        assert g.tobytes() == w.tobytes()
    for g, w in zip(got, _leaves(fn(*args))):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


def test_threads_under_thread_sanitizer(tmp_path):
    """No data race between the threads' chunks."""
    args = [_rng().standard_normal((256, 256)), _rng(1).standard_normal((256, 256))]
    threaded = numfn.export(heavy_rows, *args, dir=str(tmp_path), threads=3)
    flags = ("-O1", *driver.REQUIRED_CFLAGS, *driver.STRICT_WARNINGS, "-fsanitize=thread", "-g", "-pthread")
    try:
        exe = driver.build(threaded, flags=flags)
    except subprocess.CalledProcessError as e:
        if "sanitize" in e.stderr: pytest.skip("the C compiler has no thread sanitizer")
        raise
    status, got, _ = driver.run(threaded, exe, args)
    assert status == 0
    np.testing.assert_allclose(got[1], heavy_rows(*args)[1], rtol=1e-10)


def relax(u):
    """An in-place stencil numfn runs tile by tile (numfn.codegen.tiling), tiles in parallel: the threads share the
    tiles' loop as numfn's pool does."""
    u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def test_threads_run_tiles_as_single_threaded(tmp_path):
    u = _rng().random((700, 513))
    single = numfn.export(relax, u, name="single", dir=str(tmp_path / "1"))
    threaded = numfn.export(relax, u, name="threaded", dir=str(tmp_path / "3"), threads=3)
    assert "export_parallel_for" in threaded.library.source and "_tiles(pfor" in threaded.library.source
    _, (want,), _ = driver.run(single, driver.build(single), [u.copy()])
    flags = driver.NUMFN_FLAGS + driver.STRICT_WARNINGS + ("-pthread",)
    status, (got,), _ = driver.run(threaded, driver.build(threaded, flags=flags), [u.copy()])
    assert status == 0 and got.tobytes() == want.tobytes()
    expected = u.copy()
    relax(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_threads_cli_option(tmp_path):
    from numfn.__main__ import main
    assert main(["export", "tests.test_export_linalg:product_rows", "--args", "float64[256,200], float64[200,160]",
                 "-o", str(tmp_path), "--threads", "2"]) == 0
    assert "#define EXPORT_THREADS 2" in (tmp_path / "product_rows.c").read_text()
    assert "-lpthread" in (tmp_path / "Makefile").read_text()
    assert main(["export", "tests.test_export_linalg:product_rows", "--args", "float64[256,200], float64[200,160]",
                 "-o", str(tmp_path / "x"), "--threads", "0"]) == 1
