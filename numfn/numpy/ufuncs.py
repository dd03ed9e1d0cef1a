"""Elementwise functions: NumPy's ufuncs as `ufunc` objects over traced arrays, and `where` (their relatives built
from them, clip, isclose, round, ..., are numfn/numpy/ufunc_functions.py). Broadcasting, NumPy 2 promotion with
weak Python scalars (NEP 50), NaN, inf and signed zeros as NumPy has them.

Every ufunc is one `ufunc` object: calling it computes elementwise (keywords out=, where=, dtype= as NumPy has
them), and `reduce`, `accumulate` and `outer` are its methods, so `fnp.add.reduce(x)` and `np.add.reduce(x)` on a
traced x (through __array_ufunc__) run the same code. The elementwise part is a composition of the tracer's ops;
the math functions with their own kernel (arcsin, expm1, hypot, ...) are single IR ops rewritten into polynomial
code by numfn/codegen/transcendental.py.

`out=` writes into the array given, as `out[...] = result` does (numfn.trace.subscript: an input's memory is the
caller's array, a captured array is refused). `where=` needs out=: without it NumPy leaves the masked-out elements
uninitialized, which numfn refuses rather than invent values (write `fnp.where(mask, f(x), fill)` instead).
"""
from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import overload

import numpy as np

from numfn.trace import complex_reductions
from numfn.args import as_dtype, normalize_axes, normalize_axis
from numfn.dtype import DType, dtypes, resolve_loop
from numfn.errors import unsupported, user_location
from numfn.trace.subscript import setitem
from numfn.numpy.creation import full
from numfn.trace.tensor import Tensor, broadcast_shapes, promote, weak_fits
from numfn.ir.uop import Ops, UOp, fold
from numfn.numpy._typing import ArrayLike
from numfn.numpy._core import implementation

T = Tensor.lift

__all__ = [
    'ufunc',
    # the ufuncs of NumPy's main namespace (real and integer types)
    'sin', 'cos', 'tan', 'arcsin', 'arccos', 'arctan', 'sinh', 'cosh', 'tanh', 'arcsinh', 'arccosh', 'arctanh',
    'exp', 'exp2', 'expm1', 'log', 'log2', 'log10', 'log1p', 'sqrt', 'cbrt', 'square', 'reciprocal', 'negative',
    'positive', 'absolute', 'fabs', 'sign', 'signbit', 'copysign', 'nextafter', 'spacing', 'ldexp', 'frexp', 'modf',
    'floor', 'ceil', 'trunc', 'rint', 'deg2rad', 'rad2deg', 'degrees', 'radians', 'heaviside', 'arctan2', 'hypot',
    'logaddexp', 'logaddexp2', 'add', 'subtract', 'multiply', 'divide', 'true_divide', 'floor_divide', 'remainder',
    'mod', 'fmod', 'divmod', 'power', 'float_power', 'maximum', 'minimum', 'fmax', 'fmin', 'gcd', 'lcm',
    'bitwise_and', 'bitwise_or', 'bitwise_xor', 'invert', 'bitwise_not', 'left_shift', 'right_shift', 'bitwise_count',
    'less', 'less_equal', 'greater', 'greater_equal', 'equal', 'not_equal', 'logical_and', 'logical_or',
    'logical_xor', 'logical_not', 'isnan', 'isinf', 'isfinite', 'conjugate', 'conj',
    # NumPy 2's aliases
    'abs', 'acos', 'asin', 'atan', 'atan2', 'acosh', 'asinh', 'atanh', 'pow', 'bitwise_invert', 'bitwise_left_shift',
    'bitwise_right_shift',
    # functions built from ufuncs
    'where',
]

_NO_VALUE = np._NoValue


# ---------------------------------------------------------------------------------------------------------------
# the ufunc object

class ufunc:
    """One of NumPy's ufuncs over traced arrays: `f(*inputs, out=None, where=True, dtype=None)` elementwise with
    broadcasting, and (for binary ufuncs) the methods reduce, accumulate and outer.

    `compute(*tensors, dtype=None)` gives the plain elementwise result (a Tensor, or a tuple for several outputs).
    `reduce_op` is the REDUCE_AXIS op a reduction uses (ADD, MUL, MAX, MIN) and `scan_op` the single ALU op a
    sequential accumulation can use (the SCAN primitive); ufuncs without them reduce by a pairwise tree of their
    own elementwise computation (reorderable ones) or an unrolled left fold (short axes)."""
    takes_ufunc_keywords = True   # Tensor.__array_ufunc__ hands over out=, where=, dtype= (and refuses the rest)

    def __init__(self, name: str, compute: Callable, nin: int, nout: int = 1, *, reduce_op: Ops | None = None,
                 scan_op: Ops | None = None, reorderable: bool = False, idempotent: bool = False):
        self.__name__ = self.__qualname__ = name
        self.nin, self.nout, self.nargs = nin, nout, nin + nout
        self.identity = getattr(getattr(np, name, None), "identity", None)
        self._compute, self._reduce_op, self._scan_op = compute, reduce_op, scan_op
        self._reorderable, self._idempotent = reorderable, idempotent
        self.__doc__ = f"numpy.{name} over traced arrays (see NumPy's documentation)."

    def __repr__(self) -> str:
        return f"<numfn ufunc '{self.__name__}'>"

    # ---- calling ----
    def __call__(self, *args, out=None, where=True, dtype=None, casting="same_kind", order="K", subok=True,
                 signature=None):
        if len(args) < self.nin or len(args) > self.nargs:
            raise TypeError(f"{self.__name__}() takes from {self.nin} to {self.nargs} positional arguments but "
                            f"{len(args)} were given")
        if len(args) > self.nin:
            if out is not None: raise TypeError("cannot specify 'out' as both a positional and keyword argument")
            out = args[self.nin:]
        if casting != "same_kind": raise unsupported(f"the casting= argument of numpy.{self.__name__}")
        if signature is not None: raise unsupported(f"the signature= argument of numpy.{self.__name__}")
        if order not in ("K", "A", "C", "F", None):
            raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got '{order}')")
        operands = tuple(T(a) for a in args[:self.nin])
        result = self._compute(*operands, dtype=None if dtype is None else as_dtype(dtype))
        results = result if isinstance(result, tuple) else (result,)
        # a ufunc's result is a new array even where it equals an operand (np.abs of unsigned integers, rounding of
        # integers): a later write into the operand must not show in it
        results = tuple(_new_array(r) if any(r is a for a in operands) else r for r in results)
        return self._store(results, out, where)

    def _outs(self, out) -> tuple:
        if out is None: return (None,) * self.nout
        if not isinstance(out, tuple): out = (out,)
        if len(out) != self.nout:
            raise ValueError(f"The 'out' tuple must have exactly {self.nout} entries: one per ufunc output")
        return out

    def _store(self, results: tuple, out, where=True):
        """The results, written into the out= arrays where given (masked by where=)."""
        outs = self._outs(out)
        if not (where is True or where is np.True_) and all(o is None for o in outs):
            raise unsupported(f"the where= argument of numpy.{self.__name__} without out=",
                              "NumPy leaves the elements where the mask is False uninitialized; pass out= (an array "
                              "the function computed), or write numfn.numpy.where(mask, f(x), fill)")
        final = []
        for r, o in zip(results, outs):
            if o is None:
                final.append(r)
                continue
            if isinstance(o, np.ndarray):
                raise unsupported(f"writing a traced value into a NumPy array (numpy.{self.__name__} with out=)",
                                  "That array is a constant of the program: use the returned value, or create the "
                                  "array with numfn.numpy (fnp.zeros, ...)")
            if not isinstance(o, Tensor) or o.weak: raise TypeError("return arrays must be of ArrayType")
            if broadcast_shapes(r.shape, o.shape) != o.shape:
                raise ValueError(f"non-broadcastable output operand with shape {o.shape} doesn't match the broadcast "
                                 f"shape {broadcast_shapes(r.shape, o.shape)}")
            if r.dtype != o.dtype and not np.can_cast(r.dtype, o.dtype, "same_kind"):
                raise TypeError(f"Cannot cast ufunc '{self.__name__}' output from {r.dtype!r} to {o.dtype!r} with "
                                "casting rule 'same_kind'")
            value = Tensor(r.uop.cast(o.uop.dtype))
            if not (where is True or where is np.True_):
                mask = as_bool(where)
                if broadcast_shapes(mask.shape, o.shape) != o.shape:
                    raise ValueError(f"non-broadcastable operand with shape {mask.shape} doesn't match the broadcast "
                                     f"shape {o.shape}")
                value = where_(mask, value, o)
            setitem(o, Ellipsis, value)   # written into o's memory, as x[...] = value (views of it follow)
            final.append(o)
        return final[0] if self.nout == 1 else tuple(final)

    # ---- methods ----
    def _binary_only(self, method: str, *arrays) -> None:
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{method} only supported for binary functions")
        if builtins.any(isinstance(a, Tensor) and a.runtime_length for a in arrays):   # its shape is not an int
            raise unsupported(f"numpy.{self.__name__}.{method} on an array selected by values (x[mask], nonzero, "
                              "...), whose length is only known at run time",
                              "np.sum, np.prod, np.max, np.min, np.cumsum and np.cumprod read such arrays")

    def _combine(self, a: Tensor, b: Tensor, dt: DType) -> Tensor:
        """a op b computed in dtype dt (the reduction's type)."""
        return self._compute(a, b, dtype=dt).astype(dt, copy=False)

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims: bool = False, initial=_NO_VALUE, where=True):
        """Reduce `array` along `axis` (an int, a tuple, or None for all axes) with this ufunc, as NumPy's
        ufunc.reduce: `initial` is combined first, `where=` masks elements out (they count as `initial`, or as the
        ufunc's identity). Ufuncs NumPy does not call reorderable (subtract, divide, ...) reduce one axis only,
        left to right."""
        self._binary_only("reduce", array)
        a = T(array)
        axes = normalize_axes(axis, a.ndim)
        name = self.__name__
        if len(axes) > 1 and not self._reorderable:
            raise ValueError(f"reduction operation '{name}' is not reorderable, so at most one axis may be specified")
        dt = _method_dtype(name, "reduce", a.uop.dtype, None if dtype is None else as_dtype(dtype))
        fill = self.identity if initial is _NO_VALUE else initial
        x = a.astype(dt, copy=False)
        if not (where is True or where is np.True_):
            if fill is None:
                raise ValueError(f"reduction operation '{name}' does not have an identity, so to use a where mask one "
                                 "has to specify 'initial'")
            mask = as_bool(where)
            if broadcast_shapes(mask.shape, a.shape) != a.shape:
                raise ValueError(f"operands could not be broadcast together with shapes {mask.shape} {a.shape}")
            x = where_(mask, x, fill_constant(fill, dt))
        kept = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
        empty = any(a.shape[i] == 0 for i in axes)
        if empty and fill is None and math.prod(kept) > 0:
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        if empty:
            res = full(kept, fill_constant(fill, dt), dt) if fill is not None else Tensor(UOp.const_like(dt, 0, kept))
        elif not self._reorderable:
            if initial is not _NO_VALUE and axes:   # the initial value starts the left fold
                slab = tuple(1 if i == axes[0] else s for i, s in enumerate(a.shape))
                x = implementation("concatenate")([full(slab, fill_constant(initial, dt), dt), x], axis=axes[0])
            res = self._fold(x, axes[0], dt) if axes else x
        else:
            start = None if initial is _NO_VALUE else T(fill_constant(initial, dt)).astype(dt)
            res = self._reduce_axes(x, axes, dt, start)
        if not keepdims: res = res.reshape(tuple(s for i, s in enumerate(a.shape) if i not in axes))
        if res is a: res = res.copy()   # nothing to reduce: still a new array (a write into `array` must not show)
        return self._store((res,), out)

    def _reduce_axes(self, x: Tensor, axes: tuple[int, ...], dt: DType, start: Tensor | None) -> Tensor:
        """x reduced over `axes` (kept with size 1), `start` (initial=) combined first."""
        op = self._reduce_op
        if dt.is_complex and op is Ops.MUL:   # NumPy multiplies the first element by its start first
            return Tensor(complex_reductions.reduce(x.uop, op, axes, None if start is None else start.uop))
        if op is not None:
            x = Tensor(complex_reductions.reduce(x.uop, op, axes) if dt.is_complex else x.uop.reduce(op, axes))
        else:
            for ax in axes: x = self._tree(x, ax, dt)
        return x if start is None else self._combine(start, x, dt)

    def _scan(self, x: Tensor, axis: int, dt: DType) -> Tensor | None:
        """The SCAN primitive's running reduction along `axis` (None where it cannot compute this ufunc's)."""
        if self._scan_op is None: return None
        u = complex_reductions.scan(x.uop, self._scan_op, axis) if dt.is_complex else \
            UOp(Ops.SCAN, dt, (x.uop,), (self._scan_op, axis))
        return None if u is None else Tensor(u)

    def _tree(self, x: Tensor, axis: int, dt: DType) -> Tensor:
        """Reduce one axis by combining halves: log2(n) elementwise levels, each stored while it is long (a loop
        over its elements; fused into the next level, a long axis would be unrolled into one expression)."""
        while x.shape[axis] > 1:
            n = x.shape[axis]
            if n % 2:   # one more element: the identity, or the last element again for idempotent ufuncs
                pad = _take(x, axis, n - 1, n) if self.identity is None or self._idempotent else \
                    full(tuple(1 if i == axis else s for i, s in enumerate(x.shape)),
                         fill_constant(self.identity, dt), dt)
                x, n = implementation("concatenate")([x, pad], axis=axis), n + 1
            x = self._combine(_take(x, axis, 0, n // 2), _take(x, axis, n // 2, n), dt)
            if n // 2 > 8: x = x.contiguous()
        return x

    def _fold(self, x: Tensor, axis: int, dt: DType) -> Tensor:
        """((x0 op x1) op x2) ... along one axis, keeping it with size 1."""
        n = x.shape[axis]
        if n <= 1: return x
        scan = self._scan(x, axis, dt)
        return self._unrolled(x, axis, dt)[-1] if scan is None else _take(scan, axis, n - 1, n)

    def _unrolled(self, x: Tensor, axis: int, dt: DType) -> list[Tensor]:
        n = x.shape[axis]
        if n > 64:
            raise unsupported(f"numpy.{self.__name__}.reduce/accumulate along an axis longer than 64",
                              "only ufuncs that are one machine operation run in a sequential scan kernel")
        acc = [_take(x, axis, 0, 1)]
        for i in range(1, n): acc.append(self._combine(acc[-1], _take(x, axis, i, i + 1), dt))
        return acc

    def accumulate(self, array, axis: int = 0, dtype=None, out=None):
        """The running reduction along one axis, as NumPy's ufunc.accumulate."""
        self._binary_only("accumulate", array)
        a = T(array)
        if a.ndim == 0: raise TypeError("cannot accumulate on a scalar")
        ax = normalize_axis(axis, a.ndim)
        dt = _method_dtype(self.__name__, "accumulate", a.uop.dtype, None if dtype is None else as_dtype(dtype))
        x = a.astype(dt, copy=False)
        n = x.shape[ax]
        if n <= 1: res = x
        elif (scan := self._scan(x, ax, dt)) is not None: res = scan
        elif self._reorderable:   # Hillis-Steele: log2(n) steps, each combining with the value 2**k back
            res, k = x, 1
            pos = Tensor(UOp.iota(n).reshape(tuple(n if i == ax else 1 for i in range(x.ndim))))
            while k < n:
                back = Tensor(_take(res, ax, 0, n - k).uop.pad(tuple((k, 0) if i == ax else (0, 0)
                                                                     for i in range(x.ndim))))
                res = where_(pos >= k, self._combine(back, res, dt), res)
                k *= 2
        else: res = implementation("concatenate")(self._unrolled(x, ax, dt), axis=ax)
        if res is a: res = res.copy()   # an axis of length 1: still a new array (a write into `array` must not show)
        return self._store((res,), out)

    def outer(self, A, B, /, **kwargs):
        """op(a, b) for every pair of an element a of A and b of B: shape A.shape + B.shape."""
        self._binary_only("outer", A, B)
        a, b = strong_operand(A), strong_operand(B)   # NumPy makes arrays of both: a Python scalar is not weak here
        return self(a.reshape(a.shape + (1,) * b.ndim), b, **kwargs)

    def at(self, a, indices, b=None):
        """a[indices] = ufunc(a[indices], b) unbuffered, written into a: a repeated index applies again (np.add.at
        adds every value); for the ufuncs one machine op computes (add, subtract, multiply, divide, maximum, ...)."""
        op = self._reduce_op or self._scan_op
        if self.nin != 2 or op is None:
            raise unsupported(f"numpy.{self.__name__}.at", "write a[indices] = f(a[indices], b) (buffered) instead")
        ufunc_at = implementation("ufunc_at")
        ufunc_at(self.__name__, op, a, indices, b)

    def reduceat(self, *args, **kwargs):
        raise unsupported(f"numpy.{self.__name__}.reduceat")


def _take(x: Tensor, axis: int, start: int, end: int) -> Tensor:
    return Tensor(x.uop.shrink(tuple((start, end) if i == axis else (0, s) for i, s in enumerate(x.shape))))


def fill_constant(value, dt: DType):
    """A fill value (identity or initial) as a NumPy scalar of dt, converted as NumPy converts it."""
    if isinstance(value, Tensor): return value
    with np.errstate(all="ignore"):
        return np.array(value).astype(dt.np)[()]


_METHOD_DTYPES: dict = {}


def _method_dtype(name: str, method: str, dt: DType, dtype: DType | None) -> DType:
    """The dtype NumPy's ufunc.reduce/accumulate gives an array of dt (asked of NumPy on one element: add.reduce
    widens small integers and bools to int64, logical_and.reduce gives bool, ...); NumPy's TypeError if none."""
    key = (name, method, dt, dtype)
    if key not in _METHOD_DTYPES:
        fn = getattr(getattr(np, name), method)
        try:
            with np.errstate(all="ignore"):
                got = fn(np.ones((1,), dt.np), dtype=None if dtype is None else dtype.np).dtype
        except TypeError as e:
            raise TypeError(f"{e} (numpy.{name}.{method} of {dt.name}, at {user_location()})") from None
        _METHOD_DTYPES[key] = as_dtype(got)
    return _METHOD_DTYPES[key]


# ---------------------------------------------------------------------------------------------------------------
# building ufuncs

def as_bool(x) -> Tensor: return T(x).astype(np.bool_, copy=False)


def _new_array(t: Tensor) -> Tensor:
    """t's value as an array of its own (a run-time length kept; a NumPy value, even of a Python scalar)."""
    return t.copy() if t.runtime_length else Tensor(t.uop)


def _apply(name: str, kernel: Callable, operands, dtype: DType | None = None):
    """NumPy's ufunc machinery for `kernel`: resolve the loop (NEP 50 promotion, dtype=), cast and broadcast the
    operands, and call kernel(*uops) in the loop's dtypes; its result(s) are cast to the output dtypes."""
    if builtins.any(isinstance(x, Tensor) and x.runtime_length for x in operands):   # x[mask]: keeps its length
        from numfn.trace import dynamic
        return dynamic.elementwise(lambda *ts: _apply(name, kernel, ts, dtype), operands)
    ts = [T(x) for x in operands]
    try:
        wtypes = tuple(t._wtype() for t in ts) if not builtins.all(t.weak for t in ts) else \
            tuple(t.uop.dtype for t in ts)
        cast, outs = resolve_loop(name, wtypes, dtype)
    except TypeError as e:
        raise TypeError(f"{e} (numpy.{name} of {', '.join(t.uop.dtype.name for t in ts)}, at {user_location()})") \
            from None
    for t, d in zip(ts, cast): weak_fits(t, d)
    if any(d.is_complex for d in cast) and name not in _COMPLEX_UFUNCS:
        raise unsupported(f"numpy.{name} of complex values")
    shape = broadcast_shapes(*(t.shape for t in ts))
    # each operand converted to the loop's type first (a Python float meeting float16 is rounded to float16, as NumPy
    # converts it); NumPy's float16 loops then compute in float32, rounding once
    srcs = [t.uop.cast(d) for t, d in zip(ts, cast)]
    if not getattr(kernel, "native_float16", False):
        srcs = [u.cast(dtypes.float32) if u.dtype is dtypes.float16 else u for u in srcs]
    results = _elementwise_graph(kernel, [Tensor(u)._broadcast(shape) for u in srcs])
    out = tuple(Tensor(r.cast(d)) for r, d in zip(results, outs))   # NumPy values, even of Python scalars
    return out if len(out) > 1 else out[0]


def _elementwise_graph(kernel: Callable, srcs: list[UOp]) -> tuple[UOp, ...]:
    """kernel(*srcs) for sources of one shape. The kernel is written for scalars (constants and Python numbers
    mix freely, as in codegen's rules): it runs on 0-d placeholders, and the graph it returns is rebuilt on the
    sources with every constant broadcast to their shape."""
    holes = [UOp(Ops.PARAM, s.dtype, (), (-1 - i, ())) for i, s in enumerate(srcs)]
    out = kernel(*holes)
    outs = out if isinstance(out, tuple) else (out,)
    shape = srcs[0].shape
    assert shape is not None   # the sources are arrays' values: tensor-level nodes
    sub = dict(zip(holes, srcs))

    def rebuilt(u: UOp, src: tuple[UOp, ...]) -> UOp:   # u over the sources, constants broadcast
        if u in sub: return sub[u]
        if u.op is Ops.CONST: return UOp.const_like(u.dtype, u.arg, shape)
        return UOp(u.op, u.dtype, src, u.arg)

    done = fold(outs, rebuilt)
    return tuple(done[o] for o in outs)


def _from_kernel(name: str, kernel: Callable) -> Callable:
    def compute(*ts, dtype=None): return _apply(name, kernel, ts, dtype)
    return compute


def make_ufunc(name: str, kernel: Callable, nin: int, nout: int = 1, **kw) -> ufunc:
    return ufunc(name, _from_kernel(name, kernel), nin, nout, **kw)


def _op(op: Ops) -> Callable:
    return lambda *srcs: srcs[0].alu(op, *srcs[1:])


def _c(like: UOp, value) -> UOp: return UOp.const(like.dtype, value)


# the ufuncs with complex loops numfn implements (codegen/complex.py computes them); NumPy's other complex loops
# (the inverse trigonometric and hyperbolic functions) are refused
_COMPLEX_UFUNCS = frozenset({
    'absolute', 'add', 'conjugate', 'cos', 'cosh', 'divide', 'equal', 'exp', 'exp2', 'expm1', 'float_power', 'fmax',
    'fmin', 'greater', 'greater_equal', 'isfinite', 'isinf', 'isnan', 'less', 'less_equal', 'log', 'log10', 'log1p',
    'log2', 'logical_and', 'logical_not', 'logical_or', 'logical_xor', 'maximum', 'minimum', 'multiply', 'negative',
    'not_equal', 'positive', 'power', 'reciprocal', 'rint', 'sign', 'sin', 'sinh', 'sqrt', 'square', 'subtract',
    'tan', 'tanh', 'true_divide'})


def real_part(z: UOp) -> UOp: return z.cast(z.dtype.component)
def imag_part(z: UOp) -> UOp: return z.alu(Ops.IMAG)
def _cplx(re: UOp, im: UOp) -> UOp: return re.alu(Ops.COMPLEX, im)


def isnan_uop(x: UOp) -> UOp: return x.ne(x)


def _bits(x: UOp) -> tuple[DType, int]:
    """The unsigned type of a float's bits and its sign bit."""
    ut = {2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[x.dtype.itemsize]
    return ut, 1 << (ut.bits - 1)


def _native_float16(kernel: Callable) -> Callable:
    """Mark a kernel that works on float16 bits itself (NumPy's float16 loops for these work on the bits too)."""
    kernel.native_float16 = True   # type: ignore[attr-defined]  # a marker attribute on the function object
    return kernel


def _copysign(a: UOp, b: UOp) -> UOp:
    ut, sign = _bits(a)
    return ((a.bitcast(ut) & UOp.const(ut, sign ^ ((1 << ut.bits) - 1))) | (b.bitcast(ut) & UOp.const(ut, sign))) \
        .bitcast(a.dtype)


# ---------------------------------------------------------------------------------------------------------------
# the ufuncs NumPy's operators map to (the Tensor's own machinery, so both agree)

def _binary(name: str, op: Ops, swap: bool = False, **kw) -> ufunc:
    def compute(a, b, dtype=None):
        return Tensor._elementwise(name, op, *((b, a) if swap else (a, b)), dtype=dtype)
    return ufunc(name, compute, 2, **kw)


def _unary(name: str, op: Ops | None) -> ufunc:
    return ufunc(name, lambda x, dtype=None: x._unary(name, op, dtype), 1)


add = _binary("add", Ops.ADD, reduce_op=Ops.ADD, scan_op=Ops.ADD, reorderable=True)
subtract = _binary("subtract", Ops.SUB, scan_op=Ops.SUB)
multiply = _binary("multiply", Ops.MUL, reduce_op=Ops.MUL, scan_op=Ops.MUL, reorderable=True)
divide = true_divide = _binary("divide", Ops.FDIV, scan_op=Ops.FDIV)
floor_divide = _binary("floor_divide", Ops.FLOORDIV, scan_op=Ops.FLOORDIV)
remainder = mod = _binary("remainder", Ops.MOD, scan_op=Ops.MOD)
maximum = _binary("maximum", Ops.MAX, reduce_op=Ops.MAX, scan_op=Ops.MAX, reorderable=True)
minimum = _binary("minimum", Ops.MIN, reduce_op=Ops.MIN, scan_op=Ops.MIN, reorderable=True)
bitwise_and = _binary("bitwise_and", Ops.AND, scan_op=Ops.AND, reorderable=True, idempotent=True)
bitwise_or = _binary("bitwise_or", Ops.OR, scan_op=Ops.OR, reorderable=True, idempotent=True)
bitwise_xor = _binary("bitwise_xor", Ops.XOR, scan_op=Ops.XOR, reorderable=True)
left_shift = bitwise_left_shift = _binary("left_shift", Ops.SHL, scan_op=Ops.SHL)
right_shift = bitwise_right_shift = _binary("right_shift", Ops.SHR, scan_op=Ops.SHR)
less = _binary("less", Ops.CMPLT, scan_op=Ops.CMPLT)
less_equal = _binary("less_equal", Ops.CMPLE, scan_op=Ops.CMPLE)
greater = _binary("greater", Ops.CMPLT, swap=True)
greater_equal = _binary("greater_equal", Ops.CMPLE, swap=True)
equal = _binary("equal", Ops.CMPEQ, scan_op=Ops.CMPEQ)
not_equal = _binary("not_equal", Ops.CMPNE, scan_op=Ops.CMPNE)


def _power(a, b, dtype=None):
    # numpy.power itself, not ndarray.__pow__ (whose fast paths square bools into int8 and use sqrt for ** 0.5)
    t = Tensor._elementwise("power", Ops.POW, a, b, dtype=dtype)
    ev = b.uop.arg if b.uop.op is Ops.CONST else None
    if t.uop.dtype.is_int and isinstance(ev, int) and not isinstance(ev, bool) and ev < 0:
        raise ValueError(f"Integers to negative integer powers are not allowed (at {user_location()})")
    return t


power = pow = ufunc("power", _power, 2, scan_op=Ops.POW)   # noqa: A001 - NumPy's name


def _divmod(a, b, dtype=None):
    return floor_divide(a, b, dtype=dtype), remainder(a, b, dtype=dtype)


divmod = ufunc("divmod", _divmod, 2, 2)  # noqa: A001

sin, cos, tan, tanh = (_unary(n, op) for n, op in (("sin", Ops.SIN), ("cos", Ops.COS), ("tan", Ops.TAN),
                                                   ("tanh", Ops.TANH)))
exp, exp2, log, log2, sqrt = (_unary(n, op) for n, op in (("exp", Ops.EXP), ("exp2", Ops.EXP2), ("log", Ops.LOG),
                                                          ("log2", Ops.LOG2), ("sqrt", Ops.SQRT)))
negative = _unary("negative", Ops.NEG)
positive = _unary("positive", None)
invert = bitwise_not = bitwise_invert = _unary("invert", Ops.NOT)


def _absolute(x, dtype=None):
    return x._unary("absolute", Ops.ABS if x.uop.dtype.kind not in "ub" else None, dtype)


absolute = abs = ufunc("absolute", _absolute, 1)  # noqa: A001


def _rounding(name: str, op: Ops) -> ufunc:
    # NumPy 2 rounds integers to themselves (same dtype); only floats need the operation
    return ufunc(name, lambda x, dtype=None: x._unary(name, op if x.uop.dtype.is_float or dtype is not None
                                                      else None, dtype), 1)


floor, ceil, trunc = _rounding("floor", Ops.FLOOR), _rounding("ceil", Ops.CEIL), _rounding("trunc", Ops.TRUNC)


def _square(t, dtype=None):
    return _apply("square", lambda u: u.alu(Ops.MUL, u), (t,), dtype)   # bool squares in int8, like NumPy


square = ufunc("square", _square, 1)


def _sign(t, dtype=None):
    if t.uop.dtype.is_bool and dtype is None:
        raise TypeError(f"numpy.sign is not supported for bool (at {user_location()})")

    def kernel(x):
        if x.dtype.is_complex: return _complex_sign(x)
        one, zero = _c(x, 1), _c(x, 0)
        neg = _c(x, -1 if not x.dtype.is_unsigned else 0)
        return (x > zero).where(one, (x < zero).where(neg, x.eq(zero).where(zero, x)))
    return _apply("sign", kernel, (t,), dtype)


sign = ufunc("sign", _sign, 1)


def _complex_sign(z: UOp) -> UOp:
    """NumPy 2's sign of a complex number: z / |z| (0 for 0); an infinite part gives that part's sign alone, two
    infinite parts NaN; where |z| overflows with finite parts, NumPy's branch for an infinite imaginary part gives
    0 + i sign(imag)."""
    ar, ai = real_part(z), imag_part(z)
    h = ar.alu(Ops.HYPOT, ai)
    inf_r, inf_i = ar.alu(Ops.ABS).eq(math.inf), ai.alu(Ops.ABS).eq(math.inf)
    zero, one, nan = _c(ar, 0.0), _c(ar, 1.0), _c(ar, math.nan)
    sgn_r = (ar > zero).where(one, (ar < zero).where(-one, ar * zero))
    sgn_i = (ai > zero).where(one, (ai < zero).where(-one, ai * zero))
    re = ar.alu(Ops.FDIV, h)
    im = ai.alu(Ops.FDIV, h)
    both, h_inf = inf_r & inf_i, h.eq(math.inf)
    re = both.where(nan, inf_r.where(sgn_r, h_inf.where(zero, re)))
    im = both.where(nan, inf_r.where(zero, h_inf.where(sgn_i, im)))
    is_zero = h.eq(zero)
    return _cplx(is_zero.where(zero, re), is_zero.where(zero, im))


def _classify(name: str, test: Callable, otherwise: bool) -> ufunc:
    def compute(t, dtype=None):
        if dtype is not None: raise unsupported(f"the dtype= argument of numpy.{name}")
        if t.runtime_length:   # x[mask]: computed at its bound, the result keeps its length
            from numfn.trace import dynamic
            return dynamic.elementwise(compute, [t])
        if t.uop.dtype.is_complex:   # NumPy: either part NaN (inf); finite when both parts are
            re, im = Tensor(real_part(t.uop)), Tensor(imag_part(t.uop))
            a, b = compute(re), compute(im)
            return Tensor(a.uop.alu(Ops.AND if name == "isfinite" else Ops.OR, b.uop))
        if not t.uop.dtype.is_float:
            _apply(name, lambda x: x, (t,))   # NumPy's TypeError for types it has no loop for
            return Tensor(UOp.const_like(dtypes.bool, otherwise, t.uop.shape))   # (at a run-time length too)
        return Tensor(test(t.uop))
    return ufunc(name, compute, 1)


isnan = _classify("isnan", isnan_uop, False)
isinf = _classify("isinf", lambda x: x.alu(Ops.ABS).eq(_c(x, math.inf)), False)
isfinite = _classify("isfinite", lambda x: x.alu(Ops.ABS) < _c(x, math.inf), True)


def _logical(name: str, op: Ops | None, **kw) -> ufunc:
    if op is None: return make_ufunc(name, lambda x: x.ne(_c(x, 0)).alu(Ops.XOR, UOp.const(dtypes.bool, True)), 1)
    return make_ufunc(name, lambda a, b: a.ne(_c(a, 0)).alu(op, b.ne(_c(b, 0))), 2, **kw)


logical_and = _logical("logical_and", Ops.AND, scan_op=Ops.AND, reorderable=True, idempotent=True)
logical_or = _logical("logical_or", Ops.OR, scan_op=Ops.OR, reorderable=True, idempotent=True)
logical_xor = _logical("logical_xor", Ops.XOR, reorderable=True)
logical_not = _logical("logical_not", None)

# ---------------------------------------------------------------------------------------------------------------
# math functions: one IR op each (libm with NOOPT=1, polynomials in codegen/transcendental.py otherwise)

arcsin = asin = make_ufunc("arcsin", _op(Ops.ASIN), 1)
arccos = acos = make_ufunc("arccos", _op(Ops.ACOS), 1)
arctan = atan = make_ufunc("arctan", _op(Ops.ATAN), 1)
sinh = make_ufunc("sinh", _op(Ops.SINH), 1)
cosh = make_ufunc("cosh", _op(Ops.COSH), 1)
arcsinh = asinh = make_ufunc("arcsinh", _op(Ops.ASINH), 1)
arccosh = acosh = make_ufunc("arccosh", _op(Ops.ACOSH), 1)
arctanh = atanh = make_ufunc("arctanh", _op(Ops.ATANH), 1)
expm1 = make_ufunc("expm1", _op(Ops.EXPM1), 1)
log1p = make_ufunc("log1p", _op(Ops.LOG1P), 1)
log10 = make_ufunc("log10", _op(Ops.LOG10), 1)
cbrt = make_ufunc("cbrt", _op(Ops.CBRT), 1)
rint = make_ufunc("rint", lambda x: x.alu(Ops.RINT) if x.dtype.is_inexact else x, 1)
arctan2 = atan2 = make_ufunc("arctan2", _op(Ops.ATAN2), 2, scan_op=Ops.ATAN2)
hypot = make_ufunc("hypot", _op(Ops.HYPOT), 2, scan_op=Ops.HYPOT, reorderable=True)
fabs = make_ufunc("fabs", _op(Ops.ABS), 1)
float_power = make_ufunc("float_power", _op(Ops.POW), 2, scan_op=Ops.POW)


def _reciprocal(x: UOp) -> UOp:
    if x.dtype.is_float: return _c(x, 1.0).alu(Ops.FDIV, x)
    if x.dtype.is_complex: return _complex_reciprocal(x)
    # NumPy's integer loop computes 1.0 / x in double and converts back (1, -1, 0, and x86's conversion of inf)
    return UOp.const(dtypes.float64, 1.0).alu(Ops.FDIV, x.cast(dtypes.float64)).cast(x.dtype)


reciprocal = make_ufunc("reciprocal", _reciprocal, 1)


def _complex_reciprocal(z: UOp) -> UOp:
    """NumPy's reciprocal of a complex number (not its division): the ratio of the smaller part to the larger,
    r, then 1/d and -r/d (or r/d and -1/d) with d the larger part plus the smaller times r."""
    from numfn.codegen.complex import exact_mul
    ar, ai = real_part(z), imag_part(z)
    first = ai.alu(Ops.ABS) <= ar.alu(Ops.ABS)
    r1 = ai.alu(Ops.FDIV, ar)
    d1 = ar + exact_mul(ai, r1)
    r2 = ar.alu(Ops.FDIV, ai)
    d2 = exact_mul(ar, r2) + ai
    one = _c(ar, 1.0)
    re = first.where(one.alu(Ops.FDIV, d1), r2.alu(Ops.FDIV, d2))
    im = first.where((-r1).alu(Ops.FDIV, d1), (-one).alu(Ops.FDIV, d2))
    return _cplx(re, im)


def _signbit(x: UOp) -> UOp:
    ut, sign = _bits(x)
    return (x.bitcast(ut) & UOp.const(ut, sign)).ne(UOp.const(ut, 0))


signbit = make_ufunc("signbit", _native_float16(_signbit), 1)
copysign = make_ufunc("copysign", _native_float16(_copysign), 2)


def _nextafter(x: UOp, y: UOp) -> UOp:
    it = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[x.dtype.itemsize]
    up = x < y
    step = (x > _c(x, 0.0)).eq(up).where(UOp.const(it, 1), UOp.const(it, -1))
    moved = (x.bitcast(it) + step).bitcast(x.dtype)
    tiny = UOp.const(it, 1).bitcast(x.dtype)
    moved = x.eq(_c(x, 0.0)).where(_copysign(tiny, y), moved)
    return (isnan_uop(x) | isnan_uop(y)).where(x + y, x.eq(y).where(y, moved))


nextafter = make_ufunc("nextafter", _native_float16(_nextafter), 2)


def _spacing(x: UOp) -> UOp:
    # NumPy: nextafter(x, copysign(inf, x)) - x, and NaN for infinities
    away = _nextafter(x, _copysign(_c(x, math.inf), x)) - x
    tiny = UOp.const({2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[x.dtype.itemsize], 1).bitcast(x.dtype)
    away = x.eq(0.0).where(tiny, away)   # +0 and -0 both give the smallest positive denormal
    return x.alu(Ops.ABS).eq(_c(x, math.inf)).where(_c(x, math.nan), away)


spacing = make_ufunc("spacing", _native_float16(_spacing), 1)


def _with_exponent(v: UOp, e: UOp) -> UOp:
    """The float64 v with its biased exponent field replaced by e (int64, 0 < e < 2047)."""
    u = v.bitcast(dtypes.uint64) & UOp.const(dtypes.uint64, ~(0x7FF << 52) & (2**64 - 1))
    return (u | UOp(Ops.SHL, dtypes.uint64, (e.bitcast(dtypes.uint64), UOp.const(dtypes.uint64, 52)), True)) \
        .bitcast(dtypes.float64)


def _normalized(x: UOp) -> tuple[UOp, UOp]:
    """(x scaled into the normal range, its biased exponent as int64): float64 denormals are multiplied by 2**54,
    so their exponent is 54 short (the caller subtracts it where `x` is denormal)."""
    tiny = x.alu(Ops.ABS) < UOp.const(dtypes.float64, 2.0**-1022)
    xs = tiny.where(x * UOp.const(dtypes.float64, 2.0**54), x)
    e = UOp(Ops.SHR, dtypes.uint64, (xs.bitcast(dtypes.uint64), UOp.const(dtypes.uint64, 52)), True) \
        & UOp.const(dtypes.uint64, 0x7FF)
    return xs, e.bitcast(dtypes.int64) - tiny.where(UOp.const(dtypes.int64, 54), UOp.const(dtypes.int64, 0))


def _zero_or_nonfinite(x: UOp) -> UOp:
    return x.eq(0.0) | (x.alu(Ops.ABS) < math.inf).alu(Ops.NOT)


def _ldexp(x: UOp, n: UOp) -> UOp:
    """x * 2**n rounded once: the exponent field is set directly where the result is normal; a result below the
    normal range is one multiplication of x's significand by a power of two, so it rounds once into the
    denormals. float32 goes through float64, where x * 2**n is exact, and rounds once when cast back."""
    f32 = x.dtype is dtypes.float32
    xd = x.cast(dtypes.float64)
    lim = 400 if f32 else 2200
    k = n.cast(dtypes.int64).maximum(UOp.const(dtypes.int64, -lim)).minimum(UOp.const(dtypes.int64, lim))
    xs, e = _normalized(xd)
    new = e + k
    normal = _with_exponent(xs, new.maximum(UOp.const(dtypes.int64, 1)).minimum(UOp.const(dtypes.int64, 2046)))
    low = new.maximum(UOp.const(dtypes.int64, -60)).minimum(UOp.const(dtypes.int64, 0)) + 1000
    under = _with_exponent(xs, low) * UOp.const(dtypes.float64, 2.0**-1000)
    big = _copysign(UOp.const(dtypes.float64, math.inf), xd)
    y = (new > UOp.const(dtypes.int64, 2046)).where(big, (new > UOp.const(dtypes.int64, 0)).where(normal, under))
    return _zero_or_nonfinite(xd).where(xd, y).cast(x.dtype)


ldexp = make_ufunc("ldexp", _ldexp, 2)


def _frexp(x: UOp) -> tuple[UOp, UOp]:
    xd = x.cast(dtypes.float64)
    xs, e = _normalized(xd)
    mant = _with_exponent(xs, UOp.const(dtypes.int64, 1022))
    special = _zero_or_nonfinite(xd)
    return special.where(xd, mant).cast(x.dtype), special.where(UOp.const(dtypes.int64, 0), e - 1022) \
        .cast(dtypes.int32)


frexp = make_ufunc("frexp", _frexp, 1, 2)


def _modf(x: UOp) -> tuple[UOp, UOp]:
    whole = x.alu(Ops.TRUNC)
    frac = x.alu(Ops.ABS).eq(_c(x, math.inf)).where(_c(x, 0.0), x - whole)
    return _copysign(frac, x), whole


modf = make_ufunc("modf", _modf, 1, 2)


def _scale(name: str, f64: float, f32_num: float, f32_den: float) -> ufunc:
    # NumPy multiplies by the constant rounded in the dtype (float32: NPY_PIf / 180.0f and 180.0f / NPY_PIf)
    c32 = float(np.float32(f32_num) / np.float32(f32_den))
    return make_ufunc(name, lambda x: x * _c(x, c32 if x.dtype is dtypes.float32 else f64), 1)


deg2rad = radians = _scale("deg2rad", math.pi / 180.0, math.pi, 180.0)
rad2deg = degrees = _scale("rad2deg", 180.0 / math.pi, 180.0, math.pi)
degrees.__name__ = "degrees"


def _heaviside(x: UOp, h0: UOp) -> UOp:
    return isnan_uop(x).where(x, x.eq(_c(x, 0.0)).where(h0, (x < _c(x, 0.0)).where(_c(x, 0.0), _c(x, 1.0))))


heaviside = make_ufunc("heaviside", _heaviside, 2)


def _logaddexp(base2: bool) -> Callable:
    # NumPy's npy_logaddexp(2), step by step: equal arguments (infinities of one sign included) give x + log(2)
    def kernel(x: UOp, y: UOp) -> UOp:
        tmp = x - y
        expo, ln1p = (Ops.EXP2, lambda v: v.alu(Ops.LOG1P) * _c(v, 1 / math.log(2))) if base2 else \
            (Ops.EXP, lambda v: v.alu(Ops.LOG1P))
        pos = x + ln1p((-tmp).alu(expo))
        neg = y + ln1p(tmp.alu(expo))
        return x.eq(y).where(x + _c(x, 1.0 if base2 else math.log(2)),
                             (tmp > _c(x, 0.0)).where(pos, (tmp <= _c(x, 0.0)).where(neg, tmp)))
    return kernel


logaddexp = make_ufunc("logaddexp", _logaddexp(False), 2, reorderable=True)
logaddexp2 = make_ufunc("logaddexp2", _logaddexp(True), 2, reorderable=True)


def _fmod(a: UOp, b: UOp) -> UOp:
    if a.dtype.is_float: return a.alu(Ops.FMOD, b)
    zero = _c(a, 0)
    bad = b.eq(zero) | (b.eq(_c(b, -1)) if not a.dtype.is_unsigned else UOp.const(dtypes.bool, False))
    return bad.where(zero, a.alu(Ops.IMOD, bad.where(_c(b, 1), b)))   # C's truncated remainder; x % 0 is 0


fmod = make_ufunc("fmod", _fmod, 2)


def _fminmax(op: Ops) -> Callable:
    def kernel(a: UOp, b: UOp) -> UOp:
        if not a.dtype.is_inexact: return a.alu(op, b)
        # the non-NaN operand wins; on ties (+0 and -0) the first, as NumPy's loops
        keep = (a >= b if op is Ops.MAX else a <= b) | isnan_uop(b)
        return keep.where(a, b)
    return kernel


fmax = make_ufunc("fmax", _fminmax(Ops.MAX), 2, reorderable=True, idempotent=True)
fmin = make_ufunc("fmin", _fminmax(Ops.MIN), 2, reorderable=True, idempotent=True)


def _abs_unsigned(x: UOp) -> UOp:
    """|x| as the unsigned type of x's width (|min| fits)."""
    ut = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[x.dtype.itemsize]
    if x.dtype.is_unsigned: return x
    return (x < _c(x, 0)).where(-x, x).cast(ut) if not x.dtype.is_bool else x.cast(ut)


def _gcd(a: UOp, b: UOp) -> UOp:
    """NumPy's gcd: of the absolute values (|min| fits the unsigned type; gcd(min, 0) is min again as NumPy gives),
    one GCD op whose loop the renderers emit as a helper function."""
    return _abs_unsigned(a).alu(Ops.GCD, _abs_unsigned(b)).cast(a.dtype)


def _lcm(a: UOp, b: UOp) -> UOp:
    ua, ub = _abs_unsigned(a), _abs_unsigned(b)
    g = ua.alu(Ops.GCD, ub)
    zero = g.eq(_c(g, 0))
    return zero.where(_c(g, 0), ua.alu(Ops.IDIV, zero.where(_c(g, 1), g)) * ub).cast(a.dtype)


gcd = make_ufunc("gcd", _gcd, 2, reorderable=True)
lcm = make_ufunc("lcm", _lcm, 2, reorderable=True, idempotent=True)


def _bitwise_count(x: UOp) -> UOp:
    v = _abs_unsigned(x)
    dt = v.dtype

    def mask(byte: int) -> UOp: return UOp.const(dt, int.from_bytes(bytes([byte]) * dt.itemsize, "little"))
    def shr(u: UOp, n: int) -> UOp: return UOp(Ops.SHR, dt, (u, UOp.const(dt, n)), True)
    v = v - (shr(v, 1) & mask(0x55))
    v = (v & mask(0x33)) + (shr(v, 2) & mask(0x33))
    v = (v + shr(v, 4)) & mask(0x0F)
    if dt.itemsize > 1: v = shr(v * mask(0x01), 8 * (dt.itemsize - 1))   # add up the bytes in the top one
    return v.cast(dtypes.uint8)


bitwise_count = make_ufunc("bitwise_count", _bitwise_count, 1)
conjugate = conj = make_ufunc("conjugate", lambda x: _cplx(real_part(x), -imag_part(x)) if x.dtype.is_complex else x, 1)


# ---------------------------------------------------------------------------------------------------------------
# functions built from ufuncs

@overload
def where(condition: ArrayLike) -> tuple[Tensor, ...]: ...
@overload
def where(condition: ArrayLike, x: ArrayLike, y: ArrayLike) -> Tensor: ...


def where(condition: ArrayLike, x: ArrayLike | None = None, y: ArrayLike | None = None) -> Tensor | tuple[Tensor, ...]:
    """Elements of x where condition is true, else of y (both broadcast); where(condition) is nonzero(condition)."""
    if x is None and y is None:
        nonzero = implementation("nonzero")
        return nonzero(condition)
    if x is None or y is None: raise ValueError("either both or neither of x and y should be given")
    if any(isinstance(v, Tensor) and v.runtime_length for v in (condition, x, y)):
        from numfn.trace import dynamic
        return dynamic.elementwise(where, [condition, x, y])
    c, a, b = as_bool(condition), T(x), T(y)
    dt = promote(a, b)
    shape = broadcast_shapes(c.shape, a.shape, b.shape)
    u = c._broadcast(shape).alu(Ops.WHERE, Tensor(a.uop.cast(dt))._broadcast(shape),
                                Tensor(b.uop.cast(dt))._broadcast(shape))
    return Tensor(u).as_array()   # a NumPy array, even of Python scalars (NumPy 2: where(c, 5, 6) is an int64 array)


where_ = where


def is_python_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)

def strong_operand(x) -> Tensor:
    """np.asanyarray(x): a Python scalar becomes a strong 0-d array."""
    t = T(x)
    return Tensor(t.uop) if t.weak else t
