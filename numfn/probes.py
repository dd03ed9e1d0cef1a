"""Calls answered from a function's trace alone, without compiling: those all of whose outputs are empty.

Dask probes a function on 0x0 arrays to learn its output type (`da.map_blocks(f, x)` without `meta=`): a call whose
outputs have no elements has nothing to compute, so its result is made from the trace's output shapes and dtypes,
and the probe costs a trace, not a compilation. `empty_result(nf)` gives that result, or None where the call must
run: an output with elements, run-time checks (their errors must be raised), outputs of run-time length, writes
into arguments, or a function sized by values.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from numfn import debug
from numfn.pytree import unflatten

__all__ = ["empty_result"]


def empty_result(nf: Any) -> Any:
    """The result of NumericalFunction `nf` when every output it returns is empty, else None (see above)."""
    if nf.size_request is not None or nf.checks or nf.cut_outputs or nf.mutated_inputs: return None
    visible = nf.out_specs[:nf.out_tree.num_leaves]
    if any(int(np.prod(shape)) != 0 for shape, _ in visible): return None
    debug.log(1, f"{nf.name}: every output is empty; returned without compiling")
    return unflatten(nf.out_tree, [np.empty(tuple(int(n) for n in shape), dt.np) for shape, dt in visible])
