"""Conformance of numfn.numpy's products and signal functions with NumPy (issue 12, item 7): outer, inner, vdot,
tensordot, einsum (explicit and implicit output, '...', repeated labels, the sublist form, 3+ operands), kron,
cross, convolve, correlate, diff, ediff1d, gradient, interp, polyval, polyder, polyint, polyfit, unwrap.

Each table lists cases (a function and its operands' shapes); the cases NumPy computes are compiled together, one
specialization per table and dtype, and compared with NumPy (values, dtype, shape); each case NumPy rejects must
raise the same exception type while tracing. Operands include 0-d, empty and size-1 arrays, broadcasting and
non-contiguous views with negative strides.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numfn
import numfn.numpy as fnp
from helpers import ALL_DTYPES, FLOAT_DTYPES, check, check_raises_like, numpy_exception, numpy_result, rand


# NumPy 2 deprecates cross products of 2-vectors (numfn warns alike); the tables still check them
pytestmark = pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")


def ids(d) -> str:
    return np.dtype(d).name


def operand(spec, dtype, rng, lo=-3, hi=3) -> np.ndarray:
    """An operand from its spec: a shape, or ("view", shape) for a non-contiguous view of that shape (every other
    element of a larger array along each axis, the last axis reversed)."""
    if isinstance(spec, tuple) and spec and spec[0] == "view":
        shape = spec[1]
        base = rand(tuple(2 * n for n in shape), dtype, rng, lo, hi)
        view = base[tuple(slice(None, None, 2) for _ in shape)]
        return view[..., ::-1] if shape else view
    return rand(spec, dtype, rng, lo, hi)


def check_cases(cases, dtype, backend: str, seed: int = 0, scale: float = 100.0, lo=-3, hi=3, **kw):
    """Every case (label, fn, operand specs): the ones NumPy computes in one compiled function against NumPy, each
    one NumPy rejects raising the same exception type. Returns (accepted, rejected)."""
    rng = np.random.default_rng(seed)
    ok, bad = [], []
    for label, fn, specs in cases:
        args = [operand(s, dtype, rng, lo, hi) for s in specs]
        (bad if numpy_exception(fn, args) is not None else ok).append((label, fn, args))

    def table(*xs):
        it = iter(xs)
        return {label: fn(*[next(it) for _ in args]) for label, fn, args in ok}
    if ok: check(table, *[a for _, _, args in ok for a in args], backend=backend, scale=scale, **kw)
    for _, fn, args in bad:
        check_raises_like(fn, *args, backend=backend)
    return len(ok), len(bad)


V = "view"
# ---- products -------------------------------------------------------------------------------------------------
PRODUCTS = [
    ("outer vec", np.outer, [(3,), (4,)]), ("outer mat", np.outer, [(2, 3), (V, (2,))]),
    ("outer 0d", np.outer, [(), (3,)]), ("outer empty", np.outer, [(0,), (3,)]),
    ("inner vec", np.inner, [(3,), (3,)]), ("inner mat", np.inner, [(2, 3), (V, (4, 3))]),
    ("inner 3d", np.inner, [(2, 3, 4), (4,)]), ("inner 0d", np.inner, [(), (2, 3)]),
    ("inner empty", np.inner, [(0,), (0,)]), ("inner bad", np.inner, [(2, 3), (4,)]),
    ("vdot", np.vdot, [(2, 3), (6,)]), ("vdot view", np.vdot, [(V, (3, 2)), (V, (2, 3))]),
    ("vdot empty", np.vdot, [(0,), (0,)]), ("vdot bad", np.vdot, [(2, 3), (5,)]),
    ("tensordot 2", np.tensordot, [(2, 3, 4), (3, 4, 5)]),
    ("tensordot 1", lambda a, b: np.tensordot(a, b, axes=1), [(2, 3), (V, (3, 4))]),
    ("tensordot 0", lambda a, b: np.tensordot(a, b, axes=0), [(2,), (3, 2)]),
    ("tensordot pairs", lambda a, b: np.tensordot(a, b, axes=([1, 0], [0, 1])), [(3, 2, 4), (2, 3)]),
    ("tensordot ints", lambda a, b: np.tensordot(a, b, axes=(0, -1)), [(3, 2), (4, 3)]),
    ("tensordot negative", lambda a, b: np.tensordot(a, b, axes=([-1], [0])), [(2, 0), (0, 3)]),
    ("tensordot mismatch", lambda a, b: np.tensordot(a, b, axes=([0], [0])), [(2, 3), (3, 2)]),
    ("tensordot range", lambda a, b: np.tensordot(a, b, axes=([2], [0])), [(2, 3), (3, 2)]),
    ("tensordot twice", lambda a, b: np.tensordot(a, b, axes=([0, 0], [0, 1])), [(2, 3), (2, 2)]),
    ("tensordot count", lambda a, b: np.tensordot(a, b, axes=([0, 1], [0])), [(2, 3), (2, 3)]),
    ("kron mat", np.kron, [(2, 3), (3, 2)]), ("kron mixed", np.kron, [(3,), (V, (2, 2))]),
    ("kron 0d", np.kron, [(), (3,)]), ("kron 0d right", np.kron, [(2,), ()]),
    ("kron 3d", np.kron, [(2, 1, 2), (3,)]), ("kron empty", np.kron, [(0, 2), (2, 2)]),
    ("cross 3", np.cross, [(3,), (3,)]), ("cross batch", np.cross, [(4, 3), (V, (3,))]),
    ("cross 2", np.cross, [(2,), (2,)]), ("cross 2 batch", np.cross, [(4, 2), (4, 2)]),
    ("cross 2x3", np.cross, [(2,), (3,)]), ("cross 3x2", np.cross, [(5, 3), (5, 2)]),
    ("cross axes", lambda a, b: np.cross(a, b, axisa=0, axisb=1, axisc=0), [(3, 4), (4, 3)]),
    ("cross axis", lambda a, b: np.cross(a, b, axis=0), [(3, 4), (3, 4)]),
    ("cross bad length", np.cross, [(4,), (3,)]), ("cross 0d", np.cross, [(), (3,)]),
    ("cross bad axisc", lambda a, b: np.cross(a, b, axisc=1), [(3,), (3,)]),
    ("cross bad axisa", lambda a, b: np.cross(a, b, axisa=2), [(3, 3), (3,)]),
]

EINSUM = [
    ("matmul", "ij,jk->ik", [(3, 4), (4, 5)]), ("implicit", "ij,jk", [(3, 4), (V, (4, 2))]),
    ("batched", "bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("trace", "ii", [(3, 3)]),
    ("diagonal", "ii->i", [(V, (3, 3))]), ("partial diagonal", "iij->ij", [(2, 2, 3)]),
    ("sum all", "ij->", [(3, 4)]), ("sum axis", "ijk->ik", [(2, 3, 4)]), ("dot", "i,i", [(5,), (5,)]),
    ("outer", "i,j->ij", [(3,), (4,)]), ("transpose", "ijk->kji", [(2, 3, 4)]), ("implicit sorted", "ba", [(2, 3)]),
    ("upper first", "bA", [(2, 3)]), ("ellipsis", "...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("ellipsis implicit", "ij...", [(2, 3, 4)]), ("ellipsis sum", "...i->...", [(2, 3, 4)]),
    ("broadcast label", "ij,ij->ij", [(2, 3), (1, 3)]), ("broadcast sum", "ij,ij->i", [(2, 3), (2, 1)]),
    ("three", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("four", "ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("three star", "ij,ik,il->jkl", [(3, 2), (3, 2), (3, 2)]), ("scalar", "i,->i", [(3,), ()]),
    ("empty", "ij,jk->ik", [(2, 0), (0, 3)]), ("spaces", "i j , j k -> k i", [(2, 3), (3, 2)]),
    ("repeated in two", "ii,ij->j", [(3, 3), (3, 2)]), ("hadamard", "ij,ij,ij->ij", [(2, 3), (2, 3), (2, 3)]),
    # rejected: NumPy's ValueErrors
    ("bad char", "i1", [(3, 3)]), ("bad dot", "i.j", [(3, 3)]), ("too many", "ijk", [(3, 3)]),
    ("too few", "i", [(3, 3)]), ("operands", "ij,jk", [(3, 3)]), ("extra operand", "ij", [(3, 3), (3, 3)]),
    ("collapsing", "ii", [(2, 3)]), ("output twice", "ij->ii", [(3, 3)]), ("output unknown", "ij->k", [(3, 3)]),
    ("no ellipsis out", "ij...->ij", [(2, 3, 4)]), ("size mismatch", "ij,jk->ik", [(2, 3), (4, 2)]),
]


def _einsum_cases():
    return [(f"einsum {name} {spec}", lambda *ops, spec=spec: np.einsum(spec, *ops), shapes)
            for name, spec, shapes in EINSUM]


@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_products_table(backend, dtype):
    # bool: NumPy's products of bools are or-of-ands; cross of bools is its TypeError (bool subtraction)
    ok, bad = check_cases(PRODUCTS, dtype, backend, seed=30, scale=9.0 * 60)
    assert ok > 20 and bad >= 8


@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_einsum_table(backend, dtype):
    ok, bad = check_cases(_einsum_cases(), dtype, backend, seed=31, scale=3.0 ** 4 * 60)
    assert ok > 20 and bad >= 11


def test_products_and_einsum_c_backend(backend):
    if backend == "llvm": pytest.skip("the tables run on LLVM for every dtype")
    check_cases(PRODUCTS, np.float32, backend, seed=32, scale=9.0 * 60)
    check_cases(_einsum_cases(), np.int32, backend, seed=33)


def test_einsum_keywords_and_sublists(backend):
    rng = np.random.default_rng(34)
    a, b, c = rand((3, 4), np.float32, rng), rand((4, 5), np.float32, rng), rand((5, 2), np.int32, rng)
    i8 = rand((6,), np.int8, rng, 60, 100)
    path = np.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")[0]

    def f(a, b, c, i8):
        return (np.einsum(a, [0, 1], b, [1, 2], [2, 0]), np.einsum(a, [0, 1]), np.einsum(a, [Ellipsis, 1], [Ellipsis]),
                np.einsum("ij,jk,kl->il", a, b, c, optimize=True), np.einsum("ij,jk,kl->il", a, b, c, optimize=path),
                np.einsum("ij,jk,kl", a, b, c, optimize="optimal"), np.einsum("ij,jk", a, b, dtype=np.float64),
                np.einsum("i,i", i8, i8),              # int8 sums wrap in int8, as NumPy's
                np.einsum("ij->j", a, order="F"))
    check(f, a, b, c, i8, backend=backend, scale=3.0 ** 3 * 20)
    check_raises_like(lambda a: np.einsum("ij->j", a, dtype=np.int32), a, backend=backend)   # not a 'safe' cast
    check_raises_like(lambda a: np.einsum(a, [0, 60]), a, backend=backend)
    check_raises_like(lambda a: np.einsum(a, [0, 1.0]), a, backend=backend)
    # a single operand nothing is summed over is a view: NumPy ignores dtype= there
    check(lambda a: (np.einsum("ij->ji", a, dtype=np.int32), np.einsum("ii->i", a[:, :3], dtype=np.float64)), a,
          backend=backend)


def test_einsum_path_is_numpys(backend):
    # einsum_path needs only shapes: numfn asks NumPy on zero-strided stand-ins, inside a compiled function too
    a, b, c = np.ones((30, 4)), np.ones((4, 50)), np.ones((50, 2))
    expected = np.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")
    got = []
    numfn.jit(lambda a, b, c: got.append(np.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")) or a,
              backend=backend)(a, b, c)
    assert got[0][0] == expected[0] and got[0][1] == expected[1]


def _path_cost(path, terms, sizes, output):
    """Multiply-adds of contracting `terms` pairwise along `path` (positions, the result appended at the end)."""
    terms, cost = [set(t) for t in terms], 0
    for i, j in path:
        a, b = terms[i], terms[j]
        rest = [t for k, t in enumerate(terms) if k not in (i, j)]
        cost += math.prod(sizes[x] for x in a | b)
        terms = rest + [(a | b) & set(output).union(*rest)]
    return cost


@pytest.mark.parametrize("spec,shapes", [
    ("ij,jk,kl->il", [(100, 2), (2, 100), (100, 3)]),
    ("ij,jk,kl->il", [(3, 100), (100, 2), (2, 100)]),
    ("ab,bc,cd,de->ae", [(50, 2), (2, 60), (60, 3), (3, 40)]),
    ("ab,ac,ad,bcd->a", [(10, 20), (10, 30), (10, 4), (20, 30, 4)]),
    ("ij,j,jk->ik", [(40, 50), (50,), (50, 40)]),
])
def test_einsum_greedy_order_is_as_cheap_as_opt_einsums(spec, shapes):
    # the contraction order numfn picks costs no more than the greedy path NumPy (opt_einsum's algorithm) picks
    from numfn.numpy.products import _greedy_order
    ops = [np.ones(s) for s in shapes]
    terms = spec.split("->")[0].split(",")
    sizes = {x: n for t, s in zip(terms, shapes) for x, n in zip(t, s)}
    output = spec.split("->")[1]
    ours = _greedy_order([list(t) for t in terms], sizes, list(output))
    theirs = [tuple(p) for p in np.einsum_path(spec, *ops, optimize="greedy")[0][1:]]
    assert _path_cost(ours, terms, sizes, output) <= _path_cost(theirs, terms, sizes, output)


def test_contractions_fuse_into_matmul_kernels():
    # a batched contraction is one matmul: a single kernel with no intermediate; tensordot's reshapes stay views
    a, b = np.ones((4, 8, 16)), np.ones((4, 16, 8))
    for f in (lambda a, b: np.einsum("bij,bjk->bik", a, b), lambda a, b: np.einsum("bij,bjk->bki", a, b),
              lambda a, b: np.tensordot(a, b, axes=([0, 2], [0, 1])), lambda a, b: np.inner(a, a)):
        assert len(numfn.jit(f).specialize(a, b).schedule) == 1


LABELS = "abcd"
SIZES = {"a": 2, "b": 3, "c": 1, "d": 4}


@st.composite
def einsum_specs(draw):
    """Random subscripts over 1-3 operands (labels repeat within and across operands), with an explicit output (a
    permutation of some labels) or the implicit one."""
    n = draw(st.integers(1, 3))
    terms = [draw(st.lists(st.sampled_from(LABELS), min_size=0, max_size=3)) for _ in range(n)]
    used = sorted({x for t in terms for x in t})
    if draw(st.booleans()):
        out = draw(st.permutations(used))[:draw(st.integers(0, len(used)))]
        spec = ",".join("".join(t) for t in terms) + "->" + "".join(out)
    else:
        spec = ",".join("".join(t) for t in terms)
    return spec, [tuple(SIZES[x] for x in t) for t in terms]


@settings(max_examples=25, deadline=None)
@given(einsum_specs(), st.sampled_from([np.float64, np.int32]))
def test_einsum_hypothesis(case, dtype):
    spec, shapes = case
    rng = np.random.default_rng(35)
    ops = [rand(s, dtype, rng) for s in shapes]
    check(lambda *ops: np.einsum(spec, *ops), *ops, backend="llvm", scale=3.0 ** 3 * 100)


# ---- signal ---------------------------------------------------------------------------------------------------
SIGNAL = [
    ("diff", np.diff, [(7,)]), ("diff 3d", lambda a: np.diff(a, axis=1), [(2, 4, 3)]),
    ("diff n2", lambda a: np.diff(a, n=2, axis=0), [(V, (5, 3))]), ("diff n0", lambda a: np.diff(a, n=0), [(3,)]),
    ("diff long n", lambda a: np.diff(a, n=5), [(3,)]), ("diff empty", np.diff, [(0,)]),
    ("diff prepend", lambda a: np.diff(a, prepend=0, append=[1.5, 2]), [(5,)]),
    ("diff prepend arr", lambda a, p: np.diff(a, axis=0, prepend=p), [(3, 4), (2, 4)]),
    ("diff 0d", np.diff, [()]), ("diff bad n", lambda a: np.diff(a, n=-1), [(3,)]),
    ("diff bad axis", lambda a: np.diff(a, axis=1), [(3,)]),
    ("ediff1d", np.ediff1d, [(2, 3)]), ("ediff1d ends", lambda a: np.ediff1d(a, to_end=[7, 8], to_begin=-1), [(5,)]),
    ("ediff1d empty", lambda a: np.ediff1d(a, to_begin=[1]), [(0,)]),
    ("ediff1d cast", lambda a: np.ediff1d(a, to_begin=2.5), [(4,)]),
    ("gradient", np.gradient, [(6,)]), ("gradient 2d", np.gradient, [(V, (4, 5))]),
    ("gradient spacing", lambda a: np.gradient(a, 0.5, axis=1), [(3, 4)]),
    ("gradient per axis", lambda a: np.gradient(a, 2.0, 0.25), [(3, 4)]),
    ("gradient edge 2", lambda a: np.gradient(a, edge_order=2), [(3, 5)]),
    ("gradient coords", lambda a: np.gradient(a, np.array([0.0, 0.5, 2.0, 2.5, 4.0]), edge_order=2), [(5,)]),
    ("gradient even coords", lambda a: np.gradient(a, [1, 2, 3, 4], axis=0), [(4, 2)]),
    ("gradient traced coords", lambda a, x: np.gradient(a, np.cumsum(np.abs(x) + 0.5), edge_order=1), [(6,), (6,)]),
    ("gradient traced coords 2", lambda a, x: np.gradient(a, np.cumsum(np.abs(x) + 0.5), edge_order=2), [(6,), (6,)]),
    ("gradient axes", lambda a: np.gradient(a, axis=(0, -1)), [(3, 2, 4)]),
    ("gradient short", np.gradient, [(1,)]), ("gradient edge 3", lambda a: np.gradient(a, edge_order=3), [(5,)]),
    ("gradient args", lambda a: np.gradient(a, 1.0, 2.0, 3.0), [(3, 4)]),
    ("gradient coords 2d", lambda a: np.gradient(a, np.ones((2, 2))), [(4,)]),
    ("gradient coords length", lambda a: np.gradient(a, [1.0, 2.0]), [(4,)]),
    ("convolve", np.convolve, [(7,), (3,)]), ("convolve same", lambda a, v: np.convolve(a, v, "same"), [(7,), (4,)]),
    ("convolve valid", lambda a, v: np.convolve(a, v, mode="valid"), [(V, (7,)), (3,)]),
    ("convolve swap", lambda a, v: np.convolve(a, v, "same"), [(3,), (8,)]),
    ("convolve one", np.convolve, [(1,), (5,)]), ("convolve 0d", lambda a, v: np.convolve(a, v, 1), [(), (4,)]),
    ("correlate", np.correlate, [(7,), (3,)]),
    ("correlate full", lambda a, v: np.correlate(a, v, "full"), [(6,), (4,)]),
    ("correlate same", lambda a, v: np.correlate(a, v, "same"), [(6,), (4,)]),
    ("correlate swap", lambda a, v: np.correlate(a, v, "full"), [(3,), (6,)]),
    ("correlate swap same", lambda a, v: np.correlate(a, v, "same"), [(2,), (7,)]),
    ("correlate swap valid", lambda a, v: np.correlate(a, v, 0), [(V, (3,)), (5,)]),
    ("convolve empty", np.convolve, [(0,), (3,)]), ("correlate empty", np.correlate, [(3,), (0,)]),
    ("convolve 2d", np.convolve, [(2, 2), (3,)]), ("convolve mode", lambda a, v: np.convolve(a, v, "s"), [(3,), (2,)]),
    ("polyval", np.polyval, [(4,), (3, 2)]), ("polyval 0d", np.polyval, [(3,), ()]),
    ("polyval empty", np.polyval, [(0,), (3,)]), ("polyval 0d p", np.polyval, [(), (3,)]),
    ("polyder", np.polyder, [(5,)]), ("polyder 3", lambda p: np.polyder(p, 3), [(5,)]),
    ("polyder 0", lambda p: np.polyder(p, 0), [(3,)]), ("polyder high", lambda p: np.polyder(p, 4), [(3,)]),
    ("polyder bad", lambda p: np.polyder(p, -1), [(3,)]),
    ("polyint", np.polyint, [(4,)]), ("polyint k", lambda p: np.polyint(p, 2, k=[1, 2]), [(3,)]),
    ("polyint scalar k", lambda p: np.polyint(p, 3, k=5), [(3,)]), ("polyint 0", lambda p: np.polyint(p, 0), [(3,)]),
    ("polyint traced k", lambda p, k: np.polyint(p, 2, k=k), [(3,), (2,)]),
    ("polyint bad k", lambda p: np.polyint(p, 3, k=[1, 2]), [(3,)]),
    ("polyfit", lambda x, y: np.polyfit(x, y, 2), [(7,), (7,)]),
    ("polyfit columns", lambda x, y: np.polyfit(x, y, 1), [(6,), (6, 2)]),
    ("polyfit full", lambda x, y: np.polyfit(x, y, 1, full=True), [(5,), (5,)]),
    ("polyfit weights", lambda x, y, w: np.polyfit(x, y, 2, w=w), [(6,), (6,), (6,)]),
    ("polyfit bad deg", lambda x, y: np.polyfit(x, y, -1), [(4,), (4,)]),
    ("polyfit 2d x", lambda x, y: np.polyfit(x, y, 1), [(3, 2), (3,)]),
    ("polyfit lengths", lambda x, y: np.polyfit(x, y, 1), [(3,), (4,)]),
    ("unwrap", lambda a: np.unwrap(a * 3), [(9,)]), ("unwrap discont", lambda a: np.unwrap(a * 3, discont=4.0), [(8,)]),
    ("unwrap axis 0", lambda a: np.unwrap(a * 4, axis=0), [(5, 3)]),
    ("unwrap 2d", lambda a: np.unwrap(a * 4), [(3, 5)]),
    ("unwrap even period", lambda a: np.unwrap(a, period=8), [(9,)]),
    ("unwrap odd period", lambda a: np.unwrap(a, period=7), [(9,)]),
    ("unwrap pi period", lambda a: np.unwrap(a, period=np.pi), [(7,)]), ("unwrap short", np.unwrap, [(1,)]),
    ("unwrap empty", np.unwrap, [(0,)]), ("unwrap 0d", np.unwrap, [()]),
]


@pytest.mark.parametrize("backend", ["llvm"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_signal_table(backend, dtype):
    # bool: differences are not_equal (diff) or NumPy's TypeError (ediff1d, gradient); products are or-of-ands
    ok, bad = check_cases(SIGNAL, dtype, backend, seed=36, scale=3.0 ** 5 * 10)
    assert ok > 30 and bad >= 10


def test_signal_c_backend(backend):
    if backend == "llvm": pytest.skip("the table runs on LLVM for every dtype")
    check_cases(SIGNAL, np.float64, backend, seed=37, scale=3.0 ** 5 * 10)


def test_convolve_bool_and_wrapping_ints(backend):
    rng = np.random.default_rng(38)
    b1, b2 = rng.random(9) < 0.3, rng.random(4) < 0.5
    i1, i2 = rand((9,), np.int8, rng, 50, 120), rand((4,), np.int8, rng, 50, 120)   # int8 products wrap
    check(lambda b1, b2, i1, i2: (np.convolve(b1, b2), np.correlate(b1, b2, "same"), np.convolve(i1, i2),
                                  np.correlate(i2, i1, "full"), np.convolve(i1, b2), np.convolve(i1, 2)),
          b1, b2, i1, i2, backend=backend)


# ---- interp ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend,dtype", [("llvm", d) for d in ALL_DTYPES] + [("c", np.float64)],
                         ids=lambda v: v if isinstance(v, str) else ids(v))
def test_interp(backend, dtype):
    rng = np.random.default_rng(39)
    xp = np.sort(rng.choice(np.arange(-20, 20), 9, replace=False)).astype(dtype) if dtype != np.bool_ else \
        np.array([False, True])
    fp = rand(xp.shape, dtype, rng)
    x = np.concatenate([rng.uniform(-25, 25, 30), xp.astype(np.float64), [np.inf, -np.inf, np.nan]])
    x2 = x[:30].reshape(3, -1)[:, ::-1]
    dup_xp = np.array([0.0, 1.0, 1.0, 2.0, 3.0, 3.0])   # repeated points: the value right of a jump
    dup_fp = np.array([0.0, 1.0, 5.0, 2.0, 1.0, 7.0])
    check(lambda x, x2, xp, fp, dxp, dfp: (np.interp(x, xp, fp), np.interp(x2, xp, fp), np.interp(x, xp, fp, 0, 1.5),
                                           np.interp(x, xp, fp, left=np.float64(-7)), np.interp(2.5, xp, fp),
                                           np.interp(x, xp[:1], fp[:1]), np.interp(x, xp[:2], fp[:2], right=9),
                                           np.interp(x, dxp, dfp), np.interp(np.array([1.0, 3.0]), dxp, dfp),
                                           np.interp(x, xp, fp, period=7.5),
                                           np.interp(x2, [3, 1, 2], [4, 5, 6], period=4),
                                           np.interp(x, xp.astype(np.float32), fp)),
          x, x2, xp, fp, dup_xp, dup_fp, backend=backend, scale=30.0)
    for f in (lambda x, xp, fp: np.interp(x, xp[:0], fp[:0]), lambda x, xp, fp: np.interp(x, xp, fp[1:]),
              lambda x, xp, fp: np.interp(x, xp.reshape(1, -1), fp), lambda x, xp, fp: np.interp(x, xp, fp, period=0),
              lambda x, xp, fp: np.interp(x, xp[0], fp[0])):
        check_raises_like(f, x, xp, fp, backend=backend)


def test_interp_of_many_points_is_exact_at_nodes_and_linear_between(backend):
    # 10^4 sample points (14 gather steps of the binary search) and points on and between them
    rng = np.random.default_rng(40)
    xp = np.cumsum(rng.uniform(0.01, 1.0, 10_000))
    fp = np.sin(xp)
    x = np.concatenate([xp[::7], rng.uniform(xp[0] - 1, xp[-1] + 1, 2000)])
    check(lambda x, xp, fp: np.interp(x, xp, fp), x, xp, fp, backend=backend)


# ---- the functions as numfn.numpy names, and how they reach users -----------------------------------------------
def test_numfn_numpy_names_and_registration():
    import numfn.numpy.products as p
    import numfn.numpy.signal as s
    from numfn.trace.tensor import NUMPY_IMPLEMENTATIONS
    for mod in (p, s):
        for name in mod.__all__:
            assert NUMPY_IMPLEMENTATIONS[getattr(np, name)] is getattr(fnp, name), name
    rng = np.random.default_rng(41)
    a, v = rand((6,), np.float64, rng), rand((3,), np.float64, rng)
    nodes = np.sort(a)   # a constant of the traced function

    def make(xp):
        return lambda a, v: (xp.outer(a, v), xp.inner(a, a), xp.vdot(v, v), xp.tensordot(a, a, axes=1),
                             xp.einsum("i,j->ji", a, v), xp.kron(a, v), xp.cross(v, v[::-1]), xp.convolve(a, v),
                             xp.correlate(a, v, "same"), xp.diff(a, 2), xp.ediff1d(a), xp.gradient(a),
                             xp.interp(v, nodes, a), xp.polyval(v, a), xp.polyder(a), xp.polyint(v))
    expected = numpy_result(make(np), (a, v))
    check(make(fnp), a, v, backend="llvm", expected=expected, scale=200.0)


def test_signal_functions_share_a_schedule(backend):
    # regression: gradient with traced coordinates and interp with period= in one function (the scheduler once
    # realized a value in a later round as a kernel's copy holding the previous round's buffer numbers)
    rng = np.random.default_rng(42)
    l, xp, fp, x = rng.random(8), np.sort(rng.random(7)), rng.random(7), rng.random(20)
    check(lambda l, xp, fp, x: (np.gradient(l, np.cumsum(np.abs(l) + 0.1)), np.interp(x, xp, fp, period=1.5)),
          l, xp, fp, x, backend=backend)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=ids)
def test_signal_with_nan_and_inf(backend, dtype):
    x = np.array([1.0, np.nan, 2.0, np.inf, -np.inf, 3.0, 3.0, -0.0], dtype)
    check(lambda x: (np.diff(x), np.diff(x, n=2), np.ediff1d(x), np.gradient(x), np.convolve(x, x[5:]),
                     np.correlate(x[:3], x[5:], "full"), np.polyval(x[::3], x), np.trapezoid(x)),
          x, backend=backend)
