"""Which of the user's Python lines each kernel of an exported program computes, for the comment above each kernel
in the exported C (numfn.export.library), and the user's variable names for the buffers that hold them.

The graph does not record source lines, so `kernel_sources(nf)` traces the function again with a profile hook on
UOp's constructor: every node the trace builds is attributed to the innermost stack frame outside numfn and NumPy
(numfn.errors.user_location: the line of the user's code that made it). The scheduler's kernels hold rewritten
graphs (inputs and realized values become buffers), so a kernel's nodes are matched to the traced ones by what
they compute: op, dtype, argument and shape. A kernel's lines are those of its nodes: where one node matches nodes
of several lines (the same operation written twice), those lines count only when no other node of the kernel names
one of them.

`kernel_sources(nf, locations)` -> {kernel name: KernelSource}: its lines ('file:line in function: source', in line
order). `buffer_variables(nf, locations)` -> {intermediate buffer's name: the user's variable}: a buffer that a
kernel stores the value of an assignment into (the last operation traced on a line `h = np.tanh(x @ w)`) is named
after its variable (`h`), where no other assignment's value is computed the same way. `locations` is
`traced_locations(nf)`."""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, replace

from numfn.errors import user_location
from numfn.ir.primitives import MOVEMENT
from numfn.ir.uop import Ops, UOp
from numfn.ir.walk import toposort

_LOCATION = re.compile(r"^(?P<file>.*):(?P<line>\d+) in (?P<function>[^:]+)(?:: (?P<text>.*))?$")
_ASSIGNED = re.compile(r"^([A-Za-z_]\w*)\s*(?:\[[^=]*\])?\s*(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)", re.ASCII)
# nodes that are data rather than computation (they match anything: not evidence of a line)
_DATA = {Ops.BUFFER, Ops.PARAM, Ops.CONTIGUOUS, Ops.SINK, Ops.STORE, Ops.RESULT, Ops.CONST} | set(MOVEMENT)


@dataclass(frozen=True)
class KernelSource:
    lines: tuple[str, ...]

    def comment(self, limit: int = 3) -> str:
        """'computes file:line in function: source' for up to `limit` lines, ASCII, safe inside a C comment."""
        shown = [_short(where) for where in self.lines[:limit]]
        more = f" (and {len(self.lines) - limit} more lines)" if len(self.lines) > limit else ""
        text = "computes " + "; ".join(shown) + more if shown else ""
        text = text.encode("ascii", "backslashreplace").decode().replace("*/", "* /").replace("??", "?\\?")
        return text


def _short(location: str) -> str:
    """A location with its file's name rather than its path."""
    m = _LOCATION.match(location)
    if m is None: return location
    text = f": {m.group('text')}" if m.group("text") else ""
    return f"{os.path.basename(m.group('file'))}:{m.group('line')} in {m.group('function')}{text}"


def _key(u: UOp):
    arg = u.arg
    try:
        hash(arg)
    except TypeError:
        arg = repr(arg)
    return (u.op, u.dtype, arg, u.shape)


def traced_locations(nf) -> dict[UOp, str]:
    """Each node of a new trace of `nf`'s function -> where in the user's code it was first built."""
    target = UOp.__new__.__code__
    found: dict[UOp, str] = {}

    def hook(frame, event, arg):
        if event == "return" and frame.f_code is target and isinstance(arg, UOp) and arg not in found:
            found[arg] = user_location()

    retrace(nf, hook)
    return found


def retrace(nf, hook) -> None:
    """Trace `nf`'s function again (a fresh NumericalFunction) with `hook` as the profile function, to learn where
    in the user's code things were built (the graph does not record source lines). A failure is ignored: only the
    hook's findings are wanted, and the first trace succeeded."""
    old = sys.getprofile()
    sys.setprofile(hook)
    try:
        _ = replace(nf).function_graph
    except Exception:   # noqa: BLE001 - see above
        pass
    finally:
        sys.setprofile(old)


def _order(location: str) -> tuple:
    m = _LOCATION.match(location)
    return (m.group("file"), int(m.group("line"))) if m else (location, 0)


def kernel_sources(nf, locations: dict[UOp, str]) -> dict[str, KernelSource]:
    from numfn.schedule.items import ExternKernel, Kernel, all_items
    by_key: dict[tuple, set[str]] = {}
    for node, where in locations.items():
        if node.op in _DATA or where == "<unknown location>": continue
        by_key.setdefault(_key(node), set()).add(where)
    out = {}
    for item in all_items(nf.schedule):
        kernel = item.kernel
        if isinstance(kernel, Kernel): nodes = toposort([kernel.ast])
        elif isinstance(kernel, ExternKernel): nodes = [kernel.node]
        else: continue
        candidates = [by_key[_key(u)] for u in nodes if u.op not in _DATA and _key(u) in by_key]
        chosen = set().union(*[c for c in candidates if len(c) == 1]) if candidates else set()
        for c in candidates:
            if len(c) > 1 and not c & chosen: chosen |= c
        out[kernel.name] = KernelSource(tuple(sorted(chosen, key=_order)))
    return out


def buffer_variables(nf, locations: dict[UOp, str]) -> dict[str, str]:
    from numfn.renderer import buffer_name
    from numfn.schedule.items import Kernel, all_items
    last: dict[str, UOp] = {}   # per location: the last operation traced there
    for node, where in locations.items():
        if node.op not in _DATA: last[where] = node
    variables: dict[tuple, set[str]] = {}
    for where, node in last.items():
        m = _LOCATION.match(where)
        assigned = _ASSIGNED.match((m.group("text") or "") if m else "")
        if assigned: variables.setdefault(_key(node), set()).add(assigned.group(1))
    names: dict[str, str] = {}
    for item in all_items(nf.schedule):
        if not isinstance(item.kernel, Kernel): continue
        for store in item.kernel.ast.src:
            buf, value = store.src[0], store.src[1]
            while value.op in MOVEMENT and value.src: value = value.src[0]
            found = variables.get(_key(value), set())
            if buf.arg.category == "intermediate" and len(found) == 1: names[buffer_name(buf.arg)] = found.pop()
    return names
