"""Python control flow on traced values, converted to numfn's loops and branches before tracing.

A tracer only sees values, so `for i in range(n):` would unroll n copies of its body and `if x.sum() > 0:` could
not be traced at all. Before numfn traces a function it rewrites the function's source (its AST, as TensorFlow's
AutoGraph does) so that each `for ... in range(...)`, `while` and `if` statement calls a small runtime function
instead, handing it the statement's parts as nested functions:

    for i in range(a, b):          ->   def _body(i, (x, y)): ...; return (x, y)
        <body>                          (x, y) = _numfn.for_range(a, b, None, _body, (x, y), ...)

The runtime functions (`Runtime`) decide when the statement runs: as plain Python when nothing in it is traced
(or a loop's trip count is small and known: unrolled), or as numfn.trace.control's native loops and branches. The
variables a statement carries are the names it assigns that exist before it; arrays written through indexing
(`out[i] = v`) need no name: the loop finds them itself (numfn.trace.control).

Helpers are converted too: every call in converted code goes through `Runtime.callee`, which converts a plain Python
function of the user's (a method, a nested def, an object's `__call__`) when it is called; NumPy's, numfn's, the
standard library's and installed packages' functions are called as they are.

Conditional expressions (`x if c else y`), `and`/`or`/`not` and chained comparisons anywhere in converted code
(assignments, returns, lambdas, comprehensions, tests) call numfn.trace.expressions, with the operands Python
evaluates lazily as thunks: Python's on Python values, a branch (or a select of pure sides) on traced ones.

Also converted: `return` inside `if` (the rest of the function moves into the branches, so every path ends in one
return), `break` and `continue` inside converted loops (flags that guard the rest of the body and end the loop),
`return` inside a loop (a flag, the value, and a break: `_Converter._return_flags`), `else:` clauses of loops.
Not converted (a clear error when the loop runs natively): `return` inside a with or try block of a loop, `yield`,
`global`/`nonlocal` assignment inside a converted statement.

The converted function is compiled once per Python function and cached; `NUMFN_DEBUG=4` prints its source. A
function whose source cannot be read (a lambda typed at a prompt, a builtin) is traced as it is.
"""
from __future__ import annotations

import ast
import builtins
import dis
import functools
import inspect
import linecache
import os
import re
import site
import sys
import sysconfig
import textwrap
import threading
import types
import warnings
import weakref
from typing import Any, cast
from collections import Counter
from collections.abc import Callable

from numfn import debug
from numfn.errors import NumfnError, TracedRecursionError, user_location
from numfn.trace.statements import array_items, logical, logical_not, not_flags, raise_, run_for_each, \
    run_for_range, run_if, run_while, traced_builtin, traced_constructor
from numfn.trace.record import left_to_python
from numfn.trace.numpy_protocol import numpy_call
from numfn.trace import expressions
from numfn.trace.convert_expressions import RUNTIME, Expressions, converted_test, load_name, runtime_call
from numfn.trace.unbound import PENDING, UNBOUND

_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class Unconvertible(Exception):
    """The function cannot be converted (no source, or syntax the converter does not handle): trace it as is."""


class NoSourceWarning(UserWarning):
    """A function with loops whose source numfn cannot read: its loops run as Python while tracing (unrolled)."""


# ---------------------------------------------------------------------------------------------------------------
# names a piece of code assigns and reads

def _assigned(nodes: list[ast.stmt]) -> list[str]:
    """Names bound by `nodes` (assignments, augmented assignments, for targets, with-as, walrus), in order, not
    looking into nested function definitions."""
    out: list[str] = []

    def add_target(t):
        if isinstance(t, ast.Name): out.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts: add_target(e)
        elif isinstance(t, ast.Starred): add_target(t.value)

    class V(ast.NodeVisitor):
        def visit_FunctionDef(self, node):   # the converter's own helpers are not the user's variables
            if not node.name.startswith("_numfn"): out.append(node.name)
        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_Lambda(self, node): pass

        def visit_ClassDef(self, node): out.append(node.name)

        def visit_Assign(self, node):
            for t in node.targets: add_target(t)
            self.visit(node.value)

        def visit_AugAssign(self, node):
            add_target(node.target)
            self.visit(node.value)

        def visit_AnnAssign(self, node):
            if node.value is not None: add_target(node.target)

        def visit_For(self, node):
            add_target(node.target)
            self.generic_visit(node)

        def visit_NamedExpr(self, node):
            add_target(node.target)
            self.visit(node.value)

        def visit_With(self, node):
            for item in node.items:
                if item.optional_vars is not None: add_target(item.optional_vars)
            self.generic_visit(node)

    for n in nodes: V().visit(n)
    return list(dict.fromkeys(out))


def _reads(node: ast.AST) -> Counter:
    """How many times `node` reads each name (nested functions included: they may read it too)."""
    return Counter(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))


def _contains(nodes, kinds) -> ast.AST | None:
    """The first node of one of `kinds` in `nodes`, not looking into nested functions (nor, for break/continue,
    into nested loops)."""
    loops = (ast.For, ast.While, ast.AsyncFor)
    for node in nodes:
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, kinds): return n
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)): continue
            if n is not node and isinstance(n, loops) and kinds in ((ast.Break,), (ast.Continue,),
                                                                     (ast.Break, ast.Continue)):
                continue
            stack.extend(ast.iter_child_nodes(n))
    return None


# ---------------------------------------------------------------------------------------------------------------
# the rewriting

class _Converter:
    """Rewrites a function body's statements; `defined` tracks the names bound so far (parameters first)."""

    def __init__(self, params: list[str], function: ast.FunctionDef, line0: int):
        self.line0 = line0             # the source file's line of the function's first line, less one
        self.defined: list[str] = list(params)
        self.reads = _reads(function)   # how often the function reads each name (counted before any rewriting)
        self.counter = 0

    def fresh(self, what: str) -> str:
        self.counter += 1
        return f"_numfn_{what}{self.counter}"

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        stmts = self._loop_returns(stmts)
        for i, s in enumerate(stmts):
            if isinstance(s, ast.If) and _contains(s.body + s.orelse, (ast.Return,)):
                # `if c: ... return a` with code after it: the rest joins each branch, so every path returns
                rest = stmts[i + 1:]
                body = s.body + ([] if _ends_in_return(s.body) else rest)
                orelse = s.orelse + ([] if _ends_in_return(s.orelse) else rest)
                lifted = ast.If(test=s.test, body=body or [ast.Pass()], orelse=orelse or [ast.Pass()])
                ast.copy_location(lifted, s)
                out += self.statement(lifted, returns=True)
                return out
            out += self.statement(s)
        return out

    def statement(self, s: ast.stmt, returns: bool = False) -> list[ast.stmt]:
        if isinstance(s, (ast.For, ast.While)) and s.orelse and not _contains(s.body, (ast.Return,)):
            return self.block(self._else_after(s))
        if isinstance(s, ast.For) and _is_range(s): return self.for_range(s)
        if isinstance(s, ast.For) and not s.orelse and not _contains(s.body, (ast.Return,)):
            return self.for_range(self._one_target(s), over=_array_items(s.iter))
        if isinstance(s, ast.While): return self.while_(s)
        if isinstance(s, ast.If): return self.if_(s, returns)
        if isinstance(s, ast.Raise) and s.exc is not None and s.cause is None:
            # a raise that a traced value decides raises at run time (Runtime.raise_, statements.run_if): the
            # exception made by a function of the values its f-strings format (one traced number: its run-time value)
            return [ast.copy_location(ast.Expr(_raising(s.exc)), s)]
        if isinstance(s, ast.Assert) and not sys.flags.optimize:   # `if not test: raise AssertionError(msg)`
            error = ast.Call(load_name("AssertionError"), [s.msg] if s.msg is not None else [], [])
            check = ast.If(test=ast.UnaryOp(ast.Not(), s.test), body=[ast.Raise(exc=error, cause=None)], orelse=[])
            return self.statement(ast.fix_missing_locations(ast.copy_location(check, s)))
        if isinstance(s, (ast.For, ast.With)):
            s.body = self.block(s.body)
            if isinstance(s, ast.For): s.orelse = self.block(s.orelse)
        self.defined += _assigned([s])
        return [s]

    # ---- loops ----
    def _loop_returns(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        """The statements with each loop that holds a `return` rewritten into flags (`_return_flags`)."""
        out: list[ast.stmt] = []
        for st in stmts:
            expanded = self._return_flags(st) if isinstance(st, (ast.For, ast.While)) and \
                _contains(st.body, (ast.Return,)) else None
            out += expanded if expanded is not None else [st]
        return out

    def _return_flags(self, loop: ast.For | ast.While) -> list[ast.stmt] | None:
        """`for ...: ... return v ...` as `returned = False; value = pending(); for ...: ... value = v;
        returned = True; break ...; if returned: return value`, so the loop converts like any other (its break a
        flag) and the rest of the function becomes the other side of a branch (`block`). `value` starts as
        Runtime.pending: its type comes from the iteration that binds it (numfn.trace.control). A loop nested
        inside is rewritten first, so its return is one of this loop's. `return a, b` in every return: one value
        per element. None (left to Python) where a return sits in a with or try block."""
        body = self._nested_returns(loop.body)
        if body is None: return None
        returns = _returns_in(body)
        if returns is None: return None
        flag = self.fresh("returned")
        sizes = {len(r.value.elts) if isinstance(r.value, ast.Tuple) else -1 for r in returns}
        bare = all(r.value is None or (isinstance(r.value, ast.Constant) and r.value.value is None) for r in returns)
        tuples = len(sizes) == 1 and -1 not in sizes
        names = [self.fresh("returning") for _ in range(0 if bare else max(sizes) if tuples else 1)]
        loop.body = _returns_to_breaks(body, flag, names, tuples)
        at = loop
        init = [ast.Assign(targets=[ast.Name(flag, ast.Store())], value=ast.Constant(False))] + \
            [ast.Assign(targets=[ast.Name(n, ast.Store())], value=runtime_call("pending", [])) for n in names]
        value = None if bare else \
            ast.Tuple([load_name(n) for n in names], ast.Load()) if tuples else load_name(names[0])
        after = ast.If(test=ast.Name(flag, ast.Load()), body=[ast.Return(value)], orelse=[])
        return [ast.copy_location(st, at) for st in init] + [loop, ast.copy_location(after, at)]

    def _nested_returns(self, stmts: list[ast.stmt]) -> list[ast.stmt] | None:
        """The statements with loops inside them (in branches too) that hold a return rewritten (`_return_flags`);
        None where one cannot be."""
        out: list[ast.stmt] = []
        for st in stmts:
            if isinstance(st, (ast.For, ast.While)) and _contains(st.body, (ast.Return,)):
                expanded = self._return_flags(st)
                if expanded is None: return None
                out += expanded
                continue
            if isinstance(st, ast.If):
                body, orelse = self._nested_returns(st.body), self._nested_returns(st.orelse)
                if body is None or orelse is None: return None
                st.body, st.orelse = body, orelse
            out.append(st)
        return out

    def _carried(self, loop: ast.For | ast.While) -> list[str]:
        """The names a loop carries: those its body assigns that exist before it or are read outside it (those
        start unbound: as in Python, they are visible after a loop that ran). A temporary of the body is not
        carried: a compiled loop would keep it in memory from one iteration to the next."""
        known = set(self.defined)
        inside = _reads(loop)
        return [n for n in _assigned(loop.body) if n in known or self.reads[n] > inside[n]]

    def _unbind(self, names: list[str], at: ast.stmt) -> list[ast.stmt]:
        """`if unbound(n): del n` for each of `names` not surely bound before the statement, so that a name a
        statement did not bind stays unbound after it (Python's NameError), not bound to a marker."""
        known = set(self.defined)
        out: list[ast.stmt] = []
        for n in names:
            if n in known: continue
            test = runtime_call("unbound", [load_name(n)])
            out.append(ast.copy_location(ast.If(test=test, body=[ast.Delete([ast.Name(n, ast.Del())])], orelse=[]),
                                         at))
        return out

    def _one_target(self, s: ast.For) -> ast.For:
        """`for a, b in items: body` as `for item in items: a, b = item; body` (a loop binds one name per step)."""
        if isinstance(s.target, ast.Name): return s
        item = self.fresh("item")
        unpack = ast.copy_location(ast.Assign(targets=[s.target], value=ast.Name(item, ast.Load())), s)
        s.target, s.body = ast.copy_location(ast.Name(item, ast.Store()), s), [unpack, *s.body]
        return s

    def for_range(self, s: ast.For, over: ast.expr | None = None) -> list[ast.stmt]:
        """`for i in range(...)`, or with `over`, `for x in <iterable>` (Runtime.for_each: a traced array is walked
        by a range over its first axis, and so are enumerate and zip of traced arrays: `_array_items`)."""
        if _contains(s.body, (ast.Return,)): return self._unconverted(s, _RETURN_IN_LOOP)
        if s.orelse: return self._unconverted(s, "a for loop with an else: clause")
        if not isinstance(s.target, ast.Name): return self._unconverted(s, "a for loop whose target is not a name")
        if over is None:
            args = cast(ast.Call, s.iter).args   # range(...): see _is_range
            start, stop, step = (args + [None, None])[:3] if len(args) > 1 else (ast.Constant(0), args[0], None)
        target = s.target.id
        known_before = target in self.defined
        # the target read after the loop (its value in the last iteration that ran, as in Python: the one a break
        # left, or the range's last) is loop state the body binds first from the loop's index; it is unbound
        # after a loop that ran no iteration, unless bound before
        after = self.reads[target] > _reads(s)[target]
        index = self.fresh("index") if after else target
        self.defined.append(target)
        body_stmts, flags = self._loop_flags(s.body)
        # (not the target, though an inner loop may assign it too: each iteration binds it from the range)
        carried = [n for n in self._carried(s) if n != target]
        if after:
            carried.insert(0, target)
            body_stmts = [ast.copy_location(ast.Assign(targets=[ast.Name(target, ast.Store())],
                                                       value=ast.Name(index, ast.Load())), s), *body_stmts]
        saved = list(self.defined)
        self.defined += flags
        new_body = self.block(body_stmts)
        bound, self.defined = self.defined, saved
        if not known_before: self.defined.remove(target)   # (a loop of no iteration binds nothing)
        fn = self.fresh("body")
        body_def = _def(fn, [index] + flags + carried, new_body, _results(flags + carried, bound), s)
        rest = [ast.Name(fn, ast.Load()), _tuple(carried, defaults=True), _str_tuple(carried), _str_tuple(flags),
                ast.Constant(s.lineno + self.line0)]
        call = runtime_call("for_each", [over, *rest]) if over is not None else \
            runtime_call("for_range", [start or ast.Constant(0), stop, step or ast.Constant(None), *rest])
        assign = _assign(carried, call, s) if carried else ast.Expr(call)
        return [body_def, ast.copy_location(assign, s), *self._unbind(carried, s)]

    def while_(self, s: ast.While) -> list[ast.stmt]:
        if _contains(s.body, (ast.Return,)): return self._unconverted(s, _RETURN_IN_LOOP)
        if s.orelse: return self._unconverted(s, "a while loop with an else: clause")
        body_stmts, flags = self._loop_flags(s.body)
        carried = self._carried(s)
        saved = list(self.defined)
        self.defined += flags
        new_body = self.block(body_stmts)
        bound, self.defined = self.defined, saved
        cond_fn, body_fn = self.fresh("cond"), self.fresh("body")
        cond_def = _def(cond_fn, flags + carried, [], converted_test(s.test), s)
        body_def = _def(body_fn, flags + carried, new_body, _results(flags + carried, bound), s)
        call = runtime_call("while_", [load_name(cond_fn), load_name(body_fn), _tuple(carried, defaults=True),
                                       _str_tuple(carried), _str_tuple(flags),
                                       ast.Constant(s.lineno + self.line0)])
        assign = _assign(carried, call, s) if carried else ast.Expr(call)
        return [cond_def, body_def, ast.copy_location(assign, s), *self._unbind(carried, s)]

    def _loop_flags(self, body: list[ast.stmt]) -> tuple[list[ast.stmt], list[str]]:
        """The body with break/continue turned into flags: statements after one are guarded by `if not flag`, and
        a break ends the loop (the runtime tests the break flag with the loop's condition)."""
        if not _contains(body, (ast.Break, ast.Continue)): return body, []
        brk, cont = self.fresh("break"), self.fresh("continue")
        guarded = _guard(body, brk, cont)
        reset = ast.Assign(targets=[ast.Name(cont, ast.Store())], value=ast.Constant(False))
        return [ast.copy_location(reset, body[0])] + guarded, [brk, cont]

    # ---- branches ----
    def if_(self, s: ast.If, returns: bool = False) -> list[ast.stmt]:
        ret = "_numfn_ret"
        saved = list(self.defined)
        body = self.block(s.body)
        after_body = list(self.defined)
        self.defined = list(saved)
        orelse = self.block(s.orelse)
        after_else = list(self.defined)
        self.defined = saved
        if returns:   # every path returns: the returned value is the branch's result
            body, orelse = _returning(body, ret), _returning(orelse, ret)
        # every name either side assigns goes in and comes out: one a side does not bind keeps its value from
        # before (unbound if it had none: Python's NameError on a later read, or on a traced test an error naming
        # the branch)
        outs = list(dict.fromkeys(_assigned(body + orelse) + ([ret] if returns else [])))
        # (a side that ends in a raise never goes on: what the other binds is bound after the if)
        body_raises, else_raises = _ends_in_raise(s.body), _ends_in_raise(s.orelse)
        both = [n for n in outs if ((n in after_body or body_raises) and (n in after_else or else_raises)) or n == ret]
        true_fn, false_fn = self.fresh("then"), self.fresh("else")
        t_def = _def(true_fn, outs, body, _results(outs, after_body), s)
        f_def = _def(false_fn, outs, orelse or [ast.Pass()], _results(outs, after_else), s)
        call = runtime_call("if_", [converted_test(s.test), load_name(true_fn), load_name(false_fn),
                                    _tuple(outs, defaults=True), _str_tuple(outs), _str_tuple(both),
                                    ast.Constant(s.lineno + self.line0)])
        stmts = [t_def, f_def, ast.copy_location(_assign(outs, call, s) if outs else ast.Expr(call), s)]
        stmts += self._unbind([n for n in outs if n not in both], s)
        self.defined += [n for n in both if n not in self.defined]
        if returns: stmts.append(ast.copy_location(ast.Return(ast.Name(ret, ast.Load())), s))
        return stmts

    def _else_after(self, loop: ast.For | ast.While) -> list[ast.stmt]:
        """`for/while ...: body else: rest` as `broke = False; for/while ...: body (each break of this loop setting
        broke first); if not broke: rest` (`rest` unconditionally when the body has no break), so the loop converts
        like any other and its else clause becomes a branch."""
        rest, loop.orelse = loop.orelse, []
        if not _contains(loop.body, (ast.Break,)): return [loop, *rest]
        broke = self.fresh("broke")
        loop.body = _flag_breaks(loop.body, broke)
        init = ast.copy_location(ast.Assign(targets=[ast.Name(broke, ast.Store())], value=ast.Constant(False)), loop)
        test = ast.UnaryOp(op=ast.Not(), operand=ast.Name(broke, ast.Load()))
        return [init, loop, ast.copy_location(ast.If(test=test, body=rest, orelse=[]), rest[0])]

    def _unconverted(self, s: ast.For | ast.While, why: str) -> list[ast.stmt]:
        """A statement left to Python: it runs as written (it unrolls, or fails clearly if a traced value decides
        it); inside, loops and branches are still converted, except a branch holding a break or continue of this
        loop or a return (a converted branch is a function, which a break cannot leave, and a return only ends)."""
        s.body = self._keeping_jumps(s.body)
        self.defined += _assigned([s])
        # `with Runtime.unconverted(why, line): s`: an error about a traced value inside says why it runs as Python
        marker = runtime_call("unconverted", [ast.Constant(why), ast.Constant(s.lineno + self.line0)])
        return [ast.copy_location(ast.With(items=[ast.withitem(context_expr=marker)], body=[s]), s)]

    def _keeping_jumps(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        """The statements converted, those holding a break, continue or return of the enclosing Python loop left
        as Python (their own bodies converted the same way)."""
        out: list[ast.stmt] = []
        for st in stmts:
            if isinstance(st, (ast.If, ast.With, ast.Try)) and _contains([st], (ast.Break, ast.Continue, ast.Return)):
                _map_blocks(st, self._keeping_jumps)
                self.defined += _assigned([st])
                out.append(st)
            else:
                out += self.statement(st)
        return out


def _is_range(s: ast.For) -> bool:
    it = s.iter
    return isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and \
        not it.keywords and 1 <= len(it.args) <= 3 and not any(isinstance(a, ast.Starred) for a in it.args)


def _raising(exc: ast.expr) -> ast.Call:
    """`_numfn.raise_(lambda *v: exc with each f-string value replaced by v[k], value0, value1, ...)`."""
    values: list[ast.expr] = []

    class Formatted(ast.NodeTransformer):
        def visit_FormattedValue(self, node: ast.FormattedValue):
            values.append(node.value)
            node.value = ast.Subscript(load_name("_numfn_v"), ast.Constant(len(values) - 1), ast.Load())
            return node
    body = Formatted().visit(exc)
    make = ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=ast.arg("_numfn_v"), kwonlyargs=[], kw_defaults=[],
                                    defaults=[]), body)
    return ast.fix_missing_locations(ast.copy_location(runtime_call("raise_", [make, *values]), exc))


def _ends_in_raise(stmts: list[ast.stmt]) -> bool:
    if not stmts: return False
    last = stmts[-1]
    if isinstance(last, ast.Raise): return last.exc is not None
    if isinstance(last, ast.If): return _ends_in_raise(last.body) and _ends_in_raise(last.orelse)
    return False


def _ends_in_return(stmts: list[ast.stmt]) -> bool:
    if not stmts: return False
    last = stmts[-1]
    if isinstance(last, ast.Return): return True
    if isinstance(last, ast.If): return _ends_in_return(last.body) and _ends_in_return(last.orelse)
    return False


def _returning(stmts: list[ast.stmt], ret: str) -> list[ast.stmt]:
    """`return v` statements of a branch (at its end, or at the end of nested branches) as `ret = v`."""
    out: list[ast.stmt] = []
    for s in stmts:
        if isinstance(s, ast.Return):
            out.append(ast.copy_location(ast.Assign(targets=[ast.Name(ret, ast.Store())],
                                                    value=s.value or ast.Constant(None)), s))
            return out
        out.append(s)
    # a path that falls off the end of the function returns None
    return out + [ast.Assign(targets=[ast.Name(ret, ast.Store())], value=ast.Constant(None))]


def _guard(stmts: list[ast.stmt], brk: str, cont: str) -> list[ast.stmt]:
    """Statements with break/continue replaced by setting flags, and what follows a statement that may set one
    run only if neither is set."""
    out: list[ast.stmt] = []
    for i, s in enumerate(stmts):
        if isinstance(s, (ast.Break, ast.Continue)):
            flag = brk if isinstance(s, ast.Break) else cont
            set_flag = ast.Assign(targets=[ast.Name(flag, ast.Store())], value=ast.Constant(True))
            out.append(ast.copy_location(set_flag, s))
            break
        if isinstance(s, ast.If) and _contains([s], (ast.Break, ast.Continue)):
            s.body, s.orelse = _guard(s.body, brk, cont), _guard(s.orelse, brk, cont)
            out.append(s)
            rest = _guard(stmts[i + 1:], brk, cont)
            if rest:   # the rest of the body runs when no flag was set (a branch itself, when the flags are traced)
                test = runtime_call("not_flags", [ast.Name(brk, ast.Load()), ast.Name(cont, ast.Load())])
                out.append(ast.copy_location(ast.If(test=test, body=rest, orelse=[]), s))
            break
        out.append(s)
    return out


_RETURN_IN_LOOP = ("a loop with a return inside a with or try block runs as Python, unrolled (assign the result to "
                   "a variable, break, and return it after the loop)")


def _array_items(iterable: ast.expr) -> ast.expr:
    """`enumerate(...)` and `zip(...)` as `Runtime.items(enumerate, ...)`: over traced arrays, a loop over their
    positions (numfn.trace.statements.ArrayItems), not Python's iteration unrolled; anything else as it was."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id in ("enumerate",
                                                                                                       "zip"):
        func = ast.Attribute(ast.Name(RUNTIME, ast.Load()), "items", ast.Load())
        return ast.copy_location(ast.Call(func=func, args=[iterable.func, *iterable.args],
                                          keywords=iterable.keywords), iterable)
    return iterable


def _map_blocks(st: ast.If | ast.With | ast.Try, fn: Callable[[list[ast.stmt]], list[ast.stmt]]) -> None:
    """Replace each statement block of an if, with or try (its body, else, finally and handlers) by fn(block)."""
    for field in ("body", "orelse", "finalbody"):
        if getattr(st, field, None): setattr(st, field, fn(getattr(st, field)))
    for h in getattr(st, "handlers", ()): h.body = fn(h.body)


def _returns_in(stmts: list[ast.stmt]) -> list[ast.Return] | None:
    """The returns of a loop body (in branches; a nested loop holds none after `_nested_returns`), or None where one
    sits in a with or try block (a converted break cannot leave those)."""
    found: list[ast.Return] = []
    for st in stmts:
        if isinstance(st, ast.Return): found.append(st)
        elif isinstance(st, ast.If):
            inner = [_returns_in(st.body), _returns_in(st.orelse)]
            if inner[0] is None or inner[1] is None: return None
            found += inner[0] + inner[1]
        elif _contains([st], (ast.Return,)) and not isinstance(st, (ast.For, ast.While)): return None
    return found


def _returns_to_breaks(stmts: list[ast.stmt], flag: str, names: list[str], tuples: bool) -> list[ast.stmt]:
    """Each `return v` of a loop body (see `_return_flags`) as `names = v; flag = True; break` (`tuples`: each
    return gives a tuple of len(names) elements, one name each)."""
    out: list[ast.stmt] = []
    for st in stmts:
        if isinstance(st, ast.Return):
            values = cast(ast.Tuple, st.value).elts if tuples else [st.value or ast.Constant(None)]
            sets: list[ast.stmt] = [ast.Assign(targets=[ast.Name(n, ast.Store())], value=v)
                                    for n, v in zip(names, values)]
            sets += [ast.Assign(targets=[ast.Name(flag, ast.Store())], value=ast.Constant(True)), ast.Break()]
            return out + [ast.copy_location(x, st) for x in sets]   # (what follows a return never runs)
        if isinstance(st, ast.If):
            st.body = _returns_to_breaks(st.body, flag, names, tuples)
            st.orelse = _returns_to_breaks(st.orelse, flag, names, tuples)
        out.append(st)
    return out


def _flag_breaks(stmts: list[ast.stmt], flag: str) -> list[ast.stmt]:
    """The statements with each break of their loop (not of a nested loop) preceded by `flag = True`."""
    out: list[ast.stmt] = []
    for st in stmts:
        if isinstance(st, ast.Break):
            out.append(ast.copy_location(ast.Assign(targets=[ast.Name(flag, ast.Store())], value=ast.Constant(True)),
                                         st))
        elif isinstance(st, (ast.If, ast.With, ast.Try)):
            _map_blocks(st, lambda block: _flag_breaks(block, flag))
        out.append(st)
    return out


def _def(name: str, params: list[str], body: list[ast.stmt], result, at: ast.AST) -> ast.FunctionDef:
    """def name(*params): body; return result (a list of expressions is a tuple)."""
    value = ast.Tuple([*result], ast.Load()) if isinstance(result, list) else result
    return ast.copy_location(_function(name, params, [*body, ast.Return(value)]), at)


def _function(name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    extra: dict[str, Any] = {"type_params": []} if sys.version_info >= (3, 12) else {}
    return ast.FunctionDef(name=name, args=ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params],
                                                         vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                                         defaults=[]),
                           body=body, decorator_list=[], returns=None, **extra)


def _str_tuple(names: list[str]) -> ast.Constant:
    """A tuple of strings as one constant: Python's AST takes tuples of constants (typeshed's Constant lists none)."""
    return ast.Constant(tuple(names))  # type: ignore[arg-type]


def _tuple(names: list[str], defaults: bool = False) -> ast.expr:
    """A tuple of the names' current values (with `defaults`, a name not bound yet counts as unbound)."""
    if not defaults: return ast.Tuple([load_name(n) for n in names], ast.Load())
    return ast.Tuple([_value(n) for n in names], ast.Load())


def _value(name: str) -> ast.expr:
    """The name's current value, or the unbound marker where it has none."""
    return runtime_call("value", [ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                                           kw_defaults=[], kwarg=None, defaults=[]), load_name(name))])


def _results(names: list[str], bound: list[str]) -> list[ast.expr]:
    """What a converted body returns: the names' values, where a name its code may leave unbound (an inner `if`
    binding it on one side only deletes it again) gives the unbound marker instead of failing."""
    return [load_name(n) if n in bound else _value(n) for n in names]


def _assign(names: list[str], value: ast.expr, at: ast.AST) -> ast.stmt:
    """names = value, where the runtime's value is a tuple (of one, for one name)."""
    target = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
    return ast.copy_location(ast.Assign(targets=[target], value=value), at)


# ---------------------------------------------------------------------------------------------------------------
# converting a function

def converted(fn: Callable) -> Callable:
    """`fn` with its loops and branches converted (cached per function); `fn` itself when it cannot be."""
    code = getattr(fn, "__code__", None)
    if code is None: return fn
    if (getattr(fn, "__module__", None) or "").startswith("numfn."): return fn   # numfn's own: written to trace
    found = _cache.get(code)
    if found is None:
        try:
            found = _convert(fn)
        except Unconvertible as e:
            debug.log(1, f"numfn traces {getattr(fn, '__qualname__', fn)} without converting its control flow ({e})")
            if str(e).startswith("no source") and _has_loop(code): _warn_unrolled(fn, code)
            found = None
        _cache[code] = found if found is not None else False
    if not found: return fn
    factory, names = found
    cells = [c.cell_contents if _bound(c) else None
             for name, c in zip(code.co_freevars, fn.__closure__ or ()) if name != RUNTIME]
    new = factory(Runtime(), *cells)
    functools.update_wrapper(new, fn, updated=())
    new.__defaults__, new.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
    return new


def _has_loop(code: types.CodeType) -> bool:
    """Whether the code (or a function, comprehension or class defined in it) jumps backwards: a loop."""
    if any(i.opname.startswith("JUMP_BACKWARD") for i in dis.get_instructions(code)): return True
    return any(_has_loop(c) for c in code.co_consts if isinstance(c, types.CodeType))


def _warn_unrolled(fn: Callable, code: types.CodeType) -> None:
    """Say why a function's loops will unroll: code made by exec() or compile() of a string has no source unless
    the string is registered with linecache, and a long loop then costs compile time per iteration."""
    name = getattr(fn, "__qualname__", code.co_name)
    warnings.warn_explicit(
        f"numfn cannot read the source of {name} ({code.co_filename}), so its loops run as Python while tracing:"
        f" each iteration is traced again and compiled (a long loop makes a long compile), and a branch on a traced"
        f" value cannot be compiled. Define {name} in a file, or register the source of code made by exec()"
        f" with linecache (linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)).",
        NoSourceWarning, code.co_filename, code.co_firstlineno)


def _bound(cell) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:
        return False
    return True


_DEF_LINE = re.compile(r"^\s*(@|def\s|async\s+def\s)")


def _source_lines(code) -> tuple[list[str], int]:
    """The source lines of a function's code and the number of its first line. Read from linecache where the
    code's first line is its def (or a decorator): inspect.getsourcelines looks up the code's module first, and
    the first lookup in a process resolves the path of every module loaded (tens of milliseconds, most of a warm
    start from the disk cache)."""
    lines = linecache.getlines(code.co_filename)
    first = code.co_firstlineno
    if 0 < first <= len(lines) and _DEF_LINE.match(lines[first - 1]):
        return inspect.getblock(lines[first - 1:]), first
    return inspect.getsourcelines(code)


def _convert(fn: Callable):
    if fn.__code__.co_name == "<lambda>": raise Unconvertible("a lambda (its statements are expressions)")
    try:   # the code's own source (a function's would be its __wrapped__ function's, for a wrapper)
        lines, first = _source_lines(fn.__code__)
    except (OSError, TypeError) as e:
        raise Unconvertible(f"no source: {e}") from None
    source = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise Unconvertible(f"source does not parse alone: {e}") from None
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or fdef.name != fn.__code__.co_name:
        raise Unconvertible("not a def statement (a lambda?)")
    if _contains(fdef.body, (ast.Yield, ast.YieldFrom)): raise Unconvertible("a generator")
    calls = _Calls()
    fdef.body = [calls.visit(st) for st in fdef.body]
    expressions = Expressions()
    fdef.body = [expressions.visit(st) for st in fdef.body]
    if not calls.wrapped and not expressions.changed and \
            not any(isinstance(n, (ast.For, ast.While, ast.If)) for n in ast.walk(fdef)):
        raise Unconvertible("nothing to")
    args = fdef.args
    params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)] + \
        [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    conv = _Converter(params, fdef, first - 1)
    fdef.body = conv.block(fdef.body)
    fdef.decorator_list = []
    # defaults and annotations are expressions of the defining scope, which the factory does not have: the
    # converted function takes fn's own defaults (see `converted`), and needs no annotations
    fdef.args.defaults = [ast.Constant(None) for _ in fdef.args.defaults]
    fdef.args.kw_defaults = [None if d is None else ast.Constant(None) for d in fdef.args.kw_defaults]
    for a in (*fdef.args.posonlyargs, *fdef.args.args, *fdef.args.kwonlyargs, fdef.args.vararg, fdef.args.kwarg):
        if a is not None: a.annotation = None
    fdef.returns = None
    free = [n for n in fn.__code__.co_freevars if n != RUNTIME]   # (a function defined in converted code has RUNTIME)
    factory = _function("_numfn_factory", [RUNTIME] + free, [fdef, ast.Return(ast.Name(fdef.name, ast.Load()))])
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, first - 1)
    filename = fn.__code__.co_filename
    debug.log(4, lambda: f"converted {fn.__qualname__}:\n{ast.unparse(fdef)}")
    namespace: dict = {}
    exec(compile(module, filename, "exec"), fn.__globals__, namespace)   # noqa: S102 - the user's own code
    linecache.checkcache(filename)
    return namespace["_numfn_factory"], free


class _Calls(ast.NodeTransformer):
    """Every call `f(...)` of the user's code becomes `_numfn.callee(f)(...)`: a helper the function calls (a plain
    Python function of the user's, or a method) is converted too when it is called (Runtime.callee). Calls of names
    of builtins (range, len, ...) are left as they are (the converter reads `range`), except those traced values
    give Python's answer to (int, float, bool, min, max, round, len, any, all, sorted: statements.traced_builtin)."""
    _builtins = frozenset(dir(builtins)) - {"int", "float", "bool", "min", "max", "round", "len", "any", "all",
                                            "sorted"}

    def __init__(self):
        self.wrapped = 0

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in self._builtins: return node
        self.wrapped += 1
        callee = ast.Attribute(load_name(RUNTIME), "callee", ast.Load())
        node.func = ast.copy_location(ast.Call(callee, [node.func], []), node.func)
        return node


_PYTHON_PREFIXES = tuple({os.path.realpath(p) + os.sep for p in (sysconfig.get_paths()["stdlib"],
                                                               sysconfig.get_paths()["purelib"],
                                                               sysconfig.get_paths()["platlib"],
                                                               *site.getsitepackages())})
HELPER_DEPTH = 200   # nested calls of one converted helper while tracing before recursion is refused
_depth = threading.local()   # per thread (threads may trace at once): code -> nested calls now


def _user_function(fn) -> bool:
    """A plain Python function of the user's: not numfn's, NumPy's, the standard library's or an installed
    package's (those are traced as they are)."""
    if type(fn) is not types.FunctionType: return False
    module = getattr(fn, "__module__", None) or ""
    if module.split(".")[0] in ("numfn", "numpy"): return False
    return _user_file(fn.__code__.co_filename)


@functools.lru_cache(maxsize=1024)
def _user_file(filename: str) -> bool:
    """(Once per file: every call a traced function makes asks.)"""
    return not os.path.realpath(filename).startswith(_PYTHON_PREFIXES)


def _helper(fn: Callable) -> Callable:
    """`fn` converted, counting how deep it calls itself (a recursion a traced value would end never ends while
    tracing: both sides of a branch are traced)."""
    new = converted(fn)
    code = fn.__code__

    def too_deep() -> NumfnError:
        return TracedRecursionError(
            f"{fn.__qualname__} calls itself too deep while numfn traces it (at {user_location()}): a recursion that "
            "a traced value ends cannot be compiled (both sides of a branch on a traced value are traced); write it "
            "as a loop")

    def call(*args, **kwargs):
        depth = _depth.__dict__.setdefault("calls", Counter())
        depth[code] += 1
        try:
            if depth[code] > HELPER_DEPTH: raise too_deep()
            return new(*args, **kwargs)
        except RecursionError:   # Python's own limit came first: said once, at the outermost call
            if depth[code] == 1: raise too_deep() from None
            raise
        finally:
            depth[code] -= 1
    functools.update_wrapper(call, fn)
    return call


class Runtime:
    """What converted code calls: each statement decides, when it runs, to run as Python or as numfn's loops and
    branches (see numfn.trace.control)."""

    @staticmethod
    def value(get):
        try:
            return get()
        except (NameError, UnboundLocalError):
            return UNBOUND

    @staticmethod
    def unbound(x) -> bool:
        return x is UNBOUND

    raise_ = staticmethod(raise_)

    @staticmethod
    def pending():
        """The value a loop returns, before the loop (see _Converter._return_flags)."""
        return PENDING

    @staticmethod
    def callee(f):
        """What a call in converted code calls: a helper of the user's converted (and a method's function), anything
        else as it is."""
        builtin = traced_builtin(f)
        if builtin is not None: return builtin
        made = traced_constructor(f)   # np.zeros, np.ndarray, ... make arrays numfn traces
        if made is not None: return made
        routed = numpy_call(f)   # np.take(table, traced): NumPy's dispatch would not see the traced argument
        if routed is not None: return routed
        if _user_function(f): return _helper(f)
        if type(f) is types.MethodType and _user_function(f.__func__): return types.MethodType(_helper(f.__func__),
                                                                                                f.__self__)
        # an object of the user's class called (a model's __call__)
        call = next((c.__dict__["__call__"] for c in type(f).__mro__ if "__call__" in c.__dict__), None)
        if not isinstance(f, type) and _user_function(call): return types.MethodType(_helper(call), f)
        return f

    @staticmethod
    def and_(*thunks):
        return logical("and", thunks)

    @staticmethod
    def or_(*thunks):
        return logical("or", thunks)

    @staticmethod
    def not_(x):
        return logical_not(x)

    ifexp = staticmethod(expressions.ifexp)
    and_value = staticmethod(expressions.and_value)
    or_value = staticmethod(expressions.or_value)
    not_value = staticmethod(expressions.not_value)
    and_test = staticmethod(expressions.and_test)
    or_test = staticmethod(expressions.or_test)
    not_test = staticmethod(expressions.not_test)
    chain = staticmethod(expressions.chain)

    @staticmethod
    def not_flags(brk, cont):
        return not_flags(brk, cont)

    @staticmethod
    def unconverted(why: str, line: int) -> left_to_python:
        debug.log(2, f"line {line}: {why}: left to Python")
        return left_to_python(why, line)

    @staticmethod
    def items(fn, *args, **kwargs):
        return array_items(fn, *args, **kwargs)

    @staticmethod
    def for_range(start, stop, step, body, state, names, flags, line):
        return run_for_range(start, stop, step, body, state, names, flags, line)

    @staticmethod
    def for_each(iterable, body, state, names, flags, line):
        return run_for_each(iterable, body, state, names, flags, line)

    @staticmethod
    def while_(cond, body, state, names, flags, line):
        return run_while(cond, body, state, names, flags, line)

    @staticmethod
    def if_(test, then, orelse, state, names, both, line):
        return run_if(test, then, orelse, state, names, both, line)
