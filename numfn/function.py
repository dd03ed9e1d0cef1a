"""NumericalFunction (one compiled specialization of a Python function) and the jit dispatcher.

A NumericalFunction is a frozen dataclass whose stages are cached properties, each computed from the previous
one on first access:

  function_graph    trace the function on Tensor.empty placeholders: SINK of the outputs
  call_graph        symbolic simplification, then CALL(body with PARAMs, *buffers)
  schedule          kernels in execution order (a tuple of ExecItems); `memory` is the intermediate arena plan
  rendered_kernels  each kernel lowered to loops, optimized and rendered for the backend
  source            the whole program: constants, kernels, one public entry point
  compiled          native code for the source (C compiler + cffi, or LLVM JIT)
  __call__          the dispatcher: validate arguments, allocate outputs, call native code, return arrays
"""
from __future__ import annotations

import hashlib
import inspect
import threading
import time
from collections import Counter
from dataclasses import dataclass, replace
from functools import cached_property, update_wrapper
from collections.abc import Callable
from typing import Any

import numpy as np

from numfn import debug
from numfn.dtype import DType, dtypes
from numfn.layout import Layout, make_layout
from numfn.numpy.random import generator_arguments, trace_guard
from numfn.pytree import TreeDef, flatten, unflatten
from numfn.runtime.dispatch import check_out, dispatcher_base, register_specialization
from numfn.schedule import (ExecItem, LoopKernel, MemoryPlan, Schedule, all_items, callify, create_schedule,
                            program_steps)
from numfn.errors import unsupported
from numfn.indexing import identity_indices
from numfn.convert import converted
from numfn.interpose import tracing_numpy
from numfn.tensor import Check, Tensor, add_check, recording_trace
from numfn.uop import Ops, UOp, format_graph, graph_fingerprint, toposort

BACKENDS = ("c", "llvm")
# ALU operations below which a kernel runs on one thread: waking the pool costs about as much as this much work
PARALLEL_MIN_OPS = 1 << 18


@dataclass(frozen=True)
class ArgSpec:
    """What a signature records of one array argument: shape and dtype. `weak` marks a Python scalar (it
    promotes like one, NEP 50)."""
    shape: tuple[int, ...]
    dtype: DType
    weak: bool = False

    def __repr__(self) -> str:
        return f"{'weak ' if self.weak else ''}{self.dtype.name}[{','.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class RenderedKernel:
    name: str
    program: Any     # codegen.program.Program
    source: str


@dataclass(frozen=True, eq=False)
class NumericalFunction:
    """`fn` specialized to one signature: argument structure `in_tree`, array specs `in_specs`, values of static
    arguments `statics` ((position or name, value) pairs), compiled for `backend`."""
    fn: Callable
    in_tree: TreeDef
    in_specs: tuple[ArgSpec, ...]
    statics: tuple = ()
    backend: str = "c"
    profile: bool = False   # DEBUG=2: time every kernel of every call

    # ---- tracing ----------------------------------------------------------------------------------------------
    @cached_property
    def _trace(self) -> tuple[UOp, TreeDef, dict]:
        t0 = time.perf_counter()
        placeholders = [Tensor.empty(s.shape, s.dtype, i, s.weak) for i, s in enumerate(self.in_specs)]
        params = [t.uop for t in placeholders]
        args, kwargs = unflatten(self.in_tree, placeholders)
        args, kwargs = list(args), dict(kwargs)
        for where, value in self.statics:
            if isinstance(where, int): args.insert(where, value)
            else: kwargs[where] = value
        with recording_trace() as record, tracing_numpy(), trace_guard(self.fn):
            # Python loops and branches on traced values become numfn's (numfn.convert)
            out = converted(self.fn)(*args, **kwargs)
        leaves, tree = flatten(out)
        # the outputs, then for every check its failed and payload arrays, then the run-time lengths of outputs that
        # have one (hidden outputs the dispatcher inspects)
        ts = [Tensor.lift(leaf) for leaf in leaves]
        values = [t.uop for t in ts] + [u for c in record.checks for u in (c.failed, c.payload)]
        record.cut = [(i, a) for i, t in enumerate(ts) if t.runtime_length
                      for a, length in enumerate(t.lengths) if length is not None]
        values += [ts[i].lengths[a] for i, a in record.cut]
        # the fixups: every output is materialized in a fresh row-major buffer, so an output that is a view
        # (x.T, x[:2]) or an input itself (x) is copied, never aliased
        outs = [UOp(Ops.CONTIGUOUS, u.dtype, (u,)) for u in values]
        # then the inputs the function wrote into: their last versions, written into the caller's arrays
        for slot, (t, param) in enumerate(zip(placeholders, params)):
            if t.uop is not param:
                record.mutated.append(slot)
                outs.append(_writeback(t.uop, param))
        sink = UOp(Ops.SINK, dtypes.void, tuple(outs))
        debug.log(1, f"traced {self.name} in {(time.perf_counter() - t0) * 1e3:.2f} ms")
        debug.log(5, lambda: f"function_graph of {self.name}:\n{format_graph([sink])}")
        return sink, tree, record

    @cached_property
    def int_limits(self) -> dict[int, tuple[int, int]]:
        """{argument slot: (min, max)} for Python-int arguments the function converts to narrower integers:
        NumPy raises OverflowError for values outside, and so does the dispatcher."""
        return self._trace[2].int_limits

    @cached_property
    def mutated_inputs(self) -> tuple[int, ...]:
        """The input slots the function writes into: the caller's arrays change (their new values are written by
        the program straight into their memory). Their writes are the last entries of the function graph."""
        return tuple(self._trace[2].mutated)

    @cached_property
    def cut_outputs(self) -> tuple[tuple[int, int], ...]:
        """(output, axis) for every axis of an output that has a run-time length (x[mask], nonzero, x[:n]): stored at
        its bound, its length is a hidden output after the checks', and the dispatcher cuts the output to it."""
        return tuple(self._trace[2].cut)

    @cached_property
    def checks(self) -> tuple[Check, ...]:
        """Conditions checked after every call (see numfn.tensor.Check); their failed and payload arrays are the
        last outputs of the function graph, after the `out_tree` outputs."""
        return tuple(self._trace[2].checks)

    @property
    def name(self) -> str:
        return f"{getattr(self.fn, '__qualname__', 'fn')}({', '.join(map(repr, self.in_specs))})"

    @cached_property
    def function_graph(self) -> UOp:
        """The traced outputs: SINK(CONTIGUOUS(output), ...) over PARAM placeholders and captured constants."""
        return self._trace[0]

    @cached_property
    def out_tree(self) -> TreeDef:
        return self._trace[1]

    @cached_property
    def call_graph(self) -> UOp:
        """CALL(body, *buffers): the simplified body, with PARAMs bound to input and constant buffers."""
        call = callify(self.function_graph, len(self.in_specs), len(self.mutated_inputs))
        debug.log(5, lambda: f"call_graph of {self.name}:\n{format_graph([call])}")
        return call

    # ---- scheduling -------------------------------------------------------------------------------------------
    @cached_property
    def _scheduled(self) -> tuple[Schedule, MemoryPlan]:
        t0 = time.perf_counter()
        out = create_schedule(self.call_graph)
        debug.log(1, f"scheduled {self.name}: {len(out[0])} kernels in {(time.perf_counter() - t0) * 1e3:.2f} ms")
        debug.log(3, lambda: f"schedule of {self.name}:\n{out[0]}\n{out[1]}")
        return out

    @cached_property
    def schedule(self) -> Schedule:
        """The kernels in execution order: a tuple of ExecItems that prints as a table."""
        return self._scheduled[0]

    @cached_property
    def memory(self) -> MemoryPlan:
        """Where intermediates live: offsets in one arena, `arena_bytes` its peak size."""
        return self._scheduled[1]

    @cached_property
    def layout(self) -> Layout:
        return make_layout(self.call_graph, self.schedule, self.memory)

    # ---- rendering --------------------------------------------------------------------------------------------
    @cached_property
    def rendered_kernels(self) -> tuple[RenderedKernel, ...]:
        from numfn.codegen.program import build_program
        t0 = time.perf_counter()
        out = []
        renderer = _renderer(self.backend)
        names: Counter = Counter()
        for ei in self.kernel_items:
            name = ei.kernel.name   # kernels inside loops are named like the others: made unique here
            names[name] += 1
            if names[name] > 1: name = f"{name}_{names[name] - 1}"
            if ei.lowered is None:   # an extern call (numfn.extern)
                from numfn.extern import build_extern_program
                prog = build_extern_program(replace(ei.kernel, name=name), self.layout.externs)
                out.append(RenderedKernel(prog.name, prog, renderer.render_extern(prog)))
                continue
            prog = build_program(name, ei.kernel.buffers, ei.lowered, parallel=ei.op_count >= PARALLEL_MIN_OPS)
            out.append(RenderedKernel(prog.name, prog, renderer.render_kernel(prog)))
        debug.log(1, f"rendered {len(out)} kernels of {self.name} in {(time.perf_counter() - t0) * 1e3:.2f} ms")
        return tuple(out)

    @cached_property
    def kernel_items(self) -> tuple[ExecItem, ...]:
        """The schedule's kernels and extern calls, those inside loops and branches too, in program order."""
        return tuple(ei for ei in all_items(self.schedule) if not isinstance(ei.kernel, LoopKernel))

    @cached_property
    def steps(self) -> list:
        """The order the kernels run in, with the loops and branches around them (numfn.schedule.program_steps)."""
        return program_steps(self.schedule, {id(ei): k for k, ei in enumerate(self.kernel_items)})

    @cached_property
    def entry_name(self) -> str:
        return entry_name_for(self._source_template)

    @cached_property
    def _source_template(self) -> str:
        return _renderer(self.backend).render_program(
            ENTRY_PLACEHOLDER, [(k.program, k.source) for k in self.rendered_kernels], self.layout,
            profile=self.profile, steps=self.steps)

    @cached_property
    def source(self) -> str:
        """The whole program's source text: constants, kernels, and the public entry point."""
        src = self._source_template.replace(ENTRY_PLACEHOLDER, self.entry_name)
        debug.log(4, lambda: f"source of {self.name}:\n{src}")
        return src

    # ---- native code ------------------------------------------------------------------------------------------
    @cached_property
    def cache_key(self) -> str:
        """The disk cache key of this program: the traced graph (which holds everything the function computes,
        captured constants included), the signature, backend, options, target CPU and numfn's own source. Equal
        keys mean equal programs, so a warm start skips scheduling, rendering and compiling."""
        from numfn.runtime import build_id, target_description
        from numfn.runtime.cache import cache_key
        return cache_key("numfn-program", build_id(), self.backend, target_description(self.backend),
                         f"noopt={debug.noopt()} profile={self.profile}", repr(self.in_specs),
                         graph_fingerprint([self.function_graph]))

    @cached_property
    def compiled(self) -> Any:
        """The loaded native program (numfn.runtime.NativeProgram), from the disk cache or compiled now."""
        from numfn.runtime import load_or_compile
        t0 = time.perf_counter()
        prog, compiled = load_or_compile(self.backend, self.cache_key, 0, lambda: (self.source, self.entry_name,
                                                                                  self.manifest))
        debug.log(1, f"{'compiled' if compiled else 'loaded'} {self.name} ({self.backend}) "
                     f"{'' if compiled else 'from the cache '}in {(time.perf_counter() - t0) * 1e3:.2f} ms")
        return prog

    @cached_property
    def manifest(self) -> dict:
        """What a caller must know about the compiled code beyond the signature, stored with it in the cache: the
        pointer constants in entry order (by content hash), and with DEBUG=2 the kernel names."""
        manifest = {"constants": [b.data_hash for b, _, _ in self.layout.pointer_constants]}
        if self.layout.externs: manifest["externs"] = list(self.layout.externs)
        if self.profile: manifest["kernels"] = [k.name for k in self.rendered_kernels]
        return manifest

    @cached_property
    def out_specs(self) -> tuple[tuple[tuple[int, ...], DType], ...]:
        """(shape, dtype) of every output (the function's, then the checks'), in the entry point's order."""
        outs = self.function_graph.src
        return tuple((o.shape, o.dtype) for o in outs[:len(outs) - len(self.mutated_inputs)])

    def pointer_constants(self, manifest: dict) -> list:
        """The arrays passed by pointer to a compiled program, in the order its manifest lists them; then its externs
        table, if it calls extern routines (numfn.extern)."""
        data = {u.arg.data_hash: u.arg.data for u in toposort([self.function_graph])
                if u.op is Ops.BUFFER and u.arg.category == "constant"}
        consts = [data[h] for h in manifest.get("constants", [])]
        if manifest.get("externs"):
            from numfn.extern import extern_table
            consts.append(extern_table(manifest["externs"]))
        return consts

    @cached_property
    def run(self) -> Callable[[list], Any]:
        """The dispatcher over flat argument leaves (already matched to this signature)."""
        from numfn.runtime.native import pointer_table
        from numfn.runtime.threads import parallel_for_address
        prog = self.compiled
        entry = prog.entry
        out_specs = [(shape, dt.np) for shape, dt in self.out_specs]
        in_specs = [(s.dtype.np, s.weak) for s in self.in_specs]
        consts = self.pointer_constants(prog.manifest)
        out_tree, name = self.out_tree, self.name
        limits = sorted(self.int_limits.items())
        timings = prog.timings() if self.profile else None

        nout = out_tree.num_leaves
        checks, written, cut = self.checks, self.mutated_inputs, self.cut_outputs
        lengths_at = nout + 2 * len(checks)

        def run(leaves: list, out=None) -> Any:
            for slot, (lo, hi) in limits:
                if not lo <= leaves[slot] <= hi: raise _int_overflow(leaves[slot], lo, hi)
            for slot in written: self._check_writable(leaves, slot)
            if out is None: outs = [np.empty(shape, dt) for shape, dt in out_specs]
            else: outs = check_out(out, out_specs[:nout], leaves, consts) + \
                [np.empty(shape, dt) for shape, dt in out_specs[nout:]]
            ins = []
            for leaf, (dt, weak) in zip(leaves, in_specs):
                a = np.array(leaf, dtype=dt) if weak or not isinstance(leaf, np.ndarray) \
                    else np.ascontiguousarray(leaf, dtype=dt)   # also swaps non-native byte order
                ins.append(a)
            if entry(pointer_table((*outs, *ins, *consts), parallel_for_address())):
                raise MemoryError(f"{name}: could not allocate its scratch memory")
            for slot in written:   # an argument the program could not write in place (strided, byte-swapped)
                if ins[slot] is not leaves[slot]: np.copyto(leaves[slot], ins[slot], casting="unsafe")
            if timings is not None: _report_kernel_times(name, prog.manifest["kernels"], timings)
            if checks: raise_failed_checks(checks, outs[nout:])
            for k, (i, a) in enumerate(cut): outs[i] = outs[i][(slice(None),) * a + (slice(int(outs[lengths_at + k])),)]
            return unflatten(out_tree, outs[:nout])

        return run

    def _check_writable(self, leaves: list, slot: int) -> None:
        """An argument the function writes into must be a writeable NumPy array, as NumPy requires, sharing no
        memory with another argument (numfn traced them as separate arrays: NumPy would let writes through one
        show through the other)."""
        leaf = leaves[slot]
        if isinstance(leaf, np.ndarray) and leaf.flags.writeable:
            others = [i for i, x in enumerate(leaves) if i != slot and isinstance(x, np.ndarray) and x.size and
                      leaf.size and np.may_share_memory(leaf, x) and np.shares_memory(leaf, x)]
            if not others: return
        names = argument_leaf_names(self.fn, *unflatten(self.in_tree, list(leaves)))
        where = names[slot]
        if not isinstance(leaf, np.ndarray):
            raise TypeError(f"argument {where}: the function writes into it, so it must be a NumPy array, not "
                            f"{type(leaf).__name__}")
        if not leaf.flags.writeable: raise ValueError(f"assignment destination is read-only (argument {where})")
        raise unsupported(f"writing into argument {where}, which shares memory with argument {names[others[0]]}",
                          "numfn compiles the function for separate arrays; pass a copy of one of them")

    @cached_property
    def __call__(self) -> Callable:  # type: ignore[override]
        """Calling the NumericalFunction with arguments of its signature runs the native code."""
        def call(*args, **kwargs):
            key, leaves, _ = _signature(self.fn, args, kwargs, _static_spec_of(self))
            mine = (self.in_tree, self.in_specs, self.statics)
            if key != mine:
                raise TypeError(f"{self.name} was specialized for {_describe(mine)}, called with {_describe(key)}")
            return self.run(leaves)
        return call


ENTRY_PLACEHOLDER = "__NUMFN_ENTRY__"


def entry_name_for(template: str) -> str:
    """The entry point's symbol: named after the program's content, so equal programs share it (and different
    ones never clash in the process-wide JIT)."""
    return "numfn_" + hashlib.sha256(template.encode()).hexdigest()[:20]


def _writeback(last: UOp, param: UOp) -> UOp:
    """The last version of an input the function wrote into, as writes into the input's own memory: its chain of
    SCATTERs when it starts at the input, else one write of the whole new value (x[...] = v; x += 1)."""
    u = last
    while u.op is Ops.SCATTER: u = u.src[0]
    if u is param: return last
    return UOp(Ops.SCATTER, last.dtype, (param, last, *identity_indices(param.shape)), (None, True, False))


def raise_failed_checks(checks: tuple[Check, ...], arrays: list) -> None:
    """Raise the error of the first check that failed; `arrays` holds each check's failed and payload arrays."""
    for k, c in enumerate(checks):
        failed, payload = arrays[2 * k], arrays[2 * k + 1]
        if failed.any(): raise c.error(int(payload.reshape(-1)[int(np.argmax(failed.reshape(-1)))]))


def _int_overflow(value: int, lo: int, hi: int) -> OverflowError:
    """NumPy's error for a Python int that does not fit the integer type(s) a function converts it to (the
    range may be the intersection of several: the type named is one whose bound it crosses)."""
    crossed = [d for d in dtypes.all if d.is_int and (d.max == hi if value > hi else d.min == lo)]
    return OverflowError(f"Python integer {value} out of bounds for {crossed[0].name if crossed else f'[{lo}, {hi}]'}")


def _report_kernel_times(name: str, kernels: list[str], timings) -> None:
    """DEBUG=2: the time each kernel took in this call (the program adds to its counters; they are reset here)."""
    lines = [f"{name}: kernel times"]
    for i, k in enumerate(kernels):
        lines.append(f"  {k:<24} {timings[i] / 1e3:10.2f} us")
        timings[i] = 0
    debug.log(2, "\n".join(lines))


def _renderer(backend: str):
    if backend == "c":
        from numfn.renderer import c
        return c
    if backend == "llvm":
        from numfn.renderer import llvm
        return llvm
    raise ValueError(f"unknown backend {backend!r} (choose from {BACKENDS})")


def _describe(key) -> str:
    tree, specs, statics = key
    return f"arguments {tree!r} of {', '.join(map(repr, specs)) or 'no arrays'}" + \
        (f" with static {dict(statics)}" if statics else "")


def _static_spec_of(nf: NumericalFunction):
    nums = tuple(w for w, _ in nf.statics if isinstance(w, int))
    return nums, tuple(w for w, _ in nf.statics if isinstance(w, str))


# ---------------------------------------------------------------------------------------------------------------
# signatures

def _is_number_list(x) -> bool:
    if not isinstance(x, list) or not x: return False
    return all(isinstance(v, (bool, int, float, np.generic)) or _is_number_list(v) for v in x)


def _is_leaf(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic, bool, int, float)) or _is_number_list(x)


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
        if not -2**63 <= x < 2**63: raise OverflowError(f"argument {where}: Python integer {x} out of bounds for int64")
        return ArgSpec((), dtypes.int64, True)
    if isinstance(x, float): return ArgSpec((), dtypes.float64, True)
    if isinstance(x, list):
        try:
            arr = np.asarray(x)
        except ValueError:   # NumPy refuses ragged nesting
            arr = np.empty(0, object)
        if arr.dtype == object: raise TypeError(f"argument {where}: a list of mixed or ragged values is not an array")
        return ArgSpec(arr.shape, dtypes.from_numpy(arr.dtype))
    raise TypeError(f"argument {where} of type {type(x).__name__} is not an array, a Python scalar or a container of "
                    "them (tuple, list, dict)")


def _leaf_paths(tree: Any, prefix: str) -> list[str]:
    paths: list[str] = []

    def walk(x, p):
        if _is_leaf(x) or not isinstance(x, (tuple, list, dict)):
            if x is not None: paths.append(p)
            return
        items = sorted(x.items(), key=lambda kv: repr(kv[0])) if isinstance(x, dict) else enumerate(x)
        if isinstance(x, dict) and all(isinstance(k, str) for k in x): items = sorted(x.items())
        for k, v in items: walk(v, f"{p}[{k!r}]")

    walk(tree, prefix)
    return paths


def _signature(fn: Callable, args: tuple, kwargs: dict, static: tuple[tuple[int, ...], tuple[str, ...]]):
    """(key, leaves, statics) for a call: the key is (argument structure, leaf specs, static values)."""
    static_nums, static_names = static
    statics = []
    if static_nums or static_names:
        dyn_args = []
        for i, a in enumerate(args):
            if i in static_nums: statics.append((i, _hashable(a, f"static argument {i}")))
            else: dyn_args.append(a)
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in static_names: statics.append((k, _hashable(v, f"static argument {k!r}")))
            else: dyn_kwargs[k] = v
        args, kwargs = tuple(dyn_args), dyn_kwargs
    leaves, tree = flatten((tuple(args), kwargs), is_leaf=_is_leaf)
    try:
        specs = tuple(leaf_spec(x, "?") for x in leaves)
    except (TypeError, OverflowError):   # the error again, now naming the argument (too slow for every call)
        for x, p in zip(leaves, argument_leaf_names(fn, args, kwargs)): leaf_spec(x, p)
        raise
    return (tree, specs, tuple(statics)), leaves, tuple(statics)


def argument_leaf_names(fn: Callable, args: tuple, kwargs: dict) -> list[str]:
    """How error messages name each leaf of a call's arguments, in flattening order: `'x'`, `'params'['w']`, `2[0]`
    (a positional argument without a parameter name)."""
    names = _arg_names(fn, args, kwargs)
    return [p for i, a in enumerate(args) for p in _leaf_paths(a, names[i])] + \
        [p for k, v in sorted(kwargs.items()) for p in _leaf_paths(v, repr(k))]


def _arg_names(fn: Callable, args: tuple, kwargs: dict) -> list[str]:
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [repr(params[i]) if i < len(params) else str(i) for i in range(len(args))]


def _hashable(v, what: str):
    try:
        hash(v)
    except TypeError:
        raise TypeError(f"{what} must be hashable (it selects a specialization by value), "
                        f"got {type(v).__name__}") from None
    return v


# ---------------------------------------------------------------------------------------------------------------
# jit

class JitFunction(dispatcher_base()):
    """A Python function compiled per signature. Calling it finds (or builds) the NumericalFunction for the
    arguments' shapes, dtypes and static values, and runs its native code.

    Calls are dispatched by numfn's C extension (runtime/_dispatch.c, built once and kept in the disk cache): a
    call with plain positional arrays and scalars of a signature seen before goes straight to native code. Any
    other call (keyword or static arguments, containers, a new signature) takes `_dispatch_miss`, which computes
    the signature in Python, compiles if needed, and registers the fast path for next time. `out=` passes
    preallocated outputs (a reserved keyword: a compiled function cannot have its own parameter named `out`).
    This class must not define `__call__`, or calls lose the C fast path."""

    def __init__(self, fn: Callable, static_argnums=(), static_argnames=(), backend: str | None = None):
        update_wrapper(self, fn, updated=())   # copying fn.__dict__ would overwrite our own attributes
        self.fn = fn
        nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        nums, names = _static_both_ways(fn, nums, names)
        self._static = (tuple(sorted(nums)), tuple(names))
        self._backend = backend
        self._specializations: dict = {}
        self._lock = threading.Lock()

    @property
    def backend(self) -> str:
        return self._backend or debug.default_backend()

    def specialize(self, *args, **kwargs) -> NumericalFunction:
        """The NumericalFunction these arguments select; its stages are computed when first accessed."""
        args, kwargs = generator_arguments(args, kwargs, draw=False)
        key, _, statics = _signature(self.fn, args, kwargs, self._static)
        return self.specialization(key, statics, compile=False)

    def specialization(self, key, statics, compile: bool = True) -> NumericalFunction:
        """The NumericalFunction for a signature key (see `_signature`), made on first use; with `compile`, its
        native code is ready when this returns. Threads asking at once trace and compile once."""
        full = (key, self.backend, debug.level() >= 2)
        nf = self._specializations.get(full)
        if nf is None or (compile and "run" not in nf.__dict__):
            with self._lock:
                nf = self._specializations.get(full)
                if nf is None:
                    nf = NumericalFunction(self.fn, key[0], key[1], statics, full[1], full[2])
                    self._specializations[full] = nf
                if compile:
                    try:
                        _ = nf.run   # trace, compile and load under the lock
                    except BaseException:
                        del self._specializations[full]   # a signature that fails to compile is not kept
                        raise
        return nf

    def _dispatch_miss(self, *args, **kwargs):
        out = kwargs.pop("out", None)
        args, kwargs = generator_arguments(args, kwargs)   # a numpy Generator argument becomes a key drawn from it
        key, leaves, statics = _signature(self.fn, args, kwargs, self._static)
        if any(isinstance(leaf, Tensor) for leaf in leaves):   # called while another function is traced
            if out is not None: raise unsupported("out= in a call inside a traced function")
            return self._splice(key, statics, leaves)
        nf = self.specialization(key, statics)
        if not nf.profile: register_specialization(self, nf)   # DEBUG=2 calls stay on the Python path to report
        return nf.run(leaves, out)

    def _splice(self, key, statics, leaves: list):
        """This function's own trace for the arguments' signature, with its inputs bound to the caller's traced
        values: the call becomes part of the caller's graph (and fuses with it), and is traced only once."""
        from numfn.schedule import substitute
        nf = self.specialization(key, statics, compile=False)
        sink = nf.function_graph
        bound = {u: Tensor.lift(leaves[u.arg[0]]).uop for u in sink.toposort() if u.op is Ops.PARAM}
        spliced = substitute(sink, bound)
        outs = [Tensor(o.src[0] if o.op is Ops.CONTIGUOUS else o) for o in spliced.src]
        nout = nf.out_tree.num_leaves
        for k, c in enumerate(nf.checks):   # the callee's checks become the caller's
            add_check(outs[nout + 2 * k], outs[nout + 2 * k + 1], c.error)
        for slot, new in zip(nf.mutated_inputs, outs[len(outs) - len(nf.mutated_inputs):]):
            leaves[slot][...] = new   # the callee wrote into this argument: the caller's array changes
        lengths_at = nout + 2 * len(nf.checks)
        lengths: dict[int, list] = {}
        for k, (i, a) in enumerate(nf.cut_outputs):   # outputs of run-time length are so in the caller too
            lengths.setdefault(i, [None] * outs[i].ndim)[a] = outs[lengths_at + k].uop
        for i, ls in lengths.items():
            from numfn.dynamic import DynTensor
            outs[i] = DynTensor(outs[i].uop, lengths=tuple(ls))
        return unflatten(nf.out_tree, outs[:nout])

    @property
    def specializations(self) -> tuple[NumericalFunction, ...]:
        """The NumericalFunctions compiled so far, one per signature seen."""
        return tuple(self._specializations.values())

    def __repr__(self) -> str:
        return f"<numfn.jit {getattr(self.fn, '__qualname__', self.fn)}: {len(self._specializations)} specializations>"


def _static_both_ways(fn: Callable, nums: tuple, names: tuple) -> tuple[tuple, tuple]:
    """Static arguments named by position also by name and the other way round (as JAX does): an argument is
    static however the caller passes it."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return nums, names
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    nums = tuple(dict.fromkeys([*nums, *(positional.index(n) for n in names if n in positional)]))
    names = tuple(dict.fromkeys([*names, *(positional[k] for k in nums
                                            if 0 <= k < len(positional) and params[k].kind != params[k].POSITIONAL_ONLY)]))
    return nums, names


def jit(fn: Callable | None = None, *, static_argnums=(), static_argnames=(), backend: str | None = None):
    """Compile `fn` to native code, once per signature (argument shapes, dtypes and static values).

    Usable as `@jit` or `@jit(static_argnames=("n",), backend="c")`. Array arguments become traced
    placeholders; static arguments are passed to `fn` as they are and must be hashable.
    """
    if fn is None:
        return lambda f: JitFunction(f, static_argnums, static_argnames, backend)
    return JitFunction(fn, static_argnums, static_argnames, backend)
