"""Regressions of the runtime (issue 29): fork while other threads compile or run kernels, the perf map's file,
cache entries whose object does not load, keyword calls and the order of returned dicts."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
import traceback
import warnings

import numpy as np
import pytest

import numfn
import numfn.runtime
from helpers import assert_same

CHILD_TIMEOUT = 120   # seconds a forked child may take (the machine may be busy) before it is killed


# ---- 10. fork while other threads compile or run ------------------------------------------------------------------

def run_forked(work, timeout: float = CHILD_TIMEOUT):
    """work() run in a child forked from this process (and its threads' state): what it returns (JSON), or the
    failure. The child can never hang the suite: an alarm kills it, and the parent kills it at the deadline."""
    r, w = os.pipe()
    with warnings.catch_warnings():   # Python 3.12+ warns about fork in a process with threads: that is the test
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:   # the child: never returns into pytest
        status = 1
        try:
            os.close(r)
            signal.alarm(int(timeout) + 5)   # the default action of SIGALRM ends the process
            try:
                out = {"ok": True, "value": work()}
                status = 0
            except BaseException:   # noqa: BLE001 - reported to the parent
                out = {"ok": False, "error": traceback.format_exc()}
            data = json.dumps(out).encode()
            while data: data = data[os.write(w, data):]
        finally:
            os._exit(status)
    os.close(w)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done: break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            pytest.fail(f"the forked child did not finish within {timeout} s (a lock held for good?)")
        time.sleep(0.02)
    with os.fdopen(r, "rb") as f:
        raw = f.read()
    assert raw, f"the forked child died without reporting (status {status})"
    out = json.loads(raw)
    assert out["ok"], out["error"]
    return out["value"]


def child_compiles(backend: str) -> list:
    """In a forked child: compile and run a function this process never saw, and report its result."""
    k = np.random.default_rng().integers(1 << 30)   # a new program: not in the disk cache, so it really compiles
    f = numfn.jit(lambda a: a * 2.0 + float(k), backend=backend)
    x = np.arange(5.0)
    got = f(x)
    assert_same(got, x * 2.0 + float(k))
    return got.tolist()


class Blocker:
    """A point a thread of the parent stops at (and waits until released): `inside` is set once it got there. Other
    processes (a forked child) and other threads pass through."""

    def __init__(self):
        self.inside, self.release = threading.Event(), threading.Event()
        self.pid, self.thread = os.getpid(), None

    def __call__(self):
        if os.getpid() != self.pid or threading.current_thread() is not self.thread: return
        self.inside.set()
        assert self.release.wait(CHILD_TIMEOUT)

    def start(self, target) -> list:
        results: list = []

        def run():
            try:
                results.append(target())
            except BaseException as e:   # noqa: BLE001 - the test checks
                results.append(e)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.inside.wait(CHILD_TIMEOUT), "the thread never got to the blocking point"
        return results

    def finish(self, results: list):
        self.release.set()
        self.thread.join(CHILD_TIMEOUT)
        assert not self.thread.is_alive()
        assert len(results) == 1 and not isinstance(results[0], BaseException), results
        return results[0]


def test_fork_while_another_thread_traces(backend):
    blocker = Blocker()

    def fn(x):
        blocker()   # the thread is inside the trace: it holds the function's locks
        return np.sin(x) + 1.0

    f = numfn.jit(fn, backend=backend)
    x = np.linspace(0, 1, 7)
    results = blocker.start(lambda: f(x))
    assert hasattr(np.zeros, "__numfn_original__") and hasattr(np.random.rand, "__wrapped__")   # while tracing
    try:
        def child():
            # the trace under way is the parent's thread's: NumPy's own functions are back in the child
            assert not hasattr(np.zeros, "__numfn_original__") and not hasattr(np.random.rand, "__wrapped__")
            out = child_compiles(backend)
            assert_same(f(x), np.sin(x) + 1.0)   # the function the parent's thread was tracing compiles here too
            assert not hasattr(np.zeros, "__numfn_original__") and not hasattr(np.random.rand, "__wrapped__")
            return out
        run_forked(child)
    finally:
        got = blocker.finish(results)
    assert_same(got, np.sin(x) + 1.0)


def test_fork_while_another_thread_compiles_native_code(backend, monkeypatch):
    """The thread waits inside the backend's compiler call (for LLVM: holding the compile server's lock)."""
    from numfn.runtime import clang, contain
    blocker = Blocker()
    if backend == "llvm":
        request = contain._Server.request
        monkeypatch.setattr(contain._Server, "request", lambda self, source: (blocker(), request(self, source))[1])
    else:
        compile_c = clang.compile_object
        monkeypatch.setattr(clang, "compile_object", lambda source: (blocker(), compile_c(source))[1])
    k = float(np.random.default_rng().integers(1 << 30))
    f = numfn.jit(lambda x: np.cos(x) * k, backend=backend)
    x = np.linspace(0, 1, 9)
    results = blocker.start(lambda: f(x))
    try:
        def child():
            out = child_compiles(backend)
            assert_same(f(x), np.cos(x) * k)
            return out
        run_forked(child)
    finally:
        got = blocker.finish(results)
    assert_same(got, np.cos(x) * k)


def test_a_forked_child_neither_waits_for_nor_keeps_its_parents_file_locks(tmp_path):
    """A cache file lock (numfn.locks.file_lock: processes compiling one program take turns) held by a thread of the
    parent at a fork: the child does not wait for it (the parent's thread may be waiting for the child), and the
    child's copy of its descriptor is closed, so the parent's release frees it while the child lives on."""
    from numfn.locks import file_lock
    path = str(tmp_path / "program.lock")
    holding, release, released = threading.Event(), threading.Event(), []

    def hold():
        with file_lock(path) as held:
            assert held
            holding.set()
            release.wait(30)
        released.append(True)

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    assert holding.wait(30)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: takes the lock without waiting, then lives on while the parent releases its own
        try:
            with file_lock(path, timeout=30) as held:
                os.write(w, b"0" if held else b"1")
            time.sleep(3)
        finally:
            os._exit(0)
    try:
        assert os.read(r, 1) == b"1"   # it ran without the lock, at once
        release.set()
        t.join(30)
        start = time.monotonic()
        with file_lock(path, timeout=2) as held:   # free while the child still lives
            assert held and time.monotonic() - start < 1.5
    finally:
        os.waitpid(pid, 0)
        os.close(r)
        os.close(w)


def test_fork_while_another_thread_compiles_in_process(monkeypatch):
    """Without the compile server LLVM runs in this process: a fork waits until no thread is inside LLVM, so the
    child never inherits its state half-changed."""
    from numfn.runtime import orcjit as llvm
    monkeypatch.setenv("NUMFN_CONTAIN", "0")
    inside, compiled = threading.Event(), []
    original = llvm._compile_object

    def slow_compile(source):
        inside.set()
        time.sleep(0.3)
        out = original(source)
        compiled.append(time.monotonic())
        return out

    monkeypatch.setattr(llvm, "_compile_object", slow_compile)
    k = float(np.random.default_rng().integers(1 << 30))
    f = numfn.jit(lambda x: np.tanh(x) - k, backend="llvm")
    x = np.linspace(-1, 1, 5)
    results: list = []
    t = threading.Thread(target=lambda: results.append(f(x)), daemon=True)
    t.start()
    assert inside.wait(CHILD_TIMEOUT)

    def child():
        assert len(compiled) == 1   # the fork waited for the thread's compile to leave LLVM
        return child_compiles("llvm")
    run_forked(child)
    t.join(CHILD_TIMEOUT)
    assert_same(results[0], np.tanh(x) - k)


def test_fork_while_another_thread_runs_parallel_kernels(backend):
    numfn.set_num_threads(2)   # the pool's workers run in the parent, not in the child
    f = numfn.jit(lambda a: np.sqrt(a) * 3.0 + np.sin(a), backend=backend)
    x = np.random.default_rng(0).random(1 << 20)
    want = np.sqrt(x) * 3.0 + np.sin(x)
    assert_same(f(x), want)
    stop, calls, errors = threading.Event(), [0], []

    def loop():
        try:
            while not stop.is_set():
                assert_same(f(x), want)
                calls[0] += 1
        except BaseException as e:   # noqa: BLE001 - checked below
            errors.append(e)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        while calls[0] < 2 and not errors: time.sleep(0.005)

        def child():
            for _ in range(3): assert_same(f(x), want)   # the pool starts its workers again
            g = numfn.jit(lambda a: a * a - 1.0, backend=backend)
            assert_same(g(x), x * x - 1.0)
            return child_compiles(backend)
        run_forked(child)
    finally:
        stop.set()
        t.join(CHILD_TIMEOUT)
    assert not errors and calls[0] >= 2
    assert_same(f(x), want)


def test_fork_after_compiling(backend):
    f = numfn.jit(lambda a, b: a @ b + 1.0, backend=backend)
    a = np.arange(12.0).reshape(3, 4)
    b = np.ones((4, 2))
    assert_same(f(a, b), a @ b + 1.0)

    def child():
        assert_same(f(a, b), a @ b + 1.0)   # the fast path, as registered in the parent
        assert_same(f(a[:2], b), a[:2] @ b + 1.0)   # a new signature compiles
        return child_compiles(backend)
    run_forked(child)
    assert_same(f(a, b), a @ b + 1.0)


def test_a_thread_inside_a_compile_does_not_stop_others_compiling(backend):
    """Python 3.11's cached_property held one lock per stage for every instance: a thread tracing one function kept
    every other thread from tracing any other."""
    blocker = Blocker()

    def slow(x):
        blocker()
        return x - 1.0

    f = numfn.jit(slow, backend=backend)
    x = np.arange(4.0)
    results = blocker.start(lambda: f(x))
    try:
        other: list = []
        t = threading.Thread(target=lambda: other.append(numfn.jit(lambda a: a + 2.0, backend=backend)(x)),
                             daemon=True)
        t.start()
        t.join(CHILD_TIMEOUT)
        assert not t.is_alive(), "another function's compilation waited for the blocked one"
        assert_same(other[0], x + 2.0)
    finally:
        got = blocker.finish(results)
    assert_same(got, x - 1.0)


def test_threads_asking_one_specialization_compile_it_once(backend):
    k = float(np.random.default_rng().integers(1 << 30))
    nf = numfn.jit(lambda x: np.exp(x) / k, backend=backend).specialize(np.zeros(6))
    before = numfn.runtime.compile_count
    barrier = threading.Barrier(4)
    runs: list = []

    def ask():
        barrier.wait()
        runs.append(nf.run)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads: t.start()
    for t in threads: t.join(CHILD_TIMEOUT)
    assert len(runs) == 4 and all(r is runs[0] for r in runs)
    assert numfn.runtime.compile_count - before == 1
    x = np.linspace(0, 1, 6)
    assert_same(nf(x), np.exp(x) / k)


def test_locks_are_released_in_a_forked_child():
    from numfn import locks
    plain, reentrant, mine = locks.lock(), locks.rlock(), locks.rlock()
    taken, done = threading.Event(), threading.Event()

    def hold():
        with plain, reentrant:
            taken.set()
            done.wait(CHILD_TIMEOUT)

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    assert taken.wait(CHILD_TIMEOUT)
    try:
        with mine:
            def child():
                assert plain.acquire(timeout=5) and reentrant.acquire(timeout=5)   # the other thread's: released
                mine.release()   # the forking thread's own: still held by it
                return True
            assert run_forked(child)
    finally:
        done.set()
        t.join(CHILD_TIMEOUT)


def test_cached_stage_computes_once_and_keeps_no_lock():
    from numfn.locks import cached_stage
    calls = []

    class Staged:
        @cached_stage
        def value(self):
            calls.append(1)
            time.sleep(0.05)
            return object()

    s = Staged()
    got: list = []
    threads = [threading.Thread(target=lambda: got.append(s.value)) for _ in range(4)]
    for t in threads: t.start()
    for t in threads: t.join(CHILD_TIMEOUT)
    assert len(calls) == 1 and len(got) == 4 and all(g is got[0] for g in got)
    assert not s.__dict__.get("__numfn_stage_locks__")   # the lock goes once the value is there
    assert Staged().value is not got[0] and len(calls) == 2


# ---- 11. the perf map: written only when asked, never through a link, private --------------------------------------

@pytest.fixture
def perf_map(tmp_path, monkeypatch):
    """The perf map's path moved into a private directory (the name numfn uses is /tmp/perf-<pid>.map), and a
    program to list in it."""
    path = tmp_path / "perf-1234.map"
    monkeypatch.setattr(numfn.runtime, "perf_map_path", lambda: str(path))
    monkeypatch.setenv("NUMFN_PERF_MAP", "1")
    f = numfn.jit(lambda x: x * 3.0 - 1.0)
    f(np.ones(3))
    return path, f.specializations[0].compiled


def test_no_perf_map_unless_asked(tmp_path, monkeypatch):
    path = tmp_path / "perf.map"
    monkeypatch.setattr(numfn.runtime, "perf_map_path", lambda: str(path))
    monkeypatch.delenv("NUMFN_PERF_MAP", raising=False)
    monkeypatch.setenv("NUMFN_DEBUG", "1")   # debugging output alone writes none
    k = float(np.random.default_rng().integers(1 << 30))
    numfn.jit(lambda x: x + k)(np.ones(2))
    assert not path.exists()
    monkeypatch.setenv("NUMFN_PERF_MAP", "0")
    numfn.jit(lambda x: x - k)(np.ones(2))
    assert not path.exists()
    monkeypatch.setenv("NUMFN_PERF_MAP", "1")
    monkeypatch.delenv("NUMFN_DEBUG")
    numfn.jit(lambda x: x * k)(np.ones(2))
    assert path.exists() and "<lambda>(float64[2])" in path.read_text()


def test_the_perf_map_is_private(perf_map):
    path, code = perf_map
    old = os.umask(0)   # whatever the umask lets through
    try:
        path.unlink()
        numfn.runtime.write_perf_map(code, "first")
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == 0o600
    os.chmod(path, 0o644)   # one an older numfn left readable: private again, and appended to
    numfn.runtime.write_perf_map(code, "second")
    assert os.stat(path).st_mode & 0o777 == 0o600
    text = path.read_text()
    assert " numfn first" in text and " numfn second" in text


@pytest.mark.parametrize("target_exists", [True, False])
def test_a_planted_symlink_is_not_followed(perf_map, tmp_path, target_exists):
    path, code = perf_map
    path.unlink()
    target = tmp_path / "victim"
    if target_exists: target.write_text("precious\n")
    os.symlink(target, path)
    with pytest.warns(RuntimeWarning, match="symbolic link"):
        numfn.runtime.write_perf_map(code, "label")
    assert os.path.islink(path)
    if target_exists: assert target.read_text() == "precious\n"
    else: assert not target.exists()


def test_a_planted_hard_link_fifo_or_directory_is_refused(perf_map, tmp_path):
    path, code = perf_map
    path.unlink()
    target = tmp_path / "mine"
    target.write_text("precious\n")
    os.link(target, path)
    with pytest.warns(RuntimeWarning, match="hard link"):
        numfn.runtime.write_perf_map(code, "label")
    assert target.read_text() == "precious\n"
    path.unlink()
    os.mkfifo(path)   # no reader: opening it for writing would block
    with pytest.warns(RuntimeWarning, match="FIFO"):
        numfn.runtime.write_perf_map(code, "label")
    path.unlink()
    path.mkdir()
    with pytest.warns(RuntimeWarning, match="perf map"):
        numfn.runtime.write_perf_map(code, "label")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to plant another user's file")
def test_another_users_perf_map_is_refused(perf_map):
    path, code = perf_map
    path.write_text("theirs\n")
    os.chown(path, 12345, 12345)
    with pytest.warns(RuntimeWarning, match="uid 12345"):
        numfn.runtime.write_perf_map(code, "label")
    assert path.read_text() == "theirs\n"


# ---- 12. a cache entry whose checksum verifies but whose object does not load ---------------------------------------

def _truncated(code: bytes) -> bytes: return code[:len(code) // 2]
def _garbage_header(code: bytes) -> bytes: return b"\x7fELF" + b"\xff" * 60 + code[64:]
def _empty(code: bytes) -> bytes: return b""
def _garbage(code: bytes) -> bytes: return bytes(range(256)) * 16
def _other_machine(code: bytes) -> bytes: return code[:18] + (183).to_bytes(2, "little") + code[20:]   # AArch64
def _shared_library_type(code: bytes) -> bytes: return (code[:16] + (3).to_bytes(2, "little") + code[18:])[:200]
def _no_section_table(code: bytes) -> bytes: return code[:40] + bytes(8) + code[48:]


CORRUPTIONS = [_truncated, _garbage_header, _empty, _garbage, _other_machine, _shared_library_type, _no_section_table]


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMFN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NUMFN_DISABLE_CACHE", raising=False)
    from numfn.runtime.diskcache import default_cache
    return default_cache()


def corrupt_entry(cache, key: str, corruption) -> None:
    """Replace the object of cache entry `key` by `corruption(object)`, stored the way the cache stores entries (its
    checksum computed from the new bytes: the entry verifies)."""
    from numfn.runtime import _pack, _unpack
    manifest, code = _unpack(cache.get(key))
    assert cache.put(key, _pack(manifest, corruption(code)))
    assert _unpack(cache.get(key))[1] == corruption(code)


def scaled(x):
    return np.sqrt(x) * 2.5 + x.sum()


@pytest.mark.parametrize("corruption", CORRUPTIONS, ids=lambda c: c.__name__.strip("_"))
def test_a_cached_object_that_does_not_load_is_compiled_again(backend, private_cache, corruption):
    import gc
    from numfn.runtime import _unpack
    from numfn.runtime.diskcache import CacheWarning
    x = np.linspace(0, 4, 10)
    f = numfn.jit(scaled, backend=backend)
    assert_same(f(x), scaled(x))
    key = f.specializations[0].cache_key
    good = _unpack(private_cache.get(key))[1]
    corrupt_entry(private_cache, key, corruption)
    del f
    gc.collect()   # its code is unmapped: the next load reads the entry
    before = numfn.runtime.compile_count
    with pytest.warns(CacheWarning, match="does not load"):
        got = numfn.jit(scaled, backend=backend)(x)
    assert_same(got, scaled(x))
    assert numfn.runtime.compile_count == before + 1
    assert _unpack(private_cache.get(key))[1] == good   # the entry was replaced by the program compiled again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same(numfn.jit(scaled, backend=backend)(x), scaled(x))   # and loads from now on
    assert numfn.runtime.compile_count == before + 1


CORRUPT_CHILD = r'''
import json, sys
import numpy as np
import numfn, numfn.runtime
from numfn.runtime import _pack, _unpack
from numfn.runtime.diskcache import default_cache

def scaled(x):
    return np.sqrt(x) * 2.5 + x.sum()

x = np.linspace(0, 4, 10)
f = numfn.jit(scaled, backend=sys.argv[1])
if sys.argv[2] == "corrupt":
    f(x)
    cache = default_cache()
    key = f.specializations[0].cache_key
    manifest, code = _unpack(cache.get(key))
    cache.put(key, _pack(manifest, code[:len(code) // 2]))
    print(json.dumps({"ok": True}))
else:
    ok = bool(np.allclose(f(x), scaled(x)))
    print(json.dumps({"ok": ok, "compiled": numfn.runtime.compile_count}))
'''


def test_every_later_process_recovers_from_a_truncated_object(backend, tmp_path):
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, NUMFN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=root)
    env.pop("NUMFN_DISABLE_CACHE", None)

    def child(step):
        out = subprocess.run([sys.executable, "-c", CORRUPT_CHILD, backend, step], env=env, capture_output=True,
                             text=True, timeout=CHILD_TIMEOUT)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr

    child("corrupt")
    first, stderr = child("run")
    assert first == {"ok": True, "compiled": 1} and "does not load" in stderr
    second, stderr = child("run")
    assert second == {"ok": True, "compiled": 0} and "CacheWarning" not in stderr


def test_a_program_orcjit_linked_loads_from_the_cache_through_orcjit(private_cache, monkeypatch):
    """An object numfn's ELF loader refuses is linked by OrcJIT, and its entry says so: a warm start links it that
    way too (and only such entries go to OrcJIT)."""
    import gc
    from numfn.runtime import _unpack, elf
    real = elf.load_object

    def refuse(code, symbols):
        raise elf.ElfLoadError("unsupported relocation type 99 (a test)")

    monkeypatch.setattr(elf, "load_object", refuse)
    k = float(np.random.default_rng().integers(1 << 30))
    fn = lambda x: np.cos(x) + k   # noqa: E731 - one function, two jit objects
    x = np.linspace(0, 1, 5)
    f = numfn.jit(fn, backend="llvm")
    assert_same(f(x), np.cos(x) + k)
    key = f.specializations[0].cache_key
    assert _unpack(private_cache.get(key))[0]["linker"] == "orc"
    del f
    gc.collect()
    before = numfn.runtime.compile_count
    assert_same(numfn.jit(fn, backend="llvm")(x), np.cos(x) + k)
    assert numfn.runtime.compile_count == before
    monkeypatch.setattr(elf, "load_object", real)
    assert_same(numfn.jit(fn, backend="llvm")(x), np.cos(x) + k)
    assert numfn.runtime.compile_count == before


# ---- 17. keyword calls reuse the positional specialization; returned dicts keep their order -------------------------

from helpers import check   # noqa: E402 - with the section that uses it


def assert_same_ordered(actual, expected):
    """assert_same, and every dict's keys in the same order (assert_same compares them as sets)."""
    assert_same(actual, expected)
    if isinstance(expected, dict):
        assert list(actual) == list(expected), f"keys in order {list(actual)}, expected {list(expected)}"
        for k in expected: assert_same_ordered(actual[k], expected[k])
    elif isinstance(expected, (tuple, list)):
        for a, e in zip(actual, expected): assert_same_ordered(a, e)


def two(x, y):
    return {"sum": x + y, "diff": x - y, "a": x * y}


def test_keyword_calls_reuse_the_positional_specialization(backend, monkeypatch):
    monkeypatch.setenv("NUMFN_DISABLE_CACHE", "1")   # counts compiles: a disk-cache hit of an earlier run is none
    j = numfn.jit(two, backend=backend)
    x, y = np.arange(3.0), np.linspace(1, 2, 3)
    before = numfn.runtime.compile_count
    for call in (lambda: j(x, y), lambda: j(x, y=y), lambda: j(y=y, x=x), lambda: j(x=x, y=y)):
        assert_same_ordered(call(), two(x, y))
    assert len(j.specializations) == 1 and numfn.runtime.compile_count - before == 1
    out = j(x, y=y)
    assert out["sum"] is not j(x, y=y)["sum"]   # fresh outputs each call
    nf = j.specializations[0]
    assert_same_ordered(nf(x, y=y), two(x, y))   # the checked call of a NumericalFunction agrees
    assert j.specialize(x, y=y) is nf
    outer = numfn.jit(lambda a, b: j(a, y=b)["diff"] * 2.0, backend=backend)   # a keyword call inside a trace
    assert_same(outer(x, y), (x - y) * 2.0)


def test_a_keyword_call_finds_the_program_in_the_disk_cache(backend, tmp_path, monkeypatch):
    # a cache of its own, enabled: the suite's shared one (and its settings) is what earlier tests left
    monkeypatch.setenv("NUMFN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NUMFN_DISABLE_CACHE", raising=False)
    k = float(np.random.default_rng().integers(1 << 30))

    def fn(x, y):
        return x * k + y

    x, y = np.arange(4.0), np.ones(4)
    numfn.jit(fn, backend=backend)(x, y)
    before = numfn.runtime.compile_count
    assert_same(numfn.jit(fn, backend=backend)(x, y=y), fn(x, y))
    assert_same(numfn.jit(fn, backend=backend)(y=y, x=x), fn(x, y))
    assert numfn.runtime.compile_count == before


def test_keyword_calls_of_every_kind_of_parameter(backend):
    def f(a, /, b, c=2.0, *, d, e=3.0, **rest):
        out = {"abc": a * b + c, "de": d - e}
        out.update({k: v + 1.0 for k, v in rest.items()})   # **rest in the call's order
        return out

    j = numfn.jit(f, backend=backend)
    x = np.arange(3.0)
    calls = [((x, x), dict(d=x)), ((x,), dict(b=x, d=x)), ((x,), dict(d=x, b=x)), ((x, x, 2.0), dict(d=x)),
             ((x,), dict(b=x, c=2.0, d=x)), ((x,), dict(d=x, e=3.0, b=x)), ((x,), dict(b=x, e=3.0, d=x)),
             ((x,), dict(b=x, d=x, zeta=x, alpha=x)), ((x,), dict(alpha=x, zeta=x, d=x, b=x))]
    for args, kwargs in calls:
        assert_same_ordered(j(*args, **kwargs), f(*args, **kwargs))
    # one specialization per distinct call: (a, b) positional with d; c given; e given; the two orders of **rest
    assert len(j.specializations) == 5
    with pytest.raises(TypeError, match="multiple values"):
        j(x, x, b=x, d=x)
    with pytest.raises(TypeError):
        j(x, b=x)   # d is missing
    with pytest.raises(TypeError):
        j(a=x, b=x, d=x)   # a is positional-only


def test_keyword_calls_with_static_arguments_and_out(backend):
    def f(x, n, scale=1.0):
        return x * n * scale

    j = numfn.jit(f, static_argnums=1, backend=backend)
    x = np.arange(5.0)
    for args, kwargs in [((x, 3), {}), ((x,), {"n": 3}), ((), {"n": 3, "x": x})]:
        assert_same(j(*args, **kwargs), f(x, 3))
    assert len(j.specializations) == 1
    assert_same(j(x, n=4), f(x, 4))
    assert len(j.specializations) == 2
    buf = np.empty(5)
    g = numfn.jit(lambda x, y: x - y, backend=backend)
    assert g(x, y=x, out=buf) is buf and not buf.any()
    assert len(g.specializations) == 1


def test_returned_dicts_keep_the_order_they_were_built_in(backend):
    def built(x):
        return {"zeta": x + 1, "alpha": x * 2, "mid": (x.sum(), {"b": x, "a": -x}), 3: x - 1, 1: x}

    j = check(built, np.arange(4.0), backend=backend)
    x = np.arange(4.0)
    for _ in range(2):   # the Python path, then the fast path (its result builder)
        assert_same_ordered(j(x), built(x))
    check(lambda x: {"z": x}, np.ones(2), backend=backend)
    check(lambda x: {}, np.ones(2), backend=backend)


def test_a_dict_argument_is_seen_in_its_own_order(backend):
    def double(d):
        return {k: v * 2 for k, v in d.items()}

    j = numfn.jit(double, backend=backend)
    x, y = np.arange(3.0), np.ones(3)
    for d in ({"b": x, "a": y}, {"a": y, "b": x}, {"b": x, "a": y}):
        assert_same_ordered(j(d), double(d))
    assert len(j.specializations) == 2   # one per order: the function may return (or iterate) it in that order


def test_dict_structures_match_by_key_whatever_their_order(backend):
    from numfn.trace.control import cond, fori_loop
    x = np.arange(4.0)

    def loop(x):   # the body builds its state in another order than the initial one
        return fori_loop(0, 3, lambda i, s: {"b": s["b"] + 1, "a": s["a"] * 2}, {"a": x, "b": x})

    assert_same_ordered(numfn.jit(loop, backend=backend)(x), {"a": x * 8, "b": x + 3})

    def branch(x):
        return cond(x.sum() > 0, lambda v: {"p": v, "q": -v}, lambda v: {"q": v, "p": -v}, x)

    got = numfn.jit(branch, backend=backend)(x)
    assert_same(got, {"p": x, "q": -x})

    per_example = lambda d: {"y": d["b"] * 2, "x": d["a"].sum()}   # noqa: E731
    batch = {"b": np.ones((3, 2)), "a": np.arange(6.0).reshape(3, 2)}
    want = {"y": batch["b"] * 2, "x": batch["a"].sum(axis=1)}
    assert_same_ordered(numfn.vmap(per_example, in_axes=({"a": 0, "b": 0},))(batch), want)
    assert_same_ordered(numfn.svmap(per_example, in_axes=({"a": 0, "b": 0},))(batch), want)
    assert_same_ordered(numfn.vmap(per_example, out_axes={"x": 0, "y": 1})(batch),
                        {"y": (batch["b"] * 2).T, "x": batch["a"].sum(axis=1)})


def test_fork_after_svmap_used_its_threads(backend):
    """svmap splits large batches across a Python thread pool: a forked child has none of its threads."""
    numfn.set_num_threads(2)
    per_example = lambda r: np.sin(r) * 2.0 + r.sum()   # noqa: E731
    s = numfn.svmap(numfn.jit(per_example, backend=backend))
    xs = np.random.default_rng(1).random((4096, 64))
    want = np.sin(xs) * 2.0 + xs.sum(axis=1, keepdims=True)
    assert_same(s(xs), want)   # (the batch is large enough to use the threads)

    def child():
        for _ in range(2): assert_same(s(xs), want)
        return True
    assert run_forked(child, timeout=60)
    assert_same(s(xs), want)


# fuzz seed 52500012: a loop's carried array of 4 uint8 on the program's stack, copied whole into the output; LLVM
# kept the slot as one i32 and its SLP vectorizer packed the bytes of comparisons wrongly (elements after a 255
# became 255). Arrays of several elements in at most 8 bytes now live in the arena (codegen/layout.on_stack_bytes).
def _wrapping_loop(x1):
    v15 = x1.copy()
    c16 = np.zeros((), np.int64)
    while c16 < 7:
        v15 += x1
        c16 = c16 + 1
    v15 -= x1
    v24 = v15.copy()
    c25 = 0
    while c25 < 7:
        v24 = v24 + v15
        v24 = np.minimum(v24, 1) - 1
        c25 = c25 + 1
    return v24


@pytest.mark.parametrize("dtype, shape", [(np.uint8, (2, 2)), (np.uint8, (8,)), (np.uint16, (4,)),
                                          (np.uint8, (3,)), (np.uint8, (16,))])
def test_a_small_carried_array_copied_into_the_output(dtype, shape, backend):
    x1 = (np.arange(int(np.prod(shape))).reshape(shape) % 4).astype(dtype)
    assert_same(numfn.jit(_wrapping_loop, backend=backend)(x1), _wrapping_loop(x1))
