"""vmap and svmap: both must equal np.stack([f(*example_i) for i in ...], axis=out_axes), computed with NumPy, for a
catalogue of functions; svmap must compile once for every batch size and be bitwise equal to a Python loop over
the jitted per-example function."""
import re

import numpy as np
import pytest

import numfn
import numfn.runtime
from numfn.ir.uop import Ops

rng = np.random.default_rng(11)
W = rng.standard_normal((4, 3))   # a closure constant


def elementwise(x): return np.sin(x) * 2.0 + x * x
def reductions(x): return x.sum(), x.max(axis=0), x.mean(axis=(0, 1), keepdims=True), x.cumsum(axis=1)
def matmul(a, b): return a @ b
def matvec(a, v): return a @ v, v @ a.T
def slicing(x): return x[::-1, 1:], x[0], x[..., None, -1]
def several(x): return {"twice": x * 2, "parts": [x[:1], x.T]}
def closure(x): return W @ x + W.sum()
def det3(m):
    return (m[0, 0] * (m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1]) - m[0, 1] * (m[1, 0] * m[2, 2] - m[1, 2] * m[2, 0])
            + m[0, 2] * (m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0]))


def reference(fn, args, in_axes, out_axes, size):
    """np.stack of fn over the examples (in_axes: per argument; None: shared)."""
    def example(i):
        return [a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)]
    results = [fn(*example(i)) for i in range(size)]
    leaves = [numfn.pytree.flatten(r)[0] for r in results]
    tree = numfn.pytree.flatten(results[0])[1] if results else None
    n = len(leaves[0]) if leaves else 0
    axes = out_axes if isinstance(out_axes, (list, tuple)) else [out_axes] * n
    return tree, [np.stack([np.asarray(lv[k]) for lv in leaves], axis=axes[k]) for k in range(n)]


def assert_matches(got, fn, args, in_axes, out_axes, size):
    tree, want = reference(fn, args, in_axes, out_axes, size)
    got_leaves, got_tree = numfn.pytree.flatten(got)
    assert got_tree == tree
    for g, w in zip(got_leaves, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


CASES = [
    ("elementwise", elementwise, lambda n: (rng.standard_normal((n, 3, 2)),), (0,), 0),
    ("reductions", reductions, lambda n: (rng.standard_normal((n, 4, 3)),), (0,), 0),
    ("matmul", matmul, lambda n: (rng.standard_normal((n, 2, 3)), rng.standard_normal((3, 4))), (0, None), 0),
    ("matvec", matvec, lambda n: (rng.standard_normal((3, 4)), rng.standard_normal((4, n))), (None, 1), 0),
    ("slicing", slicing, lambda n: (rng.standard_normal((3, n, 4)),), (1,), 0),
    ("several outputs", several, lambda n: (rng.standard_normal((n, 2, 3)),), (0,), 0),
    ("closure constants", closure, lambda n: (rng.standard_normal((n, 3)),), (0,), 0),
    ("out_axes", matmul, lambda n: (rng.standard_normal((n, 2, 3)), rng.standard_normal((n, 3, 4))), (0, 0), 2),
    ("negative axes", elementwise, lambda n: (rng.standard_normal((3, 2, n)),), (-1,), -1),
    ("det3", det3, lambda n: (rng.standard_normal((n, 3, 3)),), (0,), 0),
]


@pytest.mark.parametrize("transform", [numfn.vmap, numfn.svmap], ids=["vmap", "svmap"])
@pytest.mark.parametrize("size", [0, 1, 5])
@pytest.mark.parametrize("name,fn,make,in_axes,out_axes", CASES, ids=[c[0] for c in CASES])
def test_equals_stack_of_examples(transform, size, name, fn, make, in_axes, out_axes):
    args = make(size)
    got = transform(fn, in_axes=in_axes, out_axes=out_axes)(*args)
    if size == 0:   # nothing to stack: check shapes and dtypes against one example's results
        _, one = reference(fn, make(1), in_axes, out_axes, 1)
        for g, w in zip(numfn.pytree.flatten(got)[0], one):
            axes = out_axes if not isinstance(out_axes, (list, tuple)) else 0
            assert g.dtype == w.dtype and g.shape == w.shape[:axes % w.ndim] + (0,) + w.shape[axes % w.ndim + 1:]
        return
    assert_matches(got, fn, args, in_axes, out_axes, size)


def test_vmap_is_a_graph_transformation_not_a_loop():
    f = numfn.vmap(matmul, in_axes=(0, 0))
    nf = f.specialize(rng.standard_normal((8, 2, 3)), rng.standard_normal((8, 3, 4)))
    reduces = [u for u in nf.function_graph.toposort() if u.op is Ops.REDUCE_AXIS]
    assert len(reduces) == 1 and reduces[0].src[0].shape == (8, 2, 4, 3)   # one batched matmul
    assert len(nf.schedule) == 1


def test_nested_vmap():
    x = rng.standard_normal((3, 4, 5))
    got = numfn.vmap(numfn.vmap(lambda a: a.sum() * a))(x)
    want = np.stack([np.stack([a.sum() * a for a in xs]) for xs in x])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_composition_with_jit_both_ways():
    x = rng.standard_normal((6, 3))
    want = np.stack([elementwise(r) for r in x])
    for f in (numfn.jit(numfn.vmap(elementwise)), numfn.vmap(numfn.jit(elementwise)),
              numfn.jit(numfn.svmap(elementwise)), numfn.svmap(numfn.jit(elementwise))):
        np.testing.assert_allclose(f(x), want, rtol=1e-12)


def test_decorator_forms():
    @numfn.vmap
    def f(x): return x * 3

    @numfn.svmap(in_axes=1)
    def g(x): return x.sum()

    x = rng.standard_normal((4, 5))
    np.testing.assert_allclose(f(x), x * 3)
    np.testing.assert_allclose(g(x), x.sum(axis=0))


def test_vmap_reuses_the_trace_of_a_jitted_function():
    calls = []

    def f(x):
        calls.append(1)
        return x + 1

    jf = numfn.jit(f)
    x = rng.standard_normal((5, 3))
    jf(x[0])
    assert len(calls) == 1
    numfn.vmap(jf)(x)
    numfn.svmap(jf)(x)
    assert len(calls) == 1   # both derived from jf's function_graph for float64[3]


def test_svmap_compiles_once_for_every_batch_size():
    f = numfn.svmap(lambda m: det3(m) * 2.0)
    before = numfn.runtime.compile_count
    for n in (1, 7, 1000):
        m = rng.standard_normal((n, 3, 3))
        np.testing.assert_allclose(f(m), np.stack([det3(a) * 2.0 for a in m]), rtol=1e-12)
    assert numfn.runtime.compile_count - before <= 1   # 0 when an earlier run left it in the disk cache
    assert len(f.entries) == 1


def test_svmap_is_bitwise_equal_to_a_loop_over_the_jitted_function():
    fn = lambda x, y: (np.exp(np.sin(x)) @ y).sum() * x.max()   # noqa: E731
    x, y = rng.standard_normal((200, 4, 5)), rng.standard_normal((5, 3))
    jf = numfn.jit(fn)
    loop = np.stack([jf(a, y) for a in x])
    got = numfn.svmap(fn, in_axes=(0, None))(x, y)
    assert np.array_equal(got, loop)


def test_svmap_scratch_memory_does_not_grow_with_the_batch():
    # the per-example program has intermediates; one arena serves every iteration of the native loop
    f = numfn.svmap(lambda a: (a @ a.T) @ a)
    local = np.random.default_rng(149)   # (the module's generator would give data that depends on the tests before)
    small, large = local.standard_normal((2, 8, 8)), local.standard_normal((5000, 8, 8))
    f(small)
    prog = f.entries[0]
    arena = prog.base.memory.arena_bytes
    assert 0 < arena < 8 * 8 * 8 * 4   # a few per-example products, independent of the batch
    # (an absolute tolerance too: elements near zero of a sum of 64 products differ by the order of the sum)
    np.testing.assert_allclose(f(large), np.stack([(a @ a.T) @ a for a in large]), rtol=1e-10, atol=1e-11)


def test_svmap_large_batches_use_threads_and_stay_exact():
    x = rng.standard_normal((20000, 16))
    f = numfn.svmap(lambda v: np.sqrt((v * v).sum()) + np.sin(v).max())
    want = np.stack([numfn.jit(lambda v: np.sqrt((v * v).sum()) + np.sin(v).max())(v) for v in x[:50]])
    assert np.array_equal(f(x)[:50], want)


@pytest.mark.parametrize("transform", [numfn.vmap, numfn.svmap], ids=["vmap", "svmap"])
def test_inconsistent_batch_sizes_name_the_arguments(transform):
    with pytest.raises(ValueError, match=r"argument 'a' has size 3; argument 'b' has size 4"):
        transform(lambda a, b: a + b)(np.ones((3, 2)), np.ones((4, 2)))


@pytest.mark.parametrize("transform", [numfn.vmap, numfn.svmap], ids=["vmap", "svmap"])
def test_bad_axes_are_clear_errors(transform):
    with pytest.raises(ValueError, match="scalar"):
        transform(lambda a, s: a * s)(np.ones((3, 2)), 2.0)
    with pytest.raises(np.exceptions.AxisError):
        transform(lambda a: a, in_axes=2)(np.ones((3, 2)))
    with pytest.raises(ValueError, match="entries"):
        transform(lambda a, b: a + b, in_axes=(0,))(np.ones((3, 2)), np.ones((3, 2)))


@pytest.mark.parametrize("transform", [numfn.vmap, numfn.svmap], ids=["vmap", "svmap"])
def test_bad_argument_is_named(transform):
    with pytest.raises(TypeError, match=r"argument 'p'\[1\]: .*dtype complex"):
        transform(lambda a, p: a + p[0] + p[1])(np.ones((3, 2)), (np.ones((3, 2)), np.ones((3, 2), np.clongdouble)))
    with pytest.raises(TypeError, match="argument 'a': .*MaskedArray"):
        transform(lambda a: a * 2)(np.ma.masked_array(np.ones((3, 2))))


@pytest.mark.parametrize("transform", [numfn.vmap, numfn.svmap], ids=["vmap", "svmap"])
def test_non_native_byte_order_batches(transform):
    x = rng.standard_normal((5, 3))
    got = transform(lambda v: (v * v).sum() + v[::-1])(x.astype(">f8"))
    np.testing.assert_allclose(got, (x * x).sum(axis=1, keepdims=True) + x[:, ::-1], rtol=1e-12)


def test_in_axes_for_containers_follow_their_structure():
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 4))
    f = numfn.vmap(lambda p: p["a"] * p["b"], in_axes=({"a": 0, "b": 1},))
    np.testing.assert_allclose(f({"a": a, "b": b}), a * b.T)


def test_debug_2_reports_svmaps_loop_time(capsys, monkeypatch):
    f = numfn.svmap(lambda r: (r * r).sum())
    f(np.ones((3, 2)))   # compile first: the report is about the call
    capsys.readouterr()
    monkeypatch.setenv("DEBUG", "2")
    np.testing.assert_array_equal(f(np.ones((7, 2))), np.full(7, 2.0))
    err = capsys.readouterr().err
    assert re.search(r"svmap\(\S*<lambda>\(float64\[2\]\)\): 7 examples in [0-9.]+ ms on 1 thread", err), err
