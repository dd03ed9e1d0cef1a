"""The fast paths of a jitted function's calls (numfn.function.JitFunction) that its own C dispatcher cannot take,
each a dispatcher of its own over the call's arrays, so that such calls too skip computing the signature in
Python: `BoundStatics` for one set of static argument values, `BoundTree` for one structure of container arguments
(tuples, lists, dicts of arrays). A miss on either goes back to the function (`_dispatch_full`), which registers
the specialization it finds on the dispatcher that missed."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from numfn.pytree import TreeDef, unflatten
from numfn.runtime.dispatch import dispatcher_base
from numfn.signature import static_key

if TYPE_CHECKING:
    from numfn.runtime.dispatch import PyDispatcher

__all__ = ["DispatcherBase", "BoundStatics", "BoundTree", "array_tree", "MAX_BOUND_STATICS", "MAX_BOUND_TREES"]

if TYPE_CHECKING:   # checkers see the pure-Python dispatcher, which has the C extension's Dispatcher's interface
    DispatcherBase = PyDispatcher
else:
    DispatcherBase = dispatcher_base()

MAX_BOUND_STATICS = 64   # static argument values whose fast paths a JitFunction keeps (then it starts again)
MAX_BOUND_TREES = 64     # argument structures whose fast paths a JitFunction keeps (then it starts again)


class BoundStatics(DispatcherBase):
    """The fast path of a jitted function's calls with one set of static argument values: a dispatcher over the
    other positional arguments, so such calls run native code almost as directly as calls without static
    arguments (about 2 us instead of 50: the signature is not computed). A miss goes back to the function with the
    static values put back in their places."""

    def __init__(self, jitted: Any, positions: tuple[int, ...], values: list) -> None:
        self.jitted, self.positions, self.values = jitted, positions, values   # (jitted: a numfn.function.JitFunction)
        self.values_key = tuple((i, static_key(v)) for i, v in zip(positions, values))

    def _dispatch_miss(self, *args, **kwargs):
        full = list(args)
        for i, v in zip(self.positions, self.values): full.insert(i, v)   # positions ascend
        return self.jitted._dispatch_full(tuple(full), kwargs, self)


_SCALAR_TYPES = (float, int, bool)


def array_tree(x: Any, leaves: list) -> Any:
    """The structure of `x` when it is arrays and Python numbers in tuples, lists and dicts with str keys
    (appending them to `leaves` in flatten's order), as a key for the dispatcher of that structure; None for
    anything else (a list holding numbers, which may be one array leaf; a NamedTuple, a registered node), which the
    general flatten reads."""
    if type(x) is np.ndarray or type(x) in _SCALAR_TYPES:
        leaves.append(x)
        return 0
    if type(x) is tuple or (type(x) is list and x and not any(type(v) in _SCALAR_TYPES for v in x)) or \
            (isinstance(x, tuple) and hasattr(type(x), "_fields")):   # (a NamedTuple: its class is in the key)
        parts = []
        for v in x:
            part = array_tree(v, leaves)
            if part is None: return None
            parts.append(part)
        return (type(x), *parts)
    if type(x) is dict and all(type(k) is str for k in x):
        keys = tuple(x)
        order = tuple(sorted(keys))
        parts = []
        for k in order:
            part = array_tree(x[k], leaves)
            if part is None: return None
            parts.append(part)
        return (dict, keys, *parts)
    return None


class BoundTree(DispatcherBase):
    """The fast path of a jitted function's calls whose positional arguments hold containers (a tuple of weights,
    a dict of parameters, a dataclass): a dispatcher over their leaves, one per argument structure, so such calls
    run native code without computing the signature in Python (about 90 us a call, NumPy's cost many times over,
    for a small function). A miss goes back to the function with the arguments rebuilt."""
    takes_leaves = True   # (numfn.runtime.dispatch.register_specialization: register the leaves' specs)

    def __init__(self, jitted: Any, tree: TreeDef) -> None:
        self.jitted, self.tree = jitted, tree

    def _dispatch_miss(self, *leaves, **kwargs):
        args, _ = unflatten(self.tree, leaves)
        return self.jitted._dispatch_full(tuple(args), kwargs, self)
