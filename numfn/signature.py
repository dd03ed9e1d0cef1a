"""Signatures: what selects a specialization of a jit function.

A call's signature is the key `(argument structure, one ArgSpec per array leaf, static values)`: equal keys
mean the same NumericalFunction. `signature()` computes it from a call's arguments (the Python path of every
call that misses the C dispatcher); the other helpers say how errors name arguments.
"""
from __future__ import annotations

import re

import inspect
import weakref
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

import numpy as np

from numfn.dtype import DType, dtypes
from numfn.pytree import TreeDef, flatten, node_children, node_class_hint
from numfn.trace.tensor import Tensor

__all__ = ["ArgSpec", "SignatureKey", "is_leaf", "leaf_spec", "signature", "static_key", "argument_leaf_names",
           "describe", "static_spec", "call_parameters", "normalize_call"]


@dataclass(frozen=True)
class ArgSpec:
    """What a signature records of one array argument: shape and dtype. `weak` marks a Python scalar (it
    promotes like one, NEP 50). `value`: a Python int beyond int64, which no 64-bit input holds: the function is
    traced with the int itself, as if it were written in the code (one specialization per such value)."""
    shape: tuple[int, ...]
    dtype: DType
    weak: bool = False
    value: int | None = None

    def __repr__(self) -> str:
        if self.value is not None: return f"int {self.value}"
        return f"{'weak ' if self.weak else ''}{self.dtype.name}[{','.join(map(str, self.shape))}]"


# (argument structure, array specs, static keys as (position or name, static_key(value)) pairs)
SignatureKey = tuple[TreeDef, tuple[ArgSpec, ...], tuple]


def _is_number_list(x) -> bool:
    # an empty list is an array too (NumPy's: float64 of shape (0,)), not an empty container passed through
    if not isinstance(x, list): return False
    return all(isinstance(v, (bool, int, float, complex, np.generic)) or _is_number_list(v) for v in x)


def is_leaf(x) -> bool:
    """Whether an argument value is one array leaf (an array, a NumPy or Python scalar, a list of numbers) rather
    than a container of leaves."""
    return isinstance(x, (np.ndarray, np.generic, bool, int, float, complex)) or _is_number_list(x)


def leaf_spec(x, where: str) -> ArgSpec:
    """The ArgSpec of one argument leaf; TypeError naming the argument when it is not array-like."""
    if isinstance(x, Tensor): return ArgSpec(x.shape, x.uop.dtype, x.weak)   # a call inside a traced function
    if isinstance(x, (np.ndarray, np.generic)):   # before float: np.float64 subclasses float, but is a strong scalar
        if type(x) is not np.ndarray and isinstance(x, (np.matrix, np.ma.MaskedArray)):
            # their operators mean something else (matrix `*` is a matrix product; masks propagate): tracing them
            # as plain arrays would give answers NumPy does not
            raise TypeError(f"argument {where}: numfn computes on plain arrays, not {type(x).__name__}; convert it "
                            "with np.asarray if its values alone are meant")
        try:
            # byte order is storage, not type: a big-endian float64 array is a float64 input (swapped when run)
            return ArgSpec(x.shape, dtypes.from_numpy(x.dtype.newbyteorder("=")))
        except TypeError as e:
            raise TypeError(f"argument {where}: {e}") from None
    if isinstance(x, bool): return ArgSpec((), dtypes.bool, True)
    if isinstance(x, int):
        # beyond int64, NumPy takes it where it fits (a uint64 array, a float array, comparisons): traced as written
        if not -2**63 <= x < 2**63: return ArgSpec((), dtypes.uint64 if 0 <= x < 2**64 else dtypes.float64, True, x)
        return ArgSpec((), dtypes.int64, True)
    if isinstance(x, float): return ArgSpec((), dtypes.float64, True)
    if isinstance(x, complex): return ArgSpec((), dtypes.complex128, True)
    if isinstance(x, list):
        try:
            arr = np.asarray(x)
        except ValueError:   # NumPy refuses ragged nesting
            arr = np.empty(0, object)
        if arr.dtype == object: raise TypeError(f"argument {where}: a list of mixed or ragged values is not an array")
        return ArgSpec(arr.shape, dtypes.from_numpy(arr.dtype))
    raise TypeError(f"argument {where} of type {type(x).__name__} is not an array, a Python scalar or a container of "
                    f"them (tuple, list, dict){_conversion_hint(x, where)}")


def _conversion_hint(x, where: str) -> str:
    """What to pass instead of `x`, an argument value that is no array: a pandas object's values, an array-like
    converted by NumPy, or a setting (a string, an object) as a static argument."""
    kind = type(x).__name__
    if type(x).__module__.split(".")[0] == "pandas":   # (detected without importing pandas)
        return f"; pass the {kind}'s values as a NumPy array: x.to_numpy()"
    if hasattr(x, "__array__"): return f"; convert the {kind} to a NumPy array with np.asarray(x) before the call"
    name = re.match(r"'([^']*)'", where)
    if name and name.group(1) == "self":   # a jitted method called on an object
        return ("; a method's object is no array: make it static (@numfn.jit(static_argnames=('self',)): compiled "
                f"for each object, its attributes read as constants), or register {kind} with "
                "numfn.register_pytree_node to pass its arrays")
    container = node_class_hint(x)
    if container: return container
    static = f"static_argnames=({name.group(1)!r},)" if name else "static_argnames=/static_argnums="
    return (f"; if it is a setting rather than data (a mode, an option), make it static: numfn.jit(f, {static}) "
            "compiles the function for each value of it, which the traced code then sees as a Python value")


def static_spec(static_argnums=(), static_argnames=(), fn: Callable | None = None) -> tuple[tuple[int, ...],
                                                                                              tuple[str, ...]]:
    """The (positions, names) of static arguments, normalized from jit's options. With `fn`, an argument named
    static by position is static by name too and the other way round (as JAX does): static however it is
    passed."""
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    if fn is not None: nums, names = _static_both_ways(fn, nums, names)
    return tuple(sorted(nums)), tuple(names)


def _static_both_ways(fn: Callable, nums: tuple, names: tuple) -> tuple[tuple, tuple]:
    """`nums` and `names` completed from `fn`'s signature (each position's name, each name's position)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return nums, names
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    nums = tuple(dict.fromkeys([*nums, *(positional.index(n) for n in names if n in positional)]))
    by_name = [positional[k] for k in nums if 0 <= k < len(positional) and params[k].kind != params[k].POSITIONAL_ONLY]
    names = tuple(dict.fromkeys([*names, *by_name]))
    return nums, names




_PARAMETERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # function -> call_parameters(function)


def call_parameters(fn: Callable) -> tuple[tuple[str, ...], int, tuple[str, ...]] | None:
    """(the names of `fn`'s positional parameters, how many of them are positional-only, the names of its
    keyword-only parameters), read from its signature once per function; None when Python cannot tell."""
    try:
        return _PARAMETERS[fn]
    except (KeyError, TypeError):
        pass
    found: tuple[tuple[str, ...], int, tuple[str, ...]] | None
    try:
        params = list(inspect.signature(fn).parameters.values())
        found = (tuple(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)),
                 sum(p.kind is p.POSITIONAL_ONLY for p in params),
                 tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY))
    except (TypeError, ValueError):
        found = None
    try:
        _PARAMETERS[fn] = found
    except TypeError:   # not weakly referable: read again next time
        pass
    return found


def normalize_call(fn: Callable, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A call's arguments as one specialization sees them, however they were passed: keyword arguments of the
    positional parameters right after the positional arguments become positional ones (as far as they go without a
    gap: a parameter left to its default stays so), and the remaining keywords come in the order of the parameters,
    then those of `**kwargs` in the call's order (which the function can see). So f(x, y=x) is f(x, x), and
    f(x, b=1, a=2) is f(x, a=2, b=1) for parameters a and b. A call Python would refuse stays as it is."""
    if not kwargs: return args, kwargs
    params = call_parameters(fn)
    if params is None: return args, kwargs
    positional, positional_only, keyword_only = params
    n = len(args)
    if positional_only <= n < len(positional) and positional[n] in kwargs:
        kwargs, moved = dict(kwargs), list(args)
        while n < len(positional) and positional[n] in kwargs:
            moved.append(kwargs.pop(positional[n]))
            n += 1
        args = tuple(moved)
    if len(kwargs) > 1:
        named = [k for k in (*positional[positional_only:], *keyword_only) if k in kwargs]
        order = named + [k for k in kwargs if k not in named]
        if order != list(kwargs): kwargs = {k: kwargs[k] for k in order}
    return args, kwargs


def signature(fn: Callable, args: tuple, kwargs: dict, static: tuple[tuple[int, ...], tuple[str, ...]]):
    """(key, leaves, statics) for a call: the key is (argument structure, leaf specs, static keys); `leaves` are
    the array leaves in flattening order; `statics` the (position or name, value) pairs of static arguments.

    A static argument is keyed by its type and value (see `static_key`): f(x, 2) and f(x, 2.0) trace different
    programs, as do 0.0 and -0.0, while NaN selects one specialization however often it is passed."""
    static_nums, static_names = static
    statics, keys = [], []
    dyn_args: tuple[Any, ...] | list[Any]
    dyn_args, dyn_kwargs = args, kwargs
    if static_nums or static_names:
        dyn_args, dyn_kwargs = [], {}
        for i, a in enumerate(args):
            if i in static_nums:
                statics.append((i, a))
                keys.append((i, static_key(a, f"static argument {i}")))
            else: dyn_args.append(a)
        for k, v in kwargs.items():
            if k in static_names:
                statics.append((k, v))
                keys.append((k, static_key(v, f"static argument {k!r}")))
            else: dyn_kwargs[k] = v
    leaves, tree = flatten((tuple(dyn_args), dyn_kwargs), is_leaf=is_leaf)
    try:
        specs = tuple(leaf_spec(x, "?") for x in leaves)
    except (TypeError, OverflowError):   # the error again, now naming the argument (too slow for every call)
        for x, p in zip(leaves, argument_leaf_names(fn, args, kwargs, static)): leaf_spec(x, p)
        raise
    return (tree, specs, tuple(keys)), leaves, tuple(statics)


def static_key(v, what: str = "static argument") -> Any:
    """What selects a specialization for static argument value `v`: its type with its value, floats (Python and
    NumPy) by their bit pattern, so 2 and 2.0 differ, 0.0 and -0.0 differ, and NaN equals itself; tuples and
    frozensets element by element. Any other value must be hashable and is keyed by `==`."""
    if isinstance(v, (float, complex, np.floating, np.complexfloating)):
        return type(v), np.asarray(v).tobytes()
    if isinstance(v, tuple):
        return type(v), tuple(static_key(x, what) for x in v)
    if isinstance(v, frozenset):
        return type(v), frozenset(static_key(x, what) for x in v)
    try:
        hash(v)
    except TypeError:
        raise TypeError(f"{what} must be hashable (it selects a specialization by value), "
                        f"got {type(v).__name__}") from None
    return type(v), v


def _leaf_paths(tree: Any, prefix: str) -> list[str]:
    paths: list[str] = []

    def walk(x, p):
        children = None if is_leaf(x) else node_children(x)
        if children is not None:
            for k, v in children: walk(v, f"{p}{k}")
            return
        if is_leaf(x) or not isinstance(x, (tuple, list, dict)):
            if x is not None: paths.append(p)
            return
        items = sorted(x.items(), key=lambda kv: repr(kv[0])) if isinstance(x, dict) else enumerate(x)
        if isinstance(x, dict) and all(isinstance(k, str) for k in x): items = sorted(x.items())
        for k, v in items: walk(v, f"{p}[{k!r}]")

    walk(tree, prefix)
    return paths


def argument_leaf_names(fn: Callable, args: tuple, kwargs: dict, static=((), ())) -> list[str]:
    """How error messages name each leaf of a call's array arguments, in flattening order: `'x'`, `'params'['w']`,
    `2[0]` (a positional argument without a parameter name). `args` and `kwargs` are the call's own; the static
    ones (`static`: positions and names, as for `signature`) are skipped."""
    static_nums, static_names = static
    names = _arg_names(fn, args, kwargs)
    return [p for i, a in enumerate(args) if i not in static_nums for p in _leaf_paths(a, names[i])] + \
        [p for k, v in sorted(kwargs.items()) if k not in static_names for p in _leaf_paths(v, repr(k))]


def _arg_names(fn: Callable, args: tuple, kwargs: dict) -> list[str]:
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [repr(params[i]) if i < len(params) else str(i) for i in range(len(args))]


def describe(tree: TreeDef, specs: tuple[ArgSpec, ...], statics: tuple) -> str:
    """A signature in words, for error messages: the argument structure, array specs and static values."""
    return f"arguments {tree!r} of {', '.join(map(repr, specs)) or 'no arrays'}" + \
        (f" with static {dict(statics)}" if statics else "")
