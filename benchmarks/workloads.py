"""The benchmark workloads: each is a NumPy-style function, its inputs, and (where written) Numba and JAX versions.

Used by bench_workloads.py (pytest-benchmark). The functions the demo also runs are the demo's own, imported
from numfn.tools.demo so the two never drift apart. Every function here is also a correctness check:
the benchmarks compare numfn's result with NumPy's on the same inputs.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from numfn.tools.demo import fused_elementwise, laplacian, mlp, quat_rotate, softmax_rows, sum_squares


def tiny_affine(x):
    return x * 2.0 + 1.0


def matmul(a, b):
    return a @ b


def det3_batched(m):
    a, b, c = m[:, 0, 0], m[:, 0, 1], m[:, 0, 2]
    d, e, f = m[:, 1, 0], m[:, 1, 1], m[:, 1, 2]
    g, h, i = m[:, 2, 0], m[:, 2, 1], m[:, 2, 2]
    return a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)


@dataclass
class Workload:
    name: str
    fn: Callable
    make_inputs: Callable[[np.random.Generator], tuple]
    rtol: float = 1e-5


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


WORKLOADS = [
    Workload("tiny_affine", tiny_affine, lambda r: (r.standard_normal(3),), 1e-12),
    Workload("quat_rotate", quat_rotate, lambda r: (r.standard_normal(4), r.standard_normal(3)), 1e-12),
    Workload("fused_elementwise", fused_elementwise, lambda r: (_f32(r, 1 << 22), _f32(r, 1 << 22), _f32(r, 1 << 22))),
    Workload("sum_squares", sum_squares, lambda r: (_f32(r, 1 << 22),), 1e-4),
    Workload("softmax_rows", softmax_rows, lambda r: (_f32(r, 1024, 1024),)),
    Workload("matmul", matmul, lambda r: (_f32(r, 512, 512), _f32(r, 512, 512)), 1e-4),
    Workload("mlp", mlp, lambda r: (_f32(r, 256, 784), _f32(r, 784, 256) * 0.05, _f32(r, 256),
                                    _f32(r, 256, 10) * 0.05, _f32(r, 10)), 1e-4),
    Workload("laplacian", laplacian, lambda r: (_f32(r, 1024, 1024),)),
    Workload("det3_batched", det3_batched, lambda r: (r.standard_normal((100000, 3, 3)),), 1e-10),
]


# ---- peers (only built when the package is installed) ----------------------------------------------------------

def jax_versions():
    """JAX versions of the workloads (jax.jit of the same code with jax.numpy), or {} without JAX."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return {}
    jax.config.update("jax_enable_x64", True)

    def quat(q, v):
        q = q / jnp.sqrt((q * q).sum())
        w, x, y, z = q[0], q[1], q[2], q[3]
        tx, ty, tz = 2.0 * (y * v[2] - z * v[1]), 2.0 * (z * v[0] - x * v[2]), 2.0 * (x * v[1] - y * v[0])
        return jnp.stack([v[0] + w * tx + (y * tz - z * ty), v[1] + w * ty + (z * tx - x * tz),
                          v[2] + w * tz + (x * ty - y * tx)])

    fns = {
        "tiny_affine": lambda x: x * 2.0 + 1.0,
        "quat_rotate": quat,
        "fused_elementwise": lambda a, b, c: a * b + jnp.sin(c) * jnp.exp(-a * a),
        "sum_squares": lambda a: (a * a).sum(),
        "softmax_rows": lambda x: jax.nn.softmax(x, axis=1),
        "matmul": lambda a, b: a @ b,
        "mlp": lambda x, w1, b1, w2, b2: jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2,
        "laplacian": lambda u: u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1] - 4.0 * u[1:-1, 1:-1],
        "det3_batched": lambda m: jnp.linalg.det(m),
    }
    return {name: _jax_call(jax, f) for name, f in fns.items()}


def _jax_call(jax, f):
    jitted = jax.jit(f)

    def call(*args):
        return jitted(*args).block_until_ready()
    return call


def numba_versions():
    """Numba versions of the workloads (explicit loops under numba.njit), or {} without Numba."""
    try:
        import numba
    except ImportError:
        return {}
    njit = numba.njit(cache=True, fastmath=False)

    @njit
    def tiny(x):
        return x * 2.0 + 1.0

    @njit
    def quat(q, v):
        q = q / np.sqrt((q * q).sum())
        w, x, y, z = q[0], q[1], q[2], q[3]
        tx, ty, tz = 2.0 * (y * v[2] - z * v[1]), 2.0 * (z * v[0] - x * v[2]), 2.0 * (x * v[1] - y * v[0])
        out = np.empty(3)
        out[0] = v[0] + w * tx + (y * tz - z * ty)
        out[1] = v[1] + w * ty + (z * tx - x * tz)
        out[2] = v[2] + w * tz + (x * ty - y * tx)
        return out

    @numba.njit(parallel=True)
    def fused(a, b, c):
        out = np.empty_like(a)
        for i in numba.prange(a.shape[0]):
            out[i] = a[i] * b[i] + np.sin(c[i]) * np.exp(-a[i] * a[i])
        return out

    @njit
    def sumsq(a):
        s = 0.0   # float64: a float32 running sum of 4M squares drifts by 0.4%
        for v in a: s += v * v
        return np.float32(s)

    @numba.njit(parallel=True)
    def softmax(x):
        out = np.empty_like(x)
        for i in numba.prange(x.shape[0]):
            m = x[i].max()
            e = np.exp(x[i] - m)
            out[i] = e / e.sum()
        return out

    @njit
    def mm(a, b):
        return np.dot(a, b)

    @njit
    def mlp_(x, w1, b1, w2, b2):
        return np.dot(np.maximum(np.dot(x, w1) + b1, np.float32(0.0)), w2) + b2

    @njit
    def det3(m):
        out = np.empty(m.shape[0])
        for k in range(m.shape[0]):
            a, b, c, d, e, f, g, h, i = m[k, 0, 0], m[k, 0, 1], m[k, 0, 2], m[k, 1, 0], m[k, 1, 1], m[k, 1, 2], \
                m[k, 2, 0], m[k, 2, 1], m[k, 2, 2]
            out[k] = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
        return out

    return {"tiny_affine": tiny, "quat_rotate": quat, "fused_elementwise": fused, "sum_squares": sumsq,
            "det3_batched": det3, "laplacian": numba.njit(laplacian), "softmax_rows": softmax, "matmul": mm,
            "mlp": mlp_}
