"""The programs of benchmarks/compile_time.py, written the way NumPy users write them (issue 26's table): each is a
function and its arguments (`PROGRAMS`: name -> (function, make_args)). They are plain NumPy: the benchmark runs
them under numfn.jit and, where installed in a side environment, under JAX and Numba."""
import numpy as np


def straight_line_source(n: int) -> str:
    """A straight-line function of n statements cycling five kinds of work on 64x32 float64 arrays."""
    kinds = ["    a = np.sin(a) * y", "    a = a - np.exp(a).sum(axis=1, keepdims=True) * 0.01",
             "    a = np.sqrt(np.abs(a)) + y", "    a = (a @ w) * 0.1", "    a = np.maximum(a, a.mean(axis=0))"]
    lines = ["def straight_line(x, y, w):", "    a = x"] + [kinds[i % len(kinds)] for i in range(n)]
    return "\n".join(lines + ["    return a", ""])


def _straight_line(n: int):
    namespace: dict = {"np": np}
    exec(compile(straight_line_source(n), f"<straight_line_{n}>", "exec"), namespace)
    return namespace["straight_line"]


def _straight_args():
    rng = np.random.default_rng(0)
    return rng.random((64, 32)), rng.random((64, 32)), rng.random((32, 32)) / 32


def conv2d(x, w):
    """A direct 2-D convolution (valid, stride 1, NHWC input, HWIO weights): a double loop over output pixels."""
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    out = np.zeros((n, h - kh + 1, wd - kw + 1, o))
    for i in range(h - kh + 1):
        for j in range(wd - kw + 1):
            patch = x[:, i:i + kh, j:j + kw, :]
            for k in range(o):
                out[:, i, j, k] = np.sum(patch * w[:, :, :, k], axis=(1, 2, 3))
    return out


def _conv_args():
    rng = np.random.default_rng(0)
    return rng.standard_normal((8, 32, 32, 3)), rng.standard_normal((2, 2, 3, 16)) / 4


def small_cnn(x, w1, w2, dense):
    """Two convolutions with relu, a 2x2 max-pool by slicing, a dense layer."""
    a = np.maximum(conv2d(x, w1), 0.0)
    a = np.maximum(np.maximum(a[:, 0::2, 0::2], a[:, 1::2, 0::2]), np.maximum(a[:, 0::2, 1::2], a[:, 1::2, 1::2]))
    a = np.maximum(conv2d(a, w2), 0.0)
    return a.reshape(a.shape[0], -1) @ dense


def _cnn_args():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 16, 16, 3))
    w1, w2 = rng.standard_normal((3, 3, 3, 8)) / 4, rng.standard_normal((3, 3, 8, 8)) / 8
    return x, w1, w2, rng.standard_normal((5 * 5 * 8, 10)) / 16


def residual_block(x, w1, w2, w3):
    """Three same-padded 3x3 convolutions and a skip connection."""
    def same(a, w):
        p = np.pad(a, ((0, 0), (1, 1), (1, 1), (0, 0)))
        return conv2d(p, w)
    a = np.maximum(same(x, w1), 0.0)
    a = np.maximum(same(a, w2), 0.0)
    return np.maximum(same(a, w3) + x, 0.0)


def _residual_args():
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((3, 3, 4, 4)) / 6 for _ in range(3)]
    return (rng.standard_normal((2, 12, 12, 4)), *ws)


def crc16(data):
    """CRC-16/ARC of a byte array, bit by bit."""
    crc = 0
    for b in data:
        crc ^= int(b)
        for _ in range(8):
            if crc & 1:
                crc = (crc >> 1) ^ 0xA001
            else:
                crc >>= 1
    return crc


def _crc_args():
    return (np.random.default_rng(0).integers(0, 256, 1600).astype(np.uint8),)


def cavity_flow(u, v, p, steps, nit):
    """Lid-driven cavity flow: a time loop around a pressure-Poisson inner loop (the '12 steps to Navier-Stokes'
    solver)."""
    nx = u.shape[1]
    dx = dy = 2.0 / (nx - 1)
    dt, rho, nu = 0.001, 1.0, 0.1
    for _ in range(steps):
        b = np.zeros_like(p)
        b[1:-1, 1:-1] = rho * (1 / dt * ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx) + (v[2:, 1:-1] - v[0:-2, 1:-1])
                                         / (2 * dy)) - ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx)) ** 2
                               - 2 * ((u[2:, 1:-1] - u[0:-2, 1:-1]) / (2 * dy) * (v[1:-1, 2:] - v[1:-1, 0:-2])
                                      / (2 * dx)) - ((v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy)) ** 2)
        for _ in range(nit):
            pn = p.copy()
            p[1:-1, 1:-1] = (((pn[1:-1, 2:] + pn[1:-1, 0:-2]) * dy ** 2 + (pn[2:, 1:-1] + pn[0:-2, 1:-1]) * dx ** 2)
                             / (2 * (dx ** 2 + dy ** 2)) - dx ** 2 * dy ** 2 / (2 * (dx ** 2 + dy ** 2))
                             * b[1:-1, 1:-1])
            p[:, -1] = p[:, -2]
            p[0, :] = p[1, :]
            p[:, 0] = p[:, 1]
            p[-1, :] = 0
        un, vn = u.copy(), v.copy()
        u[1:-1, 1:-1] = (un[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx * (un[1:-1, 1:-1] - un[1:-1, 0:-2])
                         - vn[1:-1, 1:-1] * dt / dy * (un[1:-1, 1:-1] - un[0:-2, 1:-1])
                         - dt / (2 * rho * dx) * (p[1:-1, 2:] - p[1:-1, 0:-2])
                         + nu * (dt / dx ** 2 * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, 0:-2])
                                 + dt / dy ** 2 * (un[2:, 1:-1] - 2 * un[1:-1, 1:-1] + un[0:-2, 1:-1])))
        v[1:-1, 1:-1] = (vn[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx * (vn[1:-1, 1:-1] - vn[1:-1, 0:-2])
                         - vn[1:-1, 1:-1] * dt / dy * (vn[1:-1, 1:-1] - vn[0:-2, 1:-1])
                         - dt / (2 * rho * dy) * (p[2:, 1:-1] - p[0:-2, 1:-1])
                         + nu * (dt / dx ** 2 * (vn[1:-1, 2:] - 2 * vn[1:-1, 1:-1] + vn[1:-1, 0:-2])
                                 + dt / dy ** 2 * (vn[2:, 1:-1] - 2 * vn[1:-1, 1:-1] + vn[0:-2, 1:-1])))
        u[0, :], u[:, 0], u[:, -1], u[-1, :] = 0, 0, 0, 1
        v[0, :], v[-1, :], v[:, 0], v[:, -1] = 0, 0, 0, 0
    return u, v, p


def _cavity_args():
    z = np.zeros((41, 41))
    return z.copy(), z.copy(), z.copy(), 20, 50


def gcd(a, b):
    return np.gcd(a, b)


def _gcd_args():
    rng = np.random.default_rng(0)
    return rng.integers(-10**12, 10**12, 1000), rng.integers(-10**6, 10**6, 1000)


PROGRAMS = {
    "straight line, 30 statements": (_straight_line(30), _straight_args),
    "straight line, 120 statements": (_straight_line(120), _straight_args),
    "straight line, 300 statements": (_straight_line(300), _straight_args),
    "conv2d, double loop over pixels": (conv2d, _conv_args),
    "small CNN forward pass": (small_cnn, _cnn_args),
    "residual block": (residual_block, _residual_args),
    "CRC-16 of 1,600 bytes": (crc16, _crc_args),
    "cavity flow (2-D Navier-Stokes)": (cavity_flow, _cavity_args),
    "np.gcd of int64 arrays": (gcd, _gcd_args),
}
