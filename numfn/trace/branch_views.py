"""Views a branch chooses: `if c: v = x[1:] else: v = x[:-1]` makes v a view of x in NumPy, whichever side runs,
so a write through v afterwards changes x. A branch's results are arrays of their own (RESULTs of the LOOP node),
so a result that every branch makes a view of one outer array (or that array itself) is given back as a view of
that array instead (numfn.trace.control.branch_region):

- the same chain of movement ops in every branch: the view itself, taken after the branch;
- different chains (or chains through traced slice bounds): each branch gives, for every axis of the array, the
  position along it of each element of its view (the chain applied to positions), and the result is a writable
  GATHER view of the array at those positions (a write through it is a SCATTER into the array there).

A result that shares memory with an outer array in some branches only (`v = x` on one side, `v = x * 2` on the
other), or with different arrays in different branches, is an array of its own *linked* to each such array: the
branch also gives, per array, whether the side taken made the result a view of it and at which positions. A write
into the result (or a view of it) is also written into the array there, gated by that flag (`write_through`), and a
new value of the array shows through the result where the flag holds (`follow`): the two stay as NumPy's would."""
from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from numfn.dtype import dtypes
from numfn.errors import unsupported
from numfn.trace.record import note_links
from numfn.trace.tensor import Links, Tensor, add_check, replay, gather
from numfn.trace.subscript import READ_ONLY, read_only, write
from numfn.trace.branch_layout import is_window
from numfn.ir.uop import MOVEMENT, Ops, UOp


def _same_shape(a: tuple, b: tuple) -> bool:
    """Shapes equal, a run-time length (numfn.trace.dynamic) only to itself (comparing two would trace)."""
    return len(a) == len(b) and all(x is y or (type(x) is int and type(y) is int and x == y) for x, y in zip(a, b))


def _writable(step: tuple) -> bool:
    op, arg = step
    return (op in MOVEMENT and op is not Ops.EXPAND) or (op is Ops.GATHER and is_window(arg[0])) or _part(step)


def _part(step: tuple) -> bool:
    """A step to the real (CAST) or imaginary (IMAG) part of a complex array (Tensor._component)."""
    return step[0] in (Ops.CAST, Ops.IMAG) and step[1] is None


def memory_of(t: Any, born: set, operands: dict) -> tuple[Tensor, tuple] | None:
    """(base, chain): the outer array whose memory `t` (a branch's value) is, and the chain of ops from it; None for
    values made in the branch, scalars, and views a write cannot go through. `operands` maps a placeholder's id
    to the outer value it stands for; `born` holds the ids of the arrays the branch made."""
    # (a NumPy scalar, such as x[0] of a 1-d x, is a value of its own: it shares no memory)
    if not isinstance(t, Tensor) or t.weak or t.runtime_length or t.is_scalar(): return None
    base, chain = (t, ()) if t.base is None else (t.base, t.chain)
    if id(base) in operands:
        outer = operands[id(base)]
        if not isinstance(outer, Tensor) or outer.weak or outer.runtime_length or outer.is_scalar(): return None
        base, chain = (outer, chain) if outer.base is None else (outer.base, outer.chain + chain)
    elif id(base) in born: return None
    if base.runtime_length or not all(_writable(s) for s in chain): return None
    return base, chain


@dataclass(eq=False)
class Through:
    """A branch's value that a branch inside it linked to an array from outside: that array at `where` (per axis of
    the array, the value's shape) where `flag` holds; `chain` the movement ops of that view where every branch inside
    that made it used the same (layout questions are answered by it), else None."""
    flag: Tensor
    where: list[Tensor]
    chain: tuple | None


def links_out(t: Any, born: set) -> dict[int, tuple[Tensor, Through]]:
    """{id(array): (array, Through)}: the arrays from outside a branch that a branch inside it linked `t` to (`born`:
    the ids of the arrays the branch made). Two links to one array are one, at the positions of the one that holds."""
    if not isinstance(t, Tensor) or t.base is not None: return {}
    out: dict[int, tuple[Tensor, Through]] = {}
    for lk in t._links or ():
        memory = lk.memory
        if lk.view() is not t or id(memory) in born or memory.runtime_length: continue
        if id(memory) in out:
            before = out[id(memory)][1]
            where = [Tensor(lk.flag.uop.cast(dtypes.bool).alu(Ops.WHERE, p.uop, q.uop))
                     for p, q in zip(lk.positions, before.where)]
            chain = before.chain if before.chain == lk.chain() else None
            out[id(memory)] = (memory, Through(lk.flag | before.flag, where, chain))
        else: out[id(memory)] = (memory, Through(lk.flag, list(lk.positions), lk.chain()))
    return out


def _one_part(chains: Sequence[tuple]) -> int | None:
    """0 or 1 when every chain takes the real or every one the imaginary part, once (a part commutes with movement
    ops: x[1:].real is x.real[1:])."""
    parts = [[s for s in c if _part(s)] for c in chains]
    if any(len(p) != 1 for p in parts) or len({p[0][0] for p in parts}) != 1: return None
    return 0 if parts[0][0][0] is Ops.CAST else 1


def _no_parts(chains: Sequence[tuple]) -> None:
    """Views the branches make differently are followed by the positions of their elements in the array: a view of
    a complex array's real or imaginary part has none of its own (a write into it keeps the other part)."""
    if any(_part(s) for c in chains for s in c):
        raise unsupported("a view of the real or imaginary part of a complex array chosen by a branch on a traced "
                          "value, other than the same view on every side",
                          "take the part after the branch (v = w.real, w chosen by the branch)")


def positions(base: Tensor, chain: tuple) -> list[UOp]:
    """For each axis of `base` (one for a 0-d base, viewed as 1-d), the position along it of every element of the
    view `chain` makes of it (int64, the view's shape)."""
    shape = base.shape
    if not shape: return [replay(UOp.const(dtypes.int64, 0), chain)]
    out = []
    for a, n in enumerate(shape):
        iota = UOp.iota(n).reshape(tuple(n if i == a else 1 for i in range(len(shape)))).expand(tuple(shape))
        out.append(replay(iota, chain))
    return out


def same_view(chains: Sequence[tuple]) -> bool:
    """Whether every branch makes the same view by static movement ops (then it can be taken after the branch)."""
    return all(c == chains[0] for c in chains) and all(op is not Ops.GATHER for op, _ in chains[0])


class BranchViews:
    """The results of one branch region (`outs[i]`: branch i's first `n` values, `borns[i]` the arrays it made) that
    share memory with outer arrays. `keep`: the results the region still gives as they are; `extra(i)`: what branch
    i gives besides them (positions, flags), named by `extra_labels` ((result, what) per value); `given` makes the
    user's results from the region's (those kept, then the extra values)."""

    def __init__(self, outs: list[list[Tensor]], borns: list[set], operands: dict, n: int) -> None:
        self.n = n
        self.chosen: dict[int, tuple[Tensor, list, bool]] = {}     # k -> (memory, chains, same view everywhere)
        self.linked: dict[int, list[tuple[Tensor, list]]] = {}     # k -> [(memory, chain or None per branch)]
        self.parts: dict[int, int] = {}   # k -> 0 or 1: a chosen view's real or imaginary part (complex memory)
        for k in range(n):
            if not all(_same_shape(o[k].shape, outs[0][k].shape) for o in outs): continue   # (an error follows)
            mems = [memory_of(o[k], born, operands) for o, born in zip(outs, borns)]
            # (a value a branch inside linked to an outer array, `if c: r = x` inside this branch: linked too)
            throughs = [links_out(o[k], born) for o, born in zip(outs, borns)]
            bases = list(({id(m[0]): m[0] for m in mems if m is not None} |
                          {i: b for th in throughs for i, (b, _) in th.items()}).values())
            if not bases: continue
            if len(bases) == 1 and all(m is not None for m in mems) and not any(throughs):
                chains = [m[1] for m in mems if m is not None]
                lane = _one_part(chains)
                if lane is not None:   # the same part everywhere: the view of the array, then its part
                    chains = [tuple(s for s in c if not _part(s)) for c in chains]
                    self.parts[k] = lane
                _no_parts(chains)
                self.chosen[k] = (bases[0], chains, same_view(chains))
                continue
            _no_parts([m[1] for m in mems if m is not None])
            self.linked[k] = [(b, [m[1] if m is not None and m[0] is b else th[id(b)][1] if id(b) in th else None
                                   for m, th in zip(mems, throughs)])
                              for b in bases if linkable(b, outs[0][k].shape)]
        self.keep = [k for k in range(n) if k not in self.chosen]
        self.extra_labels: list[tuple[int, str]] = []
        for k, (base, _, same) in self.chosen.items():
            if not same: self.extra_labels += [(k, "the positions of view")] * len(positions(base, ()))
        for k, links in self.linked.items():
            for base, _ in links: self.extra_labels += [(k, "whether a view is")] + [(k, "the positions of view")] * \
                base.ndim
        self._shapes = {k: outs[0][k].shape for k in range(n)}
        # two results that some branch makes one array it made (`b = a` after `a = x * 2`): one array after the
        # branch where the branch taken did (fuzz seed 55500662); per branch, whether it did
        self.joined = [(k, j) for k in self.keep for j in self.keep
                       if j > k and any(_one_array(o[k], o[j]) is not None for o in outs)]
        self._one = [[_one_array(o[k], o[j]) for k, j in self.joined] for o in outs]
        self.extra_labels += [(k, "whether a result is another") for k, _ in self.joined]

    def extra(self, i: int) -> list[UOp]:
        out = [u for k, (base, chains, same) in self.chosen.items() if not same for u in positions(base, chains[i])]
        for k, links in self.linked.items():
            for base, chains in links:
                chain = chains[i]
                if isinstance(chain, Through):   # where the branch inside linked it
                    out.append(chain.flag.uop.cast(dtypes.bool))
                    out += [p.uop.cast(dtypes.int64) for p in chain.where]
                    continue
                out.append(UOp.const(dtypes.bool, chain is not None))
                out += (positions(base, chain) if base.ndim else []) if chain is not None else \
                    [UOp.const_like(dtypes.int64, 0, self._shapes[k])] * base.ndim
        return out + [UOp.const(dtypes.bool, False) if same is None else same for same in self._one[i]]

    def given(self, res: list[Tensor]) -> list[Tensor]:
        plain = dict(zip(self.keep, res))
        at = len(self.keep)
        out: dict[int, Tensor] = {}
        for k, (base, chains, same) in self.chosen.items():
            if same:
                out[k] = view_after(base, chains[0], None)
                continue
            width = len(positions(base, ()))
            out[k] = view_after(base, (), res[at:at + width], chains)
            at += width
        for k, lane in self.parts.items(): out[k] = out[k]._component(lane)   # (the same view or not: once)
        for k, links in self.linked.items():
            # an array where the branch taken made it one (`v = x` or `v = -x` of a 0-d x, a NumPy scalar): `v += 1`
            # writes it in place, and into x where the branch made v x (a scalar's value is the same either way)
            if links: plain[k].as_array()
            for base, chains in links:
                link(plain[k], base, res[at + 1:at + 1 + base.ndim], res[at],
                     [c.chain if isinstance(c, Through) else c for c in chains],
                     moving=any(isinstance(c, Through) and c.chain is None for c in chains))
                at += 1 + base.ndim
        for (k, j), flag in zip(self.joined, res[at:]):
            plain[k].as_array(), plain[j].as_array()
            link(plain[k], plain[j], [Tensor(u) for u in positions(plain[j], ())] if plain[j].ndim else [], flag, [()])
        return [out[k] if k in out else plain[k] for k in range(self.n)]


def _one_array(t: Any, u: Any) -> UOp | None:
    """Whether two values a branch gives are one whole array (a 0-d bool): the same array, or one linked to the other
    by a branch inside (`if c: r = v`); None where they never are."""
    def array(v) -> bool:
        return isinstance(v, Tensor) and not v.weak and not v.runtime_length and not v.is_scalar()
    if not (array(t) and array(u)) or t.shape != u.shape: return None
    if t is u: return UOp.const(dtypes.bool, True)
    flags = [lk.flag.uop.cast(dtypes.bool) for a, b in ((t, u), (u, t)) for lk in a._links or ()
             if lk.view() is a and lk.memory is b and not lk.moving and all(c in (None, ()) for c in lk.chains)]
    if not flags: return None
    out = flags[0]
    for f in flags[1:]: out = out.alu(Ops.OR, f)
    return out


def view_after(base: Tensor, chain: tuple, index: Sequence[Tensor] | None, chains: Sequence[tuple] = ()) -> Tensor:
    """The view of `base` (its value after the branch) that the branch chose: by `chain` when every branch made the
    same one, else a gather at the positions the branch gave (`index`, see `positions`) that keeps every branch's
    chain (`chains`), so a layout question (ravel: a view or a copy?) gets the answer of the branch taken."""
    if index is None:
        if not chain: return base
        return base._view(replay(base.uop, chain))
    src = base if base.shape else base.reshape(1)
    return src._view(gather(src, list(index), window=("window", tuple(chains)) if base.shape else True).uop)


@dataclass(eq=False)
class Link:
    """A branch's result (`view`, held weakly) that is a view of `memory` at `positions` (per axis of memory, the
    result's shape) when the 0-d bool `flag` holds (the branch taken made it one). `chains`: per branch, the chain
    of movement ops that made the view, None where that branch made no view of memory (layout questions, such as
    whether ravel copies, are answered per branch: numfn.trace.branch_layout). `moving`: some branch made the view
    at positions no chain gives (a view a branch inside it chose, a loop's changing view): there its chain is None
    too, so only the positions say where the view is."""
    view: weakref.ref
    memory: Tensor
    positions: list[Tensor]
    flag: Tensor
    chains: list[tuple | None]
    moving: bool = False
    # a loop's pair (numfn.trace.loop_links): `chains` is [the view's chain]; where the flag does not hold, the view
    # is an array of its own (its other links are other pairs, with flags of their own: not branches of one choice)
    loop: bool = False

    def chain(self) -> tuple | None:
        """The one chain of movement ops that makes the view wherever the flag holds; None if there is none."""
        made = {c for c in self.chains if c is not None}
        return next(iter(made)) if len(made) == 1 and not self.moving else None


def link(result: Tensor, memory: Tensor, where: Sequence[Tensor], flag: Tensor, chains: list[tuple | None],
         moving: bool = False, loop: bool = False) -> None:
    lk = Link(weakref.ref(result), memory, list(where), flag, list(chains), moving, loop)
    for t in (result, memory):
        note_links(t)
        t._links = (t._links or []) + [lk]


def linkable(memory: Tensor, shape: tuple) -> bool:
    """Arrays a result of `shape` can be linked to: writable arrays (a write maps to positions along their axes; a
    0-d array has none, and a 0-d result linked to it is the whole of it)."""
    if memory.memory not in ("computed", "input"): return False
    if memory.ndim == 0 and shape != ():
        raise unsupported("a view with axes of a 0-d array chosen by a branch on a traced value, where another "
                          "branch makes a new array", "reshape after the branch (v = w.reshape(1))")
    return True


def write_through(result: Tensor, shape: tuple[int, ...], at: Sequence[UOp], value: Tensor, injective: bool,
                  combine, gate: Tensor | None) -> None:
    """`result` was written at `at` (its indices, of `shape`): write the same into each array it is linked to,
    where the branch made it a view of that array."""
    for lk in list(result._links or ()):
        if lk.view() is not result: continue
        if lk.flag.uop.op is Ops.CONST and not lk.flag.uop.arg: continue   # never its view
        taken = Tensor(lk.flag._broadcast(shape))
        g = taken if gate is None else Tensor(taken.uop.alu(Ops.AND, Tensor(gate.uop.cast(dtypes.bool))._broadcast(
            shape)))
        if read_only(lk.memory):
            # NumPy raises where result is that array's view (`v = np.imag(x)` before a loop that may rebind v, then
            # `v[...] = y`): a check, as the flag is known only at run time
            add_check(g, 0, lambda _: ValueError(READ_ONLY))
            continue
        idx = [gather(p, [Tensor(i) for i in at]) for p in lk.positions]
        write(lk.memory, shape, idx, Tensor(value.uop.cast(lk.memory.uop.dtype)), injective, combine, gate=g)


def follow(memory: Tensor) -> None:
    """`memory` has a new value: each result linked to it reads it where the branch made the result its view."""
    alive = []
    for lk in memory._links or ():
        if lk.memory is not memory:
            alive.append(lk)
            continue
        view = lk.view()
        if view is None: continue
        alive.append(lk)
        shape = view.shape
        now = (gather(memory, lk.positions).uop if memory.ndim else memory.uop).cast(view.uop.dtype)
        new = lk.flag._broadcast(shape).alu(Ops.WHERE, now, view.uop)
        if new is not view.uop: view.rebind(new)
    note_links(memory)
    memory._links = alive or None


Links.follow, Links.write_through = follow, write_through   # what numfn.trace.tensor and subscript call
