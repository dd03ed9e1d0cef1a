"""The derivative rules of the primitives, registered into their entries of the table (numfn/ir/primitives.py).

jvp(node, primals, tangents) -> the tangent of `node`'s value, or None (a symbolic zero). `node` is the primal node
over its new sources `primals` (node.src is primals); `tangents` has one entry per source, None where the source's
tangent is zero (integer and bool sources always). A rule is called only when some tangent is not None and the
node's value is a float, and it builds its result from ordinary traceable ops, so the derivative graph has
derivatives too (grad of grad).

transpose(node, cotangent, linear) -> one cotangent per source (None for a source the node is not linear in, or a
zero one). `node` is a node of a tangent graph, linear in the sources flagged in `linear` (the others are primal
values: a MUL's other factor, a WHERE's condition, a GATHER's indices). Only the ops a jvp rule emits on tangents
need one: the linear ops.

NOT_DIFFERENTIABLE names the ops that have no jvp rule on purpose, with the reason (tests/test_autodiff.py checks
that every other op that can carry a float value has one, and that every linear op has a transpose rule).
"""
from __future__ import annotations

import math
from collections.abc import Callable

from numfn.dtype import dtypes
from numfn.extern import blas_product
from numfn.ir.primitives import PRIMITIVES, register
from numfn.ir.uop import Ops, UOp


Tangent = UOp | None


class NotDifferentiable(NotImplementedError):
    """An operation numfn cannot differentiate (yet): its message names the operation and what to do instead."""


# ---------------------------------------------------------------------------------------------------------------
# helpers: constants of a node's shape, sums of possibly-zero tangents

def full_like(u: UOp, value) -> UOp:
    assert u.shape is not None
    return UOp.const_like(u.dtype, value, u.shape)


def zeros_like(u: UOp) -> UOp:
    return full_like(u, 0)


def add_tangents(a: Tangent, b: Tangent) -> Tangent:
    if a is None: return b
    if b is None: return a
    return a.alu(Ops.ADD, b)


def _mul(a: UOp, b: UOp) -> UOp: return a.alu(Ops.MUL, b)
def _div(a: UOp, b: UOp) -> UOp: return a.alu(Ops.FDIV, b)


def _sign(x: UOp) -> UOp:
    """-1, 0 or 1 (NumPy's sign; 0 at 0, so abs has derivative 0 there as in JAX)."""
    zero, one = zeros_like(x), full_like(x, 1)
    return zero.alu(Ops.CMPLT, x).alu(Ops.WHERE, one, x.alu(Ops.CMPLT, zero).alu(Ops.WHERE, full_like(x, -1), zero))


def _unary(derivative: Callable[[UOp, UOp], UOp]):
    """The rule of an elementwise function: tangent * f'(x), f' given as derivative(x, f(x))."""
    def jvp(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> Tangent:
        t = tangents[0]
        return None if t is None else _mul(t, derivative(primals[0], node))
    return jvp


def _one_minus_square(x: UOp) -> UOp: return full_like(x, 1).alu(Ops.SUB, _mul(x, x))


_UNARY: dict[Ops, Callable[[UOp, UOp], UOp]] = {
    Ops.SQRT: lambda x, y: _div(full_like(y, 0.5), y),
    Ops.EXP: lambda x, y: y,
    Ops.EXP2: lambda x, y: _mul(y, full_like(y, math.log(2))),
    Ops.LOG: lambda x, y: _div(full_like(x, 1), x),
    Ops.LOG2: lambda x, y: _div(full_like(x, 1 / math.log(2)), x),
    Ops.LOG10: lambda x, y: _div(full_like(x, 1 / math.log(10)), x),
    Ops.SIN: lambda x, y: x.alu(Ops.COS),
    Ops.COS: lambda x, y: x.alu(Ops.SIN).alu(Ops.NEG),
    Ops.TAN: lambda x, y: full_like(y, 1).alu(Ops.ADD, _mul(y, y)),
    Ops.TANH: lambda x, y: _one_minus_square(y),
    Ops.ASIN: lambda x, y: _div(full_like(x, 1), _one_minus_square(x).alu(Ops.SQRT)),
    Ops.ACOS: lambda x, y: _div(full_like(x, -1), _one_minus_square(x).alu(Ops.SQRT)),
    Ops.ATAN: lambda x, y: _div(full_like(x, 1), full_like(x, 1).alu(Ops.ADD, _mul(x, x))),
    Ops.SINH: lambda x, y: x.alu(Ops.COSH),
    Ops.COSH: lambda x, y: x.alu(Ops.SINH),
    Ops.ASINH: lambda x, y: _div(full_like(x, 1), _mul(x, x).alu(Ops.ADD, full_like(x, 1)).alu(Ops.SQRT)),
    Ops.ACOSH: lambda x, y: _div(full_like(x, 1), _mul(x, x).alu(Ops.SUB, full_like(x, 1)).alu(Ops.SQRT)),
    Ops.ATANH: lambda x, y: _div(full_like(x, 1), _one_minus_square(x)),
    Ops.EXPM1: lambda x, y: y.alu(Ops.ADD, full_like(y, 1)),
    Ops.LOG1P: lambda x, y: _div(full_like(x, 1), x.alu(Ops.ADD, full_like(x, 1))),
    Ops.CBRT: lambda x, y: _div(full_like(y, 1 / 3), _mul(y, y)),
}


def conj(z: UOp) -> UOp:
    """The complex conjugate (as np.conjugate traces it)."""
    return z.cast(z.dtype.component).alu(Ops.COMPLEX, z.alu(Ops.IMAG).alu(Ops.NEG))


def _jvp_abs(node, primals, tangents):
    """|x|: sign(x) dx for reals; Re(conj(z) dz) / |z| for complex z (0 at z = 0, as JAX's)."""
    (x,), (t,) = primals, tangents
    if t is None: return None
    if not x.dtype.is_complex: return _mul(t, _sign(x))
    zero = zeros_like(node).alu(Ops.CMPEQ, node)
    safe = zero.alu(Ops.WHERE, full_like(node, 1), node)
    return zero.alu(Ops.WHERE, zeros_like(node), _div(_mul(conj(x), t).cast(node.dtype), safe))


def _jvp_imag(node, primals, tangents):
    t = tangents[0]
    return None if t is None else t.alu(Ops.IMAG)


def _jvp_complex(node, primals, tangents):
    (re, im), (tre, tim) = primals, tangents
    return (zeros_like(re) if tre is None else tre).alu(Ops.COMPLEX, zeros_like(im) if tim is None else tim)


def _zero(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> Tangent:
    """Piecewise-constant functions (floor, ceil, trunc, rint, floor_divide): derivative 0 almost everywhere."""
    return None


def _linear(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> Tangent:
    """An op linear in its one source: the same op on the tangent (NEG, movement ops, CONTIGUOUS, CAST, sums)."""
    t = tangents[0]
    if t is None: return None
    return UOp(node.op, node.dtype if node.op is Ops.CAST else t.dtype, (t,) + tuple(primals[1:]), node.arg)


def _jvp_add(node, primals, tangents):
    return add_tangents(*tangents)


def _jvp_sub(node, primals, tangents):
    a, b = tangents
    if b is None: return a
    return b.alu(Ops.NEG) if a is None else a.alu(Ops.SUB, b)


def _jvp_mul(node, primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return add_tangents(None if tx is None else _mul(tx, y), None if ty is None else _mul(x, ty))


def _jvp_fdiv(node, primals, tangents):
    y, (tx, ty) = primals[1], tangents
    if ty is None: return _div(tx, y) if tx is not None else None
    num = _mul(node, ty).alu(Ops.NEG) if tx is None else tx.alu(Ops.SUB, _mul(node, ty))
    return _div(num, y)


def _jvp_pow(node, primals, tangents):
    """d(x**y) = y x**(y-1) dx + log(x) x**y dy; the first term is 0 where y == 0 and the second where x == 0 (JAX's
    conventions: 0**0 has derivative 0 in both)."""
    (x, y), (tx, ty) = primals, tangents
    zero, one = zeros_like(x), full_like(x, 1)
    out: Tangent = None
    if tx is not None:
        dx = _mul(y, x.alu(Ops.POW, y.alu(Ops.SUB, one)))
        out = _mul(tx, y.alu(Ops.CMPEQ, zero).alu(Ops.WHERE, zero, dx))
    if ty is not None:
        safe = x.alu(Ops.CMPEQ, zero).alu(Ops.WHERE, one, x)
        out = add_tangents(out, _mul(ty, _mul(safe.alu(Ops.LOG), node)))
    return out


def _choose(op: Ops):
    """maximum/minimum: the tangent of the chosen operand; at a tie each gets half (JAX's convention)."""
    def jvp(node, primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        zero, half, one = zeros_like(x), full_like(x, 0.5), full_like(x, 1)
        wins = (y.alu(Ops.CMPLT, x) if op is Ops.MAX else x.alu(Ops.CMPLT, y))
        tie = x.alu(Ops.CMPEQ, y)
        wx = wins.alu(Ops.WHERE, one, tie.alu(Ops.WHERE, half, zero))
        wy = one.alu(Ops.SUB, wx)
        return add_tangents(None if tx is None else _mul(tx, wx), None if ty is None else _mul(ty, wy))
    return jvp


def _jvp_atan2(node, primals, tangents):
    (y, x), (ty, tx) = primals, tangents   # arctan2(y, x): d = (x dy - y dx) / (x^2 + y^2)
    den = _mul(x, x).alu(Ops.ADD, _mul(y, y))
    num = add_tangents(None if ty is None else _mul(x, ty), None if tx is None else _mul(y, tx).alu(Ops.NEG))
    return None if num is None else _div(num, den)


def _jvp_hypot(node, primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    num = add_tangents(None if tx is None else _mul(x, tx), None if ty is None else _mul(y, ty))
    return None if num is None else _div(num, node)


def _jvp_mod(node, primals, tangents):
    """x mod y = x - floor(x / y) * y: dx - floor(x / y) dy."""
    (x, y), (tx, ty) = primals, tangents
    if ty is None: return tx
    q = _div(x, y).alu(Ops.FLOOR)
    d = _mul(q, ty).alu(Ops.NEG)
    return d if tx is None else tx.alu(Ops.SUB, _mul(q, ty))


def _jvp_fmod(node, primals, tangents):
    """fmod(x, y) = x - trunc(x / y) * y: dx - trunc(x / y) dy."""
    (x, y), (tx, ty) = primals, tangents
    if ty is None: return tx
    d = _mul(_div(x, y).alu(Ops.TRUNC), ty)
    return d.alu(Ops.NEG) if tx is None else tx.alu(Ops.SUB, d)


def _jvp_where(node, primals, tangents):
    c, a, b = primals
    _, ta, tb = tangents
    if ta is None and tb is None: return None
    return c.alu(Ops.WHERE, zeros_like(node) if ta is None else ta, zeros_like(node) if tb is None else tb)


def _jvp_fma(node, primals, tangents):
    (a, b, _), (ta, tb, tc) = primals, tangents
    return add_tangents(add_tangents(None if ta is None else _mul(ta, b), None if tb is None else _mul(a, tb)), tc)


def _jvp_cast(node, primals, tangents):
    t = tangents[0]
    if t is None or not primals[0].dtype.is_inexact: return None   # from integers and bools: no tangent
    return t.cast(node.dtype)


# ---------------------------------------------------------------------------------------------------------------
# reductions and scans

def _expand_back(r: UOp, like: UOp) -> UOp:
    """A reduction's result (reduced axes kept as 1) broadcast back over its source's shape."""
    assert like.shape is not None
    return r.expand(like.shape)


def _jvp_reduce(node, primals, tangents):
    (x,), (t,) = primals, tangents
    op, axes = node.arg
    if t is None: return None
    if op is Ops.ADD: return t.reduce(Ops.ADD, axes)
    if op in (Ops.MAX, Ops.MIN):   # ties share the tangent equally (JAX's convention)
        hit = x.alu(Ops.CMPEQ, _expand_back(node, x)).cast(x.dtype)
        count = hit.reduce(Ops.ADD, axes)
        return _div(_mul(t, hit).reduce(Ops.ADD, axes), count)
    if op is Ops.MUL:
        return _mul(t, _products_of_others(x, axes)).reduce(Ops.ADD, axes)
    raise NotDifferentiable(f"derivative of a reduction by {op.name}")


def _products_of_others(x: UOp, axes: tuple[int, ...]) -> UOp:
    """At every element, the product of the other elements of its reduction (exact when x has zeros: the products
    before and after it in the reduced axes' row-major order, from two running products)."""
    assert x.shape is not None
    shape, rank = x.shape, len(x.shape)
    kept = [i for i in range(rank) if i not in axes]
    order = tuple(kept + list(axes))
    moved = x.permute(order)
    n = math.prod(shape[i] for i in axes)
    outer = tuple(shape[i] for i in kept)
    flat = moved.reshape(outer + (n,))
    last = len(outer)
    if n == 0: return zeros_like(x)

    def shifted_products(v: UOp) -> UOp:   # exclusive running product along the last axis: 1, v0, v0 v1, ...
        run = UOp(Ops.SCAN, v.dtype, (v,), (Ops.MUL, last))
        body = run.shrink(tuple((0, s) for s in outer) + ((0, n - 1),)).pad(tuple((0, 0) for _ in outer) + ((1, 0),))
        first = UOp.const_like(v.dtype, 1, outer + (1,)).pad(tuple((0, 0) for _ in outer) + ((0, n - 1),))
        return body.alu(Ops.ADD, first)

    before = shifted_products(flat)
    after = shifted_products(flat.flip((last,))).flip((last,))
    others = _mul(before, after).reshape(tuple(shape[i] for i in order))
    inverse = tuple(order.index(i) for i in range(rank))
    return others.permute(inverse)


def _jvp_scan(node, primals, tangents):
    (x,), (t,) = primals, tangents
    op, axis = node.arg
    if t is None: return None
    if op is Ops.ADD: return UOp(Ops.SCAN, t.dtype, (t,), node.arg)
    if op is Ops.MUL: return _cumprod_tangent(node, x, t, axis)
    raise NotDifferentiable(f"derivative of a running {op.name.lower()} (np.maximum.accumulate and the like)")


def _cumprod_tangent(y: UOp, x: UOp, t: UOp, axis: int) -> UOp:
    """The tangent of y = cumprod(x) along `axis`: the linear recurrence dy_k = x_k dy_{k-1} + y_{k-1} t_k
    (dy_{-1} = 0, y_{-1} = 1), solved in log2(n) doubling steps on the affine maps it composes: the pair (A, B) at k
    is the map v -> A v + B from dy before a range of elements to dy at its end, and a step composes each pair with
    the one just before its range. A polynomial in x and t, with no division: exact where x has zeros (where
    cumprod(x) * cumsum(t / x) divides by them), and so are its own derivatives (a hessian), as JAX's running
    product of multiplications is. Each step is stored, so the pairs are not recomputed step after step."""
    shape = x.shape
    assert shape is not None
    n, ndim = shape[axis], len(shape)
    pos = UOp.iota(n).reshape(tuple(n if a == axis else 1 for a in range(ndim))).expand(shape)

    def from_back(u: UOp, k: int) -> UOp:   # u's element k back along the axis (0 for the first k)
        return u.shrink(tuple((0, n - k) if a == axis else (0, s) for a, s in enumerate(shape))) \
            .pad(tuple((k, 0) if a == axis else (0, 0) for a in range(ndim)))

    def since(k: int) -> UOp:   # the positions k and later along the axis
        return pos.alu(Ops.CMPLT, UOp.const_like(dtypes.int64, k, shape)).alu(Ops.XOR, UOp.const_like(
            dtypes.bool, True, shape))

    before = since(1).alu(Ops.WHERE, from_back(y, 1), full_like(x, 1)) if n else y   # y_{k-1}, 1 at the start
    a, b = x, _mul(before, t)
    k = 1
    while k < n:
        later = since(k)
        b = UOp(Ops.CONTIGUOUS, b.dtype, (later.alu(Ops.WHERE, _mul(from_back(b, k), a).alu(Ops.ADD, b), b),))
        if 2 * k < n: a = UOp(Ops.CONTIGUOUS, a.dtype, (later.alu(Ops.WHERE, _mul(from_back(a, k), a), a),))
        k *= 2
    return b


# ---------------------------------------------------------------------------------------------------------------
# indexing

def _jvp_gather(node, primals, tangents):
    t = tangents[0]
    return None if t is None else UOp(Ops.GATHER, t.dtype, (t,) + tuple(primals[1:]))


def _jvp_scatter(node, primals, tangents):
    """x[i] = v: the tangent of x with the tangent of v written at i (and x[i] += v, ufunc.at's add, likewise)."""
    combine = node.arg[0]
    told, tvalue = tangents[0], tangents[1]
    if combine not in (None, Ops.ADD):
        raise NotDifferentiable(f"derivative of np.{combine.name.lower()}imum.at / multiply.at (an in-place "
                                "combining write other than add)")
    if combine is Ops.ADD and tvalue is None: return told
    old = zeros_like(node) if told is None else told
    value = zeros_like(primals[1]) if tvalue is None else tvalue
    return UOp(Ops.SCATTER, node.dtype, (old, value) + tuple(primals[2:]), node.arg)


# ---------------------------------------------------------------------------------------------------------------
# native routines: matrix products

def matmul(a: UOp, b: UOp, batch: tuple[int, ...]) -> UOp:
    """a @ b (a: batch + (n, k), b: batch + (k, m)): BLAS's GEMM where numfn would call it, a multiply and a sum
    otherwise."""
    found = blas_product(a, b, batch)
    if found is not None: return found
    assert a.shape is not None and b.shape is not None
    n, k, m = a.shape[-2], a.shape[-1], b.shape[-1]
    r = len(batch)
    shape = batch + (n, k, m)
    prod = _mul(a.reshape(batch + (n, k, 1)).expand(shape), b.reshape(batch + (1, k, m)).expand(shape))
    return prod.reduce(Ops.ADD, (r + 1,)).reshape(batch + (n, m))


def matrix_transpose(u: UOp) -> UOp:
    assert u.shape is not None
    r = len(u.shape)
    return u.permute(tuple(range(r - 2)) + (r - 1, r - 2))


def _operands(node: UOp) -> tuple[UOp, UOp, tuple[int, ...]]:
    a, b = node.src
    assert a.shape is not None and b.shape is not None
    return a, b, a.shape[:-2]


# the rules of further native routines (numfn/autodiff/linalg_rules.py registers LAPACK's), by routine name:
# jvp(extern, primals, tangents) -> one tangent per result; transpose(extern, ct, linear, result) -> per source
EXTERN_JVP: dict[str, Callable] = {}
EXTERN_TRANSPOSE: dict[str, Callable] = {}


def _jvp_extern(node, primals, tangents):
    """The tangent of each result of a native routine (a list, None per zero): GEMM and GEMV are products, SYRK is
    x @ x.T (its upper triangle is read)."""
    routine = node.arg.routine
    if routine == "callback": return [None]   # a run-time callback's token (numfn.debug.print): no tangent
    if routine in ("gemm", "gemv"):
        a, b, batch = _operands(node)
        ta, tb = tangents
        return [add_tangents(None if ta is None else matmul(ta, b, batch),
                             None if tb is None else matmul(a, tb, batch))]
    if routine == "syrk":
        (a,), (ta,) = primals, tangents
        assert a.shape is not None
        batch = a.shape[:-2]
        if ta is None: return [None]
        half = matmul(ta, matrix_transpose(a), batch)
        return [half.alu(Ops.ADD, matrix_transpose(half))]
    if routine in EXTERN_JVP:
        if node.arg.dtype.is_complex:
            raise NotDifferentiable(f"derivative of the native routine {routine} on complex matrices")
        return EXTERN_JVP[routine](node, primals, tangents)
    raise NotDifferentiable(f"derivative of the native routine {routine} (the linear algebra routines with "
                            f"derivative rules: matrix products and {', '.join(sorted(EXTERN_JVP))})")


def _jvp_result(node, primals, tangents):
    found = tangents[0]
    return None if found is None else found[node.arg]


# ---------------------------------------------------------------------------------------------------------------
# transpose rules: the cotangents of a linear op's linear sources

TransposeResult = tuple[Tangent, ...]


def _t_add(node, ct, linear): return tuple(ct if lin else None for lin in linear)


def _t_sub(node, ct, linear):
    return (ct if linear[0] else None, ct.alu(Ops.NEG) if linear[1] else None)


def _t_neg(node, ct, linear): return (ct.alu(Ops.NEG),)


def _t_mul(node, ct, linear):
    a, b = node.src
    assert not (linear[0] and linear[1]), "a tangent graph multiplies a tangent by a primal value only"
    return (_mul(ct, b) if linear[0] else None, _mul(a, ct) if linear[1] else None)


def _t_fdiv(node, ct, linear):
    assert not linear[1], "a tangent graph divides a tangent by a primal value only"
    return (_div(ct, node.src[1]), None)


def _t_where(node, ct, linear):
    c = node.src[0]
    zero = zeros_like(ct)
    return (None, c.alu(Ops.WHERE, ct, zero) if linear[1] else None, c.alu(Ops.WHERE, zero, ct) if linear[2] else None)


def _t_cast(node, ct, linear):
    """(float -> complex: the real part of the cotangent; complex -> float, the real part: ct + 0j. JAX's pairing
    of a complex cotangent c with a tangent t is Re(c t), no conjugate, throughout.)"""
    return (ct.cast(node.src[0].dtype),)


def _t_imag(node, ct, linear):
    """Im(t): Re(c t) = c Im(t) for c = -i ct."""
    return (zeros_like(ct).alu(Ops.COMPLEX, ct.alu(Ops.NEG)),)


def _t_complex(node, ct, linear):
    """re + i im: Re(c (re + i im)) = Re(c) re - Im(c) im."""
    return (ct.cast(node.src[0].dtype) if linear[0] else None,
            ct.alu(Ops.IMAG).alu(Ops.NEG) if linear[1] else None)
def _t_same(node, ct, linear): return (ct,)
def _t_reshape(node, ct, linear): return (ct.reshape(node.src[0].shape),)


def _t_permute(node, ct, linear):
    order = node.arg
    return (ct.permute(tuple(order.index(i) for i in range(len(order)))),)


def _t_expand(node, ct, linear):
    src = node.src[0].shape
    axes = tuple(i for i, (s, n) in enumerate(zip(src, node.arg)) if s != n)
    return (ct.reduce(Ops.ADD, axes) if axes else ct,)


def _t_pad(node, ct, linear):
    return (ct.shrink(tuple((b, b + n) for (b, _), n in zip(node.arg, node.src[0].shape))),)


def _t_shrink(node, ct, linear):
    return (ct.pad(tuple((b, n - e) for (b, e), n in zip(node.arg, node.src[0].shape))),)


def _t_flip(node, ct, linear): return (ct.flip(node.arg),)


def _t_reduce(node, ct, linear):
    assert node.arg[0] is Ops.ADD, "a tangent graph sums, never takes a maximum or product of tangents"
    return (ct.expand(node.src[0].shape),)


def _t_scan(node, ct, linear):
    op, axis = node.arg
    assert op is Ops.ADD, "a tangent graph has running sums only"
    return (UOp(Ops.SCAN, ct.dtype, (ct.flip((axis,)),), node.arg).flip((axis,)),)


def _t_gather(node, ct, linear):
    """x[i] read: its cotangent added into zeros at i (a scatter-add: repeated indices accumulate)."""
    x, idx = node.src[0], node.src[1:]
    return (UOp(Ops.SCATTER, ct.dtype, (zeros_like(x), ct) + idx, (Ops.ADD, False, False)),) + (None,) * len(idx)


def _t_scatter(node, ct, linear):
    """x[i] = v (last write wins) or x[i] += v: v's cotangent is x's cotangent read at i where v's write is the one
    that lands; x's cotangent is x's with the overwritten elements zeroed (for =) or unchanged (for +=)."""
    combine, injective, gated = node.arg
    old, value = node.src[0], node.src[1]
    idx = node.src[2:len(node.src) - 1] if gated else node.src[2:]
    gate = node.src[-1] if gated else None
    read = UOp(Ops.GATHER, ct.dtype, (ct,) + tuple(idx))
    lands = gate
    if combine is None and not injective:   # several positions write one element: only the last one's lands
        assert value.shape is not None
        position = UOp.iota(max(value.size, 1)).shrink(((0, value.size),)).reshape(value.shape)
        marks = UOp.const_like(dtypes.int64, -1, old.shape)
        written = UOp(Ops.SCATTER, dtypes.int64, (marks, position) + node.src[2:], (None, False, gated))
        last = UOp(Ops.GATHER, dtypes.int64, (written,) + tuple(idx)).alu(Ops.CMPEQ, position)
        lands = last if lands is None else lands.alu(Ops.AND, last)
    ct_value = read if lands is None else lands.alu(Ops.WHERE, read, zeros_like(read))
    ct_old = ct
    if combine is None:
        ct_old = UOp(Ops.SCATTER, ct.dtype, (ct, zeros_like(value)) + node.src[2:], (None, injective, gated))
    rest = (None,) * (len(node.src) - 2)
    return (ct_old if linear[0] else None, ct_value if linear[1] else None) + rest


def transpose_extern(extern: UOp, ct: UOp, linear: tuple[bool, ...], result: int = 0) -> TransposeResult:
    """The cotangents of a native routine's operands (those it is linear in), given the cotangent of its result
    `result`: GEMM/GEMV here, the routines of EXTERN_TRANSPOSE (linalg_rules.py) there."""
    routine = extern.arg.routine
    if routine in EXTERN_TRANSPOSE: return EXTERN_TRANSPOSE[routine](extern, ct, linear, result)
    if routine not in ("gemm", "gemv"):
        raise NotDifferentiable(f"reverse-mode derivative of the native routine {routine}")
    a, b, batch = _operands(extern)
    assert not (linear[0] and linear[1]), "a tangent graph multiplies a tangent by a primal matrix only"
    if linear[0]: return (matmul(ct, matrix_transpose(b), batch), None)
    return (None, matmul(matrix_transpose(a), ct, batch))


# ---------------------------------------------------------------------------------------------------------------
# the registry

# ops with no jvp rule on purpose: why
NOT_DIFFERENTIABLE: dict[Ops, str] = {
    Ops.BITCAST: "reinterprets bits: not a differentiable function of its operand",
    Ops.IDIV: "made by codegen only (never in a traced graph)",
    Ops.IMOD: "made by codegen only (never in a traced graph)",
}

# ops whose values are never floats, or that have no tangent (sources: their tangent is given or zero)
NO_TANGENT = frozenset({Ops.NOT, Ops.CMPLT, Ops.CMPLE, Ops.CMPEQ, Ops.CMPNE, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL,
                        Ops.SHR, Ops.GCD, Ops.PARAM, Ops.BUFFER, Ops.CONST, Ops.IOTA, Ops.EMPTY, Ops.CARRY})

JVP_RULES: dict[Ops, Callable] = {
    **{op: _unary(d) for op, d in _UNARY.items()},
    **{op: _zero for op in (Ops.FLOOR, Ops.CEIL, Ops.TRUNC, Ops.RINT, Ops.FLOORDIV)},
    **{op: _linear for op in (Ops.NEG, Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.FLIP,
                              Ops.CONTIGUOUS)},
    Ops.ADD: _jvp_add, Ops.SUB: _jvp_sub, Ops.MUL: _jvp_mul, Ops.FDIV: _jvp_fdiv, Ops.POW: _jvp_pow,
    Ops.MAX: _choose(Ops.MAX), Ops.MIN: _choose(Ops.MIN), Ops.ATAN2: _jvp_atan2, Ops.HYPOT: _jvp_hypot,
    Ops.MOD: _jvp_mod, Ops.FMOD: _jvp_fmod, Ops.WHERE: _jvp_where, Ops.FMA: _jvp_fma, Ops.CAST: _jvp_cast,
    Ops.REDUCE_AXIS: _jvp_reduce, Ops.SCAN: _jvp_scan, Ops.GATHER: _jvp_gather, Ops.SCATTER: _jvp_scatter,
    Ops.EXTERN: _jvp_extern, Ops.RESULT: _jvp_result, Ops.ABS: _jvp_abs, Ops.IMAG: _jvp_imag,
    Ops.COMPLEX: _jvp_complex,
}

# the linear ops a tangent graph is made of (EXTERN's: transpose_extern, called at its RESULT)
TRANSPOSE_RULES: dict[Ops, Callable] = {
    Ops.ADD: _t_add, Ops.SUB: _t_sub, Ops.NEG: _t_neg, Ops.MUL: _t_mul, Ops.FDIV: _t_fdiv, Ops.WHERE: _t_where,
    Ops.CAST: _t_cast, Ops.CONTIGUOUS: _t_same, Ops.RESHAPE: _t_reshape, Ops.PERMUTE: _t_permute,
    Ops.EXPAND: _t_expand, Ops.PAD: _t_pad, Ops.SHRINK: _t_shrink, Ops.FLIP: _t_flip, Ops.REDUCE_AXIS: _t_reduce,
    Ops.SCAN: _t_scan, Ops.GATHER: _t_gather, Ops.SCATTER: _t_scatter, Ops.EXTERN: transpose_extern,
    Ops.IMAG: _t_imag, Ops.COMPLEX: _t_complex,
}


def _register() -> None:
    for op, rule in JVP_RULES.items(): register(op, "jvp", rule)
    for op, rule in TRANSPOSE_RULES.items(): register(op, "transpose", rule)


_register()


def jvp_rule(op: Ops) -> Callable:
    rule = PRIMITIVES[op].jvp
    if rule is None:
        why = NOT_DIFFERENTIABLE.get(op, "no derivative rule")
        raise NotDifferentiable(f"numfn cannot differentiate {op.name}: {why}")
    return rule


def transpose_rule(op: Ops) -> Callable:
    rule = PRIMITIVES[op].transpose
    if rule is None: raise NotDifferentiable(f"reverse-mode derivative through {op.name}: no transpose rule")
    return rule
