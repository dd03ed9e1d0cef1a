"""vmap and svmap against NumPy's batched code and a Python loop over the jitted per-example function, on
determinants of 100k float64 3x3 matrices and rotations of 1M vectors by 1M quaternions. Every result is checked
against NumPy's."""
import numpy as np
import pytest

import numfn
from numfn.tools.demo import quat_rotate


def det3(m):
    return (m[0, 0] * (m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1]) - m[0, 1] * (m[1, 0] * m[2, 2] - m[1, 2] * m[2, 0])
            + m[0, 2] * (m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0]))


def det3_numpy(ms):
    m = [[ms[:, i, j] for j in range(3)] for i in range(3)]
    return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))


def quat_rotate_numpy(q, v):
    q = q / np.sqrt((q * q).sum(axis=1, keepdims=True))
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    tx, ty, tz = 2.0 * (y * v[:, 2] - z * v[:, 1]), 2.0 * (z * v[:, 0] - x * v[:, 2]), \
        2.0 * (x * v[:, 1] - y * v[:, 0])
    return np.stack([v[:, 0] + w * tx + (y * tz - z * ty), v[:, 1] + w * ty + (z * tx - x * tz),
                     v[:, 2] + w * tz + (x * ty - y * tx)], axis=1)


rng = np.random.default_rng(0)
CASES = {
    "det3_100k": (det3, det3_numpy, (rng.standard_normal((100_000, 3, 3)),)),
    "quat_rotate_1M": (quat_rotate, quat_rotate_numpy, (rng.standard_normal((1_000_000, 4)),
                                                        rng.standard_normal((1_000_000, 3)))),
}


def check(got, case):
    _, reference, args = CASES[case]
    np.testing.assert_allclose(got, reference(*args), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("transform", ["vmap", "svmap"])
def test_mapped(benchmark, case, transform):
    fn, _, args = CASES[case]
    f = getattr(numfn, transform)(fn)
    check(f(*args), case)
    benchmark.group = case
    benchmark(f, *args)


@pytest.mark.parametrize("case", CASES)
def test_numpy_batched(benchmark, case):
    _, reference, args = CASES[case]
    benchmark.group = case
    benchmark(reference, *args)


@pytest.mark.parametrize("case", CASES)
def test_python_loop_over_jit(benchmark, case):
    fn, _, args = CASES[case]
    jf = numfn.jit(fn)

    def loop(*arrays):
        return np.stack([jf(*example) for example in zip(*arrays)])

    benchmark.group = case
    result = benchmark.pedantic(loop, args=args, rounds=3, iterations=1)
    check(result, case)
