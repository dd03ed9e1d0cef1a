"""Seeing a program at run time: numfn's log lines (one copy of each whatever the logging setup, an error for a
NUMFN_DEBUG value that is no level, GFLOP/s and GB/s per kernel at DEBUG=2)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import numfn
from numfn import config, debug

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def quiet_env(monkeypatch):
    for name in ("NUMFN_DEBUG", "DEBUG"): monkeypatch.delenv(name, raising=False)
    return monkeypatch


# ---- one copy of each log line -------------------------------------------------------------------------------------
def _run_logging(setup: str, env: dict) -> str:
    """stderr of a fresh interpreter that configures logging by `setup`, then logs a level 1 and a level 2 line."""
    code = (f"import logging\n{setup}\nfrom numfn import debug\n"
            "debug.log(1, 'level one line')\ndebug.log(2, 'level two line')\n")
    environ = {k: v for k, v in os.environ.items() if k not in ("NUMFN_DEBUG", "DEBUG")}
    environ.update(env)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.nocompile
@pytest.mark.parametrize("setup, env, expected", [
    ("", {"NUMFN_DEBUG": "1"}, ["level one line"]),
    ("", {"NUMFN_DEBUG": "2"}, ["level one line", "level two line"]),
    # basicConfig at its default level (WARNING): the root handler must not print a second copy
    ("logging.basicConfig()", {"NUMFN_DEBUG": "1"}, ["level one line"]),
    ("logging.basicConfig()", {"DEBUG": "2"}, ["level one line", "level two line"]),
    # logging enabled for level 1 as well: the user's handler prints it (formatted), the shortcut adds level 2 only
    ("logging.basicConfig(level=logging.DEBUG)", {"NUMFN_DEBUG": "2"}, ["DEBUG:numfn:level one line",
                                                                         "level two line"]),
    ("logging.basicConfig(level=logging.DEBUG)", {}, ["DEBUG:numfn:level one line"]),
    ("logging.basicConfig(level=5)", {"NUMFN_DEBUG": "2"}, ["DEBUG:numfn:level one line", "Level 9:numfn:level two line"]),
    ("logging.basicConfig()", {}, []),
    # the logger enabled but no handler anywhere: the shortcut still prints
    ("logging.getLogger('numfn').setLevel(logging.DEBUG)", {"NUMFN_DEBUG": "1"}, ["level one line"]),
])
def test_each_log_line_prints_once_whatever_the_logging_setup(setup, env, expected):
    assert _run_logging(setup, env).splitlines() == expected


@pytest.mark.nocompile
@pytest.mark.parametrize("value", ["abc", "1.5", "-1", "two"])
def test_an_unknown_numfn_debug_value_raises_naming_the_variable(quiet_env, value):
    quiet_env.setenv("NUMFN_DEBUG", value)
    with pytest.raises(ValueError, match=r"NUMFN_DEBUG=.*not a debug level.*0 \(off\) to 5"):
        config.debug_level()
    with pytest.raises(ValueError, match="NUMFN_DEBUG"):
        debug.log(1, "never shown")


@pytest.mark.nocompile
def test_a_debug_value_of_other_tools_is_ignored_with_a_warning(quiet_env):
    quiet_env.setenv("DEBUG", "express:*-for-this-test")
    with pytest.warns(RuntimeWarning, match=r"DEBUG='express:\*-for-this-test' is not a numfn debug level"):
        assert config.debug_level() == 0
    quiet_env.setenv("NUMFN_DEBUG", "3")   # takes precedence
    assert config.debug_level() == 3


@pytest.mark.nocompile
@pytest.mark.parametrize("value, level", [("0", 0), ("1", 1), (" 2 ", 2), ("5", 5), ("7", 7), ("", 0)])
def test_debug_levels_that_are_accepted(quiet_env, value, level):
    quiet_env.setenv("NUMFN_DEBUG", value)
    assert config.debug_level() == level


# ---- GFLOP/s and GB/s at DEBUG=2 -------------------------------------------------------------------------------------
@pytest.mark.nocompile
def test_kernel_rates_are_work_over_time(caplog):
    kernels = ["E_1000", "R_10_10", "E_nowork"]
    timings = np.array([2_000, 500, 100, 4, 1, 1], np.int64)   # nanoseconds, then calls
    work = [[3_000, 8_000], [250, 1_000]]                       # the third kernel has no estimate
    with caplog.at_level(debug.logging_level(2), logger="numfn"):
        debug.report_kernel_times("f", kernels, timings, work)
    text = caplog.records[-1].getMessage()
    rows = {line.split()[0]: line for line in text.splitlines()[1:]}
    # E_1000: 4 calls in 2000 ns = 500 ns a call; 3000 ops and 8000 bytes a call
    assert re.search(r"\b6\.000 GFLOP/s\s+16\.000 GB/s", rows["E_1000"]), text
    assert re.search(r"\b0\.500 GFLOP/s\s+2\.000 GB/s", rows["R_10_10"]), text
    assert "GFLOP/s" not in rows["E_nowork"] and "GFLOP/s, GB/s" in text.splitlines()[0]
    assert not timings.any()   # counters reset


def test_debug_2_prints_rates_of_each_kernel(capsys, quiet_env, backend):
    quiet_env.setenv("NUMFN_DEBUG", "2")
    f = numfn.jit(lambda x: np.sqrt(x) * 2.0 + x.sum(), backend=backend)
    x = np.random.default_rng(4).random(5000)
    np.testing.assert_allclose(f(x), np.sqrt(x) * 2.0 + x.sum())
    err = capsys.readouterr().err
    names = [ei.kernel.name for ei in f.specializations[0].schedule]
    rows = [line for line in err.splitlines() if line.split()[:1] and line.split()[0] in names]
    assert rows and all(re.search(r"[0-9.]+ GFLOP/s +[0-9.]+ GB/s", row) for row in rows), err
    for row in rows:
        per_call_us = float(row.split()[5])
        gbs = float(re.search(r"([0-9.]+) GB/s", row).group(1))
        ei = next(ei for ei in f.specializations[0].schedule if ei.kernel.name == row.split()[0])
        assert gbs == pytest.approx(ei.bytes_moved / (per_call_us * 1e3), rel=0.01, abs=1e-3), row
