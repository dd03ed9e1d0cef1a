"""Locating BLAS/LAPACK for extern calls, and the few calls numfn makes to it from Python.

numfn calls an optimized BLAS/LAPACK (OpenBLAS) from compiled programs for large matrix products and for
numfn.numpy.linalg. The library is the OpenBLAS inside NumPy's own wheel when NumPy has one (numpy.libs/,
described by NumPy's build configuration: scipy-openblas, the same build as the package below): then the process
has one OpenBLAS and one pool of BLAS threads. With two copies loaded (NumPy's and the package's), each copy's
idle workers busy-wait after its calls and starve the other's on a machine with few free cores: small products
took 15-20 ms instead of 60 us, in blocks, on a loaded 2-core machine. Otherwise it comes from the
`scipy-openblas64` package (a dependency: OpenBLAS built for other Python projects to use, with its LAPACK, its
headers and a pkg-config file). The pkg-config file is that package's documented description of the library, and
it is all numfn reads: the library's path (`Libs`), its symbol prefix and suffix (`Cflags`:
-DBLAS_SYMBOL_PREFIX=scipy_ -DBLAS_SYMBOL_SUFFIX=64_), its integer width (`USE_64BITINT`) and version. Without
importing the package (its import costs 100 ms): `importlib.util.find_spec` locates it.

Searched in order: NumPy's wheel, scipy_openblas64, scipy_openblas32 (the same library with 32-bit integers).
NUMFN_BLAS=none (or 0) disables BLAS: products are then generated code and numfn.numpy.linalg raises. DEBUG=1
says which library was found, or warns that none was.

Symbols are resolved here, in Python (dlsym on the library's handle), and handed to compiled programs in a table
(see numfn.extern): generated code never depends on the dynamic linker, so cached objects load in any process.

Threads: the library's own thread count is kept equal to numfn's (NUMFN_THREADS, numfn.set_num_threads; with
NumPy's copy that is NumPy's BLAS thread count too, one setting for the process's one pool). A
compiled program calls it from the calling thread between kernels, while numfn's pool is idle, so only one of the
two pools runs at a time; where numfn runs several programs at once (svmap's threads), `single_threaded()` holds
the library to one thread for that time.
"""
from __future__ import annotations

import contextlib
import functools
import glob
import importlib.util
import os
import re
from dataclasses import dataclass

from numfn import config, debug
from numfn.runtime import threads
from numfn.locks import lock


@dataclass(frozen=True)
class BlasInterface:
    """How compiled code calls a BLAS/LAPACK library: its symbol names and integer width. `identity` names the
    library and version: compiled programs depend on it (LAPACK's workspace sizes, for one), so it is part of
    their cache key."""
    path: str
    prefix: str          # scipy_
    suffix: str          # 64_ for the 64-bit-integer build, else empty
    int_bits: int        # 32 or 64: the width of every integer argument (dimensions, info, pivots)
    identity: str

    def fortran(self, name: str) -> str:
        """The symbol of a BLAS/LAPACK routine by its Fortran name: dgemm -> scipy_dgemm_64_."""
        return f"{self.prefix}{name}_{self.suffix}"

    def c(self, name: str) -> str:
        """The symbol of an OpenBLAS C function: openblas_set_num_threads -> scipy_openblas_set_num_threads64_."""
        return f"{self.prefix}{name}{self.suffix}"

    @property
    def int_max(self) -> int:
        return 2 ** (self.int_bits - 1) - 1


def _disabled() -> bool:
    return config.blas_disabled()


def _from_pkgconfig(package: str) -> BlasInterface | None:
    """The library of a scipy-openblas package, from the pkg-config file it ships (without importing it)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations: return None
    root = list(spec.submodule_search_locations)[0]
    pc = os.path.join(root, "lib", "pkgconfig", "scipy-openblas.pc")
    try:
        with open(pc) as f:
            text = f.read()
    except OSError:
        return None
    variables = dict(re.findall(r"^(\w+)\s*=\s*(.*)$", text, re.M))
    libs = re.search(r"^Libs:\s*(\S+)", text, re.M)
    cflags = re.search(r"^Cflags:(.*)$", text, re.M)
    if libs is None or cflags is None: return None
    path = libs.group(1).replace("${libdir}", variables.get("libdir", "")).replace(
        "${pcfiledir}", os.path.dirname(pc))
    path = os.path.normpath(path)
    flags = dict(re.findall(r"-D(\w+)=(\S+)", cflags.group(1)))
    bits = 64 if "USE_64BITINT=1" in variables.get("openblas_config", "") or "-DHAVE_BLAS_ILP64" in cflags.group(1) \
        else 32
    if not os.path.exists(path): return None
    return BlasInterface(path, flags.get("BLAS_SYMBOL_PREFIX", ""), flags.get("BLAS_SYMBOL_SUFFIX", ""), bits,
                         f"{package} {variables.get('version', '?')}")


def _from_numpy() -> BlasInterface | None:
    """The OpenBLAS NumPy's wheel ships (numpy.libs/), when NumPy's build configuration says it is scipy-openblas."""
    try:
        import numpy
        blas = numpy.__config__.CONFIG["Build Dependencies"]["blas"]
    except (AttributeError, KeyError, TypeError):
        return None
    if blas.get("name") != "scipy-openblas": return None
    bits = 64 if "USE64BITINT" in blas.get("openblas configuration", "") else 32
    site = os.path.dirname(os.path.dirname(os.path.abspath(numpy.__file__)))
    stem = "libscipy_openblas64_" if bits == 64 else "libscipy_openblas"
    found = sorted(glob.glob(os.path.join(site, "numpy.libs", f"{stem}-*.so*")))
    if len(found) != 1: return None
    return BlasInterface(found[0], "scipy_", "64_" if bits == 64 else "", bits,
                         f"numpy {numpy.__version__} {blas.get('version', '?')}")


@functools.cache
def _find() -> BlasInterface | None:
    for finder in (_from_numpy, lambda: _from_pkgconfig("scipy_openblas64"),
                   lambda: _from_pkgconfig("scipy_openblas32")):
        found = finder()
        if found is not None:
            debug.log(1, f"BLAS/LAPACK for extern calls: {found.identity} ({found.path}, {found.int_bits}-bit "
                         f"integers, symbols {found.fortran('dgemm')})")
            return found
    debug.log(1, "warning: no BLAS/LAPACK found (pip install scipy-openblas64): matrix products run as generated "
                 "code and numfn.numpy.linalg's decompositions are unavailable")
    return None


def interface() -> BlasInterface | None:
    """The BLAS/LAPACK library numfn calls, or None (none found, or NUMFN_BLAS=none)."""
    return None if _disabled() else _find()


# ---------------------------------------------------------------------------------------------------------------
# the loaded library

_lock = lock()
_handles: dict[str, object] = {}


def _library(iface: BlasInterface):
    """The dlopened library (kept loaded for the process's lifetime), with its thread count set to numfn's."""
    with _lock:
        lib = _handles.get(iface.path)
        if lib is None:
            import _cffi_backend as B
            lib = B.load_library(iface.path, B.RTLD_NOW | B.RTLD_LOCAL)
            _handles[iface.path] = lib
            from numfn.runtime.threads import thread_count
            _set_threads(iface, lib, thread_count())
    return lib


def addresses(symbols: list[str]) -> list[int]:
    """The addresses of `symbols` in the library (what a program's externs table holds)."""
    import _cffi_backend as B
    iface = interface()
    if iface is None:
        raise RuntimeError("this program calls BLAS/LAPACK, which is no longer available (NUMFN_BLAS=none?)")
    lib = _library(iface)
    voidp = B.new_pointer_type(B.new_void_type())
    uintptr = B.new_primitive_type("uintptr_t")
    return [int(B.cast(uintptr, lib.load_function(voidp, s))) for s in symbols]


def _set_threads(iface: BlasInterface, lib, n: int) -> None:
    import _cffi_backend as B
    fn = lib.load_function(B.new_function_type((B.new_primitive_type("int"),), B.new_void_type(), False),
                           iface.c("openblas_set_num_threads"))
    fn(int(n))


_threads_in_use = 0


def set_threads(n: int) -> None:
    """Use `n` threads in the library from now on (numfn.set_num_threads calls this), if it is loaded."""
    iface = interface()
    if iface is not None and iface.path in _handles: _set_threads(iface, _handles[iface.path], n)


@contextlib.contextmanager
def single_threaded():
    """The library on one thread while numfn runs several programs at once (each on its own thread)."""
    global _threads_in_use
    iface = interface()
    if iface is None or iface.path not in _handles:
        yield
        return
    with _lock:
        _threads_in_use += 1
        if _threads_in_use == 1: _set_threads(iface, _handles[iface.path], 1)
    try:
        yield
    finally:
        with _lock:
            _threads_in_use -= 1
            if _threads_in_use == 0:
                from numfn.runtime.threads import thread_count
                _set_threads(iface, _handles[iface.path], thread_count())


# ---------------------------------------------------------------------------------------------------------------
# calls from Python: LAPACK's workspace queries (at trace time, so workspaces are planned like any buffer)

def call_fortran(name: str, args: list, chars: int = 0) -> None:
    """Call the Fortran routine `name` with every argument by reference: NumPy arrays in place, Python ints as the
    library's integers, floats as float64 or float32 (`float32(x)`), one-letter strings as characters; then the
    hidden lengths of `chars` character arguments."""
    import _cffi_backend as B
    import numpy as np
    iface = interface()
    assert iface is not None, "call_fortran needs a BLAS/LAPACK library (callers plan LAPACK calls only with one)"
    lib = _library(iface)
    voidp = B.new_pointer_type(B.new_void_type())
    size_t = B.new_primitive_type("size_t")
    fn = lib.load_function(B.new_function_type((voidp,) * len(args) + (size_t,) * chars, B.new_void_type(), False),
                           iface.fortran(name))
    itype = np.int64 if iface.int_bits == 64 else np.int32
    keep, ptrs = [], []
    bytes_t = B.new_array_type(B.new_pointer_type(B.new_primitive_type("char")), None)
    for a in args:
        if isinstance(a, str): a = np.frombuffer(a.encode(), np.uint8).copy()
        elif isinstance(a, bool) or isinstance(a, int): a = np.array([a], itype)
        elif isinstance(a, float): a = np.array([a], np.float64)
        elif isinstance(a, np.generic): a = np.array([a])
        keep.append(a)
        ptrs.append(B.cast(voidp, B.from_buffer(bytes_t, a)))
    fn(*ptrs, *([1] * chars))


def int_dtype():
    """The NumPy dtype of the library's integers."""
    import numpy as np
    iface = interface()
    return np.dtype(np.int64 if iface is None or iface.int_bits == 64 else np.int32)


threads.on_change(set_threads)   # the library's thread count follows numfn's (numfn.set_num_threads)
