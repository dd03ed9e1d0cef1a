"""User-defined derivative rules: `numfn.custom_jvp` and `numfn.custom_vjp`, with JAX's interface.

    @numfn.custom_jvp
    def softplus(x): return np.log1p(np.exp(x))
    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t / (1 + np.exp(-x))

    @numfn.custom_vjp
    def f(x): ...
    def f_fwd(x): return f(x), residuals          # residuals: a tree of arrays
    def f_bwd(residuals, g): return (x_bar,)       # one cotangent per argument
    f.defvjp(f_fwd, f_bwd)

Called outside a trace, the decorated function is the function. Inside a trace (jit, grad, vmap) a call
becomes a *custom call*: a branch region of one branch (the function traced once, its arguments the region's
first captures, in order) whose last result is a marker constant naming the function (`custom_call_of` finds
it). The compiled program runs the branch as any other; the derivative transformations apply the user's rules
there instead of differentiating the branch (numfn/autodiff/loops.py calls `jvp_custom`, `transpose_custom`):

- custom_jvp: the tangents of the results are what the jvp rule returns for the arguments' new values and
  tangents (Tensors). Reverse mode transposes that, so, as in JAX, the rule must be linear in the tangents;
- custom_vjp: forward mode is a TypeError (as JAX's). Reverse mode runs `fwd` on the arguments for the residuals,
  and the results' tangents come from a *vjp marker*: a branch region never run whose sources are the arguments'
  tangents and the residuals; transposing it calls `bwd(residuals, cotangents)`.

`nondiff_argnums` (JAX's): those arguments are passed first to the rule (jvp(*nondiff, primals, tangents),
bwd(*nondiff, residuals, cotangents)) and get no derivative. Python values there (functions, ints) are closed over
by the traced function; an array there is an argument of the call whose tangent is dropped (custom_jvp), or a
TypeError (custom_vjp, as in JAX).

The side tables (CUSTOM_CALLS: each call's function and trees, VJP_MARKERS) are weak dictionaries keyed by the
regions they describe: an entry dies with the last graph holding its region.

Not supported: a custom function that closes over a value being differentiated (pass it as an argument:
NotDifferentiable), writes into arrays from outside, or makes checks (indexing with traced indices); the derivative
of a vmapped custom function (grad(vmap(f)): NotDifferentiable; vmap(grad(f)) works).
"""
from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import update_wrapper
from typing import Any, cast

from numfn.autodiff.jvp import NewPrimal
from numfn.autodiff.rules import NotDifferentiable, Tangent
from numfn.dtype import dtypes
from numfn.errors import unsupported
from numfn.ir.uop import Ops, UOp
from numfn.pytree import TreeDef, flatten, unflatten
from numfn.trace.control import Region, as_state, close, placeholder
from numfn.trace.record import new_region_tag, recording_trace, tracing
from numfn.trace.tensor import Tensor

I64 = dtypes.int64
_MARK = "numfn custom call "
_ids = itertools.count(1)
_markers = itertools.count(1 << 43)   # vjp markers' region tags: apart from every other region's


def _is_leaf(x) -> bool:
    return isinstance(x, Tensor) or not isinstance(x, (tuple, list, dict))   # (None: a zero cotangent)


def _traced(args) -> bool:
    return any(isinstance(x, Tensor) for x in flatten(args, is_leaf=_is_leaf)[0])


class _Custom:
    """What custom_jvp and custom_vjp share: the function, its non-differentiable arguments, calls made into
    custom calls."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        self.fun = fun
        self.name: str = getattr(fun, "__name__", "a custom function")
        nums = (nondiff_argnums,) if isinstance(nondiff_argnums, int) else tuple(nondiff_argnums)
        if any(not isinstance(n, int) or isinstance(n, bool) for n in nums):
            raise TypeError(f"nondiff_argnums must be integers, got {nondiff_argnums!r}")
        self.nondiff_argnums: tuple[int, ...] = tuple(sorted(set(nums)))
        update_wrapper(self, fun)

    def __call__(self, *args):
        if not (tracing() or _traced(args)): return self.fun(*args)
        return custom_call(self, args)


class custom_jvp(_Custom):  # noqa: N801 - JAX's name
    """A function with a user-defined forward-mode rule, as `jax.custom_jvp` (see the module docstring):
    `defjvp(rule)` sets it, rule(primals, tangents) -> (primal outputs, tangent outputs). Reverse mode transposes
    the rule's tangent computation. Outside derivatives the function is called as it is.

    Args:
        fun: the function (arrays in, arrays out).
        nondiff_argnums: positions of arguments that are not differentiated (Python values such as functions or
            ints, or arrays whose derivative is dropped): the rule is then called as
            rule(*nondiff_args, primals, tangents), primals and tangents holding the other arguments only.

    Example:
        @numfn.custom_jvp
        def softplus(x):
            return np.logaddexp(x, 0.0)

        @softplus.defjvp
        def softplus_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return softplus(x), t / (1.0 + np.exp(-x))

        g = numfn.grad(lambda x: softplus(x).sum())(np.array([-50.0, 0.0, 50.0]))
        np.testing.assert_allclose(g, [0.0, 0.5, 1.0], atol=1e-12)
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.jvp: Callable | None = None

    def defjvp(self, jvp: Callable) -> Callable:
        self.jvp = jvp
        return jvp


class custom_vjp(_Custom):  # noqa: N801 - JAX's name
    """A function with a user-defined reverse-mode rule, as `jax.custom_vjp` (see the module docstring):
    `defvjp(fwd, bwd)` sets it, fwd(*args) -> (outputs, residuals), bwd(residuals, output cotangents) -> a tuple,
    one cotangent per argument. Forward mode of such a function is a TypeError, as in JAX.

    Args:
        fun: the function (arrays in, arrays out).
        nondiff_argnums: positions of arguments that are not differentiated, Python values that are not arrays
            (functions, ints; a traced array there is a TypeError, as in JAX): fwd takes every argument as fun
            does, bwd is called as bwd(*nondiff_args, residuals, cotangents) and returns one cotangent per other
            argument.

    Example:
        @numfn.custom_vjp
        def clip_gradient(x):
            return x

        def fwd(x):
            return x, None

        def bwd(_, g):
            return (np.clip(g, -1.0, 1.0),)

        clip_gradient.defvjp(fwd, bwd)
        g = numfn.grad(lambda x: (3.0 * clip_gradient(x)).sum())(np.ones(3))
        np.testing.assert_allclose(g, np.ones(3))
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        self.fwd, self.bwd = fwd, bwd


@dataclass(frozen=True)
class CallInfo:
    """One custom call: the function, the trees of its array arguments (`in_tree`: the tuple of the arguments not
    passed as Python values) and results, how many array leaves it takes, and its non-differentiable arguments."""
    custom: _Custom
    in_tree: TreeDef
    out_tree: TreeDef
    n_args: int
    positions: tuple[int, ...]            # the argument position of each entry of in_tree's tuple
    static: tuple[tuple[int, Any], ...]   # (position, value) of the nondiff arguments passed as Python values

    def nondiff_args(self, arrays: tuple) -> list:
        """The nondiff arguments in order, those passed as arrays taken from `arrays` (the in_tree tuple)."""
        given = dict(self.static)
        given.update((p, a) for p, a in zip(self.positions, arrays))
        return [given[p] for p in self.custom.nondiff_argnums]

    def diff_args(self, arrays: tuple) -> tuple:
        """The differentiated arguments, in order (the in_tree tuple without the nondiff ones)."""
        return tuple(a for p, a in zip(self.positions, arrays) if p not in self.custom.nondiff_argnums)

    def all_args(self, arrays: tuple) -> tuple:
        """Every argument, in the function's order."""
        given = dict(self.static)
        given.update((p, a) for p, a in zip(self.positions, arrays))
        return tuple(given[p] for p in range(len(given)))


# Side tables of the custom calls and vjp markers, by their regions: weak, so an entry lives exactly as long as some
# graph holds its region (a program tracing many functions does not accumulate them). Regions are hashed by value
# and every one made here has a tag of its own.
CUSTOM_CALLS: weakref.WeakKeyDictionary[Region, CallInfo] = weakref.WeakKeyDictionary()


def _split_arguments(custom: _Custom, args: tuple) -> tuple[tuple[int, ...], dict[int, Any]]:
    """The positions of the arguments traced as arrays, and the nondiff ones passed as Python values."""
    nondiff = custom.nondiff_argnums
    if any(not 0 <= n < len(args) for n in nondiff):
        raise ValueError(f"nondiff_argnums {nondiff} of {custom.name} out of range for a call with {len(args)} "
                         "arguments")
    static: dict[int, Any] = {}
    for n in nondiff:
        if not _traced((args[n],)):
            static[n] = args[n]
        elif isinstance(custom, custom_vjp):
            raise TypeError(f"an array traced by numfn passed as argument {n} of custom_vjp function {custom.name}, "
                            "which nondiff_argnums says is not differentiable: nondiff_argnums of a custom_vjp "
                            "function are for arguments that are not arrays (functions, ints), as in JAX; pass "
                            "arrays as ordinary arguments (bwd may return None for them)")
    return tuple(p for p in range(len(args)) if p not in static), static


def custom_call(custom: _Custom, args: tuple):
    """The results of custom(*args) as results of a custom call (see the module docstring)."""
    positions, static = _split_arguments(custom, args)
    leaves, in_tree = flatten(tuple(args[p] for p in positions), is_leaf=_is_leaf)
    values = [as_state(x, "a custom function's argument") for x in leaves]
    tag = new_region_tag()
    held = [Tensor(placeholder(tag, k, v.shape, v.uop.dtype), weak=v.weak) for k, v in enumerate(values)]
    with recording_trace(region=True) as rec:
        arrays = unflatten(in_tree, held)
        given = dict(static)
        given.update(zip(positions, arrays))
        out = custom.fun(*(given[p] for p in range(len(args))))
        out_leaves, out_tree = flatten(out, is_leaf=_is_leaf)
        outs = [as_state(x, "a custom function's result") for x in out_leaves]
    assert rec.rebinds is not None
    if rec.rebinds:
        for t, old in rec.rebinds.values():
            if t.base is None: t.rebind(old, record=False)
        raise unsupported("a custom_jvp/custom_vjp function writing into arrays from outside it",
                          "return the new values instead")
    if rec.checks:
        raise unsupported("a custom_jvp/custom_vjp function making run-time checks (indexing with traced indices, "
                          "linear algebra errors)", "keep those outside the custom function")
    call_id = next(_ids)
    captures: dict[UOp, UOp] = {}
    body = close(tag, [UOp(Ops.SINK, dtypes.void, tuple(o.uop for o in outs) + (UOp.const(I64, call_id),))],
                 len(values), captures)[0]
    results = tuple((o.shape, o.uop.dtype) for o in outs) + (((), I64),)
    name = getattr(custom.fun, "__name__", "a function")
    region = Region("cond", tag, (), None, (body,), results,
                    tuple(f"result {k} of {name}" for k in range(len(outs))) + (f"{_MARK}{call_id}",))
    CUSTOM_CALLS[region] = CallInfo(custom, in_tree, out_tree, len(values), positions, tuple(static.items()))
    loop = UOp(Ops.LOOP, dtypes.void, (UOp.const(I64, 0),) + tuple(v.uop for v in values) + tuple(captures), region)
    return unflatten(out_tree, [Tensor(UOp(Ops.RESULT, d, (loop,), k), weak=o.weak)
                                for k, (o, (_, d)) in enumerate(zip(outs, results))])


def custom_call_of(region: Region) -> CallInfo | None:
    """The custom call a region is, None for any other region."""
    if region.kind != "cond" or not region.names or not region.names[-1].startswith(_MARK): return None
    info = CUSTOM_CALLS.get(region)
    if info is None or region.bodies[0].src[-1].op is not Ops.CONST:
        # vmap batched the call (its marker, or the region, was rebuilt): the rules are for one example
        raise NotDifferentiable("the derivative of a vmapped custom_jvp/custom_vjp function (grad(vmap(f))): take "
                                "the derivative inside vmap instead (vmap(grad(f)))")
    return info


def _zeros_like(u: UOp) -> UOp:
    assert u.shape is not None
    return UOp.const_like(u.dtype, 0, u.shape)


def _stopped_leaves(info: CallInfo) -> set[int]:
    """The array leaves of the nondiff arguments passed as arrays (custom_jvp only): their tangents are dropped."""
    flags = unflatten(info.in_tree, list(range(info.n_args)))
    found: set[int] = set()
    for p, arg in zip(info.positions, flags):
        if p in info.custom.nondiff_argnums: found.update(flatten(arg, is_leaf=_is_leaf)[0])
    return found


def jvp_custom(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...], info: CallInfo,
               linearizing: bool) -> NewPrimal:
    """The rule of a custom call: the user's jvp rule, or (reverse mode) a vjp marker for the user's bwd."""
    region: Region = node.arg
    args = primals[1:1 + info.n_args]
    stopped = _stopped_leaves(info)
    targs = tuple(None if k in stopped else t for k, t in enumerate(tangents[1:1 + info.n_args]))
    if any(t is not None for t in tangents[1 + info.n_args:]):
        raise NotDifferentiable(f"a custom_jvp/custom_vjp function ({info.custom.name}) closes over a value "
                                "being differentiated: pass it as an argument")
    results = region.results[:-1]
    floats = [k for k, (_, d) in enumerate(results) if d.is_inexact]
    custom = info.custom
    if isinstance(custom, custom_jvp):
        if custom.jvp is None: raise TypeError(f"no jvp rule defined for custom_jvp function {custom.name}")
        given = unflatten(info.in_tree, [Tensor(p) for p in args])
        tans = unflatten(info.in_tree, [Tensor(_zeros_like(p) if t is None or not p.dtype.is_inexact else t)
                                        for p, t in zip(args, targs)])
        _, t_out = custom.jvp(*info.nondiff_args(given), info.diff_args(given), info.diff_args(tans))
        t_leaves, t_tree = flatten(t_out, is_leaf=_is_leaf)
        if t_tree.unordered() != info.out_tree.unordered():
            raise TypeError(f"the jvp rule of {custom.name} returns tangents of structure {t_tree}, its "
                            f"function outputs {info.out_tree}")
        found: list[Tangent] = [Tensor.lift(t).uop.cast(d) if k in floats else None
                                for k, (t, (_, d)) in enumerate(zip(t_leaves, results))]
        return NewPrimal(node, found + [None])
    assert isinstance(custom, custom_vjp)
    if not linearizing:
        raise TypeError(f"can't apply forward-mode autodiff (jvp) to a custom_vjp function ({custom.name})")
    if custom.fwd is None or custom.bwd is None:
        raise TypeError(f"no vjp rule defined for custom_vjp function {custom.name} (defvjp(fwd, bwd))")
    _, residuals = custom.fwd(*info.all_args(unflatten(info.in_tree, [Tensor(p) for p in args])))
    # (a None among the residuals is no value: `return x, None` in JAX's examples)
    res_leaves, res_tree = flatten(residuals, is_leaf=lambda x: x is not None and _is_leaf(x))
    res = [Tensor.lift(r).uop for r in res_leaves]
    linear = [k for k, t in enumerate(targs) if t is not None and args[k].dtype.is_inexact]
    tag = next(_markers)
    body = UOp(Ops.SINK, dtypes.void, tuple(UOp.const_like(d, 0, s) for s, d in results))
    marker = Region("cond", tag, (), None, (body,), tuple(results))
    VJP_MARKERS[marker] = VjpMarker(info, res_tree, len(res), tuple(linear), tuple(a.dtype for a in args),
                                    tuple(a.shape for a in args))
    srcs = (UOp.const(I64, 0),) + tuple(cast(UOp, targs[k]) for k in linear) + tuple(res)
    loop = UOp(Ops.LOOP, dtypes.void, srcs, marker)
    return NewPrimal(node, [UOp(Ops.RESULT, results[k][1], (loop,), k) if k in floats else None
                            for k in range(len(results))] + [None])


@dataclass(frozen=True)
class VjpMarker:
    info: CallInfo
    res_tree: TreeDef
    n_res: int
    linear: tuple[int, ...]      # the arguments whose tangents are the marker's sources
    dtypes: tuple[Any, ...]
    shapes: tuple[Any, ...]


VJP_MARKERS: weakref.WeakKeyDictionary[Region, VjpMarker] = weakref.WeakKeyDictionary()   # by marker region


def is_vjp_marker(loop: UOp) -> bool:
    return isinstance(loop.arg, Region) and loop.arg in VJP_MARKERS


def transpose_custom(loop: UOp, cts: dict[int, UOp], linear: tuple[bool, ...]) -> tuple[UOp | None, ...]:
    """The cotangents of a vjp marker's tangent sources: the user's bwd(residuals, the results' cotangents)."""
    region: Region = loop.arg
    m = VJP_MARKERS[region]
    custom = m.info.custom
    assert isinstance(custom, custom_vjp) and custom.bwd is not None
    nl = len(m.linear)
    res = unflatten(m.res_tree, [Tensor(u) for u in loop.src[1 + nl:]])
    outs = [Tensor(cts[k] if k in cts else UOp.const_like(d, 0, s)) for k, (s, d) in enumerate(region.results)]
    ct = unflatten(m.info.out_tree, outs)
    found = custom.bwd(*m.info.nondiff_args(()), res, ct)
    if not isinstance(found, (tuple, list)):
        raise TypeError(f"the bwd rule of {custom.name} must return a tuple (one cotangent per argument)")
    leaves, tree = flatten(tuple(found), is_leaf=_is_leaf)
    if tree.unordered() != m.info.in_tree.unordered():
        raise TypeError(f"the bwd rule of {custom.name} returns cotangents of structure {tree}, its arguments "
                        f"are {m.info.in_tree}")
    out: list[UOp | None] = [None] * len(loop.src)
    for j, k in enumerate(m.linear):
        if not linear[1 + j] or leaves[k] is None: continue
        u = Tensor.lift(leaves[k]).uop.cast(m.dtypes[k])
        if u.shape == () and m.shapes[k] != (): u = u.reshape((1,) * len(m.shapes[k])).expand(m.shapes[k])
        if u.shape != m.shapes[k]:
            raise ValueError(f"the bwd rule of {custom.name} returns a cotangent of shape {u.shape} for argument "
                             f"{k} of shape {m.shapes[k]}")
        out[1 + j] = u
    return tuple(out)
