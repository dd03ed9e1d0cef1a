"""Compiler faults never take the process down: LLVM compiles in a forked compile server (runtime/contain.py), a
crash there is a CompileError, and a backend that fails hands the program to the other one."""
import os
import sys

import numpy as np
import pytest

import numfn
from numfn.errors import CompileError, NumfnError
from numfn.runtime import clang, contain
from numfn.runtime import orcjit as llvm_runtime
from helpers import check

pytestmark = pytest.mark.skipif(not contain.enabled(), reason="compile containment needs fork (Linux)")


def _abort(source: str) -> bytes:
    os.abort()


def _echo(source: str) -> bytes:
    if source == "raise": raise ValueError("bad source")
    return source.encode()[::-1]


@pytest.mark.parametrize("n", [4, 7, 8, 16, 100])
def test_llvm_illegal_type_reproducer(n):
    # LLVM's x86 instruction selection aborted ("Unexpected illegal type!") on the vectors its SLP vectorizer made
    # of reduce.add(smax(scmp(<4 x i32> n, 0), 0)); the program compiles again without the vectorizers
    def f(x, n):
        return np.maximum(np.isfinite(x / 0.0), np.sign(n)).sum(), np.maximum(np.sign(n), 0).sum()

    x = np.linspace(-2, 2, n)
    s = np.arange(n, dtype=np.int32) - n // 2
    with np.errstate(divide="ignore", invalid="ignore"):
        check(f, x, s, backend="llvm")


def test_a_crash_is_a_compile_error_and_the_next_compile_works():
    with pytest.raises(CompileError, match="SIGABRT"):
        contain.run(_abort, "anything")
    with pytest.raises(CompileError, match="SIGABRT"):   # a new server, which crashes again
        contain.run(_abort, "anything")
    assert contain.run(_echo, "abc") == b"cba"


def test_an_exception_in_the_server_is_a_compile_error_and_the_server_lives_on():
    assert contain.run(_echo, "x") == b"x"
    pid = contain._servers[_echo].pid
    with pytest.raises(CompileError, match="ValueError: bad source"):
        contain.run(_echo, "raise")
    assert contain.run(_echo, "xy") == b"yx"
    assert contain._servers[_echo].pid == pid


def test_large_payloads_cross_the_pipes():
    big = "".join(chr(65 + i % 26) for i in range(3_000_000))
    assert contain.run(_echo, big) == big.encode()[::-1]


def test_the_server_keeps_no_descriptor_of_the_parent_open():
    # a pipe created before the server: once the parent closes its write end, the reader must see EOF (a server
    # holding a copy would block it forever)
    r, w = os.pipe()
    try:
        contain._servers.pop(_echo, None)
        contain.run(_echo, "go")   # forks a fresh server while w is open
        os.close(w)
        w = None
        assert os.read(r, 1) == b""
    finally:
        os.close(r)
        if w is not None: os.close(w)


def test_a_forked_child_compiles_with_a_server_of_its_own():
    contain.run(_echo, "parent")
    parent_server = contain._servers[_echo].pid
    pid = os.fork()
    if pid == 0:   # pragma: no cover - the child reports through its exit status
        try:
            ok = contain.run(_echo, "child") == b"dlihc" and contain._servers[_echo].pid != parent_server
            os._exit(0 if ok else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert contain.run(_echo, "again") == b"niaga" and contain._servers[_echo].pid == parent_server


def test_containment_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("NUMFN_CONTAIN", "0")
    assert not contain.enabled()
    assert contain.run(_echo, "in process") == b"ssecorp ni"


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setenv("NUMFN_DISABLE_CACHE", "1")
    monkeypatch.setenv("DEBUG", "1")


def test_llvm_crash_falls_back_to_c(fresh, monkeypatch, capsys):
    if not (os.environ.get("NUMFN_CC") or clang.shutil.which("cc") or clang.shutil.which("clang")):
        pytest.skip("no C compiler")
    monkeypatch.setattr(llvm_runtime, "_compile_object", _abort)
    f = numfn.jit(lambda x: np.sin(x) * 2 + 1, backend="llvm")
    x = np.linspace(0, 1, 10)
    np.testing.assert_allclose(f(x), np.sin(x) * 2 + 1)
    err = capsys.readouterr().err
    assert "<lambda>(float64[10]); trying the c backend" in err and "the llvm backend failed to compile" in err
    assert "SIGABRT" in err
    assert f.specializations[0].fallback.backend == "c"


def test_c_failure_falls_back_to_llvm(fresh, monkeypatch, capsys):
    def broken(source):
        raise CompileError("C compilation failed (cc): simulated")
    monkeypatch.setattr(clang, "compile_object", broken)
    f = numfn.jit(lambda x: x * 3 - 1, backend="c")
    x = np.arange(5.0)
    np.testing.assert_array_equal(f(x), x * 3 - 1)
    err = capsys.readouterr().err
    assert "the c backend failed to compile" in err and "<lambda>(float64[5]); trying the llvm backend" in err


def test_both_backends_failing_is_one_error_naming_the_function(fresh, monkeypatch):
    def broken(source):
        raise CompileError("simulated")
    monkeypatch.setattr(llvm_runtime, "_compile_object", _abort)
    monkeypatch.setattr(clang, "compile_object", broken)

    def scaled(x):
        return x * 2

    f = numfn.jit(scaled, backend="llvm")
    with pytest.raises(NumfnError, match=r"scaled\(float64\[3\]\) could not be compiled: the llvm backend failed "
                                         r"\(the compiler was killed by SIGABRT"):
        f(np.ones(3))
    assert f.specializations == ()   # nothing half-built is kept: the next call tries again


def test_the_renderer_failing_is_a_backend_failure(fresh, monkeypatch, capsys):
    from numfn.renderer import llvm as llvm_renderer

    def unsupported_here(prog):
        raise NotImplementedError("LLVM renderer: simulated")
    monkeypatch.setattr(llvm_renderer, "render_kernel", unsupported_here)
    if not (os.environ.get("NUMFN_CC") or clang.shutil.which("cc") or clang.shutil.which("clang")):
        pytest.skip("no C compiler")
    f = numfn.jit(lambda x: x + 1, backend="llvm")
    np.testing.assert_array_equal(f(np.arange(3)), np.arange(3) + 1)
    assert "the llvm renderer failed: LLVM renderer: simulated" in capsys.readouterr().err


def test_the_parent_never_loads_llvm_to_compile():
    # the server initializes LLVM (while the parent schedules and renders); the parent maps the object itself
    import subprocess
    import time
    code = ("import sys, numpy as np, numfn\n"
            f"f = numfn.jit(lambda x: x * 2 + {time.time_ns()})\n"   # a program the cache does not hold
            "assert f(np.arange(3.0)).shape == (3,)\n"
            "print('llvmlite.binding' in sys.modules)\n")
    env = dict(os.environ)
    env.pop("NUMFN_DISABLE_CACHE", None)   # the cached dispatch extension, not a build of it
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    from numfn.runtime import elf
    assert out.stdout.strip() == ("False" if elf.supported() else "True")


def test_the_server_ends_with_its_process():
    # a killed parent closes the server's request pipe: the server exits instead of outliving it
    import signal
    import subprocess
    import time
    code = ("import os, sys, time, numpy as np, numfn\n"
            "from numfn.runtime import contain\n"
            f"numfn.jit(lambda x: x + {time.time_ns()})(np.ones(3))\n"   # a program the cache does not hold
            "print([s.pid for s in contain._servers.values()][0], flush=True)\n"
            "time.sleep(60)\n")
    env = dict(os.environ)
    env.pop("NUMFN_DISABLE_CACHE", None)   # the cached dispatch extension, not a build of it
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    server = int(proc.stdout.readline())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for _ in range(100):
        try:
            with open(f"/proc/{server}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return
        if state in ("Z", "X"): return   # exited (a zombie until init reaps it)
        time.sleep(0.05)
    raise AssertionError(f"the compile server {server} still runs (state {state})")
