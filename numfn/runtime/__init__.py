"""Runtimes: turning rendered source into callable native code (clang/cc + cffi, LLVM JIT via llvmlite), through
the disk cache.

Every compiled program has one entry point, `int entry([int64 start, int64 end,] void **buffers)`: the buffer
pointers in the order of numfn.codegen.layout (outputs, inputs, pointer constants), returning 0 on success.
"""
from __future__ import annotations

import errno
import functools
import json
import os
import stat
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any

from numfn import debug
from numfn.locks import file_lock, lock
from numfn.runtime.elf import ElfLoadError

_ET_DYN = (3).to_bytes(2, "little")   # the e_type of a shared library, at offset 16 of its ELF header


@dataclass
class LoadedCode:
    """A compiled program mapped into this process (what `compile_program` and `load_cached` return): the entry
    point's `address`, `entry(*ints, buffers) -> status` to call it from Python
    (buffers: a pointer table, see numfn.runtime.native.pointer_table), and `manifest`: what a caller needs to
    know about the code (its entry name, the order of its pointer constants by content hash), stored with the
    code in the cache. `keepalive` holds what keeps the code mapped."""
    address: int
    nints: int
    manifest: dict = field(default_factory=dict)
    keepalive: Any = None

    timings_address: int = 0

    @property
    def entry(self):
        from numfn.runtime.native import entry_function
        return entry_function(self.address, self.nints)

    def timings(self):
        """DEBUG=2 programs: their per-kernel nanosecond counters, then per-kernel call counters, as a writable int64
        array view."""
        from numfn.runtime.native import int64_array
        return int64_array(self.timings_address, 2 * len(self.manifest.get("kernels", [])))


# A scratch arena of at least this many bytes is kept between calls, one per program (in the program's exported
# pointer `<entry>_arena`, freed when the program is unloaded): malloc serves such sizes by mmap and free unmaps
# them, so every call would fault each page in again, which costs as much as the streaming work done on it
KEEP_ARENA_BYTES = 1 << 20


def keeps_arena(arena_bytes: int) -> bool:
    """Whether a program with this scratch arena keeps it between calls (see KEEP_ARENA_BYTES)."""
    return arena_bytes >= KEEP_ARENA_BYTES


compile_count = 0   # programs compiled (not loaded from the cache) in this process: tests count recompilations


def _pack(manifest: dict, code: bytes) -> bytes:
    head = json.dumps(manifest, sort_keys=True).encode()
    return len(head).to_bytes(4, "little") + head + code


def _unpack(payload: bytes) -> tuple[Any, bytes] | None:
    try:
        n = int.from_bytes(payload[:4], "little")
        return json.loads(payload[4:4 + n]), payload[4 + n:]
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


_MANIFEST_FIELDS = {"entry": str, "constants": list, "arena_bytes": int, "ops": int}


def manifest_problem(manifest: Any) -> str | None:
    """Why a manifest read from the cache cannot describe a program numfn made, or None. The checksum proves the
    bytes are what was written, not that they were written by this numfn's rules."""
    if not isinstance(manifest, dict): return "the manifest is not an object"
    for name, kind in _MANIFEST_FIELDS.items():
        value = manifest.get(name)
        if not isinstance(value, kind) or isinstance(value, bool): return f"manifest field {name!r} is {value!r}"
    if not manifest["entry"].isidentifier(): return f"entry {manifest['entry']!r} is not a symbol name"
    if manifest["arena_bytes"] < 0 or manifest["ops"] < 0: return "negative sizes in the manifest"
    if not all(isinstance(h, str) for h in manifest["constants"]): return "constants are not content hashes"
    kernels = manifest.get("kernels", [])
    if not isinstance(kernels, list) or not all(isinstance(k, str) for k in kernels): return "bad kernel names"
    return None


def load_cached(backend: str, key: str, nints: int, accept=None) -> LoadedCode | None:
    """The program cached under `key`, loaded, or None (no cache, a miss, or an unusable entry). `accept(manifest)`
    may refuse an entry whose manifest does not fit the caller (it returns why, or None)."""
    from numfn.runtime.diskcache import default_cache
    cache_ = default_cache()
    if cache_ is None: return None
    payload = cache_.get(key)
    unpacked = _unpack(payload) if payload is not None else None
    if unpacked is None: return None
    manifest, code = unpacked
    problem = manifest_problem(manifest) or (accept(manifest) if accept is not None else None)
    if problem is not None:   # written by something else than this numfn: compiled again, and replaced
        debug.log(1, f"cache entry {key[:12]} is unusable ({problem}); compiling it again")
        return None
    debug.log(1, f"cache hit {key[:12]} ({backend}, {len(code)} bytes)")
    try:
        return _load(backend, code, manifest, nints, cached=True)
    except Exception as e:   # noqa: BLE001 - whatever the loader or linker raises, the entry is not usable
        # cached code is code that loaded: it fails if the process changed (a symbol it calls is missing), or if
        # the entry holds bytes that are not what was compiled (a truncated or damaged object under a checksum
        # computed from it). Deleted, or every later process would fail the same way; compiled again and replaced
        cache_.discard(key, f"its {backend} program does not load: {type(e).__name__}: {e}")
        return None


def load_or_compile(backend: str, key: str, nints: int, build, accept=None) -> tuple[LoadedCode, bool]:
    """The program cached under `key`, else the one `build()` describes, as (source, entry, manifest), compiled
    now and cached; and whether it was compiled. `build` runs only on a miss: it is what needs the schedule.
    `accept`: see load_cached."""
    prog = load_cached(backend, key, nints, accept)
    if prog is not None: return prog, False
    from numfn.runtime.diskcache import default_cache
    cache_ = default_cache()
    if cache_ is None:
        source, entry, manifest = build()
        return compile_program(backend, source, entry, nints, key, manifest), True
    # processes sharing the cache directory (Dask workers started cold) compile a program once: the first takes the
    # lock and compiles, the others wait for it and load what it stored
    with file_lock(os.path.join(cache_.directory, f"{key}.lock")) as held:
        if held:
            prog = load_cached(backend, key, nints, accept)
            if prog is not None: return prog, False
        source, entry, manifest = build()
        return compile_program(backend, source, entry, nints, key, manifest), True


def compile_program(backend: str, source: str, entry: str, nints: int = 0, key: str | None = None,
                    manifest: dict | None = None) -> LoadedCode:
    """Compile `source` and load it; with a `key`, store the code (and `manifest`) in the disk cache."""
    global compile_count
    compile_count += 1
    manifest = dict(manifest or {}, entry=entry)
    if backend == "c":
        from numfn.runtime import clang
        code = clang.compile_object(source)
        try:
            prog = _load(backend, code, manifest, nints)
        except ElfLoadError as e:   # where the ELF loader does not apply or refuses: a shared library
            debug.log(1, f"ELF loader refused {entry} ({e}); linking it into a shared library")
            code = clang.link_shared(code)
            prog = _load(backend, code, manifest, nints)
    elif backend == "llvm":
        from numfn.runtime import orcjit as llvm
        from numfn.runtime.elf import LoadedObject
        code = llvm.compile_object(source)
        prog = _load(backend, code, manifest, nints)
        # numfn's ELF loader refused it, OrcJIT linked it: a warm start may too (see _load)
        if not isinstance(prog.keepalive, LoadedObject): manifest["linker"] = "orc"
    else:
        raise ValueError(f"unknown backend {backend!r}")
    if key is not None:   # what is cached is what loaded
        from numfn.runtime.diskcache import default_cache
        cache_ = default_cache()
        if cache_ is not None: cache_.put(key, _pack(manifest, code))
    return prog


def _load(backend: str, code: bytes, manifest: dict, nints: int, cached: bool = False) -> LoadedCode:
    """Map `code` and find its symbols. A `cached` LLVM object goes to OrcJIT (when numfn's ELF loader refuses it)
    only if OrcJIT linked it when it was compiled: any other object the ELF loader refuses is not what was compiled,
    and LLVM's linker may abort the process on such bytes ("Relocation type not implemented yet!")."""
    entry = manifest["entry"]
    profiled, kept = "kernels" in manifest, keeps_arena(manifest.get("arena_bytes", 0))
    symbols = [entry] + ([entry + "_ns"] if profiled else []) + ([entry + "_arena"] if kept else [])
    if backend == "c" and code[16:18] == _ET_DYN:
        from numfn.runtime.native import load_library, private_library_file
        lib, addrs = load_library(private_library_file(code, entry), symbols)
    elif backend == "c":
        from numfn.runtime import elf
        if not elf.supported(): raise ElfLoadError("this platform has no in-process ELF loader")
        lib = elf.load_object(code, symbols)
        addrs = [lib.address(s) for s in symbols]
    else:
        from numfn.runtime import orcjit as llvm
        lib, addrs = llvm.load_object(code, symbols, orc=not cached or manifest.get("linker") == "orc")
    loaded = LoadedCode(addrs[0], nints, manifest, lib, addrs[1] if profiled else 0)
    # the arena the program keeps between calls is freed with it (`lib` stays mapped until then)
    if kept: weakref.finalize(loaded, _free_kept_arena, lib, addrs[-1])
    return loaded


def _free_kept_arena(lib, slot: int) -> None:
    """Free the scratch arena a program keeps in its pointer at `slot` (numfn.runtime.KEEP_ARENA_BYTES)."""
    import ctypes
    arena = ctypes.c_void_p.from_address(slot).value
    if arena:
        ctypes.c_void_p.from_address(slot).value = None
        _libc_free()(arena)


@functools.lru_cache(maxsize=1)
def _libc_free():
    import ctypes
    free = ctypes.CDLL(None).free   # the malloc the programs call: the process's own
    free.argtypes, free.restype = [ctypes.c_void_p], None
    return free


_perf_lock = lock()


def perf_map_path() -> str:
    """Where Linux `perf` looks for the names of JIT-compiled code in this process (its fixed convention)."""
    return f"/tmp/perf-{os.getpid()}.map"


def write_perf_map(code: LoadedCode, label: str) -> None:
    """With NUMFN_PERF_MAP on, append the functions of a program just loaded to the perf map, so `perf report`
    names generated code: `<start> <size> numfn <label>` for the entry point (`label` names the Python function and
    its signature) and `... numfn <label> <function>` for the program's other functions (kernels the compiler kept
    apart, parallel loop bodies). Code mapped by numfn's ELF loader lists every function with its size; other
    loaders list the entry alone (size unknown: 1).

    The map's name is fixed in /tmp, where any local user may create it first: it is opened without following a
    symbolic link, created with mode 0600 (code addresses are not for other users), and written only when it is a
    regular file of ours with no other name (a hard link); otherwise, or when it cannot be written, it is skipped
    with a warning."""
    from numfn import config
    if not config.perf_map(): return
    from numfn.runtime.elf import LoadedObject
    entry = code.manifest["entry"]
    if isinstance(code.keepalive, LoadedObject):
        lines = [f"{address:x} {max(size, 1):x} numfn {label}{'' if name == entry else ' ' + name}\n"
                 for name, address, size in code.keepalive.functions]
    else:
        lines = [f"{code.address:x} 1 numfn {label}\n"]
    path = perf_map_path()
    # O_NONBLOCK: a FIFO planted there fails to open instead of blocking (no effect on a regular file)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    try:
        with _perf_lock:
            fd = os.open(path, flags, 0o600)
            try:
                st = os.fstat(fd)
                problem = _perf_map_problem(st)
                if problem is not None:
                    warnings.warn(f"numfn: not writing the perf map {path}: {problem}", RuntimeWarning, stacklevel=2)
                    return
                if st.st_mode & 0o077: os.fchmod(fd, 0o600)   # a map of ours an older numfn made readable
                data = "".join(lines).encode()
                while data: data = data[os.write(fd, data):]
            finally:
                os.close(fd)
    except OSError as e:   # asked for, so not silent
        why = {errno.ELOOP: "it is a symbolic link", errno.ENXIO: "it is a FIFO"}.get(e.errno or 0, str(e))
        warnings.warn(f"numfn: not writing the perf map {path}: {why}", RuntimeWarning, stacklevel=2)


def _perf_map_problem(st: os.stat_result) -> str | None:
    """Why an open perf map must not be written (another user's, not a regular file, a hard link), or None."""
    if not stat.S_ISREG(st.st_mode): return "it is not a regular file"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"it belongs to uid {st.st_uid}, not to this user (uid {os.getuid()})"
    if st.st_nlink != 1: return f"it has {st.st_nlink} names (a hard link)"
    return None
