"""Realistic programs written the natural NumPy way, each run unchanged under numfn.jit and compared with NumPy on the
same inputs (issue 28: the constructs of real code, end to end). Signal processing, sparse, dynamic programming,
FFT, statistics, fluid dynamics, complex arithmetic and linear algebra.
"""
import numpy as np
import pytest

import numfn
from tests.helpers import check


def levinson_durbin(r, order):
    """Linear-prediction coefficients from an autocorrelation sequence (flips of run-time length)."""
    a = np.zeros(order + 1)
    a[0] = 1.0
    e = r[0]
    for k in range(1, order + 1):
        lam = -np.dot(np.flip(a[:k]), r[1:k + 1]) / e
        a[:k + 1] = a[:k + 1] + lam * np.flip(a[:k + 1])
        e = e * (1 - lam * lam)
    return a, e


def radix2_fft(x):
    """An iterative radix-2 FFT whose stages reshape by the stage (shapes from a static loop's variable)."""
    n = x.shape[0]
    stages = int(np.log2(n))
    y = x.astype(np.complex128)
    for s in range(stages):
        half = 2 ** (stages - s - 1)
        y = y.reshape(2 ** s, 2, half)
        even, odd = y[:, 0, :], y[:, 1, :]
        w = np.exp(-2j * np.pi * np.arange(half) / (2 * half))
        y = np.concatenate([even + odd, (even - odd) * w], axis=1)
    y = y.reshape(-1)
    bits = np.zeros(n, np.int64)
    for s in range(stages):
        bits = bits | (((np.arange(n) >> s) & 1) << (stages - 1 - s))
    out = np.empty_like(y)
    out[bits] = y
    return out


def running_row_statistics(A):
    """Welford's running mean and variance over the rows of a matrix (`for i, row in enumerate(A)`)."""
    mean = np.zeros(A.shape[1])
    m2 = np.zeros(A.shape[1])
    for i, row in enumerate(A):
        delta = row - mean
        mean += delta / (i + 1)
        m2 += delta * (row - mean)
    return mean, m2 / max(A.shape[0] - 1, 1)


def mandelbrot_complex(c, maxiter):
    z = np.zeros_like(c)
    counts = np.zeros(c.shape, np.int64)
    for _ in range(maxiter):
        z = np.where(np.abs(z) <= 2, z * z + c, z)
        counts += np.abs(z) <= 2
    return counts


def heat_diffusion(u, steps, alpha):
    """Explicit 2-D heat equation with fixed boundaries, in place on the interior."""
    u = u.copy()
    for _ in range(steps):
        u[1:-1, 1:-1] += alpha * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])
    return u


def byte_histogram(data):
    counts = np.zeros(256, np.int64)
    for b in data:
        counts[int(b)] += 1
    return counts


def longest_increasing_subsequence(x):
    """O(n^2) dynamic programming with a masked max over the prefix."""
    n = x.shape[0]
    best = np.ones(n, np.int64)
    for i in range(1, n):
        earlier = best[:i]
        mask = x[:i] < x[i]
        if mask.any():
            best[i] = np.max(np.where(mask, earlier, 0)) + 1
    return best.max()


def contour_solves(A, Y, radius):
    """Resolvent solves at complex points on a circle (a contour-integral eigensolver's inner step)."""
    acc = np.zeros(Y.shape, np.complex128)
    for k in range(8):
        z = radius * np.exp(2j * np.pi * (k + 0.5) / 8)
        acc += z * np.linalg.solve(z * np.eye(A.shape[0]) - A, Y) / 8
    return acc


def piecewise_tax(income):
    def tax(v):
        if v < 10_000:
            return 0.0
        elif v < 50_000:
            return 0.2 * (v - 10_000)
        return 8_000 + 0.4 * (v - 50_000)
    return np.vectorize(tax, otypes=[np.float64])(income)


def autocorrelation(x):
    """Autocorrelation by FFT, normalized: statistics of a signal."""
    n = x.shape[0]
    centered = x - x.mean()
    f = np.fft.rfft(centered, 2 * n)
    acf = np.fft.irfft(f * np.conj(f))[:n]
    return acf / acf[0]


def sparse_rows_normalized(vals, cols, rows, x):
    """A CSR matrix times a vector, each row's result divided by the row's largest magnitude."""
    n = rows.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        lo, hi = rows[i], rows[i + 1]
        if hi > lo:
            seg = vals[lo:hi]
            y[i] = (seg @ x[cols[lo:hi]]) / np.abs(seg).max()
    return y


RNG = np.random.default_rng(2026)


def _csr(n, nnz):
    rows = np.sort(RNG.integers(0, nnz + 1, n + 1))
    rows[0], rows[-1] = 0, nnz
    return RNG.standard_normal(nnz), RNG.integers(0, n, nnz), rows, RNG.standard_normal(n)


def _spd(n):
    m = RNG.standard_normal((n, n))
    return m @ m.T / n + np.eye(n)


CASES = {
    "levinson_durbin": (levinson_durbin, (np.array([4.0, 2.2, 1.1, 0.5, 0.3, 0.1, 0.05, 0.02, 0.01]), 7), (1,)),
    "radix2_fft": (radix2_fft, (RNG.standard_normal(64),), ()),
    "running_row_statistics": (running_row_statistics, (RNG.standard_normal((40, 7)),), ()),
    "mandelbrot_complex": (mandelbrot_complex, (np.add.outer(1j * np.linspace(-1.2, 1.2, 24),
                                                              np.linspace(-2, 0.6, 32)), 30), (1,)),
    "heat_diffusion": (heat_diffusion, (RNG.random((24, 20)), 60, 0.2), (1,)),
    "byte_histogram": (byte_histogram, (RNG.integers(0, 256, 3000).astype(np.uint8),), ()),
    "longest_increasing_subsequence": (longest_increasing_subsequence, (RNG.standard_normal(60),), ()),
    "contour_solves": (contour_solves, (_spd(6) * 0.5, RNG.standard_normal((6, 2)), 2.0), ()),
    "piecewise_tax": (piecewise_tax, (RNG.uniform(0, 120_000, 50),), ()),
    "autocorrelation": (autocorrelation, (RNG.standard_normal(100),), ()),
    "sparse_rows_normalized": (sparse_rows_normalized, _csr(30, 120), ()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_realistic_program(name, backend):
    fn, args, static = CASES[name]
    check(fn, *args, backend=backend, scale=100.0, jitted=numfn.jit(fn, backend=backend, static_argnums=static))


def _stage_shapes(x, stages):
    """A static loop longer than the unroll limit whose body reshapes by its variable: it unrolls."""
    y = x
    for s in range(stages):
        y = y.reshape(2 ** s, -1)[:, ::-1].reshape(-1) * 1.5
    return y


def test_static_loop_whose_shapes_depend_on_its_variable_unrolls(backend):
    check(_stage_shapes, np.arange(2.0 ** 9), 9, backend=backend,
          jitted=numfn.jit(_stage_shapes, backend=backend, static_argnums=(1,)))


def _long_stage_loop(x, n):
    for s in range(n):
        x = x.reshape(s % 2 + 1, -1).sum(axis=0).repeat(s % 2 + 1)
    return x


def test_a_long_loop_needing_its_variable_as_a_size_says_so(backend):
    with pytest.raises(numfn.TracerConversionError, match="index or size"):
        numfn.jit(_long_stage_loop, backend=backend, static_argnums=(1,))(np.ones(4), 100)
