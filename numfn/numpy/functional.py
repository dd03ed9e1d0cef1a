"""NumPy's functions that apply the user's Python functions to arrays: vectorize, apply_along_axis, piecewise.

`vectorize` and `apply_along_axis` call a Python function once per element (per slice). numfn traces the function
once, on placeholders of one element's (one slice's) shape and type, into the graph of the function being traced,
and then gives that graph a leading batch axis of all the elements at once with vmap's batching rules (the table
of primitives, numfn.ir.primitives: numfn.transforms registers them). An `if` on an element's value is a branch on
a traced value (the function is converted as a helper is: numfn.trace.convert), which, batched, computes each
side and takes each element's own (a per-element select), as NumPy's loop over the elements would choose; a
`while` runs until every element's condition is false, each element keeping its own state. Checks the function
makes (an index out of bounds, ...) hold per element. Values from outside the function (a closure, a global, an
array of the caller) are read as they are.

`piecewise` is NumPy's own algorithm: each function is called on the selected elements (x[cond], an array of
run-time length) and its result written back (y[cond] = ...).

`frompyfunc`'s ufuncs make arrays of Python objects, which compiled code has no type for: calling one on traced
arrays is refused (numfn.trace.numpy_protocol), naming vectorize.
"""
from __future__ import annotations

import collections.abc
import math
import re
from typing import Any, cast
from collections.abc import Callable, Sequence

import numpy as np

from numfn.args import normalize_axis
from numfn.dtype import DType, dtypes
from numfn.errors import NumfnError, TracerConversionError, unsupported, user_location
from numfn.ir.primitives import PRIMITIVES
from numfn.ir.uop import Ops, UOp, fold, substitute
from numfn.trace.control import placeholder
from numfn.trace.convert import Runtime
from numfn.trace.record import Check, new_region_tag, recording_trace, tracing
from numfn.trace.statements import ContainersKept
from numfn.trace.tensor import Tensor, add_check, broadcast_shapes
from numfn.numpy.creation import as_strong, asarray, zeros_like
from numfn.numpy.manipulation import concatenate
from numfn.numpy.reductions import any as any_
from numfn.numpy._typing import ArrayLike

T = Tensor.lift

__all__ = ["vectorize", "apply_along_axis", "piecewise"]


# ---- tracing a function once for all elements -------------------------------------------------------------------

def map_examples(fn: Callable[..., Sequence[Any]], batched: Sequence[Tensor], weak: Sequence[bool],
                 what: str, user: Callable) -> list[Tensor]:
    """`fn` applied to every example of `batched` (arrays with one leading axis of the examples, the same length for
    all): the values it returns (a sequence of arrays or numbers), each with that leading axis. `fn` is traced once
    on placeholders of one example (weak ones stand for Python scalars, other 0-d ones for NumPy scalars) and the
    graph it gives is batched. `what` names the call in errors, `user` is the user's function `fn` calls (see
    trace_example)."""
    size = batched[0].shape[0]
    given, values, checks = trace_example(fn, [(b.shape[1:], b.uop.dtype, w) for b, w in zip(batched, weak)], what,
                                          user)
    mapped = {g: (b.uop, True) for g, b in zip(given, batched)}
    roots = [t.uop for t in values] + [u for c in checks for u in (c.failed, c.payload)]
    done = _batch(roots, mapped, size)
    for k, c in enumerate(checks):   # each element's checks: the first element that failed raises
        add_check(Tensor(done[2 * k + len(values)]), Tensor(done[2 * k + 1 + len(values)]), c.error)
    return [Tensor(u, weak=t.weak) for t, u in zip(values, done)]


def trace_example(fn: Callable[..., Sequence[Any]], examples: Sequence[tuple[tuple[int, ...], DType, bool]],
                  what: str, user: Callable) -> tuple[list[UOp], list[Tensor], list[Check]]:
    """`fn` (calling the user's function `user`) traced on placeholders of the examples' (shape, dtype, weak): (the
    placeholders, the values it returns, the checks it makes). Writes into arrays from outside it, or into its
    arguments, and changes of lists or dicts of `user`'s closure are refused (and undone)."""
    tag = new_region_tag()
    args = [Tensor(placeholder(tag, k, shape, dt), weak=w) for k, (shape, dt, w) in enumerate(examples)]
    given = [p.uop for p in args]
    with recording_trace(region=True) as rec, ContainersKept(what, user) as kept:
        assert rec.born is not None and rec.rebinds is not None   # a region's record has both
        rec.born.update(id(p) for p in args)
        try:
            out = fn(*args)
        except TracerConversionError as e:
            if type(e) is not TracerConversionError: raise
            raise TracerConversionError(f"{e} ({what} traces the function once, for every element at once: it "
                                        "computes with NumPy's operations, and its `if`s on values and math.* "
                                        "calls are statements of a def, which numfn converts; a lambda's "
                                        "conditional expression and calls are not)") from None
        finally:   # arrays from outside the function it wrote into get their values back (refused below)
            for t, old in rec.rebinds.values():
                if t.base is None: t.rebind(old, record=False)
    if kept.changed: kept.refuse()   # (a list it appends to would get one traced value, not one per element)
    if rec.rebinds:
        raise unsupported(f"{what} of a function that writes into an array from outside it", "NumPy would write "
                          "once per element; return the values instead and write them after the call")
    if any(p.uop is not g for p, g in zip(args, given)):
        raise unsupported(f"{what} of a function that writes into its argument", "work on a copy (v = v.copy())")
    values = []
    for v in out:
        try:
            t = T(v)
        except TypeError:
            raise TypeError(f"{what}: the function returns a {type(v).__name__}, which is not an array or a number "
                            f"(at {user_location()})") from None
        if t.runtime_length:
            raise unsupported(f"{what} of a function returning an array of run-time length (x[mask], nonzero)",
                              "each element's length may differ: return a mask instead")
        values.append(t)
    return given, values, rec.checks


def _batch(roots: list[UOp], mapped: dict[UOp, tuple[UOp, bool]], size: int) -> list[UOp]:
    """`roots` with the placeholders of `mapped` replaced by their batched values: every node reading one gets a
    leading batch axis of `size` (vmap's batching rules); each root is given that axis (broadcast if it reads
    none)."""
    inlined: dict[UOp, UOp] = {}   # a batched branch's LOOP -> the SINK of its one body over the LOOP's sources

    def visit(u: UOp, srcs: tuple) -> tuple[UOp, bool]:
        if u in mapped: return mapped[u]
        if not any(b for _, b in srcs):
            src = tuple(s for s, _ in srcs)
            return (u if src == u.src else UOp(u.op, u.dtype, src, u.arg)), False
        if u.op is Ops.RESULT and srcs[0][0] in inlined: return inlined[srcs[0][0]].src[u.arg], True
        rule = PRIMITIVES[u.op].batch
        if rule is None: raise NotImplementedError(f"no batching rule for {u.op.name} (numfn.transforms)")
        new = rule(u, list(srcs), size)
        if u.op is Ops.LOOP and u.arg.kind == "cond" and srcs[0][1]:
            # a branch on the element's value: batched, its one body computes every side and takes each element's
            # own; inlined, that select fuses with what surrounds it (no region, no buffers between)
            region = new.arg
            assert len(region.bodies) == 1 and not region.state
            given = {placeholder(region.tag, k, cast(tuple[int, ...], v.shape), v.dtype): v
                     for k, v in enumerate(new.src[1:])}
            inlined[new] = substitute(region.bodies[0], {c: given[c] for c in region.bodies[0].toposort()
                                                          if c.op is Ops.CARRY and c in given})
        return new, True

    done = fold(roots, visit)
    out = []
    for r in roots:
        u, b = done[r]
        assert u.shape is not None   # tensor-level values
        out.append(u if b else u.reshape((1,) + u.shape).expand((size,) + u.shape))
    return out


def _callee(fn: Any, what: str) -> Callable:
    if not callable(fn): raise TypeError(f"{what}: {type(fn).__name__!r} object is not callable")
    return Runtime.callee(fn)   # a function of the user's converted as a helper: its if/for/while on values trace


def _default_dtype(t: Tensor) -> np.dtype:
    """The dtype np.asarray gives the value: a Python scalar's default type (bool, int64, float64, complex128)."""
    return as_strong(t).dtype if t.weak else t.dtype


# ---- vectorize ------------------------------------------------------------------------------------------------------

_PYTHON_KIND = {"b": dtypes.bool, "i": dtypes.int64, "u": dtypes.int64, "f": dtypes.float64, "c": dtypes.complex128}


def _otypes(otypes) -> list[np.dtype] | None:
    if otypes is None: return None
    if isinstance(otypes, str):
        for char in otypes:
            if char not in np.typecodes["All"]: raise ValueError(f"Invalid otype specified: {char}")
        return [np.dtype(c) for c in otypes]
    if isinstance(otypes, collections.abc.Iterable): return [np.dtype(o) for o in otypes]
    raise ValueError("Invalid otype specification")


class vectorize:
    """NumPy's vectorize over traced arrays: `pyfunc` is called for every element of the broadcast arguments (as
    Python scalars, as NumPy gives them) and its results make arrays. numfn traces it once for all elements (see
    the module docstring). Without `otypes` the result's type is the one the traced function gives (NumPy takes
    the first element's: they differ only for a function whose result type depends on the values); `excluded`
    arguments are passed as they are; `signature` maps over the loop dimensions, giving the function arrays of its
    core dimensions. (Python ints are 64-bit in a trace: uint64 elements above 2**63 - 1 wrap.)"""

    def __init__(self, pyfunc: Callable | None = None, otypes=None, doc: str | None = None, excluded=None,
                 cache: bool = False, signature: str | None = None) -> None:
        self.pyfunc = pyfunc
        self.otypes = _otypes(otypes)
        self.excluded = set(excluded or ())
        self.cache = cache
        self.signature = signature
        self.core = _parse_signature(signature) if signature is not None else None
        self.__doc__ = doc if doc is not None else getattr(pyfunc, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.pyfunc is None:   # @vectorize(otypes=...) used as a decorator
            if len(args) != 1 or kwargs: raise TypeError("vectorize() missing its function")
            return vectorize(args[0], self.otypes, self.__doc__, self.excluded, self.cache, self.signature)
        pyfunc = self.pyfunc
        if not tracing():   # NumPy's, on NumPy's values
            return np.vectorize(pyfunc, self.otypes, self.__doc__, self.excluded, self.cache,
                                self.signature)(*args, **kwargs)
        fn = _callee(pyfunc, "numpy.vectorize")
        positions = [i for i in range(len(args)) if i not in self.excluded]
        names = [k for k in kwargs if k not in self.excluded]
        vargs = [args[i] for i in positions] + [kwargs[k] for k in names]
        if not vargs: return fn(*args, **kwargs)

        several: list[bool] = []   # whether the function returns a tuple (several outputs)

        def call(*values):
            a, kw = list(args), dict(kwargs)
            for i, v in zip(positions, values): a[i] = v
            for k, v in zip(names, values[len(positions):]): kw[k] = v
            out = fn(*a, **kw)
            several.append(isinstance(out, tuple))
            return out if isinstance(out, tuple) else (out,)

        if self.core is not None: return self._call_with_signature(call, vargs, several, pyfunc)
        ts = []
        for v in vargs:
            try:
                ts.append(T(v))
            except TypeError:
                raise TypeError(f"numpy.vectorize: an argument of type {type(v).__name__} is not an array or a "
                                "number; pass it through with excluded=") from None
        shape = broadcast_shapes(*(t.shape for t in ts))
        size = math.prod(shape)
        if size == 0:
            if self.otypes is None:
                raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` is set")
            outs = [T(np.zeros(shape, dt)).as_array() for dt in self.otypes]
            return outs[0] if len(outs) == 1 else tuple(outs)
        otypes = self.otypes
        if otypes is None:   # NumPy's: the types of the results for the first elements as NumPy scalars
            try:
                _, probe, _ = trace_example(call, [((), t.uop.dtype, False) for t in ts], "numpy.vectorize",
                                            pyfunc)
                otypes = [_default_dtype(r) for r in probe]
            except NumfnError:   # what numfn cannot trace on NumPy scalars (a loop changing a scalar's type):
                pass             # the types the Python scalars' trace gives
        # the values: NumPy hands the function each element as a Python scalar (bool, int, float, complex)
        batched = [Tensor(Tensor(t.uop.cast(_PYTHON_KIND[t.uop.dtype.kind]))._broadcast(shape)).reshape((size,))
                   for t in ts]
        several.clear()
        leaves = map_examples(call, batched, [True] * len(batched), "numpy.vectorize", pyfunc)
        if otypes is None: otypes = [_default_dtype(r) for r in leaves]
        nout = len(otypes)
        if len(leaves) != nout:
            raise ValueError(f"numpy.vectorize: the function returns {len(leaves)} values where {nout} are "
                             f"expected (at {user_location()})")
        outs = []
        for k, r in enumerate(leaves):
            if r.ndim != 1: raise ValueError("setting an array element with a sequence.")
            outs.append(Tensor(r.uop.cast(dtypes.from_numpy(otypes[k])).reshape(shape)).as_array())
        return tuple(outs) if several[0] else outs[0]

    def _call_with_signature(self, call: Callable, vargs: list, several: list[bool], pyfunc: Callable) -> Any:
        """NumPy's generalized vectorize: each argument's last dimensions are its core dimensions (named in the
        signature, equal wherever a name repeats); the others broadcast and are mapped over."""
        assert self.core is not None
        ins, outs_core = self.core
        if len(vargs) != len(ins):
            raise TypeError(f"wrong number of positional arguments: expected {len(ins)}, got {len(vargs)}")
        ts = [as_strong(v) for v in vargs]
        sizes: dict[str, int] = {}
        loops = []
        for t, dims in zip(ts, ins):
            if t.ndim < len(dims):
                raise ValueError(f"input with shape {t.shape!r} does not have enough dimensions for all core "
                                 f"dimensions {tuple(dims)!r}")
            for name, n in zip(dims, t.shape[t.ndim - len(dims):]):
                if sizes.setdefault(name, n) != n:
                    raise ValueError(f"inconsistent size for core dimension {name!r}: {n} vs {sizes[name]}")
            loops.append(t.shape[:t.ndim - len(dims)])
        loop = broadcast_shapes(*loops)
        size = math.prod(loop)
        if size == 0: raise unsupported("numpy.vectorize with signature= over arguments of size 0")
        batched = [Tensor(t.broadcast_to(loop + t.shape[len(lp):]).uop).reshape((size,) + t.shape[len(lp):])
                   for t, lp in zip(ts, loops)]
        leaves = map_examples(call, batched, [False] * len(batched), "numpy.vectorize", pyfunc)
        nout = len(outs_core)
        if len(leaves) != nout or (nout > 1) != several[0]:
            raise ValueError(f"wrong number of outputs from pyfunc: expected {nout}, got {len(leaves)}")
        results = []
        for k, (r, dims) in enumerate(zip(leaves, outs_core)):
            core = r.shape[1:]
            if len(core) != len(dims):
                raise ValueError(f"wrong number of dimensions for output {k}: expected {len(dims)}, got {len(core)}")
            for name, n in zip(dims, core):
                if sizes.setdefault(name, n) != n:
                    raise ValueError(f"inconsistent size for core dimension {name!r}: {n} vs {sizes[name]}")
            dt = self.otypes[k] if self.otypes is not None else _default_dtype(r)
            results.append(Tensor(r.uop.cast(dtypes.from_numpy(dt)).reshape(loop + core)).as_array())
        return results[0] if nout == 1 else tuple(results)


_DIM = r"\w+"
_CORE = rf"\((?:{_DIM}(?:,{_DIM})*)?\)"
_ARGS = rf"{_CORE}(?:,{_CORE})*"
_SIGNATURE = rf"^{_ARGS}->{_ARGS}$"


def _parse_signature(signature: str) -> tuple[list[list[str]], list[list[str]]]:
    """NumPy's gufunc signature '(m,n),(n)->(m)': the core dimension names of each input and output."""
    text = re.sub(r"\s+", "", signature)
    if not re.match(_SIGNATURE, text): raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = text.split("->")
    parse = lambda part: [re.findall(_DIM, arg) for arg in re.findall(_CORE, part)]   # noqa: E731
    return parse(ins), parse(outs)


# ---- apply_along_axis -----------------------------------------------------------------------------------------------

def apply_along_axis(func1d: Callable[..., Any], axis: int, arr: ArrayLike, *args: Any,
                     **kwargs: Any) -> Tensor | np.ndarray:
    """`func1d` applied to every 1-d slice of `arr` along `axis`; its results (of one shape) replace that axis,
    as NumPy's: traced once for all slices (see the module docstring)."""
    if not tracing(): return np.apply_along_axis(func1d, axis, arr, *args, **kwargs)   # NumPy's, on NumPy's values
    t = as_strong(arr)
    nd = t.ndim
    axis = normalize_axis(axis, nd)
    others = [i for i in range(nd) if i != axis]
    moved = t.transpose(others + [axis])
    outer = moved.shape[:-1]
    size = math.prod(outer)
    if size == 0: raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    fn = _callee(func1d, "numpy.apply_along_axis")
    batched = Tensor(moved.uop).reshape((size, moved.shape[-1]))
    res, = map_examples(lambda v: [asarray(fn(v, *args, **kwargs))], [batched], [False], "numpy.apply_along_axis",
                        func1d)
    core = res.shape[1:]
    out = Tensor(res.uop.cast(dtypes.from_numpy(_default_dtype(res)))).reshape(outer + core)
    dims = list(range(out.ndim))
    permute = dims[:axis] + dims[out.ndim - len(core):] + dims[axis:out.ndim - len(core)]
    return out.transpose(permute).copy()


# ---- piecewise ------------------------------------------------------------------------------------------------------

def piecewise(x: ArrayLike, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Tensor:
    """NumPy's piecewise: y = zeros_like(x); for each condition in turn, y[cond] = func(x[cond], *args, **kw) (or
    y[cond] = value for a value instead of a function); one more function than conditions is the default, where
    no condition holds. A later condition overrides an earlier one where both hold. The function is called on
    the selected elements, an array whose length is known when the program runs (it is called even when no
    element is selected, where NumPy skips the call)."""
    t = as_strong(x)
    n2 = len(funclist)
    scalar = np.isscalar(condlist) or (isinstance(condlist, Tensor) and condlist.is_scalar())
    if not scalar and isinstance(condlist, (Tensor, np.ndarray)) and condlist.ndim == 0:   # (NumPy's reads [0])
        raise IndexError("too many indices for array: array is 0-dimensional, but 1 were indexed")
    first = condlist[0] if not scalar and isinstance(condlist, (list, tuple, Tensor, np.ndarray)) and \
        len(condlist) else None
    if scalar or (not _array_like(first) and t.ndim != 0): condlist = [condlist]
    conds = asarray(condlist, dtype=np.bool_)
    n = len(conds)
    if n == n2 - 1:   # the "otherwise" condition
        conds = concatenate([conds, ~any_(conds, axis=0, keepdims=True)], axis=0)
        n += 1
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = zeros_like(t).as_array()
    for k, func in enumerate(funclist):
        cond = conds[k]
        if not callable(func):
            y[cond] = func
            continue
        vals = t[cond]
        if vals.runtime_length or vals.size > 0:
            y[cond] = _callee(func, "numpy.piecewise")(vals, *args, **kw)
    return y


def _array_like(v: Any) -> bool:
    """Whether NumPy's piecewise takes `condlist[0]` for a condition array (a list or an array; an element of a 1-d
    array is a scalar to it)."""
    return isinstance(v, (list, np.ndarray)) or (isinstance(v, Tensor) and v.ndim > 0)

