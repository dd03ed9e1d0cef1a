"""vmap and svmap: map a function over a batch axis.

Both start from the per-example function's trace (`NumericalFunction.function_graph`), so the Python function is
traced once per per-example signature, whichever of them (or jit) asks first.

- vmap is a transformation of that graph: every node gets a leading batch axis by the batching rules in
  `batch_graph` (views shift their arguments, elementwise ops broadcast unbatched operands, reductions and scans
  shift their axes; a matmul, being a multiply and a sum, becomes a batched matmul; an extern call (BLAS, LAPACK)
  gets one more batch axis: the routine runs once per example). The result is an ordinary
  graph, fused and compiled per batch size like any signature.
- svmap compiles the per-example program once and loops over the batch in native code: the batch size is a run
  time argument, the per-example scratch memory is reused by every iteration, large batches are split across
  threads, and results are bitwise identical to calling the per-example function in a Python loop.
"""
from __future__ import annotations

import contextlib
import copy
import os
import time
import types
from concurrent.futures import ThreadPoolExecutor
from functools import update_wrapper
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeAlias, TypeVar, cast, overload

import numpy as np

from numfn import debug
from numfn.progress import mark_runs_no_user_code
from numfn.function import JitFunction, NumericalFunction, raise_failed_checks
from numfn.program_build import ProgramBuild
from numfn.pytree import flatten, unflatten
from numfn.runtime.native import pointer_table
from numfn.runtime.threads import PARALLEL_MIN_OPS, thread_count
from numfn.args import normalize_axis
from numfn.errors import unsupported
from numfn.signature import ArgSpec, argument_leaf_names, is_leaf, leaf_spec
from numfn.trace.tensor import Tensor, add_check
from numfn.dtype import dtypes
from numfn.ir.batching import batched as batched_values   # (`batched` names flags and functions below)
from numfn.ir.primitives import PRIMITIVES, register
from numfn.ir.uop import ELEMENTWISE, Ops, UOp, toposort


# ---------------------------------------------------------------------------------------------------------------
# the batching rules

def _broadcast_batch(u: UOp, batched: bool, size: int) -> UOp:
    assert u.shape is not None
    return u if batched else u.reshape((1,) + u.shape).expand((size,) + u.shape)


def _batch_elementwise(u: UOp, srcs: list[tuple[UOp, bool]], size: int) -> UOp:
    return UOp(u.op, u.dtype, tuple(_broadcast_batch(s, b, size) for s, b in srcs), u.arg)


def _batch_gather(u: UOp, srcs: list[tuple[UOp, bool]], size: int) -> UOp:
    # the batch axis is one more gathered axis, indexed by the batch position
    assert u.shape is not None
    shape = (size,) + u.shape
    batch = UOp.iota(size).reshape((size,) + (1,) * len(u.shape)).expand(shape)
    idx = tuple(_broadcast_batch(s, b, size) for s, b in srcs[1:])
    return UOp(u.op, u.dtype, (_broadcast_batch(*srcs[0], size), batch, *idx))


def _batch_scatter(u: UOp, srcs: list[tuple[UOp, bool]], size: int) -> UOp:
    # each example writes its own row: one more index, the batch position
    assert u.src[1].shape is not None
    domain = (size,) + u.src[1].shape
    batch = UOp.iota(size).reshape((size,) + (1,) * len(u.src[1].shape)).expand(domain)
    rest = tuple(_broadcast_batch(s, b, size) for s, b in srcs[1:])
    return UOp(u.op, u.dtype, (_broadcast_batch(*srcs[0], size), rest[0], batch, *rest[1:]), u.arg)


def _batch_extern(u: UOp, srcs: list[tuple[UOp, bool]], size: int) -> UOp:
    # the routine runs once more per example: one more batch axis (unbatched inputs broadcast)
    return UOp(u.op, u.dtype, tuple(_broadcast_batch(s, b, size) for s, b in srcs), u.arg.batched(size))


def _batch_view(new_arg: Callable[[Any, int], Any]):
    """The rule of a movement op: its one (batched) source, its argument shifted past the batch axis."""
    return lambda u, srcs, size: UOp(u.op, u.dtype, (srcs[0][0],), new_arg(u.arg, size))


def _batch_loop(u: UOp, srcs: list[tuple[UOp, bool]], size: int) -> UOp:
    """A loop or branch region with a batch axis: its sub-graphs are batched like the function's graph (their
    placeholders take the batch axis where their sources have it), and every state value and result gets the axis
    (an unbatched one is broadcast). A while loop whose condition differs between examples runs until it is false
    for every example, and an example whose condition is already false keeps its state (as JAX's vmap of a
    while_loop does). A branch chosen per example computes every branch and takes each example's own."""
    from numfn.trace.control import Region, placeholder
    region, tag = u.arg, u.arg.tag
    first = 1 if region.kind == "cond" else 0        # a cond's first source is the branch index
    n = len(region.state)
    inputs = srcs[first:]                            # what the placeholders stand for: state (operands), captures
    values = [_broadcast_batch(s, b, size) if k < n else s for k, (s, b) in enumerate(inputs)]
    batched = [k < n or b for k, (_, b) in enumerate(inputs)]
    subs = ([region.cond] if region.cond is not None else []) + list(region.bodies)
    bounds = {c.arg[1]: c.arg[3] for sub in subs for c in toposort([sub]) if c.op is Ops.CARRY and c.arg[0] == tag}
    carries: dict[UOp, tuple[UOp, bool]] = {}
    state_ph = []
    for sub in subs:
        for c in toposort([sub]):
            if c.op is Ops.CARRY and c.arg[0] == tag and c not in carries:
                k = c.arg[1]
                carries[c] = (placeholder(tag, k, ((size,) if batched[k] else ()) + c.arg[2], c.dtype, c.arg[3]),
                              batched[k])
    for k, (shape, dt) in enumerate(region.state):
        state_ph.append(placeholder(tag, k, (size,) + shape, dt, bounds.get(k)))

    def batch(sink: UOp) -> list[UOp]:   # the SINK's values, each with the batch axis
        return [_broadcast_batch(v, b, size) for v, b in _batch_subgraph(sink, carries, size)]

    state = tuple(((size,) + s, d) for s, d in region.state)
    results = tuple(((size,) + s, d) for s, d in region.results)
    sink = lambda us: UOp(Ops.SINK, dtypes.void, tuple(us))   # noqa: E731
    if region.kind == "while":
        (pred, pred_batched), = _batch_subgraph(region.cond, carries, size)
        body = batch(region.bodies[0])
        if pred_batched:   # examples whose condition is false keep their state; the loop runs while any is true
            body = [_where_batch(pred, v, cur) for v, cur in zip(body, state_ph)]
            pred = UOp.const(dtypes.int32, 0).alu(Ops.CMPLT,
                                                  pred.cast(dtypes.int32).reduce(Ops.MAX, (0,)).reshape(()))
        new = Region("while", tag, state, sink([pred]), (sink(body),), results, region.names)
        return UOp(Ops.LOOP, u.dtype, tuple(values), new)
    index, index_batched = srcs[0]
    bodies = [batch(b) for b in region.bodies]
    if not index_batched:
        new = Region("cond", tag, state, None, tuple(sink(b) for b in bodies), results, region.names)
        return UOp(Ops.LOOP, u.dtype, (index, *values), new)
    # each example its own branch: every branch is computed, and the index (one more captured value) picks
    idx = placeholder(tag, len(inputs), (size,), index.dtype)
    chosen = bodies[-1]   # the last branch is the default (a switch's index is clamped already)
    for i in reversed(range(len(bodies) - 1)):
        hit = idx.alu(Ops.CMPEQ, UOp.const(index.dtype, i))
        chosen = [_where_batch(hit, a, b) for a, b in zip(bodies[i], chosen)]
    new = Region("cond", tag, state, None, (sink(chosen),), results, region.names)
    # (one body: whatever the scalar index, the program runs it)
    return UOp(Ops.LOOP, u.dtype, (index.reduce(Ops.MAX, (0,)).reshape(()), *values, index), new)


def _where_batch(pred: UOp, a: UOp, b: UOp) -> UOp:
    """where(pred, a, b) for a per-example pred (shape (size,)) and batched a and b."""
    assert pred.shape is not None and a.shape is not None
    p = pred.reshape(pred.shape + (1,) * (len(a.shape) - 1)).expand(a.shape)
    return p.alu(Ops.WHERE, a, b)


def _batch_subgraph(sink: UOp, carries: dict[UOp, tuple[UOp, bool]], size: int) -> list[tuple[UOp, bool]]:
    """The values of a region's SINK with its placeholders replaced by batched ones (see batch_graph)."""
    return batched_values(sink.src, carries, size)


def _register_batching_rules() -> None:
    """Each primitive's rule(node, its sources as (value, batched) pairs with at least one batched, batch size): the
    node with a leading batch axis, registered in the table of primitives (numfn.ir.primitives). A new primitive
    needs its rule here (vmap raises NotImplementedError naming it otherwise; tests/test_primitives.py fails)."""
    rules: dict[Ops, Callable[[UOp, list[tuple[UOp, bool]], int], UOp]] = {
        **{op: _batch_elementwise for op in (*ELEMENTWISE, Ops.CONTIGUOUS)},
        Ops.RESHAPE: _batch_view(lambda a, size: (size,) + a),
        Ops.EXPAND: _batch_view(lambda a, size: (size,) + a),
        Ops.PERMUTE: _batch_view(lambda a, size: (0,) + tuple(i + 1 for i in a)),
        Ops.PAD: _batch_view(lambda a, size: ((0, 0),) + a),
        Ops.SHRINK: _batch_view(lambda a, size: ((0, size),) + a),
        Ops.FLIP: _batch_view(lambda a, size: tuple(i + 1 for i in a)),
        Ops.REDUCE_AXIS: _batch_view(lambda a, size: (a[0], tuple(i + 1 for i in a[1]))),
        Ops.SCAN: _batch_view(lambda a, size: (a[0], a[1] + 1)),
        Ops.GATHER: _batch_gather,
        Ops.SCATTER: _batch_scatter,
        Ops.EXTERN: _batch_extern,
        Ops.RESULT: _batch_view(lambda a, size: a),
        Ops.LOOP: _batch_loop,
    }
    for op, rule in rules.items(): register(op, "batch", rule)


_register_batching_rules()
# the batching rules by op, as the table has them (for reading: register new ones in the table)
BATCHING_RULES: dict[Ops, Callable[[UOp, list[tuple[UOp, bool]], int], UOp]] = \
    {p.op: p.batch for p in PRIMITIVES.values() if p.batch is not None}


def batch_graph(sink: UOp, inputs: dict[int, tuple[UOp, bool]], size: int) -> list[tuple[UOp, bool]]:
    """The outputs of a traced function graph (SINK of CONTIGUOUS outputs) evaluated on batched inputs.

    `inputs` maps each PARAM slot to (its value, whether that value has a leading batch axis of `size`). Returns
    (output, batched) pairs; an output that no batched input reaches comes back without a batch axis."""
    given: dict[UOp, tuple[UOp, bool]] = {}
    for u in toposort([sink]):
        if u.op is not Ops.PARAM: continue
        value = inputs.get(u.arg[0])
        shape = None if value is None else cast(tuple[int, ...], value[0].shape)
        if value is None or shape is None or (shape[1:] if value[1] else shape) != tuple(u.arg[1]):
            # an argument of an enclosing trace (read through an object's attribute: see capturing)
            raise unsupported("vmap inside a compiled function of a function that reads a traced value of the "
                              "enclosing function other than through its closure variables (an object's "
                              "attribute)", "pass the value as an argument, with in_axes None for it")
        given[u] = value
    return batched_values([o.src[0] if o.op is Ops.CONTIGUOUS else o for o in sink.src], given, size)


def _moveaxis(u: UOp, src: int, dst: int) -> UOp:
    assert u.shape is not None
    order = [i for i in range(len(u.shape)) if i != src]
    order.insert(dst, src)
    return u.permute(tuple(order))


# ---------------------------------------------------------------------------------------------------------------
# axes specifications

def _leaf_axes(spec, args: tuple, kwargs: dict, what: str) -> list:
    """One axis (int or None) per argument leaf, from an in_axes specification: an int or None for every
    argument, or a tuple/list with one entry per positional argument, each an int, None, or a container
    matching that argument. Keyword arguments are mapped over axis 0."""
    if spec is None or isinstance(spec, int): per_arg = [spec] * len(args)
    elif isinstance(spec, (tuple, list)):
        if len(spec) != len(args):
            raise ValueError(f"{what} has {len(spec)} entries but the function was called with {len(args)} "
                             "positional arguments")
        per_arg = list(spec)
    else: raise TypeError(f"{what} must be an int, None, or a tuple/list of them, got {spec!r}")
    axes: list = []
    for a, s in zip(args, per_arg):
        leaves, tree = flatten(a, is_leaf=_leaf_or_tensor)
        if s is None or isinstance(s, int): axes += [s] * len(leaves)
        else:
            sl, stree = flatten(s, is_leaf=lambda x: x is None or isinstance(x, int))
            if stree.unordered() != tree.unordered():   # matched by key, whatever order each dict was built in
                raise ValueError(f"{what} entry {s!r} does not match the structure of its argument")
            axes += sl
    axes += [0] * len(flatten(kwargs, is_leaf=_leaf_or_tensor)[0])
    return axes


def _leaf_or_tensor(x) -> bool:
    return isinstance(x, Tensor) or is_leaf(x)


def _batch_size(leaves: list, axes: list, names: list[str]) -> int:
    sizes: dict[int, list[str]] = {}
    for leaf, ax, name in zip(leaves, axes, names):
        if ax is None: continue
        shape = np.shape(leaf) if not isinstance(leaf, Tensor) else leaf.shape
        if not shape:
            raise ValueError(f"cannot map over axis {ax} of argument {name}: it is a scalar (0-d); "
                             "use in_axes=None for it")
        sizes.setdefault(shape[normalize_axis(ax, len(shape), "in_axes")], []).append(name)
    if not sizes: raise ValueError("vmap/svmap needs at least one argument with a batch axis (in_axes not None)")
    if len(sizes) > 1:
        groups = [f"arguments {', '.join(n)} have size {s}" if len(n) > 1 else f"argument {n[0]} has size {s}"
                  for s, n in sizes.items()]
        raise ValueError("inconsistent batch sizes: " + "; ".join(groups))
    return next(iter(sizes))


def _example_spec(leaf, ax, name: str):
    """The ArgSpec of one example of a (possibly batched) argument leaf; `name` says which argument it is."""
    if isinstance(leaf, Tensor):
        shape = leaf.shape if ax is None else leaf.shape[:ax % len(leaf.shape)] + leaf.shape[ax % len(leaf.shape) + 1:]
        return ArgSpec(shape, leaf.uop.dtype, leaf.weak)
    spec = leaf_spec(leaf, name)
    if ax is None: return spec
    ax = ax % len(spec.shape)
    return ArgSpec(spec.shape[:ax] + spec.shape[ax + 1:], spec.dtype, spec.weak)


_P = ParamSpec("_P")      # the per-example function's parameters (mapped ones take a batch axis more)
_R = TypeVar("_R")        # what it returns (batched: each output with a batch axis more)

# in_axes: an int or None for every argument, or one entry per positional argument (an int, None, or a container
# of them matching the argument); out_axes: an int or None for every output, or a container matching the outputs
InAxes: TypeAlias = int | None | tuple[Any, ...] | list[Any]
OutAxes: TypeAlias = int | None | tuple[Any, ...] | list[Any] | dict[Any, Any]


class _Mapped(Generic[_P, _R]):
    """What vmap and svmap share: the per-example function (a JitFunction, whose traces they reuse) and axes."""

    def __init__(self, fn: Callable[_P, _R], in_axes: InAxes, out_axes: OutAxes) -> None:
        self.fn = fn
        self.inner = fn if isinstance(fn, JitFunction) else JitFunction(fn)
        self.in_axes, self.out_axes = in_axes, out_axes
        update_wrapper(self, fn, updated=())  # type: ignore[arg-type]  # subclasses define __call__; copying fn.__dict__ would overwrite our own attributes

    def _example(self, args: tuple, kwargs: dict):
        """(leaves, axes, batch size, per-example NumericalFunction) for a call."""
        leaves, tree = flatten((tuple(args), kwargs), is_leaf=_leaf_or_tensor)
        axes = _leaf_axes(self.in_axes, args, kwargs, "in_axes")
        names = argument_leaf_names(self.inner.fn, args, kwargs)
        size = _batch_size(leaves, axes, names)
        specs = tuple(_example_spec(leaf, ax, name) for leaf, ax, name in zip(leaves, axes, names))
        nf = self.inner.specialization((tree, specs, ()), (), compile=False)
        return leaves, axes, size, nf

    def _out_axes(self, out_tree) -> list:
        n = out_tree.num_leaves
        spec = self.out_axes
        if spec is None or isinstance(spec, int): return [spec] * n
        leaves, tree = flatten(spec, is_leaf=lambda x: x is None or isinstance(x, int))
        if len(leaves) == n: return leaves
        raise ValueError(f"out_axes {spec!r} does not match the function's {n} outputs")

    def _trace_batched(self, args: tuple, kwargs: dict):
        """Inside a trace (arguments are Tensors): the batched graph of the per-example function (vmap's rules)."""
        captured = closure_tensors(self.inner.fn)
        if captured:   # traced values of the enclosing function it reads: unmapped arguments of the mapped function
            with_captures = _Mapped(capturing(self.inner.fn), _captures_first(self.in_axes, len(args)), self.out_axes)
            return with_captures._trace_batched((tuple(captured), *args), kwargs)
        leaves, axes, size, nf = self._example(args, kwargs)
        if nf.cut_outputs: raise unsupported("vmap of a function returning an array of run-time length (x[mask], "
                                             "nonzero)", "each example's length may differ: return a mask instead")
        inputs = {}
        for slot, (leaf, ax) in enumerate(zip(leaves, axes)):
            t = Tensor.lift(leaf)
            inputs[slot] = (t.uop, False) if ax is None else (_moveaxis(t.uop, ax % t.ndim, 0), True)
        outs = []
        results = batch_graph(nf.function_graph, inputs, size)
        nout = nf.out_tree.num_leaves
        for k, c in enumerate(nf.checks):   # the per-example checks, now over the batch, become the caller's
            add_check(Tensor(results[nout + 2 * k][0]), Tensor(results[nout + 2 * k + 1][0]), c.error)
        writes = results[len(results) - len(nf.mutated_inputs):]
        for slot, (new, _) in zip(nf.mutated_inputs, writes):   # every example wrote into its argument
            t, ax = Tensor.lift(leaves[slot]), axes[slot]
            if ax is None: raise unsupported("writing into an argument that vmap does not map (in_axes None)",
                                             "every example would write into the same array; use svmap")
            order = list(range(t.ndim))
            order.insert(0, order.pop(ax % t.ndim))
            t.transpose(order)[...] = Tensor(new)
        for (u, has_batch), ax in zip(results[:nout], self._out_axes(nf.out_tree)):
            if ax is None:
                if has_batch: raise ValueError("out_axes=None for an output that depends on a mapped argument")
                outs.append(Tensor(u))
                continue
            u = _broadcast_batch(u, has_batch, size)
            outs.append(Tensor(_moveaxis(u, 0, normalize_axis(ax, len(cast(tuple[int, ...], u.shape)), "out_axes"))))
        return unflatten(nf.out_tree, outs)


# ---------------------------------------------------------------------------------------------------------------
# closures over traced values: a function mapped inside a jit-compiled one may read the enclosing function's arrays
# (`vmap(lambda r: r * w + s)(x)`); its per-example trace cannot hold the enclosing trace's values, so they become
# one more argument, not mapped (in_axes None), and the function is rebuilt around that argument's placeholders

def _closure_cells(fn: Callable) -> list[tuple[Any, Any]]:
    """(cell, contents) of fn's closure, cells not yet bound left out."""
    out = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            out.append((cell, cell.cell_contents))
        except ValueError:
            continue
    return out


def _users_object(v: Any) -> bool:
    """An instance of a class of the user's (its attributes may hold traced values), not a module, class or function,
    nor one of numfn's, NumPy's or Python's own objects."""
    module = (getattr(type(v), "__module__", None) or "").partition(".")[0]
    return hasattr(v, "__dict__") and not isinstance(v, (type, types.ModuleType, types.FunctionType, Tensor)) and \
        module not in ("numfn", "numpy", "builtins")


def _parts(v: Any) -> list:
    """What `v` holds that may hold traced values: a function's closure, a bound method's function and object, an
    object's attributes, a container's items."""
    if isinstance(v, types.FunctionType): return [c for _, c in _closure_cells(v)]
    if isinstance(v, types.MethodType): return [v.__func__, v.__self__]
    if isinstance(v, (list, tuple, dict)): return _held(v)[0]
    if _users_object(v): return list(vars(v).values())
    return []


def closure_tensors(fn: Any, seen: set[int] | None = None) -> list[Tensor]:
    """The traced values fn holds (in its closure, in lists, tuples and dicts there, in the closures of the functions
    and the attributes of the objects it holds, and a bound method's object's), each once, in order."""
    seen = set() if seen is None else seen
    if id(fn) in seen or getattr(fn, "takes_captures", False): return []
    seen.add(id(fn))
    out: list[Tensor] = []
    for v in _parts(fn):
        out += [v] if isinstance(v, Tensor) else closure_tensors(v, seen)
    return list({id(t): t for t in out}.values())


def _held(v: Any) -> tuple[list, Any]:
    """v's leaves and structure, looking into lists, tuples and dicts only."""
    return flatten(v, is_leaf=lambda x: x is not v and not isinstance(x, (list, tuple, dict)))


def _rebuilt(v: Any, new: dict[int, Tensor], done: dict[int, Any]) -> Any:
    """v with every traced value it holds (as closure_tensors finds them) replaced by new[id]; v itself where it
    holds none."""
    if isinstance(v, Tensor): return new.get(id(v), v)
    if id(v) in done: return done[id(v)]
    done[id(v)] = v   # (a cycle back to v keeps v)
    parts = _parts(v)
    rebuilt = [_rebuilt(x, new, done) for x in parts]
    if all(a is b for a, b in zip(parts, rebuilt)): return v
    out: Any
    if isinstance(v, types.FunctionType):
        if len(rebuilt) != len(v.__closure__ or ()):
            raise unsupported("vmap of a function whose closure has a variable not yet assigned")
        out = types.FunctionType(v.__code__, v.__globals__, v.__name__, v.__defaults__,
                                 tuple(types.CellType(x) for x in rebuilt) or None)
        out.__kwdefaults__ = v.__kwdefaults__
        out = update_wrapper(out, v)
    elif isinstance(v, types.MethodType): out = types.MethodType(*rebuilt)
    elif isinstance(v, (list, tuple, dict)): out = unflatten(_held(v)[1], rebuilt)
    else:   # an object of the user's: a shallow copy with the attributes rebuilt
        out = copy.copy(v)
        out.__dict__.update(zip(vars(v), rebuilt))
    done[id(v)] = out
    return out


def capturing(fn: Callable) -> Callable:
    """fn taking the traced values it held as a first argument (a tuple, in closure_tensors' order)."""
    from numfn.trace.convert import converted
    originals = closure_tensors(fn)

    def with_captures(captured: tuple, *args, **kwargs):
        inner = _rebuilt(fn, {id(t): c for t, c in zip(originals, captured)}, {})
        if isinstance(inner, types.MethodType): return types.MethodType(converted(inner.__func__),
                                                                         inner.__self__)(*args, **kwargs)
        return converted(inner)(*args, **kwargs)
    with_captures.__name__ = with_captures.__qualname__ = getattr(fn, "__name__", "mapped")
    with_captures.takes_captures = True  # type: ignore[attr-defined]  # (closure_tensors: its own are not captures)
    return with_captures


def _captures_first(in_axes: InAxes, nargs: int) -> InAxes:
    """in_axes for (captured, *args): the captured values not mapped."""
    if in_axes is None or isinstance(in_axes, int): return (None, *[in_axes] * nargs)
    return (None, *in_axes)


class VmapFunction(_Mapped[_P, _R]):
    """`fn` mapped over a batch axis by transforming its graph (see numfn.vmap)."""

    def __init__(self, fn: Callable[_P, _R], in_axes: InAxes = 0, out_axes: OutAxes = 0) -> None:
        super().__init__(fn, in_axes, out_axes)

        def batched(*args, **kwargs):
            return self._trace_batched(args, kwargs)

        # fn's name and signature (through __wrapped__) name the arguments in errors and debug output
        self._jitted = JitFunction(update_wrapper(batched, fn, updated=()), fastmath=self.inner.fastmath)

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if any(isinstance(x, Tensor) for x in flatten((args, kwargs), is_leaf=_leaf_or_tensor)[0]):
            return self._trace_batched(args, kwargs)
        return self._jitted(*args, **kwargs)

    def specialize(self, *args: _P.args, **kwargs: _P.kwargs) -> NumericalFunction:
        """The NumericalFunction of the batched function for these arguments."""
        return self._jitted.specialize(*args, **kwargs)


@overload
def vmap(fn: Callable[_P, _R], in_axes: InAxes = 0, out_axes: OutAxes = 0) -> VmapFunction[_P, _R]: ...


@overload
def vmap(fn: None = None, in_axes: InAxes = 0,
         out_axes: OutAxes = 0) -> Callable[[Callable[_P, _R]], VmapFunction[_P, _R]]: ...


def vmap(fn: Callable[_P, _R] | None = None, in_axes: InAxes = 0,
         out_axes: OutAxes = 0) -> VmapFunction[_P, _R] | Callable[[Callable[_P, _R]], VmapFunction[_P, _R]]:
    """Vectorizing map: `vmap(f)(xs)` equals `np.stack([f(x) for x in xs])`, computed by kernels that run over
    the whole batch. `in_axes`/`out_axes`: an int (negative allowed), None (not mapped: the argument is shared by
    every example), or a tuple/list with one entry per argument (containers may be matched by structure).
    Works as a decorator, inside jit-compiled functions and around them; calling it with arrays compiles it.

    Args:
        fn: the function of one example; None returns a decorator taking it.
        in_axes: the mapped axis of each argument (int, None, or a tuple/list with one entry per argument).
        out_axes: where the batch axis goes in each output (int or a tuple/list per output).

    Returns:
        A VmapFunction (or a decorator making one), called with batched arguments.

    Example:
        norms = numfn.vmap(lambda v: np.sqrt((v * v).sum()))
        x = np.arange(6.0).reshape(2, 3)
        np.testing.assert_allclose(norms(x), np.linalg.norm(x, axis=1))"""
    if fn is None: return lambda f: VmapFunction(f, in_axes, out_axes)
    return VmapFunction(fn, in_axes, out_axes)


# ---------------------------------------------------------------------------------------------------------------
# svmap: the per-example program in a native loop

_pool: ThreadPoolExecutor | None = None


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    # its workers run only compiled programs: the np.random guard does not count them as threads of the user's
    if _pool is None: _pool = ThreadPoolExecutor(max_workers=max(2, thread_count()), thread_name_prefix="numfn",
                                                 initializer=mark_runs_no_user_code)
    return _pool


def _forget_pool_after_fork() -> None:
    """A forked child has none of the pool's threads (the executor would queue work for idle workers that do not
    exist, and wait for it forever): the child makes its own pool when it needs one."""
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_forget_pool_after_fork)


class BatchedEntry:
    """The program of `base` (a per-example NumericalFunction) inside a native loop over a batch given at run time:
    base's kernels behind svmap's entry point (a ProgramBuild with `batched` flags, the stage chain jit's programs
    go through too). Only the entry point is its own; the trace, schedule and kernels are base's."""

    def __init__(self, base: NumericalFunction, batched: tuple[bool, ...]):
        self.base, self.batched = base, batched
        self.build = ProgramBuild(base, batched)

    @property
    def source(self) -> str:
        return self.build.source

    @property
    def compiled(self):
        return self.build.compiled

    def run(self, leaves: list, axes: list, size: int, out_axes: list):
        build, base = self.build, self.base
        prog = build.compiled
        for slot in base.mutated_inputs: base._check_writable(leaves, slot)
        outs = [np.empty((size,) + shape, dt.np) for shape, dt in base.out_specs]
        ins, views = [], []
        for leaf, ax, spec in zip(leaves, axes, base.in_specs):
            a = np.asarray(leaf, dtype=spec.dtype.np)
            if ax is not None: a = np.moveaxis(a, ax % a.ndim, 0)
            views.append(a)
            ins.append(np.require(a, requirements=("C", "A")))   # contiguous and aligned, as native code reads it
        table = pointer_table((*outs, *ins, *build.pointer_constants))
        threads = min(thread_count(), size)
        if threads < 2 or size * max(1, prog.manifest["ops"]) < PARALLEL_MIN_OPS: threads = 1
        # examples writing into one shared argument (in_axes None) write in turn, as a Python loop would
        if any(axes[slot] is None for slot in base.mutated_inputs): threads = 1
        start = time.perf_counter()
        if threads > 1:
            from numfn.runtime.blas import single_threaded
            bounds = [size * i // threads for i in range(threads + 1)]
            # extern calls on every thread at once: BLAS on one thread each, not a pool each
            with single_threaded() if prog.manifest.get("externs") else contextlib.nullcontext():
                futures = [_thread_pool().submit(prog.entry, lo, hi, table) for lo, hi in zip(bounds, bounds[1:])]
                status = max(f.result() for f in futures)
        else:
            status = prog.entry(0, size, table)
        if status: raise MemoryError(f"svmap({base.name}): could not allocate scratch memory")
        for slot in base.mutated_inputs:   # arguments the examples wrote into, where they were copies
            if ins[slot] is not views[slot]: np.copyto(views[slot], ins[slot], casting="unsafe")
        nout = base.out_tree.num_leaves
        if base.checks: raise_failed_checks(base.checks, outs[nout:])
        outs = outs[:nout]
        # DEBUG=2: the loop's time (its kernels are not timed one by one: counters inside the loop would cost more
        # than small per-example kernels take)
        debug.log(2, lambda: f"svmap({base.name}): {size} examples in {(time.perf_counter() - start) * 1e3:.3f} ms "
                             f"on {threads} thread{'s' if threads > 1 else ''}")
        results = [np.ascontiguousarray(np.moveaxis(o, 0, normalize_axis(ax, o.ndim, "out_axes")))
                   if ax not in (None, 0) else o for o, ax in zip(outs, out_axes)]
        return unflatten(base.out_tree, results)


class SvmapFunction(_Mapped[_P, _R]):
    """`fn` mapped over a batch axis by a native loop around its compiled per-example program (see numfn.svmap)."""

    def __init__(self, fn: Callable[_P, _R], in_axes: InAxes = 0, out_axes: OutAxes = 0) -> None:
        super().__init__(fn, in_axes, out_axes)
        self._entries: dict = {}

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if any(isinstance(x, Tensor) for x in flatten((args, kwargs), is_leaf=_leaf_or_tensor)[0]):
            # inside a trace there is no native loop to run: svmap means what vmap means
            return self._trace_batched(args, kwargs)
        leaves, axes, size, nf = self._example(args, kwargs)
        if nf.cut_outputs: raise unsupported("svmap of a function returning an array of run-time length (x[mask], "
                                             "nonzero)", "each example's length may differ: return a mask instead")
        out_axes = self._out_axes(nf.out_tree)
        if any(ax is None for ax in out_axes): raise ValueError("svmap needs an integer out_axes for every output")
        return self.entry(nf, tuple(ax is not None for ax in axes)).run(leaves, axes, size, out_axes)

    def entry(self, nf: NumericalFunction, batched: tuple[bool, ...]) -> BatchedEntry:
        """The batched entry of per-example function `nf` with these batched inputs, made on first use."""
        key = (nf, batched)
        found = self._entries.get(key)
        if found is None:
            found = self._entries.setdefault(key, BatchedEntry(nf, batched))
        return found

    @property
    def entries(self) -> tuple[BatchedEntry, ...]:
        """The batched entries made so far, one per per-example signature (and set of batched inputs)."""
        return tuple(self._entries.values())


@overload
def svmap(fn: Callable[_P, _R], in_axes: InAxes = 0, out_axes: OutAxes = 0) -> SvmapFunction[_P, _R]: ...


@overload
def svmap(fn: None = None, in_axes: InAxes = 0,
          out_axes: OutAxes = 0) -> Callable[[Callable[_P, _R]], SvmapFunction[_P, _R]]: ...


def svmap(fn: Callable[_P, _R] | None = None, in_axes: InAxes = 0,
          out_axes: OutAxes = 0) -> SvmapFunction[_P, _R] | Callable[[Callable[_P, _R]], SvmapFunction[_P, _R]]:
    """Sequential map: `svmap(f)(xs)` equals `np.stack([f(x) for x in xs])` bitwise, computed by a native loop
    around f's compiled per-example program. The batch size is a run-time value (batch sizes 1, 7 and 1000 share
    one compilation), per-example scratch memory is reused by every iteration, and large batches are split across
    threads (NUMFN_THREADS). Inside a jit-compiled function it means what vmap means.

    Args:
        fn: the function of one example; None returns a decorator taking it.
        in_axes: as for `vmap`.
        out_axes: as for `vmap`.

    Returns:
        An SvmapFunction (or a decorator making one), called with batched arguments.

    Example:
        cumulative = numfn.svmap(lambda v: np.cumsum(v) * 2.0)
        x = np.arange(6.0).reshape(3, 2)
        np.testing.assert_array_equal(cumulative(x), np.cumsum(x, axis=1) * 2.0)"""
    if fn is None: return lambda f: SvmapFunction(f, in_axes, out_axes)
    return SvmapFunction(fn, in_axes, out_axes)


__all__ = ["vmap", "svmap", "VmapFunction", "SvmapFunction", "BatchedEntry", "batch_graph", "BATCHING_RULES"]
