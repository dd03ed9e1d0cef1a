"""The C backend's compiler: C99 to native code with clang (or cc, or $NUMFN_CC).

Programs are compiled to relocatable objects (`clang -c`), which numfn's ELF loader (runtime/elf.py) maps where it
applies (Linux x86-64): the link step of `clang -shared` costs more than compiling a small program (about 60 of
110 ms for a 40-operation function), and a cold start should not pay it. Elsewhere, or for an object that loader
refuses, the object is linked into a shared library and dlopened."""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import sys
import tempfile

from numfn import config
from numfn.errors import CompileError, NumfnError

# -fno-strict-aliasing: the scratch arena reuses one block for buffers of different types (an int32 buffer, later an
# int64 one at the same offset), which C's type-based aliasing rules forbid; with them clang reorders the loads of one
# across the stores of the other (a sort's result read as stale values, fuzz seed 20030548). Kernels' parameters are
# `restrict`, which gives the optimizer what it needs.
CFLAGS = ("-O3", "-march=native", "-fPIC", "-fwrapv", "-fno-math-errno", "-fno-strict-aliasing", "-ffp-contract=off",
          "-std=c99")


def find_compiler() -> tuple[str, ...]:
    """The C compiler command: $NUMFN_CC, else clang, else cc, else gcc. NumfnError when there is none, or when
    NUMFN_CC names a program that does not exist."""
    env = config.c_compiler()
    if env:
        cmd = tuple(shlex.split(env))
        if not cmd or shutil.which(cmd[0]) is None:
            raise NumfnError(f"NUMFN_CC={env!r} names no C compiler that exists (an executable file or a command on "
                             "PATH); unset it to use clang or cc")
        return cmd
    for name in ("clang", "cc", "gcc"):
        path = shutil.which(name)
        if path: return (path,)
    raise NumfnError("the C backend needs a C compiler (clang or cc) on PATH, or NUMFN_CC; "
                     "the LLVM backend (NUMFN_BACKEND=llvm) needs none")


def compiler_identity() -> str:
    """Which compiler binary this is, without running it: its resolved path, size and modification time (an
    upgraded compiler changes them). Cheap enough for every warm start."""
    cmd = find_compiler()
    exe = shutil.which(cmd[0]) or cmd[0]
    real = os.path.realpath(exe)
    try:
        st = os.stat(real)
        return f"{' '.join(cmd)}|{real}|{st.st_size}|{st.st_mtime_ns}"
    except OSError:
        return f"{' '.join(cmd)}|{real}"


def compile_object(source: str) -> bytes:
    """`source` compiled into a relocatable object, as bytes."""
    return _compiler_output(["-c", "-x", "c", "-"], source.encode(), "C compilation")


def compile_assembly(source: str) -> str:
    """The assembly the C compiler makes of `source` with numfn's flags (`-S`)."""
    return _compiler_output(["-S", "-x", "c", "-"], source.encode(), "C compilation").decode(errors="replace")


def link_shared(obj: bytes) -> bytes:
    """The relocatable object `obj` linked into a shared library, as bytes."""
    with tempfile.TemporaryDirectory(prefix="numfn-cc-") as tmp:
        path = os.path.join(tmp, "program.o")   # the driver reads objects from files only
        with open(path, "wb") as f:
            f.write(obj)
        return _compiler_output(["-shared", path, "-lm"], None, "linking")


def _compiler_output(args: list[str], stdin: bytes | None, what: str) -> bytes:
    """What the compiler writes to its output file when run with CFLAGS and `args`."""
    import subprocess   # only compiling needs it; a warm start loads cached code without it
    cmd = find_compiler()
    with tempfile.TemporaryDirectory(prefix="numfn-cc-") as tmp:
        out = os.path.join(tmp, "out")
        try:
            proc = subprocess.run([*cmd, *CFLAGS, *args, "-o", out], input=stdin, capture_output=True,
                                  preexec_fn=_die_with_parent())
        except OSError as e:   # removed or not executable since it was found
            raise NumfnError(f"cannot run the C compiler {' '.join(cmd)}: {e}") from None
        if proc.returncode != 0:
            raise CompileError(f"{what} failed ({' '.join(cmd)}):\n{proc.stderr.decode(errors='replace')}")
        with open(out, "rb") as f:
            return f.read()


def _die_with_parent():
    """A preexec_fn that makes the compiler die with the process that started it (Linux: a parent-death signal),
    so a killed Python process leaves no compiler running; None elsewhere."""
    if not sys.platform.startswith("linux"): return None
    import ctypes
    prctl = ctypes.CDLL(None, use_errno=True).prctl   # resolved here: the child only calls it
    parent = os.getpid()

    def in_child():
        prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG
        if os.getppid() != parent: os._exit(1)   # the parent died before the signal was armed

    return in_child
