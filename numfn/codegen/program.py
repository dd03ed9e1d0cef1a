"""The codegen driver: a scheduled kernel becomes a linear program a renderer can print."""
from __future__ import annotations

from dataclasses import dataclass

from numfn import debug
from numfn.codegen.decompose import decompositions
from numfn.codegen.linearize import expand_reduces, linearize
from numfn.codegen.lower import LoweredKernel
from numfn.codegen.transcendental import transcendental
from numfn.symbolic import symbolic
from numfn.uop import Ops, UOp, format_node, graph_rewrite


@dataclass(frozen=True)
class Program:
    """One kernel ready to render: its parameters (BUFFER nodes, written ones first) and its instructions."""
    name: str
    params: tuple[UOp, ...]
    uops: tuple[UOp, ...]

    def __str__(self) -> str:
        """The instructions in execution order, indented by loop depth; buffers and constants inline."""
        names = {p: repr(p.arg) for p in self.params}
        lines, depth = [f"{self.name}({', '.join(names.values())})"], 1
        for u in self.uops:
            if u.op is Ops.END:
                depth -= 1
                continue
            lines.append("  " * depth + format_node(u, names, f"%{len(lines) - 1}").strip())
            if u.op is Ops.RANGE: depth += 1
        return "\n".join(lines)


def build_program(name: str, params: tuple[UOp, ...], lowered: LoweredKernel) -> Program:
    sink = graph_rewrite(lowered.sink, symbolic)
    sink = expand_reduces(sink)
    rules = decompositions + symbolic if debug.noopt() else decompositions + transcendental + symbolic
    sink = graph_rewrite(sink, rules)
    return Program(name, params, tuple(linearize(sink)))
