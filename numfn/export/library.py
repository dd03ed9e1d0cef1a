"""The files of an exported C library (numfn.export): `name.h`, `name.c`, a Makefile and a CMake snippet, made from
one NumericalFunction compiled for the C backend.

`name.c` is the C backend's program rendered standalone (numfn.renderer.c.render_program(standalone=True): the same
kernels numfn runs, single-threaded, with the scratch arena passed in), its captured constants as static arrays, and
one public function with the user's argument names:

    int name(const float *x, double alpha, float *out, void *workspace);

Inputs come first (arrays as `const` pointers, 0-d inputs by value, arrays the function writes into as non-const
in/out pointers), then the outputs (pointers to caller-owned memory), then, for an output of run-time length, an
`int64_t *` that receives its length, then the workspace when the program needs scratch memory
(`name_workspace_size()` bytes, aligned as malloc aligns). The function returns 0, or k > 0 when the k-th of the
checks NumPy would raise an error for failed (an index out of bounds, ...). It allocates nothing, writes no global,
and is reentrant: calls with separate workspaces may run at once. numfn's sorts and selection are written as C
(numfn.export.routines), its BLAS/LAPACK calls as portable C or calls of the system's CBLAS/LAPACKE
(numfn.export.linalg); parallel kernels may run on POSIX threads (numfn.export.threads). Each kernel's comment
names the user's lines it computes (numfn.export.provenance).

`library(nf, name, arg_names, blas=, threads=)` returns a Library: its files' text and a description of its
parameters (`Param`) that numfn.export.driver uses to call it."""
from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass

import numpy as np

from numfn.dtype import DType, dtypes
from numfn.errors import NumfnError
from numfn.ir.extern import ROUTINES
from numfn.renderer import buffer_name
from numfn.export import linalg
from numfn.export.routines import SUPPORTED, direct_calls, routines_source
from numfn.export.provenance import KernelSource, buffer_variables, kernel_sources, retrace, traced_locations
from numfn.export.threads import use_threads

ALIGN = 64   # the workspace's parts start at multiples of this (a cache line; enough for every C type)
# what the exported C needs beyond -std=c99 (see the Makefile's comment): signed integers wrap as NumPy's do; the
# scratch arena holds buffers of different types at one address over a call; each float operation rounds on its own
REQUIRED_CFLAGS = ("-std=c99", "-fwrapv", "-fno-strict-aliasing", "-ffp-contract=off")
# what an export with blas="system" links: LAPACKE and OpenBLAS (which has CBLAS)
SYSTEM_BLAS_LIBS = "-llapacke -lopenblas"
# names the public function's body uses itself
_RESERVED = {"NULL", "buffers", "ws", "workspace", "k", "failed", "main", "int", "float", "double", "char", "void",
             "restrict", "inline", "bool", "complex", "errno"}
# C keywords Python allows as names
_C_KEYWORDS = {"auto", "case", "const", "default", "do", "enum", "extern", "goto", "long", "register", "short",
               "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "volatile"}


@dataclass(frozen=True)
class Param:
    """One parameter of the exported function: `role` is "in" (const pointer), "scalar" (0-d input by value),
    "inout" (an input the function writes into), "out", or "length" (int64_t *: an output's run-time length);
    `shape`/`dtype` are NumPy's (complex as complex, float16 as float16)."""
    name: str
    role: str
    shape: tuple[int, ...]
    dtype: DType
    slot: int = -1   # the argument leaf (inputs) or output leaf (outputs, lengths) it is
    axis: int = 0    # a length's: the output's axis it is the length of

    @property
    def ctype(self) -> str:
        return c_type(self.dtype)

    def declaration(self) -> str:
        if self.role == "scalar": return f"{self.ctype} {self.name}"
        if self.role == "length": return f"int64_t *{self.name}"
        return f"{'const ' if self.role == 'in' else ''}{self.ctype} *{self.name}"


@dataclass(frozen=True)
class Library:
    name: str
    params: tuple[Param, ...]
    workspace_bytes: int
    header: str
    source: str
    makefile: str
    cmake: str
    errors: tuple[str, ...]   # return value k: errors[k - 1] describes the failed check
    libs: tuple[str, ...] = ()   # linker flags beyond -lm (a system BLAS/LAPACK, pthreads)


def c_type(dt: DType) -> str:
    """The C type of one element of a NumPy array of `dt` as the header spells it."""
    if dt.is_complex: return f"{dt.component.cname} _Complex"
    return dt.cname


def c_identifier(text: str, taken: set[str]) -> str:
    """A C identifier for a Python argument path ('x', 'params'['w'], 2[0]), not in `taken` (which it joins)."""
    name = re.sub(r"[^0-9A-Za-z_]+", "_", text.replace("'", "")).strip("_") or "arg"
    if name[0].isdigit(): name = f"arg{name}"
    if name in _RESERVED or name in _C_KEYWORDS or keyword.iskeyword(name) or re.fullmatch(r"const\d+", name):
        name += "_"   # the buffer table names constants const0, const1, ...
    base, k = name, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def output_names(tree, taken: set[str]) -> list[str]:
    """Names of an output structure's leaves: `out` for one array, `out0`... for a tuple, `out_key` for a dict."""
    if tree.kind == "leaf": return [c_identifier("out", taken)]
    names: list[str] = []

    def walk(t, path: str) -> None:
        if t.kind == "leaf":
            names.append(c_identifier(path, taken))
            return
        keys = list(t.meta) if t.kind == "dict" else list(getattr(t.meta, "_fields", range(len(t.children))))
        for key, child in zip(keys, t.children): walk(child, f"{path}_{key}")

    walk(tree, "out")
    return names


class ExportError(NumfnError):
    """A function numfn compiles but cannot export (yet): the message names the reason and the user's line."""


# what each library routine computes, by the NumPy functions that call it (numfn.ir.extern.ROUTINES)
ROUTINE_USES = {"sort": "numpy.sort", "argsort": "numpy.argsort", "select": "numpy.partition/median/percentile",
                "gemm": "a large matrix product (@, numpy.dot, numpy.matmul)", "gemv": "a large matrix-vector product",
                "syrk": "a large product a @ a.T", "gesv": "numpy.linalg.solve",
                "getrf": "numpy.linalg.det/slogdet/inv", "potrf": "numpy.linalg.cholesky",
                "syevd": "numpy.linalg.eigh", "heevd": "numpy.linalg.eigh", "gesdd": "numpy.linalg.svd",
                "gesdd_complex": "numpy.linalg.svd", "geqrf": "numpy.linalg.qr", "orgqr": "numpy.linalg.qr",
                "ungqr": "numpy.linalg.qr", "gelsd": "numpy.linalg.lstsq", "gelsd_complex": "numpy.linalg.lstsq",
                "geev": "numpy.linalg.eig", "geev_complex": "numpy.linalg.eig"}
_BLAS = {"gemm", "gemv", "syrk"}


def extern_calls(nf) -> list:
    """The ExternCalls of a program (numfn.ir.extern), in graph order."""
    if not nf.layout.externs: return []
    from numfn.ir.uop import Ops
    from numfn.ir.walk import toposort
    return [u.arg for u in toposort([nf.call_graph]) if u.op is Ops.EXTERN]


def refuse_externs(nf) -> None:
    """Exported code runs without numfn's runtime: a program calling a library routine other than the sorts
    (numfn.export.routines) and the real BLAS/LAPACK routines numfn.export.linalg writes as C cannot be exported
    yet. The error names the NumPy function, the library and the user's line."""
    calls = extern_calls(nf)
    routines = sorted({c.routine for c in calls if c.routine not in SUPPORTED | linalg.SUPPORTED}
                      | {f"{c.routine} of {c.dtype.name}" for c in calls
                         if c.routine in linalg.SUPPORTED and c.dtype.is_complex})
    if not routines: return
    if "callback" in routines:
        raise ExportError(f"cannot export {nf.name}: it calls Python at run time (numfn.debug.print or "
                          "numfn.debug.callback), which exported C code cannot do; remove those calls to export it")
    lines = extern_call_sites(nf)
    what = []
    for r in routines:
        base = r.split(" ")[0]
        library = "BLAS" if base in _BLAS else "numfn's native runtime" if ROUTINES[base].library == "native" \
            else "LAPACK"
        what.append(f"{ROUTINE_USES.get(base, base)} calls {library} ({r}), which export does not include yet")
    raise ExportError(f"cannot export {nf.name}: {'; '.join(what)}"
                      + (f" (at {'; '.join(lines)})" if lines else "")
                      + ". Matrix products, numpy.sort, argsort, partition, median and the real (float32, float64) "
                      "solve, inv, det, slogdet, cholesky, eigh, qr and svd export; complex linear algebra, lstsq and "
                      "eig do not yet")


def extern_call_sites(nf) -> list[str]:
    """The user's lines whose NumPy calls made the program's extern calls, found by tracing the function again
    with a profile hook on numfn.extern.extern (the graph does not record source lines)."""

    from numfn.errors import user_location
    from numfn.extern import extern
    target, found = extern.__code__, []

    def hook(frame, event, arg):
        if event == "call" and frame.f_code is target:
            where = user_location()
            if where not in found: found.append(where)

    retrace(nf, hook)
    return found


def library(nf, name: str, arg_names: list[str], blas: str = "portable", threads: int = 1) -> Library:
    """The exported library of `nf` (a NumericalFunction on the C backend, traced and scheduled) as `name`;
    `arg_names` names its argument leaves (numfn.signature.argument_leaf_names). `blas`: "portable" (BLAS/LAPACK
    calls as portable C) or "system" (calls of the system's CBLAS/LAPACKE); `threads` > 1: parallel kernels split
    their outer loop over that many POSIX threads (numfn.export.threads)."""
    refuse_externs(nf)
    layout = nf.layout
    taken = {name, f"{name}_workspace_size", f"{name}_program"}
    params: list[Param] = []
    in_slots: list[tuple[str, Param | None]] = []   # per input slot: its C expression in the buffer table
    written = {buffer_name(b) for b in layout.written_inputs}
    for slot, (spec, (buf, _)) in enumerate(zip(nf.in_specs, layout.inputs)):
        if spec.value is not None:   # an int beyond int64: part of the program, its slot unused
            in_slots.append(("NULL", None))
            continue
        role = "inout" if buffer_name(buf) in written else "scalar" if spec.shape == () else "in"
        p = Param(c_identifier(arg_names[slot], taken), role, tuple(spec.shape), spec.dtype, slot)
        params.append(p)
        in_slots.append((f"(void *)&{p.name}" if role == "scalar" else f"(void *){p.name}", p))
    nout = nf.out_tree.num_leaves
    out_params = [Param(n, "out", tuple(shape), dt, k)
                  for k, (n, (shape, dt)) in enumerate(zip(output_names(nf.out_tree, taken), nf.out_specs[:nout]))]
    params += out_params
    lengths = {}
    for k, (i, axis) in enumerate(nf.cut_outputs):
        p = Param(c_identifier(f"{out_params[i].name}_length", taken), "length", (), dtypes.int64, i, axis)
        params.append(p)
        lengths[nout + 2 * len(nf.checks) + k] = p.name

    # the workspace: the scratch arena, then each check's failed and payload arrays
    arena = _aligned(layout.heap_arena_bytes)   # (none when every intermediate lives on the stack)
    offset, check_slots, errors = arena, {}, []
    for k, check in enumerate(nf.checks):
        for j in (0, 1):
            shape, dt = nf.out_specs[nout + 2 * k + j]
            check_slots[nout + 2 * k + j] = (offset, math.prod(shape))
            offset += _aligned(max(math.prod(shape), 1) * dt.itemsize)
        errors.append(_error_text(check))
    workspace = offset

    buffers = []
    for k in range(len(layout.outputs)):
        if k < nout: buffers.append(f"(void *){out_params[k].name}")
        elif k in lengths: buffers.append(f"(void *){lengths[k]}")
        else: buffers.append(f"(void *)(ws + {check_slots[k][0]})")
    buffers += [expr for expr, _ in in_slots]
    buffers += [f"(void *){buffer_name(b)}" for b, _, _ in layout.pointer_constants]
    if layout.externs: buffers.append("NULL")   # the externs table: exported code calls its routines by name

    system = blas == "system" and any(linalg.routine_of(s) for s in layout.externs if not s.startswith("numfn_"))
    header = _header(nf, name, params, workspace, errors, threads, system)
    source = _source(nf, name, params, workspace, buffers, check_slots, nout, system, threads)
    libs = ((SYSTEM_BLAS_LIBS,) if system else ()) + (("-lpthread",) if threads > 1 else ())
    return Library(name, tuple(params), workspace, header, source, makefile(name, libs), cmake(name, libs),
                   tuple(errors), libs)


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _error_text(check) -> str:
    """The error NumPy raises when a check fails, its payload written P."""
    marker = -987654321
    err = check.error(marker)
    return f"{type(err).__name__}: {str(err).replace(str(marker), 'P')}"


def _signature(name: str, params: list[Param], workspace: int) -> str:
    decls = [p.declaration() for p in params] + (["void *workspace"] if workspace else [])
    return f"int {name}({', '.join(decls) or 'void'})"


def _header(nf, name: str, params: list[Param], workspace: int, errors: list[str], threads: int = 1,
            system: bool = False) -> str:
    guard = f"{name.upper()}_H"
    how = "single-threaded" if threads <= 1 else f"parallel loops on {threads} POSIX threads"
    how += ", reentrant, no globals" if system else ", reentrant, no allocation, no globals"
    doc = [f"{name}: {nf.name}, exported by numfn as C99 ({how}).",
           "", "Arrays are C-contiguous (row-major) and must not overlap one another."]
    if system:
        doc[1:1] = ["Linear algebra calls the system's CBLAS/LAPACKE (link -llapacke -lopenblas), which may allocate "
                    "and run threads of its own."]
    for p in params:
        shape = "[" + ", ".join(map(str, p.shape)) + "]"
        what = {"in": f"input, {p.dtype.name}{shape}, read only",
                "scalar": f"input, a {p.dtype.name} scalar",
                "inout": f"input {p.dtype.name}{shape} that the function writes into (NumPy's in-place update)",
                "out": f"output, {p.dtype.name}{shape}, written by the call",
                "length": f"receives the run-time length of axis {p.axis} of the output above, whose shape is its "
                          "capacity (the elements are laid out by that shape; only the first `length` along the axis "
                          "are the result)"
                }[p.role]
        doc.append(f"  {p.name}: {what}")
    if any(p.dtype is dtypes.float16 for p in params):
        doc.append("float16 values are passed as their IEEE binary16 bits (uint16_t).")
    if any(p.dtype.is_complex for p in params):
        doc.append("Complex values are C99 _Complex (real and imaginary parts interleaved, as NumPy stores them).")
    if workspace:
        doc.append(f"  workspace: {name}_workspace_size() bytes of scratch memory (as malloc aligns it, or better: "
                   f"{ALIGN} bytes); calls running at once need one each")
    doc.append("Returns 0" + ("" if not errors else ", or the number of the check that failed, where NumPy raises:"))
    doc += [f"  {k + 1}: {text}" for k, text in enumerate(errors)]
    lines = [f"#ifndef {guard}", f"#define {guard}", "", "#include <stddef.h>", "#include <stdint.h>", "",
             "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
             "/* " + "\n * ".join(doc).replace(" \n", "\n") + "\n */",
             _signature(name, params, workspace) + ";"]
    if workspace: lines += ["", f"/* bytes of workspace {name} needs */", f"size_t {name}_workspace_size(void);"]
    lines += ["", "#ifdef __cplusplus", "}", "#endif", "", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


def _kernel_comment(prog, names: dict[str, str], source: KernelSource | None = None) -> str:
    """Which of the user's lines a kernel computes (numfn.export.provenance), and what it reads and writes, by the
    user's names where they are arguments or outputs."""
    from numfn.renderer.c import written
    params = getattr(prog, "params", ())
    out = written(prog) if hasattr(prog, "uops") else set()
    def label(b): return names.get(buffer_name(b.arg), buffer_name(b.arg))
    reads = [label(p) for p in params if p not in out]
    writes = [label(p) for p in params if p in out]
    access = f"reads {', '.join(reads) or 'nothing'}; writes {', '.join(writes) or 'nothing'}"
    computes = source.comment() if source is not None else ""
    if not computes: return f"/* {prog.name}: {access} */"
    return f"/* {prog.name}: {computes}\n   {access} */"


def _source(nf, name: str, params: list[Param], workspace: int, buffers: list[str], check_slots: dict,
            nout: int, system: bool = False, threads: int = 1) -> str:
    from numfn.renderer.c import c_literal, render_program   # (code generation loads on first use, not at import)
    layout = nf.layout
    user: dict[str, str] = {}
    for (b, _), slot_param in zip(layout.inputs, _input_params(nf, params)):
        if slot_param is not None: user[buffer_name(b)] = f"{buffer_name(b)} ({slot_param.name})"
    outs = [p for p in params if p.role == "out"]
    for (b, _), p in zip(layout.outputs, outs): user[buffer_name(b)] = f"{buffer_name(b)} ({p.name})"
    callees = tuple(linalg.export_name(s) if not s.startswith("numfn_") else s for s in layout.externs)
    try:   # the comments and names are a reader's help: an export never fails for want of them
        locations = traced_locations(nf)
        sources, variables = kernel_sources(nf, locations), buffer_variables(nf, locations)
    except Exception:   # noqa: BLE001
        sources, variables = {}, {}
    kernels = [(k.program, f"{_kernel_comment(k.program, user, sources.get(k.name))}\n"
                f"{direct_calls(k.source, callees) if getattr(k.program, 'externs', False) else k.source}")
               for k in nf.rendered_kernels]
    program = render_program(f"{name}_program", kernels, layout, steps=nf.steps, standalone=True)
    program = use_threads(program, threads)
    for buf, variable in variables.items():   # tmp3 -> h_tmp3: the user's variable
        program = re.sub(rf"\b{buf}\b", f"{variable}_{buf}", program)
    # clang's per-statement fp pragma (reductions' reassociation); other compilers skip it without a warning
    program = program.replace('_Pragma("clang fp', 'NUMFN_FP("clang fp')
    consts = []
    for buf, dt, data in layout.pointer_constants:   # numfn passes these by pointer; exported code embeds them
        values = ", ".join(c_literal(v, dt) for v in np.asarray(data).reshape(-1).tolist())
        consts.append(f"static const {dt.cname} {buffer_name(buf)}[{max(buf.size, 1)}] = {{ {values} }};")
    head = [f"/* {name}.c: {nf.name}, exported by numfn. Compile with {' '.join(REQUIRED_CFLAGS)} (see the Makefile)."
            " */", f'#include "{name}.h"', "",
            "#if defined(__clang__)", "#define NUMFN_FP(x) _Pragma(x)", "#else", "#define NUMFN_FP(x)", "#endif", ""]
    body = ["  char *ws = (char *)workspace;" if workspace else "",
            f"  void *buffers[] = {{ {', '.join(buffers) or 'NULL'} }};",
            f"  {name}_program(buffers, {'ws' if layout.heap_arena_bytes else 'NULL'});"]
    for k in range(len(nf.checks)):
        offset, size = check_slots[nout + 2 * k]
        body += [f"  {{ const unsigned char *failed = (const unsigned char *)(ws + {offset});",
                 f"    for (int64_t k = 0; k < {max(size, 1)}; k++) if (failed[k]) return {k + 1}; }}"]
    body.append("  return 0;")
    public = [_signature(name, params, workspace) + " {", *[b for b in body if b], "}"]
    if workspace: public += ["", f"size_t {name}_workspace_size(void) {{ return {workspace}; }}"]
    native = [s for s in layout.externs if s.startswith("numfn_")]
    library_symbols = [s for s in layout.externs if not s.startswith("numfn_")]
    int_bits = next((c.int_bits for c in extern_calls(nf) if ROUTINES[c.routine].library != "native"), 64)
    routines = ([routines_source(native)] if native else []) + \
        ([linalg.linalg_source(library_symbols, int_bits, system)] if library_symbols else [])
    return "\n".join(head) + "\n" + "\n\n".join(consts + routines + [program.rstrip("\n"), "\n".join(public)]) + "\n"


def _input_params(nf, params: list[Param]) -> list[Param | None]:
    by_slot = {p.slot: p for p in params if p.role in ("in", "scalar", "inout")}
    return [by_slot.get(slot) for slot in range(len(nf.in_specs))]


def makefile(name: str, libs: tuple[str, ...] = ()) -> str:
    return f"""\
# Builds lib{name}.a and lib{name}.so from {name}.c (exported by numfn): `make`, or `make CC=gcc CFLAGS=-O2`.
# The flags in NUMFN_CFLAGS are required: -fwrapv (integers wrap as NumPy's do; without it signed overflow is
# undefined in C), -fno-strict-aliasing (the workspace holds buffers of different types at one address over a
# call), -ffp-contract=off (every float operation rounds on its own, as in NumPy: no fused multiply-adds).
CC ?= cc
CFLAGS ?= -O3
NUMFN_CFLAGS = {' '.join(REQUIRED_CFLAGS)} -fPIC

all: lib{name}.a lib{name}.so

{name}.o: {name}.c {name}.h
\t$(CC) $(CFLAGS) $(NUMFN_CFLAGS) -c {name}.c -o {name}.o

lib{name}.a: {name}.o
\t$(AR) rcs $@ {name}.o

lib{name}.so: {name}.o
\t$(CC) -shared -o $@ {name}.o {' '.join(libs + ('-lm',))}

clean:
\trm -f {name}.o lib{name}.a lib{name}.so

.PHONY: all clean
"""


def cmake(name: str, libs: tuple[str, ...] = ()) -> str:
    link = " ".join([x.removeprefix("-l") for lib in libs for x in lib.split()] + ["m"])
    return f"""\
# {name}.cmake: include() this from your CMakeLists.txt, then target_link_libraries(your_target PRIVATE {name}).
add_library({name} STATIC ${{CMAKE_CURRENT_LIST_DIR}}/{name}.c)
target_include_directories({name} PUBLIC ${{CMAKE_CURRENT_LIST_DIR}})
set_target_properties({name} PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON POSITION_INDEPENDENT_CODE ON)
# required: integers wrap as NumPy's do, the workspace reuses memory across types, no fused multiply-adds
target_compile_options({name} PRIVATE -fwrapv -fno-strict-aliasing -ffp-contract=off)
target_link_libraries({name} PUBLIC {link})
"""
