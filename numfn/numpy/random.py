"""NumPy's random numbers inside compiled functions, never silently constant.

NumPy's random functions are not overridable: called while numfn traces a function they would run once, and their
numbers would become constants of the compiled program (every call returning the same "random" array). Instead:

- A `numpy.random.Generator` passed as an argument of a compiled function becomes a key at each call: numfn draws
  64 bits from it (advancing it, so the next call gives new numbers and a seeded generator reproduces them), and the
  function sees a `KeyedGenerator` whose methods (random, standard_normal, normal, uniform, integers) draw from
  numfn.random at run time. `np.random.default_rng(seed)` with a traced seed gives one too.
- Every other use of np.random while tracing raises a NumfnError: the module's functions (np.random.rand, normal,
  seed, default_rng() without a seed, ...) are wrapped for the duration of each trace (`trace_guard`), naming the
  line; and generators the function reaches (the legacy global one, and Generators or RandomStates in its globals,
  closure and defaults) are compared before and after tracing, naming the one that was drawn from.
- np.random.default_rng(seed) with a seed known while tracing (a Python int) is left to NumPy: its numbers are the
  same at every call in NumPy too, so NumPy computes them once and they are constants, exactly NumPy's values.

The numbers numfn draws are its own streams (Philox4x32-10 of counters, see numfn.random), not the Generator's.
"""
from __future__ import annotations

import functools
import os
import pickle
import types
import warnings
import weakref
from typing import Any, NamedTuple

import numpy as np

import numfn.random as nr
from numfn.errors import NumfnError, unsupported, user_location
from numfn.progress import other_threads_running
from numfn.trace.tensor import Tensor, broadcast_shapes
from numfn.locks import lock

__all__ = ["KeyedGenerator", "default_rng", "trace_guard", "generator_arguments", "RandomStateWarning"]

# draws made so far from each KeyedGenerator's key, by the key object's id while it is alive (arrays are not
# hashable)
_draws: dict[int, int] = {}
_draws_lock = lock()


class KeyedGenerator(NamedTuple):
    """A numpy.random.Generator inside a compiled function: the same methods, drawing from numfn.random with `key`
    (each call a fresh key: fold_in of the call's number). A NamedTuple, so a compiled function takes it as an
    argument (its key is the array argument)."""
    key: Any

    def _next_key(self):
        k = self.key
        with _draws_lock:
            n = _draws.get(id(k))
            if n is None:
                n = 0
                weakref.finalize(k, _draws.pop, id(k), None)
            _draws[id(k)] = n + 1
        return nr.fold_in(k, n)

    @staticmethod
    def _size(size, *params) -> tuple[int, ...]:
        """NumPy's result shape: size, or (size None) the parameters' broadcast shape."""
        if size is not None: return nr.normalize_shape(size)
        return broadcast_shapes(*(Tensor.lift(p).shape for p in params)) if params else ()

    def random(self, size=None, dtype=np.float64, out=None):
        """Uniform floats in [0, 1)."""
        if out is not None: raise unsupported("the out= argument of Generator.random")
        return nr.uniform(self._next_key(), self._size(size), dtype)

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        if out is not None: raise unsupported("the out= argument of Generator.standard_normal")
        return nr.normal(self._next_key(), self._size(size), dtype)

    def uniform(self, low=0.0, high=1.0, size=None):
        """low + (high - low) * u, u uniform in [0, 1) (float64: NumPy converts low and high to float64)."""
        shape = self._size(size, low, high)
        lo, hi = _float64(low), _float64(high)
        return lo + (hi - lo) * nr.uniform(self._next_key(), shape, np.float64)

    def normal(self, loc=0.0, scale=1.0, size=None):
        shape = self._size(size, loc, scale)
        return _float64(loc) + _float64(scale) * nr.normal(self._next_key(), shape, np.float64)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        """Integers in [low, high) ([low, high] with endpoint; [0, low) when high is None)."""
        if high is None: low, high = 0, low
        if endpoint: high = high + 1
        shape = self._size(size, low, high)
        return nr.integers(self._next_key(), shape, low, high, dtype)

    def __getattr__(self, name: str):
        if not name.startswith("_") and hasattr(np.random.Generator, name):
            raise unsupported(f"Generator.{name} on a generator passed to a compiled function",
                              "numfn draws random, standard_normal, normal, uniform and integers; see numfn.random "
                              "for the rest")
        raise AttributeError(f"'KeyedGenerator' object has no attribute '{name}'")


def _float64(x) -> Tensor:
    return Tensor.lift(x).astype(np.float64)


def default_rng(seed) -> KeyedGenerator:
    """A generator drawing from numfn.random with key(seed): seed is an integer, traced or not (unlike NumPy's,
    the numbers are numfn's streams, generated at run time)."""
    if seed is None:
        raise TypeError("numfn.numpy.random.default_rng needs a seed (numfn cannot draw fresh entropy at run time); "
                        "pass an integer, or a numpy Generator as an argument of the compiled function")
    return KeyedGenerator(nr.key(seed))


# ---- Generator arguments --------------------------------------------------------------------------------------
def generator_arguments(args: tuple, kwargs: dict, draw: bool = True) -> tuple[tuple, dict]:
    """A call's arguments with every numpy Generator (at any depth of tuples, lists and dicts) replaced by a
    KeyedGenerator of a key drawn from it now: 64 bits of its stream, so it advances by one draw per call. Without
    `draw` (to find the signature alone) the key is zeros and the generator is left as it is."""
    def convert(x):
        if isinstance(x, np.random.Generator):
            raw = int(x.bit_generator.random_raw()) if draw else 0
            return KeyedGenerator(np.array([raw >> 32, raw & 0xFFFFFFFF], np.uint32))
        if isinstance(x, np.random.RandomState):
            raise TypeError("a legacy numpy RandomState cannot be an argument of a compiled function: pass a "
                            "numpy Generator (np.random.default_rng(seed)) or a numfn.random key")
        if type(x) is tuple: return tuple(convert(v) for v in x)
        if type(x) is list: return [convert(v) for v in x]
        if type(x) is dict: return {k: convert(v) for k, v in x.items()}
        return x

    if not any(_holds_generator(x) for x in (*args, *kwargs.values())): return args, kwargs
    return tuple(convert(a) for a in args), {k: convert(v) for k, v in kwargs.items()}


def _holds_generator(x) -> bool:
    if isinstance(x, (np.random.Generator, np.random.RandomState)): return True
    if type(x) in (tuple, list): return any(_holds_generator(v) for v in x)
    if type(x) is dict: return any(_holds_generator(v) for v in x.values())
    return False


# ---- np.random while tracing ----------------------------------------------------------------------------------
_guard_lock = lock()
_guard_users = 0
_saved: dict[str, Any] = {}


def _wrap(name: str, original):
    """np.random.NAME for the time traces run: itself in threads that are not tracing, an error (or, for
    default_rng of a traced seed, a KeyedGenerator) in a thread that is."""
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        if not nr.is_tracing(): return original(*args, **kwargs)
        if name == "default_rng":
            seed = args[0] if args else kwargs.get("seed")
            if isinstance(seed, Tensor): return default_rng(seed)
            if seed is not None and not isinstance(seed, (np.random.Generator, np.random.BitGenerator,
                                                           np.random.SeedSequence)):
                return original(*args, **kwargs)   # a fixed seed: the same numbers at every call, in NumPy too
            raise NumfnError(
                f"numpy.random.default_rng({'' if seed is None else '...'}) inside a compiled function (at "
                f"{user_location()}) would draw its numbers once, while tracing, and the compiled function would "
                "return them at every call. Pass a numpy Generator as an argument (numfn draws a new key from it at "
                "each call), a seed as an argument, or use numfn.random with a key")
        raise NumfnError(
            f"numpy.random.{name} inside a compiled function (at {user_location()}) would run once, while tracing: "
            "its numbers would be constants of the compiled program. Use numfn.random with a key argument "
            "(numfn.random.uniform(key, shape), normal, integers, ...), or pass a numpy Generator as an argument")
    return wrapper


def _module_functions() -> dict[str, Any]:
    """np.random's functions (not its classes and submodules: wrapping a class would break isinstance checks that
    other threads make meanwhile)."""
    found = {}
    for name in dir(np.random):
        v = getattr(np.random, name)
        if not name.startswith("_") and callable(v) and not isinstance(v, (type, types.ModuleType)): found[name] = v
    return found


class trace_guard:
    """Context manager around tracing `fn`: np.random's functions raise in this thread, and generators `fn` reaches
    that change state while it runs are reported when it returns."""

    def __init__(self, fn):
        self.fn = fn

    def __enter__(self):
        global _guard_users
        with _guard_lock:
            if _guard_users == 0:
                for name, f in _module_functions().items():
                    _saved[name] = f
                    setattr(np.random, name, _wrap(name, f))
            _guard_users += 1
        nr.trace_depth.n = getattr(nr.trace_depth, "n", 0) + 1
        self.watched = [(where, g, _state(g)) for where, g in _reachable_generators(self.fn)]
        return self

    def __exit__(self, exc_type, exc, tb):
        global _guard_users
        nr.trace_depth.n -= 1
        with _guard_lock:
            _guard_users -= 1
            if _guard_users == 0:
                for name, f in _saved.items(): setattr(np.random, name, f)
                _saved.clear()
        if exc_type is not None: return
        for where, g, before in self.watched:
            if _state(g) == before: continue
            what = (f"{where} was drawn from while numfn traced {getattr(self.fn, '__qualname__', self.fn)}: its "
                    "numbers would be constants of the compiled program (NumPy gives new ones at every call). Use "
                    "numfn.random with a key argument, or pass a numpy Generator as an argument (numfn draws a new "
                    "key from it at each call)")
            if not other_threads_running(): raise NumfnError(what)
            # another thread may have drawn from it meanwhile: not certainly this function's doing
            warnings.warn(what + " (or another thread drew from it meanwhile)", RandomStateWarning, stacklevel=3)


def _after_fork_in_child() -> None:
    """A forked child has only the forking thread: the guards of other threads' traces are not the child's, and
    np.random gets its own functions back when the child's traces (if the forking thread was in one) end."""
    global _guard_users
    _guard_users = getattr(nr.trace_depth, "n", 0)
    if _guard_users == 0:
        for name, f in _saved.items(): setattr(np.random, name, f)
        _saved.clear()


if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_after_fork_in_child)


class RandomStateWarning(RuntimeWarning):
    """A generator a function reaches changed state while the function was traced, with other threads running: the
    function may have drawn numbers that became constants (in a single thread this is a NumfnError)."""


def _state(g) -> bytes:
    bitgen = g if isinstance(g, np.random.BitGenerator) else g.bit_generator if isinstance(g, np.random.Generator) \
        else g._bit_generator
    return pickle.dumps(bitgen.state)   # nested dicts of ints and arrays, compared whole


def _reachable_generators(fn) -> list[tuple[str, Any]]:
    """(description, generator) for the legacy global RandomState and every numpy Generator, RandomState or
    BitGenerator in the globals `fn` names, its closure and defaults, and those of the Python functions it names
    (one level of helpers at a time, transitively)."""
    kinds = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)
    found: dict[int, tuple[str, Any]] = {}
    legacy = getattr(np.random.mtrand, "_rand", None)
    if legacy is not None: found[id(legacy)] = ("numpy's global random generator (np.random.rand, normal, seed, ...)",
                                                legacy)
    seen: set[int] = set()
    todo = [fn]
    while todo:
        f = todo.pop()
        f = getattr(f, "__wrapped__", f)
        code = getattr(f, "__code__", None)
        if code is None or id(f) in seen: continue
        seen.add(id(f))
        values: list[tuple[str, Any]] = []
        g = getattr(f, "__globals__", {})
        for c in _codes(code):
            values += [(f"the global {n!r} of {f.__qualname__}", g[n]) for n in c.co_names if n in g]
        for n, cell in zip(code.co_freevars, getattr(f, "__closure__", None) or ()):
            try:
                values.append((f"the variable {n!r} of {f.__qualname__}'s closure", cell.cell_contents))
            except ValueError:
                pass
        values += [(f"a default argument of {f.__qualname__}", d) for d in (getattr(f, "__defaults__", None) or ())]
        for where, v in values:
            if isinstance(v, kinds): found.setdefault(id(v), (where, v))
            elif isinstance(v, types.FunctionType): todo.append(v)
    return list(found.values())


def _codes(code: types.CodeType):
    """A code object and those nested in it (lambdas, comprehensions, inner functions)."""
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType): yield from _codes(c)
