"""Running a fuzz program on numfn and comparing with NumPy's values (see numfn.tools.fuzz)."""
from __future__ import annotations

import ast
import re
import traceback
import warnings
from dataclasses import dataclass

import numpy as np

from numfn.config import c_compiler, overriding
from numfn.tools.fuzz.program import LOWP, Program, Stmt, Var, evaluate, exactness, fresh, is_py, mag, py_ok, scale, tame

CONFIGS = (("llvm", False), ("c", False), ("llvm", True))   # (backend, NOOPT)
RAISES = "!raises"   # metadata's entry for a program that must raise OverflowError (its `selected` says why)


@dataclass
class Failure:
    config: tuple[str, bool]
    kind: str          # "mismatch", "error", "fallback", "recompile", "unsupported" (refused as documented)
    detail: str

    def same_kind(self, other: Failure | None) -> bool:
        return other is not None and (self.config, self.kind) == (other.config, other.kind) and \
            (self.kind != "error" or self.detail.split(":")[0] == other.detail.split(":")[0])

    def __str__(self) -> str:
        backend, noopt = self.config
        return f"[{backend}{' NOOPT=1' if noopt else ''}] {self.kind}: {self.detail}"


def _var(name: str, raw, sc: float, exact: bool, lowp: bool, half: bool) -> Var:
    out = np.asarray(raw)
    return Var(name, out, sc, exact, lowp, 0, half=half, py=is_py(raw),
               nan=out.dtype.kind in "fc" and bool(np.isnan(out).any()))


def metadata(prog: Program) -> dict[str, Var] | None:
    """NumPy's value, scale and exactness of every variable (replaying the statements), or None if NumPy refuses
    the program (a shrinking step may make it invalid)."""
    env = {name: fresh(x) for name, x in zip(prog.arg_names, prog.inputs)}
    meta = {name: _var(name, env[name], mag(x), True, np.asarray(x).dtype in LOWP,
                       np.asarray(x).dtype == np.float16) for name, x in zip(prog.arg_names, prog.inputs)}
    for name, x in zip(prog.arg_names, prog.inputs):
        meta[name].nan = np.asarray(x).dtype.kind in "fc" and bool(np.isnan(x).any())
    for s in prog.stmts:
        if s.op == "raises":   # the program ends here: NumPy raises OverflowError, or Python's int leaves int64
            why = _overflow(s, env)
            if why is None: return None
            # Python computes a wide int without complaint: numfn must refuse it where the program returns it
            if why.startswith("NumPy") or s.target in prog.outputs:
                meta[RAISES] = Var(RAISES, np.asarray(0), 1.0, True, False, 0, selected=why)
            break
        try:
            evaluate(s.text, env)
        except Exception:   # noqa: BLE001
            return None
        try:
            operands = [meta[n] if n in meta else literal(n) for n in s.operands]
        except (ValueError, SyntaxError):
            return None
        for name in (s.operands[0],) if s.write else s.binds:
            if name not in env: return None
            raw = env[name]
            if is_py(raw) and not py_ok(raw): return None
            out = np.asarray(raw)
            if not tame(out, operands): return None
            sc = scale(s.op, s.param, operands, out)
            exact = exactness(s.op, s.param, operands, out)
            if s.targets and name != s.target and out.dtype.kind in "fc" and ".sum()" in s.text: exact = False
            lowp = out.dtype in LOWP or any(v.lowp for v in operands)
            half = out.dtype == np.float16 or any(v.half for v in operands)
            new = _var(name, raw, sc, exact, lowp, half)
            if s.write:
                old = meta[name]
                new = _var(name, raw, max(sc, old.scale), old.exact and exact, old.lowp or lowp, old.half or half)
            meta[name] = new
            # what shares memory with a written array was written too (a view of it, the array it views)
            if s.write or s.op.startswith(("loop", "while", "search")):
                for other in meta.values():
                    if other is not new and not other.py and np.may_share_memory(other.value, out):
                        other.scale, other.exact = max(other.scale, new.scale), other.exact and new.exact
                        other.lowp, other.half = other.lowp or new.lowp, other.half or new.half
    for name in prog.arg_names:
        old = meta[name]
        meta[name] = Var(name, np.asarray(env[name]), old.scale, old.exact, old.lowp, 0, half=old.half, py=old.py)
    if RAISES not in meta and any(o not in meta for o in prog.outputs): return None
    if prog.ret is not None and prog.ret[1] in prog.outputs and not names_in(" ".join(prog.ret)) <= set(meta):
        return None
    return meta


def _overflow(s: Stmt, env: dict) -> str | None:
    """Why the statement `s` overflows (NumPy's OverflowError, or a Python int out of int64), None if it does not."""
    try:
        evaluate(s.text, env)
    except OverflowError as e:
        return f"NumPy raises OverflowError: {e}"
    except Exception:   # noqa: BLE001 - another error: not the statement it was
        return None
    raw = env.get(s.target)
    if isinstance(raw, int) and not py_ok(raw):
        return f"Python computes an int of {raw.bit_length()} bits ({str(raw)[:24]}...), out of int64"
    return None


def literal(text: str) -> Var:
    value = ast.literal_eval(text)
    return Var(text, np.asarray(value), abs(float(value)) or 1.0, True, False, 0, py=True)


def same_layout(x):
    """A copy of `x` with its memory layout: C or Fortran order, or a strided view of a larger array (a Python
    scalar is passed as it is)."""
    if is_py(x): return x
    if x.flags.c_contiguous or x.flags.f_contiguous: return np.array(x, order="K", copy=True)
    return np.repeat(x, 2, axis=-1)[..., ::2]


def compare(got, meta: Var, what: str) -> str | None:
    exp = np.asarray(meta.value)
    if not isinstance(got, np.ndarray): return f"{what}: {type(got).__name__}, NumPy gives an ndarray"
    if got.dtype != exp.dtype: return f"{what}: dtype {got.dtype}, NumPy gives {exp.dtype}"
    if got.shape != exp.shape: return f"{what}: shape {got.shape}, NumPy gives {exp.shape}"
    if exp.dtype.kind not in "fc":
        if not np.array_equal(got, exp):
            bad = np.argwhere(got != exp)[:3].tolist()
            return f"{what}: differs at {bad}: {got[tuple(np.array(bad).T)] if bad else got} vs NumPy's " \
                   f"{exp[tuple(np.array(bad).T)] if bad else exp}"
        return None
    rtol = (1e-3 if meta.half else 1e-5 if meta.lowp else 1e-12) * (1 if meta.exact else 4)
    atol = rtol * 4 * meta.scale
    with np.errstate(all="ignore"):
        close = np.isclose(got, exp, rtol=rtol, atol=atol, equal_nan=True)
        if exp.dtype.kind == "c":   # NaN in either part is NumPy's complex NaN: where it is must agree
            close = close | (np.isnan(got) & np.isnan(exp))
    if not close.all():
        bad = np.argwhere(~close)[:3].tolist()
        pos = tuple(np.array(bad).T)
        return f"{what}: differs at {bad}: {got[pos].tolist()} vs NumPy's {exp[pos].tolist()} " \
               f"(rtol {rtol:g}, atol {atol:g})"
    return None


CALLS = {False: ("positional", "positional"), True: ("positional", "keywords", "keywords", "mixed")}


def run_config(prog: Program, config: tuple[str, bool], meta: dict[str, Var]) -> Failure | None:
    """Compile and run `prog` with one configuration; compare with NumPy's values in `meta`. The first call
    compiles, the second takes the registered fast path; a program of the calls class is then called with its
    arguments passed by name (twice, and mixed with positional ones), which must not compile again."""
    import numfn
    from numfn.errors import CompileError, NumfnError
    backend, noopt = config
    with overriding("NOOPT", "1" if noopt else "0"):
        fn = prog.function()
        jf = numfn.jit(fn, backend=backend)
        compiled = 0
        for call, how in enumerate(CALLS[prog.keywords]):
            args = [same_layout(x) for x in prog.inputs]
            names = prog.arg_names
            raises = meta.get(RAISES)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if how == "positional": out = jf(*args)
                    elif how == "keywords": out = jf(**dict(zip(names, args)))
                    else: out = jf(*args[:1], **dict(reversed(list(zip(names[1:], args[1:])))))
            except OverflowError as e:
                if raises is not None: continue
                return Failure(config, "error", f"OverflowError: {e}\n{traceback.format_exc(limit=-3)}")
            except CompileError as e:
                return Failure(config, "error", f"CompileError: {e}")
            except NumfnError as e:
                if "is not supported inside a numfn-compiled function" in str(e):   # documented as refused
                    return Failure(config, "unsupported", str(e))
                return Failure(config, "error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}")
            except Exception as e:   # noqa: BLE001 - NumPy computed this program: any exception is a failure
                return Failure(config, "error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}")
            for nf in jf.specializations:
                if nf.fallback is not None:
                    return Failure(config, "fallback", f"the {backend} backend failed; the program ran on "
                                                       f"{nf.fallback.backend}")
            if raises is not None:
                return Failure(config, "mismatch", f"call {call} ({how}): returned {out!r:.200}; {raises.selected}, "
                                                   "so numfn should raise OverflowError")
            if call == 0: compiled = len(jf.specializations)
            elif how != "positional" and len(jf.specializations) > compiled:   # the same arguments, by name
                return Failure(config, "recompile", f"call {call} ({how}): the arguments of call 0 passed by name "
                                                    f"compiled again ({len(jf.specializations)} specializations)")
            if not isinstance(out, tuple) or len(out) != len(prog.outputs):
                return Failure(config, "mismatch", f"call {call}: returned {type(out).__name__}")
            for name, got in zip(prog.outputs, out):
                bad = compare(got, meta[name], f"call {call} ({how}): output {name}")
                if bad: return Failure(config, "mismatch", bad)
            for name, got in zip(prog.arg_names, args):
                if is_py(got): continue
                bad = compare(got, meta[name], f"call {call} ({how}): argument {name} afterwards")
                if bad: return Failure(config, "mismatch", bad)
        return None


def check(prog: Program, configs=CONFIGS) -> Failure | None:
    """The first failure of `prog` among `configs`, or None when every configuration agrees with NumPy."""
    meta = metadata(prog)
    if meta is None: return None
    for config in configs:
        if config[0] == "c" and not have_c_compiler(): continue
        found = run_config(prog, config, meta)
        if found is not None: return found
    return None


def have_c_compiler() -> bool:
    import shutil
    return bool(c_compiler() or shutil.which("clang") or shutil.which("cc") or shutil.which("gcc"))


def names_in(text: str) -> set[str]:
    """The program's variable names a piece of source mentions."""
    return set(re.findall(r"\b[xvrsci]\d+\b", text))


__all__ = ["CONFIGS", "Failure", "metadata", "compare", "run_config", "check", "same_layout", "Stmt"]
