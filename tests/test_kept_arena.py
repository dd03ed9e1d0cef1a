"""Programs whose scratch arena is large keep it between calls (numfn.runtime.KEEP_ARENA_BYTES): calls after the
first reuse memory a previous call wrote, calls from several threads at once each get an arena of their own, and
the arena is freed with the program."""
import gc
import threading

import numpy as np

import numfn
from numfn.runtime import KEEP_ARENA_BYTES, keeps_arena


def stencil_of_stencil(x):
    # intermediates as large as x (one stored value read at several shifts), so the arena is x's size or more
    y = np.sin(x) * 2.0
    y = y[2:] + y[:-2] + y[1:-1]
    z = np.cos(y) * 3.0
    return z[2:] - z[:-2] + z[1:-1]


def test_kept_arena_is_reused_and_threads_get_their_own(backend):
    n = KEEP_ARENA_BYTES // 8 + 4096
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(n) for _ in range(4)]
    f = numfn.jit(stencil_of_stencil, backend=backend)
    nf = f.specialize(xs[0])
    assert keeps_arena(nf.memory.arena_bytes), nf.memory.arena_bytes
    assert nf.compiled.manifest["arena_bytes"] == nf.memory.arena_bytes
    for x in xs + xs[::-1]:   # every call sees what the previous one left in the arena
        np.testing.assert_allclose(f(x), stencil_of_stencil(x), rtol=1e-13, atol=1e-13)
    wrong = []

    def work(fn, k: int) -> None:
        for _ in range(5):
            x = xs[k % len(xs)]
            if not np.allclose(fn(x), stencil_of_stencil(x), rtol=1e-13, atol=1e-13): wrong.append(k)
    threads = [threading.Thread(target=work, args=(f, k)) for k in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    assert not wrong
    del f, nf, threads
    gc.collect()   # the finalizer frees the kept arena (a crash or a double free would show here or later)


def test_small_arenas_are_not_kept():
    assert not keeps_arena(0) and not keeps_arena(KEEP_ARENA_BYTES - 1) and keeps_arena(KEEP_ARENA_BYTES)
