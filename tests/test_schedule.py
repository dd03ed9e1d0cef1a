"""The scheduler: kernel counts for a catalogue of patterns, memory reuse, constants, aliasing, simplification and the
printed schedule. Every case is also checked against NumPy. The schedule's structure does not depend on the backend:
the tests of structure alone trace and schedule without compiling (the compile-free tier, `-m nocompile`), and
test_scheduled_cases_match_numpy compiles and runs their functions on each backend."""
import numpy as np
import pytest

import numfn
from numfn.ir.uop import Ops

rng = np.random.default_rng(7)


def compiled(fn, *args, backend="llvm"):
    """(result, NumericalFunction) of fn compiled for args, after checking the result against NumPy."""
    f = numfn.jit(fn, backend=backend)
    got, want = f(*args), fn(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=2e-5 if w.dtype == np.float32 else 1e-12, atol=1e-5)
    return got, f.specialize(*args)


def scheduled(fn, *args):
    """The NumericalFunction of fn for args, traced and scheduled (its schedule, memory plan and layout), not
    compiled: the compile-free tier's view of the scheduler."""
    return numfn.jit(fn).specialize(*args)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm(x):
    m = x.mean(axis=1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5)


def stencil(u):
    return u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1] - 4.0 * u[1:-1, 1:-1]


def five_kinds(a, y, w):
    """One cycle of benchmarks/compile_programs.py's straight line: values read at several indices (by the
    reductions and the product) along a chain, where storing the outermost is enough."""
    a = np.sin(a) * y
    a = a - np.exp(a).sum(axis=1, keepdims=True) * 0.01
    a = np.sqrt(np.abs(a)) + y
    a = (a @ w) * 0.1
    return np.maximum(a, a.mean(axis=0))


X = rng.standard_normal((33, 17)).astype(np.float32)
CATALOGUE = [
    ("elementwise chain", lambda a, b: np.sqrt(np.abs(a * b + 1.0)) - a / (b * b + 1.0), (X, X.T.copy().T), 1),
    ("sum of squares", lambda a: (a * a).sum(), (X,), 1),
    ("softmax rows", softmax, (X,), 1),
    ("layernorm", layernorm, (X,), 1),
    ("matmul + bias + relu", lambda x, w, b: np.maximum(x @ w + b, 0.0),
     (X, rng.standard_normal((17, 9)).astype(np.float32), rng.standard_normal(9).astype(np.float32)), 1),
    ("five-point stencil", stencil, (X,), 1),
    ("two outputs sharing a subexpression", lambda x: ((s := np.exp(x) * x) + 1.0, s * s), (X,), 1),
    ("transpose then elementwise", lambda x: x.T * 2.0 + x.T, (X,), 1),
    ("concatenate", lambda a: np.concatenate([a, a * 2.0], axis=1), (X,), 1),
    ("reduction broadcast along an outer loop", lambda x: x.sum(axis=0) * x, (X,), 2),
    ("outputs of different shapes", lambda x: (np.sin(x) * 2.0, (np.sin(x) * 2.0).sum(axis=1)), (X,), 2),
    ("matmul of a matmul", lambda a: (a @ a.T) @ a, (X,), 2),
    # a round stores the outermost of the values it finds repeated, those inside it wait: storing all made 7 kernels
    ("a chain read at several indices", five_kinds, (X, X, rng.standard_normal((17, 17)).astype(np.float32)), 6),
]


@pytest.mark.nocompile
@pytest.mark.parametrize("name,fn,args,kernels", CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_kernel_counts(name, fn, args, kernels):
    nf = scheduled(fn, *args)
    assert len(nf.schedule) == kernels, f"{name}:\n{nf.schedule}"


A = np.random.default_rng(8).standard_normal((8, 8)).astype(np.float32)   # (the tests below draw from rng)
SQUARES = (lambda a: (a * a).sum(), (X,))
PRODUCTS = (lambda a: (((a @ a) @ a) @ a) @ a, (A,))
RETURNED_TWICE = (lambda x: ((y := np.exp(x)), y), (X,))
STRUCTURE_CASES = {"sum of squares": SQUARES, "chained products": PRODUCTS, "returned twice": RETURNED_TWICE,
                   **{name: (fn, args) for name, fn, args, _ in CATALOGUE}}


@pytest.mark.parametrize("name", list(STRUCTURE_CASES))
def test_scheduled_cases_match_numpy(backend, name):
    fn, args = STRUCTURE_CASES[name]
    compiled(fn, *args, backend=backend)


@pytest.mark.nocompile
def test_fused_reduction_has_no_intermediate():
    nf = scheduled(SQUARES[0], *SQUARES[1])
    assert nf.memory.arena_bytes == 0
    assert all(b.category != "intermediate" for ei in nf.schedule for b in ei.buffers)


def test_a_realized_value_inside_another_is_stored_once():
    # b's marker holds a's: a is one kernel's result, read by b's kernel (16 times per element), never copied
    def stored(v): return v.contiguous() if isinstance(v, numfn.Tensor) else v

    def f(x, w):
        a = stored(np.sin(x))
        b = stored(a[None, :] * w[:, None])
        return b[::-1] + 1

    x, w = rng.standard_normal(100), rng.standard_normal(16)
    out, nf = compiled(f, x, w)
    np.testing.assert_allclose(out, (np.sin(x)[None, :] * w[:, None])[::-1] + 1, rtol=1e-15)
    assert len(nf.schedule) == 3


def test_a_gather_of_a_gather_is_stored_once():
    # a row of run-time length, reshaped for a product (x[k, :k][:, None] inside matmul): the whole chain of
    # gathers repeats once per row of the product, and storing its outer end alone is enough
    def f(x, k):
        return x[k + 1:, :k] @ x[k, :k]

    x = rng.standard_normal((64, 64))
    out, nf = compiled(f, x, 20)
    np.testing.assert_allclose(out, f(x, 20), rtol=1e-13)
    copies = [ei for ei in nf.schedule if ei.kernel.name.startswith("E_") and ei.kernel.shape != ()]
    assert len(copies) == 1, nf.schedule


@pytest.mark.nocompile
def test_intermediate_memory_is_reused():
    nf = scheduled(PRODUCTS[0], *PRODUCTS[1])
    assert len(nf.memory.offsets) == 3
    assert nf.memory.arena_bytes < nf.memory.naive_bytes   # the first product's bytes serve the third
    offsets = sorted(nf.memory.offsets.values())
    assert offsets[0] == offsets[1] or len(set(offsets)) < 3


def test_small_constants_are_embedded_and_large_ones_passed_by_pointer(backend):
    small = rng.standard_normal(17).astype(np.float32)
    large = rng.standard_normal((200, 17)).astype(np.float32)   # 13.6 KB < 16 KiB: still embedded
    huge = rng.standard_normal((1000, 17)).astype(np.float32)   # 68 KB: by pointer
    x = rng.standard_normal((1000, 17)).astype(np.float32)
    _, nf = compiled(lambda x: x * small + large.sum(axis=0) - huge, x, backend=backend)
    assert len(nf.layout.embedded_constants) == 2 and len(nf.layout.pointer_constants) == 1
    assert "const0" in nf.source and "const1" in nf.source


def test_scalar_constant_arithmetic_folds(backend):
    _, nf = compiled(lambda x: x * (2.0 * 3.0 + 1.0) + np.sqrt(16.0), X, backend=backend)
    ops = [u.op for k in nf.rendered_kernels for u in k.program.uops if u.dtype.is_float]
    assert ops.count(Ops.MUL) == 1 and ops.count(Ops.ADD) == 1 and Ops.SQRT not in ops


def test_identities_are_removed(backend):
    ints = rng.integers(-5, 5, (4, 5)).astype(np.int32)
    _, nf = compiled(lambda a: np.negative(-(a * 1 + 0)), ints, backend=backend)
    ops = [u.op for k in nf.rendered_kernels for u in k.program.uops if u.dtype.name == "int32"]
    assert not set(ops) & {Ops.MUL, Ops.ADD, Ops.NEG}, ops


def test_reshape_of_contiguous_data_indexes_plainly(backend):
    _, nf = compiled(lambda x: (x.reshape(17, 33) + 1.0).reshape(-1).reshape(11, 51), X, backend=backend)
    ops = {u.op for k in nf.rendered_kernels for u in k.program.uops}
    assert not ops & {Ops.IDIV, Ops.IMOD}


def test_outputs_never_alias_inputs_or_each_other(backend):
    x = rng.standard_normal((4, 5))
    (a, b, c, d, e), _ = compiled(lambda x: (x, x.T, x[:2], (y := x * 2.0), y), x, backend=backend)
    for out in (a, b, c):
        assert not np.shares_memory(out, x)
    assert not np.shares_memory(d, e)
    d[0, 0] = 123.0
    assert e[0, 0] != 123.0


@pytest.mark.nocompile
def test_one_node_returned_twice_is_computed_once():
    nf = scheduled(RETURNED_TWICE[0], *RETURNED_TWICE[1])
    assert len(nf.schedule) == 1 and len(nf.schedule[0].kernel.outputs) == 2
    assert sum(u.op is Ops.EXP for u in nf.rendered_kernels[0].program.uops) <= 1


def test_schedule_prints_as_a_table_and_debug_3_shows_it(capsys, monkeypatch):
    _, nf = compiled(softmax, X)
    table = str(nf.schedule)
    header = table.splitlines()[0].split()
    assert header == ["kernel", "shape", "writes", "reads", "ops", "bytes"]
    assert nf.schedule[0].kernel.name in table and "output0" in table and "input0" in table
    monkeypatch.setenv("DEBUG", "3")
    monkeypatch.setenv("NUMFN_DISABLE_CACHE", "1")   # a program loaded from the disk cache prints no schedule
    numfn.jit(lambda x: softmax(x) + 1.0)(X)
    err = capsys.readouterr().err
    assert "kernel" in err and "writes" in err and "MemoryPlan" in err


def test_pad_under_a_function_that_does_not_map_zero_to_zero(backend):
    # exp(0) = 1 and 1/0 = inf: values at padded positions must come from the pad, not from the function
    x = rng.standard_normal((3, 4))
    compiled(lambda x: (np.exp(np.concatenate([x, x], axis=0)), 1.0 / np.concatenate([x, x + 1.0], axis=1),
                        np.exp(x)[::2, ::-3]), x, backend=backend)


def test_matmul_beyond_l2_is_cache_blocked_and_exact(backend, monkeypatch):
    # B (4 MiB) outgrows L2: the tile loop is blocked (an outermost block loop) and results stay right (generated
    # code: without BLAS, a product this large would be a GEMM call)
    monkeypatch.setenv("NUMFN_BLAS", "none")
    a = rng.standard_normal((64, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 1024)).astype(np.float32)
    f = numfn.jit(lambda a, b: a @ b, backend=backend)
    got, exact = f(a, b), a.astype(np.float64) @ b.astype(np.float64)
    # float32 sums of 1024 products: absolute errors near 1e-4 for NumPy's result and ours alike
    assert got.dtype == np.float32 and got.shape == (64, 1024)
    np.testing.assert_allclose(got, exact, rtol=1e-4, atol=32 * 1e-5)
    np.testing.assert_allclose(a @ b, exact, rtol=1e-4, atol=32 * 1e-5)   # the same bound holds for NumPy
    nf = f.specialize(a, b)
    ranges = [u for u in nf.rendered_kernels[0].program.uops if u.op is Ops.RANGE]
    assert ranges[0].arg[0] < 0, "expected an outermost block loop"


def test_values_realized_late_are_named_by_the_graph():
    # a value chosen for realization after a first build was once named by the kernel value that loads earlier
    # intermediates: its root kept a buffer of that build, whose number the next build gave to another value (two
    # intermediates with one name: LLVM refused the program)
    x = np.arange(12.0).reshape(3, 4)
    _, nf = compiled(lambda x: (np.flipud(x), np.pad(x, 5, mode="reflect"),
                                np.pad(x, 9, mode="symmetric", reflect_type="odd")), x)
    numbers = [b.number for b, _, _ in nf.layout.intermediates]
    assert len(numbers) == len(set(numbers))


def _moments(x):
    return x.min(), x.max(), (x * x).sum(), (x - x.mean()).sum()


@pytest.mark.parametrize("shape", [(1000,), (0,), (1,), (7, 33)], ids=str)
def test_sibling_reductions_share_one_pass(backend, shape):
    """Reductions over the same elements that do not read one another run in one loop: min, max, the sum of
    squares and the mean in one pass; the sum of deviations reads the mean, so it needs a pass of its own."""
    from helpers import check
    x = np.random.default_rng(0).standard_normal(shape)
    if x.size == 0:   # (NumPy refuses the min of nothing: so does numfn)
        from helpers import check_raises_like
        check_raises_like(_moments, x, backend=backend)
        return
    check(_moments, x, backend=backend, scale=x.size + 1.0)
    if len(shape) > 1: return
    kernels = numfn.jit(_moments, backend=backend).specialize(x).rendered_kernels
    loops = [sum(u.op is Ops.RANGE for u in k.program.uops) for k in kernels]
    assert loops == [2] if x.size > 1 else loops[0] <= 2
