"""numfn.export's C as a reader sees it: each kernel's comment names the user's Python lines it computes
(numfn.export.provenance), intermediate buffers holding an assigned value carry the variable's name, and the
workspace contract (name_workspace_size, the caller's scratch memory) holds: the function computes NumPy's result
in any workspace of that size, here filled with garbage first and checked under the address sanitizer."""
from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import numfn
from numfn.export import driver

pytestmark = pytest.mark.skipif(not (os.environ.get("NUMFN_CC") or shutil.which("clang") or shutil.which("cc")),
                                reason="export tests build C: no C compiler (clang or cc) on PATH")


def normalized(x, w):
    h = np.tanh(x @ w)
    s = h.sum(axis=1)
    y = h / s[:, None]
    return y, s.max()


def _line(fn, text):
    """The file line number of `text` in fn's source."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _kernel_comments(source: str) -> dict[str, str]:
    """kernel name -> its comment (the comment right above each kernel's function)."""
    return {m.group(1): m.group(0) for m in re.finditer(r"/\* (\w+): (?:computes|reads)[^*]*(?:\*(?!/)[^*]*)*\*/",
                                                        source)}


def test_kernel_comments_name_the_python_lines(tmp_path):
    rng = np.random.default_rng(0)
    x, w = rng.random((8, 4)), rng.random((4, 5))
    exported = numfn.export(normalized, x, w, dir=str(tmp_path))
    source = exported.library.source
    comments = _kernel_comments(source)
    assert comments, source
    ln = {t: _line(normalized, t) for t in ("h = np.tanh", "s = h.sum", "y = h / s", "return y")}
    every = " ".join(comments.values())
    for text, line in ln.items():   # every line that computes something is some kernel's
        assert f"test_export_c.py:{line} in normalized: " in every, (text, every)
    # the kernel writing the output y says it computes y's line, and nothing computes the argument lines
    writer = next(c for c in comments.values() if "writes out0" in c)
    assert f":{ln['y = h / s']} in normalized: y = h / s[:, None]" in writer
    assert "def normalized" not in every
    # the row sums are stored once, in a buffer named after the variable
    assert re.search(r"\bs_tmp\d+\b", source)
    status, (y, m), _ = driver.run(exported, driver.build(exported), [x, w])
    assert status == 0
    np.testing.assert_allclose(y, normalized(x, w)[0], rtol=1e-12)
    np.testing.assert_allclose(m, normalized(x, w)[1], rtol=1e-12)


def comment_breaker(x):
    y = x * 2.0  # a comment with */ and ??= in it: nothing may end the C comment or form a trigraph
    return y + 1.0


def test_comment_text_cannot_break_the_c(tmp_path):
    exported = numfn.export(comment_breaker, np.ones(4), dir=str(tmp_path))
    source = exported.library.source
    assert "* /" in source and "*/ and" not in source
    status, (out,), _ = driver.run(exported, driver.build(exported, flags=driver.NUMFN_FLAGS + driver.STRICT_WARNINGS
                                                           + ("-Wtrigraphs", "-pedantic")), [np.arange(4.0)])
    assert status == 0 and out.tolist() == [1.0, 3.0, 5.0, 7.0]


def sorted_scratch(x):
    """Needs scratch memory: intermediates and the sort's scratch row."""
    z = np.exp(x) - 1.0
    return np.sort(z, axis=-1), np.linalg.solve(x[:, :40] + 40 * np.eye(40), z[:, :3])


def test_workspace_size_function_and_caller_memory(tmp_path):
    """name_workspace_size() says how much scratch the call needs; any memory of that size works: the driver
    fills it with garbage first (posix_memalign gives uninitialised memory; here 0xAB bytes) and the sanitized
    build reports any access beyond it."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 300))
    exported = numfn.export(sorted_scratch, x, dir=str(tmp_path))
    lib = exported.library
    assert lib.workspace_bytes > 0
    assert "size_t sorted_scratch_workspace_size(void);" in lib.header
    assert f"size_t sorted_scratch_workspace_size(void) {{ return {lib.workspace_bytes}; }}" in lib.source
    assert "malloc" not in lib.source
    main = os.path.join(exported.dir, "main.c")
    with open(main, "w") as f:
        f.write(driver.driver_source(lib).replace(
            "if (posix_memalign(&ws, 64, ", "if (posix_memalign(&ws, 64, sorted_scratch_workspace_size()) == 0) "
            "memset(ws, 0xAB, sorted_scratch_workspace_size()); if (!ws || 0 * ("))
    flags = ("-O1", *driver.REQUIRED_CFLAGS, *driver.STRICT_WARNINGS, *driver.SANITIZE)
    exe = os.path.join(exported.dir, "ws_driver")
    proc = subprocess.run([*driver.find_compiler(), *flags, "-o", exe, exported.source, main, "-lm"],
                          capture_output=True, text=True)
    if proc.returncode and "sanitize" in proc.stderr: pytest.skip("the C compiler has no sanitizers")
    assert proc.returncode == 0, proc.stderr
    status, (s, solved), _ = driver.run(exported, exe, [x])
    assert status == 0
    want_s, want_solved = sorted_scratch(x)
    np.testing.assert_allclose(s, want_s, rtol=1e-13)   # (numfn's exp: within an ulp of NumPy's)
    np.testing.assert_allclose(solved, want_solved, rtol=1e-10, atol=1e-12)
