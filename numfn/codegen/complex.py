"""Complex numbers as pairs of reals: the one place where complex64 and complex128 values become float32 and float64
values.

At the tensor level complex is a dtype like any other, so shapes, promotion, views, indexing, reductions, arguments
and results need nothing of their own, and vmap batches complex graphs as it batches real ones. `lower_complex`
runs once on the program's CALL (it is the last step of the call graph), and rewrites every complex value into two
real values of its shape, its real and imaginary parts; the scheduler, the kernels and the renderers only ever see
real types, so fusion, vectorization and threads work on complex programs unchanged.

Memory. A complex buffer (an argument, a captured constant, a result, the memory an extern call reads or writes) is
its memory: NumPy stores a complex128 element as two float64, so the buffer becomes a float64 buffer of shape + (2,)
whose [..., 0] and [..., 1] views are the parts ("the pair form"). Loads of a complex argument are strided loads of
the two lanes; a complex result is stored by one kernel that interleaves the parts (a select on a size-2 lane
axis, whose two values are hoisted out of it). Values the program computes are two real graphs, so a realized
complex intermediate is two real buffers. Writes into complex memory (SCATTER) write the pair form, one more index
(the lane) for the scattered values; extern calls (BLAS's c/z routines) take and give pair forms, their ExternCall
keeping the complex dtype so the routine knows the element type.

Arithmetic follows NumPy's loops exactly, rounding included: a product is NumPy's SIMD formula (re = fma(ar, br,
-(ai*bi)), im = fma(ar, bi, ai*br): numfn has an FMA op for it), a quotient Smith's method with NumPy's zero and
NaN cases. The math functions (exp, log, sqrt, power, the trigonometric and hyperbolic functions) are composed from
the real ones (codegen/transcendental.py turns those into polynomial code), with C99 Annex G's special values as
glibc, whose functions NumPy calls, returns them; complex64 functions are computed in float64 and rounded once.

Each op's rule is registered in the table of primitives (numfn.ir.primitives, slot `complex_split`): an elementwise
op on complex values needs its arithmetic on parts in `_FUNCTIONS` (and the `complex` flag in its entry).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import cast

from numfn.dtype import DType, dtypes
from numfn.ir.symbolic import symbolic
from numfn.ir.primitives import PRIMITIVES, register
from numfn.ir.uop import ALU, MOVEMENT, Buffer, Ops, UOp, fold, graph_rewrite, toposort

F32, F64 = dtypes.float32, dtypes.float64

def has_complex(u: UOp) -> bool:
    """Whether the graph holds a complex value, the sub-graphs of its loops and branches included."""
    for v in toposort([u]):
        if v.dtype.is_complex: return True
        if v.op is Ops.LOOP and any(has_complex(g) for g in _subgraphs(v.arg)): return True
    return False


def _subgraphs(region) -> tuple[UOp, ...]:
    return ((region.cond,) if region.cond is not None else ()) + tuple(region.bodies)


def lower_complex(call: UOp) -> UOp:
    """The CALL with every complex value rewritten into real ones (see the module docstring). Complex input and
    constant buffers become real buffers of shape + (2,) (the same memory), and so do the complex outputs in
    CALL.arg; a program without complex values is returned as it is."""
    if not has_complex(call): return call
    body, bindings = call.src[0], call.src[1:]
    sp = _Splitter()
    sp.run(body.src)
    entries = []
    for out in body.src:
        if not out.dtype.is_complex: entries.append(sp.new[out])
        elif out.op is Ops.CONTIGUOUS: entries.append(UOp(Ops.CONTIGUOUS, out.dtype.component, (sp.pair(out.src[0]),),
                                                          out.arg))
        else: entries.append(sp.pair(out))   # a write into an argument: its SCATTER chain, on the pair form
    outputs = tuple(Buffer(b.category, b.number, b.shape + (2,)) if body.src[i].dtype.is_complex else b
                    for i, b in enumerate(call.arg))
    new_body = graph_rewrite(UOp(Ops.SINK, body.dtype, tuple(entries), body.arg), symbolic)
    return UOp(Ops.CALL, call.dtype, (new_body, *(_pair_buffer(b) for b in bindings)), outputs)


def _pair_buffer(b: UOp) -> UOp:
    """A complex BUFFER as the real buffer of its memory (shape + (2,)); real buffers stay."""
    if not b.dtype.is_complex: return b
    a = b.arg
    data = None if a.data is None else a.data.view(b.dtype.component.np).reshape(a.shape + (2,))
    return UOp(Ops.BUFFER, b.dtype.component, (), Buffer(a.category, a.number, a.shape + (2,), data, a.data_hash))


# ---------------------------------------------------------------------------------------------------------------
# the rewrite

_PAIR_SOURCES = (Ops.PARAM, Ops.BUFFER, Ops.EMPTY, Ops.SCATTER, Ops.RESULT, Ops.CARRY)


def _pair_arg(op: Ops, arg, ndim: int):
    """A movement op's argument for the pair form (one more axis, the lane, left alone)."""
    if op in (Ops.RESHAPE, Ops.EXPAND): return tuple(arg) + (2,)
    if op is Ops.PERMUTE: return tuple(arg) + (ndim,)
    if op is Ops.PAD: return tuple(arg) + ((0, 0),)
    if op is Ops.SHRINK: return tuple(arg) + ((0, 2),)
    return arg   # FLIP: the same axes


def _lanes(pair: UOp) -> tuple[UOp, ...]:
    """The real and imaginary parts of a pair form: its [..., 0] and [..., 1] views."""
    assert pair.shape is not None
    shape = pair.shape[:-1]
    keep = tuple((0, n) for n in shape)
    return tuple(pair.shrink(keep + ((k, k + 1),)).reshape(shape) for k in (0, 1))


def _interleave(re: UOp, im: UOp) -> UOp:
    """The pair form of two parts: a size-2 lane axis selecting between them."""
    shape = re.shape
    assert shape is not None
    full = shape + (2,)
    lane = UOp.iota(2).reshape((1,) * len(shape) + (2,)).expand(full)
    first = lane.alu(Ops.CMPLT, UOp.const_like(dtypes.int64, 1, full))
    return first.alu(Ops.WHERE, re.reshape(shape + (1,)).expand(full), im.reshape(shape + (1,)).expand(full))


class _Splitter:
    """Rewrites a graph: `new` maps every real (or void) node to its rewritten node, `parts` every complex node to
    its (re, im); `pair` gives a complex node's pair form (its memory's own where it has memory: an argument, a
    write, an extern call's result, or a view of one)."""

    def __init__(self) -> None:
        self.new: dict[UOp, UOp] = {}
        self.parts: dict[UOp, tuple[UOp, ...]] = {}   # (re, im)
        self._pairs: dict[UOp, UOp] = {}
        self._extern: dict[UOp, UOp] = {}

    def run(self, roots) -> None:
        for u in toposort(list(roots)):
            if u.dtype.is_complex: self.parts[u] = self._split(u)
            else: self.new[u] = self._rewrite(u)

    def has_memory(self, u: UOp) -> bool:
        while u.op in MOVEMENT: u = u.src[0]
        return u.op in _PAIR_SOURCES

    def pair(self, u: UOp) -> UOp:
        found = self._pairs.get(u)
        if found is not None: return found
        comp = u.dtype.component
        if u.op is Ops.PARAM: out = UOp(Ops.PARAM, comp, (), (u.arg[0], u.arg[1] + (2,)))
        elif u.op is Ops.BUFFER: out = _pair_buffer(u)
        elif u.op is Ops.EMPTY: out = UOp(Ops.EMPTY, comp, (), (u.arg[0] + (2,),) + tuple(u.arg[1:]))
        elif u.op is Ops.RESULT: out = UOp(Ops.RESULT, comp, (self.extern(u.src[0]),), u.arg)
        elif u.op is Ops.CARRY: out = UOp(Ops.CARRY, comp, (), (u.arg[0], u.arg[1], tuple(u.arg[2]) + (2,), u.arg[3]))
        elif u.op is Ops.SCATTER: out = self._scatter(u)
        elif u.op in MOVEMENT and self.has_memory(u):
            ndim = len(cast(tuple[int, ...], u.src[0].shape))
            out = UOp(u.op, comp, (self.pair(u.src[0]),), _pair_arg(u.op, u.arg, ndim))
        else: out = _interleave(*self.parts[u])
        self._pairs[u] = out
        return out

    def _scatter(self, u: UOp) -> UOp:
        """A write into complex memory, on its pair form: the lane is one more index of the values written."""
        combine, injective, gated = u.arg
        if combine not in (None, Ops.ADD):
            raise NotImplementedError(f"a complex {combine.name} accumulation into memory")
        old, value = u.src[0], u.src[1]
        assert value.shape is not None
        vshape = value.shape + (2,)
        value_pair = self.pair(value) if value.dtype.is_complex else _interleave(self.new[value],
                                                                                  UOp.const_like(value.dtype, 0,
                                                                                                 value.shape))

        def widen(i: UOp) -> UOp:
            return self.new[i].reshape(cast(tuple[int, ...], value.shape) + (1,)).expand(vshape)
        idx = [widen(i) for i in u.src[2:len(u.src) - (1 if gated else 0)]]
        lane = UOp.iota(2).reshape((1,) * len(value.shape) + (2,)).expand(vshape)
        gate = [widen(u.src[-1])] if gated else []
        return UOp(Ops.SCATTER, u.dtype.component, (self.pair(old), value_pair, *idx, lane, *gate), u.arg)

    def extern(self, node: UOp) -> UOp:
        """An extern call on pair forms: complex inputs and results are their memory."""
        found = self._extern.get(node)
        if found is not None: return found
        if node.op is Ops.LOOP: return self.loop(node)
        call = node.arg
        srcs = tuple(self.pair(s) if s.dtype.is_complex else self.new[s] for s in node.src)
        results = tuple((shape + (2,), dt.component) if dt.is_complex else (shape, dt) for shape, dt in call.results)
        from dataclasses import replace
        out = UOp(Ops.EXTERN, node.dtype, srcs, replace(call, results=results))
        self._extern[node] = out
        return out

    def loop(self, node: UOp) -> UOp:
        """A loop or branch on pair forms: a complex state value, operand, capture or result is a real array of
        shape + (2,) (its placeholders too), and the sub-graphs are rewritten as the program is."""
        found = self._extern.get(node)
        if found is not None: return found
        region = node.arg
        srcs = tuple(self.pair(s) if s.dtype.is_complex else self.new[s] for s in node.src)

        def paired(specs):
            return tuple((tuple(shape) + (2,), dt.component) if dt.is_complex else (shape, dt) for shape, dt in specs)

        def lowered(graph: UOp) -> UOp:
            sp = _Splitter()
            sp.run(graph.src)
            return UOp(graph.op, graph.dtype, tuple(sp.pair(v) if v.dtype.is_complex else sp.new[v]
                                                    for v in graph.src), graph.arg)
        from dataclasses import replace
        new_region = replace(region, state=paired(region.state), results=paired(region.results),
                             cond=None if region.cond is None else lowered(region.cond),
                             bodies=tuple(lowered(b) for b in region.bodies))
        out = UOp(Ops.LOOP, node.dtype, srcs, new_region)
        self._extern[node] = out
        return out

    # ---- real (and void) nodes ----
    def _rewrite(self, u: UOp) -> UOp:
        op = u.op
        if op is Ops.EXTERN: return self.extern(u)
        if op is Ops.LOOP: return self.loop(u)
        if op is Ops.RESULT: return UOp(Ops.RESULT, u.dtype, (self.extern(u.src[0]),), u.arg)
        if not any(s.dtype.is_complex for s in u.src):
            src = tuple(self.new[s] for s in u.src)
            return u if src == u.src else UOp(op, u.dtype, src, u.arg)
        rule = PRIMITIVES[op].complex_split   # a real value of complex ones: a cast, IMAG, a comparison
        if rule is None: raise NotImplementedError(f"{op.name} of a complex value")
        return rule(self, u)

    # ---- complex nodes ----
    def _split(self, u: UOp) -> tuple[UOp, ...]:
        if self.has_memory(u): return _lanes(self.pair(u))
        rule = PRIMITIVES[u.op].complex_split
        if rule is None: raise NotImplementedError(f"{u.op.name} of complex values")
        return rule(self, u)

    def operands(self, u: UOp) -> list[UOp]:
        """The real operands of `u`: both parts of each complex source, a real source as it was rewritten."""
        return [p for s in u.src for p in (self.parts[s] if s.dtype.is_complex else (self.new[s],))]


# ---------------------------------------------------------------------------------------------------------------
# complex split rules, one per op (registered in numfn.ir.primitives): rule(splitter, node) gives a complex node's
# (re, im), or a real node computed from complex ones (a cast, IMAG, a comparison) as a real node

def _complex_only(rule: Callable[[_Splitter, UOp], tuple[UOp, ...]]) -> Callable[[_Splitter, UOp], tuple[UOp, ...]]:
    """A rule for complex results: a real node of complex sources has no rule here."""
    def split(sp: _Splitter, u: UOp) -> tuple[UOp, ...]:
        if not u.dtype.is_complex: raise NotImplementedError(f"{u.op.name} of a complex value")
        return rule(sp, u)
    return split


def _real_only(rule: Callable[[_Splitter, UOp], UOp]) -> Callable[[_Splitter, UOp], UOp]:
    """A rule for real results of complex sources (a complex node of this op has no rule here)."""
    def split(sp: _Splitter, u: UOp) -> UOp:
        if u.dtype.is_complex: raise NotImplementedError(f"{u.op.name} of complex values")
        return rule(sp, u)
    return split


def _split_const(sp: _Splitter, u: UOp) -> tuple[UOp, ...]:
    z, comp = complex(u.arg), u.dtype.component
    return UOp.const(comp, z.real), UOp.const(comp, z.imag)


def _split_each_part(sp: _Splitter, u: UOp) -> tuple[UOp, ...]:
    """Views, sums, scans and materializations: the same op on each part."""
    if u.op in (Ops.REDUCE_AXIS, Ops.SCAN) and u.arg[0] is not Ops.ADD:
        raise NotImplementedError(f"a complex {u.arg[0].name} {u.op.name}")
    return tuple(UOp(u.op, u.dtype.component, (p,), u.arg) for p in sp.parts[u.src[0]])


def _split_cast(sp: _Splitter, u: UOp):
    comp = u.dtype.component if u.dtype.is_complex else None
    x = u.src[0]
    if comp is None:   # NumPy's cast to a real type keeps the real part; to bool, whether any part is nonzero
        re, im = sp.parts[x]
        if u.dtype.is_bool: return _at_shape(lambda a, b: a.ne(0.0) | b.ne(0.0), re, im)[0]
        return re if u.dtype is re.dtype else UOp(Ops.CAST, u.dtype, (re,))
    if x.dtype.is_complex: return tuple(p if p.dtype is comp else UOp(Ops.CAST, comp, (p,)) for p in sp.parts[x])
    v = sp.new[x]
    return (v if v.dtype is comp else UOp(Ops.CAST, comp, (v,))), \
        UOp.const_like(comp, 0.0, cast(tuple[int, ...], u.shape))


def _split_where(sp: _Splitter, u: UOp) -> tuple[UOp, ...]:
    c = sp.new[u.src[0]]
    (ar, ai), (br, bi) = sp.parts[u.src[1]], sp.parts[u.src[2]]
    return c.alu(Ops.WHERE, ar, br), c.alu(Ops.WHERE, ai, bi)


def _split_gather(sp: _Splitter, u: UOp) -> tuple[UOp, ...]:
    idx = tuple(sp.new[i] for i in u.src[1:])
    return tuple(UOp(Ops.GATHER, u.dtype.component, (p, *idx)) for p in sp.parts[u.src[0]])


def _parts_rule(fn: Callable) -> Callable:
    """The rule of an elementwise op whose arithmetic `fn` takes and gives parts (see _FUNCTIONS)."""
    return lambda sp, u: _at_shape(fn, *sp.operands(u))


def _compare_rule(fn: Callable) -> Callable:
    return lambda sp, u: _at_shape(fn, *sp.operands(u))[0]


def _at_shape(fn: Callable, *srcs: UOp) -> tuple[UOp, ...]:
    """fn(*parts) for real sources of one shape. The functions below are written for scalars (constants and Python
    numbers mix freely, as in codegen's rules): fn runs on 0-d placeholders, and its graph is rebuilt on the sources
    with every constant broadcast to their shape."""
    holes = [UOp(Ops.PARAM, s.dtype, (), (-1 - i, ())) for i, s in enumerate(srcs)]
    out = fn(*holes)
    outs = out if isinstance(out, tuple) else (out,)
    shape = srcs[0].shape
    assert shape is not None
    sub = dict(zip(holes, srcs))

    def on_sources(u: UOp, src: tuple[UOp, ...]) -> UOp:
        if u in sub: return sub[u]
        if u.op is Ops.CONST: return UOp.const_like(u.dtype, u.arg, shape)
        return UOp(u.op, u.dtype, src, u.arg)
    rebuilt = fold(outs, on_sources)
    return tuple(rebuilt[o] for o in outs)


# ---------------------------------------------------------------------------------------------------------------
# scalar helpers (on loop-level or 0-d UOps)

def _c(like: UOp, v) -> UOp: return UOp.const(like.dtype, v)
def _abs(x: UOp) -> UOp: return x.alu(Ops.ABS)
def _isnan(x: UOp) -> UOp: return x.ne(x)
def _isinf(x: UOp) -> UOp: return _abs(x).eq(math.inf)
def _finite(x: UOp) -> UOp: return _abs(x) < math.inf
def _not(b: UOp) -> UOp: return b ^ UOp.const(dtypes.bool, True)
def _fma(a: UOp, b: UOp, c: UOp) -> UOp: return UOp(Ops.FMA, a.dtype, (a, b, c))


def exact_mul(a: UOp, b: UOp) -> UOp:
    """a * b rounded on its own, where NumPy rounds the product before adding it: a plain product, since numfn never
    contracts a*b + c into an FMA unless jit(fastmath=True) asks for it."""
    return a * b
def _fn(op: Ops, *xs: UOp) -> UOp: return UOp(op, xs[0].dtype, tuple(xs))
def _div(a: UOp, b: UOp) -> UOp: return a.alu(Ops.FDIV, b)


def _copysign(a: UOp, b: UOp) -> UOp:
    """|a| with the sign bit of b."""
    ut = dtypes.uint64 if a.dtype.itemsize == 8 else dtypes.uint32
    sign = 1 << (ut.bits - 1)
    return ((a.bitcast(ut) & UOp.const(ut, sign - 1)) | (b.bitcast(ut) & UOp.const(ut, sign))).bitcast(a.dtype)


def _in_f64(fn: Callable) -> Callable:
    """A complex64 function computed in float64 and rounded once (float64 holds every float32 argument exactly, and
    the float64 kernels' few ulp vanish in the rounding); complex128 computes directly."""
    def wrapped(*parts: UOp) -> tuple[UOp, UOp]:
        if parts[0].dtype is F64: return fn(*parts)
        out = fn(*(p.cast(F64) for p in parts))
        return tuple(o.cast(F32) for o in out)
    wrapped.__name__ = fn.__name__
    return wrapped


# ---------------------------------------------------------------------------------------------------------------
# arithmetic, as NumPy's loops compute it

def cmul(ar: UOp, ai: UOp, br: UOp, bi: UOp) -> tuple[UOp, UOp]:
    """NumPy's complex product (its SIMD loops, which every array longer than one element takes): each part one
    fused multiply-add."""
    return _fma(ar, br, -(ai * bi)), _fma(ar, bi, ai * br)


def cmul_naive(ar: UOp, ai: UOp, br: UOp, bi: UOp) -> tuple[UOp, UOp]:
    """The textbook product, as NumPy's power computes its integer powers."""
    return exact_mul(ar, br) - exact_mul(ai, bi), exact_mul(ar, bi) + exact_mul(ai, br)


def cmul_annex_g(a: UOp, b: UOp, c: UOp, d: UOp) -> tuple[UOp, UOp]:
    """C's complex product (C99 Annex G, as compilers implement it): the textbook product, except that where both
    parts come out NaN and an operand is infinite (or a partial product overflowed), the infinities are recovered
    by redoing the product with the infinite parts boxed to +-1 and NaN parts to +-0, times inf."""
    ac, bd, ad, bc = exact_mul(a, c), exact_mul(b, d), exact_mul(a, d), exact_mul(b, c)
    x, y = ac - bd, ad + bc
    both_nan = _isnan(x) & _isnan(y)
    zero, one = _c(a, 0.0), _c(a, 1.0)

    def box(v: UOp) -> UOp: return _copysign(_isinf(v).where(one, zero), v)
    def unnan(v: UOp) -> UOp: return _isnan(v).where(_copysign(zero, v), v)
    z_inf = _isinf(a) | _isinf(b)
    w_inf = _isinf(c) | _isinf(d)
    a1, b1 = z_inf.where(box(a), a), z_inf.where(box(b), b)
    c1, d1 = z_inf.where(unnan(c), c), z_inf.where(unnan(d), d)
    c2, d2 = w_inf.where(box(c1), c1), w_inf.where(box(d1), d1)
    a2, b2 = w_inf.where(unnan(a1), a1), w_inf.where(unnan(b1), b1)
    overflow = _not(z_inf | w_inf) & (_isinf(ac) | _isinf(bd) | _isinf(ad) | _isinf(bc))
    a3, b3, c3, d3 = (overflow.where(unnan(v), v) for v in (a2, b2, c2, d2))
    recalc = both_nan & (z_inf | w_inf | overflow)
    inf = _c(a, math.inf)
    x2 = inf * (exact_mul(a3, c3) - exact_mul(b3, d3))
    y2 = inf * (exact_mul(a3, d3) + exact_mul(b3, c3))
    return recalc.where(x2, x), recalc.where(y2, y)


def cdiv(ar: UOp, ai: UOp, br: UOp, bi: UOp) -> tuple[UOp, UOp]:
    """NumPy's complex division: Smith's method scaled by the larger part of the divisor; a zero divisor gives
    the quotients of the parts by +0 (inf or NaN), a NaN in the divisor NaNs."""
    abr, abi = _abs(br), _abs(bi)
    first = abr >= abi                      # false when either is NaN: the second branch, which gives NaN
    zero = first & abr.eq(0.0) & abi.eq(0.0)
    rat1 = _div(bi, br)
    scl1 = _div(_c(br, 1.0), br + exact_mul(bi, rat1))
    rat2 = _div(br, bi)
    scl2 = _div(_c(br, 1.0), bi + exact_mul(br, rat2))
    re1, im1 = (ar + exact_mul(ai, rat1)) * scl1, (ai - exact_mul(ar, rat1)) * scl1
    re2, im2 = (exact_mul(ar, rat2) + ai) * scl2, (exact_mul(ai, rat2) - ar) * scl2
    re = zero.where(_div(ar, abr), first.where(re1, re2))
    im = zero.where(_div(ai, abr), first.where(im1, im2))
    return re, im


def _add(ar, ai, br, bi): return ar + br, ai + bi
def _sub(ar, ai, br, bi): return ar - br, ai - bi
def _neg(ar, ai): return -ar, -ai


def _compare_eq(ar, ai, br, bi): return ar.eq(br) & ai.eq(bi)
def _compare_ne(ar, ai, br, bi): return ar.ne(br) | ai.ne(bi)


def _less(ar, ai, br, bi, or_equal: bool = False) -> UOp:
    """NumPy's lexicographic order of complex numbers: the real parts decide, unless equal (then the imaginary
    parts do); a NaN imaginary part makes the real parts' verdict false."""
    no_nan = _not(_isnan(ai)) & _not(_isnan(bi))
    tie = ai <= bi if or_equal else ai < bi
    return ((ar < br) & no_nan) | (ar.eq(br) & tie)


_COMPARE = {Ops.CMPEQ: _compare_eq, Ops.CMPNE: _compare_ne, Ops.CMPLT: _less,
            Ops.CMPLE: lambda ar, ai, br, bi: _less(ar, ai, br, bi, True)}


def _maximum(ar, ai, br, bi, smaller: bool = False) -> tuple[UOp, UOp]:
    """np.maximum (np.minimum) of complex numbers: the larger (smaller) in the lexicographic order; NaNs propagate,
    the first operand's first."""
    keep = _less(br, bi, ar, ai, True) if not smaller else _less(ar, ai, br, bi, True)
    take_a = _isnan(ar) | _isnan(ai) | keep
    return take_a.where(ar, br), take_a.where(ai, bi)


def _rint(ar, ai): return ar.alu(Ops.RINT), ai.alu(Ops.RINT)


def _cabs(ar, ai) -> tuple[UOp, UOp]:
    """|z| as a complex value (the tracer casts it to the real type): hypot of the parts, inf if either is inf."""
    return ar.alu(Ops.HYPOT, ai), _c(ar, 0.0)


# ---------------------------------------------------------------------------------------------------------------
# exponential and logarithm

_BIG = 709.0                     # exp(709) is finite in float64: larger arguments scale by it
_EXP_BIG = math.exp(_BIG)


def _exp_times(x: UOp, f: UOp) -> UOp:
    """exp(x) * f without overflowing while the product is finite (float64: x up to 709 + 745)."""
    big = x > _BIG
    e = _fn(Ops.EXP, big.where(x - _BIG, x))
    return big.where(e * (f * _EXP_BIG), e * f)


@_in_f64
def cexp(x: UOp, y: UOp) -> tuple[UOp, UOp]:
    """exp(x) cis(y). Annex G: y = 0 gives exp(x) + i y exactly; +inf with y inf or NaN gives inf + NaN i (glibc);
    -inf with y inf or NaN gives 0 with y's sign as the imaginary part; x NaN and y nonzero NaNs."""
    c, s = _fn(Ops.COS, y), _fn(Ops.SIN, y)
    re, im = _exp_times(x, c), _exp_times(x, s)
    yfin = _finite(y)
    re = y.eq(0.0).where(_fn(Ops.EXP, x), re)
    im = y.eq(0.0).where(y, im)
    pinf, ninf = x.eq(math.inf), x.eq(-math.inf)
    re = (pinf & _not(yfin)).where(_c(x, math.inf), (ninf & _not(yfin)).where(_c(x, 0.0), re))
    im = (pinf & _not(yfin)).where(y - y, (ninf & _not(yfin)).where(_copysign(_c(x, 0.0), y), im))
    return re, im


def _two_sum(a: UOp, b: UOp) -> tuple[UOp, UOp]:
    """(s, t) with s = a + b rounded and s + t == a + b exactly."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _sq_minus_one(x: UOp, y: UOp) -> UOp:
    """x*x + y*y - 1 with every rounding error kept to first order: the squares' errors exactly by fma, the sums'
    by two-sums, so cancellation near |z| = 1 keeps its digits."""
    p, q = exact_mul(x, x), exact_mul(y, y)
    ep, eq = _fma(x, x, -p), _fma(y, y, -q)
    a, ea = _two_sum(p, _c(x, -1.0))
    s, es = _two_sum(a, q)
    return s + (ea + es + ep + eq)


@_in_f64
def clog(x: UOp, y: UOp) -> tuple[UOp, UOp]:
    """log|z| + i arg z. |z| near 1 computes log1p(x*x + y*y - 1) / 2 with the sum kept exact enough (log of the
    rounded |z| would lose the digits that matter there); elsewhere log(hypot(x, y)). The special values follow
    from hypot's and atan2's (clog(0) = -inf + i arg, clog(inf + i NaN) = inf + i NaN, ...)."""
    ax, ay = _abs(x), _abs(y)
    big, small = ax.maximum(ay), ax.minimum(ay)
    h = x.alu(Ops.HYPOT, y)
    near = (h > 0.5) & (h < 2.0)
    d = _sq_minus_one(near.where(big, _c(x, 1.0)), near.where(small, _c(x, 0.0)))
    # parts near the largest float: |z| would overflow, log(|z| / 4) + log(4) does not; parts below the normal
    # numbers: |z| would round to a denormal's few digits, log(|z| 2**600) - 600 log(2) keeps them all
    huge, tiny = big > 2.0 ** 1020, big < 2.0 ** -1000
    scale = huge.where(_c(x, 0.25), tiny.where(_c(x, 2.0 ** 600), _c(x, 1.0)))
    shift = huge.where(_c(x, math.log(4.0)), tiny.where(_c(x, -600 * math.log(2.0)), _c(x, 0.0)))
    far = (huge | tiny).where(_fn(Ops.LOG, (x * scale).alu(Ops.HYPOT, y * scale)) + shift, _fn(Ops.LOG, h))
    re = near.where(_fn(Ops.LOG1P, d) * 0.5, far)
    return re, y.alu(Ops.ATAN2, x)


@_in_f64
def csqrt(x: UOp, y: UOp) -> tuple[UOp, UOp]:
    """The principal square root (branch cut on the negative reals, sign of the imaginary part kept): t =
    sqrt((|x| + |z|) / 2) and y / (2t), scaled by powers of 4 away from overflow and the denormals. Annex G: an
    infinite imaginary part gives inf + i y; x = -inf gives (0 or NaN) + i inf; x = +inf gives inf + (0 or NaN) i."""
    ax, ay = _abs(x), _abs(y)
    m = ax.maximum(ay)
    big = m > 2.0 ** 1020
    tiny = m < 2.0 ** -1020
    scale = big.where(_c(x, 0.25), tiny.where(_c(x, 2.0 ** 108), _c(x, 1.0)))
    unscale = big.where(_c(x, 2.0), tiny.where(_c(x, 2.0 ** -54), _c(x, 1.0)))
    sx, sy = ax * scale, ay * scale
    t = _fn(Ops.SQRT, (sx + sx.alu(Ops.HYPOT, sy)) * 0.5)
    other = _div(sy, t * 2.0)
    pos_re, pos_im = t * unscale, other * unscale        # for x >= 0: (t, |y| / 2t); for x < 0 swapped
    neg = x < 0.0
    re = neg.where(pos_im, pos_re)
    im = _copysign(neg.where(pos_re, pos_im), y)
    zero = ax.eq(0.0) & ay.eq(0.0)
    re = zero.where(_c(x, 0.0), re)
    im = zero.where(y, im)
    # infinities: an infinite imaginary part wins (even over NaN); then x = -inf or +inf
    yinf = _isinf(y)
    xninf, xpinf = x.eq(-math.inf), x.eq(math.inf)
    nan_y = _isnan(y)
    re = yinf.where(_c(x, math.inf), xninf.where(nan_y.where(y, _c(x, 0.0)), xpinf.where(x, re)))
    im = yinf.where(y, xninf.where(nan_y.where(_c(x, math.inf), _copysign(_c(x, math.inf), y)),
                                   xpinf.where(nan_y.where(y, _copysign(_c(x, 0.0), y)), im)))
    return re, im


def cexp2(x: UOp, y: UOp) -> tuple[UOp, UOp]:
    """NumPy's exp2 of a complex number: exp of z * ln 2 (each part multiplied)."""
    return cexp(x * math.log(2), y * math.log(2))


def cexpm1(x: UOp, y: UOp) -> tuple[UOp, UOp]:
    """NumPy's expm1 of a complex number: expm1(x) cos(y) - 2 sin(y/2)**2 + i exp(x) sin(y), in the parts' own
    precision (its cancellation is NumPy's too)."""
    s = _fn(Ops.SIN, y * 0.5)
    return _fn(Ops.EXPM1, x) * _fn(Ops.COS, y) - 2.0 * s * s, _fn(Ops.EXP, x) * _fn(Ops.SIN, y)


def clog1p(x: UOp, y: UOp) -> tuple[UOp, UOp]:
    """NumPy's log1p of a complex number: log|1 + z| + i arg(1 + z), 1 + x rounded first (in the parts' own
    precision, as NumPy)."""
    x1 = x + 1.0
    return _fn(Ops.LOG, x1.alu(Ops.HYPOT, y)), y.alu(Ops.ATAN2, x1)


def _scaled_log(factor: float) -> Callable:
    @_in_f64
    def fn(x: UOp, y: UOp) -> tuple[UOp, UOp]:
        re, im = clog(x, y)
        return re * factor, im * factor
    return fn


clog2 = _scaled_log(math.log2(math.e))        # NumPy: log(z) times 1/ln 2 (the constant correctly rounded)
clog10 = _scaled_log(math.log10(math.e))


# ---------------------------------------------------------------------------------------------------------------
# hyperbolic and trigonometric functions

def _cosh_times(x: UOp, f: UOp) -> UOp:
    """cosh(x) * f for float64 x, beyond cosh's overflow as long as the product is finite."""
    ax = _abs(x)
    big = ax > _BIG
    e = _fn(Ops.EXP, big.where(ax - _BIG, _c(x, 0.0)))
    return big.where(e * (f * (_EXP_BIG / 2)), _fn(Ops.COSH, x) * f)


def _sinh_times(x: UOp, f: UOp) -> UOp:
    ax = _abs(x)
    big = ax > _BIG
    e = _fn(Ops.EXP, big.where(ax - _BIG, _c(x, 0.0)))
    return big.where(_copysign(_c(x, 1.0), x) * (e * (f * (_EXP_BIG / 2))), _fn(Ops.SINH, x) * f)


@_in_f64
def csinh(x: UOp, y: UOp) -> tuple[UOp, UOp]:
    """sinh(x) cos(y) + i cosh(x) sin(y). Annex G: y = 0 gives sinh(x) + i y; x = 0 with y inf or NaN gives
    x + NaN i; x infinite with y inf or NaN gives +inf + NaN i (glibc's sign)."""
    c, s = _fn(Ops.COS, y), _fn(Ops.SIN, y)
    re, im = _sinh_times(x, c), _cosh_times(x, s)
    y0 = y.eq(0.0)
    yfin = _finite(y)
    re = y0.where(_fn(Ops.SINH, x), (x.eq(0.0) & _not(yfin)).where(x, (_isinf(x) & _not(yfin)).where(
        _c(x, math.inf), re)))
    im = y0.where(y, ((x.eq(0.0) | _isinf(x)) & _not(yfin)).where(y - y, im))
    return re, im


@_in_f64
def ccosh(x: UOp, y: UOp) -> tuple[UOp, UOp]:
    """cosh(x) cos(y) + i sinh(x) sin(y). Annex G: y = 0 gives cosh(x) + i sinh(x)*y (x*y's sign; NaN x: NaN + i y
    ... as glibc); x = 0 with y inf or NaN gives NaN + 0i; x infinite with y inf or NaN gives inf + NaN i."""
    c, s = _fn(Ops.COS, y), _fn(Ops.SIN, y)
    re, im = _cosh_times(x, c), _sinh_times(x, s)
    y0 = y.eq(0.0)
    x0 = x.eq(0.0)
    yfin = _finite(y)
    re = y0.where(_fn(Ops.COSH, x), (x0 & _not(yfin)).where(y - y, (_isinf(x) & _not(yfin)).where(_abs(x), re)))
    im = y0.where(_isnan(x).where(y, _copysign(_c(x, 0.0), _copysign(_c(x, 1.0), x) * y)),
                  (x0 & _not(yfin)).where(_c(x, 0.0), (_isinf(x) & _not(yfin)).where(y - y, im)))
    return re, im


@_in_f64
def ctanh(x: UOp, y: UOp) -> tuple[UOp, UOp]:
    """tanh(x + iy) = (sinh(x) cosh(x) + i sin(y) cos(y)) / (sinh(x)**2 + cos(y)**2); for |x| > 22 (where
    tanh(x) rounds to +-1) the real part is +-1 and the imaginary part 4 sin(y) cos(y) exp(-2|x|). Annex G: x
    infinite gives +-1 + 0i (the sign of sin(2y)); y inf or NaN with finite x gives NaN + NaN i; NaN x with y = 0
    gives NaN + i y."""
    c, s = _fn(Ops.COS, y), _fn(Ops.SIN, y)
    sh, ch = _fn(Ops.SINH, x), _fn(Ops.COSH, x)
    den = sh * sh + c * c
    re = _div(sh * ch, den)
    im = _div(s * c, den)
    ax = _abs(x)
    far = ax > 22.0
    tail = 4.0 * s * c * _fn(Ops.EXP, -2.0 * ax.minimum(_c(x, 400.0)))
    re = far.where(_copysign(_c(x, 1.0), x), re)
    im = far.where(tail, im)
    xinf = _isinf(x)
    yfin = _finite(y)
    re = xinf.where(_copysign(_c(x, 1.0), x), re)
    im = xinf.where(yfin.where(_copysign(_c(x, 0.0), s * c), _copysign(_c(x, 0.0), y)), im)
    # y inf or NaN with finite x: NaN, but x itself where x is 0
    re = (_finite(x) & _not(yfin)).where(x.eq(0.0).where(x, y - y), re)
    im = (_finite(x) & _not(yfin)).where(y - y, im)
    im = y.eq(0.0).where(y, im)
    return re, im


def _rotated(fn: Callable) -> Callable:
    """sin, cos and tan from their hyperbolic forms: sin(z) = -i sinh(iz), cos(z) = cosh(iz), tan(z) =
    -i tanh(iz) (C99's own definitions of them); glibc's sin of x inf or NaN with y infinite is NaN + inf i."""
    def rotated(x: UOp, y: UOp) -> tuple[UOp, UOp]:
        a, b = fn(-y, x)
        if fn is ccosh: return a, b
        if fn is csinh: return b, (_not(_finite(x)) & _isinf(y)).where(_c(x, math.inf), -a)
        return b, -a
    rotated.__name__ = fn.__name__[0] + fn.__name__[2:]
    return rotated


csin, ccos, ctan = _rotated(csinh), _rotated(ccosh), _rotated(ctanh)


# ---------------------------------------------------------------------------------------------------------------
# power

_POW_INT_LIMIT = 100


def cpow(ar: UOp, ai: UOp, br: UOp, bi: UOp) -> tuple[UOp, UOp]:
    """NumPy's complex power: b = 0 gives 1; a = 0 gives 0 where b's real part is positive, else NaN; an integer b
    with |b| < 100 multiplies by repeated squaring (the textbook product, as NumPy's helper) and divides 1 by the
    result for negative b; any other b is exp(b log a)."""
    one, zero = _c(ar, 1.0), _c(ar, 0.0)
    b_zero = br.eq(0.0) & bi.eq(0.0)
    a_zero = ar.eq(0.0) & ai.eq(0.0)
    # integer exponents: NumPy's loop over the bits of |n|, the result starting from 1 (the first multiplication
    # by 1 is a real multiplication, which matters for signed zeros)
    n_ok = bi.eq(0.0) & br.eq(br.alu(Ops.TRUNC)) & (_abs(br) < float(_POW_INT_LIMIT))
    n = n_ok.where(_abs(br), zero).cast(dtypes.int64)
    rr, ri = one, zero
    pr, pi = ar, ai
    for k in range(7):   # 2**7 > 100
        bit = (n & UOp.const(dtypes.int64, 1 << k)).ne(0)
        mr, mi = cmul_naive(rr, ri, pr, pi)
        rr, ri = bit.where(mr, rr), bit.where(mi, ri)
        pr, pi = cmul_naive(pr, pi, pr, pi)
    inv_r, inv_i = cdiv(one, zero, rr, ri)
    neg = br < 0.0
    int_r, int_i = neg.where(inv_r, rr), neg.where(inv_i, ri)
    # NumPy's short cuts for 1, 2 and 3
    sq_r, sq_i = cmul_naive(ar, ai, ar, ai)
    cu_r, cu_i = cmul_naive(ar, ai, sq_r, sq_i)
    for value, (vr, vi) in ((1.0, (ar, ai)), (2.0, (sq_r, sq_i)), (3.0, (cu_r, cu_i))):
        hit = br.eq(value) & bi.eq(0.0)
        int_r, int_i = hit.where(vr, int_r), hit.where(vi, int_i)
    lr, li = clog(ar, ai)
    er, ei = cexp(*cmul_annex_g(br, bi, lr, li))   # glibc's cpow: exp(b log a), with C's complex product
    re, im = n_ok.where(int_r, er), n_ok.where(int_i, ei)
    zr = (br > 0.0).where(zero, _c(ar, math.nan))   # 0 ** b: 0 for a positive real part of b, else NaN
    re = b_zero.where(one, a_zero.where(zr, re))
    im = b_zero.where(zero, a_zero.where(zr, im))
    return re, im


_FUNCTIONS: dict[Ops, Callable] = {
    Ops.NEG: _neg, Ops.ADD: _add, Ops.SUB: _sub, Ops.MUL: cmul, Ops.FDIV: cdiv, Ops.POW: cpow, Ops.ABS: _cabs,
    Ops.SQRT: csqrt, Ops.EXP: cexp, Ops.EXP2: cexp2, Ops.EXPM1: cexpm1, Ops.LOG: clog, Ops.LOG2: clog2,
    Ops.LOG10: clog10, Ops.LOG1P: clog1p, Ops.SIN: csin, Ops.COS: ccos, Ops.TAN: ctan, Ops.SINH: csinh,
    Ops.COSH: ccosh, Ops.TANH: ctanh, Ops.MAX: _maximum, Ops.MIN: functools.partial(_maximum, smaller=True),
    Ops.RINT: _rint,
}


def _register_complex_rules() -> None:
    rules: dict[Ops, Callable] = {
        Ops.CONST: _complex_only(_split_const), Ops.CAST: _split_cast, Ops.WHERE: _complex_only(_split_where),
        Ops.COMPLEX: _complex_only(lambda sp, u: (sp.new[u.src[0]], sp.new[u.src[1]])),
        Ops.IMAG: _real_only(lambda sp, u: sp.parts[u.src[0]][1]),
        Ops.GATHER: _complex_only(_split_gather),
        **{op: _complex_only(_split_each_part) for op in (*MOVEMENT, Ops.REDUCE_AXIS, Ops.SCAN, Ops.CONTIGUOUS)},
        **{op: _complex_only(_parts_rule(fn)) for op, fn in _FUNCTIONS.items()},
        **{op: _real_only(_compare_rule(fn)) for op, fn in _COMPARE.items()}}
    for op, rule in rules.items(): register(op, "complex_split", rule)


_register_complex_rules()

# The ALU ops a complex value may be computed by (besides views, casts, COMPLEX, reductions with ADD, GATHER,
# SCATTER, CONTIGUOUS and extern calls): the tracer refuses the others before they reach this module.
COMPLEX_ALU = frozenset(op for op in ALU if PRIMITIVES[op].complex) - {Ops.COMPLEX, Ops.IMAG}


def complex_dtype(component: DType) -> DType:
    """The complex type whose parts are `component` (float32: complex64)."""
    return dtypes.complex64 if component is F32 else dtypes.complex128


__all__ = ["lower_complex", "has_complex", "COMPLEX_ALU", "complex_dtype", "cmul", "cdiv", "exact_mul"]
