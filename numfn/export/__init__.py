"""Export a compiled function as a standalone C library: `numfn.export(f, *example_args, name=, dir=)`.

The function is traced and compiled for the example arguments' signature (shapes and dtypes; static arguments as
for `jit`) on the C backend, and its program is written out as C99 that needs nothing but a C compiler and libm:
`name.h` (the documented prototype), `name.c` (kernels, constants, the public function), a `Makefile` and
`name.cmake`. numfn.export.library says what the C looks like; numfn.export.driver builds and calls it (the tests
and benchmarks/export_speed.py use it); numfn.export.cli is `python -m numfn export`.

Matrix products are traced as without a BLAS library (generated loops) unless the function calls LAPACK, numfn's
sorts and selection (np.sort, np.argsort, np.partition, np.median) are written as portable C
(numfn.export.routines), and its real BLAS/LAPACK calls (solve, inv, det, slogdet, cholesky, eigh, qr, svd, the
matrix products beside them) as portable C or, with blas="system", calls of the system's CBLAS/LAPACKE
(numfn.export.linalg). threads=N runs parallel kernels on N POSIX threads (numfn.export.threads). Refused, with an
ExportError naming the reason and the line: complex linear algebra, lstsq and eig, and functions whose sizes
depend on argument values (one program per value: make the value static)."""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from numfn import config
from numfn.errors import NumfnError
from numfn.export.library import REQUIRED_CFLAGS, ExportError, Library, Param, library, refuse_externs
from numfn.function import JitFunction, jit
from numfn.signature import argument_leaf_names, normalize_call

__all__ = ["export", "Exported", "ExportError", "Library", "Param", "REQUIRED_CFLAGS"]


@dataclass(frozen=True)
class Exported:
    """What `export` wrote: the library's description and the paths of its files."""
    library: Library
    dir: str
    files: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.library.name

    @property
    def header(self) -> str:
        return os.path.join(self.dir, f"{self.name}.h")

    @property
    def source(self) -> str:
        return os.path.join(self.dir, f"{self.name}.c")


def export(fn: Callable, *example_args: Any, name: str | None = None, dir: str = ".",
           static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
           fastmath: bool = False, blas: str = "portable", threads: int = 1, **example_kwargs: Any) -> Exported:
    """Write `fn`, compiled for the signature of `example_args`/`example_kwargs`, as a C library `name` (default:
    the function's name) into `dir` (created if missing): name.h, name.c, Makefile, name.cmake. `fn` may be a
    `jit`-decorated function (its static arguments and fastmath are used) or a plain one. `blas`: "portable"
    (default: linear algebra as dependency-free C) or "system" (matrix products and LAPACK's routines call the
    system's CBLAS/LAPACKE; the Makefile links -llapacke -lopenblas). `threads`: parallel kernels split their outer
    loop over this many POSIX threads (default 1: single-threaded, no pthreads). Returns an Exported."""
    if blas not in ("portable", "system"):
        raise ValueError(f"export: blas must be 'portable' or 'system', not {blas!r}")
    if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= 1024:
        raise ValueError(f"export: threads must be an int from 1 to 1024, not {threads!r}")
    if isinstance(fn, JitFunction):
        static_argnums, static_argnames = fn.static_arguments
        fastmath = fn.fastmath
        fn = fn.fn

    def jitted() -> JitFunction:
        return jit(fn, static_argnums=static_argnums, static_argnames=static_argnames, backend="c", fastmath=fastmath)

    jf = jitted()
    name = name or str(getattr(fn, "__name__", "fn"))
    if not name.isidentifier() or not name.isascii():
        raise ValueError(f"export: name {name!r} is not a C identifier (letters, digits and _, not starting with a "
                         "digit)")
    # portable: traced as without a BLAS library, matrix products become generated loops; a function calling LAPACK
    # (which numfn cannot trace without it) is traced with it, and the export writes its calls as C
    nf = None
    if blas == "portable":
        try:
            with config.overriding("NUMFN_BLAS", "none"):
                nf = jf.specialize(*example_args, **example_kwargs)
                _ = nf.layout
        except NumfnError:
            nf = None
    if nf is None:
        nf = jitted().specialize(*example_args, **example_kwargs)
        refuse_externs(nf)
    if nf.sizes:   # `specialize` traced it again with the example's values: the program holds them
        parent = nf.__dict__.get("value_parent")
        request = parent.size_request if parent is not None else None
        where = f" ({request.what}, at {request.where})" if request is not None else ""
        raise ExportError(f"cannot export {nf.name}: its trace needs a value computed from the arguments{where}, so "
                          "numfn compiles one program per value and the C function would hold the example's value "
                          f"({', '.join(map(repr, nf.sizes))}); make that value a static argument, or compute it "
                          "with arrays (numpy.where) instead of Python numbers")
    args, kwargs = normalize_call(fn, example_args, example_kwargs)
    lib = library(nf, name, argument_leaf_names(fn, args, kwargs, jf.static_arguments), blas=blas, threads=threads)
    os.makedirs(dir, exist_ok=True)
    files = {f"{name}.h": lib.header, f"{name}.c": lib.source, "Makefile": lib.makefile, f"{name}.cmake": lib.cmake}
    for file, text in files.items():
        with open(os.path.join(dir, file), "w") as f:
            f.write(text)
    return Exported(lib, dir, tuple(os.path.join(dir, f) for f in files))
