"""Runtimes: turning rendered source into callable native code (clang/cc + cffi, LLVM JIT via llvmlite)."""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any

_TMPDIR = None


@dataclass
class NativeProgram:
    """A loaded program: `entry(*pointers) -> status` (0 = success), `ffi` to make pointers with."""
    entry: Any
    ffi: Any
    keepalive: Any = None


compile_count = 0   # programs compiled (not loaded from a cache) in this process: tests count recompilations


def compile_program(backend: str, source: str, entry: str, nparams: int, nints: int = 0) -> NativeProgram:
    """Compile and load `source`; its entry takes `nints` int64 values, then `nparams` pointers."""
    global _TMPDIR, compile_count
    compile_count += 1
    if backend == "c":
        from numfn.runtime import clang
        if _TMPDIR is None: _TMPDIR = tempfile.mkdtemp(prefix="numfn-")
        path = os.path.join(_TMPDIR, f"{entry}.so")
        if not os.path.exists(path): clang.compile_shared(source, path)
        ffi, lib, fn = clang.load_entry(path, entry, nparams, nints)
        return NativeProgram(fn, ffi, lib)
    if backend == "llvm":
        from numfn.runtime import llvm
        obj = llvm.compile_object(source)
        ffi, fn, tracker = llvm.load_entry(obj, entry, nparams, nints)
        return NativeProgram(fn, ffi, tracker)
    raise ValueError(f"unknown backend {backend!r}")
