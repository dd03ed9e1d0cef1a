"""The fuzzer's programs (see numfn.tools.fuzz): variables with what is known of their values, statements, programs and
how they print; the tables of operations and how each propagates the scale and exactness of its values."""
from __future__ import annotations

import dataclasses
import linecache
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

INPUT_DTYPES = ("float64", "float32", "int64", "int32", "bool", "float64", "float32", "int8", "uint8", "int16",
                "uint16", "uint32", "uint64")
CAST_TARGETS = ("float64", "float32", "int64", "int32", "bool", "int8", "uint8", "int16", "uint32", "uint64")
BASE_SUPPORTED = {np.dtype(d) for d in INPUT_DTYPES}   # the base class keeps to these (float16 is rejected)
SUPPORTED = BASE_SUPPORTED | {np.dtype(d) for d in ("float16", "complex64", "complex128")}
MAX_SCALE = 1e6
INT64 = (-2 ** 63, 2 ** 63 - 1)
PY_SCALARS = (bool, int, float)
LOWP = (np.dtype(np.float32), np.dtype(np.complex64))   # single precision: float32's tolerance


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
    copy: bool = False     # an array the program may write into (a .copy(), or a view of one in the view classes)
    selected: str = ""     # of run-time length (x[mask], nonzero): the statement that selected its elements
    half: bool = False     # float16 took part (float16's tolerance)
    py: bool = False       # a Python scalar (bool, int, float): weak in NumPy's promotion
    nan: bool = False      # may hold NaN (only NaN-aware operations take it)


@dataclass
class Stmt:
    """`target = template` (or, for writes, the statement itself): {a}, {b}, {c} are operand names, {p} the
    parameter's source. `op` names the operation (it decides how scale and exactness propagate). A compound
    statement (a loop, an if) is several lines and may bind more names (`targets`); `alts` are simpler versions of
    its text binding the same names (the shrinker tries them); `param` is what its scale needs (a trip count)."""
    op: str
    target: str
    operands: tuple[str, ...]
    text: str              # the statement's source with operand names filled in
    part: int
    write: bool = False    # writes into operands[0] (an argument or a copy): x[index] = v, x[index] += v
    param: Any = None
    targets: tuple[str, ...] = ()   # further names a compound statement binds
    alts: tuple[str, ...] = ()

    @property
    def binds(self) -> tuple[str, ...]:
        return () if self.write else (self.target, *self.targets)


@dataclass
class Program:
    inputs: list            # arrays, and Python scalars (bool, int, float) for the scalar class
    stmts: list[Stmt]
    outputs: list[str]
    seed: int = 0
    parts: int = 1
    keywords: bool = False  # also called with keyword arguments (the results must agree, no recompilation)
    ret: tuple[str, str, str, str] | None = None   # (condition, output, view if true, view if false): see source()

    @property
    def arg_names(self) -> list[str]:
        return [f"x{i}" for i in range(len(self.inputs))]

    def but(self, **changes) -> Program:
        return dataclasses.replace(self, **changes)

    def source(self) -> str:
        """The program as a Python function over NumPy's namespace `np`. With `ret`, the function returns from both
        sides of an if: `if cond: return (..., e1)` / `else: return (..., e2)` (e1, e2 views of one array)."""
        lines = [f"def f({', '.join(self.arg_names)}):"]
        ret = self.ret if self.ret is not None and self.ret[1] in self.outputs else None
        for s in self.stmts:
            if ret and s.target == ret[1]: continue   # the if returning (its text is NumPy's)
            lines += [f"    {line}" for line in s.text.split("\n")]

        def outs(r: str = "", e: str = "") -> str:
            return ''.join((e if o == r else o) + ', ' for o in self.outputs)
        if ret:
            cond, out, e1, e2 = ret
            lines += [f"    if {cond}:", f"        return ({outs(out, e1)})", "    else:",
                      f"        return ({outs(out, e2)})"]
        else:
            lines.append(f"    return ({outs()})")
        return "\n".join(lines) + "\n"

    def describe(self) -> str:
        """The inputs as Python literals and the source: enough to reproduce a failure by hand."""
        args = []
        for name, x in zip(self.arg_names, self.inputs):
            if is_py(x):
                args.append(f"{name} = {x!r}")
                continue
            shape = f".reshape({x.shape})" if x.size == 0 else ""
            args.append(f"{name} = np.array({_literal(x.tolist())}, dtype=np.{x.dtype.name}){shape}")
        head = "import numpy as np\n" + ("nan = np.nan\n" if any("nan" in a for a in args) else "")
        call = ""
        if self.keywords: call = f"# called as f({', '.join(f'{n}={n}' for n in self.arg_names)}) too\n"
        return head + "\n".join(args) + "\n" + call + self.source()

    def function(self) -> Callable:
        """The program as a function; its source is registered with linecache (as if in a file), so numfn can read
        it and convert its loops and branches."""
        source = self.source()
        filename = f"<fuzz program {self.seed} {hash(source) & 0xffffffff:08x}>"
        _register(filename, source)
        namespace: dict[str, Any] = {"np": np}
        exec(compile(source, filename, "exec"), namespace)   # noqa: S102 - our source
        return namespace["f"]


def _literal(values) -> str:
    """Python source of nested lists of numbers (complex numbers as complex(re, im): repr gives `(nan+nanj)`)."""
    if isinstance(values, list): return "[" + ", ".join(_literal(v) for v in values) + "]"
    if isinstance(values, complex): return f"complex({values.real!r}, {values.imag!r})"
    return repr(values)


_registered: list[str] = []


def _register(filename: str, source: str) -> None:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    _registered.append(filename)
    while len(_registered) > 256: linecache.cache.pop(_registered.pop(0), None)


def fresh(x):
    """A copy of an input (a Python scalar is its own copy)."""
    return x if is_py(x) else x.copy()


# ---------------------------------------------------------------------------------------------------------------
# operations: template, parameter maker, and how scale and exactness propagate

INEXACT = {"exp", "exp2", "log", "log2", "sin", "cos", "tan", "tanh", "sum", "mean", "prod", "cumsum", "cumprod",
           "matmul", "einsum", "dot", "apow", "std", "var", "diff_sum", "outer", "nansum", "expm1", "log1p", "cbrt",
           "arcsinh", "add_reduce", "add_accumulate", "arctan2", "hypot", "logaddexp", "sub_outer",
           "nanmean", "nanprod", "angle", "spow", "loop~", "while~"}
DISCONTINUOUS = {"floor", "ceil", "trunc", "floordiv", "mod", "lt", "le", "gt", "ge", "eq", "ne", "sign", "where",
                 "logical_not", "logical_and", "logical_or", "logical_xor", "argmax", "argmin", "any", "all",
                 "isnan", "isfinite", "clip_int", "rint", "mask", "nonzero", "heaviside", "copysign",
                 "sort", "nanargmax", "nanargmin", "sfloordiv", "smod", "scmp", "branch", "where_s"}
# exact on complex values too (the others are exact on real values only: a complex product takes an FMA per part)
COMPLEX_EXACT = {"neg", "positive", "real", "imag", "conj", "copy", "fresh", "add", "sub", "stack", "concat", "where",
                 "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "sort", "argmax", "argmin",
                 "nanargmax", "nanargmin", "max", "min", "nanmax", "nanmin", "isnan", "isfinite", "astype", "write",
                 "branch", "full_like", "zeros_like", "flip", "roll", "tile", "repeat", "pad", "triu", "tril",
                 "take", "gather", "index", "transpose", "reshape", "broadcast", "expand_dims", "squeeze",
                 "swapaxes", "flatten", "moveaxis", "ravel", "any", "all", "logical_not", "logical_and",
                 "logical_or", "logical_xor", "mask", "nonzero", "diff"}
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
# new arrays to write into (numfn.tools.fuzz.generator's write): constants of the shape (and dtype) of `a`
FRESH = ["np.zeros_like({a})", "np.ones_like({a})", "np.full_like({a}, 3)", "np.zeros({a}.shape, np.int64)",
         "np.zeros({a}.shape)"]
# the complex class's further operations (complex64/128 and float16, NaN in the inputs)
NAN_UNARY = {
    "nanmax": "np.nanmax({a}, axis={p[0]}, keepdims={p[1]})", "nanmin": "np.nanmin({a}, axis={p[0]}, keepdims={p[1]})",
    "nanmean": "np.nanmean({a}, axis={p[0]}, keepdims={p[1]})", "nansum": UNARY["nansum"],
    "nanprod": "np.nanprod(np.clip({a}, -2, 2), axis={p[0]}, keepdims={p[1]})",
    "nanargmax": "np.nanargmax({a}, axis={p})", "nanargmin": "np.nanargmin({a}, axis={p})",
    "argmax": UNARY["argmax"], "argmin": UNARY["argmin"], "sort": "np.sort({a}, axis={p})",
    "isnan": UNARY["isnan"], "max": UNARY["max"], "min": UNARY["min"],
}
COMPLEX_UNARY = {"real": "np.real({a})", "imag": "np.imag({a})", "conj": "np.conj({a})", "angle": "np.angle({a})",
                 "sort": "np.sort({a}, axis={p})", **{k: v for k, v in NAN_UNARY.items() if k.startswith("nan")}}
NAN_OK = set(NAN_UNARY)   # the operations a value with NaN may go into
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
AXIS_KEEPDIMS = {"sum", "npsum", "mean", "max", "min", "prod", "any", "all", "std", "var", "nansum", "nanmax",
                 "nanmin", "nanmean", "nanprod"}


def mag(v) -> float:
    a = np.asarray(v)
    if a.size == 0 or a.dtype.kind == "b": return 1.0
    with np.errstate(all="ignore"):
        m = np.abs(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
        m = m[~np.isnan(m)] if a.dtype.kind in "fc" else m
    return max(1.0, float(m.max())) if m.size else 1.0


def evaluate(text: str, env: dict) -> None:
    """Run statements the fuzzer wrote in `env` (NumPy's values of the program's variables)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(text, {"np": np}, env)   # noqa: S102 - statements this module wrote


def scale(op: str, p, operands: list[Var], out: np.ndarray) -> float:
    """A bound on the magnitudes `out` was computed from (the scale of the absolute error its value may carry)."""
    s = [v.scale for v in operands] or [1.0]
    a = operands[0].value if operands else out
    if op in ("add", "sub", "stack", "concat", "clip", "sadd"): base = sum(s)
    elif op in ("mul", "div", "outer", "smul", "sdiv"): base = s[0] * max(1.0, s[1] if len(s) > 1 else 1.0)
    elif op in ("exp", "exp2"): base = 20.0 * s[0]
    elif op in ("sum", "npsum", "mean", "nansum", "cumsum", "std", "var", "diff", "nanmean"):
        base = s[0] * max(1, a.size // max(1, out.size) if op != "cumsum" else max(a.shape, default=1))
        if op == "var": base *= s[0]
        if op == "diff": base = 2 * s[0]
    elif op in ("prod", "cumprod", "nanprod"): base = _power(max(2.0, s[0]), max(1, max(a.shape, default=1)))
    elif op in ("pow", "spow"): base = _power(s[0], p or 2)
    elif op == "square": base = s[0] ** 2
    elif op in ("gram", "dot"): base = s[0] ** 2 * max(1, a.shape[-1] if a.ndim else 1)
    elif op in ("matmul", "einsum"): base = s[0] * s[1] * max(1, a.size)
    elif op == "apow": base = max(s[0], 1.0) ** 2 + 1.0
    elif op == "ipow": base = max(s[0], 1.0) ** 3
    elif op == "shl": base = MAX_SCALE   # wraps: only ever compared exactly (integers)
    elif op in ("loop", "loop~", "while", "while~", "search"): base = sum(s) * (1 + (p or 0))   # p: the trip count
    else: base = max(s)
    return max(base, mag(out), 1.0)


def _power(a: float, b: float) -> float:
    try:
        return float(a) ** b
    except OverflowError:
        return float("inf")


def exactness(op: str, p, operands: list[Var], out: np.ndarray) -> bool:
    """Whether `out` is computed by correctly rounded operations only (see numfn.tools.fuzz)."""
    if out.dtype.kind not in "fc": return True
    if op in INEXACT or not all(v.exact for v in operands): return False
    if op == "pow" and p != 2: return False
    if op not in COMPLEX_EXACT and (out.dtype.kind == "c" or any(v.value.dtype.kind == "c" for v in operands)):
        return False
    return True


def tame(out: np.ndarray, operands: list[Var], supported=SUPPORTED) -> bool:
    """A value the fuzzer keeps: a supported dtype, finite (NaN only from operands with NaN)."""
    if out.dtype not in supported: return False
    if out.dtype.kind in "fc" and not np.isfinite(out).all():
        return any(v.nan for v in operands) and not np.isinf(out).any()
    return True


def py_ok(value) -> bool:
    """A Python scalar numfn can hold: ints within int64 (NumPy itself converts larger ones to object)."""
    return not (type(value) is int and not INT64[0] <= value <= INT64[1])


def is_py(value) -> bool:
    """A Python scalar (np.float64 is a subclass of float, and not one)."""
    return type(value) in PY_SCALARS
