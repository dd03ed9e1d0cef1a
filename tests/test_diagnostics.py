"""Diagnostics: messages through the `numfn` logger (NUMFN_DEBUG/DEBUG as a shortcut, or logging's own
configuration), the progress line of slow compilations, and the suggestions of unsupported NumPy names (each one
checked to compute what NumPy computes)."""
import importlib
import io
import logging
import re
import time

import numpy as np
import pytest

import numfn
import numfn.numpy as fnp
from numfn import debug, progress
from numfn.errors import SUGGESTIONS, suggestion

RNG = np.random.default_rng(19)


@pytest.fixture
def quiet_env(monkeypatch):
    for name in ("NUMFN_DEBUG", "DEBUG", "NUMFN_PROGRESS"): monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _fresh(fn):
    """A new function object each time, so its compilation is not one made before in this process."""
    return numfn.jit(lambda *a: fn(*a))


# ---- logging ---------------------------------------------------------------------------------------------------------
STAGES = ("traced", "simplified", "scheduled", "rendered", "compiled")


@pytest.mark.parametrize("variable", ["NUMFN_DEBUG", "DEBUG"])
def test_debug_1_prints_each_stage_and_its_time_on_stderr(capsys, quiet_env, variable):
    quiet_env.setenv(variable, "1")
    quiet_env.setenv("NUMFN_DISABLE_CACHE", "1")   # compiled, not loaded
    _fresh(lambda x: np.exp(x) + 1.0)(np.ones(5))
    err = capsys.readouterr().err
    lines = err.splitlines()
    for stage in STAGES:
        assert any(re.match(rf"{stage} .* in [0-9.]+ ms$", line) for line in lines), (stage, err)
    assert "schedule of" not in err   # level 3


def test_numfn_debug_takes_precedence_over_debug(capsys, quiet_env):
    quiet_env.setenv("DEBUG", "3")
    quiet_env.setenv("NUMFN_DEBUG", "0")
    _fresh(lambda x: x * 3.0)(np.ones(2))
    assert capsys.readouterr().err == ""
    assert debug.environment_level() == 0
    for value, level in (("2", 2), ("", 3)):
        quiet_env.setenv("NUMFN_DEBUG", value)
        assert debug.environment_level() == level


def test_messages_go_through_the_numfn_logger(caplog, capsys, quiet_env):
    with caplog.at_level(debug.logging_level(3), logger="numfn"):
        assert debug.level() == 3
        _fresh(lambda x: np.sin(x) * 2.0)(np.ones(3))
    records = [r for r in caplog.records if r.name == "numfn"]
    levels = {r.levelno for r in records}
    assert logging.DEBUG in levels and debug.logging_level(3) in levels   # stages at DEBUG, schedules below it
    assert not levels & {debug.logging_level(4), debug.logging_level(5)}
    assert any(r.getMessage().startswith("traced ") for r in records)
    assert any(r.getMessage().startswith("schedule of ") for r in records)
    assert capsys.readouterr().err == ""   # the shortcut handler prints only what the variable asks for
    assert debug.level() == 0


def test_logging_debug_is_level_1_and_level_5_is_everything():
    assert debug.logging_level(1) == logging.DEBUG
    assert [debug.logging_level(n) for n in range(1, 6)] == [10, 9, 8, 7, 6]


def test_shortcut_and_logging_together_print_once(caplog, capsys, quiet_env):
    quiet_env.setenv("NUMFN_DEBUG", "1")
    with caplog.at_level(logging.DEBUG, logger="numfn"):
        debug.log(1, "hello from a test")
        debug.log(2, lambda: pytest.fail("a level 2 thunk must not run at level 1"))
    assert capsys.readouterr().err == ""   # the user's handler (caplog's) shows it: not a second copy
    assert [r.getMessage() for r in caplog.records if r.name == "numfn"] == ["hello from a test"]


# ---- progress of slow compilations -----------------------------------------------------------------------------------
def _slow_to_trace(x):
    time.sleep(0.4)   # runs while tracing: the compilation takes this long at least
    return x + 1.0


@pytest.fixture
def fast_progress(quiet_env):
    quiet_env.setattr(progress, "THRESHOLD", 0.05)
    quiet_env.setattr(progress, "REPEAT", 0.1)
    return quiet_env


def test_a_slow_compilation_reports_its_stage_and_time(capsys, fast_progress):
    f = numfn.jit(_slow_to_trace)
    np.testing.assert_array_equal(f(np.zeros(3)), np.ones(3))
    err = capsys.readouterr().err
    lines = err.splitlines()
    name = re.escape("_slow_to_trace(float64[3])")
    took = r"(\d+ ms|[\d.]+ s)"   # (seconds on a loaded machine)
    assert re.match(rf"numfn: compiling {name}: tracing(, \d+ nodes)?, {took}$", lines[0]), err
    assert re.match(rf"numfn: compiled {name} in {took} \(tracing {took}, cache lookup \d+ ms", lines[-1]), err
    f(np.zeros(3))   # compiled: nothing more
    assert capsys.readouterr().err == ""


def test_progress_counts_the_kernels_of_the_rendering_stage():
    p = progress.Progress("f(float32[4])")
    p.enter("tracing")
    p.enter("rendering kernels", 7)
    assert p.line().startswith("numfn: compiling f(float32[4]): rendering kernels 0/7, ")
    p.advance(3)
    assert "rendering kernels 3/7, " in p.line()
    p.enter(None)
    assert re.fullmatch(r"numfn: compiled f\(float32\[4\]\) in \d+ ms \(tracing \d+ ms, rendering kernels \d+ ms\)",
                        p.summary())


def test_progress_counts_the_work_of_every_stage():
    """Stages without kernels to count show their work so far: graph nodes walked, lines given to the native
    compiler (the counts the scaling tests use)."""
    p = progress.Progress("f(float32[4])")
    p.enter("scheduling")
    assert p.line().startswith("numfn: compiling f(float32[4]): scheduling, ")   # nothing counted yet
    p.work["scheduling"] += 12_345
    assert "scheduling, 12k nodes, " in p.line()
    p.enter("compiling 3 kernels (llvm)")
    p.work["compiling"] += 900
    assert "compiling 3 kernels (llvm), 900 lines, " in p.line()


def test_a_compilation_counts_its_work_while_it_reports(fast_progress):
    with progress.compiling("f(float64[2])") as p:
        numfn.jit(lambda x: np.sin(x) * 2)(np.zeros(2))   # (a compilation inside: its work is the outer one's)
        assert p is not None and p.work["scheduling"] > 0 and p.work["rendering"] > 0


def test_progress_on_a_terminal_rewrites_one_line(fast_progress):
    class Terminal(io.StringIO):
        def isatty(self): return True
    term = Terminal()
    fast_progress.setattr("sys.stderr", term)
    numfn.jit(_slow_to_trace)(np.zeros(2))
    text = term.getvalue()
    assert text.startswith("\rnumfn: compiling _slow_to_trace(float64[2]): tracing") and text.endswith("\x1b[K\n")
    assert text.count("\n") == 1 and "\rnumfn: compiled _slow_to_trace(float64[2]) in " in text


@pytest.mark.parametrize("how", ["jit option", "environment"])
def test_progress_can_be_turned_off(capsys, fast_progress, how):
    if how == "environment": fast_progress.setenv("NUMFN_PROGRESS", "0")
    numfn.jit(_slow_to_trace, progress=how != "jit option")(np.zeros(4))
    assert capsys.readouterr().err == ""


def test_a_fast_compilation_prints_nothing(capsys, quiet_env):
    assert progress.THRESHOLD == 1.0
    _fresh(lambda x: x - 1.0)(np.zeros(4))
    assert capsys.readouterr().err == ""


# ---- suggestions for unsupported NumPy names -------------------------------------------------------------------------
def test_unsupported_numpy_name_suggests_and_points_at_the_coverage_page():
    f = numfn.jit(lambda x: np.trim_zeros(x))
    with pytest.raises(numfn.NumfnError) as info:
        f(np.arange(5.0))
    msg = str(info.value)
    assert "trim_zeros is not supported" in msg and "test_diagnostics.py" in msg
    assert "Select with a mask" in msg and "docs/numpy-coverage.md" in msg
    # a namespace's suggestion covers its names numfn does not implement (numpy.fft's all are, today)
    from numfn.errors import suggestion
    assert suggestion("numpy.fft.some_new_transform").startswith("numfn implements fft")


def test_unsupported_name_without_a_suggestion_still_points_at_the_page():
    f = numfn.jit(lambda x: np.busday_count(x, x))
    with pytest.raises(numfn.NumfnError, match=r"numpy\.busday_count is not supported .*\. What numfn supports of "
                                               r"NumPy is listed in docs/numpy-coverage\.md"):
        f(np.arange(3))


def test_suggestions_by_name_and_by_namespace():
    assert "Select with a mask" in suggestion("numpy.trim_zeros")
    assert suggestion("numpy.random.rand") == SUGGESTIONS["numpy.random.*"]
    assert suggestion("numpy.fft.rfft2") == SUGGESTIONS["numpy.fft.*"]
    assert suggestion("numpy.sin") == "" and suggestion("ndarray.view") == ""


@pytest.mark.parametrize("key", sorted(SUGGESTIONS))
def test_every_suggestion_names_a_real_numpy_object(key):
    parts = key.removesuffix(".*").split(".")
    obj = np.ndarray if parts[0] == "ndarray" else importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], 1):
        if not hasattr(obj, part): obj = importlib.import_module(".".join(parts[:i + 1]))
        else: obj = getattr(obj, part)


# each suggestion's formula, traced, against what NumPy's own function gives
def _suggested_formulas(x, counts, values, padded):
    w = 3
    windows = np.stack([x[..., i:x.shape[-1] - w + 1 + i] for i in range(w)], axis=-1)
    c = np.concatenate([fnp.zeros(1), np.cumsum(x)])
    moving_sum = c[w:] - c[:-w]
    isin = (counts[..., None] == values).any(axis=-1)
    trimmed = padded[np.cumsum(padded != 0) > 0]
    return windows, moving_sum, isin, trimmed


def test_suggested_formulas_compute_what_numpy_computes():
    from numpy.lib.stride_tricks import sliding_window_view
    x = RNG.standard_normal(9)
    counts = RNG.integers(0, 6, 20)
    values = np.array([1, 4])
    padded = np.array([0.0, 0.0, 3.0, 0.0, -1.0, 0.0])
    got = numfn.jit(_suggested_formulas)(x, counts, values, padded)
    want = (sliding_window_view(x, 3), sliding_window_view(x, 3).sum(axis=-1), np.isin(counts, values),
            np.trim_zeros(padded, "f"))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
        assert g.shape == np.shape(w)


GLOBAL_RNG = np.random.default_rng(5)


def _slow_and_draws(x):
    time.sleep(0.3)                          # the progress reporter is running by now
    return x + GLOBAL_RNG.standard_normal()  # a constant of the program: numfn refuses it


def test_the_progress_reporter_is_not_another_thread_for_the_random_guard(fast_progress):
    # with a thread of the user's running, a drawn-from generator is only a warning (that thread may have drawn);
    # the reporter runs nothing of the user's, so this stays the error it is in a single-threaded program
    if progress.other_threads_running(): pytest.skip("threads an earlier test started are still running")
    with pytest.raises(numfn.NumfnError, match="GLOBAL_RNG"):
        numfn.jit(_slow_and_draws)(np.zeros(2))


def test_other_threads_running_leaves_reporters_out(fast_progress):
    before = progress.other_threads_running()
    with progress.compiling("f(float64[1])") as p:
        time.sleep(0.2)                      # past the threshold: the reporter thread is alive
        assert p._thread.is_alive() and isinstance(p._thread, progress.ReporterThread)
        assert progress.other_threads_running() == before
