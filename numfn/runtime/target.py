"""What generated code depends on besides its source: numfn's own build, the compiler and the target CPU. The disk
cache keys programs by these. A leaf module: it imports no other part of numfn's runtime but the C compiler's
identity, and none of numfn's compiler."""
from __future__ import annotations

import functools
import hashlib
import os


@functools.cache
def build_id() -> str:
    """A hash of numfn's own source code: generated programs depend on it, so the cache must too (a changed
    compiler never loads code an older one made, even at the same version number)."""
    from numfn.version import __version__
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256(__version__.encode())
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith((".py", ".c", ".h")):
                with open(os.path.join(dirpath, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()


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
