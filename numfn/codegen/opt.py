"""Kernel optimizations on the loop-level graph, between lowering and linearization.

upcast (unroll-and-jam): an output loop r of size n becomes r' of size n/U, and every store of the kernel is
repeated U times with r = r'*U + u. Repeated stores share everything that does not depend on u, and the
reductions they contain share their loops: U accumulators fill in one pass over the reduced axis. Where the
copies read consecutive elements, LLVM's SLP vectorizer turns them into vector operations.

block: after such an upcast, when B's panels (the reduced depth times one tile) all together outgrow the cache,
the tile loop is split and its block loop moved outermost, so each block of panels stays in L2 while every row of
A passes over it.

The heuristic (`choose_upcasts`) applies it where loops cannot vectorize by themselves: a reduction whose loads
are contiguous along an output axis but not along its own (a matmul's B[k, j], column sums). That axis is
upcast by up to two vectors, and a second output axis by up to 4 when some load does not depend on it (the copies
then reuse that load: a matmul's register tile).

An axis of run-time length (numfn.codegen.narrow: a window `d[:, i:]` whose columns the reduction sums down) is
upcast to its end by `upcast_window`: tiles of consecutive positions, the last one moved back to end at the
window's end (it recomputes part of the one before, and stores only the rest), so every copy's load stays in the
window and the copies vectorize; a window shorter than one tile takes a clamped form instead, computed by reduction
loops of its own that run only then.

Row tiles (`choose_row_tile`): a reduction already contiguous along its own axis (a matrix-vector product's
rows, `A[i, :k] @ x[:k]`) vectorizes by itself, but each row loads its shared operand x again: two loads per
multiply-add. Upcasting the rows by ROW_TILE makes each load of x feed that many rows (1.25 loads per multiply-add
at 4), and the reduction stays vectorized along its axis. The rows may run to a run-time end
(numfn.codegen.narrow: a window shrinking with a loop variable): the tile loop then runs to the end rounded up, and
a copy past the end reads the last row again and does not store.

Full unrolls (`choose_unrolls`, in codegen/lower.py): a short output loop whose counter is compared with constants
selects between values by position (a stack of values along a new axis: the outputs of an FFT butterfly,
numfn.numpy.fft). Upcast by its whole size, each copy's selects fold to one value, and everything the copies share
(the butterfly's loads and common subexpressions) is computed once per iteration of the loops around it. The choice
is made when the kernel is lowered, so the scheduler counts evaluations as the unrolled code performs them.

All of these choices, and whether threads split the kernel's outermost loop, are one value: an `Options` record.
`heuristic_options` makes it from the rules above, `apply_options` performs it, and codegen/program.py's
`build_program` takes one (numfn/beam measures others, BEAM=N).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from numfn.codegen.lower import LoweredKernel, free_ranges
from numfn.dtype import dtypes
from numfn.ir.symbolic import add, affine, mul, symbolic
from numfn.ir.uop import Ops, UOp, graph_rewrite, substitute, toposort

VECTOR_BYTES = 64   # AVX-512; a wider upcast than the registers hold only costs spills


def upcast(lk: LoweredKernel, r: UOp, factor: int) -> LoweredKernel:
    """The kernel with output loop `r` split into r'*factor + u and the stores repeated for u in 0..factor-1."""
    n = r.src[0].arg
    assert n % factor == 0
    outer = UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, n // factor),), r.arg)
    stores = []
    for u in range(factor):
        value = add(mul(outer, factor), u) if n // factor > 1 else UOp.const(dtypes.index, u)
        stores += [substitute(st, {r: value}) for st in lk.sink.src]
    sink = graph_rewrite(UOp(Ops.SINK, dtypes.void, tuple(stores)), symbolic, name="opt: symbolic")
    ranges = tuple(outer if x is r else x for x in lk.ranges if not (x is r and n // factor == 1))
    sequential = frozenset(outer if x is r else x for x in lk.sequential)
    return LoweredKernel(sink, ranges, lk.shape, lk.evaluations, sequential)


def upcast_to_end(lk: LoweredKernel, r: UOp, factor: int) -> LoweredKernel:
    """`upcast` of a loop that may run to a run-time end E (its RANGE's second source, see narrow.py; else its
    static bound): the tile loop r' runs to ceil(E / factor), copy u works on row min(r' * factor + u, E - 1) and
    stores only where r' * factor + u < E (a copy past the end repeats the last row's loads, in bounds)."""
    n = r.src[0].arg
    if len(r.src) == 1 and n % factor == 0: return upcast(lk, r, factor)
    end = r.src[1] if len(r.src) > 1 else r.src[0]
    bound = UOp.const(dtypes.index, -(-n // factor))
    tiles = end.alu(Ops.ADD, UOp.const(dtypes.index, factor - 1)).alu(Ops.IDIV, UOp.const(dtypes.index, factor))
    outer = UOp(Ops.RANGE, dtypes.index, (bound, tiles), r.arg)
    last = end.alu(Ops.SUB, UOp.const(dtypes.index, 1))
    stores = []
    for u in range(factor):
        position = add(mul(outer, factor), u)
        if u == 0:   # r' < ceil(E / factor): the first copy is always within the end
            stores += [substitute(st, {r: position}) for st in lk.sink.src]
            continue
        within = position.alu(Ops.CMPLT, end)
        for st in lk.sink.src:
            st = substitute(st, {r: position.alu(Ops.MIN, last)})
            gate = within if len(st.src) < 4 else st.src[3].alu(Ops.AND, within)
            stores.append(st.replace(src=st.src[:3] + (gate,)))
    sink = graph_rewrite(UOp(Ops.SINK, dtypes.void, tuple(stores)), symbolic, name="opt: symbolic")
    ranges = tuple(outer if x is r else x for x in lk.ranges)
    return LoweredKernel(sink, ranges, lk.shape, lk.evaluations, lk.sequential)


def upcast_window(lk: LoweredKernel, r: UOp, factor: int) -> LoweredKernel:
    """`upcast` of an output loop of run-time end E (narrow.py: a window's positions, where no index past E - 1 is
    known to be in bounds) along which reductions load contiguously (see `choose_upcasts`). While E >= factor,
    tile t covers positions base + u, base = min(t * factor, E - factor): consecutive, so the copies' loads in the
    reductions vectorize, and all below E (the last tile overlaps the one before it, and its copies at positions
    that one covered do not store). When E < factor there is one tile whose copy u works on min(u, E - 1) and
    stores where u < E. Each copy's reductions are computed in both forms, each with its own loops, and the loops
    of the form that does not apply run no iterations (so none of its loads happen); the rest of the copy is at
    the position that applies."""
    n = r.src[0].arg
    end = r.src[1]
    f = UOp.const(dtypes.index, factor)
    zero = UOp.const(dtypes.index, 0)
    bound = UOp.const(dtypes.index, -(-n // factor))
    tiles = end.alu(Ops.ADD, UOp.const(dtypes.index, factor - 1)).alu(Ops.IDIV, f)
    outer = UOp(Ops.RANGE, dtypes.index, (bound, tiles), r.arg)
    wide = f.alu(Ops.CMPLE, end)   # E >= factor
    base = mul(outer, factor).alu(Ops.MIN, end.alu(Ops.SUB, f))
    last = end.alu(Ops.SUB, UOp.const(dtypes.index, 1))
    nodes = toposort([lk.sink])
    reduce_ranges = sorted({x for u in nodes if u.op is Ops.REDUCE for x in u.src[1:]}, key=lambda x: x.arg[0])
    ids = iter(range(max(u.arg[0] for u in nodes if u.op is Ops.RANGE) + 1, 1 << 30))

    def loops(runs: UOp) -> dict[UOp, UOp]:
        """The reduction loops of one form: each runs to its bound where `runs` holds, else not at all."""
        return {x: UOp(Ops.RANGE, dtypes.index, (x.src[0], runs.alu(Ops.WHERE, x.src[0], zero)),
                       (next(ids),) + tuple(x.arg[1:])) for x in reduce_ranges}
    narrow_loops = loops(wide.alu(Ops.CMPNE, UOp.const(dtypes.bool, True)))
    wide_loops = loops(wide)
    reduces = [u for u in nodes if u.op is Ops.REDUCE]

    def u_const(u: int) -> UOp: return UOp.const(dtypes.index, u)
    stores = []
    for u in range(factor):
        tiled, clamped = add(base, u), u_const(u).alu(Ops.MIN, last)
        # each reduction in both forms; what is outside them (computed once per copy) at the position that applies
        forms = {red: wide.alu(Ops.WHERE, substitute(red, {r: tiled, **wide_loops}),
                               substitute(red, {r: clamped, **narrow_loops})) for red in reduces}
        position = wide.alu(Ops.WHERE, tiled, clamped)
        # a copy stores where no tile before stored (the last tile's overlap is computed, not stored: a store may
        # read what it overwrites, `out[i:] += ...`), and within E
        within = wide.alu(Ops.WHERE, mul(outer, factor).alu(Ops.CMPLE, tiled), u_const(u).alu(Ops.CMPLT, end))
        for st in lk.sink.src:
            st = substitute(st, {**forms, r: position})
            stores.append(st.replace(src=st.src[:3] + (within if len(st.src) < 4 else st.src[3].alu(Ops.AND, within),)))
    sink = graph_rewrite(UOp(Ops.SINK, dtypes.void, tuple(stores)), symbolic, name="opt: symbolic")
    ranges = tuple(outer if x is r else x for x in lk.ranges)
    return LoweredKernel(sink, ranges, lk.shape, lk.evaluations, lk.sequential)


def block(lk: LoweredKernel, r: UOp, inner: int) -> LoweredKernel:
    """The kernel with output loop `r` split into an outermost loop over blocks and `r` within a block:
    r = rb*inner + ri. The block loop gets an id below every other so it nests outside them."""
    n = r.src[0].arg
    assert n % inner == 0
    rid = min(x.arg[0] for x in lk.ranges) - 1
    rb = UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, n // inner),), (rid, "loop"))
    ri = UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, inner),), r.arg)
    stores = [substitute(st, {r: add(mul(rb, inner), ri)}) for st in lk.sink.src]
    sink = graph_rewrite(UOp(Ops.SINK, dtypes.void, tuple(stores)), symbolic, name="opt: symbolic")
    ranges = (rb,) + tuple(ri if x is r else x for x in lk.ranges)
    return LoweredKernel(sink, ranges, lk.shape, lk.evaluations, lk.sequential)


# B's panels are blocked once all of them outgrow a core's L2 cache (2 MiB here); a block then takes a quarter of it
L2_BYTES = 2 * 1024 * 1024
BLOCK_BYTES = L2_BYTES // 4


def choose_block(lk: LoweredKernel, upcasts: list[tuple[UOp, int]]) -> tuple[UOp, int] | None:
    """After a matmul-like upcast: when the panels of all tiles along the contiguous axis (all of B) outgrow the
    cache, that axis' tile loop is blocked so one block of panels is reused by every row before the next."""
    if not upcasts: return None
    axis, width = upcasts[0]
    r = next((x for x in lk.ranges if x.arg == axis.arg), None)
    reduces = [u for u in toposort([lk.sink]) if u.op is Ops.REDUCE]
    if r is None or not reduces: return None
    depth = max(math.prod(x.src[0].arg for x in red.src[1:]) for red in reduces)
    itemsize = max(u.dtype.itemsize for u in reduces)
    panel = depth * width * itemsize
    tiles = r.src[0].arg
    if panel * tiles <= L2_BYTES: return None
    inner = _largest_divisor(tiles, max(1, BLOCK_BYTES // panel))
    return (r, inner) if inner < tiles else None


def _stride(index: UOp, r: UOp) -> int | None:
    """The coefficient of `r` in an affine index (None when r appears inside a division or modulo)."""
    terms, _ = affine(index)
    coef = 0
    for atom, k in terms:
        if atom is r: coef += k
        elif r in free_ranges(atom): return None
    return coef


def _largest_divisor(n: int, limit: int) -> int:
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


def choose_upcasts(lk: LoweredKernel) -> list[tuple[UOp, int]]:
    """Which output loops to upcast, and by how much (see the module docstring)."""
    nodes = toposort([lk.sink])
    reduces = [u for u in nodes if u.op is Ops.REDUCE]
    if not reduces or lk.sequential: return []
    if any(len(r.src) > 1 for red in reduces for r in red.src[1:]):
        return []   # a reduction of run-time length (numfn.codegen.narrow): LLVM vectorizes it, remainder and all
    loads = [u for red in reduces for u in toposort([red.src[0]]) if u.op is Ops.LOAD and u.src[0].op is Ops.BUFFER]
    if not loads: return []
    reduce_ranges = {r for red in reduces for r in red.src[1:]}
    # the reduction's own axis: if its loads are already contiguous there, LLVM vectorizes the reduction loop
    if all(_stride(ld.src[1], r) in (0, 1) for ld in loads for r in reduce_ranges if r in free_ranges(ld.src[1])):
        return []
    itemsize = max(ld.dtype.itemsize for ld in loads)
    best, best_count = None, 0
    for r in lk.ranges:
        count = sum(1 for ld in loads if _stride(ld.src[1], r) == 1)
        if count > best_count: best, best_count = r, count
    if best is None: return []
    width = 2 * VECTOR_BYTES // itemsize
    if any(len(r.src) > 1 for r in lk.ranges):
        # output loops of run-time length: only the contiguous one, tiled to its end (upcast_window), alone
        windowed = [r for r in lk.ranges if len(r.src) > 1]
        if windowed != [best] or best.src[0].arg < width: return []
        # ... in plain stores, whose reductions' loads of the window's positions are inside their loops (a load of
        # the position alone would be hoisted out of them, and run in the form whose loops do not: upcast_window)
        if any(st.op is not Ops.STORE for st in lk.sink.src): return []
        if any(best in free_ranges(ld.src[1]) and not free_ranges(ld.src[1]) & reduce_ranges for ld in loads):
            return []
        return [(best, width)]
    plan = [(best, _largest_divisor(best.src[0].arg, width))]
    # a second axis whose copies reuse a load that does not depend on it: the register tile
    for r in reversed(lk.ranges):
        if r is best: continue
        if any(r not in free_ranges(ld.src[1]) for ld in loads) and any(r in free_ranges(ld.src[1]) for ld in loads):
            plan.append((r, _largest_divisor(r.src[0].arg, 8)))
            break
    return [(r, f) for r, f in plan if f > 1]


ROW_TILE = 4   # rows of a row tile: few enough that their accumulators (two vectors each) leave registers free
ROW_TILE_MAX_NODES = 256   # ... for kernels whose nodes that depend on the rows are at most this many (code size)
ROW_TILE_MIN_DEPTH = 32    # ... and whose reductions are at least this long (by their static bound; a window's may
                           # run shorter): short rows (a softmax over 10 classes) measured slower tiled, 17 us vs 13


def choose_row_tile(lk: LoweredKernel) -> tuple[UOp, int] | None:
    """The output loop to tile by rows (see the module docstring): a kernel whose reductions load contiguously
    along their own axes, with some load that does not depend on the loop (the operand the rows share) and some
    that does. The innermost such loop; None if there is none or the kernel is not a plain store of reductions."""
    nodes = toposort([lk.sink])
    reduces = [u for u in nodes if u.op is Ops.REDUCE]
    if not reduces or lk.sequential or any(st.op is not Ops.STORE for st in lk.sink.src): return None
    loads = [u for red in reduces for u in toposort([red.src[0]]) if u.op is Ops.LOAD and u.src[0].op is Ops.BUFFER]
    reduce_ranges = {r for red in reduces for r in red.src[1:]}
    if not loads or not all(_stride(ld.src[1], r) in (0, 1) for ld in loads for r in reduce_ranges):
        return None
    if not any(_stride(ld.src[1], r) == 1 for ld in loads for r in reduce_ranges): return None
    if any(x.src[0].arg < ROW_TILE_MIN_DEPTH for x in reduce_ranges): return None
    for r in reversed(lk.ranges):
        if r.src[0].arg < ROW_TILE: continue
        # a reduction whose run-time length depends on the row (a triangle) has no loop the copies could share
        if any(r in free_ranges(end) for x in reduce_ranges for end in x.src[1:]): continue
        if sum(1 for u in nodes if r in free_ranges(u)) > ROW_TILE_MAX_NODES: continue
        depends = [r in free_ranges(ld.src[1]) for ld in loads]
        if any(depends) and not all(depends): return r, ROW_TILE
    return None


@dataclass(frozen=True)
class Options:
    """The optimizations a kernel is built with, loops named by their ids (a RANGE's arg[0]):
    `upcasts` (loop, factor) in order; `block` (loop, iterations per block) after them; `row_tile` (loop, rows),
    a loop upcast to its run-time end; `parallel`: threads split the outermost loop (when the kernel allows it)."""
    upcasts: tuple[tuple[int, int], ...] = ()
    block: tuple[int, int] | None = None
    row_tile: tuple[int, int] | None = None
    parallel: bool = False

    def describe(self) -> str:
        parts = [f"upcast r{r} x{f}" for r, f in self.upcasts]
        if self.block is not None: parts.append(f"block r{self.block[0]} by {self.block[1]}")
        if self.row_tile is not None: parts.append(f"row tile r{self.row_tile[0]} x{self.row_tile[1]}")
        parts.append("threads" if self.parallel else "one thread")
        return ", ".join(parts)

    def to_json(self) -> dict:
        return {"upcasts": [list(x) for x in self.upcasts], "block": None if self.block is None else list(self.block),
                "row_tile": None if self.row_tile is None else list(self.row_tile), "parallel": self.parallel}

    @staticmethod
    def from_json(d: dict) -> Options:
        def pair(x) -> tuple[int, int] | None:
            return None if x is None else (int(x[0]), int(x[1]))
        return Options(tuple((int(r), int(f)) for r, f in d["upcasts"]), pair(d["block"]), pair(d["row_tile"]),
                       bool(d["parallel"]))


def loop(lk: LoweredKernel, rid: int) -> UOp:
    """The output loop of `lk` with id `rid` (KeyError when there is none)."""
    for r in lk.ranges:
        if r.arg[0] == rid: return r
    raise KeyError(f"no output loop r{rid}")


def heuristic_options(lk: LoweredKernel, parallel: bool) -> Options:
    """The fixed rules' choice for a kernel (see the module docstring); `parallel` is the threading threshold's."""
    return heuristic_applied(lk, parallel)[0]


def heuristic_applied(lk: LoweredKernel, parallel: bool) -> tuple[Options, LoweredKernel]:
    """(heuristic_options, `lk` with them applied): the upcasts the choice of a block is made on are kept, not
    made again (they were 40% of rendering a long program's kernels)."""
    upcasts = choose_upcasts(lk)
    after = _upcasts(lk, tuple((r.arg[0], f) for r, f in upcasts))
    blocking = None if any(len(r.src) > 1 for r, _ in upcasts) else choose_block(after, upcasts)
    # rows of a reduction that vectorizes along its own axis (after which it still does: no upcast was made)
    row_tile = None if upcasts else choose_row_tile(lk)
    options = Options(tuple((r.arg[0], f) for r, f in upcasts),
                      None if blocking is None else (blocking[0].arg[0], blocking[1]),
                      None if row_tile is None else (row_tile[0].arg[0], row_tile[1]), parallel)
    return options, _block_and_tile(after, options)


def apply_options(lk: LoweredKernel, options: Options) -> LoweredKernel:
    """`lk` with `options`' upcasts, block and row tile performed, in that order."""
    return _block_and_tile(_upcasts(lk, options.upcasts), options)


def _upcasts(lk: LoweredKernel, upcasts: tuple[tuple[int, int], ...]) -> LoweredKernel:
    for rid, factor in upcasts:
        r = loop(lk, rid)
        lk = upcast_window(lk, r, factor) if len(r.src) > 1 else upcast(lk, r, factor)
    return lk


def _block_and_tile(lk: LoweredKernel, options: Options) -> LoweredKernel:
    if options.block is not None: lk = block(lk, loop(lk, options.block[0]), options.block[1])
    if options.row_tile is not None: lk = upcast_to_end(lk, loop(lk, options.row_tile[0]), options.row_tile[1])
    return lk
