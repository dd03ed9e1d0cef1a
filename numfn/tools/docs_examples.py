"""The ```python blocks of the documentation (docs/*.md and README.md), which tests/test_docs.py runs and
benchmarks/compile_time.py times: `pages()` and `python_blocks(text)`.

A block that must not run (it needs a file, a network, minutes) is preceded by the line `<!-- docs-test: skip -->`."""
from __future__ import annotations

import os
import re

SKIP_MARKER = "<!-- docs-test: skip -->"
_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)


def pages(root: str) -> list[str]:
    """The documentation's pages under the repository `root`, as paths relative to it: docs/*.md, then README.md."""
    docs = os.path.join(root, "docs")
    return sorted(os.path.join("docs", name) for name in os.listdir(docs) if name.endswith(".md")) + ["README.md"]


def python_blocks(text: str) -> list[tuple[int, str, bool]]:
    """(line, code, skipped) of every ```python block, in order."""
    out = []
    for m in _FENCE.finditer(text):
        if m.group("lang") not in ("python", "py"): continue
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        code = "\n".join(ln[len(m.group("indent")):] for ln in m.group("code").splitlines())
        out.append((line, code, before == SKIP_MARKER))
    return out
