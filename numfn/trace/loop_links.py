"""Loop state arrays that may share memory. `r = x` in a loop body, or in a branch inside it, makes r and x one
array in NumPy, and `r = x[::2]` makes r a view of x: a later write through either name (in a later iteration, or
after the loop) changes both. A loop's state values are arrays of their own (RESULTs of the LOOP node), so each
such relation, a *pair* (r, x, chain: r is the view `chain` of x), is carried with a flag, a bool of the loop's
state: whether r is that view of x now.

- Before the loop the flag says whether the initial values are so related (r a view of x, the same array, or
  linked by a branch: numfn.trace.branch_views).
- The body is given r linked to x under the flag (a branch_views Link at the view's positions): a write into
  either is written into the other where the flag holds, as after a branch.
- The body computes the flag anew from what its values end as: a view, or linked by a branch inside it (possibly
  through the link it was given, when it leaves a value as it was).
- After the loop r's result is linked to x's under the flag's last value.

A view by static movement ops is a pair's `chain`. A view whose positions change (`row = a[i]`, i the loop's index,
or views a branch chose differently on each side), or two values related by several chains, is a pair with chain
DYNAMIC: its positions in x (per axis of x, r's shape) are loop state too, next to the flag.

x is another state value or an outer array (`LoopPairs.others`): one the body writes, one a body's value is a view
of (`col = a[:, j]`), or one found through links or as an initial value (`y = x` before the loop: y is x where no
iteration ran) that a name of the user's code holds (`held_by_names`). A pair with an array the body does not write
whose flag the body makes False is quiet (`LoopPairs.settle`): not state, linked after the loop where no iteration
ran.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from types import FrameType
from typing import Any

import numpy as np

from numfn.dtype import dtypes
from numfn.ir.primitives import MOVEMENT
from numfn.ir.uop import Ops, UOp
from numfn.trace.branch_views import link, positions
from numfn.trace.tensor import Tensor

_DEPTH = 4   # how many links and views `related` follows (a branch's result linked to a value itself linked)
TRUE = UOp.const(dtypes.bool, True)
DYNAMIC = ("dynamic",)   # the chain of a pair whose view's positions are loop state


@dataclass(frozen=True)
class Held:
    """Where `flag` holds, a value is a view of an array: at `where` (per axis of the array, the value's shape) for a
    DYNAMIC relation, else at the positions of its chain."""
    flag: UOp
    where: tuple[UOp, ...] = ()


def _array(t) -> bool:
    return isinstance(t, Tensor) and not t.weak and not t.runtime_length and not t.is_scalar()


def _static(chain: tuple) -> bool:
    return all(op in MOVEMENT and op is not Ops.EXPAND for op, _ in chain)


def _and(a: UOp, b: UOp) -> UOp:
    return b if a is TRUE else a if b is TRUE else a.alu(Ops.AND, b)


def related(a, b) -> dict[tuple, Held]:
    """{chain: Held}: where its flag holds, `a` is the view `chain` of `b` (the whole of it for the empty chain; at the
    Held's positions for DYNAMIC), by a view of it, or links a branch made (a Link says its view is its memory at
    the chain each branch used, where its flag holds; a whole-array link holds both ways), directly or through
    other arrays (a DYNAMIC view only as the last step, after whole arrays)."""
    if not (_array(a) and _array(b)) or b.base is not None: return {}
    return _related(a, b, (a,), _DEPTH)


def _steps(a: Tensor) -> list[tuple[Tensor, tuple, Held]]:
    """(other, chain, Held): `a` is other's view `chain` (DYNAMIC: at the Held's positions) where the flag holds."""
    if a.base is not None:
        if _static(a.chain): return [(a.base, a.chain, Held(TRUE))]
        where = tuple(positions(a.base, a.chain)) if a.base.ndim else ()
        return [(a.base, DYNAMIC, Held(TRUE, where))]
    steps = []
    for lk in a._links or ():
        flag, c = lk.flag.uop.cast(dtypes.bool), lk.chain()
        if lk.view() is a:
            if c is not None and _static(c): steps.append((lk.memory, c, Held(flag)))
            else: steps.append((lk.memory, DYNAMIC, Held(flag, tuple(p.uop.cast(dtypes.int64) for p in lk.positions))))
        elif lk.memory is a and c == () and (v := lk.view()) is not None:
            steps.append((v, (), Held(flag)))
    return steps


def _related(a: Tensor, b: Tensor, path: tuple, depth: int) -> dict[tuple, Held]:
    if a is b: return {(): Held(TRUE)}
    if depth == 0: return {}
    out: dict[tuple, Held] = {}
    for other, chain, step in _steps(a):
        if any(other is t for t in path) or not _array(other): continue
        for inner, held in _related(other, b, path + (other,), depth - 1).items():
            if chain == DYNAMIC:   # (a changing view of b itself, reached through whole arrays only)
                if inner != (): continue   # (other is b, or the whole of it: the same positions)
                whole, found = DYNAMIC, Held(_and(step.flag, held.flag), step.where)
            elif inner == DYNAMIC:
                if chain != (): continue
                whole, found = DYNAMIC, Held(_and(step.flag, held.flag), held.where)
            else: whole, found = inner + chain, Held(_and(step.flag, held.flag))
            before = out.get(whole)
            if before is not None:   # several ways: either holds, at the positions of one that does
                where = tuple(found.flag.alu(Ops.WHERE, p, q) for p, q in zip(found.where, before.where))
                found = Held(found.flag.alu(Ops.OR, before.flag), where)
            out[whole] = found
    return out


def outer_arrays(values: Sequence[Any], whole: bool = False) -> list[Tensor]:
    """The whole arrays `values` are views of or linked to directly; `whole`: and those of `values` that are whole
    arrays. (Not through other arrays: a pair with the array in between is enough, its own links carry a write on,
    and pairs with every array further on would each add links a write follows: work that multiplies along a chain
    of loops.)"""
    out: list[Tensor] = []
    for v in values:
        if not _array(v): continue
        for other in ([v] if whole and v.base is None else []) + [o for o, _, _ in _steps(v)]:
            if _array(other) and other.base is None and not in_list(other, out): out.append(other)
    return out


def held_by_names() -> tuple[dict[int, int], dict[str, int]]:
    """({id(array): how many names of the code being traced hold it, or a view of it}, {name: id of its value} in the
    innermost of those frames, the one running the loop): the local variables (and the items of tuples, lists and
    dicts, and the fields of dataclasses, among them) of the frames outside numfn and NumPy, up to the call being
    traced.
    An array the loop's state starts as that no other name holds can never be seen after the loop (`y = x.copy()`
    then `y = y * 2` in the loop): pairing the state with it would only add work."""
    counts: dict[int, int] = {}
    innermost: dict[str, int] | None = None
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "_trace_function" and _in_numfn(frame)):
        if not _in_numfn(frame) and not frame.f_code.co_filename.startswith("<frozen"):
            if innermost is None: innermost = {name: id(value) for name, value in frame.f_locals.items()}
            for value in frame.f_locals.values():
                for t in _items(value):
                    if isinstance(t, Tensor):
                        at = id(t if t.base is None else t.base)
                        counts[at] = counts.get(at, 0) + 1
        frame = frame.f_back
    return counts, innermost or {}


def _items(value: Any) -> Any:
    """The values a local variable holds: itself, or the items of a tuple, list or dict, or a dataclass's fields (a
    container of arrays such as a model's parameters)."""
    if isinstance(value, dict): return value.values()
    if isinstance(value, (list, tuple)): return value
    if is_dataclass(value) and not isinstance(value, type): return [getattr(value, f.name, None) for f in fields(value)]
    return (value,)


def _in_numfn(frame: FrameType) -> bool:
    path = os.path.abspath(frame.f_code.co_filename)
    return path.startswith(_PACKAGE_DIR) or path.startswith(_NUMPY_DIR)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep


def in_list(t: Any, values: Sequence[Any]) -> bool:
    """Whether `t` is one of `values` (by identity: == of arrays is elementwise)."""
    return any(t is v for v in values)


def _any_view(found: Mapping[tuple, Held], memory: Tensor) -> Held | None:
    """Where any of `found` holds (as DYNAMIC: a static chain's positions are its view's, a constant)."""
    out = None
    for chain, held in found.items():
        where = held.where if chain == DYNAMIC else tuple(positions(memory, chain)) if memory.ndim else ()
        if out is not None:
            where = tuple(held.flag.alu(Ops.WHERE, p, q) for p, q in zip(where, out.where))
        out = Held(held.flag if out is None else held.flag.alu(Ops.OR, out.flag), where)
    return out


@dataclass(frozen=True)
class Pair:
    """Loop state value `first` (its position in the state) that may be the view `chain` of `second`: a state value
    ("state", position) or an outer array ("outer", its position among those the body writes or reads that state
    values were found related to). A DYNAMIC pair's view changes (positions at run time, or several chains: it
    holds where any does): its positions are loop state after its flag."""
    first: int
    second: tuple[str, int]
    chain: tuple = ()

    def other(self, values: Mapping[int, Any], outer: Sequence[Any]) -> Any:
        """The second value: a state value among `values` (by position), or one of the `outer` arrays."""
        kind, k = self.second
        return values[k] if kind == "state" else outer[k]

    def state(self, values: Mapping[int, Any], outer: Sequence[Tensor]) -> list[Tensor]:
        """What the loop carries for the pair among `values` and `outer`: whether the first value is the view of the
        second (a 0-d bool), then for a DYNAMIC pair the view's positions (per axis of the second, int64 arrays of
        the first's shape; zeros where it is not the view)."""
        view, memory = values[self.first], self.other(values, outer)
        found = related(view, memory)
        held = _any_view(found, memory) if self.chain == DYNAMIC else found.get(self.chain)
        out = [Tensor(UOp.const(dtypes.bool, False) if held is None else held.flag)]
        if self.chain == DYNAMIC:
            zeros = UOp.const_like(dtypes.int64, 0, view.shape)
            out += [Tensor(zeros if held is None else p) for p in (held.where if held else [zeros] * memory.ndim)]
        return out

    def link(self, values: Mapping[int, Any], outer: Sequence[Tensor], carried: Sequence[Tensor]) -> None:
        """Link the first value to the second under the flag `carried` starts with (and at the positions after it,
        for a DYNAMIC pair), as a branch links its result to the array it chose."""
        view, memory = values[self.first], self.other(values, outer)
        if self.chain == DYNAMIC:
            link(view, memory, list(carried[1:1 + memory.ndim]), carried[0], [None], moving=True, loop=True)
            return
        where = [Tensor(u) for u in positions(memory, self.chain)] if memory.ndim else []
        link(view, memory, where, carried[0], [self.chain], loop=True)

    def width(self, outer_ndim: int) -> int:
        """How many values of the loop's state the pair takes (`outer_ndim`: its second value's)."""
        return 1 + (outer_ndim if self.chain == DYNAMIC else 0)


def new_pairs(pairs: list[Pair], kept: Sequence[int], values: Mapping[int, Any], init: Mapping[int, Any],
              outer: Sequence[Tensor]) -> list[Pair]:
    """The pairs not in `pairs` of a state value (positions `kept`) that is a view of another state value or of an
    `outer` array where the body leaves them (`values`) or before the loop (`init`). Two state values that are one
    array are one pair (first < second): a link holds both ways. Two values related by more than one chain (a view
    of a view linked back, a reversed view of a reversed view) are a DYNAMIC pair, which holds where any chain does:
    otherwise the links of each pair would make longer chains without end."""
    found: list[Pair] = []
    for k in kept:
        for s in [("state", j) for j in kept if j != k] + [("outer", i) for i in range(len(outer))]:
            probe = Pair(k, s)
            chains = {**related(values[k], probe.other(values, outer)), **related(init[k], probe.other(init, outer))}
            if s[0] == "state" and s[1] < k: chains.pop((), None)   # (one array: the pair the other way round)
            had = {p.chain for p in [*pairs, *found] if (p.first, p.second) == (k, s)}
            if DYNAMIC in had or not chains: continue
            every = had | set(chains)
            for chain in [DYNAMIC] if len(every) > 1 else chains:
                if chain not in had: found.append(Pair(k, s, chain))
    return found


class LoopPairs:
    """A loop's pairs as `numfn.trace.control._while_region` finds them over its attempts: `pairs`, whose flags (and
    positions) are state after the values the loop carries, `quiet` pairs, whose flags are not (`settle`), and
    `others`, the outer arrays pairs name ("outer", position): only appended to, so positions stay."""

    def __init__(self, names: Sequence[str]) -> None:
        self.pairs: list[Pair] = []
        self.quiet: list[Pair] = []
        self.others: list[Tensor] = []
        self.widths: list[int] = []
        self.held: tuple[dict[int, int], dict[str, int]] | None = None   # (held_by_names, once per loop)
        self.state_names = names   # the loop's values' names ('x' for a variable x)

    def start(self, kept: Sequence[int], extra: Sequence[Tensor], init: Sequence[Any]) -> int:
        """An attempt with state values `kept` and outer arrays `extra` the body writes: the pairs of values no
        longer kept are dropped, a quiet pair whose array the body writes is carried again. Returns how many state
        values the pairs take."""
        self.others += [t for t in extra if not in_list(t, self.others)]
        self.pairs = [p for p in self.pairs if p.first in kept and (p.second[0] == "outer" or p.second[1] in kept)]
        self.pairs += [p for p in self.quiet if in_list(self.others[p.second[1]], extra)]
        self.quiet = [p for p in self.quiet if p.first in kept and p not in self.pairs]
        self.widths = [pair.width(pair.other(dict(enumerate(init)), self.others).ndim) for pair in self.pairs]
        return sum(self.widths)

    def _carried(self, values: Sequence[Any]) -> list[tuple[Pair, Sequence[Any]]]:
        """Each pair with its slice of `values` (the loop's state values that are the pairs')."""
        ends = [sum(self.widths[:j + 1]) for j in range(len(self.pairs))]
        return [(pair, values[end - w:end]) for pair, w, end in zip(self.pairs, self.widths, ends)]

    def state(self, values: Sequence[Any]) -> list[Tensor]:
        """The pairs' state (Pair.state) where the loop's state values are `values` (by position)."""
        return [t for pair in self.pairs for t in pair.state(dict(enumerate(values)), self.others)]

    def names(self, names: Sequence[str], name_of: Callable[[Tensor], str]) -> list[str]:
        """The names of the pairs' state values (for errors and DEBUG), `names` those of the loop's values."""
        out: list[str] = []
        outer = [name_of(t) for t in self.others]
        for pair, w in zip(self.pairs, self.widths):
            shown = f"{names[pair.first]} is {pair.other(dict(enumerate(names)), outer)}"
            out += [f"whether {shown}"] + [f"where {shown}"] * (w - 1)
        return out

    def link(self, values: Mapping[int, Any], carried: Sequence[Tensor]) -> None:
        """Link the state `values` (by position) under the pairs' flags and positions `carried`."""
        for pair, mine in self._carried(carried): pair.link(values, self.others, mine)

    def find(self, kept: Sequence[int], values: Sequence[Any], init: Sequence[Any], given: Mapping[int, Any],
             own: set[int]) -> list[Pair]:
        """Pairs not known yet among the body's `values` (those of positions `kept`, given to it as `given`) and the
        loop's `init` values, with each other and with the outer arrays they are views of or start as (`y = x`
        before the loop: y is x where no iteration ran); `own`: ids of arrays made by the loop (not outer)."""
        # the arrays the body's values are views of, and those they or the initial values are linked to or start as
        # where the user's code holds them other than as the loop's state (no name holding an array, no one sees it)
        bases = [v.base for v in values if _array(v) and v.base is not None]
        for t in bases + [t for t in outer_arrays([*values, *init], whole=True) if self._named(t, init)]:
            if id(t) not in own and not in_list(t, self.others): self.others.append(t)
        more = new_pairs(self.pairs + self.quiet, kept, dict(enumerate(values)), dict(enumerate(init)), self.others)
        # a state array the body leaves as it was given is the array it started as after the loop: a pair with that
        # array is one with the state value
        same = [init[k] for k in kept if values[k] is given[k]]
        return [p for p in more if not (p.second[0] == "outer" and in_list(self.others[p.second[1]], same))]

    def _named(self, t: Tensor, init: Sequence[Any], final: Sequence[Any] | None = None) -> bool:
        """Whether a name of the traced code holds `t` (or a view of it) besides the names of the loop's state values
        that start as it (or as a view of it): otherwise no code can see it again once the loop has rebound them. (A
        state value's name counts where it holds that initial value, not after a first iteration run on its own; with
        the loop's `final` values, a state value the loop leaves as the very array it started as keeps its name.)"""
        if self.held is None: self.held = held_by_names()
        held, own = self.held
        mine = [own.get(name[1:-1]) for name in self.state_names]
        return held.get(id(t), 0) > sum(_array(u) and (u is t or u.base is t) and mine[k] == id(u)
                                        and (final is None or final[k] is not u) for k, u in enumerate(init))

    def settle(self, made: Sequence[Tensor], extra: Sequence[Tensor]) -> bool:
        """Make quiet the pairs of an outer array the body does not write (not among `extra`) whose flag the body
        makes False (`made`: the pairs' state as the body leaves it): `y = x` before the loop, `y = y * 2` in it.
        Related after the loop only where no iteration ran, so not state (a loop of elementwise state stays one:
        numfn.schedule.interchange). Whether any did."""
        off = [pair for pair, (flag, *_) in self._carried(made) if pair.second[0] == "outer"
               and flag.uop.op is Ops.CONST and not flag.uop.arg and not in_list(self.others[pair.second[1]], extra)]
        self.pairs = [p for p in self.pairs if p not in off]
        self.quiet += off
        return bool(off)

    def link_after(self, final: Sequence[Any], results: Sequence[Tensor], init: Sequence[Any], ran: Tensor) -> None:
        """After the loop: link its `final` values under the pairs' last flags and positions (`results`: the pairs'
        results), and the quiet pairs' under their flags before the loop where no iteration `ran`. Not with an array
        no name holds any more (`_named`: an argument of a helper the loop wrote in place): no one can see it, and
        each link is work for every later write (links make more links: a chain of loops multiplied them)."""
        for pair, mine in self._carried(results):
            if pair.second[0] == "state" or self._named(self.others[pair.second[1]], init, final):
                pair.link(dict(enumerate(final)), self.others, mine)
        for pair in self.quiet:
            if not self._named(self.others[pair.second[1]], init, final): continue
            flag, *where = pair.state(dict(enumerate(init)), self.others)
            pair.link(dict(enumerate(final)), self.others, [flag & ~ran, *where])
