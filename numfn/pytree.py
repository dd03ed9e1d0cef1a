"""Nested containers of arrays ("pytrees"): tuples, lists, dicts, NamedTuples and None around leaf values.

`flatten` returns the leaves in a fixed order and a TreeDef that `unflatten` uses to rebuild the container.
TreeDefs are hashable, so a function's argument structure can be part of its signature.

A dict's leaves come in the order of its sorted keys (so equal structures flatten alike, whatever order they were
built in), and its TreeDef keeps the order it was built in, which `unflatten` builds it in again: a returned dict
comes back as the function built it, as from Python. Structures that must match (a loop's state, the sides of a
branch, vmap's axes and their arguments) are compared by `unordered()`, which forgets insertion orders.

Other classes are containers too, as in JAX:
- `register_pytree_node(cls, flatten, unflatten)`: `flatten(x)` returns `(children, aux_data)` (an iterable of
  child values, and hashable data that is part of the structure: two instances with unequal aux_data are different
  structures, so different specializations of a jitted function); `unflatten(aux_data, children)` rebuilds one;
- frozen dataclasses are containers without registration: their fields (those `__init__` takes) are the children,
  in declaration order, and `cls(**fields)` rebuilds one;
- `register_dataclass(cls, data_fields=None, meta_fields=())`: a dataclass (frozen or not) whose `data_fields`
  are children and whose `meta_fields` are static, hashable values kept in the structure (JAX's
  `jax.tree_util.register_dataclass`). A mutable dataclass must be registered, as in JAX: it is an object whose
  fields may change, which numfn does not take apart unasked.

`node_class_hint(x)` says how to make an unregistered class a container, for argument errors.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Hashable, Iterable


@dataclass(frozen=True)
class TreeDef:
    kind: str                 # "leaf", "none", "tuple", "list", "dict", "namedtuple", "node"
    children: tuple = ()
    meta: Any = None          # dict keys (sorted: the children's order), the NamedTuple class, or (class, aux data)
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
        if self.kind == "node": return f"{self.meta[0].__name__}({inner})"
        return f"{getattr(self.meta, '__name__', 'namedtuple')}({inner})"


LEAF = TreeDef("leaf")


@dataclass(frozen=True)
class NodeType:
    """How a registered class is taken apart and rebuilt: `flatten(x) -> (children, aux_data)`,
    `unflatten(aux_data, children) -> x`; `keys(x, aux_data)` names the children in error messages."""
    flatten: Callable[[Any], tuple[Iterable, Hashable]]
    unflatten: Callable[[Hashable, list], Any]
    keys: Callable[[Any, Hashable], list[str]] | None = None


_NODE_TYPES: dict[type, NodeType] = {}


def register_pytree_node(cls: type, flatten: Callable[[Any], tuple[Iterable, Hashable]],
                         unflatten: Callable[[Hashable, list], Any]) -> None:
    """Make instances of `cls` containers of arrays for jit, vmap and grad (arguments and results), as
    `jax.tree_util.register_pytree_node` does.

    Args:
        cls: the class (its subclasses are not included: each is registered on its own, as in JAX).
        flatten: `flatten(x) -> (children, aux_data)`: the child values (arrays, scalars or containers) in a fixed
            order, and hashable data that belongs to the structure (a specialization is compiled per aux_data).
        unflatten: `unflatten(aux_data, children) -> x`: an instance from aux_data and a list of children (while
            tracing, the children are traced arrays).

    Returns:
        None; from then on instances of `cls` are containers.

    Example:
        class Point:
            def __init__(self, x, y): self.x, self.y = x, y
        numfn.register_pytree_node(Point, lambda p: ((p.x, p.y), None), lambda aux, ch: Point(*ch))
        swapped = numfn.jit(lambda p: Point(p.y, p.x))(Point(np.zeros(2), np.ones(2)))
        np.testing.assert_array_equal(swapped.x, np.ones(2))
    """
    if not isinstance(cls, type): raise TypeError(f"register_pytree_node: {cls!r} is not a class")
    if cls in _NODE_TYPES or cls in (tuple, list, dict, type(None)):
        raise ValueError(f"register_pytree_node: {cls.__qualname__} is already a container")
    if not callable(flatten) or not callable(unflatten):
        raise TypeError("register_pytree_node: flatten and unflatten must be callables")
    _NODE_TYPES[cls] = NodeType(flatten, unflatten)


def register_dataclass(cls: type, data_fields: Iterable[str] | None = None, meta_fields: Iterable[str] = ()) -> type:
    """Make a dataclass (frozen or not) a container: `data_fields` are its children (arrays or containers),
    `meta_fields` static values kept in the structure (hashable: a specialization is compiled per value), as
    `jax.tree_util.register_dataclass`. Frozen dataclasses need no registration (all their fields are children):
    register one to declare meta fields. Usable as a decorator.

    Args:
        cls: a dataclass.
        data_fields: the names of the array fields; None: every field `__init__` takes that is not a meta field.
        meta_fields: the names of static fields.

    Returns:
        cls, registered.

    Example:
        import dataclasses

        @numfn.register_dataclass
        @dataclasses.dataclass
        class State:
            x: np.ndarray
            step: np.ndarray
        new = numfn.jit(lambda s: State(s.x * 2, s.step + 1))(State(np.ones(2), np.int64(0)))
        assert new.step == 1 and (new.x == 2).all()
    """
    if not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
        raise TypeError(f"register_dataclass: {cls!r} is not a dataclass")
    init = [f.name for f in dataclasses.fields(cls) if f.init]
    meta = tuple(meta_fields)
    data = tuple(data_fields) if data_fields is not None else tuple(n for n in init if n not in meta)
    unknown = [n for n in (*data, *meta) if n not in init]
    if unknown: raise ValueError(f"register_dataclass: {cls.__qualname__} has no field {unknown[0]!r} that "
                                 f"__init__ takes (its fields: {', '.join(init)})")
    missing = [n for n in init if n not in data and n not in meta]
    if missing or set(data) & set(meta):
        raise ValueError(f"register_dataclass: every field __init__ takes must be in exactly one of data_fields and "
                         f"meta_fields ({cls.__qualname__}: {', '.join(missing or sorted(set(data) & set(meta)))})")
    if cls in _NODE_TYPES: raise ValueError(f"register_dataclass: {cls.__qualname__} is already a container")
    _NODE_TYPES[cls] = _dataclass_node(cls, data, meta)
    return cls


def _dataclass_node(cls: type, data: tuple[str, ...], meta: tuple[str, ...]) -> NodeType:
    def flatten_fields(x):
        return [getattr(x, n) for n in data], tuple(getattr(x, n) for n in meta)

    def unflatten_fields(aux, children):
        return cls(**dict(zip(data, children)), **dict(zip(meta, aux)))

    return NodeType(flatten_fields, unflatten_fields, lambda x, aux: [f".{n}" for n in data])


def node_type(x) -> NodeType | None:
    """How `x` is taken apart when it is a registered class or a frozen dataclass; None otherwise."""
    cls = type(x)
    found = _NODE_TYPES.get(cls)
    if found is not None or not dataclasses.is_dataclass(cls): return found
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen: return None
    names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
    _NODE_TYPES[cls] = found = _dataclass_node(cls, names, ())
    return found


def node_children(x) -> list[tuple[str, Any]] | None:
    """A registered container's children with the suffixes that name them in messages (`.field`, `[i]`); None
    for anything else."""
    nt = node_type(x)
    if nt is None: return None
    children, aux = nt.flatten(x)
    children = list(children)
    keys = nt.keys(x, aux) if nt.keys is not None else [f"[{i}]" for i in range(len(children))]
    return list(zip(keys, children))


def node_class_hint(x) -> str:
    """How to make `x`'s class a container ("" when it is not an object of a user's class)."""
    cls = type(x)
    # (numfn's own objects, such as a name bound on some paths only, get their own errors where they are used)
    if cls.__module__ == "builtins" or cls.__module__.startswith("numfn.") or isinstance(x, type): return ""
    if dataclasses.is_dataclass(cls):
        return (f"; {cls.__name__} is a mutable dataclass: make it frozen (@dataclass(frozen=True)) or register it "
                "with numfn.register_dataclass to pass it as a container of arrays")
    return f"; to pass it as a container of arrays, register {cls.__name__} with numfn.register_pytree_node"


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
        nt = node_type(x)
        if nt is not None:
            children, aux = nt.flatten(x)
            try:
                hash(aux)
            except TypeError:
                raise TypeError(f"the flatten function of {type(x).__qualname__} returned unhashable aux_data "
                                f"{aux!r}: it is part of the structure and must be hashable") from None
            return TreeDef("node", tuple(walk(v) for v in children), (type(x), aux))
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
        if td.kind == "node":
            cls, aux = td.meta
            return _NODE_TYPES[cls].unflatten(aux, items)
        return td.meta(*items)

    return build(treedef)
