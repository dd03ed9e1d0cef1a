"""The graph walkers (numfn/ir/walk.py, and rebuild / substitute / memo_bottom_up built on them in numfn/ir/uop.py):
their orders, their memoization, graphs of a hundred thousand nodes under a small recursion limit; and a count of
the graph traversals written by hand anywhere else in numfn/, which must be none."""
from __future__ import annotations

import ast
import os

import pytest

from numfn.dtype import dtypes
from numfn.ir.symbolic import affine
from numfn.ir.uop import (Ops, UOp, bottom_up, fill_bottom_up, fold, memo_bottom_up, memo_get, operands, preorder,
                          rebuild, substitute, toposort)

from helpers import recursion_limit

pytestmark = pytest.mark.nocompile   # the compile-free tier (tests/conftest.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
I = dtypes.index
DEEP = 20_000   # (the recursion limit is a few frames above the test: a walker recursing per node fails at 60)


def leaf(name: str) -> UOp:
    return UOp(Ops.PARAM, I, (), (name, ()))   # a leaf (a parameter named `name`)


def c(v: int) -> UOp:
    return UOp.const(I, v)


def add(a: UOp, b: UOp) -> UOp:
    return UOp(Ops.ADD, I, (a, b))


def mul(a: UOp, b: UOp) -> UOp:
    return UOp(Ops.MUL, I, (a, b))


def chain(n: int) -> tuple[UOp, list[UOp]]:
    """x0 = a; x(k+1) = x(k) + 1 (the constant shared by all): the top node and the chain bottom up."""
    x, one, nodes = leaf("a"), c(1), []
    for _ in range(n):
        x = add(x, one)
        nodes.append(x)
    return x, nodes


# a diamond: d = (a + b) * (a + 2), sharing a
A, B, TWO = leaf("a"), leaf("b"), c(2)
L, R = add(A, B), add(A, TWO)
D = mul(L, R)


# ---------------------------------------------------------------------------------------------------------------
# orders and memoization

def test_toposort_order_sources_first_each_once():
    assert toposort([D]) == [A, B, L, TWO, R, D]          # depth first, sources left to right
    assert D.toposort() == toposort([D])
    assert toposort([R, D, L]) == [A, TWO, R, B, L, D]     # several roots: each walked after the ones before
    assert toposort([]) == []


def test_fold_visits_each_node_once_sources_first():
    calls = []

    def visit(u, src):
        calls.append(u)
        if u.op is Ops.PARAM: return u.arg[0]
        if u.op is Ops.CONST: return str(u.arg)
        return "(" + ("*" if u.op is Ops.MUL else "+").join(src) + ")"
    out = fold([D], visit)
    assert calls == toposort([D])
    assert out[D] == "((a+b)*(a+2))"


def test_rebuild_and_substitute():
    assert rebuild(D, lambda u, src: None) is D            # unchanged: the same object back
    doubled = rebuild(D, lambda u, src: mul(u, c(2)) if u.op is Ops.PARAM else None)
    assert doubled is mul(add(mul(A, c(2)), mul(B, c(2))), add(mul(A, c(2)), TWO))
    assert substitute(D, {A: B}) is mul(add(B, B), add(B, TWO))
    assert substitute(D, {L: A, A: B}) is mul(A, add(B, TWO))   # a replacement is taken as it is...
    # ...unless it is a node of the graph seen before and rebuilt_replacements asks for its rebuilt version
    assert substitute(D, {L: A, A: B}, rebuild_replacements=True) is mul(B, add(B, TWO))


def test_fill_bottom_up_fills_only_unfilled_nodes_sources_first():
    filled = {A: "a"}   # already filled: not walked below, not filled again
    order = []

    def fill(u):
        order.append(u)
        filled[u] = "".join(filled[s] for s in u.src) or str(u.arg[0] if u.op is Ops.PARAM else u.arg)
    fill_bottom_up(D, lambda u: u not in filled, fill)
    assert filled[D] == "ab" + "a2" and A not in order
    assert set(order) == {B, L, TWO, R, D} and len(order) == 5
    assert all(order.index(s) < order.index(u) for u in order for s in u.src if s in order)
    fill_bottom_up(D, lambda u: u not in filled, fill)   # nothing left to do
    assert len(order) == 5


def test_bottom_up_keys_of_any_kind_and_a_kept_memo():
    computed = []

    def depth(key):   # keys (node, flag) pairs: the longest path, counting only flagged steps
        computed.append(key)
        u, flag = key
        return max((memo[k] for k in sources(key)), default=0) + flag

    def sources(key):
        u, flag = key
        return [(s, s.op is Ops.ADD) for s in u.src]
    memo: dict = {}
    assert bottom_up((D, False), memo, depth, sources) == 1
    assert len(computed) == len(set(computed)) == 6
    assert bottom_up((L, True), memo, depth, sources) == 1 and len(computed) == 6   # kept: nothing recomputed


def test_memo_bottom_up_kept_on_the_nodes():
    key, calls = object(), []

    def size(u):
        calls.append(u)
        return 1 + sum(memo_get(s, key) for s in u.src)
    assert memo_bottom_up(D, key, size) == 7     # A and its subtree counted twice: a tree size
    assert memo_get(L, key) == 3 and len(calls) == 6
    assert memo_bottom_up(D, key, size) == 7 and len(calls) == 6
    other = object()   # sources: a part of the sources only
    assert memo_bottom_up(D, other, lambda u: 1 + sum(memo_get(s, other) or 0 for s in u.src[:1]),
                          lambda u: u.src[:1]) == 3
    assert memo_get(R, other) is None


def test_preorder_order_once_pruning_and_laziness():
    assert list(preorder([D])) == [D, L, A, B, R, TWO]
    assert list(preorder([D], once=False)) == [D, L, A, B, R, A, TWO]
    assert list(preorder([D], lambda u: u.src if u.op is Ops.MUL else ())) == [D, L, R]
    asked = []

    def children(u):
        asked.append(u)
        return u.src
    assert any(u is A for u in preorder([D], children))
    assert asked == [D, L]   # stopped at the first A: nothing below it or to its right was asked for
    assert list(preorder([(D, 0)], lambda k: [(s, k[1] + 1) for s in k[0].src if k[1] < 1])) == \
        [(D, 0), (L, 1), (R, 1)]   # keys that are not nodes


def test_operands_left_to_right_with_repetition():
    is_add = lambda u: u.op is Ops.ADD   # noqa: E731
    assert operands(add(A, add(B, c(4))), is_add) == [A, B, c(4)]
    assert operands(add(add(A, B), add(A, B)), is_add) == [A, B, A, B]   # x + x: the term twice
    assert operands(D, is_add) == [D]


# ---------------------------------------------------------------------------------------------------------------
# deep graphs: no recursion, whatever the depth

def test_walkers_on_a_chain_of_twenty_thousand_nodes():
    top, nodes = chain(DEEP)
    with recursion_limit():
        order = toposort([top])
        assert len(order) == DEEP + 2 and order[-1] is top
        assert fold([top], lambda u, src: 1 + max(src, default=-1))[top] == DEEP
        assert rebuild(top, lambda u, src: None) is top
        # (replacing near the top: the walk goes all the way down, building a few nodes only)
        assert substitute(top, {nodes[-3]: leaf("b")}) is add(add(leaf("b"), c(1)), c(1))
        assert substitute(top, {nodes[-3]: nodes[0]}, rebuild_replacements=True) is add(add(nodes[0], c(1)), c(1))
        memo: dict = {}
        assert bottom_up(top, memo, lambda u: 1 + max((memo[s] for s in u.src), default=-1)) == DEEP
        key = object()
        assert memo_bottom_up(top, key, lambda u: 1 + max((memo_get(s, key) for s in u.src), default=-1)) == DEEP
        seen: set = set()
        fill_bottom_up(top, lambda u: u not in seen, seen.add)
        assert len(seen) == DEEP + 2
        assert sum(1 for _ in preorder([top])) == DEEP + 2
        assert operands(top, lambda u: u.op is Ops.ADD) == [leaf("a")] + [c(1)] * DEEP
        assert affine(top) == (((leaf("a"), 1),), DEEP)   # the index analysis walks through the helpers too


def test_walkers_on_a_wide_and_deep_lattice():
    """Each level uses both nodes of the level below: 2**levels paths, 2 * levels nodes; shared nodes once."""
    x, y = leaf("a"), leaf("b")
    for _ in range(20_000):
        x, y = add(x, y), mul(x, y)
    top = add(x, y)
    with recursion_limit():
        assert len(toposort([top])) == 40_003
        assert sum(1 for _ in preorder([top])) == 40_003
        assert fold([top], lambda u, src: 1 + max(src, default=0))[top] == 20_002


# ---------------------------------------------------------------------------------------------------------------
# hand-written traversals: there are none outside the helpers
#
# A graph traversal written by hand is one of (in a function anywhere in numfn/; a node's sources are what its
# `.src` holds, or a name bound by a loop, comprehension or assignment over something holding `.src`):
#   recursion   the function calls itself (by name, or as a method) on a node's sources, walking more than one path:
#               on each element of a loop or comprehension over sources, or on two different source expressions.
#               (Following one operand, as `x // a // b -> x // (a * b)` does, is a descent along a path, not a
#               traversal, like `while x.op is Ops.RESHAPE: x = x.src[0]`.)
#   worklist    a `while` loop that pops from a list (pop / popleft) and pushes sources onto it (append, extend,
#               appendleft, add, update or +=).
#   growing     a `for` loop over a list that the loop extends with sources.
#   fold        a `for` loop over toposort(...) (or a name assigned from it) storing `done[v]` for its loop variable
#               v, computed from `done` at v's sources (one expression reading `done` and naming a source).
# A function defined inside the one checked that returns sources (a walk's `sources(u)`) names sources when called.
# Not seen: a walk split across functions (mutual recursion; a fold whose values are read inside other methods).
# The helpers themselves are allowed, and nothing else.

HELPERS = {
    ("numfn/ir/walk.py", None): "the walkers",
    ("numfn/ir/uop.py", "_graph_rewrite"): "the rewrite engine: a worklist that rewrites the replacements it makes",
    ("numfn/ir/uop.py", "match"): "UPat.match walks a pattern, as deep as the pattern is written",
}


def _mentions_source(node: ast.AST, names: set[str]) -> bool:
    return any((isinstance(n, ast.Attribute) and n.attr == "src") or (isinstance(n, ast.Name) and n.id in names)
               for n in ast.walk(node))


def _functions(tree: ast.AST) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[ast.AST]]]:
    """Every function of a module with the nodes of its own body: not those of functions defined inside it (they
    are checked on their own, their definitions are listed), lambdas included. One pass over the module."""
    out: list = []
    stack: list[tuple[ast.AST, list | None]] = [(tree, None)]
    while stack:
        node, own = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if own is not None: own.append(child)   # (its definition, not its body)
                out.append((child, []))
                stack.append((child, out[-1][1]))
                continue
            if own is not None: own.append(child)
            stack.append((child, own))
    return out


def _bound(target: ast.AST) -> set[str]:
    """The names an assignment target binds (not those of a subscript or attribute it writes into)."""
    if isinstance(target, ast.Name): return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)): return set().union(*map(_bound, target.elts))
    if isinstance(target, ast.Starred): return _bound(target.value)
    return set()


def _source_names(nodes: list[ast.AST], giving: set[str]) -> set[str]:
    """Names bound (by for, comprehension or assignment) from an expression holding sources, and the functions
    `giving` sources."""
    if not giving and not any(isinstance(n, ast.Attribute) and n.attr == "src" for n in nodes): return set()
    names: set[str] = set(giving)
    while True:
        before = len(names)
        for n in nodes:
            pairs: list[tuple[ast.AST, ast.AST]] = []
            if isinstance(n, (ast.For, ast.comprehension)): pairs.append((n.target, n.iter))
            elif isinstance(n, ast.Assign): pairs += [(t, n.value) for t in n.targets]
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)) and n.value is not None:
                pairs.append((n.target, n.value))
            for target, value in pairs:
                if _mentions_source(value, names): names |= _bound(target)
        if len(names) == before: return names


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _recursion(fn, nodes, names) -> bool:
    loops_over_sources = [n for n in nodes if (isinstance(n, ast.For) and _mentions_source(n.iter, names)) or
                          (isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)) and
                           any(_mentions_source(g.iter, names) for g in n.generators))]
    in_loop = {id(m) for loop in loops_over_sources for m in ast.walk(loop)}
    operands = set()
    for n in nodes:
        if isinstance(n, ast.Call) and _callee(n) == fn.name:
            args = [a for a in [*n.args, *(k.value for k in n.keywords)] if _mentions_source(a, names)]
            if not args: continue
            if id(n) in in_loop: return True
            operands.add(ast.unparse(args[0]))
    return len(operands) > 1


def _worklist(nodes, names) -> bool:
    for loop in (n for n in nodes if isinstance(n, ast.While)):
        inside = list(ast.walk(loop))
        pops = any(isinstance(m, ast.Call) and _callee(m) in ("pop", "popleft") for m in inside)
        pushes = any((isinstance(m, ast.Call) and _callee(m) in ("append", "extend", "appendleft", "add", "update")
                      and any(_mentions_source(a, names) for a in m.args)) or
                     (isinstance(m, ast.AugAssign) and _mentions_source(m.value, names)) for m in inside)
        if pops and pushes: return True
    return False


def _growing(nodes, names) -> bool:
    for loop in (n for n in nodes if isinstance(n, ast.For) and isinstance(n.iter, ast.Name)):
        for m in ast.walk(loop):
            if isinstance(m, ast.Call) and isinstance(m.func, ast.Attribute) and m.func.attr in ("append", "extend") \
                    and isinstance(m.func.value, ast.Name) and m.func.value.id == loop.iter.id \
                    and any(_mentions_source(a, names) for a in m.args):
                return True
    return False


def _toposort(node: ast.AST) -> bool:
    return any((isinstance(n, ast.Name) and n.id == "toposort") or (isinstance(n, ast.Attribute) and
                                                                     n.attr == "toposort") for n in ast.walk(node))


def _fold(nodes, names) -> bool:
    loops = [n for n in nodes if isinstance(n, ast.For) and isinstance(n.target, ast.Name)]
    if not loops: return False
    sorted_names = {t.id for n in nodes if isinstance(n, ast.Assign) and _toposort(n.value)
                    for t in n.targets if isinstance(t, ast.Name)}
    for loop in loops:
        if not _toposort(loop.iter) and not (isinstance(loop.iter, ast.Name) and loop.iter.id in sorted_names):
            continue
        v = loop.target.id
        stored = {t.value.id for m in ast.walk(loop) if isinstance(m, ast.Assign) for t in m.targets
                  if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and ast.unparse(t.slice) == v}
        for m in ast.walk(loop):
            if not isinstance(m, (ast.Subscript, ast.Call, ast.Compare, ast.ListComp, ast.GeneratorExp, ast.SetComp,
                                  ast.DictComp)) or not _mentions_source(m, names):
                continue
            if any(isinstance(k, ast.Name) and k.id in stored and isinstance(k.ctx, ast.Load) for k in ast.walk(m)):
                return True
    return False


def hand_written_traversals(source: str) -> list[tuple[str, int, str]]:
    """(function, line, kind) for each function of `source` that walks a graph by hand (see above)."""
    found = []
    functions = _functions(ast.parse(source))
    own_names = {id(fn): _source_names(nodes, set()) for fn, nodes in functions}
    for fn, nodes in functions:
        # functions defined inside that return sources (a walk's `sources(u)`): calling one names sources too
        giving = {n.name for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and
                  any(isinstance(r, ast.Return) and r.value is not None and _mentions_source(r.value, own_names[id(n)])
                      for r in ast.walk(n))}
        names = _source_names(nodes, giving) if giving else own_names[id(fn)]
        if not names and not any(isinstance(n, ast.Attribute) and n.attr == "src" for n in nodes): continue
        kinds = (("recursion", _recursion(fn, nodes, names)), ("worklist", _worklist(nodes, names)),
                 ("growing", _growing(nodes, names)), ("fold", _fold(nodes, names)))
        found += [(fn.name, fn.lineno, kind) for kind, hit in kinds if hit]
    return found


def _numfn_files() -> dict[str, str]:
    out = {}
    for dirpath, _, filenames in os.walk(os.path.join(ROOT, "numfn")):
        for name in filenames:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                out[os.path.relpath(path, ROOT).replace(os.sep, "/")] = path
    return out


def test_no_graph_traversal_written_by_hand():
    found = []
    for rel, path in sorted(_numfn_files().items()):
        with open(path, encoding="utf-8") as f:
            for name, line, kind in hand_written_traversals(f.read()):
                if (rel, None) not in HELPERS and (rel, name) not in HELPERS:
                    found.append(f"{rel}:{line} {name}: {kind}")
    assert found == [], "graph traversals written by hand (use numfn/ir/walk.py's helpers):\n" + "\n".join(found)


def test_the_helpers_listed_exist():
    files = _numfn_files()
    for rel, name in HELPERS:
        assert rel in files
        if name is not None:
            with open(files[rel], encoding="utf-8") as f:
                assert name in {n for n, _, _ in hand_written_traversals(f.read())}, (rel, name)


# what the count recognizes, on small examples (so that it cannot pass by recognizing nothing)
TRAVERSALS = {
    "recursion": '''
def count(u):
    return 1 + sum(count(s) for s in u.src)
''',
    "recursion on two operands": '''
def terms(u):
    if u.op is Ops.ADD: return terms(u.src[0]) + terms(u.src[1])
    return [u]
''',
    "method recursion": '''
class W:
    def visit(self, u):
        for s in u.src: self.visit(s)
''',
    "worklist": '''
def nodes(root):
    stack, seen = [root], set()
    while stack:
        u = stack.pop()
        if u in seen: continue
        seen.add(u)
        stack.extend(u.src)
    return seen
''',
    "worklist +=": '''
def leaves(root):
    out, todo = [], [root]
    while todo:
        g = todo.pop()
        if g.op is Ops.AND: todo += list(g.src)
        else: out.append(g)
    return out
''',
    "worklist through a sources function": '''
def rebuilt(value, home):
    def sources(u):
        srcs = u.src[1:] if u.op is Ops.SCATTER else u.src
        return [s for s in srcs if s not in home]
    memo, stack = {}, [value]
    while stack:
        u = stack[-1]
        missing = [s for s in sources(u) if s not in memo]
        if missing:
            stack.extend(missing)
            continue
        memo[u] = stack.pop()
    return memo[value]
''',
    "growing": '''
def below(root):
    order = [root]
    for u in order: order.extend(s for s in u.src if s not in order)
    return order
''',
    "fold": '''
def rebuilt(root, mapping):
    done = {}
    for u in toposort([root]):
        done[u] = mapping.get(u) or u.replace(src=tuple(done[s] for s in u.src))
    return done[root]
''',
    "fold through a call": '''
def close(roots):
    inner = {}
    nodes = toposort(roots)
    for u in nodes:
        if any(s in inner for s in u.src): inner[u] = capture(u, inner)
    return inner
''',
}
NOT_TRAVERSALS = {
    "a descent along one operand": '''
def base(u):
    while u.op in MOVEMENT: u = u.src[0]
    return u
''',
    "recursion on one operand": '''
def idiv(a, c):
    if a.op is Ops.IDIV: return idiv(a.src[0], a.src[1].arg * c)
    return imod(idiv(a.src[0], c), 2)
''',
    "a pass over the toposort": '''
def loads(sink):
    return [u for u in toposort([sink]) if u.op is Ops.LOAD and u.src[0].op is Ops.BUFFER]
''',
    "a fold through the helper": '''
def rebuilt(root):
    return fold([root], lambda u, src: u.replace(src=src))[root]
''',
    "a stack of something else": '''
def fields(node):
    stack = [node]
    while stack:
        n = stack.pop()
        stack.extend(ast.iter_child_nodes(n))
''',
}


@pytest.mark.parametrize("name", TRAVERSALS)
def test_the_count_recognizes_traversals(name):
    assert hand_written_traversals(TRAVERSALS[name]), name


@pytest.mark.parametrize("name", NOT_TRAVERSALS)
def test_the_count_leaves_other_code_alone(name):
    assert hand_written_traversals(NOT_TRAVERSALS[name]) == [], name
