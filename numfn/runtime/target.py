"""What generated code depends on besides its source: numfn's own build, the compiler and the target CPU. The disk
cache keys programs by these. A leaf module: it imports no other part of numfn's runtime but the C compiler's
identity, and none of numfn's compiler."""
from __future__ import annotations

import functools
import hashlib
import os


@functools.cache
def build_id() -> str:
    """A hash identifying numfn's own source code: generated programs depend on it, so the cache must too (a changed
    compiler never loads code an older one made, even at the same version number).

    It hashes each source file's path, size, inode, modification and status-change times rather than its bytes:
    reading every file cost 7 ms of each process's first warm call, statting them 2 ms. Any write to a file changes
    its status-change time (which no program can set back), so the id changes whenever the source may have; a
    copy or reinstall of the same source gets a new id too, and compiles once more."""
    from numfn.version import __version__
    return hashlib.sha256(__version__.encode() + b"\0" + source_id(os.path.dirname(os.path.abspath(__file__)) + "/..")
                          .encode()).hexdigest()


def source_id(root: str) -> str:
    """A hash of the identity of every .py, .c and .h file under `root` (relative path, size, inode, modification
    and status-change times): it changes whenever a file is written, added, removed or renamed."""
    root = os.path.normpath(root)
    lines = []
    for path in _source_files(root):
        st = os.stat(path)
        lines.append(f"{path[len(root):]}\0{st.st_size}\0{st.st_ino}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\n")
    return hashlib.sha256("".join(lines).encode("utf-8", "surrogateescape")).hexdigest()


def _source_files(directory: str) -> list[str]:
    """The .py, .c and .h files under `directory`, in a fixed order (bytecode caches skipped)."""
    found = []
    with os.scandir(directory) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__": found += _source_files(entry.path)
            elif entry.name.endswith((".py", ".c", ".h")):
                found.append(entry.path)
    return found


@functools.cache
def target_description(backend: str) -> str:
    """What native code depends on besides its source: compiler and version, target CPU and its features. For LLVM
    this is computed without importing llvmlite.binding: the llvmlite release (which fixes the LLVM version), the
    machine, and the CPU model and feature flags LLVM's host detection reads."""
    import platform
    if backend == "llvm":
        import llvmlite
        return "|".join(["llvmlite " + llvmlite.__version__, platform.machine(), cpu_description()])
    from numfn.runtime import clang
    return "|".join([clang.compiler_identity(), " ".join(clang.CFLAGS), cpu_description()])


@functools.cache
def has_fma() -> bool:
    """Whether the host CPU has fused multiply-add instructions (x86's FMA3; every 64-bit ARM CPU): code compiled for
    it computes fma(a, b, c) in one instruction, where other CPUs call a slow library function."""
    import platform
    import re
    if platform.machine().lower() in ("aarch64", "arm64"): return True
    return re.search(r"^flags\s*:.*\bfma\b", cpu_description(), re.M) is not None


@functools.cache
def cpu_description() -> str:
    """The CPU model and feature flags, which code compiled for the host CPU depends on."""
    try:
        with open("/proc/cpuinfo") as f:
            lines = [line for line in f if line.startswith(("model name", "flags"))][:2]
        return "".join(lines)
    except OSError:
        import platform
        return platform.processor() or platform.machine()
