"""Differential fuzzing: random programs run by numfn (both backends, and without kernel optimizations) and by
NumPy, failures shrunk to a minimal program.

A program is built one statement at a time while NumPy evaluates it, so every statement is valid for the shapes
and dtypes at hand, values stay finite and bounded, and NumPy's value of every variable is known. Statements are
elementwise operations of every dtype (with Python scalars either side, NEP 50), casts, reductions with axes and
keepdims, cumulative sums and products, views (slices with steps, transposes, reshapes, broadcasts), matmul and
einsum, where, numfn.numpy functions (concatenate, stack, flip, roll, diff, tile, repeat, pad, triu, ...),
integer-array indexing, and writes: `x[index] = v` and `x[index] += v` into arguments (the caller's arrays change)
and into copies made in the program. Each variable records
  scale  a bound on the magnitudes its value was computed from (the scale of the absolute error allowed)
  exact  computed by correctly rounded operations only, so numfn must agree to the last bits (checked to 1e-12
         for float64: every operation rounds as NumPy's does, no FMA contraction); only exact values feed discontinuous operations (floor,
         //, %, comparisons, sign, float -> int casts), where one rounding difference upstream (a sum in another
         order, an approximated sin) would legitimately flip the result
  lowp   float32 took part: float64 results are compared with float32's tolerance
One compiled function holds several independent programs (`parts`): they share one compilation, as a user's
function with unrelated results would.

    python -m numfn fuzz --count 20000 [--seed S] [--parts 4] [--steps 10] [--log DIR]

A failure is a result that differs from NumPy's (value, dtype or shape), an exception NumPy does not raise, an
argument left with other values than NumPy leaves it, or a backend that needed the other one (a compiler fault).
"""
from __future__ import annotations

import builtins
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from numfn.config import c_compiler, overriding, set_default

INPUT_DTYPES = ("float64", "float32", "int64", "int32", "bool", "float64", "float32", "int8", "uint8", "int16",
                "uint16", "uint32", "uint64")
CAST_TARGETS = ("float64", "float32", "int64", "int32", "bool", "int8", "uint8", "int16", "uint32", "uint64")
SUPPORTED = {np.dtype(d) for d in INPUT_DTYPES}
MAX_SCALE = 1e6
CONFIGS = (("llvm", False), ("c", False), ("llvm", True))   # (backend, NOOPT)


class Reject(Exception):
    """A statement that is not valid here (NumPy refuses it, or its value is not tame)."""


@dataclass(eq=False)
class Var:
    name: str
    value: np.ndarray
    scale: float
    exact: bool
    lowp: bool
    part: int
    copy: bool = False     # a fresh array the program may write into (a .copy(), not a view of an argument)
    selected: str = ""     # of run-time length (x[mask], nonzero): the statement that selected its elements


@dataclass
class Stmt:
    """`target = template` (or, for writes, the statement itself): {a}, {b}, {c} are operand names, {p} the
    parameter's source. `op` names the operation (it decides how scale and exactness propagate)."""
    op: str
    target: str
    operands: tuple[str, ...]
    text: str              # the statement's source with operand names filled in
    part: int
    write: bool = False    # writes into operands[0] (an argument or a copy): x[index] = v, x[index] += v


@dataclass
class Program:
    inputs: list[np.ndarray]
    stmts: list[Stmt]
    outputs: list[str]
    seed: int = 0
    parts: int = 1

    @property
    def arg_names(self) -> list[str]:
        return [f"x{i}" for i in range(len(self.inputs))]

    def source(self) -> str:
        """The program as a Python function over NumPy's namespace `np`."""
        lines = [f"def f({', '.join(self.arg_names)}):"]
        lines += [f"    {s.text}" for s in self.stmts]
        lines.append(f"    return ({''.join(o + ', ' for o in self.outputs)})")
        return "\n".join(lines) + "\n"

    def describe(self) -> str:
        """The inputs as Python literals and the source: enough to reproduce a failure by hand."""
        args = []
        for name, x in zip(self.arg_names, self.inputs):
            shape = f".reshape({x.shape})" if x.size == 0 else ""
            args.append(f"{name} = np.array({x.tolist()!r}, dtype=np.{x.dtype.name}){shape}")
        return "import numpy as np\n" + "\n".join(args) + "\n" + self.source()

    def function(self) -> Callable:
        namespace: dict[str, Any] = {"np": np}
        exec(compile(self.source(), f"<fuzz program {self.seed}>", "exec"), namespace)   # noqa: S102 - our source
        return namespace["f"]


# ---------------------------------------------------------------------------------------------------------------
# operations: template, parameter maker, and how scale and exactness propagate

INEXACT = {"exp", "exp2", "log", "log2", "sin", "cos", "tan", "tanh", "sum", "mean", "prod", "cumsum", "cumprod",
           "matmul", "einsum", "dot", "apow", "std", "var", "diff_sum", "outer", "nansum", "expm1", "log1p", "cbrt",
           "arcsinh", "add_reduce", "add_accumulate", "arctan2", "hypot", "logaddexp", "sub_outer"}
DISCONTINUOUS = {"floor", "ceil", "trunc", "floordiv", "mod", "lt", "le", "gt", "ge", "eq", "ne", "sign", "where",
                 "logical_not", "logical_and", "logical_or", "logical_xor", "argmax", "argmin", "any", "all",
                 "isnan", "isfinite", "clip_int", "rint", "mask", "nonzero", "heaviside", "copysign"}
UNARY = {
    "neg": "-{a}", "abs": "np.abs({a})", "sign": "np.sign({a})", "sqrt": "np.sqrt(np.abs({a}))",
    "exp": "np.exp(np.clip({a}, -4, 4))", "exp2": "np.exp2(np.clip({a}, -4, 4))", "log": "np.log(np.abs({a}) + 1)",
    "log2": "np.log2(np.abs({a}) + 1)", "sin": "np.sin({a})", "cos": "np.cos({a})",
    "tan": "np.tan(np.clip({a}, -1.4, 1.4))", "tanh": "np.tanh({a})", "floor": "np.floor({a})",
    "ceil": "np.ceil({a})", "trunc": "np.trunc({a})", "square": "np.square({a})", "invert": "~{a}",
    "logical_not": "np.logical_not({a})", "isnan": "np.isnan({a})", "isfinite": "np.isfinite({a})",
    "positive": "np.positive({a})", "astype": "{a}.astype(np.{p})", "pow": "{a} ** {p}",
    "sum": "{a}.sum(axis={p[0]}, keepdims={p[1]})", "npsum": "np.sum({a}, axis={p[0]}, keepdims={p[1]})",
    "mean": "np.mean({a}, axis={p[0]}, keepdims={p[1]})", "max": "{a}.max(axis={p[0]}, keepdims={p[1]})",
    "min": "np.min({a}, axis={p[0]}, keepdims={p[1]})", "prod": "{a}.prod(axis={p[0]}, keepdims={p[1]})",
    "any": "np.any({a}, axis={p[0]}, keepdims={p[1]})", "all": "{a}.all(axis={p[0]}, keepdims={p[1]})",
    "std": "np.std({a}, axis={p[0]}, keepdims={p[1]})", "var": "{a}.var(axis={p[0]}, keepdims={p[1]})",
    "nansum": "np.nansum({a}, axis={p[0]}, keepdims={p[1]})",
    "argmax": "np.argmax({a}, axis={p})", "argmin": "{a}.argmin(axis={p})",
    "cumsum": "np.cumsum({a}, axis={p})", "cumprod": "np.cumprod(np.clip({a}, -2, 2), axis={p})",
    "index": "{a}[{p}]", "gather": "{a}[{p}]", "transpose": "{a}.transpose({p})", "reshape": "{a}.reshape({p})",
    "broadcast": "np.broadcast_to({a}, {p})", "expand_dims": "np.expand_dims({a}, {p})",
    "squeeze": "np.squeeze({a})", "swapaxes": "np.swapaxes({a}, 0, -1)", "flatten": "{a}.flatten()",
    "flip": "np.flip({a}, axis={p})", "roll": "np.roll({a}, {p[0]}, axis={p[1]})", "diff": "np.diff({a}, axis={p})",
    "tile": "np.tile({a}, {p})", "repeat": "np.repeat({a}, {p[0]}, axis={p[1]})",
    "pad": "np.pad({a}, {p})", "triu": "np.triu({a}, {p})", "tril": "np.tril({a}, {p})",
    "moveaxis": "np.moveaxis({a}, 0, -1)", "ravel": "np.ravel({a})", "copy": "{a}.copy()",
    "full_like": "np.full_like({a}, {p})", "zeros_like": "np.zeros_like({a}) + {a}",
    "gram": "{a} @ np.swapaxes({a}, -1, -2)", "dot": "np.dot({a}, {a})",
    "expm1": "np.expm1(np.clip({a}, -4, 4))", "log1p": "np.log1p(np.abs({a}))", "cbrt": "np.cbrt({a})",
    "arcsinh": "np.arcsinh({a})", "rint": "np.rint({a})", "nonzero": "np.nonzero({a})[{p}]",
    "take": "np.take({a}, np.array({p[0]}), axis={p[1]})", "add_reduce": "np.add.reduce({a}, axis={p})",
    "add_accumulate": "np.add.accumulate({a}, axis={p})", "max_accumulate": "np.maximum.accumulate({a}, axis={p})",
}
BINARY = {
    "add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}", "div": "{a} / (np.abs({b}) + 1)",
    "floordiv": "{a} // {b}", "mod": "{a} % {b}", "maximum": "np.maximum({a}, {b})",
    "minimum": "np.minimum({a}, {b})", "and": "{a} & {b}", "or": "{a} | {b}", "xor": "{a} ^ {b}",
    "lt": "{a} < {b}", "le": "{a} <= {b}", "gt": "{a} > {b}", "ge": "{a} >= {b}", "eq": "{a} == {b}",
    "ne": "{a} != {b}", "logical_and": "np.logical_and({a}, {b})", "logical_or": "np.logical_or({a}, {b})",
    "logical_xor": "np.logical_xor({a}, {b})", "shl": "{a} << {b}", "shr": "{a} >> {b}",
    "apow": "np.abs({a}) ** np.clip({b}, -2, 2)", "ipow": "{a} ** np.clip({b}, 0, 3)",
    "clip": "np.clip({a}, -np.abs({b}), np.abs({b}))", "clip_int": "np.clip({a}, {b}, 3)",
    "stack": "np.stack([{a}, {b}], axis={p})", "concat": "np.concatenate([{a}, {b}], axis={p})",
    "matmul": "np.matmul({a}, {b})", "outer": "np.outer({a}, {b})",
    "einsum": "np.einsum({p!r}, {a}, {b})", "mask": "{a}[{b}]",
    "arctan2": "np.arctan2({a}, {b})", "hypot": "np.hypot({a}, {b})", "fmax": "np.fmax({a}, {b})",
    "fmin": "np.fmin({a}, {b})", "copysign": "np.copysign({a}, {b})", "gcd": "np.gcd({a}, {b})",
    "heaviside": "np.heaviside({a}, {b})", "sub_outer": "np.subtract.outer({a}, {b})",
    "logaddexp": "np.logaddexp(np.clip({a}, -5, 5), np.clip({b}, -5, 5))",
}
TERNARY = {"where": "np.where({c}, {a}, {b})"}
SELECTED_OK = {"neg", "abs", "sign", "sqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tan", "tanh", "floor",
               "ceil", "trunc", "square", "invert", "logical_not", "isnan", "isfinite", "positive", "astype", "pow",
               "expm1", "log1p", "cbrt", "arcsinh", "rint", "sum", "npsum", "mean", "max", "min", "prod", "any",
               "all", "cumsum", "cumprod", "add", "sub", "mul", "div", "floordiv", "mod", "maximum", "minimum", "and",
               "or", "xor", "lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or", "logical_xor", "apow",
               "arctan2", "hypot", "fmax", "fmin", "copysign", "where"}
VIEWS = {"index", "transpose", "reshape", "broadcast", "expand_dims", "squeeze", "swapaxes", "flatten", "flip",
         "moveaxis", "ravel"}
REDUCES = {"sum", "npsum", "mean", "max", "min", "prod", "any", "all", "std", "var", "nansum", "argmax", "argmin",
           "cumsum", "cumprod", "gram", "dot", "add_reduce", "add_accumulate", "max_accumulate"}
SHAPES = {"roll", "diff", "tile", "repeat", "pad", "triu", "tril", "gather", "copy", "full_like", "zeros_like",
          "nonzero", "take"}


def _mag(v) -> float:
    a = np.asarray(v)
    if a.size == 0 or a.dtype.kind == "b": return 1.0
    return max(1.0, float(np.abs(a.astype(np.float64)).max()))


def _eval(text: str, env: dict):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(text, {"np": np}, env)   # noqa: S102 - statements this module wrote


def _scale(op: str, p, operands: list[Var], out: np.ndarray) -> float:
    s = [v.scale for v in operands]
    a = operands[0].value
    if op in ("add", "sub", "stack", "concat", "clip"): base = sum(s)
    elif op in ("mul", "div", "outer"): base = s[0] * max(1.0, s[1])
    elif op in ("exp", "exp2"): base = 20.0 * s[0]
    elif op in ("sum", "npsum", "mean", "nansum", "cumsum", "std", "var", "diff"):
        base = s[0] * max(1, a.size // max(1, out.size) if op != "cumsum" else max(a.shape, default=1))
        if op == "var": base *= s[0]
        if op == "diff": base = 2 * s[0]
    elif op in ("prod", "cumprod"): base = max(2.0, s[0]) ** max(1, max(a.shape, default=1))
    elif op == "pow": base = s[0] ** p
    elif op == "square": base = s[0] ** 2
    elif op in ("gram", "dot"): base = s[0] ** 2 * max(1, a.shape[-1] if a.ndim else 1)
    elif op in ("matmul", "einsum"): base = s[0] * s[1] * max(1, a.size)
    elif op == "apow": base = max(s[0], 1.0) ** 2 + 1.0
    elif op == "ipow": base = max(s[0], 1.0) ** 3
    elif op == "shl": base = MAX_SCALE   # wraps: only ever compared exactly (integers)
    else: base = max(s)
    return max(base, _mag(out), 1.0)


class Generator:
    """Builds a random program; `rng` decides every choice."""

    def __init__(self, rng: np.random.Generator, seed: int = 0, writes: bool = True):
        self.rng = rng
        self.writes = writes
        self.seed = seed
        self.vars: list[Var] = []
        self.stmts: list[Stmt] = []
        self.inputs: list[np.ndarray] = []
        self.env: dict = {}
        self.count = 0

    # ---- choices ----
    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def pick(self, part: int, pred=lambda v: True) -> Var | None:
        cands = [v for v in self.vars if v.part == part and pred(v)]
        return self.choice(cands) if cands else None

    # ---- inputs ----
    def make_inputs(self, part: int) -> None:
        rank = int(self.rng.integers(0, 4))
        base = tuple(int(self.choice([0, 1, 2, 3, 5])) if self.chance(0.1) else int(self.rng.integers(1, 6))
                     for _ in range(rank))
        for _ in range(int(self.rng.integers(1, 4))):
            k = int(self.rng.integers(0, len(base) + 1))
            shape = tuple(1 if self.chance(0.2) else d for d in base[len(base) - k:])
            dt = np.dtype(self.choice(INPUT_DTYPES))
            if dt.kind == "f":
                v = self.rng.uniform(-3, 3, shape)
                if self.chance(0.5): v = np.round(v * 2) / 2   # ties, integers and zeros for discontinuous ops
                x = np.array(v, dtype=dt)
            elif dt.kind == "b": x = np.array(self.rng.random(shape) < 0.5)
            else: x = np.array(self.rng.integers(0 if dt.kind == "u" else -3, 4, shape), dtype=dt)
            layout = self.choice(["c", "c", "c", "fortran", "reversed", "strided"])
            if layout == "fortran": x = np.asfortranarray(x)
            elif layout == "reversed" and x.ndim: x = np.ascontiguousarray(x[::-1])[::-1]
            elif layout == "strided" and x.ndim: x = np.repeat(x, 2, axis=-1)[..., ::2]
            name = f"x{len(self.inputs)}"
            self.inputs.append(x)
            self.env[name] = x.copy()
            self.vars.append(Var(name, self.env[name], _mag(x), True, x.dtype == np.float32, part, copy=True))

    # ---- parameters ----
    def axis(self, a: np.ndarray, allow_tuple: bool = True):
        nd = a.ndim
        if nd == 0 or self.chance(0.3): return None
        if allow_tuple and self.chance(0.3):
            axes = [int(x) for x in self.rng.permutation(nd)[:int(self.rng.integers(0, nd + 1))]]
            return tuple(x - nd if self.chance(0.5) else x for x in axes)
        return int(self.rng.integers(-nd, nd))

    def basic_index(self, a: np.ndarray) -> str:
        parts, dim = [], 0
        while dim < a.ndim and self.chance(0.7):
            n = a.shape[dim]
            kind = self.choice(["int", "slice", "slice", "none", "ellipsis"])
            if kind == "int" and n > 0:
                parts.append(str(int(self.rng.integers(-n, n))))
                dim += 1
            elif kind == "none":
                parts.append("None")
            elif kind == "ellipsis" and "..." not in parts:
                parts.append("...")
                dim = a.ndim
            else:
                def bound(n=n):
                    return "" if self.chance(0.3) else str(int(self.rng.integers(-n - 2, n + 3)))
                step = "" if self.chance(0.4) else f":{self.choice([-3, -2, -1, 2, 3])}"
                parts.append(f"{bound()}:{bound()}{step}")
                dim += 1
        return ", ".join(parts) if parts else "..."

    def int_array_index(self, a: np.ndarray, part: int) -> tuple[str, tuple[str, ...]]:
        """An index with integer arrays: literals (constants of the program), or an integer variable of the program
        wrapped into range (a traced index). Returns (source, operand names it uses)."""
        if a.ndim == 0: raise Reject
        axis = int(self.rng.integers(0, a.ndim))
        n = a.shape[axis]
        if n == 0: raise Reject
        lead = ":, " * axis
        traced = self.pick(part, lambda v: v.value.dtype.kind in "iu" and v.value.ndim <= 2 and v.exact)
        if traced is not None and self.chance(0.4):
            return f"{{a}}[{lead}np.clip({{b}}, -{n}, {n - 1})]", (traced.name,)
        k = int(self.rng.integers(1, 6))
        idx = [int(i) for i in self.rng.integers(-n, n, k)]
        if self.chance(0.3) and a.ndim >= 2 and axis == 0:   # two arrays broadcast together
            m = a.shape[1]
            if m == 0: raise Reject
            idx2 = [int(i) for i in self.rng.integers(-m, m, k)]
            return f"{{a}}[np.array({idx}), np.array({idx2})]", ()
        return f"{{a}}[{lead}np.array({idx})]", ()

    def params(self, op: str, a: np.ndarray):
        nd = a.ndim
        if op == "astype": return self.choice(CAST_TARGETS)
        if op == "pow": return self.choice([2, 3])
        if op in ("sum", "npsum", "mean", "max", "min", "prod", "any", "all", "std", "var", "nansum"):
            return self.axis(a), self.chance(0.5)
        if op in ("argmax", "argmin"): return self.axis(a, allow_tuple=False)
        if op in ("cumsum", "cumprod", "add_accumulate", "max_accumulate"):
            if op != "cumsum" and op != "cumprod" and nd == 0: raise Reject
            return self.axis(a, allow_tuple=False) if op in ("cumsum", "cumprod") else int(self.rng.integers(-nd, nd))
        if op == "add_reduce": return self.axis(a)
        if op == "nonzero":
            if nd == 0: raise Reject
            return int(self.rng.integers(0, nd))
        if op == "take":
            if nd == 0 or self.chance(0.2): return [int(i) for i in self.rng.integers(-a.size, max(a.size, 1), 3)], None
            axis = int(self.rng.integers(-nd, nd))
            n = a.shape[axis]
            return [int(i) for i in self.rng.integers(-n, max(n, 1), int(self.rng.integers(1, 5)))], axis
        if op == "index": return self.basic_index(a)
        if op == "transpose": return tuple(int(x) for x in self.rng.permutation(nd))
        if op == "reshape":
            shapes = [(-1,), (a.size,), a.shape + (1,), (1,) + a.shape]
            if nd >= 2: shapes.append((a.shape[0], -1) if a.shape[0] else (0, -1 if a.size else 0))
            return self.choice(shapes)
        if op == "broadcast": return (int(self.rng.integers(1, 4)),) + a.shape
        if op == "expand_dims": return int(self.rng.integers(-nd - 1, nd + 1))
        if op == "flip": return self.axis(a)
        if op == "roll":
            if nd == 0: raise Reject
            return int(self.rng.integers(-4, 5)), self.axis(a)
        if op == "diff":
            if nd == 0: raise Reject
            return int(self.rng.integers(-nd, nd))
        if op == "tile": return tuple(int(x) for x in self.rng.integers(1, 3, int(self.rng.integers(1, 3))))
        if op == "repeat": return int(self.rng.integers(0, 3)), self.axis(a, allow_tuple=False)
        if op == "pad": return tuple((int(self.rng.integers(0, 2)), int(self.rng.integers(0, 3))) for _ in range(nd))
        if op in ("triu", "tril"):
            if nd < 2: raise Reject
            return int(self.rng.integers(-2, 3))
        if op == "full_like": return self.choice([0, 1, -2, 2.5, True])
        return None

    # ---- statements ----
    def add(self, op: str, template: str, operands: list[Var], p=None, write: bool = False,
            target: str | None = None) -> None:
        selected: set[str] | str = {v.selected for v in operands if v.selected}
        if selected:
            # arrays of run-time length take elementwise operations with scalars or arrays of the same selection,
            # reductions, cumulative sums and products, and basic indexing (numfn.dynamic); nothing else
            if write or op not in SELECTED_OK or len(selected) > 1: raise Reject
            if builtins.any(not v.selected and v.value.ndim > 0 for v in operands[1:]): raise Reject
        names = {k: v.name for k, v in zip("abc", operands)}
        expr = template.format(p=p, **names)
        part = operands[0].part
        if write:
            text = expr
            out_name = operands[0].name
        else:
            out_name = target or f"v{self.count}"
            text = f"{out_name} = {expr}"
        # a write changes arrays in place (and every view of them, as in the program): it runs on the real
        # environment, which is rebuilt from the statements if the write turns out not to be valid
        env = self.env if write else dict(self.env)
        try:
            _eval(text, env)
            out = np.asarray(env[out_name])
            if out.dtype not in SUPPORTED: raise Reject
            if out.dtype.kind == "f" and not np.isfinite(out).all(): raise Reject
            if out.size > 4096: raise Reject
            scale = _scale(op, p, operands, out)
            if scale > MAX_SCALE: raise Reject
        except Exception as e:   # noqa: BLE001 - NumPy refuses: not a valid statement
            if write: self._replay()
            raise Reject from e
        exact = out.dtype.kind != "f" or (op not in INEXACT and all(v.exact for v in operands))
        if op == "pow" and p != 2 and out.dtype.kind == "f": exact = False
        lowp = out.dtype == np.float32 or any(v.lowp for v in operands)
        self.env = env
        used = tuple(v.name for v in operands)
        if write:
            old = operands[0]
            # the written array's new value: its metadata joins the written values'
            old.value = out
            old.scale = max(scale, old.scale)
            old.exact = old.exact and exact
            old.lowp = old.lowp or lowp
            self.stmts.append(Stmt(op, out_name, used, text, part, write=True))
            return
        self.count += 1
        selected = out_name if op in ("mask", "nonzero") else next((v.selected for v in operands if v.selected), "")
        if op in REDUCES and not op.endswith("accumulate") and op not in ("cumsum", "cumprod"): selected = ""
        self.vars.append(Var(out_name, out, scale, exact, lowp, part, copy=op == "copy", selected=selected))
        self.stmts.append(Stmt(op, out_name, used, text, part))

    def _replay(self) -> None:
        """The environment rebuilt from the inputs and the statements so far (after a write that failed)."""
        self.env = {f"x{i}": x.copy() for i, x in enumerate(self.inputs)}
        for s in self.stmts: _eval(s.text, self.env)
        for v in self.vars:
            if v.name in self.env: v.value = np.asarray(self.env[v.name])

    def step(self, part: int) -> None:
        kind = self.choice(["unary", "unary", "view", "reduce", "shape", "binary", "binary", "binary", "where",
                            "write"])
        a = self.pick(part)
        assert a is not None   # every part has its inputs
        if kind == "write":
            if not self.writes: raise Reject
            return self.write(part)
        if kind == "where": return self.where(part)
        if kind in ("unary", "view", "reduce", "shape"):
            pool = sorted(VIEWS if kind == "view" else REDUCES if kind == "reduce" else SHAPES if kind == "shape"
                          else set(UNARY) - VIEWS - REDUCES - SHAPES)
            op = self.choice(pool)
            if op in DISCONTINUOUS and not a.exact: raise Reject
            if op == "astype" and a.value.dtype.kind == "f" and not a.exact: raise Reject
            # NumPy squares a bool ndarray in int8 but powers a bool scalar in int64; a 0-d traced value stands for
            # both (ufuncs of 0-d arrays return NumPy scalars), so numfn follows the array
            if op == "pow" and a.value.dtype == np.bool_ and a.value.ndim == 0: raise Reject
            if op == "gather":
                template, extra = self.int_array_index(a.value, part)
                others = [self.vars[[v.name for v in self.vars].index(n)] for n in extra]
                return self.add(op, template, [a, *others])
            return self.add(op, UNARY[op], [a], self.params(op, a.value))
        op = self.choice(sorted(BINARY))

        def fits(v: Var) -> bool:
            assert a is not None   # as above (the checker does not carry that into here: `a` is swapped below)
            try:
                np.broadcast_shapes(v.value.shape, a.value.shape)
                return True
            except ValueError:
                return False
        p = None
        if op in ("stack", "concat"):
            b = self.pick(part, lambda v: v.value.ndim == a.value.ndim and (op == "concat" or
                                                                            v.value.shape == a.value.shape))
            if a.value.ndim == 0 and op == "concat": raise Reject
            nd = a.value.ndim + (op == "stack")
            p = int(self.rng.integers(-nd, nd))
        elif op == "mask":   # boolean indexing: a result of run-time length
            b = self.pick(part, lambda v: v.value.shape == a.value.shape and v.exact and v.value.ndim >= 1)
            if b is not None and b.value.dtype != np.bool_:
                return self.add("mask", "{a}[{b} > 0]", [a, b])
        elif op in ("matmul", "outer", "einsum"):
            if a.value.ndim == 0: raise Reject
            if op == "einsum":
                if a.value.ndim != 2: raise Reject
                b = self.pick(part, lambda v: v.value.ndim == 2 and v.value.shape[0] == a.value.shape[1])
                p = self.choice(["ij,jk->ik", "ij,jk->ki", "ij,jk->i", "ij,jk->", "ij,jk->jk"])
            else:
                k = a.value.shape[-1]
                b = self.pick(part, lambda v: v.value.ndim >= 1 and v.value.shape[-2 if v.value.ndim >= 2 else 0] == k)
        else:
            if self.chance(0.25):
                value = self.choice([2, 3, -1, 0, 1, 0.5, 2.5, -1.5, True])
                b = Var(repr(value), np.asarray(value), abs(float(value)) or 1.0, True, False, part)
                if op not in ("clip", "clip_int") and self.chance(0.5): a, b = b, a
            else:
                b = self.pick(part, fits)
        if b is None: raise Reject
        if op in DISCONTINUOUS and not (a.exact and b.exact): raise Reject
        self.add(op, BINARY[op], [a, b], p)

    def where(self, part: int) -> None:
        a = self.pick(part)
        b = self.pick(part)
        assert a is not None and b is not None   # every part has its inputs
        c = self.pick(part, lambda v: v.exact)
        if c is None: raise Reject
        if c.value.dtype != np.bool_:
            return self.add("where", "np.where({c} > 0, {a}, {b})", [a, b, c])
        self.add("where", TERNARY["where"], [a, b, c])

    def write(self, part: int) -> None:
        """x[index] = v or x[index] += v into an argument or a copy made earlier (possibly through a view)."""
        target = self.pick(part, lambda v: v.copy and v.value.ndim >= 1)
        if target is None:
            src = self.pick(part, lambda v: v.value.ndim >= 1)
            if src is None: raise Reject
            return self.add("copy", UNARY["copy"], [src])
        value = self.pick(part)
        assert value is not None   # every part has its inputs
        x = target.value
        extra: tuple[str, ...]
        if self.chance(0.5):
            index = self.basic_index(x)
            template, extra = "{a}[" + index + "]", ()
        else:
            template, extra = self.int_array_index(x, part)
        others = [self.vars[[v.name for v in self.vars].index(n)] for n in extra]
        combine = self.choice(["=", "=", "+=", "-=", "*="])
        text = template + f" {combine} " + ("{c}" if others else "{b}")
        operands = [target, *others, value] if others else [target, value]
        if combine != "=" and not (value.exact and target.exact) and x.dtype.kind != "f": raise Reject
        op = "write" if combine == "=" else "update"
        if x.dtype.kind in "iub" and value.value.dtype.kind == "f" and not value.exact: raise Reject
        self.add(op, text, operands, write=True)


def generate(seed: int, parts: int = 4, steps: int = 10, writes: bool = True) -> Program:
    """A random program of `parts` independent parts, each of up to `steps` statements (with `writes`, some write
    into arguments and copies)."""
    rng = np.random.default_rng(seed)
    g = Generator(rng, seed, writes)
    outputs = []
    for part in range(parts):
        g.make_inputs(part)
        tries = 0
        target = int(rng.integers(1, steps + 1))
        made = 0
        while made < target and tries < 20 * steps:
            tries += 1
            before = len(g.stmts)
            try:
                g.step(part)
            except Reject:
                continue
            made += len(g.stmts) > before
        values = [v for v in g.vars if v.part == part and not v.name.startswith("x")]
        if values:
            outputs.append(values[-1].name)
            for v in values[:-1]:
                if rng.random() < 0.2: outputs.append(v.name)
    return Program(g.inputs, g.stmts, list(dict.fromkeys(outputs)), seed, parts)


# ---------------------------------------------------------------------------------------------------------------
# running and comparing

@dataclass
class Failure:
    config: tuple[str, bool]
    kind: str          # "mismatch", "error", "fallback", "unsupported" (refused as documented: not a failure)
    detail: str

    def same_kind(self, other: Failure | None) -> bool:
        return other is not None and (self.config, self.kind) == (other.config, other.kind) and \
            (self.kind != "error" or self.detail.split(":")[0] == other.detail.split(":")[0])

    def __str__(self) -> str:
        backend, noopt = self.config
        return f"[{backend}{' NOOPT=1' if noopt else ''}] {self.kind}: {self.detail}"


def _metadata(prog: Program) -> dict[str, Var] | None:
    """NumPy's value, scale and exactness of every variable (replaying the statements), or None if NumPy refuses
    the program (a shrinking step may make it invalid)."""
    env = {name: x.copy() for name, x in zip(prog.arg_names, prog.inputs)}
    meta = {name: Var(name, env[name], _mag(x), True, x.dtype == np.float32, 0)
            for name, x in zip(prog.arg_names, prog.inputs)}
    for s in prog.stmts:
        try:
            _eval(s.text, env)
        except Exception:   # noqa: BLE001
            return None
        operands = [meta[n] if n in meta else _literal(n) for n in s.operands]
        name = s.operands[0] if s.write else s.target
        out = np.asarray(env[name])
        if out.dtype not in SUPPORTED or (out.dtype.kind == "f" and not np.isfinite(out).all()): return None
        scale = _scale(s.op, _pow_param(s), operands, out)
        exact = out.dtype.kind != "f" or (s.op not in INEXACT and all(v.exact for v in operands))
        if s.op == "pow" and _pow_param(s) != 2 and out.dtype.kind == "f": exact = False
        lowp = out.dtype == np.float32 or any(v.lowp for v in operands)
        if s.write:
            old = meta[name]
            meta[name] = Var(name, out, max(scale, old.scale), old.exact and exact, old.lowp or lowp, 0)
        else:
            meta[name] = Var(name, out, scale, exact, lowp, 0)
    for name in prog.arg_names: meta[name] = Var(name, np.asarray(env[name]), meta[name].scale, meta[name].exact,
                                                  meta[name].lowp, 0)
    return meta


def _literal(text: str) -> Var:
    import ast
    value = ast.literal_eval(text)
    return Var(text, np.asarray(value), abs(float(value)) or 1.0, True, False, 0)


def _same_layout(x: np.ndarray) -> np.ndarray:
    """A copy of `x` with its memory layout: C or Fortran order, or a strided view of a larger array."""
    if x.flags.c_contiguous or x.flags.f_contiguous: return np.array(x, order="K", copy=True)
    return np.repeat(x, 2, axis=-1)[..., ::2]


def _pow_param(s: Stmt):
    if s.op != "pow": return None
    return int(s.text.rsplit("**", 1)[1])


def _compare(got, meta: Var, what: str) -> str | None:
    exp = np.asarray(meta.value)
    if not isinstance(got, np.ndarray): return f"{what}: {type(got).__name__}, NumPy gives an ndarray"
    if got.dtype != exp.dtype: return f"{what}: dtype {got.dtype}, NumPy gives {exp.dtype}"
    if got.shape != exp.shape: return f"{what}: shape {got.shape}, NumPy gives {exp.shape}"
    if exp.dtype.kind != "f":
        if not np.array_equal(got, exp):
            bad = np.argwhere(got != exp)[:3].tolist()
            return f"{what}: differs at {bad}: {got[tuple(np.array(bad).T)] if bad else got} vs NumPy's " \
                   f"{exp[tuple(np.array(bad).T)] if bad else exp}"
        return None
    rtol = (1e-5 if meta.lowp else 1e-12) * (1 if meta.exact else 4)
    atol = rtol * 4 * meta.scale
    with np.errstate(all="ignore"):
        close = np.isclose(got, exp, rtol=rtol, atol=atol, equal_nan=True)
    if not close.all():
        bad = np.argwhere(~close)[:3].tolist()
        pos = tuple(np.array(bad).T)
        return f"{what}: differs at {bad}: {got[pos].tolist()} vs NumPy's {exp[pos].tolist()} " \
               f"(rtol {rtol:g}, atol {atol:g})"
    return None


def run_config(prog: Program, config: tuple[str, bool], meta: dict[str, Var]) -> Failure | None:
    """Compile and run `prog` with one configuration; compare with NumPy's values in `meta`."""
    import numfn
    from numfn.errors import CompileError, NumfnError
    backend, noopt = config
    with overriding("NOOPT", "1" if noopt else "0"):
        fn = prog.function()
        jf = numfn.jit(fn, backend=backend)
        for call in range(2):   # the first call compiles; the second takes the registered fast path
            args = [_same_layout(x) for x in prog.inputs]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = jf(*args)
            except CompileError as e:
                return Failure(config, "error", f"CompileError: {e}")
            except NumfnError as e:
                if "is not supported inside a numfn-compiled function" in str(e):   # documented as refused
                    return Failure(config, "unsupported", str(e))
                return Failure(config, "error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}")
            except Exception as e:   # noqa: BLE001 - NumPy computed this program: any exception is a failure
                return Failure(config, "error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}")
            nf = jf.specializations[0] if jf.specializations else None
            if nf is not None and nf.fallback is not None:
                return Failure(config, "fallback", f"the {backend} backend failed; the program ran on "
                                                   f"{nf.fallback.backend}")
            if not isinstance(out, tuple) or len(out) != len(prog.outputs):
                return Failure(config, "mismatch", f"call {call}: returned {type(out).__name__}")
            for name, got in zip(prog.outputs, out):
                bad = _compare(got, meta[name], f"call {call}: output {name}")
                if bad: return Failure(config, "mismatch", bad)
            for name, got in zip(prog.arg_names, args):
                bad = _compare(got, meta[name], f"call {call}: argument {name} afterwards")
                if bad: return Failure(config, "mismatch", bad)
        return None


def check(prog: Program, configs=CONFIGS) -> Failure | None:
    """The first failure of `prog` among `configs`, or None when every configuration agrees with NumPy."""
    meta = _metadata(prog)
    if meta is None: return None
    for config in configs:
        if config[0] == "c" and not _have_c_compiler(): continue
        found = run_config(prog, config, meta)
        if found is not None: return found
    return None


def _have_c_compiler() -> bool:
    import shutil
    return bool(c_compiler() or shutil.which("clang") or shutil.which("cc") or shutil.which("gcc"))


# ---------------------------------------------------------------------------------------------------------------
# shrinking

def _uses(stmts: list[Stmt], name: str) -> bool:
    return any(name in s.operands for s in stmts)


def _without_dead(prog: Program) -> Program:
    """Statements nothing returned or written depends on removed (writes into arguments are results)."""
    live = set(prog.outputs) | set(prog.arg_names)
    keep = []
    for s in reversed(prog.stmts):
        if s.write and (s.operands[0] in live) or (not s.write and s.target in live):
            keep.append(s)
            live.update(s.operands)
    return Program(prog.inputs, list(reversed(keep)), prog.outputs, prog.seed, prog.parts)


def _candidates(prog: Program):
    # the statements nothing depends on removed (unless one of them is what fails: tracing runs them all)
    yield _without_dead(prog)
    # one output alone
    if len(prog.outputs) > 1:
        for o in prog.outputs: yield Program(prog.inputs, prog.stmts, [o], prog.seed, prog.parts)
    # no outputs but the arguments written
    if prog.outputs and any(s.write for s in prog.stmts):
        yield Program(prog.inputs, prog.stmts, [], prog.seed, prog.parts)
    # a statement removed (writes, or values replaced by an operand of the same shape and dtype)
    for i in reversed(range(len(prog.stmts))):
        s = prog.stmts[i]
        rest = prog.stmts[:i] + prog.stmts[i + 1:]
        if s.write:
            yield Program(prog.inputs, rest, prog.outputs, prog.seed, prog.parts)
            continue
        for o in s.operands:
            if not o.isidentifier(): continue
            renamed = [_rename(t, s.target, o) for t in rest[i:]]
            outputs = [o if x == s.target else x for x in prog.outputs]
            yield Program(prog.inputs, rest[:i] + renamed, list(dict.fromkeys(outputs)), prog.seed, prog.parts)
    # inputs nothing uses dropped (the others renumbered)
    used = [n for n in prog.arg_names if any(n in st.operands for st in prog.stmts) or n in prog.outputs]
    if len(used) < len(prog.inputs):
        yield _keep_inputs(prog, used)
    # inputs made simpler: ones
    for k, x in enumerate(prog.inputs):
        if x.size > 1:
            yield Program(prog.inputs[:k] + [np.ones_like(x)] + prog.inputs[k + 1:], prog.stmts, prog.outputs,
                          prog.seed, prog.parts)


def _keep_inputs(prog: Program, keep: list[str]) -> Program:
    stmts, outputs = prog.stmts, prog.outputs
    steps = [(old, f"tmp_{i}") for i, old in enumerate(keep)] + [(f"tmp_{i}", f"x{i}") for i in range(len(keep))]
    for old, new in steps:
        stmts = [_rename(st, old, new) for st in stmts]
        outputs = [new if o == old else o for o in outputs]
    inputs = [prog.inputs[prog.arg_names.index(k)] for k in keep]
    return Program(inputs, stmts, outputs, prog.seed, prog.parts)


def _rename(s: Stmt, old: str, new: str) -> Stmt:
    import re
    text = re.sub(rf"\b{re.escape(old)}\b", new, s.text)
    if not s.write: text = f"{s.target} = " + text.split(" = ", 1)[1]   # never rename the target itself
    return Stmt(s.op, s.target, tuple(new if o == old else o for o in s.operands), text, s.part, s.write)


def shrink(prog: Program, failure: Failure, budget: int = 300, log: Callable[[str], None] | None = None) -> Program:
    """A smaller program failing the same way (same configuration and kind), by greedy reduction steps."""
    configs = (failure.config,)
    tries = 0
    improved = True
    while improved and tries < budget:
        improved = False
        for cand in _candidates(prog):
            if len(cand.stmts) > len(prog.stmts) or (cand.source() == prog.source() and
                                                     all(np.array_equal(a, b) for a, b in zip(cand.inputs,
                                                                                              prog.inputs))):
                continue
            tries += 1
            if tries > budget: break
            if failure.same_kind(check(cand, configs)):
                prog = cand
                improved = True
                if log: log(f"  shrunk to {len(prog.stmts)} statements")
                break
    return prog


# ---------------------------------------------------------------------------------------------------------------
# driver

@dataclass
class Report:
    programs: int = 0      # programs checked against NumPy
    functions: int = 0
    unsupported: int = 0   # programs numfn refuses as documented (not checked, not counted in `programs`)
    failures: list = field(default_factory=list)   # (seed, failure, shrunk program)
    seconds: float = 0.0


def fuzz(count: int, seed: int = 0, parts: int = 4, steps: int = 10, configs=CONFIGS, shrink_failures: bool = True,
         log: Callable[[str], None] | None = None, log_dir: str | None = None,
         time_limit: float | None = None, writes: bool = True) -> Report:
    """Check `count` random programs (in functions of `parts` programs each) against NumPy."""
    report = Report()
    t0 = time.perf_counter()
    k = 0
    while report.programs < count:
        if time_limit is not None and time.perf_counter() - t0 > time_limit: break
        s = seed + k
        k += 1
        prog = generate(s, min(parts, count - report.programs), steps, writes)
        if log_dir is not None:   # the program being run, left behind if it takes the process down
            with open(os.path.join(log_dir, "current.py"), "w") as f: f.write(prog.describe())
        found = check(prog, configs)
        if found is not None and found.kind == "unsupported":
            report.unsupported += prog.parts
            continue
        report.programs += prog.parts
        report.functions += 1
        if found is not None:
            small = shrink(prog, found, log=log) if shrink_failures else prog
            final = check(small, (found.config,)) or found
            report.failures.append((s, final, small))
            if log: log(f"seed {s}: FAILED {final}\n{small.describe()}")
            if log_dir is not None:
                with open(os.path.join(log_dir, f"failure-{s}.py"), "w") as f:
                    f.write("".join(f"# {line}\n" for line in str(final).splitlines()) + small.describe())
        if log and report.functions % 50 == 0:
            log(f"{report.programs} programs, {len(report.failures)} failures, "
                f"{time.perf_counter() - t0:.0f} s")
    report.seconds = time.perf_counter() - t0
    return report


def main(argv: list[str]) -> int:
    """`python -m numfn fuzz [--count N] [--seed S] [--parts P] [--steps K] [--log DIR] [--no-shrink]`."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m numfn fuzz", description="Differential fuzzing against NumPy.")
    ap.add_argument("--count", type=int, default=1000, help="programs to check (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="the first seed (programs use seed, seed+1, ...)")
    ap.add_argument("--parts", type=int, default=4, help="independent programs per compiled function")
    ap.add_argument("--steps", type=int, default=10, help="statements per program, at most")
    ap.add_argument("--log", default=None, help="a directory for failures and the program being run")
    ap.add_argument("--no-shrink", action="store_true", help="report failures as found")
    ap.add_argument("--no-writes", action="store_true", help="no assignments (x[i] = v, x[i] += v)")
    args = ap.parse_args(argv)
    if args.log: os.makedirs(args.log, exist_ok=True)
    set_default("NUMFN_DISABLE_CACHE", "1")   # a run would fill the cache with programs never seen again

    def log(msg: str) -> None: print(msg, flush=True)
    report = fuzz(args.count, args.seed, args.parts, args.steps, shrink_failures=not args.no_shrink, log=log,
                  log_dir=args.log, writes=not args.no_writes)
    print(f"{report.programs} programs in {report.functions} compiled functions, {len(report.failures)} failures, "
          f"{report.seconds:.0f} s ({report.unsupported} more refused as documented)")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
