"""Layout questions about a view a branch chose (numfn.trace.branch_views): `v = x[1:] if c else x[:-1]` is a
gather of x at the positions the taken branch gave, whose arg ("window", chains) keeps every branch's chain of
movement ops from the base. NumPy's answer to "is it contiguous?" (ravel: a view or a copy) or "can strides describe
it?" (reshape: a view or a copy) is the taken branch's: the same answer in every branch is that answer; branches
that disagree make it depend on the run-time branch, which numfn refuses (copy the view first)."""
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


def same_in_every_branch(answers: list[bool], what: str) -> bool:
    """The answer every branch gives (`what` names the question), or an error when they differ."""
    if all(answers) or not any(answers): return answers[0]
    raise unsupported(f"an array that is a view of different layouts in the branches of an `if` on a traced value, "
                      f"where NumPy's result depends on the branch taken ({what})",
                      "copy it (v.copy()) or make the branches choose views of one layout")
