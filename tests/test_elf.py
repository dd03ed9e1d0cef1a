"""The ELF relocatable-object loader (numfn.runtime.elf): every program numfn generates, with llvmlite, clang and gcc,
uses only the relocations it supports and computes what NumPy does (and, for LLVM, bit for bit what OrcJIT's copy
does); hand-written IR covers the data sections and process symbols numfn programs rarely use; objects of other
code models are refused (and the fallbacks run them); corrupt objects raise ElfLoadError and never crash."""
from __future__ import annotations

import ctypes
import gc
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numfn
from helpers import assert_same, magnitude
from numfn.pytree import unflatten
from numfn.runtime import elf, native

pytestmark = pytest.mark.skipif(not elf.supported(), reason="the ELF loader applies to Linux x86-64 only")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RNG = np.random.default_rng(7)
CONST100 = np.linspace(-1, 1, 100).astype(np.float32)
CONST_BIG = np.linspace(0, 2, 5000)        # over the embedding limit: passed by pointer


def _f32(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def _f64(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape)


def _nonzero(a):
    """`a` with its values near zero replaced: divisors."""
    return np.where(np.abs(a) < 0.25, 3 if a.dtype.kind in "iu" else 0.5, a).astype(a.dtype)


# name -> (function, arguments): each exercises something the loader must get right
PROGRAMS = {
    "sin_sum": (lambda a, b: np.sin(a) * b + a.sum(), (_f32(1000), _f32(1000))),
    "libm_f64": (lambda a, b: (np.exp(a) + np.tan(b), np.abs(np.tanh(a)) ** b, np.cos(a) * np.log(np.abs(b) + 1)),
                 (_f64(300), _f64(300, lo=-1.2, hi=1.2))),
    "fmod_floordiv": (lambda a, b: (a % b, a // b), (_f64(257, lo=-9, hi=9), _nonzero(_f64(257, lo=-3, hi=3)))),
    "fmod_f32": (lambda a, b: (a % b, a // b), (_f32(1001, lo=-9, hi=9), _nonzero(_f32(1001, lo=-3, hi=3)))),
    "scratch_arena": (lambda x: x.sum(axis=0) * x, (_f32(50, 40),)),
    "embedded_constant": (lambda x: x * CONST100 + CONST100.sum(), (_f32(100),)),
    "pointer_constant": (lambda x: x * CONST_BIG - 1.0, (_f64(5000),)),
    "int_division": (lambda x, y: (x // y, x % y, x * 3 - 7),
                     (RNG.integers(-1000, 1000, 999).astype(np.int32),
                      _nonzero(RNG.integers(-9, 10, 999)).astype(np.int32))),
    "int64_division": (lambda x, y: (x // y, x % y),
                       (RNG.integers(-10 ** 12, 10 ** 12, 513), _nonzero(RNG.integers(-99, 100, 513)))),
    "large_vectorized": (lambda x: np.sqrt(x * 2.5 + 1.0) / 3.0 + np.maximum(x, 0.25), (_f32(100_000, lo=0, hi=4),)),
    "softmax": (lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum(), (_f32(777),)),
    "several_kernels": (lambda x: (x.max(axis=1), x.min(axis=0), x.cumsum(), (x - x.mean()) * 2),
                        (_f64(30, 20),)),
    "casts_where": (lambda i, x: (np.where(x > 0, x, -x) * i.astype(np.float32), (i * 3 + 7) // 2, x > 0.5),
                    (RNG.integers(-50, 50, 640), _f32(640))),
}


def _llvm():
    from numfn.runtime import orcjit as L
    return L


class Program:
    """A numfn program specialized to its arguments, with its LLVM object code and the means to run a loaded
    copy of it."""

    def __init__(self, name: str):
        self.name = name
        self.fn, self.args = PROGRAMS[name]
        self.nf = numfn.jit(self.fn, backend="llvm").specialize(*self.args)
        self.entry_name = self.nf.entry_name
        self.obj = _llvm().compile_object(self.nf.source)

    def run(self, address: int):
        nf = self.nf
        outs = [np.empty(shape, dt.np) for shape, dt in nf.out_specs]
        ins = [np.ascontiguousarray(a, dtype=s.dtype.np) for a, s in zip(self.args, nf.in_specs)]
        consts = [c for _, _, c in nf.layout.pointer_constants]
        assert native.entry_function(address, 0)(native.pointer_table((*outs, *ins, *consts))) == 0
        return unflatten(nf.out_tree, outs)

    def expected(self):
        return self.fn(*self.args)


@pytest.fixture(scope="module")
def programs() -> dict[str, Program]:
    return {name: Program(name) for name in PROGRAMS}


def _assert_identical(a, b):
    """The same code on the same inputs: bit for bit equal results (NaNs included)."""
    a, b = numfn.pytree.flatten(a)[0], numfn.pytree.flatten(b)[0]
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def relocation_types(code: bytes) -> set[int]:
    """The relocation type numbers in the mapped sections of an object, read without the loader's checks."""
    sections = elf._parse_sections(code)
    out = set()
    for rs in sections:
        if rs.type == 4 and 0 < rs.info < len(sections) and elf._needed(sections[rs.info]):
            out |= {info & 0xFFFFFFFF for _, info, _ in struct.iter_unpack("<QQq", code[rs.offset:rs.offset + rs.size])}
    return out


SUPPORTED = set(elf._RELOCS)


# ---- real numfn programs ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_matches_numpy_and_orcjit(programs, name):
    p = programs[name]
    loaded = elf.load_object(p.obj, [p.entry_name])
    ours = p.run(loaded.address(p.entry_name))
    assert_same(ours, p.expected(), scale=magnitude(p.args) * 4)
    _, (orc_address,) = _llvm()._orc().load(p.obj, [p.entry_name])   # OrcJIT explicitly: numfn itself uses ours
    _assert_identical(ours, p.run(orc_address))


# Every kind of code the generators emit: each program above, and the variants that change what a program contains:
# libm calls (NOOPT=1 keeps them), DEBUG=2's timing counters (writable data, clock_gettime), svmap's batched entry
# (a loop around the kernels), parallel kernels (a body function handed to the pool by address).
VARIANTS = ["noopt", "profile", "batched"]
VARIANT_PROGRAMS = ["libm_f64", "pointer_constant", "large_vectorized", "several_kernels"]   # their features, varied


def _variant_sources(backend: str, name: str, variant: str, monkeypatch) -> tuple[str, str]:
    """(source, entry name) of program `name` in a variant, for a backend."""
    import dataclasses
    from numfn.program_build import ProgramBuild
    fn, args = PROGRAMS[name]
    if variant == "noopt": monkeypatch.setenv("NOOPT", "1")
    nf = numfn.jit(fn, backend=backend).specialize(*args)
    if variant == "profile": nf = dataclasses.replace(nf, profile=True)
    build = ProgramBuild(nf, (True,) * len(args)) if variant == "batched" else nf.build
    source, entry = build.source, build.entry_name
    monkeypatch.delenv("NOOPT", raising=False)
    return source, entry


@pytest.mark.parametrize("compiler", ["llvmlite", "clang", "gcc"])
def test_every_program_numfn_generates_uses_supported_relocations(compiler, monkeypatch):
    """The loader's promise: what numfn's backends emit, it loads. Every program above, and the variants of those
    covering every feature, compiled as numfn compiles them (llvmlite with numfn's target machine; clang and gcc with
    the C backend's flags), contain only PC32, PLT32 and GOTPCREL(X) relocations, load, and export their entry."""
    import shutil
    from numfn.runtime import clang
    if compiler != "llvmlite":
        if shutil.which(compiler) is None: pytest.skip(f"no {compiler}")
        monkeypatch.setenv("NUMFN_CC", compiler)
    seen: set[int] = set()
    cases = [(name, "plain") for name in PROGRAMS] + [(n, v) for n in VARIANT_PROGRAMS for v in VARIANTS]
    for name, variant in cases:
        source, entry = _variant_sources("llvm" if compiler == "llvmlite" else "c", name, variant, monkeypatch)
        obj = _llvm().compile_object(source) if compiler == "llvmlite" else clang.compile_object(source)
        types = relocation_types(obj)
        assert types <= SUPPORTED, (name, variant, types - SUPPORTED)
        seen |= types
        assert elf.load_object(obj, [entry]).address(entry)
    assert {elf._PC32, elf._PLT32} <= seen, seen   # libm calls and constants: the loader's tests are not idle


def test_the_runtime_maps_what_it_compiles(tmp_path, monkeypatch, backend):
    """Through numfn itself, programs end up mapped by this loader (a refusal would fall back silently)."""
    monkeypatch.setenv("NUMFN_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("libm_f64", "pointer_constant", "large_vectorized"):
        fn, args = PROGRAMS[name]
        nf = numfn.jit(fn, backend=backend).specialize(*args)
        assert isinstance(nf.compiled.keepalive, elf.LoadedObject), name
        assert_same(nf.run(list(args)), fn(*args), scale=magnitude(args) * 4)


def _target_machine(codemodel: str, reloc: str):
    llvm = _llvm().binding()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, reloc=reloc, codemodel=codemodel)


def compile_with(source: str, codemodel: str = "small", reloc: str = "pic", optimize: bool = True) -> bytes:
    """Object code for LLVM IR `source` under a code model (numfn's is small, PIC)."""
    llvm = _llvm().binding()
    tm = _target_machine(codemodel, reloc)
    with _llvm()._lock:
        mod = llvm.parse_assembly(source)
        mod.verify()
        if optimize:
            pto = llvm.create_pipeline_tuning_options(speed_level=3)
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
        return tm.emit_object(mod)


@pytest.mark.parametrize("model", [("large", "static"), ("large", "pic")], ids=lambda m: "-".join(m))
def test_other_code_models_are_refused_and_run_by_the_fallback(programs, model):
    """Code models numfn does not use bring absolute and 64-bit GOT relocations: refused with ElfLoadError, which
    the LLVM runtime answers by linking the object with OrcJIT."""
    p = programs["libm_f64"]
    obj = compile_with(p.nf.source, *model)
    assert relocation_types(obj) - SUPPORTED
    with pytest.raises(elf.ElfLoadError, match="unsupported relocation type"):
        elf.load_object(obj, [p.entry_name])
    entry = p.entry_name + "_" + "_".join(model)   # its own name: the runtime shares loads by entry name
    obj = compile_with(p.nf.source.replace(p.entry_name, entry), *model)
    keep, (address,) = _llvm().load_object(obj, [entry])
    assert not isinstance(keep, elf.LoadedObject)
    assert_same(p.run(address), p.expected(), scale=magnitude(p.args) * 4)


# ---- hand-written IR: data sections, process symbols through the GOT, unwind tables ---------------------------------

FEATURES_IR = """
@counter = global i64 0, align 8
@table = global [4 x i64] [i64 1, i64 2, i64 3, i64 40], align 16
@ro = internal constant [4 x double] [double 1.5, double 2.5, double 3.5, double 4.5], align 32
@big_aligned = internal global [64 x i8] zeroinitializer, align 4096

declare double @sin(double)
declare ptr @malloc(i64)
declare void @free(ptr)

define internal double @twice(double %x) noinline nounwind {
  %y = fmul double %x, 2.0
  ret double %y
}

define i64 @bump() nounwind {
  %v = load i64, ptr @counter
  %w = add i64 %v, 1
  store i64 %w, ptr @counter
  ret i64 %w
}

define i64 @table_sum() nounwind {
  %a = load volatile i64, ptr @table
  %p = getelementptr [4 x i64], ptr @table, i64 0, i64 3
  %b = load volatile i64, ptr %p
  %s = add i64 %a, %b
  ret i64 %s
}

define ptr @malloc_address() nounwind {
  ret ptr @malloc
}

define ptr @aligned_address() nounwind {
  ret ptr @big_aligned
}

define double @ro_element(i64 %i) nounwind {
  %p = getelementptr [4 x double], ptr @ro, i64 0, i64 %i
  %v = load volatile double, ptr %p
  ret double %v
}

define double @malloc_roundtrip(double %x) uwtable {
  %m = call ptr @malloc(i64 64)
  store double %x, ptr %m
  %y = call double @twice(double %x)
  %v = load double, ptr %m
  call void @free(ptr %m)
  %s = call double @sin(double %v)
  %r = fadd double %s, %y
  ret double %r
}
"""


def _fn(loaded, name: str, restype, *argtypes):
    return ctypes.CFUNCTYPE(restype, *argtypes)(loaded.address(name))


def _check_features(loaded):
    libc = ctypes.CDLL(None)
    malloc = ctypes.cast(libc.malloc, ctypes.c_void_p).value
    assert _fn(loaded, "malloc_address", ctypes.c_void_p)() == malloc   # a GOT slot holding a process symbol
    assert _fn(loaded, "bump", ctypes.c_int64)() == 1
    assert _fn(loaded, "bump", ctypes.c_int64)() == 2
    assert _fn(loaded, "table_sum", ctypes.c_int64)() == 41
    assert _fn(loaded, "aligned_address", ctypes.c_void_p)() % 4096 == 0
    ro = _fn(loaded, "ro_element", ctypes.c_double, ctypes.c_int64)
    assert [ro(i) for i in range(4)] == [1.5, 2.5, 3.5, 4.5]
    assert _fn(loaded, "malloc_roundtrip", ctypes.c_double, ctypes.c_double)(0.25) == np.sin(0.25) + 0.5


def test_data_sections_and_process_symbols():
    obj = compile_with(FEATURES_IR, optimize=False)
    assert relocation_types(obj) == {elf._PC32, elf._PLT32, elf._REX_GOTPCRELX}
    loaded = elf.load_object(obj, ["bump", "table_sum"])
    _check_features(loaded)
    assert loaded.symbols() == sorted(["counter", "table", "bump", "table_sum", "malloc_address", "aligned_address",
                                       "ro_element", "malloc_roundtrip"])


def test_got_relocations_without_relaxation_hints():
    """R_X86_64_GOTPCREL (no relaxation hint) is handled like GOTPCRELX: through the slot."""
    obj = compile_with(FEATURES_IR, optimize=False)
    for entry in _rela_entries(obj):
        if struct.unpack_from("<Q", obj, entry + 8)[0] & 0xFFFFFFFF == elf._REX_GOTPCRELX:
            obj = _set_reloc_type(obj, entry, elf._GOTPCREL)
    assert elf._GOTPCREL in relocation_types(obj) and elf._REX_GOTPCRELX not in relocation_types(obj)
    _check_features(elf.load_object(obj, []))


def test_unwind_tables_are_skipped():
    obj = compile_with(FEATURES_IR, optimize=False)
    names = [s.name for s in elf._parse_sections(obj)]
    assert ".eh_frame" in names and ".rela.eh_frame" in names
    loaded = elf.load_object(obj, [])
    assert _fn(loaded, "malloc_roundtrip", ctypes.c_double, ctypes.c_double)(1.0) == np.sin(1.0) + 2.0


def _maps(lo: int, hi: int) -> list[tuple[int, int, str]]:
    """(start, end, permissions) of this process's mappings that overlap [lo, hi)."""
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            span, perms = line.split()[:2]
            a, b = (int(x, 16) for x in span.split("-"))
            if a < hi and b > lo: out.append((max(a, lo), min(b, hi), perms[:3]))
    return out


def test_memory_protection():
    """Code is read+execute, constants and the GOT read-only, data read+write; nothing writable and executable."""
    obj = compile_with(FEATURES_IR, optimize=False)
    loaded = elf.load_object(obj, [])
    maps = _maps(loaded.base, loaded.base + loaded.size)
    assert maps and all(p != "rwx" for _, _, p in maps), maps

    def perms(addr):
        return next(p for a, b, p in maps if a <= addr < b)

    assert perms(loaded.address("bump")) == "r-x"
    assert perms(loaded.address("counter")) == "rw-"
    assert perms(loaded.address("table")) == "rw-"
    ro = _fn(loaded, "ro_element", ctypes.c_double, ctypes.c_int64)
    assert ro(0) == 1.5


def test_same_object_twice_gives_independent_copies():
    obj = compile_with(FEATURES_IR, optimize=False)
    a, b = elf.load_object(obj, ["bump"]), elf.load_object(obj, ["bump"])
    assert a.address("bump") != b.address("bump")
    bump_a, bump_b = _fn(a, "bump", ctypes.c_int64), _fn(b, "bump", ctypes.c_int64)
    assert (bump_a(), bump_a(), bump_b(), bump_a()) == (1, 2, 1, 3)
    _check_features(elf.load_object(obj, []))


def test_same_program_twice(programs):
    p = programs["scratch_arena"]
    a, b = elf.load_object(p.obj, [p.entry_name]), elf.load_object(p.obj, [p.entry_name])
    assert a.address(p.entry_name) != b.address(p.entry_name)
    del a
    gc.collect()
    assert_same(p.run(b.address(p.entry_name)), p.expected(), scale=magnitude(p.args) * 4)


def test_many_programs_and_unmapping(programs):
    """200 loaded programs at once all work; dropping them unmaps their memory."""
    def mappings():
        with open("/proc/self/maps") as f: return sum(1 for _ in f)

    before = mappings()
    names = list(programs)
    loaded = [(programs[names[i % len(names)]], elf.load_object(programs[names[i % len(names)]].obj, []))
              for i in range(200)]
    assert len({lo.base for _, lo in loaded}) == 200
    assert mappings() >= before + 200
    for p, lo in loaded[::7]:
        assert_same(p.run(lo.address(p.entry_name)), p.expected(), scale=magnitude(p.args) * 4)
    del loaded, lo
    gc.collect()
    assert mappings() < before + 20


def test_symbols_and_lookup_errors(programs):
    p = programs["sin_sum"]
    loaded = elf.load_object(p.obj, [p.entry_name])
    assert loaded.symbols() == [p.entry_name] and p.entry_name in loaded
    with pytest.raises(elf.ElfLoadError, match="no global symbol"):
        loaded.address("no_such_symbol")
    with pytest.raises(elf.ElfLoadError, match="does not define"):
        elf.load_object(p.obj, [p.entry_name, "no_such_symbol"])


def test_unknown_process_symbol():
    ir = "declare double @numfn_no_such_function(double)\n" \
         "define double @f(double %x) nounwind {\n  %y = call double @numfn_no_such_function(double %x)\n" \
         "  ret double %y\n}\n"
    with pytest.raises(elf.ElfLoadError, match="numfn_no_such_function"):
        elf.load_object(compile_with(ir), ["f"])
    weak = ir.replace("declare double", "declare extern_weak double")
    assert elf.load_object(compile_with(weak), ["f"]).address("f")   # an unresolved weak is null


# ---- corrupt and unsupported objects ------------------------------------------------------------------------------

def _rela_entries(code: bytes) -> list[int]:
    """File offsets of the relocation entries of mapped sections."""
    sections = elf._parse_sections(code)
    return [s.offset + i for s in sections if s.type == 4 and sections[s.info].flags & 2
            for i in range(0, s.size, 24)]


def _patch(code: bytes, offset: int, fmt: str, *values) -> bytes:
    out = bytearray(code)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


def _set_reloc_type(code: bytes, entry: int, rtype: int) -> bytes:
    info, = struct.unpack_from("<Q", code, entry + 8)
    return _patch(code, entry + 8, "<Q", (info >> 32) << 32 | rtype)


@pytest.mark.parametrize("rtype", [0, 1, 3, 5, 10, 11, 16, 24, 25, 26, 27, 29, 37, 200])
def test_other_relocation_types_are_refused(programs, rtype):
    # NONE, 64, GOT32, COPY, 32, 32S, DTPMOD64 (TLS), PC64, GOTOFF64, GOTPC32, GOT64, GOTPC64, IRELATIVE, nonsense
    obj = programs["libm_f64"].obj
    with pytest.raises(elf.ElfLoadError, match="unsupported relocation type"):
        elf.load_object(_set_reloc_type(obj, _rela_entries(obj)[0], rtype), [])


def test_common_symbols_are_refused(programs):
    """A COMMON symbol (an uninitialized global under -fcommon) has no section: refused, not given space."""
    p = programs["sin_sum"]
    sections = elf._parse_sections(p.obj)
    symtab = next(s for s in sections if s.type == 2)
    names = [s.name for s in elf._parse_symbols(p.obj, sections)[1]]
    entry = symtab.offset + 24 * names.index(p.entry_name)
    with pytest.raises(elf.ElfLoadError, match="COMMON"):
        elf.load_object(_patch(p.obj, entry + 6, "<H", 0xFFF2), [p.entry_name])


def test_overflowing_relocation_raises(programs):
    """A PC-relative 32-bit reference out of range is an error, never a truncated value."""
    obj = programs["libm_f64"].obj
    rel = _rela_entries(obj)[0]
    for rtype in (elf._PC32, elf._PLT32, elf._REX_GOTPCRELX):   # 1 TB away
        with pytest.raises(elf.ElfLoadError, match="does not fit"):
            elf.load_object(_patch(_set_reloc_type(obj, rel, rtype), rel + 16, "<q", 2 ** 40), [])


def test_rel_sections_and_skipped_targets(programs):
    obj = programs["embedded_constant"].obj
    sections = elf._parse_sections(obj)
    rela = next(s for s in sections if s.type == 4)
    shoff = struct.unpack_from("<Q", obj, 40)[0]
    with pytest.raises(elf.ElfLoadError, match="SHT_REL"):
        elf.load_object(_patch(obj, shoff + 64 * rela.index + 4, "<I", 9), [])
    # drop SHF_ALLOC from the constants: code still refers to them
    lrodata = next(s for s in sections if s.name.startswith((".lrodata", ".rodata")))
    with pytest.raises(elf.ElfLoadError, match="not loaded"):
        elf.load_object(_patch(obj, shoff + 64 * lrodata.index + 8, "<Q", 0), [])


def test_not_a_relocatable_x86_64_object(programs):
    obj = programs["sin_sum"].obj
    for bad, match in [(b"", "truncated"), (b"\x7fELF", "truncated"), (b"MZ" + obj[2:], "not an ELF"),
                       (_patch(obj, 4, "B", 1), "ELF64"), (_patch(obj, 5, "B", 2), "little-endian"),
                       (_patch(obj, 16, "<H", 3), "relocatable"), (_patch(obj, 18, "<H", 183), "x86-64"),
                       (_patch(obj, 40, "<Q", len(obj)), "section header"),
                       (_patch(obj, 58, "<H", 40), "section header")]:
        with pytest.raises(elf.ElfLoadError, match=match):
            elf.load_object(bad, [])
    with open(sys.executable, "rb") as f:
        with pytest.raises(elf.ElfLoadError):
            elf.load_object(f.read(1 << 16), [])


FUZZ = """
import random, struct, sys
from numfn.runtime import elf
obj = open(sys.argv[1], "rb").read()
rng = random.Random(1)
loaded = failed = 0

def attempt(code):
    global loaded, failed
    try:
        elf.load_object(code, [])
        loaded += 1
    except elf.ElfLoadError:
        failed += 1

for n in range(len(obj)):
    attempt(obj[:n])
sections = elf._parse_sections(obj)
shoff = struct.unpack_from("<Q", obj, 40)[0]
regions = [(0, 64), (shoff, len(sections) * 64)] + [(s.offset, s.size) for s in sections
                                                    if s.type in (2, 3, 4)]
for _ in range(4000):
    start, size = rng.choice(regions)
    code = bytearray(obj)
    for _ in range(rng.choice((1, 1, 2, 4))):
        i = start + rng.randrange(max(size, 1))
        code[i] = rng.randrange(256) if rng.random() < 0.5 else code[i] ^ (1 << rng.randrange(8))
    attempt(bytes(code))
print(loaded, failed)
"""


@pytest.mark.parametrize("name", ["libm_f64", "embedded_constant"])
def test_corrupt_objects_raise_and_never_crash(programs, name, tmp_path):
    """Every truncation and thousands of random byte changes in the headers, symbols, strings and relocations:
    the load succeeds or raises ElfLoadError (any other exception or a crash fails). Runs in a subprocess so that
    a crash cannot take the test run down with it; the loaded code is never called."""
    path = tmp_path / "obj.o"
    path.write_bytes(programs[name].obj)
    r = subprocess.run([sys.executable, "-c", FUZZ, str(path)], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0, r.stderr[-3000:]
    loaded, failed = map(int, r.stdout.split())
    assert failed >= len(programs[name].obj) and loaded > 0


# ---- cost -----------------------------------------------------------------------------------------------------------

def test_loading_needs_no_llvmlite(programs, tmp_path):
    """A warm start loads cached objects without importing llvmlite (whose import alone takes ~19 ms)."""
    p = programs["libm_f64"]
    path = tmp_path / "obj.o"
    path.write_bytes(p.obj)
    script = textwrap.dedent(f"""
        import sys
        from numfn.runtime import elf
        lo = elf.load_object(open({str(path)!r}, "rb").read(), [{p.entry_name!r}])
        assert lo.address({p.entry_name!r})
        assert "llvmlite" not in sys.modules, "llvmlite was imported"
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0, r.stderr


def test_concurrent_loads(programs):
    """Threads loading and running programs at once (load_object holds no locks)."""
    from concurrent.futures import ThreadPoolExecutor
    names = list(programs) * 4

    def work(name):
        p = programs[name]
        lo = elf.load_object(p.obj, [p.entry_name])
        assert_same(p.run(lo.address(p.entry_name)), p.expected(), scale=magnitude(p.args) * 4)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, names))
