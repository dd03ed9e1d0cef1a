"""The compile pipeline around the disk cache: warm starts, no compiler, concurrent compilation, corruption."""
import json
import re
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import numfn
import numfn.runtime
from numfn.runtime.diskcache import DiskCache

needs_cc = pytest.mark.skipif(not (os.environ.get("NUMFN_CC") or shutil.which("clang") or shutil.which("cc")),
                              reason="no C compiler")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r'''
import json, sys
import numpy as np
import numfn, numfn.runtime

def f(x, y):
    return np.sin(x) * y + x.sum(axis=0)

x = np.arange(12.0).reshape(4, 3)
y = np.linspace(0, 1, 3)
r = numfn.jit(f, backend=sys.argv[1])(x, y)
ok = bool(np.allclose(r, np.sin(x) * y + x.sum(axis=0)))
print(json.dumps({"ok": ok, "compiled": numfn.runtime.compile_count}))
'''


def run_child(tmp_path, backend="llvm", **env_overrides):
    env = dict(os.environ, NUMFN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    env.pop("NUMFN_DISABLE_CACHE", None)
    env.update(env_overrides)
    out = subprocess.run([sys.executable, "-c", CHILD, backend], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_a_warm_start_loads_instead_of_compiling(tmp_path, backend):
    first, _ = run_child(tmp_path, backend)
    second, _ = run_child(tmp_path, backend)
    assert first == {"ok": True, "compiled": 1}
    assert second == {"ok": True, "compiled": 0}


def test_llvm_backend_needs_no_compiler(tmp_path):
    # no cc, gcc or clang anywhere: the LLVM backend compiles through llvmlite, and the extensions were built
    # with the package, so nothing is missing
    result, stderr = run_child(tmp_path, "llvm", PATH="", NUMFN_CC="")
    assert result == {"ok": True, "compiled": 1}
    assert "ExtensionWarning" not in stderr


def test_c_backend_without_a_compiler_says_so(tmp_path):
    env = dict(os.environ, NUMFN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT, PATH="", NUMFN_CC="")
    out = subprocess.run([sys.executable, "-c", CHILD, "c"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "needs a C compiler" in out.stderr


C_PROGRAM = "static const double k[3] = {1.5, -2.0, 0.25};\n" \
            "int scale_entry(void **b) { double *o = b[0], *x = b[1];\n" \
            "  for (int i = 0; i < 3; i++) o[i] = sin(x[i]) * k[i]; return 0; }\n"


def _run_scale_entry(prog) -> np.ndarray:
    from numfn.runtime.native import pointer_table
    x, out = np.array([0.5, -1.0, 3.0]), np.zeros(3)
    assert prog.entry(pointer_table([out, x])) == 0
    return out


@needs_cc
@pytest.mark.parametrize("loader", ["elf", "dlopen"])
def test_c_programs_load_as_objects_or_shared_libraries(monkeypatch, loader):
    # where numfn's ELF loader applies, the C backend skips the link step (about half of a cold compile) and maps
    # the object itself; elsewhere it links a shared library and dlopens it. Both give the same numbers.
    from numfn.runtime import elf
    if loader == "dlopen": monkeypatch.setattr(elf, "supported", lambda: False)
    elif not elf.supported(): pytest.skip("the ELF loader does not apply on this platform")
    prog = numfn.runtime.compile_program("c", "#include <math.h>\n" + C_PROGRAM, "scale_entry")
    expected = np.sin([0.5, -1.0, 3.0]) * np.array([1.5, -2.0, 0.25])
    np.testing.assert_array_equal(_run_scale_entry(prog), expected)
    assert isinstance(prog.keepalive, elf.LoadedObject) == (loader == "elf")


def test_disabled_cache_writes_nothing(tmp_path):
    result, _ = run_child(tmp_path, "llvm", NUMFN_DISABLE_CACHE="1")
    again, _ = run_child(tmp_path, "llvm", NUMFN_DISABLE_CACHE="1")
    assert result["ok"] and again == {"ok": True, "compiled": 1}
    assert not any(name.endswith(".nfc") for name in os.listdir(tmp_path / "cache")) \
        if (tmp_path / "cache").exists() else True


def test_four_processes_compiling_at_once(tmp_path):
    env = dict(os.environ, NUMFN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    env.pop("NUMFN_DISABLE_CACHE", None)
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, "llvm"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [json.loads(p.communicate(timeout=180)[0].strip().splitlines()[-1]) for p in procs]
    assert all(r["ok"] for r in results)
    cache = DiskCache(str(tmp_path / "cache"))
    entries = [n for n in os.listdir(tmp_path / "cache") if n.endswith(".nfc")]
    programs = [n for n in entries if cache.get(n[:-4]) is not None]
    assert len(programs) == len(entries)   # every entry left behind is valid
    # one program entry (plus, possibly, the dispatch extension); a fifth process compiles nothing
    again, _ = run_child(tmp_path, "llvm")
    assert again == {"ok": True, "compiled": 0}


def test_threads_making_the_first_call_compile_once(backend):
    f = numfn.jit(lambda x: np.cos(x) * 3.0 + x.max(), backend=backend)
    x = np.linspace(0, 1, 1000)
    want = np.cos(x) * 3.0 + x.max()
    before = numfn.runtime.compile_count
    results, errors = [], []

    def call():
        try:
            results.append(f(x))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    assert not errors and len(results) == 8
    assert all(np.allclose(r, want) for r in results)
    assert numfn.runtime.compile_count - before <= 1 and len(f.specializations) == 1


def test_corrupt_cache_entry_is_rebuilt(tmp_path):
    first, _ = run_child(tmp_path)
    cache_dir = tmp_path / "cache"
    for name in os.listdir(cache_dir):
        if name.endswith(".nfc"):
            data = bytearray((cache_dir / name).read_bytes())
            data[-1] ^= 0xFF
            (cache_dir / name).write_bytes(bytes(data))
    again, stderr = run_child(tmp_path)
    assert first["ok"] and again == {"ok": True, "compiled": 1}
    assert "discarding numfn cache entry" in stderr


def test_cache_cli(tmp_path):
    run_child(tmp_path)
    env = dict(os.environ, NUMFN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    info = subprocess.run([sys.executable, "-m", "numfn", "cache", "info"], env=env, capture_output=True, text=True)
    assert info.returncode == 0 and str(tmp_path / "cache") in info.stdout
    clear = subprocess.run([sys.executable, "-m", "numfn", "cache", "clear"], env=env, capture_output=True, text=True)
    assert clear.returncode == 0
    assert not [n for n in os.listdir(tmp_path / "cache") if n.endswith(".nfc")]


def test_changing_numfn_never_loads_stale_code(monkeypatch):
    # the cache key includes a hash of numfn's own source: a different build id is a different key
    from numfn.runtime import target
    nf = numfn.jit(lambda x: x + 1).specialize(np.ones(3))
    key = nf.cache_key
    target.build_id.cache_clear()
    monkeypatch.setattr(numfn.version, "__version__", "0.0.0-other")
    try:
        other = numfn.jit(lambda x: x + 1).specialize(np.ones(3)).cache_key
    finally:
        target.build_id.cache_clear()
    assert key != other


def test_debug_2_prints_each_kernels_time(capsys, monkeypatch, backend):
    monkeypatch.setenv("DEBUG", "2")
    f = numfn.jit(lambda x: (x.sum(axis=0) * x).max(), backend=backend)
    x = np.random.default_rng(3).random((300, 200))
    for _ in range(2):
        assert np.isclose(f(x), (x.sum(axis=0) * x).max())
        err = capsys.readouterr().err
        names = [ei.kernel.name for ei in f.specializations[0].schedule]
        assert "kernel times" in err and all(name in err for name in names) and " us" in err
        # each kernel ran once in this call (the counters are reset after each report)
        rows = [line.split() for line in err.splitlines() if line.strip().split()[:1] and
                line.split()[0] in names]
        assert rows and all(row[3] == "1" for row in rows), err


def _counting_loop(x, n):
    for _ in range(n):   # (reversed reads: not elementwise, so not interchanged into one kernel call)
        x = x * 0.5 + x[::-1] * 0.25 + 1
    return x


def test_debug_2_counts_the_calls_of_kernels_in_loops(capsys, monkeypatch, backend):
    monkeypatch.setenv("DEBUG", "2")
    f = numfn.jit(_counting_loop, backend=backend)
    x = np.ones(1000)
    np.testing.assert_allclose(f(x, np.int64(37)), _counting_loop(x, 37))
    counts = [int(line.split()[3]) for line in capsys.readouterr().err.splitlines() if " x " in line]
    assert 37 in counts or 36 in counts, counts   # (the loop's body kernel; 36 when the first trip is peeled)


def test_slow_kernels_are_named():
    from numfn.debug import slow_kernel
    # 1 ms per call for a kernel moving 8 KiB with 1,000 operations: far slower than that work needs
    assert slow_kernel(10_000_000, 10, 10_000_000, [1000, 8192]) > 100
    # a kernel running at its memory bound, one whose share of the call is small, one too short to judge
    assert slow_kernel(1_000_000, 1, 1_000_000, [1000, 4_000_000]) is None
    assert slow_kernel(1_000_000, 1, 100_000_000, [1000, 8192]) is None
    assert slow_kernel(10_000, 1, 10_000, [10, 8]) is None
    assert slow_kernel(10_000_000, 1, 10_000_000, None) is None   # (a program cached without the work figures)


def test_cache_module_is_public(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMFN_CACHE_DIR", str(tmp_path / "c"))
    numfn.jit(lambda x: x * 3.0)(np.ones(3))   # whatever it compiles now goes to tmp_path/c
    assert numfn.cache.directory() == str(tmp_path / "c")
    assert numfn.cache.info()["directory"] == str(tmp_path / "c")
    numfn.cache.clear()
    assert numfn.cache.info()["entries"] == 0


def test_c_backend_reassociates_only_the_accumulation_of_reductions():
    # the LLVM backend's `reassoc` flag, in C: clang's pragma on the accumulation statement alone, so the reduction
    # vectorizes while every other operation keeps its order
    nf = numfn.jit(lambda x: (x * x + 1.0).sum(), backend="c").specialize(np.ones(1000, np.float32))
    pragma_lines = [line for line in nf.source.splitlines() if "reassociate" in line]
    assert len(pragma_lines) >= 1
    assert all(re.search(r"= \(acc\d+ \+ v\d+\); \}$", line) for line in pragma_lines), pragma_lines


WARM_DECIDES_ALIKE = r'''
import json, numpy as np, numfn
f = numfn.jit(lambda x: np.cumsum(x[:, None] * x, axis=0).sum())   # 800 bytes in and 8 out, 80 kB of scratch
nf = f.specialize(np.ones(100))
print(json.dumps({"release_gil": nf.fast_registration[-1], "compiled": numfn.runtime.compile_count,
                  "scheduled": "_scheduled" in vars(nf)}))
'''


def test_a_warm_process_decides_as_a_cold_one(tmp_path):
    # the scratch arena's size comes from the manifest: a warm process released the GIL for this call where a cold
    # one did not, because only the cold one had scheduled the function
    env = dict(os.environ, NUMFN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    runs = [json.loads(subprocess.run([sys.executable, "-c", WARM_DECIDES_ALIKE], env=env, capture_output=True,
                                      text=True, check=True).stdout) for _ in range(2)]
    assert runs == [{"release_gil": True, "compiled": 1, "scheduled": True},
                    {"release_gil": True, "compiled": 0, "scheduled": False}]


# ---- what selects a specialization ---------------------------------------------------------------------------------

def test_static_arguments_are_keyed_by_type_and_bits():
    # issue 18: statics were keyed by ==, so f(x, 2.0) reused f(x, 2)'s int32 code, -0.0 reused 0.0's and a NaN
    # made a new specialization on every call
    f = numfn.jit(lambda x, s: x * s, static_argnums=1)
    x = np.arange(3, dtype=np.int32)
    for s in [2, 2.0, np.float32(2), np.float64(2), True, (2, 2.0)[1], 0.0, -0.0]:
        r, expected = f(x, s), x * s
        assert r.dtype == expected.dtype and np.array_equal(np.signbit(r), np.signbit(expected)), s
        np.testing.assert_array_equal(r, expected)
    assert len(f.specializations) == 7   # 2, 2.0, float32(2), float64(2), True, 0.0, -0.0
    for _ in range(3): r = f(x, float("nan"))
    assert len(f.specializations) == 8 and np.isnan(r).all()
    g = numfn.jit(lambda x, axes: x.sum(axis=axes[0]) * axes[1], static_argnames="axes")
    y = np.ones((2, 3))
    np.testing.assert_array_equal(g(y, axes=(0, -0.0)), y.sum(axis=0) * -0.0)
    assert np.signbit(g(y, axes=(0, -0.0))).all() and not np.signbit(g(y, axes=(0, 0.0))).any()
    assert len(g.specializations) == 2


def test_errors_name_the_argument_with_static_arguments_around():
    # issue 18: with static_argnums the names shifted (the array x was called 'n')
    f = numfn.jit(lambda n, x: x + n, static_argnums=0)
    with pytest.raises(TypeError, match="argument 'x'"):
        f(1, np.ones(2, np.clongdouble))
    g = numfn.jit(lambda x, mode, y: x + y, static_argnames="mode")
    with pytest.raises(TypeError, match="argument 'y'"):
        g(np.ones(2), mode="a", y=np.ones(2, np.clongdouble))


def test_an_empty_list_is_an_empty_array():
    # issue 18: [] reached the function as a Python list
    f = numfn.jit(lambda x: x + 1)
    for value in ([], [[]], [[], []]):
        r, expected = f(value), np.asarray(value) + 1
        assert r.dtype == expected.dtype and r.shape == expected.shape


# ---- pickling, copying, multiprocessing ------------------------------------------------------------------------------

PICKLED_MODULE = '''
import numpy as np, numfn, numfn.runtime

@numfn.jit
def scale(x):
    return x * 2.0 + 1.0

def _offset(x, k):
    return x + k

offset = numfn.jit(_offset, static_argnums=1, backend="llvm")   # not published under its function's name

def scale_here(x):
    """scale(x) in a worker, and how many programs that worker compiled."""
    return scale(x), numfn.runtime.compile_count
'''

PICKLING = '''
import copy, json, multiprocessing as mp, pickle, sys
import numpy as np
import numfn, numfn.runtime, pickmod

if __name__ == "__main__":
    x = np.arange(4.0)
    s, o = pickmod.scale, pickmod.offset
    assert pickle.loads(pickle.dumps(s)) is s and copy.copy(s) is s and copy.deepcopy(s) is s
    o2 = pickle.loads(pickle.dumps(o))   # by value; in the process that pickled it, the object itself (numfn.pickled)
    assert o2 is o and o2.fn is o.fn and o2._static == o._static and o2.backend == "llvm"
    assert np.array_equal(o2(x, 3), x + 3) and copy.deepcopy([o])[0] is o
    s(x), o(x, 1)                      # compiled here: workers load them from the disk cache
    numfn.runtime.compile_count = 0    # what forked workers inherit
    out = {}
    for method in sys.argv[1:]:
        with mp.get_context(method).Pool(2) as pool:
            scaled = pool.map(pickmod.scale_here, [x, x + 1, x + 2])
            offsets = pool.starmap(o, [(x, 1), (x, 2)])
        out[method] = {"ok": all(np.array_equal(r, (x + i) * 2 + 1) for i, (r, _) in enumerate(scaled)) and
                       all(np.array_equal(r, x + k) for k, r in zip((1, 2), offsets)),
                       "compiled": [n for _, n in scaled]}
    print(json.dumps(out))
'''


def test_pickling_copying_and_process_pools(tmp_path):
    # issue 18: jitted functions could not be pickled or copied, so Pool.map(jitted, ...) failed
    import multiprocessing
    (tmp_path / "pickmod.py").write_text(PICKLED_MODULE)
    (tmp_path / "main.py").write_text(PICKLING)
    methods = [m for m in ("fork", "spawn", "forkserver") if m in multiprocessing.get_all_start_methods()]
    env = dict(os.environ, NUMFN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    out = subprocess.run([sys.executable, str(tmp_path / "main.py"), *methods], env=env, capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result == {m: {"ok": True, "compiled": [0, 0, 0]} for m in methods}


def test_an_entry_with_a_valid_checksum_but_a_bad_manifest_is_rebuilt(tmp_path, monkeypatch):
    # issue 18: such an entry raised KeyError/TypeError in every later process until the cache was cleared
    from numfn.runtime import _pack, _unpack
    monkeypatch.setenv("NUMFN_CACHE_DIR", str(tmp_path / "cache"))
    x = np.arange(3.0)

    def call() -> int:
        before = numfn.runtime.compile_count
        assert np.array_equal(numfn.jit(lambda x: x * 2.5 + 1)(x), x * 2.5 + 1)   # a fresh function: a warm start
        return numfn.runtime.compile_count - before

    assert call() == 1
    cache = DiskCache(str(tmp_path / "cache"))
    [name] = [n for n in os.listdir(tmp_path / "cache") if n.endswith(".nfc")]
    manifest, code = _unpack(cache.get(name[:-4]))
    for bad in [{"entry": 5}, {"entry": "not a symbol"}, {"constants": ["0" * 64]}, {"arena_bytes": "x"},
                {"ops": None}, {"ops": -1}, {"kernels": 3}, "not an object", []]:
        cache.put(name[:-4], _pack(dict(manifest, **bad) if isinstance(bad, dict) else bad, code))
        assert call() == 1, bad   # compiled again, and the entry replaced
        assert call() == 0, bad


KILLED_WHILE_COMPILING = '''
import numpy as np, numfn
numfn.jit(lambda x: x + 1, backend="c")(np.ones(2))
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_killed_process_leaves_no_compiler_running(tmp_path):
    # issue 18: compiler child processes outlived a killed parent
    import signal
    import time
    pidfile = tmp_path / "compiler.pid"
    fake = tmp_path / "slowcc"
    fake.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 120\n")
    fake.chmod(0o755)
    env = dict(os.environ, NUMFN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT, NUMFN_CC=str(fake))
    parent = subprocess.Popen([sys.executable, "-c", KILLED_WHILE_COMPILING], env=env)
    try:
        deadline = time.monotonic() + 60
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = int(pidfile.read_text())
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()

    def running() -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"   # a zombie has finished
        except OSError:
            return False

    deadline = time.monotonic() + 10
    while running() and time.monotonic() < deadline: time.sleep(0.05)
    alive = running()
    if alive: os.kill(pid, signal.SIGKILL)
    assert not alive, "the compiler outlived the process that started it"


def test_numfn_cc_naming_a_missing_compiler_says_so(monkeypatch, tmp_path):
    # issue 18: a raw FileNotFoundError
    monkeypatch.setenv("NUMFN_CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("NUMFN_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(numfn.NumfnError, match="NUMFN_CC=.*no-such-cc.* names no C compiler"):
        numfn.jit(lambda x: x + 1.5, backend="c")(np.ones(2))


# ---- memory: compiled code goes with the last reference ----------------------------------------------------------

RELEASE = r'''
import gc, json, os, sys, weakref
import numpy as np
import numfn

def rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

def make(i):
    table = np.linspace(0, 1, 8192) * (i + 1)   # 64 KiB: passed by pointer, not embedded
    return lambda x: np.sin(x) * (i + 0.5) + table[:8] * x.sum()

x = np.linspace(0, 1, 8)
backends, kinds, rounds = sys.argv[1].split(","), 4, int(sys.argv[2])
code = []   # weak references to every loaded program's code mapping
rss = []
for n in range(rounds):
    backend, i = backends[n % len(backends)], n // len(backends) % kinds
    f = numfn.jit(make(i), backend=backend)
    expected = np.sin(x) * (i + 0.5) + np.linspace(0, 1, 8192)[:8] * (i + 1) * x.sum()
    assert np.allclose(f(x), expected) and np.allclose(f(x), expected)   # the second call takes the fast path
    code.append(weakref.ref(f.specializations[0].compiled.keepalive))
    del f
    if n in (rounds // 5, rounds - 1):
        gc.collect()
        rss.append(rss_kib())
gc.collect()
print(json.dumps({"alive": sum(r() is not None for r in code), "rss": rss,
                  "compiled": numfn.runtime.compile_count}))
'''


# functions the release test makes (NUMFN_RELEASE_FUNCTIONS; 1,000 before the suite's time was cut): a leak of the
# size issue 18 found (25 KiB or more per function) is thousands of times the 4 KiB bound over the last 4/5 of them
RELEASE_FUNCTIONS = int(os.environ.get("NUMFN_RELEASE_FUNCTIONS", "400"))


def test_compiled_code_is_released_with_its_function(tmp_path):
    # issue 18: about 100 KiB of RSS per LLVM-compiled function, and 25-33 KiB per C one, were never returned.
    # RELEASE_FUNCTIONS functions (4 programs per backend, compiled once, then loaded from the disk cache into fresh
    # functions): every code mapping goes with its function (and its dispatcher entry, which held it), and RSS
    # stays flat.
    if not os.path.exists("/proc/self/statm"): pytest.skip("needs /proc to read RSS")
    backends = "llvm,c" if (os.environ.get("NUMFN_CC") or shutil.which("clang") or shutil.which("cc")) else "llvm"
    env = dict(os.environ, NUMFN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", RELEASE, backends, str(RELEASE_FUNCTIONS)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["alive"] == 0 and r["compiled"] == 4 * len(backends.split(","))
    per_function = (r["rss"][1] - r["rss"][0]) / (RELEASE_FUNCTIONS - RELEASE_FUNCTIONS // 5)
    assert per_function < 4, f"{per_function:.1f} KiB of RSS per function kept"


def test_graphs_are_released_with_their_function():
    # the IR is hash-consed in a weak table: once a function is gone, its graphs must be too (caches keyed by
    # nodes kept them alive: up to 200,000 lowered nodes, and 65,536 index expressions twice over)
    import gc
    from numfn.ir.uop import UOp
    x = np.ones((16, 8))

    def build(i):
        f = numfn.jit(lambda x: (np.cumsum(x * (i + 0.25), axis=1)[:, ::2] @ x[:4]).max(axis=0))
        return f.specialize(x).source   # traced, scheduled, lowered, rendered: every graph pass ran

    build(0)
    gc.collect()
    baseline = len(UOp._interned)
    for i in range(1, 21): build(i)
    gc.collect()
    assert len(UOp._interned) <= baseline + 5, len(UOp._interned) - baseline


# ---- the environment ------------------------------------------------------------------------------------------------

def test_one_parser_for_switches(monkeypatch):
    # NOOPT=false turned optimizations off while NUMFN_DISABLE_CACHE=false left the cache on
    from numfn import config
    for value, on in [("1", True), ("true", True), ("YES", True), (" on ", True), ("0", False), ("false", False),
                      ("No", False), ("off", False), ("", False)]:
        for name, read in [("NUMFN_NOOPT", config.noopt), ("NOOPT", config.noopt),
                           ("NUMFN_DISABLE_CACHE", config.cache_disabled), ("NUMFN_NO_DISPATCH_EXT",
                                                                            config.no_dispatch_extension)]:
            monkeypatch.delenv("NUMFN_NOOPT", raising=False)
            monkeypatch.delenv("NOOPT", raising=False)
            monkeypatch.setenv(name, value)
            assert read() is on, (name, value)
            monkeypatch.delenv(name)
    monkeypatch.setenv("NOOPT", "maybe")
    with pytest.warns(RuntimeWarning, match="not a switch value"):
        assert config.noopt()


def test_numfn_names_take_precedence_over_the_short_ones(monkeypatch):
    from numfn import config, debug
    monkeypatch.setenv("DEBUG", "3")
    assert debug.level() == 3
    monkeypatch.setenv("NUMFN_DEBUG", "1")
    assert debug.level() == 1
    monkeypatch.setenv("NUMFN_DEBUG", "")
    assert debug.level() == 3
    monkeypatch.setenv("NOOPT", "1")
    monkeypatch.setenv("NUMFN_NOOPT", "0")
    assert not config.noopt()
    monkeypatch.delenv("NUMFN_NOOPT")
    assert config.noopt()


def test_numfn_noopt_changes_the_program(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMFN_CACHE_DIR", str(tmp_path / "cache"))
    f = lambda x: np.exp(x) * 2.0   # noqa: E731
    plain = numfn.jit(f).specialize(np.ones(4))
    key, source = plain.cache_key, plain.source
    monkeypatch.setenv("NUMFN_NOOPT", "1")
    noopt = numfn.jit(f).specialize(np.ones(4))
    assert key != noopt.cache_key and "llvm.exp" in noopt.source and "llvm.exp" not in source


PERF_MAP = r'''
import json, os
import numpy as np, numfn
from numfn.runtime import perf_map_path

def scaled(x):
    return np.sin(x).sum() + x * 2.0

f = numfn.jit(scaled)
f(np.ones(8))
nf = f.specializations[0]
path = perf_map_path()
lines = open(path).read().splitlines() if os.path.exists(path) else []
if os.path.exists(path): os.remove(path)
print(json.dumps({"lines": lines, "entry": nf.compiled.address, "path": path}))
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="perf maps are Linux's")
@pytest.mark.parametrize("perf_map, level", [("0", "1"), ("1", "0")])
def test_numfn_perf_map_writes_a_perf_map(tmp_path, perf_map, level):
    # only NUMFN_PERF_MAP writes one (NUMFN_DEBUG did: a file at a fixed name in /tmp is not written unasked)
    env = dict(os.environ, NUMFN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT, NUMFN_PERF_MAP=perf_map,
               NUMFN_DEBUG=level)
    out = subprocess.run([sys.executable, "-c", PERF_MAP], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["path"].startswith("/tmp/perf-") and r["path"].endswith(".map")
    if perf_map == "0":
        assert r["lines"] == []
        return
    entries = [line.split(" ", 2) for line in r["lines"]]
    assert all(name.startswith("numfn scaled(float64[8])") for _, _, name in entries)
    [(start, size, _)] = [e for e in entries if e[2] == "numfn scaled(float64[8])"]
    assert int(start, 16) == r["entry"] and int(size, 16) > 0


def test_a_read_only_argument_is_named_next_to_static_ones():
    # the check of arguments the function writes into named them without the static arguments (here: 'n')
    def f(n, x):
        x[0] = n
        return x * 1

    a = np.ones(3)
    a.flags.writeable = False
    with pytest.raises(ValueError, match=r"read-only \(argument 'x'\)"):
        numfn.jit(f, static_argnums=0)(2, a)


def _step(a, w, y):
    a = np.tanh(a @ w) * y + 0.5 * a
    return a - a.mean(axis=0)


def _repeated_steps(x, w, y):   # six copies of each of the step's kernels, over different buffers
    a = _step(_step(_step(_step(_step(_step(x, w, y), w, y), w, y), w, y), w, y), w, y)
    b = x * 2.0 + y   # the same shapes, other constants: not the same kernel
    c = x * 3.0 + y
    return a, b, c


def test_identical_kernels_are_built_and_compiled_once(backend):
    from helpers import check
    from numfn.codegen.program import ForwardedProgram
    rng = np.random.default_rng(0)
    x, y, w = rng.standard_normal((64, 32)), rng.standard_normal((64, 32)), rng.standard_normal((32, 32)) / 8
    check(_repeated_steps, x, w, y, backend=backend)
    nf = numfn.jit(_repeated_steps, backend=backend).specialize(x, w, y)
    # a kernel equal to an earlier one is a function calling it: a few lines (a real 64x32 kernel is far longer)
    calls = [k for k in nf.rendered_kernels if len(k.source) < 400]
    assert len(calls) >= 10, "the five later copies of each step call the first copy's kernels"
    assert len(nf.rendered_kernels) - len(calls) <= 12
    # the kernels they call stay out of line (LLVM optimized every inlined copy again), except the mean's division
    # over 32 elements (E_32: a call would cost more); the kernels called once, b's and c's, stay inlinable
    word = "noinline" if backend == "llvm" else "__attribute__((noinline))"
    called = {k.program.first.name for k in nf.rendered_kernels if isinstance(k.program, ForwardedProgram)}
    assert len(called) >= 4 and any(name.startswith("E_32") for name in called)
    assert {k.name for k in nf.rendered_kernels if word in k.source} == \
        {name for name in called if not name.startswith("E_32")}


def _repeated_in_a_loop(x, w, y):
    a = x
    for _ in range(8):   # (more than the unroll limit: a native loop)
        a = _step(_step(_step(_step(a, w, y), w, y), w, y), w, y)
    return a


def test_repeated_kernels_inside_a_loop_stay_inlinable(backend):
    """Inside a loop's body a kernel is optimized with its neighbours when inlined (the cavity flow's loop ran 1.2x
    faster so): kernels computing the same there are built once, but none is kept out of line."""
    from helpers import check
    rng = np.random.default_rng(0)
    x, y, w = rng.standard_normal((64, 32)), rng.standard_normal((64, 32)), rng.standard_normal((32, 32)) / 8
    check(_repeated_in_a_loop, x, w, y, backend=backend)
    nf = numfn.jit(_repeated_in_a_loop, backend=backend).specialize(x, w, y)
    assert sum(len(k.source) < 400 for k in nf.rendered_kernels) >= 6   # (equal kernels call the first)
    assert not any("noinline" in k.source for k in nf.rendered_kernels)
