"""Hypothesis: random programs (trees of elementwise ops, reductions, broadcasting, indexing and shape ops over 1-3
input arrays of random shapes, dtypes and memory layouts), run by numfn and by NumPy on the same inputs.

A program is built one instruction at a time while NumPy evaluates it, so every instruction is valid for the shapes
and dtypes at hand and values stay tame (finite, bounded). Each node records:
  scale  a bound on the magnitudes its value was computed from (the absolute error scale of the comparison)
  exact  computed from the inputs by correctly rounded operations only, so numfn must agree bit for bit; only exact
         values feed discontinuous operations (floor, //, %, comparisons, float -> int casts), where one rounding
         difference upstream (a reduction summed in another order, a libm sin) would legitimately flip the result
  lowp   float32 took part, so float64 results are compared with float32 tolerances
On failure the program is printed as Python source (hypothesis `note`).
"""
from __future__ import annotations

import operator
import os
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, note, settings
from hypothesis import strategies as st

from helpers import assert_same, check_no_sharing, public_type, run_jit


def examples(n: int) -> int:
    """Hypothesis examples for a property run n times in a full run: half as many in CI (CI set: the suite's time;
    every example compiles on its backend), NUMFN_HYPOTHESIS_SCALE times as many when set (a long run: 4, 10)."""
    scale = os.environ.get("NUMFN_HYPOTHESIS_SCALE")
    factor = float(scale) if scale else 0.5 if os.environ.get("CI", "") not in ("", "0", "false") else 1.0
    return max(1, round(n * factor))


SETTINGS = dict(deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
INPUT_DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_, np.float32, np.float64, np.int8, np.uint8,
                np.int16, np.uint16, np.uint32]
CAST_TARGETS = [np.float32, np.float64, np.int32, np.int64, np.bool_, np.int8, np.uint8, np.int16, np.uint32,
                np.uint64]
MAX_SCALE = 1e6
SUPPORTED = {np.dtype(d) for d in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                   np.uint64, np.float32, np.float64)}


@dataclass(eq=False)   # nodes are compared by identity
class Node:
    name: str          # the variable in the printed program, or the literal of a Python scalar
    value: object      # NumPy's value (an ndarray, or a Python scalar for scalar operands)
    scale: float
    exact: bool
    lowp: bool

    @property
    def is_float(self) -> bool: return np.asarray(self.value).dtype.kind == "f"

    @property
    def arr(self) -> np.ndarray: return np.asarray(self.value)


def _mag(v) -> float:
    a = np.asarray(v)
    if a.size == 0 or a.dtype.kind == "b": return 1.0
    return max(1.0, float(np.abs(a.astype(np.float64)).max()))


# ---- the operations: (source template, function over the array module's operands) ---------------------------------
UNARY = {
    "neg": ("-{a}", lambda p, a: -a),
    "abs": ("abs({a})", lambda p, a: abs(a)),
    "sin": ("np.sin({a})", lambda p, a: np.sin(a)),
    "cos": ("np.cos({a})", lambda p, a: np.cos(a)),
    "tanh": ("np.tanh({a})", lambda p, a: np.tanh(a)),
    "exp": ("np.exp(np.clip({a}, -3, 3))", lambda p, a: np.exp(np.clip(a, -3, 3))),
    "exp2": ("np.exp2(np.clip({a}, -3, 3))", lambda p, a: np.exp2(np.clip(a, -3, 3))),
    "log": ("np.log(np.abs({a}) + 1)", lambda p, a: np.log(np.abs(a) + 1)),
    "log2": ("np.log2(np.abs({a}) + 1)", lambda p, a: np.log2(np.abs(a) + 1)),
    "sqrt": ("np.sqrt(np.abs({a}) + 1)", lambda p, a: np.sqrt(np.abs(a) + 1)),
    "floor": ("np.floor({a})", lambda p, a: np.floor(a)),
    "ceil": ("np.ceil({a})", lambda p, a: np.ceil(a)),
    "square": ("np.square({a})", lambda p, a: np.square(a)),
    "invert": ("~{a}", lambda p, a: ~a),
    "astype": ("{a}.astype(np.{p.__name__})", lambda p, a: a.astype(p)),
    "pow": ("{a} ** {p}", lambda p, a: a ** p),
    "sum": ("{a}.sum(axis={p[0]}, keepdims={p[1]})", lambda p, a: a.sum(axis=p[0], keepdims=p[1])),
    "npsum": ("np.sum({a}, axis={p[0]}, keepdims={p[1]})", lambda p, a: np.sum(a, axis=p[0], keepdims=p[1])),
    "mean": ("{a}.mean(axis={p[0]}, keepdims={p[1]})", lambda p, a: a.mean(axis=p[0], keepdims=p[1])),
    "max": ("{a}.max(axis={p[0]}, keepdims={p[1]})", lambda p, a: a.max(axis=p[0], keepdims=p[1])),
    "min": ("np.min({a}, axis={p[0]}, keepdims={p[1]})", lambda p, a: np.min(a, axis=p[0], keepdims=p[1])),
    "prod": ("{a}.prod(axis={p[0]}, keepdims={p[1]})", lambda p, a: a.prod(axis=p[0], keepdims=p[1])),
    "cumsum": ("np.cumsum({a}, axis={p})", lambda p, a: np.cumsum(a, axis=p)),
    "index": ("{a}[{pidx}]", lambda p, a: a[p]),
    "transpose": ("{a}.transpose({p})", lambda p, a: a.transpose(p)),
    "reshape": ("{a}.reshape({p})", lambda p, a: a.reshape(p)),
    "broadcast": ("np.broadcast_to({a}, {p})", lambda p, a: np.broadcast_to(a, p)),
    "gram": ("{a} @ np.swapaxes({a}, -1, -2)", lambda p, a: a @ np.swapaxes(a, -1, -2)),
    "dot1": ("np.dot({a}, {a})", lambda p, a: np.dot(a, a)),
    "tan": ("np.tan(np.clip({a}, -1.4, 1.4))", lambda p, a: np.tan(np.clip(a, -1.4, 1.4))),
    "trunc": ("np.trunc({a})", lambda p, a: np.trunc(a)),
    "sign": ("np.sign({a})", lambda p, a: np.sign(a)),
    "logical_not": ("np.logical_not({a})", lambda p, a: np.logical_not(a)),
    "expand_dims": ("np.expand_dims({a}, {p})", lambda p, a: np.expand_dims(a, p)),
    "squeeze": ("np.squeeze({a})", lambda p, a: np.squeeze(a)),
    "swapaxes": ("np.swapaxes({a}, 0, -1)", lambda p, a: np.swapaxes(a, 0, -1)),
    "flatten": ("{a}.flatten()", lambda p, a: a.flatten()),
    "full_like": ("np.full_like({a}, {p})", lambda p, a: np.full_like(a, p)),
    "zeros_like": ("np.zeros_like({a}) + {a}", lambda p, a: np.zeros_like(a) + a),
}
BINARY = {
    "add": ("{a} + {b}", lambda p, a, b: a + b),
    "sub": ("{a} - {b}", lambda p, a, b: a - b),
    "mul": ("{a} * {b}", lambda p, a, b: a * b),
    "div": ("{a} / (np.abs({b}) + 1)", lambda p, a, b: a / (np.abs(b) + 1)),
    "floordiv": ("{a} // (np.abs({b}) + 1)", lambda p, a, b: a // (np.abs(b) + 1)),
    "mod": ("{a} % (np.abs({b}) + 1)", lambda p, a, b: a % (np.abs(b) + 1)),
    "maximum": ("np.maximum({a}, {b})", lambda p, a, b: np.maximum(a, b)),
    "minimum": ("np.minimum({a}, {b})", lambda p, a, b: np.minimum(a, b)),
    "and": ("{a} & {b}", lambda p, a, b: a & b),
    "or": ("{a} | {b}", lambda p, a, b: a | b),
    "xor": ("{a} ^ {b}", lambda p, a, b: a ^ b),
    "lt": ("{a} < {b}", lambda p, a, b: a < b),
    "le": ("{a} <= {b}", lambda p, a, b: a <= b),
    "gt": ("{a} > {b}", lambda p, a, b: a > b),
    "ge": ("{a} >= {b}", lambda p, a, b: a >= b),
    "eq": ("{a} == {b}", lambda p, a, b: a == b),
    "ne": ("{a} != {b}", lambda p, a, b: a != b),
    "where": ("np.where({c}, {a}, {b})", lambda p, a, b, c: np.where(c, a, b)),
    "where0": ("np.where({c} > 0, {a}, {b})", lambda p, a, b, c: np.where(c > 0, a, b)),
    "stack": ("np.stack([{a}, {b}], axis={p})", lambda p, a, b: np.stack([a, b], axis=p)),
    "concat": ("np.concatenate([{a}, {b}], axis={p})", lambda p, a, b: np.concatenate([a, b], axis=p)),
    "clip": ("np.clip({a}, -{b}, {b})", lambda p, a, b: np.clip(a, -b, b)),
    "logical_and": ("np.logical_and({a}, {b})", lambda p, a, b: np.logical_and(a, b)),
    "logical_xor": ("np.logical_xor({a}, {b})", lambda p, a, b: np.logical_xor(a, b)),
    "matmul": ("np.matmul({a}, {b})", lambda p, a, b: np.matmul(a, b)),
    "apow": ("np.abs({a}) ** np.clip({b}, -2, 2)", lambda p, a, b: np.abs(a) ** np.clip(b, -2, 2)),
    "shl": ("{a} << {b}", lambda p, a, b: a << b),
    "shr": ("{a} >> {b}", lambda p, a, b: a >> b),
}
VIEWS = {"index", "transpose", "reshape", "broadcast", "expand_dims", "squeeze", "swapaxes", "flatten"}
REDUCES = {"sum", "npsum", "mean", "max", "min", "prod", "cumsum", "gram", "dot1"}
INEXACT = {"sin", "cos", "tanh", "exp", "exp2", "log", "log2", "sum", "npsum", "mean", "prod", "cumsum", "gram",
           "dot1", "tan", "matmul", "apow"}
DISCONTINUOUS = {"floor", "ceil", "floordiv", "mod", "lt", "le", "gt", "ge", "eq", "ne", "where", "where0", "trunc",
                 "sign", "logical_not", "logical_and", "logical_xor"}
COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}


def _index_source(idx) -> str:
    def one(i):
        if i is None: return "None"
        if i is Ellipsis: return "..."
        if isinstance(i, slice):
            return ":".join("" if v is None else str(v) for v in (i.start, i.stop)) + \
                ("" if i.step is None else f":{i.step}")
        return str(i)
    return ", ".join(one(i) for i in idx) if idx else "()"


class Builder:
    """Builds a random program over `inputs`, drawing every choice from hypothesis."""

    def __init__(self, draw, inputs: list[np.ndarray]):
        self.draw = draw
        self.nodes = [Node(f"x{i}", x, _mag(x), True, x.dtype == np.float32) for i, x in enumerate(inputs)]
        self.instrs: list = []   # (op, params, operand node indices or scalar nodes)
        self.lines: list[str] = []

    def pick(self, pred=lambda n: True):
        cands = [i for i, n in enumerate(self.nodes) if pred(n)]
        return self.draw(st.sampled_from(cands)) if cands else None

    def scalar(self) -> Node:
        v = self.draw(st.sampled_from([2, 3, -1, 0.5, 2.5, -1.5, 1]))
        return Node(repr(v), v, abs(v), True, False)

    def axis_param(self, a: np.ndarray):
        nd = a.ndim
        choice = self.draw(st.sampled_from(["none", "int", "tuple"])) if nd else "none"
        if choice == "none": axis = None
        elif choice == "int": axis = self.draw(st.integers(-nd, nd - 1))
        else:
            axes = self.draw(st.lists(st.integers(0, nd - 1), min_size=0, max_size=nd, unique=True))
            axis = tuple(a - nd if self.draw(st.booleans()) else a for a in axes)
        return axis, self.draw(st.booleans())

    def index_param(self, a: np.ndarray):
        idx, dim = [], 0
        used_ellipsis = False
        while dim < a.ndim and self.draw(st.booleans()):
            kind = self.draw(st.sampled_from(["int", "slice", "slice", "none", "ellipsis"]))
            n = a.shape[dim]
            if kind == "int" and n > 0:
                idx.append(self.draw(st.integers(-n, n - 1)))
                dim += 1
            elif kind == "none":
                idx.append(None)
            elif kind == "ellipsis" and not used_ellipsis:
                idx.append(Ellipsis)
                used_ellipsis = True
                dim = a.ndim - sum(1 for i in idx if i is not None and i is not Ellipsis) + dim
                dim = a.ndim if dim > a.ndim else dim
            else:
                bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
                step = self.draw(st.one_of(st.none(), st.integers(-3, 3).filter(bool)))
                idx.append(slice(self.draw(bound), self.draw(bound), step))
                dim += 1
        return tuple(idx)

    def params(self, op: str, a: np.ndarray):
        if op == "astype": return self.draw(st.sampled_from(CAST_TARGETS))
        if op == "pow": return self.draw(st.sampled_from([2, 3]))
        if op in ("sum", "npsum", "mean", "max", "min", "prod"): return self.axis_param(a)
        if op == "cumsum": return self.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1))) if a.ndim else None
        if op == "index": return self.index_param(a)
        if op == "transpose": return tuple(self.draw(st.permutations(list(range(a.ndim)))))
        if op == "reshape":
            shapes = [(-1,), (a.size,) if a.size else (0,), a.shape + (1,), (1,) + a.shape]
            if a.ndim >= 2: shapes.append((a.shape[0], -1) if a.shape[0] else (0, -1 if a.size else 0))
            return self.draw(st.sampled_from(shapes))
        if op == "broadcast": return (self.draw(st.integers(1, 3)),) + a.shape
        if op == "expand_dims": return self.draw(st.integers(-a.ndim - 1, a.ndim))
        if op == "full_like": return self.draw(st.sampled_from([0, 1, -2, 2.5, True]))
        return None

    def view_of(self, i: int) -> int:
        """Append a reversed or transposed view of node i (no arithmetic); returns the new node's index."""
        n = self.nodes[i]
        if self.draw(st.booleans()) and n.arr.ndim >= 2: op, p = "transpose", tuple(range(n.arr.ndim))[::-1]
        else: op, p = "index", (slice(None, None, -1),) * n.arr.ndim
        name = f"v{len(self.instrs)}"
        self.nodes.append(Node(name, UNARY[op][1](p, n.arr), n.scale, n.exact, n.lowp))
        self.instrs.append((op, p, [i]))
        self.lines.append(f"{name} = " + UNARY[op][0].format(a=n.name, p=p, pidx=_index_source(p)))
        return len(self.nodes) - 1

    def step(self) -> None:
        """Try one random instruction; keep it only if NumPy computes a tame, supported result."""
        kind = self.draw(st.sampled_from(["unary", "view", "reduce", "binary", "binary"]))
        if kind != "binary":
            op = self.draw(st.sampled_from(sorted(VIEWS if kind == "view" else REDUCES if kind == "reduce" else
                                                  set(UNARY) - VIEWS - REDUCES)))
            i = self.pick()
            operands = [self.nodes[i]]
            p = self.params(op, operands[0].arr)
        else:
            op = self.draw(st.sampled_from(sorted(set(BINARY) - {"where0"})))
            i = self.pick()
            a = self.nodes[i]

            def fits(n):
                try:
                    np.broadcast_shapes(n.arr.shape, a.arr.shape)
                    return True
                except ValueError:
                    return False
            if op in ("stack", "concat"):
                j = self.pick(lambda n: n.arr.ndim == a.arr.ndim and (op == "concat" or n.arr.shape == a.arr.shape))
                b = self.nodes[j]
                if a.arr.ndim == 0 and op == "concat": return
                p = self.draw(st.integers(-a.arr.ndim - (op == "stack"), a.arr.ndim - 1 + (op == "stack")))
            elif op == "matmul":
                if a.arr.ndim == 0: return
                k = a.arr.shape[-1]
                j = self.pick(lambda n: n.arr.ndim >= 1 and n.arr.shape[-2 if n.arr.ndim >= 2 else 0] == k)
                if j is None: return
                b, p = self.nodes[j], None
            else:
                use_scalar = self.draw(st.integers(0, 3)) == 0
                if use_scalar and op not in ("where", "matmul"):
                    b = self.scalar()
                    # (np.clip(2, lo, hi) converts a Python scalar `a` to a strong int64 array: a NumPy quirk)
                    if op != "clip" and self.draw(st.booleans()): a, b = b, a
                else:
                    b = self.nodes[self.pick(fits)]
                p = None
            operands = [a, b]
            if op == "where":
                def cond(n, want_bool):
                    return (n.arr.dtype == np.bool_) == want_bool and fits(n) and n.exact
                want_bool = any(cond(n, True) for n in self.nodes) and self.draw(st.booleans())
                if not want_bool: op = "where0"   # np.where(c > 0, a, b)
                k = self.pick(lambda n: cond(n, want_bool))
                if k is None: return
                operands.append(self.nodes[k])
        if op in DISCONTINUOUS and not all(n.exact for n in operands): return
        if op == "astype" and operands[0].is_float and np.dtype(p).kind in "iub" and not operands[0].exact: return
        fn = (UNARY if op in UNARY else BINARY)[op][1]
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = np.asarray(fn(p, *(n.value for n in operands)))
        except Exception:   # noqa: BLE001 - NumPy refuses: not a valid instruction
            return
        if out.dtype not in SUPPORTED: return
        if out.dtype.kind == "f" and not np.isfinite(out).all(): return
        scale = self.scale_of(op, p, operands, out)
        if scale > MAX_SCALE: return
        exact = out.dtype.kind != "f" or (op not in INEXACT and all(n.exact for n in operands))
        if op == "pow" and p != 2 and out.dtype.kind == "f": exact = False
        lowp = out.dtype == np.float32 or any(n.lowp or n.arr.dtype == np.float32 for n in operands)
        name = f"v{len(self.instrs)}"
        self.nodes.append(Node(name, out, scale, exact, lowp))
        index = {id(n): k for k, n in enumerate(self.nodes)}
        self.instrs.append((op, p, [index.get(id(n), n) for n in operands]))
        src = (UNARY if op in UNARY else BINARY)[op][0]
        names = dict(zip("abc", (n.name for n in operands)))
        self.lines.append(f"{name} = " + src.format(p=p, pidx=_index_source(p) if op == "index" else "", **names))

    @staticmethod
    def scale_of(op, p, operands, out) -> float:
        s = [n.scale for n in operands]
        a = operands[0].arr
        if op in ("add", "sub"): base = s[0] + s[1]
        elif op in ("mul", "div"): base = s[0] * max(1.0, s[1])
        elif op in ("exp", "exp2"): base = 20.0 * s[0]
        elif op in ("sum", "npsum", "mean", "cumsum"):
            base = s[0] * max(1, a.size // max(1, out.size) if op != "cumsum" else max(a.shape, default=1))
        elif op == "prod":
            base = s[0] ** max(1, a.size // max(1, out.size))
        elif op == "pow": base = s[0] ** p
        elif op == "square": base = s[0] ** 2
        elif op in ("gram", "dot1"): base = s[0] ** 2 * max(1, a.shape[-1] if a.ndim else 1)
        elif op == "matmul": base = s[0] * s[1] * max(1, a.shape[-1] if a.ndim else 1)
        elif op == "apow": base = max(s[0], 1.0) ** 2 + 1.0
        else: base = max(s)
        return max(base, _mag(out), 1.0)


def _make_inputs(draw):
    rank = draw(st.integers(0, 3))
    base = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 4, 5, 0]) if draw(st.integers(0, 9)) == 0
                               else st.integers(1, 5), min_size=rank, max_size=rank)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    inputs = []
    for _ in range(draw(st.integers(1, 3))):
        k = draw(st.integers(0, len(base)))
        shape = tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in base[len(base) - k:])
        dt = np.dtype(draw(st.sampled_from(INPUT_DTYPES)))
        if dt.kind == "f":
            v = rng.uniform(-3, 3, shape)
            if draw(st.booleans()): v = np.round(v * 2) / 2   # ties, integers and zeros for the discontinuous ops
            x = np.array(v, dtype=dt)   # an ndarray even for shape (): NumPy scalars are tested elsewhere
        elif dt.kind == "b": x = np.array(rng.random(shape) < 0.5)
        else: x = np.array(rng.integers(0 if dt.kind == "u" else -3, 4, shape), dtype=dt)
        layout = draw(st.sampled_from(["c", "c", "fortran", "reversed", "strided"]))
        if layout == "fortran": x = np.asfortranarray(x)
        elif layout == "reversed" and x.ndim: x = np.ascontiguousarray(x[::-1])[::-1]
        elif layout == "strided" and x.ndim: x = np.repeat(x, 2, axis=-1)[..., ::2]
        inputs.append(x)
    return inputs


def _program(instrs, n_inputs, outputs):
    def prog(*xs):
        vals = list(xs)
        for op, p, refs in instrs:
            fn = (UNARY if op in UNARY else BINARY)[op][1]
            vals.append(fn(p, *(vals[r] if isinstance(r, int) else r.value for r in refs)))
        return tuple(vals[i] for i in outputs)
    return prog


def _check_program(backend, draw, max_steps: int):
    inputs = _make_inputs(draw)
    b = Builder(draw, inputs)
    for _ in range(draw(st.integers(1, max_steps))): b.step()
    assume(b.instrs)   # a program that only returns inputs tests little (the health check guards the generator)
    event(f"{len(b.instrs)} instructions")
    last = len(b.nodes) - 1
    extra = draw(st.lists(st.integers(0, last), max_size=2))
    outputs = [last] + extra
    if b.nodes[last].arr.ndim and draw(st.integers(0, 3)) == 0:
        outputs.append(b.view_of(last))   # an output together with a reversed or transposed view of itself
    note("\n".join([f"inputs: {[(x.dtype.name, x.shape, x.strides) for x in inputs]}"] + b.lines +
                   [f"return {', '.join(b.nodes[i].name for i in outputs)}"]))
    prog = _program(b.instrs, len(inputs), outputs)
    actual, _ = run_jit(prog, tuple(inputs), backend=backend)
    assert isinstance(actual, tuple) and len(actual) == len(outputs)
    for k, (i, got) in enumerate(zip(outputs, actual)):
        n = b.nodes[i]
        rtol = None
        if n.arr.dtype.kind == "f":
            rtol = 1e-5 if n.lowp else 1e-12
            rtol *= 1 if n.exact else 4
        assert_same(got, n.arr, scale=4 * n.scale, rtol=rtol, path=f"output {k} ({n.name})")
    check_no_sharing(actual, inputs)


@settings(max_examples=examples(100), **SETTINGS)
@given(data=st.data())
def test_random_programs(backend, data):
    _check_program(backend, data.draw, max_steps=8)


@settings(max_examples=examples(30), **SETTINGS)
@given(data=st.data())
def test_random_long_programs(backend, data):
    _check_program(backend, data.draw, max_steps=20)


# ---- a focused property: one binary operator, any two dtypes, any broadcastable shapes, scalars either side ------
OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
       "%": operator.mod, "&": operator.and_, "|": operator.or_, "^": operator.xor, "<": operator.lt,
       "<=": operator.le, "==": operator.eq, "!=": operator.ne, "max": np.maximum, "min": np.minimum}
ALL_DTYPES = [np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.bool_]


@settings(max_examples=examples(40), **SETTINGS)
@given(data=st.data())
def test_random_binary_promotion(backend, data):
    draw = data.draw
    da, db = np.dtype(draw(st.sampled_from(ALL_DTYPES))), np.dtype(draw(st.sampled_from(ALL_DTYPES)))
    names = draw(st.lists(st.sampled_from(sorted(OPS)), min_size=1, max_size=6, unique=True))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def values(dt, shape):
        if dt.kind == "b": return rng.random(shape) < 0.5
        if dt.kind == "f": return rng.uniform(-9, 9, shape).astype(dt)
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -50), min(info.max, 50) + 1, shape).astype(dt)

    sa = tuple(draw(st.lists(st.integers(1, 4), max_size=3)))
    sb = tuple(1 if draw(st.booleans()) else d for d in sa[draw(st.integers(0, len(sa))):])
    a, b = values(da, sa), values(db, sb)
    scalar = draw(st.sampled_from([None, 3, -2, 0.5, 7.25, 300, True]))
    as_argument = draw(st.booleans())   # a weak Python scalar argument, or a constant the function closes over
    cases, refused = [], []
    for name in names:
        for lhs, rhs in ((a, b), (a, scalar), (scalar, b)):
            if lhs is None or rhs is None: continue
            try:
                with np.errstate(all="ignore"):
                    r = OPS[name](lhs, rhs)
            except (TypeError, OverflowError) as e:
                refused.append((name, lhs is scalar, rhs is scalar, public_type(e)))
                continue
            if np.asarray(r).dtype in SUPPORTED: cases.append((name, lhs is scalar, rhs is scalar))
    note(f"{da}{sa} {db}{sb} scalar={scalar!r} as_argument={as_argument} cases={cases} refused={refused}")

    def f(a, b, s=scalar):
        return [OPS[n](s if ls else a, s if rs else b) for n, ls, rs in cases]

    args = (a, b, scalar) if as_argument else (a, b)
    for n, ls, rs, exc in refused:
        with pytest.raises(exc):
            run_jit(lambda a, b, s=scalar, n=n, ls=ls, rs=rs: OPS[n](s if ls else a, s if rs else b), args,
                    backend=backend)
    if not cases: return
    with np.errstate(all="ignore"):
        expected = f(a, b)
    actual, _ = run_jit(f, args, backend=backend)
    assert_same(actual, expected, scale=100.0)
