"""Renderers: linear kernel programs to source text (C99, LLVM IR)."""


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
