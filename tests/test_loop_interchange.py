"""Loop interchange (numfn/schedule/interchange.py): loops whose carried state is elementwise run as one kernel with
the iterations inside each element. Every case is checked bit for bit against NumPy on the same inputs (the
interchanged kernel evaluates the loop's own expressions in the same order), and structurally: interchanged loops
leave no LoopKernel in the schedule, loops that must keep their iterations keep it."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import numfn
from numfn.schedule import LoopKernel, all_items


def escape_time(cr, ci, maxiter):
    shape = np.broadcast_shapes(cr.shape, ci.shape)
    zr = np.zeros(shape, cr.dtype)
    zi = np.zeros(shape, ci.dtype)
    n = np.zeros(shape, np.int32)
    for _ in range(maxiter):
        zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci
        n += zr * zr + zi * zi <= 4
    return n


def escape_time_planes(cr, ci, maxiter):
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    for _ in range(maxiter):
        zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci
    return zr, zi


def escape_time_masked(cr, ci, maxiter):
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    alive = np.ones(cr.shape, bool)
    for _ in range(maxiter):
        zr, zi = np.where(alive, zr * zr - zi * zi + cr, zr), np.where(alive, 2 * zr * zi + ci, zi)
        alive = alive & (zr * zr + zi * zi <= 4)
    return zr, zi, alive


def logistic(x, r, steps):
    for _ in range(steps):
        x = r * x * (1 - x)
    return x


def clipped(x, steps):
    for _ in range(steps):
        x = np.where(x > 1, x * 0.5, x * 1.5 + 0.25)
    return x


def newton_sqrt(a, steps):
    y = np.ones_like(a)
    for _ in range(steps):
        y = 0.5 * (y + a / y)
    return y


def with_counter(x, steps):
    for k in range(steps):
        x = x * 0.5 + k
    return x


# loops that must keep their iterations
def shifted(z, steps):
    for _ in range(steps):
        z = np.concatenate([z[1:], z[:1]]) * 0.5 + z
    return z


def reduced(z, steps):
    for _ in range(steps):
        z = z - z.sum() * 0.01
    return z


def window_write(z, steps):
    out = np.zeros_like(z)
    for k in range(steps):
        out[k % z.shape[0]] = z[k % z.shape[0]] + out[k % z.shape[0]]
        z = z * 0.5
    return out, z


def interchanged(nf) -> bool:
    """Whether a specialization's schedule has no loop left (its loops were interchanged)."""
    return not any(isinstance(ei.kernel, LoopKernel) for ei in all_items(nf.schedule))


def same(got, want, exact: bool = True) -> None:
    got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if exact: assert np.array_equal(g, w, equal_nan=True), (g, w)
        else: np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)   # a sum's order is numfn's own


def run(fn, args, backend, static=(), exact=True):
    jf = numfn.jit(fn, static_argnums=static, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # overflow of diverged points, as NumPy warns
        want = fn(*args)
        got = jf(*args)
    same(got, want, exact)
    return jf.specialize(*args)


def planes(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2, 1, shape).astype(dtype), rng.uniform(-1.5, 1.5, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (5, 13), (16, 64), (131,), (3, 67)])
@pytest.mark.parametrize("maxiter", [0, 1, 3, 40])
def test_escape_time_static(backend, dtype, shape, maxiter):
    nf = run(escape_time, (*planes(shape, dtype), maxiter), backend, static=(2,))
    if maxiter > 3 and 0 not in shape and shape != (): assert interchanged(nf)   # (0-d: scalar kernels, no interchange)


@pytest.mark.parametrize("maxiter", [0, 1, 2, 40])
def test_escape_time_run_time_maxiter(backend, maxiter):
    cr, ci = planes((6, 32), np.float32)
    nf = run(escape_time, (cr, ci, maxiter), backend)
    assert interchanged(nf)
    jf = numfn.jit(escape_time, backend=backend)   # one compiled program for every trip count
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in (0, 1, 7, 33, -3):
            same(jf(cr, ci, m), escape_time(cr, ci, m))


def test_escape_time_planes_float64(backend):
    nf = run(escape_time_planes, (*planes((9, 24), np.float64, seed=3), 30), backend, static=(2,))
    assert interchanged(nf)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_state(backend, dtype):
    nf = run(escape_time_masked, (*planes((8, 24), dtype, seed=8), 30), backend, static=(2,))
    assert interchanged(nf)   # a bool state value (the mask) is carried too


def test_broadcast_inputs(backend):
    cr = np.linspace(-2, 1, 24, dtype=np.float32)[None, :]
    ci = np.linspace(-1.5, 1.5, 10, dtype=np.float32)[:, None]
    run(escape_time, (cr, ci, 30), backend, static=(2,))


def test_non_contiguous_views(backend):
    cr, ci = planes((12, 40), np.float32, seed=1)
    run(escape_time, (cr[::2, ::-3], ci[::-2, ::3], 25), backend, static=(2,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logistic_map(backend, dtype):
    x = np.random.default_rng(2).uniform(0.1, 0.9, (4, 33)).astype(dtype)
    r = np.linspace(2.5, 4.0, 33, dtype=dtype)
    nf = run(logistic, (x, r, 100), backend, static=(2,))
    assert interchanged(nf)
    run(logistic, (x[0, 0], r[0], 10), backend, static=(2,))   # 0-d


def test_where_in_body(backend):
    x = np.random.default_rng(4).uniform(-1, 3, 50)
    nf = run(clipped, (x, 17), backend, static=(1,))
    assert interchanged(nf)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_newton(backend, dtype):
    a = np.random.default_rng(5).uniform(0.01, 100, (3, 7, 5)).astype(dtype)
    nf = run(newton_sqrt, (a, 12), backend, static=(1,))
    assert interchanged(nf)


def test_counter_read_in_body(backend):
    x = np.arange(10.0)
    run(with_counter, (x, 9), backend, static=(1,))
    run(with_counter, (x, 9), backend)


@pytest.mark.parametrize("fn", [shifted, reduced])
def test_not_interchanged(backend, fn):
    z = np.random.default_rng(6).standard_normal(37)
    nf = run(fn, (z, 30), backend, static=(1,), exact=fn is not reduced)
    assert not interchanged(nf)


def test_window_write_not_interchanged(backend):
    z = np.random.default_rng(7).standard_normal(11)
    nf = run(window_write, (z, 25), backend, static=(1,))
    assert not interchanged(nf)


def test_interchanged_loop_is_one_kernel(backend):
    cr, ci = planes((64, 64), np.float32)
    nf = run(escape_time, (cr, ci, 20), backend, static=(2,))
    loops = [ei for ei in nf.schedule if ei.kernel.name.startswith("I_")]
    assert len(loops) == 1 and loops[0].kernel.shape == (64, 64)
    assert not any(isinstance(ei.kernel, LoopKernel) for ei in nf.schedule)


def nested(x, a, n, m):
    for _ in range(n):
        for _ in range(m):
            x = x * 0.5 + a
        x = x[::-1] * 1.0
    return x


def test_inner_loop_of_a_loop_is_interchanged(backend):
    x, a = np.random.default_rng(9).random((2, 40))
    jf = numfn.jit(nested, backend=backend)
    for n, m in ((0, 3), (3, 0), (2, 5), (4, 17)):
        same(jf(x, a, n, m), nested(x, a, n, m))
    names = [ei.kernel.name for ei in all_items(jf.specialize(x, a, 4, 17).schedule)]
    assert "L" in names and any(name.startswith("I_") for name in names)   # the outer loop stays: x[::-1]


def test_vmap_of_an_interchanged_loop(backend):
    def step(x, r):
        for _ in range(30):
            x = r * x * (1 - x)
        return x
    x = np.random.default_rng(10).uniform(0.2, 0.8, (5, 24))
    r = np.linspace(2.9, 3.9, 24)[None, :].repeat(5, 0)
    same(numfn.jit(numfn.vmap(step), backend=backend)(x, r), step(x, r))
