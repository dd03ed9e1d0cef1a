"""The LLVM backend's runtime: optimize LLVM IR with llvmlite's new pass manager at O3 for the host CPU, emit
object code, and load it into the process. Needs no system compiler.

Object code is loaded by numfn's own ELF loader (runtime/elf.py) where it applies (Linux x86-64), so a warm start
from the disk cache never imports llvmlite (19 ms), and code is unmapped when the last function using it goes;
elsewhere, and for any object that loader refuses, it is linked with llvmlite's OrcJIT (and stays).
"""
from __future__ import annotations

import os
import weakref
from functools import cache

from numfn import debug
from numfn.errors import CompileError
from numfn.locks import lock

# LLVM in this process (compiling where there is no compile server, OrcJIT, numfn's loader's table): its state is not
# thread-safe, and a fork must not copy it half-changed, so forks wait for this lock (a forked child finds it free)
_lock = lock()
# entry name -> code loaded by numfn's ELF loader, while something (a NumericalFunction, a dispatcher entry) uses it:
# the mapping goes when its last user does
_loaded: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_orc_loaded: dict[str, tuple[object, list[int]]] = {}   # the OrcJIT fallback's programs stay linked for good


@cache
def binding():
    """llvmlite's binding module, its native target initialized."""
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


@cache
def target_machine():
    """The host's target machine: its CPU name and features decide the instructions the code may use."""
    llvm = binding()
    target = llvm.Target.from_default_triple()
    # small code model: constants and calls are PC-relative, all within the loader's single mapping.
    # prefer-no-gather: strided loads (a batch of 3x3 matrices read element by element) become contiguous loads and
    # shuffles instead of gather instructions, which measured 2.4x faster on batched determinants
    features = llvm.get_host_cpu_features().flatten()
    if llvm.get_process_triple().startswith("x86_64"): features += ",+prefer-no-gather"
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=features, opt=3, reloc="pic",
                                        codemodel="small")


def compile_object(source: str) -> bytes:
    """Parse, verify, optimize (O3, vectorizers on) and emit native object code for `source`; in the compile
    server where there is one (runtime/contain.py), so an LLVM fatal error raises CompileError."""
    try:
        return _compile(source)
    except CompileError as e:
        # LLVM's instruction selection has crashed on vectors its own vectorizers made (reduce.add of
        # smax(scmp(<4 x i32>, 0), 0), from np.maximum(np.sign(n), 0).sum()): the same code unvectorized
        debug.log(1, f"LLVM failed: {e}\ncompiling again without its vectorizers")
        return _compile(NO_VECTORIZERS + source)


def _compile(source: str) -> bytes:
    from numfn.runtime import contain
    # in the compile server, which takes requests one at a time; in this process, LLVM's state is `_lock`'s
    if contain.enabled(): return contain.run(_compile_object, source, target_machine)
    with _lock:
        return _compile_object(source)


def prepare() -> None:
    """About to compile: start the compile server now, so it initializes LLVM while the caller schedules and
    renders (on another core)."""
    from numfn.runtime import contain
    contain.start(_compile_object, target_machine)


NO_VECTORIZERS = "; numfn: no vectorizers\n"   # a comment line first in a module: compile it unvectorized


def _compile_object(source: str) -> bytes:
    """Each program gets its own LLVM context, disposed afterwards: the global context keeps every type, constant
    and name any module ever used, so compiling many functions in one process would grow without bound."""
    return _optimized(source, lambda tm, mod: tm.emit_object(mod))


def _optimized(source: str, emit):
    """emit(target machine, module) of `source` parsed, verified and optimized by the O3 pipeline (vectorizers off
    for a module marked NO_VECTORIZERS), in an LLVM context of its own."""
    llvm = binding()
    context = llvm.create_context()
    mod = None
    try:
        mod = llvm.parse_assembly(source, context=context)
        mod.verify()
        tm = target_machine()
        vectorize = not source.startswith(NO_VECTORIZERS)
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = vectorize
        pto.slp_vectorization = vectorize
        pto.loop_unrolling = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        pb.close()
        return emit(tm, mod)
    finally:
        if mod is not None: mod.close()
        context.close()


def emit_assembly(source: str) -> str:
    """The assembly LLVM makes of `source` through compile_object's pipeline (for NUMFN_DUMP_ASSEMBLY and
    NumericalFunction.assembly; in this process)."""
    with _lock:
        return _optimized(source, lambda tm, mod: tm.emit_assembly(mod))


class _OrcEngine:
    """One OrcJIT (LLJIT) instance per process, for platforms the ELF loader does not cover. Each program is
    linked into its own JITDylib, so the internal kernel names of different programs never meet."""

    def __init__(self):
        self.jit = binding().create_lljit_compiler(target_machine())
        self.links = 0

    def load(self, obj: bytes, symbols: list[str]) -> tuple[object, list[int]]:
        builder = binding().JITLibraryBuilder().add_object_img(obj).add_current_process()
        for s in symbols: builder = builder.export_symbol(s)
        # a library's name is never free again, not even after a failed link (a cached object that does not load,
        # then the program compiled again): each link gets its own
        self.links += 1
        tracker = builder.link(self.jit, f"{symbols[0]}.{self.links}")
        return tracker, [tracker[s] for s in symbols]


@cache
def _orc() -> _OrcEngine:
    return _OrcEngine()


def load_object(obj: bytes, symbols: list[str], orc: bool = True) -> tuple[object, list[int]]:
    """Load object code into the process: (what keeps it mapped, the addresses of `symbols`, the entry first).
    Loading an entry that is still loaded returns that load (equal entry names mean equal programs). Without `orc`,
    an object numfn's ELF loader refuses raises its ElfLoadError instead of going to OrcJIT."""
    from numfn.runtime import elf
    with _lock:
        mapping = _loaded.get(symbols[0])
        if mapping is not None and all(s in mapping for s in symbols):
            return mapping, [mapping.address(s) for s in symbols]
        found = _orc_loaded.get(symbols[0])
        if found is not None: return found
        if elf.supported():
            try:
                mapping = elf.load_object(obj, symbols)
                _loaded[symbols[0]] = mapping
                return mapping, [mapping.address(s) for s in symbols]
            except elf.ElfLoadError as e:
                # corrupt bytes (a damaged cache entry) are not for LLVM's linker, which may abort on them
                if not orc or isinstance(e, elf.ElfMalformedError): raise
                from numfn import debug
                debug.log(1, f"ELF loader refused {symbols[0]} ({e}); linking it with OrcJIT")
        # an OrcJIT dylib cannot be unlinked safely while a dispatcher may hold its addresses: it stays
        found = _orc_loaded[symbols[0]] = _orc().load(obj, symbols)
        return found


if hasattr(os, "register_at_fork"):   # the child's copy is released by numfn.locks
    os.register_at_fork(before=_lock.acquire, after_in_parent=_lock.release)
