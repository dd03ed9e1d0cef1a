"""Nested containers of arrays ("pytrees"): tuples, lists, dicts, NamedTuples and None around leaf values.

`flatten` returns the leaves in a fixed order and a TreeDef that `unflatten` uses to rebuild the container.
TreeDefs are hashable, so a function's argument structure can be part of its signature.

A dict's leaves come in the order of its sorted keys (so equal structures flatten alike, whatever order they were
built in), and its TreeDef keeps the order it was built in, which `unflatten` builds it in again: a returned dict
comes back as the function built it, as from Python. Structures that must match (a loop's state, the sides of a
branch, vmap's axes and their arguments) are compared by `unordered()`, which forgets insertion orders.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Callable


@dataclass(frozen=True)
class TreeDef:
    kind: str                 # "leaf", "none", "tuple", "list", "dict", "namedtuple"
    children: tuple = ()
    meta: Any = None          # dict keys (sorted: the children's order), or the NamedTuple class
    order: tuple | None = None   # a dict's keys in the order it was built in, when that is not the sorted one

    @property
    def num_leaves(self) -> int:
        return 1 if self.kind == "leaf" else sum(c.num_leaves for c in self.children)

    def unordered(self) -> TreeDef:
        """This structure with every dict's insertion order forgotten (what two structures must share to match)."""
        if not self.children and self.order is None: return self
        return TreeDef(self.kind, tuple(c.unordered() for c in self.children), self.meta)

    def __repr__(self) -> str:
        if self.kind == "leaf": return "*"
        if self.kind == "none": return "None"
        if self.kind == "dict":
            child = dict(zip(self.meta, self.children))
            inner = ", ".join(f"{k!r}: {child[k]!r}" for k in (self.order or self.meta))
        else:
            inner = ", ".join(map(repr, self.children))
        if self.kind == "tuple": return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind == "list": return f"[{inner}]"
        if self.kind == "dict": return f"{{{inner}}}"
        return f"{getattr(self.meta, '__name__', 'namedtuple')}({inner})"


LEAF = TreeDef("leaf")


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, TreeDef]:
    leaves: list = []

    def walk(x) -> TreeDef:
        if is_leaf is not None and is_leaf(x):
            leaves.append(x)
            return LEAF
        if x is None: return TreeDef("none")
        if _is_namedtuple(x): return TreeDef("namedtuple", tuple(walk(v) for v in x), type(x))
        if isinstance(x, tuple): return TreeDef("tuple", tuple(walk(v) for v in x))
        if isinstance(x, list): return TreeDef("list", tuple(walk(v) for v in x))
        if isinstance(x, dict):
            built = tuple(x)
            keys = tuple(sorted(x, key=repr)) if not all(isinstance(k, str) for k in x) else tuple(sorted(x))
            return TreeDef("dict", tuple(walk(x[k]) for k in keys), keys, built if built != keys else None)
        leaves.append(x)
        return LEAF

    return leaves, walk(tree)


def unflatten(treedef: TreeDef, leaves) -> Any:
    it = iter(leaves)

    def build(td: TreeDef):
        if td.kind == "leaf": return next(it)
        if td.kind == "none": return None
        items = [build(c) for c in td.children]
        if td.kind == "tuple": return tuple(items)
        if td.kind == "list": return items
        if td.kind == "dict":
            d = dict(zip(td.meta, items))
            return d if td.order is None else {k: d[k] for k in td.order}
        return td.meta(*items)

    return build(treedef)
