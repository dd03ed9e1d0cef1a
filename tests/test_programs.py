"""Whole programs as users write them (softmax, layer norm, losses, distances, statistics), odd sizes around vector
widths, and many intermediates alive at once, against NumPy running the same Python function."""
import numpy as np
import pytest

from helpers import assert_same, check, rand


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def logsumexp(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def mlp(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0.0)
    return np.tanh(h @ w2 + b2)


def cross_entropy(logits, onehot):
    return -(onehot * (logits - logsumexp(logits)[:, None])).sum(axis=1).mean()


def pairwise_sq_dists(a, b):
    return (a * a).sum(axis=1)[:, None] + (b * b).sum(axis=1)[None, :] - 2.0 * a @ b.T


def stats(x):
    mean = x.mean(axis=0)
    centered = x - mean
    cov = centered.T @ centered / (x.shape[0] - 1)
    std = np.sqrt(np.maximum((centered ** 2).sum(axis=0) / (x.shape[0] - 1), 0.0))
    return {"mean": mean, "cov": cov, "std": std, "min": x.min(axis=0), "max": x.max(axis=0),
            "range": x.max(axis=0) - x.min(axis=0), "z": centered / (std + 1e-9)}


def smooth(x):
    # moving average by cumsum differences; a stencil by shifted slices
    c = np.cumsum(np.concatenate([np.zeros(1, x.dtype), x]))
    avg = (c[3:] - c[:-3]) / 3
    lap = x[:-2] - 2 * x[1:-1] + x[2:]
    return avg, lap, np.where(np.abs(lap) > 1, np.sign(lap), lap)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_softmax_logsumexp_layernorm(backend, dtype):
    rng = np.random.default_rng(70)
    x, g, b = rand((5, 7), dtype, rng), rand((7,), dtype, rng), rand((7,), dtype, rng)
    check(lambda x, g, b: (softmax(x), softmax(x, axis=0), logsumexp(x), logsumexp(x, axis=0), layer_norm(x, g, b),
                           softmax(x).sum(axis=-1)), x, g, b, backend=backend, scale=50.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_mlp_and_loss(backend, dtype):
    rng = np.random.default_rng(71)
    x, w1, b1 = rand((8, 6), dtype, rng), rand((6, 16), dtype, rng, -0.5, 0.5), rand((16,), dtype, rng)
    w2, b2 = rand((16, 4), dtype, rng, -0.5, 0.5), rand((4,), dtype, rng)
    onehot = np.eye(4, dtype=dtype)[rng.integers(0, 4, 8)]
    check(lambda x, w1, b1, w2, b2, y: (mlp(x, w1, b1, w2, b2), cross_entropy(mlp(x, w1, b1, w2, b2) * 3, y)),
          x, w1, b1, w2, b2, onehot, backend=backend, scale=200.0)


def test_distances_and_statistics(backend):
    rng = np.random.default_rng(72)
    a, b = rand((6, 3), np.float64, rng), rand((5, 3), np.float64, rng)
    check(lambda a, b: (pairwise_sq_dists(a, b), stats(a), stats(np.concatenate([a, b]))), a, b, backend=backend,
          scale=1e3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64], ids=lambda d: np.dtype(d).name)
def test_stencils_and_moving_average(backend, dtype):
    x = rand((40,), dtype, np.random.default_rng(73))
    check(smooth, x, backend=backend, scale=100.0)


SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 129, 255, 257, 1000, 1023, 1025, 4099]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8, np.bool_], ids=lambda d: np.dtype(d).name)
def test_odd_sizes_around_vector_widths(backend, dtype):
    # vectorized loops and their remainders: every size in one compiled function
    rng = np.random.default_rng(74)
    xs = [rand((n,), dtype, rng) for n in SIZES]

    def f(*xs):
        out = []
        for x in xs:
            y = x[::-1] if x.dtype == np.bool_ else x * 2 + x[::-1]
            out.append((y, x.sum(), x.max(), x.min(), np.cumsum(x)[-1:], x[1::3].sum() if x.size > 1 else x.sum()))
        return out

    check(f, *xs, backend=backend, scale=3.0 * 4099)


def test_odd_sizes_two_dimensional(backend):
    rng = np.random.default_rng(75)
    xs = [rand((m, n), np.float32, rng) for m, n in [(3, 17), (17, 3), (1, 33), (33, 1), (9, 65), (65, 9), (5, 257)]]
    check(lambda *xs: [(x.sum(axis=0), x.sum(axis=1), x.max(axis=0), x.T * 2 + 1, x.mean(), x @ x.T) for x in xs],
          *xs, backend=backend, scale=3.0 * 3 * 257)


def test_many_intermediates_alive_at_once(backend):
    # twenty materialized reductions, all combined at the end: the scratch arena must not reuse a live buffer
    x = rand((12, 20), np.float64, np.random.default_rng(76))

    def f(x):
        parts = [(x * (k + 1) - k).max(axis=1, keepdims=True) + (x + k).sum(axis=0)[:12, None] for k in range(20)]
        total = parts[0]
        for k, p in enumerate(parts[1:]):
            total = total * 0.5 + p - (k if k % 2 else -k)
        return total, parts[3], parts[-1], np.concatenate(parts, axis=1).sum(axis=0)

    check(f, x, backend=backend, scale=1e4)


def test_reduction_chains_and_reuse(backend):
    # reductions of reductions, a reduction broadcast back and reduced again, one input read in many layouts
    x = rand((4, 5, 6), np.float32, np.random.default_rng(77))

    def f(x):
        m = x.max(axis=2, keepdims=True)
        s = (x - m).sum(axis=(0, 2))
        t = ((x - x.mean(axis=(1, 2), keepdims=True)) ** 2).sum(axis=1).max(axis=-1)
        u = x.transpose(2, 0, 1)[::-1].cumsum(axis=0).min(axis=0)
        return m, s, t, u, (x * s[None, :, None]).sum(), x.T.sum(axis=0) + x.sum(axis=2).T

    check(f, x, backend=backend, scale=3.0 * 120 * 10)


def test_output_is_also_used_further(backend):
    x = rand((6, 6), np.float64, np.random.default_rng(78))

    def f(x):
        a = x @ x
        b = a.sum(axis=0)
        c = a / b
        return a, b, c, c @ a, [a.T, b[::-1]]

    check(f, x, backend=backend, scale=1e4)


def test_same_function_many_signatures(backend):
    # one jitted function over shapes and dtypes, each compared with NumPy
    import numfn
    f = numfn.jit(lambda x: (softmax(x.astype(np.float64)), x.sum(axis=-1), x[..., ::-1].max(axis=-1)),
                  backend=backend)
    rng = np.random.default_rng(79)
    for shape in [(3,), (2, 3), (1, 1), (4, 1, 5)]:
        for dtype in (np.float32, np.int32):
            x = rand(shape, dtype, rng)
            check(None, x, backend=backend, jitted=f, scale=50.0,
                  expected=(softmax(x.astype(np.float64)), x.sum(axis=-1), x[..., ::-1].max(axis=-1)))
    assert len(f.specializations) == 8


def test_large_arrays(backend):
    # big enough for any multi-threaded or blocked code path: elementwise, every reduction axis, scans, matmul
    rng = np.random.default_rng(80)
    v = rng.uniform(-1, 1, 1009 * 991).astype(np.float32)
    m = rng.uniform(-1, 1, (1001, 997))
    i = rng.integers(-100, 100, (513, 2049)).astype(np.int32)
    a, b = rng.uniform(-1, 1, (300, 401)), rng.uniform(-1, 1, (401, 203))

    check(lambda v: (v * 2 + np.sin(v), v.max(), v[::-3].min(), v.reshape(1009, 991).sum(axis=0)), v,
          backend=backend, scale=1009.0)
    w = v.astype(np.float64)
    check(lambda w: (np.cumsum(w), np.cumsum(w[::-1].reshape(991, 1009), axis=0), w.sum(), w.mean()), w,
          backend=backend, scale=1e6)

    def f(m, i, a, b):
        return (m.sum(axis=0), m.sum(axis=1), m.T.max(axis=1), m[::-1] - m.mean(axis=0),
                m[:, ::2] + m[:, 1::2][:, :498].sum(axis=1, keepdims=True)[:, :1],
                i.sum(), i.sum(axis=0), i.max(axis=1), np.cumsum(i, axis=0)[-1], np.cumsum(i, axis=1)[:, -1],
                a @ b, (a @ b).sum(axis=0), np.exp(m[:200, :200]) @ m[:200, :5])

    check(f, m, i, a, b, backend=backend, scale=1e4)


def test_concurrent_calls_from_threads(backend):
    # calls from several Python threads at once (large arrays run without the GIL) each get their own answer
    from concurrent.futures import ThreadPoolExecutor

    import numfn
    f = numfn.jit(lambda x: (softmax(x), x.sum(axis=0), np.cumsum(x, axis=1)[:, -1]), backend=backend)
    rng = np.random.default_rng(81)
    xs = [rng.uniform(-3, 3, (200, 300)) for _ in range(8)]
    f(xs[0])   # compile once

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(f, xs * 3))
    for x, r in zip(xs * 3, results):
        assert_same(r, (softmax(x), x.sum(axis=0), np.cumsum(x, axis=1)[:, -1]), scale=1e3)


@pytest.mark.parametrize("pos", [0, 12345, (1 << 20) - 1])
def test_large_reductions_propagate_nan_wherever_it_is(backend, pos):
    # reductions split into parallel partials must still propagate a NaN found in any one of them
    g = np.random.default_rng(82).uniform(-1, 1, 1 << 20).astype(np.float32)
    g[pos] = np.nan
    check(lambda g: (g.max(), g.min(), g.sum(), g.mean(), g.reshape(1024, 1024).max(axis=0),
                     g.reshape(1024, 1024).min(axis=1)), g, backend=backend, scale=1e3)


def test_large_integer_and_bool_reductions(backend):
    rng = np.random.default_rng(83)
    n = 1 << 20
    i8, b = rng.integers(-128, 128, n).astype(np.int8), rng.random(n) < 0.5
    u8 = rng.integers(0, 256, (64, 128, 128)).astype(np.uint8)
    sgn = np.where(rng.random(n) < 0.5, -1, 1).astype(np.int32)
    x3 = rng.uniform(-1, 1, (64, 4096, 4))
    check(lambda i8, b, u8, sgn, x3: (i8.sum(), i8.astype(np.int16).sum(), i8.max(), i8.min(), i8.mean(), b.sum(),
                                      b.max(), b.min(), (i8 > 0).mean(), u8.sum(axis=1), u8.max(axis=(0, 2)),
                                      u8.mean(), sgn.prod(), (sgn * 2).prod(), x3.sum(axis=1),
                                      x3.max(axis=1, keepdims=True), x3.mean(axis=(0, 1)),
                                      np.cumsum(x3, axis=1)[:, -1]),
          i8, b, u8, sgn, x3, backend=backend, scale=1e4)


def test_jitted_function_called_inside_another(backend):
    import numfn
    inner = numfn.jit(lambda x, s: softmax(x * s), backend=backend)
    x = rand((3, 4), np.float64, np.random.default_rng(84))
    # the oracle: the outer function run by NumPy calls the compiled inner function on NumPy arrays
    check(lambda x: inner(x, 2.0).sum(axis=0) + inner(x.T, 0.5).max(), x, backend=backend, scale=10.0)


def test_indices_beyond_32_bits(backend):
    # 2**31 + 16 elements: offsets past 2**31 must use 64-bit index arithmetic (all of numfn's index math is int64)
    import numfn
    x = np.zeros(2**31 + 16, np.int8)
    x[-16:] = np.arange(16, dtype=np.int8)
    x[2**31 - 3] = 7
    f = numfn.jit(lambda x: (x[-16:] * 2, x[2**31 - 4:2**31 + 2] + 1, x[::2**29]), backend=backend)
    got = f(x)
    want = (x[-16:] * 2, x[2**31 - 4:2**31 + 2] + 1, x[::2**29])
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and np.array_equal(g, w)
