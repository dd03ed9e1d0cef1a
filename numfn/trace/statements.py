"""What converted Python code calls (numfn.trace.convert hands its statements here): a `for` over a range, a
`while` and an `if` run as Python, or, on traced values, as a loop or branch of the program (numfn.trace.control);
`and`, `or` and `not` of traced values are elementwise logic. `unrolling` sets how long a static loop may be to
run as Python (jit's unroll= option). Calls of NumPy's array-making functions (by any name) and of np.ndarray(...)
make traced arrays (`traced_constructor`); int(), float(), min(), len(), ... of traced values are Python's answers
(`traced_builtin`)."""
from __future__ import annotations

import math
import operator
import threading
from typing import Any, NoReturn
from collections.abc import Callable

import numpy as np

from numfn.errors import NumfnError, RunTimeLengthError, TracerConversionError, unsupported, user_location
from numfn.pytree import flatten, unflatten
from numfn.trace import attributes  # noqa: F401 - x.shape = ... on traced arrays (registered on Tensor)
from numfn.trace.tensor import Tensor, add_check, numpy_function
from numfn.trace.record import current_record, observing_rebinds, tracing
from numfn.trace.unbound import PENDING, UNBOUND, MaybeUnbound, Pending, is_unbound, read_bound, undefined
from numfn.trace import pymath
from numfn.trace.dynamic import DynTensor
from numfn.trace.hoisted_checks import Counter
from numfn.trace.control import FirstIterationDiffers, StateShapeGrows, advance, as_state, branch_region, \
    index_bounds, passes_through, while_region
from numfn.dtype import dtypes
from numfn.ir.uop import UOp

BOOL = dtypes.bool


UNROLL = 4   # a converted loop with at most this many iterations known while tracing runs as Python (unrolled)
# ... and one of at most this many whose body needs its variable as a Python value (a shape made from it)
UNROLL_FOR_SHAPES = 64
_unroll = threading.local()


def unroll_limit() -> int:
    return getattr(_unroll, "limit", UNROLL)


class unrolling:
    """Context manager: converted loops of at most `limit` static iterations unroll while it is active (jit's
    unroll= option)."""

    def __init__(self, limit: int | None):
        self.limit = limit

    def __enter__(self):
        self.previous = getattr(_unroll, "limit", None)
        if self.limit is not None: _unroll.limit = int(self.limit)

    def __exit__(self, *exc):
        if self.previous is None: _unroll.__dict__.pop("limit", None)
        else: _unroll.limit = self.previous


def _is_traced(x) -> bool:
    return any(isinstance(v, Tensor) for v in flatten(x)[0])


def _loop_state(state: tuple, names: tuple, line: int) -> tuple[list[Tensor], list] | None:
    """The carried values as state leaves (arrays and numbers) and their tree, or None when one cannot be carried
    by a native loop (a list, None, an object: the loop then runs as Python, or fails naming it)."""
    leaves, trees = [], []
    for v, name in zip(state, names):
        if v is UNBOUND: return None
        ls, tdef = flatten(v)
        # (a loop's return value not bound yet is state whose type the loop learns: numfn.trace.control)
        if not all(isinstance(x, (Tensor, bool, int, float, np.generic, np.ndarray, Pending)) for x in ls): return None
        leaves += [as_state(x, name) for x in ls]
        trees.append(tdef)
    return leaves, trees


def _carriable(v) -> bool:
    return not is_unbound(v) and all(isinstance(x, (Tensor, bool, int, float, np.generic, np.ndarray))
                                     for x in flatten(v)[0])


def _local_slots(state: tuple, fresh: set[int]) -> list[int]:
    """The state slots a native loop does not carry: values still unbound, and those bound in the body (`fresh`:
    unbound when the loop began) to something a loop cannot carry (a list, an object)."""
    return [k for k, v in enumerate(state) if is_unbound(v) or (k in fresh and not _carriable(v))]


class _Slots:
    """A statement's state with some slots left out of a native region: `inner` fills them back (unbound) for the
    Python function of a body or branch, `outer` drops them from what it gives, `after` marks them undefined."""

    def __init__(self, names: tuple, local: list[int]):
        self.names, self.local = names, set(local)
        self.kept = [k for k in range(len(names)) if k not in self.local]

    def outer(self, values) -> list:
        values = list(values)
        return [values[k] for k in self.kept]

    def inner(self, kept_values) -> list:
        full = [UNBOUND] * len(self.names)
        for k, v in zip(self.kept, kept_values): full[k] = v
        return full

    def after(self, kept_values, why: str) -> tuple:
        full = self.inner(kept_values)
        for k in self.local: full[k] = undefined(self.names[k], why)
        return tuple(full)


def _unflatten_state(leaves: list, trees: list) -> list:
    out, at = [], 0
    for tdef in trees:
        out.append(unflatten(tdef, leaves[at:at + tdef.num_leaves]))
        at += tdef.num_leaves
    return out


def _refuse_python_state(names: tuple, state: tuple, line: int, what: str) -> NoReturn:
    bad = [n for n, v in zip(names, state) if v is UNBOUND or not all(
        isinstance(x, (Tensor, bool, int, float, np.generic, np.ndarray)) for x in flatten(v)[0])]
    raise NumfnError(f"{what} at line {line} runs as a compiled loop, but it changes {', '.join(map(repr, bad))}, "
                     f"which is not an array or a number (a list, None, an object) (at {user_location()}); "
                     "keep arrays in the loop's variables, or make the loop short and static so it unrolls")


def run_for_range(start: Any, stop: Any, step: Any, body: Callable[..., Any], state: tuple[Any, ...],
                  names: tuple[str, ...], flags: tuple[str, ...], line: int) -> tuple[Any, ...]:
    """`for i in range(start, stop, step)` of converted code: Python (unrolled) when the trip count is static and
    short, or when nothing in it is traced; else a native loop (the body's break flag ends it). A long static loop
    over Python variables runs its first iteration as Python to find out: it stays Python if that iteration left
    its variables Python values and wrote into no array, else the rest is a native loop."""
    step = 1 if step is None else step
    static = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
    if static and step == 0: raise ValueError("range() arg 3 must not be zero")
    f: list = [False] * len(flags)
    state = tuple(read_bound(v) for v in state)
    fresh = {k for k, v in enumerate(state) if is_unbound(v)}

    def native_or_unrolled(start, state, f, peeled: bool) -> tuple:
        """The rest of the loop from `start` as a native loop (see _native_for_range), or unrolled."""
        try:
            return _native_for_range(start, stop, step, body, state, f, fresh, names, flags, line, peeled)
        except (TracerConversionError, RunTimeLengthError):
            # the body needs the loop's variable as a Python value (a shape or a static slice made from it: a
            # radix-2 FFT reshaping by its stage, np.flip(a[:k]) in a Levinson recursion): a static loop unrolls
            # instead, up to UNROLL_FOR_SHAPES iterations
            if not static or len(range(start, stop, step)) > UNROLL_FOR_SHAPES: raise
            vals, f, start = _python_for(start, stop, step, body, state, flags, f)
            if start is None: return vals
            return native_or_unrolled(start, vals, f, True)

    if not tracing() or (static and len(range(start, stop, step)) <= unroll_limit()):
        state, f, start = _python_for(start, stop, step, body, state, flags)
        if start is None: return state
        return native_or_unrolled(start, state, f, peeled=True)
    # the first iteration runs as Python when the loop's variables are Python values (it may stay Python) or
    # when some are bound only inside the loop (that binds them: the native loop then carries them)
    elif static and (not _is_traced(state) or fresh):
        if not range(start, stop, step): return tuple(state)
        record = current_record()
        assert record is not None   # (tracing)
        checks = len(record.checks)
        with observing_rebinds() as wrote:
            out = body(start, *f, *state)
        f2, state2 = list(out[:len(flags)]), tuple(out[len(flags):])
        if f2 and not isinstance(f2[0], Tensor) and _truth(f2[0]): return state2
        # (a body that checks traced values, `if x[i] < 0: raise ...`, is traced work too: a native loop)
        if not wrote and not _is_traced(out) and len(record.checks) == checks:
            state2, f2, after = _python_for(start + step, stop, step, body, state2, flags, f2)
            if after is None: return state2
            return native_or_unrolled(after, state2, f2, peeled=True)
        if state or fresh: return native_or_unrolled(start + step, state2, f2, peeled=True)
        # a loop carrying no variable that writes traced arrays: the native loop runs from the first iteration, and
        # that iteration's trace is undone (the arrays get their old values back, its checks go): kept, it would
        # be a copy of the body, and of every loop in it, at each level of a nest (2**d copies for depth d)
        for t, old in wrote.values():
            if t.base is None: t.rebind(old, record=False)
        del record.checks[checks:]
    if not isinstance(step, (int, np.integer)): add_check(Tensor.lift(step) == 0, 0, _zero_step)
    if fresh and not static:   # variables bound only inside a loop of a traced trip count: see _peeled_first
        going = _going(Tensor.lift(start).astype(np.int64), Tensor.lift(stop).astype(np.int64),
                       Tensor.lift(step).astype(np.int64), step)
        return _peeled_first(going, lambda *v: body(start, *v), state, fresh, names, flags, line,
                             lambda vals, f: native_or_unrolled(start + step, vals, f, peeled=True))
    try:
        return native_or_unrolled(start, state, f, peeled=False)
    except StateShapeGrows as e:
        if not static: raise e.error() from None
    except FirstIterationDiffers:
        pass
    # Python's first iteration writes into an array other names may hold, the later ones into arrays the loop made
    # (`v[0] = 0; v = v * 2`): the first runs on its own (under a branch when the trip count is traced)
    if static:
        out = body(start, *f, *state)
    else:
        going = _going(Tensor.lift(start).astype(np.int64), Tensor.lift(stop).astype(np.int64),
                       Tensor.lift(step).astype(np.int64), step)
        out = run_if(going & ~Tensor.lift(f[0]) if f else going, lambda *v: body(start, *v), lambda *v: v,
                     (*f, *state), (*flags, *names), (), line)
    f, state = list(out[:len(flags)]), tuple(out[len(flags):])
    if f and not isinstance(f[0], Tensor) and _truth(f[0]): return state
    return native_or_unrolled(start + step, state, f, peeled=True)


def _peeled_first(going: Tensor, first: Callable, state: tuple, fresh: set[int], names: tuple, flags: tuple,
                  line: int, rest: Callable[[tuple, list], tuple]) -> tuple:
    """A native loop whose trip count is traced, with variables unbound before it that its body binds (`fresh`:
    `lab = np.argmin(d, axis=1)` in every iteration, read after the loop). Its first iteration runs on its own,
    under a branch on `going` (the loop's test at its start), which binds them where it runs; `rest(state, flags)`
    runs the loop from the second iteration on, carrying them. After it they are bound where the first iteration
    ran (MaybeUnbound): reading them where the loop ran no iteration raises UnboundLocalError, as Python does."""
    out = run_if(going, first, lambda *v: v, (*[False] * len(flags), *state), (*flags, *names), (), line)
    f, vals = list(out[:len(flags)]), tuple(out[len(flags):])
    maybe = {k: v for k, v in enumerate(vals) if k in fresh and isinstance(v, MaybeUnbound)}
    vals = rest(tuple(v.value if k in maybe else v for k, v in enumerate(vals)), f)
    why = f"the loop at line {line} assigns it, and ran no iteration"
    return tuple(_maybe_bound(v, maybe[k].bound, names[k], why) if k in maybe else v for k, v in enumerate(vals))


def _going(i: Tensor, hi: Tensor, st: Tensor, step) -> Tensor:
    """Whether a range's loop goes on at index i: i < hi (or i > hi for a negative step; a traced step's sign
    decides at run time)."""
    if not isinstance(step, (int, np.integer)): return ((st > 0) & (i < hi)) | ((st < 0) & (i > hi))
    return (i < hi) if step > 0 else (i > hi)


def _native_for_range(start, stop, step, body, state, f, fresh, names, flags, line, peeled: bool) -> tuple:
    """The rest of a `for` over a range as a native loop from `start` (flags `f` so far). `peeled`: the first
    iteration already ran (as Python or on its own); else the loop raises FirstIterationDiffers when it must."""
    static = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
    slots = _Slots(names, _local_slots(state, fresh))
    carried = _loop_state(tuple(slots.outer(state)), tuple(slots.outer(names)), line)
    if carried is None:
        if static and not any(isinstance(x, Tensor) for x in f):
            state, f2, _ = _python_for(start, stop, step, body, state, flags, f)
            if f2 is None: return state
        _refuse_python_state(tuple(slots.outer(names)), tuple(slots.outer(state)), line, "a for loop")
    leaves, trees = carried
    kept_names = tuple(slots.outer(names))
    n_flags = len(flags)
    lo = Tensor.lift(start).astype(np.int64)
    hi = Tensor.lift(stop).astype(np.int64)
    st = Tensor.lift(step).astype(np.int64)
    lo = Tensor(lo.uop, weak=True)   # range() gives Python ints, whatever its bounds are (NEP 50: weak)
    init = [lo] + [Tensor.lift(x) if isinstance(x, Tensor) else Tensor(UOp.const(BOOL, bool(x))) for x in f] + leaves

    def more(i, *rest):
        going = _going(i, hi, st, step)
        return going & ~rest[0] if n_flags else going

    def step_body(i, *rest):
        f, vals = list(rest[:n_flags]), _unflatten_state(list(rest[n_flags:]), trees)
        out = body(i, *f, *slots.inner(vals))
        new_flags, new_vals = list(out[:n_flags]), slots.outer(out[n_flags:])
        new_leaves = []
        for v, tdef, name in zip(new_vals, trees, kept_names):
            ls, t2 = flatten(v)
            if t2.unordered() != tdef.unordered():
                raise NumfnError(f"{name!r} changes structure in the loop at line {line}: {tdef!r} before, {t2!r} "
                                 "after an iteration")
            new_leaves += [as_state(x, name) for x in ls]
        return [advance(i, st)] + [Tensor.lift(x) for x in new_flags] + new_leaves

    # the index's range inside the body (spares index checks: x[i] with stop <= len(x); Python int arithmetic
    # on it that provably stays in int64 needs no check)
    bounds = {0: index_bounds(lo, hi, step)}
    with ContainersKept(f"a for loop at line {line}", body) as kept:
        # a range of static bounds and no break: every iteration is known before the loop (its checks go first)
        counter = Counter(0, int(start), int(step), len(range(start, stop, step))) if static and not n_flags else None
        out = while_region(more, step_body, init, ["the loop index"] + list(flags) + _leaf_names(kept_names, trees),
                           bounds, first="peeled" if peeled else "peel", counter=counter)
    if kept.changed:   # the body changes a list or dict it reads from outside: Python's loop, if it can be one
        if static and not any(isinstance(x, Tensor) for x in f):
            state, f2, _ = _python_for(start, stop, step, body, state, flags, f)
            if f2 is None: return state
        kept.refuse()
    return slots.after(_unflatten_state(out[1 + n_flags:], trees), _compiled_loop_local(line))


def run_for_each(iterable: Any, body: Callable[..., Any], state: tuple[Any, ...], names: tuple[str, ...],
                 flags: tuple[str, ...], line: int) -> tuple[Any, ...]:
    """`for x in iterable` of converted code: over a traced array, a loop over its first axis's positions (x =
    array[i]: native, or unrolled when short, as a range is); over anything else, Python's own iteration."""
    if isinstance(iterable, Tensor) and tracing():
        if iterable.ndim == 0: raise TypeError("iteration over a 0-d array")
        def at(i, *rest): return body(iterable[i], *rest)
        return run_for_range(0, iterable.shape[0], 1, at, state, names, flags, line)
    if isinstance(iterable, ArrayItems):
        items = iterable
        def item_at(i, *rest): return body(items.at(i), *rest)
        return run_for_range(0, items.length, 1, item_at, state, names, flags, line)
    vals = tuple(state)
    f = [False] * len(flags)
    for x in iterable:
        out = body(x, *f, *vals)
        f, vals = list(out[:len(flags)]), tuple(out[len(flags):])
        if f and isinstance(f[0], Tensor):
            raise NumfnError(f"a loop at line {line} over a Python iterable ends by a traced value (break on an "
                             f"array's value) (at {user_location()}); loop over a range or an array instead")
        if f and _truth(f[0]): break
    return vals


class ArrayItems:
    """enumerate(a) or zip(a, b, ...) of traced arrays in a converted `for` (numfn.trace.convert): the loop walks
    their positions (run_for_each), a native loop as over a range, instead of Python's iteration unrolled at every
    element (a compile that grew with the arrays' length)."""

    def __init__(self, arrays: list[Tensor], start: int | None):
        self.arrays, self.start = arrays, start   # start: enumerate's first count; None for zip
        self.length = min(a.shape[0] for a in arrays)   # (zip stops at the shortest)

    def at(self, i) -> tuple:
        rows = tuple(a[i] for a in self.arrays)
        return rows if self.start is None else (i + self.start if self.start else i, rows[0])


def array_items(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)` for a converted loop's `for ... in enumerate(...)` or `zip(...)`: ArrayItems where
    Python's builtin walks traced arrays (and NumPy arrays beside them), else what the call gives."""
    arrays = all(isinstance(a, (Tensor, np.ndarray)) and a.ndim > 0 for a in args)
    if tracing() and args and arrays and any(isinstance(a, Tensor) for a in args):
        if fn is enumerate and len(args) == 1 and set(kwargs) <= {"start"} and \
                isinstance(kwargs.get("start", 0), (int, np.integer)):
            return ArrayItems([args[0]], int(kwargs.get("start", 0)))
        if fn is zip and not kwargs: return ArrayItems([Tensor.lift(a) for a in args], None)
    return fn(*args, **kwargs)


def traced_builtin(f: Any) -> Callable | None:
    """Python's int, float, bool, min, max, round and len on traced values (and numfn.trace.pymath's: math's
    functions, any, all, sorted), where the builtin would need the value:
    int(x) of a 0-d array is a Python int (truncated toward zero), min(a, b, c) the first least (Python compares
    with <, so a NaN stays where it is first). None for other functions (and the builtins' other uses fall back
    to them)."""
    return next((mine for builtin, mine in _TRACED_BUILTINS.items() if f is builtin), None)   # (by identity: any
    # callable comes here, hashable or not)


# NumPy's functions whose results a traced function may write into, fill or combine with traced values: called
# while tracing, numfn.numpy's run instead (numfn.interpose wraps them in NumPy's namespace; converted code's calls
# reach them by whatever name it calls them: `traced_constructor`)
NUMPY_CREATION = ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "arange",
                  "linspace", "logspace", "geomspace", "eye", "identity", "array", "asarray", "asanyarray",
                  "ascontiguousarray", "asfortranarray", "copy", "tri", "meshgrid", "indices")
_creation_by_id: dict[int, tuple[Any, str]] = {}   # id(NumPy's function) -> (the function, its name)


def traced_constructor(f: Any) -> Callable | None:
    """While tracing, what a call of NumPy's `f` runs when numfn.numpy's must: for an array-making function numfn's
    of that name (`f` called by any name: np.zeros, `zeros` imported from numpy, an alias), for `np.ndarray(shape,
    dtype)` (a type: NumPy's namespace keeps it, isinstance needs it) a new array as np.empty makes one; None for
    anything else (and outside a trace)."""
    if not tracing(): return None
    if f is np.ndarray: return _ndarray
    if not _creation_by_id:
        for name in NUMPY_CREATION:
            fn = getattr(np, name)
            fn = getattr(fn, "__numfn_original__", fn)   # (numfn.interpose's wrapper while tracing)
            _creation_by_id[id(fn)] = (fn, name)
    f = getattr(f, "__numfn_original__", f)
    found = _creation_by_id.get(id(f))
    return numpy_function(found[1]) if found is not None and found[0] is f else None


def _ndarray(shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
    """`np.ndarray(...)` while tracing: a new array (its values undefined, as np.empty's), or with a traced `buffer`
    a view of that array's memory; over NumPy's own buffers (bytes, a NumPy array) NumPy's array, a constant."""
    if buffer is not None and not isinstance(buffer, Tensor):
        return np.ndarray(shape, dtype, buffer, offset, strides, order)
    if strides is not None:
        raise unsupported("numpy.ndarray(..., strides=) on traced memory", "make the view by slicing, reshaping or "
                          "transposing an array, or use numpy.lib.stride_tricks.as_strided outside the function")
    if order not in (None, "C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    order = "F" if order == "F" else "C"   # (a traced array's layout is not visible: only a view's shape is)
    if buffer is None: return numpy_function("empty")(shape, dtype)   # (NumPy ignores offset= without a buffer)
    dt = np.dtype(dtype)
    if buffer.dtype != dt:
        raise unsupported(f"numpy.ndarray of dtype {dt} over a traced array of dtype {buffer.dtype}",
                          "reinterpreting memory as another type is not traced; convert with .astype()")
    if not buffer.is_contiguous("C"):
        raise unsupported("numpy.ndarray over a traced array that is not C-contiguous", "copy it first "
                          "(np.ascontiguousarray)")
    dims = tuple(operator.index(s) for s in shape) if isinstance(shape, (tuple, list)) else (operator.index(shape),)
    offset = operator.index(offset)
    if offset < 0 or offset % dt.itemsize:
        raise unsupported(f"numpy.ndarray at byte offset {offset} of a traced array of {dt}",
                          "the offset must be a whole number of elements")
    start, n = offset // dt.itemsize, math.prod(dims)
    if start + n > buffer.size: raise TypeError("buffer is too small for requested array")
    return buffer.reshape(-1)[start:start + n].reshape(dims, order=order)


def _scalar_of(x: Any, what: str) -> Tensor:
    t = Tensor.lift(x)
    if t.size != 1: raise TypeError(f"only length-1 arrays can be converted to Python scalars ({what})")
    return t.reshape(())


def _known_scalar(x: Any) -> Any:
    """A 0-d traced value whose value is known while tracing (int(np.log2(n)) of a shape's n), as a NumPy scalar;
    else `x`: the builtins then give Python values, which sizes, ranges and static loops need."""
    if isinstance(x, Tensor) and not getattr(x, "runtime_length", False) and x.ndim == 0:
        value = x.known()
        if value is not None: return value[()]
    return x


def _int(x=0, *rest, **kw):
    x = _known_scalar(x)
    if rest or kw or not isinstance(x, Tensor): return int(x, *rest, **kw)
    t = _scalar_of(x, "int()")
    if t.uop.dtype.is_complex: return int(x)   # (TypeError, as Python's)
    if t.uop.dtype.is_float:   # Python's errors for what no int is (after the call: the value is known then)
        return pymath.checked_int(t.astype(np.float64), "int()")
    return Tensor(t.astype(np.int64).uop, weak=True)


def _float(x=0.0):
    x = _known_scalar(x)
    if not isinstance(x, Tensor): return float(x)
    t = _scalar_of(x, "float()")
    if t.uop.dtype.is_complex: return float(x)
    return Tensor(t.astype(np.float64).uop, weak=True)


def _bool(x=False):
    x = _known_scalar(x)
    if not isinstance(x, Tensor): return bool(x)
    return Tensor(_scalar_of(x, "bool()").astype(np.bool_).uop, weak=True)


def _least(pick_second: Callable, builtin: Callable, args: tuple, kw: dict) -> Any:
    items = list(args[0]) if len(args) == 1 else list(args)
    if kw or not items or not any(isinstance(v, Tensor) for v in items): return builtin(*args, **kw)
    best = items[0]
    for v in items[1:]:   # Python's: the later one only where it compares strictly better
        best = numpy_function("where")(pick_second(v, best), v, best)
    return best


def _min(*args, **kw): return _least(lambda v, best: v < best, min, args, kw)
def _max(*args, **kw): return _least(lambda v, best: v > best, max, args, kw)   # noqa: E704


def _round(x, ndigits=None):
    if not isinstance(x, Tensor): return round(x) if ndigits is None else round(x, ndigits)
    np_round = numpy_function("round")
    if ndigits is None:   # a Python int, rounded half to even as Python's
        return Tensor(Tensor.lift(np_round(_scalar_of(x, "round()"))).astype(np.int64).uop, weak=True)
    return np_round(x, ndigits)


def _len(x):
    """len() of an array whose first axis has a run-time length (x[mask] in converted code): that length, a traced
    Python int (weak int64) computed when the program runs; Python's len for everything else."""
    if isinstance(x, DynTensor) and x.lengths and x.lengths[0] is not None: return Tensor(x.lengths[0], weak=True)
    return len(x)


_TRACED_BUILTINS: dict = {int: _int, float: _float, bool: _bool, min: _min, max: _max, round: _round, len: _len,
                          **pymath.TRACED}


def _compiled_loop_local(line: int) -> str:
    return (f"it is assigned inside the loop at line {line}, which runs compiled, and only there; assign it "
            "before the loop to read it after")


def _zero_step(_) -> BaseException:
    return ValueError("range() arg 3 must not be zero")


def _leaf_names(names, trees) -> list[str]:
    return [f"{n!r}" if t.num_leaves == 1 else f"{n!r}[{k}]" for n, t in zip(names, trees)
            for k in range(t.num_leaves)]


def _python_for(start, stop, step, body, state, flags, f=None):
    """The loop as Python from `start`: (state, None, None) at its end, or (state, flags, next index) when a
    traced value decided a break (the rest must then be a native loop that stops where the flag says)."""
    vals = tuple(state)
    f = [False] * len(flags) if f is None else f
    for i in range(int(start), int(stop), int(step)):
        out = body(i, *f, *vals)
        f, vals = list(out[:len(flags)]), tuple(out[len(flags):])
        if f and isinstance(f[0], Tensor): return vals, f, i + int(step)
        if f and _truth(f[0]): break
    return vals, None, None


def _truth(x) -> bool:
    return bool(x)


def run_while(cond, body, state, names, flags, line):
    """`while test:` of converted code: Python while the test is a Python value; once it is traced (or after a
    few iterations whose state holds arrays), a native loop from the state reached."""
    vals = tuple(read_bound(v) for v in state)
    fresh = {k for k, v in enumerate(vals) if is_unbound(v)}
    f = [False] * len(flags)
    peeled = 0
    while True:
        test = cond(*f, *vals)
        if f and not isinstance(f[0], Tensor) and _truth(f[0]): return vals
        if isinstance(test, Tensor) or (f and isinstance(f[0], Tensor)) or \
                (tracing() and peeled >= unroll_limit() and _is_traced(vals)):
            break
        if not _truth(test): return vals
        out = body(*f, *vals)
        f, vals = list(out[:len(flags)]), tuple(out[len(flags):])
        peeled += 1
    if fresh & {k for k, v in enumerate(vals) if is_unbound(v)} and not f:   # see _peeled_first
        return _peeled_first(Tensor.lift(test).astype(np.bool_), body, vals, fresh, names, flags, line,
                             lambda v, f: _native_while(cond, body, v, f, fresh, names, flags, line, peeled=True))
    try:
        return _native_while(cond, body, vals, f, fresh, names, flags, line, peeled=peeled > 0)
    except StateShapeGrows as e:
        raise e.error() from None
    except FirstIterationDiffers:
        pass
    # Python's first iteration writes into an array other names may hold, the later ones into arrays the loop made
    # (`v[0] = 0; v = v * 2`): the first runs on its own, under a branch on the test
    going = Tensor.lift(test).astype(np.bool_)
    out = run_if(going & ~Tensor.lift(f[0]) if f else going, body, lambda *v: v, (*f, *vals), (*flags, *names), (),
                 line)
    f, vals = list(out[:len(flags)]), tuple(out[len(flags):])
    return _native_while(cond, body, vals, f, fresh, names, flags, line, peeled=True)


def _native_while(cond, body, vals, f, fresh, names, flags, line, peeled: bool) -> tuple:
    """The rest of a `while` as a native loop from the state `vals` (flags `f` so far). `peeled`: an iteration
    already ran; else the loop raises FirstIterationDiffers when it must."""
    slots = _Slots(names, _local_slots(vals, fresh))
    kept_names = tuple(slots.outer(names))
    carried = _loop_state(tuple(slots.outer(vals)), kept_names, line)
    if carried is None: _refuse_python_state(kept_names, tuple(slots.outer(vals)), line, "a while loop")
    leaves, trees = carried
    originals = leaves
    leaves = [t if passes_through(t) else _state_copy(t) for t in leaves]
    n_flags = len(flags)
    init = [Tensor.lift(x) if isinstance(x, Tensor) else Tensor(UOp.const(BOOL, bool(x))) for x in f] + leaves

    def more(*rest):
        t = Tensor.lift(cond(*rest[:n_flags], *slots.inner(_unflatten_state(list(rest[n_flags:]), trees))))
        return t.astype(np.bool_) & ~rest[0] if n_flags else t.astype(np.bool_)

    def step_body(*rest):
        out = body(*rest[:n_flags], *slots.inner(_unflatten_state(list(rest[n_flags:]), trees)))
        new = [Tensor.lift(x) for x in out[:n_flags]]
        for v, tdef, name in zip(slots.outer(out[n_flags:]), trees, kept_names):
            ls, t2 = flatten(v)
            if t2.unordered() != tdef.unordered():
                raise NumfnError(f"{name!r} changes structure in the loop at line {line}: {tdef!r} before, {t2!r} "
                                 "after an iteration")
            new += [as_state(x, name) for x in ls]
        return new

    with ContainersKept(f"a while loop at line {line}", cond, body) as kept:
        out = while_region(more, step_body, init, list(flags) + _leaf_names(kept_names, trees),
                           first="peeled" if peeled else "peel")
    if kept.changed: kept.refuse()
    for k, (t, copy) in enumerate(zip(originals, leaves)):   # an array changed only in place: the user's own object
        if out[n_flags + k] is copy and copy is not t:
            t.rebind(copy.uop)
            out[n_flags + k] = t
    return slots.after(_unflatten_state(out[n_flags:], trees), _compiled_loop_local(line))


class BranchRaises(BaseException):
    """A `raise` (or a failed `assert`) met while tracing a side of a branch on a traced value (`raise_`): the
    side has made the check that raises it, and ends here (a BaseException, so that a user's `except Exception` in
    the traced code does not take it for the user's own error)."""


_branches = threading.local()   # .sides: the trace records of the branch sides being traced, innermost last


def raise_(make: Callable[..., BaseException], *values: Any) -> NoReturn:
    """`raise make(*values)` of converted code (`values`: what an f-string in the exception's arguments formats).
    Python's raise, but inside a side of a branch on a traced value, a check of that side (branch_region gates it
    by the side taken: the call raises the exception after it where the side runs), then BranchRaises to end the
    side. One traced number among `values` is the check's payload, formatted into the message at run time; more
    show as placeholders."""
    sides = getattr(_branches, "sides", [])
    # (outside a branch side, or in a loop inside one, whose trace the BranchRaises would end: Python's raise)
    if not sides or sides[-1] is not current_record(): raise make(*values)
    traced = [k for k, v in enumerate(values) if isinstance(v, Tensor)]
    payload: Any = 0
    if len(traced) == 1 and values[traced[0]].ndim == 0 and not values[traced[0]].uop.dtype.is_complex:
        at, v = traced[0], values[traced[0]]
        floating = v.uop.dtype.is_float
        payload = Tensor(v.uop.cast(dtypes.float64).bitcast(dtypes.int64)) if floating else v.astype(np.int64)

        def error(bits: int) -> BaseException:
            shown = float(np.array(bits, np.int64).view(np.float64)) if floating else \
                bool(bits) if v.uop.dtype.is_bool else int(bits)
            return make(*values[:at], shown, *values[at + 1:])
    else:
        def error(bits: int) -> BaseException:
            return make(*values)
    add_check(True, payload, error)
    raise BranchRaises()


# the errors NumPy raises for the shapes, dtypes and constant indices a traced side meets; numfn's own (NumfnError:
# a construct it does not compile) stay errors of the compile
NUMPY_ERRORS = (IndexError, ValueError, TypeError, ArithmeticError, KeyError)
_REGION_CODES = (while_region.__code__, branch_region.__code__)   # (functions tracing a loop's body, a branch's sides)


def _raised_here(e: BaseException) -> bool:
    """Whether `e`, caught in a side of a branch, was raised by that side's own statements: not numfn's (NumfnError),
    and not inside a loop or a branch in the side, whose iterations or side may never run (their code is traced
    whether or not it runs: raised at run time, it would need their own condition)."""
    if isinstance(e, NumfnError): return False
    tb = e.__traceback__.tb_next if e.__traceback__ is not None else None   # (the side's own frame first)
    while tb is not None:
        if tb.tb_frame.f_code in _REGION_CODES: return False
        tb = tb.tb_next
    return True


def _again(e: BaseException) -> BaseException:
    """A new exception like `e` (raised by a later call: not the traced one's object, with its traceback)."""
    try: return type(e)(*e.args)
    except Exception: return e


def _maybe_bound(value, bound: Tensor, name: str, why: str) -> MaybeUnbound:
    """`value` of variable `name`, bound where `bound` holds (numfn.trace.unbound.MaybeUnbound)."""
    def check(bound, why):
        add_check(~Tensor.lift(bound).astype(np.bool_), 0, lambda _: UnboundLocalError(why))
    return MaybeUnbound(value, bound, f"cannot access local variable {name!r} where it is not associated with a "
                                      f"value ({why})", check)


def run_if(test, then, orelse, state, names, both, line):
    """`if test:` of converted code: Python's if on a Python value, a branch of the program on a traced one. A side
    that raises (`raise_`: its check is made, gated by the side) gives its variables back as they were (the
    other's types where it binds them). A variable unbound before that one side binds is bound after it where
    that side ran (MaybeUnbound: reading it where the other side ran raises UnboundLocalError, as Python does)."""
    if not isinstance(test, Tensor): return then(*state) if _truth(test) else orelse(*state)
    state = tuple(read_bound(v) for v in state)
    t = Tensor.lift(test)
    if t.ndim and t.size != 1:
        raise ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or "
                         "a.all()")
    # a variable unbound before the branch: an output, where a side binds it; a loop's return value not bound yet
    # (PENDING) likewise. Neither is an input: the side that binds it gives its type, the other zeros of it
    maybe = {k for k, v in enumerate(state) if is_unbound(v) and names[k] not in both}
    pending = [k for k, v in enumerate(state) if v is PENDING or k in maybe]
    ins = _Slots(names, [k for k, v in enumerate(state) if is_unbound(v) or v is PENDING])
    outs = _Slots(names, [])
    bound_by: dict[int, set[int]] = {k: set() for k in maybe}   # the sides binding each of them
    carried = _loop_state(tuple(ins.outer(state)), ("",) * len(ins.kept), line)
    if carried is None:
        raise NumfnError(f"a branch at line {line} on a traced value reads a variable that is not an array or a "
                         f"number (at {user_location()})")
    leaves, trees = carried
    out_trees = []

    def branch(fn, side: int):
        def run(*vals):
            given = ins.inner(_unflatten_state(list(vals), trees))
            for k in pending: given[k] = PENDING
            if not hasattr(_branches, "sides"): _branches.sides = []
            _branches.sides.append(current_record())
            try:
                out = outs.outer(fn(*given))
            except (BranchRaises, *NUMPY_ERRORS) as e:   # this side raises: its values are never used (PENDING: the
                if not isinstance(e, BranchRaises):   # other side's). NumPy's error on its shapes (`x[10]` of five
                    if not _raised_here(e): raise   # elements) is its check, as a `raise` statement's (raise_) is
                    add_check(True, 0, lambda _, e=e: _again(e))
                raising.add(side)
                out = outs.outer([PENDING if v is UNBOUND else v for v in given])
                for k in maybe: bound_by[k].add(side)   # (a side that raises never goes on: as if it bound them)
            finally:
                _branches.sides.pop()
            for k in maybe:
                v = out[k]
                if isinstance(v, MaybeUnbound): v = out[k] = v.read()   # (bound by a branch inside: read here)
                # (an array of run-time length, `seg = vals[lo:hi]`, has no zeros of its type: left unbound after)
                if is_unbound(v) or v is PENDING or not _carriable(v) or \
                        any(getattr(x, "runtime_length", False) for x in flatten(v)[0]): out[k] = PENDING
                else: bound_by[k].add(side)
            if any(is_unbound(v) for v in out):
                raise NumfnError(f"a variable is used before it is assigned in a branch at line {line} (at "
                                 f"{user_location()})")
            ls, tdef = flatten(tuple(out))
            out_trees.append(tdef)
            if not all(isinstance(x, (Tensor, bool, int, float, np.generic, np.ndarray, Pending)) for x in ls):
                raise NumfnError(f"a branch at line {line} on a traced value gives {', '.join(map(repr, names))} "
                                 f"a value that is not an array or a number (at {user_location()})")
            return ls
        return run

    index = t.reshape(()).astype(np.bool_).astype(np.int64)
    out_names = tuple(outs.outer(names))
    raising: set[int] = set()   # the sides (0: else, 1: then) that raise
    with ContainersKept(f"a branch at line {line} on a traced value", then, orelse) as kept:
        out = branch_region(index, [branch(orelse, 0), branch(then, 1)], leaves, out_names)
    if kept.changed: kept.refuse()
    # every side raises: so does the enclosing side, or the whole function where the branch is in its own code (not
    # in a loop's body); what follows is dead code (numfn.function ends the trace there)
    record = current_record()
    if len(raising) == 2 and (_branches.sides[-1] is record if getattr(_branches, "sides", None)
                              else record is not None and record.parent is None):
        raise BranchRaises()
    if len({t.unordered() for t in out_trees}) != 1:
        raise NumfnError(f"the two sides of the branch at line {line} give {', '.join(map(repr, out_names))} "
                         f"different structures (at {user_location()})")
    after = list(unflatten(out_trees[0], out))
    for k in maybe:
        sides = bound_by[k]
        if sides == {0, 1}: continue
        why = f"only one side of the branch at line {line} assigns it, and the other ran"
        after[k] = undefined(names[k], why) if not sides or after[k] is PENDING else \
            _maybe_bound(after[k], t.reshape(()).astype(np.bool_) if sides == {1} else
                         ~t.reshape(()).astype(np.bool_), names[k], why)
    return tuple(after)


def logical(kind: str, thunks) -> Any:
    """`a and b` / `a or b` of converted code: Python's on Python values; on a traced one, elementwise logic
    (both sides are then computed)."""
    value = thunks[0]()
    for thunk in thunks[1:]:
        if isinstance(value, Tensor):
            other = Tensor.lift(thunk()).astype(np.bool_)
            value = value.astype(np.bool_) & other if kind == "and" else value.astype(np.bool_) | other
            continue
        if (kind == "and" and not _truth(value)) or (kind == "or" and _truth(value)): return value
        value = thunk()
    return value


def logical_not(x) -> Any:
    return ~Tensor.lift(x).astype(np.bool_) if isinstance(x, Tensor) else not x


def not_flags(brk, cont) -> Any:
    return logical_not(logical("or", [lambda: brk, lambda: cont]))


def _state_copy(t: Tensor) -> Tensor:
    """A new Tensor of t's value and kind (weak, 0-d array) for a while loop's state."""
    if isinstance(t, DynTensor) and t.base is None: return t.copy()   # (keeps its run-time lengths)
    out = Tensor(t.uop, weak=t.weak)
    return out if t.is_scalar() else out.as_array()


class ContainersKept:
    """Lists, dicts, sets and bytearrays a converted body reads from the enclosing function (its closure) are
    Python objects: a native loop or a branch traces the body once, so an `acc.append(y)` in it would run once (on
    a placeholder of the loop's state, or whichever way a branch goes). The context notes their contents; after the
    region is traced, `changed` names those the body changed, each put back as it was (the caller then runs the
    loop as Python, or `refuse`s)."""

    def __init__(self, what: str, *fns: Callable):
        self.what = what
        self.cells: list[tuple[str, Any, tuple, Any]] = []   # (name, container, identities of its items, copy)
        for fn in fns:
            code, closure = getattr(fn, "__code__", None), getattr(fn, "__closure__", None)
            if code is None or closure is None: continue
            for name, cell in zip(code.co_freevars, closure):
                try:
                    v = cell.cell_contents
                except ValueError:   # a cell not bound yet
                    continue
                if isinstance(v, (list, dict, set, bytearray)) and not any(v is c for _, c, _, _ in self.cells):
                    self.cells.append((name, v, _identities(v), v.copy()))
        self.changed: list[tuple[str, Any]] = []

    def __enter__(self) -> ContainersKept:
        return self

    def __exit__(self, *exc) -> None:
        for name, v, ids, copy in self.cells:
            if _identities(v) == ids: continue
            self.changed.append((name, v))
            if isinstance(v, (dict, set)):
                v.clear()
                v.update(copy)
            else: v[:] = copy

    def refuse(self) -> NoReturn:
        name, v = self.changed[0]
        raise NumfnError(f"{self.what} runs compiled, but it changes {name!r}, a Python {type(v).__name__} from "
                         f"outside it (at {user_location()}); a compiled loop or branch is traced once, not once "
                         "per iteration or per side: write into a preallocated array instead (out[i] = ...), or "
                         "make the loop short and static so it runs as Python")


def _identities(v) -> tuple:
    """A container's items by identity (a traced value appended is a new object; items are not compared by value:
    a traced array's == is elementwise)."""
    if isinstance(v, bytearray): return (bytes(v),)
    if isinstance(v, dict): return tuple((id(k), id(x)) for k, x in v.items())
    return tuple(map(id, v))
