"""Kernels from roots: home buffers, grouping into kernels, execution order, lowering.

`build_kernels(roots, versions, externs, origin, check, first)` takes the roots (numfn/schedule/roots.py: the values
to store) with their versions planned (numfn/schedule/versions.py) and the loops' and extern calls' steps
(regions.py, externs.py), and returns the program's steps in execution order: (Kernel, LoweredKernel) pairs and
(LoopKernel | ExternKernel, None) pairs. It runs these steps:
  1. `assign_homes`: every root without a home gets a fresh intermediate buffer, numbered from `first` in
     execution order; the versions of one memory share their chain's home, an extern call's in-out input is
     computed in its result's home, a loop's initial state computed in place in the state's.
  2. `KernelGroups.place`: roots of equal shape share a kernel unless one needs the other through a view or a
     reduction (then it is loaded, so it must be stored first), a scan or scatter is alone, and kernels stay
     within MAX_KERNEL_DEPTH and MAX_KERNEL_OPS (numfn/schedule/realize.py). Members of a kernel compute each other
     inline and share subexpressions.
  3. `kernel_values`: each member's value with the other realized values replaced by loads of their homes.
  4. `order_versions`: a kernel reading a version runs before the next version is written.
  5. `KernelGroups.execution_order`: a topological order of kernels and extern calls by what they read.
  6. `make_kernels`: each group lowered (codegen.lower, with `check`, the fusion rule deciding what else to store)
     into a Kernel, named by kind and shape.
Where the versions cannot be ordered as planned (steps 4, 5, and a scatter that reads what it overwrites, found in
step 6), a step raises `Replan` with a fix for the plan; the scheduler applies it and builds again.
Guarantees: every step runs after the steps that write what it reads, and before the next version of any memory
it reads is written; a write-back of an argument (`Root.last`) runs after every other step.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Sequence
from typing import cast

from numfn.progress import work
from numfn.codegen.lower import LoweredKernel, RealizeCheck, kernel_domain, lower_kernel
from numfn.dtype import dtypes
from numfn.ir.uop import ELEMENTWISE, MOVEMENT, Buffer, Ops, UOp, bottom_up, preorder, toposort
from numfn.schedule.externs import ScheduledExtern
from numfn.schedule.items import ExternKernel, Kernel, LoopKernel
from numfn.schedule.realize import MAX_KERNEL_DEPTH, MAX_KERNEL_OPS, chain_depth
from numfn.schedule.regions import ScheduledLoop
from numfn.schedule.roots import Root, alone
from numfn.schedule.versions import Versions, demand_gate, write_hazard

Step = int | tuple   # a kernel (its group's index) or an extern call or loop (("extern", index in `externs`))
Built = tuple[Kernel | LoopKernel | ExternKernel, LoweredKernel | None]


class Replan(Exception):
    """The versions of some memory cannot be ordered as planned: `fix()` changes the plan (a write starts from a
    copy, the values of one kernel get kernels of their own, or a value is realized first); then plan again."""

    def __init__(self, fix: Callable[[], object]):
        super().__init__("the plan of writes changes")
        self.fix = fix


JOIN_WINDOW = 32   # groups of its shape a root may join: the last made (a bound, so that placing is linear)


def build_kernels(roots: dict[UOp, Root], versions: Versions, externs: Sequence[ScheduledExtern | ScheduledLoop] = (),
                  origin: dict | None = None, check: RealizeCheck | None = None, first: int = 0) -> list[Built]:
    """The kernels in execution order, or Replan raised (see the module's docstring). Extern calls and loops
    (`externs`) are steps of their own, ordered among the kernels by what they read and write. `origin` collects
    the graph node each rebuilt node of a kernel stands for."""
    topo = execution_positions(roots, versions)
    order = sorted(roots.values(), key=lambda r: topo[r.value])
    home = assign_homes(order, roots, versions, externs, first)
    realized = set(home)
    groups = KernelGroups(externs, roots)
    depth_memo: dict = {}
    uses_memo: dict = {}
    for r in order:
        if r.value.op is Ops.RESULT: continue   # written by its extern call or loop, never computed by a kernel
        groups.place(r, realized, versions, depth_memo, uses_memo)
    groups.run_last_after_all()
    values, gates, reads = kernel_values(groups.groups, home, origin)
    groups.order_extern_reads_before_writes(versions)
    order_versions(groups, reads, versions, topo)
    ordered = groups.execution_order(versions, topo)
    return make_kernels(ordered, groups, values, gates, roots, home, versions, check)


def execution_positions(roots: dict[UOp, Root], versions: Versions) -> dict[UOp, float]:
    """Each root's position in a topological order of the roots, by which kernels are numbered and grouped: an
    extern call's in-out inputs and a loop's copied initial state (roots aliasing a result) come before the call or
    loop, so before anything that reads its results; a copy is written just before the write it starts."""
    aliases = [v for v, r in roots.items() if r.alias is not None]
    topo = {u: float(i) for i, u in enumerate(toposort(aliases + list(roots)))}
    for v in aliases:   # (walking one alias first may already have placed another call or loop before the next)
        alias = roots[v].alias
        assert alias is not None
        call = alias.src[0]
        if call in topo: topo[v] = min(topo[v], topo[call] - 0.5)
    for s, copy in versions.copies.items():
        if copy in topo and s in topo: topo[copy] = topo[s] - 0.5
    return topo


def assign_homes(order: list[Root], roots: dict[UOp, Root], versions: Versions,
                 externs: Sequence[ScheduledExtern | ScheduledLoop], first: int) -> dict[UOp, UOp]:
    """Every realized value's home buffer (its root's first target): a fresh intermediate for a root without one,
    numbered in `order` from `first`; versions of one memory share their chain's home."""
    count = iter(range(first, first + len(order)))
    # the memory of a loop's initial state computed in place: the first version of its chain lives in the state
    starts = {versions.chain_of.get(v, v): result for x in externs if isinstance(x, ScheduledLoop)
              for v, result in x.starts.items()}

    def give_home(r: Root) -> UOp:
        if r.alias is not None: r.targets[:1] = [give_home(roots[r.alias])]
        if not r.targets:
            first = versions.chain_of.get(r.value, r.value)
            if first.op is Ops.BUFFER: r.targets[:1] = [first]
            elif first is not r.value: r.targets[:1] = [give_home(roots[first])]
            elif r.value in versions.continued: r.targets[:1] = [versions.continued[r.value]]   # (see regions)
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
    return {v: r.targets[0] for v, r in roots.items() if v.op is not Ops.BUFFER}


class KernelGroups:
    """Roots grouped into kernels, and what each step (a group, or an extern call or loop: ("extern", e)) must
    run after. Kernel size: chains of elementwise operations through members computed inline stay within
    MAX_KERNEL_DEPTH, and the members' operations together within MAX_KERNEL_OPS (LLVM's time grows faster than
    a loop body).

    Placing costs about the same for every root, however long the program: a root tries the JOIN_WINDOW groups of
    its shape made last (and those of the values it computes inline), not every group; and whether a candidate
    runs after what the root needs is a walk that never goes below the candidate's level. Levels number the
    steps so that a step runs after only steps of lower levels (kept so while placing: a new dependency raises the
    levels above it), so a walk looking for a step of level L stops at level L."""

    def __init__(self, externs: Sequence[ScheduledExtern | ScheduledLoop], roots: dict[UOp, Root]):
        self.externs = externs
        self.groups: list[list[Root]] = []
        self.group_of: dict[UOp, int] = {}
        self.group_deps: list[set] = []
        self.group_ops: list[int] = []
        self.member_depth: dict[UOp, int] = {}
        self.of_shape: dict[tuple | None, list[int]] = {}   # the groups of each shape, oldest first
        # the extern call writing each RESULT (its value is never computed by a kernel), and what each call reads
        self.written_by = {x.results[i]: e for e, x in enumerate(externs) for i in range(len(x.results))}
        self.extern_reads: list[Collection[UOp]] = [x.reads(roots) for x in externs]
        self.read_by: dict[UOp, list[Step]] = {}   # the extern calls reading each value
        self.level: dict[Step, int] = {}
        self.dependents: dict[Step, set] = {}     # the steps that run right after each (the reverse of `deps`)
        # (every call's level first: a call may read what a call later in the list writes)
        self.level.update((("extern", e), 0) for e in range(len(externs)))
        for e, reads in enumerate(self.extern_reads):
            for v in reads:
                self.read_by.setdefault(v, []).append(("extern", e))
                if v in self.written_by: self._depend(("extern", e), ("extern", self.written_by[v]))

    def step_of(self, v: UOp) -> Step | None:
        return ("extern", self.written_by[v]) if v in self.written_by else self.group_of.get(v)

    def deps(self, step: Step) -> set:
        if not isinstance(step, tuple): return self.group_deps[step]
        return {self.step_of(v) for v in self.extern_reads[step[1]]} - {None}

    def closure(self, start: set) -> set:
        """The steps in `start` and every step they run after."""
        seen, stack = set(start), list(start)
        while stack:
            for d in self.deps(stack.pop()):
                if d not in seen: seen.add(d); stack.append(d)  # noqa: E702
        work(len(seen))
        return seen

    def _depend(self, step: Step, dep: Step) -> None:
        """`step` runs after `dep` (a group's dependency is added to group_deps by the caller): raise the levels
        that must now be higher."""
        self.dependents.setdefault(dep, set()).add(step)
        stack = [(step, self.level[dep] + 1)]
        while stack:
            s, at_least = stack.pop()
            if self.level[s] >= at_least: continue
            # (levels of a DAG stay below its number of steps: more is a cycle, which placing never makes)
            if at_least > len(self.level): raise RuntimeError("the scheduler's steps depend on each other in a cycle")
            self.level[s] = at_least
            work(1)
            stack.extend((t, at_least + 1) for t in self.dependents.get(s, ()))

    def _reached(self, start: Collection[Step], wanted: Collection[Step]) -> set:
        """The steps of `wanted` in closure(start), found by a walk that stops at the lowest level among them
        (below it, no step of `wanted` can be: a step runs after steps of lower levels only). For placing: the
        dependencies added after it (write-backs last, versions' order) do not keep the levels."""
        if not wanted: return set()
        floor = min(self.level[w] for w in wanted)
        seen, stack = set(start), [s for s in start if self.level[s] > floor]
        while stack:
            for d in self.deps(stack.pop()):
                if d not in seen:
                    seen.add(d)
                    if self.level[d] > floor: stack.append(d)
        work(len(seen))
        return seen & set(wanted)

    def place(self, r: Root, realized: set, versions: Versions, depth_memo: dict, uses_memo: dict) -> None:
        """Put `r` into the first group it can join, or a new one."""
        depth = chain_depth(r.value, realized, depth_memo)
        direct, loaded = classify_uses(r.value, realized, uses_memo)
        if r.gate is not None: loaded = loaded | set().union(*classify_uses(r.gate, realized, uses_memo))
        needs: set[Step] = {s for s in map(self.step_of, direct | loaded) if s is not None}
        old = versions.prev.get(r.value)
        overwritten = None if old is None else self.step_of(old)
        if overwritten is not None: needs.add(overwritten)   # the version it overwrites comes first
        read_by = set(self.read_by.get(r.value, ()))
        joined = None
        if not alone(r.value) and r.value not in versions.solo:
            joined = self._group_to_join(r, depth, direct, loaded, needs, read_by, versions)
        if joined is None:
            self.groups.append([])
            self.group_deps.append(set())
            self.group_ops.append(0)
            self.level[len(self.groups) - 1] = 0
            self.of_shape.setdefault(r.value.shape, []).append(len(self.groups) - 1)
            joined = len(self.groups) - 1, depth
        target, path = joined
        self.group_ops[target] += depth
        self.member_depth[r.value] = path
        self.groups[target].append(r)
        for d in needs - {target} - self.group_deps[target]:
            self.group_deps[target].add(d)
            self._depend(target, d)
        self.group_of[r.value] = target
        for e in read_by: self._depend(e, target)

    def _group_to_join(self, r: Root, depth: int, direct: set, loaded: set, needs: set, read_by: set,
                       versions: Versions) -> tuple[int, int] | None:
        """(group, r's chain depth in it) of the first group of r's shape that r can join: within the size bounds,
        not loaded by r (through a view or a reduction), not needed by what r needs, and not run after an extern
        call that reads r. The candidates: the last JOIN_WINDOW groups of r's shape, and those of the values r
        computes inline."""
        shape = r.value.shape
        window = self.of_shape.get(shape, [])[-JOIN_WINDOW:]
        producers = {self.group_of[v] for v in direct if v in self.group_of and v.shape == shape}
        loaded_groups = {self.group_of.get(v) for v in loaded}
        viable: list[tuple[int, int]] = []
        for gi in sorted(set(window) | producers):
            g = self.groups[gi]
            if alone(g[0].value) or g[0].value in versions.solo or gi in loaded_groups: continue
            path = depth + max((self.member_depth[v] for v in direct if self.group_of.get(v) == gi), default=0)
            if path > MAX_KERNEL_DEPTH or self.group_ops[gi] + depth > MAX_KERNEL_OPS: continue
            viable.append((gi, path))
        work(len(window) + len(producers))
        # the candidates that r's needs run after (computed once, for all candidates not needed themselves)
        after = self._reached(needs, [gi for gi, _ in viable if gi not in needs])
        for gi, path in viable:
            if gi in needs:   # r may join a group it needs only if nothing else it needs runs after that group
                if self._reached(needs - {gi}, [gi]): continue
            elif gi in after: continue
            if read_by and self._reached({gi}, read_by): continue
            return gi, path
        return None

    def run_last_after_all(self) -> None:
        """Groups writing an argument's memory back (Root.last) run after every other step (the write-backs among
        themselves in any order)."""
        last = {gi for gi, g in enumerate(self.groups) if any(r.last for r in g)}
        for gi in last:
            self.group_deps[gi] |= (set(range(len(self.groups))) - last) | \
                {("extern", e) for e in range(len(self.externs))}

    def order_extern_reads_before_writes(self, versions: Versions) -> None:
        """An extern call or loop reading a version (an argument's memory too) runs before the next is written."""
        for e, x in enumerate(self.externs):
            for v in x.memory_reads():
                for s in versions.next_writers().get(v, ()):
                    if s in self.group_of: self.group_deps[self.group_of[s]].add(("extern", e))

    def execution_order(self, versions: Versions, topo: dict[UOp, float]) -> list[Step]:
        """Kernels and extern calls, each after the kernels and calls that write what it reads."""
        steps: list[Step] = list(range(len(self.groups))) + [("extern", e) for e in range(len(self.externs))]
        ordered: list[Step] = []
        done: set = set()
        while len(ordered) < len(steps):
            step = next((s for s in steps if s not in done and self.deps(s) <= done), None)
            if step is None:   # the versions' order met the extern calls' in a cycle: a write starts from a copy
                stuck = [r.value for s in steps if s not in done and not isinstance(s, tuple) for r in self.groups[s]
                         if r.value.op is Ops.SCATTER and r.value not in versions.copies]
                if not stuck: raise RuntimeError("the scheduler cannot order the writes of this program")
                raise Replan(versions.copy_fix(max(stuck, key=lambda u: topo[u])))
            ordered.append(step)
            done.add(step)
        return ordered


def classify_uses(value: UOp, realized: set, memo: dict | None = None) -> tuple[set, set]:
    """Realized values `value` reaches through elementwise ops only (so at its own index: they can be computed
    inline in the same kernel) and those it reaches through a view or a reduction (they must be loaded). A
    SCATTER does not read its old value (it writes on top of it in its buffer). `memo` keeps each value's
    findings: a realized value reached through elementwise ops contributes what its own walk found, so a chain of
    realized values is walked once, not once per value above it."""
    direct: set[UOp] = set()
    loaded: set[UOp] = set()
    # the root's own op counts: the sources of a root that is a view (a.T) or a reduction are not at its index
    srcs = value.src[1:] if value.op is Ops.SCATTER else value.src

    def reached_through(key: tuple[UOp, bool]) -> list[tuple[UOp, bool]]:
        """The (source, reached through elementwise ops only) pairs to walk below a pair; none below a load, a
        memoized realized value or a buffer. (In reverse order: the sets are filled in the order of the walk this
        replaced, so that their iteration order, and all that follows from it, stays the same.)"""
        u, elementwise = key
        if u in realized and u is not value and \
                (not elementwise or (memo is not None and u in memo and u.op is not Ops.SCATTER)):
            return []
        if u.op is Ops.BUFFER: return []
        keeps = elementwise and u.op in ELEMENTWISE
        return [(s, keeps) for s in reversed(u.src)]
    for u, elementwise in preorder([(s, value.op in ELEMENTWISE) for s in reversed(srcs)], reached_through):
        if u in realized and u is not value:
            (direct if elementwise else loaded).add(u)
            if elementwise and memo is not None and u in memo and u.op is not Ops.SCATTER:
                direct |= memo[u][0]
                loaded |= memo[u][1]
    if memo is not None: memo[value] = (direct, loaded)
    return direct - loaded, loaded


def kernel_values(groups: list[list[Root]], home: dict[UOp, UOp], origin: dict | None
                  ) -> tuple[list[list[UOp]], list[list[UOp | None]], list[set[UOp]]]:
    """Per group: its members' values as its kernel computes them (other realized values loaded from their
    homes), their gates likewise, and which realized values (so which versions of memory) the kernel loads."""
    values, gates, reads = [], [], []
    for g in groups:
        members = {r.value for r in g}
        built = [_kernel_value(r.value, members, home, origin) for r in g]
        # (a gate reading a member computes it inline too: loaded, it would be read before this kernel stores it)
        gated = [_kernel_value(r.gate, members, home, origin) if r.gate is not None else None for r in g]
        values.append([v for v, _ in built])
        gates.append([b[0] if b is not None else None for b in gated])
        reads.append(set().union(*(ld for _, ld in built), *(b[1] for b in gated if b is not None)))
    return values, gates, reads


def _kernel_value(value: UOp, inline: set, home: dict, origin: dict | None = None) -> tuple[UOp, set]:
    """`value` with realized values replaced by loads of their home buffers, except those in `inline` reached
    through elementwise ops only (computed in this kernel at the same index); and the realized values loaded.
    `origin` collects, for each node rebuilt that way, the graph node it stands for."""
    memo: dict = {}
    loaded: set = set()

    def sources(key: tuple[UOp, bool]) -> list:
        """The (node, reached through elementwise ops only) pairs `u` is rebuilt from; [] when it is a load."""
        u, elementwise = key
        if _loads(u, value, home, inline, elementwise): return []
        keeps = elementwise and u.op in ELEMENTWISE
        srcs = u.src[1:] if u is value and u.op is Ops.SCATTER else u.src   # a SCATTER's old value is in its buffer
        return [(s, keeps) for s in srcs]

    def rebuilt(key: tuple[UOp, bool]) -> UOp:
        u, elementwise = key
        if _loads(u, value, home, inline, elementwise):
            loaded.add(u)
            return home[u]
        if u.op is Ops.BUFFER:   # an input's memory, read as it is before any write into it
            loaded.add(u)
            return u
        src = tuple(memo[k] for k in sources(key))
        if u is value and u.op is Ops.SCATTER: src = (home[u],) + src   # (its own buffer, not read)
        out = u if src == u.src else UOp(u.op, u.dtype, src, u.arg)
        if out is not u and origin is not None: origin[out] = origin.get(u, u)
        return out
    return bottom_up((value, True), memo, rebuilt, sources), loaded


def _loads(u: UOp, value: UOp, home: dict, inline: set, elementwise: bool) -> bool:
    """Whether a kernel computing `value` loads `u` from its home buffer: a realized value, except the kernel's own
    members it reaches through elementwise ops, and constant arrays (a CONST seen through views). A realized
    constant is the same node as every other constant of its dtype, value and shape: a check's payload 0 returned
    as an output (fuzz seed 49000303), or `r = np.zeros(n, np.int64)` scattered into, whose node is also the 0 of
    the scatter's own bounds test `0 <= i` at shape (n,); loaded, each of those would read the realized memory,
    before it is written or after later writes changed it (`r[p] = np.arange(n)` read its bounds' 0 from `r` as
    it wrote it)."""
    if u is value or u not in home or (elementwise and u in inline): return False
    while u.op in MOVEMENT: u = u.src[0]
    return u.op is not Ops.CONST


def order_versions(groups: KernelGroups, reads: list[set[UOp]], versions: Versions, topo: dict[UOp, float]) -> None:
    """A kernel reading a version runs before the next one is written (a dependency of the writer on the reader);
    raises Replan where that cannot be: two writes start from one version, a kernel reads two versions of one
    memory, or the reader needs the new version."""
    writers = versions.next_writers()
    for ws in writers.values():
        if len(ws) > 1: raise Replan(versions.copy_fix(max(ws, key=lambda u: topo[u])))
    chain_reads: dict[tuple[int, UOp], set[UOp]] = {}
    for gi, rs in enumerate(reads):
        for v in rs:
            if v in versions.chain_of: chain_reads.setdefault((gi, versions.chain_of[v]), set()).add(v)
    for (gi, _), vs in chain_reads.items():
        group = groups.groups[gi]
        if len(vs) > 1 and len(group) > 1:   # a kernel of several values reading two versions: split it
            raise Replan(lambda: versions.solo.update(r.value for r in group))
        if len(vs) > 1:   # one value needs two versions of one memory: the writes after the oldest use a copy
            raise Replan(versions.copy_fix(writers[min(vs, key=lambda u: topo[u])][0]))
    for gi, rs in enumerate(reads):
        for v in rs:
            for s in writers.get(v, ()):
                w = groups.group_of[s]
                if w == gi: continue
                if w in groups.closure({gi}):   # the reader needs the new version: write a copy instead
                    raise Replan(versions.copy_fix(s))
                groups.group_deps[w].add(gi)


def make_kernels(ordered: list[Step], groups: KernelGroups, values: list[list[UOp]], gates: list[list[UOp | None]],
                 roots: dict[UOp, Root], home: dict[UOp, UOp], versions: Versions,
                 check: RealizeCheck | None) -> list[Built]:
    """The steps in `ordered` as kernels: extern calls and loops as theirs, each group stored by one kernel,
    lowered with `check`. Raises Replan where a scatter kernel reads the memory it writes at other places."""
    kernels: list[Built] = []
    names: Counter[str] = Counter()
    first_parts: dict[UOp, UOp | None] = {}   # parts of written values to realize first: {part: its gate}
    for gi in ordered:
        if isinstance(gi, tuple):
            x = groups.externs[gi[1]]
            kernels.append((x.kernel(_unique_name(names, x.name_hint()), roots, home), None))
            continue
        group = groups.groups[gi]
        if group[0].value.op is Ops.EMPTY: continue
        # no element to compute (a write into an empty array): the codegen drops a loop of no iterations, and the
        # loops inside it would then run once, out of the array's bounds
        if 0 in kernel_domain(group[0].value): continue
        stores = tuple(UOp(Ops.STORE, dtypes.void, (t, v) if gate is None else (t, v, gate))
                       for r, v, gate in zip(group, values[gi], gates[gi]) for t in r.targets)
        ast = UOp(Ops.SINK, dtypes.void, stores)
        shape = kernel_domain(group[0].value)
        lowered = lower_kernel(ast, check)
        hazard = write_hazard(group[0].value, lowered, stores[0].src[1])
        if hazard is not None:
            if hazard in roots: raise Replan(versions.copy_fix(group[0].value))
            # the part is realized first; the other kernels' parts are found in this round too (one round per
            # write would make a loop body's scheduling quadratic in its writes)
            first_parts.setdefault(hazard, demand_gate(hazard, group[0].value, roots))
            continue
        kind = "S" if any(r.value.op is Ops.SCAN for r in group) else \
            "W" if any(r.value.op is Ops.SCATTER for r in group) else \
            "R" if any(u.op is Ops.REDUCE for u in toposort([lowered.sink])) else "E"
        name = f"{kind}_{'_'.join(map(str, shape))}" if shape else f"{kind}_scalar"
        kernels.append((Kernel(_unique_name(names, name), ast, shape), lowered))
    if first_parts:
        raise Replan(lambda: [roots.setdefault(part, Root(part, keep=True, gate=gate))
                              for part, gate in first_parts.items()])
    return kernels


def _unique_name(names: Counter[str], name: str) -> str:
    """`name`, or with a suffix n1, n2, ... when a step of the schedule already has it."""
    names[name] += 1
    return f"{name}n{names[name] - 1}" if names[name] > 1 else name
