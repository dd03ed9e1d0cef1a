"""Loop state arrays that may be one array. `r = x` in a loop body, or in a branch inside it, makes r and x one array
in NumPy: a later write through either name (in a later iteration, or after the loop) changes both. A loop's state
values are arrays of their own (RESULTs of the LOOP node), so such a pair is carried with a flag, a bool of the
loop's state: whether the two are one array now.

- Before the loop the flag says whether the initial values are one array (the same array, or linked by a branch:
  numfn.trace.branch_views).
- The body is given the first value linked to the second under the flag (a branch_views Link at the identity
  positions): a write into either is written into the other where the flag holds, as after a branch.
- The body computes the flag anew from what its values end as: the same array, or linked by a branch inside it
  (possibly through the link it was given, when it leaves a value as it was).
- After the loop the first result is linked to the second under the flag's last value.

Only whole arrays are followed (a branch making r a view of part of x inside a loop is not: see `identity_links`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from numfn.dtype import dtypes
from numfn.ir.uop import Ops, UOp
from numfn.trace.branch_views import link, positions
from numfn.trace.tensor import Tensor

_DEPTH = 4   # how many links `one_array` follows (a branch's result linked to a value itself linked)


def _array(t) -> bool:
    return isinstance(t, Tensor) and not t.weak and not t.runtime_length and not t.is_scalar() and t.base is None


def one_array(a, b) -> UOp | None:
    """A 0-d bool: whether `a` and `b` are one whole array: the same array, or joined by links that a branch made
    between whole arrays (a Link says its view is its memory where its flag holds, which is symmetric), directly or
    through other arrays; None where they never are."""
    if not (_array(a) and _array(b)) or a.shape != b.shape: return None
    return _joined(a, b, (a,), _DEPTH)


def _joined(a: Tensor, b: Tensor, path: tuple, depth: int) -> UOp | None:
    if a is b: return UOp.const(dtypes.bool, True)
    if depth == 0: return None
    found = []
    for lk in a._links or ():
        if any(c not in (None, ()) for c in lk.chains): continue   # (a view of a part: not followed)
        other = lk.memory if lk.view() is a else lk.view() if lk.memory is a else None
        if other is None or any(other is t for t in path) or not _array(other) or other.shape != a.shape: continue
        rest = _joined(other, b, path + (other,), depth - 1)
        if rest is not None: found.append(lk.flag.uop.cast(dtypes.bool).alu(Ops.AND, rest))
    if not found: return None
    out = found[0]
    for f in found[1:]: out = out.alu(Ops.OR, f)
    return out


@dataclass(frozen=True)
class Pair:
    """Loop state value `first` (its position in the state) and `second`, a state value ("state", position) or an
    outer array the body writes ("outer", its position among them), that may be one array."""
    first: int
    second: tuple[str, int]

    def other(self, values: Mapping[int, Any], outer: Sequence[Any]) -> Any:
        """The second value: a state value among `values` (by position), or one of the `outer` arrays."""
        kind, k = self.second
        return values[k] if kind == "state" else outer[k]

    def flag(self, values: Mapping[int, Any], outer: Sequence[Tensor]) -> Tensor:
        """Whether the pair's values among `values` and `outer` are one array (a 0-d bool)."""
        return Tensor(one_array(values[self.first], self.other(values, outer)) or UOp.const(dtypes.bool, False))


def identity_link(view: Tensor, memory: Tensor, flag: Tensor) -> None:
    """Link `view` to the whole of `memory` (of its shape) under `flag`."""
    where = [Tensor(u) for u in positions(memory, ())] if memory.ndim else []
    link(view, memory, where, flag, [()])


def new_pairs(pairs: list[Pair], kept: Sequence[int], values: Mapping[int, Any], init: Mapping[int, Any],
              outer: Sequence[Tensor]) -> list[Pair]:
    """The pairs not in `pairs` of a state value (positions `kept`) and another state value or an `outer` array
    that are one array where the body leaves them (`values`) or before the loop (`init`); a pair of state values
    is found once (first < second)."""
    known = set(pairs)
    found = []
    for k in kept:
        for s in [("state", j) for j in kept if j > k] + [("outer", i) for i in range(len(outer))]:
            p = Pair(k, s)
            if p not in known and (one_array(values[k], p.other(values, outer)) is not None
                                   or one_array(init[k], p.other(init, outer)) is not None):
                found.append(p)
    return found
