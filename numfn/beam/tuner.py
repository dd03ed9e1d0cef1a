"""The search of one compiled function's kernels (`FunctionTuner`): what BEAM=N does while a function's kernels
are rendered.

For each kernel: the choice stored for it on this machine (numfn/beam/store.py) if there is one; else, when the
kernel does enough work to be worth it (MIN_WORK) and the function's budget is not spent, a search
(numfn/beam/search.py) of at most the kernel budget, whose winner is stored. The progress line shows the search
(kernel k of n, candidates measured, best time so far); DEBUG=2 prints each kernel's choice and its time against
the heuristic's, with GFLOP/s and GB/s.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from numfn import config, debug, progress
from numfn.beam.measure import KernelBench
from numfn.beam.search import SearchResult, beam_search, candidate_neighbours
from numfn.beam.store import Machine, kernel_structure, load_choice, store_choice, tuned_key
from numfn.codegen.lower import LoweredKernel
from numfn.codegen.opt import Options, heuristic_options
from numfn.codegen.program import build_program, prepare_kernel
from numfn.ir.uop import UOp

MIN_WORK = 1 << 14   # ALU operations plus elements moved below which a kernel is not searched (microseconds of work)


class FunctionTuner:
    """The search of one function's `total` kernels at beam `width`; `options(...)` per kernel. The budgets are
    seconds (default: NUMFN_BEAM_KERNEL_SECONDS, NUMFN_BEAM_FUNCTION_SECONDS); `machine`, `clock` and `timer`
    (KernelBench's) may be replaced (tests)."""

    def __init__(self, width: int, backend: str, fastmath: bool, total: int, kernel_budget: float | None = None,
                 function_budget: float | None = None, machine: Machine | None = None,
                 clock: Callable[[], float] = time.perf_counter,
                 timer: Callable[[Callable[[], None]], float] | None = None):
        self.width, self.backend, self.fastmath, self.total = width, backend, fastmath, total
        self.kernel_budget = config.beam_kernel_seconds() if kernel_budget is None else kernel_budget
        function_budget = config.beam_function_seconds() if function_budget is None else function_budget
        self.clock, self.timer = clock, timer
        self.deadline = clock() + function_budget
        self.machine = machine or Machine.here()
        self.searched = 0

    def options(self, name: str, params: tuple[UOp, ...], lowered: LoweredKernel, parallel: bool, index: int,
                op_count: int = MIN_WORK, bytes_moved: int = 0) -> Options | None:
        """The options to build kernel `index` (1-based) with: stored, searched now, or None (the heuristic's)."""
        if debug.noopt(): return None
        key = tuned_key(kernel_structure(params, lowered, self.fastmath), self.backend, self.machine)
        stored = load_choice(key)
        if stored is not None:
            debug.log(2, f"BEAM {name}: {stored.options.describe()}: {stored.seconds * 1e6:.1f} us"
                         f"{_rates(stored.seconds, op_count, bytes_moved)} against the heuristic's "
                         f"{stored.heuristic.describe()}: {stored.heuristic_seconds * 1e6:.1f} us"
                         f"{_rates(stored.heuristic_seconds, op_count, bytes_moved)} (stored for this machine)")
            return stored.options
        itemsize = max((p.dtype.itemsize for p in params), default=1)
        if op_count + bytes_moved // max(itemsize, 1) < MIN_WORK: return None
        left = self.deadline - self.clock()
        if left <= 0:
            debug.log(2, f"BEAM {name}: not searched, the function's budget is spent (NUMFN_BEAM_FUNCTION_SECONDS)")
            return None
        prepared = prepare_kernel(lowered)
        start = heuristic_options(prepared, parallel)
        bench = KernelBench(name, params, lowered, self.backend, self.fastmath, self.timer)
        threads = _threads() > 1 and build_program(name, params, lowered, fastmath=self.fastmath,
                                                   options=replace(start, parallel=True)).parallel is not None
        where = f"BEAM kernel {index} of {self.total}"
        progress.note(where)

        def report(candidates: int, best: float) -> None:
            progress.note(f"{where}: {candidates} candidates, best {best * 1e6:.1f} us")

        try:
            result = beam_search(start, lambda o: candidate_neighbours(prepared, o, threads), bench.evaluate,
                                 self.width, min(self.kernel_budget, left), self.clock, report=report, describe=name)
        except Exception as e:   # noqa: BLE001 - the heuristic's own program, alone, could not be built or run
            debug.log(1, f"BEAM {name}: not searched ({type(e).__name__}: {e})")
            return None
        finally:
            progress.note("")
        self.searched += 1
        store_choice(key, result.chosen, result.chosen_seconds, start, result.start_seconds)
        debug.log(2, lambda: _describe(name, result, op_count, bytes_moved))
        return result.chosen


def _threads() -> int:
    from numfn.runtime.threads import thread_count
    return thread_count()


def _rates(seconds: float, op_count: int, bytes_moved: int) -> str:
    if seconds <= 0: return ""
    return f" ({op_count / seconds / 1e9:.2f} GFLOP/s, {bytes_moved / seconds / 1e9:.2f} GB/s)"


def _describe(name: str, result: SearchResult, op_count: int, bytes_moved: int) -> str:
    def rate(seconds: float) -> str:
        return _rates(seconds, op_count, bytes_moved)
    how = ", budget spent" if result.exhausted else ""
    wrong = f", {len(result.wrong)} wrong candidates dropped" if result.wrong else ""
    return (f"BEAM {name}: {result.chosen.describe()}: {result.chosen_seconds * 1e6:.1f} us"
            f"{rate(result.chosen_seconds)}"
            f" against the heuristic's {result.start.describe()}: {result.start_seconds * 1e6:.1f} us"
            f"{rate(result.start_seconds)}, {result.speedup:.2f}x; {len(result.times)} candidates{how}{wrong}")
