"""Versions of written memory: the order of writes into buffers, and where a write cannot happen in place.

A SCATTER is a new version of its old value's memory. `Versions` gives chains of versions x0 -> x1 = SCATTER(x0,
...) -> x2 = SCATTER(x1, ...) one buffer (an input's own buffer when x0 is an input, else the output buffer of the
last version if it is an output, else an intermediate), written in turn by x0's kernel and each scatter kernel.

Interface, used by numfn/schedule/scheduler.py and kernels.py:
  - `Versions(writebacks)`: `writebacks` are the last versions of the arguments written into (only those writes
    may overwrite an argument's memory);
  - `plan(roots)` makes every SCATTER and the version it overwrites a root (numfn/schedule/roots.py), resets the
    other roots' targets to their outputs, makes each chain's home buffer the target of its versions (roots with
    no target get a home in kernels.py), and adds the copies the plan needs (a version that is a second output;
    the write-back of writes into an argument that started from a copy: a root with `last` set). It fills `prev`
    (each SCATTER -> the version it overwrites: its old value, or the copy in `copies` it starts from) and
    `chain_of` (each version -> the first of its chain);
  - kernels.py then orders kernels so that a kernel reading a version runs before the next version is written
    (`next_writers`). Where that order is impossible it raises a fix and the scheduler plans again: `copy_fix(s)`
    makes the write `s` start from a copy of its old value in a fresh buffer (two writes start from one version, a
    kernel needs two versions at once, a reader of a version depends on the next one); adding to `solo` gives the
    values of one kernel kernels of their own (a kernel of several values reads two versions).
  - `write_hazard(value, lowered, kernel_value)`: a scatter kernel reading the memory it writes at another place
    than the one it writes (`x[1:] = x[:-1]`) returns the part of its value to store first (`demand_gate`: only
    the part's elements under a gated write's gate, when nothing else reads it).
  - `readers_gate(part, roots)`: likewise for a value the fusion rule stores whose only readers are gated writes
    with one gate (a windowed product written twice: `c[i:, i] = c[i, i:] = d[:, i] @ d[:, i:]`).
"""
from __future__ import annotations

from numfn.codegen.lower import LoweredKernel, Lowerer
from numfn.dtype import dtypes
from numfn.ir.symbolic import symbolic
from numfn.ir.uop import ELEMENTWISE, MOVEMENT, Ops, UOp, fold, graph_rewrite, preorder, toposort
from numfn.schedule.realize import index_arithmetic
from numfn.schedule.regions import swapped_state, versions_down
from numfn.schedule.roots import Root, chain_down, copy_of, parents_of


class Versions:
    """Memory written in place. A SCATTER is a new version of its old value's memory: chains of versions
    x0 -> x1 = SCATTER(x0, ...) -> x2 = SCATTER(x1, ...) share one buffer (an input's own buffer when x0 is an
    input, else the output buffer of the last version if it is an output, else an intermediate), written in turn
    by x0's kernel and each scatter kernel. Kernels reading a version run before the next version is written.
    Where that order is impossible (a kernel needs two versions at once, or a reader of a version depends on the
    next one), or where two writes start from the same version, the write starts from a copy instead: `copies`
    maps such a SCATTER to a copy of its old value in a fresh buffer (see `copy_of`)."""

    def __init__(self, writebacks: set[UOp], continued: dict[UOp, UOp] | None = None):
        # memory the program may overwrite in place: an input's, only by the writes into that input (a value
        # that simplified to an input, such as x * 1, is not the input's memory), and by the writes a loop that
        # continues in it (regions._continues_in: RESULT -> the memory) starts from
        self.continued = continued or {}
        self.writebacks = writebacks
        self.in_place = {u for w in writebacks for u in chain_down(w)} | \
            {u for r in self.continued for u in chain_down(r.src[0].src[r.arg])}
        self.copies: dict[UOp, UOp] = {}
        self.output_copies: set[UOp] = set()   # copies of versions into outputs that are not their chain's home
        self.prev: dict[UOp, UOp] = {}        # SCATTER -> the version it overwrites (its old value, or its copy)
        self.chain_of: dict[UOp, UOp] = {}    # every version (first ones too) -> the first version of its chain
        self.solo: set[UOp] = set()           # roots that get kernels of their own (they read different versions)

    def plan(self, roots: dict[UOp, Root]) -> None:
        """Make every SCATTER and the version it overwrites a root, and give each chain one home buffer (the
        targets of other roots are reset to their outputs: build_kernels gives them homes)."""
        for copy in self.output_copies: roots.pop(copy, None)
        self.output_copies = set()
        for r in roots.values(): r.targets = list(r.outputs)
        for u in toposort([r.value for r in roots.values()]):
            if u.op is not Ops.SCATTER: continue
            roots.setdefault(u, Root(u))
            # an input's memory (or a version the caller's array must end with) is written only by the writes
            # into that input: any other write of one of its versions starts from a copy
            if (u.src[0].op is Ops.BUFFER or u.src[0] in self.in_place) and u not in self.in_place \
                    and u not in self.copies:
                self.copies[u] = copy_of(u.src[0], len(self.copies))
            old = self.copies.get(u, u.src[0])
            if old.op is not Ops.BUFFER: roots.setdefault(old, Root(old))
        self.prev = {s: self.copies.get(s, s.src[0]) for s in roots if s.op is Ops.SCATTER}
        topo = {u: i for i, u in enumerate(toposort(list(roots)))}
        self.chain_of = {}
        chains: dict[UOp, list[UOp]] = {}
        for s in sorted(self.prev, key=lambda u: topo[u]):
            first = self.chain_of.get(self.prev[s], self.prev[s])
            self.chain_of.setdefault(self.prev[s], first)
            self.chain_of[s] = first
            chains.setdefault(first, [first]).append(s)
        for first, chain in chains.items():
            # outputs among the versions: the last version's first output can be the chain's home (when the chain
            # does not start in an input's buffer); any other output target copies its version
            # (not when the chain starts in a loop's state that swaps with another buffer each iteration: after
            # an odd number of iterations it is the other buffer that holds the state)
            outputs = [] if swapped_state(first) else roots[chain[-1]].outputs
            home = first if first.op is Ops.BUFFER else outputs[0] if outputs else None
            for v in chain:
                if v.op is Ops.BUFFER: continue
                extra = [t for t in roots[v].outputs if t is not home]
                if extra:
                    copy = copy_of(v, ("output", extra[0].arg.number))
                    roots[copy] = Root(copy, extra, list(extra))
                    self.output_copies.add(copy)
                roots[v].targets = [home] if home is not None else []
            base = chain[-1]
            while base.op is Ops.SCATTER: base = base.src[0]
            if first.op is not Ops.BUFFER and base.op is Ops.BUFFER and chain[-1] in self.in_place:
                # writes into an argument that had to start from a copy: the last version goes back into the
                # argument's memory, after everything that reads the argument as it was
                back = copy_of(chain[-1], ("argument", base.arg.number))
                roots[back] = Root(back, [], [base], last=True)
                self.output_copies.add(back)
                self.solo.add(back)

        # the last version of an argument's memory that a loop wrote in place as its state, when that loop could
        # not continue in the memory (it has buffers of its own): copied back, after everything else
        for w in self.writebacks:
            path = [*versions_down(w)]
            base = path[-1]
            if base.op is Ops.BUFFER and any(u.op is Ops.RESULT and u not in self.continued for u in path):
                back = copy_of(w, ("argument", base.arg.number))
                roots[back] = Root(back, [], [base], last=True)
                self.output_copies.add(back)
                self.solo.add(back)

    def next_writers(self) -> dict[UOp, list[UOp]]:
        out: dict[UOp, list[UOp]] = {}
        for s, old in self.prev.items(): out.setdefault(old, []).append(s)
        return out

    def copy_fix(self, s: UOp):
        def fix(): self.copies[s] = copy_of(s.src[0], len(self.copies))
        return fix


def write_hazard(value: UOp, lowered: LoweredKernel, kernel_value: UOp | None = None) -> UOp | None:
    """A scatter kernel may read the memory it writes only where it writes it, and only when no two of its writes
    meet (then each read comes before the write at its place). Otherwise part of the value it writes (or its
    indices) must be computed first: that part is returned, to be realized. The part is as small as possible: in
    `a[k+1:, k+1:] -= np.outer(a[k+1:, k], a[k, k+1:])` the column and the row are stored first (they are read
    at other places than the ones written), and the update itself stays one kernel reading and writing `a`."""
    if value.op is not Ops.SCATTER: return None
    store = lowered.sink.src[0]
    buf, index = store.src[0], store.src[1]
    combine, injective, _ = value.arg
    if any(u.op is Ops.LOAD and u.src[0] is buf for u in toposort([index])):   # x[f(x)] = ...
        # the index that reads memory (an argument, a version of it, a loop's result: x[np.clip(x, ...)] *= s
        # after a loop made x) is stored first
        memory = (Ops.BUFFER, Ops.SCATTER, Ops.RESULT)
        return next((s for s in value.src[2:] if any(u.op in memory for u in s.toposort())), value.src[2])
    index = _simplified(index)
    bad = [u for u in toposort([store.src[2]]) if u.op is Ops.LOAD and u.src[0] is buf and u.arg != "accumulate"
           and (combine is not None or not injective or _simplified(u.src[1]) is not index)]
    if not bad: return None
    if combine is not None or not injective or kernel_value is None: return value.src[1]
    part = _first_read_elsewhere(kernel_value, buf, index, lowered)
    return value.src[1] if part is None else _graph_node(kernel_value, value).get(part, value.src[1])


def demand_gate(part: UOp, scatter: UOp, roots: dict[UOp, Root]) -> UOp | None:
    """The gate of a gated write (a window's `L[k + 1:, k] = ...`, written where `i < length`) when `part`, stored
    first for it (see write_hazard), is read by nothing else and reaches the written values through elementwise
    operations: then only the part's elements under the gate are needed, and its kernel stores just those (the
    codegen then runs its loop over the window only, see codegen/narrow.py)."""
    if scatter.op is not Ops.SCATTER or not scatter.arg[2]: return None
    value, gate = scatter.src[1], scatter.src[-1]
    if part.shape != value.shape or gate.shape != value.shape: return None
    # a window's `i < length` (positions and scalars, which narrow loops), not a mask read from arrays
    if not index_arithmetic(gate, set(roots), {}): return None
    # the nodes from `part` up to `value`, elementwise all the way
    reaches = fold([value], lambda u, src: u is part or (u.op in ELEMENTWISE and any(src)))
    between = {u for u, r in reaches.items() if r}
    if part not in between: return None
    parents = parents_of(UOp(Ops.SINK, dtypes.void, tuple(r.value for r in roots.values())))
    inside = between | {scatter}
    if any(p not in inside for u in between for p in parents.get(u, ())): return None
    return gate


def roots_parents(roots: dict[UOp, Root]) -> dict:
    """Each node's parents in the graph of the roots' values (for readers_gate: one walk per scheduling round)."""
    return parents_of(UOp(Ops.SINK, dtypes.void, tuple(r.value for r in roots.values())))


def readers_gate(part: UOp, roots: dict[UOp, Root], parents: dict) -> UOp | None:
    """The gate of the gated writes that are all `part`'s readers, when `part` (a value the fusion rule stores: a
    product both `c[i:, i] = c[i, i:] = d[:, i] @ d[:, i:]` write) reaches each of them as the written value
    through elementwise operations and reshapes nothing else reads, and every write has the same gate (a window's
    `i < length`): then only the part's elements under that gate are needed, and its kernel stores just those
    (its loop runs over the window only, see codegen/narrow.py). None otherwise. `parents`: roots_parents(roots)."""
    if part.shape is None: return None
    between, writes, todo = {part}, set(), [part]
    while todo:
        u = todo.pop()
        for p in parents.get(u, ()):
            if p.op is Ops.SCATTER and p.arg[2] and p.src[1] is u and u is not p.src[0] and u not in p.src[2:]:
                writes.add(p)
            elif (p.op in ELEMENTWISE or p.op is Ops.RESHAPE) and p not in roots:
                if p not in between:
                    between.add(p)
                    todo.append(p)
            else: return None   # read otherwise: every element may be needed
    gates = {w.src[-1] for w in writes}
    if len(gates) != 1: return None
    gate = gates.pop()
    # a window's `i < length` (positions and scalars, which narrow loops), not a mask read from arrays; reshapes
    # keep the elements' row-major order, so the gate reshaped is the part's
    if gate.size != part.size or not index_arithmetic(gate, set(roots), {}): return None
    return gate if gate.shape == part.shape else gate.reshape(part.shape)


def _graph_node(kernel_value: UOp, value: UOp) -> dict[UOp, UOp]:
    """The graph node each node of a kernel's value stands for (the kernel's value is the graph's with realized
    values replaced by their buffers: walked side by side)."""
    out: dict[UOp, UOp] = {}

    def side_by_side(pair: tuple[UOp, UOp]) -> list[tuple[UOp, UOp]]:
        """Keeps the first graph node a kernel node is reached with, and walks on below it only then. (Sources
        in reverse: the order of the walk this replaced, which decides which graph node is first.)"""
        k, g = pair
        if k in out: return []
        out[k] = g
        if k.op is Ops.BUFFER and g.op is not Ops.BUFFER: return []   # realized: a load of its buffer
        return list(zip(k.src, g.src))[::-1] if len(k.src) == len(g.src) else []
    for _ in preorder([(kernel_value, value)], side_by_side): pass
    return out


def _first_read_elsewhere(kernel_value: UOp, buf: UOp, index: UOp, lowered: LoweredKernel) -> UOp | None:
    """In a scatter kernel's value (SCATTER(buf, values, *indices), realized values as buffers), a small node to
    store first that reads `buf` at places other than the element being written: each view of `buf` (a chain of
    movement ops and gathers on it) is lowered at the kernel's index; one whose load is not at `index` is read
    elsewhere, and the smallest node between it and the value (the view before a broadcast, a reduction's
    result) is returned. None when none is found (the whole value is then stored first)."""
    values = kernel_value.src[1]
    assert values.shape is not None
    views = (*MOVEMENT, Ops.GATHER)
    parents: dict[UOp, UOp] = {}
    for u in toposort([values]):
        for s in u.src: parents.setdefault(s, u)
    # views of buf: movement and gathers down to buf itself
    on_buf: dict[UOp, bool] = fold([values], lambda u, src: u is buf or (u.op in views and bool(src) and src[0]))
    tops = [u for u in on_buf if on_buf[u] and u is not buf
            and not on_buf.get(parents.get(u), False)]  # type: ignore[arg-type]  # None (no parent): False
    for top in tops:
        path, u = [top], top
        while u in parents and u is not values:
            u = parents[u]
            path.append(u)
        same_place = top.shape == values.shape and all(p.op in ELEMENTWISE for p in path[1:]) and \
            _loads_at(top, buf, lowered, values.shape) == {index}
        if same_place: continue
        below = [top]
        while below[-1].src and below[-1].src[0] is not buf: below.append(below[-1].src[0])
        part = min((p for p in below + path if p.op is not Ops.BUFFER), key=lambda p: p.size)
        # a part as large as the value itself (a stencil's shifted views): storing the value once is cheaper
        return part if part.size < values.size else None
    return None


def _loads_at(view: UOp, buf: UOp, lowered: LoweredKernel, shape: tuple[int, ...]) -> set:
    """The indices at which `view`, lowered at the kernel's own loop index, loads `buf`."""
    lw = Lowerer()
    idx: list[UOp] = []
    chain: list[UOp] = []
    for n in shape:   # the same ranges as lower_kernel made (UOps are interned)
        if n == 1: idx.append(UOp.const(dtypes.index, 0))
        else:
            r = lw.new_range(n, "loop", tuple(chain))
            chain.append(r)
            idx.append(r)
    low = lw.lower(view, tuple(idx))
    return {_simplified(u.src[1]) for u in toposort([low]) if u.op is Ops.LOAD and u.src[0] is buf}


def _simplified(index: UOp) -> UOp:
    """An index expression in the codegen's canonical form (two ways of writing one index compare equal)."""
    return graph_rewrite(index, symbolic)
