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


# ---- one-element probe calls: folded from the trace, not compiled --------------------------------------------------
def _bits(a):
    a = np.asarray(a)
    return type(a).__name__, a.dtype, a.shape, a.tobytes()


def _one_element_view(value, dtype):
    # a 1x1 view with negative and non-unit strides into a larger array
    base = np.zeros((3, 4), dtype)
    base[2, 3] = value
    return base[::-2, ::-3][:1, :1]


SPECIAL = [1.5, -0.0, np.nan, -np.inf, 7.0, 3e300]
FOLDED = [   # (name, function, argument makers): every operation exact, so the first call compiles nothing
    ("affine", lambda x: x * 2.0 + 1.0, [lambda v: np.full((1, 1), v)]),
    ("where-sqrt", lambda x, y: np.where(x > y, x - y, np.sqrt(np.abs(y))) / 3.0,
     [lambda v: np.full((1, 1), v, np.float32), lambda v: np.float32(5.0)]),
    ("floor-div-mod", lambda x: (x // 3.0, x % 3.0, np.floor(x), np.maximum(x, 0.5)), [lambda v: np.array([v])]),
    ("broadcast-up", lambda x: x.T + np.ones((3, 4)), [lambda v: np.full((1, 1), v)]),
    ("0-d array", lambda x: -x * x, [lambda v: np.array(v)]),
    ("strided view", lambda x: x - 1.0, [lambda v: _one_element_view(v, np.float64)]),
    ("compare", lambda x, y: (x < y, x == y, (x != y) & (x <= y)), [lambda v: np.full((1,), v),
                                                                      lambda v: np.full((1, 1), 1.5)]),
]
INTEGER = [   # integer and bool arguments (values where NumPy's and C's division differ)
    ("int-div", lambda x: (x // 3, x % 3, x.astype(np.float32) * 2, x << 2, x ^ 5), np.int64, [-7, 7, 0, -1]),
    ("uint8", lambda x: (x + np.uint8(250), x * x, x > 3), np.uint8, [0, 7, 255]),
    ("bool", lambda x: (x & True, ~x, x.astype(np.int32) + 1), np.bool_, [True, False]),
]


def _check_probe_then_compiled(fn, args):
    want = fn(*args)
    # a NaN result is compiled, not folded: folding's NaN has Python's sign bit, the compiled code's the CPU's
    nan = any(np.asarray(w).dtype.kind == "f" and np.isnan(w).any() for w in (want if isinstance(want, tuple)
                                                                              else (want,)))
    f = numfn.jit(fn)
    before = runtime.compile_count
    probe = f(*args)
    if not nan:
        assert runtime.compile_count == before, "the one-element probe compiled"
        assert not any("compiled" in nf.build.__dict__ for nf in f.specializations)
    compiled = f(*args)   # the same signature again: a real call, compiled (or loaded from the disk cache)
    assert all("compiled" in nf.build.__dict__ for nf in f.specializations)
    for got, ran, expected in zip(*(x if isinstance(x, tuple) else (x,) for x in (probe, compiled, want))):
        assert _bits(got) == _bits(ran), "the probe's result differs from the compiled code's"
        assert np.asarray(got).dtype == np.asarray(expected).dtype and np.shape(got) == np.shape(expected)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("value", SPECIAL)
@pytest.mark.parametrize("name,fn,makers", FOLDED, ids=[c[0] for c in FOLDED])
def test_one_element_probe_is_folded_and_equals_compiled_code(name, fn, makers, value):
    with np.errstate(all="ignore"):
        _check_probe_then_compiled(fn, tuple(make(value) for make in makers))


@pytest.mark.parametrize("name,fn,dtype,values", INTEGER, ids=[c[0] for c in INTEGER])
def test_one_element_integer_probe_is_folded_and_equals_compiled_code(name, fn, dtype, values):
    for value in values:
        _check_probe_then_compiled(fn, (np.full((1, 1), value, dtype),))


NOT_FOLDED = [   # compiled as before: the result must still be right
    ("transcendental", lambda x: np.tanh(x) * 2.0),
    ("reduction", lambda x: x.sum(axis=1)),
    ("captured array", lambda x: x + np.arange(3.0)),
    ("complex", lambda x: x * (1 + 2j)),
    ("float16", lambda x: x.astype(np.float16) + np.float16(1)),
]


@pytest.mark.parametrize("name,fn", NOT_FOLDED, ids=[c[0] for c in NOT_FOLDED])
def test_one_element_calls_the_folder_cannot_answer_compile(name, fn):
    f = numfn.jit(fn)
    x = np.full((1, 1), 0.75)
    got = f(x)
    assert all("compiled" in nf.build.__dict__ for nf in f.specializations)
    want = fn(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6 if want.dtype == np.float16 else 1e-15)


def test_one_element_call_with_run_time_checks_raises_as_numpy():
    f = numfn.jit(lambda x, i: x[0, i] * 2.0)
    with pytest.raises(IndexError):
        f(np.ones((1, 1)), np.array([3]))


def test_dask_map_blocks_without_meta_compiles_one_specialization():
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")

    @numfn.jit
    def clip_scale(b):
        return np.where(b > 0.5, b * 2.0, b / 3.0) + 1.0

    x = da.random.default_rng(1).standard_normal((40, 30), chunks=(10, 30))
    with dask.config.set(scheduler="synchronous"):
        y = da.map_blocks(clip_scale, x)   # no meta=, no dtype=: Dask probes on 0x0 and 1x1 arrays
        got = y.compute()
    assert y.dtype == np.float64
    compiled = [nf for nf in clip_scale.specializations if "compiled" in nf.build.__dict__]
    assert len(compiled) == 1, "the probes compiled specializations of their own"
    assert len(clip_scale.specializations) == 3   # traced: the 0x0 and 1x1 probes and the (10, 30) blocks
    b = x.compute()
    np.testing.assert_array_equal(got, np.where(b > 0.5, b * 2.0, b / 3.0) + 1.0)


# ---- a function pickled by value keeps its source: the worker traces the client's program ------------------------
PICKLED_BY_VALUE = textwrap.dedent("""
    import subprocess, sys
    import cloudpickle
    import numpy as np
    import numfn
    from numfn import runtime

    STEPS = 12


    def relax(b):
        for _ in range(STEPS):   # a native loop when numfn can read this source; unrolled 12 times when not
            b = np.sqrt(b * b + 1.0) - 0.5 * b
        return b


    fast_relax = numfn.jit(relax)   # bound under another name than its function's: pickled by value
    x = np.linspace(-2.0, 2.0, 7)
    got = fast_relax(x)
    print(fast_relax.specializations[0].cache_key, runtime.compile_count, got.tolist(), flush=True)
    subprocess.run([sys.executable, "-c", WORKER], input=cloudpickle.dumps(fast_relax), check=True)
""")
WORKER = textwrap.dedent("""
    import sys, cloudpickle, numpy as np
    from numfn import runtime
    f = cloudpickle.loads(sys.stdin.buffer.read())   # (as a Dask worker does: the client's script is not run here)
    got = f(np.linspace(-2.0, 2.0, 7))
    print(f.specializations[0].cache_key, runtime.compile_count, got.tolist())
""")


def test_function_pickled_by_value_traces_the_same_program_in_the_worker(tmp_path):
    pytest.importorskip("cloudpickle")
    script = tmp_path / "client.py"
    script.write_text(f"WORKER = {WORKER!r}\n" + PICKLED_BY_VALUE)
    out = subprocess.run([sys.executable, str(script)], env=_env(tmp_path), check=True, cwd=str(tmp_path),
                         capture_output=True, text=True, timeout=300).stdout.splitlines()
    client_key, client_compiles, client_values = out[0].split(" ", 2)
    worker_key, worker_compiles, worker_values = out[1].split(" ", 2)
    assert client_compiles == "1"
    assert worker_key == client_key, "the worker traced another program than the client's"
    assert worker_compiles == "0", "the worker compiled instead of loading the client's program"
    assert worker_values == client_values
    b = np.linspace(-2.0, 2.0, 7)
    for _ in range(12): b = np.sqrt(b * b + 1.0) - 0.5 * b
    np.testing.assert_allclose(eval(client_values), b, rtol=1e-14)


def test_one_element_probe_checks_python_ints_as_a_call_does():
    # fuzz seed 44002017: a Python int the function narrows to int8 is range-checked on the first (probe-like) call
    def f(x0, x1):
        return x0 // x1
    x0 = np.array([2], dtype=np.int8)
    for _ in range(2):
        with pytest.raises(OverflowError, match="out of bounds for int8"):
            numfn.jit(f)(x0, -9223372036854775808)
    np.testing.assert_array_equal(numfn.jit(f)(x0, -3), x0 // -3)
