"""`python -m numfn demo`: compile a few real functions, check them against NumPy, and report compile time and
speed against NumPy on the same inputs."""
from __future__ import annotations

import time

import numpy as np

import numfn


def fused_elementwise(a, b, c):
    return a * b + np.sin(c) * np.exp(-a * a)


def sum_squares(a):
    return (a * a).sum()


def softmax_rows(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm(x):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5)


def mlp(x, w1, b1, w2, b2):
    return np.maximum(x @ w1 + b1, 0.0) @ w2 + b2


def laplacian(u):
    return u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1] - 4.0 * u[1:-1, 1:-1]


def quat_rotate(q, v):
    q = q / np.sqrt((q * q).sum())
    w, x, y, z = q[0], q[1], q[2], q[3]
    tx, ty, tz = 2.0 * (y * v[2] - z * v[1]), 2.0 * (z * v[0] - x * v[2]), 2.0 * (x * v[1] - y * v[0])
    return np.stack([v[0] + w * tx + (y * tz - z * ty),
                     v[1] + w * ty + (z * tx - x * tz),
                     v[2] + w * tz + (x * ty - y * tx)])


def _inputs(rng: np.random.Generator):
    f32 = np.float32
    return [
        ("fused_elementwise", fused_elementwise, [rng.standard_normal(1 << 20, f32) for _ in range(3)]),
        ("sum_squares", sum_squares, [rng.standard_normal(1 << 22, f32)]),
        ("softmax_rows", softmax_rows, [rng.standard_normal((512, 512), f32)]),
        ("layernorm", layernorm, [rng.standard_normal((512, 512), f32)]),
        ("mlp", mlp, [rng.standard_normal((64, 256), f32), rng.standard_normal((256, 128), f32) * 0.1,
                      rng.standard_normal(128, f32), rng.standard_normal((128, 10), f32) * 0.1,
                      rng.standard_normal(10, f32)]),
        ("laplacian", laplacian, [rng.standard_normal((512, 512), f32)]),
        ("quat_rotate", quat_rotate, [rng.standard_normal(4), rng.standard_normal(3)]),
    ]


def _median_time(fn, args, budget: float = 0.2) -> float:
    fn(*args)
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < budget and len(times) < 10000):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _fmt(seconds: float) -> str:
    if seconds < 1e-3: return f"{seconds * 1e6:8.2f} us"
    return f"{seconds * 1e3:8.3f} ms"


def main(argv: list[str] | None = None) -> int:
    rng = np.random.default_rng(0)
    backend = numfn.function.debug.default_backend()
    print(f"numfn {numfn.__version__} demo (backend: {backend}); times are medians per call\n")
    print(f"{'function':<18} {'check':<6} {'compile':>10} {'numpy':>11} {'numfn':>11} {'speedup':>8}")
    failures = 0
    for name, fn, args in _inputs(rng):
        jitted = numfn.jit(fn)
        t0 = time.perf_counter()
        got = jitted(*args)
        compile_time = time.perf_counter() - t0
        want = fn(*args)
        tol = 1e-4 if np.asarray(want).dtype == np.float32 else 1e-10
        ok = np.allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max())))
        failures += not ok
        t_np, t_nf = _median_time(fn, args), _median_time(jitted, args)
        print(f"{name:<18} {'ok' if ok else 'WRONG':<6} {compile_time * 1e3:7.1f} ms {_fmt(t_np)} {_fmt(t_nf)} "
              f"{t_np / t_nf:7.2f}x")
    if failures: print(f"\n{failures} result(s) differ from NumPy")
    return 1 if failures else 0
