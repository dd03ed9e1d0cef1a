"""numfn.random: random numbers from explicit keys, generated at run time inside the compiled kernels.

    import numfn, numfn.random as nr

    @numfn.jit
    def noisy(key, x):
        k1, k2 = nr.split(key)
        return x + nr.normal(k1, x.shape) * nr.uniform(k2, x.shape)

    key = nr.key(0)
    y = noisy(key, x)                 # the same key gives the same numbers;
    y2 = noisy(nr.fold_in(key, 1), x)  # a new key (split, fold_in) gives new ones

A key is a uint32 array of shape (2,) (the 64-bit key of the generator), passed to compiled functions as an
ordinary argument. Numbers are Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC11)
of a counter: element i of a draw of any shape is a pure function of (key, i), computed from an IOTA with 32x32->64
bit multiplications in uint64 arithmetic. So generation needs no state, fuses into the kernel that consumes it and
vectorizes. Reusing a key reuses its numbers: derive new keys with `split` or `fold_in`.

The same functions work outside compiled functions (keys and derived keys are computed with NumPy; samplers compile
a small function once per shape and dtype), with the same bits. The streams are numfn's own: they are not NumPy's
Generator streams (NumPy's Philox is the 4x64 variant, with its own buffering), and not JAX's (threefry keys).
"""
from __future__ import annotations

import math
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numfn.args import as_dtype
from numfn.dtype import DType, dtypes
from numfn.trace.tensor import Tensor, add_check, broadcast_shapes
from numfn.ir.uop import UOp
from numfn.numpy._typing import ArrayLike, DTypeLike, ShapeLike

__all__ = ["key", "split", "fold_in", "bits", "uniform", "normal", "integers", "randint", "bernoulli"]

# Philox4x32's multipliers and Weyl key increments (Random123)
_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF
ROUNDS = 10
# the third counter word separates the uses of one key: element counters, split, fold_in
_BITS, _SPLIT, _FOLD = 0, 1, 2


def philox4x32(counter: Sequence, key: Sequence, rounds: int = ROUNDS) -> tuple:
    """Philox4x32-`rounds` of a counter of four 32-bit words under a key of two. Each word is a Python int, a
    uint64 NumPy array or a uint64 traced array holding a value below 2**32 (mixed freely: they broadcast)."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + _W0) & _MASK, (k1 + _W1) & _MASK
        p0, p1 = c0 * _M0, c2 * _M1   # 32 x 32 -> 64 bits: the high half and the low half are both used
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _MASK, (p0 >> 32) ^ c3 ^ k1, p0 & _MASK
    return c0, c1, c2, c3


# ---- keys ---------------------------------------------------------------------------------------------------------
def key(seed: int | np.integer | Tensor) -> Any:
    """A key from an integer seed (a Python or NumPy integer, or a traced integer inside a compiled function): uint32
    [seed >> 32, seed & 0xFFFFFFFF] of the seed taken modulo 2**64."""
    s: Tensor | int
    if isinstance(seed, Tensor):
        if not (seed.uop.dtype.is_int or seed.uop.dtype.is_bool) or seed.ndim:
            raise TypeError(f"a seed must be an integer scalar, not a {seed.uop.dtype.name} array of shape "
                            f"{seed.shape}")
        s = seed.astype(np.uint64)
        from numfn.numpy.manipulation import stack
        return stack([s >> 32, s & _MASK]).astype(np.uint32)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"a seed must be an integer, not {type(seed).__name__}")
    s = int(seed)
    if not -2**63 <= s < 2**64: raise ValueError(f"seed {s} is outside [-2**63, 2**64)")
    s %= 2**64
    return np.array([s >> 32, s & _MASK], np.uint32)


def _words(k) -> tuple:
    """The two 32-bit words of a key as uint64: 0-d traced arrays while tracing, else 1-element NumPy arrays (NumPy
    warns about the wrapping arithmetic of 0-d scalars, not of arrays)."""
    dt: DType | None
    if isinstance(k, Tensor): shape, dt = k.shape, k.uop.dtype
    else:
        arr = np.asarray(k)
        shape, dt = arr.shape, (dtypes.from_numpy(arr.dtype) if arr.dtype.kind in "biuf" else None)
    if tuple(shape) != (2,) or dt is not dtypes.uint32:
        raise TypeError("a numfn.random key is a uint32 array of shape (2,) made by numfn.random.key(seed), not an "
                        f"array of {getattr(dt, 'name', dt)} and shape {tuple(shape)}")
    if _tracing(k):
        t = Tensor.lift(k)
        return Tensor(t.uop).reshape(2)[0].astype(np.uint64), Tensor(t.uop).reshape(2)[1].astype(np.uint64)
    arr = np.asarray(k).astype(np.uint64)
    return arr[:1], arr[1:]


def _tracing(k) -> bool:
    return isinstance(k, Tensor) or is_tracing()


trace_depth = threading.local()


def is_tracing() -> bool:
    """Whether this thread is tracing a function for numfn.jit (see numfn.numpy.random.trace_guard)."""
    return getattr(trace_depth, "n", 0) > 0


def split(k: ArrayLike, num: int = 2) -> Any:
    """`num` new keys (shape (num, 2)) derived from key k, independent of each other and of k's own numbers."""
    num = operator.index(num)
    if num < 0: raise ValueError(f"split needs a non-negative number of keys, got {num}")
    k0, k1 = _words(k)
    j: Tensor | np.ndarray
    if _tracing(k):
        j = Tensor(UOp.iota(num)).astype(np.uint64)
        w = philox4x32((j & _MASK, j >> 32, _SPLIT, 0), (k0, k1))
        from numfn.numpy.manipulation import stack
        return stack([Tensor.lift(w[0]).broadcast_to((num,)), Tensor.lift(w[1]).broadcast_to((num,))],
                     axis=-1).astype(np.uint32)
    j = np.arange(num, dtype=np.uint64)
    w = philox4x32((j & _MASK, j >> 32, _SPLIT, 0), (k0, k1))
    return np.stack([np.broadcast_to(w[0], (num,)), np.broadcast_to(w[1], (num,))], axis=-1).astype(np.uint32)


def fold_in(k: ArrayLike, data: ArrayLike) -> Any:
    """A new key from key k and an integer (a Python int or a traced integer): different data, independent keys."""
    k0, k1 = _words(k)
    d: Tensor | np.ndarray
    if isinstance(data, Tensor) or _tracing(k):
        d = Tensor.lift(data)
        if not (d.uop.dtype.is_int or d.uop.dtype.is_bool) or d.ndim:
            raise TypeError("fold_in needs an integer scalar")
        d = Tensor(d.uop).astype(np.uint64)
        w = philox4x32((d & _MASK, d >> 32, _FOLD, 0), (k0, k1))
        from numfn.numpy.manipulation import stack
        return stack([Tensor.lift(w[0]).reshape(()), Tensor.lift(w[1]).reshape(())]).astype(np.uint32)
    if isinstance(data, (bool, np.bool_)) or not isinstance(data, (int, np.integer)):
        raise TypeError(f"fold_in needs an integer, not {type(data).__name__}")
    d = np.array([int(data) % 2**64], np.uint64)
    w = philox4x32((d & _MASK, d >> 32, _FOLD, 0), (k0, k1))
    return np.concatenate([w[0], w[1]]).astype(np.uint32)


# ---- samplers -----------------------------------------------------------------------------------------------------
def normalize_shape(shape) -> tuple[int, ...]:
    if shape is None: return ()
    shape = (shape,) if not isinstance(shape, (tuple, list)) else shape
    out = tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in out): raise ValueError("negative dimensions are not allowed")
    return out


def _counter_words(k, shape: tuple[int, ...], count: int) -> list[Tensor]:
    """`count` random 32-bit words (as uint64) for every element of `shape`: Philox of the element's flat index."""
    k0, k1 = _words(k)
    size = math.prod(shape)
    i = Tensor(UOp.iota(size).reshape(shape)).astype(np.uint64)
    # indices below 2**32 leave the second counter word 0 (folded while tracing)
    w = philox4x32((i & _MASK if size > 2**32 else i, i >> 32 if size > 2**32 else 0, _BITS, 0), (k0, k1))
    return [Tensor.lift(x).astype(np.uint64).broadcast_to(shape) for x in w[:count]]


def _unit(k, shape: tuple[int, ...], dt) -> Tensor:
    """Uniform in [0, 1): 24 random bits for float32, 53 for float64 (every value a multiple of 2**-24 or 2**-53)."""
    if dt is dtypes.float32:
        (w,) = _counter_words(k, shape, 1)
        return _small_float(w >> 8, dt) * np.float32(2.0 ** -24)
    w0, w1 = _counter_words(k, shape, 2)
    return _unit53(w0, w1)


def _small_float(w: Tensor, dt) -> Tensor:
    """A uint64 below 2**31 as a float, through int32: CPUs without AVX-512 convert int32 to floats in vectors,
    64-bit integers one at a time."""
    return w.astype(np.int32).astype(dt.np)


def _unit53(w0: Tensor, w1: Tensor, offset: int = 0) -> Tensor:
    """(27 bits of w0 * 2**26 + 26 bits of w1 + offset) * 2**-53 in float64: exact, and vectorizable."""
    hi, lo = _small_float(w0 >> 5, dtypes.float64), _small_float(w1 >> 6, dtypes.float64)
    return (hi * float(2 ** 26) + (lo + offset if offset else lo)) * (2.0 ** -53)


def _float_dtype(dtype, what: str):
    dt = as_dtype(dtype)
    if not dt.is_float: raise ValueError(f"{what} needs a floating-point dtype (float32 or float64), not {dt.name}")
    return dt


def _eager(name: str, *args, static=("shape", "dtype"), **kwargs):
    """A sampler called outside a compiled function: compiled once per value of its `static` arguments, then run
    (the key and the other arguments are arguments of the compiled function)."""
    fn = _EAGER.get((name, static))
    if fn is None: fn = _EAGER.setdefault((name, static), compiler(globals()[name], static_argnames=static))  # noqa: F821
    return fn(*args, **kwargs)


_EAGER: dict[tuple, Any] = {}
# numfn.jit, which compiles the samplers called outside a compiled function: numfn.function (above this module)
# sets it when it is imported
compiler: Callable[..., Any]


def bits(key: ArrayLike, shape: ShapeLike = (), dtype: DTypeLike = np.uint32) -> Any:
    """Raw random bits: uint32 (one Philox word per element) or uint64 (two)."""
    shape, dt = normalize_shape(shape), as_dtype(dtype)
    if dt not in (dtypes.uint32, dtypes.uint64): raise ValueError(f"bits gives uint32 or uint64, not {dt.name}")
    if not _tracing(key): return _eager("bits", key, shape=shape, dtype=dt.np)
    if dt is dtypes.uint32: return _counter_words(key, shape, 1)[0].astype(np.uint32)
    w0, w1 = _counter_words(key, shape, 2)
    return (w0 << 32) | w1


def uniform(key: ArrayLike, shape: ShapeLike = (), dtype: DTypeLike = np.float64, minval: ArrayLike = 0.0,
            maxval: ArrayLike = 1.0) -> Any:
    """Uniform floats in [minval, maxval) (maxval itself may occur by rounding, as in NumPy): minval + (maxval -
    minval) * u, u in [0, 1) with every float32 (24-bit) or float64 (53-bit) grid point equally likely. minval and
    maxval broadcast with shape."""
    shape, dt = normalize_shape(shape), _float_dtype(dtype, "uniform")
    if not _tracing(key): return _eager("uniform", key, minval=minval, maxval=maxval, shape=shape, dtype=dt.np)
    lo, hi = Tensor.lift(minval), Tensor.lift(maxval)
    full = broadcast_shapes(shape, lo.shape, hi.shape)
    if full != shape: raise ValueError(f"minval and maxval of shapes {lo.shape}, {hi.shape} do not broadcast to the "
                                       f"shape {shape}")
    lo, hi = Tensor(lo.uop.cast(dt), lo.weak), Tensor(hi.uop.cast(dt), hi.weak)
    return (lo + (hi - lo) * _unit(key, shape, dt)).astype(dt)   # NumPy's formula


def normal(key: ArrayLike, shape: ShapeLike = (), dtype: DTypeLike = np.float64, loc: ArrayLike = 0.0,
           scale: ArrayLike = 1.0) -> Any:
    """Normally distributed floats, loc + scale * z with z standard normal (Box-Muller: z = sqrt(-2 log u1) *
    cos(2 pi u2), u1 in (0, 1] and u2 in [0, 1) from independent words; no rejection, so it vectorizes)."""
    shape, dt = normalize_shape(shape), _float_dtype(dtype, "normal")
    if not _tracing(key): return _eager("normal", key, loc=loc, scale=scale, shape=shape, dtype=dt.np)
    from numfn.numpy import ufuncs
    if dt is dtypes.float32:
        w0, w1 = _counter_words(key, shape, 2)
        u1 = _small_float((w0 >> 8) + 1, dt) * np.float32(2.0 ** -24)   # (0, 1]: log(u1) is finite
        u2 = _small_float(w1 >> 8, dt) * np.float32(2.0 ** -24)
    else:
        w0, w1, w2, w3 = _counter_words(key, shape, 4)
        u1, u2 = _unit53(w0, w1, offset=1), _unit53(w2, w3)
    z = ufuncs.sqrt(ufuncs.log(u1) * -2.0) * ufuncs.cos(u2 * (2.0 * math.pi))
    lo, sc = Tensor.lift(loc), Tensor.lift(scale)
    if broadcast_shapes(shape, lo.shape, sc.shape) != shape:
        raise ValueError(f"loc and scale of shapes {lo.shape}, {sc.shape} do not broadcast to the shape {shape}")
    return (Tensor(lo.uop.cast(dt), lo.weak) + Tensor(sc.uop.cast(dt), sc.weak) * z).astype(dt)


def integers(key: ArrayLike, shape: ShapeLike = (), minval=0, maxval=None, dtype: DTypeLike = np.int64) -> Any:
    """Uniform integers in [minval, maxval) (with one bound given: [0, minval)), from a 64-bit random x: minval +
    floor(x * range / 2**64) for ranges up to 2**32 known while tracing, minval + x mod range otherwise. Either way
    each value's probability is within range / 2**64 (relative) of the others': at most 2**-32 for ranges up to
    2**32 (no rejection loop, so it vectorizes). Bounds are checked as NumPy checks them (ValueError for low >= high):
    while tracing where they are known then, else after the call."""
    if maxval is None: minval, maxval = 0, minval
    shape, dt = normalize_shape(shape), as_dtype(dtype)
    if not dt.is_int: raise ValueError(f"integers needs an integer dtype, not {dt.name}")
    static = all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in (minval, maxval))
    if static:
        lo, hi = int(minval), int(maxval)
        if lo < dt.min: raise ValueError(f"low is out of bounds for {dt.name}")
        if hi - 1 > dt.max: raise ValueError(f"high is out of bounds for {dt.name}")
        if lo >= hi: raise ValueError("low >= high")
    if not _tracing(key):
        return _eager("integers", key, minval=minval, maxval=maxval, shape=shape, dtype=dt.np,
                      static=("shape", "dtype", "minval", "maxval") if static else ("shape", "dtype"))
    w0, w1 = _counter_words(key, shape, 2)
    if static and hi - lo <= 2**32:
        # floor(x * span / 2**64) for the 64-bit x = w0 * 2**32 + w1, from 32 x 32 -> 64 bit products only (no
        # 64-bit division, so it vectorizes): w0 * span + (w1 * span >> 32) stays below 2**64
        offset = (w0 * (hi - lo) + ((w1 * (hi - lo)) >> 32)) >> 32
        return (offset + (lo % 2**64)).astype(dt)
    x = (w0 << 32) | w1
    span: int | Tensor
    if static:
        span = hi - lo
        offset = x if span == 2**64 else x % span
        return (offset + (lo % 2**64)).astype(dt)
    lo_t, hi_t = Tensor.lift(minval), Tensor.lift(maxval)
    if broadcast_shapes(shape, lo_t.shape, hi_t.shape) != shape:
        raise ValueError(f"minval and maxval of shapes {lo_t.shape}, {hi_t.shape} do not broadcast to the shape "
                         f"{shape}")
    lo64 = Tensor(lo_t.uop.cast(dtypes.int64)).astype(np.uint64)
    span = Tensor(hi_t.uop.cast(dtypes.int64)).astype(np.uint64) - lo64
    from numfn.numpy.creation import where_same_dtype
    empty = Tensor(hi_t.uop.cast(dtypes.int64)) <= Tensor(lo_t.uop.cast(dtypes.int64))
    if empty.size: add_check(empty, 0, lambda _: ValueError("low >= high"))
    return (where_same_dtype(empty, Tensor.lift(np.uint64(0)), x % span) + lo64).astype(dt)


def randint(key: ArrayLike, shape: ShapeLike, minval: ArrayLike, maxval: ArrayLike, dtype: DTypeLike = np.int64) -> Any:
    """integers with JAX's argument order: randint(key, shape, minval, maxval, dtype)."""
    return integers(key, shape, minval, maxval, dtype)


def bernoulli(key: ArrayLike, p: ArrayLike = 0.5, shape: ShapeLike | None = None) -> Any:
    """True with probability p (broadcast to shape; shape defaults to p's): u < p for u uniform in [0, 1)."""
    pt = Tensor.lift(p) if _tracing(key) else np.asarray(p)
    shape = tuple(pt.shape) if shape is None else normalize_shape(shape)
    if not _tracing(key): return _eager("bernoulli", key, p=p, shape=shape)
    assert isinstance(pt, Tensor)   # lifted above: tracing
    dt = pt.uop.dtype if pt.uop.dtype.is_float else dtypes.float64
    return uniform(key, shape, dt) < pt
