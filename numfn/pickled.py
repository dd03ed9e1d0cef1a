"""Objects pickled by value that come back as the same object in a process: jit functions sent to Dask workers.

A jit function that is not reachable under its module and name (bound under another name, made in a closure or in
`__main__`) pickles by value: its Python function and options. Unpickled naively, every copy is a new object that
traces and loads its code again; Dask unpickles a task's function once per task. Here the object pickled gets a
token (`token`), unique across processes, and `rebuild` returns the object this process already made under that
token (the most recently used `KEPT` are kept alive between tasks), else makes and remembers one.

    def __reduce__(self):
        return pickled.rebuild, (pickled.token(self), type(self), *arguments of type(self))
"""
from __future__ import annotations

import uuid
from typing import Any

from numfn.locks import lock

__all__ = ["token", "rebuild", "KEPT"]

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
