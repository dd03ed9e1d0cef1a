"""The warm start (issue 26): a process that finds a function in the disk cache traces it and loads the cached code,
and runs none of the stages a cache hit does not need (simplifying, scheduling, rendering, compiling); the key it
looks up still changes whenever numfn's source does (numfn.runtime.target.build_id); and `import numfn` leaves
numfn.autodiff unloaded until one of its functions is used.

A warm process loads none of the compiler's code generation either. The stages are counted from the compiler's own
stage records (numfn.progress.stage), not timed, so the tests hold on a loaded machine. Each function runs in two
fresh processes over one cache directory: cold, then warm; both results are compared with NumPy's on the same
inputs."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> (source defining `f` and `args`, the NumPy expression of the expected result over `args`). Each covers a
# part of what a cache hit must restore without scheduling: pointer constants, BLAS externs, loops, run-time
# output lengths, checks, in-place writes, several outputs, 0-d and size-0 arrays, views as inputs.
CASES = {
    "elementwise": ("def f(a, b): return a * b + np.sin(b) * np.exp(-a * a)\n"
                    "args = [rng.standard_normal((5, 7)), rng.standard_normal(7)]",
                    "a * b + np.sin(b) * np.exp(-a * a)"),
    "reduction_and_broadcast": ("def f(x): return (x - x.mean(axis=0)) / x.std(axis=0)\n"
                                "args = [rng.standard_normal((6, 4)).astype(np.float32)]",
                                "(a - a.mean(axis=0)) / a.std(axis=0)"),
    "captured_constant": ("W = np.arange(12.0).reshape(3, 4)\n"
                          "def f(x): return x @ W + W.sum(axis=0)\n"
                          "args = [rng.standard_normal((2, 3))]",
                          "a @ np.arange(12.0).reshape(3, 4) + np.arange(12.0).reshape(3, 4).sum(axis=0)"),
    "blas_product": ("def f(x, w): return np.maximum(x @ w, 0.0)\n"
                     "args = [rng.standard_normal((64, 48)), rng.standard_normal((48, 32))]",
                     "np.maximum(a @ b, 0.0)"),
    "gram_matrix": ("def f(x): return x @ x.T\n"
                    "args = [rng.standard_normal((80, 60))]",
                    "a @ a.T"),
    "loop": ("def f(x):\n"
             "    for _ in range(40):\n"
             "        x = 0.5 * (x + 2.0 / x)\n"
             "    return x\n"
             "args = [rng.uniform(1.0, 3.0, 5)]",
             "np.full(5, np.sqrt(2.0))"),
    "run_time_length": ("def f(x): return x[x > 0]\n"
                        "args = [rng.standard_normal(9)]",
                        "a[a > 0]"),
    "zero_d_and_size_0": ("def f(x, e): return x * 2.0, e + 1\n"
                          "args = [np.array(1.5), np.zeros((0, 3), np.int16)]",
                          "(a * 2.0, b + 1)"),
    "strided_view_input": ("def f(x): return x.cumsum(axis=1)\n"
                           "args = [rng.standard_normal((4, 10))[::-2, 1::3]]",
                           "a.cumsum(axis=1)"),
    "in_place": ("def f(x):\n"
                 "    x[1:] += 1.0\n"
                 "    return x.sum()\n"
                 "args = [np.arange(6.0)]",
                 "np.arange(6.0)[1:].sum() + 5.0"),
    "random_draw": ("import numfn.random as nr\n"
                    "def f(key, x): return x + nr.uniform(key, x.shape)\n"
                    "args = [nr.key(3), np.zeros(6)]",
                    None),
}

CHILD = r"""
import json, sys
import numpy as np
import numfn, numfn.progress
stages = []
recorded = numfn.progress.stage
def stage(name, total=None):
    stages.append(name.split(" ", 1)[0] if not name.startswith("cache") else name)
    return recorded(name, total)
numfn.progress.stage = stage
rng = np.random.default_rng(0)
exec(sys.argv[1])
out = numfn.jit(f)(*[x.copy() if isinstance(x, np.ndarray) else x for x in args])
a, b = (list(args) + [None])[:2]
want = eval(sys.argv[2]) if sys.argv[2] != "None" else None
outs = out if isinstance(out, tuple) else (out,)
wants = want if isinstance(want, tuple) else (want,)
ok = want is None or all(np.shape(o) == np.shape(w) and np.allclose(o, w, rtol=1e-5, atol=1e-6)
                         for o, w in zip(outs, wants, strict=True))
print(json.dumps({"stages": stages, "ok": bool(ok), "result": [np.asarray(o).tolist() for o in outs],
                  "loaded": [m for m in ("numfn.schedule.scheduler", "numfn.codegen.program", "numfn.renderer.llvm",
                                         "numfn.renderer.c", "numfn.autodiff") if m in sys.modules]}))
"""

HIT_STAGES = ["tracing", "cache lookup"]       # what a warm start runs, in this order
MISS_ONLY = {"simplifying", "scheduling", "rendering", "compiling"}


def run_child(cache: str, source: str, expected: str | None, **env_overrides) -> dict:
    env = dict(os.environ, NUMFN_CACHE_DIR=cache, PYTHONPATH=ROOT, **env_overrides)
    env.pop("NUMFN_DISABLE_CACHE", None)
    p = subprocess.run([sys.executable, "-c", CHILD, source, str(expected)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(CASES))
def test_a_warm_start_runs_only_tracing_and_the_lookup(tmp_path, name, backend):
    source, expected = CASES[name]
    cache = str(tmp_path / "cache")
    cold = run_child(cache, source, expected, NUMFN_BACKEND=backend)
    warm = run_child(cache, source, expected, NUMFN_BACKEND=backend)
    assert cold["ok"] and warm["ok"]
    assert MISS_ONLY <= set(cold["stages"]), cold["stages"]     # the cold process compiled it
    assert warm["stages"] == HIT_STAGES, warm["stages"]         # the warm one looked it up, nothing more
    assert warm["result"] == cold["result"]                     # the very same numbers (random_draw too)
    # nor does it load the compiler: scheduler, code generation, renderers, autodiff (x @ x.T asks the scheduler's
    # strided_view whether it is a symmetric product, and so loads the scheduler's package)
    assert warm["loaded"] == (["numfn.schedule.scheduler"] if name == "gram_matrix" else []), warm["loaded"]
    assert "numfn.codegen.program" in cold["loaded"]            # (what the cold process did load)


@pytest.mark.nocompile
def test_a_changed_source_file_changes_the_source_id(tmp_path):
    # the build id (part of every cache key) follows numfn's files: an edit of the same size, a new file, a removed
    # one, a rename each give another id; an unchanged tree gives the same id
    from numfn.runtime.target import source_id
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.c").write_text("int b;\n")
    (pkg / "notes.txt").write_text("not source\n")
    seen = {source_id(str(pkg))}
    assert source_id(str(pkg)) in seen                       # deterministic
    (pkg / "notes.txt").write_text("still not source\n")
    assert source_id(str(pkg)) in seen                       # only .py, .c and .h files count
    st = os.stat(pkg / "a.py")
    (pkg / "a.py").write_text("x = 2\n")                     # same size
    os.utime(pkg / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns))   # even with its modification time put back
    edited = source_id(str(pkg))
    assert edited not in seen
    (pkg / "sub" / "c.h").write_text("#define C\n")        # a new file
    added = source_id(str(pkg))
    assert added != edited
    (pkg / "sub" / "c.h").unlink()                          # removed again: the tree is as it was
    assert source_id(str(pkg)) == edited
    (pkg / "sub" / "b.c").rename(pkg / "sub" / "d.c")       # renamed
    renamed = source_id(str(pkg))
    assert renamed not in (edited, added, *seen)
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "a.cpython-311.py").write_text("")
    assert source_id(str(pkg)) == renamed                   # bytecode caches are not source


@pytest.mark.nocompile
def test_build_id_is_the_installed_sources(monkeypatch):
    from numfn.runtime import target
    import numfn.version
    first = target.build_id()
    target.build_id.cache_clear()
    try:
        assert target.build_id() == first
        monkeypatch.setattr(numfn.version, "__version__", "0.0.0-other")
        target.build_id.cache_clear()
        assert target.build_id() != first
    finally:
        target.build_id.cache_clear()


def test_import_leaves_autodiff_unloaded_until_used():
    code = ("import sys, numpy as np, numfn\n"
            "before = 'numfn.autodiff' in sys.modules\n"
            "g = numfn.grad(lambda x: (x * x).sum())(np.arange(3.0))\n"
            "from numfn import *\n"
            "print(before, 'numfn.autodiff' in sys.modules, g.tolist(), numfn.jvp is sys.modules['numfn.autodiff'].jvp,"
            " all(n in dir(numfn) for n in numfn.__all__), callable(custom_vjp))")
    p = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["False", "True", "[0.0,", "2.0,", "4.0]", "True", "True", "True"]


@pytest.mark.nocompile
def test_a_missing_attribute_is_an_attribute_error():
    import numfn
    with pytest.raises(AttributeError, match="no attribute 'no_such_function'"):
        numfn.no_such_function  # noqa: B018
    assert not hasattr(numfn, "gradient_of")


@pytest.mark.nocompile
@pytest.mark.parametrize("dt", ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                "float16", "float32", "float64", "complex64", "complex128"])
def test_dtype_bounds_and_lookup_match_numpy(dt):
    from numfn.dtype import dtypes
    d = dtypes.from_numpy(np.dtype(dt))
    assert d.name == dt and dtypes.from_numpy(dt) is d and dtypes.from_numpy(np.dtype(dt).type) is d
    if d.kind in "iu":
        info = np.iinfo(dt)
        assert (d.min, d.max) == (int(info.min), int(info.max))
        assert type(d.min) is int and type(d.max) is int
    if np.dtype(dt).itemsize > 1:   # the other byte order is refused, as before
        with pytest.raises(TypeError, match="does not support dtype"):
            dtypes.from_numpy(np.dtype(dt).newbyteorder())


def test_np_random_is_guarded_at_every_trace_and_restored_after():
    import numfn
    from numfn.errors import NumfnError
    original = np.random.standard_normal

    def draws(x):
        return x + np.random.standard_normal()

    for _ in range(2):   # the wrappers made at the first trace are reused by the second
        with pytest.raises(NumfnError, match="numpy.random.standard_normal inside a compiled function"):
            numfn.jit(draws)(np.zeros(2))
        assert np.random.standard_normal is original
