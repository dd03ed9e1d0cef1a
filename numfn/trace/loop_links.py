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

Views by static movement ops are followed; a view a branch chose differently on each side (a gather at positions
the branch gave) is not.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from numfn.dtype import dtypes
from numfn.ir.primitives import MOVEMENT
from numfn.ir.uop import Ops, UOp
from numfn.trace.branch_views import link, positions
from numfn.trace.tensor import Tensor

_DEPTH = 4   # how many links and views `related` follows (a branch's result linked to a value itself linked)
TRUE = UOp.const(dtypes.bool, True)


def _array(t) -> bool:
    return isinstance(t, Tensor) and not t.weak and not t.runtime_length and not t.is_scalar()


def _static(chain: tuple) -> bool:
    return all(op in MOVEMENT and op is not Ops.EXPAND for op, _ in chain)


def related(a, b) -> dict[tuple, UOp]:
    """{chain: a 0-d bool}: where the bool holds, `a` is the view `chain` of `b` (the whole of it for the empty
    chain), by a view of it, or links a branch made (a Link says its view is its memory at the chain each branch
    used, where its flag holds; a whole-array link holds both ways), directly or through other arrays."""
    if not (_array(a) and _array(b)) or b.base is not None: return {}
    return _related(a, b, (a,), _DEPTH)


def _related(a: Tensor, b: Tensor, path: tuple, depth: int) -> dict[tuple, UOp]:
    if a is b: return {(): TRUE}
    if depth == 0: return {}
    steps: list[tuple[Tensor, tuple, UOp]] = []   # a is other[chain] where the flag holds
    if a.base is not None:
        if _static(a.chain): steps.append((a.base, a.chain, TRUE))
    else:
        for lk in a._links or ():
            chains = {c for c in lk.chains if c is not None}
            if lk.view() is a and len(chains) == 1 and _static(c := next(iter(chains))):
                steps.append((lk.memory, c, lk.flag.uop.cast(dtypes.bool)))
            elif lk.memory is a and chains == {()} and (v := lk.view()) is not None:
                steps.append((v, (), lk.flag.uop.cast(dtypes.bool)))
    out: dict[tuple, UOp] = {}
    for other, chain, flag in steps:
        if any(other is t for t in path) or not _array(other): continue
        for inner, f in _related(other, b, path + (other,), depth - 1).items():
            held = f if flag is TRUE else flag if f is TRUE else flag.alu(Ops.AND, f)
            whole = inner + chain
            out[whole] = held if whole not in out else out[whole].alu(Ops.OR, held)
    return out


@dataclass(frozen=True)
class Pair:
    """Loop state value `first` (its position in the state) that may be the view `chain` of `second`: a state value
    ("state", position) or an outer array the body writes ("outer", its position among them)."""
    first: int
    second: tuple[str, int]
    chain: tuple = ()

    def other(self, values: Mapping[int, Any], outer: Sequence[Any]) -> Any:
        """The second value: a state value among `values` (by position), or one of the `outer` arrays."""
        kind, k = self.second
        return values[k] if kind == "state" else outer[k]

    def flag(self, values: Mapping[int, Any], outer: Sequence[Tensor]) -> Tensor:
        """Whether, among `values` and `outer`, the first value is the view of the second (a 0-d bool)."""
        held = related(values[self.first], self.other(values, outer)).get(self.chain)
        return Tensor(UOp.const(dtypes.bool, False) if held is None else held)

    def link(self, values: Mapping[int, Any], outer: Sequence[Tensor], flag: Tensor) -> None:
        """Link the first value to the second under `flag`, as a branch links its result to the array it chose."""
        view, memory = values[self.first], self.other(values, outer)
        where = [Tensor(u) for u in positions(memory, self.chain)] if memory.ndim else []
        link(view, memory, where, flag, [self.chain])


def new_pairs(pairs: list[Pair], kept: Sequence[int], values: Mapping[int, Any], init: Mapping[int, Any],
              outer: Sequence[Tensor]) -> list[Pair]:
    """The pairs not in `pairs` of a state value (positions `kept`) that is a view of another state value or of an
    `outer` array where the body leaves them (`values`) or before the loop (`init`). Two state values that are one
    array are one pair (first < second): a link holds both ways."""
    known = set(pairs)
    found = []
    for k in kept:
        for s in [("state", j) for j in kept if j != k] + [("outer", i) for i in range(len(outer))]:
            probe = Pair(k, s)
            chains = {**related(values[k], probe.other(values, outer)), **related(init[k], probe.other(init, outer))}
            for chain in chains:
                p = Pair(k, s, chain)
                if p in known or p in found or (not chain and s[0] == "state" and s[1] < k): continue
                found.append(p)
    return found
