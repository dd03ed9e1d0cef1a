"""Shrinking a failing fuzz program to a small one failing the same way (see numfn.tools.fuzz)."""
from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from numfn.tools.fuzz import run
from numfn.tools.fuzz.program import Program, Stmt, is_py
from numfn.tools.fuzz.run import Failure, names_in


def live_names(prog: Program) -> set[str]:
    """What the program's results are: its outputs, its arguments (writes into them are results), and what the
    function's final `if` returns from reads."""
    live = set(prog.outputs) | set(prog.arg_names)
    if prog.ret is not None and prog.ret[1] in prog.outputs: live |= names_in(" ".join(prog.ret))
    return live


def without_dead(prog: Program) -> Program:
    """Statements nothing returned or written depends on removed (writes into arguments are results)."""
    live = live_names(prog)
    keep = []
    for s in reversed(prog.stmts):
        if s.write and (s.operands[0] in live) or any(t in live for t in s.binds) or s.op == "raises":
            keep.append(s)
            live.update(s.operands)
    return prog.but(stmts=list(reversed(keep)))


def removing(prog: Program, drop) -> Program:
    """`prog` without the statements `drop` (a predicate on indices) and the outputs only they bound."""
    stmts = [s for i, s in enumerate(prog.stmts) if not drop(i)]
    bound = {t for s in stmts for t in s.binds}
    return prog.but(stmts=stmts, outputs=[o for o in prog.outputs if o in bound])


def candidates(prog: Program):
    # the statements nothing depends on removed (unless one of them is what fails: tracing runs them all)
    yield without_dead(prog)
    # inputs nothing uses dropped (the others renumbered)
    returned = set(prog.outputs) | (names_in(" ".join(prog.ret)) if prog.ret else set())
    used = [n for n in prog.arg_names if n in returned
            or any(n in st.operands or re.search(rf"\b{n}\b", st.text) for st in prog.stmts)]
    if len(used) < len(prog.inputs):
        yield keep_inputs(prog, used)
    # a part removed (its statements and outputs: the parts are independent)
    parts = sorted({s.part for s in prog.stmts})
    if len(parts) > 1:
        for p in parts: yield removing(prog, lambda i, p=p: prog.stmts[i].part == p)
    # one output alone
    if len(prog.outputs) > 1:
        for o in prog.outputs: yield prog.but(outputs=[o])
    # no outputs but the arguments written; no arguments returned as they are
    if prog.outputs and any(s.write for s in prog.stmts):
        yield prog.but(outputs=[])
    if set(prog.outputs) & set(prog.arg_names):
        yield prog.but(outputs=[o for o in prog.outputs if o not in prog.arg_names])
    # the function's final if returning plainly
    if prog.ret is not None: yield prog.but(ret=None)
    # runs of statements removed, halves first (a run something later reads is not a valid program: rejected
    # by NumPy's replay without compiling)
    n = len(prog.stmts)
    size = n // 2
    while size >= 2:
        for start in range(0, n - size + 1, size):
            yield removing(prog, lambda i, a=start, b=start + size: a <= i < b)
        size //= 2
    # a statement removed (writes, or values replaced by an operand of the same shape and dtype)
    for i in reversed(range(len(prog.stmts))):
        s = prog.stmts[i]
        rest = prog.stmts[:i] + prog.stmts[i + 1:]
        if s.write:
            yield prog.but(stmts=rest)
            continue
        # binds several names: replaced only where nothing reads the others (else simplified or dropped with what
        # uses them)
        if any(t in prog.outputs or any(re.search(rf"\b{t}\b", st.text) for st in rest[i:]) for t in s.targets):
            continue
        for o in s.operands:
            if not o.isidentifier(): continue
            renamed = [rename(t, s.target, o) for t in rest[i:]]
            outputs = [o if x == s.target else x for x in prog.outputs]
            yield prog.but(stmts=rest[:i] + renamed, outputs=list(dict.fromkeys(outputs)),
                           ret=rename_ret(prog.ret, s.target, o))
    # simpler versions of compound statements (a shorter loop body, another trip count, one side of an if)
    for i, s in enumerate(prog.stmts):
        for alt in s.alts:
            operands = tuple(o for o in s.operands if not o.isidentifier() or re.search(rf"\b{o}\b", alt))
            small = Stmt(s.op, s.target, operands, alt, s.part, s.write, s.param, s.targets)
            yield prog.but(stmts=prog.stmts[:i] + [small] + prog.stmts[i + 1:])
    # inputs made simpler: ones
    for k, x in enumerate(prog.inputs):
        if is_py(x):
            one = type(x)(1)
            if x != one: yield prog.but(inputs=prog.inputs[:k] + [one] + prog.inputs[k + 1:])
        elif x.size > 1:
            yield prog.but(inputs=prog.inputs[:k] + [np.ones_like(x)] + prog.inputs[k + 1:])


def keep_inputs(prog: Program, keep: list[str]) -> Program:
    stmts, outputs, ret = prog.stmts, prog.outputs, prog.ret
    steps = [(old, f"tmp_{i}") for i, old in enumerate(keep)] + [(f"tmp_{i}", f"x{i}") for i in range(len(keep))]
    for old, new in steps:
        stmts = [rename(st, old, new) for st in stmts]
        outputs = [new if o == old else o for o in outputs]
        ret = rename_ret(ret, old, new)
    inputs = [prog.inputs[prog.arg_names.index(k)] for k in keep]
    return prog.but(inputs=inputs, stmts=stmts, outputs=outputs, ret=ret)


def _sub(text: str, old: str, new: str) -> str:
    return re.sub(rf"\b{re.escape(old)}\b", new, text)


def rename(s: Stmt, old: str, new: str) -> Stmt:
    text = _sub(s.text, old, new)
    if not s.write and "\n" not in s.text:   # never rename the target itself
        text = f"{s.target} = " + text.split(" = ", 1)[1]
    return Stmt(s.op, s.target, tuple(new if o == old else o for o in s.operands), text, s.part, s.write, s.param,
                s.targets, tuple(_sub(a, old, new) for a in s.alts))


def rename_ret(ret, old: str, new: str):
    if ret is None: return None
    return (_sub(ret[0], old, new), ret[1], _sub(ret[2], old, new), _sub(ret[3], old, new))


def _key(p: Program) -> tuple:
    return (p.source(), p.keywords, tuple((type(x).__name__, np.asarray(x).dtype.str, np.shape(x),
                                           np.asarray(x).tobytes()) for x in p.inputs))


def _same(a: Program, b: Program) -> bool:
    return a.source() == b.source() and a.keywords == b.keywords and len(a.inputs) == len(b.inputs) and \
        all(type(x) is type(y) and np.array_equal(x, y) for x, y in zip(a.inputs, b.inputs))


def shrink(prog: Program, failure: Failure, budget: int = 300, log: Callable[[str], None] | None = None) -> Program:
    """A smaller program failing the same way (same configuration and kind), by greedy reduction steps."""
    configs = (failure.config,)
    tries = 0
    improved = True
    tried: set = set()   # candidates already run (each restart would run the ones that failed again)
    while improved and tries < budget:
        improved = False
        for cand in candidates(prog):
            if len(cand.stmts) > len(prog.stmts) or _same(cand, prog): continue
            key = _key(cand)
            if key in tried: continue
            tried.add(key)
            tries += 1
            if tries > budget: break
            if failure.same_kind(run.check(cand, configs)):
                prog = cand
                improved = True
                if log: log(f"  shrunk to {len(prog.stmts)} statements")
                break
    return prog
