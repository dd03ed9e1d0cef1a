"""numfn.export: functions exported as standalone C, built with the system compiler into a generated C driver that
reads NumPy's inputs from a file, and compared bit for bit with numfn's own C-backend result and closely with
NumPy's. The build uses numfn's C flags plus -std=c99 -Wall -Wextra -Werror; a second table builds every driver
under -fsanitize=address,undefined (and gcc, where installed, compiles every export warning-free). Refusals
(library routines, unsupported dtypes, value-dependent sizes) raise errors naming the reason and the line."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

import numfn
from numfn import config
from numfn.export import ExportError, driver
from numfn.export.cli import parse_args_spec
from numfn.pytree import flatten
from numfn.tools import demo
from helpers import assert_same, numpy_result

pytestmark = pytest.mark.skipif(not (os.environ.get("NUMFN_CC") or shutil.which("clang") or shutil.which("cc")),
                                reason="export tests build C: no C compiler (clang or cc) on PATH")


# ---- the functions ------------------------------------------------------------------------------------------------
def biquad(x, b, a):
    """A direct-form-I biquad filter: a native loop over samples carrying two samples of state."""
    y = np.zeros_like(x)
    x1 = x2 = y1 = y2 = x[0] * 0
    for i in range(x.shape[0]):
        yi = b[0] * x[i] + b[1] * x1 + b[2] * x2 - a[1] * y1 - a[2] * y2
        y[i] = yi
        x2, x1 = x1, x[i]
        y2, y1 = y1, yi
    return y


def newton_sqrt(x):
    """A while loop on a traced condition (Newton's iteration until it settles)."""
    r = x * 0 + 1.0
    k = 0
    while k < 30 and np.abs(r * r - x).max() > 1e-6:
        r = 0.5 * (r + x / r)
        k += 1
    return r, k


def branch(x):
    if x.sum() > 0:
        y = x * 2.0
    else:
        y = -x
    return y


def accumulate_into(acc, x):
    """Writes into an argument: an in/out parameter of the export."""
    acc[1:] += x[:-1]
    acc *= 0.5
    return acc.sum()


def int_semantics(a, b, s):
    return a // b, a % b, a << s, a >> s, a * 1000003 + b, (a - b).astype(np.int8)


def uint_wrap(a, b):
    return a - b, a * b, a // np.maximum(b, 1)


def complex_rotate(z, w):
    return z * w + np.conj(z), np.abs(z)


def half_precision(x):
    return (x * x + 1).astype(np.float16)


def masked(x):
    return x[x > 0]


def masked_rows(x):
    return x[x[:, 0] > 0] * 2.0


def gathered(x, i):
    return x[i] * 2.0


def small_solve(a, b):
    return np.linalg.solve(a, b)


def row_stats(x):
    return {"mean": x.mean(axis=1), "argmax": x.argmax(axis=1), "cumsum": np.cumsum(x, axis=0)}


def clip_scale(x, lo, scale):
    return np.clip(x, lo, 1.0) * scale


def docs_step(u, dt):   # docs/getting-started.md
    lap = u[:-2] - 2.0 * u[1:-1] + u[2:]
    out = np.zeros_like(u)
    out[1:-1] = u[1:-1] + dt * lap
    return out


def product(a, b):
    """Large enough for numfn to call BLAS's GEMM; the export traces it as generated loops."""
    return a @ b


def pairwise(x):
    return np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))


def _per_row(x):
    return (x - x.mean()) / (x.std() + 1e-3)


vmapped = numfn.vmap(_per_row)
svmapped = numfn.svmap(_per_row)
MAPPED = {"vmapped", "svmapped"}   # NumPy's result: _per_row of each row


def logic(x, m):
    return (x > 0) & m, np.any(m), np.count_nonzero(m)


def sort_rows(x, y):
    """numfn's sorts, which the export writes as C: values and positions, NaNs and signed zeros, stable."""
    return np.sort(x, axis=-1), np.argsort(x, axis=-1, kind="stable"), np.sort(y), np.argsort(y, kind="stable")


def robust_stats(x, y):
    """numfn's selection (np.partition's routine), which the export writes as an in-place sort."""
    return np.median(x, axis=-1), np.percentile(y, [10.0, 50.0, 90.0]), np.median(y)


def partitioned(x):
    return np.partition(x, (3, 50), axis=-1)


def _with_specials(x):
    x.reshape(-1)[:8] = [np.nan, -0.0, 0.0, -np.nan, np.inf, -np.inf, 0.0, np.nan]
    return x


def five_point(u):
    """An in-place stencil numfn runs tile by tile (numfn.codegen.tiling) at this size."""
    u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def ignores_second(x, unused):
    return x * 2


def static_power(x, n):
    return x ** n


TABLE = np.random.default_rng(5).standard_normal(6000).astype(np.float32)   # 24 KB: passed by pointer by numfn


def big_constant(x):
    """A captured array above the embedding limit: numfn passes it by pointer, the export embeds it."""
    return x * TABLE[:x.shape[0]] + TABLE[-1]


def _r(seed=0):
    return np.random.default_rng(seed)


def _f32(*shape, seed=0):
    return _r(seed).standard_normal(shape).astype(np.float32)


# id -> (function, argument maker, static argument names)
CASES = {
    "fused_elementwise": (demo.fused_elementwise, lambda: [_f32(1000, seed=k) for k in range(3)], ()),
    "sum_squares": (demo.sum_squares, lambda: [_f32(1000)], ()),
    "softmax_rows": (demo.softmax_rows, lambda: [_f32(16, 8)], ()),
    "layernorm": (demo.layernorm, lambda: [_f32(16, 8)], ()),
    "mlp": (demo.mlp, lambda: [_f32(4, 8), _f32(8, 6, seed=1) * 0.3, _f32(6, seed=2), _f32(6, 3, seed=3) * 0.3,
                                _f32(3, seed=4)], ()),
    "laplacian": (demo.laplacian, lambda: [_f32(12, 10)], ()),
    "quat_rotate": (demo.quat_rotate, lambda: [_r().standard_normal(4), _r(1).standard_normal(3)], ()),
    "biquad": (biquad, lambda: [_f32(64), np.array([0.2, 0.4, 0.2], np.float32),
                                np.array([1.0, -0.5, 0.25], np.float32)], ()),
    "newton_sqrt": (newton_sqrt, lambda: [np.abs(_r().standard_normal(10)) + 0.5], ()),
    "branch_positive": (branch, lambda: [np.abs(_f32(5)) + 0.1], ()),
    "branch_negative": (branch, lambda: [-np.abs(_f32(5)) - 0.1], ()),
    "in_place": (accumulate_into, lambda: [_r().standard_normal(6), _r(1).standard_normal(6)], ()),
    "int_semantics": (int_semantics, lambda: [np.array([7, -7, 7, -7, 0, 2**31 - 1, -2**31, 5], np.int32),
                                              np.array([2, 2, -2, -2, 3, 3, -1, 0], np.int32),
                                              np.array([0, 1, 3, 31, 5, 2, 7, 4], np.int32)], ()),
    "uint_wrap": (uint_wrap, lambda: [np.array([0, 1, 200, 255], np.uint8), np.array([1, 2, 100, 255], np.uint8)],
                  ()),
    "complex": (complex_rotate, lambda: [(_f32(5) + 1j * _f32(5, seed=1)).astype(np.complex64),
                                         np.complex64(0.6 + 0.8j)], ()),
    "float16": (half_precision, lambda: [_f32(7).astype(np.float16)], ()),
    "mask_run_time_length": (masked, lambda: [_f32(9)], ()),
    "mask_rows": (masked_rows, lambda: [_f32(8, 3)], ()),
    "gather": (gathered, lambda: [_f32(5), np.array([4, 0, -1, 2])], ()),
    "small_solve": (small_solve, lambda: [_r().standard_normal((3, 3)) + 3 * np.eye(3), _r(1).standard_normal(3)],
                    ()),
    "dict_outputs": (row_stats, lambda: [_f32(5, 4)], ()),
    "scalars": (clip_scale, lambda: [_f32(6), -0.5, np.float32(3.0)], ()),
    "docs_step": (docs_step, lambda: [np.linspace(0.0, 1.0, 11) ** 2, 0.1], ()),
    "large_product": (product, lambda: [_f32(96, 80), _f32(80, 64, seed=1)], ()),
    "pairwise": (pairwise, lambda: [_f32(6, 3)], ()),
    "vmapped": (vmapped, lambda: [_f32(4, 6)], ()),
    "svmapped": (svmapped, lambda: [_f32(3, 5)], ()),
    "empty": (demo.fused_elementwise, lambda: [np.zeros(0, np.float32)] * 3, ()),
    "size_one": (demo.softmax_rows, lambda: [_f32(1, 1)], ()),
    "empty_rows": (demo.layernorm, lambda: [_f32(0, 4)], ()),
    "bools": (logic, lambda: [_f32(7), _r().random(7) < 0.5], ()),
    "sort_floats": (sort_rows, lambda: [_with_specials(_f32(3, 90)), _with_specials(_r().standard_normal(20))], ()),
    "sort_ints": (sort_rows, lambda: [_r().integers(-9, 9, (4, 100)).astype(np.int8),
                                      _r(1).integers(0, 2**63, 40, dtype=np.uint64)], ()),
    "tiled_in_place_stencil": (five_point, lambda: [_r().random((700, 513))], ()),
    "median_percentile": (robust_stats, lambda: [_f32(4, 21), _with_specials(_r(2).standard_normal(101))], ()),
    "unused_argument": (ignores_second, lambda: [_f32(3), _f32(4)], ()),
    "big_constant": (big_constant, lambda: [_f32(5000)], ()),
    "static_power": (static_power, lambda: [_f32(5), 3], ("n",)),
}


def _export(tmp_path, case: str):
    fn, make, statics = CASES[case]
    args = make()
    kwargs = {}
    if statics:   # passed by keyword: the export's example and the driver's inputs are the array arguments
        kwargs = {statics[0]: args.pop()}
    exported = numfn.export(fn, *args, name=case, dir=str(tmp_path), static_argnames=statics, **kwargs)
    return fn, args, kwargs, exported


def _leaves(args):
    return [np.asarray(x) for x in flatten(args)[0]]


@pytest.mark.parametrize("case", list(CASES))
def test_export_matches_numfn_and_numpy(tmp_path, case):
    fn, args, kwargs, exported = _export(tmp_path, case)
    exe = driver.build(exported)   # numfn's flags, -std=c99 -Wall -Wextra -Werror
    status, outs, _ = driver.run(exported, exe, [x.copy() for x in _leaves(args)])
    assert status == 0
    jit_args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    with config.overriding("NUMFN_BLAS", "none"):   # as the export traces it: products as generated loops
        want_numfn = numfn.jit(fn, backend="c", static_argnames=tuple(kwargs))(*jit_args, **kwargs)
    written = [p for p in exported.library.params if p.role == "inout"]
    numfn_leaves = [np.asarray(jit_args[p.slot]) for p in written] + _leaves(want_numfn)
    assert len(outs) == len(numfn_leaves)
    for got, want in zip(outs, numfn_leaves):   # bitwise: the same kernels, built with the same flags
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes(), (case, got, want)
    np_args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    want_numpy = numpy_result(fn, np_args, kwargs) if case not in MAPPED else \
        np.stack([_per_row(row) for row in args[0]])
    numpy_leaves = _leaves(want_numpy)
    if written:
        numpy_leaves = [np.asarray(a, copy=True) for a in args]
        fn(*numpy_leaves)
        numpy_leaves = [numpy_leaves[p.slot] for p in written] + _leaves(numpy_result(fn, args))
    for got, want in zip(outs, numpy_leaves):
        assert_same(got, want, rtol=1e-5 if got.dtype != np.float16 else 2e-3, atol=1e-5, path=case)


def test_jitted_function_exports_with_its_static_arguments(tmp_path):
    jitted = numfn.jit(static_power, static_argnums=1, backend="c")
    exported = numfn.export(jitted, _f32(4), 3, dir=str(tmp_path))
    assert "int static_power(const float *x, float *out);" in exported.library.header
    exe = driver.build(exported)
    status, (out,), _ = driver.run(exported, exe, [_f32(4)])
    assert status == 0 and out.tobytes() == jitted(_f32(4), 3).tobytes()
    np.testing.assert_allclose(out, _f32(4) ** 3, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16, np.uint8])
def test_partition_puts_each_kth_in_place(tmp_path, dtype):
    """np.partition's other positions are unspecified (numfn's introselect and the export's sort order them
    differently): each kth holds NumPy's value, nothing before it is larger, nothing after it smaller."""
    x = (_r(7).standard_normal((3, 120)) * 40).astype(dtype)
    if dtype == np.float64: x[0, :5] = np.nan
    exported = numfn.export(partitioned, x, dir=str(tmp_path))
    status, (got,), _ = driver.run(exported, driver.build(exported), [x])
    want = np.partition(x, (3, 50), axis=-1)
    assert status == 0
    np.testing.assert_array_equal(got[:, [3, 50]], want[:, [3, 50]])
    np.testing.assert_array_equal(np.sort(got, axis=-1), np.sort(x, axis=-1))
    for row in got:
        for k in (3, 50):
            before, after = row[:k], row[k + 1:]
            if np.isnan(row[k]): continue   # NaNs sort last (what follows is checked by the sort above)
            assert not np.isnan(before).any() and np.all(before <= row[k])
            assert np.all((after >= row[k]) | np.isnan(after))


def test_failed_check_is_a_return_code(tmp_path):
    """An index out of bounds, where NumPy raises IndexError: the call returns the check's number, which the
    header documents with NumPy's message."""
    fn, args, _, exported = _export(tmp_path, "gather")
    exe = driver.build(exported)
    status, _, _ = driver.run(exported, exe, [args[0], np.array([4, 0, 5, 2])])
    assert status == 1
    assert "1: IndexError: index P is out of bounds for axis 0 with size 5" in exported.library.header
    with pytest.raises(IndexError):
        fn(args[0], np.array([4, 0, 5, 2]))


def test_header_names_and_layout(tmp_path):
    _, _, _, exported = _export(tmp_path, "in_place")
    header = open(exported.header).read()
    # (its scratch values, 6 doubles, live on the program's stack: no workspace is asked of the caller)
    assert "int in_place(double *acc, const double *x, double *out);" in header
    assert "workspace" not in header
    assert "writes into" in header
    _, _, _, exported = _export(tmp_path, "mask_run_time_length")
    assert "const float *x, float *out, int64_t *out_length, void *workspace" in exported.library.header
    assert "size_t mask_run_time_length_workspace_size(void);" in exported.library.header
    _, _, _, exported = _export(tmp_path, "scalars")   # 0-d inputs by value
    assert "int scalars(const float *x, double lo, float scale, float *out);" in exported.library.header
    _, _, _, exported = _export(tmp_path, "dict_outputs")
    # a dict's outputs in its leaves' order (sorted keys), named by key
    assert "int64_t *out_argmax, float *out_cumsum, float *out_mean" in exported.library.header
    source = open(exported.source).read()
    assert "malloc" not in source and "pthread" not in source and "Python" not in source
    assert "reads in0 (x)" in source


# the functions the sanitizers run: loops, branches, masks, checks, integer edge cases, in-place writes, scratch
SANITIZED = ["sort_floats", "sort_ints", "median_percentile", "biquad", "newton_sqrt", "branch_negative", "in_place",
             "int_semantics",
             "uint_wrap", "complex",
             "float16", "mask_run_time_length", "gather", "dict_outputs", "vmapped", "small_solve", "layernorm"]


@pytest.mark.parametrize("case", SANITIZED)
def test_export_under_sanitizers(tmp_path, case):
    """No undefined behaviour, no access out of bounds: the driver built with -fsanitize=address,undefined (any
    report aborts it) computes NumPy's result."""
    fn, args, kwargs, exported = _export(tmp_path, case)
    flags = ("-O1", *driver.REQUIRED_CFLAGS, *driver.STRICT_WARNINGS, *driver.SANITIZE)
    try:
        exe = driver.build(exported, flags=flags)
    except subprocess.CalledProcessError as e:
        if "sanitize" in e.stderr and "unsupported" in e.stderr: pytest.skip("the C compiler has no sanitizers")
        raise
    status, outs, _ = driver.run(exported, exe, _leaves(args))
    assert status == 0
    if any(p.role == "inout" for p in exported.library.params): return   # compared in the bitwise test
    want = numpy_result(fn, args, kwargs) if case not in MAPPED else np.stack([_per_row(row) for row in args[0]])
    for got, w in zip(outs, _leaves(want)):
        assert_same(got, w, rtol=1e-5 if got.dtype != np.float16 else 2e-3, atol=1e-5, path=case)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_gcc_compiles_every_export_warning_free(tmp_path):
    sources = []
    for case in CASES:
        _, _, _, exported = _export(tmp_path / case, case)
        sources.append(exported.source)
    proc = subprocess.run(["gcc", "-O2", *driver.REQUIRED_CFLAGS, "-Wall", "-Wextra", "-Werror", "-pedantic", "-c",
                           *sources], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_makefile_builds(tmp_path):
    if shutil.which("make") is None: pytest.skip("make is not installed")
    _, _, _, exported = _export(tmp_path, "softmax_rows")
    proc = subprocess.run(["make", "-s", f"CFLAGS=-O1 {' '.join(driver.STRICT_WARNINGS)}"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "libsoftmax_rows.a").exists() and (tmp_path / "libsoftmax_rows.so").exists()


# ---- refusals -----------------------------------------------------------------------------------------------------
def eigenvalues(a):
    return np.linalg.eig(a)[0]


def least_squares(a, b):
    return np.linalg.lstsq(a, b)[0]


@pytest.mark.parametrize("fn, args, words", [   # (what does export: tests/test_export_linalg.py)
    (eigenvalues, [np.eye(40)], ["numpy.linalg.eig calls LAPACK (geev)", "return np.linalg.eig(a)[0]"]),
    (least_squares, [np.eye(40), np.ones(40)], ["numpy.linalg.lstsq calls LAPACK",
                                                "return np.linalg.lstsq(a, b)[0]"]),
])
def test_library_routines_are_refused_naming_the_line(tmp_path, fn, args, words):
    with pytest.raises(ExportError) as info:
        numfn.export(fn, *args, dir=str(tmp_path))
    for w in words: assert w in str(info.value)
    assert not os.listdir(tmp_path)


def object_values(x):
    return x + 1


def value_sized(x):
    return np.zeros(int(x.max())) + 1


def test_unsupported_inputs_are_refused(tmp_path):
    with pytest.raises(TypeError, match="object"):
        numfn.export(object_values, np.array([1, "a"], dtype=object), dir=str(tmp_path))
    # a Python number computed from the arguments: jit compiles one program per value, export refuses
    with pytest.raises(ExportError, match=r"value computed from the arguments.*test_export.py.*value_sized"):
        numfn.export(value_sized, np.full(3, 4.0), dir=str(tmp_path))
    with pytest.raises(ValueError, match="C identifier"):
        numfn.export(object_values, np.zeros(3), name="not a name", dir=str(tmp_path))


def test_cli_args_spec():
    a, b, c = parse_args_spec("float32[8,3], float32[3], int64")
    assert (a.shape, a.dtype, b.shape, c.shape, c.dtype) == ((8, 3), np.float32, (3,), (), np.int64)
    with pytest.raises(ValueError, match="not a NumPy dtype"):
        parse_args_spec("floot[3]")
    with pytest.raises(ValueError, match="must be a number"):
        parse_args_spec("float32[n,3]")


def test_cli_writes_the_library(tmp_path):
    from numfn.__main__ import main
    assert main(["export", "tests.test_export:biquad", "--args", "float32[16], float32[3], float32[3]", "-o",
                 str(tmp_path), "--name", "filter"]) == 0
    assert sorted(os.listdir(tmp_path)) == ["Makefile", "filter.c", "filter.cmake", "filter.h"]
    header = (tmp_path / "filter.h").read_text()
    assert "int filter(const float *x, const float *b, const float *a, float *out" in header
    assert main(["export", "tests.test_export:eigenvalues", "--args", "float64[40,40]",
                 "-o", str(tmp_path / "x")]) == 1
