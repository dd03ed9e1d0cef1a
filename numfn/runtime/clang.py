"""The C backend's compiler: C99 to a shared library with clang (or cc, or $NUMFN_CC)."""
from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from functools import cache

from numfn.errors import NumfnError

CFLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-fwrapv", "-fno-math-errno", "-ffp-contract=off", "-std=c99")


@cache
def find_compiler() -> tuple[str, ...]:
    """The C compiler command: $NUMFN_CC, else clang, else cc, else gcc."""
    env = os.environ.get("NUMFN_CC")
    if env: return tuple(shlex.split(env))
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


def compile_shared(source: str, path: str) -> None:
    """Compile `source` into the shared library at `path` (written atomically)."""
    import subprocess   # only compiling needs it; a warm start loads a cached library without it
    cmd = find_compiler()
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=os.path.dirname(path) or ".")
    os.close(fd)
    try:
        proc = subprocess.run([*cmd, *CFLAGS, "-x", "c", "-", "-o", tmp, "-lm"], input=source, capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise NumfnError(f"C compilation failed ({' '.join(cmd)}):\n{proc.stderr}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp): os.unlink(tmp)


