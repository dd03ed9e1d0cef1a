"""NumericalFunction (one compiled specialization of a Python function) and the jit dispatcher.

A NumericalFunction is a frozen dataclass whose stages are cached properties, each computed from the previous
one on first access (docs/internals.md draws the chain):

  function_graph    trace the function on Tensor.empty placeholders: SINK of the outputs
  call_graph        symbolic simplification, then CALL(body with PARAMs, *buffers)
  schedule          kernels in execution order (a tuple of ExecItems); `memory` is the intermediate arena plan
  rendered_kernels  each kernel lowered to loops, optimized and rendered for the backend
  build             the whole program around one entry point (numfn.program_build.ProgramBuild: source, cache
                    key, manifest, compiled code); svmap's batched entry is a ProgramBuild of the same function too
  compiled          the loaded native code, from the disk cache or compiled now
  fast_registration what the C dispatcher needs to call it (None when calls cannot take the fast path)
  run               the Python path: arguments in, outputs allocated, native entry called

A warm start (the program in the disk cache) traces and then loads: everything after the trace that a call needs
(pointer constants' order, the scratch arena's size, the operation count) comes from the manifest stored with the
code, so cold and warm processes decide alike.
"""
from __future__ import annotations

import sys
import time
import types
from dataclasses import dataclass, field, replace
from functools import update_wrapper
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, cast, overload

import numpy as np

from numfn import config, debug, pickled, probes, progress
from numfn.beam import beam_width
from numfn.locks import cached_stage, lock
from numfn.dtype import DType, dtypes
from numfn import random as _random_keys
from numfn.numpy.random import generator_arguments, trace_guard
from numfn.pytree import TreeDef, flatten, node_class_hint, unflatten
from numfn.runtime import assembly, extensions
from numfn.program_build import ProgramBuild, RenderedKernel, render_kernels
from numfn.runtime.dispatch import check_out, empty, register_specialization, registration
from numfn.fast_paths import MAX_BOUND_STATICS, MAX_BOUND_TREES, BoundStatics, BoundTree, DispatcherBase, array_tree
from numfn.runtime.threads import thread_count
from numfn.errors import CompileError, RunTimeLengthError, TracedRecursionError, unsupported
from numfn.trace.aliasing import aliasing_pattern, common_bases, member_view, overlapping
from numfn.trace.subscript import identity_indices
from numfn.trace.statements import BranchRaises, unrolling
from numfn.trace.convert import converted
from numfn.interpose import tracing_numpy
from numfn.signature import ArgSpec, argument_leaf_names, describe, is_leaf, normalize_call, signature, static_key, \
    static_spec
from numfn.trace.tensor import Tensor, add_check
from numfn.trace.record import Check, TraceRecord, recording_trace
from numfn.trace.value_sizes import ValueRequest, given_values
from numfn.trace.unbound import read_bound
from numfn.value_specialization import ValueSpecialization, size_trace
from numfn.ir.uop import Ops, UOp, format_graph, graph_fingerprint, substitute, toposort

if TYPE_CHECKING:
    from numfn.codegen.layout import Layout
    from numfn.schedule import ExecItem, MemoryPlan, Schedule

_P = ParamSpec("_P")      # the parameters of a compiled function
_R = TypeVar("_R")        # what it returns


@dataclass(frozen=True, eq=False)
class NumericalFunction(ValueSpecialization):
    """`fn` specialized to one signature: argument structure `in_tree`, array specs `in_specs`, values of static
    arguments `statics` ((position or name, value) pairs), compiled for `backend`. Made by `JitFunction.specialize`.

    Example:
        nf = numfn.jit(lambda x: x + 1.0).specialize(np.ones(3))
        assert "PARAM" in nf.function_graph.pretty() and len(nf.schedule) == 1 and nf(np.ones(3)).sum() == 6
    """
    fn: Callable
    in_tree: TreeDef
    in_specs: tuple[ArgSpec, ...]
    statics: tuple = ()
    backend: str = field(default_factory=config.default_backend)   # jit's default: NUMFN_BACKEND, else llvm
    profile: bool = False   # DEBUG=2: time every kernel of every call
    unroll: int | None = None   # loops of at most this many iterations known while tracing run as Python (jit's)
    fastmath: bool = False   # jit's: float + - * may be contracted into FMAs and reassociated (KernelProgram)
    beam: int = 0   # jit's (else NUMFN_BEAM): each kernel's optimizations searched, this many kept a step (numfn.beam)
    # arguments that share memory with a written one, traced as views of one base per group (numfn.trace.aliasing)
    aliases: tuple = ()

    # values the trace asked for (numfn.trace.value_sizes), in the order it asked: it is traced with them as Python
    # numbers, one specialization per tuple of values
    sizes: tuple = ()
    # set: this is the program computing the value that request asks for (a ValueSpecialization's size_program)
    request: ValueRequest | None = None

    # ---- tracing ----------------------------------------------------------------------------------------------
    @cached_stage
    def traced(self) -> tuple[UOp, TreeDef, TraceRecord] | ValueRequest:
        """The trace (SINK of the outputs, output structure, record), or the request of a value it needs before it
        can go on: then this NumericalFunction dispatches by that value (see `size_request`)."""
        try:
            return self._trace_function()
        except ValueRequest as request:
            debug.log(1, f"tracing {self.name}: {request.what} needs a value computed from the arguments (at "
                         f"{request.where}): one specialization per value")
            return request

    @property
    def size_request(self) -> ValueRequest | None:
        """The value the trace needs before it can go on (np.zeros(x.max()), np.arange(int(n)), ...), or None. A
        function with one is a dispatcher: its `run` computes the value with a small program (`size_program`) and
        runs the specialization for it (`with_value`), traced with the value as a Python number."""
        traced = self.traced
        return traced if isinstance(traced, ValueRequest) else None

    @cached_stage
    def _trace(self) -> tuple[UOp, TreeDef, TraceRecord]:
        traced = self.traced
        if isinstance(traced, ValueRequest):
            raise traced.refusal("inside numfn's transformations (vmap, grad, ...), which trace the function once "
                                 "for all argument values")
        return traced

    def _trace_function(self) -> tuple[UOp, TreeDef, TraceRecord]:
        if self.request is not None: return size_trace(self.request)
        progress.stage("tracing")
        t0 = time.perf_counter()
        placeholders = [Tensor.empty(s.shape, s.dtype, i, s.weak) for i, s in enumerate(self.in_specs)]
        arguments: list = [p if s.value is None else s.value for p, s in zip(placeholders, self.in_specs)]
        for g in self.aliases:   # one placeholder over the group's memory; its members are views of it
            placeholders[g.slot] = Tensor.empty((g.length,), self.in_specs[g.slot].dtype, g.slot)
            for m in g.members:
                arguments[m.slot] = member_view(placeholders[g.slot], m, self.in_specs[m.slot].shape)
        params = [t.uop for t in placeholders]
        args, kwargs = self._arguments(arguments)
        with recording_trace() as record, tracing_numpy(), trace_guard(self.fn), unrolling(self.unroll), \
                given_values(self.sizes):
            # Python loops and branches on traced values become numfn's (numfn.trace.convert)
            try: out = converted(self.fn)(*args, **kwargs)
            except BranchRaises: out = None   # a branch whose every side raises: every call raises, as its checks say
            leaves, tree = flatten(out)
            leaves = [read_bound(leaf) for leaf in leaves]   # (bound where a traced condition holds: checked)
        # the outputs, then for every check its failed and payload arrays, then the run-time lengths of outputs that
        # have one (hidden outputs the dispatcher inspects)
        for leaf in leaves:   # NumPy would make an object array of it
            if not isinstance(leaf, (Tensor, np.ndarray, np.generic, int, float, complex)) and node_class_hint(leaf):
                raise TypeError(f"{self.name} returns a {type(leaf).__name__}, not an array, a number or a container "
                                f"of them{node_class_hint(leaf)}")
            if isinstance(leaf, int) and not -2**63 <= leaf < 2**64:
                raise unsupported(f"returning the Python int {leaf}, which is beyond 64 bits",
                                  "numfn's outputs are arrays of 64-bit numbers")
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
        ms = (time.perf_counter() - t0) * 1e3   # (the message is made only when logged: naming costs 0.1 ms)
        debug.log(1, lambda: f"traced {self.name} in {ms:.2f} ms")
        debug.log(5, lambda: f"function_graph of {self.name}:\n{format_graph([sink])}")
        return sink, tree, record

    @cached_stage
    def int_limits(self) -> dict[int, tuple[int, int]]:
        """{argument slot: (min, max)} for Python-int arguments the function converts to narrower integers:
        NumPy raises OverflowError for values outside, and so does the dispatcher."""
        return self._trace[2].int_limits

    @cached_stage
    def mutated_inputs(self) -> tuple[int, ...]:
        """The input slots the function writes into: the caller's arrays change (their new values are written by
        the program straight into their memory). Their writes are the last entries of the function graph."""
        return tuple(self._trace[2].mutated)

    @cached_stage
    def cut_outputs(self) -> tuple[tuple[int, int], ...]:
        """(output, axis) for every axis of an output that has a run-time length (x[mask], nonzero, x[:n]): stored at
        its bound, its length is a hidden output after the checks', and the dispatcher cuts the output to it."""
        return tuple(self._trace[2].cut)

    @cached_stage
    def checks(self) -> tuple[Check, ...]:
        """Conditions checked after every call (see numfn.trace.tensor.Check); their failed and payload arrays are the
        last outputs of the function graph, after the `out_tree` outputs."""
        return tuple(self._trace[2].checks)

    @property
    def name(self) -> str:
        shared = " with arguments sharing memory" if self.aliases else ""
        values = f" for the values {', '.join(map(repr, self.sizes))}" if self.sizes else ""
        name = f"{getattr(self.fn, '__qualname__', 'fn')}({', '.join(map(repr, self.in_specs))}){shared}{values}"
        return name if self.request is None else f"the value {self.request.what} needs in {name}"

    @cached_stage
    def function_graph(self) -> UOp:
        """The traced outputs: SINK(CONTIGUOUS(output), ...) over PARAM placeholders and captured constants."""
        return self._trace[0]

    @cached_stage
    def out_tree(self) -> TreeDef:
        return self._trace[1]

    @cached_stage
    def out_specs(self) -> tuple[tuple[tuple[int, ...], DType], ...]:
        """(shape, dtype) of every output (the function's, then the checks'), in the entry point's order."""
        outs = self.function_graph.src
        return tuple((cast(tuple[int, ...], o.shape), o.dtype) for o in outs[:len(outs) - len(self.mutated_inputs)])

    @cached_stage
    def call_graph(self) -> UOp:
        """CALL(body, *buffers): the simplified body, with PARAMs bound to input and constant buffers; complex values
        rewritten into their real and imaginary parts (codegen/complex.py)."""
        from numfn.codegen.complex import lower_complex
        from numfn.schedule import callify   # (the scheduler loads when a function is first compiled, not at import)
        function_graph = self.function_graph
        progress.stage("simplifying")
        t0 = time.perf_counter()
        # complex values become pairs of real ones here: the scheduler and codegen only see real types
        call = lower_complex(callify(function_graph, len(self.in_specs), len(self.mutated_inputs)))
        debug.log(1, f"simplified {self.name} in {(time.perf_counter() - t0) * 1e3:.2f} ms")
        debug.log(5, lambda: f"call_graph of {self.name}:\n{format_graph([call])}")
        return call

    # ---- scheduling -------------------------------------------------------------------------------------------
    @cached_stage
    def _scheduled(self) -> tuple[Schedule, MemoryPlan]:
        from numfn.schedule import create_schedule
        call_graph = self.call_graph
        progress.stage("scheduling")
        t0 = time.perf_counter()
        out = create_schedule(call_graph)
        debug.log(1, f"scheduled {self.name}: {len(out[0])} kernels in {(time.perf_counter() - t0) * 1e3:.2f} ms")
        debug.log(3, lambda: f"schedule of {self.name}:\n{out[0]}\n{out[1]}")
        return out

    @cached_stage
    def schedule(self) -> Schedule:
        """The kernels in execution order: a tuple of ExecItems that prints as a table."""
        return self._scheduled[0]

    @cached_stage
    def memory(self) -> MemoryPlan:
        """Where intermediates live: offsets in one arena, `arena_bytes` its peak size."""
        return self._scheduled[1]

    @cached_stage
    def layout(self) -> Layout:
        from numfn.schedule import make_layout
        return make_layout(self.call_graph, self.schedule, self.memory)

    # ---- rendering --------------------------------------------------------------------------------------------
    @cached_stage
    def rendered_kernels(self) -> tuple[RenderedKernel, ...]:
        top = {id(ei) for ei in self.schedule}
        return render_kernels(self.kernel_items, self.backend, self.fastmath, self.beam, self.layout, self.name,
                              frozenset(id(ei) for ei in self.kernel_items if id(ei) not in top))

    @cached_stage
    def kernel_items(self) -> tuple[ExecItem, ...]:
        """The schedule's kernels and extern calls, those inside loops and branches too, in program order."""
        from numfn.schedule import LoopKernel, all_items
        return tuple(ei for ei in all_items(self.schedule) if not isinstance(ei.kernel, LoopKernel))

    @cached_stage
    def steps(self) -> list:
        """The order the kernels run in, with the loops and branches around them (numfn.schedule.program_steps),
        and the pairs of kernels that run tile by tile (numfn.codegen.tiling)."""
        from numfn.codegen.tiling import tile_writebacks, tiled_pairs
        from numfn.schedule import program_steps
        programs = [k.program for k in self.rendered_kernels]
        steps = tile_writebacks(program_steps(self.schedule, {id(ei): k for k, ei in enumerate(self.kernel_items)}),
                                programs)
        for pair in tiled_pairs(steps): debug.log(3, f"{self.name}: {pair.describe(programs)}")
        return steps

    # ---- native code ------------------------------------------------------------------------------------------
    @cached_stage
    def cache_key(self) -> str:
        """The disk cache key of this program: the traced graph (which holds everything the function computes,
        captured constants included), the signature, backend, options, target CPU and numfn's own source. Equal
        keys mean equal programs, so a warm start skips scheduling, rendering and compiling."""
        from numfn.runtime.diskcache import cache_key
        from numfn.runtime.target import build_id, target_description
        return cache_key("numfn-program", build_id(), self.backend, target_description(self.backend),
                         f"noopt={debug.noopt()} profile={self.profile} fastmath={self.fastmath}"
                         + (f" beam={self.beam} threads={thread_count()}" if self.beam else ""), repr(self.in_specs),
                         graph_fingerprint([self.function_graph]))

    @cached_stage
    def build(self) -> ProgramBuild:
        """The whole program behind its one entry point: source, cache key, manifest, compiled code."""
        return ProgramBuild(self)

    @property
    def source(self) -> str:
        """The whole program's source text: constants, kernels, and the public entry point."""
        return self.build.source

    @property
    def entry_name(self) -> str:
        return self.build.entry_name

    @property
    def assembly(self) -> dict[str, str]:
        """The program's machine code as assembly, {function: text} (numfn.runtime.assembly): the entry point and
        the kernels the compiler did not inline into it. Compiles the source again (the cache keeps objects)."""
        return assembly.by_function(assembly.program_assembly(self.backend, self.source))

    @property
    def compiled(self) -> Any:
        """The loaded native program (numfn.runtime.LoadedCode), from the disk cache or compiled now. When the
        backend's compiler fails (see runtime/contain.py), the other backend compiles the same schedule instead:
        `fallback` is then that NumericalFunction."""
        if self.fallback is not None: return self.fallback.compiled
        if "compiled" not in self.build.__dict__:
            _ = self.cache_key   # (the trace is part of the key)
            progress.stage("cache lookup")
        try:
            return self.build.compiled
        except CompileError as e:
            if self.__dict__.get("_is_fallback"): raise
            return self._compile_fallback(e)

    fallback = None   # the NumericalFunction of the other backend, when this one's compiler failed

    def _compile_fallback(self, error: CompileError) -> Any:
        other = "c" if self.backend == "llvm" else "llvm"
        debug.log(1, f"the {self.backend} backend failed to compile {self.name}; trying the {other} backend. "
                     f"{self.backend}: {error}")
        fb = replace(self, backend=other)
        fb.__dict__["_is_fallback"] = True
        for stage in ("_trace", "call_graph", "_scheduled", "schedule", "memory", "layout"):   # backend-independent
            if stage in self.__dict__: fb.__dict__[stage] = self.__dict__[stage]
        try:
            prog = fb.compiled
        except CompileError as e2:
            raise CompileError(f"{self.name} could not be compiled: the {self.backend} backend failed ({error}), "
                               f"and so did the {other} backend ({e2})") from None
        object.__setattr__(self, "fallback", fb)
        return prog

    @property
    def manifest(self) -> dict:
        """What a caller must know about the compiled code beyond the signature (see ProgramBuild.manifest)."""
        return self.compiled.manifest

    @property
    def pointer_constants(self) -> tuple[np.ndarray, ...]:
        """The arrays passed by pointer to the compiled program, in its entry's order."""
        _ = self.compiled   # compiled first: a backend that failed hands its program to the other one
        return (self.fallback or self).build.pointer_constants

    @cached_stage
    def constant_arrays(self) -> dict[str, np.ndarray]:
        """The captured arrays of the trace by content hash (what manifests name pointer constants by)."""
        return {u.arg.data_hash: u.arg.data for u in toposort([self.function_graph])
                if u.op is Ops.BUFFER and u.arg.category == "constant"}

    @cached_stage
    def fast_registration(self) -> tuple | None:
        """The arguments of the C dispatcher's `_register` for this program, or None when its calls can never take
        the fast path (keyword, nested or static arguments); see numfn.runtime.dispatch.registration. A function
        sized by values never can: every call computes the value first."""
        return None if self.size_request is not None else registration(self)

    @cached_stage
    def leaves_registration(self) -> tuple | None:
        """fast_registration for the dispatcher of this program's argument structure, called on the leaves
        (BoundTree: arguments that are containers)."""
        return None if self.size_request is not None else registration(self, leaves=True)

    @cached_stage
    def run(self) -> Callable[..., Any]:   # (leaves, out=None)
        """The Python path over flat argument leaves (already matched to this signature)."""
        from numfn.runtime.native import pointer_table
        from numfn.runtime.threads import parallel_for_address
        if self.size_request is not None: return self.value_dispatch()
        prog = self.compiled
        entry = prog.entry
        out_specs = [(shape, dt.np) for shape, dt in self.out_specs]
        # an int beyond int64 is part of the program (ArgSpec.value): its input slot is unused
        in_specs = [(s.dtype.np, s.weak) if s.value is None else None for s in self.in_specs]
        consts = self.pointer_constants
        out_tree, name = self.out_tree, self.name
        limits = sorted(self.int_limits.items())
        int_types = self._trace[2].int_types
        timings = prog.timings() if self.profile else None

        nout = out_tree.num_leaves
        checks, written, cut = self.checks, self.mutated_inputs, self.cut_outputs
        lengths_at = nout + 2 * len(checks)

        def run(leaves: list, out=None) -> Any:
            for slot, (lo, hi) in limits:
                if not lo <= leaves[slot] <= hi: raise _int_overflow(leaves[slot], int_types.get(slot, ()))
            for slot in written: self._check_writable(leaves, slot, shared=True)
            if written and not self.aliases:   # a written argument sharing memory with another: traced as views
                groups = overlapping(leaves, written)
                if groups:
                    pattern = aliasing_pattern(leaves, groups, self._leaf_names(leaves))
                    return self._aliased(pattern).run(common_bases(leaves, pattern), out)
            if out is None: outs = [empty(shape, dt) for shape, dt in out_specs]
            else: outs = check_out(out, out_specs[:nout], leaves, consts) + \
                [empty(shape, dt) for shape, dt in out_specs[nout:]]
            ins = []
            for leaf, spec in zip(leaves, in_specs):
                if spec is None:
                    ins.append(_UNUSED)
                    continue
                dt, weak = spec
                if weak or not isinstance(leaf, np.ndarray): ins.append(np.array(leaf, dtype=dt))
                elif leaf.dtype == dt and leaf.flags.c_contiguous and leaf.flags.aligned: ins.append(leaf)
                else: ins.append(np.require(leaf, dtype=dt, requirements=("C", "A")))   # contiguous, aligned, native
            if entry(pointer_table((*outs, *ins, *consts), parallel_for_address())):
                raise MemoryError(f"{name}: could not allocate its scratch memory")
            for slot in written:   # an argument the program could not write in place (strided, byte-swapped)
                if ins[slot] is not leaves[slot]: np.copyto(leaves[slot], ins[slot], casting="unsafe")
            if timings is not None:
                debug.report_kernel_times(name, prog.manifest["kernels"], timings, prog.manifest.get("work"))
            if checks: raise_failed_checks(checks, outs[nout:])
            for k, (i, ax) in enumerate(cut):
                outs[i] = outs[i][(slice(None),) * ax + (slice(int(outs[lengths_at + k])),)]
            return unflatten(out_tree, outs[:nout])

        return run

    def _arguments(self, leaves: list) -> tuple[list, dict]:
        """The function's arguments for array leaves of this signature: the leaves in their structure, with the
        static arguments put back in their places."""
        args, kwargs = unflatten(self.in_tree, leaves)
        args, kwargs = list(args), dict(kwargs)
        for where, value in self.statics:
            if isinstance(where, int): args.insert(where, value)
            else: kwargs[where] = value
        return args, kwargs

    def _check_writable(self, leaves: list, slot: int, shared: bool = False) -> None:
        """An argument the function writes into must be a writeable NumPy array, as NumPy requires; unless `shared`,
        one sharing no memory with another argument (svmap's examples are traced as separate arrays)."""
        leaf = leaves[slot]
        if isinstance(leaf, np.ndarray) and leaf.flags.writeable:
            if shared: return
            others = [i for i, x in enumerate(leaves) if i != slot and isinstance(x, np.ndarray) and x.size and
                      leaf.size and np.may_share_memory(leaf, x) and np.shares_memory(leaf, x)]
            if not others: return
        names = self._leaf_names(leaves)
        where = names[slot]
        if not isinstance(leaf, np.ndarray):
            raise TypeError(f"argument {where}: the function writes into it, so it must be a NumPy array, not "
                            f"{type(leaf).__name__}")
        if not leaf.flags.writeable: raise ValueError(f"assignment destination is read-only (argument {where})")
        raise unsupported(f"writing into argument {where}, which shares memory with argument {names[others[0]]}",
                          "numfn compiles the function for separate arrays; pass a copy of one of them")

    def _leaf_names(self, leaves: list) -> list[str]:
        """How error messages name each argument leaf ('a', 'xs[1]', ...)."""
        args, kwargs = self._arguments(list(leaves))
        static = (tuple(w for w, _ in self.statics if isinstance(w, int)),
                  tuple(w for w, _ in self.statics if isinstance(w, str)))
        return argument_leaf_names(self.fn, tuple(args), kwargs, static)

    @cached_stage
    def _aliased_specializations(self) -> dict:
        return {}

    def _aliased(self, pattern: tuple) -> NumericalFunction:
        """This function specialized further for arguments sharing memory as `pattern` says (numfn.trace.aliasing), its
        native code ready (compiled on first use, once however many threads ask)."""
        found = self._aliased_specializations.get(pattern)
        if found is not None: return found
        with _ALIASED_LOCK:
            found = self._aliased_specializations.get(pattern)
            if found is None:
                found = replace(self, aliases=pattern)
                _ = found.run
                kept = self._aliased_specializations
                # a bounded set in memory (the disk cache keeps every one): f(x[k:], x) for many k compiles each
                if len(kept) >= ALIASED_KEPT: kept.pop(next(iter(kept)))
                kept[pattern] = found
        return found

    @cached_stage
    def key(self) -> tuple:
        """The signature key this NumericalFunction was made for (see numfn.signature)."""
        return self.in_tree, self.in_specs, tuple((where, static_key(v)) for where, v in self.statics)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the compiled code on arguments of this signature: a checked slow path (it computes the arguments'
        signature, about 10 us, and raises TypeError when it differs). Calls through the JitFunction are the fast
        path: the C dispatcher matches arguments against its compiled specializations without computing one."""
        nums = tuple(w for w, _ in self.statics if isinstance(w, int))
        names = tuple(w for w, _ in self.statics if isinstance(w, str))
        args, kwargs = normalize_call(self.fn, args, kwargs)
        key, leaves, statics = signature(self.fn, args, kwargs, (nums, names))
        if key != self.key:
            raise TypeError(f"{self.name} was specialized for {describe(self.in_tree, self.in_specs, self.statics)}, "
                            f"called with {describe(key[0], key[1], statics)}")
        self.check_values(leaves)
        return self.run(leaves)


_ALIASED_LOCK = lock()   # compiles of aliased specializations (rare), one at a time
ALIASED_KEPT = 16   # aliased specializations kept in memory per signature (oldest dropped first)


def _writeback(last: UOp, param: UOp) -> UOp:
    """The last version of an input the function wrote into, as writes into the input's own memory: its chain of
    SCATTERs when it starts at the input, else one write of the whole new value (x[...] = v; x += 1)."""
    u = last
    while u.op is Ops.SCATTER: u = u.src[0]
    if u is param: return last
    indices = identity_indices(cast(tuple[int, ...], param.shape))
    return UOp(Ops.SCATTER, last.dtype, (param, last, *indices), (None, True, False))


def _one_element_call(leaves: list) -> bool:
    """Whether a call's arguments are arrays of one element each (at least one of them an ndarray), as Dask's
    dtype probe passes: numfn.probes.folded_result may answer it without compiling."""
    arrays = [leaf for leaf in leaves if isinstance(leaf, np.ndarray)]
    return bool(arrays) and all(a.size == 1 for a in arrays) and all(
        isinstance(leaf, (np.ndarray, np.generic, bool, int, float)) for leaf in leaves)


def _shares_traced_memory(leaves: list, written) -> bool:
    """Whether a written traced argument has the memory of another argument (a view of one base, or the same)."""
    def root(t): return id(t.base if t.base is not None else t) if isinstance(t, Tensor) else None
    roots = [root(t) for t in leaves]
    return any(roots[w] is not None and roots.count(roots[w]) > 1 for w in written)


_UNUSED = np.zeros(1)   # what an input slot the program does not read points to


def raise_failed_checks(checks: tuple[Check, ...], arrays: list) -> None:
    """Raise the error of the first check that failed; `arrays` holds each check's failed and payload arrays."""
    for k, c in enumerate(checks):
        failed, payload = arrays[2 * k], arrays[2 * k + 1]
        if failed.any(): raise c.error(int(payload.reshape(-1)[int(np.argmax(failed.reshape(-1)))]))


def _int_overflow(value: int, types) -> OverflowError:
    """NumPy's error for a Python int that does not fit an integer type the function converts it to: the first
    of `types` (in the order the trace converted it) it does not fit, as NumPy raises at the first operation."""
    crossed = [d for d in types if not d.min <= value <= d.max]
    return OverflowError(f"Python integer {value} out of bounds for {crossed[0].name if crossed else 'int64'}")


# ---------------------------------------------------------------------------------------------------------------
# jit

class JitFunction(Generic[_P, _R], DispatcherBase):   # Generic first: the base's __init_subclass__ ends the chain
    """A Python function compiled per signature (what `numfn.jit` returns): positional arrays and scalars of a
    signature seen before go straight to native code (runtime/_dispatch.c), other calls through `_dispatch_miss`.
    `out=` passes preallocated outputs. This class must not define `__call__`, or calls lose the C fast path. Its
    constructor takes `numfn.jit`'s arguments.

    Example:
        f = numfn.JitFunction(lambda x: x * 2.0 + 1.0)
        assert (f(np.arange(3.0)) == [1.0, 3.0, 5.0]).all() and len(f.specializations) == 1
    """

    if TYPE_CHECKING:   # for checkers only (see above): a call takes the compiled function's arguments
        def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...

    def __get__(self, instance, owner=None):
        """A jitted function in a class body is a method: `obj.f(x)` calls it with `obj` first, as a function's."""
        return self if instance is None else types.MethodType(self, instance)

    def __init__(self, fn: Callable[_P, _R], static_argnums: int | Sequence[int] = (),
                 static_argnames: str | Sequence[str] = (), backend: str | None = None,
                 unroll: int | None = None, progress: bool = True, fastmath: bool = False,
                 beam: int | None = None) -> None:
        update_wrapper(self, fn, updated=())   # copying fn.__dict__ would overwrite our own attributes
        self.fn = fn
        self._static = static_spec(static_argnums, static_argnames, fn)
        self._progress = progress
        self._backend = backend
        if unroll is not None and (not isinstance(unroll, int) or isinstance(unroll, bool) or unroll < 0):
            raise ValueError(f"unroll must be a non-negative int (the longest loop to unroll), got {unroll!r}")
        self._unroll = unroll
        if not isinstance(fastmath, bool): raise TypeError(f"fastmath must be True or False, got {fastmath!r}")
        self._fastmath = fastmath
        self._beam = beam_width(beam) if beam is not None else None   # None: NUMFN_BEAM when compiling
        # (signature key, backend, profile, fastmath, beam) -> NumericalFunction
        self._specializations: dict = {}
        self._ready: set = set()           # the keys of those whose native code is loaded
        self._bound_statics: dict = {}     # static argument keys -> BoundStatics (their calls' fast path)
        self._bound_trees: dict = {}       # argument structures -> BoundTree (the fast path of calls on containers)
        self._probed: set = set()          # id()s of specializations a one-element call was folded for (probes)
        self._sizing_ints: tuple[int, ...] = ()   # positions of Python ints that size arrays (_learn_sizing_ints)
        self._lock = lock()   # a forked child finds it released (numfn.locks)

    @property
    def backend(self) -> str:
        return self._backend or debug.default_backend()

    @property
    def static_arguments(self) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """The (positions, names) of the static arguments: jit's static_argnums and static_argnames, each completed
        from the other."""
        return self._static

    @property
    def fastmath(self) -> bool:
        """Whether float arithmetic may be contracted into FMAs and reassociated (jit's `fastmath`)."""
        return self._fastmath

    def specialize(self, *args: Any, **kwargs: Any) -> NumericalFunction:
        """The NumericalFunction these arguments select; its stages are computed when first accessed."""
        args, kwargs = generator_arguments(*normalize_call(self.fn, args, kwargs), draw=False)
        key, leaves, statics = signature(self.fn, args, kwargs, self._static)
        # a function sized by values (np.zeros(x.max())): the specialization for these arguments' values
        return self.specialization(key, statics, compile=False).resolved(leaves)

    def specialization(self, key: tuple, statics: tuple, compile: bool = True) -> NumericalFunction:
        """The NumericalFunction for a signature key (see numfn.signature), made on first use; with `compile`, its
        native code is ready when this returns. Threads asking at once trace and compile once."""
        full = (key, self.backend, debug.level() >= 2, self._fastmath, beam_width(self._beam))
        nf = self._specializations.get(full)
        if nf is not None and (not compile or full in self._ready): return nf
        with self._lock:
            nf = self._specializations.get(full)
            if nf is None:
                extensions.warn_missing()   # once per process, if numfn was installed without them
                nf = NumericalFunction(self.fn, key[0], key[1], statics, full[1], full[2], self._unroll,
                                       self._fastmath, full[4])
                self._specializations[full] = nf
            if compile and full not in self._ready:
                try:
                    with progress.compiling(nf.name, self._progress):
                        _ = nf.run   # trace, compile and load under the lock
                except BaseException:
                    del self._specializations[full]   # a signature that fails to compile is not kept
                    raise
                self._ready.add(full)
        return nf

    def _statics_for(self, args: tuple) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """The static arguments of a call: jit's, and the positions of Python ints that size arrays where this
        call passes Python ints there (see _learn_sizing_ints)."""
        sizing = self._sizing_ints
        if sizing and len(args) > sizing[-1] and all(type(args[i]) is int for i in sizing):
            return tuple(sorted({*self._static[0], *sizing})), self._static[1]
        return self._static

    def _learn_sizing_ints(self, nf: NumericalFunction | None, args: tuple, statics: tuple,
                           error: BaseException | None = None) -> bool:
        """Whether Python ints passed by position decide this call's program, and have become static arguments for
        calls passing Python ints there: `nf`'s trace asked for a value (np.zeros(n)) computed from them alone, or
        its trace failed with `error`: a recursion too deep, which they may end while tracing (`def vcycle(u, f,
        level): if level == 0: ...`), or an operation refused on an array of run-time length they may size
        (`idx[:, :k]` as an index). Each value compiles once either way (numfn.value_specialization), but a static
        argument's calls take the C fast path (2-5 us), a dispatcher by value the Python path (about 90 us)."""
        ints = {i for i, a in enumerate(args) if type(a) is int} - set(self._sizing_ints)
        if not ints: return False
        if error is not None:
            if not isinstance(error, (TracedRecursionError, RunTimeLengthError)): return False
            positions, why = ints, "they end a recursion" if isinstance(error, TracedRecursionError) else "they size"
        else:
            assert nf is not None
            request = nf.size_request
            if request is None: return False
            static_positions = {p for p, _ in statics if isinstance(p, int)}
            leaf_position: dict[int, int] = {}
            for i, a in enumerate(args):
                if i in static_positions: continue
                for _ in flatten(a, is_leaf=is_leaf)[0]: leaf_position[len(leaf_position)] = i
            read = {u.arg[0] for u in request.value.toposort() if u.op is Ops.PARAM}
            positions = {leaf_position.get(k, -1) for k in read}
            if not positions or not positions <= ints: return False
            why = "they size its arrays"
        self._sizing_ints = tuple(sorted({*self._sizing_ints, *positions}))
        name = getattr(self.fn, "__qualname__", "the function")
        debug.log(1, f"{name}: the Python ints at positions {sorted(positions)} are static arguments from now on "
                     f"({why})")
        return True

    def _dispatch_miss(self, *args, **kwargs):
        positions = self._statics_for(args)[0]
        if positions and positions[0] >= 0 and len(args) > positions[-1] and (not kwargs or list(kwargs) == ["out"]):
            # static arguments passed by position: the fast path of their values' dispatcher, over the others
            try:
                key = tuple(static_key(args[i]) for i in positions)
                bound = self._bound_statics.get(key)
            except TypeError:   # unhashable: the signature's error, naming the argument
                return self._dispatch_full(args, kwargs)
            if bound is None:
                if len(self._bound_statics) >= MAX_BOUND_STATICS: self._bound_statics.clear()
                bound = self._bound_statics[key] = BoundStatics(self, positions, [args[i] for i in positions])
            return bound(*[a for i, a in enumerate(args) if i not in positions], **kwargs)
        if not positions and (not kwargs or list(kwargs) == ["out"]) and \
                any(type(a) is not np.ndarray and type(a) not in (float, int, bool) for a in args):
            # containers among the arguments: the fast path of their structure's dispatcher, over the leaves
            leaves: list = []
            shape = array_tree(args, leaves)   # (tuples, lists and dicts of arrays: cheaper than flatten)
            by_tree = self._bound_trees.get(shape) if shape is not None else None
            if by_tree is None:
                leaves, tree = flatten((tuple(args), {}), is_leaf=is_leaf)
                if all(c.kind == "leaf" for c in tree.children[0].children):   # no container after all
                    return self._dispatch_full(args, kwargs)
                by_tree = self._bound_trees.get(tree)
                if by_tree is None:
                    if len(self._bound_trees) >= MAX_BOUND_TREES: self._bound_trees.clear()
                    by_tree = self._bound_trees[tree] = BoundTree(self, tree)
                if shape is not None: self._bound_trees[shape] = by_tree
            return by_tree(*leaves, **kwargs)
        return self._dispatch_full(args, kwargs)

    def _dispatch_full(self, args: tuple[Any, ...], kwargs: dict, bound: BoundStatics | BoundTree | None = None) \
            -> Any:
        """A call the fast path did not take: find (or compile) its specialization, register it on the fast path
        (this dispatcher's, or with static arguments the dispatcher `bound` of their values), and run it."""
        out = kwargs.pop("out", None)
        if kwargs:   # by the function's parameters: f(x, y=x) is the specialization of f(x, x)
            args, kwargs = normalize_call(self.fn, args, kwargs)
            if not kwargs:   # the fast path's now
                call: Any = self
                return call(*args) if out is None else call(*args, out=out)
        args, kwargs = generator_arguments(args, kwargs)   # a numpy Generator argument becomes a key drawn from it
        key, leaves, statics = signature(self.fn, args, kwargs, self._statics_for(args))
        if any(isinstance(leaf, Tensor) for leaf in leaves):   # called while another function is traced
            if out is not None: raise unsupported("out= in a call inside a traced function")
            callee = self.specialization(key, statics, compile=False)
            if callee.size_request is not None:   # sized by values: the caller's trace asks for them
                return converted(self.fn)(*args, **kwargs)
            written = callee.mutated_inputs
            if written and _shares_traced_memory(leaves, written):
                # its own trace took the arguments for separate arrays: traced again here, on the caller's views
                return converted(self.fn)(*args, **kwargs)
            return self._splice(key, statics, leaves)
        if out is None and any(isinstance(leaf, np.ndarray) and leaf.size == 0 for leaf in leaves):
            empty = probes.empty_result(self.specialization(key, statics, compile=False))   # compiles nothing
            if empty is not None: return empty
        elif out is None and _one_element_call(leaves):   # a probe (Dask's 1x1 call): folded once, not compiled
            traced = self.specialization(key, statics, compile=False)
            if id(traced) not in self._probed:
                self._probed.add(id(traced))   # (called again with this signature: compiled)
                folded = probes.folded_result(traced, leaves)
                if folded is not None: return folded
        again = {} if out is None else {"out": out}
        try:
            nf = self.specialization(key, statics)
        except (TracedRecursionError, RunTimeLengthError) as e:
            before = self._sizing_ints
            if kwargs or not self._learn_sizing_ints(None, args, statics, e): raise
            try: return self._dispatch_miss(*args, **again)
            except type(e):   # the ints were not what made it (x[mask]'s length is data): as they were
                self._sizing_ints = before
                raise
        if not kwargs and self._learn_sizing_ints(nf, args, statics):
            return self._dispatch_miss(*args, **again)   # with those ints static: the fast path from the next call
        if not nf.profile:   # DEBUG=2 calls stay on the Python path to report
            if isinstance(bound, BoundTree):
                if bound.tree == key[0]: register_specialization(bound, nf)
            elif not nf.statics: register_specialization(self, nf)
            elif bound is not None and bound.values_key == key[2]: register_specialization(bound, nf)
        return nf.run(leaves, out)

    def _splice(self, key, statics, leaves: list):
        """This function's own trace for the arguments' signature, with its inputs bound to the caller's traced
        values: the call becomes part of the caller's graph (and fuses with it), and is traced only once."""
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
            from numfn.trace.dynamic import DynTensor
            outs[i] = DynTensor(outs[i].uop, lengths=tuple(ls))
        return unflatten(nf.out_tree, outs[:nout])

    # ---- pickling and copying: by reference, as Python pickles functions -------------------------------------------
    def __reduce__(self) -> str | tuple[Any, ...]:
        # the module attribute this function is published under (the usual @jit), when it is this object: the
        # receiving process imports the module; otherwise the Python function and the options, which rebuild it
        # there once per process (numfn.pickled: a Dask worker's later tasks reuse it and its compiled code)
        module = sys.modules.get(getattr(self, "__module__", None) or "")
        found: Any = module
        for part in (getattr(self, "__qualname__", None) or "<none>").split("."):
            found = getattr(found, part, None)
        if found is self: return self.__qualname__
        return pickled.rebuild_with_source, (pickled.token(self), pickled.source_of(self.fn), JitFunction, self.fn,
                                             self._static[0], self._static[1], self._backend, self._unroll,
                                             self._progress, self._fastmath, self._beam)

    def __copy__(self) -> JitFunction:
        return self   # immutable as far as its callers can tell, like a Python function

    def __deepcopy__(self, memo) -> JitFunction:
        return self

    @property
    def specializations(self) -> tuple[NumericalFunction, ...]:
        """The NumericalFunctions compiled so far, one per signature seen."""
        return tuple(self._specializations.values())

    def __repr__(self) -> str:
        return f"<numfn.jit {getattr(self.fn, '__qualname__', self.fn)}: {len(self._specializations)} specializations>"


@overload
def jit(fn: Callable[_P, _R], *, static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
        backend: str | None = None, unroll: int | None = None, progress: bool = True,
        fastmath: bool = False, beam: int | None = None) -> JitFunction[_P, _R]: ...


@overload
def jit(fn: None = None, *, static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
        backend: str | None = None, unroll: int | None = None, progress: bool = True,
        fastmath: bool = False, beam: int | None = None) -> Callable[[Callable[_P, _R]], JitFunction[_P, _R]]: ...


def jit(fn: Callable[_P, _R] | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), backend: str | None = None, unroll: int | None = None,
        progress: bool = True, fastmath: bool = False,
        beam: int | None = None) -> JitFunction[_P, _R] | Callable[[Callable[_P, _R]], JitFunction[_P, _R]]:
    """Compile `fn` to native code, once per signature (argument shapes, dtypes and static values): `@jit` or
    `@jit(static_argnames=("n",), backend="c")`.

    Args:
        fn: the NumPy-style function; None returns a decorator taking it.
        static_argnums: positions of arguments passed to `fn` as Python values (hashable; one compile per value).
        static_argnames: the same, by parameter name (each completes the other).
        backend: "llvm" or "c" (default: NUMFN_BACKEND, else "llvm").
        unroll: Python loops whose trip count is known while tracing and at most this (default 4) run as Python,
            their body traced per iteration; longer ones compile to native loops.
        progress: False silences the progress line of compilations over a second (NUMFN_PROGRESS=0: all of them).
        fastmath: True lets float arithmetic be contracted into FMAs and reassociated (faster; differs from
            NumPy by rounding). By default elementwise results equal NumPy's bit for bit (docs/performance.md).
        beam: N searches each kernel's optimizations by timing candidates, keeping N a step, and remembers the
            winners in the disk cache (default: NUMFN_BEAM, else 0: the heuristics; docs/performance.md).

    Returns:
        A JitFunction (or, with `fn` None, a decorator making one): called like `fn`, it returns NumPy arrays.

    Example:
        f, x = numfn.jit(lambda x, y: np.sin(x) * y + x.sum(axis=0)), np.ones((4, 3))
        np.testing.assert_allclose(f(x, 2.0), np.sin(x) * 2.0 + x.sum(axis=0))
    """
    if fn is None:
        return lambda f: JitFunction(f, static_argnums, static_argnames, backend, unroll, progress, fastmath, beam)
    return JitFunction(fn, static_argnums, static_argnames, backend, unroll, progress, fastmath, beam)


_random_keys.compiler = jit   # numfn.random's samplers called outside a compiled function compile themselves with it
