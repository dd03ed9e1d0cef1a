"""Seeing a program at run time: numfn.debug.print and numfn.debug.callback (values printed and passed when the
compiled code runs, in order, inside native loops and branches, on both backends; the oracle is the same function
run by NumPy, where both act at once), and numfn's log lines (one copy of each whatever the logging setup, an error
for a NUMFN_DEBUG value that is no level, GFLOP/s and GB/s per kernel at DEBUG=2)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import numfn
from numfn import config, debug

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RNG = np.random.default_rng(32)


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
    ("logging.basicConfig(level=5)", {"NUMFN_DEBUG": "2"},
     ["DEBUG:numfn:level one line", "Level 9:numfn:level two line"]),
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


# ---- numfn.debug.print and numfn.debug.callback ---------------------------------------------------------------------
from numfn.schedule.items import LoopKernel   # noqa: E402


def _printed_by_numpy(capsys, fn, *args):
    """What `fn` prints run by NumPy (numfn.debug.print prints at once outside jit), and its result."""
    capsys.readouterr()
    out = fn(*args)
    return capsys.readouterr().out, out


def _check_prints(capsys, fn, *args, backend="llvm", loops=0):
    want, expected = _printed_by_numpy(capsys, fn, *args)
    f = numfn.jit(fn, backend=backend)
    for _ in range(2):   # compiled, then called again (the fast path): prints every run
        got = f(*args)
        assert capsys.readouterr().out == want
        np.testing.assert_allclose(got, expected)
    nf = f.specializations[0]
    assert sum(isinstance(ei.kernel, LoopKernel) for ei in nf.schedule) >= loops, "the loop was not compiled"
    return want


def _straight(x, y):
    numfn.debug.print("x {} y {}", x, y)
    z = np.sin(x) * y
    numfn.debug.print("z {z} sum {s:.6f}", z=z, s=z.sum())
    numfn.debug.print("no arrays, {}", "a string")
    return z


@pytest.mark.parametrize("shape", [(), (1,), (5,), (2, 3)])
def test_print_in_straight_code(capsys, backend, shape):
    x = RNG.standard_normal(shape)
    want = _check_prints(capsys, _straight, x, 2.5, backend=backend)
    assert want.startswith("x ") and want.endswith("\nno arrays, a string\n") and "\nz " in want


def _fori(x, n):
    def body(i, x):
        x = x * 0.5 + i
        numfn.debug.print("i {} x {} total {}", i, x, x.sum())
        return x
    numfn.debug.print("before {}", x)
    x = numfn.fori_loop(0, n, body, x)
    numfn.debug.print("after {}", x)
    return x


def _newton(x, tol):
    r = x * x - 2.0
    k = 0
    while np.abs(r) > tol:
        x = x - r / (2 * x)
        r = x * x - 2.0
        k += 1
        numfn.debug.print("k {} x {} r {}", k, x, r)
        if k > 2:
            numfn.debug.print("late step {}", k)
    return x


def _nested(x, n):
    def outer(i, x):
        numfn.debug.print("outer {}", i)

        def inner(j, y):
            numfn.debug.print(" inner {} {} {}", i, j, y)
            return y + 1
        return numfn.fori_loop(0, 2, inner, x)
    return numfn.fori_loop(0, n, outer, x)


def _ticks(x, n):
    for _ in range(n):
        numfn.debug.print("tick")   # reads nothing of the loop: printed at every iteration all the same
        x = x + 1
    return x


@pytest.mark.parametrize("fn, args, lines", [
    (_fori, (np.arange(3.0), 4), 6),
    (_newton, (np.float64(1.0), 1e-12), 8),
    (_nested, (np.zeros(2), 3), 9),
    (_ticks, (np.zeros(1), 5), 5),
])
def test_print_inside_native_loops_in_iteration_order(capsys, backend, fn, args, lines):
    want = _check_prints(capsys, fn, *args, backend=backend, loops=1)
    assert want.count("\n") == lines


def test_print_in_a_branch_prints_only_when_taken(capsys, backend):
    def f(x):
        if x.sum() > 0:
            numfn.debug.print("positive {}", x)
        else:
            numfn.debug.print("not positive {}", x)
        return x * 2

    g = numfn.jit(f, backend=backend)
    for x in (np.ones(2), -np.ones(2), np.zeros(2)):
        want, _ = _printed_by_numpy(capsys, f, x)
        g(x)
        assert capsys.readouterr().out == want


@pytest.mark.parametrize("make", [
    lambda: np.arange(4, dtype=np.int32) - 2,
    lambda: np.arange(3, dtype=np.uint8),
    lambda: np.array([True, False]),
    lambda: np.linspace(0, 1, 3).astype(np.float32),
    lambda: np.linspace(0, 1, 3).astype(np.float16),
    lambda: np.array([1 + 2j, -0.5j]),
    lambda: np.zeros((0, 3)),
    lambda: np.arange(12.0).reshape(3, 4)[::2, ::-1],   # non-contiguous, negative stride
])
def test_callback_receives_the_arrays_numpy_computes(backend, make):
    x = make()
    seen = []

    def f(x):
        numfn.debug.callback(lambda a, b, c=None: seen.append((a, b, c)), x, x * 2, c={"t": x[..., :1]})
        return x

    np.testing.assert_array_equal(numfn.jit(f, backend=backend)(x), x)
    assert len(seen) == 1
    a, b, c = seen[0]
    for got, want in ((a, x), (b, x * 2), (c["t"], x[..., :1])):
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_callback_under_vmap_runs_per_element(backend):
    seen = []

    def f(row):
        numfn.debug.callback(seen.append, row)
        return row.sum()

    x = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(numfn.jit(numfn.vmap(f), backend=backend)(x), x.sum(axis=1))
    assert len(seen) == 3
    for got, row in zip(seen, x): np.testing.assert_array_equal(got, row)


def test_outside_jit_both_act_at_once(capsys):
    seen = []
    numfn.debug.print("now {} {}", np.arange(2), 3)
    numfn.debug.callback(seen.append, 7)
    assert capsys.readouterr().out == "now [0 1] 3\n" and seen == [7]


def test_an_exception_in_a_callback_is_reported_and_the_run_goes_on(capsys):
    def broken(a):
        raise ValueError("broken on purpose")

    f = numfn.jit(lambda x: (numfn.debug.callback(broken, x), x + 1)[1])
    np.testing.assert_array_equal(f(np.zeros(2)), np.ones(2))
    err = capsys.readouterr().err
    assert "exception in a run-time callback" in err and "broken on purpose" in err


@pytest.mark.nocompile
def test_print_errors():
    with pytest.raises(TypeError, match="format must be a str"):
        numfn.debug.print(3)
    with pytest.raises(TypeError, match="is not callable"):
        numfn.debug.callback(3, 4)


def test_a_print_loads_from_the_disk_cache_in_another_process(tmp_path):
    code = ("import numpy as np, numfn\n"
            "def f(x, n):\n"
            "    def body(i, x):\n"
            "        numfn.debug.print('i {} x {}', i, x)\n"
            "        return x + 1\n"
            "    return numfn.fori_loop(0, n, body, x)\n"
            "numfn.jit(f)(np.zeros(2), 3)\n")
    env = {**os.environ, "NUMFN_CACHE_DIR": str(tmp_path), "NUMFN_DEBUG": "1"}
    env.pop("DEBUG", None)
    runs = [subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=120) for _ in range(2)]
    for r in runs: assert r.returncode == 0, r.stderr
    assert runs[0].stdout == runs[1].stdout == "i 0 x [0. 0.]\ni 1 x [1. 1.]\ni 2 x [2. 2.]\n"
    assert "compiled" in runs[0].stderr and "loaded" in runs[1].stderr.lower(), runs[1].stderr


# ---- assembly ------------------------------------------------------------------------------------------------------
def test_assembly_of_each_function(backend):
    f = numfn.jit(lambda x: np.exp(x).sum() + x.max(), backend=backend)
    x = RNG.random(300_000)   # large enough for a parallel kernel: its body is a function of its own
    nf = f.specialize(x)
    asm = nf.assembly
    assert nf.entry_name in asm
    kernels = [ei.kernel.name for ei in nf.schedule]
    assert any(name.startswith(k) for name in asm for k in kernels), (list(asm), kernels)
    for text in asm.values():
        assert re.search(r"^\s+(ret|retq|jmp|jmpq)\b", text, re.M), text[:2000]   # an instruction of the function
    np.testing.assert_allclose(f(x), np.exp(x).sum() + x.max())


def test_dump_assembly_switch_prints_each_program_compiled(capsys, quiet_env, backend):
    quiet_env.setenv("NUMFN_DUMP_ASSEMBLY", "1")
    quiet_env.setenv("NUMFN_DISABLE_CACHE", "1")   # compiled, not loaded
    f = numfn.jit(lambda x: np.sqrt(x) + 1.0, backend=backend)
    np.testing.assert_allclose(f(np.arange(5.0)), np.sqrt(np.arange(5.0)) + 1.0)
    err = capsys.readouterr().err
    nf = f.specializations[0]
    assert f"---- assembly of {nf.name} ({backend}) ----" in err and f"{nf.entry_name}:" in err
    assert re.search(r"^\s+(ret|retq)\b", err, re.M) and "sqrt" in err.lower()


# ---- callbacks under transformations and the other loop constructs ---------------------------------------------------
def _scan_prints(x):
    def step(c, xi):
        numfn.debug.print("carry {} element {}", c, xi)
        return c + xi, c * xi
    return numfn.scan(step, 0.0, x)


def _while_prints(x):
    def body(s):
        numfn.debug.print("count {} value {}", s[0], s[1])
        return s[0] + 1, s[1] * 2
    return numfn.while_loop(lambda s: s[0] < 3, body, (0, x))


@pytest.mark.parametrize("fn, args", [(_scan_prints, (np.arange(4.0),)), (_while_prints, (np.ones(2),))])
def test_print_in_scan_and_while_loop(capsys, backend, fn, args):
    want, expected = _printed_by_numpy(capsys, fn, *args)
    got = numfn.jit(fn, backend=backend)(*args)
    assert capsys.readouterr().out == want and want.count("\n") >= 3
    for a, b in zip(got, expected): np.testing.assert_allclose(a, b)


def test_print_under_grad_prints_the_primal_values(capsys, backend):
    def loss(w):
        numfn.debug.print("w {}", w)
        return (w * w).sum()

    w = np.arange(3.0)
    np.testing.assert_allclose(numfn.jit(numfn.grad(loss), backend=backend)(w), 2 * w)
    assert capsys.readouterr().out == f"w {w}\n"


def test_callback_under_svmap_runs_once_per_example():
    seen = []

    def per(x):
        numfn.debug.callback(seen.append, x)
        return x * 2

    x = np.arange(8.0).reshape(4, 2)
    np.testing.assert_array_equal(numfn.svmap(per)(x), x * 2)   # (its examples run on several threads: any order)
    assert sorted(map(tuple, seen)) == sorted(map(tuple, x))


def test_export_refuses_a_function_that_calls_python():
    def f(x):
        numfn.debug.print("x {}", x)
        return x + 1

    with pytest.raises(numfn.ExportError, match="calls Python at run time .*numfn.debug.print"):
        numfn.export(f, np.ones(3))


def test_the_same_print_of_float16_and_float64_values_prints_each_as_its_dtype(capsys):
    def f(x):
        numfn.debug.print("{!r}", x)
        return x

    for dt in (np.float16, np.float64):
        x = np.array([0.1, 2.5], dt)
        numfn.jit(f)(x)
        assert capsys.readouterr().out == f"{x!r}\n"
