"""Shared test fixtures: every differential test runs on each backend available on this machine."""
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

import pytest

# tests never share a disk cache with the user's, and never leave one behind. Under pytest-xdist (-n 2) each worker
# has its own (the workers inherit the controller's): a worker runs its tests as a serial run of them would.
if "NUMFN_CACHE_DIR" not in os.environ:
    os.environ["NUMFN_CACHE_DIR"] = os.environ["NUMFN_TEST_CACHE_DIR"] = tempfile.mkdtemp(prefix="numfn-test-cache-")
if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("NUMFN_TEST_CACHE_DIR") == os.environ["NUMFN_CACHE_DIR"]:
    os.environ["NUMFN_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"numfn-test-cache-{os.environ['PYTEST_XDIST_WORKER']}-")

BACKENDS = ["llvm", "c"]


# The compile-free tier (`python -m pytest tests -m nocompile`, seconds): tests of the IR, the schedules of traced
# functions (not compiled), the import graph and the docs. A test in it (by `pytestmark = pytest.mark.nocompile` in
# its file, or the mark on the test) that reaches native compilation fails, so the tier stays honest.
def _refuse_compile(*args, **kwargs):
    raise AssertionError("a test of the compile-free tier (marked nocompile) compiled native code")


@pytest.fixture(autouse=True)
def _compile_free_guard(request, monkeypatch):
    if request.node.get_closest_marker("nocompile") is not None:
        import numfn.runtime
        monkeypatch.setattr(numfn.runtime, "load_or_compile", _refuse_compile)


def _have_c_compiler() -> bool:
    return bool(os.environ.get("NUMFN_CC") or shutil.which("clang") or shutil.which("cc") or shutil.which("gcc"))


# Both backends share every stage up to rendering, and the C backend's compile (clang in a subprocess) costs about
# twice LLVM's, so by default the C backend runs a fixed fifth of the cases that take the `backend` fixture (chosen by
# a hash of the test's id: the same cases every run, spread over every file and table); NUMFN_LONG_TESTS=1 runs all.
# (A quarter took 11% of the suite's time, which ran 15:58 on a quiet 2-core machine; tests/test_numerics_policy.py
# compares the backends bit for bit on its own.)
LONG_TESTS = os.environ.get("NUMFN_LONG_TESTS", "") not in ("", "0")
C_SHARE = 5


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    if request.param == "c":
        if not _have_c_compiler(): pytest.skip("no C compiler")
        if not LONG_TESTS and zlib.crc32(request.node.nodeid.encode()) % C_SHARE:
            pytest.skip(f"the C backend runs 1 in {C_SHARE} cases by default (NUMFN_LONG_TESTS=1 runs every case)")
    return request.param


@pytest.fixture(scope="session", autouse=True)
def _no_perf_map_left_behind():
    """Tests that set NUMFN_PERF_MAP make numfn write a perf map (/tmp/perf-<pid>.map): remove this process's."""
    path = f"/tmp/perf-{os.getpid()}.map"
    existed = os.path.exists(path)
    yield
    if not existed and os.path.exists(path): os.remove(path)


# mypy over numfn/ (tests/test_typecheck.py) keeps a core busy for about 20 s and needs nothing else: where that test
# is selected, mypy starts as soon as collection ends and runs beside the tests before it (on the other core of a
# 2-core machine); the test then waits for its result. (Under pytest-xdist every worker collects every test: there
# the test starts mypy itself, in the worker that runs it.)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_mypy_run: list = []


def start_mypy() -> tuple[subprocess.Popen, str]:
    cache = tempfile.mkdtemp(prefix="numfn-mypy-cache-")
    proc = subprocess.Popen([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT,
                            env=dict(os.environ, MYPY_CACHE_DIR=cache), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    return proc, cache


def _have_mypy() -> bool:
    try:
        import mypy  # noqa: F401 - in the test extras
    except ImportError:
        return False
    return True


def pytest_collection_finish(session):
    if os.environ.get("PYTEST_XDIST_WORKER") or _mypy_run: return
    if any(item.name == "test_mypy_is_clean" for item in session.items) and _have_mypy():
        _mypy_run.append(start_mypy())


def pytest_sessionfinish(session):
    for proc, cache in _mypy_run:   # started, but its test did not run (-x stopped the session)
        proc.kill()
        proc.communicate()
        shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture
def mypy_result() -> tuple[int, str]:
    """(exit status, output) of mypy over numfn/ with the project's settings, started at collection if it could be."""
    if not _have_mypy(): pytest.skip("mypy is in the test extras: pip install '.[test]'")
    proc, cache = _mypy_run.pop() if _mypy_run else start_mypy()
    try:
        out, _ = proc.communicate(timeout=600)
    finally:
        proc.kill()
        shutil.rmtree(cache, ignore_errors=True)
    return proc.returncode, out
