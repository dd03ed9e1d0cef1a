"""Differential fuzzing in the suite (numfn/tools/fuzz/): random programs on both backends and with NOOPT=1 against
NumPy; the fuzzer's own machinery (generation, replay, shrinking); and the defects it found, each as a regression
test. Long runs: `python -m numfn fuzz --count 20000` (see docs/reliability.md)."""
import os
import warnings

import numpy as np
import pytest

import numfn
from numfn.tools import fuzz
from helpers import check

# the programs every CI run checks: FUZZ_COUNT base programs in functions of 4, statements of every kind, and a
# quarter as many with writes into arrays (and CLASS_COUNT of each class below); NUMFN_FUZZ_COUNT changes the count
# (200, down from 240 when the classes came, keeps the file near a minute)
FUZZ_COUNT = int(os.environ.get("NUMFN_FUZZ_COUNT", "100"))


def test_random_programs_agree_with_numpy():
    report = fuzz.fuzz(FUZZ_COUNT, seed=7_000_000, parts=4, steps=10, writes=False, shrink_failures=True,
                       classes=("base",))
    assert report.programs == FUZZ_COUNT
    assert not report.failures, "\n\n".join(f"seed {s}: {f}\n{p.describe()}" for s, f, p in report.failures)


def test_random_programs_with_writes_agree_with_numpy():
    # writes into arrays and arguments (the defects W1-W4 below were found this way)
    report = fuzz.fuzz(FUZZ_COUNT // 4, seed=7_500_000, parts=4, steps=10, writes=True, classes=("base",))
    assert not report.failures, "\n\n".join(f"seed {s}: {f}\n{p.describe()}" for s, f, p in report.failures)


# ---- the program classes of issue 29 (numfn/tools/fuzz/classes.py) ---------------------------------------------------
# CLASS_COUNT programs of each class (more of the classes that compile fast) in functions of 2, on both backends,
# unshrunk: a failure names its seed, and `python -m numfn fuzz --classes CLASS --parts 2 --steps 6 --seed SEED
# --count 2` shrinks it.
CLASS_COUNT = int(os.environ.get("NUMFN_FUZZ_CLASS_COUNT", "8"))
CLASS_SCALE = {"scalars": 4, "complex": 2}
CLASS_SEEDS = {"loops": 8_100_000, "index": 8_200_000, "branches": 8_300_000, "scalars": 8_400_000,
               "complex": 8_500_000, "calls": 8_600_000}
@pytest.mark.parametrize("cls", list(CLASS_SEEDS))
def test_program_classes_agree_with_numpy(cls):
    count = CLASS_COUNT * CLASS_SCALE.get(cls, 1)
    report = fuzz.fuzz(count, seed=CLASS_SEEDS[cls], parts=2, steps=6, classes=(cls,),
                       configs=(("llvm", False), ("c", False)), shrink_failures=False, max_failures=1)
    assert report.programs + report.unsupported >= count or report.failures
    assert not report.failures, "\n\n".join(f"seed {s}: {f}\n{p.describe()}" for s, f, p in report.failures)


def _loop_and_branch(x, k):
    t = x.copy()
    for i in range(6):   # a native loop (more than 4 iterations) carrying t
        t = np.maximum(t * 0.5, x) + k
    if t.sum() > 0:
        v = x[1:]
    else:
        v = x[:-1]
    return t, v * 2


def test_threads_compile_specializations_at_once(backend="llvm"):
    """Issue 29 item 8: threads compiling specializations of one function with a loop and a branch at once (the
    LLVM backend; the fork test below takes the C backend)."""
    import threading
    f = numfn.jit(_loop_and_branch, backend=backend)
    sizes = [3, 4, 5, 6]
    barrier, results, errors = threading.Barrier(len(sizes)), {}, []

    def work(n):
        try:
            x = np.linspace(-1.0, 2.0, n)
            barrier.wait()
            results[n] = (x, f(x, np.float64(n)))
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(n,)) for n in sizes]
    for t in threads: t.start()
    for t in threads: t.join(120)
    assert not errors and sorted(results) == sizes
    for n, (x, got) in results.items():
        for g, e in zip(got, _loop_and_branch(x, np.float64(n))): np.testing.assert_allclose(g, e, rtol=1e-12)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_compiles_and_runs(backend="c"):
    """Issue 29 item 8: a child forked after a compile runs that code and compiles a specialization of its own."""
    import time
    f = numfn.jit(_loop_and_branch, backend=backend)
    x, y = np.linspace(-1.0, 2.0, 5), np.linspace(-2.0, 1.0, 7)
    f(x, np.float64(1))
    pid = os.fork()
    if pid == 0:   # pragma: no cover - the child reports through its exit status
        try:
            ok = all(np.allclose(g, e) for args in ((x, np.float64(1)), (y, np.float64(2)))
                     for g, e in zip(f(*args), _loop_and_branch(*args)))
            os._exit(0 if ok else 1)
        except BaseException:
            os._exit(2)
    deadline = time.monotonic() + 120
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done: break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child did not finish in 120 s (a lock held across fork?)")
        time.sleep(0.05)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    for g, e in zip(f(y, np.float64(2)), _loop_and_branch(y, np.float64(2))): np.testing.assert_allclose(g, e)


# ---- the fuzzer itself ------------------------------------------------------------------------------------------

def test_programs_are_reproducible_from_their_seed():
    a, b = fuzz.generate(123, parts=3, steps=12), fuzz.generate(123, parts=3, steps=12)
    assert a.source() == b.source() and all(np.array_equal(x, y) for x, y in zip(a.inputs, b.inputs))
    assert a.source() != fuzz.generate(124, parts=3, steps=12).source()


def test_described_programs_rerun_as_printed():
    prog = fuzz.generate(5, parts=2, steps=10)
    namespace: dict = {}
    exec(prog.describe(), namespace)   # noqa: S102 - the fuzzer's own output
    args = [namespace[n] for n in prog.arg_names]
    for x, y in zip(args, prog.inputs):
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y)
    meta = fuzz.metadata(prog)
    with np.errstate(all="ignore"):
        out = namespace["f"](*args)
    for name, value in zip(prog.outputs, out):
        np.testing.assert_array_equal(value, meta[name].value)


def test_generated_statements_cover_the_constructs():
    ops = {s.op for seed in range(60) for s in fuzz.generate(seed, parts=4, steps=12).stmts}
    for op in ("add", "astype", "sum", "cumsum", "index", "gather", "matmul", "where", "concat", "write", "update",
               "roll", "pad", "einsum", "argmax"):
        assert op in ops, op


def test_shrinking_finds_a_minimal_failing_program(monkeypatch):
    # a stand-in defect: any program using np.sin "fails"; the shrunk program keeps one statement with np.sin
    def fake_check(prog, configs=fuzz.CONFIGS):
        if any("np.sin(" in s.text for s in prog.stmts) and fuzz.metadata(prog) is not None:
            return fuzz.Failure(("llvm", False), "mismatch", "sin")
        return None
    monkeypatch.setattr(fuzz.run, "check", fake_check)
    seed = next(s for s in range(1000) if fake_check(fuzz.generate(s, parts=4, steps=12)))
    prog = fuzz.generate(seed, parts=4, steps=12)
    small = fuzz.shrink(prog, fake_check(prog))
    assert fake_check(small) is not None
    assert len(small.stmts) == 1 and "np.sin(" in small.stmts[0].text
    assert len(small.inputs) == 1


def test_a_wrong_result_is_reported():
    # the comparison itself: float64 results of correctly rounded operations agree to 1e-12, integers exactly,
    # dtypes and shapes exactly
    prog = fuzz.Program([np.array([1.5, 2.0])], [fuzz.Stmt("add", "v0", ("x0", "x0"), "v0 = x0 + x0", 0)], ["v0"])
    meta = fuzz.metadata(prog)
    assert fuzz.compare(np.array([3.0, np.nextafter(4.0, 5.0)]), meta["v0"], "v0") is None
    assert "differs" in fuzz.compare(np.array([3.0, 4.0 + 1e-9]), meta["v0"], "v0")
    assert "dtype" in fuzz.compare(np.array([3.0, 4.0], np.float32), meta["v0"], "v0")


def test_the_command_line_runs_programs(capsys, monkeypatch):
    # the command turns the disk cache off for its process: set here, so it is undone for the tests after this
    monkeypatch.setenv("NUMFN_DISABLE_CACHE", "1")
    from numfn.__main__ import main
    assert main(["fuzz", "--count", "4", "--parts", "2", "--seed", "11", "--no-writes", "--classes", "base"]) == 0
    assert "4 programs in 2 compiled functions, 0 failures" in capsys.readouterr().out


def test_the_command_line_selects_classes(capsys, monkeypatch):
    # the command turns the disk cache off for its process: set here, so it is undone for the tests after this
    monkeypatch.setenv("NUMFN_DISABLE_CACHE", "1")
    from numfn.__main__ import main
    assert main(["fuzz", "--count", "2", "--parts", "2", "--seed", "3", "--classes", "base",
                 "--backends", "llvm"]) == 0
    assert "2 programs in 1 compiled functions, 0 failures" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["fuzz", "--classes", "loops,nope"])
    assert "unknown program class nope; the classes are base, loops" in capsys.readouterr().err
    assert fuzz.parse_classes("loops, scalars") == ("loops", "scalars")


def _programs(cls: str, count: int = 25):
    return [fuzz.generate(seed, parts=3, steps=8, classes=(cls,)) for seed in range(count)]


@pytest.mark.parametrize("cls, constructs", [
    ("loops", ["for i", "while c", "range(x", "np.outer(", "[i", "copy()\n", "= 7"]),
    ("index", ["* i", "+ i"]),
    ("branches", ["if ", "else:", "= 7", "[1:]", "[:-1]", "np.abs(", "return ("]),
    ("scalars", ["np.add(", "np.where(", " ** ", " // "]),
    ("complex", ["np.nanargmax(", "np.sort(", "np.nanmean(", "np.real(", "for i"]),
])
def test_classes_generate_their_constructs(cls, constructs):
    progs = _programs(cls)
    text = "\n".join(p.source() for p in progs)
    for c in constructs: assert c in text, c
    dtypes = {np.asarray(x).dtype.name for p in progs for x in p.inputs}
    if cls == "scalars":
        kinds = {type(x) for p in progs for x in p.inputs}
        assert {bool, int, float} <= kinds and {"int8", "uint8", "float16", "float32"} <= dtypes
        assert any(x == 2 ** 63 - 1 for p in progs for x in p.inputs if type(x) is int)
    if cls == "complex":
        assert {"complex64", "complex128", "float16"} <= dtypes
        assert any(np.isnan(x).any() for p in progs for x in p.inputs if x.dtype.kind in "fc")
    if cls == "loops":   # odd and even trip counts above the unroll limit, static and from an argument
        counts = {s.param for p in progs for s in p.stmts if s.op.startswith("loop")}
        assert any(c % 2 for c in counts) and any(c and c % 2 == 0 for c in counts) and max(counts) > 4
    if cls == "branches":
        assert any(p.ret for p in progs)
    assert all(fuzz.metadata(p) is not None for p in progs)


def test_calls_programs_are_called_with_keywords():
    progs = _programs("calls", 5)
    assert all(p.keywords for p in progs) and "called as f(x0=x0" in progs[0].describe()
    assert not any(p.keywords for p in _programs("loops", 5))


@pytest.mark.parametrize("cls", ["loops", "branches", "scalars", "complex"])
def test_class_programs_rerun_as_printed(cls):
    for prog in _programs(cls, 6):
        namespace: dict = {}
        exec(prog.describe(), namespace)   # noqa: S102 - the fuzzer's own output
        args = [namespace[n] for n in prog.arg_names]
        for x, y in zip(args, prog.inputs):
            assert type(x) is type(y) and np.array_equal(x, y, equal_nan=np.asarray(x).dtype.kind in "fc")
        meta = fuzz.metadata(prog)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = namespace["f"](*args)
        for name, value in zip(prog.outputs, out):
            np.testing.assert_array_equal(np.asarray(value), meta[name].value)


def test_a_function_returning_from_both_sides_of_an_if():
    prog = next(p for p in _programs("branches", 40) if p.ret and p.ret[1] in p.outputs)
    cond, r, e1, e2 = prog.ret
    assert f"    if {cond}:\n        return (" in prog.source() and e1 in prog.source() and e2 in prog.source()
    assert f"{r} = " not in prog.source()   # the if returns the views itself


def test_shrinking_simplifies_loops(monkeypatch):
    # a stand-in defect: any native loop "fails"; the shrunk program is the loop alone, with one body statement
    def fake_check(prog, configs=fuzz.CONFIGS):
        if any(s.op.startswith(("loop", "while")) for s in prog.stmts) and fuzz.metadata(prog) is not None:
            return fuzz.Failure(("llvm", False), "mismatch", "loop")
        return None
    monkeypatch.setattr(fuzz.run, "check", fake_check)
    prog = next(p for p in _programs("loops", 20) if len(p.stmts) > 4)
    small = fuzz.shrink(prog, fake_check(prog))
    assert len(small.stmts) == 1 and small.stmts[0].op.startswith(("loop", "while"))
    assert len(small.stmts[0].text.split("\n")) <= 5 and len(small.inputs) <= 3


def test_a_keyword_call_that_compiles_again_is_reported(monkeypatch):
    class Jitted:   # a stand-in for numfn.jit whose every call compiles
        def __init__(self, fn, backend):
            self.fn, self.specializations = fn, []

        def __call__(self, *args, **kwargs):
            self.specializations.append(type("Spec", (), {"fallback": None})())
            return self.fn(*args, **kwargs)
    monkeypatch.setattr(numfn, "jit", Jitted)
    prog = fuzz.Program([np.array([1.5, 2.0])], [fuzz.Stmt("add", "v0", ("x0", "x0"), "v0 = x0 + x0", 0)], ["v0"],
                        keywords=True)
    found = fuzz.run_config(prog, ("llvm", False), fuzz.metadata(prog))
    assert found is not None and found.kind == "recompile"
    assert fuzz.run_config(prog.but(keywords=False), ("llvm", False), fuzz.metadata(prog)) is None


def test_programs_that_must_raise_overflow_error():
    # NumPy raises OverflowError for a Python int out of an array's integer dtype, and numfn (holding Python ints
    # in int64) must raise it too, also for a Python int that leaves int64 (Python computes it exactly)
    assert any(s.op == "raises" for p in _programs("scalars", 40) for s in p.stmts)
    narrow = fuzz.Program([np.array([1, 2], np.int8), 300],
                          [fuzz.Stmt("raises", "v0", ("x0", "x1"), "v0 = x0 + x1", 0)], ["v0"])
    assert "NumPy raises OverflowError" in fuzz.metadata(narrow)[fuzz.run.RAISES].selected
    assert fuzz.check(narrow, (("llvm", False),)) is None   # numfn raises it when called
    wide = fuzz.Program([5], [fuzz.Stmt("raises", "v0", ("x0",), "v0 = x0 ** 30", 0)], ["v0"])
    assert "out of int64" in fuzz.metadata(wide)[fuzz.run.RAISES].selected
    assert fuzz.metadata(wide.but(inputs=[3])) is None   # 3 ** 30 fits: not the program it was


def test_complex_and_float16_tolerances():
    prog = fuzz.Program([np.array([1 + 2j], np.complex64), np.array([1.5], np.float16)],
                        [fuzz.Stmt("mul", "v0", ("x0", "x0"), "v0 = x0 * x0", 0),
                         fuzz.Stmt("add", "v1", ("x1", "x1"), "v1 = x1 + x1", 0)], ["v0", "v1"])
    meta = fuzz.metadata(prog)
    assert not meta["v0"].exact and meta["v0"].lowp and meta["v1"].half and meta["v1"].exact
    assert fuzz.compare(np.array([-3 + 4.00001j], np.complex64), meta["v0"], "v0") is None   # float32's
    assert "differs" in fuzz.compare(np.array([-3 + 4.01j], np.complex64), meta["v0"], "v0")
    assert fuzz.compare(np.array([3.0], np.float16), meta["v1"], "v1") is None
    assert "differs" in fuzz.compare(np.array([3.1], np.float16), meta["v1"], "v1")


# ---- defects the fuzzer found, fixed ----------------------------------------------------------------------------

def test_np_power_of_bools_is_int64(backend):
    # NumPy squares a bool ndarray with `** 2` in int8 (its fast path) but np.power promotes to int64
    b = np.array([True, False])
    check(lambda x: (np.power(x, 2), x ** 2, np.power(x, 3), x ** 3), b, backend=backend)


def test_cumsum_of_an_empty_array_used_elementwise(backend):
    # the scan of an empty array was dropped as unused (no kernel loads an empty buffer), then inlined: "cannot
    # lower SCAN inside a kernel"
    x = np.zeros((0, 5, 5), np.int32)
    check(lambda x: np.cumsum(x, axis=-2) ** np.clip(np.cumsum(x, axis=-2), 0, 3), x, backend=backend)


def test_returning_contiguous_and_copies_of_one_value(backend):
    # outputs that differ only by CONTIGUOUS collapsed into one root and lost its output buffer: uninitialized
    # memory was returned
    x = np.arange(6.0)

    def f(u):
        return (u * 2).copy(), (u * 2).contiguous(), u.contiguous(), u.copy(), (u + 1).contiguous()
    got = numfn.jit(f, backend=backend)(x)
    for g, e in zip(got, (x * 2, x * 2, x, x, x + 1)):
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_])
def test_ufunc_outer_makes_arrays_of_python_scalars(backend, dtype):
    # ufunc.outer converts both operands with asarray: a Python scalar is a strong 0-d array there (float32 - -1
    # is float64), unlike the operators and ufunc calls where it is weak (NEP 50)
    x = np.ones(3, dtype)
    check(lambda x: (np.subtract.outer(x, -1), np.add.outer(x, 2.5), np.multiply.outer(2, x), np.add.outer(x, x)),
          x, backend=backend)


def test_ufuncs_on_arrays_selected_by_a_mask(backend):
    # every ufunc computed by ufuncs._apply (square, sign, hypot, arctan2, expm1, fmax, copysign, ...) raised
    # "TypeError: unhashable type: 'Length'" on x[mask]: they now keep its run-time length like the operators
    x = np.array([1.0, -1.0, 2.0, 0.5, -3.0])

    def f(x):
        v = x[x > 0]
        return (np.square(v), np.sign(v - 1), np.hypot(v, 1.0), np.arctan2(v, v + 1), np.expm1(v), np.cbrt(v),
                np.fmax(v, 1.5), np.copysign(v, -1.0), np.rint(v * 3), np.divmod(v, 0.75), np.square(x[x > 5]).sum())
    check(f, x, backend=backend)


def test_ufunc_methods_on_arrays_selected_by_a_mask_are_refused_by_name():
    from numfn.errors import NumfnError
    x = np.array([1.0, -1.0, 2.0])
    for method in (lambda v: np.add.reduce(v), lambda v: np.maximum.accumulate(v), lambda v: np.add.outer(v, v)):
        with pytest.raises(NumfnError, match=r"numpy\.(add|maximum)\.(reduce|accumulate|outer) on an array selected"):
            numfn.jit(lambda x, m=method: m(x[x > 0]), backend="llvm")(x)


def test_declared_twice_reproducer(backend):
    # issue 18, defect 4 (fixed on main by a scheduler change; kept as a regression test)
    rng = np.random.default_rng(4)
    x, y = rng.random((2, 4, 2)), rng.random((5, 2))
    check(lambda x, y: (y.sum() - np.cumsum(y, axis=0).max(axis=0)) + x, x, y, backend=backend)


# ---- defects found in indexing/assignment (numfn/trace/subscript.py, schedule._Versions), reported, not yet fixed ----

def _mutating(fn, *xs):
    """fn run by NumPy and by numfn on copies of xs: (NumPy's result and arguments, numfn's)."""
    ours, theirs = [x.copy() for x in xs], [x.copy() for x in xs]
    expected = fn(*theirs)
    got = numfn.jit(fn, backend="llvm")(*ours)
    return (expected, theirs), (got, ours)


def _assert_same_effects(fn, *xs):
    (e, ea), (g, ga) = _mutating(fn, *xs)
    np.testing.assert_array_equal(g, e, strict=True)
    for a, b in zip(ga, ea): np.testing.assert_array_equal(a, b, strict=True)


def test_value_computed_before_a_write_into_an_argument():
    """W1, found by the fuzzer: a value computed before a write into an argument is computed after it (fixed)."""
    def f(x):
        v = x * 2
        x[0] = 0
        return v + x
    _assert_same_effects(f, np.array([1, 2, 3]))


def test_assignment_into_an_empty_slice():
    """W2, found by the fuzzer: assigning into an empty slice empties the result and zeroes the argument (fixed)."""
    def f(x):
        x[0:-3] = x
        return x
    _assert_same_effects(f, np.array([5.0]))


def test_self_assignment_through_repeated_integer_indices():
    """W3, found by the fuzzer: x[idx] = x with repeated indices leaves the argument unwritten (fixed)."""
    def f(x):
        x[np.array([4, 2, 0, 2, 4])] = x
        return x + 0
    _assert_same_effects(f, np.arange(5.0))


def test_two_writes_with_repeated_integer_indices():
    """W4, found by the fuzzer: a second write into an argument with repeated indices is lost (fixed)."""
    def f(x):
        x[np.array([0, 2, 2])] = x
        x[np.array([0, 2, 2])] *= x
        return x + 0
    _assert_same_effects(f, np.array([0, 2, 2]))


def test_a_write_after_a_copy_reaches_the_argument():
    """Found by the fuzzer (seed 27 of a writes run): the second write with repeated indices went to a copy
    that never reached the argument."""
    def f(x0, x1):
        x1[:, np.array([-1, -1, 0])] += x0
        v10 = np.logical_and(x1, x0)
        x1[:, np.array([0, 0, -1, -1])] *= x0
        return np.where(v10, x1, x0)
    _assert_same_effects(f, np.array(-3, dtype=np.int8), np.array([[1], [1]], dtype=np.int8))


def test_writes_into_three_arguments_through_copies():
    """Found by the fuzzer (seed 44): three arguments written back after copies made the steps' order cyclic."""
    def f(x0, x1, x2):
        v1 = x0.flatten()
        x0[np.clip(v1, -1, 0)] *= x0
        x1[np.clip(v1, -1, 0)] = x0
        x2[np.clip(x2, -1, 0)] = x2
        return x0 + 0
    _assert_same_effects(f, np.array([-3]), np.array([False]), np.array([3], np.int16))


def test_clip_keeps_a_run_time_length():
    """Found by the fuzzer (seed 160): np.clip of x[mask] returned the whole bound."""
    check(lambda x: (np.clip(x[x > 0], -4, 4), np.expm1(np.clip(x[x > 0], -4, 4))),
          np.array([0.5, -0.5, -2.5, 1.0]), backend="llvm")


def test_accumulate_and_reduce_with_nothing_to_do_return_new_arrays():
    """Found by the 20,000-program run: ufunc.accumulate along an axis of length 1 (and ufunc.reduce over no axes)
    returned its operand itself, so a later write into the operand changed the result (fixed)."""
    def accumulate_then_write(x):
        v = np.maximum.accumulate(x, axis=2)
        x[...] += v
        return v

    def reduce_then_write(x):
        v = np.add.reduce(x, axis=())
        x *= 3
        return v
    _assert_same_effects(accumulate_then_write, np.ones((3, 2, 1), np.int32))
    _assert_same_effects(reduce_then_write, np.arange(4.0))


def test_classifying_ufuncs_keep_a_run_time_length(backend):
    """Found by the 20,000-program run: np.isnan/isinf/isfinite of x[mask] or of np.nonzero's indices returned
    the whole bound (float operands) or could not be traced (integer operands) (fixed)."""
    x = np.array([[1.0], [0.0], [np.nan], [np.inf]], np.float32)
    check(lambda x: (np.isnan(x[x != 0]), np.isinf(x[x != 0]), np.isfinite(np.nonzero(x)[0]),
                     np.isnan(np.nonzero(x)[1])), x, backend=backend)


@pytest.mark.parametrize("x", [np.array([[1, -1]], np.int8), np.array([[1, 2]], np.int8)])
def test_a_run_time_length_of_one_broadcasts_against_a_static_axis(backend, x):
    """Found by the 20,000-program run: x[mask] with one element against an axis of static size n > 1 raised a
    broadcast error; NumPy broadcasts it (and a length equal to n combines elementwise) (fixed)."""
    check(lambda x: (np.fmax(x, x[x > 0]), x + x[x > 0], np.logical_xor(x.ravel()[:, None], np.nonzero(x)[1])), x,
          backend=backend)


def test_a_run_time_length_against_a_static_axis_is_checked():
    f = numfn.jit(lambda x: x + x[x > 0])
    with pytest.raises(ValueError, match="could not be broadcast"):
        f(np.array([[1, 2, -3]], np.int8))


def test_sums_of_one_negative_zero_are_positive_zero(backend):
    """Found by the 20,000-program run: a sum over axes of one element (np.sum, matmul/dot/einsum with an inner
    length of 1) kept -0.0; NumPy adds to 0.0, so -0.0 sums to 0.0 (fixed)."""
    a, b = np.ones((3, 1)), np.array([-0.0])
    check(lambda a, b: (a @ b, np.sum(b), np.sum(a * b, axis=-1), np.einsum("ij,j->i", a, b), np.dot(a, b),
                        np.mean(b), np.cumsum(b), np.prod(b)), a, b, backend=backend, signed_zeros=True)


def test_an_empty_value_into_an_empty_advanced_index_assigns_nothing():
    """Found by the 20,000-program run: NumPy lets an empty value of any shape into an empty result of advanced
    indexing (x[[0], [0]] = v with both of size 0), numfn raised its shape mismatch (fixed)."""
    def f(x):
        x[np.array([0]), np.array([0])] = np.expand_dims(x, -2)
        z = np.zeros((3, 0)) + x.sum()
        z[np.array([0, 1])] = np.zeros((4, 1, 0))
        return z
    _assert_same_effects(f, np.zeros((1, 4, 0), np.int64))
    with pytest.raises(ValueError, match="shape mismatch"):   # a value with elements still does not fit
        numfn.jit(lambda x: x.__setitem__((np.array([0]), np.array([0])), np.ones((1, 4, 1, 2))))(np.zeros((1, 4, 0)))


@pytest.mark.parametrize("dtype", [np.uint8, np.bool_, np.int32])
def test_ufunc_results_equal_to_an_operand_are_new_arrays(dtype):
    """Found by the 20,000-program run: np.abs (and abs()) of unsigned integers returned the operand itself, so a
    later write into the operand showed in the result (fixed for every ufunc call)."""
    def f(x):
        y, z, w = abs(x), np.abs(x), np.rint(x) if dtype is not np.bool_ else np.logical_and(x, True)
        x[np.array([0])] = np.matmul(x, z)
        return y, z, w
    _assert_same_effects(f, np.array([1, 1], dtype))


def test_ravel_copies_what_is_not_contiguous():
    """Found by the 20,000-program run: ravel of a flipped view was a view (NumPy copies an array that is not
    contiguous in the order asked), so a later write into the base showed in it (fixed)."""
    def f(x):
        a, b, c = np.ravel(np.flip(x, axis=None)), x.T.ravel(), x[1:].ravel()
        d, e, g = x[:, :1].ravel(), x.T.ravel(order="F"), x.reshape(-1)
        x[:, np.array([-1, 0])] += x
        return a, b, c, d, e, g
    (expected, theirs), (got, ours) = _mutating(f, np.arange(6).reshape(3, 2))
    for g, e in zip(got, expected): np.testing.assert_array_equal(g, e, strict=True)
    np.testing.assert_array_equal(ours[0], theirs[0], strict=True)


def test_deep_index_expressions_order_their_terms_without_recursion():
    """Found by the 20,000-program run: np.gcd's branch-free steps as the index of a write made an index expression
    deep enough that ordering the terms of an affine sum (symbolic._order_key) hit RecursionError (fixed)."""
    def f(x):
        x[np.clip(np.gcd(0, x), -5, 4)] *= x
        return x + 0
    _assert_same_effects(f, np.array([1, 1, 1, 1, 1], np.uint64))


@pytest.mark.parametrize("backend", ["llvm", "c"])
def test_writing_into_an_empty_argument_writes_nothing(backend):
    """Found by the 20,000-program run as heap corruption (free(): invalid next size): the kernel of
    `x[...] = v` into an argument of shape (0, 4) lost its loop of no iterations and wrote 4 elements past the
    empty array. Kernels with nothing to compute are not run now."""
    def f(x, v):
        x[...] = v
        x[:, 1:] += 1.0
        return v + 1
    for _ in range(20):   # one out-of-bounds write does not always corrupt the heap at once
        x = np.zeros((0, 4))
        guard = np.full(64, 7.0)   # the kind of neighbour such a write used to overwrite
        np.testing.assert_array_equal(numfn.jit(f, backend=backend)(x, np.array(2, np.uint8)), 3)
        assert x.shape == (0, 4) and (guard == 7.0).all()
