"""Running a kernel and the write-back of its result tile by tile.

A window write whose value reads the memory it writes at other places (a stencil written in place,
`u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + ...)`) is scheduled as two kernels: one computes the value
into a temporary (it must read `u` before anything of `u` changes), the next copies the temporary into `u`. Run
one after the other, the temporary makes a round trip through memory: written whole, then read whole.

Run tile by tile, a block of rows at a time, the copy reads rows the first kernel has just written, from the
cache; and the blocks a thread runs share one block's part of the temporary, so the rest of it is never touched
and the temporary never leaves the core's cache. That is correct when the rows a block writes are read by no
other block: here rows are the steps of both kernels' parallel (outermost) loop, and the kernels' index
expressions say which elements each row reads and writes. A block's first `before` and last `after` rows may be
read by its neighbours (a stencil's row above and below): those are kept at their own place in the temporary and
copied after every block has computed, in a second short pass. Blocks run on the thread pool as the two kernels'
rows did.

The pair is found after the kernels are built (their loops and index expressions are final then); anything this
cannot prove safe stays two kernels.
"""
from __future__ import annotations

from dataclasses import dataclass

from numfn.codegen.program import KernelProgram
from numfn.ir.uop import Ops, UOp, operands

TILE_BYTES = 128 << 10   # a block's part of the temporary: it is still in the core's cache when copied
MIN_TEMPORARY_BYTES = 1 << 20   # below this the temporary stays in cache anyway
MIN_BLOCKS = 4   # fewer would leave threads idle
EDGE_SHARE = 4   # a block leaves at most 1/EDGE_SHARE of its rows to the second pass


@dataclass(frozen=True)
class TiledPair:
    """Kernels `first` (computes `temporary`) and `second` (copies it to where it is written), by their numbers
    in the program's kernel list, run block by block: `rows` of the parallel loop in blocks of `block`, each
    block's first `before` and last `after` rows copied after all blocks."""
    first: int
    second: int
    rows: int
    row: int   # elements of the temporary per row
    block: int
    before: int
    after: int

    @property
    def blocks(self) -> int:
        return -(-self.rows // self.block)

    def temporary(self, programs: list[KernelProgram]) -> UOp:
        return _stores(programs[self.first])[0].src[0]

    def buffers(self, programs: list[KernelProgram]) -> list[UOp]:
        """The parameters of the pair's function: both kernels' buffers, each once, in order."""
        return list(dict.fromkeys(programs[self.first].params + programs[self.second].params))

    def describe(self, programs: list[KernelProgram]) -> str:
        return (f"{programs[self.first].name} and {programs[self.second].name} run tile by tile: {self.blocks} "
                f"blocks of {self.block} rows, each block's first {self.before} and last {self.after} rows copied "
                f"after all blocks")


def tile_writebacks(steps: list, programs: list[KernelProgram]) -> list:
    """`steps` (numfn.schedule.program_steps) with each pair of consecutive kernels that can run tile by tile
    replaced by ("tiles", TiledPair, ()); inside loops and branches too."""
    out: list = []
    i = 0
    while i < len(steps):
        item = steps[i]
        if not isinstance(item, int):
            kind, loop, parts = item
            out.append((kind, loop, tuple(tile_writebacks(list(p), programs) for p in parts)))
            i += 1
            continue
        nxt = steps[i + 1] if i + 1 < len(steps) else None
        pair = _pair(item, nxt, programs) if isinstance(nxt, int) else None
        if pair is None:
            out.append(item)
            i += 1
        else:
            out.append(("tiles", pair, ()))
            i += 2
    return out


def tiled_pairs(steps) -> list[TiledPair]:
    """Every TiledPair of an outline of steps, inside loops and branches too (the renderers print each once)."""
    found = []
    for item in steps or ():
        if isinstance(item, int): continue
        if item[0] == "tiles": found.append(item[1])
        else:
            for part in item[2]: found += tiled_pairs(part)
    return found


def _stores(prog: KernelProgram) -> list[UOp]:
    return [u for u in prog.uops if u.op is Ops.STORE]


def _loads(prog: KernelProgram, buf: UOp) -> list[UOp]:
    return [u for u in prog.uops if u.op is Ops.LOAD and u.src[0] is buf]


def _pair(first: int, second: int, programs: list[KernelProgram]) -> TiledPair | None:
    e, w = programs[first], programs[second]
    if not isinstance(e, KernelProgram) or not isinstance(w, KernelProgram): return None   # extern calls
    if e.parallel is None or w.parallel is None: return None
    if len(e.parallel.src) > 1 or len(w.parallel.src) > 1: return None   # loops of run-time length
    rows = e.parallel.src[0].arg
    if w.parallel.src[0].arg != rows: return None
    e_stores, w_stores = _stores(e), _stores(w)
    if not e_stores or not w_stores: return None
    temp, dest = e_stores[0].src[0], w_stores[0].src[0]
    if any(s.src[0] is not temp for s in e_stores) or any(s.src[0] is not dest for s in w_stores): return None
    if temp.arg.category != "intermediate" or temp is dest or temp.arg.size % rows: return None
    if temp.arg.size * temp.dtype.itemsize < MIN_TEMPORARY_BYTES: return None
    # the temporary is the pair's own: no other kernel or extern call uses it
    if any(temp in getattr(p, "params", ()) for k, p in enumerate(programs) if k not in (first, second)): return None
    # row r of the first kernel writes row r of the temporary, and row r of the second reads only that row
    row = temp.arg.size // rows
    for u, r in [(s, e.parallel) for s in e_stores] + [(ld, w.parallel) for ld in _loads(w, temp)]:
        span = _affine(u.src[1], r)
        if span is None or span[0] != row or span[1] < 0 or span[2] > row - 1: return None
    if _loads(e, temp): return None
    # where each row reads and writes `dest`: stride * r + [lo, hi]
    e_spans = [_affine(ld.src[1], e.parallel) for ld in _loads(e, dest)]
    w_spans = [_affine(u.src[1], w.parallel) for u in w_stores + _loads(w, dest)]
    if not e_spans or any(s is None for s in e_spans + w_spans): return None
    strides = {s[0] for s in e_spans + w_spans}   # type: ignore[index]  # checked above: none is None
    if len(strides) != 1: return None
    stride = strides.pop()
    if stride <= 0: return None
    e_lo, e_hi = min(s[1] for s in e_spans), max(s[2] for s in e_spans)   # type: ignore[index]
    w_lo, w_hi = min(s[1] for s in w_spans), max(s[2] for s in w_spans)   # type: ignore[index]
    # a block's rows [s + before, e - after) are written by no other block's reads: the block before reads up
    # to stride * (s - 1) + e_hi, the block after from stride * e + e_lo
    before, after = max(0, (e_hi - w_lo) // stride), max(0, (w_hi - e_lo) // stride)
    block = max(1, TILE_BYTES // (row * temp.dtype.itemsize))
    if EDGE_SHARE * (before + after) > block or -(-rows // block) < MIN_BLOCKS: return None
    return TiledPair(first, second, rows, row, block, before, after)


def _affine(index: UOp, r: UOp) -> tuple[int, int, int] | None:
    """`index` as stride * r + (something in [lo, hi]): (stride, lo, hi), or None when `r` appears other than as a
    term `r` or `r * constant` of a sum (then nothing is claimed)."""
    stride, lo, hi = 0, 0, 0
    for t in operands(index, lambda u: u.op is Ops.ADD):
        if t is r: stride += 1
        elif t.op is Ops.MUL and t.src[0] is r and t.src[1].op is Ops.CONST: stride += t.src[1].arg
        elif t.op is Ops.MUL and t.src[1] is r and t.src[0].op is Ops.CONST: stride += t.src[0].arg
        elif r in t.toposort(): return None
        else:
            if not isinstance(t.vmin, int) or not isinstance(t.vmax, int): return None
            lo, hi = lo + t.vmin, hi + t.vmax
    return stride, lo, hi
