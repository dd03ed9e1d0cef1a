"""Layout questions about a view a branch chose (numfn.trace.branch_views): `v = x[1:] if c else x[:-1]` is a
gather of x at the positions the taken branch gave, whose arg ("window", chains) keeps every branch's chain of
movement ops from the base. NumPy's answer to "is it contiguous?" (ravel: a view or a copy) or "can strides describe
it?" (reshape: a view or a copy) is the taken branch's: the same answer in every branch is that answer; branches
that disagree make it depend on the run-time branch, which numfn refuses (copy the view first).

The same holds for a branch's result *linked* to outer arrays (`v = x[::-1]` on one side, `v = -x` on the other:
numfn.trace.branch_views.Link): NumPy's `v.ravel()` copies where the branch made v a reversed view of x and is a view
of v where it made a new array, so each branch's layout is asked (`branch_layouts`)."""
from __future__ import annotations

from typing import Any

from numfn.errors import unsupported
from numfn.ir.uop import Ops


def is_window(arg: Any) -> bool:
    """Whether a GATHER's arg makes it a writable window: "window" (a slice of run-time bounds, numfn.trace.dynamic)
    or ("window", chains) (a view a branch chose)."""
    return arg == "window" or (isinstance(arg, tuple) and arg[0] == "window")


def branch_chains(view: Any) -> list[tuple] | None:   # view: a Tensor (numfn.trace.tensor, above this module)
    """For a view whose last gather is one a branch chose, the chain of movement ops each branch gives the whole view
    (that branch's chain, then the view's ops after the gather); else None."""
    at = max((k for k, (op, _) in enumerate(view.chain) if op is Ops.GATHER), default=None)
    if at is None: return None
    arg = view.chain[at][1][0]
    if not (isinstance(arg, tuple) and arg[0] == "window"): return None
    return [c + view.chain[at + 1:] for c in arg[1]]


def branch_layouts(view: Any) -> list[tuple[tuple[int, ...], tuple]] | None:
    """For an array whose layout a branch chose, per branch: (the shape of the memory it is a view of, the chain of
    movement ops from that memory); else None. Two kinds (numfn.trace.branch_views):
    - a view through a gather a branch chose: each branch's chain from the view's base (`branch_chains`);
    - a branch's result linked to outer arrays, or a view of one: in a branch that made the result a view of such an
      array, that array's shape and chain (then the view's ops after the result); in a branch that made it an array
      of its own, the result's shape and the view's ops. A loop's result linked by its pairs (loop_links) may be
      each pair's view, or an array of its own."""
    if view.base is not None:
        chains = branch_chains(view)
        if chains is not None: return [(view.base.shape, c) for c in chains]
    root, after = (view, ()) if view.base is None else (view.base, view.chain)
    links = [lk for lk in root._links or () if lk.view() is root]
    if not links: return None
    chosen = [lk for lk in links if not lk.loop]   # (every one from the branch that made the result)
    out = []
    for i in range(len(chosen[0].chains) if chosen else 0):
        made = [(lk.memory.shape, lk.chains[i] + after) for lk in chosen if lk.chains[i] is not None]
        out.append(made[0] if made else (root.shape, after))
    # a loop's result: a view of each array its pairs name where their flags hold, else an array of its own
    loops = [lk for lk in links if lk.loop]
    out += [(lk.memory.shape, c + after) for lk in loops for c in lk.chains if c is not None]
    return out + ([(root.shape, after)] if loops else [])


def same_in_every_branch(answers: list[bool], what: str) -> bool:
    """The answer every branch gives (`what` names the question), or an error when they differ."""
    if all(answers) or not any(answers): return answers[0]
    raise unsupported(f"an array that is a view of different layouts in the branches of an `if` on a traced value (or "
                      f"as a loop's iterations bound it), where NumPy's result depends on the branch taken ({what})",
                      "copy it (v.copy()) or make the branches choose views of one layout")
