"""Views a branch chooses: `if c: v = x[1:] else: v = x[:-1]` makes v a view of x in NumPy, whichever side runs,
so a write through v afterwards changes x. A branch's results are arrays of their own (RESULTs of the LOOP node),
so a result that every branch makes a view of one outer array (or that array itself) is given back as a view of
that array instead (numfn.control.branch_region):

- the same chain of movement ops in every branch: the view itself, taken after the branch;
- different chains (or chains through traced slice bounds): each branch gives, for every axis of the array, the
  position along it of each element of its view (the chain applied to positions), and the result is a writable
  GATHER view of the array at those positions (a write through it is a SCATTER into the array there).

Results that share memory with different arrays in different branches (or with an outer array in one branch
only) stay arrays of their own."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from numfn.dtype import dtypes
from numfn.tensor import Tensor, _replay, gather
from numfn.uop import MOVEMENT, Ops, UOp


def _writable(step: tuple) -> bool:
    op, arg = step
    return (op in MOVEMENT and op is not Ops.EXPAND) or (op is Ops.GATHER and arg[0] == "window")


def memory_of(t: Any, born: set, operands: dict) -> tuple[Tensor, tuple] | None:
    """(base, chain): the outer array whose memory `t` (a branch's value) is, and the chain of ops from it; None for
    values made in the branch, scalars, and views a write cannot go through. `operands` maps a placeholder's id
    to the outer value it stands for; `born` holds the ids of the arrays the branch made."""
    if not isinstance(t, Tensor) or t.weak or t.runtime_length: return None
    base, chain = (t, ()) if t.base is None else (t.base, t.chain)
    if id(base) in operands:
        outer = operands[id(base)]
        if not isinstance(outer, Tensor) or outer.weak or outer.runtime_length: return None
        base, chain = (outer, chain) if outer.base is None else (outer.base, outer.chain + chain)
    elif id(base) in born: return None
    if base.runtime_length or not all(_writable(s) for s in chain): return None
    return base, chain


def positions(base: Tensor, chain: tuple) -> list[UOp]:
    """For each axis of `base` (one for a 0-d base, viewed as 1-d), the position along it of every element of the
    view `chain` makes of it (int64, the view's shape)."""
    shape = base.shape
    if not shape: return [_replay(UOp.const(dtypes.int64, 0), chain)]
    out = []
    for a, n in enumerate(shape):
        iota = UOp.iota(n).reshape(tuple(n if i == a else 1 for i in range(len(shape)))).expand(tuple(shape))
        out.append(_replay(iota, chain))
    return out


def same_view(chains: Sequence[tuple]) -> bool:
    """Whether every branch makes the same view by static movement ops (then it can be taken after the branch)."""
    return all(c == chains[0] for c in chains) and all(op is not Ops.GATHER for op, _ in chains[0])


def view_after(base: Tensor, chain: tuple, index: Sequence[Tensor] | None) -> Tensor:
    """The view of `base` (its value after the branch) that the branch chose: by `chain` when every branch made the
    same one, else a gather at the positions the branch gave (`index`, see `positions`)."""
    if index is None:
        if not chain: return base
        return base._view(_replay(base.uop, chain))
    src = base if base.shape else base.reshape(1)
    return src._view(gather(src, list(index), window=True).uop)
