"""The IR: one immutable, hash-consed node type (UOp), the op set, pattern rewriting and a readable printer; the
graph walkers of numfn/ir/walk.py (toposort, fold, preorder, ...) are importable from here too; rebuild, substitute
and the caches kept on nodes (memo_bottom_up) are built on them here.

The same node type carries every level of the compiler; the ops used separate the levels:
  tensor graph   PARAM / BUFFER / CONST / IOTA sources, movement ops, ALU ops, GATHER, REDUCE_AXIS, SCAN,
                 CONTIGUOUS, EXTERN / RESULT (calls of native routines)
  kernels        SINK of STORE(BUFFER, value) over a tensor graph whose leaves are BUFFERs
  loop programs  RANGE, LOAD, STORE, REDUCE (then DEFINE_ACC / ASSIGN / END after linearization)
"""
from __future__ import annotations

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
# the op set and its groups live with the table of primitives (numfn/ir/primitives.py); they are imported from here too
from numfn.ir.primitives import (ALU, BINARY, COMMUTATIVE, COMPARISON, ELEMENTWISE, MOVEMENT, PRIMITIVES,  # noqa: F401
                                 TERNARY, TRANSCENDENTAL, UNARY, Ops)
# the graph walkers live in walk.py; they are part of the IR's interface, so importable from here too
from numfn.ir.walk import bottom_up, fill_bottom_up, fold, operands, preorder, toposort  # noqa: F401


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
    _memo: dict[Any, Any] | None         # memo_bottom_up results, None until the first

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
        rule = PRIMITIVES[op].dtype   # the op's dtype rule (numfn/ir/primitives.py)
        return UOp(op, self.dtype if rule is None else rule(tuple(s.dtype for s in srcs)), srcs)

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
                   sources: Callable[[UOp], tuple[UOp, ...]] | None = None) -> Any:
    """compute(root), kept in the node's memo under `key`, computing it for the nodes `sources` names (`src` by
    default) first, without recursion (walk.fill_bottom_up): compute may read its sources' results with
    `memo_get`. Index and value expressions can be as deep as the traced program. On the node, a result lives
    exactly as long as the node: a cache keyed by nodes in a module would keep every graph it ever saw alive."""
    memo = root._memo
    if memo is not None and key in memo: return memo[key]

    def store(x: UOp) -> None:
        memo = x._memo
        if memo is None:
            memo = {}
            object.__setattr__(x, "_memo", memo)
        memo[key] = compute(x)
    fill_bottom_up(root, lambda x: x._memo is None or key not in x._memo, store, sources)
    assert root._memo is not None   # filled above
    return root._memo[key]


def memo_get(u: UOp, key: Any) -> Any:
    """What memo_bottom_up kept for `u` under `key`, or None."""
    return None if u._memo is None else u._memo.get(key)


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
    fill_bottom_up(root, lambda u: getattr(u, slot) is unset, lambda u: object.__setattr__(u, slot, compute(u)))


def _infer_shape(u: UOp) -> tuple[int, ...] | None:
    return PRIMITIVES[u.op].shape(u)   # the op's shape rule (numfn/ir/primitives.py)


def _bounds(u: UOp) -> tuple[Any, Any]:
    """Conservative [min, max] of an integer or bool expression in terms of its RANGE and CONST leaves: the op's
    bounds rule (numfn/ir/primitives.py), else the dtype's whole range."""
    dt = u.dtype
    full = (dt.min, dt.max) if (dt.is_int or dt.is_bool) else (-math.inf, math.inf)
    rule = PRIMITIVES[u.op].bounds
    found = None if rule is None else rule(u, full)
    return full if found is None else found


def graph_fingerprint(roots: Iterable[UOp]) -> str:
    """A hash of everything in the graph: ops, dtypes, structure and arguments, constants by content. Equal
    fingerprints mean equal graphs."""
    import hashlib
    nodes = toposort(roots)
    index = {u: i for i, u in enumerate(nodes)}   # a node's sources by their places in the order
    h = hashlib.sha256()
    for u in nodes:
        arg = u.arg
        if isinstance(arg, Buffer): arg = (arg.category, arg.number, arg.shape, arg.data_hash)
        h.update(f"{u.op.name}|{u.dtype.name}|{[index[s] for s in u.src]}|{_argkey(arg)!r}\n".encode())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# rebuilding graphs: the one walker every pass that rebuilds a graph uses (walk.fold underneath)

def rebuild(root: UOp, visit: Callable[[UOp, tuple[UOp, ...]], UOp | None]) -> UOp:
    """The graph below `root` rebuilt bottom-up: each node, given its sources' new nodes, becomes
    `visit(node, new_sources)`, or, when that returns None, the node itself over the new sources (the same object
    when no source changed, so an unchanged graph comes back as itself)."""
    def step(u: UOp, src: tuple[UOp, ...]) -> UOp:
        new = visit(u, src)
        if new is not None: return new
        return u if src == u.src else UOp(u.op, u.dtype, src, u.arg)
    return fold([root], step)[root]


def substitute(root: UOp, mapping: dict[UOp, UOp], rebuild_replacements: bool = False) -> UOp:
    """`root` with every node in `mapping` replaced by its value, and everything above them rebuilt. The
    replacements are taken as they are; with `rebuild_replacements`, a replacement that is itself a node of the
    graph met before (one of the replaced node's sources, say: a dropped clamp's operand) is taken as rebuilt, so
    the substitutions made inside it stay."""
    if not rebuild_replacements: return rebuild(root, lambda u, src: mapping.get(u))
    done: dict[UOp, UOp] = {}

    def step(u: UOp, src: tuple[UOp, ...]) -> UOp:
        if u in mapping: new = done.get(mapping[u], mapping[u])
        else: new = u if src == u.src else UOp(u.op, u.dtype, src, u.arg)
        done[u] = new
        return new
    return fold([root], step)[root]


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
