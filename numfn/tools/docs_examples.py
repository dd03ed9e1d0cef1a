"""The ```python blocks of the documentation (docs/*.md and README.md), which tests/test_docs.py runs and
benchmarks/compile_time.py times: `pages()` and `python_blocks(text)`.

A block that must not run (it needs a file, a network, minutes) is preceded by the line `<!-- docs-test: skip -->`.
A block that shows an error is preceded by `<!-- docs-test: raises NAME -->`: the examples' run skips it, and
tests/test_docs_claims.py runs it alone and checks that it raises an exception of class NAME (`raising_blocks`)."""
from __future__ import annotations

import os
import re

SKIP_MARKER = "<!-- docs-test: skip -->"
_RAISES_MARKER = re.compile(r"^<!-- docs-test: raises (?P<name>[A-Za-z_][\w.]*) -->$")
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
        out.append((line, code, before == SKIP_MARKER or _RAISES_MARKER.match(before) is not None))
    return out


def raising_blocks(text: str) -> list[tuple[int, str, str]]:
    """(line, code, exception class name) of every ```python block marked `<!-- docs-test: raises NAME -->`."""
    out = []
    for m in _FENCE.finditer(text):
        if m.group("lang") not in ("python", "py"): continue
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        marked = _RAISES_MARKER.match(before)
        if marked is None: continue
        code = "\n".join(ln[len(m.group("indent")):] for ln in m.group("code").splitlines())
        out.append((text.count("\n", 0, m.start()) + 1, code, marked.group("name")))
    return out
