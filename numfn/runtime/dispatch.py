"""The fast call path: a C base type (`_numfn_dispatch.Dispatcher`, built with the package from `_dispatch.c`)
that runs registered native entries when a call's positional arguments match one, and calls
`self._dispatch_miss(*args, **kwargs)` otherwise.

    Base = dispatcher_base()          # the C Dispatcher, or PyDispatcher without the extension
    class JitFunction(Base):
        def _dispatch_miss(self, *args, **kwargs):
            ...                         # find or compile the specialization, then
            register_specialization(self, nf)   # the next call with these argument types takes the fast path
            return ...                  # run it the slow way this time

What matches an entry (see `_dispatch.c` for details): exactly `numpy.ndarray` (subclasses always miss, so the
Python path decides what they mean) of the registered dtype, native byte order, ndim and dims, in any layout
(non-contiguous or misaligned arrays are copied), but an array the function writes into only C-contiguous,
aligned, writeable and sharing no memory with the other arguments; exactly `float`, `int` (fitting int64; never
bool) or `bool` for Python scalars. Keyword arguments other than `out=` miss. `out=` takes preallocated outputs:
see `check_out`, which states the same rules for the Python path. A program's checks (numfn.trace.tensor.Check: an
index out of bounds, a Python int beyond 64 bits) are read by the fast path after the call, which raises their
error through `failed_checks`; outputs of a data-dependent length are cut by the entry's builder (`_cut_result`).

Without the extension (no C compiler when numfn was installed, or ``NUMFN_NO_DISPATCH_EXT=1``) `dispatcher_base()`
is `PyDispatcher` and every call takes the Python path; numfn.runtime.extensions warns once.
"""
from __future__ import annotations

import functools
from typing import Any

from numfn.runtime import extensions, threads

import numpy as np

_ndarray = np.ndarray
_SCALAR_KINDS = {float: "float", int: "int", bool: "bool"}   # the Python scalars an entry's argument may be

__all__ = ["byte_extent", "empty", "dispatcher_base", "PyDispatcher", "register_specialization", "registration",
           "fast_arg_specs", "result_builder", "check_out", "failed_checks", "RELEASE_GIL_BYTES"]

# entries whose inputs, outputs and scratch add up to this many bytes run without the GIL: their run time dwarfs the
# ~50 ns that releasing and taking it back costs, and other threads get to run meanwhile
RELEASE_GIL_BYTES = 1 << 16


class PyDispatcher:
    """The pure-Python stand-in for `_numfn_dispatch.Dispatcher`, with the same interface: a call whose positional
    arguments match a registered entry (the C type's rules: exactly numpy.ndarray of the dtype, native byte order
    and shape; exactly float, int within the entry's range, or bool) runs that entry's Python path (the
    NumericalFunction's `run`) directly, skipping the signature's computation; any other call goes to
    `self._dispatch_miss(*args, **kwargs)`. About 7 us a call of a small function, where computing the signature
    first costs some 50 us more (docs/cpu-jit.md)."""

    _python_entries: dict | None = None   # {argument key: (int ranges, run)}, made on first registration

    def __call__(self, *args, **kwargs):
        entries = self._python_entries
        if entries and (not kwargs or (len(kwargs) == 1 and "out" in kwargs)):
            key = []
            for a in args:
                kind = type(a)
                if kind is _ndarray:
                    dt = a.dtype
                    key.append((dt.num, a.shape) if dt.isnative else None)
                else:
                    key.append(_SCALAR_KINDS.get(kind))
            hit = entries.get(tuple(key))
            if hit is not None:
                ranges, run = hit
                if not ranges or all(lo <= args[slot] <= hi for slot, lo, hi in ranges):
                    return run(list(args), kwargs.get("out"))
        return self._dispatch_miss(*args, **kwargs)

    def _dispatch_miss(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} defines no _dispatch_miss")

    def _register(self, address: int, arg_specs: tuple, out_specs: tuple, constants: tuple = (),
                  keepalive: object = None, builder: object = None, release_gil: bool = False, *, checks: int = 0,
                  on_check: object = None, hidden: int = 0) -> None:
        """Accepted and ignored: a native address alone cannot run here (see `_register_python`)."""

    def _register_python(self, arg_specs: tuple, run) -> None:
        """Calls whose arguments match `arg_specs` (see `fast_arg_specs`) call `run(list(args), out)`."""
        key, ranges = [], []
        for slot, spec in enumerate(arg_specs):
            if spec[0] == "array": key.append((spec[1], spec[2]))
            else: key.append(spec[0])
            if spec[0] == "int":   # ("int",): any int64; ("int", lo, hi): the range the function narrows it to
                ranges.append((slot, *(spec[1:] if len(spec) == 3 else (-2**63, 2**63 - 1))))
        entries = dict(self._python_entries or {})   # replaced whole: a concurrent call sees the old or the new one
        entries[tuple(key)] = (tuple(ranges), run)
        self._python_entries = entries

    def _clear(self) -> None:
        """Drop every registered entry."""
        self._python_entries = None

    def _entries(self) -> int:
        """How many entries are registered."""
        return len(self._python_entries or ())


def dispatcher_base() -> type:
    """The base type of numfn's jit functions: `_numfn_dispatch.Dispatcher`, or `PyDispatcher` without the
    extension."""
    return extensions.dispatch.Dispatcher if extensions.dispatch is not None else PyDispatcher


def empty(shape: tuple, dtype) -> np.ndarray:
    """numpy.empty for a call's outputs: from the kept memory of earlier outputs when large (see `_dispatch.c`)."""
    if extensions.dispatch is None:
        import numpy as np
        return np.empty(shape, dtype)
    return extensions.dispatch._empty(shape, dtype)


# ---- what numfn registers ------------------------------------------------------------------------------------------

_WEAK_KINDS = {"float64": "float", "int64": "int", "bool": "bool"}


def fast_arg_specs(nf, leaves: bool = False) -> tuple | None:
    """The `arg_specs` of `_register` for a NumericalFunction, or None when its calls cannot take the fast path:
    keyword or nested arguments. Static arguments are not among them: a function with static arguments registers
    on the dispatcher of their values (numfn.function.BoundStatics), which takes the other arguments. A Python int
    the function converts to a narrower integer gets its range (nf.int_limits): values outside it miss, and the
    Python path raises OverflowError for them. With `leaves`, positional arguments may be containers: the specs
    are their leaves', for the dispatcher of one argument structure (numfn.function.BoundTree), called on them. An
    argument the function writes into is an array spec marked written (the C dispatcher then takes only a
    C-contiguous, writeable array sharing no memory with the other arguments)."""
    tree = nf.in_tree
    if tree.kind != "tuple" or len(tree.children) != 2: return None
    positional, keywords = tree.children
    if positional.kind != "tuple" or (not leaves and any(c.kind != "leaf" for c in positional.children)):
        return None
    if keywords.kind != "dict" or keywords.children: return None
    limits = nf.int_limits   # Python ints the function narrows: other values must raise
    specs: list[tuple[Any, ...]] = []   # ("int", lo, hi), ("float",), ("bool",) or ("array", type number, shape)
    for slot, s in enumerate(nf.in_specs):
        if s.value is not None: return None   # an int beyond int64, part of the program: the Python path checks it
        if s.weak:
            kind = _WEAK_KINDS.get(s.dtype.name)
            if kind is None or tuple(s.shape) != (): return None
            if kind == "int" and slot in limits:
                lo, hi = limits[slot]
                specs.append(("int", max(int(lo), -2**63), min(int(hi), 2**63 - 1)))
            else:
                specs.append((kind,))
        else:
            specs.append(("array", s.dtype.np.num, tuple(int(n) for n in s.shape)))
    for slot in nf.mutated_inputs:
        if specs[slot][0] != "array": return None   # (a Python number written into: the Python path's TypeError)
        specs[slot] = specs[slot] + (True,)
    return tuple(specs)


def result_builder(out_tree, nouts: int):
    """The `builder` of `_register` for an output structure: None when the Dispatcher's default (the single output,
    or the flat tuple of outputs) is right, else a function of the tuple of outputs."""
    if out_tree.kind == "leaf" and nouts == 1: return None
    if out_tree.kind == "tuple" and nouts != 1 and len(out_tree.children) == nouts \
            and all(c.kind == "leaf" for c in out_tree.children):
        return None
    from numfn.pytree import unflatten
    return functools.partial(unflatten, out_tree)


def register_specialization(dispatcher, nf, release_gil: bool | None = None) -> bool:
    """Register NumericalFunction `nf` (compiling it if need be) on `dispatcher` so that calls with its signature
    take the fast path. Returns False, registering nothing, when its calls cannot (see `fast_arg_specs`).
    `release_gil`: None decides by size (RELEASE_GIL_BYTES)."""
    found = nf.leaves_registration if getattr(dispatcher, "takes_leaves", False) else nf.fast_registration
    if found is None: return False
    if isinstance(dispatcher, PyDispatcher):   # without the extension: the Python path, without the signature's cost
        dispatcher._register_python(found[1], nf.run)
        return True
    threads.thread_count()   # configures the pool on first use: the fast path reads its slot at every call
    address, specs, outs, consts, keepalive, builder, checks, hidden, big = found
    gil = big if release_gil is None else bool(release_gil)
    extra: dict = {"hidden": hidden} if hidden else {}
    if checks: extra.update(checks=len(checks), on_check=functools.partial(failed_checks, checks))
    try:
        dispatcher._register(address, specs, outs, consts, keepalive, builder, gil, **extra)
    except (TypeError, ValueError):   # an extension built before these were read on the fast path: the Python path
        if not extra and not any(len(s) == 4 for s in specs): raise
        return False
    return True


def failed_checks(checks: tuple, values: tuple) -> None:
    """Raise the error of the first failed check; `values`: each check's failed flag and payload, in turn."""
    for k, c in enumerate(checks):
        if values[2 * k]: raise c.error(int(values[2 * k + 1]))


def registration(nf, leaves: bool = False) -> tuple | None:
    """The arguments of `Dispatcher._register` for NumericalFunction `nf` (address, arg specs, out specs, pointer
    constants, keepalive, builder, its checks, hidden, release_gil), or None when its calls cannot take the fast path.
    What it needs beyond the signature comes from the compiled program's manifest, so a warm process decides as a
    cold one. The checks' flags and payloads are the program's last outputs: the fast path keeps them in C scalars
    (each is 0-d), so only the function's own outputs are registered. `leaves`: see fast_arg_specs. Outputs of a
    data-dependent length (nf.cut_outputs: np.nonzero's) are registered with their lengths after them, which the
    builder cuts them to (`hidden`: outputs a caller cannot pass as out=)."""
    specs = fast_arg_specs(nf, leaves)
    if specs is None: return None
    prog = nf.compiled
    visible = nf.out_specs[:nf.out_tree.num_leaves]
    if any(tuple(shape) != () for shape, _ in nf.out_specs[len(visible):]): return None
    builder = result_builder(nf.out_tree, len(visible))
    hidden = 0
    if nf.cut_outputs:
        hidden = len(nf.cut_outputs)
        builder = functools.partial(_cut_result, nf.out_tree, nf.cut_outputs, len(visible))
        lengths_at = len(visible) + 2 * len(nf.checks)   # (the program's table: outputs, check slots, lengths)
        visible = visible + nf.out_specs[lengths_at:lengths_at + hidden]
    outs = tuple((dt.np.num, tuple(int(n) for n in shape)) for shape, dt in visible)
    nbytes = sum(_nbytes(shape, dt) for shape, dt in visible)
    nbytes += sum(_nbytes(s.shape, s.dtype) for s in nf.in_specs)
    nbytes += prog.manifest["arena_bytes"]
    return (prog.address, specs, outs, nf.pointer_constants, prog, builder, tuple(nf.checks), hidden,
            nbytes >= RELEASE_GIL_BYTES)


def _cut_result(out_tree, cuts: tuple, nout: int, outs: tuple):
    """The result of a call whose outputs `cuts` ((output, axis) pairs) have a data-dependent length: each cut to
    its length (the outputs after the first `nout`, in turn), then given the output structure."""
    kept = list(outs[:nout])
    for k, (i, ax) in enumerate(cuts):
        n = int(outs[nout + k])
        kept[i] = kept[i][:n] if ax == 0 else kept[i][(slice(None),) * ax + (slice(n),)]
    if out_tree.kind == "leaf": return kept[0]
    from numfn.pytree import unflatten
    return unflatten(out_tree, kept)


def _nbytes(shape, dt) -> int:
    n = dt.itemsize
    for d in shape: n *= int(d)
    return n


def check_out(out, out_specs, inputs=(), constants=()) -> list:
    """The Python path's `out=` check, with the fast path's rules and messages: `out` is one array (a single
    output) or a tuple of one array per output; each must be a numpy.ndarray of exactly the output's dtype and
    shape, C-contiguous, aligned, writeable, and share no memory with `inputs` (argument leaves; non-arrays are
    skipped), `constants` or the other outputs. `out_specs`: (shape, dtype) pairs (numfn DTypes or NumPy dtypes).
    Returns the output arrays as a list; raises TypeError (type, dtype) or ValueError (shape, layout, overlap)."""
    import numpy as np
    n = len(out_specs)
    if isinstance(out, tuple):
        if len(out) != n:
            raise ValueError(f"out= must be {n} array{'' if n == 1 else 's'} (a tuple of {n}), "
                             f"got a tuple of {len(out)}")
        outs = list(out)
    elif n == 1:
        outs = [out]
    else:
        raise TypeError(f"out= must be a tuple of {n} arrays (one per output), got {type(out).__name__}")
    for k, (o, (shape, dt)) in enumerate(zip(outs, out_specs)):
        dt = getattr(dt, "np", dt)
        dt = np.dtype(dt)
        shape = tuple(int(d) for d in shape)
        expected = f"expected a C-contiguous, writeable array of dtype {dt} and shape {shape}"
        if not isinstance(o, np.ndarray):
            raise TypeError(f"out[{k}] is of type {type(o).__name__}; {expected}")
        if o.dtype != dt or not o.dtype.isnative:
            raise TypeError(f"out[{k}] has dtype {o.dtype}; {expected}")
        if o.shape != shape:
            raise ValueError(f"out[{k}] has shape {o.shape}; {expected}")
        if not o.flags.c_contiguous:
            raise ValueError(f"out[{k}] is not C-contiguous; {expected}")
        if not o.flags.aligned:
            raise ValueError(f"out[{k}] is not aligned; {expected}")
        if not o.flags.writeable:
            raise ValueError(f"out[{k}] is read-only; {expected}")
        for j, a in enumerate(inputs):
            if isinstance(a, np.ndarray) and _overlap(o, a):
                raise ValueError(f"out[{k}] shares memory with input argument {j}; outputs must not overlap the inputs")
        for c, a in enumerate(constants):
            if _overlap(o, a):
                raise ValueError(f"out[{k}] shares memory with an array the function captured (pointer constant {c})")
        for m in range(k):
            if _overlap(o, outs[m]):
                raise ValueError(f"out[{k}] shares memory with out[{m}]")
    return outs


def byte_extent(a: np.ndarray) -> tuple[int, int]:
    """The byte addresses [lo, hi) an array's elements span ((0, 0) for an empty array)."""
    if a.size == 0: return 0, 0
    lo = hi = a.__array_interface__["data"][0]
    for n, s in zip(a.shape, a.strides):
        if s < 0: lo += (n - 1) * s
        else: hi += (n - 1) * s
    return lo, hi + a.itemsize


def _overlap(a, b) -> bool:
    alo, ahi = byte_extent(a)
    blo, bhi = byte_extent(b)
    return alo < ahi and blo < bhi and alo < bhi and blo < ahi
