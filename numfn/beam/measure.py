"""Building and timing one kernel with given optimizations, alone, on data of its own: `KernelBench`.

Each candidate (codegen/opt.py's Options) is built as the kernel's program (codegen/program.py's build_program),
rendered and compiled as a program of its own whose entry point takes the kernel's buffers, and run on buffers of
the kernel's real shapes and dtypes, filled once with random data (never the user's arrays): floats in [0.5, 1.5),
integers in [0, 8) (indices are clamped by the generated code, and run-time loop lengths stay small), booleans at
random; captured constants keep their values (an FFT's tables). Every run starts from that data (a kernel may
write a buffer it reads), and the buffers it writes are its outputs, which the search compares with the
heuristic's. Its time is the fastest of repeated runs: at least MIN_RUNS, until MIN_SECONDS have passed.
"""
from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from numfn.codegen.layout import Layout
from numfn.codegen.lower import LoweredKernel
from numfn.codegen.opt import Options
from numfn.codegen.program import KernelProgram, build_program
from numfn.ir.uop import Ops, UOp

MIN_RUNS = 3
MAX_RUNS = 200
MIN_SECONDS = 0.02
ENTRY_PLACEHOLDER = "__NUMFN_BEAM_ENTRY__"

if TYPE_CHECKING:
    from numfn.runtime import LoadedCode


def renderer_module(backend: str):
    """The renderer of a backend (numfn.renderer.llvm or numfn.renderer.c)."""
    if backend == "c":
        from numfn.renderer import c
        return c
    from numfn.renderer import llvm
    return llvm


def search_data(params: tuple[UOp, ...], seed: int = 0) -> list[np.ndarray]:
    """Random buffers of the kernel's parameters' shapes and dtypes (see the module docstring)."""
    rng = np.random.default_rng(seed)
    out = []
    for p in params:
        dt, buf = p.dtype.np, p.arg
        size = max(buf.size, 1)
        data = np.ascontiguousarray(buf.data) if buf.category == "constant" and buf.data is not None else None
        if data is not None and data.nbytes == size * dt.itemsize: out.append(data.reshape(-1).view(dt).copy())
        elif dt.kind == "b": out.append(rng.integers(0, 2, size).astype(dt))
        elif dt.kind in "iu": out.append(rng.integers(0, 8, size).astype(dt))
        else: out.append((rng.random(size) + 0.5).astype(dt))
    return out


class KernelBench:
    """One kernel (`params`, `lowered`, as the schedule made them) built with any Options and timed on its own
    data. `evaluate(options)` -> (outputs, seconds); a second evaluate of the same options times it again without
    building it again. `timer(run) -> seconds` may replace the clock (tests)."""

    def __init__(self, name: str, params: tuple[UOp, ...], lowered: LoweredKernel, backend: str, fastmath: bool,
                 timer: Callable[[Callable[[], None]], float] | None = None):
        self.name, self.params, self.lowered, self.backend, self.fastmath = name, params, lowered, backend, fastmath
        self.data = search_data(params)
        self.timer = timer or fastest_run
        self.compiled: dict[Options, LoadedCode] = {}   # the code of candidates evaluated, kept to time them again
        self.programs: dict[Options, KernelProgram] = {}

    def program(self, options: Options) -> KernelProgram:
        prog = self.programs.get(options)
        if prog is None:
            prog = build_program(self.name, self.params, self.lowered, fastmath=self.fastmath, options=options)
            self.programs[options] = prog
        return prog

    def compile(self, options: Options) -> LoadedCode:
        from numfn.runtime import compile_program
        code = self.compiled.get(options)
        if code is not None: return code
        prog = self.program(options)
        renderer = renderer_module(self.backend)
        written = {u.src[0] for u in prog.uops if u.op is Ops.STORE}
        layout = Layout(tuple((p.arg, p.dtype) for p in self.params if p in written),
                        tuple((p.arg, p.dtype) for p in self.params if p not in written), (), (), (), 0)
        template = renderer.render_program(ENTRY_PLACEHOLDER, [(prog, renderer.render_kernel(prog))], layout)
        entry = "numfn_beam_" + hashlib.sha256(template.encode()).hexdigest()[:20]
        if self.backend == "llvm":
            from numfn.runtime import orcjit
            orcjit.prepare()
        code = compile_program(self.backend, template.replace(ENTRY_PLACEHOLDER, entry), entry)
        self.compiled[options] = code
        return code

    def evaluate(self, options: Options) -> tuple[list[np.ndarray], float]:
        from numfn.runtime.native import pointer_table
        from numfn.runtime.threads import parallel_for_address
        code = self.compile(options)
        prog = self.program(options)
        written = {u.src[0] for u in prog.uops if u.op is Ops.STORE}
        order = [k for k, p in enumerate(self.params) if p in written] + \
            [k for k, p in enumerate(self.params) if p not in written]
        buffers = [self.data[k].copy() for k in order]
        pool = parallel_for_address() if prog.parallel is not None else 0
        table = pointer_table(buffers, pool)
        entry = code.entry

        def run() -> None:
            if entry(table) != 0: raise MemoryError("the kernel's program could not allocate memory")

        run()
        outputs = [buffers[i].copy() for i, k in enumerate(order) if self.params[k] in written]
        seconds = self.timer(run)
        return outputs, seconds


def fastest_run(run: Callable[[], None]) -> float:
    """The fastest of at least MIN_RUNS calls of `run`, repeated until MIN_SECONDS have passed (at most MAX_RUNS)."""
    best, total, runs = float("inf"), 0.0, 0
    while runs < MIN_RUNS or (total < MIN_SECONDS and runs < MAX_RUNS):
        t0 = time.perf_counter()
        run()
        dt = time.perf_counter() - t0
        best, total, runs = min(best, dt), total + dt, runs + 1
    return best
