"""The fuzzer's base generator: statements of every kind, one at a time, each evaluated by NumPy as it is made (see
numfn.tools.fuzz). numfn.tools.fuzz.classes extends it with the program classes (loops, branches, Python scalars, complex)."""
from __future__ import annotations

import builtins

import numpy as np

from numfn.tools.fuzz.program import (BASE_SUPPORTED, BINARY, CAST_TARGETS, DISCONTINUOUS, FRESH, INPUT_DTYPES, LOWP,
                                MAX_SCALE, NAN_OK, REDUCES, SELECTED_OK, SHAPES, TERNARY, UNARY, VIEWS, Reject, Stmt,
                                Var, evaluate, exactness, fresh, is_py, mag, py_ok, scale, tame)


class Generator:
    """Builds a random program; `rng` decides every choice."""

    def __init__(self, rng: np.random.Generator, seed: int = 0, writes: bool = True):
        self.rng = rng
        self.writes = writes
        self.seed = seed
        self.vars: list[Var] = []
        self.stmts: list[Stmt] = []
        self.inputs: list = []
        self.env: dict = {}
        self.count = 0
        self.view_writes = False   # views of writable arrays are writable too (the classes' programs)
        self.supported = BASE_SUPPORTED   # the dtypes values may have (the classes add float16 and complex)

    # ---- choices ----
    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def pick(self, part: int, pred=lambda v: True) -> Var | None:
        cands = [v for v in self.vars if v.part == part and pred(v)]
        return self.choice(cands) if cands else None

    def var(self, name: str) -> Var:
        return next(v for v in self.vars if v.name == name)

    # ---- inputs ----
    def add_input(self, x, part: int, nan: bool = False) -> Var:
        name = f"x{len(self.inputs)}"
        self.inputs.append(x)
        self.env[name] = fresh(x)
        value = np.asarray(self.env[name])
        v = Var(name, value, mag(x), True, value.dtype in LOWP, part, copy=not is_py(x),
                half=value.dtype == np.float16, py=is_py(x), nan=nan)
        self.vars.append(v)
        return v

    def make_inputs(self, part: int) -> None:
        rank = int(self.rng.integers(0, 4))
        base = tuple(int(self.choice([0, 1, 2, 3, 5])) if self.chance(0.1) else int(self.rng.integers(1, 6))
                     for _ in range(rank))
        for _ in range(int(self.rng.integers(1, 4))):
            k = int(self.rng.integers(0, len(base) + 1))
            shape = tuple(1 if self.chance(0.2) else d for d in base[len(base) - k:])
            self.add_input(self.array(shape, np.dtype(self.choice(INPUT_DTYPES))), part)

    def array(self, shape: tuple, dt: np.dtype, layouts=True) -> np.ndarray:
        """Random values of `dt` (halves and integers often, for discontinuous operations), in a random layout."""
        if dt.kind in "fc":
            v = self.rng.uniform(-3, 3, shape)
            if self.chance(0.5): v = np.round(v * 2) / 2   # ties, integers and zeros for discontinuous ops
            if dt.kind == "c": v = v + 1j * np.round(self.rng.uniform(-3, 3, shape) * 2) / 2
            x = np.array(v, dtype=dt)
        elif dt.kind == "b": x = np.array(self.rng.random(shape) < 0.5)
        else: x = np.array(self.rng.integers(0 if dt.kind == "u" else -3, 4, shape), dtype=dt)
        if not layouts: return x
        layout = self.choice(["c", "c", "c", "fortran", "reversed", "strided"])
        if layout == "fortran": x = np.asfortranarray(x)
        elif layout == "reversed" and x.ndim: x = np.ascontiguousarray(x[::-1])[::-1]
        elif layout == "strided" and x.ndim: x = np.repeat(x, 2, axis=-1)[..., ::2]
        return x

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
        traced = self.pick(part, lambda v: v.value.dtype.kind in "iu" and v.value.ndim <= 2 and v.exact and
                           not v.py)
        if traced is not None and self.chance(0.4):
            # in C order: NumPy writes repeated indices in the index array's memory order (unspecified, its docs
            # say), and np.clip of a transposed array is one in Fortran order (seed 79000310: another element won)
            return f"{{a}}[{lead}np.ascontiguousarray(np.clip({{b}}, -{n}, {n - 1}))]", (traced.name,)
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
        if op in ("sum", "npsum", "mean", "max", "min", "prod", "any", "all", "std", "var", "nansum", "nanmax",
                  "nanmin", "nanmean", "nanprod"):
            return self.axis(a), self.chance(0.5)
        if op in ("argmax", "argmin", "nanargmax", "nanargmin"): return self.axis(a, allow_tuple=False)
        if op == "sort": return -1 if nd == 0 or self.chance(0.5) else int(self.rng.integers(-nd, nd))
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
            # reductions, cumulative sums and products, and basic indexing (numfn.trace.dynamic); nothing else
            if write or op not in SELECTED_OK or len(selected) > 1: raise Reject
            if builtins.any(not v.selected and v.value.ndim > 0 for v in operands[1:]): raise Reject
        if builtins.any(v.nan for v in operands) and op not in self.nan_ok(): raise Reject
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
            evaluate(text, env)
            raw = env[out_name]
            if is_py(raw) and not py_ok(raw): raise OverflowError(f"Python's int {raw} is out of int64")
        except Exception as e:   # noqa: BLE001 - NumPy refuses: not a valid statement
            if write: self.replay()
            if isinstance(e, OverflowError): self.overflowed(op, text, operands, out_name, is_py(env.get(out_name)))
            raise Reject from e
        try:
            out = np.asarray(raw)
            if not tame(out, operands, self.supported): raise Reject
            if out.size > 4096: raise Reject
            sc = scale(op, p, operands, out)
            if sc > self.max_scale(): raise Reject
        except Exception as e:   # noqa: BLE001 - a value that is not tame
            if write: self.replay()
            raise Reject from e
        exact = exactness(op, p, operands, out)
        lowp = out.dtype in LOWP or any(v.lowp for v in operands)
        half = out.dtype == np.float16 or any(v.half for v in operands)
        nan = out.dtype.kind in "fc" and bool(np.isnan(out).any())
        self.env = env
        used = tuple(v.name for v in operands)
        if write:
            old = operands[0]
            # the written array's new value: its metadata joins the written values', and so does every array
            # sharing its memory (its views, the array it is a view of)
            for v in [old] + self.sharing(old):
                if v is old: v.value = out
                v.scale, v.exact = max(sc, v.scale), v.exact and exact
                v.lowp, v.half, v.nan = v.lowp or lowp, v.half or half, v.nan or nan
            self.stmts.append(Stmt(op, out_name, used, text, part, write=True))
            return
        self.count += 1
        selected = out_name if op in ("mask", "nonzero") else next((v.selected for v in operands if v.selected), "")
        if op in REDUCES and not op.endswith("accumulate") and op not in ("cumsum", "cumprod"): selected = ""
        writable = op in ("copy", "fresh") or (self.view_writes and self.is_writable_view(out, operands[0]))
        self.vars.append(Var(out_name, out, sc, exact, lowp, part, copy=writable, selected=selected, half=half,
                             py=is_py(raw), nan=nan))
        self.stmts.append(Stmt(op, out_name, used, text, part, param=p))

    def overflowed(self, op: str, text: str, operands: list[Var], target: str, wide: bool) -> None:
        """NumPy raised OverflowError for this statement (a Python int out of the bounds of an integer dtype), or
        Python's int left int64 (`wide`): not a statement of the base programs."""

    def nan_ok(self) -> set:
        return NAN_OK

    def max_scale(self) -> float:
        return MAX_SCALE

    def sharing(self, v: Var) -> list[Var]:
        """The other arrays sharing memory with `v`'s (views of it, the array it views)."""
        if v.py: return []
        return [w for w in self.vars if w is not v and not w.py and np.may_share_memory(w.value, v.value)]

    def is_writable_view(self, out: np.ndarray, base: Var) -> bool:
        """`out` is a view of a writable array (writing into it writes into that array, as in NumPy)."""
        return base.copy and not base.py and out.flags.writeable and out.size > 0 and \
            np.may_share_memory(out, base.value)

    def replay(self) -> None:
        """The environment rebuilt from the inputs and the statements so far (after a write that failed)."""
        self.env = {f"x{i}": fresh(x) for i, x in enumerate(self.inputs)}
        for s in self.stmts: evaluate(s.text, self.env)
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
            return self.unary(part, a, self.choice(pool))
        self.binary(part, a, self.choice(sorted(BINARY)))

    def unary(self, part: int, a: Var, op: str, table: dict = UNARY) -> None:
        if op in DISCONTINUOUS and not a.exact: raise Reject
        if op == "astype" and a.value.dtype.kind in "fc" and not a.exact: raise Reject
        # NumPy squares a bool ndarray in int8 but powers a bool scalar in int64; a 0-d traced value stands for
        # both (ufuncs of 0-d arrays return NumPy scalars), so numfn follows the array
        if op == "pow" and a.value.dtype == np.bool_ and a.value.ndim == 0: raise Reject
        if op == "gather":
            template, extra = self.int_array_index(a.value, part)
            others = [self.var(n) for n in extra]
            return self.add(op, template, [a, *others])
        return self.add(op, table[op], [a], self.params(op, a.value))

    def literals(self) -> list:
        return [2, 3, -1, 0, 1, 0.5, 2.5, -1.5, True]

    def binary(self, part: int, a: Var, op: str) -> None:
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
                value = self.choice(self.literals())
                b = Var(repr(value), np.asarray(value), abs(float(value)) or 1.0, True, False, part, py=True)
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

    def write(self, part: int, target: Var | None = None) -> None:
        """x[index] = v or x[index] += v into an argument or a copy made earlier (possibly through a view)."""
        if target is None:
            target = self.pick(part, lambda v: v.copy and v.value.ndim >= 1)
            if target is not None and self.chance(0.15): target = None   # a new target now and then
        if target is None:
            src = self.pick(part, lambda v: v.value.ndim >= 1)
            if src is None: raise Reject
            # a copy, or a new constant array (written at traced indices, its constant is the same node as the
            # constants of the write's own bounds test: r[p] = np.arange(n) into np.zeros(n, np.int64) read them)
            if self.chance(0.3): return self.add("fresh", self.choice(FRESH), [src])
            return self.add("copy", UNARY["copy"], [src])
        value = self.pick(part)
        assert value is not None   # every part has its inputs
        x = target.value
        extra: tuple[str, ...]
        if self.view_writes and self.chance(0.2):   # the whole array: x += v (an augmented assignment of a name)
            template, extra = "{a}", ()
        elif self.chance(0.5):
            index = self.basic_index(x)
            template, extra = "{a}[" + index + "]", ()
        else:
            template, extra = self.int_array_index(x, part)
        others = [self.var(n) for n in extra]
        combine = self.choice(["=", "=", "+=", "-=", "*="])
        if template == "{a}" and combine == "=": combine = "+="
        text = template + f" {combine} " + ("{c}" if others else "{b}")
        operands = [target, *others, value] if others else [target, value]
        if combine != "=" and not (value.exact and target.exact) and x.dtype.kind not in "fc": raise Reject
        op = "write" if combine == "=" else "update"
        if x.dtype.kind in "iub" and value.value.dtype.kind in "fc" and not value.exact: raise Reject
        self.add(op, text, operands, write=True)
