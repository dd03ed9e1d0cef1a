"""Program classes beyond the base statements (see numfn.tools.fuzz): each part of a program belongs to one class, which
decides its inputs and the statements it draws besides the base ones.

  loops     native loops (more than numfn's unroll limit of 4 iterations) with odd and even, static and run-time
            trip counts (from an argument's values), carrying arrays of narrow dtypes, the index indexing them,
            writes into the carried array inside the loop and after it (setitem, augmented assignment, through a
            view), a second name the body binds to the carried array or to a row of it by the index (r = t,
            r = t[i % n], always or in an `if`: sharing its memory after that) or to a view of the array the loop
            reads (r = a[::-1], r = a[i % n]), starting as a copy or as that array itself (r = a: still a where no
            iteration bound it), then writes into r or a after the loop; `while` loops whose values feed np.outer
  index     the same loops with the index (or a while loop's counter) in arithmetic: t + i, t * i, t - b * i
            with t of a narrow dtype (int8 * i is int8: the index is a Python int, weak)
  branches  `if`/`else` on a condition computed from the data (sometimes one that never or always holds) choosing
            views of arguments that are then written through (the caller's array changes), or values; a function
            returning different views from the two sides of an `if`
  scalars   Python bool, int and float arguments (2**40, 2**63-1, negative) with int8, uint8, float16 and float32
            arrays: Python arithmetic between two of them, NumPy functions of them (np.add(s, 1), np.where(c, s, 5)),
            and both mixed with arrays (NEP 50: Python scalars are weak, NumPy scalars strong); a program may end
            in a statement that must raise OverflowError (x_int8 + 2**40; a Python int leaving int64)
  complex   complex64, complex128 and float16 arguments, NaN in some: elementwise operations, reductions, the nan-
            reductions, argmax/argmin, sort, and loops and branches carrying them
  calls     the compiled function called with its arguments passed by name too (and mixed): the results must
            agree, and the calls must not compile again
"""
from __future__ import annotations

import re

import numpy as np

from numfn.tools.fuzz.generator import Generator
from numfn.tools.fuzz.program import (BINARY, CAST_TARGETS, COMPLEX_UNARY, LOWP, MAX_SCALE, NAN_UNARY, SUPPORTED, UNARY,
                                Program, Reject, Stmt, Var, evaluate, exactness, is_py, py_ok, scale, tame)

CLASSES = ("base", "loops", "index", "branches", "scalars", "complex", "calls")
LOOP_DTYPES = ("int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64", "uint16", "bool")
SCALAR_DTYPES = ("int8", "uint8", "float16", "float32", "int8", "uint8", "bool", "int64", "float64", "int16")
COMPLEX_DTYPES = ("complex128", "complex64", "float16", "complex64", "complex128", "float16", "float32", "float64",
                  "int8")
PY_VALUES = (True, False, 0, 1, -1, 3, -7, 2, 2 ** 40, -(2 ** 40), 2 ** 63 - 1, -(2 ** 63), 0.5, -2.5, 3.0, 1e10)
PY_BINARY = {"sadd": "{a} + {b}", "ssub": "{a} - {b}", "smul": "{a} * {b}", "sdiv": "{a} / {b}",
             "sfloordiv": "{a} // {b}", "smod": "{a} % {b}", "slt": "{a} < {b}", "seq": "{a} == {b}",
             "sand": "{a} & {b}", "sor": "{a} | {b}", "sxor": "{a} ^ {b}"}
NP_OF_SCALARS = {"np_add1": "np.add({a}, 1)", "np_add": "np.add({a}, {b})", "np_mul": "np.multiply({a}, {b})",
                 "np_neg": "np.negative({a})", "np_abs": "np.abs({a})", "np_square": "np.square({a})",
                 "np_max": "np.maximum({a}, {b})", "np_sub": "np.subtract({a}, {b})", "np_asarray": "np.asarray({a})",
                 "np_div": "np.true_divide({a}, 2)", "np_pow": "np.power({a}, 2)", "np_fdiv": "np.floor_divide({a}, 3)"}
# a loop body's statements over the carried array {t}, an operand {b}, the index {i} and t's length {n}: the loops
# class uses the index only to index t; the index class in arithmetic (with t of a narrow dtype: t * i is int8)
BODY_PLAIN = ("{t} = {t} + {b}", "{t} = {t} - {b}", "{t} = {t} * {b}", "{t} = np.maximum({t}, {b})", "{t} += {b}",
              "{t} = np.minimum({t}, {b}) - {b}")
BODY_INDEXED = ("{t} = {t}[::-1] + {b}", "{t}[{i} % {n}] = {b}", "{t}[{i} % {n}] += {b}", "{t}[...] = {t} + {b}",
                "{t}[{i} % {n}] = {t}[({i} + 1) % {n}]")
BODY_ARITH = ("{t} = {t} + {i}", "{t} = {t} - {b} * {i}", "{t} = {t} * {i}", "{t} = {t} * {i} + {b}",
              "{t} = np.where({t} > {i}, {t} - {b}, {t} + {i})", "{t} = np.minimum({t}, {b}) + {i}",
              "{t} = {t} // ({i} + 1)", "{t} = {t} - {i} % 3", "{t} = np.maximum({t}, {i} - 4)")
# the two sides of a branch choosing a view: templates over {a} (and {b}, an array of {a}'s shape and dtype)
VIEW_PAIRS = (("{a}[1:]", "{a}[:-1]"), ("{a}[::2]", "{a}[1::2]"), ("{a}[::-1]", "{a}"), ("{a}[0]", "{a}[-1]"),
              ("{a}.T", "{a}"), ("{a}[..., 1:]", "{a}[..., :-1]"), ("{a}", "{a}[...]"), ("{a}[1:]", "{b}[:-1]"),
              ("{a}", "{b}"))
VALUE_EXPRS = ("{a}", "{a} + {b}", "{a} - {b}", "{a} * {b}", "-{a}", "np.maximum({a}, {b})", "{a} * 2",
               "{a}[::-1]", "np.sort({a}, axis=-1)", "{a}.sum(axis=0)", "{a}.max(axis=0)", "{b}", "{a} + 1")
# conditions on data: (template over {c}, needs an exact value); some never hold, some always do
CONDITIONS = ("{c}.sum() > 0", "np.any({c} > 0)", "{c}.max() < 2", "{c}.ravel()[0] > 0", "{c}.min() >= 0",
              "np.abs({c}).min() < 0", "(np.abs({c}) >= 0).all()", "np.isnan({c}).any()", "({c} == {c}).all()",
              "{c}.sum() > 1e9", "np.count_nonzero({c}) > 1")


class ClassGenerator(Generator):
    """The base generator with the classes' inputs and statements."""

    def __init__(self, rng: np.random.Generator, seed: int = 0, writes: bool = True, classes=("base",)):
        super().__init__(rng, seed, writes)
        self.classes = tuple(classes)
        self.kind: dict[int, str] = {}
        self.view_writes = any(c not in ("base", "calls") for c in self.classes)
        if self.view_writes: self.supported = SUPPORTED
        self.forced: list[str] = []   # outputs the templates want returned (the array written after a loop)
        self.ret: tuple[str, str, str, str] | None = None
        self.current = 0
        self.raises = False   # the last statement raises OverflowError (and the program ends there)

    def fresh_name(self, prefix: str = "v") -> str:
        self.count += 1
        return f"{prefix}{self.count - 1}"

    def overflowed(self, op: str, text: str, operands: list[Var], target: str, wide: bool) -> None:
        """A scalars-class statement NumPy refuses with OverflowError (`x_int8 + 2**40`), or whose Python int
        leaves int64 (`s ** 30`, which Python computes exactly; `wide`, then returned): kept sometimes as the
        program's last statement, and numfn must raise OverflowError too (numfn holds Python ints in int64; it
        checks them when called)."""
        if self.kind.get(self.current) != "scalars" or self.raises or self.chance(0.7): return
        part = operands[0].part if operands else self.current
        self.stmts.append(Stmt("raises", target, tuple(v.name for v in operands), text, part))
        self.raises = True
        if wide: self.forced.append(target)

    def max_scale(self) -> float:
        # Python ints up to 2**63 in the scalars class (integers are compared exactly: their scale is not used)
        return 1e19 if self.kind.get(self.current, "base") == "scalars" else MAX_SCALE

    def literals(self) -> list:
        return list(PY_VALUES) if self.kind.get(self.current, "base") == "scalars" else super().literals()

    # ---- inputs ----
    def make_class_inputs(self, part: int) -> None:
        kind = self.kind[part]
        self.current = part
        if kind in ("base", "calls"): return self.make_inputs(part)
        dtypes = {"loops": LOOP_DTYPES, "index": LOOP_DTYPES, "branches": LOOP_DTYPES, "scalars": SCALAR_DTYPES,
                  "complex": COMPLEX_DTYPES}[kind]
        rank = int(self.rng.integers(1, 3))
        base = tuple(int(self.rng.integers(1, 6)) for _ in range(rank))
        for _ in range(int(self.rng.integers(1, 3 if kind == "scalars" else 4))):
            k = int(self.rng.integers(0 if kind == "complex" or (kind == "scalars" and self.chance(0.2)) else 1,
                                      len(base) + 1))
            shape = base[len(base) - k:]
            x = self.array(shape, np.dtype(self.choice(dtypes)))
            nan = False
            if kind == "complex" and x.dtype.kind in "fc" and x.size and self.chance(0.35):
                x = x.copy()
                flat = x.reshape(-1)
                for j in self.rng.integers(0, x.size, int(self.rng.integers(1, 3))):
                    if x.dtype.kind == "c" and self.chance(0.5): flat[j] = complex(float(flat[j].real), np.nan)
                    else: flat[j] = np.nan
                nan = True
            self.add_input(x, part, nan=nan)
        if kind == "scalars":
            for _ in range(int(self.rng.integers(1, 4))): self.add_input(self.choice(PY_VALUES), part)

    # ---- steps ----
    def step(self, part: int) -> None:
        self.current = part
        kind = self.kind.get(part, "base")
        if kind in ("base", "calls"): return super().step(part)
        menu = {"loops": ["base", "base", "loop", "loop", "loop", "while_", "write", "loop_return"],
                "index": ["base", "loop", "loop", "loop", "while_", "loop_return"],
                "branches": ["base", "base", "branch_view", "branch_view", "branch_value", "view_write", "write"],
                "scalars": ["base", "scalar", "scalar", "np_scalar", "np_scalar", "mixed", "mixed", "mixed"],
                "complex": ["base", "base", "base", "complex", "complex", "nan", "loop", "branch_value",
                            "branch_view"]}[kind]
        what = self.choice(menu)
        if what == "base": return super().step(part)
        if what == "write":
            if not self.writes: raise Reject
            return self.write(part)
        return getattr(self, what)(part)

    # ---- loops ----
    def carry_ok(self, v: Var) -> bool:
        return not v.selected and not v.nan and not v.py and 0 < v.value.size <= 256

    def loop(self, part: int) -> None:
        """`t = a.copy(); for i in range(n): <1-2 lines updating t>` (n static and above the unroll limit, or from
        an argument's values), maybe a second carried value, then writes into t after the loop."""
        a = self.pick(part, self.carry_ok)
        if a is None: raise Reject
        t, i = self.fresh_name(), self.fresh_name("i")
        headers, operands = self.trip_counts(part, i)
        body, used = self.body_lines(part, t, a, i, 3)
        init = f"{a.name}.copy()" if operands or self.chance(0.85) else a.name
        acc = ""
        if not operands and self.chance(0.25):   # a second carried value: a Python number the body makes a NumPy scalar
            acc = self.fresh_name("s")
            body.append(f"{acc} = {acc} + {t}.{self.choice(['max', 'sum', 'min'])}()")
        lines = [f"{t} = {init}"] + ([f"{acc} = 0"] if acc else [])
        alias, alias_of = "", a.value
        if self.chance(0.2):   # a second name the body makes t's array, or a row of it by the index (always, at some
            alias = self.fresh_name("r")   # index, or on the data), or a view of the array the loop reads
            row = a.value.ndim >= 2 and self.chance(0.4)
            alias_of = a.value[0] if row else a.value
            start = f"{a.name}[0]" if row else a.name   # (a itself: r is a where no iteration binds it)
            lines.append(f"{alias} = {start}" + ("" if self.chance(0.3) else ".copy()"))
            when = self.choice(["", f"if {i} == 2: ", f"if {i} % 3 == 1: ", f"if {t}.sum() > {alias}.sum(): "])
            source = a.name if self.chance(0.3) else t
            flip = "[::-1]" if a.value.ndim else "[...]"   # (a 0-d array has no axis to flip: NumPy raises)
            view = f"[{i} % {a.value.shape[0]}]" if row else flip if source == a.name else ""
            body.insert(0 if self.chance(0.5) else len(body), f"{when}{alias} = {source}{view}")

        def render(header: str, body_lines: list[str]) -> str:
            return "\n".join(lines + [header] + [f"    {x}" for x in body_lines])
        text = render(headers[0], body)
        shorter = sorted(self.body_alts(body, acc, alias), key=len)   # (the shrinker takes the first that still fails)
        alts = tuple(dict.fromkeys(render(h, b) for h in headers for b in shorter if render(h, b) != text))
        self.compound("loop", text, [a, *operands, *used], (t,) + ((acc,) if acc else ()) + ((alias,) if alias else ()),
                      alts, stable={t: (a.value.dtype, a.value.shape), **({alias: (alias_of.dtype, alias_of.shape)}
                                                                         if alias else {})})
        self.after_loop(part, t)
        if alias and self.chance(0.5): self.after_loop(part, alias)
        if alias and self.chance(0.3): self.after_loop(part, a.name)   # (a write into the array r may be a view of)

    def loop_return(self, part: int) -> None:
        """A helper whose loop returns from inside: `def h(t, b): for i in range(n): <body>; if t.max() >= c:
        return t, i`, then `return t, -1`; `t, k = h(a.copy(), b)`. The threshold is a value t.max() takes in some
        iteration (or none), so the return comes at the first, a later or no iteration; the max of exact values is
        exact, so NumPy's loop and numfn's leave at the same iteration. (The operands are the helper's parameters:
        its body sees the program's variables no other way.)"""
        a = self.pick(part, lambda v: self.carry_ok(v) and v.exact and v.value.dtype.kind in "iuf")
        if a is None: raise Reject
        t, i, k, h = self.fresh_name(), self.fresh_name("i"), self.fresh_name("k"), self.fresh_name("h")
        n = int(self.choice([5, 6, 7, 9]))
        body, used = self.body_lines(part, t, a, i, 3)
        used = list({v.name: v for v in used}.values())
        env = {name: v.copy() if isinstance(v, np.ndarray) else v for name, v in self.env.items()}
        maxima: list = []
        env["_maxima"] = maxima
        try:   # the maxima the loop reaches, on copies
            evaluate("\n".join([f"{t} = {a.name}.copy()", f"for {i} in range({n}):"] + [f"    {x}" for x in body] +
                                [f"    _maxima.append({t}.max())"]), env)
        except Exception as e:   # noqa: BLE001 - NumPy refuses the body
            raise Reject from e
        if not maxima or not np.isfinite(np.asarray(maxima, np.float64)).all(): raise Reject
        integer = a.value.dtype.kind in "iu"
        values = [int(m) if integer else float(m) for m in maxima]
        above = max(values) + 1   # (never reached)
        if integer and above > np.iinfo(a.value.dtype).max: above = values[-1]
        c = self.choice(values[:1] + values[n // 2:n // 2 + 1] + [above])
        literal = repr(c)
        # the helper's own names for its parameters (the shrinker renames the program's variables in the text)
        inner = {t: f"{h}_t", **{v.name: f"{h}_{j}" for j, v in enumerate(used)}}
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, inner)) + r")\b")
        body = [pattern.sub(lambda m: inner[m.group(1)], x) for x in body]
        ti = inner[t]
        lines = [f"def {h}({', '.join(inner.values())}):", f"    for {i} in range({n}):"] + \
            [f"        {x}" for x in body] + \
            [f"        if {ti}.max() >= {literal}:", f"            return {ti}, {i}", f"    return {ti}, -1",
             f"{t}, {k} = {h}({', '.join([f'{a.name}.copy()'] + [v.name for v in used])})"]
        self.compound("search", "\n".join(lines), [a, *used], (t, k), stable={t: (a.value.dtype, a.value.shape)})
        self.after_loop(part, t)

    def trip_counts(self, part: int, i: str) -> tuple[list[str], list[Var]]:
        """The loop's header, and simpler ones (for the shrinker), and the arguments it reads."""
        if self.chance(0.5):
            n = int(self.choice([5, 6, 7, 8, 9, 11]))
            header = self.choice([f"range({n})", f"range(1, {n + 1})", f"range({n - 1}, -1, -1)",
                                  f"range(0, {2 * n}, 2)"])
            return [f"for {i} in {h}:" for h in (header, "range(5)", "range(6)")], []
        # a run-time trip count: the values of an argument of its own
        dt = self.choice(["int64", "int32", "int8", "uint8", "int16"])
        total = int(self.choice([0, 1, 2, 3, 5, 6, 7, 9]))
        first = int(self.rng.integers(0, total + 1))
        k = self.add_input(np.array([first, total - first], dtype=dt), part).name
        forms = [f"range({k}.sum())", f"range({k}[0] + {k}[1])", f"range({k}[0], {k}.sum())",
                 f"range(1, {k}.sum(), 2)"]
        if dt != "uint8": forms.append(f"range({k}.sum() - 1, -1, -1)")   # (unsigned: 0 - 1 wraps)
        header = self.choice(forms)
        return [f"for {i} in {h}:" for h in (header, f"range({k}.sum())", "range(5)")], [self.var(k)]

    def operand(self, part: int, t: np.ndarray, exact: bool = False) -> Var | None:
        """A variable or a literal combining with `t` into t's shape."""
        if self.chance(0.3):
            value = self.choice([1, 2, -1, 0.5, True, 3] if t.dtype.kind != "b" else [True, False])
            return Var(repr(value), np.asarray(value), abs(float(value)) or 1.0, True, False, part, py=True)

        def fits(v: Var) -> bool:
            if v.selected or v.nan or (exact and not v.exact): return False
            try:
                return np.broadcast_shapes(v.value.shape, t.shape) == t.shape
            except ValueError:
                return False
        return self.pick(part, fits)

    def body_lines(self, part: int, t: str, a: Var, i: str, ival) -> tuple[list[str], list[Var]]:
        """One or two statements each keeping t's dtype and shape (checked on a copy with NumPy)."""
        lines: list[str] = []
        used: list[Var] = []
        x = a.value
        for _ in range(int(self.rng.integers(1, 3))):
            for _try in range(6):
                b = self.operand(part, x, exact=True)
                if b is None: continue
                n = x.shape[0] if x.ndim else 0
                forms = list(BODY_PLAIN) + (list(BODY_INDEXED) if n else [])
                if self.kind[part] == "index": forms = list(BODY_ARITH) + forms[:3]
                if x.dtype.kind == "b": forms = ["{t} = {t} ^ {b}", "{t} = np.logical_not({t})", "{t} = {t} | {b}"]
                line = self.choice(forms).format(t=t, b=b.name, i=i, n=n)
                if self.keeps(line, t, a, i, ival):
                    lines.append(line)
                    if not b.py: used.append(b)
                    break
        if not lines: raise Reject
        return lines, used

    def keeps(self, line: str, t: str, a: Var, i: str, ival) -> bool:
        """The statement keeps t's dtype and shape (on copies, whatever the trip count)."""
        env = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in self.env.items()}
        env[t], env[i] = a.value.copy(), ival
        try:
            evaluate(line, env)
        except Exception:   # noqa: BLE001 - NumPy refuses the statement
            return False
        out = env[t]
        return isinstance(out, np.ndarray) and out.dtype == a.value.dtype and out.shape == a.value.shape

    def body_alts(self, body: list[str], acc: str, alias: str = "") -> list[list[str]]:
        """Shorter bodies: a statement left out (not the one updating `acc`), and each of those without the line
        binding `alias` too."""
        alts = [body]
        if len(body) > 1:
            alts += [[x for k, x in enumerate(body) if k != j] for j in range(len(body))
                     if not (acc and body[j].startswith(acc))]
        if alias:
            alts += [short for b in alts if len(short := [x for x in b if f"{alias} = " not in x]) not in (0, len(b))]
        return alts

    def while_(self, part: int) -> None:
        """`t = a.copy(); c = 0; while c < n: t = ...; c = c + 1` (n static, or an argument's values), then
        np.outer of t."""
        a = self.pick(part, self.carry_ok)
        if a is None: raise Reject
        t, c = self.fresh_name(), self.fresh_name("c")
        operands: list[Var] = []
        if self.chance(0.5):
            bound = str(int(self.choice([5, 6, 7, 8])))
        else:
            k = self.add_input(np.array(int(self.choice([0, 1, 4, 5, 6, 7])), dtype=self.choice(["int64", "int8"])),
                               part)
            operands.append(k)
            bound = self.choice([f"{k.name}", f"{k.name} + 1", f"{k.name}.sum()"])
        # (a 0-d array start only with a static bound: with no iteration the counter stays that array, after one it
        # is a NumPy scalar, and numfn takes the body's kind: docs/reliability.md, known limitations)
        start = self.choice(["0"] + ([f"0 * {operands[0].name}"] if operands else ["np.zeros((), np.int64)"]))
        ival: object = 3
        if start != "0":
            env = dict(self.env)
            evaluate(f"_c = {start} + 3", env)
            ival = env["_c"]
        body, used = self.body_lines(part, t, a, c, ival)
        text = "\n".join([f"{t} = {a.name}.copy()", f"{c} = {start}", f"while {c} < {bound}:"] +
                         [f"    {x}" for x in body] + [f"    {c} = {c} + 1"])
        alt = "\n".join([f"{t} = {a.name}.copy()", f"{c} = 0", f"while {c} < 5:", f"    {body[0]}",
                         f"    {c} = {c} + 1"])
        self.compound("while", text, [a, *operands, *used], (t, c), (alt,) if alt != text else (),
                      stable={t: (a.value.dtype, a.value.shape)})
        tv = self.var(t)
        b = self.pick(part, lambda v: not v.selected and not v.nan and v.value.size * tv.value.size <= 4096)
        if b is not None and self.chance(0.8):
            try:
                self.add("outer", BINARY["outer"], [tv, b])
            except Reject:
                pass
        self.forced.append(t)

    def compound(self, op: str, text: str, operands: list[Var], targets: tuple[str, ...], alts=(),
                 stable: dict | None = None) -> None:
        """A statement of several lines binding `targets`, evaluated by NumPy in place (it may write into arrays);
        `stable` gives the dtype and shape some targets must end with (a loop's carried arrays)."""
        part = operands[0].part
        env = self.env
        try:
            if self.trips(text, env) > 64: raise Reject
            evaluate(text, env)
            outs = []
            for name in targets:
                raw = env[name]
                if stable and name in stable and (not isinstance(raw, np.ndarray) or
                                                  (raw.dtype, raw.shape) != stable[name]):
                    raise Reject
                if is_py(raw) and not py_ok(raw): raise Reject
                out = np.asarray(raw)
                if not tame(out, operands, self.supported) or out.size > 4096: raise Reject
                outs.append((name, raw, out))
            trips = self.trips(text, env)
            scales = [scale(op, trips, operands, out) for _, _, out in outs]
            if max(scales) > self.max_scale(): raise Reject
        except Exception as e:   # noqa: BLE001 - NumPy refuses, or values not tame
            self.replay()
            raise Reject from e
        inexact = op in ("loop", "while") and any(v.value.dtype.kind == "c" for v in operands)
        opname = op + ("~" if inexact else "")
        for (name, raw, out), sc in zip(outs, scales):
            exact = exactness(opname, trips, operands, out) and not (name != targets[0] and op != "branch" and
                                                                      out.dtype.kind in "fc" and ".sum()" in text)
            v = Var(name, out, sc, exact, out.dtype in LOWP or any(w.lowp for w in operands), part,
                    half=out.dtype == np.float16 or any(w.half for w in operands), py=is_py(raw),
                    nan=out.dtype.kind in "fc" and bool(np.isnan(out).any()))
            v.copy = not v.py and out.flags.writeable and out.size > 0 and \
                all(w.copy for w in self.sharing(v))
            self.vars.append(v)
        # arrays the statement wrote into (an argument carried without a copy) are less exact now
        for name, _, out in outs:
            for w in self.vars:
                if w.name not in targets and not w.py and np.may_share_memory(w.value, out):
                    w.exact = w.exact and self.var(name).exact
        self.stmts.append(Stmt(opname, targets[0], tuple(v.name for v in operands), text, part, param=trips,
                               targets=targets[1:], alts=tuple(alts)))

    @staticmethod
    def trips(text: str, env: dict) -> int:
        """The iterations a loop statement made (its counter's value for while loops), for the scale."""
        head = next((x.strip() for x in text.split("\n") if x.strip().startswith(("for ", "while "))), "")
        if head.startswith("for "):
            return len(eval(head.split(" in ", 1)[1].rstrip(":"), {"np": np}, dict(env)))   # noqa: S307
        if head.startswith("while "):
            return int(np.asarray(env.get(head.split()[1], 0)))
        return 0

    def after_loop(self, part: int, t: str) -> None:
        """Writes into the loop's result: x[index] = v, x[index] += v, x += v, or through a view of it."""
        self.forced.append(t)
        tv = self.var(t)
        if not tv.copy or not self.writes or self.chance(0.15): return
        try:
            if self.chance(0.4): self.through_view(part, tv)
            elif self.chance(0.3): self.literal_write(part, tv)
            else: self.write(part, target=tv)
        except Reject:
            pass

    # ---- views and branches ----
    def through_view(self, part: int, target: Var) -> None:
        """w = target[view]; a write into w (it reaches target, as in NumPy)."""
        x = target.value
        if x.ndim == 0: raise Reject
        view = self.choice(["{a}[1:]", "{a}[::2]", "{a}[::-1]", "{a}[0]", "{a}[..., :1]", "{a}.T", "{a}.reshape(-1)"
                            if x.flags.c_contiguous else "{a}[:]"])
        self.add("index", view, [target])
        w = self.vars[-1]
        if not w.copy: raise Reject
        self.literal_write(part, w) if self.chance(0.5) else self.write(part, target=w)

    def literal_write(self, part: int, target: Var) -> None:
        """target[index] = 7 (a constant: also into integer arrays, which NumPy casts it to)."""
        x = target.value
        index = self.choice(["0", "...", "-1", "1:", "::2"]) if x.ndim else "..."
        if x.ndim and x.shape[0] == 0: raise Reject
        value = self.choice([7.0, 7, -1, True, 0.5, 2])
        combine = self.choice(["=", "=", "+="])
        self.add("write" if combine == "=" else "update", f"{{a}}[{index}] {combine} {value!r}", [target],
                 write=True)

    def view_write(self, part: int) -> None:
        target = self.pick(part, lambda v: v.copy and v.value.ndim >= 1)
        if target is None: raise Reject
        self.through_view(part, target)

    def condition(self, part: int) -> tuple[str, Var]:
        c = self.pick(part, lambda v: v.exact and not v.selected and not v.nan and v.value.size > 0 and not v.py)
        if c is None: raise Reject
        return self.choice(CONDITIONS).format(c=c.name), c

    def branch_view(self, part: int) -> None:
        """if cond: w = view1 else: w = view2 (or w = view2; if cond: w = view1), then a write through w."""
        a = self.pick(part, lambda v: v.copy and v.value.ndim >= 1 and not v.selected and not v.nan)
        if a is None: raise Reject
        e1, e2 = self.choice(VIEW_PAIRS)
        b = a
        if "{b}" in e1 + e2:
            other = self.pick(part, lambda v: v is not a and v.copy and v.value.shape == a.value.shape and
                              v.value.dtype == a.value.dtype and not v.nan)
            if other is None: raise Reject
            b = other
        self.branch(part, "branch", e1.format(a=a.name, b=b.name), e2.format(a=a.name, b=b.name), [a, b])
        w = self.vars[-1]
        self.forced.append(w.name)
        if w.copy and self.writes and self.chance(0.8):
            try:
                self.literal_write(part, w) if self.chance(0.6) else self.write(part, target=w)
            except Reject:
                pass

    def branch_value(self, part: int) -> None:
        """if cond: w = expr1 else: w = expr2 (values of one shape and dtype)."""
        a = self.pick(part, lambda v: not v.selected and not v.nan and not v.py)
        if a is None: raise Reject
        b = self.pick(part, lambda v: not v.selected and not v.nan and not v.py and v.value.shape == a.value.shape)
        assert b is not None   # a itself
        e1, e2 = self.choice(VALUE_EXPRS), self.choice(VALUE_EXPRS)
        inexact = any(s in e1 + e2 for s in (".sum(", "* {b}")) and (a.value.dtype.kind == "c" or ".sum(" in e1 + e2)
        self.branch(part, "branch~" if inexact else "branch", e1.format(a=a.name, b=b.name),
                    e2.format(a=a.name, b=b.name), [a, b])

    def branch(self, part: int, op: str, e1: str, e2: str, operands: list[Var]) -> None:
        env = dict(self.env)
        try:
            evaluate(f"_1 = {e1}\n_2 = {e2}", env)
        except Exception as e:   # noqa: BLE001 - NumPy refuses one side
            raise Reject from e
        v1, v2 = np.asarray(env["_1"]), np.asarray(env["_2"])
        if v1.shape != v2.shape or v1.dtype != v2.dtype or v1.size == 0: raise Reject
        cond, c = self.condition(part)
        w = self.fresh_name()
        if self.chance(0.25):
            text = f"{w} = {e2}\nif {cond}:\n    {w} = {e1}"
        else:
            text = f"if {cond}:\n    {w} = {e1}\nelse:\n    {w} = {e2}"
        alts = (f"{w} = {e1}", f"{w} = {e2}")
        self.compound(op, text, [*operands, c], (w,), alts)

    def returns(self, part: int) -> None:
        """The function returns different views of one array from the two sides of an if (see Program.source)."""
        a = self.pick(part, lambda v: v.value.ndim >= 1 and v.value.size > 0 and not v.selected and not v.nan and
                      not v.py)
        if a is None: raise Reject
        e1, e2 = (e.format(a=a.name, b=a.name) for e in self.choice(VIEW_PAIRS[:6]))
        env = dict(self.env)
        try:
            evaluate(f"_1 = {e1}\n_2 = {e2}", env)
        except Exception as e:   # noqa: BLE001
            raise Reject from e
        if np.shape(env["_1"]) != np.shape(env["_2"]): raise Reject
        cond, c = self.condition(part)
        r = self.fresh_name("r")
        self.compound("branch", f"if {cond}:\n    {r} = {e1}\nelse:\n    {r} = {e2}", [a, c], (r,))
        self.ret = (cond, r, e1, e2)

    # ---- Python scalars ----
    def scalar(self, part: int) -> None:
        """Python arithmetic between Python scalars (the arguments, and literals)."""
        a = self.pick(part, lambda v: v.py)
        if a is None: raise Reject
        op = self.choice(sorted(PY_BINARY) + ["spow", "sneg", "sabs"])
        if op in ("sneg", "sabs"):
            return self.add(op, "-{a}" if op == "sneg" else "abs({a})", [a])
        if op == "spow":
            p = self.choice([2, 3, 30]) if type(self.env[a.name]) is not float else self.choice([2, 3])
            return self.add("spow", f"{{a}} ** {p}", [a], p)
        b = self.pick(part, lambda v: v.py) if self.chance(0.7) else None
        if b is None: b = Var(repr(v := self.choice(PY_VALUES)), np.asarray(v), abs(float(v)) or 1.0, True, False,
                              part, py=True)
        if op in ("sfloordiv", "smod", "slt", "seq") and not (a.exact and b.exact): raise Reject
        self.add(op, PY_BINARY[op], [a, b] if self.chance(0.5) else [b, a])

    def np_scalar(self, part: int) -> None:
        """NumPy functions of Python scalars: strong NumPy scalars (np.add(s, 1) is int64, not weak)."""
        a = self.pick(part, lambda v: v.py) or self.pick(part, lambda v: v.value.ndim == 0)
        if a is None: raise Reject
        if self.chance(0.3):
            c = self.pick(part, lambda v: v.value.dtype == np.bool_ or (v.exact and not v.py and v.value.ndim))
            if c is None: raise Reject
            cond = "{c}" if c.value.dtype == np.bool_ else "{c} > 0"
            other = self.choice(["5", "{b}", "-1.5", "True"])
            b = self.pick(part, lambda v: v.py or v.value.ndim == 0) or a
            return self.add("where_s", f"np.where({cond}, {{a}}, {other})", [a, b, c])
        op = self.choice(sorted(NP_OF_SCALARS))
        b = self.pick(part, lambda v: v.py or v.value.ndim == 0) or a
        self.add({"np_div": "div", "np_pow": "pow", "np_fdiv": "floordiv"}.get(op, op), NP_OF_SCALARS[op], [a, b],
                 2 if op == "np_pow" else None)

    def mixed(self, part: int) -> None:
        """An array of a narrow dtype with a Python scalar (weak) or a NumPy scalar (strong), either side."""
        s = self.pick(part, lambda v: v.value.ndim == 0 and not v.selected)
        a = self.pick(part, lambda v: not v.py and v.value.ndim >= 1)
        if s is None or a is None: raise Reject
        op = self.choice(["add", "sub", "mul", "maximum", "lt", "eq", "floordiv", "mod", "where", "clip", "ipow"])
        if op in ("lt", "eq", "floordiv", "mod", "where") and not (a.exact and s.exact): raise Reject
        if op == "where":
            return self.add("where", "np.where({c} > 0, {a}, {b})", [a, s, a] if self.chance(0.5) else [s, a, a])
        self.add(op, BINARY[op], [a, s] if self.chance(0.5) or op in ("clip", "ipow") else [s, a])

    # ---- complex, float16, NaN ----
    def complex(self, part: int) -> None:
        a = self.pick(part)
        assert a is not None
        op = self.choice(sorted(COMPLEX_UNARY) + ["astype", "abs", "square", "sum", "mean", "prod", "cumsum",
                                                  "argmax", "argmin", "max", "min", "sqrt"])
        if op == "astype":
            if a.value.dtype.kind in "fc" and not a.exact: raise Reject
            return self.add("astype", UNARY["astype"], [a],
                            self.choice(CAST_TARGETS + ("float16", "complex64", "complex128", "float16")))
        self.unary(part, a, op, {**UNARY, **COMPLEX_UNARY})

    def nan(self, part: int) -> None:
        a = self.pick(part, lambda v: v.nan) or self.pick(part, lambda v: v.value.dtype.kind in "fc")
        if a is None: raise Reject
        self.unary(part, a, self.choice(sorted(NAN_UNARY)), NAN_UNARY)


def generate(seed: int, parts: int = 4, steps: int = 10, writes: bool = True, classes=("base",)) -> Program:
    """A random program of `parts` independent parts, each of up to `steps` statements (with `writes`, some write
    into arguments and copies), each part of one of `classes` (CLASSES)."""
    rng = np.random.default_rng(seed)
    classes = tuple(classes)
    unknown = set(classes) - set(CLASSES)
    if unknown: raise ValueError(f"unknown program classes {sorted(unknown)}; the classes are {', '.join(CLASSES)}")
    g = ClassGenerator(rng, seed, writes, classes)
    kinds = [c for c in classes if c != "calls"] or ["base"]
    outputs = []
    for part in range(parts):
        if g.raises: break
        g.kind[part] = kinds[0] if len(kinds) == 1 else g.choice(kinds)
        g.make_class_inputs(part)
        tries = 0
        target = int(rng.integers(1, steps + 1))
        made = 0
        while made < target and tries < 20 * steps and not g.raises:
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
                if rng.random() < 0.2 or v.name in g.forced: outputs.append(v.name)
    outputs += [s.target for s in g.stmts[-1:] if s.op == "raises" and s.target in g.forced]
    branch_parts = [p for p, k in g.kind.items() if k == "branches"]
    if branch_parts and not g.raises and rng.random() < 0.5:
        try:
            g.returns(g.choice(branch_parts))
            outputs.append(g.ret[1] if g.ret else "")
        except Reject:
            pass
    keywords = "calls" in classes and (kinds == ["base"] and len(classes) == 1 or bool(rng.random() < 0.3))
    return Program(g.inputs, g.stmts, [o for o in dict.fromkeys(outputs) if o], seed, parts, keywords, g.ret)
