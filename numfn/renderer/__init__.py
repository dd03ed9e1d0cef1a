"""Renderers: linear kernel programs to source text (C99, LLVM IR)."""
from numfn.ir.uop import Ops


def range_name(r) -> str:
    """A loop counter's name: r0, r1, ...; rb1, rb2 for block loops (their ids are negative, to nest outermost)."""
    return f"r{r.arg[0]}" if r.arg[0] >= 0 else f"rb{-r.arg[0]}"


def buffer_name(buf) -> str:
    """The name a program buffer has in generated code: out0, in1, const0, tmp2."""
    prefix = {"output": "out", "input": "in", "constant": "const", "intermediate": "tmp"}[buf.category]
    return f"{prefix}{buf.number}"


def half_bits(value) -> int:
    """The bits of a float16 value, as NumPy rounds a Python float to float16 (float16 is rendered as its bits)."""
    import numpy as np
    with np.errstate(over="ignore"):
        return int(np.array(value, np.float16).view(np.uint16))


# A kernel that other kernels of its program call (KernelProgram.shared: the same step repeated, a model's layers;
# program_build.render_kernels decides) is rendered out of line (noinline) when a loop nest of it runs at least this
# many iterations: inlined at each of its calls, the compiler optimized every copy again (a 300-statement program of
# 11 distinct kernels called 361 times: LLVM 1.9 s, out of line 0.7 s), where a call costs nothing next to the loop.
# Short kernels stay inlinable: what follows a small kernel may keep its values in registers.
OUT_OF_LINE_ITERATIONS = 64


def out_of_line(prog) -> bool:
    """Whether the renderers keep kernel program `prog` out of line (see OUT_OF_LINE_ITERATIONS)."""
    if not prog.shared: return False
    most, nest = 1, [1]
    for u in prog.uops:   # the most iterations of a loop nest, counting the loops of constant trips
        if u.op is Ops.RANGE:
            bound = u.src[-1]
            nest.append(nest[-1] * (bound.arg if bound.op is Ops.CONST else 1))
            most = max(most, nest[-1])
        elif u.op is Ops.END: nest.pop()
    return most >= OUT_OF_LINE_ITERATIONS
