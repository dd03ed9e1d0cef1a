"""Symbolic simplification: constant folding with NumPy's exact semantics, algebraic identities, and the
canonical form of integer index expressions (affine sums, division and modulo removed where bounds allow).

Index expressions are built through the smart constructors `add`, `mul`, `idiv`, `imod`, which return canonical
nodes; `symbolic` is the rule set graph_rewrite uses on whole graphs (before callification and after lowering).
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from numfn.dtype import DType, dtypes
from numfn.ir.uop import (ALU, COMMUTATIVE, ELEMENTWISE, MOVEMENT, Ops, PatternMatcher, UOp, UPat, cast_scalar,
                       memo_bottom_up, memo_get, substitute)

# ---------------------------------------------------------------------------------------------------------------
# scalar evaluation with NumPy semantics (constant folding must give exactly what NumPy would)

# NumPy's ufunc for each op
UFUNCS: dict[Ops, Callable[..., Any]] = {
          Ops.NEG: np.negative, Ops.ABS: np.absolute, Ops.SQRT: np.sqrt, Ops.EXP: np.exp, Ops.EXP2: np.exp2,
          Ops.LOG: np.log, Ops.LOG2: np.log2, Ops.SIN: np.sin, Ops.COS: np.cos, Ops.TAN: np.tan, Ops.TANH: np.tanh,
          Ops.FLOOR: np.floor, Ops.CEIL: np.ceil, Ops.TRUNC: np.trunc, Ops.ADD: np.add, Ops.SUB: np.subtract,
          Ops.MUL: np.multiply, Ops.FDIV: np.true_divide, Ops.FLOORDIV: np.floor_divide, Ops.MOD: np.remainder,
          Ops.POW: np.power, Ops.MAX: np.maximum, Ops.MIN: np.minimum, Ops.CMPLT: np.less, Ops.CMPLE: np.less_equal,
          Ops.CMPEQ: np.equal, Ops.CMPNE: np.not_equal, Ops.AND: np.bitwise_and, Ops.OR: np.bitwise_or,
          Ops.XOR: np.bitwise_xor, Ops.FMOD: np.fmod, Ops.SHL: np.left_shift, Ops.SHR: np.right_shift,
          Ops.ASIN: np.arcsin, Ops.ACOS: np.arccos, Ops.ATAN: np.arctan, Ops.SINH: np.sinh, Ops.COSH: np.cosh,
          Ops.ASINH: np.arcsinh, Ops.ACOSH: np.arccosh, Ops.ATANH: np.arctanh, Ops.EXPM1: np.expm1,
          Ops.LOG1P: np.log1p, Ops.LOG10: np.log10, Ops.CBRT: np.cbrt, Ops.RINT: np.rint, Ops.ATAN2: np.arctan2,
          Ops.HYPOT: np.hypot, Ops.GCD: np.gcd, Ops.IMAG: np.imag, Ops.COMPLEX: lambda re, im: _complex_from(re, im)}


def _complex_from(re, im) -> np.ndarray:
    """re + im*1j with both parts exactly as given (arithmetic would turn 0 * inf into NaN)."""
    re, im = np.asarray(re), np.asarray(im)
    out = np.empty(np.broadcast_shapes(re.shape, im.shape), np.result_type(re.dtype, im.dtype, np.complex64))
    out.real, out.imag = re, im
    return out


def exec_alu(op: Ops, dtype: DType, values: tuple, src_dtypes: tuple[DType, ...]):
    """Evaluate one elementwise op on Python scalars exactly as the generated code does, returning a Python
    value of `dtype`. None when the op cannot be evaluated here (a negative integer power, for example)."""
    if op is Ops.WHERE: return cast_scalar(values[1] if values[0] else values[2], dtype)
    if op is Ops.CAST:
        out = _np_cast(values[0], src_dtypes[0], dtype)
        return None if out is None else cast_scalar(out, dtype)
    if op is Ops.BITCAST:
        return cast_scalar(np.array(values[0], src_dtypes[0].np).view(dtype.np).item(), dtype)
    if op is Ops.NOT: return (not values[0]) if dtype.is_bool else cast_scalar(~int(values[0]), dtype)
    if op in (Ops.IDIV, Ops.IMOD):
        a, b = int(values[0]), int(values[1])
        if b == 0: return None
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return cast_scalar(q if op is Ops.IDIV else a - q * b, dtype)
    if op not in UFUNCS: return None   # FMA: left to the generated code
    if op is Ops.POW and dtype.is_int and values[1] < 0: return None
    if op in (Ops.SHL, Ops.SHR) and not 0 <= values[1] < src_dtypes[0].bits: return None
    args = [np.array(v, d.np)[()] for v, d in zip(values, src_dtypes)]
    with np.errstate(all="ignore"):
        out = UFUNCS[op](*args)
    return cast_scalar(out.item(), dtype)


def _np_cast(value, src: DType, dst: DType):
    if src.is_complex and not dst.is_complex and not dst.is_bool:   # the real part (NumPy warns: the tracer did)
        value, src = value.real, src.component
    with np.errstate(all="ignore"):
        if src.is_float and dst.is_int and not (math.isfinite(value) and dst.min <= value <= dst.max):
            return None   # out of range: left to the generated code, which follows NumPy's x86 behaviour
        return np.array(value, src.np).astype(dst.np).item()


def const_value(u: UOp):
    """The value of a constant tensor (a CONST seen through views other than PAD), else None."""
    while u.op in MOVEMENT and u.op is not Ops.PAD: u = u.src[0]
    return u.arg if u.op is Ops.CONST else None


def is_const(u: UOp, value=None) -> bool:
    v = const_value(u)
    if v is None: return False
    if value is None: return True
    return v == value and not (isinstance(v, float) and math.copysign(1, v) != math.copysign(1, value))


def _fold(x: UOp) -> UOp | None:
    values = tuple(const_value(s) for s in x.src)
    if any(v is None for v in values): return None
    if x.op is Ops.CAST and x.dtype.is_int and x.src[0].dtype.is_float:
        v = values[0]
        if not (math.isfinite(v) and x.dtype.min <= v <= x.dtype.max): return None
    out = exec_alu(x.op, x.dtype, values, tuple(s.dtype for s in x.src))
    if out is None: return None
    return UOp.const_like(x.dtype, out, x.shape) if x.shape is not None else UOp.const(x.dtype, out)


def _same_shape_const(x: UOp, value) -> UOp:
    return UOp.const_like(x.dtype, value, x.shape) if x.shape is not None else UOp.const(x.dtype, value)


def _identities(x: UOp) -> UOp | None:
    """Algebraic identities that hold bit-exactly for every input, NaN and signed zeros included."""
    op, src = x.op, x.src
    # complex arithmetic mixes the parts (z * 1 is NaN where z's imaginary part is infinite): none is an identity
    if op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.OR, Ops.XOR, Ops.AND) and len(src) == 2 and \
            not x.dtype.is_complex:
        a, b = src
        exact = a.dtype is x.dtype
        if op is Ops.ADD and x.dtype.is_int:
            if is_const(b, 0) and exact: return a
            if is_const(a, 0) and b.dtype is x.dtype: return b
        if op is Ops.ADD and x.dtype.is_float and exact and is_const(b, -0.0): return a
        if op is Ops.SUB and exact and (is_const(b, 0) if x.dtype.is_int else is_const(b, 0.0)): return a
        if op is Ops.MUL and exact and is_const(b, 1): return a
        if op is Ops.MUL and b.dtype is x.dtype and is_const(a, 1): return b
        if op is Ops.MUL and not x.dtype.is_float and (is_const(b, 0) or is_const(a, 0)):
            return _same_shape_const(x, 0)
        if op is Ops.FDIV and exact and is_const(b, 1.0): return a
        if op in (Ops.OR, Ops.XOR) and exact and is_const(b, 0): return a
        if op is Ops.AND and x.dtype.is_bool and exact and is_const(b, True): return a
        if x.dtype.is_bool and op in (Ops.AND, Ops.OR):
            absorbing = op is Ops.OR   # x & False == False, x | True == True
            if is_const(a, absorbing) or is_const(b, absorbing): return _same_shape_const(x, absorbing)
    if op in (Ops.NEG, Ops.NOT) and src[0].op is op: return src[0].src[0]
    if op is Ops.WHERE:
        c = const_value(src[0])
        if c is not None: return src[1] if c else src[2]
        if src[1] is src[2]: return src[1]
    if op in (Ops.MAX, Ops.MIN) and src[0] is src[1]: return src[0]
    if op is Ops.CAST:
        inner = src[0]
        if inner.dtype is x.dtype: return inner
        if inner.op is Ops.CAST and np.can_cast(inner.src[0].dtype.np, inner.dtype.np, "safe"):
            return inner.src[0].cast(x.dtype)
    return None


def _fold_views(x: UOp) -> UOp | None:
    """Chains of views collapse: a view of a constant is a constant (kept as CONST under RESHAPE/EXPAND, so
    identities can see it); reshape of reshape is one reshape (or none); permutes compose; flips cancel."""
    s = x.src[0]
    if x.op is not Ops.PAD and const_value(x) is not None and s.op is not Ops.CONST:
        return UOp.const_like(x.dtype, const_value(x), cast(tuple[int, ...], x.shape))
    if x.op is Ops.RESHAPE and x.shape == s.shape: return s
    if x.op is Ops.RESHAPE and s.op is Ops.RESHAPE: return s.src[0].reshape(cast(tuple[int, ...], x.shape))
    if x.op is Ops.PERMUTE and s.op is Ops.PERMUTE: return s.src[0].permute(tuple(s.arg[i] for i in x.arg))
    if x.op is Ops.EXPAND and s.op is Ops.EXPAND: return s.src[0].expand(cast(tuple[int, ...], x.shape))
    if x.op is Ops.FLIP and s.op is Ops.FLIP:
        axes = tuple(sorted(set(x.arg) ^ set(s.arg)))
        return s.src[0].flip(axes) if axes else s.src[0]
    if x.op is Ops.SHRINK and s.op is Ops.SHRINK:
        return s.src[0].shrink(tuple((b0 + b1, b0 + e1) for (b0, _), (b1, e1) in zip(s.arg, x.arg)))
    return None


# ---------------------------------------------------------------------------------------------------------------
# integer index expressions: affine canonical form

def affine(u: UOp) -> tuple[tuple[tuple[UOp, int], ...], int]:
    """u as (((atom, coefficient), ...), constant): a sum of atoms (RANGEs, loads, divisions...) times integers.
    Kept on the nodes, and computed for the sums below first without recursion (uop.memo_bottom_up): an index
    can be a sum as long as the traced program."""
    return memo_bottom_up(u, affine, _affine_of, _affine_sources)


def _affine_sources(u: UOp) -> tuple[UOp, ...]:
    """The sources whose affine forms u's is made of."""
    if u.op in (Ops.ADD, Ops.SUB, Ops.NEG): return u.src
    if u.op is Ops.MUL:
        if u.src[1].op is Ops.CONST: return u.src[:1]
        if u.src[0].op is Ops.CONST: return u.src[1:]
    return ()


def _affine_of(u: UOp) -> tuple[tuple[tuple[UOp, int], ...], int]:
    if u.op is Ops.CONST: return ((), int(u.arg))
    if u.op in (Ops.ADD, Ops.SUB):
        ta, ca = memo_get(u.src[0], affine)
        tb, cb = memo_get(u.src[1], affine)
        sign = 1 if u.op is Ops.ADD else -1
        return _merge(ta, tb, sign), ca + sign * cb
    if u.op is Ops.MUL:
        for s, o in ((u.src[0], u.src[1]), (u.src[1], u.src[0])):
            if o.op is Ops.CONST:
                t, c = memo_get(s, affine)
                k = int(o.arg)
                return tuple((a, m * k) for a, m in t if m * k), c * k
    if u.op is Ops.NEG:
        t, c = memo_get(u.src[0], affine)
        return tuple((a, -m) for a, m in t), -c
    return ((u, 1),), 0


def _merge(ta, tb, sign):
    d = dict(ta)
    for a, m in tb: d[a] = d.get(a, 0) + sign * m
    return tuple((a, m) for a, m in d.items() if m)


def _order_key(u: UOp) -> tuple:
    """A deterministic sort key for the atoms of an affine sum: loops by number first, then constants,
    then other nodes by a digest of their structure. Flat, and computed without recursion (uop.memo_bottom_up):
    index expressions can be hundreds of operations deep (np.gcd's steps), too deep for nested keys (recursion in
    building them and in comparing them)."""
    return memo_bottom_up(u, _order_key, _order_key_of, lambda x: () if x.op in _LEAF_KEYS else x.src)


def _order_key_of(x: UOp) -> tuple:
    if x.op in _LEAF_KEYS: return (_LEAF_KEYS[x.op], repr(x.arg) if x.op is Ops.CONST else x.arg[0])
    h = hashlib.blake2b(repr((x.op.value, x.arg)).encode(), digest_size=16)
    for s in x.src: h.update(repr(memo_get(s, _order_key)).encode())
    return (3, x.op.value, h.hexdigest())


_LEAF_KEYS = {Ops.RANGE: 0, Ops.CONST: 1}


def from_affine(terms, const: int, dtype: DType = dtypes.index) -> UOp:
    """Build the canonical node for an affine sum: atoms ordered outer loop first, constant last. Recombines
    (x//c)*c + x%c into x, the shape reshapes of contiguous data leave behind."""
    d: dict[UOp, int] = {}
    for a, m in terms: d[a] = d.get(a, 0) + m
    d = {a: m for a, m in d.items() if m}
    changed = True
    while changed:
        changed = False
        for a, m in list(d.items()):
            if a.op is Ops.IMOD and a.src[1].op is Ops.CONST and a in d:
                c = a.src[1].arg
                q = UOp(Ops.IDIV, a.dtype, a.src)
                if d.get(q) == m * c and a.src[0].vmin >= 0:
                    del d[a], d[q]
                    t, k = affine(a.src[0])
                    for ta, tm in t: d[ta] = d.get(ta, 0) + tm * m
                    const += k * m
                    d = {x: y for x, y in d.items() if y}
                    changed = True
                    break
    out = None
    for a, m in sorted(d.items(), key=lambda t: _order_key(t[0])):
        term = a if m == 1 else UOp(Ops.MUL, dtype, (a, UOp.const(dtype, m)))
        out = term if out is None else UOp(Ops.ADD, dtype, (out, term))
    const = cast_scalar(const, dtype)
    if out is None: return UOp.const(dtype, const)
    return out if const == 0 else UOp(Ops.ADD, dtype, (out, UOp.const(dtype, const)))


def add(a: UOp, b: UOp | int) -> UOp:
    b = b if isinstance(b, UOp) else UOp.const(a.dtype, b)
    ta, ca = affine(a)
    tb, cb = affine(b)
    return from_affine(_merge(ta, tb, 1), ca + cb, a.dtype)


def mul(a: UOp, k: int) -> UOp:
    t, c = affine(a)
    return from_affine(tuple((x, m * k) for x, m in t), c * k, a.dtype)


def _exact(terms, k: int, dtype) -> bool:
    """Whether the affine form (terms, k) of a value is its value: the form's whole range fits the dtype, so no
    operation of it wrapped around. (+, - and * are exact modulo 2**bits anyway, but // and % of a wrapped value
    are not what the form says: (x * 2) // 2 of a uint8 x >= 128 is not x.)"""
    lo = hi = k
    for x, m in terms:
        a, b = x.vmin * m, x.vmax * m
        lo, hi = lo + min(a, b), hi + max(a, b)
    return dtype.min <= lo and hi <= dtype.max


def idiv(a: UOp, c: int) -> UOp:
    """a // c for c > 0, simplified. Exact for a >= 0; where a may be negative (only inside a padding
    region whose loads are masked) the division truncates like C."""
    if c == 1: return a
    if a.op is Ops.CONST: return UOp.const(a.dtype, int(a.arg) // c if a.arg >= 0 else -(-int(a.arg) // c))
    if a.vmin >= 0:
        if a.vmax < c: return UOp.const(a.dtype, 0)
        terms, k = affine(a)
        if not _exact(terms, k, a.dtype): return UOp(Ops.IDIV, a.dtype, (a, UOp.const(a.dtype, c)))
        q_terms = [(x, m // c) for x, m in terms if m % c == 0]
        r_terms = [(x, m) for x, m in terms if m % c != 0]
        q_const, r_const = divmod(k, c)
        rest = from_affine(r_terms, r_const, a.dtype)
        if rest.vmin >= 0 and all(x.vmin >= 0 and m > 0 for x, m in q_terms):
            if rest.vmax < c: return from_affine(q_terms, q_const, a.dtype)
            g = math.gcd(c, *(m for _, m in r_terms), r_const) if r_terms else c
            if g > 1:   # (4i + 2j) // 8 == (2i + j) // 4
                rest = from_affine([(x, m // g) for x, m in r_terms], r_const // g, a.dtype)
                return add(from_affine(q_terms, q_const, a.dtype), idiv(rest, c // g))
            if q_terms: return add(from_affine(q_terms, q_const, a.dtype), idiv(rest, c))
        if a.op is Ops.IDIV and a.src[1].op is Ops.CONST and a.src[0].vmin >= 0:
            return idiv(a.src[0], a.src[1].arg * c)
        if a.op is Ops.IMOD and a.src[1].op is Ops.CONST and a.src[1].arg % c == 0 and a.src[0].vmin >= 0:
            return imod(idiv(a.src[0], c), a.src[1].arg // c)
    return UOp(Ops.IDIV, a.dtype, (a, UOp.const(a.dtype, c)))


def imod(a: UOp, c: int) -> UOp:
    """a % c for c > 0, simplified; the same sign caveat as `idiv`."""
    if c == 1: return UOp.const(a.dtype, 0)
    if a.op is Ops.CONST: return UOp.const(a.dtype, int(a.arg) % c if a.arg >= 0 else -(-int(a.arg) % c))
    if a.vmin >= 0:
        if a.vmax < c: return a
        terms, k = affine(a)
        if not _exact(terms, k, a.dtype): return UOp(Ops.IMOD, a.dtype, (a, UOp.const(a.dtype, c)))
        # drop the terms that are multiples of c, as idiv splits them off, and keep the others as they are: then
        # x // c and x % c stay a matching pair, and (x // c) * c + x % c recombines into x
        r_terms = [(x, m) for x, m in terms if m % c != 0]
        rest = from_affine(r_terms, k % c, a.dtype)
        if rest.vmin >= 0:
            if rest.vmax < c: return rest
            if rest is not a: return UOp(Ops.IMOD, a.dtype, (rest, UOp.const(a.dtype, c)))
        if a.op is Ops.IMOD and a.src[1].op is Ops.CONST and a.src[1].arg % c == 0: return imod(a.src[0], c)
    return UOp(Ops.IMOD, a.dtype, (a, UOp.const(a.dtype, c)))


def _truncation_compare(x: UOp) -> UOp | None:
    """A comparison of a float's conversion to an integer with an integer constant, as a comparison of the float:
    trunc(y) < k is y < k for k > 0 and y <= k - 1 for k <= 0 (exact for every y the conversion is defined for;
    for any other, NaN or out of range, the conversion has no value: numfn guards it where a program can see it).
    The conversion itself then often goes, and the compare vectorizes where the conversion to 64-bit integers
    does not (AVX2 has none): the bounds check of `counts[int(v)] += 1` over a float array. A WHERE choosing
    between the conversion and a constant (the guard) takes the comparison into its branches."""
    if x.op not in (Ops.CMPLT, Ops.CMPLE): return None
    a, b = x.src
    flipped = a.op is Ops.CONST
    conv, c = (b, a) if flipped else (a, b)
    if c.op is not Ops.CONST or not c.dtype.is_int: return None
    if conv.op is Ops.WHERE and (conv.src[2].op is Ops.CONST) != (conv.src[1].op is Ops.CONST):
        if not any(s.op is Ops.CAST and s.src[0].dtype.is_float for s in conv.src[1:]): return None
        sides = tuple(UOp(x.op, x.dtype, (c, s) if flipped else (s, c)) for s in conv.src[1:])
        return UOp(Ops.WHERE, x.dtype, (conv.src[0],) + sides)   # (the rewrite goes on into the sides)
    if conv.op is not Ops.CAST or not conv.src[0].dtype.is_float or not conv.dtype.is_int: return None
    y, k = conv.src[0], int(c.arg)
    # as trunc(y) < k: k after (x < c), (x <= c); (c < x) is not trunc(y) < c + 1, (c <= x) not trunc(y) < c
    k = k + 1 if (x.op is Ops.CMPLE) != flipped else k
    bound = k if k > 0 else k - 1
    if not -(1 << 53) < bound < (1 << 53) or cast_scalar(bound, y.dtype) != bound: return None   # (not exact)
    f = UOp.const(y.dtype, float(bound)) if y.shape is None else UOp.const_like(y.dtype, float(bound), y.shape)
    below = UOp(Ops.CMPLT, x.dtype, (y, f)) if k > 0 else UOp(Ops.CMPLE, x.dtype, (y, f))
    if not flipped: return below
    return UOp(Ops.CMPLE, x.dtype, (f, y)) if k > 0 else UOp(Ops.CMPLT, x.dtype, (f, y))   # not below


def _canonical_int(x: UOp) -> UOp | None:
    if x.op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG):
        if x.op is Ops.MUL and not (x.src[0].op is Ops.CONST or x.src[1].op is Ops.CONST): return None
        t, c = affine(x)
        return from_affine(t, c, x.dtype)
    if x.op in (Ops.IDIV, Ops.IMOD) and x.src[1].op is Ops.CONST and x.src[1].arg > 0:
        return (idiv if x.op is Ops.IDIV else imod)(x.src[0], x.src[1].arg)
    if x.op in (Ops.CMPLT, Ops.CMPLE) and x.src[0].dtype.is_int:
        lo, hi = x.bounds
        if lo == hi: return UOp.const(dtypes.bool, lo)
    return None


def _scalar_index_rules(x: UOp) -> UOp | None:
    # only loop-level scalars: tensor-level integer math keeps its shape and is folded by _fold
    if x.shape is not None and x.shape != (): return None
    if not x.dtype.is_int and x.op not in (Ops.CMPLT, Ops.CMPLE): return None
    return _canonical_int(x)


def constant_branch(x: UOp) -> UOp | None:
    """A result of a branch whose index is a constant (a condition that can never, or always, hold: `(x > 0).sum()
    >= 2` on a 0-d x): the chosen branch's value, its placeholders bound to the branch's operands and captures."""
    node = x.src[0]
    if node.op is not Ops.LOOP or getattr(node.arg, "kind", None) != "cond" or node.src[0].op is not Ops.CONST:
        return None
    region = node.arg
    body = region.bodies[min(max(int(node.src[0].arg), 0), len(region.bodies) - 1)]
    carries = {u: node.src[1 + u.arg[1]] for u in body.toposort() if u.op is Ops.CARRY and u.arg[0] == region.tag}
    return substitute(body.src[x.arg], carries)


# a region's sub-graph is scheduled with its placeholders bound to the LOOP's sources, constants among them: a
# branch inside it whose index is such a constant is folded there (numfn.schedule.create_schedule)
constant_branches = PatternMatcher([(UPat(Ops.RESULT, name="x"), constant_branch)])

symbolic = PatternMatcher([
    (UPat(Ops.RESULT, name="x"), constant_branch),
    (UPat(ELEMENTWISE, name="x"), _fold),
    (UPat(ELEMENTWISE, name="x"), _identities),
    (UPat(ELEMENTWISE, name="x"), _scalar_index_rules),
    (UPat((Ops.CMPLT, Ops.CMPLE), name="x"), _truncation_compare),
    (UPat(MOVEMENT, name="x"), _fold_views),
])

__all__ = ["symbolic", "constant_branches", "exec_alu", "const_value", "is_const", "add", "mul", "idiv", "imod", "affine", "from_affine",
           "ALU", "COMMUTATIVE"]
