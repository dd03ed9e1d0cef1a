"""Locks a forked child gets back released, and a cached property that holds no lock shared between instances.

`os.fork()` copies only the calling thread into the child: a lock another thread held at that moment stays held in
the child, with no thread left to release it, and the child's first use of it waits forever. Every lock numfn
makes comes from `lock()` or `rlock()`, which register it; in a forked child each registered lock is reinitialized
(released) before the child runs anything else (runtime/cache.py, which loads without the rest of numfn, does the
same for its own locks). What a lock guarded is then as the vanished thread left it between
two Python operations, which numfn's locked sections are written to survive: a compilation stores its result only
when it finishes (a child that needs the function compiles it again), and shared tables change by single
assignments.

`cached_stage` is numfn's functools.cached_property. Python 3.11's cached_property holds one lock per attribute of
the class, shared by every instance, for the whole computation: threads compiling different functions wait for
each other at every stage, and a fork while any thread compiles leaves that lock held in the child, whose first
compilation then never returns (3.12 dropped the lock, and with it the guarantee that a value is computed once). A
cached_stage has a lock per instance and attribute, taken only while the value is missing: threads asking one
instance for one value compute it once, other instances never wait, and the lock is a registered one.

`file_lock(path)` is the lock between processes: processes compiling the same program into one cache directory
(Dask or multiprocessing workers started cold) take it around "look in the cache, else compile and store", so the
first compiles and the others wait and then load its entry.

A thread that forks while it holds one of these locks itself (nothing in numfn does, but a traced function could)
finds it released in the child; an RLock it holds is left as it is.
"""
from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar, overload

__all__ = ["lock", "rlock", "cached_stage", "file_lock"]

_registered: weakref.WeakSet = weakref.WeakSet()   # every live lock made here


def lock() -> threading.Lock:
    """A threading.Lock that a forked child finds released."""
    made = threading.Lock()
    _registered.add(made)
    return made


def rlock() -> threading.RLock:
    """A threading.RLock that a forked child finds released (unless the forking thread held it)."""
    made = threading.RLock()
    _registered.add(made)
    return made


# file locks (file_lock) this process holds, {path: descriptor}; and in a forked child, the paths the parent held at
# the fork: a thread of the parent holds each, and the child cannot know when it lets go (it may wait for the child)
_held_files: dict[str, int] = {}
_held_at_fork: set[str] = set()


def _reinit_after_fork() -> None:
    # the child's copies of the parent's lock descriptors would keep those locks held as long as the child lives
    # (a flock belongs to the open file, shared by both copies): closed, the parent's own close releases them
    for fd in _held_files.values():
        try: os.close(fd)
        except OSError: pass
    _held_at_fork.update(_held_files)
    _held_files.clear()
    for held in list(_registered):
        owned = getattr(held, "_is_owned", None)   # RLocks know their owner: the forking thread releases its own
        if owned is not None and owned(): continue
        reinit = getattr(held, "_at_fork_reinit", None)   # (Python 3.9+; what threading does for its own locks)
        if reinit is not None: reinit()


if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_reinit_after_fork)


_T = TypeVar("_T")
_LOCKS = "__numfn_stage_locks__"   # the instance's {attribute: lock} for values being computed


class cached_stage(Generic[_T]):
    """A cached property: computed on first access, then kept in the instance's __dict__ (later reads are plain
    attribute lookups). Threads asking for a missing value at once compute it once: a lock per instance and
    attribute, registered with this module so a forked child finds it released. An exception is not kept (the
    next access computes again)."""

    def __init__(self, func: Callable[[Any], _T]) -> None:
        self.func = func
        self.attrname: str | None = None
        self.__doc__ = func.__doc__
        self.__module__ = func.__module__

    def __set_name__(self, owner: type, name: str) -> None:
        self.attrname = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> cached_stage[_T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _T: ...

    def __get__(self, instance, owner=None):
        if instance is None: return self
        name = self.attrname
        assert name is not None, "cached_stage used outside a class body"
        values = instance.__dict__
        try:
            return values[name]
        except KeyError:
            pass
        locks = values.get(_LOCKS)
        if locks is None: locks = values.setdefault(_LOCKS, {})   # setdefault: one dict whoever gets here first
        held = locks.get(name)
        if held is None: held = locks.setdefault(name, rlock())
        with held:
            try:
                value = values[name]
            except KeyError:
                value = values[name] = self.func(instance)
        locks.pop(name, None)   # the value is there: later readers need no lock (a waiter still holds this one)
        return value


def _still_at(fd: int, path: str) -> bool:
    """Whether the open file `fd` is still the file named `path`."""
    try:
        opened, named = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (opened.st_dev, opened.st_ino) == (named.st_dev, named.st_ino)


@contextmanager
def file_lock(path: str, timeout: float = 600.0) -> Iterator[bool]:
    """Hold an exclusive advisory lock (flock) on the file `path`, created with mode 0600 if missing, while the block
    runs; yields True when held. The kernel releases it when its holder exits, even by a crash. After `timeout`
    seconds of waiting, or where the file cannot be opened or locked (no fcntl, a read-only directory), the block
    runs without it (yields False): the lock saves duplicate work, it never guards correctness. In a forked child, a
    lock a thread of the parent held at the fork is not waited for."""
    if path in _held_at_fork:   # (a thread of the parent held it at the fork: it may be waiting for this child)
        yield False
        return
    try:
        import fcntl
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
    except (ImportError, OSError):
        yield False
        return
    held = False
    try:
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if _still_at(fd, path):
                    held = True
                    break
                # `python -m numfn cache clear` deleted the file while this process waited for it: the lock of a
                # deleted file excludes no one, so the file now at `path` (or a new one) is locked instead
                stale, fd = fd, -1
                os.close(stale)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                             | getattr(os, "O_CLOEXEC", 0), 0o600)
                continue
            except BlockingIOError:
                if time.monotonic() >= deadline: break
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
            except OSError:
                break
        if held: _held_files[path] = fd
        yield held
    finally:
        if _held_files.get(path) == fd: del _held_files[path]
        if fd >= 0: os.close(fd)   # closing the descriptor releases the lock
