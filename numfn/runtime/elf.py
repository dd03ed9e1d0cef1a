"""A small in-process loader for the ELF64 x86-64 relocatable objects (ET_REL) numfn's backends emit.

Why: loading a cached object through llvmlite's OrcJIT costs ~19 ms just to import llvmlite.binding, and linking a
C object into a shared library costs more than compiling it; a warm start should pay neither. This loader maps an
object into memory, applies its relocations and hands out symbol addresses, using only the standard library and
ctypes.

    obj = load_object(code, ["numfn_entry"])
    addr = obj.address("numfn_entry")       # valid as long as `obj` is referenced

It handles what numfn's programs are, and nothing else: position-independent code for the small code model
(llvmlite with numfn's target machine, clang and gcc with `-fPIC`), which references its own code and data
PC-relatively (R_X86_64_PC32), calls libm and libc through the PLT (R_X86_64_PLT32), and, should a compiler choose
to, reaches a symbol through a GOT slot (R_X86_64_GOTPCREL, GOTPCRELX, REX_GOTPCRELX: no instruction relaxation,
always through the slot). Every other relocation type, thread-local storage, COMMON symbols, constructors,
indirect functions and extended section numbering raise ElfLoadError, which numfn's callers answer by linking the
object another way (OrcJIT for the LLVM backend, a shared library for the C backend). tests/test_elf.py checks that
every program numfn generates with llvmlite, clang and gcc uses only these relocations.

Memory: every part of an object lives in one anonymous mapping (so 32-bit PC-relative references between parts
always reach), laid out as three page-aligned segments, each protected as its contents need once written:

    base -> | code sections ... | PLT stubs |                 read + execute
            | read-only data ...| GOT       |                 read only (the GOT is filled at load time, like RELRO)
            | writable data ... | bss (zero) |                 read + write

The mapping is writable while it is filled and never writable and executable at once (W^X). External symbols
(libm, libc) are found with dlsym in the process's global scope; calls to them go through 8-byte PLT stubs
`jmp *slot(%rip)` reading a GOT slot, because a shared library may be more than 2 GB away. Unwind tables (.eh_frame)
are not loaded: numfn code is nounwind, and nothing unwinds through it. Every offset, size, index and relocated
value is checked against the file and the image before it is used: a malformed object raises (ElfMalformedError, which
callers do not hand to another loader), never crashes.

Lifetime: the mapping is unmapped when its LoadedObject is garbage collected, so whoever calls the code must keep
the LoadedObject referenced (mappings still alive at interpreter shutdown are left to the OS). Thread safety:
load_object holds no locks and shares only a cache of dlsym results; concurrent loads are safe.
"""
from __future__ import annotations

import os
import struct
import sys

__all__ = ["ElfLoadError", "ElfMalformedError", "LoadedObject", "load_object", "supported"]


class ElfLoadError(Exception):
    """The object cannot be loaded here: malformed or truncated, or it uses something this loader does not support
    (a relocation type, thread-local storage, an undefined symbol the process does not have, ...)."""


class ElfMalformedError(ElfLoadError):
    """The bytes are not a well-formed ELF64 object (truncated, garbage, offsets outside the file): no compiler made
    them, so no other loader should be given them either (LLVM's may abort on what it does not expect)."""


# ---- ELF and x86-64 psABI constants ------------------------------------------------------------------------------

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")   # Elf64_Ehdr
_SHDR = struct.Struct("<IIQQQQIIQQ")         # Elf64_Shdr
_SYM = struct.Struct("<IBBHQQ")              # Elf64_Sym
_RELA = struct.Struct("<QQq")                # Elf64_Rela
_I32, _U64 = struct.Struct("<i"), struct.Struct("<Q")

_ET_REL, _EM_X86_64 = 1, 62
_SHT_PROGBITS, _SHT_SYMTAB, _SHT_STRTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 1, 2, 3, 4, 8, 9
_SHT_CONSTRUCTORS = (14, 15, 16)             # SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY
_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR, _SHF_TLS = 0x1, 0x2, 0x4, 0x400
_SHN_UNDEF, _SHN_LORESERVE, _SHN_ABS, _SHN_XINDEX = 0, 0xFF00, 0xFFF1, 0xFFFF
_STB_LOCAL, _STB_WEAK = 0, 2
_STT_FUNC, _STT_TLS, _STT_GNU_IFUNC = 2, 6, 10

_PC32, _PLT32, _GOTPCREL, _GOTPCRELX, _REX_GOTPCRELX = 2, 4, 9, 41, 42

# supported relocation type -> name (every one patches a signed 32-bit field)
_RELOCS = {_PC32: "R_X86_64_PC32", _PLT32: "R_X86_64_PLT32", _GOTPCREL: "R_X86_64_GOTPCREL",
           _GOTPCRELX: "R_X86_64_GOTPCRELX", _REX_GOTPCRELX: "R_X86_64_REX_GOTPCRELX"}
_GOT_RELOCS = frozenset((_GOTPCREL, _GOTPCRELX, _REX_GOTPCRELX))

_PLT_STUB = 8              # ff 25 <disp32>: jmp *slot(%rip), then ud2 as padding
_MAX_IMAGE = 1 << 28       # far more than any numfn program; keeps every internal distance within 32 bits
_MAX_ALIGN = 1 << 16

_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4
_MAP_PRIVATE, _MAP_ANONYMOUS = 0x02, 0x20


def supported() -> bool:
    """True where this loader applies: 64-bit Linux on x86-64."""
    return sys.platform.startswith("linux") and os.uname().machine == "x86_64" and sys.maxsize > 2 ** 32


# ---- process interface (ctypes, imported on first use: it is not needed to import this module) -------------------

_libc = None
_externals: dict[str, int] = {}     # dlsym results: the addresses of the process's symbols never change


class _Libc:
    def __init__(self):
        import ctypes
        lib = ctypes.CDLL(None, use_errno=True)   # the process's global scope: python, libc, libm, ...
        vp, size, cint = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
        self.mmap = lib.mmap
        self.mmap.restype, self.mmap.argtypes = vp, [vp, size, cint, cint, cint, ctypes.c_long]
        self.mprotect = lib.mprotect
        self.mprotect.restype, self.mprotect.argtypes = cint, [vp, size, cint]
        self.munmap = lib.munmap
        self.munmap.restype, self.munmap.argtypes = cint, [vp, size]
        self.dlsym = lib.dlsym
        self.dlsym.restype, self.dlsym.argtypes = vp, [vp, ctypes.c_char_p]
        self.handle = lib._handle
        self.memmove = ctypes.memmove
        self.get_errno = ctypes.get_errno
        self.page = os.sysconf("SC_PAGE_SIZE")


def _process() -> _Libc:
    global _libc
    if _libc is None: _libc = _Libc()
    return _libc


def _lookup(libc: _Libc, name: str) -> int | None:
    addr = _externals.get(name)
    if addr is None:
        addr = libc.dlsym(libc.handle, name.encode())
        if addr: _externals[name] = addr
    return addr or None


# ---- parsing -----------------------------------------------------------------------------------------------------

class _Section:
    __slots__ = ("index", "name", "type", "flags", "offset", "size", "link", "info", "align", "entsize", "addr",
                 "loaded")

    def __init__(self, index, fields):
        (self.name, self.type, self.flags, _, self.offset, self.size, self.link, self.info, align,
         self.entsize) = fields
        self.index = index
        self.align = max(align, 1)
        self.addr = 0          # offset from the start of the mapping, once laid out
        self.loaded = False


class _Symbol:
    __slots__ = ("name", "bind", "type", "shndx", "value", "size")

    def __init__(self, name, info, shndx, value, size):
        self.name, self.bind, self.type, self.shndx, self.value, self.size = name, info >> 4, info & 0xF, shndx, \
            value, size


def _cstr(data: bytes, table: _Section, offset: int) -> str:
    """The NUL-terminated string at `offset` in string table `table`, never read past its end."""
    if offset >= table.size: raise ElfMalformedError(f"string offset {offset} outside {table.name or 'string table'}")
    start, end = table.offset + offset, table.offset + table.size
    stop = data.find(b"\0", start, end)
    if stop < 0: raise ElfMalformedError("unterminated string in string table")
    try:
        return data[start:stop].decode()
    except UnicodeDecodeError:
        raise ElfLoadError("symbol or section name is not UTF-8") from None


def _parse_sections(data: bytes) -> list[_Section]:
    if len(data) < _EHDR.size: raise ElfMalformedError(f"truncated ELF header ({len(data)} bytes)")
    (ident, e_type, e_machine, _, _, _, shoff, _, _, _, _, shentsize, shnum,
     shstrndx) = _EHDR.unpack_from(data)
    if ident[:4] != b"\x7fELF": raise ElfMalformedError("not an ELF file")
    if ident[4] != 2 or ident[5] != 1: raise ElfMalformedError("not a little-endian ELF64 file")
    if ident[6] != 1: raise ElfMalformedError(f"unknown ELF version {ident[6]}")
    if e_type != _ET_REL: raise ElfMalformedError(f"not a relocatable object (e_type {e_type})")
    if e_machine != _EM_X86_64: raise ElfMalformedError(f"not an x86-64 object (e_machine {e_machine})")
    if shoff == 0 or shentsize != _SHDR.size: raise ElfMalformedError("no usable section header table")
    if shoff + _SHDR.size > len(data): raise ElfMalformedError("section header table outside the file")
    first = _SHDR.unpack_from(data, shoff)
    if shnum == 0: shnum = first[5]        # extended numbering: the count lives in section 0's sh_size
    if shstrndx == _SHN_XINDEX: shstrndx = first[6]
    if shnum == 0 or shoff + shnum * _SHDR.size > len(data):
        raise ElfMalformedError("section header table outside the file")
    sections = [_Section(i, _SHDR.unpack_from(data, shoff + i * _SHDR.size)) for i in range(shnum)]
    for s in sections:
        if s.type != _SHT_NOBITS and s.type != 0 and (s.offset > len(data) or s.size > len(data) - s.offset):
            raise ElfMalformedError(f"section {s.index} lies outside the file")
        if s.align & (s.align - 1) or s.align > _MAX_ALIGN: raise ElfLoadError(f"bad alignment {s.align}")
    if not 0 < shstrndx < shnum or sections[shstrndx].type != _SHT_STRTAB:
        raise ElfMalformedError("no section name table")
    names = sections[shstrndx]
    for s in sections:
        s.name = _cstr(data, names, s.name) if s.index else ""
    return sections


def _needed(s: _Section) -> bool:
    """Whether section `s` is mapped: the code needs it at run time."""
    if not s.flags & _SHF_ALLOC: return False
    if s.flags & _SHF_TLS: raise ElfLoadError(f"thread-local section {s.name} is not supported")
    if s.type in _SHT_CONSTRUCTORS or s.name in (".init", ".fini") or s.name.startswith((".ctors", ".dtors")):
        raise ElfLoadError(f"section {s.name}: constructors and destructors are not supported")
    if s.type not in (_SHT_PROGBITS, _SHT_NOBITS): return False    # notes, unwind tables (SHT_X86_64_UNWIND)
    # unwind information and metadata: nothing in numfn code reads them (a relocation against one is an error)
    return s.name != ".eh_frame" and not s.name.startswith((".note", ".comment", ".debug", ".llvm"))


def _parse_symbols(data: bytes, sections: list[_Section]) -> tuple[int, list[_Symbol]]:
    """(index of the symbol table section or -1, the symbols)."""
    tables = [s for s in sections if s.type == _SHT_SYMTAB]
    if not tables: return -1, []
    if len(tables) > 1: raise ElfLoadError("more than one symbol table")
    tab = tables[0]
    if tab.entsize != _SYM.size or tab.size % _SYM.size: raise ElfMalformedError("malformed symbol table")
    if not 0 < tab.link < len(sections) or sections[tab.link].type != _SHT_STRTAB:
        raise ElfMalformedError("symbol table without a string table")
    strtab = sections[tab.link]
    symbols = []
    for name, info, _, shndx, value, size in _SYM.iter_unpack(data[tab.offset:tab.offset + tab.size]):
        symbols.append(_Symbol(_cstr(data, strtab, name) if name else "", info, shndx, value, size))
    return tab.index, symbols


def _parse_relocations(data: bytes, sections: list[_Section], symtab: int, nsyms: int) -> list[tuple]:
    """(target section, offset, type, symbol index, addend) of every relocation of a mapped section."""
    relocs = []
    for rs in sections:
        if rs.type == _SHT_REL: raise ElfLoadError(f"section {rs.name}: SHT_REL relocations are not supported")
        if rs.type != _SHT_RELA: continue
        if not 0 < rs.info < len(sections): raise ElfMalformedError(f"section {rs.name}: bad target section")
        target = sections[rs.info]
        if not target.loaded: continue     # relocations of skipped sections (.rela.eh_frame, debug info)
        if rs.link != symtab or rs.entsize != _RELA.size or rs.size % _RELA.size:
            raise ElfMalformedError(f"malformed relocation section {rs.name}")
        for offset, info, addend in _RELA.iter_unpack(data[rs.offset:rs.offset + rs.size]):
            rtype, sym = info & 0xFFFFFFFF, info >> 32
            name = _RELOCS.get(rtype)
            if name is None:
                raise ElfLoadError(f"unsupported relocation type {rtype} in {rs.name} (numfn's code uses "
                                   f"{', '.join(_RELOCS.values())})")
            if sym >= nsyms: raise ElfMalformedError(f"relocation against symbol {sym} of {nsyms}")
            if target.type == _SHT_NOBITS:
                raise ElfLoadError(f"relocation in section {target.name}, which has no contents")
            if offset > target.size or 4 > target.size - offset:
                raise ElfMalformedError(f"{name} at {offset:#x} outside section {target.name}")
            relocs.append((target, offset, rtype, sym, addend))
    return relocs


# ---- loading -----------------------------------------------------------------------------------------------------

def _align(x: int, a: int) -> int:
    return (x + a - 1) & -a


def _place(offset: int, sections: list[_Section]) -> int:
    for s in sections:
        s.addr = offset = _align(offset, s.align)
        offset += s.size
    return offset


class LoadedObject:
    """An object file mapped into the process. `address(name)` gives the absolute address of a global symbol it
    defines; `functions` lists (name, address, size) of every function in it, local ones included (for profilers).
    The code stays mapped while this object is referenced and is unmapped when it is garbage collected."""

    __slots__ = ("_exports", "_mapping", "_munmap", "base", "size", "functions", "__weakref__")

    def __init__(self, exports: dict[str, int], mapping: tuple[int, int], munmap, base: int, size: int,
                 functions: tuple[tuple[str, int, int], ...] = ()):
        self._exports, self._mapping, self._munmap = exports, mapping, munmap
        self.base, self.size = base, size   # the start and length of the loaded image, for debugging
        self.functions = functions

    def address(self, name: str) -> int:
        """The absolute address of global symbol `name` defined in the object."""
        try:
            return self._exports[name]
        except KeyError:
            raise ElfLoadError(f"the object defines no global symbol {name!r}") from None

    def symbols(self) -> list[str]:
        """The names of the global symbols the object defines, sorted."""
        return sorted(self._exports)

    def __contains__(self, name: str) -> bool:
        return name in self._exports

    def __repr__(self) -> str:
        return f"<LoadedObject at {self.base:#x}, {self.size} bytes, symbols {self.symbols()}>"

    def __del__(self, _finalizing=sys.is_finalizing):
        # at interpreter shutdown, late finalizers (atexit handlers, other __del__s) may still call the code:
        # leave the mapping to the OS then
        if self._mapping and not _finalizing():
            self._munmap(*self._mapping)
            self._mapping = None


def load_object(code: bytes, symbols: list[str]) -> LoadedObject:
    """Load the ELF64 x86-64 relocatable object `code` into the process and return it; `symbols` are the global
    symbols the caller needs (each must be defined by the object). Raises ElfLoadError on anything unexpected, before
    any of the object's code could run."""
    if not supported(): raise ElfLoadError("this loader only handles Linux on x86-64")
    data = bytes(code)
    try:
        return _load(data, symbols)
    except struct.error as e:     # a field that does not fit: only corrupt input gets here
        raise ElfMalformedError(f"malformed object: {e}") from None


def _load(data: bytes, wanted: list[str]) -> LoadedObject:
    sections = _parse_sections(data)
    for sec in sections: sec.loaded = _needed(sec)
    symtab, syms = _parse_symbols(data, sections)
    relocs = _parse_relocations(data, sections, symtab, len(syms))

    # symbols: which need a GOT slot, which a PLT stub (calls to code outside the object)
    got: dict[int, int] = {}      # symbol index -> slot number
    plt: dict[int, int] = {}      # symbol index -> stub number
    for _, _, rtype, si, _ in relocs:
        if rtype in _GOT_RELOCS:
            got.setdefault(si, len(got))
        elif rtype == _PLT32 and si and syms[si].shndx == _SHN_UNDEF:
            got.setdefault(si, len(got))
            plt.setdefault(si, len(plt))
    for s in syms:
        if s.shndx == _SHN_XINDEX: raise ElfLoadError("extended section indices are not supported")
        if s.shndx != _SHN_UNDEF and s.shndx >= _SHN_LORESERVE and s.shndx != _SHN_ABS:
            raise ElfLoadError(f"symbol {s.name}: section index {s.shndx:#x} (a COMMON symbol?) is not supported")
        if s.type == _STT_TLS: raise ElfLoadError(f"thread-local symbol {s.name} is not supported")
        if s.shndx != _SHN_UNDEF and s.type == _STT_GNU_IFUNC:
            raise ElfLoadError(f"indirect function {s.name} is not supported")

    # layout: code | PLT stubs || read-only data | GOT || writable data | zero-filled (page-aligned parts)
    libc = _process()
    page = libc.page
    code_secs, ro_secs, rw_secs, bss_secs = [], [], [], []
    for sec in sections:
        if not sec.loaded: continue
        if sec.flags & _SHF_EXECINSTR: code_secs.append(sec)
        elif sec.type == _SHT_NOBITS: bss_secs.append(sec)
        elif sec.flags & _SHF_WRITE: rw_secs.append(sec)
        else: ro_secs.append(sec)
    if any(s.size > _MAX_IMAGE for s in sections if s.loaded): raise ElfLoadError("section too large")
    plt_start = _align(_place(0, code_secs), 16)
    code_end = plt_start + _PLT_STUB * len(plt)
    ro_start = _align(code_end, page)
    got_start = _align(_place(ro_start, ro_secs), 8)
    ro_end = got_start + 8 * len(got)
    rw_start = _align(ro_end, page)
    image_end = _place(rw_start, rw_secs)     # past this, everything is zero: the fresh mapping already is
    end = _place(image_end, bss_secs)
    if end > _MAX_IMAGE: raise ElfLoadError(f"object too large to load ({end} bytes)")
    size = max(_align(end, page), page)
    align = max([page] + [s.align for s in sections if s.loaded])

    # symbol offsets within the image (None: not defined in it) and the process symbols the object needs
    def offset_of(i: int) -> int | None:
        s = syms[i]
        if s.shndx == _SHN_UNDEF or s.shndx == _SHN_ABS: return None
        if s.shndx >= _SHN_LORESERVE or s.shndx >= len(sections):
            raise ElfMalformedError(f"symbol {s.name}: bad section")
        sec = sections[s.shndx]
        if not sec.loaded:
            raise ElfLoadError(f"symbol {s.name or sec.name} is in section {sec.name}, which is not loaded")
        if s.value > sec.size: raise ElfMalformedError(f"symbol {s.name} lies outside section {sec.name}")
        return sec.addr + s.value

    exports: dict[str, int] = {}      # global symbol -> its index
    for i, s in enumerate(syms):
        if s.bind == _STB_LOCAL or s.shndx == _SHN_UNDEF: continue
        if s.name in exports: raise ElfMalformedError(f"symbol {s.name} defined twice")
        if s.shndx < len(sections) and not sections[s.shndx].loaded: continue   # e.g. in a debug section
        offset_of(i)   # validates
        exports[s.name] = i
    for name in wanted:
        if name not in exports: raise ElfLoadError(f"the object does not define {name!r}")

    referenced = {si for _, _, _, si, _ in relocs} | set(got) | set(exports.values())
    external: dict[int, int] = {}
    for i in referenced:
        s = syms[i]
        if i == 0 or s.shndx != _SHN_UNDEF: continue
        addr = _lookup(libc, s.name)
        if addr is None:
            if s.bind != _STB_WEAK: raise ElfLoadError(f"undefined symbol {s.name!r} not found in the process")
            addr = 0      # an undefined weak symbol is null
        external[i] = addr
    offsets = {i: offset_of(i) for i in referenced if i and i not in external}

    # map, fill, relocate, protect
    length = size + (align - page)
    raw = libc.mmap(None, length, _PROT_READ | _PROT_WRITE, _MAP_PRIVATE | _MAP_ANONYMOUS, -1, 0)
    if raw is None or raw == 2 ** 64 - 1:
        raise ElfLoadError(f"mmap of {length} bytes failed (errno {libc.get_errno()})")
    try:
        base = _align(raw, align)
        image = bytearray(image_end)
        for sec in sections:
            if sec.loaded and sec.type != _SHT_NOBITS:
                image[sec.addr:sec.addr + sec.size] = data[sec.offset:sec.offset + sec.size]
        got_addr = base + got_start

        def address(i: int) -> int:
            if i == 0: return 0
            if i in external: return external[i]
            off = offsets[i]
            return syms[i].value if off is None else base + off    # None here: SHN_ABS

        for si, slot in got.items():
            _U64.pack_into(image, got_start + 8 * slot, address(si))
        for si, stub in plt.items():
            at = plt_start + _PLT_STUB * stub
            disp = got_start + 8 * got[si] - (at + 6)
            image[at:at + _PLT_STUB] = b"\xff\x25" + _I32.pack(disp) + b"\x0f\x0b"
        for target, offset, rtype, si, addend in relocs:
            place = base + target.addr + offset
            if rtype in _GOT_RELOCS: value = got_addr + 8 * got[si]   # always through the slot: no relaxation
            elif rtype == _PLT32 and si in plt: value = base + plt_start + _PLT_STUB * plt[si]
            else: value = address(si)                                  # PC32, and PLT32 to the object's own code
            value += addend - place
            if not -2 ** 31 <= value < 2 ** 31:
                raise ElfLoadError(f"{_RELOCS[rtype]}: value {value:#x} does not fit in a signed 32-bit field")
            _I32.pack_into(image, target.addr + offset, value)
        if image: libc.memmove(base, bytes(image), len(image))
        if code_end and libc.mprotect(base, _align(code_end, page), _PROT_READ | _PROT_EXEC):
            raise ElfLoadError(f"mprotect(PROT_EXEC) failed (errno {libc.get_errno()})")
        if ro_end > ro_start and libc.mprotect(base + ro_start, _align(ro_end, page) - ro_start, _PROT_READ):
            raise ElfLoadError(f"mprotect(PROT_READ) failed (errno {libc.get_errno()})")
    except BaseException:
        libc.munmap(raw, length)
        raise
    functions = tuple((s.name, base + sections[s.shndx].addr + s.value, s.size) for s in syms
                      if s.type == _STT_FUNC and s.name and 0 < s.shndx < len(sections) and sections[s.shndx].loaded
                      and s.value + s.size <= sections[s.shndx].size)
    return LoadedObject({name: address(i) for name, i in exports.items()}, (raw, length), libc.munmap, base, size,
                        functions)
