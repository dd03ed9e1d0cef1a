"""numfn with the SciPy stack (docs/scipy-stack.md): Dask's probe calls, jit functions pickled by value, processes
sharing one cache directory, and the recipes with dask, distributed, xarray, pandas and SciPy (test extras; each
test skips where its library is not installed). The LocalCluster run is slow: NUMFN_LONG_TESTS=1 runs it."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import numfn
from numfn import locks, pickled
from numfn import runtime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env(tmp_path):
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                NUMFN_CACHE_DIR=str(tmp_path / "cache"), NUMFN_PROGRESS="0")


# ---- zero-size probes compile nothing ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(0, 0), (0,), (3, 0), (0, 4)])
def test_empty_outputs_compile_nothing(shape):
    f = numfn.jit(lambda x, y: np.sin(x) * y + 1.0)
    x = np.empty(shape)
    before = runtime.compile_count
    got = f(x, np.float32(2))
    want = np.sin(x) * np.float32(2) + 1.0
    assert runtime.compile_count == before
    assert got.shape == want.shape and got.dtype == want.dtype
    assert all("compiled" not in nf.build.__dict__ for nf in f.specializations)


def test_empty_inputs_with_nonempty_outputs_are_computed():
    f = numfn.jit(lambda x: (x.sum(axis=0), x * 2, np.ones(3) + x.size))
    x = np.empty((0, 3), np.float32)
    for got, want in zip(f(x), (x.sum(axis=0), x * 2, np.ones(3) + x.size)):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype and got.shape == want.shape


def test_empty_probe_errors_as_numpy():
    f = numfn.jit(lambda x: x.max(axis=0))
    with pytest.raises(ValueError):
        np.empty((0, 2)).max(axis=0)
    with pytest.raises(ValueError):
        f(np.empty((0, 2)))


def test_empty_out_argument_takes_the_usual_path():
    f = numfn.jit(lambda x: x + 1.0)
    out = np.empty((0, 2))
    assert f(np.empty((0, 2)), out=out) is out


# ---- pickled by value: one object per process ------------------------------------------------------------------------
def _make_jitted(scale):
    def g(x):
        return x * scale + 1.0
    return numfn.jit(g)   # a closure: pickled by value


def test_pickled_by_value_comes_back_as_the_same_object():
    pickle = pytest.importorskip("cloudpickle")   # what Dask pickles with: closures by value
    f = _make_jitted(3.0)
    data = pickle.dumps(f)
    assert pickle.loads(data) is f and pickle.loads(pickle.dumps(f)) is f
    other = _make_jitted(4.0)   # the same code, another value captured: another object
    assert pickle.loads(pickle.dumps(other)) is other
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(other))(np.ones(2)), np.full(2, 5.0))


def test_rebuild_keeps_the_most_recent(monkeypatch):
    monkeypatch.setattr(pickled, "KEPT", 2)
    made = [pickled.rebuild(f"t{i}", numfn.JitFunction, lambda x: x) for i in range(3)]
    assert pickled.rebuild("t2", numfn.JitFunction, lambda x: x) is made[2]
    assert pickled.rebuild("t0", numfn.JitFunction, lambda x: x) is not made[0]   # dropped beyond KEPT


WORKER = r'''
import pickle, sys, numpy as np
from numfn import runtime
data = open(sys.argv[1], "rb").read()
first = pickle.loads(data)
for task in range(8):                       # what a Dask worker does: unpickle the function for every task
    f = pickle.loads(data)
    assert f is first
    assert (f(np.arange(4.0)) == np.arange(4.0) * 3.0 + 1.0).all()
    del f
print(runtime.compile_count, len(first.specializations))
'''


def test_unpickled_in_another_process_is_traced_once(tmp_path):
    cloudpickle = pytest.importorskip("cloudpickle")
    path = tmp_path / "f.pkl"
    path.write_bytes(cloudpickle.dumps(_make_jitted(3.0)))
    out = subprocess.run([sys.executable, "-c", WORKER, str(path)], capture_output=True, text=True,
                         env=_env(tmp_path), cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["1", "1"]


# ---- processes sharing a cache directory compile once --------------------------------------------------------------
def test_file_lock_excludes_and_times_out(tmp_path):
    path = str(tmp_path / "x.lock")
    with locks.file_lock(path) as held:
        assert held
        code = ("import sys, time; from numfn import locks\n"
                "t = time.monotonic()\n"
                "with locks.file_lock(sys.argv[1], timeout=0.5) as held: print(held, time.monotonic() - t >= 0.45)")
        out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, env=_env(tmp_path),
                             timeout=120)
        assert out.stdout.split() == ["False", "True"], out.stderr[-2000:]
    with locks.file_lock(path) as held:   # released
        assert held
    with locks.file_lock(str(tmp_path / "missing" / "x.lock")) as held:   # cannot be made: runs without
        assert not held


COMPILER = r'''
import os, sys, time
import numpy as np
from numfn import runtime
import numfn
def work(x):
    for _ in range(3):
        x = np.tanh(x @ x.T) * 0.5 + np.cos(x)
    return x.sum(axis=1) - x.mean()
f = numfn.jit(work)
while not os.path.exists(sys.argv[1]): time.sleep(0.005)   # start together
f(np.ones((5, 5)))
print(runtime.compile_count)
'''


def test_processes_sharing_a_cache_compile_once(tmp_path):
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", COMPILER, str(go)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env(tmp_path), cwd=ROOT) for _ in range(2)]
    time.sleep(1.0)   # both imported numfn and wait
    go.write_text("")
    counts = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        counts.append(int(out.split()[-1]))
    assert sorted(counts) == [0, 1]


def test_threads_and_the_lock_compile_once(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMFN_CACHE_DIR", str(tmp_path / "cache"))
    fs = [numfn.jit(lambda x: np.cos(x) * 3.0 - x) for _ in range(3)]   # three objects, one program
    before = runtime.compile_count
    threads = [threading.Thread(target=f, args=(np.ones(7),)) for f in fs]
    for t in threads: t.start()
    for t in threads: t.join()
    assert runtime.compile_count - before == 1


# ---- the recipes ---------------------------------------------------------------------------------------------------
def test_dask_map_blocks_without_meta_compiles_once():
    da = pytest.importorskip("dask.array")
    import dask
    f = numfn.jit(lambda b: np.sqrt(b * b + 1.0) - b)
    x = np.random.default_rng(1).standard_normal((40, 30))
    before = runtime.compile_count
    with dask.config.set(scheduler="synchronous"):
        got = da.map_blocks(f, da.from_array(x, chunks=(10, 30)), dtype=x.dtype).compute()
    np.testing.assert_allclose(got, np.sqrt(x * x + 1.0) - x, rtol=1e-13)
    assert runtime.compile_count - before == 1   # the 0x0 meta probe compiled nothing; one block shape


def test_dask_apply_gufunc_with_a_vmapped_function():
    da = pytest.importorskip("dask.array")
    import dask
    norm = numfn.jit(numfn.vmap(lambda v: np.sqrt((v * v).sum())))
    x = np.random.default_rng(2).standard_normal((12, 5))
    with dask.config.set(scheduler="synchronous"):
        got = da.apply_gufunc(norm, "(n)->()", da.from_array(x, chunks=(4, 5)), output_dtypes=float).compute()
    np.testing.assert_allclose(got, np.linalg.norm(x, axis=1), rtol=1e-13)


def test_xarray_apply_ufunc_pandas_and_scipy():
    xr = pytest.importorskip("xarray")
    pd = pytest.importorskip("pandas")
    optimize = pytest.importorskip("scipy.optimize")
    f = numfn.jit(lambda a: np.exp(-a) * np.cos(a))
    arr = xr.DataArray(np.linspace(0, 3, 12).reshape(3, 4), dims=("t", "x"))
    got = xr.apply_ufunc(f, arr)
    np.testing.assert_allclose(got.values, np.exp(-arr.values) * np.cos(arr.values), rtol=1e-14)
    assert got.dims == ("t", "x")
    frame = pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [1.0, 2.0, 4.0]})
    np.testing.assert_allclose(f(frame["a"].to_numpy()), np.exp(-frame["a"]) * np.cos(frame["a"]), rtol=1e-14)

    @numfn.jit
    def rosen(p):
        return ((1.0 - p[:-1]) ** 2 + 100.0 * (p[1:] - p[:-1] ** 2) ** 2).sum()

    res = optimize.minimize(rosen, np.zeros(4), method="BFGS", jac=numfn.jit(numfn.grad(rosen)))
    assert res.success and np.allclose(res.x, 1.0, atol=1e-4)


@pytest.mark.skipif(os.environ.get("NUMFN_LONG_TESTS") != "1", reason="starts a LocalCluster: NUMFN_LONG_TESTS=1")
def test_local_cluster_recipe_of_the_docs(tmp_path):
    """The LocalCluster block of docs/scipy-stack.md (skipped by the docs test: it starts two processes)."""
    pytest.importorskip("distributed")
    from numfn.tools.docs_examples import python_blocks
    with open(os.path.join(ROOT, "docs", "scipy-stack.md"), encoding="utf-8") as f:
        blocks = [code for _, code, _ in python_blocks(f.read()) if "LocalCluster(" in code]
    assert len(blocks) == 1
    script = tmp_path / "cluster.py"
    script.write_text(blocks[0])
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_env(tmp_path),
                         cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    compiles = eval(out.stdout.strip().splitlines()[-1].split(" ", 1)[1])   # {worker address: compile count}
    assert len(compiles) == 2 and sum(compiles.values()) <= 1


# ---- the Python call path of an install without the dispatch extension ----------------------------------------------
FALLBACK = r'''
import warnings
import numpy as np
warnings.simplefilter("ignore")
import numfn
from numfn.runtime import extensions
assert extensions.dispatch is None

def h(x, s, n, b):
    return x * s + (np.ones(1, np.int32) + n) + b   # n meets int32 (NEP 50): a range on the fast entry
f = numfn.jit(h)
base = np.arange(12.0).reshape(3, 4)
cases = [base[0], base[:, 1], base[0, ::-1], base[0].astype(">f8"), base[0].astype(np.float32), np.float64(2.0)]
for x in cases:
    for s, n, b in [(2.0, 3, True), (-0.5, -7, False), (1e300, 2**31 - 1, True)]:
        for _ in range(3):   # the first call registers, the next ones take the table
            got = f(x, s, n, b)
            want = h(x, s, n, b)
            assert got.dtype == want.dtype and got.shape == want.shape, (x.dtype, got.dtype, want.dtype)
            np.testing.assert_array_equal(got, want)
assert f._entries() >= 1
try:
    f(base[0], 1.0, 2**31, True)   # beyond int32: the Python path raises, the table's range check sends it there
    raise SystemExit("no OverflowError")
except OverflowError:
    pass
out = np.empty(4)
assert f(base[0], 1.0, 1, False, out=out) is out and (out == base[0] + 2).all()
g = numfn.jit(lambda x: x.sum())
for x in [np.ones(0), np.ones((0, 3)), np.ones(())]:
    for _ in range(2):
        np.testing.assert_array_equal(g(x), x.sum())
print("ok")
'''


def test_python_call_path_matches_numpy(tmp_path):
    out = subprocess.run([sys.executable, "-c", FALLBACK], capture_output=True, text=True,
                         env=dict(_env(tmp_path), NUMFN_NO_DISPATCH_EXT="1"), cwd=tmp_path, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]
