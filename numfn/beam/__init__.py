"""BEAM: each kernel's optimizations chosen by measuring them on this machine, and remembered.

With `NUMFN_BEAM=N` or `jit(..., beam=N)`, every kernel of a function being compiled is searched (search.py: a
beam of the N fastest candidate Options, starting from the heuristic's choice of codegen/opt.py), each candidate
built, compiled and timed alone on random data of the kernel's shapes and dtypes (measure.py) and checked against
the heuristic's result; the winner is stored in the disk cache for this kernel and machine (store.py), so later
processes and other functions with the same kernel use it without searching. tuner.py runs the search of one
function's kernels within the time budgets. docs/performance.md ("BEAM") says what it costs and gains.
"""
from numfn import config

__all__ = ["beam_width"]   # the search itself: numfn.beam.tuner.FunctionTuner (imported when a search is asked for)


def beam_width(value: int | None) -> int:
    """jit's `beam` (None: NUMFN_BEAM) as a width: a non-negative int (0: no search)."""
    if value is None: return config.beam()
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"beam must be a non-negative int (candidates kept per step; 0: no search), got {value!r}")
    return value
