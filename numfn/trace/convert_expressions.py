"""Expressions of converted code (numfn.trace.convert): conditional expressions (`x if c else y`), `and`/`or`/`not`
and chained comparisons become calls of the runtime (numfn.trace.expressions) with their lazily evaluated operands
as thunks, so that each is Python's on Python values and a branch (or a select) on traced ones. Also the small
AST builders both modules use (`runtime_call`, `_load`) and the runtime's name in converted code (`RUNTIME`)."""
from __future__ import annotations

import ast

RUNTIME = "_numfn"          # the name the converted code calls the runtime by (a closure variable, not a global)


def load_name(name: str) -> ast.Name:
    return ast.Name(name, ast.Load())


def runtime_call(method: str, args: list) -> ast.Call:
    """`_numfn.method(*args)`: a call of the runtime (numfn.trace.convert.Runtime) in converted code."""
    return ast.Call(func=ast.Attribute(ast.Name(RUNTIME, ast.Load()), method, ast.Load()), args=args, keywords=[])


class _Logic(ast.NodeTransformer):
    """`a and b`, `a or b`, `not a` in a test: runtime calls that are Python's on Python values and elementwise
    logic on traced ones (Python's would need the value of the traced array); `b` still runs only when needed."""

    def visit_BoolOp(self, node: ast.BoolOp):
        self.generic_visit(node)
        thunks = [ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                           kwarg=None, defaults=[]), v) for v in node.values]
        return ast.copy_location(runtime_call('and_' if isinstance(node.op, ast.And) else 'or_', thunks), node)

    def visit_UnaryOp(self, node: ast.UnaryOp):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not): return node
        return ast.copy_location(runtime_call("not_", [node.operand]), node)

    def visit_Lambda(self, node):
        return node


_COMPARISON_SYMBOLS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
                       ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
# what an operand may contain to be computed whether or not it is chosen (no call, subscript or assignment)
_IMPURE = (ast.Call, ast.Subscript, ast.NamedExpr, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
           ast.GeneratorExp, ast.Await, ast.Yield, ast.YieldFrom, ast.Starred, ast.JoinedStr)


_FRAME_READERS = frozenset({"super", "locals", "vars", "eval", "exec", "dir"})


def _pure(node: ast.expr) -> bool:
    return not any(isinstance(n, _IMPURE) for n in ast.walk(node))


def _thunk(expr: ast.expr) -> ast.Lambda:
    return ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                    defaults=[]), expr)


def _flag(b: bool) -> ast.Constant:
    return ast.Constant(b)


class Expressions(ast.NodeTransformer):
    """`x if c else y`, `a and b`, `a or b`, `not a` and chained comparisons anywhere in the function (assignments,
    returns, lambdas, comprehensions, and if/while tests) become calls of numfn.trace.expressions: Python's on
    Python values, a branch or select on traced ones. The operands Python evaluates lazily become thunks (lambdas);
    an expression holding an assignment (`:=`, which would bind in the lambda), `yield` or `await` is left as is.
    In a test (if, while, the condition of `x if c else y`) only truth matters (*_test forms)."""

    def __init__(self):
        self.changed = 0

    @staticmethod
    def _movable(node: ast.AST) -> bool:
        """Whether the expression means the same inside a lambda: not when it assigns a name, yields or awaits, or
        calls what reads the calling frame (super() without arguments, locals(), vars(), eval(), exec())."""
        return not any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)) or
                       (isinstance(n, ast.Name) and n.id in _FRAME_READERS) for n in ast.walk(node))

    def visit_ClassDef(self, node):   # a lambda in a class body does not see the class's names
        return node

    def _runtime(self, name: str, args: list, at: ast.AST) -> ast.expr:
        self.changed += 1
        return ast.copy_location(runtime_call(name, args), at)

    def test(self, node: ast.expr) -> ast.expr:
        if not self._movable(node): return self.visit(node)
        if isinstance(node, ast.BoolOp):
            kind = "and_test" if isinstance(node.op, ast.And) else "or_test"
            pure = all(_pure(v) for v in node.values[1:])
            thunks: list[ast.expr] = [_thunk(self.test(v)) for v in node.values]
            return self._runtime(kind, [ast.List(thunks, ast.Load()), _flag(pure)], node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self._runtime("not_test", [self.test(node.operand)], node)
        if isinstance(node, ast.Compare) and len(node.ops) > 1: return self._chain(node, True)
        return self.visit(node)

    def _chain(self, node: ast.Compare, as_test: bool) -> ast.expr:
        pure = all(_pure(c) for c in node.comparators[1:])
        symbols = ast.Constant(tuple(_COMPARISON_SYMBOLS[type(op)] for op in node.ops))  # type: ignore[arg-type]
        thunks = ast.List([_thunk(self.visit(c)) for c in node.comparators], ast.Load())
        return self._runtime("chain", [_flag(as_test), _flag(pure), self.visit(node.left), symbols, thunks], node)

    def visit_If(self, node):
        test, node.test = node.test, ast.Constant(True)
        self.generic_visit(node)
        node.test = self.test(test)
        return node
    visit_While = visit_If

    def visit_IfExp(self, node: ast.IfExp):
        if not self._movable(node): return self.generic_visit(node)
        pure = _pure(node.body) and _pure(node.orelse)
        return self._runtime("ifexp", [self.test(node.test), _thunk(self.visit(node.body)),
                                       _thunk(self.visit(node.orelse)), _flag(pure)], node)

    def visit_BoolOp(self, node: ast.BoolOp):
        if not self._movable(node): return self.generic_visit(node)
        kind = "and_value" if isinstance(node.op, ast.And) else "or_value"
        pure = all(_pure(v) for v in node.values[1:])
        thunks: list[ast.expr] = [_thunk(self.visit(v)) for v in node.values]
        return self._runtime(kind, [ast.List(thunks, ast.Load()), _flag(pure)], node)

    def visit_UnaryOp(self, node: ast.UnaryOp):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not): return node
        return self._runtime("not_value", [node.operand], node)

    def visit_Compare(self, node: ast.Compare):
        if len(node.ops) == 1 or not self._movable(node): return self.generic_visit(node)
        return self._chain(node, False)


def converted_test(expr: ast.expr) -> ast.expr:
    return _Logic().visit(expr)
