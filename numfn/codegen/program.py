"""The codegen driver: a scheduled kernel becomes a linear program a renderer can print."""
from __future__ import annotations

from dataclasses import dataclass

from numfn import debug
from numfn.codegen.decompose import decompositions
from numfn.codegen.linearize import expand_reduces, linearize
from numfn.codegen.lower import LoweredKernel
from numfn.codegen.narrow import narrow
from numfn.codegen.opt import Options, apply_options, heuristic_applied, upcast
from numfn.codegen.selects import clamp_selects, unclamp_selects
from numfn.codegen.transcendental import transcendental
from numfn.ir.symbolic import symbolic
from numfn.ir.uop import Buffer, Ops, UOp, format_node, graph_rewrite, rebuild, substitute


@dataclass(frozen=True)
class KernelProgram:
    """One kernel ready to render: its parameters (BUFFER nodes, written ones first) and its instructions.

    `parallel` is the outermost loop when the kernel may split it across threads: the renderer runs that loop
    over [start, end) inside a body function it hands to the thread pool."""
    name: str
    params: tuple[UOp, ...]
    uops: tuple[UOp, ...]
    parallel: UOp | None = None
    # reductions may be reassociated (vectorized along their own loop): not after an upcast, whose copies are
    # the vector lanes (a reduction vectorized along its loop would turn their loads into gathers)
    reassociate: bool = True
    # jit(fastmath=True): float + - * may be contracted into FMAs, and those the user's program computes (marked
    # FAST) reassociated too. Without it every operation rounds on its own, as NumPy's do (docs/performance.md)
    fastmath: bool = False
    # kernels elsewhere in the program compute the same and call this one (render_forward), at least
    # program_build.SHARED_CALLS in all: rendered out of line when it has loops of some length (OUT_OF_LINE_ITERATIONS)
    shared: bool = False

    def may_reassociate(self, u: UOp) -> bool:
        """Whether the renderers may let the compiler reassociate `u`: the accumulation step of a float sum or
        product (an ADD or MUL reading its accumulator), in a program that allows it, so that it vectorizes; with
        fastmath, also the user's float + - * (not the exact arithmetic of codegen/transcendental.py and
        codegen/complex.py, whose roundings are part of the method)."""
        if not (u.dtype.is_float and u.op in (Ops.ADD, Ops.SUB, Ops.MUL)): return False
        if u.op is not Ops.SUB and u in self.accumulation_steps: return self.reassociate
        return self.fastmath and u.arg is FAST

    @property
    def accumulation_steps(self) -> frozenset[UOp]:
        """The values assigned to an accumulator that read that accumulator: a reduction's `acc = acc + x`. Not the
        arithmetic of a loop's carried state (numfn.schedule.interchange: `next = cur * 3 + 2`, read from one
        accumulator and assigned to another), which the user's loop orders: reassociated, it would round as NumPy
        does not."""
        steps = self.__dict__.get("_accumulation_steps")
        if steps is None:
            steps = frozenset(a.src[1] for a in self.uops if a.op is Ops.ASSIGN and len(a.src) > 1
                              and any(s.op is Ops.LOAD and s.src[0] is a.src[0] for s in a.src[1].src))
            object.__setattr__(self, "_accumulation_steps", steps)
        return steps

    def may_contract(self, u: UOp) -> bool:
        """Whether the renderers may let the compiler fuse `u` with a neighbouring float operation into an FMA
        (rounding once where NumPy rounds twice): only with fastmath."""
        return self.fastmath and u.dtype.is_float and u.op in (Ops.ADD, Ops.SUB, Ops.MUL)

    def __str__(self) -> str:
        """The instructions in execution order, indented by loop depth; buffers and constants inline."""
        names = {p: repr(p.arg) for p in self.params}
        lines, depth = [f"{self.name}({', '.join(names.values())})"], 1
        for u in self.uops:
            if u.op is Ops.END:
                depth -= 1
                continue
            lines.append("  " * depth + format_node(u, names, f"%{len(lines) - 1}").strip())
            if u.op is Ops.RANGE: depth += 1
        return "\n".join(lines)


FAST = "fast"   # the arg of a float ADD, SUB or MUL of the user's program in a fastmath kernel


def _mark_fast(sink: UOp) -> UOp:
    """The float + - * of `sink` marked FAST: the rewrites that follow (decompositions, transcendental functions)
    keep a node's arg when they rebuild it over new sources, and their own arithmetic is unmarked."""
    return rebuild(sink, lambda u, src: UOp(u.op, u.dtype, src, FAST)
                   if u.op in (Ops.ADD, Ops.SUB, Ops.MUL) and u.dtype.is_float and u.arg is None else None)


def prepare_kernel(lowered: LoweredKernel) -> LoweredKernel:
    """A lowered kernel as the optimizations see it: selects' branches clamped to what their conditions allow
    while indices simplify (codegen/selects.py), the short loops chosen when lowering unrolled, loops narrowed."""
    unrolls = lowered.unrolls   # chosen when lowering: the scheduler counted evaluations with them
    sink = graph_rewrite(lowered.sink, clamp_selects, name="kernel: clamp selects")
    lowered = LoweredKernel(graph_rewrite(sink, symbolic, name="kernel: symbolic"), lowered.ranges,
                            lowered.shape, lowered.evaluations, lowered.sequential)
    for r, factor in unrolls: lowered = upcast(lowered, r, factor)
    return narrow(lowered)


# the last rewrite of every kernel, without (NOOPT) and with the transcendental functions' expansions: combined once
# (a PatternMatcher indexes its rules by op when made, a cost that was a quarter of rendering a small kernel)
_LAST_RULES = {True: decompositions + symbolic, False: decompositions + transcendental + symbolic}


def build_program(name: str, params: tuple[UOp, ...], lowered: LoweredKernel,
                  parallel: bool = False, fastmath: bool = False, options: Options | None = None) -> KernelProgram:
    """Lower, simplify and linearize a kernel. With `parallel`, its outermost loop is split across threads when
    the kernel allows it (see `splittable_loop`). `options`: the optimizations to make (codegen/opt.py's Options;
    its `parallel` then replaces the argument), else the heuristic's. Every pass is iterative: unrolled
    computations (gcd's fixed steps, reduction trees) make deep graphs."""
    upcasts: tuple = ()
    if options is not None: parallel = options.parallel
    if not debug.noopt():
        lowered = prepare_kernel(lowered)
        if options is None: options, lowered = heuristic_applied(lowered, parallel)
        else: lowered = apply_options(lowered, options)
        upcasts = options.upcasts
    sink = graph_rewrite(lowered.sink, symbolic, name="kernel: symbolic after optimizations")
    if not debug.noopt(): sink = graph_rewrite(sink, unclamp_selects, name="kernel: unclamp selects")
    sink = expand_reduces(sink)
    if fastmath: sink = _mark_fast(sink)
    sink = graph_rewrite(sink, _LAST_RULES[debug.noopt()], name="kernel: decompositions")
    uops = tuple(linearize(sink))
    return KernelProgram(name, params, uops, splittable_loop(uops, lowered) if parallel else None, not upcasts,
                         fastmath)


def kernel_key(params: tuple[UOp, ...], lowered: LoweredKernel, parallel: bool, fastmath: bool) -> tuple:
    """What a kernel computes, with its buffers named by their place among its parameters: two kernels with equal
    keys compute the same function of their parameters (a program repeating a step, `for` unrolled by hand, the
    layers of a model), so one is built, rendered and compiled, and the other calls it (see `with_params`)."""
    canon = {p: UOp(Ops.BUFFER, p.dtype, (), Buffer("param", k, p.arg.shape)) for k, p in enumerate(params)}
    return (substitute(lowered.sink, canon), lowered.ranges, lowered.shape, lowered.sequential, lowered.unrolls,
            tuple((p.dtype, p.arg.shape) for p in params), parallel, fastmath)


def with_params(prog: KernelProgram, name: str, params: tuple[UOp, ...]) -> KernelProgram:
    """`prog` as the program of another kernel with an equal kernel_key, under its own name and over its own
    buffers (see ForwardedProgram)."""
    return ForwardedProgram(prog, name, params)


class ForwardedProgram(KernelProgram):
    """The program of a kernel that computes what an earlier kernel (`first`, an equal kernel_key) computes: the
    renderers call `first` (render_forward). Its instructions over its own buffers are what later passes read
    (tiling pairs a few kernels by their loads and stores), so they are rebuilt when first read, not for every
    repeated kernel (that was half of the rendering time of a long program)."""
    first: KernelProgram
    _rebuilt: tuple[tuple[UOp, ...], UOp | None] | None

    def __init__(self, first: KernelProgram, name: str, params: tuple[UOp, ...]):
        for attribute, value in (("first", first), ("name", name), ("params", params),
                                 ("reassociate", first.reassociate), ("fastmath", first.fastmath),
                                 ("_rebuilt", None)):
            object.__setattr__(self, attribute, value)

    def _over_own_params(self) -> tuple[tuple[UOp, ...], UOp | None]:
        rebuilt = self._rebuilt
        if rebuilt is None:
            prog = self.first
            mapping = dict(zip(prog.params, self.params))
            done: dict[UOp, UOp] = {}
            uops = []
            for u in prog.uops:   # in order: every source comes before its user
                new = mapping.get(u)
                if new is None:
                    src = tuple(done.get(s, mapping.get(s, s)) for s in u.src)
                    new = u if src == u.src else UOp(u.op, u.dtype, src, u.arg)
                done[u] = new
                uops.append(new)
            parallel = None if prog.parallel is None else done.get(prog.parallel, prog.parallel)
            rebuilt = (tuple(uops), parallel)
            object.__setattr__(self, "_rebuilt", rebuilt)
        return rebuilt

    @property
    def uops(self) -> tuple[UOp, ...]:
        return self._over_own_params()[0]

    @property
    def parallel(self) -> UOp | None:
        return None if self.first.parallel is None else self._over_own_params()[1]


def splittable_loop(uops: tuple[UOp, ...], lowered: LoweredKernel) -> UOp | None:
    """The kernel's outermost loop if all its work happens inside it: an output loop (its iterations write
    disjoint elements) that is not walked in order by a scan, with no accumulator or other loop outside it (every
    thread would repeat that work). Else None."""
    top = [u for u in uops if u.op in (Ops.RANGE, Ops.DEFINE_ACC, Ops.END)]
    if not top or top[0].op is not Ops.RANGE: return None
    outer = top[0]
    if outer.arg[1] != "loop" or outer in lowered.sequential or outer.src[0].arg < 2: return None
    depth = 0
    for u in top:
        if u.op is Ops.END: depth -= 1
        elif depth == 0 and u is not outer: return None
        if u.op is Ops.RANGE: depth += 1
    return outer
