"""Build an exported library with the system C compiler and call it from a generated C `main`: how the export tests
check exported code against numfn and NumPy, and how benchmarks/export_speed.py times it.

The driver reads the inputs from a binary file (each input parameter's bytes in order, as NumPy's tobytes writes
them), calls the function `repeats` times (timing each call with clock_gettime), and writes its return value, the
outputs and lengths, and the median nanoseconds per call to an output file. `run(exported, inputs)` does all of it
and returns (status, outputs, nanoseconds)."""
from __future__ import annotations

import os
import subprocess

import numpy as np

from numfn.export.library import REQUIRED_CFLAGS, Library
from numfn.runtime.clang import find_compiler

# numfn's own flags for the C backend (numfn.runtime.clang.CFLAGS) without -fPIC: numfn's results, bit for bit
NUMFN_FLAGS = ("-O3", "-march=native", "-fno-math-errno", *REQUIRED_CFLAGS)
STRICT_WARNINGS = ("-Wall", "-Wextra", "-Werror")
SANITIZE = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g")


def driver_source(lib: Library) -> str:
    """A C program calling `lib`: `driver INPUT OUTPUT REPEATS`."""
    lines = ["#define _POSIX_C_SOURCE 200112L", "#include <stdio.h>", "#include <stdlib.h>", "#include <string.h>",
             "#include <time.h>", f'#include "{lib.name}.h"', "",
             "static int64_t now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);",
             "  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec; }",
             "static int cmp(const void *a, const void *b) { int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;",
             "  return (x > y) - (x < y); }", "",
             "int main(int argc, char **argv) {",
             "  if (argc != 4) { fprintf(stderr, \"usage: driver INPUT OUTPUT REPEATS\\n\"); return 2; }",
             "  FILE *in = fopen(argv[1], \"rb\"), *out = fopen(argv[2], \"wb\");",
             "  if (!in || !out) return 2;",
             "  long repeats = atol(argv[3]);", "  if (repeats < 1) repeats = 1;"]
    args = []
    for k, p in enumerate(lib.params):
        count = max(int(np.prod(p.shape)), 1)
        if p.role == "scalar":
            lines.append(f"  {p.ctype} a{k}; if (fread(&a{k}, sizeof a{k}, 1, in) != 1) return 3;")
            args.append(f"a{k}")
        elif p.role == "length":
            lines.append(f"  int64_t a{k} = -1;")
            args.append(f"&a{k}")
        else:
            lines.append(f"  {p.ctype} *a{k} = ({p.ctype} *)calloc({count}, sizeof *a{k});")
            lines.append(f"  if (!a{k}) return 4;")
            if p.role in ("in", "inout") and int(np.prod(p.shape)):
                lines.append(f"  if (fread(a{k}, sizeof *a{k}, {count}, in) != {count}) return 3;")
            args.append(f"a{k}")
    if lib.workspace_bytes:
        lines.append(f"  void *ws = NULL; if (posix_memalign(&ws, 64, {lib.workspace_bytes})) return 4;")
        args.append("ws")
    # an in/out argument is updated by every call: the timed calls run on a copy; the first call's result is kept
    lines += ["  int64_t *times = (int64_t *)malloc(sizeof(int64_t) * (size_t)repeats);", "  if (!times) return 4;",
              "  int status = 0;",
              "  for (long r = 0; r < repeats; r++) {", "    int64_t t0 = now_ns();",
              f"    int s = {lib.name}({', '.join(args)});",
              "    times[r] = now_ns() - t0;", "    if (r == 0) status = s;"]
    for k, p in enumerate(lib.params):   # save the first call's results before later calls change in/out arguments
        if p.role == "inout" and int(np.prod(p.shape)):
            lines.append(f"    if (r == 0) {{ fwrite(a{k}, sizeof *a{k}, {int(np.prod(p.shape))}, out); }}")
    lines += ["    if (r == 0) {"]
    for k, p in enumerate(lib.params):
        if p.role == "out" and int(np.prod(p.shape)):
            lines.append(f"      fwrite(a{k}, sizeof *a{k}, {int(np.prod(p.shape))}, out);")
        elif p.role == "length": lines.append(f"      fwrite(&a{k}, sizeof a{k}, 1, out);")
    lines += ["    }", "  }", "  qsort(times, (size_t)repeats, sizeof *times, cmp);",
              "  int64_t median = times[repeats / 2];", "  fwrite(&status, sizeof status, 1, out);",
              "  fwrite(&median, sizeof median, 1, out);", "  fclose(in);", "  fclose(out);", "  free(times);"]
    lines += [f"  free(a{k});" for k, p in enumerate(lib.params) if p.role not in ("scalar", "length")]
    if lib.workspace_bytes: lines.append("  free(ws);")
    lines += ["  return 0;", "}", ""]
    return "\n".join(lines)


def build(exported, flags: tuple[str, ...] = NUMFN_FLAGS + STRICT_WARNINGS, compiler: tuple[str, ...] | None = None,
          out: str | None = None) -> str:
    """Compile the exported library and its driver into an executable (in the export's directory unless `out`);
    its path. CalledProcessError (with the compiler's messages) when either does not compile."""
    lib = exported.library
    cmd = compiler or find_compiler()
    main = os.path.join(exported.dir, f"{lib.name}_driver.c")
    with open(main, "w") as f:
        f.write(driver_source(lib))
    exe = out or os.path.join(exported.dir, f"{lib.name}_driver")
    libs = [x for lib_flags in lib.libs for x in lib_flags.split()]
    proc = subprocess.run([*cmd, *flags, "-o", exe, exported.source, main, *libs, "-lm"], capture_output=True,
                          text=True)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, proc.stdout, proc.stderr)
    return exe


def input_bytes(lib: Library, leaves: list) -> bytes:
    """The driver's input file for the argument leaves (in flattening order)."""
    parts = []
    for p in lib.params:
        if p.role in ("in", "inout", "scalar"):
            parts.append(np.ascontiguousarray(np.asarray(leaves[p.slot], dtype=p.dtype.np)).tobytes())
    return b"".join(parts)


def run(exported, exe: str, leaves: list, repeats: int = 1) -> tuple[int, list[np.ndarray], float]:
    """Run the driver `exe` on argument leaves: (return value, the in/out arguments' new values then the outputs
    (cut to their run-time lengths), median nanoseconds per call)."""
    lib = exported.library
    src, dst = os.path.join(exported.dir, "inputs.bin"), os.path.join(exported.dir, "outputs.bin")
    with open(src, "wb") as f:
        f.write(input_bytes(lib, leaves))
    proc = subprocess.run([exe, src, dst, str(repeats)], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{exe} exited with {proc.returncode}:\n{proc.stderr}")
    data = open(dst, "rb").read()
    pos, results, lengths = 0, [], {}
    order = [p for p in lib.params if p.role == "inout"] + [p for p in lib.params if p.role in ("out", "length")]
    for p in order:
        if p.role == "length":
            lengths[p.slot] = (p.axis, int(np.frombuffer(data, np.int64, 1, pos)[0]))
            pos += 8
            continue
        n = int(np.prod(p.shape))
        a = np.frombuffer(data, p.dtype.np, n, pos).reshape(p.shape).copy()
        pos += n * p.dtype.itemsize
        results.append((p, a))
    status = int(np.frombuffer(data, np.int32, 1, pos)[0])
    nanoseconds = float(np.frombuffer(data, np.int64, 1, pos + 4)[0])
    outs = []
    for p, a in results:
        if p.role == "out" and p.slot in lengths:
            axis, length = lengths[p.slot]
            a = a[(slice(None),) * axis + (slice(length),)]
        outs.append(a)
    return status, outs, nanoseconds
