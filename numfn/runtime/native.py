"""Calling native entry points from Python with cffi's backend module, without building an FFI (which would parse
C declarations with pycparser: 20 ms on first use, too slow for a warm start)."""
from __future__ import annotations

from functools import cache

import _cffi_backend as B

_VOID_P = B.new_pointer_type(B.new_void_type())
_VOID_PP = B.new_pointer_type(_VOID_P)
_TABLE = B.new_array_type(_VOID_PP, None)
_BYTES = B.new_array_type(B.new_pointer_type(B.new_primitive_type("char")), None)
_INT = B.new_primitive_type("int")
_INT64 = B.new_primitive_type("int64_t")


@cache
def entry_type(nints: int):
    """The C type `int (*)(int64_t x nints, void **)` of an entry point."""
    return B.new_function_type((_INT64,) * nints + (_VOID_PP,), _INT, False)


def entry_function(address: int, nints: int):
    """A callable for the entry point at `address`."""
    return B.cast(entry_type(nints), address)


def pointer_table(arrays, pool: int = 0) -> object:
    """A `void *[]` holding the data pointers of NumPy arrays and then `pool` (the thread pool's parallel_for, 0
    for none): the `buffers` argument of an entry point. The arrays must stay alive while it is used."""
    table = B.newp(_TABLE, len(arrays) + 1)
    for i, a in enumerate(arrays): table[i] = B.cast(_VOID_P, B.from_buffer(_BYTES, a))
    table[len(arrays)] = B.cast(_VOID_P, pool)
    return table


def load_library(path: str, symbols: list[str]) -> tuple[object, list[int]]:
    """dlopen `path` and return (the library handle, which keeps it loaded, and the addresses of `symbols`)."""
    lib = B.load_library(path, B.RTLD_NOW | B.RTLD_LOCAL)
    uintptr = B.new_primitive_type("uintptr_t")
    return lib, [int(B.cast(uintptr, lib.load_function(_VOID_P, s))) for s in symbols]


_private_dir: str | None = None


def private_library_file(code: bytes, stem: str) -> str:
    """A file holding exactly `code` in this process's private directory (mode 0700, removed at exit), named after
    its content: what dlopen or the extension loader map is then exactly the bytes the caller verified, and the
    same bytes always get the same path (loaders reuse what they loaded from a path)."""
    global _private_dir
    import hashlib
    import os
    import tempfile
    if _private_dir is None:
        import atexit
        import shutil
        _private_dir = tempfile.mkdtemp(prefix="numfn-lib-")
        atexit.register(shutil.rmtree, _private_dir, True)
    path = os.path.join(_private_dir, f"{stem}-{hashlib.sha256(code).hexdigest()[:16]}.so")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=_private_dir)
        with open(fd, "wb") as f:
            f.write(code)
        os.replace(tmp, path)
    return path


def int64_array(address: int, n: int):
    """A NumPy int64 array viewing `n` values at `address` (memory the caller keeps alive)."""
    import numpy as np
    buf = B.buffer(B.cast(_BYTES_P, address), 8 * n)
    return np.frombuffer(buf, dtype=np.int64, count=n)


_BYTES_P = B.new_pointer_type(B.new_primitive_type("char"))
