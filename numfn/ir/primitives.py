"""The table of primitives: every operation of the IR (`Ops`) and, in one entry per operation, what it means to
each layer of the compiler.

An entry (`Primitive`) declares, here in the IR layer:
  kind        what sort of operation it is (`Kind`: a source, a view, an elementwise unary / binary / ternary ALU
              op, a conversion, indexing, a reduction, program structure, a loop-level node)
  shape       its result's shape from its node (`UOp.shape` reads it; None for loop-level nodes)
  dtype       for ALU ops, its result's dtype from its operands' (`UOp.alu` reads it)
  bounds      its value's conservative [min, max] from its sources' (`UOp.bounds`, used by index
              simplification), or None where nothing better than the dtype's range is known
  numpy       the NumPy ufunc an ALU op computes (tests compare the shape and dtype rules with it)
  libm        the C math library's function computing a float op (the renderers call it: renderer/c.py always,
              renderer/llvm.py where LLVM has no intrinsic for it)
  commutative, transcendental, machine (made by codegen only, never traced), complex (takes complex operands),
  needs       the rules higher layers must register for it (tests/test_primitives.py checks them)

and it has slots the higher layers fill by registering into it (`register`; the layers import this module, never
the other way round):
  lower          codegen/lower.py: the node evaluated at a symbolic index inside a kernel
  decompose      codegen/decompose.py: the rewrites into machine ops (NumPy semantics), for some dtypes or always
  approximate    codegen/transcendental.py: a float function's polynomial form (optional: the renderers' libm
                 call is the fallback)
  render         renderer/c.py and renderer/llvm.py, one rule per backend ("c", "llvm")
  batch          transforms.py (vmap): the node with a leading batch axis
  complex_split  codegen/complex.py: the node on complex values as real parts
  jvp, transpose numfn/autodiff/rules.py: the derivative rules (forward mode, and the transpose of a linear op for
                 reverse mode)

Adding an elementwise operation (say a float function `Ops.SINPI`):
  1. here: the member in `Ops`, and its entry in `_declare`: `_alu(Kind.UNARY, Ops.SINPI, "sinpi", libm=...)` with
     its NumPy name, its C math library function if there is one (both renderers then call it), its flags
     (`transcendental`, `commutative`, `complex` if it takes complex values, `decomposed` if it has no machine form)
     and a bounds rule if index simplification can use one. Its shape and dtype rules, its lowering and its batching
     rule come with its kind (one rule serves every elementwise op);
  2. where `needs` asks for more: without a libm function, a render rule in renderer/c.py (`EXPRESSIONS`) and
     renderer/llvm.py (`ALU_RULES`), or a rewrite in codegen/decompose.py into ops that have them (`decomposed`);
     with `complex`, its arithmetic on parts in codegen/complex.py (`_FUNCTIONS`); optionally a polynomial form in
     codegen/transcendental.py (`_IMPL`). Outside the compiler: the NumPy function in numfn/numpy/ufuncs.py, which
     records the op, and constant folding in ir/symbolic.py (`UFUNCS`);
  3. tests: tests/test_primitives.py checks that the entry has every rule it needs and that its shape and dtype
     rules agree with NumPy's; the op's numerical tests go with the others (tests/test_elementwise.py,
     tests/test_transcendental.py for a polynomial form).
"""
from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from numfn.dtype import DType, dtypes

# The rules here see nodes only through their attributes (op, dtype, src, arg, shape, bounds): numfn.ir.uop builds on
# this module, so its UOp type cannot be named here.
Node = Any


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


class Kind(enum.Enum):
    SOURCE = "source"            # no tensor sources: inputs, memory, constants
    MOVEMENT = "movement"        # a view of its one source: only indices change
    UNARY = "unary"              # elementwise ALU ops (NumPy semantics at the tensor level)
    BINARY = "binary"
    TERNARY = "ternary"
    CONVERSION = "conversion"    # elementwise, to the node's own dtype (CAST, BITCAST)
    INDEXING = "indexing"        # GATHER, SCATTER
    REDUCE = "reduce"            # reductions and scans along axes
    STRUCTURAL = "structural"    # program structure: materialization, groups, calls, loops, native routines
    LOOP_LEVEL = "loop level"    # nodes of lowered kernels


ALU_KINDS = frozenset({Kind.UNARY, Kind.BINARY, Kind.TERNARY})
BACKENDS = ("c", "llvm")         # the renderers: each registers a render rule per op it renders
# the slots higher layers register into (render per backend)
SLOTS = ("lower", "decompose", "approximate", "render", "batch", "complex_split", "jvp", "transpose")

ShapeRule = Callable[[Node], "tuple[int, ...] | None"]
DTypeRule = Callable[[tuple[DType, ...]], DType]
BoundsRule = Callable[[Node, tuple[Any, Any]], "tuple[Any, Any] | None"]


@dataclass(eq=False)
class Primitive:
    """One operation's entry in the table (see the module docstring). The declared fields are fixed here; the
    slots below them start empty and are filled by `register` from the layers that own the rules."""
    op: Ops
    kind: Kind
    shape: ShapeRule
    dtype: DTypeRule | None = None
    bounds: BoundsRule | None = None
    numpy: str | None = None
    libm: str | None = None
    commutative: bool = False
    transcendental: bool = False
    machine: bool = False
    complex: bool = False
    needs: frozenset[str] = frozenset()     # "lower", "batch", "render:c", ...: set by _declare from kind and flags
    # registered by higher layers
    lower: Callable | None = None           # codegen/lower.py: generator or function (lowerer, node, index)
    decompose: tuple[Callable, ...] = ()    # codegen/decompose.py: its rewrites (node) -> node or None
    approximate: Callable | None = None     # codegen/transcendental.py: (node) -> its polynomial form, or None
    render: dict[str, Callable] = field(default_factory=dict)   # backend -> the renderer's rule
    batch: Callable | None = None           # transforms.py: (node, [(source, batched)], size) -> node
    complex_split: Callable | None = None   # codegen/complex.py: (splitter, node) -> parts, or a real node
    # derivative rules (numfn/autodiff/rules.py; in none of `needs`: tests/test_autodiff.py checks them). As in JAX:
    # jvp(node, primals, tangents) -> the output's tangent, None for zero (forward mode); transpose(node, cotangent,
    # linear) -> the cotangents of the operands the node is linear in (reverse mode: the jvp's linear part transposed)
    jvp: Callable | None = None
    transpose: Callable | None = None

    def registered(self) -> frozenset[str]:
        """The rules the higher layers have registered, named as in `needs`."""
        have = {slot for slot in ("lower", "approximate", "batch", "complex_split", "jvp", "transpose")
                if getattr(self, slot)}
        if self.decompose: have.add("decompose")
        have.update(f"render:{backend}" for backend in self.render)
        return frozenset(have)

    def missing(self) -> frozenset[str]:
        """The rules this op needs that nobody registered (empty once every layer is imported)."""
        return self.needs - self.registered()


def register(op: Ops, slot: str, rule: Callable, backend: str | None = None) -> None:
    """Put `rule` into `op`'s entry: `slot` is one of SLOTS; a render rule names its `backend`; decompose rules
    accumulate. Registering again replaces (a reloaded module registers its new functions)."""
    entry = PRIMITIVES[op]
    if slot not in SLOTS: raise ValueError(f"no slot {slot!r} in the table of primitives (slots: {SLOTS})")
    if slot == "render":
        if backend not in BACKENDS: raise ValueError(f"unknown backend {backend!r}")
        entry.render[backend] = rule
    elif slot == "decompose":
        if rule not in entry.decompose: entry.decompose = entry.decompose + (rule,)
    else: setattr(entry, slot, rule)


def ops_where(predicate: Callable[[Primitive], bool]) -> frozenset[Ops]:
    return frozenset(p.op for p in PRIMITIVES.values() if predicate(p))


# ---------------------------------------------------------------------------------------------------------------
# shape rules

def _arg_shape(u: Node): return u.arg
def _no_shape(u: Node): return None


def _of_first(rule: Callable[[Node, tuple[int, ...]], tuple[int, ...]]) -> ShapeRule:
    """A rule computed from the first source's shape (None when that has none: a loop-level node)."""
    def shape(u: Node):
        if not u.src: return None
        s = u.src[0].shape
        return None if s is None else rule(u, s)
    return shape


_SAME = _of_first(lambda u, s: s)
_WHERE_SHAPE = _of_first(lambda u, s: u.src[-1].shape)

_SOURCE_SHAPES: dict[Ops, ShapeRule] = {
    Ops.PARAM: lambda u: u.arg[1], Ops.BUFFER: lambda u: u.arg.shape, Ops.CONST: lambda u: (),
    Ops.IOTA: lambda u: (u.arg,), Ops.EMPTY: lambda u: u.arg[0], Ops.CARRY: lambda u: u.arg[2],
}
_MOVEMENT_SHAPES: dict[Ops, ShapeRule] = {
    Ops.RESHAPE: _arg_shape, Ops.EXPAND: _arg_shape,
    Ops.PERMUTE: _of_first(lambda u, s: tuple(s[i] for i in u.arg)),
    Ops.PAD: _of_first(lambda u, s: tuple(n + b + a for n, (b, a) in zip(s, u.arg))),
    Ops.SHRINK: _of_first(lambda u, s: tuple(e - b for b, e in u.arg)),
    Ops.FLIP: _SAME,
}


# ---------------------------------------------------------------------------------------------------------------
# dtype rules of ALU ops (their operands have one dtype already: the tracer promotes first)

def _first_dtype(d: tuple[DType, ...]) -> DType: return d[0]
def _bool_dtype(d: tuple[DType, ...]) -> DType: return dtypes.bool
def _last_dtype(d: tuple[DType, ...]) -> DType: return d[-1]
def _component_dtype(d: tuple[DType, ...]) -> DType: return d[0].component
def _complex_dtype(d: tuple[DType, ...]) -> DType:
    return dtypes.complex64 if d[0] is dtypes.float32 else dtypes.complex128


# ---------------------------------------------------------------------------------------------------------------
# bounds rules: (node, the full range of its dtype) -> (min, max), or None for the full range

def _integer(rule: BoundsRule) -> BoundsRule:
    """A rule that holds for integer and bool values only (floats get no bounds)."""
    def bounds(u: Node, full):
        return rule(u, full) if (u.dtype.is_int or u.dtype.is_bool) else None
    return bounds


def const_divisor(u: Node):
    """The divisor of a tensor-level division or modulo when it is one constant (seen through broadcasting)."""
    d = u.src[1]
    while d.op in (Ops.RESHAPE, Ops.EXPAND): d = d.src[0]
    return d.arg if d.op is Ops.CONST and d.dtype.is_int else None


def _clip(b, full):
    return (max(b[0], full[0]), min(b[1], full[1])) if b[0] >= full[0] and b[1] <= full[1] else full


def _tdiv(a: int, c: int) -> int:
    q = abs(a) // c
    return q if a >= 0 else -q


def _bounds_add(u, full):
    (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
    return _clip((a0 + b0, a1 + b1), full)


def _bounds_sub(u, full):
    (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
    return _clip((a0 - b1, a1 - b0), full)


def _bounds_mul(u, full):
    (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
    c = (a0 * b0, a0 * b1, a1 * b0, a1 * b1)
    return _clip((min(c), max(c)), full)


def _bounds_neg(u, full):
    a0, a1 = u.src[0].bounds
    return _clip((-a1, -a0), full)


def _bounds_mod(u, full):   # NumPy's modulo has the divisor's sign
    c = const_divisor(u)
    return (0, c - 1) if c is not None and c > 0 else None


def _bounds_floordiv(u, full):
    c = const_divisor(u)
    if c is None or c <= 0: return None
    a0, a1 = u.src[0].bounds
    return (a0 // c, a1 // c) if a0 != u.dtype.min and a1 != u.dtype.max else full


def _bounds_idiv(u, full):
    if not (u.src[1].op is Ops.CONST and u.src[1].arg > 0): return None
    (a0, a1), c = u.src[0].bounds, u.src[1].arg
    return (_tdiv(a0, c), _tdiv(a1, c))


def _bounds_imod(u, full):
    if not (u.src[1].op is Ops.CONST and u.src[1].arg > 0): return None
    (a0, a1), c = u.src[0].bounds, u.src[1].arg
    if a0 >= 0: return (0, min(a1, c - 1))
    return (-(c - 1), c - 1)


def _bounds_max(u, full):
    (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
    return (max(a0, b0), max(a1, b1))


def _bounds_min(u, full):
    (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
    return (min(a0, b0), min(a1, b1))


def _bounds_where(u, full):
    (a0, a1), (b0, b1) = u.src[1].bounds, u.src[2].bounds
    return (min(a0, b0), max(a1, b1))


def _bounds_gcd(u, full):   # unsigned operands: a divisor of one (or the other, when one is 0)
    return (0, max(u.src[0].vmax, u.src[1].vmax))


def _bounds_cast(u, full):
    if not (u.src[0].dtype.is_int or u.src[0].dtype.is_bool): return None
    a0, a1 = u.src[0].bounds
    return (a0, a1) if u.dtype.min <= a0 and a1 <= u.dtype.max else None


def _bounds_cmplt(u, full):
    (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
    if a1 < b0: return (True, True)
    if a0 >= b1: return (False, False)
    return None


def _bounds_cmple(u, full):
    (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
    if a1 <= b0: return (True, True)
    if a0 > b1: return (False, False)
    return None


def _bounds_and(u, full):
    if not u.dtype.is_bool: return None
    (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
    return (a0 and b0, a1 and b1)


def _bounds_or(u, full):
    if not u.dtype.is_bool: return None
    (a0, a1), (b0, b1) = u.src[0].bounds, u.src[1].bounds
    return (a0 or b0, a1 or b1)


def _bounds_buffer(u, full):   # captured data
    if u.arg.data is not None and u.arg.size and (u.dtype.is_int or u.dtype.is_bool):
        return (u.arg.data.min().item(), u.arg.data.max().item())
    return None


def _bounds_pad(u, full):   # padding adds zeros
    lo, hi = u.src[0].bounds
    return (min(lo, 0), max(hi, 0))


def _bounds_view(u, full): return u.src[0].bounds


def _bounds_reduce(u, full):   # a maximum or minimum is one of the values reduced (an empty one: the identity)
    return u.src[0].bounds if u.arg[0] in (Ops.MAX, Ops.MIN) and all(u.src[0].shape[a] for a in u.arg[1]) else None


_SOURCE_BOUNDS: dict[Ops, BoundsRule] = {
    Ops.CONST: lambda u, full: None if u.dtype.is_complex else (u.arg, u.arg),   # (complex values have no order)
    Ops.RANGE: lambda u, full: (0, max(u.src[0].vmax - 1, 0)),
    Ops.IOTA: lambda u, full: (0, max(u.arg - 1, 0)),
    Ops.CARRY: lambda u, full: u.arg[3] if len(u.arg) > 3 and u.arg[3] is not None else None,   # a loop index's
    Ops.BUFFER: _bounds_buffer,
}


# ---------------------------------------------------------------------------------------------------------------
# the table

PRIMITIVES: dict[Ops, Primitive] = {}

_ELEMENTWISE_NEEDS = frozenset({"lower", "batch"})
_RENDERED = frozenset(f"render:{b}" for b in BACKENDS)


def _alu(kind: Kind, op: Ops, numpy: str | None, dtype: DTypeRule = _first_dtype, bounds: BoundsRule | None = None,
         libm: str | None = None, commutative: bool = False, transcendental: bool = False, machine: bool = False,
         complex: bool = False, decomposed: bool = False, complex_only: bool = False) -> None:
    """An elementwise ALU op's entry. `decomposed`: codegen/decompose.py always rewrites it into other ops (no
    renderer sees it); `complex_only`: it exists for complex values only and codegen/complex.py removes it;
    `machine`: made by codegen only (vmap never sees it)."""
    needs = {"lower"} if machine else set(_ELEMENTWISE_NEEDS)
    if complex_only: needs = {"batch", "complex_split"}
    elif decomposed: needs.add("decompose")
    else: needs |= _RENDERED
    if complex: needs.add("complex_split")
    PRIMITIVES[op] = Primitive(op, kind, _WHERE_SHAPE if op is Ops.WHERE else _SAME, dtype,
                               None if bounds is None else _integer(bounds), numpy, libm, commutative,
                               transcendental, machine, complex or complex_only, frozenset(needs))


# the C names of the float functions whose NumPy names differ
_LIBM_NAMES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
               "arctanh": "atanh"}


def _declare() -> None:
    for op, shape in _SOURCE_SHAPES.items():
        needs = frozenset({"lower"}) if op in (Ops.IOTA, Ops.EMPTY, Ops.BUFFER) else frozenset()
        if op is Ops.CONST: needs = frozenset({"lower", "complex_split"})
        PRIMITIVES[op] = Primitive(op, Kind.SOURCE, shape, bounds=_SOURCE_BOUNDS.get(op), needs=needs)
    for op, shape in _MOVEMENT_SHAPES.items():
        PRIMITIVES[op] = Primitive(op, Kind.MOVEMENT, shape, bounds=_integer(_bounds_pad) if op is Ops.PAD else
                                   _bounds_view, needs=frozenset({"lower", "batch", "complex_split"}))
    U, B, T = Kind.UNARY, Kind.BINARY, Kind.TERNARY
    # unary
    _alu(U, Ops.NEG, "negative", bounds=_bounds_neg, complex=True)
    _alu(U, Ops.NOT, "invert", decomposed=True)
    _alu(U, Ops.ABS, "absolute", libm="fabs", complex=True)
    _alu(U, Ops.SQRT, "sqrt", libm="sqrt", complex=True)
    for op, name, cplx in ((Ops.EXP, "exp", True), (Ops.EXP2, "exp2", True), (Ops.LOG, "log", True),
                           (Ops.LOG2, "log2", True), (Ops.SIN, "sin", True), (Ops.COS, "cos", True),
                           (Ops.TAN, "tan", True), (Ops.TANH, "tanh", True), (Ops.ASIN, "arcsin", False),
                           (Ops.ACOS, "arccos", False), (Ops.ATAN, "arctan", False), (Ops.SINH, "sinh", True),
                           (Ops.COSH, "cosh", True), (Ops.ASINH, "arcsinh", False), (Ops.ACOSH, "arccosh", False),
                           (Ops.ATANH, "arctanh", False), (Ops.EXPM1, "expm1", True), (Ops.LOG1P, "log1p", True),
                           (Ops.LOG10, "log10", True), (Ops.CBRT, "cbrt", False)):
        _alu(U, op, name, libm=_LIBM_NAMES.get(name, name), transcendental=True, complex=cplx)
    for op, name in ((Ops.FLOOR, "floor"), (Ops.CEIL, "ceil"), (Ops.TRUNC, "trunc")): _alu(U, op, name, libm=name)
    _alu(U, Ops.RINT, "rint", libm="rint", complex=True)
    _alu(U, Ops.IMAG, "imag", dtype=_component_dtype, complex_only=True)
    # binary
    _alu(B, Ops.ADD, "add", bounds=_bounds_add, commutative=True, complex=True)
    _alu(B, Ops.SUB, "subtract", bounds=_bounds_sub, complex=True)
    _alu(B, Ops.MUL, "multiply", bounds=_bounds_mul, commutative=True, complex=True)
    _alu(B, Ops.FDIV, "true_divide", complex=True)
    _alu(B, Ops.FLOORDIV, "floor_divide", bounds=_bounds_floordiv, decomposed=True)
    _alu(B, Ops.MOD, "remainder", bounds=_bounds_mod, decomposed=True)
    _alu(B, Ops.POW, "power", libm="pow", transcendental=True, complex=True)
    _alu(B, Ops.MAX, "maximum", bounds=_bounds_max, commutative=True, complex=True)
    _alu(B, Ops.MIN, "minimum", bounds=_bounds_min, commutative=True, complex=True)
    _alu(B, Ops.CMPLT, "less", dtype=_bool_dtype, bounds=_bounds_cmplt, complex=True)
    _alu(B, Ops.CMPLE, "less_equal", dtype=_bool_dtype, bounds=_bounds_cmple, complex=True)
    _alu(B, Ops.CMPEQ, "equal", dtype=_bool_dtype, commutative=True, complex=True)
    _alu(B, Ops.CMPNE, "not_equal", dtype=_bool_dtype, commutative=True, complex=True)
    _alu(B, Ops.AND, "bitwise_and", bounds=_bounds_and, commutative=True)
    _alu(B, Ops.OR, "bitwise_or", bounds=_bounds_or, commutative=True)
    _alu(B, Ops.XOR, "bitwise_xor", commutative=True)
    _alu(B, Ops.SHL, "left_shift")
    _alu(B, Ops.SHR, "right_shift")
    _alu(B, Ops.ATAN2, "arctan2", libm="atan2", transcendental=True)
    _alu(B, Ops.HYPOT, "hypot", libm="hypot", transcendental=True)
    _alu(B, Ops.GCD, "gcd", bounds=_bounds_gcd, commutative=True)
    _alu(B, Ops.COMPLEX, None, dtype=_complex_dtype, complex_only=True)
    _alu(B, Ops.IDIV, None, bounds=_bounds_idiv, machine=True)
    _alu(B, Ops.IMOD, None, bounds=_bounds_imod, machine=True)
    _alu(B, Ops.FMOD, "fmod", libm="fmod", machine=True)
    # ternary
    _alu(T, Ops.WHERE, "where", dtype=_last_dtype, bounds=_bounds_where, complex=True)
    _alu(T, Ops.FMA, None, libm="fma")
    # conversions: the node's dtype is the target, given when it is made
    for op in (Ops.CAST, Ops.BITCAST):
        needs = _ELEMENTWISE_NEEDS | _RENDERED | ({"complex_split"} if op is Ops.CAST else set())
        PRIMITIVES[op] = Primitive(op, Kind.CONVERSION, _SAME, bounds=_integer(_bounds_cast) if op is Ops.CAST
                                   else None, complex=op is Ops.CAST, needs=frozenset(needs))
    # indexing, reductions, structure
    PRIMITIVES[Ops.GATHER] = Primitive(Ops.GATHER, Kind.INDEXING, lambda u: u.src[1].shape,
                                       needs=frozenset({"lower", "batch", "complex_split"}))
    # (a SCATTER or SCAN is lowered where it is stored: codegen/lower.py's lower_kernel)
    PRIMITIVES[Ops.SCATTER] = Primitive(Ops.SCATTER, Kind.INDEXING, lambda u: u.src[0].shape,
                                        needs=frozenset({"batch"}))
    PRIMITIVES[Ops.REDUCE_AXIS] = Primitive(
        Ops.REDUCE_AXIS, Kind.REDUCE, _of_first(lambda u, s: tuple(1 if i in u.arg[1] else n for i, n in enumerate(s))),
        bounds=_integer(_bounds_reduce), needs=frozenset({"lower", "batch", "complex_split"}))
    PRIMITIVES[Ops.SCAN] = Primitive(Ops.SCAN, Kind.REDUCE, _SAME, needs=frozenset({"batch", "complex_split"}))
    PRIMITIVES[Ops.CONTIGUOUS] = Primitive(Ops.CONTIGUOUS, Kind.STRUCTURAL, _SAME,
                                           needs=frozenset({"lower", "batch", "complex_split"}))
    PRIMITIVES[Ops.RESULT] = Primitive(Ops.RESULT, Kind.STRUCTURAL, lambda u: u.src[0].arg.results[u.arg][0],
                                       needs=frozenset({"batch"}))
    for op in (Ops.EXTERN, Ops.LOOP):
        PRIMITIVES[op] = Primitive(op, Kind.STRUCTURAL, _no_shape, needs=frozenset({"batch"}))
    for op in (Ops.SINK, Ops.CALL): PRIMITIVES[op] = Primitive(op, Kind.STRUCTURAL, _no_shape)
    for op in (Ops.STORE, Ops.LOAD, Ops.REDUCE, Ops.DEFINE_ACC, Ops.ASSIGN, Ops.END):
        PRIMITIVES[op] = Primitive(op, Kind.LOOP_LEVEL, _no_shape)
    PRIMITIVES[Ops.RANGE] = Primitive(Ops.RANGE, Kind.LOOP_LEVEL, _no_shape, bounds=_SOURCE_BOUNDS[Ops.RANGE])
    missing = set(Ops) - set(PRIMITIVES)
    assert not missing, f"ops without an entry in the table of primitives: {sorted(o.name for o in missing)}"


_declare()

# the op groups the passes test membership in, read off the table
UNARY = ops_where(lambda p: p.kind is Kind.UNARY)
BINARY = ops_where(lambda p: p.kind is Kind.BINARY)
TERNARY = ops_where(lambda p: p.kind is Kind.TERNARY)
ALU = UNARY | BINARY | TERNARY
ELEMENTWISE = ALU | ops_where(lambda p: p.kind is Kind.CONVERSION)
COMPARISON = frozenset({Ops.CMPLT, Ops.CMPLE, Ops.CMPEQ, Ops.CMPNE})
COMMUTATIVE = ops_where(lambda p: p.commutative)
MOVEMENT = ops_where(lambda p: p.kind is Kind.MOVEMENT)
TRANSCENDENTAL = ops_where(lambda p: p.transcendental)
