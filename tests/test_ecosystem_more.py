"""numfn with the SciPy stack, continued (docs/scipy-stack.md): `cache clear` removes the compile lock files no
process holds, Dask's one-element probe calls compile no specialization of their own, and a program that calls
back into Python (numfn.debug.callback / print) loads from the disk cache in a later process."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numfn
from numfn import locks, runtime
from numfn.runtime import diskcache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = "ab" * 32   # a well-formed cache key


def _env(tmp_path, **extra):
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                NUMFN_CACHE_DIR=str(tmp_path / "cache"), NUMFN_PROGRESS="0", **extra)


# ---- cache clear and the compile lock files ------------------------------------------------------------------------
def _cache_with_lock_files(tmp_path):
    cache = diskcache.DiskCache(str(tmp_path / "cache"))
    cache.put(KEY, b"payload")
    free = os.path.join(cache.directory, "cd" * 32 + ".lock")
    held = os.path.join(cache.directory, "ef" * 32 + ".lock")
    other = os.path.join(cache.directory, "notes.lock")   # not numfn's: left alone
    for path in (free, held, other): open(path, "w").close()
    return cache, free, held, other


def test_cache_clear_removes_unheld_lock_files(tmp_path):
    cache, free, held, other = _cache_with_lock_files(tmp_path)
    with locks.file_lock(held) as got:
        assert got
        assert cache.clear() == 1
        assert not os.path.exists(free)
        assert os.path.exists(held), "a lock another compilation holds was deleted"
        assert os.path.exists(other)
    assert cache.clear() == 0
    assert not os.path.exists(held) and os.path.exists(other)
    assert os.listdir(cache.directory) == ["notes.lock"]


def test_cli_cache_clear_leaves_no_lock_files(tmp_path):
    f = textwrap.dedent("""
        import numpy as np, numfn
        numfn.jit(lambda x: x * 3.0 + 1.0)(np.arange(4.0))
    """)
    env = _env(tmp_path)
    subprocess.run([sys.executable, "-c", f], env=env, check=True, cwd=ROOT)
    directory = tmp_path / "cache"
    assert any(name.endswith(".lock") for name in os.listdir(directory)), "the compile took no file lock"
    out = subprocess.run([sys.executable, "-m", "numfn", "cache", "clear"], env=env, check=True, cwd=ROOT,
                         capture_output=True, text=True).stdout
    assert "removed" in out
    assert not [name for name in os.listdir(directory) if name.endswith((".lock", diskcache.ENTRY_SUFFIX))]


def test_file_lock_whose_file_was_deleted_while_waiting_locks_the_new_one(tmp_path):
    # a process waiting for a lock file that is deleted (cache clear, between the holder's release and its turn) must
    # not hold the lock of the deleted file while another process locks the new file at the same path
    import fcntl
    import threading
    path = str(tmp_path / ("12" * 32 + ".lock"))
    seen = {}
    waiter_started = threading.Event()

    def waiter():
        waiter_started.set()
        with locks.file_lock(path, timeout=30) as got:
            seen["held"] = got
            seen["exists"] = os.path.exists(path)
            probe = os.open(path, os.O_RDWR)   # another open file: its lock must be refused while this one holds
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                seen["excluded"] = False
            except BlockingIOError:
                seen["excluded"] = True
            finally:
                os.close(probe)

    with locks.file_lock(path) as got:
        assert got
        thread = threading.Thread(target=waiter)
        thread.start()
        waiter_started.wait()
        import time
        time.sleep(0.3)   # the waiter has opened the file and waits for its lock
        os.unlink(path)
    thread.join(60)
    assert seen == {"held": True, "exists": True, "excluded": True}


# ---- programs with run-time callbacks load from the disk cache ---------------------------------------------------
CALLBACK_PROGRAM = textwrap.dedent("""
    import numpy as np, numfn
    from numfn import runtime
    seen = []

    def record(v, total):
        seen.append((v.tolist(), float(total)))

    @numfn.jit
    def f(x):
        y = x * 2.0
        numfn.debug.print("y {}", y)
        numfn.debug.callback(record, y, y.sum())
        return y + 1.0

    r = f(np.arange(3.0))
    print("result", r.tolist(), "seen", seen, "compiled", runtime.compile_count)
""")


@pytest.mark.parametrize("backend_name", ["llvm", "c"])
def test_program_with_callback_loads_from_cache_in_a_second_process(tmp_path, backend_name):
    env = _env(tmp_path, NUMFN_BACKEND=backend_name)
    outs = [subprocess.run([sys.executable, "-c", CALLBACK_PROGRAM], env=env, check=True, cwd=ROOT,
                           capture_output=True, text=True, timeout=300).stdout for _ in range(2)]
    want = "y [0. 2. 4.]\nresult [1.0, 3.0, 5.0] seen [([0.0, 2.0, 4.0], 6.0)] compiled {}\n"
    assert outs[0] == want.format(1)
    assert outs[1] == want.format(0), "the second process compiled the program again"


def test_callbacks_of_one_name_call_their_own_function():
    # distinct function objects with one qualified name (closures) are told apart: each program calls its own
    seen = []

    def make(tag):
        def report(v):
            seen.append((tag, v.tolist()))
        return report

    def program(report):
        def body(x):
            numfn.debug.callback(report, x + 1.0)
            return x * 2.0
        return numfn.jit(body)

    first, second = program(make("first")), program(make("second"))
    x = np.arange(2.0)
    for fn, tag in ((first, "first"), (second, "second"), (first, "first")):
        np.testing.assert_array_equal(fn(x), x * 2.0)
        assert seen.pop() == (tag, [1.0, 2.0])
    assert not seen
