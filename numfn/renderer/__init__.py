"""Renderers: linear kernel programs to source text (C99, LLVM IR)."""


def buffer_name(buf) -> str:
    """The name a program buffer has in generated code: out0, in1, const0, tmp2."""
    prefix = {"output": "out", "input": "in", "constant": "const", "intermediate": "tmp"}[buf.category]
    return f"{prefix}{buf.number}"
