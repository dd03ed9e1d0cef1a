"""Walking graphs: every traversal of a graph's sources in numfn goes through these helpers.

A graph is a DAG of nodes whose `src` tuple names their sources: UOps (numfn/ir/uop.py builds its own walkers,
rebuild, substitute and the caches kept on nodes, on these, and re-exports everything here). Traced programs
unroll into graphs as deep as they are long, a hundred thousand nodes in a chain, so every helper is iterative (no
recursion, whatever the depth) and visits a shared node once, except `operands`, which unfolds a nest of one
operation as the tree it is written as.

Interface:
  toposort(roots)                      every node below `roots`, sources before users, in a deterministic order
  fold(roots, visit)                   {node: visit(node, its sources' results)}, sources first
  fill_bottom_up(root, unfilled, fill) fill(node) for the nodes not filled yet, sources before users, on demand
  bottom_up(root, memo, compute)       memo[node] = compute(node), sources first, for the keys not in `memo`
  preorder(roots, children)            a lazy walk, users before sources (stops early: "is any node ...")
  operands(root, through)              the terms of a nest of one operation (a sum's terms, a conjunction's)

`sources` / `children` arguments name what to walk into instead of `node.src` (a part of the sources, or keys that
are not nodes at all, such as (node, flag) pairs), so a walk that prunes or carries state still goes through here.
This module knows nodes only by their `src`. Every walk counts the nodes it visits as work of the compiler's
current stage (numfn.progress.work), which is how tests see a stage's work grow with the program.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from numfn.progress import work


class Node(Protocol):
    """What the walkers need of a node: its sources."""
    @property
    def src(self) -> tuple[Any, ...]: ...


N = TypeVar("N", bound=Node)


def toposort(roots: Iterable[N]) -> list[N]:
    """Every node reachable from `roots`, each after its sources, in a deterministic order (depth first, sources
    left to right)."""
    order: list[N] = []
    seen: set[N] = set()
    for root in roots:
        if root in seen: continue
        stack = [(root, iter(root.src))]
        seen.add(root)
        while stack:
            node, children = stack[-1]
            for child in children:
                if child not in seen:
                    seen.add(child)
                    stack.append((child, iter(child.src)))
                    break
            else:
                stack.pop()
                order.append(node)
    work(len(order))
    return order


# ---------------------------------------------------------------------------------------------------------------
# values per node, sources first

def fold(roots: Iterable[N], visit: Callable[[N, tuple], Any]) -> dict[N, Any]:
    """{node: visit(node, results of its sources)} for every node reachable from `roots`, sources first (in
    `toposort` order, so a visit with side effects sees the nodes in that order). Each shared node is visited
    once. To give up early, raise from `visit`."""
    results: dict[N, Any] = {}
    for u in toposort(roots):
        results[u] = visit(u, tuple(results[s] for s in u.src))
    return results


def fill_bottom_up(root: Any, unfilled: Callable[[Any], bool], fill: Callable[[Any], None],
                   sources: Callable[[Any], Sequence] | None = None) -> None:
    """Call fill(x) for `root` and every node below it with unfilled(x) true, each after the nodes `sources(x)`
    names (its `src` by default), each once, without recursion: fill may read what its sources were filled with.
    The walk does not go below filled nodes, so filling on demand costs only the new part of a graph. fill(x) must
    leave x filled (unfilled(x) false)."""
    stack = [root]
    visits = 0
    while stack:
        visits += 1
        x = stack[-1]
        if not unfilled(x):
            stack.pop()
            continue
        missing = [s for s in (x.src if sources is None else sources(x)) if unfilled(s)]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        fill(x)
    work(visits)


def bottom_up(root: Hashable, memo: dict, compute: Callable[[Any], Any],
              sources: Callable[[Any], Sequence] | None = None) -> Any:
    """memo[root], computing memo[x] = compute(x) first for every key below `root` (through `sources`, `src` by
    default) not in `memo` yet, sources first: compute reads its sources' values from `memo`. Keys may be any
    hashable values when `sources` names theirs (pairs (node, flag), ...). `memo` can be kept across calls."""
    fill_bottom_up(root, lambda x: x not in memo, lambda x: memo.__setitem__(x, compute(x)), sources)
    return memo[root]


# ---------------------------------------------------------------------------------------------------------------
# users before sources

def preorder(roots: Iterable[Any], children: Callable[[Any], Sequence] | None = None,
             once: bool = True) -> Iterator[Any]:
    """The nodes reachable from `roots` through `children` (`src` by default), depth first, left to right, each
    before the nodes first reached through it (not a topological order: a shared node comes where it is first
    reached). Lazy, so `any(...)` over it stops at the first node found, and `children` may
    prune (return () for a node not to look below). With `once` (the default) each node comes once; without, a
    node reached along several paths comes once per path (a DAG walked as the tree it unfolds to)."""
    stack = list(roots)
    stack.reverse()
    seen: set = set()
    visits = 0
    try:
        while stack:
            x = stack.pop()
            if once:
                if x in seen: continue
                seen.add(x)
            visits += 1
            yield x
            below = x.src if children is None else children(x)
            stack.extend(reversed(below))
    finally:   # (also when the caller stops early)
        work(visits)


def operands(root: N, through: Callable[[N], bool]) -> list[N]:
    """The operands of a nest of operations `through` accepts, left to right and with repetition (x + x has the
    term x twice): the nodes below `root` reached through accepted nodes only, `root` itself when not accepted.
    `operands(i + (j + 4), lambda u: u.op is Ops.ADD)` is [i, j, 4]."""
    out: list[N] = []
    stack = [root]
    visits = 0
    while stack:
        visits += 1
        u = stack.pop()
        if through(u): stack.extend(reversed(u.src))
        else: out.append(u)
    work(visits)
    return out
