"""Compiler faults contained: native compilation that may abort runs in a child process.

LLVM reports internal errors (a failed assertion, `report_fatal_error`) by calling abort(), which would take the
user's process down with it. So on platforms with fork (Linux), LLVM compiles in a *compile server*: a child
forked from this process on the first compile, which already holds the initialized LLVM, reads sources from a pipe
and writes back object code. A crash kills only the server: the caller gets a `CompileError` with LLVM's message,
and the next compile forks a new server.

Why a server and not a fork per compile: a fresh child pays a copy-on-write fault for every page the compiler
writes, which measured about 10-25 ms per compile of a small program (a 20-45 ms compile); a server pays that
once and afterwards compiles as fast as in-process, and forking it costs 2-4 ms.

The server closes every file descriptor it inherited but its pipes (so it never keeps a user's pipe or socket
open), ignores Ctrl-C (the caller's interrupt stops waiting and discards the server instead), and exits when its
request pipe closes, i.e. when this process exits or dies. A process forked from this one (multiprocessing) starts
a server of its own. Where fork is missing, or NUMFN_CONTAIN=0, compilation runs in-process.
"""
from __future__ import annotations

import os
import struct
import sys
import warnings
from collections.abc import Callable

from numfn.errors import CompileError
from numfn.locks import lock

_HEADER = struct.Struct("<BQ")   # status (0 ok, 1 an exception's text), payload length


def enabled() -> bool:
    """Whether compilation is contained in a child process: where fork exists, unless NUMFN_CONTAIN=0."""
    from numfn import config
    return hasattr(os, "fork") and sys.platform.startswith("linux") and config.contained_compiles()


class _Server:
    """One forked child running `work(source) -> bytes` on request, after `warm()` (if given): a server started
    before the caller needs it initializes the compiler while the caller does other work."""
    req: int | None    # the pipes and the stderr file, None once closed (a memfd may not exist at all)
    resp: int | None
    log: int | None

    def __init__(self, work: Callable[[str], bytes], warm: Callable[[], object] | None = None):
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        log = os.memfd_create("numfn-compiler-stderr") if hasattr(os, "memfd_create") else None
        with warnings.catch_warnings():   # Python 3.12+ warns about fork in a threaded process; see _serve
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:   # the child: never returns
            try:
                _serve(work, warm, req_r, resp_w, log)
            finally:
                os._exit(70)
        os.close(req_r)
        os.close(resp_w)
        self.pid, self.owner, self.req, self.resp, self.log = pid, os.getpid(), req_w, resp_r, log

    def request(self, source: str) -> bytes:
        data = source.encode()
        assert self.req is not None and self.resp is not None, "request to a closed compile server"
        if self.log is not None:
            os.ftruncate(self.log, 0)
            os.lseek(self.log, 0, os.SEEK_SET)   # the server's stderr shares this offset
        _write_all(self.req, struct.pack("<Q", len(data)) + data)
        head = _read_exact(self.resp, _HEADER.size)
        if head is None: raise self._died()
        status, n = _HEADER.unpack(head)
        payload = _read_exact(self.resp, n)
        if payload is None: raise self._died()
        if status: raise CompileError(payload.decode(errors="replace"))
        return payload

    def _died(self) -> CompileError:
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        if os.WIFSIGNALED(status):
            import signal
            how = f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
        else:
            how = f"exited with status {os.WEXITSTATUS(status)}"
        detail = ""
        if self.log is not None:
            os.lseek(self.log, 0, os.SEEK_SET)
            detail = os.read(self.log, 1 << 16).decode(errors="replace").strip()
        self.close()
        return CompileError(f"the compiler {how}" + (f":\n{detail}" if detail else ""))

    def close(self) -> None:
        """Stop using the server: closing its request pipe makes it exit."""
        for fd in (self.req, self.resp, self.log):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.req = self.resp = self.log = None
        if self.pid and self.owner == os.getpid():
            try:
                os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                pass
        self.pid = 0


def _serve(work: Callable[[str], bytes], warm: Callable[[], object] | None, req: int, resp: int,
           log: int | None) -> None:
    """The server's loop. Only the forking thread exists here; it uses nothing another thread of the parent could
    have held locked at the fork but the LLVM state the caller's lock guarded."""
    import gc
    import signal
    gc.disable()   # file objects of the parent whose descriptors are closed below must never be finalized here
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if log is not None: os.dup2(log, 2)
    keep = sorted({0, 1, 2, req, resp})
    for lo, hi in zip(keep, keep[1:] + [os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1 << 16]):
        if hi > lo + 1: os.closerange(lo + 1, hi)
    if warm is not None:
        try:
            warm()
        except Exception:
            pass   # the first request meets the same error and reports it
    while True:
        head = _read_exact(req, 8)
        if head is None: os._exit(0)   # the parent is gone, or stopped using this server
        source = _read_exact(req, struct.unpack("<Q", head)[0])
        if source is None: os._exit(0)
        try:
            status, payload = 0, work(source.decode())
        except Exception as e:   # an error the compiler reports normally (a parse or verifier error)
            status, payload = 1, f"{type(e).__name__}: {e}".encode()
        try:
            _write_all(resp, _HEADER.pack(status, len(payload)) + payload)
        except OSError:
            os._exit(0)


def _read_exact(fd: int, n: int) -> bytes | None:
    parts, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk: return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


_servers: dict[Callable, _Server] = {}
_lock = lock()


def start(work: Callable[[str], bytes], warm: Callable[[], object] | None = None) -> None:
    """Make sure a compile server for `work` runs (forked now if there is none), without waiting for it."""
    if not enabled(): return
    with _lock:
        _server(work, warm)


def _server(work: Callable[[str], bytes], warm: Callable[[], object] | None) -> _Server:
    server = _servers.get(work)
    if server is None or server.owner != os.getpid():
        server = _servers[work] = _Server(work, warm)
    return server


def run(work: Callable[[str], bytes], source: str, warm: Callable[[], object] | None = None) -> bytes:
    """`work(source)` computed where a crash cannot take this process down: in the compile server for `work`
    (started on first use), or in-process where containment is unavailable. Raises CompileError when `work`
    raises or the server dies."""
    if not enabled(): return work(source)
    with _lock:
        server = _server(work, warm)
        try:
            return server.request(source)
        except CompileError:
            if not server.pid: del _servers[work]   # it died: the next compile forks a new one
            raise
        except BaseException:   # an interrupt or an I/O error mid-request: the pipes may be out of step
            server.close()
            del _servers[work]
            raise


def _forget_after_fork() -> None:
    """In a child forked from this process: the servers belong to the parent (their pipes are shared with it), so
    the child closes its copies and starts its own when it compiles."""
    for server in _servers.values():
        server.pid = 0
        server.close()
    _servers.clear()   # (_lock, which a thread may have held at the fork, is released by numfn.locks)


if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_forget_after_fork)
