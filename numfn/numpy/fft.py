"""numfn.numpy.fft: NumPy's discrete Fourier transforms over traced arrays (np.fft.NAME on a traced array runs these).

Every transform is a composition of the tracer's primitives, so it fuses with the work around it (a window before,
abs()**2 after) and its kernels are threaded over the batch like any other:

  mixed radix    n = r_1 r_2 ... r_s with radices 16, 8, 4, 2 (powers of two) and the primes 3 ... 61, computed as a
                 Stockham autosort: stage i views the data as (batch, r_i, m, p) (m: the length still to transform,
                 p = r_1 ... r_{i-1}: the output digits done), computes the r_i outputs of a radix-r_i DFT of the r_i
                 values at each (j, P), multiplies output k by the twiddle w^(j k) (w = exp(-+2 pi i / (r_i m)), a
                 constant table), and stores the r_i outputs as (batch, m, r_i, p): the digits done stay the
                 innermost, contiguous axis, and after the last stage the data is in order. Each stage is one kernel
                 storing (batch, m, r_i, p) (`contiguous`). Radices up to 16 are butterflies written out: their
                 outputs are stacked along the r_i axis, whose loop the code generator unrolls (codegen/opt.py), so
                 one loop iteration computes all of them from shared loads and common subexpressions; radix 16 and 8
                 are 4 x 4 and 4 x 2 transforms, an odd prime q uses the symmetric sums x_t +- x_(q-t), (q - 1) / 2
                 real products each. Primes from 17 to 61 are small matrix products (a reduction over t, a loop).
  Bluestein      any n with a prime factor above 64: the transform is a convolution with the chirp c_j =
                 exp(-+ pi i j**2 / n), done by two mixed-radix transforms of a length M >= 2n - 1 of factors 2, 3,
                 5 and 7, the one with the least work (the chirp's transform is a constant computed at trace time).
  real input     rfft of even n transforms the n/2 complex values x[2j] + i x[2j+1] and separates the even and odd
                 halves' spectra in one fused pass; irfft is the reverse. Odd lengths use the complex transform.

Twiddles and chirps are computed exactly in long double from integer angles (reduced to the first octant) and
rounded once. Complex values are pairs of real lanes in the generated code (codegen/complex.py). Normalization
(`norm`), the length `n` (zero padding or truncation), axes and dtypes follow NumPy 2: float32 and complex64
transform in single precision, everything else in double.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from numfn.args import normalize_axis, refuse
from numfn.codegen.complex import complex_dtype
from numfn.dtype import DType, dtypes
from numfn.trace.tensor import Tensor
from numfn.ir.uop import Ops, UOp

__all__ = ['fft', 'ifft', 'rfft', 'irfft', 'fft2', 'ifft2', 'rfft2', 'irfft2', 'fftn', 'ifftn', 'rfftn', 'irfftn',
           'hfft', 'ihfft', 'fftfreq', 'rfftfreq', 'fftshift', 'ifftshift']

# prime factors up to this are butterflies of their own (unrolled code); larger ones up to MATRIX_PRIME_MAX are
# stages computed as small matrix products; a larger one makes the whole length a Bluestein transform
DIRECT_PRIME_MAX = 13
MATRIX_PRIME_MAX = 64
# transforms computed side by side in a batch's tiles (the vectorized innermost loop: two AVX2 vectors of doubles)
BATCH_LANES = 8


# ---------------------------------------------------------------------------------------------------------------
# exact roots of unity (trace time, NumPy)

def _pi_ld() -> np.longdouble:
    return np.arccos(np.longdouble(-1))


def roots_of_unity(e: np.ndarray, n: int, sign: int) -> tuple[np.ndarray, np.ndarray]:
    """exp(sign * 2 pi i e / n) for integers e, as long double pairs (cos, sin): the angle reduced exactly to the
    first octant in integers (e/n = quadrant/4 + r/(4n)), where long double's cos and sin are accurate to far
    below float64's rounding."""
    e = np.asarray(e, dtype=np.int64) % n
    q, r = np.divmod(4 * e, n)           # angle = (pi/2) (q + r/n), 0 <= r < n
    swap = 2 * r > n                      # past the octant: the cofunction of the complement
    rr = np.where(swap, n - r, r).astype(np.longdouble)
    t = (_pi_ld() / 2) * rr / np.longdouble(n)
    c, s = np.cos(t), np.sin(t)
    c, s = np.where(swap, s, c), np.where(swap, c, s)   # cos and sin of the angle within its quadrant
    cos = np.select([q == 0, q == 1, q == 2], [c, -s, -c], s)
    sin = np.select([q == 0, q == 1, q == 2], [s, c, -s], -c)
    return cos, sign * sin


def _complex_table(cos: np.ndarray, sin: np.ndarray, dt: DType) -> np.ndarray:
    out = np.empty(cos.shape, dt.np)
    out.real, out.imag = cos.astype(dt.component.np), sin.astype(dt.component.np)
    return out


@functools.lru_cache(maxsize=256)
def _twiddles(r: int, m: int, sign: int, dt: DType, first: bool = False) -> np.ndarray:
    """The stage twiddles w^(j k) for k = 1..r-1 (rows; from k = 0 with `first`) and j < m,
    w = exp(sign 2 pi i / (r m))."""
    k, j = np.meshgrid(np.arange(0 if first else 1, r), np.arange(m), indexing="ij")
    t = _complex_table(*roots_of_unity(k * j, r * m, sign), dt)
    t.flags.writeable = False
    return t


# ---------------------------------------------------------------------------------------------------------------
# complex values as UOps (the FFT is built at the UOp level, below the Tensor's NumPy semantics)

def _shape(u: UOp) -> tuple[int, ...]:
    """u's shape (every value the transforms build has one)."""
    shape = u.shape
    assert shape is not None
    return shape


def _re(z: UOp) -> UOp: return z.cast(z.dtype.component)
def _im(z: UOp) -> UOp: return z.alu(Ops.IMAG)
def _cplx(re: UOp, im: UOp) -> UOp: return re.alu(Ops.COMPLEX, im)
def _const(dt: DType, v, shape) -> UOp: return UOp.const_like(dt, v, shape)


def _scale(z: UOp, f: float) -> UOp:
    """z times a real constant, each part multiplied (as NumPy's FFT normalizes)."""
    if f == 1.0: return z
    c = _const(z.dtype.component, f, _shape(z))
    return _cplx(_re(z) * c, _im(z) * c)


def _mul_i(z: UOp, s: int) -> UOp:
    """z times s*i (s = +-1): the parts swapped, one negated."""
    return _cplx(-_im(z), _re(z)) if s > 0 else _cplx(_im(z), -_re(z))


def _mul_const(z: UOp, c: float, s: float) -> UOp:
    """z times the constant c + s i, exactly where that is a sign change or a swap of parts."""
    if s == 0 and c == 1: return z
    if s == 0 and c == -1: return -z
    if c == 0 and abs(s) == 1: return _mul_i(z, int(s))
    a, b, sh = _re(z), _im(z), _shape(z)
    comp = z.dtype.component
    if abs(c) == abs(s):   # (a + bi)(c + ci) = c(a - b) + c(a + b)i, and the mirror for s = -c
        k = _const(comp, c, sh)
        return _cplx((a - b) * k, (a + b) * k) if c == s else _cplx((a + b) * k, (b - a) * k)
    kc, ks = _const(comp, c, sh), _const(comp, s, sh)
    return _cplx(a * kc - b * ks, a * ks + b * kc)


def _root(n: int, e: int, sign: int, dt: DType) -> tuple[float, float]:
    c, s = roots_of_unity(np.array([e]), n, sign)
    return float(c[0].astype(dt.component.np)), float(s[0].astype(dt.component.np))


# ---------------------------------------------------------------------------------------------------------------
# butterflies: the r outputs y_k = sum_t x_t w_r^(t k) of r inputs (w_r = exp(sign 2 pi i / r))

def butterfly(xs: list[UOp], sign: int) -> list[UOp]:
    r = len(xs)
    if r == 1: return list(xs)
    if r == 2: return [xs[0] + xs[1], xs[0] - xs[1]]
    if r == 4:
        a, b, c, d = xs[0] + xs[2], xs[0] - xs[2], xs[1] + xs[3], _mul_i(xs[1] - xs[3], sign)
        return [a + c, b + d, a - c, b - d]
    if r in (8, 16):
        return _composite(xs, 4, r // 4, sign)
    return _odd_prime(xs, sign)


def _composite(xs: list[UOp], a: int, b: int, sign: int) -> list[UOp]:
    """A butterfly of r = a*b by the same Cooley-Tukey split as the stages: b transforms of a, twiddles
    w_r^(j2 k1), a transforms of b; output k1 + a k2."""
    r = a * b
    dt = xs[0].dtype
    cols = [butterfly([xs[j1 * b + j2] for j1 in range(a)], sign) for j2 in range(b)]   # cols[j2][k1]
    out: dict[int, UOp] = {}
    for k1 in range(a):
        row = [_mul_const(cols[j2][k1], *_root(r, j2 * k1, sign, dt)) for j2 in range(b)]
        for k2, y in enumerate(butterfly(row, sign)): out[k1 + a * k2] = y
    return [out[k] for k in range(r)]


def _odd_prime(xs: list[UOp], sign: int) -> list[UOp]:
    """An odd length q: with s_t = x_t + x_(q-t) and d_t = x_t - x_(q-t), y_k = x_0 + sum_t s_t cos(2 pi t k/q)
    + sign i sum_t d_t sin(2 pi t k/q), and y_(q-k) the same with the second sum subtracted."""
    q, h = len(xs), len(xs) // 2
    dt, shape = xs[0].dtype, _shape(xs[0])
    comp = dt.component
    s = [xs[t] + xs[q - t] for t in range(1, h + 1)]
    d = [xs[t] - xs[q - t] for t in range(1, h + 1)]
    sr, si = [_re(v) for v in s], [_im(v) for v in s]
    dr, di = [_re(v) for v in d], [_im(v) for v in d]
    x0r, x0i = _re(xs[0]), _im(xs[0])
    out = [xs[0]]
    for v in s: out[0] = out[0] + v
    pairs = {}
    for k in range(1, h + 1):
        cos, sin = roots_of_unity(np.arange(1, h + 1) * k, q, 1)
        c = [_const(comp, float(v.astype(comp.np)), shape) for v in cos]
        sn = [_const(comp, float(v.astype(comp.np)), shape) for v in sin]
        ar, ai, br, bi = x0r, x0i, None, None
        for t in range(h):
            ar, ai = ar + sr[t] * c[t], ai + si[t] * c[t]
            br = dr[t] * sn[t] if br is None else br + dr[t] * sn[t]
            bi = di[t] * sn[t] if bi is None else bi + di[t] * sn[t]
        # sign i (br + i bi) = sign (-bi + i br)
        pairs[k] = (_cplx(ar - bi, ai + br), _cplx(ar + bi, ai - br)) if sign > 0 else \
            (_cplx(ar + bi, ai - br), _cplx(ar - bi, ai + br))
    out += [pairs[k][0] for k in range(1, h + 1)] + [pairs[q - k][1] for k in range(h + 1, q)]
    return out


# ---------------------------------------------------------------------------------------------------------------
# plans

def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1: out.append(n)
    return out


def radices(n: int) -> list[int] | None:
    """The stages' radices for a length n (largest first: the early stages then have the long loops), or None when
    n has a prime factor above MATRIX_PRIME_MAX (Bluestein)."""
    f = _prime_factors(n)
    if f and max(f) > MATRIX_PRIME_MAX: return None
    twos = f.count(2)
    out = [16] * (twos // 4)
    rest = twos % 4
    if rest: out.append(2 ** rest)
    return out + sorted((p for p in f if p != 2), reverse=True)


def good_size(n: int) -> int:
    """A length M >= n for Bluestein's convolution: of the lengths 2**a 3**b 5**c 7**d up to the next power of two,
    the one with the least work, counted as M times its number of stages (each stage is one pass over the data)."""
    top = 1 << max(0, (n - 1).bit_length())
    best, cost = top, top * len(radices(top) or [1])
    smooth = [1]
    for f in (3, 5, 7):
        smooth = [v * f ** e for v in smooth for e in range(top.bit_length()) if v * f ** e < 2 * top]
    for v in smooth:
        m = v
        while m < n: m *= 2
        rs = radices(m)
        assert rs is not None   # (2, 3, 5 and 7 are butterflies)
        c = m * len(rs)
        if m < 2 * top and (c, m) < (cost, best): best, cost = m, c
    return best


# ---------------------------------------------------------------------------------------------------------------
# the complex transform along the last axis

def _stack(ys: list[UOp], axis: int) -> UOp:
    """ys (equal shapes) stacked along a new axis `axis`: a select on its position (the code generator unrolls
    that loop, so each output is computed once)."""
    r, shape = len(ys), _shape(ys[0])
    new = shape[:axis] + (r,) + shape[axis:]
    pos = UOp.iota(r).reshape(tuple(r if i == axis else 1 for i in range(len(new)))).expand(new)
    out = ys[-1].reshape(shape[:axis] + (1,) + shape[axis:]).expand(new)
    for k in range(r - 2, -1, -1):
        here = pos.alu(Ops.CMPEQ, _const(dtypes.int64, k, new))
        out = here.alu(Ops.WHERE, ys[k].reshape(shape[:axis] + (1,) + shape[axis:]).expand(new), out)
    return out


def _take(u: UOp, axis: int, i: int) -> UOp:
    """Index i along `axis` (the axis dropped): a view."""
    shape = _shape(u)
    v = u.shrink(tuple((i, i + 1) if a == axis else (0, s) for a, s in enumerate(shape)))
    return v.reshape(shape[:axis] + shape[axis + 1:])


def c2c(z: UOp, sign: int, scale: float = 1.0, last: bool = False, tile: bool = True) -> UOp:
    """The unnormalized transform (sign -1: forward, +1: backward) of z (complex, shape (..., n)) along its last
    axis, times the real `scale` (c2c_axis along the last axis)."""
    return c2c_axis(z, len(_shape(z)) - 1, sign, scale, last, tile)


def c2c_axis(z: UOp, axis: int, sign: int, scale: float = 1.0, last: bool = False, tile: bool = True) -> UOp:
    """The unnormalized transform of z along `axis`, times the real `scale`.

    The stages run on the data viewed as (outer, n, inner) with the transforms' batch innermost: a butterfly's
    loads and stores are then contiguous along the inner loop, which vectorizes across transforms. Along an axis
    with at least BATCH_LANES elements after it (the columns of a 2-D transform) that is the array's own layout. A
    batch along the last axis is tiled: BATCH_LANES transforms side by side, (batch / BATCH_LANES, n,
    BATCH_LANES), the first stage reading across rows and the consumer of the last reading the tiles back, unless
    `tile` is False: the real transforms keep their batch outermost, because the first stage's loads of a tile
    sit inside its unrolled butterfly loop, where the scheduler counts a value computed before the transform (a
    window) as evaluated once per butterfly output and stores it instead of fusing it.

    Every stage is stored (`contiguous`): a stage's kernel has its butterfly's outputs along a loop of their own,
    which the code generator unrolls; fused into a consumer's loops (the result's shape) that axis would be a digit
    of a flat index, and the outputs would be stored one by one instead. Only a single stage (n <= 16, or an odd
    prime up to 13: its outputs are the innermost axis already) fuses with what uses the result, unless `last` asks
    for it to be stored too."""
    shape = _shape(z)
    n = shape[axis]
    if n == 1: return _scale(z, scale)
    rs = radices(n)
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    if rs is not None and len(rs) > 1 and inner >= BATCH_LANES:
        d = _stages(z.reshape((outer, n, inner)), rs, sign, scale, last)
        return d.reshape(shape)
    if axis != len(shape) - 1:
        return _back(c2c_axis(_last(z, axis), len(shape) - 1, sign, scale, last, tile), axis)
    if rs is None: return _bluestein(z, sign, scale, last, tile)
    batch = outer
    if len(rs) == 1 or batch < 2 * BATCH_LANES or not tile:
        return _stages(z.reshape((batch, n, 1)), rs, sign, scale, last).reshape(shape)
    tiles = -(-batch // BATCH_LANES)
    padded = tiles * BATCH_LANES
    d = z.reshape((batch, n))
    if padded > batch: d = d.pad(((0, padded - batch), (0, 0)))
    d = d.reshape((tiles, BATCH_LANES, n)).permute((0, 2, 1))               # (tiles, n, lanes): a view
    d = _stages(d, rs, sign, scale, last, untile=True).reshape((padded, n))
    if padded > batch: d = d.shrink(((0, batch), (0, n)))
    return d.reshape(shape)


def _stages(d: UOp, rs: list[int], sign: int, scale: float, last: bool, untile: bool = False) -> UOp:
    """The Stockham stages of radices rs on d of shape (outer, n, inner) along its middle axis; with `untile`, the
    last stage stores its outputs as (outer, inner, n) (the lanes of a tile back to rows, from loads across them)
    and that is the result's shape."""
    outer, n, inner = _shape(d)
    m, p = n, 1
    for i, r in enumerate(rs):
        m //= r
        v = d.reshape((outer, r, m, p, inner))
        if r > 16:   # a prime above DIRECT_PRIME_MAX (radices() gives butterflies of 16, 8, 4, 2 and small primes)
            d = _matrix_stage(v, sign)
            if i == len(rs) - 1: d = _scale(d, scale)
        else:
            xs = [_take(v, 1, t) for t in range(r)]                      # (outer, m, p, inner) each
            ys = butterfly(xs, sign)
            if m > 1:
                table = Tensor.lift(_twiddles(r, m, sign, d.dtype)).uop   # (r - 1, m)
                ys = [ys[0]] + [ys[k] * _take(table, 0, k - 1).reshape((1, m, 1, 1)).expand(_shape(ys[k]))
                                for k in range(1, r)]
            if i == len(rs) - 1 and scale != 1.0: ys = [_scale(y, scale) for y in ys]
            d = _stack(ys, 2)                                             # (outer, m, r, p, inner)
        if untile and i == len(rs) - 1:   # (outer, inner, r, p) (m is 1 at the last stage)
            return UOp(Ops.CONTIGUOUS, d.dtype, (d.permute((0, 4, 1, 2, 3)),)).reshape((outer, inner, n))
        # stored with the stack axis r a loop of its own (the code generator unrolls it), then viewed flat
        if len(rs) > 1 or last: d = UOp(Ops.CONTIGUOUS, d.dtype, (d,))
        d = d.reshape((outer, m, r * p, inner))
        p *= r
    return d.reshape((outer, n, inner))


def _matrix_stage(v: UOp, sign: int) -> UOp:
    """A stage whose radix r is a prime above DIRECT_PRIME_MAX: the r outputs at each (j, P) as a product with the
    r x r matrix w_r^(t k) (a reduction over t, not unrolled), then the twiddles w^(j k); v is (outer, r, m, p,
    inner), the result (outer, m, r, p, inner)."""
    outer, r, m, p, inner = _shape(v)
    dt = v.dtype
    full = (outer, m, r, p, inner, r)                                 # (.., j, k, P, b, t)
    x = v.permute((0, 2, 3, 4, 1)).reshape((outer, m, 1, p, inner, r)).expand(full)
    w = Tensor.lift(_dft_matrix(r, sign, dt)).uop.reshape((1, 1, r, 1, 1, r)).expand(full)
    y = (x * w).reduce(Ops.ADD, (5,)).reshape((outer, m, r, p, inner))
    if m == 1: return y
    table = Tensor.lift(_twiddles(r, m, sign, dt, first=True)).uop   # (r, m), row 0 all ones
    return y * table.permute((1, 0)).reshape((1, m, r, 1, 1)).expand(_shape(y))


@functools.lru_cache(maxsize=64)
def _dft_matrix(r: int, sign: int, dt: DType) -> np.ndarray:
    """w_r^(k t) as an r x r table (k: rows)."""
    k = np.arange(r)
    t = _complex_table(*roots_of_unity(np.outer(k, k), r, sign), dt)
    t.flags.writeable = False
    return t


@functools.lru_cache(maxsize=64)
def _chirp(n: int, sign: int, dt: DType) -> np.ndarray:
    """c_j = exp(sign pi i j**2 / n) for j < n (j**2 reduced mod 2n exactly)."""
    j = np.arange(n, dtype=np.int64)
    e = (j * j) % (2 * n)
    t = _complex_table(*roots_of_unity(e, 2 * n, sign), dt)
    t.flags.writeable = False
    return t


@functools.lru_cache(maxsize=64)
def _chirp_spectrum(n: int, m: int, sign: int, dt: DType) -> np.ndarray:
    """The transform of length m of the conjugate chirp laid out for a cyclic convolution (b_j = conj(c_j) and
    b_(m-j) = conj(c_j)), divided by m (the inverse transform's normalization, folded in)."""
    cos, sin = roots_of_unity((np.arange(n, dtype=np.int64) ** 2) % (2 * n), 2 * n, -sign)
    b = np.zeros(m, np.clongdouble)
    b[:n] = cos + 1j * sin
    b[m - n + 1:] = (cos + 1j * sin)[1:][::-1]
    spec = reference_fft(b, -1) / np.longdouble(m)
    t = _complex_table(spec.real, spec.imag, dt)
    t.flags.writeable = False
    return t


def _bluestein(z: UOp, sign: int, scale: float, last: bool, tile: bool = True) -> UOp:
    """sum_j x_j w^(jk) = c_k sum_j (x_j c_j) conj(c_(k-j)): a cyclic convolution of length m >= 2n - 1."""
    shape = _shape(z)
    n = shape[-1]
    m = good_size(2 * n - 1)
    batch = math.prod(shape[:-1])
    dt = z.dtype
    chirp = Tensor.lift(_chirp(n, sign, dt)).uop.reshape((1, n))
    a = (z.reshape((batch, n)) * chirp.expand((batch, n))).pad(((0, 0), (0, m - n)))
    a = c2c(a, -1, last=True, tile=tile)
    spec = Tensor.lift(_chirp_spectrum(n, m, sign, dt)).uop.reshape((1, m)).expand((batch, m))
    conv = c2c(a * spec, 1, last=True, tile=tile)
    out = conv.shrink(((0, batch), (0, n))) * chirp.expand((batch, n))
    out = _scale(out, scale)
    if last: out = UOp(Ops.CONTIGUOUS, dt, (out,))
    return out.reshape(shape)


def reference_fft(x: np.ndarray, sign: int) -> np.ndarray:
    """The same mixed-radix transform in NumPy (long double) along the last axis, at trace time: for constants
    (the Bluestein chirp's spectrum). Lengths must have the radices' factors only."""
    n = x.shape[-1]
    batch = x.shape[:-1]
    d = x.reshape(-1, n, 1).astype(np.clongdouble)
    m, p = n, 1
    for r in radices(n) or []:
        m //= r
        v = d.reshape(d.shape[0], r, m, p)
        k = np.arange(r)
        cos, sin = roots_of_unity(np.outer(k, k) % r, r, sign)
        w = cos + 1j * sin                                           # (t, k)
        y = np.einsum("btjp,tk->bjkp", v, w)
        cos, sin = roots_of_unity(np.outer(np.arange(m), k), r * m, sign)
        y = y * (cos + 1j * sin)[None, :, :, None]
        d = y.reshape(d.shape[0], m, r * p)
        p *= r
    return d.reshape(batch + (n,))


# ---------------------------------------------------------------------------------------------------------------
# NumPy's functions

_NORMS = (None, "backward", "ortho", "forward")


def _check_norm(norm) -> None:
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')


def _swap_direction(norm):
    _check_norm(norm)
    return {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}[norm]


def _factor(n: int, norm, forward: bool, real: DType) -> float:
    """NumPy's normalization factor, computed in the real dtype of the transform (1/sqrt(n) rounds twice in float32,
    as NumPy computes it)."""
    _check_norm(norm)
    if norm == "ortho": return float(np.reciprocal(np.sqrt(np.array(n, real.np))))
    if (norm == "forward") == forward: return float(np.reciprocal(np.array(n, real.np)))
    return 1.0


def _complex_of(t: Tensor) -> DType:
    """The complex dtype NumPy transforms t in (and returns): single precision for float16, float32, complex64."""
    dt = t.uop.dtype
    single = dt in (dtypes.float16, dtypes.float32, dtypes.complex64)
    return dtypes.complex64 if single else dtypes.complex128


def _real_of(t: Tensor) -> DType:
    """NumPy's result_type(a.real.dtype, 1.0): the real dtype of c2r results and of the normalization."""
    dt = t.uop.dtype.component
    return dt if dt.is_float else dtypes.float64


def _prepare(a, axis: int, n: int | None, what: str) -> tuple[Tensor, int, int]:
    t = Tensor.lift(a)
    if t.weak: t = Tensor(t.uop)
    if t.ndim == 0: raise IndexError("tuple index out of range")
    ax = normalize_axis(axis, t.ndim)
    n = t.shape[ax] if n is None else n
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool): raise TypeError(f"n must be an integer ({what})")
    if n < 1: raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return t, ax, int(n)


def _fit(u: UOp, n: int, axis: int = -1) -> UOp:
    """The axis (default: the last) cut or zero-padded to length n."""
    axis %= len(_shape(u))
    have = _shape(u)[axis]
    if have > n: return u.shrink(tuple((0, n) if a == axis else (0, s) for a, s in enumerate(_shape(u))))
    if have < n: return u.pad(tuple((0, n - have) if a == axis else (0, 0) for a in range(len(_shape(u)))))
    return u


def _last(u: UOp, ax: int) -> UOp:
    """The axis ax moved last (a view)."""
    nd = len(_shape(u))
    return u.permute(tuple(i for i in range(nd) if i != ax) + (ax,))


def _back(u: UOp, ax: int) -> UOp:
    """The last axis moved back to position ax."""
    nd = len(_shape(u))
    order = list(range(nd - 1))
    order.insert(ax, nd - 1)
    return u.permute(tuple(order))


def _c2c(a, n, axis, norm, out, forward: bool) -> Tensor:
    refuse("numpy.fft", out=out)
    t, ax, n = _prepare(a, axis, n, "fft" if forward else "ifft")
    cdt = _complex_of(t)
    fct = _factor(n, norm, forward, _real_of(t))
    z = _fit(t.uop.cast(cdt), n, ax)
    return Tensor(c2c_axis(z, ax, -1 if forward else 1, fct))


def fft(a, n=None, axis=-1, norm=None, out=None) -> Tensor:
    """The one-dimensional discrete Fourier transform along `axis` (length n: cut or zero-padded)."""
    return _c2c(a, n, axis, norm, out, True)


def ifft(a, n=None, axis=-1, norm=None, out=None) -> Tensor:
    """The inverse of fft (divided by n with the default norm)."""
    return _c2c(a, n, axis, norm, out, False)


def _rfft_last(x: UOp, n: int, fct: float, cdt: DType) -> UOp:
    """The n//2 + 1 outputs of the transform of real x (shape (..., n)) along its last axis, times fct."""
    comp = cdt.component
    x = x.cast(comp)
    if n % 2 or n == 2:   # the complex transform of x + 0i, its first half
        z = _cplx(x, _const(comp, 0.0, _shape(x)))
        keep = tuple((0, s) for s in _shape(x)[:-1])
        return c2c(z, -1, fct, last=True, tile=False).shrink(keep + ((0, n // 2 + 1),))
    h = n // 2
    lead = _shape(x)[:-1]
    pairs = x.reshape(lead + (h, 2))
    z = _cplx(_take(pairs, len(lead) + 1, 0), _take(pairs, len(lead) + 1, 1))   # x[2j] + i x[2j+1]
    zf = c2c(z, -1, last=True, tile=False)
    return _split_halves(zf, n, fct, -1)


def _mirror(u: UOp) -> tuple[UOp, UOp]:
    """(Z[k mod h], Z[(h - k) mod h]) for k = 0..h along the last axis of Z (length h), as views with affine
    indices (Z padded by one, Z flipped and padded by one) and a select of Z[0] at the one position each wraps
    around: loads the code generator can vectorize along k, where indices taken mod h could not be."""
    lead, h = _shape(u)[:-1], _shape(u)[-1]
    nd = len(lead) + 1
    shape = lead + (h + 1,)
    keep = tuple((0, 0) for _ in lead)
    k = UOp.iota(h + 1).reshape((1,) * len(lead) + (h + 1,)).expand(shape)
    first = _take(u, nd - 1, 0).reshape(lead + (1,)).expand(shape)              # Z[0] at every k
    ext = k.alu(Ops.CMPEQ, _const(dtypes.int64, h, shape)).alu(Ops.WHERE, first, u.pad(keep + ((0, 1),)))
    mir = k.alu(Ops.CMPEQ, _const(dtypes.int64, 0, shape)).alu(Ops.WHERE, first,
                                                               u.flip((nd - 1,)).pad(keep + ((1, 0),)))
    return ext, mir


def _join(a: UOp, b: UOp) -> UOp:
    """a and b concatenated along the last axis (values kept exactly: a select between the two padded)."""
    na, nb, nd = _shape(a)[-1], _shape(b)[-1], len(_shape(a))
    pa = a.pad(tuple((0, 0) for _ in range(nd - 1)) + ((0, nb),))
    pb = b.pad(tuple((0, 0) for _ in range(nd - 1)) + ((na, 0),))
    pos = UOp.iota(na + nb).reshape((1,) * (nd - 1) + (na + nb,)).expand(_shape(pa))
    return pos.alu(Ops.CMPLT, _const(dtypes.int64, na, _shape(pa))).alu(Ops.WHERE, pa, pb)


def _split_halves(zf: UOp, n: int, fct: float, sign: int) -> UOp:
    """X_k = E_k + w^k O_k for k = 0..n/2 from Z = the transform of x[2j] + i x[2j+1]: E_k = (Z_k + conj Z_(h-k))/2,
    O_k = (Z_k - conj Z_(h-k)) / 2i, w = exp(sign 2 pi i / n)."""
    ext, mir = _mirror(zf)
    comp = zf.dtype.component
    er, ei = _re(ext), _im(ext)
    mr, mi = _re(mir), _im(mir)
    half = _const(comp, 0.5 * fct, _shape(er))
    e_r, e_i = (er + mr) * half, (ei - mi) * half                     # E * fct
    o_r, o_i = (ei + mi) * half, (mr - er) * half                     # O * fct = (Z - conj Zm) / 2i
    h = n // 2
    cos, sin = roots_of_unity(np.arange(h + 1), n, sign)
    w = Tensor.lift(_complex_table(cos, sin, zf.dtype)).uop
    w = w.reshape((1,) * (len(_shape(er)) - 1) + (h + 1,)).expand(_shape(er))
    wr, wi = _re(w), _im(w)
    return _cplx(e_r + (o_r * wr - o_i * wi), e_i + (o_r * wi + o_i * wr))


def rfft(a, n=None, axis=-1, norm=None, out=None) -> Tensor:
    """The transform of real input: the n//2 + 1 non-negative frequencies."""
    refuse("numpy.fft.rfft", out=out)
    t, ax, n = _prepare(a, axis, n, "rfft")
    if t.uop.dtype.is_complex:
        parity = "odd" if n % 2 else "even"
        raise TypeError(f"ufunc 'rfft_n_{parity}' not supported for the input types, and the inputs could not be "
                        "safely coerced to any supported types according to the casting rule ''safe''")
    cdt = _complex_of(t)
    fct = _factor(n, norm, True, _real_of(t))
    x = _fit(_last(t.uop.cast(cdt.component), ax), n)
    return Tensor(_back(_rfft_last(x, n, fct, cdt), ax))


def _irfft_last(xh: UOp, n: int, fct: float, rdt: DType) -> UOp:
    """Real outputs of length n from the n//2 + 1 coefficients xh (last axis) of a Hermitian spectrum (the
    imaginary parts of X_0 and, for even n, X_(n/2) are ignored, as NumPy's), times fct."""
    cdt = complex_dtype(rdt if rdt is not dtypes.float16 else dtypes.float32)
    comp = cdt.component
    xh = _fit(xh.cast(cdt), n // 2 + 1)
    lead = _shape(xh)[:-1]
    keep = tuple((0, s) for s in lead)
    h = n // 2
    # the parts NumPy ignores: imaginary of X_0 (and of X_(n/2) for even n)
    pos = UOp.iota(h + 1).reshape((1,) * len(lead) + (h + 1,)).expand(_shape(xh))
    edge = pos.alu(Ops.CMPEQ, _const(dtypes.int64, 0, _shape(xh)))
    if n % 2 == 0: edge = edge.alu(Ops.OR, pos.alu(Ops.CMPEQ, _const(dtypes.int64, h, _shape(xh))))
    xh = _cplx(_re(xh), edge.alu(Ops.WHERE, _const(comp, 0.0, _shape(xh)), _im(xh)))
    if n % 2 or n == 2:   # the full Hermitian spectrum, a complex transform, its real part
        tail = xh.shrink(keep + ((1, max(1, (n + 1) // 2)),)).flip((len(lead),))
        tail = _cplx(_re(tail), -_im(tail))
        full = _join(xh, tail) if _shape(tail)[-1] else xh
        return _re(c2c(full, 1, fct, tile=False)).cast(rdt)
    # even n: Z_k = (X_k + conj X_(h-k)) + i conj(w^k) (X_k - conj X_(h-k)) for k < h, then x[2j] + i x[2j+1]
    xk = xh.shrink(keep + ((0, h),))
    xm = xh.shrink(keep + ((1, h + 1),)).flip((len(lead),))              # X_(h-k) for k = 0..h-1
    ar, ai, br, bi = _re(xk), _im(xk), _re(xm), _im(xm)
    sr, si = ar + br, ai - bi                                            # X_k + conj X_(h-k)
    dr, di = ar - br, ai + bi                                            # X_k - conj X_(h-k)
    cos, sin = roots_of_unity(np.arange(h), n, 1)                        # conj(w^k) for w = exp(-2 pi i / n)
    w = Tensor.lift(_complex_table(cos, sin, cdt)).uop.reshape((1,) * len(lead) + (h,)).expand(_shape(xk))
    wr, wi = _re(w), _im(w)
    pr, pi = dr * wr - di * wi, dr * wi + di * wr                        # conj(w^k) (X_k - conj X_(h-k))
    z = _cplx(sr - pi, si + pr)                                          # + i * p
    z = UOp(Ops.CONTIGUOUS, z.dtype, (z,))
    zt = c2c(z, 1, fct, tile=False)
    out = _stack([_re(zt), _im(zt)], len(lead) + 1).reshape(lead + (n,))
    return out.cast(rdt)


def irfft(a, n=None, axis=-1, norm=None, out=None) -> Tensor:
    """The inverse of rfft: n real values (default 2 (m - 1) for m input coefficients)."""
    refuse("numpy.fft.irfft", out=out)
    t = Tensor.lift(a)
    if t.ndim == 0: raise IndexError("tuple index out of range")
    ax = normalize_axis(axis, t.ndim)
    if n is None: n = (t.shape[ax] - 1) * 2
    t, ax, n = _prepare(t, axis, n, "irfft")
    rdt = _real_of(t)
    fct = _factor(n, norm, False, rdt)
    xh = _last(t.uop.cast(_complex_of(t)), ax)
    return Tensor(_back(_irfft_last(xh, n, fct, rdt), ax))


def hfft(a, n=None, axis=-1, norm=None, out=None) -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half: real output of length n."""
    refuse("numpy.fft.hfft", out=out)
    t = Tensor.lift(a)
    if t.ndim == 0: raise IndexError("tuple index out of range")
    if n is None: n = (t.shape[normalize_axis(axis, t.ndim)] - 1) * 2
    from numfn.numpy.ufuncs import conjugate
    return irfft(conjugate(t), n, axis, norm=_swap_direction(norm))


def ihfft(a, n=None, axis=-1, norm=None, out=None) -> Tensor:
    """The inverse of hfft: the first n//2 + 1 coefficients of a real signal's conjugate spectrum."""
    refuse("numpy.fft.ihfft", out=out)
    from numfn.numpy.ufuncs import conjugate
    return conjugate(rfft(a, n, axis, norm=_swap_direction(norm)))


def _cook_nd_args(t: Tensor, s, axes, invreal: bool = False) -> tuple[list, list]:
    """NumPy's lengths and axes for the n-dimensional transforms."""
    shapeless = s is None
    if s is None: s = list(t.shape) if axes is None else [t.shape[normalize_axis(a, t.ndim)] for a in axes]
    s = list(s)
    if axes is None:
        if not shapeless:
            import warnings
            warnings.warn("`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy 2.0). In a future "
                          "version of NumPy, this will raise an error and `s[i]` will correspond to the size along "
                          "the transformed axis specified by `axes[i]`. To retain current behaviour, pass a sequence "
                          "[0, ..., k-1] to `axes` for an array of dimension k.", DeprecationWarning, stacklevel=3)
        axes = list(range(-len(s), 0))
    axes = list(axes)
    if len(s) != len(axes): raise ValueError("Shape and axes have different lengths.")
    if invreal and shapeless: s[-1] = (t.shape[normalize_axis(axes[-1], t.ndim)] - 1) * 2
    if None in s:   # each None: the 1-D transform's default length
        import warnings
        warnings.warn("Passing an array containing `None` values to `s` is deprecated in NumPy 2.0 and will raise an "
                      "error in a future version of NumPy. To use the default behaviour of the corresponding 1-D "
                      "transform, pass the value matching the default for its `n` parameter. To use the default "
                      "behaviour for every axis, the `s` argument can be omitted.", DeprecationWarning, stacklevel=3)
    s = [t.shape[normalize_axis(a, t.ndim)] if n == -1 else n for n, a in zip(s, axes)]
    return s, axes


def _nd(function, a, s, axes, norm, out) -> Tensor:
    refuse("numpy.fft", out=out)
    t = Tensor.lift(a)
    s, axes = _cook_nd_args(t, s, axes)
    order = list(reversed(range(len(axes))))   # NumPy's: the last axis first
    distinct = len({normalize_axis(a, t.ndim) for a in axes}) == len(axes)
    # transforms along different axes commute (so do their cropping and padding): the leading axes go first,
    # each with the columns after it innermost in place, and the last axis last, its batch tiled from a layout
    # the earlier passes stored contiguously (in NumPy's order the passes after the first read the tiles across)
    if distinct: order.sort(key=lambda ii: normalize_axis(axes[ii], t.ndim))
    for ii in order: t = function(t, n=s[ii], axis=axes[ii], norm=norm)
    return t


def fftn(a, s=None, axes=None, norm=None, out=None) -> Tensor:
    """The n-dimensional transform over `axes` (default: all, or the last len(s))."""
    return _nd(fft, a, s, axes, norm, out)


def ifftn(a, s=None, axes=None, norm=None, out=None) -> Tensor:
    """The inverse n-dimensional transform."""
    return _nd(ifft, a, s, axes, norm, out)


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None) -> Tensor:
    """The two-dimensional transform (fftn over the last two axes)."""
    return _nd(fft, a, s, axes, norm, out)


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None) -> Tensor:
    """The inverse two-dimensional transform."""
    return _nd(ifft, a, s, axes, norm, out)


def rfftn(a, s=None, axes=None, norm=None, out=None) -> Tensor:
    """The n-dimensional transform of real input: rfft over the last axis, fft over the others."""
    refuse("numpy.fft.rfftn", out=out)
    t = Tensor.lift(a)
    s, axes = _cook_nd_args(t, s, axes)
    t = rfft(t, s[-1], axes[-1], norm)
    for ii in range(len(axes) - 2, -1, -1): t = fft(t, s[ii], axes[ii], norm)
    return t


def irfftn(a, s=None, axes=None, norm=None, out=None) -> Tensor:
    """The inverse of rfftn: ifft over all axes but the last, irfft over the last."""
    refuse("numpy.fft.irfftn", out=out)
    t = Tensor.lift(a)
    s, axes = _cook_nd_args(t, s, axes, invreal=True)
    for ii in range(len(axes) - 1): t = ifft(t, s[ii], axes[ii], norm)
    return irfft(t, s[-1], axes[-1], norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None) -> Tensor:
    """rfftn over the last two axes."""
    return rfftn(a, s, axes, norm, out)


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None) -> Tensor:
    """irfftn over the last two axes."""
    return irfftn(a, s, axes, norm, out)


# ---------------------------------------------------------------------------------------------------------------
# frequencies and shifts

def _freq_args(n, device) -> int:
    if not isinstance(n, (int, np.integer)): raise ValueError("n should be an integer")
    if device not in (None, "cpu"):
        raise ValueError(f'Device not understood. Only "cpu" is allowed, but received: {device}')
    return int(n)


def fftfreq(n, d=1.0, device=None) -> Tensor:
    """The sample frequencies of an n-point transform with sample spacing d: [0, 1, ..., -2, -1] / (n d)."""
    n = _freq_args(n, device)
    if n < 0: raise ValueError("negative dimensions are not allowed")   # (NumPy's rfftfreq gives no frequencies)
    ints = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)]).astype(np.int64)
    return Tensor.lift(ints) * (1.0 / (n * Tensor.lift(d))) if isinstance(d, Tensor) else \
        Tensor.lift(ints * (1.0 / (n * d)))


def rfftfreq(n, d=1.0, device=None) -> Tensor:
    """The sample frequencies of rfft: [0, 1, ..., n//2] / (n d)."""
    n = _freq_args(n, device)
    ints = np.arange(0, n // 2 + 1, dtype=np.int64)
    return Tensor.lift(ints) * (1.0 / (n * Tensor.lift(d))) if isinstance(d, Tensor) else \
        Tensor.lift(ints * (1.0 / (n * d)))


def _shifts(t: Tensor, axes, sign: int):
    if axes is None: axes = tuple(range(t.ndim))
    elif isinstance(axes, (int, np.integer)): axes = (axes,)
    axes = tuple(normalize_axis(a, t.ndim) for a in axes)
    return [sign * (t.shape[a] // 2) for a in axes], list(axes)


def fftshift(x, axes=None) -> Tensor:
    """The zero frequency moved to the middle: a roll by n//2 along each axis."""
    from numfn.numpy.manipulation import roll
    t = Tensor.lift(x)
    shift, ax = _shifts(t, axes, 1)
    return roll(t, shift, ax) if ax else t


def ifftshift(x, axes=None) -> Tensor:
    """The inverse of fftshift: a roll by -(n//2) along each axis."""
    from numfn.numpy.manipulation import roll
    t = Tensor.lift(x)
    shift, ax = _shifts(t, axes, -1)
    return roll(t, shift, ax) if ax else t

