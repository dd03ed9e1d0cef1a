"""The machine code of a program as assembly text: `NumericalFunction.assembly` and `NUMFN_DUMP_ASSEMBLY=1`.

`program_assembly(backend, source)` compiles a program's source as its backend does (llvm: the same O3 pipeline for
the host CPU, then llvmlite's `emit_assembly`; c: the C compiler with numfn's flags and `-S`) and returns the
assembly; `by_function(text)` splits it into its functions ({symbol: its lines}): the entry point, each kernel the
compiler kept as a function of its own (small kernels are inlined into the entry, where their code then is), and
the bodies of parallel kernels. `dump(backend, source, name)` prints it on stderr (what the switch does for every
program compiled).
"""
from __future__ import annotations

import re
import sys

_FUNCTION_START = re.compile(r"^\s*\.type\s+([\w.$]+),\s*@function\s*$", re.M)


def program_assembly(backend: str, source: str) -> str:
    """The assembly of a whole program's `source` for this machine, as `backend` compiles it."""
    if backend == "c":
        from numfn.runtime import clang
        return clang.compile_assembly(source)
    from numfn.runtime import orcjit
    return orcjit.emit_assembly(source)


def by_function(text: str) -> dict[str, str]:
    """{function symbol: its assembly, from its `.type` directive to its `.size` directive}, in program order."""
    out: dict[str, str] = {}
    starts = list(_FUNCTION_START.finditer(text))
    for k, m in enumerate(starts):
        name = m.group(1)
        end = text.find(f".size\t{name},", m.end())
        if end < 0: end = text.find(f".size {name},", m.end())
        stop = starts[k + 1].start() if k + 1 < len(starts) else len(text)
        if end < 0 or end > stop: end = stop
        else: end = text.find("\n", end) + 1 or len(text)
        out[name] = text[m.start():end]
    return out


def dump(backend: str, source: str, name: str) -> None:
    """Print the assembly of the program `name` (NUMFN_DUMP_ASSEMBLY)."""
    text = program_assembly(backend, source)
    sys.stderr.write(f"---- assembly of {name} ({backend}) ----\n{text}\n---- end of the assembly of {name} ----\n")
    sys.stderr.flush()
