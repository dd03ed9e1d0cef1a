"""Reverse mode through loops (while regions: Python `for` and `while`, fori_loop, scan, while_loop): linearize,
then transpose into a loop running backwards over the iterations.

Design. A while region runs `while cond(s): s = body(s)`. Its linearization (what reverse mode transposes) is
made of two loops:

1. the *recording loop* (primal): the same loop with more state: an iteration counter `count` and, for every state
   value, a stacked buffer of shape (bound,) + its shape into which each iteration first writes the state it
   starts from (the carries, "store" policy). After the loop, `count` is the trip count and row j of each stack
   is the state at the start of iteration j;
2. the *tangent loop* (linear): `for j in range(count)`: the tangent state goes through the body's forward-mode
   graph, its primal values recomputed from the recorded state of iteration j (GATHER of the stacks at j): only
   the carries are stored (or recomputed: the memory policy below), an iteration's intermediate values are
   recomputed from them. Its state is the iteration index and the float state's tangents; its captures the
   counter, the stacks, the region's captures and their tangents. It is only ever transposed (never run):

`transpose_tangent_loop` makes the *backward loop*: `for r in range(count, 0, -1)` with j = r - 1, the
cotangent of the state goes back through the transposed tangent body of iteration j (numfn/autodiff/transpose.py
on the body's graph), and the cotangents of the captured values with a tangent are accumulated as more state.
Every loop made here can be differentiated again (jvp of the backward loop: hessians; reverse mode of it: grad of
grad); those with a bounded index keep its bounds, so their own reverse mode stores too.

The memory policy (`loop_policy`). Storing needs a trip count bound n known when compiling: a state value that is
a loop's index (a range's, fori_loop's: the tracer knows its bounds lo <= i <= hi inside the body, and the body adds
a step to it) makes hi - lo + 1 a bound, which the recording loop also enforces (it stops there). So a `for` loop
over a range with static bounds stores exactly its iterations, a fori_loop with a run-time trip count up to the
bound of its upper limit's value. With a bound n, by the carries' size S (the state's bytes) and MAX_STACK_BYTES:

- *store* when n * S fits: every iteration's state, one body evaluation per iteration backwards;
- else *checkpoint* every k = ceil(sqrt(n)) iterations when ceil(n / k) * S and k * S fit: `segmented` rewrites
  the loop as an outer loop over segments whose body is an inner loop of up to k iterations, and both levels
  store: the forward pass keeps the ceil(n / k) checkpoints (the outer loop's carries); each iteration of the
  backward loop over segments first reruns its segment from its checkpoint, storing its k carries, then goes back
  through them. Memory (n / k + k) * S, about two body evaluations per iteration;
- else (or without a bound: a `while` loop on values, while_loop, a fori_loop with an unbounded run-time limit)
  *recompute*: the recording loop only counts the iterations, and iteration j of the backward loop replays the
  body j times from the initial state (`replay`): no memory beyond the state, O(n^2) body evaluations.

The knob: `grad(f, checkpoint=k)` (the `checkpointing(k)` context around a linearization) checkpoints every k
iterations every loop with a bound over k, whatever fits (k = 1: store); MAX_STACK_BYTES = 0 recomputes every loop.
"""
from __future__ import annotations

import contextlib
import contextvars
import itertools
import math
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

from numfn.autodiff.jvp import NewPrimal, jvp_nodes
from numfn.autodiff.rules import Tangent
from numfn.autodiff.transpose import transpose_graph
from numfn.dtype import DType, dtypes
from numfn.ir.uop import Ops, UOp, substitute
from numfn.ir.walk import toposort
from numfn.trace.control import Region, placeholder

I64 = dtypes.int64
MAX_STACK_BYTES = 1 << 30   # the most memory reverse mode stores a loop's carries in (beyond it: recomputed)

Spec = tuple[tuple[int, ...], DType]
_tags = itertools.count(1 << 42)   # the tags of the regions made here: apart from traced and transposed ones


@dataclass(frozen=True)
class TangentLoop:
    """What the backward loop needs to know of a tangent loop: how many float state values it carries (its state
    is the index, then those) and where its captures' tangents start among its sources."""
    n_tangents: int
    first_tangent_capture: int


# by region: weak, so an entry dies with the last graph holding its tangent loop (a tangent loop is made and
# transposed in the same transformation; the table must not grow with every function traced)
TANGENT_LOOPS: weakref.WeakKeyDictionary[Region, TangentLoop] = weakref.WeakKeyDictionary()


def _sink(values: list[UOp]) -> UOp:
    return UOp(Ops.SINK, dtypes.void, tuple(values))


def _zeros(shape: tuple[int, ...], dtype: DType) -> UOp:
    return UOp.const_like(dtype, 0, shape)


def _int(value: int) -> UOp:
    return UOp.const(I64, value)


def _carries(region: Region) -> list[UOp]:
    """Every placeholder of the region its sub-graphs read (one number may have two: with and without bounds)."""
    subs = ([region.cond] if region.cond is not None else []) + list(region.bodies)
    return list({c: None for sub in subs for c in toposort([sub]) if c.op is Ops.CARRY and c.arg[0] == region.tag})


def trip_bound(region: Region) -> int | None:
    """A bound on a while region's trip count: from a state value that is a loop index (bounds known in the body,
    advanced by the body's addition), hi - lo + 1; None when there is none."""
    body = region.bodies[0]
    found = None
    for c in toposort([body]):
        if c.op is not Ops.CARRY or c.arg[0] != region.tag or len(c.arg) < 4 or c.arg[3] is None: continue
        k, (lo, hi) = c.arg[1], c.arg[3]
        step = body.src[k]
        if not (c.dtype.is_int and step.op is Ops.ADD and c in step.src): continue
        count = max(int(hi) - int(lo) + 1, 0)
        found = count if found is None else min(found, count)
    return found


def _index_grid(j: UOp, shape: tuple[int, ...]) -> tuple[UOp, ...]:
    """The GATHER/SCATTER indices of row j of a stack of arrays of `shape`: j, then each axis's position."""
    idx = [j.reshape((1,) * len(shape)).expand(shape) if shape else j]
    for a, n in enumerate(shape):
        pos = UOp.iota(max(n, 1)).shrink(((0, n),))
        idx.append(pos.reshape(tuple(n if b == a else 1 for b in range(len(shape)))).expand(shape))
    return tuple(idx)


def stack_row(stack: UOp, j: UOp, shape: tuple[int, ...]) -> UOp:
    """stack[j]."""
    return UOp(Ops.GATHER, stack.dtype, (stack,) + _index_grid(j, shape))


def stack_write(stack: UOp, j: UOp, value: UOp) -> UOp:
    """stack with stack[j] = value."""
    assert value.shape is not None
    return UOp(Ops.SCATTER, stack.dtype, (stack, value) + _index_grid(j, value.shape), (None, True, False))


# ---------------------------------------------------------------------------------------------------------------
# the memory policy

# the checkpoint interval asked for by the transformation being traced (grad(..., checkpoint=k)); None: automatic
_CHECKPOINT_EVERY: contextvars.ContextVar[int | None] = contextvars.ContextVar("numfn_checkpoint_every",
                                                                               default=None)
# the loops made by segmenting a loop for checkpointing (both levels store: they are never segmented again)
_SEGMENTS: weakref.WeakSet[Region] = weakref.WeakSet()


def valid_checkpoint(every: int | None) -> int | None:
    """`every`, a checkpoint interval: a positive int, or None (ValueError otherwise)."""
    if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every < 1):
        raise ValueError(f"checkpoint must be a positive number of iterations or None, got {every!r}")
    return every


@contextlib.contextmanager
def checkpointing(every: int | None) -> Iterator[None]:
    """Within: reverse mode through a loop stores every `every`-th carry (None: the automatic policy, or the
    interval an enclosing transformation asked for)."""
    if valid_checkpoint(every) is None:
        yield
        return
    token = _CHECKPOINT_EVERY.set(every)
    try:
        yield
    finally:
        _CHECKPOINT_EVERY.reset(token)


def loop_policy(region: Region, bound: int | None) -> tuple[str, int]:
    """How reverse mode keeps a loop's carries: ("store", 1), ("checkpoint", k): every k-th carry, or
    ("recompute", 0); see the module docstring."""
    if bound is None: return "recompute", 0
    state_bytes = sum(math.prod(s) * d.itemsize for s, d in region.state) + I64.itemsize
    fits = lambda rows: rows * state_bytes <= MAX_STACK_BYTES   # noqa: E731
    asked = _CHECKPOINT_EVERY.get()
    if region in _SEGMENTS or bound <= 2 or (asked is not None and not 1 < asked < bound):
        return ("store", 1) if fits(bound) else ("recompute", 0)
    every = asked if asked is not None else math.isqrt(bound - 1) + 1   # ceil(sqrt(bound))
    if asked is None and fits(bound): return "store", 1
    if fits(-(-bound // every)) and fits(every): return "checkpoint", every
    return "recompute", 0


def segmented(node: UOp, every: int, bound: int) -> UOp:
    """The loop `node` as two nested loops: the outer runs up to ceil(bound / every) segments, each the inner loop
    running up to `every` of the original iterations (both stop where the original loop stops). Its state is the
    original state, then the segment index; its sources the original's with a 0 after the state. Reverse mode
    stores the outer loop's carries (the checkpoints) and, in the backward loop, the carries of one segment at a
    time (recomputed from its checkpoint)."""
    region: Region = node.arg
    assert region.cond is not None
    n, ncap = len(region.state), len(node.src) - len(region.state)
    segments = -(-bound // every)
    outer, inner = next(_tags), next(_tags)

    def renumbered(tag: int) -> dict[UOp, UOp]:   # the original placeholders, the state's index after the state
        return {c: placeholder(tag, c.arg[1] if c.arg[1] < n else c.arg[1] + 1, c.arg[2], c.dtype,
                               c.arg[3] if len(c.arg) > 3 else None) for c in _carries(region)}
    specs = tuple(region.state) + (((), I64),)
    # the inner loop: `every` iterations at most; its sources are the outer region's placeholders
    t_body = placeholder(inner, n, (), I64, (0, every - 1))
    in_cond = substitute(region.cond, renumbered(inner)).src[0].alu(
        Ops.AND, placeholder(inner, n, (), I64).alu(Ops.CMPLT, _int(every)))
    in_body = substitute(region.bodies[0], renumbered(inner))
    in_region = Region("while", inner, specs, _sink([in_cond]),
                       (_sink(list(in_body.src) + [t_body.alu(Ops.ADD, _int(1))]),), specs,
                       tuple(region.names) + ("the iteration in the segment",))
    _SEGMENTS.add(in_region)
    outer_state = [placeholder(outer, k, *region.state[k]) for k in range(n)]
    outer_caps = [placeholder(outer, n + 1 + c, _shape(node.src[n + c]), node.src[n + c].dtype) for c in range(ncap)]
    in_loop = UOp(Ops.LOOP, node.dtype, tuple(outer_state) + (_int(0),) + tuple(outer_caps), in_region)
    q_body = placeholder(outer, n, (), I64, (0, segments - 1))
    out_cond = substitute(region.cond, renumbered(outer)).src[0].alu(
        Ops.AND, placeholder(outer, n, (), I64).alu(Ops.CMPLT, _int(segments)))
    out_body = [UOp(Ops.RESULT, d, (in_loop,), k) for k, (_, d) in enumerate(region.state)] + \
        [q_body.alu(Ops.ADD, _int(1))]
    out_region = Region("while", outer, specs, _sink([out_cond]), (_sink(out_body),), specs,
                        tuple(region.names) + ("the segment",))
    _SEGMENTS.add(out_region)
    return UOp(Ops.LOOP, node.dtype, tuple(node.src[:n]) + (_int(0),) + tuple(node.src[n:]), out_region)


def linearize_while(node: UOp, primals: tuple[UOp, ...], tangents: tuple[Tangent, ...]) -> NewPrimal:
    """The recording loop (the new primal node) and the tangents of its results: results of the tangent loop (see
    the module docstring)."""
    region: Region = node.arg
    n, inputs = len(region.state), list(primals)
    bound = trip_bound(region)
    policy, every = loop_policy(region, bound)
    if policy == "checkpoint":
        assert bound is not None
        nested = segmented(UOp(node.op, node.dtype, tuple(primals), region), every, bound)
        two_levels = linearize_while(nested, nested.src, tuple(tangents[:n]) + (None,) + tuple(tangents[n:]))
        return NewPrimal(two_levels.node, two_levels.tangents[:n])
    store = policy == "store"
    assert bound is None or bound >= 0
    old = _carries(region)
    ncap = len(inputs) - n
    nstack = n if store else 0

    # 1. the recording loop: state, count, stacks (when storing); then the captures
    rec = next(_tags)
    renumber = {c: placeholder(rec, c.arg[1] if c.arg[1] < n else c.arg[1] + 1 + nstack, c.arg[2], c.dtype,
                               c.arg[3] if len(c.arg) > 3 else None) for c in old}
    count_body = placeholder(rec, n, (), I64, (0, max(bound - 1, 0)) if store and bound is not None else None)
    count_cond = placeholder(rec, n, (), I64)
    assert region.cond is not None
    going = substitute(region.cond, renumber).src[0]
    body = substitute(region.bodies[0], renumber)
    written: list[UOp] = []
    stack_specs: tuple[Spec, ...] = ()
    if store:
        assert bound is not None
        going = going.alu(Ops.AND, count_cond.alu(Ops.CMPLT, _int(bound)))
        stack_specs = tuple(((bound,) + s, d) for s, d in region.state)
        stacks = [placeholder(rec, n + 1 + k, *stack_specs[k]) for k in range(n)]
        states = [placeholder(rec, k, *region.state[k]) for k in range(n)]
        written = [stack_write(st, count_body, v) for st, v in zip(stacks, states)]
    specs = tuple(region.state) + (((), I64),) + stack_specs
    names = tuple(region.names) + ("the iteration count",) + \
        tuple(f"the stored values of state {k}" for k in range(nstack))
    recording = Region("while", rec, specs, _sink([going]), (_sink(list(body.src) + [count_body.alu(
        Ops.ADD, _int(1))] + written),), specs, names)
    srcs = tuple(inputs[:n]) + (_int(0),) + tuple(_zeros(*s) for s in stack_specs) + tuple(inputs[n:])
    loop = UOp(Ops.LOOP, node.dtype, srcs, recording)
    count = UOp(Ops.RESULT, I64, (loop,), n)
    # what the tangent loop reads the primal state from: the stacks, or the initial state to replay from
    kept = [UOp(Ops.RESULT, d, (loop,), n + 1 + k) for k, (_, d) in enumerate(region.state)] if store else inputs[:n]
    kept_specs = stack_specs if store else tuple(region.state)

    # 2. the tangent loop: state j and the float state's tangents; captures count, stacks, captures, their tangents
    tstate = [k for k, (_, d) in enumerate(region.state) if d.is_inexact]
    tcaps = [k for k in range(n, len(inputs)) if tangents[k] is not None]
    nt = len(tstate)
    tan = next(_tags)
    first_cap = 1 + nt                       # count, then the stacks, the captures, their tangents
    j_body = placeholder(tan, 0, (), I64, (0, max(bound - 1, 0)) if bound is not None else None)
    j_cond = placeholder(tan, 0, (), I64)
    count_ph = placeholder(tan, first_cap, (), I64)
    kept_ph = [placeholder(tan, first_cap + 1 + k, *kept_specs[k]) for k in range(n)]
    cap_at = first_cap + 1 + n
    tcap_at = cap_at + ncap
    caps_ph = [placeholder(tan, cap_at + k, shape, dt) for k, (shape, dt) in
               enumerate((_shape(u), u.dtype) for u in inputs[n:])]
    primal_state = [stack_row(kept_ph[k], j_body, region.state[k][0]) for k in range(n)] if store else \
        replay(region, kept_ph, caps_ph, j_body)
    leaves: dict[UOp, tuple[UOp, Tangent]] = {}
    for c in old:
        k, shape, dt = c.arg[1], c.arg[2], c.dtype
        if k < n:
            t = placeholder(tan, 1 + tstate.index(k), shape, dt) if k in tstate else None
            leaves[c] = (primal_state[k], t)
        else:
            t = placeholder(tan, tcap_at + tcaps.index(k), shape, dt) if k in tcaps else None
            leaves[c] = (caps_ph[k - n], t)
    done = jvp_nodes([region.bodies[0]], leaves, linearizing=True)
    outs = region.bodies[0].src
    touts = [done[outs[k]][1] for k in tstate]
    tvalues: list[UOp] = [_zeros(*region.state[k]) if t is None else cast(UOp, t) for k, t in zip(tstate, touts)]
    tspecs = ((((), I64),) + tuple(region.state[k] for k in tstate))
    tregion = Region("while", tan, tspecs, _sink([j_cond.alu(Ops.CMPLT, count_ph)]),
                     (_sink([j_body.alu(Ops.ADD, _int(1))] + tvalues),), tspecs)
    tsrcs = (_int(0),) + tuple(_zeros(*region.state[k]) if tangents[k] is None else cast(UOp, tangents[k])
                               for k in tstate) \
        + (count,) + tuple(kept) + tuple(inputs[n:]) + tuple(cast(UOp, tangents[k]) for k in tcaps)
    TANGENT_LOOPS[tregion] = TangentLoop(nt, tcap_at)
    tloop = UOp(Ops.LOOP, node.dtype, tsrcs, tregion)
    return NewPrimal(loop, [UOp(Ops.RESULT, region.state[k][1], (tloop,), 1 + tstate.index(k)) if k in tstate
                            else None for k in range(n)])


def _shape(u: UOp) -> tuple[int, ...]:
    assert u.shape is not None
    return u.shape


def replay(region: Region, init: list[UOp], captures: list[UOp], j: UOp) -> list[UOp]:
    """The state at the start of iteration j, recomputed: the loop's body run j times from `init` (a loop of its
    own, reading `captures` for the region's captures): the recompute policy."""
    n, ncap = len(region.state), len(captures)
    tag = next(_tags)
    renumber = {c: placeholder(tag, c.arg[1] if c.arg[1] < n else c.arg[1] + 1, c.arg[2], c.dtype,
                               c.arg[3] if len(c.arg) > 3 else None) for c in _carries(region)}
    i = placeholder(tag, n, (), I64)
    body = substitute(region.bodies[0], renumber)
    specs = tuple(region.state) + (((), I64),)
    again = Region("while", tag, specs, _sink([i.alu(Ops.CMPLT, placeholder(tag, n + 1 + ncap, (), I64))]),
                   (_sink(list(body.src) + [i.alu(Ops.ADD, _int(1))]),), specs,
                   tuple(region.names) + ("the iteration replayed",))
    loop = UOp(Ops.LOOP, dtypes.void, tuple(init) + (_int(0),) + tuple(captures) + (j,), again)
    return [UOp(Ops.RESULT, d, (loop,), k) for k, (_, d) in enumerate(region.state)]


def is_tangent_loop(loop: UOp) -> bool:
    return isinstance(loop.arg, Region) and loop.arg in TANGENT_LOOPS


def transpose_tangent_loop(loop: UOp, cts: dict[int, UOp], linear: tuple[bool, ...]) -> tuple[UOp | None, ...]:
    """The backward loop (see the module docstring): the cotangents of the tangent loop's initial tangent state and
    of its captured tangents, from those of its results (`cts`, by result)."""
    region: Region = loop.arg
    info = TANGENT_LOOPS[region]
    nt, tcap_at, tag = info.n_tangents, info.first_tangent_capture, region.tag
    srcs = loop.src
    body = region.bodies[0]
    carries = {c.arg[1]: c for c in toposort([body]) if c.op is Ops.CARRY and c.arg[0] == tag}
    tspecs: list[Spec] = list(region.state[1:])
    capspecs: list[Spec] = []
    for u in srcs[tcap_at:]:
        assert u.shape is not None
        capspecs.append((u.shape, u.dtype))
    primal_caps = list(range(1 + nt, tcap_at))   # count, stacks, captures: captured again as they are
    back = next(_tags)
    bound = trip_bound(region)
    r_body = placeholder(back, 0, (), I64, None if bound is None else (1, max(bound, 1)))
    r_cond = placeholder(back, 0, (), I64)
    ct_ph = [placeholder(back, 1 + i, *s) for i, s in enumerate(tspecs)]
    acc_ph = [placeholder(back, 1 + nt + m, *s) for m, s in enumerate(capspecs)]
    first_cap = 1 + nt + len(capspecs)
    holders = [carries.get(1 + i, placeholder(tag, 1 + i, *s)) for i, s in enumerate(tspecs)] + \
              [carries.get(tcap_at + m, placeholder(tag, tcap_at + m, *s)) for m, s in enumerate(capspecs)]
    found = transpose_graph(list(body.src[1:]), ct_ph, holders)
    new_ct = [(_zeros(*tspecs[i]) if g is None else g) for i, g in enumerate(found[:nt])]
    new_acc = [a if g is None else a.alu(Ops.ADD, g) for a, g in zip(acc_ph, found[nt:])]
    j = r_body.alu(Ops.ADD, _int(-1))
    renumber = {c: placeholder(back, first_cap + primal_caps.index(k), c.arg[2], c.dtype)
                for k, c in carries.items() if k in primal_caps}
    if 0 in carries: renumber[carries[0]] = j
    new_body = substitute(_sink([j] + new_ct + new_acc), renumber)
    leftover = [c for c in toposort([new_body]) if c.op is Ops.CARRY and c.arg[0] == tag]
    assert not leftover, "the transposed body of a tangent loop reads no tangent"
    specs = (((), I64),) + tuple(tspecs) + tuple(capspecs)
    bregion = Region("while", back, specs, _sink([_int(0).alu(Ops.CMPLT, r_cond)]), (new_body,), specs,
                     ("the iteration, counting down",) + tuple(f"the cotangent of state {i}" for i in range(nt)) +
                     tuple(f"the cotangent of capture {m}" for m in range(len(capspecs))))
    count = srcs[1 + nt]
    init = (count,) + tuple(cts.get(1 + i, _zeros(*s)) for i, s in enumerate(tspecs)) + \
        tuple(_zeros(*s) for s in capspecs)
    bloop = UOp(Ops.LOOP, loop.dtype, init + tuple(srcs[k] for k in primal_caps), bregion)
    out: list[UOp | None] = [None] * len(srcs)
    for i in range(nt):
        if linear[1 + i]: out[1 + i] = UOp(Ops.RESULT, tspecs[i][1], (bloop,), 1 + i)
    for m in range(len(capspecs)):
        if linear[tcap_at + m]: out[tcap_at + m] = UOp(Ops.RESULT, capspecs[m][1], (bloop,), 1 + nt + m)
    return tuple(out)
