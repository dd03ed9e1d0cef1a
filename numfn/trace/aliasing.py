"""Arguments that share memory, when the function writes into one of them: `f(x, x[:-1])`, `f(x, x.T)`, `f(x, x)`.

NumPy runs such a function statement by statement on one memory, so a write through one argument shows through
the others. numfn's usual specialization traces every argument as an array of its own, which would not see it. So
when a call passes a written argument that overlaps another one, it takes a specialization keyed by the aliasing
pattern: for every group of overlapping arguments (connected through the written ones), their dtype, the length
of the memory they span, and each one's offset and strides in elements relative to the start of that memory. Its
trace makes one placeholder per group, a 1-D array over the whole span (the "common base"), and gives the function
views of it built from movement ops, exactly the views `b = a[1:]` makes inside a function; the scheduler's
versions of one buffer then order every read and write as NumPy's statement order does. The call passes the
common base (an array over the caller's memory, no copy).

Views the movement ops cannot express raise `unsupported`: arguments of different dtypes or byte order over one
memory, strides that are not multiples of the itemsize, misaligned data, a writeable argument whose elements
overlap each other (a zero stride), and axes whose strides interleave (no nesting order of the axes has each
stride at least the extent of the axes inside it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from numfn.errors import unsupported
from numfn.runtime.dispatch import byte_extent
from numfn.trace.tensor import Tensor
from numfn.ir.uop import UOp


@dataclass(frozen=True)
class Member:
    """One argument of a group: its leaf slot, the element offset of its first element (index 0, ..., 0) from the
    start of the group's memory, and its strides in elements (0 for axes of length 1)."""
    slot: int
    offset: int
    strides: tuple[int, ...]


@dataclass(frozen=True)
class Group:
    """Arguments over one memory of `length` elements of one dtype; the common base takes the first member's
    slot."""
    length: int
    members: tuple[Member, ...]

    @property
    def slot(self) -> int:
        return self.members[0].slot


def _overlaps(a, b) -> bool:
    return isinstance(b, np.ndarray) and a.size > 0 and b.size > 0 and np.may_share_memory(a, b) and \
        bool(np.shares_memory(a, b))


def overlapping(leaves: list, written) -> list[list[int]]:
    """The groups of argument slots that share memory with a written argument (each sorted, connected through
    written arguments); [] when none does (the usual case: one may_share_memory bounds check per pair)."""
    parent = list(range(len(leaves)))

    def find(i: int) -> int:
        while parent[i] != i: i = parent[i]
        return i

    for w in written:
        a = leaves[w]
        if not isinstance(a, np.ndarray): continue
        for j, b in enumerate(leaves):
            if j != w and find(j) != find(w) and _overlaps(a, b): parent[find(j)] = find(w)
    groups: dict[int, list[int]] = {}
    for i in range(len(leaves)): groups.setdefault(find(i), []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def aliasing_pattern(leaves: list, groups: list[list[int]], names: list[str]) -> tuple[Group, ...]:
    """The aliasing pattern of `groups` (see `overlapping`) for these argument leaves: the key of the specialization
    that traces them as views of one base each. `names` name the leaves in errors."""
    out = []
    for slots in groups:
        arrays = [leaves[i] for i in slots]
        first = arrays[0]
        isz = first.itemsize
        for k, a in enumerate(arrays):
            why = f"has another dtype ({a.dtype}, not {first.dtype})" if a.dtype != first.dtype else \
                "is in non-native byte order" if not a.dtype.isnative else \
                "is misaligned" if not a.flags.aligned or any(s % isz for s in a.strides) else None
            if why: raise _refused(names, slots, k, why)
        spans = [byte_extent(a) for a in arrays]   # (the members overlap, so none is empty)
        lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
        members = []
        for k, a in enumerate(arrays):
            strides = tuple(0 if n == 1 else s // isz for n, s in zip(a.shape, a.strides))
            if a.flags.writeable and any(s == 0 and n > 1 for s, n in zip(strides, a.shape)):
                raise _refused(names, slots, k, "has elements that overlap each other (a zero stride)")
            if not _nested(a.shape, strides):
                raise _refused(names, slots, k, f"has strides {a.strides} whose axes interleave or overlap")
            members.append(Member(slots[k], (a.__array_interface__["data"][0] - lo) // isz, strides))
        out.append(Group((hi - lo) // isz, tuple(members)))
    return tuple(out)


def _refused(names: list[str], slots: list[int], k: int, why: str):
    together = ", ".join(names[i] for i in slots)
    return unsupported(f"arguments {together} share memory and the function writes into one of them, but argument "
                       f"{names[slots[k]]} {why}", "pass a copy of one of them")


def _nested(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether the axes (those that advance: stride != 0) ordered by decreasing |stride| nest: each stride is at
    least the extent, in elements, of the axes inside it (so pads and reshapes of one row build the view)."""
    axes = sorted(((abs(s), n) for s, n in zip(strides, shape) if s != 0 and n > 1), reverse=True)
    inner = 1
    for s, n in reversed(axes):
        if s < inner: return False
        inner += (n - 1) * s
    return True


def common_bases(leaves: list, pattern: tuple[Group, ...]) -> list:
    """The leaves with each group's common base (a 1-D array over the caller's memory) in every member's slot."""
    out = list(leaves)
    for g in pattern:
        a = leaves[g.slot]
        start = a.__array_interface__["data"][0] - g.members[0].offset * a.itemsize
        base = np.asarray(_Memory(start, g.length, a))
        for m in g.members: out[m.slot] = base
    return out


class _Memory:
    """An array interface over `length` elements of `owner`'s dtype from address `start`, keeping `owner` (an array
    over part of that memory) alive, writeable when any member is (the program writes only where NumPy would)."""

    def __init__(self, start: int, length: int, owner: np.ndarray):
        self.owner = owner
        self.__array_interface__ = {"data": (start, False), "shape": (length,), "typestr": owner.dtype.str,
                                    "version": 3}


def _dims(u: UOp) -> tuple[int, ...]:
    assert u.shape is not None   # a tensor-level node
    return u.shape


def member_view(base: Tensor, member: Member, shape: tuple[int, ...]) -> Tensor:
    """The view of the 1-D `base` that `member` describes, from movement ops (shrink, pad, reshape, permute, flip,
    expand) as basic indexing builds them, so writes through it reach the base (numfn.trace.subscript)."""
    u = base.uop
    assert u.shape is not None   # a tensor-level node
    moving = [a for a, (n, s) in enumerate(zip(shape, member.strides)) if n > 1 and s != 0]
    flipped = [a for a in moving if member.strides[a] < 0]
    start = member.offset + sum((shape[a] - 1) * member.strides[a] for a in flipped)
    order = sorted(moving, key=lambda a: -abs(member.strides[a]))   # outermost first
    u = u.shrink(((start, u.shape[0]),))

    def fit(v: UOp, length: int) -> UOp:   # the last axis cut or padded to `length` (padding is never read: _nested)
        assert v.shape is not None
        m = v.shape[-1]
        if m > length: return v.shrink(tuple((0, n) for n in v.shape[:-1]) + ((0, length),))
        if m < length: return v.pad(((0, 0),) * (len(v.shape) - 1) + ((0, length - m),))
        return v

    for k, a in enumerate(order):
        n, s = shape[a], abs(member.strides[a])
        if k == len(order) - 1 and s == 1:
            u = fit(u, n)
            break
        u = fit(u, n * s)
        u = u.reshape(_dims(u)[:-1] + (n, s))
    else:
        u = fit(u, 1)
        u = u.reshape(_dims(u)[:-1])
    if order: u = u.permute(tuple(order.index(a) for a in moving))
    if flipped: u = u.flip(tuple(moving.index(a) for a in flipped))
    u = u.reshape(tuple(n if a in moving else 1 for a, n in enumerate(shape)))
    if u.shape != tuple(shape): u = u.expand(tuple(shape))   # zero strides: a broadcast (read-only)
    view = base._view(u)
    if view.base is not base:   # (the ops above always make a strided view; a copy would lose the writes)
        raise AssertionError(f"the view of an aliased argument with strides {member.strides} is not a view")
    return view
