"""The LLVM backend's runtime: optimize LLVM IR with llvmlite's new pass manager at O3 for the host CPU, emit
object code, and link it into the process with OrcJIT. Needs no system compiler."""
from __future__ import annotations

import threading
from functools import cache

_lock = threading.Lock()


@cache
def _llvm():
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


@cache
def target_machine():
    """The host's target machine: its CPU name and features decide the instructions the code may use."""
    llvm = _llvm()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, reloc="pic", codemodel="jitdefault")


def target_description() -> str:
    """What generated code depends on besides its source: LLVM version, triple, CPU and features."""
    llvm = _llvm()
    return "|".join([".".join(map(str, llvm.llvm_version_info)), llvm.get_process_triple(), llvm.get_host_cpu_name(),
                     llvm.get_host_cpu_features().flatten()])


def compile_object(source: str) -> bytes:
    """Parse, verify, optimize (O3, vectorizers on) and emit native object code for `source`."""
    llvm = _llvm()
    with _lock:   # LLVM contexts are not thread-safe
        mod = llvm.parse_assembly(source)
        mod.verify()
        tm = target_machine()
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pto.loop_unrolling = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        return tm.emit_object(mod)


class _Engine:
    """One OrcJIT (LLJIT) instance per process. Each program is linked into its own JITDylib, so the internal
    kernel names of different programs never meet."""

    def __init__(self):
        self.jit = _llvm().create_lljit_compiler(target_machine())
        self.loaded: dict[str, tuple[object, int]] = {}

    def load(self, obj: bytes, entry: str) -> tuple[object, int]:
        """(resource tracker keeping the code alive, address of `entry`); loading the same entry twice is
        a lookup (the same source gives the same entry name)."""
        with _lock:
            found = self.loaded.get(entry)
            if found is None:
                tracker = _llvm().JITLibraryBuilder().add_object_img(obj).add_current_process() \
                    .export_symbol(entry).link(self.jit, entry)
                found = (tracker, tracker[entry])
                self.loaded[entry] = found
        return found


@cache
def engine() -> _Engine:
    return _Engine()


def load_object(obj: bytes, entry: str) -> tuple[object, int]:
    """Load object code into the process: (what keeps it alive, the address of `entry`)."""
    return engine().load(obj, entry)
