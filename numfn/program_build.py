"""The native program of a NumericalFunction's kernels behind one entry point (`ProgramBuild`: rendered, named,
keyed, compiled or loaded from the disk cache), its kernels built and rendered (`render_kernels`), and what
rendering needs of the backends (`renderer_for`, `unique_names`). jit's programs are `NumericalFunction.build`;
svmap's batched entry is another ProgramBuild of the same function (numfn.transforms)."""
from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from numfn import config, debug, progress
from numfn.config import BACKENDS
from numfn.errors import CompileError
from numfn.locks import cached_stage
from numfn.runtime import assembly
from numfn.runtime.threads import PARALLEL_MIN_OPS

ENTRY_PLACEHOLDER = "__NUMFN_ENTRY__"


@dataclass(frozen=True)
class RenderedKernel:
    name: str
    program: Any     # codegen.program.KernelProgram, or schedule.ExternProgram for an extern call
    source: str


# a kernel that this many kernels of the program compute (it and the others calling it) is `shared` (kept out of line
# by the renderers): not fewer, where inlining every copy costs little compile time and may run faster (the heat
# benchmark's loop, whose first iteration runs on its own: 5% faster with both copies inlined; the residual block of
# benchmarks/compile_programs.py, three convolutions: no LLVM time saved). Kernels in loops stay inlinable too
SHARED_CALLS = 4


def render_kernels(items: Sequence, backend: str, fastmath: bool, beam: int, layout: Any, function: str,
                   in_loops: frozenset[int] = frozenset()) -> tuple[RenderedKernel, ...]:
    """The kernels and extern calls of a NumericalFunction (its `kernel_items`, in program order) built and rendered
    for `backend`. A kernel computing what an earlier one computes (an equal codegen.program.kernel_key) calls it;
    the kernel so called is marked `shared` (the renderers keep it out of line) when SHARED_CALLS kernels compute it,
    none of them in a loop or branch (`in_loops`: the ids of those items): inlined into a loop's body, a kernel's
    code is optimized with its neighbours' (the cavity flow's loop ran 1.2x faster so)."""
    from numfn.beam.tuner import FunctionTuner
    from numfn.codegen.program import KernelProgram, build_program, kernel_key, with_params
    progress.stage("rendering kernels", len(items))
    t0 = time.perf_counter()
    out = []
    renderer = renderer_for(backend)
    built: dict[tuple, KernelProgram] = {}   # kernel_key -> the program of the first kernel with it
    tuner = FunctionTuner(beam, backend, fastmath, len(items)) if beam else None
    keys = [None if ei.lowered is None else kernel_key(ei.kernel.buffers, ei.lowered,
                                                        ei.op_count >= PARALLEL_MIN_OPS, fastmath) for ei in items]
    uses = Counter(keys)
    looped = {key for ei, key in zip(items, keys) if id(ei) in in_loops}
    for ei, name, key in zip(items, unique_names([ei.kernel.name for ei in items]), keys):
        if key is None:   # an extern call (numfn.extern)
            from numfn.schedule import ExternKernel, build_extern_program
            assert isinstance(ei.kernel, ExternKernel)   # loops are not in kernel_items
            extern = build_extern_program(replace(ei.kernel, name=name), layout.externs)
            out.append(RenderedKernel(extern.name, extern, renderer.render_extern(extern)))
            progress.kernels_done(len(out))
            continue
        parallel = ei.op_count >= PARALLEL_MIN_OPS
        first = built.get(key)
        if first is not None:   # computes what an earlier kernel computes: built and compiled once
            prog = with_params(first, name, ei.kernel.buffers)
            out.append(RenderedKernel(prog.name, prog, renderer.render_forward(prog, first.name)))
            progress.kernels_done(len(out))
            continue
        options = None if tuner is None else tuner.options(name, ei.kernel.buffers, ei.lowered, parallel, len(out) + 1,
                                                           ei.op_count, ei.bytes_moved)
        prog = build_program(name, ei.kernel.buffers, ei.lowered, parallel, fastmath, options)
        if uses[key] >= SHARED_CALLS and key not in looped: prog = replace(prog, shared=True)
        built[key] = prog
        out.append(RenderedKernel(prog.name, prog, renderer.render_kernel(prog)))
        progress.kernels_done(len(out))
    same = len(out) - len(built) - sum(not isinstance(k.program, KernelProgram) for k in out)
    debug.log(1, f"rendered {len(out)} kernels of {function} in {(time.perf_counter() - t0) * 1e3:.2f} ms"
              + (f" ({same} equal to an earlier one: they call it)" if same else ""))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class ProgramBuild:
    """The native program of a NumericalFunction's kernels behind one entry point, as stages: `template` (the
    rendered program with a placeholder entry name) -> `entry_name` -> `source` -> `cache_key` -> `manifest` ->
    `compiled` -> `pointer_constants`.

    `batched` None is the plain entry `int entry(void **buffers)` (jit). A tuple (one flag per input: does it
    advance with the batch?) is svmap's entry `int entry(int64 start, int64 end, void **buffers)`, which loops
    over examples start..end-1 in native code around the same kernels."""
    nf: Any   # the numfn.function.NumericalFunction whose kernels it holds (that module builds on this one)
    batched: tuple[bool, ...] | None = None

    @property
    def nints(self) -> int:
        """How many int64 arguments the entry takes before the buffer table."""
        return 0 if self.batched is None else 2

    @cached_stage
    def template(self) -> str:
        nf = self.nf
        return renderer_for(nf.backend).render_program(
            ENTRY_PLACEHOLDER, [(k.program, k.source) for k in nf.rendered_kernels], nf.layout, self.batched,
            profile=nf.profile and self.batched is None, steps=nf.steps)

    @cached_stage
    def entry_name(self) -> str:
        """The entry point's symbol: named after the program's content, so equal programs share it (and different
        ones never clash in one process)."""
        return "numfn_" + hashlib.sha256(self.template.encode()).hexdigest()[:20]

    @cached_stage
    def source(self) -> str:
        src = self.template.replace(ENTRY_PLACEHOLDER, self.entry_name)
        what = self.nf.name if self.batched is None else f"svmap({self.nf.name})"
        debug.log(4, lambda: f"source of {what}:\n{src}")
        return src

    @cached_stage
    def cache_key(self) -> str:
        if self.batched is None: return self.nf.cache_key
        from numfn.runtime.diskcache import cache_key
        return cache_key("numfn-batched", self.nf.cache_key, repr(self.batched))

    @cached_stage
    def manifest(self) -> dict:
        """What a caller must know about the compiled code beyond the signature, stored with it in the cache (a
        warm start reads it instead of scheduling): `constants`, the pointer constants in entry order by content
        hash; `arena_bytes`, the scratch arena's size; `ops`, the ALU operations of one run; `externs`, the library
        routines it calls (numfn.extern), if any; with DEBUG=2 (plain entry only) `kernels`, the kernel names its
        timings are reported under."""
        nf = self.nf
        manifest = {"constants": [b.data_hash for b, _, _ in nf.layout.pointer_constants],
                    "arena_bytes": int(nf.memory.arena_bytes), "ops": int(sum(ei.op_count for ei in nf.schedule))}
        if nf.layout.externs: manifest["externs"] = list(nf.layout.externs)
        if nf.profile and self.batched is None:   # a pair run tile by tile is timed as one: named as one
            from numfn.codegen.tiling import tiled_pairs
            names = [k.name for k in nf.rendered_kernels]
            for pair in tiled_pairs(nf.steps):
                names[pair.first] = f"{names[pair.first]} + {names[pair.second]} (tiles)"
                names[pair.second] = f"{names[pair.second]} (in the line above)"
            manifest["kernels"] = names
            # each kernel's work per call (ALU operations, bytes of its buffers): its report names a kernel whose
            # time is far above what that work needs
            manifest["work"] = [[int(ei.op_count), int(ei.bytes_moved)] for ei in nf.kernel_items]
        return manifest

    @cached_stage
    def compiled(self) -> Any:
        """The loaded native program (numfn.runtime.LoadedCode), from the disk cache or compiled now."""
        from numfn.runtime import load_or_compile, write_perf_map
        nf = self.nf
        t0 = time.perf_counter()
        prog, compiled = load_or_compile(nf.backend, self.cache_key, self.nints, self._build, self._fits)
        ms = (time.perf_counter() - t0) * 1e3
        label = lambda: nf.name if self.batched is None else f"svmap({nf.name})"   # noqa: E731 - made when used
        debug.log(1, lambda: f"{'compiled' if compiled else 'loaded'} {label()} ({nf.backend}) "
                             f"{'' if compiled else 'from the cache '}in {ms:.2f} ms")
        if config.perf_map(): write_perf_map(prog, label())   # profilers can name generated code
        return prog

    def _build(self) -> tuple[str, str, dict]:
        """What compiling needs: (source, entry name, manifest). A renderer that cannot express the schedule is a
        failure of this backend (CompileError); errors of tracing or scheduling are the program's."""
        if self.nf.backend == "llvm":
            from numfn.runtime import orcjit as llvm
            llvm.prepare()
        _ = self.nf.layout
        try:
            source, entry, manifest = self.source, self.entry_name, self.manifest
            progress.stage(f"compiling {len(self.nf.rendered_kernels)} kernels ({self.nf.backend})")
            progress.work(source.count("\n"))   # what the native compiler gets: lines of LLVM IR or C
            if config.dump_assembly(): assembly.dump(self.nf.backend, source, self.nf.name)
            return source, entry, manifest
        except NotImplementedError as e:
            raise CompileError(f"the {self.nf.backend} renderer failed: {e}") from e

    def _fits(self, manifest: dict) -> str | None:
        """Why a cached manifest cannot belong to this program (None: it can)."""
        if not set(manifest["constants"]) <= self.nf.constant_arrays.keys(): return "unknown pointer constants"
        if self.nf.profile and self.batched is None and "kernels" not in manifest: return "no kernel names"
        return None

    @cached_stage
    def pointer_constants(self) -> tuple[np.ndarray, ...]:
        """The arrays passed by pointer to the compiled program, in the order its manifest lists them; then its
        externs table, if it calls library routines (numfn.extern)."""
        data, manifest = self.nf.constant_arrays, self.compiled.manifest
        consts = tuple(data[h] for h in manifest["constants"])
        if manifest.get("externs"):
            from numfn.extern import extern_table
            consts += (extern_table(manifest["externs"]),)
        return consts


def unique_names(names: Sequence[str]) -> list[str]:
    """Kernel names made unique within one program: kernels inside loops and branches are scheduled apart and may
    repeat a name. The first of each name keeps it; a repeat gets the first `name_k` that is no kernel's name (a
    shape's digits: `E_1` twice must not become the name of the 1x1 kernel `E_1_1`)."""
    taken, out = set(names), []
    used: set[str] = set()
    for name in names:
        if name in used:
            k = 1
            while f"{name}_{k}" in taken or f"{name}_{k}" in used: k += 1
            name = f"{name}_{k}"
        used.add(name)
        out.append(name)
    return out


def renderer_for(backend: str):
    """The renderer module of a backend: numfn.renderer.c or numfn.renderer.llvm (imported on first use)."""
    if backend == "c":
        from numfn.renderer import c
        return c
    if backend == "llvm":
        from numfn.renderer import llvm
        return llvm
    raise ValueError(f"unknown backend {backend!r} (choose from {BACKENDS})")
