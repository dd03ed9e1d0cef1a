"""Loops and branches as program structure: fori_loop, while_loop, scan, cond, switch.

Inside a traced function these do not unroll: the body is traced once into a *region* and becomes one LOOP node
of the graph, which the compiled program runs as a native loop (or branch) around the body's kernels. Outside a
trace (called with NumPy values) they run as the Python they describe.

A region is closed: its sub-graphs (the condition, the body, the branches) see only placeholders, CARRY(tag, k):
the first ones stand for the loop's state (a branch has none), the rest for the values from outside the
region that its sub-graphs use (captures: they are the LOOP node's sources, computed outside the loop, so
loop-invariant work is hoisted by construction). The LOOP node's value is the tuple of the region's results,
RESULT(loop, k) is result k.

State is pytrees of arrays, as in JAX. Beyond what the body returns, an array from outside that the body writes
into (`out[i] = ...`, `acc += ...`) is state too: its value after the loop is the loop's (found by tracing the body
once, then again with those arrays as placeholders). A Python scalar in the state takes the type the body gives
it (`total = 0; total = total + x.sum()` makes a float64 state), as it would in NumPy after one iteration; any
other change of shape or dtype across an iteration is an error naming the value.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, SupportsInt, TypeVar, cast
from collections.abc import Callable, Sequence

import numpy as np

from numfn.dtype import DType, dtypes
from numfn.errors import NumfnError, unsupported, user_location
from numfn.ir.extern import is_effect
from numfn.pytree import flatten, unflatten
from numfn.trace.tensor import Tensor, add_check, numpy_function, promote
from numfn.trace.record import drop_links, effects_since, new_region_tag, recording_trace, tracing
from numfn.trace.unbound import PENDING
from numfn.trace.loop_links import LoopPairs
from numfn.trace.hoisted_checks import Counter, Hoisted, failed_after, hoist, hoistable, still_going
from numfn.trace.shrinking import BecomesRunTimeLength, branch_layouts, crosses_as_parts, layout_of, lift, lower, \
    lowered_body, lowered_cond, lowered_names
from numfn.ir.uop import Ops, UOp, fold, format_graph, substitute, toposort

I64, BOOL = dtypes.int64, dtypes.bool

_T = TypeVar("_T")   # a loop's state, a scan's carry
_R = TypeVar("_R")   # what a branch returns


@dataclass(frozen=True, eq=False)
class Region:
    """What a LOOP node runs. kind "while": while cond(state): state = body(state), results the final state;
    kind "cond": one of `bodies` (chosen by the first source: a bool for two branches, an int64 index for a
    switch) computes the results (its operands are captures: empty state). Sub-graphs are SINKs over CARRY(tag, k)
    placeholders: k < len(state) the state, the rest the captured outer values (the LOOP's sources after the state).
    `names` say what each state value is in the user's code (for errors and debugging)."""
    kind: str
    tag: int
    state: tuple[tuple[tuple[int, ...], DType], ...]
    cond: UOp | None
    bodies: tuple[UOp, ...]
    results: tuple[tuple[tuple[int, ...], DType], ...]
    names: tuple[str, ...] = ()

    def __repr__(self) -> str:   # the sub-graphs, whole: the cache key and printing see everything the loop does
        parts = [f"{self.kind} region {self.tag}"]
        if self.cond is not None: parts.append("cond:\n" + _indent(format_graph([self.cond])))
        for i, b in enumerate(self.bodies): parts.append(f"body {i}:\n" + _indent(format_graph([b])))
        return "\n".join(parts)

    def __hash__(self) -> int:
        return hash((self.kind, self.tag, self.state, self.cond, self.bodies))

    def __eq__(self, other) -> bool:
        return isinstance(other, Region) and (self.kind, self.tag, self.state, self.cond, self.bodies) == \
            (other.kind, other.tag, other.state, other.cond, other.bodies)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.split("\n"))


def placeholder(tag: int, k: int, shape: tuple[int, ...], dtype: DType, bounds: tuple | None = None) -> UOp:
    """Placeholder k of region `tag`; `bounds` ((lo, hi) of an integer) hold wherever this one is read (a loop
    index inside the body: lower <= i < upper)."""
    return UOp(Ops.CARRY, dtype, (), (tag, k, tuple(shape), bounds))


# ---------------------------------------------------------------------------------------------------------------
# closing sub-graphs over their captures

def close(tag: int, roots: Sequence[UOp], first_capture: int, captures: dict[UOp, UOp]) -> list[UOp]:
    """`roots` with every outer value they use (a maximal subgraph not reading this region's placeholders)
    replaced by a placeholder numbered from `first_capture` on; `captures` (outer value -> placeholder) is
    extended, so several sub-graphs of one region share their captures."""
    def inside(u: UOp, src: tuple[UOp | None, ...]) -> UOp | None:
        """u rebuilt inside the region, or None for an outer value (one reading none of its placeholders)."""
        if u.op is Ops.CARRY and u.arg[0] == tag: return u
        # (a run-time callback is an effect: it runs where it was traced, in the branch or every iteration)
        if u.op is not Ops.SINK and all(s is None for s in src) and (start is None or not made_inside(u, start)):
            return None
        return UOp(u.op, u.dtype, tuple(_captured(s, new, tag, first_capture, captures) for s, new in zip(u.src, src)),
                   u.arg)

    start = effects_since(tag)
    inner = fold(roots, inside)   # (in toposort order: the captures are numbered in it)
    return [_captured(r, inner[r], tag, first_capture, captures) for r in roots]


def made_inside(u: UOp, start: int) -> bool:
    """Whether `u` is a run-time callback numbered `start` or later (made inside the region being closed), or a loop
    or branch holding one: an effect, which stays in the region even when it reads only outer values."""
    pending = [u]
    while pending:
        v = pending.pop()
        if is_effect(v) and v.arg.params[1] >= start: return True
        if v.op is Ops.LOOP:
            region = v.arg
            for g in (region.cond, *region.bodies):
                if g is not None: pending += [w for w in g.toposort() if w.op in (Ops.EXTERN, Ops.LOOP)]
    return False


def _captured(u: UOp, inside: UOp | None, tag: int, first: int, captures: dict) -> UOp:
    """What the region reads for `u`: its version inside (`inside`), else u itself when it is a constant, else the
    placeholder of its capture."""
    if inside is not None: return inside
    if _constant(u): return u   # constants (and ranges, and views of them) stay where they are used: no memory
    if u not in captures:
        captures[u] = placeholder(tag, first + len(captures), cast(tuple[int, ...], u.shape), u.dtype)
    return captures[u]


def _constant(u: UOp) -> bool:
    return all(v.op in (Ops.CONST, Ops.IOTA) or (v.src and v.op not in (Ops.REDUCE_AXIS, Ops.SCAN, Ops.GATHER,
                                                                       Ops.SCATTER, Ops.LOOP, Ops.RESULT, Ops.EXTERN))
               for v in u.toposort())

# ---------------------------------------------------------------------------------------------------------------
# tracing a region

def as_state(x, what: str) -> Tensor:
    """A loop's or branch's value as an array (a Python number lifted); a loop's return value not bound yet
    (numfn.trace.unbound.PENDING) stays itself: the region learns its type (`_pending_types`)."""
    if x is PENDING: return cast(Tensor, x)   # (typed as the arrays it stands for)
    if isinstance(x, Tensor): return x
    try:
        return Tensor.lift(x)
    except TypeError:
        raise TypeError(f"{what} must be arrays or numbers, got {type(x).__name__} (at {user_location()})") from None


def _spec(t: Tensor, name: str) -> tuple[tuple[int, ...], DType]:
    if t.runtime_length:
        raise NumfnError(f"{name}: an array of run-time length (x[mask], nonzero) as loop state (at "
                         f"{user_location()}); keep the mask and use np.where instead")
    return (t.shape, t.uop.dtype)


def _name(t: Tensor) -> str:
    return f"an array of shape {t.shape} written in the loop"


@dataclass
class _Traced:
    """A sub-graph traced: the values it returned, the outer arrays it rebinds (implicit state), its checks."""
    values: list
    rebinds: dict
    checks: list
    born: set
    links: dict   # outer arrays a branch inside linked: undone after the trace (TraceRecord.links)


def _trace(fn: Callable, args: list[Tensor], outer: Sequence[Tensor] = ()) -> _Traced:
    """`outer`: the args that are outer arrays passed through (not the region's placeholders)."""
    with recording_trace(region=True) as rec:
        assert rec.born is not None and rec.rebinds is not None   # a region's record has both
        # the region's placeholders are its own: writes into them are state
        rec.born.update(id(a) for a in args if not any(a is o for o in outer))
        try:
            values = fn(*args)
        except BaseException:   # outer arrays the body wrote get their values back
            for t, old in rec.rebinds.values():
                if t.base is None: t.rebind(old, record=False)
            drop_links(rec.links)
            raise
    return _Traced(values, rec.rebinds, rec.checks, rec.born, rec.links or {})


def _settle(state: list[Tensor], new: list[Tensor], specs: list, names: list[str], weak: list[bool],
            peel: bool) -> list | None:
    """The state's (shape, dtype, weak) after one iteration: None when `new` matches `specs` and `weak`, else the
    promoted types (a Python scalar in the state takes the type the body gives it, and stays a Python scalar only
    if the body gives it one: `total = 0; total = total + x.sum()` makes it NumPy's int64). A value the body
    broadcasts to a larger shape (`z = np.zeros_like(cr)` of shape (1, m), then `z = z * z + cr + ci` with ci of
    shape (n, 1)) has that shape from the first iteration on: with `peel`, FirstIterationDiffers (the caller runs
    the first iteration on its own, and the loop from the second with the larger shape). Any other change is an
    error naming the value."""
    out, changed = [], False
    for t, n, (shape, dt), name, w in zip(state, new, specs, names, weak):
        if n.shape != shape and peel and len(n.shape) >= len(shape) and _broadcasts_to(shape, n.shape):
            raise StateShapeGrows(name, shape, n.shape)
        if n.shape != shape:
            raise NumfnError(f"{name} changes shape from {shape} to {n.shape} in the loop body (at "
                             f"{user_location()}); the state of a loop keeps its shape")
        nd = n.uop.dtype
        if nd is dt and (n.weak or not w):
            out.append((shape, dt, w))
            continue
        if t.weak:   # a Python scalar: after one iteration NumPy gives it the body's type
            out.append((shape, nd, w and n.weak))
            changed = True
            continue
        raise NumfnError(f"{name} changes dtype from {dt.name} to {nd.name} in the loop body (at {user_location()}); "
                         f"give it its final dtype before the loop (for example x = x.astype(np.{nd.name}))")
    return out if changed else None


def _broadcasts_to(shape: tuple, larger: tuple) -> bool:
    try:
        return np.broadcast_shapes(shape, larger) == tuple(larger)
    except ValueError:
        return False


def passes_through(t: Any) -> bool:
    """Whether a loop gives the body this state value itself rather than a placeholder: an array that shares memory
    with others (a view, an array with live views or linked by a branch, an argument), so that a write into it in the
    body reaches that memory (its base becomes state, see `while_region`). A view of run-time length (x[:n]) too:
    it cannot be a placeholder."""
    if not isinstance(t, Tensor) or t.weak or (t.runtime_length and t.base is None): return False
    return t.base is not None or bool(t._links) or t.memory == "input" or \
        any(ref() is not None for ref in t._views or ())


def _reads_outer(t: Any, body: _Traced) -> bool:
    """Whether a loop body reads the array `t` (a state's initial value, a base array) itself, by another name."""
    if not isinstance(t, Tensor) or t.weak or t.base is not None or t.runtime_length: return False
    return any(u is t.uop for u in toposort([v.uop for v in body.values if isinstance(v, Tensor)]))


def _memory_base(t: Tensor) -> Tensor:
    return t if t.base is None else t.base


def _same_memory(new: Any, old: Tensor) -> bool:
    """Whether the body left a passed-through state value the same array (or the same view of the same base)."""
    if new is old: return True
    return isinstance(new, Tensor) and old.base is not None and new.base is old.base and new.chain == old.chain \
        and new.weak == old.weak


class FirstIterationDiffers(Exception):
    """Raised by `while_region(..., first="peel")` when Python's first iteration writes into memory the later ones
    do not: the body writes into a state array in place and then binds the name to another array (`v[0] = 0;
    v = v * 2`). In the first iteration the write lands in the array the name held before the loop, which other
    names (or the caller) may hold too; in the later ones in an array the previous iteration made. The caller (a
    converted `for` or `while`, numfn.trace.statements) runs the first iteration on its own, then the loop from
    the second. Nothing is left changed when it is raised."""


class StateShapeGrows(FirstIterationDiffers):
    """FirstIterationDiffers for a state value the body broadcasts to a larger shape: the first iteration runs on its
    own where the loop runs at least once for sure (a static trip count); where that is decided at run time, the
    value's shape after the loop would depend on it, and `error()` says so."""

    def __init__(self, name: str, shape: tuple, larger: tuple):
        super().__init__(name)
        self.name, self.shape, self.larger = name, tuple(shape), tuple(larger)

    def error(self) -> NumfnError:
        return NumfnError(f"{self.name} changes shape from {self.shape} to {self.larger} in the loop body (at "
                          f"{user_location()}); the loop's trip count is known only at run time, so its shape after "
                          f"the loop would depend on whether the loop runs (NumPy: {self.shape} if it does not). Give "
                          f"it its final shape before the loop (for example np.zeros({self.larger}) instead of "
                          f"np.zeros_like of a smaller array, or np.broadcast_to(x, {self.larger}).copy())")


def while_region(cond_fn: Callable, body_fn: Callable, init: list[Tensor], names: list[str],
                 body_bounds: dict[int, tuple[int, int]] | None = None, first: str = "refuse",
                 counter: Counter | None = None) -> list[Tensor]:
    """The final state of `while cond_fn(*state): state = body_fn(*state)` (see `_while_region`). A state value of
    run-time length (x[mask]), or one the body makes so (`z = z[m]`, learnt from a first trace), is carried as its
    elements at its bound and its length (numfn.trace.shrinking): each iteration's value is a prefix of the bound.
    `counter`: the loop's counter where its iterations are known before it starts (numfn.trace.hoisted_checks)."""
    layouts = {k: layout_of([t], names[k] if k < len(names) else "loop state") for k, t in enumerate(init)
               if crosses_as_parts(t)}
    for _ in range(len(init) + 1):
        at, flat_bounds, flat_counter = 0, {}, None
        for k in range(len(init)):   # the bounds of integer state values, at their places in the flat state
            if body_bounds and k in body_bounds: flat_bounds[at] = body_bounds[k]
            if counter is not None and k == counter.index and k not in layouts:
                flat_counter = replace(counter, index=at)
            at += layouts[k].width if k in layouts else 1
        try:
            flat = _while_region(lowered_cond(cond_fn, layouts, len(init)), lowered_body(body_fn, layouts, init, names),
                                 lower(init, layouts, names), lowered_names(names, layouts, len(init)), flat_bounds,
                                 first, flat_counter)
        except BecomesRunTimeLength as e:
            layouts[e.index] = e.layout
            continue
        return lift(flat, layouts, len(init))
    raise NumfnError(f"the loop's state does not settle (at {user_location()})")


def _while_region(cond_fn: Callable, body_fn: Callable, init: list[Tensor], names: list[str],
                  body_bounds: dict[int, tuple[int, int]] | None = None, first: str = "refuse",
                  counter: Counter | None = None) -> list[Tensor]:
    """The final state of `while cond_fn(*state): state = body_fn(*state)`: results of one LOOP node. cond_fn
    returns a traced bool (0-d); body_fn the new state (as many values as init). Arrays from outside the body that
    it writes into join the state; their final values are rebound to them. Checks inside the body or the condition
    (an index out of bounds, a Python int beyond 64 bits) are state too: whether one failed, and its payload, raised
    after the call; the loop stops at the first failure, where Python would have raised. A condition's checks are
    made on the initial state, then by the body on each state it makes (the states the condition sees).
    `body_bounds`: integer state values' bounds inside the body (a loop index).

    A state value that shares memory with other arrays (`passes_through`: v = x[1:], then v += 1 in the body) is
    given to the body as it is, not as a placeholder, when the body leaves it the same array: a write through it
    then rebinds its base, an outer array written by the body (state as above), so the write reaches x and x read
    in the body sees it; after the loop it is the view of x's last value. When the body binds the name to another
    array, the value is a placeholder of its own as any other (traced again).

    `first` says what to do when the first iteration writes into memory the others do not (see
    FirstIterationDiffers): "refuse" a write through a name shared with another array (jax-style loops), "peel"
    (raise FirstIterationDiffers: the caller runs the first iteration on its own), or "peeled" (the caller did: the
    state is what an iteration made, so a name the body binds to another array is a placeholder of its own, as any
    other; if the first iteration did not run, neither does the loop: its state is unchanged).

    `counter`: the loop's counter where its iterations are known first: checks of it alone are hoisted (hoisted_checks).

    A state value PENDING (the value a loop returns, not bound yet: numfn.trace.unbound) is given to the body as
    PENDING until the body binds it: its type is then learnt, and it starts as zeros of that type (never read
    where no iteration bound it). One the body never binds stays PENDING after the loop."""
    pending = {k for k, t in enumerate(init) if t is PENDING}
    init = [Tensor(UOp.const(BOOL, False)) if t is PENDING else t for t in init]   # (a stand-in while pending)
    extra: list[Tensor] = []                      # outer arrays the body writes into (implicit state)
    types: dict[int, tuple[DType, bool]] = {}     # state values whose type the body changed (promoted scalars)
    n_checks = n_cond = 0                         # checks the body and the condition make: two state values each
    hoisted: dict[int, Hoisted] = {}              # the body's checks computed before the loop (by position)
    icount: int | None = None                     # the counter's position in the state
    body_bounds = body_bounds or {}
    through = {k for k, t in enumerate(init) if passes_through(t)}   # init values given to the body as they are
    placeholders: set[int] = set()                # values the body binds to other arrays: never given as they are
    arrays0d = {k for k, t in enumerate(init) if _array0d(t)}   # 0-d values given as 0-d arrays (`+=` is in place)
    stale: set[int] = set()                       # arrays made by earlier attempts (their writes are not state)
    pairs = LoopPairs(names)                      # state values that may share memory (numfn.trace.loop_links)
    for _ in range(16):
        tag = new_region_tag()
        kept = [k for k in range(len(init)) if k not in through]
        n_kept = len(kept)
        flags = [Tensor(UOp.const(BOOL, False)), Tensor(UOp.const(I64, 0))] * (n_checks + n_cond)
        n_link = pairs.start(kept, extra, init)   # each pair's flag, and a changing view's positions
        state = [init[k] for k in kept] + extra + pairs.state(init) + flags
        all_names = [names[k] for k in kept] + [_name(t) for t in extra] + pairs.names(names, _name) + \
            ["a check's flag", "a check's payload"] * (n_checks + n_cond)
        specs = [(t.shape, types.get(k, (t.uop.dtype, t.weak))[0]) for k, t in enumerate(state)]
        weak = [types.get(k, (t.uop.dtype, t.weak))[1] for k, t in enumerate(state)]
        for t, name in zip(state, all_names): _spec(t, name)
        ph = [Tensor(placeholder(tag, k, s, d), weak=weak[k]) for k, (s, d) in enumerate(specs)]
        ph_body = [Tensor(placeholder(tag, k, s, d, body_bounds.get(kept[k]) if k < n_kept else None),
                          weak=p.weak) for k, ((s, d), p) in enumerate(zip(specs, ph))]
        for j, (p, pb) in enumerate(zip(ph, ph_body)):   # a 0-d array stays one (in-place updates keep its dtype)
            if (kept[j] in arrays0d if j < n_kept else _array0d(state[j])): p.as_array(), pb.as_array()

        def args(phs: list[Tensor], kept=kept, pending=frozenset(pending)) -> list[Tensor]:
            full = list(init)
            for j, k in enumerate(kept): full[k] = cast(Tensor, PENDING) if k in pending else phs[j]
            return full

        passed = [init[k] for k in through]
        outer = [t.uop for t in extra]
        for t, p in zip(extra, ph_body[n_kept:]): t.rebind(p.uop, record=False)   # the body sees the state
        given = [p.uop for p in ph_body[:n_kept]]
        c = b = None
        try:
            for t, p in zip(extra, ph[n_kept:]): t.rebind(p.uop, record=False)
            c = _trace(lambda *a: [as_state(cond_fn(*a), "a loop condition")], args(ph[:n_kept]), passed)
            for t, p in zip(extra, ph_body[n_kept:]): t.rebind(p.uop, record=False)
            at, given_as = n_kept + len(extra), {k: ph_body[j] for j, k in enumerate(kept)}

            def linked_body(*a, given_as=given_as, carried=ph_body[at:at + n_link]):   # (linked under their flags)
                pairs.link(given_as, carried)
                return [as_state(v, "loop state") for v in body_fn(*a)]
            b = _trace(linked_body, args(ph_body[:n_kept]), passed)
            found = [t for t, _ in (*c.rebinds.values(), *b.rebinds.values())
                     if t.base is None and not any(t is e for e in extra) and id(t) not in stale]
            stale |= c.born | b.born
            written = [t.uop for t in extra]
            # the body's values as it left them: one that is an outer array it wrote (`x[:] = x + 1; r = x`, x
            # given as itself) gets its outer value back below, and the state must not take that old value
            ended = [v.uop if isinstance(v, Tensor) else None for v in b.values]
            # what the body leaves sharing memory: the pairs' new flags, and pairs not known yet
            ones = pairs.state(b.values)
            more = pairs.find([k for k in kept if k not in pending], b.values, init, given_as,
                              c.born | b.born | stale | {id(t) for t in [*ph, *ph_body]})
        finally:   # every outer array gets its outer value back (the loop's results are rebound at the end)
            for tr in (c, b):
                for t, old in tr.rebinds.values() if tr is not None else ():
                    if t.base is None: t.rebind(old, record=False)
            for t, old in zip(extra, outer): t.rebind(old, record=False)
            # links a branch in the body made to outer arrays are the body's own (numfn.trace.branch_views): dropped
            # after each attempt, so a result of an attempt that is traced again does not follow them
            for tr in (c, b):
                if tr is not None: drop_links(tr.links)
        if found:
            extra += [t for i, t in enumerate(found) if not any(t is f for f in found[:i])]
            n_checks, n_cond = len(b.checks), len(c.checks)   # (if they change, found again: one trace less per level)
            continue
        if len(b.values) != len(init):
            raise NumfnError(f"the loop body returns {len(b.values)} values for {len(init)} of state (at "
                             f"{user_location()})")
        learnt = {k: b.values[k] for k in pending if b.values[k] is not PENDING}
        if learnt:   # a returned value bound: its type is known, it starts as zeros of it
            for k, v in learnt.items():
                init[k] = Tensor(UOp.const_like(v.uop.dtype, 0, v.shape), weak=v.weak)
            pending -= set(learnt)
            types = {}
            continue
        b.values = [ph_body[kept.index(k)] if k in pending else v for k, v in enumerate(b.values)]
        rebound = {k for k in through if not _same_memory(b.values[k], init[k])}
        wrote = {id(t) for tr in (c, b) for t, _ in tr.rebinds.values()}
        shared = [names[k] for k in rebound if id(_memory_base(init[k])) in wrote]
        # a state array the body writes into and then binds to another array: in the first iteration the write is
        # into the array the name held before the loop (other names may hold it), in the later ones not
        rewritten = [names[k] for j, k in enumerate(kept)
                     if ph_body[j].uop is not given[j] and b.values[k] is not ph_body[j]]
        if first == "peel" and (shared or rewritten): raise FirstIterationDiffers((shared or rewritten)[0])
        if shared and first == "refuse":   # in the first iteration the name is that memory: the body's writes into
            # it reach what it reads
            raise unsupported(f"{shared[0]}, an array sharing memory with another that the loop body writes into, and "
                              "then bound to a new array in the body (in the first iteration only the two are one "
                              "array)", "copy it before the loop (v = x.copy())")
        if became := {k for k in kept if k not in arrays0d and _array0d(b.values[k])}:   # (r = x + 0, in it r = v)
            arrays0d |= became
            types = {}
            continue
        if rebound:   # the body binds these names to other arrays: they are state of their own
            through -= rebound
            placeholders |= rebound
            types = {}
            continue
        # a state array the body changes in place while it also reads the array the state started from (`w = v`
        # before the loop, `v += w` in it: one array in Python): given to the body as itself, so the write is
        # into that array (carried as an outer array the body writes) and every name of it reads the state
        aliased = {k for j, k in enumerate(kept) if k not in placeholders and ph_body[j].uop is not given[j]
                   and b.values[k] is ph_body[j] and _reads_outer(init[k], b)}
        if aliased:
            through |= aliased
            types = {}
            continue
        if (len(b.checks), len(c.checks)) != (n_checks, n_cond):   # checks of values: their flags become state
            n_checks, n_cond = len(b.checks), len(c.checks)
            continue
        if more or pairs.settle(ones, extra):   # values the body leaves sharing memory: each pair's flag is state
            pairs.pairs += more
            types = {}
            continue
        new = [_as_left(b.values[k], ended[k]) for k in kept] + [Tensor(u) for u in written] + ones
        at = n_kept + len(extra) + n_link
        # the body's checks of the counter and outer values only: computed before the loop for every iteration
        icount = kept.index(counter.index) if counter is not None and counter.count and counter.index in kept else None
        hoisted = {} if icount is None or counter is None else {k: h for k, chk in enumerate(b.checks)
                                            if hoistable(chk, tag, ph_body[icount].uop)
                                            and (h := hoist(chk, ph_body[icount].uop, counter)) is not None}
        # the condition's checks on the state the body makes (the condition sees it next)
        after = {ph[k].uop: v.uop.cast(specs[k][1]) for k, v in enumerate(new[:at])}
        made = [(chk.failed, chk.payload) for chk in b.checks] + \
            [(substitute(chk.failed, after), substitute(chk.payload, after)) for chk in c.checks]
        for k, (failed, value) in enumerate(made):   # failed so far, and the payload of the first failure
            seen, payload = ph_body[at + 2 * k], ph_body[at + 2 * k + 1]
            new += [seen, payload] if k in hoisted else \
                [seen | Tensor(failed), Tensor(seen.uop.alu(Ops.WHERE, payload.uop, value))]
        settled = _settle(state, new, specs, all_names, weak, first == "peel")
        if settled is None: break
        types = {k: (d, w) for k, (_, d, w) in enumerate(settled)}
    else:
        raise NumfnError(f"the loop's state does not settle (at {user_location()})")
    pred = c.values[0]
    if pred.shape != (): raise ValueError(f"the loop condition must be a scalar, got an array of shape {pred.shape}")
    at = n_kept + len(extra) + n_link
    going = pred.uop.cast(BOOL)
    for k in range(n_checks + n_cond):   # a failed check ends the loop
        going = going.alu(Ops.AND, ph[at + 2 * k].uop.alu(Ops.XOR, UOp.const(BOOL, True)))
    if hoisted:   # (after the iteration where a hoisted check fails first)
        assert counter is not None and icount is not None
        going = going.alu(Ops.AND, still_going(ph[icount], list(hoisted.values()), counter.step).uop)
    before = {ph[k].uop: t.uop.cast(specs[k][1]) for k, t in enumerate(state[:at])}
    for k, chk in enumerate(c.checks):   # the condition's checks on the initial state
        state[at + 2 * (n_checks + k)] = Tensor(substitute(chk.failed, before))
        state[at + 2 * (n_checks + k) + 1] = Tensor(substitute(chk.payload, before))
    captures: dict[UOp, UOp] = {}
    sink = lambda us: UOp(Ops.SINK, dtypes.void, tuple(us))   # noqa: E731
    cond_root = close(tag, [sink([going])], len(specs), captures)[0]
    body = close(tag, [sink([v.uop.cast(d) for v, (_, d) in zip(new, specs)])], len(specs), captures)[0]
    region = Region("while", tag, tuple(specs), cond_root, (body,), tuple(specs), tuple(all_names))
    srcs = tuple(t.uop.cast(d) for t, (_, d) in zip(state, specs)) + tuple(captures)
    loop = UOp(Ops.LOOP, dtypes.void, srcs, region)
    results = [Tensor(UOp(Ops.RESULT, d, (loop,), k), weak=weak[k]) for k, (_, d) in enumerate(specs)]
    for r, v in zip(results, new):   # a 0-d array after the loop where the body leaves one (NumPy's kind of value)
        if _array0d(v): r.as_array()
    for t, r in zip(extra, results[n_kept:]): t.rebind(r.uop)   # the arrays the loop wrote: their last value
    for k, chk in enumerate([*b.checks, *c.checks]):
        if k in hoisted:
            assert counter is not None and icount is not None
            add_check(failed_after(hoisted[k], results[icount], counter), hoisted[k].payload, chk.error)
        else: add_check(results[at + 2 * k], results[at + 2 * k + 1], chk.error)
    final = args(results[:n_kept])   # a value passed through is itself (a view follows its base's last value)
    # a state array the body only changed in place (it gave back the very placeholder it was given) is, in Python, the
    # same array after the loop: it takes the loop's last value, so every other name bound to it (v = w before the
    # loop, `v += 1` in it) sees that value too
    for j, k in enumerate(kept):
        t = init[k]
        if k not in pending and b.values[k] is ph_body[j] and isinstance(t, Tensor) and not t.weak and t.base is None \
                and t.memory == "computed" and not t.runtime_length and t.uop.dtype is final[k].uop.dtype:
            t.rebind(final[k].uop)
            final[k] = t
    at = n_kept + len(extra)   # views after the loop where the flags say so (a check failing at once raises later)
    pairs.link_after(final, results[at:at + n_link], init, Tensor(substitute(pred.uop.cast(BOOL), before)))
    return final


def branch_region(index: Tensor, branches: Sequence[Callable], operands: list[Tensor],
                  names: Sequence[str] = ()) -> list[Tensor]:
    """The results of branches[index](*operands) (index an int64 0-d value in range) as results of one LOOP node
    of kind "cond". The branches' results must have one structure and shape; each takes the dtype the branches'
    values promote to (NumPy's rules). `names`: the results' names, for errors. Arrays from outside that a branch
    writes into become results too (the other branches give their old value)."""
    tag = new_region_tag()
    # operands are given to the branches as themselves (as Python does): a write into one, or through a view, is a
    # write into its base, an outer array the branch writes (a result below)
    args = passed = list(operands)   # every value a branch reads is a capture: the region has no state
    traced: list[_Traced] = []
    written: list[tuple[Tensor, UOp]] = []
    for fn in branches:
        try:
            traced.append(_trace(lambda *a, fn=fn: [as_state(v, "a branch's result") for v in fn(*a)], args, passed))
            for t, old in traced[-1].rebinds.values():
                if t.base is None and not any(t is w for w, _ in written): written.append((t, old))
        finally:
            for t, old in traced[-1].rebinds.values() if traced else ():
                if t.base is None: t.rebind(old, record=False)
            if traced: drop_links(traced[-1].links)   # (links a branch inside makes are its own, as a loop body's)
    fill = _pending_types([tr.values for tr in traced])
    # a loop's return value one side binds: the others give zeros of its type (never read); one no side binds is
    # given back as it is (PENDING), a placeholder in the region
    unbound = [k for k, z in fill.items() if z is PENDING]
    for k in unbound: fill[k] = Tensor(UOp.const(BOOL, False))
    if fill:
        for tr in traced: tr.values = [fill[k] if v is PENDING else v for k, v in enumerate(tr.values)]
        branches = [lambda *a, fn=fn: [fill[k] if v is PENDING else v for k, v in enumerate(fn(*a))]
                    for fn in branches]
    layouts = branch_layouts([tr.values for tr in traced], names)
    if layouts:   # results of run-time length: the region gives their elements at a bound and their lengths
        count = len(traced[0].values)
        shown = [repr(n) for n in names]
        lowered = [lambda *a, fn=fn: lower(list(fn(*a)), layouts, shown) for fn in branches]
        flat = branch_region(index, lowered, operands, lowered_names(names, layouts, count))
        return _still_pending(lift(flat, layouts, count), unbound)
    for tr in traced:   # a window (a view with traced bounds) would lose its memory through the region's results
        for k, v in enumerate(tr.values):
            if isinstance(v, Tensor) and v.runtime_length:
                name = f"{names[k]!r}" if k < len(names) and not names[k].startswith("_numfn") else "a value"
                raise unsupported(f"{name}, an array of run-time length (x[mask], nonzero), given by a branch on a "
                                  "traced value", "keep the mask and use numpy.where instead")
    counts = {len(tr.values) for tr in traced}
    if len(counts) != 1:
        raise NumfnError(f"the branches return different numbers of values ({sorted(counts)}) (at {user_location()})")
    # what each branch leaves in the arrays it writes (the others leave their old value): traced once more, now
    # that every written array is known, so each branch's graph holds its own final values
    values: list[list[UOp]] = []
    outs: list[list[Tensor]] = []
    borns: list[set] = []
    branch_checks: list[list] = []   # the checks each branch makes (an index out of bounds, a Python int overflow)
    for fn in branches:
        with recording_trace(region=True) as rec:
            out = [as_state(v, "a branch's result") for v in fn(*args)]
            finals = [o.uop for o in out] + [t.uop for t, _ in written]   # before any array gets its old value back
        for t, old in written: t.rebind(old, record=False)
        assert rec.rebinds is not None and rec.born is not None   # a region's record has them
        for t, old in rec.rebinds.values():
            if t.base is None: t.rebind(old, record=False)
        drop_links(rec.links)
        values.append(finals)
        outs.append(out)
        borns.append(rec.born)
        branch_checks.append(rec.checks)
    n_user = len(values[0]) - len(written)
    labels = [repr(names[k]) if names and len(names) == n_user else f"result {k}" for k in range(n_user)] + \
        [f"result {k}" for k in range(n_user, len(values[0]))]
    weak = [[tr.values[k].weak for k in range(n_user)] + [False] * len(written) for tr in traced]
    # results that share memory with outer arrays: views of them after the branch (numfn.trace.branch_views)
    from numfn.trace.branch_views import BranchViews
    bv = BranchViews(outs, borns, {}, n_user)
    if bv.extra_labels or len(bv.keep) != n_user:   # the region gives the results kept, then the extra values
        for i, v in enumerate(values):
            where = bv.extra(i)
            values[i] = [v[k] for k in bv.keep] + where + v[n_user:]
            weak[i] = [weak[i][k] for k in bv.keep] + [False] * len(where) + weak[i][n_user:]
        labels = [labels[k] for k in bv.keep] + [f"{what} {labels[k]}" for k, what in bv.extra_labels] + \
            labels[n_user:]
    n = len(values[0])
    # every check is two more results: whether it failed and its payload (the branches that do not make it: no)
    checks = [(j, c) for j, cs in enumerate(branch_checks) for c in cs]
    for j, v in enumerate(values):
        for jj, c in checks:
            v += [c.failed, c.payload] if jj == j else [UOp.const(BOOL, False), UOp.const(I64, 0)]
    results, result_weak = [], []
    for k in range(len(values[0])):
        vs = [Tensor(v[k], weak=weak[i][k] if k < len(weak[i]) else False) for i, v in enumerate(values)]
        result_weak.append(all(v.weak for v in vs))   # a Python scalar on every path stays one
        what = labels[k] if k < len(labels) else "a check's flag" if (k - n) % 2 == 0 else "a check's payload"
        if len({v.shape for v in vs}) != 1:   # broadcasting would give a shape no path of the Python code gives
            raise NumfnError(f"the branches give {what} different shapes {[v.shape for v in vs]} (at "
                             f"{user_location()}); a compiled branch needs one shape for each value (broadcast them "
                             "with numpy.broadcast_to, or compute both and pick with numpy.where)")
        results.append((vs[0].shape, promote(*vs)))
    captures: dict[UOp, UOp] = {}
    bodies = []
    for v in values:
        body = [Tensor(Tensor(u.cast(d))._broadcast(s)).uop for u, (s, d) in zip(v, results)]
        bodies.append(close(tag, [UOp(Ops.SINK, dtypes.void, tuple(body))], 0, captures)[0])
    region = Region("cond", tag, (), None, tuple(bodies), tuple(results))
    srcs = (index.uop.cast(I64),) + tuple(captures)
    node = UOp(Ops.LOOP, dtypes.void, srcs, region)
    out = [Tensor(UOp(Ops.RESULT, d, (node,), k), weak=w) for k, ((_, d), w) in enumerate(zip(results, result_weak))]
    for k, r in enumerate(out[:n_user]):   # a 0-d array where every branch gives one
        if k < len(bv.keep) and all(not o[bv.keep[k]].is_scalar() for o in outs): r.as_array()
    for (t, _), r in zip(written, out[n - len(written):n]): t.rebind(r.uop)
    for m, (_, c) in enumerate(checks): add_check(out[n + 2 * m], out[n + 2 * m + 1], c.error)
    return _still_pending(bv.given(out[:n - len(written)]), unbound)


def _array0d(t: Any) -> bool:
    """Whether `t` is a 0-d ndarray (an argument, a view, a copy), not a value NumPy holds as a scalar."""
    return isinstance(t, Tensor) and t.ndim == 0 and not t.is_scalar()


def _as_left(v: Any, uop: UOp | None) -> Any:
    """A loop body's value `v` as the body left it (its value then: `uop`), where an outer array's value was given
    back to it after the body was traced."""
    if not isinstance(v, Tensor) or uop is None or v.uop is uop: return v
    out = Tensor(uop, weak=v.weak)
    return out.as_array() if _array0d(v) else out


def _pending_types(values: list[list]) -> dict[int, Any]:
    """For each result that some of a region's sub-graphs leave PENDING (a loop's return value not bound yet:
    numfn.trace.unbound) and another binds: zeros of the type it is bound to (PENDING itself where none binds it)."""
    out: dict[int, Any] = {}
    for k in range(min(len(v) for v in values)):
        bound = [v[k] for v in values if v[k] is not PENDING]
        if len(bound) == len(values): continue
        out[k] = PENDING if not bound else Tensor(UOp.const_like(bound[0].uop.dtype, 0, bound[0].shape),
                                                  weak=bound[0].weak)
    return out


def _still_pending(results: list, unbound: list[int]) -> list:
    return [PENDING if k in unbound else r for k, r in enumerate(results)]


# ---------------------------------------------------------------------------------------------------------------
# the public primitives

def _traced(*trees) -> bool:
    return tracing() or any(isinstance(x, Tensor) for t in trees for x in flatten(t)[0])


def _leaves(tree, what: str) -> tuple[list[Tensor], Any]:
    leaves, tdef = flatten(tree)
    return [as_state(x, what) for x in leaves], tdef


def _same_structure(tree, expected, what: str):
    leaves, tdef = flatten(tree)
    if tdef.unordered() != expected.unordered():   # a dict built in another order is the same state
        raise NumfnError(f"{what} returns a structure {tdef!r} where the loop's state is {expected!r} (at "
                         f"{user_location()})")
    return leaves


def fori_loop(lower: SupportsInt | Tensor, upper: SupportsInt | Tensor, body_fun: Callable[[Any, _T], _T],
              init_val: _T) -> _T:
    """`val = init_val; for i in range(lower, upper): val = body_fun(i, val)`, returning val: a native loop in a
    compiled function (lower and upper may be traced values), a Python loop otherwise. body_fun's index is an
    int in a Python loop and a traced int64 scalar in a native one.

    Args:
        lower: the first index (an int or a traced integer scalar).
        upper: one past the last index.
        body_fun: `(i, val) -> val`, keeping val's structure, shapes and dtypes.
        init_val: the value before the first iteration (arrays, scalars, or a container of them).

    Returns:
        The value after the last iteration (`init_val` when the range is empty).

    Example:
        f = numfn.jit(lambda x, n: numfn.fori_loop(0, n, lambda i, v: v * 2.0 + i, x))
        assert (f(np.ones(2), 3) == [12.0, 12.0]).all()   # ((1 * 2 + 0) * 2 + 1) * 2 + 2
    """
    if not _traced(lower, upper, init_val):
        val = init_val
        for i in range(int(lower), int(upper)): val = body_fun(i, val)
        return val
    state, tdef = _leaves(init_val, "the loop state")
    lo, hi = Tensor.lift(lower), Tensor.lift(upper)
    for v, name in ((lo, "lower"), (hi, "upper")):
        if v.ndim or not (v.uop.dtype.is_int or v.uop.dtype.is_bool):
            raise TypeError(f"fori_loop's {name} bound must be an integer scalar (at {user_location()})")
    lo = Tensor(lo.uop.cast(I64), weak=lo.weak)
    # inside the body lower <= i < upper: bounds that spare index checks (x[i] with upper <= len(x))
    bounds = {0: index_bounds(lo, Tensor(hi.uop.cast(I64)), 1)}

    def body(i, *vals):
        new = _same_structure(body_fun(i, unflatten(tdef, list(vals))), tdef, "the loop body")
        return [advance(i, 1), *new]

    static = isinstance(lower, (int, np.integer)) and isinstance(upper, (int, np.integer))
    out = while_region(lambda i, *vals: i < hi, body, [lo, *state],
                       ["the loop index"] + [f"loop state {k}" for k in range(len(state))], bounds,
                       counter=Counter(0, int(lower), 1, max(0, int(upper) - int(lower))) if static else None)
    return unflatten(tdef, out[1:])


def index_bounds(lo: Tensor, hi: Tensor, step) -> tuple[int, int]:
    """Where the index of range(lo, hi, step) is inside the loop body, from the bounds of lo and hi: lo <= i < hi
    going up, hi < i <= lo going down (a traced step: either)."""
    (l0, l1), (h0, h1) = lo.uop.bounds, hi.uop.bounds
    up, down = (l0, max(l0, h1 - 1)), (min(l1, h0 + 1), l1)
    if isinstance(step, (int, np.integer)): lo_i, hi_i = up if step > 0 else down
    else: lo_i, hi_i = min(up[0], down[0]), max(up[1], down[1])
    return max(int(lo_i), I64.min), min(int(hi_i), I64.max)


def advance(i: Tensor, step) -> Tensor:
    """The loop's own step of its index (i + step in int64: the loop ends before it could leave int64), keeping it
    a Python int if it is one."""
    return Tensor(i.uop.alu(Ops.ADD, Tensor.lift(step).uop.cast(I64)), weak=i.weak)


def while_loop(cond_fun: Callable[[_T], object], body_fun: Callable[[_T], _T], init_val: _T) -> _T:
    """`val = init_val; while cond_fun(val): val = body_fun(val)`, returning val: a native loop in a compiled
    function (cond_fun returns a traced bool), a Python loop otherwise.

    Args:
        cond_fun: `val -> bool`, evaluated before every iteration.
        body_fun: `val -> val`, keeping val's structure, shapes and dtypes.
        init_val: the value before the first iteration.

    Returns:
        The first value for which `cond_fun` is false.

    Example:
        halve = numfn.jit(lambda x: numfn.while_loop(lambda v: v.max() > 1.0, lambda v: v / 2.0, x))
        assert (halve(np.array([8.0, 3.0])) == [1.0, 0.375]).all()
    """
    if not _traced(init_val):
        val = init_val
        while cond_fun(val): val = body_fun(val)
        return val
    state, tdef = _leaves(init_val, "the loop state")
    out = while_region(lambda *vals: cond_fun(unflatten(tdef, list(vals))),
                       lambda *vals: _same_structure(body_fun(unflatten(tdef, list(vals))), tdef, "the loop body"),
                       state, [f"loop state {k}" for k in range(len(state))])
    return unflatten(tdef, out)


def scan(f: Callable[[_T, Any], tuple[_T, Any]], init: _T, xs: Any = None, length: int | None = None,
         reverse: bool = False) -> tuple[_T, Any]:
    """JAX's scan: `carry = init; for x in xs: carry, y = f(carry, x)`, returning (carry, the ys stacked), as a
    native loop in a compiled function. xs: a pytree of arrays with a common leading length (or None with
    `length`); `reverse` walks them from the end (the ys keep the order of the xs).

    Args:
        f: `(carry, x) -> (carry, y)`, keeping carry's structure, shapes and dtypes.
        init: the carry before the first step.
        xs: a pytree of arrays scanned along their leading axis, or None (then `length` steps with x None).
        length: the number of steps when `xs` is None (else it must match their length).
        reverse: scan from the last element to the first.

    Returns:
        `(carry, ys)`: the last carry and the stacked ys.

    Example:
        cumsum = numfn.jit(lambda xs: numfn.scan(lambda c, x: (c + x, c + x), 0.0, xs))
        total, partial = cumsum(np.arange(4.0))
        assert total == 6.0 and (partial == [0.0, 1.0, 3.0, 6.0]).all()
    """
    x_leaves, x_tree = flatten(xs)
    if not _traced(init, xs):
        n = length if length is not None else (len(x_leaves[0]) if x_leaves else 0)
        carry, ys = init, []
        order = range(n - 1, -1, -1) if reverse else range(n)
        for i in order:
            carry, y = f(carry, unflatten(x_tree, [x[i] for x in x_leaves]) if x_leaves else None)
            ys.append(y)
        if reverse: ys.reverse()
        y_leaves = [flatten(y)[0] for y in ys]
        stacked = [np.stack([yl[k] for yl in y_leaves]) for k in range(len(y_leaves[0]))] if ys else []
        return carry, (unflatten(flatten(ys[0])[1], stacked) if ys else None)
    xs_t = [Tensor.lift(x) for x in x_leaves]
    lengths = {x.shape[0] for x in xs_t if x.ndim}
    if length is not None: lengths.add(int(length))
    if len(lengths) != 1:
        raise ValueError(f"scan needs xs with one leading length (and length= to match), got {sorted(lengths)}")
    n = lengths.pop()
    state, c_tree = _leaves(init, "the scan's carry")

    def step(i, carry_leaves):
        idx = (n - 1) - i if reverse else i
        x = unflatten(x_tree, [t[idx] for t in xs_t]) if xs_t else None
        carry, y = f(unflatten(c_tree, list(carry_leaves)), x)
        return _same_structure(carry, c_tree, "the scan's function"), y

    # the ys' structure and shapes: one trace of the step on placeholders (thrown away)
    tag = new_region_tag()
    ph = [Tensor(placeholder(tag, k, t.shape, t.uop.dtype), weak=t.weak) for k, t in enumerate(state)]
    with recording_trace(region=True) as rec:
        _, y = step(Tensor(placeholder(tag, len(ph), (), I64), weak=True), ph)
    assert rec.rebinds is not None   # a region's record has them
    for t, old in rec.rebinds.values():
        if t.base is None: t.rebind(old, record=False)
    y_leaves, y_tree = flatten(y)
    y_specs = [(Tensor.lift(v).shape, Tensor.lift(v).uop.dtype) for v in y_leaves]
    ys = [numpy_function("empty")((n,) + s, dtype=d.np) for s, d in y_specs]

    def body(i, carry_leaves):
        carry, y = step(i, carry_leaves)
        idx = (n - 1) - i if reverse else i
        for buf, v in zip(ys, flatten(y)[0]): buf[idx] = v
        return carry

    out = fori_loop(0, n, body, list(state))
    return unflatten(c_tree, out), unflatten(y_tree, ys)


def cond(pred: SupportsInt | Tensor, true_fun: Callable[..., _R], false_fun: Callable[..., _R], *operands: Any) -> _R:
    """true_fun(*operands) if pred else false_fun(*operands): in a compiled function with a traced pred, a branch
    of the program (only the chosen side runs); otherwise Python's if.

    Args:
        pred: a bool or a traced scalar.
        true_fun: called with `operands` when pred is true.
        false_fun: called with `operands` otherwise; both give results of one structure, shapes and dtypes.
        *operands: the arguments of the branch taken.

    Returns:
        The result of the branch taken.

    Example:
        f = numfn.jit(lambda x: numfn.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: -v, x))
        assert (f(np.ones(2)) == [2.0, 2.0]).all() and (f(-np.ones(2)) == [1.0, 1.0]).all()
    """
    if not isinstance(pred, Tensor):
        return true_fun(*operands) if pred else false_fun(*operands)
    p = Tensor.lift(pred)
    if p.ndim: raise ValueError(f"cond's predicate must be a scalar, got an array of shape {p.shape}")
    return switch(p.astype(np.bool_).astype(np.int64), [false_fun, true_fun], *operands)


def switch(index: SupportsInt | Tensor, branches: Sequence[Callable[..., _R]], *operands: Any) -> _R:
    """branches[index](*operands), index clamped into range (as JAX does): a branch of the compiled program for a
    traced index; otherwise a Python call.

    Args:
        index: an int or a traced integer scalar, clamped into `[0, len(branches) - 1]`.
        branches: the functions to choose from; all give results of one structure, shapes and dtypes.
        *operands: the arguments of the branch taken.

    Returns:
        The result of the branch taken.

    Example:
        f = numfn.jit(lambda x, i: numfn.switch(i, [lambda v: v + 1.0, lambda v: v * 10.0], x))
        assert (f(np.ones(2), 1) == [10.0, 10.0]).all() and (f(np.ones(2), 7) == [10.0, 10.0]).all()
    """
    if not branches: raise ValueError("switch needs at least one branch")
    if not isinstance(index, Tensor):
        return branches[min(max(int(index), 0), len(branches) - 1)](*operands)
    i = Tensor.lift(index)
    if i.ndim: raise ValueError(f"switch's index must be a scalar, got an array of shape {i.shape}")
    i = i.astype(np.int64)
    i = numpy_function("clip")(i, 0, len(branches) - 1)
    o_leaves, o_tree = flatten(list(operands))
    ops = [as_state(x, "a branch operand") for x in o_leaves]
    res_tree = []

    def wrap(fn):
        def run(*vals):
            out = fn(*unflatten(o_tree, list(vals)))
            leaves, tdef = flatten(out)
            res_tree.append(tdef)
            return leaves
        return run

    out = branch_region(i, [wrap(b) for b in branches], ops)
    trees = {t.unordered() for t in res_tree}   # dicts built in different orders are the same structure
    if len(trees) != 1:
        raise NumfnError(f"the branches return different structures: {sorted(map(repr, trees))} (at "
                         f"{user_location()})")
    return unflatten(res_tree[0], out)


__all__ = ["fori_loop", "while_loop", "scan", "cond", "switch", "Region"]
