"""The IR: one immutable, hash-consed node type (UOp), the op set, pattern rewriting and a readable printer.

The same node type carries every level of the compiler; the ops used separate the levels:
  tensor graph   PARAM / BUFFER / CONST / IOTA sources, movement ops, ALU ops, GATHER, REDUCE_AXIS, SCAN,
                 CONTIGUOUS, EXTERN / RESULT (calls of native routines)
  kernels        SINK of STORE(BUFFER, value) over a tensor graph whose leaves are BUFFERs
  loop programs  RANGE, LOAD, STORE, REDUCE (then DEFINE_ACC / ASSIGN / END after linearization)
"""
from __future__ import annotations

import enum
import inspect
import itertools
import math
import time
import weakref
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Iterable

from numfn import debug, locks
from numfn.dtype import DType, dtypes


class Ops(enum.Enum):
    # sources
    PARAM = enum.auto()        # a function input: arg = (slot, shape)
    BUFFER = enum.auto()       # memory with a category: arg = Buffer
    CONST = enum.auto()        # a scalar constant: arg = Python value, shape ()
    IOTA = enum.auto()         # 0, 1, ..., n-1 as an int64 tensor of shape (n,): arg = n
    EMPTY = enum.auto()        # memory whose values do not matter (every element is written before it is read)
    # movement: views of their source, no data moves
    RESHAPE = enum.auto()      # arg = new shape
    PERMUTE = enum.auto()      # arg = axis order
    EXPAND = enum.auto()       # arg = new shape (size-1 axes broadcast)
    PAD = enum.auto()          # arg = ((before, after), ...), padding with zeros
    SHRINK = enum.auto()       # arg = ((start, end), ...)
    FLIP = enum.auto()         # arg = axes reversed
    # unary
    NEG = enum.auto(); NOT = enum.auto(); ABS = enum.auto(); SQRT = enum.auto()  # noqa: E702
    EXP = enum.auto(); EXP2 = enum.auto(); LOG = enum.auto(); LOG2 = enum.auto()  # noqa: E702
    SIN = enum.auto(); COS = enum.auto(); TAN = enum.auto(); TANH = enum.auto()  # noqa: E702
    FLOOR = enum.auto(); CEIL = enum.auto(); TRUNC = enum.auto()  # noqa: E702
    # more of NumPy's float functions (each has a libm fallback and a polynomial form in codegen/transcendental.py)
    ASIN = enum.auto(); ACOS = enum.auto(); ATAN = enum.auto(); SINH = enum.auto(); COSH = enum.auto()  # noqa: E702
    ASINH = enum.auto(); ACOSH = enum.auto(); ATANH = enum.auto(); EXPM1 = enum.auto()  # noqa: E702
    LOG1P = enum.auto(); LOG10 = enum.auto(); CBRT = enum.auto(); RINT = enum.auto()  # noqa: E702
    # binary (NumPy semantics: FLOORDIV/MOD round towards -inf, integer division by zero gives 0)
    ADD = enum.auto(); SUB = enum.auto(); MUL = enum.auto(); FDIV = enum.auto()  # noqa: E702
    FLOORDIV = enum.auto(); MOD = enum.auto(); POW = enum.auto()  # noqa: E702
    MAX = enum.auto(); MIN = enum.auto()  # noqa: E702
    CMPLT = enum.auto(); CMPLE = enum.auto(); CMPEQ = enum.auto(); CMPNE = enum.auto()  # noqa: E702
    AND = enum.auto(); OR = enum.auto(); XOR = enum.auto(); SHL = enum.auto(); SHR = enum.auto()  # noqa: E702
    ATAN2 = enum.auto(); HYPOT = enum.auto()  # noqa: E702
    # the greatest common divisor of two unsigned integers (gcd(0, 0) = 0): one op, whose loop the renderers call as a
    # helper function (binary GCD), so that np.gcd and np.lcm compile in constant time at every width
    GCD = enum.auto()
    # complex numbers (tensor level only, rewritten into their parts by codegen/complex.py): COMPLEX(re, im) makes a
    # complex value of two reals, IMAG(z) is its imaginary part (its real part is CAST(z) to the component type,
    # NumPy's cast); every other ALU op on complex values means what NumPy's ufunc does for complex numbers
    COMPLEX = enum.auto(); IMAG = enum.auto()  # noqa: E702
    # binary ops of the machine, produced by codegen only: C semantics (truncating, divisor never 0 or -1)
    IDIV = enum.auto(); IMOD = enum.auto(); FMOD = enum.auto()  # noqa: E702
    # ternary
    WHERE = enum.auto()
    FMA = enum.auto()          # a * b + c rounded once (floats): complex products as NumPy computes them
    # conversions
    CAST = enum.auto(); BITCAST = enum.auto()  # noqa: E702
    # GATHER(x, i_0, ..., i_{n-1}): x[i_0[o], ..., i_{n-1}[o]] at every position o; one int64 index tensor per axis of
    # x, all of the result's shape and within x's bounds (the tracer clamps or checks them first)
    GATHER = enum.auto()
    # SCATTER(old, value, i_0, ..., i_{n-1}): old with old[i_0[o], ..., i_{n-1}[o]] = value[o] at every position o of
    # value (indices of value's shape, within old's bounds), in row-major order of o, so the last write wins. arg =
    # (combine, injective, gated): combine (ADD, MUL, MAX, MIN or None) accumulates into the old value instead
    # (ufunc.at); injective says no two positions write the same element; gated says a last source, a bool tensor of
    # value's shape, says which positions write at all. It is a new version of old's memory: the scheduler writes it
    # in place where nothing reads the old version afterwards.
    SCATTER = enum.auto()
    # reductions over a tensor: arg = (op, axes) keeping reduced axes as size 1; SCAN: arg = (op, axis), the running
    # left fold ((x0 op x1) op x2) ... along the axis for any binary ALU op
    REDUCE_AXIS = enum.auto(); SCAN = enum.auto()  # noqa: E702
    # program structure
    CONTIGUOUS = enum.auto()   # materialize the source in a fresh row-major buffer
    SINK = enum.auto()         # groups several results: a function's outputs, a kernel's stores
    # a native routine numfn does not generate (BLAS, LAPACK): src = its inputs, arg = numfn.extern.ExternCall; its
    # value is the tuple of the routine's results, RESULT(extern, arg=i) is result i (see numfn/extern.py)
    EXTERN = enum.auto(); RESULT = enum.auto()  # noqa: E702
    # LOOP(*state, *captures): a loop or a branch (arg = numfn.trace.control.Region, whose sub-graphs read CARRY(tag, k,
    # shape) placeholders); its value is the tuple of the region's results, RESULT(loop, k) is result k
    LOOP = enum.auto(); CARRY = enum.auto()  # noqa: E702
    CALL = enum.auto()         # src = (body SINK, *argument BUFFERs): the body with PARAMs bound to buffers
    STORE = enum.auto()        # kernel level: (BUFFER, value); loop level: (BUFFER, index, value[, gate])
    LOAD = enum.auto()         # loop level: (BUFFER, index)
    # loops
    RANGE = enum.auto()        # a loop counter 0..src[0]-1, arg = (id, kind)
    REDUCE = enum.auto()       # value src[0] reduced over the RANGEs src[1:], arg = op
    DEFINE_ACC = enum.auto()   # an accumulator initialised to arg[0] inside the loops in src
    ASSIGN = enum.auto()       # acc = arg(acc, value): src = (acc, value, *reduce ranges)
    END = enum.auto()          # closes the loop src[0]


UNARY = frozenset({Ops.NEG, Ops.NOT, Ops.ABS, Ops.SQRT, Ops.EXP, Ops.EXP2, Ops.LOG, Ops.LOG2, Ops.SIN, Ops.COS,
                   Ops.TAN, Ops.TANH, Ops.FLOOR, Ops.CEIL, Ops.TRUNC, Ops.ASIN, Ops.ACOS, Ops.ATAN, Ops.SINH,
                   Ops.COSH, Ops.ASINH, Ops.ACOSH, Ops.ATANH, Ops.EXPM1, Ops.LOG1P, Ops.LOG10, Ops.CBRT, Ops.RINT,
                   Ops.IMAG})
BINARY = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.FLOORDIV, Ops.MOD, Ops.POW, Ops.MAX, Ops.MIN,
                    Ops.CMPLT, Ops.CMPLE, Ops.CMPEQ, Ops.CMPNE, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR,
                    Ops.IDIV, Ops.IMOD, Ops.FMOD, Ops.ATAN2, Ops.HYPOT, Ops.COMPLEX, Ops.GCD})
TERNARY = frozenset({Ops.WHERE, Ops.FMA})
ALU = UNARY | BINARY | TERNARY
ELEMENTWISE = ALU | {Ops.CAST, Ops.BITCAST}
COMPARISON = frozenset({Ops.CMPLT, Ops.CMPLE, Ops.CMPEQ, Ops.CMPNE})
COMMUTATIVE = frozenset({Ops.ADD, Ops.MUL, Ops.MAX, Ops.MIN, Ops.CMPEQ, Ops.CMPNE, Ops.AND, Ops.OR, Ops.XOR,
                         Ops.GCD})
MOVEMENT = frozenset({Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.FLIP})
TRANSCENDENTAL = frozenset({Ops.EXP, Ops.EXP2, Ops.LOG, Ops.LOG2, Ops.SIN, Ops.COS, Ops.TAN, Ops.TANH, Ops.POW,
                            Ops.ASIN, Ops.ACOS, Ops.ATAN, Ops.SINH, Ops.COSH, Ops.ASINH, Ops.ACOSH, Ops.ATANH,
                            Ops.EXPM1, Ops.LOG1P, Ops.LOG10, Ops.CBRT, Ops.ATAN2, Ops.HYPOT})


@dataclass(frozen=True)
class Buffer:
    """What a BUFFER node stands for. `category` is input, output, constant or intermediate; `number` counts
    within the category. Constant buffers carry their data (a read-only NumPy array) and its content hash."""
    category: str
    number: int
    shape: tuple[int, ...]
    data: Any = None
    data_hash: str = ""

    def __hash__(self) -> int:
        return hash((self.category, self.number, self.shape, self.data_hash))

    def __eq__(self, other) -> bool:
        return isinstance(other, Buffer) and (self.category, self.number, self.shape, self.data_hash) == \
            (other.category, other.number, other.shape, other.data_hash)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __repr__(self) -> str:
        return f"{self.category}{self.number}"


_UNSET = object()


def _argkey(arg):
    # floats compare by bits: CONST 0.0 and -0.0 must stay two nodes, and NaN must equal itself
    if isinstance(arg, float): return (float, arg.hex())
    if isinstance(arg, complex): return (complex, arg.real.hex(), arg.imag.hex())
    if isinstance(arg, tuple): return tuple(_argkey(a) for a in arg)
    return arg


_INTERN_LOCK = locks.rlock()   # reentrant: a collection inside may run code that makes nodes


class UOp:
    """One IR node. Hash-consed: building the same (op, dtype, src, arg) twice returns the same object, so
    identity is structural equality and graphs are DAGs with sharing."""
    __slots__ = ("op", "dtype", "src", "arg", "_shape", "_bounds", "_memo", "__weakref__")
    _interned: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
    op: Ops
    dtype: DType
    src: tuple[UOp, ...]
    arg: Any
    # caches filled by name (_fill_bottom_up): _shape is tuple[int, ...] | None once inferred, _UNSET before;
    # _bounds is a (min, max) pair once computed, None before
    _shape: Any
    _bounds: Any
    _memo: dict[Any, Any] | None         # node_cached results, None until the first

    def __new__(cls, op: Ops, dtype: DType = dtypes.void, src: tuple[UOp, ...] = (), arg: Any = None) -> UOp:
        key = (op, dtype, src, _argkey(arg))
        with _INTERN_LOCK:   # threads trace different functions at once: two must never make the same node twice
            found = UOp._interned.get(key)
            if found is not None: return found
            self = object.__new__(cls)
            for name, value in (("op", op), ("dtype", dtype), ("src", src), ("arg", arg), ("_shape", _UNSET),
                                ("_bounds", None), ("_memo", None)):
                object.__setattr__(self, name, value)
            UOp._interned[key] = self
            return self

    def __setattr__(self, name, value):
        raise AttributeError("UOp is immutable")

    def __reduce__(self):
        return (UOp, (self.op, self.dtype, self.src, self.arg))

    def replace(self, op: Ops | None = None, dtype: DType | None = None, src: tuple[UOp, ...] | None = None,
                arg: Any = _UNSET) -> UOp:
        return UOp(self.op if op is None else op, self.dtype if dtype is None else dtype,
                   self.src if src is None else src, self.arg if arg is _UNSET else arg)

    # ---- shapes (tensor-level nodes only; loop-level nodes have shape None) ----
    @property
    def shape(self) -> tuple[int, ...] | None:
        if self._shape is _UNSET: _fill_bottom_up(self, "_shape", _UNSET, _infer_shape)
        return self._shape

    @property
    def size(self) -> int:
        assert self.shape is not None, "size of a loop-level node"
        return math.prod(self.shape)

    # ---- graph walks ----
    def toposort(self) -> list[UOp]:
        """Every node reachable from self, sources before users (iterative: graphs can be deep)."""
        return toposort([self])

    # ---- constructors used by the tracer and the rewrite rules ----
    @staticmethod
    def const(dtype: DType, value) -> UOp:
        return UOp(Ops.CONST, dtype, (), cast_scalar(value, dtype))

    def alu(self, op: Ops, *others: UOp) -> UOp:
        srcs = (self, *others)
        dtype = dtypes.bool if op in COMPARISON else (srcs[-1].dtype if op is Ops.WHERE else self.dtype)
        if op is Ops.IMAG: dtype = self.dtype.component
        if op is Ops.COMPLEX: dtype = dtypes.complex64 if self.dtype is dtypes.float32 else dtypes.complex128
        return UOp(op, dtype, srcs)

    def cast(self, dtype: DType) -> UOp:
        return self if dtype is self.dtype else UOp(Ops.CAST, dtype, (self,))

    @staticmethod
    def iota(n: int) -> UOp:
        """0, 1, ..., n-1 (int64, shape (n,)): computed where it is used, never stored."""
        return UOp(Ops.IOTA, dtypes.int64, (), int(n))

    @staticmethod
    def const_like(dtype: DType, value, shape: tuple[int, ...]) -> UOp:
        """A constant tensor of `shape`: a scalar CONST viewed through RESHAPE and EXPAND."""
        c = UOp.const(dtype, value)
        return c if shape == () else c.reshape((1,) * len(shape)).expand(tuple(shape))

    def reshape(self, shape: tuple[int, ...]) -> UOp:
        return self if shape == self.shape else UOp(Ops.RESHAPE, self.dtype, (self,), tuple(shape))

    def permute(self, order: tuple[int, ...]) -> UOp:
        return self if tuple(order) == tuple(range(len(order))) else UOp(Ops.PERMUTE, self.dtype, (self,), tuple(order))

    def expand(self, shape: tuple[int, ...]) -> UOp:
        return self if shape == self.shape else UOp(Ops.EXPAND, self.dtype, (self,), tuple(shape))

    def pad(self, padding: tuple[tuple[int, int], ...]) -> UOp:
        return self if all(p == (0, 0) for p in padding) else UOp(Ops.PAD, self.dtype, (self,), tuple(padding))

    def shrink(self, bounds: tuple[tuple[int, int], ...]) -> UOp:
        assert self.shape is not None, "shrink of a loop-level node"
        if all(b == (0, s) for b, s in zip(bounds, self.shape)): return self
        return UOp(Ops.SHRINK, self.dtype, (self,), tuple(bounds))

    def flip(self, axes: tuple[int, ...]) -> UOp:
        assert self.shape is not None, "flip of a loop-level node"
        axes = tuple(sorted(a for a in axes if self.shape[a] > 1))
        return self if not axes else UOp(Ops.FLIP, self.dtype, (self,), axes)

    def reduce(self, op: Ops, axes: tuple[int, ...], dtype: DType | None = None) -> UOp:
        return UOp(Ops.REDUCE_AXIS, dtype or self.dtype, (self,), (op, tuple(sorted(axes))))

    # ---- arithmetic sugar for scalar (loop-level) expressions, used by codegen rules ----
    def _lift(self, x) -> UOp:
        return x if isinstance(x, UOp) else UOp.const(self.dtype, x)

    def __add__(self, x): return self.alu(Ops.ADD, self._lift(x))
    def __radd__(self, x): return self._lift(x).alu(Ops.ADD, self)
    def __sub__(self, x): return self.alu(Ops.SUB, self._lift(x))
    def __rsub__(self, x): return self._lift(x).alu(Ops.SUB, self)
    def __mul__(self, x): return self.alu(Ops.MUL, self._lift(x))
    def __rmul__(self, x): return self._lift(x).alu(Ops.MUL, self)
    def __neg__(self): return self.alu(Ops.NEG)
    def __floordiv__(self, x): return self.alu(Ops.IDIV, self._lift(x))
    def __mod__(self, x): return self.alu(Ops.IMOD, self._lift(x))
    def __lt__(self, x): return self.alu(Ops.CMPLT, self._lift(x))
    def __le__(self, x): return self.alu(Ops.CMPLE, self._lift(x))
    def __gt__(self, x): return self._lift(x).alu(Ops.CMPLT, self)
    def __ge__(self, x): return self._lift(x).alu(Ops.CMPLE, self)
    def __and__(self, x): return self.alu(Ops.AND, self._lift(x))
    def __or__(self, x): return self.alu(Ops.OR, self._lift(x))
    def __xor__(self, x): return self.alu(Ops.XOR, self._lift(x))
    def eq(self, x) -> UOp: return self.alu(Ops.CMPEQ, self._lift(x))
    def ne(self, x) -> UOp: return self.alu(Ops.CMPNE, self._lift(x))
    def where(self, a, b) -> UOp:
        a = a if isinstance(a, UOp) else UOp.const(b.dtype, a)
        b = b if isinstance(b, UOp) else UOp.const(a.dtype, b)
        return self.alu(Ops.WHERE, a, b)
    def maximum(self, x) -> UOp: return self.alu(Ops.MAX, self._lift(x))
    def minimum(self, x) -> UOp: return self.alu(Ops.MIN, self._lift(x))
    def bitcast(self, dtype: DType) -> UOp: return UOp(Ops.BITCAST, dtype, (self,))

    __hash__ = object.__hash__   # defining __eq__-like operators above must not change identity semantics
    __eq__ = object.__eq__

    # ---- printing ----
    def __repr__(self) -> str:
        shape = "" if self.shape is None else f"[{','.join(map(str, self.shape))}]"
        return f"<UOp {self.op.name} {self.dtype.name}{shape} arg={_fmt_arg(self)}>"

    def pretty(self) -> str:
        """The graph below this node, one node a line, shared nodes named once (see `format_graph`)."""
        return format_graph([self])

    # ---- value bounds of integer expressions (used by index simplification) ----
    @property
    def bounds(self) -> tuple[Any, Any]:
        if self._bounds is None: _fill_bottom_up(self, "_bounds", None, _bounds)
        return self._bounds

    @property
    def vmin(self): return self.bounds[0]

    @property
    def vmax(self): return self.bounds[1]


def memo_bottom_up(root: UOp, key: Any, compute: Callable[[UOp], Any],
                   sources: Callable[[UOp], tuple[UOp, ...]] = lambda u: u.src) -> Any:
    """compute(root), kept in the node's memo under `key` (as node_cached does), computing it for the nodes
    `sources` names first, without recursion: compute may read its sources' results with `memo_get`. Index and
    value expressions can be as deep as the traced program."""
    stack = [root]
    while stack:
        x = stack[-1]
        if x._memo is not None and key in x._memo:
            stack.pop()
            continue
        missing = [s for s in sources(x) if s._memo is None or key not in s._memo]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        memo = x._memo
        if memo is None:
            memo = {}
            object.__setattr__(x, "_memo", memo)
        memo[key] = compute(x)
    assert root._memo is not None   # filled above
    return root._memo[key]


def memo_get(u: UOp, key: Any) -> Any:
    """What memo_bottom_up kept for `u` under `key`, or None."""
    return None if u._memo is None else u._memo.get(key)


def node_cached(fn: Callable[[UOp], Any]) -> Callable[[UOp], Any]:
    """Memoize a function of one node on the node itself, so results live exactly as long as the node: a cache
    keyed by nodes in a module would keep every graph it ever saw alive (nodes are hash-consed, so equal nodes
    share the result anyway)."""
    def cached(u: UOp) -> Any:
        memo = u._memo
        if memo is None:
            memo = {}
            object.__setattr__(u, "_memo", memo)
        found = memo.get(cached, _UNSET)
        if found is _UNSET: found = memo[cached] = fn(u)
        return found
    cached.__name__, cached.__qualname__, cached.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    cached.__wrapped__ = fn   # type: ignore[attr-defined]
    return cached


def cast_scalar(value, dtype: DType):
    """A Python value converted the way NumPy converts a scalar to `dtype` (wrapping integers)."""
    if dtype.is_bool: return bool(value)
    if dtype.is_complex:
        value = complex(value)
        if dtype.itemsize == 8: return complex(float(_np_float32(value.real)), float(_np_float32(value.imag)))
        return value
    if dtype.is_float:
        value = float(value)
        if dtype.itemsize == 2: return float(_np_float32(value, "float16"))
        return float(_np_float32(value)) if dtype.itemsize == 4 else value
    if isinstance(value, float):
        if not math.isfinite(value): return dtype.min if dtype.kind == "i" else 0
        value = int(value)
    value = int(value)
    bits = dtype.bits
    value &= (1 << bits) - 1
    if dtype.kind == "i" and value >= 1 << (bits - 1): value -= 1 << bits
    return value


def _np_float32(value: float, name: str = "float32"):
    import numpy as np
    with np.errstate(over="ignore"):
        return np.dtype(name).type(value)


def _fill_bottom_up(root: UOp, slot: str, unset: Any, compute: Callable[[UOp], Any]) -> None:
    """Set the cached attribute `slot` of `root` to compute(root), computing it for the sources first: compute may
    read its sources' attribute, and a chain of a hundred thousand nodes must not recurse that deep."""
    stack = [root]
    while stack:
        u = stack[-1]
        if getattr(u, slot) is not unset:
            stack.pop()
            continue
        missing = [s for s in u.src if getattr(s, slot) is unset]
        if missing:
            stack.extend(missing)
            continue
        object.__setattr__(u, slot, compute(u))
        stack.pop()


def _infer_shape(u: UOp) -> tuple[int, ...] | None:
    op = u.op
    if op is Ops.PARAM: return u.arg[1]
    if op is Ops.BUFFER: return u.arg.shape
    if op is Ops.CONST: return ()
    if op is Ops.IOTA: return (u.arg,)
    if op is Ops.EMPTY: return u.arg[0]
    if op in (Ops.RESHAPE, Ops.EXPAND): return u.arg
    if op is Ops.GATHER: return u.src[1].shape
    if op is Ops.RESULT: return u.src[0].arg.results[u.arg][0]
    if op is Ops.CARRY: return u.arg[2]
    if op is Ops.SCATTER: return u.src[0].shape
    if not u.src or u.src[0].shape is None: return None
    s = u.src[0].shape
    if op is Ops.PERMUTE: return tuple(s[i] for i in u.arg)
    if op is Ops.PAD: return tuple(n + b + a for n, (b, a) in zip(s, u.arg))
    if op is Ops.SHRINK: return tuple(e - b for b, e in u.arg)
    if op is Ops.REDUCE_AXIS: return tuple(1 if i in u.arg[1] else n for i, n in enumerate(s))
    if op in ELEMENTWISE or op in (Ops.FLIP, Ops.SCAN, Ops.CONTIGUOUS):
        return u.src[-1].shape if op is Ops.WHERE else s
    return None


def _bounds(u: UOp) -> tuple[Any, Any]:
    """Conservative [min, max] of an integer or bool expression in terms of its RANGE and CONST leaves."""
    dt = u.dtype
    full = (dt.min, dt.max) if (dt.is_int or dt.is_bool) else (-math.inf, math.inf)
    op = u.op
    if op is Ops.CONST: return (u.arg, u.arg)
    if op is Ops.RANGE: return (0, max(u.src[0].vmax - 1, 0))
    if op is Ops.IOTA: return (0, max(u.arg - 1, 0))
    if op is Ops.CARRY and len(u.arg) > 3 and u.arg[3] is not None: return u.arg[3]   # a loop index's range
    if op is Ops.BUFFER and u.arg.data is not None and u.arg.size and (dt.is_int or dt.is_bool):   # captured data
        return (u.arg.data.min().item(), u.arg.data.max().item())
    if op in (Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.FLIP, Ops.SHRINK): return u.src[0].bounds
    if op is Ops.PAD and (dt.is_int or dt.is_bool):   # padding adds zeros
        lo, hi = u.src[0].bounds
        return (min(lo, 0), max(hi, 0))
    if not (dt.is_int or dt.is_bool): return full
    if op is Ops.ADD:
        (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
        return _clip((a0 + b0, a1 + b1), full)
    if op is Ops.SUB:
        (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
        return _clip((a0 - b1, a1 - b0), full)
    if op is Ops.MUL:
        (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
        c = (a0 * b0, a0 * b1, a1 * b0, a1 * b1)
        return _clip((min(c), max(c)), full)
    if op is Ops.NEG:
        a0, a1 = u.src[0].bounds
        return _clip((-a1, -a0), full)
    if op is Ops.MOD and const_divisor(u) is not None and const_divisor(u) > 0:   # NumPy's: the divisor's sign
        return (0, const_divisor(u) - 1)
    if op is Ops.FLOORDIV and const_divisor(u) is not None and const_divisor(u) > 0:
        (a0, a1), c = u.src[0].bounds, const_divisor(u)
        return (a0 // c, a1 // c) if a0 != dt.min and a1 != dt.max else full
    if op is Ops.IDIV and u.src[1].op is Ops.CONST and u.src[1].arg > 0:
        (a0, a1), c = u.src[0].bounds, u.src[1].arg
        return (_tdiv(a0, c), _tdiv(a1, c))
    if op is Ops.IMOD and u.src[1].op is Ops.CONST and u.src[1].arg > 0:
        (a0, a1), c = u.src[0].bounds, u.src[1].arg
        if a0 >= 0: return (0, min(a1, c - 1))
        return (-(c - 1), c - 1)
    if op is Ops.MAX:
        (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
        return (max(a0, b0), max(a1, b1))
    if op is Ops.MIN:
        (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
        return (min(a0, b0), min(a1, b1))
    if op is Ops.WHERE:
        (a0, a1), (b0, b1) = u.src[1].bounds, u.src[2].bounds
        return (min(a0, b0), max(a1, b1))
    if op is Ops.GCD:   # unsigned operands: a divisor of one (or the other, when one is 0)
        return (0, max(u.src[0].vmax, u.src[1].vmax))
    if op is Ops.CAST and (u.src[0].dtype.is_int or u.src[0].dtype.is_bool):
        a0, a1 = u.src[0].bounds
        if dt.min <= a0 and a1 <= dt.max: return (a0, a1)
    if op is Ops.CMPLT:
        (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
        if a1 < b0: return (True, True)
        if a0 >= b1: return (False, False)
    if op is Ops.CMPLE:
        (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
        if a1 <= b0: return (True, True)
        if a0 > b1: return (False, False)
    if op is Ops.AND and dt.is_bool:
        (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
        return (a0 and b0, a1 and b1)
    if op is Ops.OR and dt.is_bool:
        (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
        return (a0 or b0, a1 or b1)
    return full


def const_divisor(u: UOp):
    """The divisor of a tensor-level division or modulo when it is one constant (seen through broadcasting)."""
    d = u.src[1]
    while d.op in (Ops.RESHAPE, Ops.EXPAND): d = d.src[0]
    return d.arg if d.op is Ops.CONST and d.dtype.is_int else None


def _clip(b, full):
    return (max(b[0], full[0]), min(b[1], full[1])) if b[0] >= full[0] and b[1] <= full[1] else full


def _tdiv(a: int, c: int) -> int:
    q = abs(a) // c
    return q if a >= 0 else -q


def graph_fingerprint(roots: Iterable[UOp]) -> str:
    """A hash of everything in the graph: ops, dtypes, structure and arguments, constants by content. Equal
    fingerprints mean equal graphs."""
    import hashlib
    index: dict[UOp, int] = {}
    h = hashlib.sha256()
    for u in toposort(roots):
        arg = u.arg
        if isinstance(arg, Buffer): arg = (arg.category, arg.number, arg.shape, arg.data_hash)
        h.update(f"{u.op.name}|{u.dtype.name}|{[index[s] for s in u.src]}|{_argkey(arg)!r}\n".encode())
        index[u] = len(index)
    return h.hexdigest()


def toposort(roots: Iterable[UOp]) -> list[UOp]:
    """Every node reachable from `roots`, each after its sources, in a deterministic order."""
    order: list[UOp] = []
    seen: set[UOp] = set()
    for root in roots:
        if root in seen: continue
        stack = [(root, iter(root.src))]
        seen.add(root)
        while stack:
            node, children = stack[-1]
            for child in children:
                if child not in seen:
                    seen.add(child)
                    stack.append((child, iter(child.src)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


# ---------------------------------------------------------------------------------------------------------------
# walking and rebuilding graphs: the one walker every pass that rebuilds a graph uses

def fold(roots: Iterable[UOp], visit: Callable[[UOp, tuple], Any]) -> dict[UOp, Any]:
    """{node: visit(node, results of its sources)} for every node reachable from `roots`, sources first.
    Iterative (graphs of any depth), and each shared node is visited once."""
    results: dict[UOp, Any] = {}
    for u in toposort(roots):
        results[u] = visit(u, tuple(results[s] for s in u.src))
    return results


def rebuild(root: UOp, visit: Callable[[UOp, tuple[UOp, ...]], UOp | None]) -> UOp:
    """The graph below `root` rebuilt bottom-up: each node, given its sources' new nodes, becomes
    `visit(node, new_sources)`, or, when that returns None, the node itself over the new sources (the same object
    when no source changed, so an unchanged graph comes back as itself)."""
    def step(u: UOp, src: tuple[UOp, ...]) -> UOp:
        new = visit(u, src)
        if new is not None: return new
        return u if src == u.src else UOp(u.op, u.dtype, src, u.arg)
    return fold([root], step)[root]


def substitute(root: UOp, mapping: dict[UOp, UOp]) -> UOp:
    """`root` with every node in `mapping` replaced by its value (the replacements are taken as they are), and
    everything above them rebuilt."""
    return rebuild(root, lambda u, src: mapping.get(u))


# ---------------------------------------------------------------------------------------------------------------
# patterns

class UPat:
    """A pattern over UOps. `op`/`dtype` may be one value or a set; `src` is None (anything), a tuple (in order),
    a list (in any order: for commutative ops) or a single UPat every source must match; `arg` compared by
    equality unless omitted; `name` binds the matched node for the rewrite function."""
    __slots__ = ("ops", "dtypes", "src", "arg", "name", "allow_any_len")
    _NOARG = object()

    def __init__(self, op: Ops | Iterable[Ops] | None = None, dtype: DType | Iterable[DType] | None = None,
                 src: tuple | list | UPat | None = None, arg: Any = _NOARG, name: str | None = None,
                 allow_any_len: bool = False):
        self.ops = None if op is None else (frozenset([op]) if isinstance(op, Ops) else frozenset(op))
        self.dtypes = None if dtype is None else (frozenset([dtype]) if isinstance(dtype, DType) else frozenset(dtype))
        self.src, self.arg, self.name, self.allow_any_len = src, arg, name, allow_any_len

    @staticmethod
    def var(name: str | None = None, dtype=None) -> UPat:
        return UPat(dtype=dtype, name=name)

    @staticmethod
    def cvar(name: str | None = None, dtype=None) -> UPat:
        return UPat(Ops.CONST, dtype=dtype, name=name)

    def match(self, u: UOp, bound: dict) -> list[dict]:
        if self.ops is not None and u.op not in self.ops: return []
        if self.dtypes is not None and u.dtype not in self.dtypes: return []
        if self.arg is not UPat._NOARG and _argkey(self.arg) != _argkey(u.arg): return []
        if self.name is not None:
            if self.name in bound:
                return [bound] if bound[self.name] is u else []
            bound = {**bound, self.name: u}
        if self.src is None: return [bound]
        if isinstance(self.src, UPat):
            results = [bound]
            for s in u.src: results = [r2 for r in results for r2 in self.src.match(s, r)]
            return results
        pats = self.src
        if len(pats) != len(u.src) and not (self.allow_any_len and len(u.src) >= len(pats)): return []
        orders = itertools.permutations(pats) if isinstance(pats, list) else (pats,)
        out: list[dict] = []
        for order in orders:
            results = [bound]
            for p, s in zip(order, u.src):
                results = [r2 for r in results for r2 in p.match(s, r)]
                if not results: break
            out.extend(results)
        return out


class PatternMatcher:
    """An ordered list of (UPat, fn) rules. `rewrite(u)` returns the first non-None fn(**bindings), else None.
    A rule's fn may also take `ctx`, the context object handed to graph_rewrite."""

    def __init__(self, rules: list[tuple[UPat, Callable]]):
        self.rules = rules
        by_op: dict[Ops, list] = {}
        any_op = []
        for i, (pat, fn) in enumerate(rules):
            entry = (i, pat, fn, "ctx" in inspect.signature(fn).parameters)
            if pat.ops is None: any_op.append(entry)
            else:
                for op in pat.ops: by_op.setdefault(op, []).append(entry)
        self._by_op = {op: [e[1:] for e in sorted(by_op.get(op, []) + any_op, key=lambda e: e[0])] for op in Ops}

    def __add__(self, other: PatternMatcher) -> PatternMatcher:
        return PatternMatcher(self.rules + other.rules)

    def rewrite(self, u: UOp, ctx: Any = None) -> UOp | None:
        for pat, fn, wants_ctx in self._by_op[u.op]:
            for b in pat.match(u, {}):
                ret = fn(ctx=ctx, **b) if wants_ctx else fn(**b)
                if ret is not None and ret is not u: return ret
        return None


def graph_rewrite(root: UOp, pm: PatternMatcher, ctx: Any = None, name: str | None = None) -> UOp:
    """Rewrite the graph bottom-up until no rule of `pm` applies anywhere (sources first, then the node; a
    replacement is itself rewritten). Iterative, so graphs of any depth are fine. With `name`, DEBUG=5 logs the
    pass: its name, how many rewrites applied, the node counts before and after, and the time it took."""
    if name is None or debug.level() < 5: return _graph_rewrite(root, pm, ctx)[0]
    t0 = time.perf_counter()
    before = len(toposort([root]))
    out, rewrites = _graph_rewrite(root, pm, ctx)
    debug.log(5, f"graph_rewrite {name}: {rewrites} rewrites, {before} -> {len(toposort([out]))} nodes in "
                 f"{(time.perf_counter() - t0) * 1e3:.2f} ms")
    return out


def _graph_rewrite(root: UOp, pm: PatternMatcher, ctx: Any) -> tuple[UOp, int]:
    done: dict[UOp, UOp] = {}
    stack: list[tuple[UOp, int, Any]] = [(root, 0, None)]
    budget = 100_000 + 100 * len(toposort([root]))   # rules that never converge must fail, not eat all memory
    rewrites = 0
    while stack:
        node, state, extra = stack.pop()
        if node in done: continue
        if state == 0:  # first visit: rewrite sources first
            stack.append((node, 1, None))
            stack.extend((s, 0, None) for s in reversed(node.src) if s not in done)
        elif state == 1:  # sources done: rebuild and try the rules
            new_src = tuple(done[s] for s in node.src)
            rebuilt = node if new_src == node.src else UOp(node.op, node.dtype, new_src, node.arg)
            replacement = pm.rewrite(rebuilt, ctx)
            if replacement is not None: rewrites += 1
            if replacement is None:
                if rebuilt is not node and rebuilt in done: done[node] = done[rebuilt]
                else:
                    done[node] = rebuilt
                    done.setdefault(rebuilt, rebuilt)
            elif replacement in done:
                done[node] = done[replacement]
            else:
                budget -= 1
                if budget < 0:
                    raise RuntimeError(f"graph_rewrite does not converge: rules keep rewriting {rebuilt!r}")
                stack.append((node, 2, replacement))
                stack.append((replacement, 0, None))
        else:  # the replacement has been rewritten
            done[node] = done[extra]
    return done[root], rewrites


# ---------------------------------------------------------------------------------------------------------------
# printing

def _fmt_arg(u: UOp) -> str:
    a = u.arg
    if u.op is Ops.PARAM: return f"slot={a[0]}"
    if u.op is Ops.BUFFER: return repr(a)
    if u.op in (Ops.REDUCE_AXIS, Ops.SCAN): return f"{a[0].name}, axis={a[1]}"
    if u.op is Ops.REDUCE: return a.name
    if u.op is Ops.RANGE: return f"r{a[0]}" + (f" {a[1]}" if a[1] != "loop" else "")
    if u.op is Ops.DEFINE_ACC: return f"init={a[0]!r}"
    if isinstance(a, Ops): return a.name
    return "" if a is None else repr(a)


def _type_str(u: UOp) -> str:
    s = u.shape
    return u.dtype.name if s is None else f"{u.dtype.name}[{','.join(map(str, s))}]"


def format_graph(roots: Iterable[UOp], names: dict[UOp, str] | None = None) -> str:
    """Print a graph like a program: one line per node, in dependency order, each node named once (%n) and
    referred to by name afterwards. Scalar CONSTs are inlined where used."""
    names = {} if names is None else dict(names)
    lines: list[str] = []
    for u in toposort(roots):
        if u in names: continue
        line = format_node(u, names, f"%{len(lines)}")
        if line: lines.append(line)
    return "\n".join(lines)


def format_node(u: UOp, names: dict[UOp, str], name: str) -> str:
    """One line for `u`, naming it `name` in `names` (sources must be named already). Scalar CONSTs get a
    literal as their name and no line."""
    for s in u.src:
        if s not in names and s.op is Ops.CONST: names[s] = f"{s.arg!r}:{s.dtype.name}"
    if u.op is Ops.CONST and u.shape == ():
        names[u] = f"{u.arg!r}:{u.dtype.name}"
        return ""
    names[u] = name
    args = [names[s] for s in u.src]
    arg = _fmt_arg(u)
    if arg: args.append(arg)
    return f"{name:>5} : {_type_str(u):<18} = {u.op.name}({', '.join(args)})"
