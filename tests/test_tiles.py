"""A kernel and the write-back of its result run tile by tile (numfn.codegen.tiling): in-place stencils whose value
reads the rows next to the ones written. Each case is checked against NumPy, on both backends, and the cases the
tiling must leave alone (writes whose rows other rows read from far away, reversed rows) stay correct too."""
import numpy as np
import pytest

import numfn
from helpers import check_mutates
from numfn.codegen import tiling
from numfn.runtime.threads import thread_count


def five_point(u):
    u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def two_rows_each_way(u):
    u[2:-2, 1:-1] = u[:-4, 1:-1] - u[4:, 1:-1] + u[2:-2, :-2] - 0.5 * u[2:-2, 2:]


def upwind(u):   # reads only the row above: a block's last row (the next block reads it) goes to the second pass
    u[1:, 1:] = u[1:, 1:] - 0.5 * (u[1:, 1:] - u[:-1, 1:])


def steps(u):   # three in-place steps, each its own pair of kernels
    for _ in range(3):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u.sum(axis=1)


def far_rows(u):   # row i reads row i + 40: beyond what tiles allow, stays two kernels
    u[:-40, 1:] = u[40:, 1:] * 0.5 + u[:-40, :-1]


def flipped(u):   # the rows are walked in reverse in memory
    v = u[::-1]
    v[1:-1, 1:-1] = 0.25 * (v[:-2, 1:-1] + v[2:, 1:-1] + v[1:-1, :-2] + v[1:-1, 2:])


def stencil_loop(u, n):   # inside a compiled loop
    for _ in range(n):
        u[1:-1, 1:-1] = 0.2 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] + u[1:-1, 1:-1])
    return u


rng = np.random.default_rng(3)


def tiled(fn, *args) -> list:
    """The TiledPairs of fn's program for args."""
    nf = numfn.jit(fn).specialize(*args)
    return tiling.tiled_pairs(nf.steps)


@pytest.mark.parametrize("shape", [(1024, 1024), (700, 513), (3001, 97), (300, 4100)])
@pytest.mark.parametrize("fn", [five_point, two_rows_each_way, upwind, steps], ids=lambda f: f.__name__)
def test_in_place_stencils_match_numpy(backend, fn, shape):
    check_mutates(fn, rng.random(shape), backend=backend)


def test_views_and_dtypes(backend):
    strided = rng.random((800, 1200))[:, ::2]
    check_mutates(five_point, strided, backend=backend)
    check_mutates(five_point, rng.random((900, 600)).astype(np.float32), backend=backend)
    check_mutates(five_point, rng.integers(-1000, 1000, (900, 600)), backend=backend)   # int64 * 0.25: casts


@pytest.mark.parametrize("fn", [far_rows, flipped], ids=lambda f: f.__name__)
def test_what_tiles_cannot_prove_stays_correct(backend, fn):
    u = rng.random((1000, 600))
    check_mutates(fn, u, backend=backend)
    assert tiled(fn, u) == []


def test_in_a_compiled_loop(backend):
    check_mutates(stencil_loop, rng.random((600, 700)), 4, backend=backend)


def test_the_pairs_found_and_their_edges():
    u = rng.random((1024, 1024))
    (pair,) = tiled(five_point, u)
    assert (pair.rows, pair.row, pair.before, pair.after) == (1022, 1022, 1, 1)
    assert pair.blocks >= tiling.MIN_BLOCKS and pair.block * pair.row * 8 <= tiling.TILE_BYTES
    (pair,) = tiled(two_rows_each_way, u)
    assert (pair.before, pair.after) == (2, 2)
    (pair,) = tiled(upwind, u)
    assert (pair.before, pair.after) == (0, 1)
    assert len(tiled(steps, u)) == 3
    assert tiled(five_point, rng.random((64, 64))) == []   # a temporary that stays in cache anyway


def test_debug_3_says_which_kernels_run_tile_by_tile(capsys, monkeypatch):
    monkeypatch.setenv("DEBUG", "3")
    monkeypatch.setenv("NUMFN_DISABLE_CACHE", "1")
    numfn.jit(five_point)(rng.random((1024, 1024)))
    assert "run tile by tile: 64 blocks of 16 rows" in capsys.readouterr().err



def _random_window_write(seed: int):
    """u[top:top + h, left:left + w] = a sum of views of u shifted by up to 5 rows and 3 columns, some reversed,
    some transposed (u is square): pairs tiling may take, and ones it must refuse."""
    r = np.random.default_rng(seed)
    n, h, w = 600, 588, 592
    top, left = int(r.integers(0, 6)), int(r.integers(0, 4))
    terms = [(int(r.integers(-top, 6)), int(r.integers(-left, 4)), int(r.integers(0, 6)), float(r.uniform(-1, 1)))
             for _ in range(int(r.integers(1, 5)))]

    def view(u, dr, dc, kind):
        i, j = top + dr, left + dc
        if kind == 0: return u[i:i + h, j:j + w][::-1]   # rows reversed
        if kind == 1: return u[j:j + w, i:i + h].T         # columns read as rows
        return u[i:i + h, j:j + w]

    def fn(u):
        total = sum(c * view(u, dr, dc, kind) for dr, dc, kind, c in terms)
        u[top:top + h, left:left + w] = total
    return fn, n


@pytest.mark.parametrize("seed", range(10))
def test_random_window_writes_match_numpy(backend, seed):
    fn, n = _random_window_write(seed)
    u = rng.random((n, n))
    check_mutates(fn, u, backend=backend, calls=1)


def test_random_window_writes_are_tiled_where_they_can_be():
    found = []
    for seed in range(10):
        fn, n = _random_window_write(seed)
        found.append(bool(tiled(fn, rng.random((n, n)))))
    assert 0 < sum(found) < len(found), found   # some are, some are not (reversed and transposed reads)


@pytest.mark.parametrize("threads", [1, 2])
def test_one_thread_runs_every_block_through_one_scratch(backend, threads):
    """With one thread all blocks share block 0's part of the temporary and move their edge rows out of it; with
    the pool, each chunk of blocks shares its first block's part."""
    before = thread_count()
    numfn.set_num_threads(threads)
    try:
        for fn in (five_point, two_rows_each_way, upwind):
            check_mutates(fn, rng.random((1500, 700)), backend=backend, calls=3)
    finally:
        numfn.set_num_threads(before)
