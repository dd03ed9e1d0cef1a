"""Random numbers: numfn.random's Philox4x32-10 against the published known answers, the same bits traced and
eager, keys, statistical checks of every distribution (fixed seeds: the checks are deterministic, and their
thresholds are far beyond what a correct generator reaches), numpy Generators as arguments, and the errors for
np.random used while tracing (which would otherwise make the numbers constants of the compiled program)."""
import math
import threading
import warnings

import numpy as np
import pytest

import numfn
import numfn.numpy as fnp
import numfn.random as nr
from numfn.numpy.random import KeyedGenerator, RandomStateWarning
from numpy.random import random_sample as _random_sample

KEY = nr.key(2024)


def _u64(*words):
    return [np.array([w], np.uint64) for w in words]


@pytest.mark.parametrize("counter,key,expected", [
    # Random123's kat_vectors for philox4x32 with 10 rounds
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
])
def test_philox_known_answers(counter, key, expected):
    got = nr.philox4x32(_u64(*counter), _u64(*key))
    assert tuple(int(w[0]) for w in got) == expected


def test_traced_bits_are_philox_of_the_element_counters(backend):
    # element i of a draw is word 0 (and 1, for 64 bits) of Philox((i, 0, 0, 0), key), computed inside the kernel
    n = 1000
    f = numfn.jit(lambda k: (nr.bits(k, (n,)), nr.bits(k, (10, 5), np.uint64)), backend=backend)
    b32, b64 = f(KEY)
    i = np.arange(n, dtype=np.uint64)
    words = nr.philox4x32((i, 0, 0, 0), tuple(KEY.astype(np.uint64)))
    np.testing.assert_array_equal(b32, words[0].astype(np.uint32), strict=True)
    expected64 = (words[0][:50] << np.uint64(32)) | words[1][:50]
    np.testing.assert_array_equal(b64, expected64.reshape(10, 5), strict=True)


def test_eager_and_traced_calls_give_the_same_numbers(backend):
    k2 = nr.fold_in(KEY, 7)
    draws = lambda k: (nr.uniform(k, (4, 3)), nr.uniform(k, (5,), np.float32, -2.0, 3.0), nr.normal(k, (6,)),
                       nr.normal(k, (2, 2), np.float32, 1.0, 2.0), nr.integers(k, (7,), -5, 5),
                       nr.integers(k, (3,), 100, dtype=np.uint8), nr.bernoulli(k, 0.3, (8,)), nr.bits(k, (3,)),
                       nr.randint(k, (2,), 0, 2**40))
    traced = numfn.jit(draws, backend=backend)(k2)
    eager = draws(k2)   # compiled for the default backend
    for t, e in zip(traced, eager):   # the same bits: both backends round every float operation the same way
        np.testing.assert_array_equal(t, e, strict=True)


def test_keys_traced_and_eager(backend):
    f = numfn.jit(lambda seed, k, d: (nr.key(seed), nr.split(k), nr.split(k, 5), nr.fold_in(k, d), nr.fold_in(k, 3),
                                      nr.split(k, 0)), backend=backend)
    for seed in (0, 1, 2**40 + 5, -1):
        got = f(seed, KEY, 12)
        want = (nr.key(seed), nr.split(KEY), nr.split(KEY, 5), nr.fold_in(KEY, 12), nr.fold_in(KEY, 3),
                nr.split(KEY, 0))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w, strict=True)
    assert nr.key(-1).tolist() == [0xFFFFFFFF, 0xFFFFFFFF] and nr.key(2**32 + 3).tolist() == [1, 3]
    keys = np.concatenate([nr.split(KEY, 50), [nr.fold_in(KEY, i) for i in range(50)], [KEY]])
    assert len({tuple(k) for k in keys.tolist()}) == 101   # all different


def test_key_and_argument_errors():
    for bad in (1.5, "1", None, True):
        with pytest.raises(TypeError):
            nr.key(bad)
    with pytest.raises(ValueError):
        nr.key(2**64)
    for bad_key in (np.zeros(2, np.int64), np.zeros(3, np.uint32), np.zeros((1, 2), np.uint32)):
        with pytest.raises(TypeError, match="uint32 array of shape"):
            nr.uniform(bad_key, (2,))
    with pytest.raises(ValueError, match="low >= high"):
        nr.integers(KEY, (2,), 5, 5)
    with pytest.raises(ValueError, match="out of bounds"):
        nr.integers(KEY, (2,), 0, 300, np.uint8)
    with pytest.raises(ValueError):
        nr.uniform(KEY, (2,), np.int32)
    with pytest.raises(ValueError):
        nr.uniform(KEY, (-1,))
    with pytest.raises(ValueError):
        nr.split(KEY, -1)


# ---- distributions --------------------------------------------------------------------------------------------
N = 200_000


def _ks(sample: np.ndarray, cdf) -> float:
    """sqrt(n) times the Kolmogorov-Smirnov distance between the sample and a continuous distribution: beyond 2.0
    with probability below 0.001 for a correct generator."""
    x = np.sort(sample.astype(np.float64))
    n = x.size
    f = cdf(x)
    return math.sqrt(n) * max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


_normal_cdf = np.vectorize(lambda z: 0.5 * (1.0 + math.erf(z / math.sqrt(2.0))))


@pytest.fixture(scope="module")
def samples():
    draws = numfn.jit(lambda k: (nr.uniform(k, (N,)), nr.uniform(nr.fold_in(k, 1), (N,), np.float32),
                                 nr.normal(nr.fold_in(k, 2), (N,)), nr.normal(nr.fold_in(k, 3), (N,), np.float32),
                                 nr.integers(nr.fold_in(k, 4), (N,), -3, 7), nr.bits(nr.fold_in(k, 5), (N,)),
                                 nr.bernoulli(nr.fold_in(k, 6), 0.25, (N,)),
                                 nr.integers(nr.fold_in(k, 7), (N,), 0, 256, np.uint8),
                                 nr.integers(nr.fold_in(k, 8), (N,), -2**63, 2**63 - 1),
                                 nr.uniform(nr.fold_in(k, 9), (N,), np.float64, -2.0, 6.0)))
    return draws(nr.key(11))


def test_uniform_distribution(samples):
    for u, dt in ((samples[0], np.float64), (samples[1], np.float32)):
        assert u.dtype == dt and u.shape == (N,)
        assert u.min() >= 0.0 and u.max() < 1.0
        assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / N)
        assert abs(u.var() - 1 / 12) < 0.002
        assert _ks(u, lambda x: x) < 2.0
    # the scaled one, and no two elements of a draw repeat more than chance allows
    w = samples[9]
    assert w.min() >= -2.0 and w.max() < 6.0 and _ks(w, lambda x: (x + 2.0) / 8.0) < 2.0
    assert np.unique(samples[0]).size == N


def test_normal_distribution(samples):
    for z, dt in ((samples[2], np.float64), (samples[3], np.float32)):
        assert z.dtype == dt and np.isfinite(z).all()
        assert abs(z.mean()) < 5 / math.sqrt(N)
        assert abs(z.var() - 1.0) < 0.015
        assert _ks(z, _normal_cdf) < 2.0
        tail = np.mean(np.abs(z) > 3.0)   # 0.0027 for a standard normal
        assert abs(tail - 0.0027) < 5 * math.sqrt(0.0027 / N)


def test_integer_distributions(samples):
    r = samples[4]
    assert r.dtype == np.int64 and r.min() == -3 and r.max() == 6
    counts = np.bincount(r + 3, minlength=10)
    chi2 = np.sum((counts - N / 10) ** 2 / (N / 10))
    assert chi2 < 40   # 9 degrees of freedom: exceeded with probability ~1e-5
    b = samples[7]
    assert b.dtype == np.uint8
    counts = np.bincount(b, minlength=256)
    assert np.sum((counts - N / 256) ** 2 / (N / 256)) < 360   # 255 degrees of freedom
    full = samples[8]
    assert full.dtype == np.int64 and (full < 0).mean() == pytest.approx(0.5, abs=0.01)


def test_bits_and_bernoulli(samples):
    bits = samples[5]
    assert bits.dtype == np.uint32
    ones = np.array([np.mean((bits >> np.uint32(i)) & np.uint32(1)) for i in range(32)])
    assert np.all(np.abs(ones - 0.5) < 5 * math.sqrt(0.25 / N))
    # neighbouring elements are not correlated
    u = samples[0]
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 5 / math.sqrt(N)
    assert abs(np.corrcoef(samples[0], samples[9])[0, 1]) < 5 / math.sqrt(N)   # different keys
    p = samples[6]
    assert p.dtype == np.bool_ and abs(p.mean() - 0.25) < 5 * math.sqrt(0.25 * 0.75 / N)


def test_traced_bounds_are_checked_after_the_call(backend):
    f = numfn.jit(lambda k, lo, hi: nr.integers(k, (5,), lo, hi), backend=backend)
    r = f(KEY, np.array([0, 10, -3, 0, 7]), 12)
    assert r.dtype == np.int64 and np.all((r >= [0, 10, -3, 0, 7]) & (r < 12))
    with pytest.raises(ValueError, match="low >= high"):
        f(KEY, np.array([0, 12, -3, 0, 7]), 12)


def test_generation_fuses_into_its_consumer():
    nf = numfn.jit(lambda k, x: x * 2.0 + nr.normal(k, x.shape) * nr.uniform(nr.fold_in(k, 1), x.shape)) \
        .specialize(KEY, np.zeros((64, 64)))
    assert len(nf.schedule) == 1


def test_vmap_over_keys():
    keys = nr.split(KEY, 4)
    f = numfn.vmap(lambda k: (nr.uniform(k, (3,)), nr.integers(k, (2,), 0, 9)))
    got = f(keys)
    for i, k in enumerate(keys):
        np.testing.assert_array_equal(got[0][i], nr.uniform(k, (3,)))
        np.testing.assert_array_equal(got[1][i], nr.integers(k, (2,), 0, 9))


# ---- numpy Generators -----------------------------------------------------------------------------------------
def _uses_generator(x, rng):
    return (x + rng.standard_normal(x.shape), rng.random(3, np.float32), rng.integers(0, 10, size=4),
            rng.integers(5, size=(2, 2), dtype=np.int8, endpoint=True), rng.uniform(2, 3, size=2),
            rng.normal(5, 0.1), rng.uniform(np.zeros(2), [1.0, 2.0]), rng.random())


def test_generator_argument_advances_and_reproduces(backend):
    f = numfn.jit(_uses_generator, backend=backend)
    x = np.zeros(3)
    rng = np.random.default_rng(5)
    first, second = f(x, rng), f(x, rng)
    again = f(x, np.random.default_rng(5))
    for a, c in zip(first, again):
        np.testing.assert_array_equal(a, c, strict=True)
    assert not np.array_equal(first[0], second[0])
    shapes = [(3,), (3,), (4,), (2, 2), (2,), (), (2,), ()]
    dtypes = [np.float64, np.float32, np.int64, np.int8, np.float64, np.float64, np.float64, np.float64]
    for r, s, d in zip(first, shapes, dtypes):
        assert r.shape == s and r.dtype == d
    assert first[2].min() >= 0 and first[2].max() < 10 and first[3].max() <= 5
    assert 2 <= first[4].min() and first[4].max() < 3


def test_generator_argument_in_containers_and_keywords():
    f = numfn.jit(lambda x, gens, scale=1.0: x + gens[0].random(x.shape) * scale + gens[1]["g"].random(x.shape))
    x = np.zeros(4)
    r1 = f(x, (np.random.default_rng(1), {"g": np.random.default_rng(2)}), scale=2.0)
    r2 = f(x, (np.random.default_rng(1), {"g": np.random.default_rng(2)}), scale=2.0)
    np.testing.assert_array_equal(r1, r2)
    assert r1.min() >= 0.0 and r1.max() < 3.0


def test_default_rng_with_a_traced_seed_and_a_fixed_one(backend):
    f = numfn.jit(lambda x, seed: x + np.random.default_rng(seed).random(x.shape), backend=backend)
    x = np.zeros(5)
    np.testing.assert_array_equal(f(x, 3), f(x, 3))
    assert not np.array_equal(f(x, 3), f(x, 4))
    # a fixed seed gives the same numbers at every call in NumPy too: NumPy computes them
    g = numfn.jit(lambda x: x + np.random.default_rng(3).standard_normal(x.shape), backend=backend)
    np.testing.assert_array_equal(g(x), np.random.default_rng(3).standard_normal(5))
    h = numfn.jit(lambda x, s: x + fnp.random.default_rng(s).normal(1.0, 2.0, x.shape), backend=backend)
    np.testing.assert_array_equal(h(x, 9), h(x, 9))


def test_keyed_generator_refuses_what_it_lacks():
    f = numfn.jit(lambda x, rng: rng.exponential(size=x.shape))
    with pytest.raises(numfn.NumfnError, match="Generator.exponential"):
        f(np.zeros(2), np.random.default_rng(0))
    with pytest.raises(TypeError, match="RandomState"):
        numfn.jit(lambda x, r: x)(np.zeros(2), np.random.RandomState(0))
    assert isinstance(fnp.random.default_rng(3), KeyedGenerator)
    with pytest.raises(TypeError, match="seed"):
        fnp.random.default_rng(None)


# ---- np.random while tracing ----------------------------------------------------------------------------------
GLOBAL_RNG = np.random.default_rng(99)


def _legacy(x): return x + np.random.rand(3)
def _legacy_normal(x): return x + np.random.normal(size=3)
def _seed(x): np.random.seed(0); return x    # noqa: E702
def _unseeded(x): return x + np.random.default_rng().random(3)
def _global_generator(x): return x + GLOBAL_RNG.random(3)
def _helper(): return GLOBAL_RNG.standard_normal(3)
def _through_a_helper(x): return x + _helper()


def _alias(x): return x + _random_sample(3)   # bound before any trace: NumPy's own function, not numfn's wrapper


def _imported_inside(x):
    from numpy.random import random_sample
    return x + random_sample(3)


def _closure():
    rng = np.random.default_rng(4)
    return lambda x: x + rng.integers(0, 5, 3)


@pytest.mark.parametrize("fn,match", [
    (_legacy, r"numpy.random.rand inside a compiled function \(at .*test_random.py:\d+ in _legacy"),
    (_legacy_normal, r"numpy.random.normal .*test_random.py"), (_seed, "numpy.random.seed"),
    (_unseeded, r"default_rng\(\) inside a compiled function"),
    (_global_generator, "the global 'GLOBAL_RNG' of _global_generator was drawn from"),
    (_through_a_helper, "the global 'GLOBAL_RNG' of _helper"), (_alias, "numpy's global random generator"),
    (_imported_inside, r"numpy.random.random_sample inside .*in _imported_inside"),
    (_closure(), "the variable 'rng' of _closure"),
], ids=lambda v: getattr(v, "__name__", "") if callable(v) else "")
def test_np_random_while_tracing_is_an_error(fn, match, monkeypatch):
    # a generator that changed state is an error only where no other thread could have drawn from it: threads
    # earlier tests leave alive in this worker (a Dask cluster's, a pool's) would make it a warning (tested below)
    import numfn.numpy.random as numfn_random
    monkeypatch.setattr(numfn_random, "other_threads_running", lambda: False)
    before = GLOBAL_RNG.bit_generator.state
    with pytest.raises(numfn.NumfnError, match=match):
        numfn.jit(fn)(np.zeros(3))
    assert np.random.rand.__self__ is np.random.mtrand._rand and not hasattr(np.random.rand, "__wrapped__")
    GLOBAL_RNG.bit_generator.state = before


def test_other_threads_use_np_random_while_a_function_is_traced():
    stop, errors = threading.Event(), []

    def worker():
        try:
            while not stop.is_set():
                np.random.default_rng(1).random(2)
                np.random.standard_normal(2)
        except Exception as e:   # noqa: BLE001 - any failure of the other thread is the test's failure
            errors.append(e)

    t = threading.Thread(target=worker)
    t.start()
    try:
        with warnings.catch_warnings():   # the other thread's draws may be taken for these functions' (a warning)
            warnings.simplefilter("ignore", RandomStateWarning)
            for i in range(3):
                numfn.jit(lambda x, i=i: x * i + nr.uniform(nr.key(i), x.shape))(np.zeros(2))
        # with another thread drawing from the global generator, a change of its state is not surely the traced
        # function's: a warning, not an error
        with pytest.warns(RandomStateWarning):
            numfn.jit(_alias)(np.zeros(3))
    finally:
        stop.set()
        t.join()
    assert not errors


def test_traced_functions_without_random_numbers_are_not_affected():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(numfn.jit(lambda x: x + 1)(np.zeros(2)), np.ones(2))
