"""Scheduling: callification, fusion into kernels, kernel order and memory planning.

`callify` turns a traced function graph into a CALL: the body with a PARAM for every input and every captured
constant, bound to BUFFER nodes. `create_schedule` then decides which values are stored in buffers ("realized"):
outputs, scans and explicit `.contiguous()` always; any other value only where computing it inside its consumers
would repeat work. Everything else is fused into the kernel that consumes it.

The fusion rule. Lowering a kernel counts how many times each value is evaluated once loop-invariant code is
hoisted (see codegen/lower.py). A value is realized when
  - it is a reduction evaluated more times than it has elements (it would run again for every repeat:
    `(A @ B) @ C`, or a reduction broadcast along a loop outside its own), or
  - it is elementwise and the repeated evaluations cost more than storing it: (evaluations - size) * cost >
    RECOMPUTE_LIMIT * size, with cost counting the ALU ops per element (transcendental ones as
    TRANSCENDENTAL_COST, GCD as GCD_COST, loads and reductions as 1: a reduction is hoisted, not repeated per
    element).
An intermediate whose consumers all ended up computing it inline is dropped again.
So `sum(a * a)` is one kernel, softmax over rows is one kernel (each row's max and sum are inner loops hoisted
out of the column loop), and a matmul followed by bias and relu is one kernel.
"""
from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from numfn.codegen.lower import LoweredKernel, RealizeCheck, kernel_domain, lower_kernel
from numfn.dtype import dtypes
from numfn.ir.symbolic import constant_branches, symbolic
from numfn.ir.uop import ALU, ELEMENTWISE, MOVEMENT, TRANSCENDENTAL, Buffer, Ops, UOp, graph_rewrite, substitute, toposort

if TYPE_CHECKING:
    from numfn.extern import ExternKernel

RECOMPUTE_LIMIT = 16
TRANSCENDENTAL_COST = 8
GCD_COST = 64   # a loop of up to 2 * bits steps (binary GCD): about 100 operations for random 64-bit operands


# ---------------------------------------------------------------------------------------------------------------
# callify

def callify(function_graph: UOp, input_count: int, writes: int = 0) -> UOp:
    """CALL(body, *buffers): the simplified function graph with captured constants turned into PARAMs (slots after
    the inputs), bound to the input and constant BUFFERs in slot order. CALL.arg holds the output buffers: one for
    every entry of the graph's SINK but the last `writes` (writes into inputs, which have their inputs' buffers)."""
    body = graph_rewrite(function_graph, symbolic, name="callify: symbolic")
    consts = [u for u in toposort([body]) if u.op is Ops.BUFFER and u.arg.category == "constant"]
    params, bindings = {}, []
    for i, u in enumerate(consts):
        assert u.shape is not None
        slot = input_count + i
        params[u] = UOp(Ops.PARAM, u.dtype, (), (slot, u.shape))
        bindings.append(UOp(Ops.BUFFER, u.dtype, (), Buffer("constant", i, u.shape, u.arg.data, u.arg.data_hash)))
    if params: body = substitute(body, params)
    inputs = {}
    for u in toposort([body]):
        if u.op is Ops.PARAM and u.arg[0] < input_count: inputs[u.arg[0]] = u
    input_bufs = [UOp(Ops.BUFFER, inputs[i].dtype, (), Buffer("input", i, cast(tuple[int, ...], inputs[i].shape)))
                  if i in inputs else
                  UOp(Ops.BUFFER, dtypes.void, (), Buffer("input", i, ())) for i in range(input_count)]
    outputs = tuple(Buffer("output", i, cast(tuple[int, ...], o.shape))
                    for i, o in enumerate(body.src[:len(body.src) - writes]))
    return UOp(Ops.CALL, dtypes.void, (body, *input_bufs, *bindings), outputs)


# ---------------------------------------------------------------------------------------------------------------
# the schedule

@dataclass(frozen=True)
class Kernel:
    """One loop nest: `ast` is SINK(STORE(BUFFER, value[, gate]), ...) with every value of shape `shape` (a gate, of
    that shape too, says where the value is stored)."""
    name: str
    ast: UOp
    shape: tuple[int, ...]

    @property
    def outputs(self) -> tuple[UOp, ...]:
        return tuple(dict.fromkeys(st.src[0] for st in self.ast.src))

    @property
    def inputs(self) -> tuple[UOp, ...]:
        outs = set(self.outputs)
        found = [u for u in toposort([self.ast]) if u.op is Ops.BUFFER and u not in outs and u.arg.size]
        return tuple(sorted(found, key=lambda u: (_CATEGORY_ORDER[u.arg.category], u.arg.number)))

    @property
    def buffers(self) -> tuple[UOp, ...]:
        """Kernel parameters in order: buffers written, then buffers read."""
        return self.outputs + self.inputs


_CATEGORY_ORDER = {"output": 0, "intermediate": 1, "input": 2, "constant": 3}


@dataclass(frozen=True)
class ExecItem:
    """A kernel and the program buffers bound to its parameters; or an extern call (numfn.extern.ExternKernel,
    with `lowered` None), or a loop or branch (LoopKernel, `lowered` None)."""
    kernel: Kernel | LoopKernel | ExternKernel
    lowered: LoweredKernel | None

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        return tuple(u.arg for u in self.kernel.buffers)

    @property
    def op_count(self) -> int:
        """ALU operations the kernel executes (a reduction counts one per element it combines, a GCD GCD_COST); for
        an extern call, the routine's floating-point operations."""
        if self.lowered is None:
            assert not isinstance(self.kernel, Kernel)   # a Kernel always has its lowered form
            return self.kernel.flops
        return sum(c * (u.src[0].size // max(u.size, 1) if u.op is Ops.REDUCE_AXIS else GCD_COST if u.op is Ops.GCD
                        else 1)
                   for u, c in self.lowered.evaluations.items() if u.op in ALU or u.op is Ops.REDUCE_AXIS)

    @property
    def bytes_moved(self) -> int:
        return sum(u.arg.size * u.dtype.itemsize for u in self.kernel.buffers)


class Schedule(tuple):
    """The kernels of a program in execution order (a tuple of ExecItems) that prints as a table."""

    def __str__(self) -> str:
        rows = [("kernel", "shape", "writes", "reads", "ops", "bytes")]
        for ei in self:
            k = ei.kernel
            rows.append((k.name, "x".join(map(str, k.shape)) or "()", " ".join(repr(u.arg) for u in k.outputs),
                         " ".join(repr(u.arg) for u in k.inputs) or "-", str(ei.op_count), _fmt_bytes(ei.bytes_moved)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Schedule({len(self)} kernels)\n{self}"


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB": return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


# ---------------------------------------------------------------------------------------------------------------
# realization

def _element_cost(u: UOp, realized, memo: dict) -> int:
    """Estimated ALU work to compute one element of `u` inside a consumer (realized values cost a load)."""
    stack = [u]   # iterative (post-order): chains of operations can be a hundred thousand deep
    while stack:
        x = stack[-1]
        if x in memo:
            stack.pop()
            continue
        leaf = x.op in (Ops.CONST, Ops.IOTA, Ops.BUFFER, Ops.REDUCE_AXIS) or x in realized
        srcs = () if leaf else x.src[:1] if x.op in MOVEMENT else x.src
        missing = [s for s in srcs if s not in memo]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        if x.op in (Ops.CONST, Ops.IOTA): c = 0
        # a reduction costs a load here: were it evaluated again at another index, the reduction rule realizes it
        elif leaf: c = 1
        elif x.op in MOVEMENT: c = memo[x.src[0]]
        else: c = (TRANSCENDENTAL_COST if x.op in TRANSCENDENTAL else GCD_COST if x.op is Ops.GCD else 1) + \
            sum(memo[s] for s in srcs)
        memo[x] = c
    return memo[u]


def _index_arithmetic(u: UOp, realized, memo: dict, budget: int = 32) -> bool:
    """Whether `u` is a little integer or boolean arithmetic on positions (IOTA), constants and scalars (a window's
    indices and its mask `i < length`): recomputed wherever it is used, never stored, so that kernels see the
    expressions themselves (codegen narrows loops to the window from them) rather than loads of stored arrays."""
    if u in memo: return memo[u]
    if u.op in (Ops.CONST, Ops.IOTA): out = True
    elif u.op is Ops.BUFFER or u in realized: out = u.size == 1
    elif not (u.dtype.is_int or u.dtype is dtypes.bool) or budget <= 0 or u.op is Ops.GCD: out = False
    elif u.op in MOVEMENT or u.op in ELEMENTWISE:
        out = all(_index_arithmetic(s, realized, memo, budget - 1) for s in u.src)
    else: out = False
    memo[u] = out
    return out


def _realizable(u: UOp, realized, index_memo: dict | None = None) -> bool:
    return not (u.op in (Ops.BUFFER, Ops.CONST, Ops.IOTA, Ops.EMPTY) or u.op in MOVEMENT or u in realized
                or u.size == 0 or _index_arithmetic(u, realized, {} if index_memo is None else index_memo))


def _should_realize(u: UOp, evaluations: int, realized, cost_memo, copies: int = 1) -> bool:
    if not _realizable(u, realized, cost_memo.setdefault(("index",), {})): return False   # (its own memo)
    # a value inlined at more than MAX_COPIES distinct places of one kernel multiplies the program's size,
    # whatever the evaluation counts say (values hoisted out of loops are evaluated few times each)
    if copies > MAX_COPIES and u.op is not Ops.REDUCE_AXIS: return True
    extra = evaluations - u.size
    if extra <= 0: return False
    if u.op is Ops.REDUCE_AXIS: return True
    return extra * _element_cost(u, realized, cost_memo) > RECOMPUTE_LIMIT * u.size


# A value inlined at more distinct indices of one kernel than this is stored (bounds code size)
MAX_COPIES = 32
# Kernels compute chains of at most MAX_KERNEL_DEPTH elementwise operations per element, and at most MAX_KERNEL_OPS
# operations in all: LLVM's time grows faster than a loop body's length (a chain of 800 operations compiles at
# 0.8 ms an operation, 2000 at 3 ms; 400 independent ones in one loop at 1.1 ms, 3200 at 2.3 ms), so a longer chain
# is cut by storing a value in the middle, and realized values are not grouped into one kernel beyond either bound
MAX_KERNEL_DEPTH = 256
MAX_KERNEL_OPS = 1024


class _RealizeCheck(RealizeCheck):
    """The realization rule applied while kernels are lowered (codegen.lower.RealizeCheck): a value is stored as
    soon as its evaluations so far make `_should_realize` true, and from then on is not expanded again, so the
    analysis of a program that inlines everything costs time bounded by its size times a constant, however many
    times that program would repeat work (stencils of stencils: 5**steps)."""
    max_depth = MAX_KERNEL_DEPTH

    def __init__(self, realized: set, origin: dict):
        self.realized, self.origin = set(realized), origin
        self.evaluations: Counter = Counter()
        self.cost_memo: dict = {}

    def stop(self, u: UOp, trips: int, copies: int) -> bool:
        u = self.origin.get(u, u)
        self.evaluations[u] += trips
        # only a value evaluated at several indices can multiply work; one evaluated once per iteration of loops
        # larger than itself (a pad's border, a broadcast) is decided after the round, with the costs it leaves
        if copies < 2: return False
        return self._decided(u, _should_realize(u, self.evaluations[u], self.realized, self.cost_memo, copies))

    def cut(self, u: UOp) -> bool:
        u = self.origin.get(u, u)
        return self._decided(u, _realizable(u, self.realized))

    def _decided(self, u: UOp, realize: bool) -> bool:
        if realize:   # values above it now cost a load of it, not its recomputation
            self.realized.add(u)
            self.cost_memo.clear()
        return realize


def _chain_depth(u: UOp, realized: set, memo: dict) -> int:
    """Elementwise operations on the longest chain of `u`'s kernel value (values in `realized` are loads)."""
    stack = list(u.src)
    while stack:
        x = stack[-1]
        if x in memo:
            stack.pop()
            continue
        if x in realized:
            memo[x] = 0
            continue
        missing = [s for s in x.src if s not in memo]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        memo[x] = max((memo[s] for s in x.src), default=0) + (x.op in ELEMENTWISE)
    return max((memo[s] for s in u.src), default=0) + (u.op in ELEMENTWISE)


# A reduction of at least SPLIT_MIN_ELEMENTS elements into at most SPLIT_MAX_OUTPUTS results is split in two: partial
# results over SPLIT_PARTS chunks first (a kernel with a parallel outer loop), then a small reduction of those.
SPLIT_MIN_ELEMENTS = 1 << 15
SPLIT_MAX_OUTPUTS = 16
SPLIT_PARTS = 256


def split_reductions(graph: UOp) -> UOp:
    """Large reductions into few results, rewritten as a reduction of realized partial reductions."""
    mapping = {}
    for u in toposort([graph]):
        if u.op is not Ops.REDUCE_AXIS or u.size > SPLIT_MAX_OUTPUTS: continue
        src, (op, axes) = u.src[0], u.arg
        assert src.shape is not None
        n = math.prod(src.shape[a] for a in axes)
        parts = max((p for p in range(2, SPLIT_PARTS + 1) if n % p == 0), default=1)
        if n < SPLIT_MIN_ELEMENTS or parts < 8: continue
        keep = tuple(a for a in range(len(src.shape)) if a not in axes)
        kept = tuple(src.shape[a] for a in keep)
        chunks = src.permute(keep + axes).reshape(kept + (parts, n // parts))
        partial = UOp(Ops.CONTIGUOUS, u.dtype, (chunks.reduce(op, (len(kept) + 1,)),))
        mapping[u] = partial.reduce(op, (len(kept),)).reshape(cast(tuple[int, ...], u.shape))
    return substitute(graph, mapping) if mapping else graph


@dataclass
class _Root:
    value: UOp
    outputs: list = field(default_factory=list)   # the function's output BUFFERs holding this value
    targets: list = field(default_factory=list)   # where its kernel stores it (planned; the first is its home)
    alias: UOp | None = None   # an extern call's in-out input: stored into the home of this RESULT
    keep: bool = False         # never dropped: stored for a write in place (_write_hazard), or a loop's state
    last: bool = False         # its kernel runs after every other (it writes an argument's memory back)
    gate: UOp | None = None    # stored only where this holds (the only reader, a gated write, needs no more)


def create_schedule(call: UOp, first: int = 0, blocks=None) -> tuple[Schedule, MemoryPlan]:
    """Fuse the CALL's body into kernels and order them; returns the schedule and the intermediate memory plan.

    The body's SINK holds the outputs (bound to CALL.arg's output buffers), then values with no buffer of their
    own: checks' arrays are outputs too; writes into arguments are SCATTER chains on input buffers. Intermediate
    buffers are numbered from `first`; loops' inner schedules take fresh blocks of numbers from `blocks`."""
    blocks = itertools.count(1) if blocks is None else blocks
    body, bindings = call.src[0], call.src[1:]
    params = {u: bindings[u.arg[0]] for u in toposort([body]) if u.op is Ops.PARAM}
    graph = substitute(body, params)
    if any(u.op is Ops.LOOP and u.src[0].op is Ops.CONST and u.arg.kind == "cond" for u in toposort([graph])):
        graph = graph_rewrite(graph, constant_branches)   # a branch on a constant the enclosing loop binds
    graph = split_reductions(graph)
    roots: dict[UOp, _Root] = {}
    writebacks = set()
    for i, out in enumerate(graph.src):
        value = out.src[0] if out.op is Ops.CONTIGUOUS else out
        root = roots.setdefault(value, _Root(value))
        if i < len(call.arg): root.outputs.append(UOp(Ops.BUFFER, value.dtype, (), call.arg[i]))
        else: writebacks.add(value)
    for u in toposort([graph]):
        if u.op is Ops.SCAN or (u.op is Ops.CONTIGUOUS and u not in graph.src):
            v = u if u.op is Ops.SCAN else u.src[0]
            if v.op not in (Ops.BUFFER, Ops.CONST): roots.setdefault(v, _Root(v))
    stripped = _without_contiguous(graph)
    graph = stripped[graph]
    # values that differ only by CONTIGUOUS are one root, holding every output of them (x.contiguous() returned,
    # or a copy returned next to the value it copies)
    merged: dict[UOp, _Root] = {}
    for v, r in roots.items():
        value = stripped[v]
        if value.op is Ops.BUFFER and not r.outputs: continue
        if value in merged: merged[value].outputs += r.outputs
        else:
            r.value = value
            merged[value] = r
    roots = merged
    externs = _prepare_externs(graph, roots) + _prepare_loops(graph, roots, blocks)

    versions = _Versions({stripped.get(w, w) for w in writebacks})
    fixes = 0
    # kernels evaluate copies of graph nodes whose realized parts became loads; `origin` maps them back, so that a
    # value realized later is the graph's own node (a copy would hold the buffers of this round's numbering)
    origin: dict[UOp, UOp] = {}
    while True:
        versions.plan(roots)
        kernels, fix = _build_kernels(roots, versions, externs, origin, _RealizeCheck(set(roots), origin),
                                      first)
        if fix is not None:   # a write that cannot happen in place as planned: plan again with the fix
            fixes += 1
            if fixes > 10 * len(roots) + 100:
                raise RuntimeError("the scheduler cannot order the writes of this program")
            fix()
            continue
        # the values to store: those decided while the kernels were lowered (see _RealizeCheck), then those whose
        # evaluations say so once they are stored
        lowered = [lk for _, lk in kernels if lk is not None]   # (extern calls have no loops)
        new = list(dict.fromkeys(origin.get(u, u) for lk in lowered for u in lk.realize))
        evaluations: Counter = Counter()
        for lk in lowered: evaluations.update({origin.get(u, u): n for u, n in lk.evaluations.items()})
        realized = set(roots) | set(new)
        cost_memo: dict[UOp, int] = {}
        repeated = [u for u, n in evaluations.items() if _should_realize(u, n, realized, cost_memo)]
        # a gather of a gather (x[k, :k][:, None]) repeats as often as what it reads: storing the outer one alone
        # (one copy) makes the inner ones evaluated once per element of it, decided again in the next round
        read_by_gathers = {v.src[0] for v in repeated if v.op is Ops.GATHER}
        new += [u for u in repeated if u not in read_by_gathers]
        # reductions first: while one repeats, everything inside it repeats too, so elementwise counts mislead
        new = [u for u in new if u.op is Ops.REDUCE_AXIS] or new
        new = [u for u in new if u not in roots]
        if not new: break
        for v in new: roots[v] = _Root(v)

    # an intermediate that every consumer ended up computing inline needs no buffer (a version of memory written
    # in place by later writes is needed whoever reads it)
    loaded = {u.arg for k, _ in kernels for u in k.inputs}
    unused = [v for v, r in roots.items() if r.targets[0].arg.category == "intermediate"
              and r.targets[0].arg not in loaded and v not in versions.chain_of and v.op is not Ops.RESULT
              and r.alias is None and not r.outputs and not r.keep
              and not _alone(v)]   # a scan has a kernel of its own even when it is empty
    if unused:
        for v in unused: del roots[v]
        versions.plan(roots)
        kernels, fix = _build_kernels(roots, versions, externs, first=first)
        assert fix is None

    items = Schedule(ExecItem(k, lk) for k, lk in kernels)
    return items, plan_memory(items)


class _Versions:
    """Memory written in place. A SCATTER is a new version of its old value's memory: chains of versions
    x0 -> x1 = SCATTER(x0, ...) -> x2 = SCATTER(x1, ...) share one buffer (an input's own buffer when x0 is an
    input, else the output buffer of the last version if it is an output, else an intermediate), written in turn
    by x0's kernel and each scatter kernel. Kernels reading a version run before the next version is written.
    Where that order is impossible (a kernel needs two versions at once, or a reader of a version depends on the
    next one), or where two writes start from the same version, the write starts from a copy instead: `copies`
    maps such a SCATTER to a copy of its old value in a fresh buffer (see `_copy`)."""

    def __init__(self, writebacks: set[UOp]):
        # memory the program may overwrite in place: an input's, only by the writes into that input (a value
        # that simplified to an input, such as x * 1, is not the input's memory)
        self.in_place = {u for w in writebacks for u in _chain_down(w)}
        self.copies: dict[UOp, UOp] = {}
        self.output_copies: set[UOp] = set()   # copies of versions into outputs that are not their chain's home
        self.prev: dict[UOp, UOp] = {}        # SCATTER -> the version it overwrites (its old value, or its copy)
        self.chain_of: dict[UOp, UOp] = {}    # every version (first ones too) -> the first version of its chain
        self.solo: set[UOp] = set()           # roots that get kernels of their own (they read different versions)

    def plan(self, roots: dict[UOp, _Root]) -> None:
        """Make every SCATTER and the version it overwrites a root, and give each chain one home buffer (the
        targets of other roots are reset to their outputs: _build_kernels gives them homes)."""
        for copy in self.output_copies: roots.pop(copy, None)
        self.output_copies = set()
        for r in roots.values(): r.targets = list(r.outputs)
        for u in toposort([r.value for r in roots.values()]):
            if u.op is not Ops.SCATTER: continue
            roots.setdefault(u, _Root(u))
            # an input's memory (or a version the caller's array must end with) is written only by the writes
            # into that input: any other write of one of its versions starts from a copy
            if (u.src[0].op is Ops.BUFFER or u.src[0] in self.in_place) and u not in self.in_place \
                    and u not in self.copies:
                self.copies[u] = _copy(u.src[0], len(self.copies))
            old = self.copies.get(u, u.src[0])
            if old.op is not Ops.BUFFER: roots.setdefault(old, _Root(old))
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
            outputs = [] if _swapped_state(first) else roots[chain[-1]].outputs
            home = first if first.op is Ops.BUFFER else outputs[0] if outputs else None
            for v in chain:
                if v.op is Ops.BUFFER: continue
                extra = [t for t in roots[v].outputs if t is not home]
                if extra:
                    copy = _copy(v, ("output", extra[0].arg.number))
                    roots[copy] = _Root(copy, extra, list(extra))
                    self.output_copies.add(copy)
                roots[v].targets = [home] if home is not None else []
            base = chain[-1]
            while base.op is Ops.SCATTER: base = base.src[0]
            if first.op is not Ops.BUFFER and base.op is Ops.BUFFER and chain[-1] in self.in_place:
                # writes into an argument that had to start from a copy: the last version goes back into the
                # argument's memory, after everything that reads the argument as it was
                back = _copy(chain[-1], ("argument", base.arg.number))
                roots[back] = _Root(back, [], [base], last=True)
                self.output_copies.add(back)
                self.solo.add(back)

    def next_writers(self) -> dict[UOp, list[UOp]]:
        out: dict[UOp, list[UOp]] = {}
        for s, old in self.prev.items(): out.setdefault(old, []).append(s)
        return out

    def copy_fix(self, s: UOp):
        def fix(): self.copies[s] = _copy(s.src[0], len(self.copies))
        return fix


def _swapped_state(u: UOp) -> bool:
    """A while loop's result whose buffer swaps with a next one each iteration (the body does not write it in
    place): after the loop the state is in whichever of the two the last iteration wrote, so the buffer can only be
    an intermediate (an output or an argument's memory must hold the value at a fixed place)."""
    if u.op is not Ops.RESULT or u.src[0].op is not Ops.LOOP or u.src[0].arg.kind != "while": return False
    region = u.src[0].arg
    return not _writes_in_place(region.bodies[0].src[u.arg], region.tag, u.arg)


def _copy(u: UOp, tag) -> UOp:
    """A copy of `u` in memory of its own: CONTIGUOUS(u) with a tag that keeps two copies of one value apart (each
    is written in place by its own chain of writes)."""
    if u.op is Ops.EMPTY: return UOp(Ops.EMPTY, u.dtype, (), (u.arg[0], ("copy", tag)))   # nothing to copy
    return UOp(Ops.CONTIGUOUS, u.dtype, (u,), ("copy", tag))


def _is_copy(u: UOp) -> bool:
    return u.op is Ops.CONTIGUOUS and isinstance(u.arg, tuple) and u.arg[0] == "copy"


def _chain_down(u: UOp):
    while u.op is Ops.SCATTER:
        yield u
        u = u.src[0]


def _without_contiguous(graph: UOp) -> dict[UOp, UOp]:
    """Every node of `graph` mapped to itself with the CONTIGUOUS markers removed, in its sources too (a realized
    value that reads another one, x.contiguous() inside y.contiguous(), must not keep the inner marker: the roots
    are the stripped values, and a marker left in place would be a second, unrealized copy of one)."""
    done: dict[UOp, UOp] = {}
    for u in toposort([graph]):
        if u.op is Ops.CONTIGUOUS and not _is_copy(u): done[u] = done[u.src[0]]
        else:
            src = tuple(done[s] for s in u.src)
            done[u] = u if src == u.src else UOp(u.op, u.dtype, src, u.arg)
    return done


def _classify_uses(value: UOp, realized: set, memo: dict | None = None) -> tuple[set, set]:
    """Realized values `value` reaches through elementwise ops only (so at its own index: they can be computed
    inline in the same kernel) and those it reaches through a view or a reduction (they must be loaded). A
    SCATTER does not read its old value (it writes on top of it in its buffer). `memo` keeps each value's
    findings: a realized value reached through elementwise ops contributes what its own walk found, so a chain of
    realized values is walked once, not once per value above it."""
    direct: set[UOp] = set()
    loaded: set[UOp] = set()
    # the root's own op counts: the sources of a root that is a view (a.T) or a reduction are not at its index
    srcs = value.src[1:] if value.op is Ops.SCATTER else value.src
    stack, seen = [(s, value.op in ELEMENTWISE) for s in srcs], set()
    while stack:
        u, elementwise = stack.pop()
        if (u, elementwise) in seen: continue
        seen.add((u, elementwise))
        if u in realized and u is not value:
            (direct if elementwise else loaded).add(u)
            if not elementwise: continue
            if memo is not None and u in memo and u.op is not Ops.SCATTER:
                direct |= memo[u][0]
                loaded |= memo[u][1]
                continue
        if u.op is Ops.BUFFER: continue
        keeps = elementwise and u.op in ELEMENTWISE
        stack.extend((s, keeps) for s in u.src)
    if memo is not None: memo[value] = (direct, loaded)
    return direct - loaded, loaded


def _kernel_value(value: UOp, inline: set, home: dict, origin: dict | None = None) -> tuple[UOp, set]:
    """`value` with realized values replaced by loads of their home buffers, except those in `inline` reached
    through elementwise ops only (computed in this kernel at the same index); and the realized values loaded.
    `origin` collects, for each node rebuilt that way, the graph node it stands for."""
    memo: dict = {}
    loaded: set = set()

    def sources(u: UOp, elementwise: bool) -> list:
        """The (node, reached through elementwise ops only) pairs `u` is rebuilt from; [] when it is a load."""
        if u is not value and u in home and not (elementwise and u in inline): return []
        keeps = elementwise and u.op in ELEMENTWISE
        srcs = u.src[1:] if u is value and u.op is Ops.SCATTER else u.src   # a SCATTER's old value is in its buffer
        return [(s, keeps) for s in srcs]

    stack = [(value, True)]   # iterative (post-order): chains of operations can be a hundred thousand deep
    while stack:
        key = stack[-1]
        if key in memo:
            stack.pop()
            continue
        u, elementwise = key
        needs = sources(u, elementwise)
        missing = [k for k in needs if k not in memo]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        if u is not value and u in home and not (elementwise and u in inline):
            out = home[u]
            loaded.add(u)
        elif u.op is Ops.BUFFER:   # an input's memory, read as it is before any write into it
            out = u
            loaded.add(u)
        else:
            src = tuple(memo[k] for k in needs)
            if u is value and u.op is Ops.SCATTER: src = (home[u],) + src   # (its own buffer, not read)
            out = u if src == u.src else UOp(u.op, u.dtype, src, u.arg)
            if out is not u and origin is not None: origin[out] = origin.get(u, u)
        memo[key] = out
    return memo[(value, True)], loaded


def _closure(deps: list[set[int]], start: set[int]) -> set[int]:
    seen, stack = set(start), list(start)
    while stack:
        for d in deps[stack.pop()]:
            if d not in seen: seen.add(d); stack.append(d)  # noqa: E702
    return seen


def _alone(u: UOp) -> bool:
    """Roots that get a kernel of their own: a scan walks its axis in order, a scatter writes at computed places;
    memory whose values do not matter (EMPTY) gets no kernel at all."""
    return u.op in (Ops.SCAN, Ops.SCATTER, Ops.EMPTY)


def _build_kernels(roots: dict[UOp, _Root], versions: _Versions, externs: Sequence[_Extern | _Loop] = (),
                   origin: dict | None = None, check: RealizeCheck | None = None, first: int = 0):
    """(kernels in execution order, None), or (None, fix) when the versions of some memory cannot be ordered as
    planned: calling fix() changes the plan (a write from a copy, or a value realized first). Extern calls
    (`externs`) are steps of their own, ordered among the kernels by what they read and write."""
    # an extern call's in-out inputs come right after their sources, before anything that reads its results
    topo = {u: float(i) for i, u in enumerate(toposort([v for v, r in roots.items() if r.alias is not None] +
                                                       list(roots)))}
    for s, copy in versions.copies.items():   # a copy is written just before the write it starts
        if copy in topo and s in topo: topo[copy] = topo[s] - 0.5
    order = sorted(roots.values(), key=lambda r: topo[r.value])
    # every realized value without a home gets an intermediate buffer; versions of one memory share their chain's
    count = iter(range(first, first + len(order)))
    # the memory of a loop's initial state computed in place: the first version of its chain lives in the state
    starts = {versions.chain_of.get(v, v): result for x in externs if isinstance(x, _Loop)
              for v, result in x.starts.items()}

    def give_home(r: _Root) -> UOp:
        if r.alias is not None: r.targets[:1] = [give_home(roots[r.alias])]
        if not r.targets:
            first = versions.chain_of.get(r.value, r.value)
            if first.op is Ops.BUFFER: r.targets[:1] = [first]
            elif first is not r.value: r.targets[:1] = [give_home(roots[first])]
            elif first in starts: r.targets[:1] = [give_home(roots[starts[first]])]   # a loop's state
            else:
                r.targets[:1] = [UOp(Ops.BUFFER, r.value.dtype, (), Buffer("intermediate", next(count),
                                                                          cast(tuple[int, ...], r.value.shape)))]
        return r.targets[0]

    assigned: set = set()
    for r in order:
        if id(r) in assigned: continue
        chain_first = versions.chain_of.get(r.value)
        if chain_first is not None and chain_first in roots and id(roots[chain_first]) not in assigned:
            give_home(roots[chain_first])
            assigned.add(id(roots[chain_first]))
        give_home(r)
        assigned.add(id(r))
    home = {v: r.targets[0] for v, r in roots.items() if v.op is not Ops.BUFFER}
    realized = set(home)
    # the extern call writing each RESULT (its value is never computed by a kernel), and what each call reads
    written_by = {x.results[i]: e for e, x in enumerate(externs) for i in range(len(x.results))}
    extern_reads: list[Collection[UOp]] = [x.reads(roots) for x in externs]

    # group roots of equal shape into one kernel unless one needs the other through a view or reduction;
    # roots in one group share subexpressions and compute each other inline. A step is a group (an int) or an
    # extern call (("extern", e)).
    groups: list[list[_Root]] = []
    group_of: dict[UOp, int] = {}
    group_deps: list[set] = []
    # kernel size: chains of elementwise operations through members computed inline stay within MAX_KERNEL_DEPTH,
    # and the members' operations together within MAX_KERNEL_OPS (LLVM's time grows faster than a loop body)
    group_ops: list[int] = []
    member_depth: dict[UOp, int] = {}
    depth_memo: dict = {}
    uses_memo: dict = {}

    def step_of(v: UOp):
        return ("extern", written_by[v]) if v in written_by else group_of.get(v)

    def deps(step) -> set:
        if not isinstance(step, tuple): return group_deps[step]
        return {step_of(v) for v in extern_reads[step[1]]} - {None}

    def closure(start: set) -> set:
        seen, stack = set(start), list(start)
        while stack:
            for d in deps(stack.pop()):
                if d not in seen: seen.add(d); stack.append(d)  # noqa: E702
        return seen

    for r in order:
        if r.value.op is Ops.RESULT: continue
        depth = _chain_depth(r.value, realized, depth_memo)
        direct, loaded = _classify_uses(r.value, realized, uses_memo)
        if r.gate is not None: loaded = loaded | set().union(*_classify_uses(r.gate, realized, uses_memo))
        needs = {step_of(v) for v in direct | loaded} - {None}
        old = versions.prev.get(r.value)
        if old is not None and step_of(old) is not None: needs.add(step_of(old))   # the version it overwrites first
        read_by = {("extern", e) for e, reads in enumerate(extern_reads) if r.value in reads}
        target, path = None, depth
        if not _alone(r.value) and r.value not in versions.solo:
            for gi, g in enumerate(groups):
                if g[0].value.shape != r.value.shape or _alone(g[0].value) or g[0].value in versions.solo:
                    continue
                path = depth + max((member_depth[v] for v in direct if group_of.get(v) == gi), default=0)
                if path > MAX_KERNEL_DEPTH or group_ops[gi] + depth > MAX_KERNEL_OPS: continue
                if gi in {group_of.get(v) for v in loaded} or gi in closure(needs - {gi}): continue
                if read_by & closure({gi}): continue
                target = gi
                break
        if target is None:
            groups.append([])
            group_deps.append(set())
            group_ops.append(0)
            target, path = len(groups) - 1, depth
        group_ops[target] += depth
        member_depth[r.value] = path
        groups[target].append(r)
        group_deps[target] |= needs - {target}
        group_of[r.value] = target
    last = {gi for gi, g in enumerate(groups) if any(r.last for r in g)}
    for gi in last:   # after every other step (the write-backs among themselves in any order)
        group_deps[gi] |= (set(range(len(groups))) - last) | {("extern", e) for e in range(len(externs))}

    # the kernels' values, and which realized values (so which versions of memory) each loads
    values, reads = [], []
    gates = []
    for g in groups:
        members = {r.value for r in g}
        built = [_kernel_value(r.value, members, home, origin) for r in g]
        gated = [_kernel_value(r.gate, set(), home, origin) if r.gate is not None else None for r in g]
        values.append([v for v, _ in built])
        gates.append([b[0] if b is not None else None for b in gated])
        reads.append(set().union(*(ld for _, ld in built), *(b[1] for b in gated if b is not None)))
    for e, rs in enumerate(extern_reads):   # an extern call reading a version runs before the next is written
        for v in rs:
            for s in versions.next_writers().get(v, ()):
                if s in group_of: group_deps[group_of[s]].add(("extern", e))

    # versions: a kernel reading one runs before the next one is written; two writes cannot start from one version
    writers = versions.next_writers()
    for ws in writers.values():
        if len(ws) > 1: return None, versions.copy_fix(max(ws, key=lambda u: topo[u]))
    chain_reads: dict[tuple[int, UOp], set[UOp]] = {}
    for gi, rs in enumerate(reads):
        for v in rs:
            if v in versions.chain_of: chain_reads.setdefault((gi, versions.chain_of[v]), set()).add(v)
    for (gi, _), vs in chain_reads.items():
        if len(vs) > 1 and len(groups[gi]) > 1:   # a kernel of several values reading two versions: split it
            return None, lambda g=groups[gi]: versions.solo.update(r.value for r in g)
        if len(vs) > 1:   # one value needs two versions of one memory: the writes after the oldest use a copy
            return None, versions.copy_fix(writers[min(vs, key=lambda u: topo[u])][0])
    for gi, rs in enumerate(reads):
        for v in rs:
            for s in writers.get(v, ()):
                w = group_of[s]
                if w == gi: continue
                if w in closure({gi}):   # the reader needs the new version: write a copy instead
                    return None, versions.copy_fix(s)
                group_deps[w].add(gi)

    # kernels and extern calls run after the kernels and calls that write what they read
    steps = list(range(len(groups))) + [("extern", e) for e in range(len(externs))]
    ordered: list = []
    done: set = set()
    while len(ordered) < len(steps):
        step = next((s for s in steps if s not in done and deps(s) <= done), None)
        if step is None:   # the versions' order met the extern calls' in a cycle: a write starts from a copy
            stuck = [r.value for s in steps if s not in done and not isinstance(s, tuple) for r in groups[s]
                     if r.value.op is Ops.SCATTER and r.value not in versions.copies]
            if not stuck: raise RuntimeError("the scheduler cannot order the writes of this program")
            return None, versions.copy_fix(max(stuck, key=lambda u: topo[u]))
        ordered.append(step)
        done.add(step)

    kernels: list[tuple[Kernel | LoopKernel | ExternKernel, LoweredKernel | None]] = []
    names: Counter[str] = Counter()
    for gi in ordered:
        if isinstance(gi, tuple):
            x = externs[gi[1]]
            name = x.name_hint()
            names[name] += 1
            if names[name] > 1: name = f"{name}n{names[name] - 1}"
            kernels.append((x.kernel(name, roots, home), None))
            continue
        if groups[gi][0].value.op is Ops.EMPTY: continue
        # no element to compute (a write into an empty array): the codegen drops a loop of no iterations, and the
        # loops inside it would then run once, out of the array's bounds
        if 0 in kernel_domain(groups[gi][0].value): continue
        stores = tuple(UOp(Ops.STORE, dtypes.void, (t, v) if gate is None else (t, v, gate))
                       for r, v, gate in zip(groups[gi], values[gi], gates[gi]) for t in r.targets)
        ast = UOp(Ops.SINK, dtypes.void, stores)
        shape = kernel_domain(groups[gi][0].value)
        lowered = lower_kernel(ast, check)
        hazard = _write_hazard(groups[gi][0].value, lowered, stores[0].src[1])
        if hazard is not None:
            if hazard in roots: return None, versions.copy_fix(groups[gi][0].value)
            gate = _demand_gate(hazard, groups[gi][0].value, roots)
            return None, lambda h=hazard, g=gate: roots.setdefault(h, _Root(h, keep=True, gate=g))
        kind = "S" if any(r.value.op is Ops.SCAN for r in groups[gi]) else \
            "W" if any(r.value.op is Ops.SCATTER for r in groups[gi]) else \
            "R" if any(u.op is Ops.REDUCE for u in toposort([lowered.sink])) else "E"
        name = f"{kind}_{'_'.join(map(str, shape))}" if shape else f"{kind}_scalar"
        names[name] += 1
        if names[name] > 1: name = f"{name}n{names[name] - 1}"
        kernels.append((Kernel(name, ast, shape), lowered))
    return kernels, None


def _write_hazard(value: UOp, lowered: LoweredKernel, kernel_value: UOp | None = None) -> UOp | None:
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
        return next(s for s in value.src[2:] if any(u.op is Ops.BUFFER or u.op is Ops.SCATTER for u in s.toposort()))
    index = _simplified(index)
    bad = [u for u in toposort([store.src[2]]) if u.op is Ops.LOAD and u.src[0] is buf and u.arg != "accumulate"
           and (combine is not None or not injective or _simplified(u.src[1]) is not index)]
    if not bad: return None
    if combine is not None or not injective or kernel_value is None: return value.src[1]
    part = _first_read_elsewhere(kernel_value, buf, index, lowered)
    return value.src[1] if part is None else _graph_node(kernel_value, value).get(part, value.src[1])


def _demand_gate(part: UOp, scatter: UOp, roots: dict[UOp, _Root]) -> UOp | None:
    """The gate of a gated write (a window's `L[k + 1:, k] = ...`, written where `i < length`) when `part`, stored
    first for it (see _write_hazard), is read by nothing else and reaches the written values through elementwise
    operations: then only the part's elements under the gate are needed, and its kernel stores just those (the
    codegen then runs its loop over the window only, see codegen/narrow.py)."""
    if scatter.op is not Ops.SCATTER or not scatter.arg[2]: return None
    value, gate = scatter.src[1], scatter.src[-1]
    if part.shape != value.shape or gate.shape != value.shape: return None
    # a window's `i < length` (positions and scalars, which narrow loops), not a mask read from arrays
    if not _index_arithmetic(gate, set(roots), {}): return None
    between: set[UOp] = set()   # the nodes from `part` up to `value`, elementwise all the way
    reaches: dict[UOp, bool] = {}
    for u in toposort([value]):
        reaches[u] = u is part or (u.op in ELEMENTWISE and any(reaches.get(s, False) for s in u.src))
        if reaches[u]: between.add(u)
    if part not in between: return None
    parents = _parents(UOp(Ops.SINK, dtypes.void, tuple(r.value for r in roots.values())))
    inside = between | {scatter}
    if any(p not in inside for u in between for p in parents.get(u, ())): return None
    return gate


def _graph_node(kernel_value: UOp, value: UOp) -> dict[UOp, UOp]:
    """The graph node each node of a kernel's value stands for (the kernel's value is the graph's with realized
    values replaced by their buffers: walked side by side)."""
    out: dict[UOp, UOp] = {}
    stack = [(kernel_value, value)]
    while stack:
        k, g = stack.pop()
        if k in out: continue
        out[k] = g
        if k.op is Ops.BUFFER and g.op is not Ops.BUFFER: continue   # realized: a load of its buffer
        if len(k.src) == len(g.src): stack.extend(zip(k.src, g.src))
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
    on_buf: dict[UOp, bool] = {}
    for u in toposort([values]):   # views of buf: movement and gathers down to buf itself
        on_buf[u] = u is buf or (u.op in views and on_buf.get(u.src[0], False))
    tops = [u for u in on_buf if on_buf[u] and u is not buf and not on_buf.get(parents.get(u), False)]  # type: ignore[arg-type]  # None (no parent): False
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
    from numfn.codegen.lower import _Lowerer
    lw = _Lowerer()
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
    from numfn.ir.symbolic import constant_branches, symbolic
    return graph_rewrite(index, symbolic)


# ---------------------------------------------------------------------------------------------------------------
# extern calls

@dataclass
class _Extern:
    """An EXTERN node being scheduled: its RESULT nodes (every result, used or not, has a buffer), and per input
    either its in-out copy (a root aliasing a result) or the realized value it is a view of."""
    node: UOp
    results: list
    inputs: list   # per input: ("inout", wrapper root key) or ("view", value, base)

    @property
    def read_values(self) -> list[UOp]:
        return [i[1] for i in self.inputs]

    def name_hint(self) -> str:
        return f"X_{self.node.arg.routine}"

    def reads(self, roots: dict) -> list[UOp]:
        """The realized values (roots) whose buffers this call needs written first."""
        out = []
        for i in self.inputs:
            if i[0] == "inout": out.append(i[1])
            elif i[2] in roots: out.append(i[2])
        return out

    def kernel(self, name: str, roots: dict, home: dict):
        from numfn.extern import ExternKernel, strided_view
        results = tuple(roots[r].targets[0] for r in self.results)
        operands: list[tuple[UOp, int, tuple[int, ...]] | None] = []
        for i in self.inputs:
            if i[0] == "inout":
                operands.append(None)
                continue
            _, value, base = i
            buf = home.get(base, base)
            view = strided_view(value, lambda u, base=base: u is base)  # type: ignore[misc]  # lambda with defaults
            assert view is not None   # _prepare_externs passes a value as a view only where it is one
            _, offset, strides = view
            operands.append((buf, offset, strides))
        return ExternKernel(name, self.node, results, tuple(operands))


def _prepare_externs(graph: UOp, roots: dict[UOp, _Root]) -> list[_Extern]:
    """Roots for every extern call: its results (a result that is an output is written there directly), its in-out
    inputs (computed into the result's buffer), and the values its other inputs are views of (or the inputs
    themselves, copied row-major, where the routine cannot take the view's strides)."""
    from numfn.extern import ROUTINES, strided_view
    externs = []
    for node in (u for u in toposort([graph]) if u.op is Ops.EXTERN):
        call = node.arg
        results = [UOp(Ops.RESULT, dt, (node,), i) for i, (_, dt) in enumerate(call.results)]
        for r in results:
            root = roots.setdefault(r, _Root(r))
            if len(root.outputs) > 1:   # a result returned twice: the call writes the first, a kernel copies it
                for t in root.outputs[1:]:
                    key = _copy(r, ("output", t.arg.number))
                    roots[key] = _Root(key, [t], [t])
                del root.outputs[1:]
        inputs: list[tuple[Any, ...]] = []   # as _Extern.inputs
        for j, v in enumerate(node.src):
            if j in call.inout:
                key = UOp(Ops.CONTIGUOUS, v.dtype, (v,), ("extern input", j, id(node)))
                roots[key] = _Root(key, alias=results[call.inout.index(j)])
                inputs.append(("inout", key))
                continue
            # passed as a view of a buffer or a realized value, or of the value under its views, realized for it;
            # else copied row-major
            def is_base(u: UOp) -> bool: return u.op is Ops.BUFFER or u in roots
            base = v
            while base.op in MOVEMENT and base.op is not Ops.PAD and not is_base(base): base = base.src[0]
            view = None if base.op in (Ops.CONST, Ops.IOTA, Ops.PAD) else \
                strided_view(v, lambda u, base=base, is_base=is_base: u is base or is_base(u))  # type: ignore[misc]
            assert v.shape is not None
            nb = len(call.batch)
            if view is not None and ROUTINES[call.routine].accepts(call, j, v.shape[nb:], view[2][nb:]):
                if not is_base(base): roots.setdefault(base, _Root(base))
                inputs.append(("view", v, base))
            else:
                roots.setdefault(v, _Root(v))
                inputs.append(("view", v, v))
        externs.append(_Extern(node, results, inputs))
    return externs


# ---------------------------------------------------------------------------------------------------------------
# loops and branches

@dataclass(frozen=True)
class LoopKernel:
    """A loop or branch of the program (numfn.trace.control.Region), as a step of a schedule. While loops: `inits` were
    written into the state buffers (`state`, the homes of the LOOP's results) before it; each iteration runs
    `cond` (which writes the bool `flag`), then `body`, which writes each state value in place or into its `next`
    buffer; then each state buffer and its next buffer swap (pointers). Branches: the int64 `flag` (the index)
    picks one of `bodies`, which writes the results into `state`. `reads`: the captured values' buffers."""
    name: str
    kind: str
    state: tuple[UOp, ...]
    next: tuple[UOp | None, ...]
    flag: UOp
    cond: Schedule | None
    bodies: tuple[Schedule, ...]
    reads: tuple[UOp, ...]
    shape: tuple[int, ...] = ()

    @property
    def schedules(self) -> tuple[Schedule, ...]:
        return ((self.cond,) if self.cond is not None else ()) + self.bodies

    @property
    def outputs(self) -> tuple[UOp, ...]:
        return tuple(dict.fromkeys((*self.state, *(n for n in self.next if n is not None))))

    @property
    def inputs(self) -> tuple[UOp, ...]:
        outs = set(self.outputs)
        return tuple(dict.fromkeys(u for u in (*self.reads, self.flag) if u not in outs))

    @property
    def buffers(self) -> tuple[UOp, ...]:
        """Every buffer the loop touches, its kernels' intermediates included (they live while it runs)."""
        inner = [u for sched in self.schedules for ei in sched for u in ei.kernel.buffers]
        return tuple(dict.fromkeys((*self.outputs, *self.inputs, *inner)))

    @property
    def flops(self) -> int:
        return sum(ei.op_count for sched in self.schedules for ei in sched)


@dataclass
class _Loop:
    """A LOOP node being scheduled: its RESULT nodes (every one has a buffer), the roots that write the initial state
    into them (while loops), and the realized values it reads (captures; a branch's index and operands)."""
    node: UOp
    results: list
    inits: list
    values: list
    blocks: Any          # fresh blocks of intermediate numbers for its inner schedules
    starts: dict = field(default_factory=dict)   # initial states computed in place: value -> its RESULT
    built: dict = field(default_factory=dict)

    def reads(self, roots: dict) -> list[UOp]:
        return self.inits + [v for v in self.values if v in roots]

    def name_hint(self) -> str:
        return "L" if self.node.arg.kind == "while" else "B"

    def kernel(self, name: str, roots: dict, home: dict) -> LoopKernel:
        state = tuple(roots[r].targets[0] for r in self.results)
        bound = tuple(home.get(v, v) if v.op is not Ops.CONST else v for v in self.node.src)
        key = (state, bound)
        if key not in self.built: self.built[key] = _loop_kernel(name, self.node.arg, state, bound, self.blocks)
        return self.built[key]


def _prepare_loops(graph: UOp, roots: dict[UOp, _Root], blocks) -> list[_Loop]:
    """Roots for every loop and branch: its results (in intermediate buffers: a loop swaps them; a result that is
    an output is copied there after it, unless the loop writes it in place: then the output is its buffer), the
    initial state (computed into the results' buffers: a value nothing else reads is computed there, with the
    writes that made it, instead of being copied) and the values it reads."""
    loops = []
    parents: dict[UOp, list[UOp]] | None = None
    for node in (u for u in toposort([graph]) if u.op is Ops.LOOP):
        region = node.arg
        results = [UOp(Ops.RESULT, dt, (node,), k) for k, (_, dt) in enumerate(region.results)]
        for k, r in enumerate(results):
            root = roots.setdefault(r, _Root(r))
            # no pointer swaps move a state the body writes in place: its buffer can be the output itself
            own = region.kind == "while" and _writes_in_place(region.bodies[0].src[k], region.tag, k)
            for t in root.outputs[1 if own else 0:]:   # the loop's buffers are its own: outputs are copies of them
                key = _copy(r, ("output", t.arg.number))
                roots[key] = _Root(key, [t], [t])
            root.outputs = root.outputs[:1] if own else []
        inits, values, starts = [], [], {}
        reads = node.src
        if region.kind == "while":
            if parents is None: parents = _parents(graph)
            before = set(toposort(list(node.src)))   # what is computed before the loop runs
            for k, v in enumerate(node.src[:len(region.state)]):
                if _starts_in_state(v, node, parents, before, roots, bool(roots[results[k]].outputs)):
                    roots.setdefault(v, _Root(v)).keep = True   # the loop reads it (as its state's buffer)
                    starts[v] = results[k]
                    inits.append(v)
                    continue
                key = UOp(Ops.CONTIGUOUS, v.dtype, (v,), ("loop state", k, id(node)))
                roots[key] = _Root(key, alias=results[k])
                inits.append(key)
            reads = node.src[len(region.state):]
        for v in reads:
            if v.op not in (Ops.BUFFER, Ops.CONST):
                roots.setdefault(v, _Root(v))
            values.append(v)
        loops.append(_Loop(node, results, inits, values, blocks, starts))
    return loops


def _parents(graph: UOp) -> dict[UOp, list[UOp]]:
    out: dict[UOp, list[UOp]] = {}
    for u in toposort([graph]):
        for s in u.src: out.setdefault(s, []).append(u)
    return out


def _starts_in_state(v: UOp, node: UOp, parents: dict[UOp, list[UOp]], before: set[UOp],
                     roots: dict[UOp, _Root], fixed: bool = False) -> bool:
    """Whether a loop's initial state `v` can be computed in the state's own buffer (no copy): v and the versions
    of memory it was written from (`L = zeros(...); L[0] = ...`) are computed memory that is no output, that the
    loop reads only as this state, and that nothing computed after the loop starts depends on: every value built
    from that memory (however far up) is computed for the loop, before it (an ancestor of it). A value computed
    from it before the loop may still be recomputed in a kernel after the loop, where the memory holds the loop's
    state: `t = L * 2` used by the loop and returned beside its result. Not when the state's buffer is `fixed` (an
    output) and the memory is an earlier loop's state that swaps buffers (it would swap the output away)."""
    if v.op in (Ops.BUFFER, Ops.CONST) or sum(s is v for s in node.src) != 1: return False
    memory = [*_chain_down(v)]
    memory.append(memory[-1].src[0] if memory else v)
    if memory[-1].op is Ops.BUFFER: return False   # writes into an argument
    if fixed and _swapped_state(memory[-1]): return False
    if any(u in roots and roots[u].outputs for u in memory): return False
    if any(p is node and u is not v for u in memory for p in parents.get(u, ())): return False   # a capture
    seen, stack = set(memory), list(memory)
    while stack:   # everything built from the memory, up to the loop
        for p in parents.get(stack.pop(), ()):
            if p is node or p in seen: continue
            if p not in before: return False
            seen.add(p)
            stack.append(p)
    return True


BLOCK = 100_000   # intermediate numbers of one inner schedule (tmp<block * BLOCK + n>)


def _loop_kernel(name: str, region, state: tuple[UOp, ...], bound: tuple[UOp, ...], blocks) -> LoopKernel:
    """The schedules of a region's sub-graphs, their placeholders bound to the state buffers and to the buffers of
    the values the LOOP reads (`bound`, its sources' buffers in order)."""
    numbers = (next(blocks) * BLOCK for _ in iter(int, 1))
    if region.kind == "while":
        n = len(region.state)
        slots = {k: b for k, b in enumerate(state)}
        slots.update({n + j: b for j, b in enumerate(bound[n:])})
        flag = UOp(Ops.BUFFER, dtypes.bool, (), Buffer("intermediate", next(numbers), ()))
        cond, _ = _sub_schedule(region.cond, region.tag, slots, [flag], next(numbers), blocks)
        body_sink = region.bodies[0]
        # a state value the body writes in place (a chain of writes on its own placeholder) needs no next buffer
        in_place = [_writes_in_place(v, region.tag, k) for k, v in enumerate(body_sink.src)]
        nexts = tuple(None if in_place[k] else UOp(Ops.BUFFER, b.dtype, (), Buffer("intermediate", next(numbers),
                                                                                    b.arg.shape))
                      for k, b in enumerate(state))
        body, _ = _sub_schedule(body_sink, region.tag, slots, list(nexts), next(numbers), blocks, in_place)
        return LoopKernel(name, "while", state, nexts, flag, cond, (body,), tuple(dict.fromkeys(
            b for b in bound[n:] if b.op is Ops.BUFFER)))
    n = len(region.state)
    slots = {k: b for k, b in enumerate(bound[1:1 + n])}
    slots.update({n + j: b for j, b in enumerate(bound[1 + n:])})
    bodies = tuple(_sub_schedule(b, region.tag, slots, list(state), next(numbers), blocks)[0] for b in region.bodies)
    reads = tuple(dict.fromkeys(b for b in bound[1:] if b.op is Ops.BUFFER))
    return LoopKernel(name, "cond", state, (None,) * len(state), bound[0], None, bodies, reads)


def _writes_in_place(v: UOp, tag: int, k: int) -> bool:
    while v.op is Ops.SCATTER: v = v.src[0]
    return v.op is Ops.CARRY and v.arg[0] == tag and v.arg[1] == k


def _sub_schedule(sink: UOp, tag: int, slots: dict[int, UOp], outputs: list, first: int, blocks,
                  in_place: list[bool] | None = None) -> tuple[Schedule, MemoryPlan]:
    """A region's sub-graph scheduled as a program of its own: its placeholders are the buffers in `slots`; its
    results go to `outputs` (None: written in place, into the buffer of the placeholder its writes start from)."""
    in_place = in_place or [False] * len(sink.src)
    params = {}
    order = sorted(slots)
    for u in toposort([sink]):
        if u.op is Ops.CARRY and u.arg[0] == tag:
            params[u] = UOp(Ops.PARAM, u.dtype, (), (order.index(u.arg[1]), u.shape))
    body = substitute(sink, params)
    outs = [UOp(Ops.CONTIGUOUS, v.dtype, (v,)) for v, ip in zip(body.src, in_place) if not ip]
    writes = [v for v, ip in zip(body.src, in_place) if ip]
    graph = UOp(Ops.SINK, dtypes.void, tuple(outs + writes))
    bindings = tuple(slots[k] for k in order)
    call = UOp(Ops.CALL, dtypes.void, (graph, *bindings), tuple(o.arg for o, ip in zip(outputs, in_place) if not ip))
    return create_schedule(call, first, blocks)


# ---------------------------------------------------------------------------------------------------------------
# memory planning

ALIGNMENT = 64


@dataclass(frozen=True)
class MemoryPlan:
    """Where each intermediate buffer lives in one scratch arena: buffers whose lifetimes (from the kernel that
    writes them to the last kernel that reads them) do not overlap share bytes."""
    offsets: dict
    arena_bytes: int
    naive_bytes: int

    def __repr__(self) -> str:
        return f"MemoryPlan(arena={self.arena_bytes} bytes for {len(self.offsets)} intermediates, " \
               f"{self.naive_bytes} bytes without reuse)"


def all_items(items) -> list[ExecItem]:
    """The items of a schedule and of the schedules inside its loops and branches, in program order."""
    out = []
    for ei in items:
        out.append(ei)
        if isinstance(ei.kernel, LoopKernel):
            for sched in ei.kernel.schedules: out += all_items(sched)
    return out


def program_steps(items, index: dict) -> list:
    """The outline renderers follow: each item as its number in the flat kernel list (`index`: ExecItem -> int), a
    loop as ("loop", LoopKernel, (cond steps, body steps)), a branch as ("branch", LoopKernel, (steps per branch)).
    `index` is keyed by the items' ids."""
    out: list = []
    for ei in items:
        k = ei.kernel
        if isinstance(k, LoopKernel):
            parts = tuple(program_steps(s, index) for s in k.schedules)
            out.append(("loop" if k.kind == "while" else "branch", k, parts))
        else: out.append(index[id(ei)])
    return out


def plan_memory(items: Schedule) -> MemoryPlan:
    life: dict[Buffer, list[int]] = {}
    nbytes: dict[Buffer, int] = {}
    for step, ei in enumerate(items):
        for u in ei.kernel.buffers:
            if u.arg.category != "intermediate": continue
            life.setdefault(u.arg, [step, step])[1] = step
            nbytes[u.arg] = max(1, u.arg.size * u.dtype.itemsize)
    for ei in items:   # a loop's state buffer and its next one swap: after the loop either may hold the state
        if not isinstance(ei.kernel, LoopKernel): continue
        for cur, nxt in zip(ei.kernel.state, ei.kernel.next):
            if nxt is None or cur.arg not in life: continue
            span = [min(life[cur.arg][0], life[nxt.arg][0]), max(life[cur.arg][1], life[nxt.arg][1])]
            life[cur.arg] = life[nxt.arg] = span
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last)
    offsets = {}
    for buf in sorted(life, key=lambda b: (-nbytes[b], b.number)):
        first, last = life[buf]
        size = -(-nbytes[buf] // ALIGNMENT) * ALIGNMENT
        clashes = sorted((o, e) for o, e, f, l in placed if not (last < f or l < first))
        offset = 0
        for o, e in clashes:
            if offset + size <= o: break
            offset = max(offset, e)
        placed.append((offset, offset + size, first, last))
        offsets[buf] = offset
    arena = max((e for _, e, _, _ in placed), default=0)
    naive = sum(-(-n // ALIGNMENT) * ALIGNMENT for n in nbytes.values())
    return MemoryPlan(offsets, arena, naive)
