"""BEAM (numfn/beam): the search of each kernel's optimizations, its store in the disk cache, and a real search.

The search itself is tested with a fake evaluation (outputs and times chosen by the test) and a fake clock, so it
is deterministic: it picks the fake-fastest candidate, the heuristic's choice wins ties, a candidate computing a
wrong result is never chosen, and a spent budget keeps the best so far. The store is keyed by the machine. The
real search (compiling and timing candidates) runs once, small, against NumPy's result.
"""
import itertools

import numpy as np
import pytest

import numfn
from numfn import debug
from numfn.beam import beam_width
from numfn.beam.search import beam_search, candidate_neighbours, same_outputs
from numfn.beam.store import Machine, kernel_structure, load_choice, store_choice, tuned_key
from numfn.beam.tuner import FunctionTuner
from numfn.codegen.opt import Options, apply_options, heuristic_options
from numfn.codegen.program import build_program, prepare_kernel
from numfn.runtime import diskcache

A = Options()                                   # the heuristic's choice in the fake searches
B = Options(upcasts=((0, 2),))
C = Options(upcasts=((0, 4),))
D = Options(upcasts=((0, 8),))
E = Options(upcasts=((0, 4),), parallel=True)
GRAPH = {A: [B, C], B: [D], C: [E], D: [], E: []}   # D is reached only through B
OUT = [np.arange(6, dtype=np.float32)]


def fake(times: dict, wrong: frozenset = frozenset(), failing: frozenset = frozenset(), calls: list | None = None):
    def evaluate(options):
        if calls is not None: calls.append(options)
        if options in failing: raise RuntimeError("cannot build")
        return ([OUT[0] + 1] if options in wrong else OUT), times[options]
    return evaluate


def search(times, width=2, budget=100.0, **kw):
    evaluate = fake(times, kw.pop("wrong", frozenset()), kw.pop("failing", frozenset()), kw.pop("calls", None))
    return beam_search(A, lambda o: GRAPH[o], evaluate, width, budget, **kw)


@pytest.mark.nocompile
def test_search_picks_the_fake_fastest_candidate():
    times = {A: 10.0, B: 9.5, C: 9.0, D: 2.0, E: 9.8}
    result = search(times, width=2)
    assert result.chosen == D and result.chosen_seconds == 2.0 and result.start_seconds == 10.0
    assert set(result.times) == set(times)
    # a beam of one follows only the best of each step (C, whose neighbour E is slower): D, behind B, is not reached
    narrow = search(times, width=1)
    assert narrow.chosen == C and D not in narrow.times


@pytest.mark.nocompile
def test_the_heuristic_wins_ties_and_near_ties():
    assert search({A: 5.0, B: 5.0, C: 5.0, D: 5.0, E: 5.0}).chosen == A
    # within the margin (3% by default): still the heuristic's; beyond it, the candidate
    assert search({A: 5.0, B: 6.0, C: 4.9, D: 6.0, E: 6.0}).chosen == A
    assert search({A: 5.0, B: 6.0, C: 4.0, D: 6.0, E: 6.0}).chosen == C


@pytest.mark.nocompile
def test_a_winner_is_timed_again_against_the_heuristic():
    first = iter([10.0, 11.0, 5.0, 11.0, 11.0, 11.0])   # A, B, C, D, E in search order, then A again ...
    again = {A: 4.0, C: 6.0}   # ... and C again: the heuristic is faster now, so it stays
    calls: list = []

    def evaluate(options):
        calls.append(options)
        return OUT, (again[options] if calls.count(options) > 1 else next(first))
    result = beam_search(A, lambda o: GRAPH[o], evaluate, 2, 100.0)
    assert result.chosen == A and calls[-2:] == [A, C] and result.start_seconds == 4.0


@pytest.mark.nocompile
def test_a_wrong_candidate_is_never_chosen(caplog):
    times = {A: 10.0, B: 11.0, C: 1.0, D: 2.0, E: 8.0}   # C, the fastest, computes something else
    with caplog.at_level(debug.logging_level(1), logger="numfn"):
        result = search(times, wrong=frozenset({C}))
    assert result.chosen == D and result.wrong == [C] and C not in result.times
    assert any("code generator bug" in r.getMessage() for r in caplog.records)
    # a candidate that cannot be built is dropped too
    failed = search(times, failing=frozenset({C, D}))
    assert failed.chosen == A and failed.failed == [C, D]   # E (8.0) is reached only from C


@pytest.mark.nocompile
def test_a_spent_budget_keeps_the_best_so_far():
    ticks = itertools.count()
    times = {A: 10.0, B: 11.0, C: 4.0, D: 1.0, E: 8.0}
    calls: list = []
    # the clock advances one second per reading; the budget allows the heuristic's and two more measurements: the
    # next step (E, C's neighbour) is cut short, and C, timed again against the heuristic, wins
    result = search(times, budget=2.5, clock=lambda: float(next(ticks)), calls=calls)
    assert result.exhausted and result.chosen == C and E not in result.times
    assert calls == [A, B, C, A, C]
    nothing = search(times, budget=0.0, clock=lambda: 0.0)
    assert nothing.exhausted and nothing.chosen == A and list(nothing.times) == [A]


@pytest.mark.nocompile
def test_outputs_are_compared_by_dtype():
    f32 = np.linspace(1, 2, 10, dtype=np.float32)
    assert same_outputs([f32 * (1 + 1e-6)], [f32]) and not same_outputs([f32 * 1.01], [f32])
    assert same_outputs([np.array([np.nan, 1.0])], [np.array([np.nan, 1.0])])
    assert not same_outputs([np.array([1, 2])], [np.array([1, 3])])
    assert not same_outputs([np.zeros(3)], [np.zeros(4)]) and not same_outputs([], [np.zeros(1)])


def _kernel(fn, *args):
    """The first kernel of fn's schedule for args: (name, buffers, lowered kernel, op count), without compiling."""
    nf = numfn.jit(fn).specialize(*args)
    ei = nf.kernel_items[0]
    return ei.kernel.name, ei.kernel.buffers, ei.lowered, ei.op_count


def _matmul(a, b):
    return a @ b


MATMUL_ARGS = (np.ones((64, 48), np.float32), np.ones((48, 128), np.float32))


@pytest.mark.nocompile
def test_default_options_build_the_heuristic_program(monkeypatch):
    monkeypatch.setenv("NUMFN_BLAS", "none")
    name, params, lowered, _ = _kernel(_matmul, *MATMUL_ARGS)
    start = heuristic_options(prepare_kernel(lowered), True)
    assert start.upcasts   # the matmul's register tile
    assert build_program(name, params, lowered, True).uops == build_program(name, params, lowered, options=start).uops


@pytest.mark.nocompile
def test_every_neighbour_is_a_kernel_the_code_generator_makes(monkeypatch):
    monkeypatch.setenv("NUMFN_BLAS", "none")
    name, params, lowered, _ = _kernel(_matmul, *MATMUL_ARGS)
    prepared = prepare_kernel(lowered)
    start = heuristic_options(prepared, False)
    found = candidate_neighbours(prepared, start, threads=True)
    assert Options(start.upcasts, start.block, start.row_tile, True) in found and start not in found
    assert any(o.upcasts[0][1] != start.upcasts[0][1] for o in found if o.upcasts)
    for options in found:
        apply_options(prepared, options)   # the loops exist and every factor divides its loop
        assert options == Options.from_json(options.to_json())


@pytest.mark.nocompile
def test_stored_choices_are_keyed_by_the_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMFN_CACHE_DIR", str(tmp_path / "cache"))
    name, params, lowered, ops = _kernel(lambda a: a.sum(axis=0), np.ones((64, 256), np.float32))
    structure = kernel_structure(params, lowered, False)
    here, other_cpu = Machine("model A\nflags: avx2", 2, 2), Machine("model B\nflags: avx512f", 2, 2)
    more_cores = Machine("model A\nflags: avx2", 16, 16)
    keys = {tuned_key(structure, "llvm", m) for m in (here, other_cpu, more_cores)}
    assert len(keys) == 3 and tuned_key(structure, "c", here) not in keys
    assert tuned_key(structure, "llvm", here) == tuned_key(kernel_structure(params, lowered, False), "llvm", here)
    assert kernel_structure(params, lowered, True) != structure
    chosen = Options(upcasts=((1, 8),), parallel=True)
    store_choice(tuned_key(structure, "llvm", here), chosen, 1e-6, Options(), 2e-6)
    stored = load_choice(tuned_key(structure, "llvm", here))
    assert stored is not None and stored.options == chosen and stored.heuristic == Options()
    assert (stored.seconds, stored.heuristic_seconds) == (1e-6, 2e-6)
    assert numfn.cache.info()["tuned_kernels"] == 1
    # a tuner on the same machine reuses the choice; on another CPU or core count it searches (here: its budget is
    # spent, so it keeps the heuristic's choice)
    for machine, want in ((here, chosen), (other_cpu, None), (more_cores, None)):
        tuner = FunctionTuner(2, "llvm", False, 1, function_budget=0.0, machine=machine)
        assert tuner.options(name, params, lowered, False, 1, ops, 1 << 20) == want


@pytest.mark.nocompile
def test_beam_width_and_its_variables(monkeypatch):
    monkeypatch.setenv("NUMFN_BEAM", "3")
    assert beam_width(None) == 3 and beam_width(0) == 0 and beam_width(2) == 2
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="beam must be"):
            numfn.jit(lambda x: x, beam=bad)
    monkeypatch.setenv("NUMFN_BEAM", "lots")
    with pytest.warns(Warning, match="NUMFN_BEAM"):
        assert beam_width(None) == 0
    monkeypatch.setenv("NUMFN_BEAM_KERNEL_SECONDS", "0.5")
    assert numfn.config.beam_kernel_seconds() == 0.5 and numfn.config.beam_function_seconds() == 30.0


def test_a_real_search_gives_numpys_result_and_is_remembered(tmp_path, monkeypatch, backend, capsys, caplog):
    monkeypatch.setenv("NUMFN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NUMFN_BEAM_KERNEL_SECONDS", "0.5")
    a = np.random.default_rng(0).standard_normal((128, 256)).astype(np.float32)

    def colsum(a):
        return a.sum(axis=0) * 2

    notes: list = []
    monkeypatch.setattr("numfn.progress.note", notes.append)
    with caplog.at_level(debug.logging_level(2), logger="numfn"):
        got = numfn.jit(colsum, beam=2, backend=backend)(a)
    # the progress line followed the search: the kernel, then candidates measured and the best time
    assert notes[0] == "BEAM kernel 1 of 1" and any(" candidates, best " in n for n in notes) and notes[-1] == ""
    np.testing.assert_allclose(got, colsum(a), rtol=1e-5, atol=1e-4)
    report = [r.getMessage() for r in caplog.records if r.getMessage().startswith("BEAM")]
    assert report and "against the heuristic's" in report[0] and "GFLOP/s" in report[0] and "GB/s" in report[0]
    assert numfn.cache.info()["tuned_kernels"] >= 1
    assert diskcache.cli(["info"]) == 0 and "tuned:" in capsys.readouterr().out
    # a later compilation of the kernel (its program not cached) uses the stored choice without searching
    for entry in (tmp_path / "cache").glob("*.nfc"): entry.unlink()
    monkeypatch.setattr("numfn.beam.tuner.beam_search", lambda *a, **k: pytest.fail("searched again"))
    caplog.clear()
    with caplog.at_level(debug.logging_level(2), logger="numfn"):
        np.testing.assert_allclose(numfn.jit(colsum, beam=2, backend=backend)(a), got, rtol=1e-6)
    assert any("(stored for this machine)" in r.getMessage() for r in caplog.records)


@pytest.mark.nocompile
def test_the_progress_line_shows_the_note():
    from numfn.progress import Progress
    line = Progress("f")
    line.enter("rendering kernels", 3)
    line.set_note("BEAM kernel 1 of 3: 4 candidates, best 12.0 us")
    assert "rendering kernels 0/3 (BEAM kernel 1 of 3: 4 candidates, best 12.0 us)" in line.line()
    line.enter("compiling")
    assert "BEAM" not in line.line()


@pytest.mark.nocompile
def test_a_tuned_program_is_cached_apart_from_the_plain_one(monkeypatch):
    def double(x):
        return x * 2
    x = np.ones(8)
    plain, tuned = numfn.jit(double).specialize(x), numfn.jit(double, beam=2).specialize(x)
    assert plain.beam == 0 and tuned.beam == 2 and plain.cache_key != tuned.cache_key
    monkeypatch.setenv("NUMFN_BEAM", "2")   # read when a function specializes: the same program as beam=2
    assert numfn.jit(double).specialize(x).cache_key == tuned.cache_key
    # the threads a choice was measured with are part of it (tuned_key's Machine), and of the program's key
    monkeypatch.setattr("numfn.function.thread_count", lambda: 64)
    assert numfn.jit(double, beam=2).specialize(x).cache_key != tuned.cache_key
