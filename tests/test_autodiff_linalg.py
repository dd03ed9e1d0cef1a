"""Derivatives of numpy.linalg's LAPACK-backed functions (numfn/autodiff/linalg_rules.py): solve, inv, det,
slogdet, cholesky, eigh, eigvalsh, in forward and reverse mode against central finite differences (check_grads,
float64), against the closed forms written in NumPy, on stacks of matrices and float32, and to second order.
(Matrices of at most 3 x 3, and stacks of many small ones, are factored by generated code with ordinary rules:
tests/test_autodiff_rules.py covers those; here n = 5 goes to LAPACK.)"""
from __future__ import annotations

import numpy as np
import pytest

import numfn
from numfn.ir.uop import Ops
from numfn.ir.walk import toposort

RNG = np.random.default_rng(3030)
N = 5


def well_conditioned(*batch: int, n: int = N) -> np.ndarray:
    return RNG.standard_normal(batch + (n, n)) + n * np.eye(n)


def spd(*batch: int, n: int = N) -> np.ndarray:
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def spread_spd(n: int = N) -> np.ndarray:
    """Symmetric with well separated eigenvalues (eigenvectors' derivatives divide by their gaps)."""
    q, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    return (q * np.arange(1.0, n + 1)) @ q.T


def routines(fn, *args) -> set[str]:
    nf = numfn.jit(fn).specialize(*args)
    return {u.arg.routine for u in toposort([nf.function_graph]) if u.op is Ops.EXTERN}


CASES = [
    ("solve_vector", lambda a, b: np.linalg.solve(a, b), lambda: (well_conditioned(), RNG.standard_normal(N)), "gesv"),
    ("solve_matrix", lambda a, b: np.linalg.solve(a, b), lambda: (well_conditioned(), RNG.standard_normal((N, 2))),
     "gesv"),
    ("inv", np.linalg.inv, lambda: (well_conditioned(),), "gesv"),
    ("det", np.linalg.det, lambda: (well_conditioned() / 3,), "getrf"),
    ("slogdet", lambda a: np.linalg.slogdet(a)[1], lambda: (well_conditioned(),), "getrf"),
    ("cholesky", np.linalg.cholesky, lambda: (spd(),), "potrf"),
    ("cholesky_upper", lambda a: np.linalg.cholesky(a, upper=True), lambda: (spd(),), "potrf"),
    ("eigh_values", lambda a: np.linalg.eigh(a)[0], lambda: (spread_spd(),), "syevd"),
    # eigenvectors up to sign: the signs LAPACK picks are the same for nearby matrices
    ("eigh_vectors", lambda a: np.abs(np.linalg.eigh(a)[1]), lambda: (spread_spd(),), "syevd"),
    ("eigh_upper", lambda a: np.linalg.eigh(a, UPLO="U")[0], lambda: (spread_spd() + np.triu(np.ones((N, N)), 1),),
     "syevd"),
    ("eigvalsh", np.linalg.eigvalsh, lambda: (spread_spd(),), "syevd"),
]


@pytest.mark.parametrize("name, fn, make, routine", CASES, ids=[c[0] for c in CASES])
def test_against_finite_differences(name, fn, make, routine):
    args = make()
    assert routine in routines(fn, *args)   # the LAPACK call, not the generated elimination
    numfn.check_grads(fn, args, modes=("fwd", "rev"))


def test_closed_forms():
    a, b = well_conditioned(), RNG.standard_normal(N)
    inv = np.linalg.inv(a)
    np.testing.assert_allclose(numfn.grad(lambda a: np.linalg.slogdet(a)[1])(a), inv.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(numfn.grad(np.linalg.det)(a), np.linalg.det(a) * inv.T, rtol=1e-12)
    ga, gb = numfn.grad(lambda a, b: np.sum(np.linalg.solve(a, b)), argnums=(0, 1))(a, b)
    y = np.linalg.solve(a.T, np.ones(N))
    np.testing.assert_allclose(gb, y, rtol=1e-12)
    np.testing.assert_allclose(ga, -np.outer(y, np.linalg.solve(a, b)), rtol=1e-12, atol=1e-14)
    # d inv(A) along T is -inv(A) T inv(A)
    t = RNG.standard_normal((N, N))
    np.testing.assert_allclose(numfn.jvp(np.linalg.inv, (a,), (t,))[1], -inv @ t @ inv, rtol=1e-12, atol=1e-14)
    # eigenvalues: d w_k = v_k^T dA v_k (dA symmetric)
    s, ds = spread_spd(), RNG.standard_normal((N, N))
    ds = ds + ds.T
    w, v = np.linalg.eigh(s)
    np.testing.assert_allclose(numfn.jvp(np.linalg.eigvalsh, (s,), (ds,))[1], np.einsum("ik,ij,jk->k", v, ds, v),
                               rtol=1e-10, atol=1e-12)


def test_stacked_matrices_and_float32():
    a, b = well_conditioned(3), RNG.standard_normal((3, N))
    numfn.check_grads(lambda a, b: np.linalg.solve(a, b[..., None])[..., 0], (a, b), modes=("rev",))
    numfn.check_grads(lambda a: np.linalg.slogdet(a)[1], (a,), modes=("fwd", "rev"))
    numfn.check_grads(np.linalg.cholesky, (spd(2),), modes=("rev",))
    g = numfn.grad(lambda a: np.linalg.slogdet(a)[1])(a[0].astype(np.float32))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.linalg.inv(a[0]).T, rtol=1e-5, atol=1e-6)


def test_second_order():
    numfn.check_grads(lambda a: np.linalg.slogdet(a)[1], (well_conditioned(),), order=2, modes=("rev",))
    a, b = well_conditioned(), RNG.standard_normal(N)
    h = numfn.hessian(lambda b, a: np.sum(np.linalg.solve(a, b) ** 2))(b, a)   # |A^-1 b|^2: 2 A^-T A^-1
    inv = np.linalg.inv(a)
    np.testing.assert_allclose(h, 2 * inv.T @ inv, rtol=1e-10, atol=1e-12)


def test_complex_matrices_are_refused():
    a = well_conditioned().astype(np.complex128)
    with pytest.raises(NotImplementedError, match="getrf on complex matrices"):
        numfn.grad(lambda a: np.abs(np.linalg.det(a)))(a)
