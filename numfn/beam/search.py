"""The beam search over one kernel's optimizations (codegen/opt.py's Options), apart from how candidates are built
and timed: `beam_search(start, neighbours, evaluate, width, budget)`.

The search starts from the heuristic's choice. Each step takes the `width` fastest candidates found so far (the
beam), makes every neighbour of those not expanded before (`candidate_neighbours`: one change each: an upcast
factor halved, doubled or dropped, an upcast of another loop, the block size halved or doubled, a row tile's rows,
threads on or off) and measures the ones not seen before. It stops when a step finds no candidate that enters the
beam, or when the time budget is spent (the best so far is kept: the heuristic's choice at worst).

`evaluate(options)` returns (outputs, seconds): what the kernel wrote on the search's data and its time. A
candidate whose outputs differ from the heuristic's is a code generator bug: it is reported under DEBUG and never
chosen, as are candidates that fail to build. A candidate wins only if it is faster than the heuristic's choice
by more than `margin` (timings are noisy; a tie keeps the heuristic's), and after the search both are timed again
(`evaluate` on the same options again) to confirm it, so a search never makes a kernel slower than it measured.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from numfn import debug
from numfn.codegen.lower import LoweredKernel
from numfn.codegen.opt import Options

UPCAST_FACTORS = (2, 4, 8, 16, 32, 64)   # an upcast's candidate factors (those dividing the loop's size)
MAX_UNROLLED = 256   # candidates whose upcasts together repeat a kernel's stores more than this are not made
ROW_TILES = (2, 4, 8, 16)
MARGIN = 0.03   # a candidate must be this much faster than the heuristic's choice to replace it


@dataclass
class SearchResult:
    """What a search found: the `chosen` options and their time, the heuristic's (`start`), every candidate
    measured (`times`, seconds by options), those dropped for a wrong result (`wrong`) or a failure (`failed`),
    and whether the budget ran out before the search ended."""
    chosen: Options
    chosen_seconds: float
    start: Options
    start_seconds: float
    times: dict[Options, float] = field(default_factory=dict)
    wrong: list[Options] = field(default_factory=list)
    failed: list[Options] = field(default_factory=list)
    exhausted: bool = False

    @property
    def speedup(self) -> float:
        return self.start_seconds / self.chosen_seconds if self.chosen_seconds > 0 else 1.0


def same_outputs(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> bool:
    """Whether a candidate's outputs are the heuristic's: integers and booleans exactly, floats to a tolerance of
    their precision (candidates may add a reduction's terms in another order), NaN where NaN is."""
    if len(got) != len(want): return False
    for g, w in zip(got, want):
        if g.shape != w.shape or g.dtype != w.dtype: return False
        if g.dtype.kind not in "fc":
            if not np.array_equal(g, w): return False
            continue
        rtol = {2: 1e-2, 4: 1e-3}.get(g.dtype.itemsize, 1e-8)
        finite = np.abs(w[np.isfinite(w)])
        atol = rtol * float(finite.max()) if finite.size else 0.0
        if not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True): return False
    return True


def beam_search(start: Options, neighbours: Callable[[Options], list[Options]],
                evaluate: Callable[[Options], tuple[Sequence[np.ndarray], float]], width: int, budget: float,
                clock: Callable[[], float] = time.perf_counter, margin: float = MARGIN,
                report: Callable[[int, float], None] | None = None, describe: str = "kernel") -> SearchResult:
    """Search from `start` (the heuristic's options) for faster ones; see the module docstring. `budget`: seconds of
    `clock` the search may take; `report(candidates measured, best seconds)` after each measurement."""
    deadline = clock() + budget
    want, start_seconds = evaluate(start)   # the heuristic's own failure is not caught: the caller builds it anyway
    result = SearchResult(start, start_seconds, start, start_seconds, {start: start_seconds})
    if report is not None: report(1, start_seconds)
    seen, expanded = {start}, set()
    while True:
        beam = _ranked(result.times, start)[:max(1, width)]
        frontier = [n for o in beam if o not in expanded for n in neighbours(o) if n not in seen]
        expanded.update(beam)
        if not frontier: break
        for candidate in dict.fromkeys(frontier):
            if clock() >= deadline:
                result.exhausted = True
                break
            seen.add(candidate)
            try:
                got, seconds = evaluate(candidate)
            except Exception as e:   # noqa: BLE001 - a candidate the code generator cannot build is not chosen
                debug.log(1, f"BEAM {describe}: candidate {candidate.describe()} failed to build or run: {e}")
                result.failed.append(candidate)
                continue
            if not same_outputs(got, want):
                debug.log(1, f"BEAM {describe}: candidate {candidate.describe()} computes another result than the "
                             f"heuristic's ({start.describe()}) on the same data: a code generator bug; dropped")
                result.wrong.append(candidate)
                continue
            result.times[candidate] = seconds
            if report is not None: report(len(result.times), min(result.times.values()))
        if result.exhausted: break
        if set(_ranked(result.times, start)[:max(1, width)]) <= expanded: break   # nothing new entered the beam
    best = _ranked(result.times, start)[0]
    if best != start and result.times[best] < start_seconds * (1 - margin):
        # timed again, the heuristic's first: the winner must still win by the margin
        again_start, again_best = evaluate(start)[1], evaluate(best)[1]
        start_seconds = min(start_seconds, again_start)
        result.start_seconds = result.chosen_seconds = start_seconds
        if again_best < start_seconds * (1 - margin):
            result.chosen, result.chosen_seconds = best, min(result.times[best], again_best)
    return result


def _ranked(times: dict[Options, float], start: Options) -> list[Options]:
    """Candidates fastest first; the heuristic's before any other of the same time."""
    return sorted(times, key=lambda o: (times[o], o != start))


def candidate_neighbours(lk: LoweredKernel, options: Options, threads: bool) -> list[Options]:
    """The options one change away from `options` for the prepared kernel `lk` (codegen/program.py's
    prepare_kernel), each one the code generator can make: upcasts by factors dividing their loop, blocks dividing
    the upcast loop's tiles, row tiles of loops that run in any order. `threads`: whether threads on or off differ."""
    loops = {r.arg[0]: r for r in lk.ranges if r not in lk.sequential and len(r.src) == 1 and r.src[0].arg > 1}
    row_loops = {r.arg[0]: r for r in lk.ranges if r not in lk.sequential and r.src[0].arg > 1}
    out: list[Options] = []
    upcasts = list(options.upcasts)
    for k, (rid, factor) in enumerate(upcasts):
        n = loops[rid].src[0].arg if rid in loops else 0
        for f in (factor // 2, factor * 2):
            if f > 1 and n % f == 0:
                out.append(replace(options, upcasts=tuple(upcasts[:k] + [(rid, f)] + upcasts[k + 1:])))
        dropped = tuple(upcasts[:k] + upcasts[k + 1:])
        out.append(replace(options, upcasts=dropped, block=options.block if dropped else None))
    if options.row_tile is None:
        taken = {rid for rid, _ in upcasts}
        for rid, r in loops.items():
            if rid in taken: continue
            for f in UPCAST_FACTORS[:3]:
                if r.src[0].arg % f == 0: out.append(replace(options, upcasts=tuple(upcasts + [(rid, f)])))
    if upcasts:
        rid, factor = upcasts[0]
        tiles = loops[rid].src[0].arg // factor if rid in loops else 0
        inner = options.block[1] if options.block is not None else tiles
        for b in (inner // 2, inner * 2, tiles // 4):
            if 1 <= b < tiles and tiles % b == 0: out.append(replace(options, block=(rid, b)))
        if options.block is not None: out.append(replace(options, block=None))
    else:
        current = options.row_tile
        for rid in row_loops:
            for f in ROW_TILES:
                if current != (rid, f): out.append(replace(options, row_tile=(rid, f)))
        if current is not None: out.append(replace(options, row_tile=None))
    if threads: out.append(replace(options, parallel=not options.parallel))
    return [o for o in dict.fromkeys(out) if _unrolled(o) <= MAX_UNROLLED]


def _unrolled(options: Options) -> int:
    n = 1
    for _, f in options.upcasts: n *= f
    return n * (options.row_tile[1] if options.row_tile is not None else 1)
