"""numfn.numpy.fft against NumPy's pocketfft (issue 16, item 2): fft, ifft, rfft, irfft, hfft, ihfft, their 2-D and
n-D forms, fftfreq, rfftfreq, fftshift, ifftshift.

Transforms are compared with NumPy's on the same inputs: dtype and shape exactly, values within a few ulp of the
result's magnitude times log2(n) (both sides round differently; a wrong twiddle or index is off by far more).
Lengths: every n from 1 to 64 (the butterflies of 2, 4, 8, 16 and the odd primes up to 13, the matrix stages of
primes 17..61, their mixed products), and larger ones: powers of two, mixed radices, primes above 64 (Bluestein).
Then the keywords: n (cropping, zero padding), axis/axes/s, norm (backward, ortho, forward); dtypes; views;
errors NumPy raises; frequencies and shifts; fusion with the work around a transform.
"""
import math
import warnings

import numpy as np
import pytest

import numfn
import numfn.numpy as fnp
from helpers import check, check_raises_like, numpy_exception, numpy_result, run_jit

rng = np.random.default_rng(16)
NORMS = (None, "backward", "ortho", "forward")


def crand(shape, dtype=np.complex128) -> np.ndarray:
    z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return z.astype(dtype)


def eps_of(dtype) -> float:
    return float(np.finfo(np.dtype(dtype)).eps)


def assert_fft_close(got, want, n: int, ulps: float = 4.0) -> None:
    """Same dtype and shape; every value within `ulps` * eps * log2(n) of the largest magnitude of NumPy's result."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"dtype {got.dtype}, NumPy gives {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape}, NumPy gives {want.shape}"
    if want.size == 0: return
    scale = float(np.abs(want).max()) or 1.0
    bound = ulps * eps_of(want.real.dtype) * max(1.0, math.log2(max(n, 2))) * scale
    err = float(np.abs(got.astype(np.complex128) - want.astype(np.complex128)).max())
    assert err <= bound, f"error {err:.3g} > {bound:.3g} ({err / (eps_of(want.real.dtype) * scale):.1f} eps)"


def check_fft(fn, *args, n: int, ulps: float = 4.0, backend: str = "llvm"):
    """jit(fn)(*args) against fn(*args) by NumPy, leaf by leaf with assert_fft_close."""
    want = numpy_result(fn, args)
    got, _ = run_jit(fn, args, backend=backend)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            try:
                assert_fft_close(g, w, n, ulps)
            except AssertionError as e:
                raise AssertionError(f"result {i}: {e}") from None
    else:
        assert_fft_close(got, want, n, ulps)


# ---- lengths -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", range(1, 65))
def test_fft_of_every_length_up_to_64(n):
    check_fft(np.fft.fft, crand(n), n=n)


# primes above 64 (Bluestein), powers of two, mixed radices, a matrix-stage prime times a power of two
LARGER = [67, 210, 61 * 32, 1024]


@pytest.mark.parametrize("n", LARGER)
def test_fft_and_ifft_of_larger_lengths(n):
    check_fft(lambda x: (np.fft.fft(x), np.fft.ifft(x)), crand(n), n=n)


@pytest.mark.parametrize("n", [1, 2, 9, 30, 67, 100])
def test_real_transforms_of_odd_and_even_lengths(n):
    x, spectrum = rng.standard_normal(n), crand(n // 2 + 1)
    check_fft(lambda x, s: (np.fft.rfft(x), np.fft.ihfft(x), np.fft.irfft(s, n), np.fft.hfft(s, n)), x, spectrum,
              n=n)


@pytest.mark.parametrize("n", [5, 16])
def test_round_trips(n):
    def f(x, z):
        return np.fft.ifft(np.fft.fft(z)), np.fft.irfft(np.fft.rfft(x), n), np.fft.hfft(np.fft.ihfft(x), n)
    x, z = rng.standard_normal(n), crand(n)
    got, _ = run_jit(f, (x, z), backend="llvm")
    for g, w in zip(got, (z, x, x)):
        np.testing.assert_allclose(g, w, rtol=0, atol=16 * eps_of(np.float64) * math.log2(n + 1))


def test_batched_transforms_over_threads():
    # a batch large enough for parallel kernels, with the windowing and power spectrum of the benchmark
    x, w = rng.standard_normal((512, 256)), np.hanning(256)
    check_fft(lambda x, w: np.abs(np.fft.rfft(x * w)) ** 2, x, w, n=256, ulps=8)


# ---- keywords ----------------------------------------------------------------------------------------------------

TRANSFORMS = {"fft": np.fft.fft, "ifft": np.fft.ifft, "rfft": np.fft.rfft, "irfft": np.fft.irfft,
              "hfft": np.fft.hfft, "ihfft": np.fft.ihfft}
REAL_INPUT = ("rfft", "ihfft")


@pytest.mark.parametrize("name", TRANSFORMS)
def test_every_norm(name):
    _norms(name, "llvm")


@pytest.mark.parametrize("name", ["fft", "irfft"])
def test_every_norm_on_the_c_backend(name):
    _norms(name, "c")


def _norms(name: str, backend: str):
    fn = TRANSFORMS[name]
    x = rng.standard_normal(12) if name in REAL_INPUT else crand(12)
    check_fft(lambda x: tuple(fn(x, norm=norm) for norm in NORMS), x, n=12, backend=backend)


@pytest.mark.parametrize("name", TRANSFORMS)
def test_n_crops_and_pads(name):
    fn = TRANSFORMS[name]
    x = rng.standard_normal(10) if name in REAL_INPUT else crand(10)
    check_fft(lambda x: tuple(fn(x, n=n) for n in (1, 7, 16)), x, n=16)


def test_n_with_norm_uses_the_new_length():
    x = crand(10)
    check_fft(lambda x: (np.fft.fft(x, 16, norm="ortho"), np.fft.ifft(x, 6, norm="forward"),
                         np.fft.irfft(x, 7, norm="ortho"), np.fft.rfft(x.real, 15, norm="forward")), x, n=16)


def test_axis():
    x = crand((4, 6, 5))
    check_fft(lambda x: (np.fft.fft(x, axis=0), np.fft.ifft(x, 8, axis=-2), np.fft.rfft(x.real, axis=0),
                         np.fft.irfft(x, axis=1), np.fft.ihfft(x.imag, axis=-3)), x, n=8)


ND = [  # (label, function, keywords)
    ("fft2", np.fft.fft2, {}), ("ifft2", np.fft.ifft2, {"axes": (0, 2)}),
    ("fftn-axes", np.fft.fftn, {"axes": (2, 0), "norm": "ortho"}), ("fftn-s", np.fft.fftn, {"s": (-1, 4),
                                                                                           "axes": (1, 2)}),
    ("ifftn-repeated", np.fft.ifftn, {"axes": (1, 1)}), ("rfft2", np.fft.rfft2, {}),
    ("rfftn", np.fft.rfftn, {"s": (4, 7), "axes": (2, 0), "norm": "forward"}),
    ("irfft2", np.fft.irfft2, {}), ("irfftn", np.fft.irfftn, {"s": (3, 9), "axes": (0, 2), "norm": "ortho"}),
]


def test_two_and_n_dimensional_transforms():
    x = crand((4, 6, 5))

    def table(x):
        return tuple(fn(x.real if label.startswith("rfft") else x, **kw) for label, fn, kw in ND)
    check_fft(table, x, n=4 * 6 * 5, ulps=4)


def test_s_without_axes_warns_and_none_in_s_is_the_default_length():
    x = crand((4, 6))
    with pytest.warns(DeprecationWarning):
        want = np.fft.fftn(x, s=(3, 5))
    with pytest.warns(DeprecationWarning):
        got = numfn.jit(lambda x: np.fft.fftn(x, s=(3, 5)))(x)
    assert_fft_close(got, want, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = np.fft.irfftn(x, s=(None, 7), axes=(0, 1))
        got = numfn.jit(lambda x: np.fft.irfftn(x, s=(None, 7), axes=(0, 1)))(x)
    assert_fft_close(got, want, 8)


# float64 and complex128 are every other test's; int64, uint8 and bool convert to float64 as int32 does
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32, np.complex64],
                         ids=lambda d: np.dtype(d).name)
def test_dtypes(dtype):
    if np.dtype(dtype).kind == "c": x = crand(24, dtype)
    elif np.dtype(dtype).kind == "b": x = rng.random(24) < 0.5
    else: x = (rng.standard_normal(24) * 3).astype(dtype)
    kind = np.dtype(dtype).kind
    # integers and bools are converted to float64 first: one transform of each kind checks the conversion
    fns = [np.fft.fft, lambda x: np.fft.irfft(x, 24)] if kind in "iub" else \
        [np.fft.fft, np.fft.ifft, lambda x: np.fft.irfft(x, 24), lambda x: np.fft.hfft(x, 24)]
    if kind != "c": fns += [np.fft.rfft] if kind in "iub" else [np.fft.rfft, np.fft.ihfft]
    # float16 inputs are transformed in single precision, their irfft/hfft rounded back to float16
    check_fft(lambda x: tuple(f(x) for f in fns), x, n=24, ulps=4 if np.dtype(dtype) != np.float16 else 2 ** 13)


def test_views_with_negative_strides_and_transposes():
    base = crand((8, 12))
    check_fft(lambda b: (np.fft.fft(b[::-2, 1::2]), np.fft.fft(b.T[::-1], axis=0), np.fft.rfft(b.real[:, ::-1])),
              base, n=12)


def test_size_zero_batches_and_size_one_transforms():
    check_fft(lambda x, y: (np.fft.fft(x), np.fft.rfft(x.real), np.fft.fft(y), np.fft.irfft(y, 1),
                            np.fft.fft(y, 3, axis=0)), crand((0, 8)), crand((3, 1)), n=8)


def test_scalar_and_list_inputs():
    def make(xp): return lambda x: (xp.fft.fft(x + np.array([1.0, 2.0, 3.0])), xp.fft.fft([1.0, 2.0, 3.0]) * x)
    x = crand(())
    got, _ = run_jit(make(fnp), (x,), backend="llvm")
    for g, w in zip(got, make(np)(x)): assert_fft_close(g, w, 3)


def test_fused_with_the_work_around_it():
    # a window before and the power spectrum after add no kernel of their own
    x, w = rng.standard_normal((64, 256)), np.hanning(256)

    def plain(x, w): return np.fft.rfft(x)
    def fused(x, w): return np.abs(np.fft.rfft(x * w)) ** 2
    kernels = [len(numfn.jit(f).specialize(x, w).schedule) for f in (plain, fused)]
    assert kernels[0] == kernels[1]
    check_fft(fused, x, w, n=256, ulps=8)


# ---- layouts: the batch innermost (numfn.numpy.fft.c2c_axis) ------------------------------------------------------

# (shape, axis): batches along the last axis tiled by BATCH_LANES (a whole number of tiles, a partial last tile, too
# few rows to tile), transforms along a leading axis with the batch after it (inner >= BATCH_LANES: in place;
# fewer: moved last), a matrix-stage prime (17 * 4) and Bluestein (67) in each layout
LAYOUTS = [((24, 64), -1), ((19, 48), -1), ((64, 9), 0), ((64, 3), 0), ((6, 40, 10), 1), ((20, 68), -1),
           ((68, 16), 0), ((18, 67), -1), ((67, 8), 0)]
SINGLE = [LAYOUTS[1], LAYOUTS[2], LAYOUTS[5]]


@pytest.mark.parametrize("dtype,layouts", [(np.complex128, LAYOUTS), (np.complex64, SINGLE)], ids=["c128", "c64"])
def test_batched_layouts(dtype, layouts):
    zs = [crand(shape, dtype) for shape, _ in layouts]

    def f(*zs):
        out = [np.fft.fft(z, axis=ax) for z, (_, ax) in zip(zs, layouts)]
        return tuple(out) + (np.fft.ifft(zs[0], axis=layouts[0][1], norm="ortho"),)
    check_fft(f, *zs, n=68, ulps=6)


def test_batched_layouts_of_views_and_2d():
    # non-contiguous and negative-stride inputs, in each layout; 2-D transforms (rows tiled, columns in place)
    z, w = crand((40, 64)), crand((33, 48))
    check_fft(lambda z, w: (np.fft.fft(z[::-1, ::2]), np.fft.fft(z.T[:, 3:35], axis=0), np.fft.fft2(z),
                            np.fft.ifft2(w[:, ::-1], s=(32, 64), norm="forward")), z, w, n=64, ulps=6)


def test_window_fuses_into_batched_real_transform():
    # the real transforms keep the batch outermost, so a window still fuses into the first stage
    x, w = rng.standard_normal((40, 256)), np.hanning(256)
    names = [ei.kernel.name for ei in numfn.jit(lambda x, w: np.fft.rfft(x * w)).specialize(x, w).schedule]
    assert len(names) == len(numfn.jit(lambda x, w: np.fft.rfft(x)).specialize(x, w).schedule), names


def test_vmap_of_fft():
    z = crand((5, 12))
    got = numfn.vmap(lambda z: np.fft.fft(z))(z)
    assert_fft_close(got, np.fft.fft(z), 12)


ERRORS = [
    ("0-d", lambda x: np.fft.fft(x[0, 0])), ("n=0", lambda x: np.fft.fft(x, 0)), ("n=-1", lambda x: np.fft.ifft(x, -1)),
    ("n float", lambda x: np.fft.fft(x, 2.0)), ("axis", lambda x: np.fft.fft(x, axis=2)),
    ("norm", lambda x: np.fft.fft(x, norm="x")), ("rfft complex", lambda x: np.fft.rfft(x)),
    ("ihfft complex", lambda x: np.fft.ihfft(x)), ("irfft of 1", lambda x: np.fft.irfft(x[:, :1])),
    ("s axes lengths", lambda x: np.fft.fftn(x, s=(2,), axes=(0, 1))), ("fft2 of 1-D", lambda x: np.fft.fft2(x[0])),
    ("rfftn no axes", lambda x: np.fft.rfftn(x.real, axes=())), ("hfft norm", lambda x: np.fft.hfft(x, norm="no")),
]


@pytest.mark.parametrize("fn", [f for _, f in ERRORS], ids=[label for label, _ in ERRORS])
def test_errors_numpy_raises(fn):
    check_raises_like(fn, crand((3, 5)), backend="llvm")


def fft_into(x):
    o = np.empty(4, complex)
    r = np.fft.fft(x, out=o)
    return r, o, r is o


def test_out_writes_into_the_array_given():
    """NumPy 2's out= of the transforms: the result written into it, which is returned (the generic out= of
    NumPy's functions, numfn.trace.numpy_protocol)."""
    check(fft_into, crand(4), backend="llvm")


# ---- frequencies and shifts --------------------------------------------------------------------------------------

def test_fftfreq_and_rfftfreq():
    def make(xp):
        return lambda: tuple(f(n, d) for n in (1, 2, 7, 8) for d in (1.0, 0.1, np.float32(0.25), 3)
                             for f in (xp.fft.fftfreq, xp.fft.rfftfreq))
    check(make(fnp), backend="llvm", expected=make(np)(), rtol=0, atol=0)
    for n, kw in ((2.0, {}), (4, {"device": "gpu"}), (-3, {}), (0, {})):
        for f, g in ((fnp.fft.fftfreq, np.fft.fftfreq), (fnp.fft.rfftfreq, np.fft.rfftfreq)):
            e = numpy_exception(g, (n,), kw)
            if e is None:   # rfftfreq(-3): no frequencies
                check(_calling(f, n), backend="llvm", expected=g(n))
                continue
            with pytest.raises(type(e)):
                f(n, **kw)


def _calling(f, *args):
    return lambda: f(*args)


def test_frequencies_with_a_traced_spacing(backend):
    def make(xp): return lambda d: (xp.fft.fftfreq(7, d), xp.fft.rfftfreq(8, d), xp.fft.fftfreq(6, 0.5) * d)
    d = np.float32(0.3)
    check(make(fnp), d, backend=backend, expected=make(np)(d))


def test_fftshift_and_ifftshift(backend):
    x, y = rng.standard_normal(7), crand((4, 5))
    check(lambda x, y: (np.fft.fftshift(x), np.fft.ifftshift(x), np.fft.fftshift(y), np.fft.ifftshift(y, axes=0),
                        np.fft.fftshift(y, axes=(1,)), np.fft.ifftshift(y, axes=(-1, 0)),
                        np.fft.fftshift(np.fft.fftfreq(8)), np.fft.ifftshift(np.fft.fftshift(y))),
          x, y, backend=backend)


def test_the_batched_power_spectrum_indexes_without_division():
    """rfft's half-split pass reads its halves through padded views of the butterflies' (8, 16)-shaped planes: with
    each select's branch clamped to what its condition allows (codegen/selects.py) the division and remainder by
    the stage sizes simplify away, and the pass vectorizes."""
    x = np.random.default_rng(3).standard_normal((64, 256))
    f = numfn.jit(lambda x: np.abs(np.fft.rfft(x)) ** 2, backend="llvm")
    np.testing.assert_allclose(f(x), np.abs(np.fft.rfft(x)) ** 2, rtol=1e-12, atol=1e-9)
    source = f.specialize(x).source
    assert " sdiv " not in source and " srem " not in source
