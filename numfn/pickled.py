"""Objects pickled by value that come back as the same object in a process: jit functions sent to Dask workers.

A jit function that is not reachable under its module and name (bound under another name, made in a closure or in
`__main__`) pickles by value: its Python function and options. Unpickled naively, every copy is a new object that
traces and loads its code again; Dask unpickles a task's function once per task. Here the object pickled gets a
token (`token`), unique across processes, and `rebuild` returns the object this process already made under that
token (the most recently used `KEPT` are kept alive between tasks), else makes and remembers one.

    def __reduce__(self):
        return pickled.rebuild, (pickled.token(self), type(self), *arguments of type(self))

The Python function travels with its source (`source_of`, given to `rebuild_with_source`): cloudpickle, which Dask
uses, pickles a function of `__main__` by value with its code's file name replaced by "<dynamic-code>", so a worker
could not read its source, numfn could not convert its loops and branches (numfn.trace.convert) and would trace
another program than the client's: loops unrolled, a longer compilation, and another disk cache entry. The worker
puts the source back under the original file name (in linecache) before it makes the object.
"""
from __future__ import annotations

import inspect
import linecache
import re
import uuid
from typing import Any

from numfn.locks import lock

__all__ = ["token", "rebuild", "rebuild_with_source", "source_of", "KEPT"]

KEPT = 128   # objects kept alive by their token, most recently used first out of the way last
_by_token: dict[str, Any] = {}
_lock = lock()
_ATTRIBUTE = "_numfn_pickle_token"


def _remember(name: str, obj: Any) -> None:
    _by_token.pop(name, None)
    _by_token[name] = obj   # last in the dict's order: the most recently used
    while len(_by_token) > KEPT: del _by_token[next(iter(_by_token))]


def token(obj: Any) -> str:
    """`obj`'s token, given (and `obj` remembered under it) on first use; kept in the object's __dict__."""
    name = obj.__dict__.get(_ATTRIBUTE)
    if name is not None: return name
    with _lock:
        name = obj.__dict__.setdefault(_ATTRIBUTE, uuid.uuid4().hex)
        _remember(name, obj)
    return name


def rebuild(name: str, cls: type, *arguments: Any) -> Any:
    """The object remembered under token `name` in this process, else `cls(*arguments)`, remembered under it."""
    with _lock:
        obj = _by_token.get(name)
        if obj is None:
            obj = cls(*arguments)
            obj.__dict__[_ATTRIBUTE] = name
        _remember(name, obj)
        return obj


_DEF_LINE = re.compile(r"^\s*(@|def\s|async\s+def\s)")


def source_of(fn: Any) -> tuple[str, int, list[str]] | None:
    """(file name, first line number, the lines of its def) of Python function `fn`, or None where they cannot be
    read (a lambda in an expression, no source file): what `rebuild_with_source` needs to put them back."""
    code = getattr(fn, "__code__", None)
    if code is None: return None
    lines = linecache.getlines(code.co_filename)
    first = code.co_firstlineno
    if not (0 < first <= len(lines) and _DEF_LINE.match(lines[first - 1])): return None
    return code.co_filename, first, list(inspect.getblock(lines[first - 1:]))


def _restore_source(fn: Any, source: tuple[str, int, list[str]]) -> None:
    filename, first, block = source
    code = getattr(fn, "__code__", None)
    if code is None or not isinstance(filename, str) or not isinstance(first, int) or first < 1: return
    if code.co_filename != filename:   # cloudpickle's "<dynamic-code>"
        try:
            fn.__code__ = code.replace(co_filename=filename)
        except (AttributeError, TypeError, ValueError):
            return
    lines = linecache.getlines(filename)
    if lines[first - 1:first - 1 + len(block)] != block:
        # the lines the function was compiled from, at their line numbers (blank lines before them); no mtime, so
        # linecache.checkcache keeps them
        padded = ["\n"] * (first - 1) + list(block)
        linecache.cache[filename] = (sum(map(len, padded)), None, padded, filename)


def rebuild_with_source(name: str, source: tuple[str, int, list[str]] | None, cls: type, fn: Any,
                        *arguments: Any) -> Any:
    """`rebuild(name, cls, fn, *arguments)`, with Python function `fn`'s source (from `source_of` in the pickling
    process) put back first where this process cannot read it."""
    with _lock:
        known = _by_token.get(name)
    if known is None and source is not None: _restore_source(fn, source)
    return rebuild(name, cls, fn, *arguments)
