"""The positive control of tools/sanitize.sh: code built the way numfn builds the C backend's programs (NUMFN_CC)
reports an out-of-bounds read and an oversized shift, so a run without reports means the checks were there.

    tools/sanitize.sh python tools/sanitize_control.py     # then: asan.* and ubsan.* files in $SANITIZE_LOG
"""
import ctypes
import os
import tempfile

import numpy as np

from numfn.runtime import clang

SOURCE = r"""
#include <stdint.h>
int64_t control(const int64_t *a, int64_t n, int32_t s) { return a[n] + (int64_t)(1 << s); }
"""

if __name__ == "__main__":
    shared = clang.link_shared(clang.compile_object(SOURCE))
    with tempfile.NamedTemporaryFile(suffix=".so", delete=False) as f: f.write(shared)
    lib = ctypes.CDLL(f.name)
    os.unlink(f.name)
    lib.control.restype = ctypes.c_int64
    lib.control.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32]
    a = np.arange(4, dtype=np.int64)
    lib.control(a.ctypes.data, 4, 40)   # a[4] is past the end; 1 << 40 overflows an int
    print("control ran: the sanitizers should have reported an out-of-bounds read and a shift")
