"""numfn's native routines as portable C99 for exported code: np.sort's, np.argsort's and np.partition's rows.

numfn's own sorts (numfn/runtime/csrc/sort.c) are not self-contained C99: vector extensions, a pthread_once table
of sorting networks, the thread pool. An export gets these instead: the same interface and the same order (NumPy's:
ascending, stable, NaNs last in input order, -0.0 and +0.0 equal and kept in input order), so the results are
bitwise numfn's, by a stable insertion sort for short rows and a bottom-up merge sort through the scratch row
numfn plans for longer ones. Every element is compared by an order-preserving unsigned key, as sort.c does.
np.partition (and median, percentile: numfn_select_<t>, which has no scratch) sorts each row in place, by insertion
up to 32 elements and by heapsort above: every kth position holds what a sort puts there, as NumPy requires, but
the other positions, and which of equal elements (-0.0 and +0.0, NaNs of other payloads) lands at a kth, may differ
from numfn's introselect.

`SUPPORTED` lists the routines (numfn.ir.extern.ROUTINES keys) an export can include; `routine_source(symbol)` is
one symbol's C; `direct_calls(source, symbols)` turns a rendered extern kernel's calls through the externs table
into direct calls of those functions (no function pointers: ISO C, and no call through a mismatched type)."""
from __future__ import annotations

import re

SUPPORTED = frozenset({"sort", "argsort", "select"})

# suffix -> (C type, key expression of `x` as uint64_t): an unsigned integer whose order is NumPy's sort order
_KEYS = {
    "u8": ("uint8_t", "(uint64_t)x"),
    "i8": ("int8_t", "(uint64_t)(uint8_t)((uint8_t)x ^ 0x80u)"),
    "u16": ("uint16_t", "(uint64_t)x"),
    "i16": ("int16_t", "(uint64_t)(uint16_t)((uint16_t)x ^ 0x8000u)"),
    "u32": ("uint32_t", "(uint64_t)x"),
    "i32": ("int32_t", "(uint64_t)((uint32_t)x ^ 0x80000000u)"),
    "u64": ("uint64_t", "x"),
    "i64": ("int64_t", "(uint64_t)x ^ 0x8000000000000000ull"),
}
_FLOAT_KEYS = {   # suffix -> (C type, its bits' type, sign bit, exponent mask); float16 is its bits already
    "f16": ("uint16_t", "uint16_t", "0x8000u", "0x7c00u"),
    "f32": ("float", "uint32_t", "0x80000000u", "0x7f800000u"),
    "f64": ("double", "uint64_t", "0x8000000000000000ull", "0x7ff0000000000000ull"),
}


def _key_function(t: str) -> tuple[str, str]:
    """(C type, `static inline uint64_t export_key_<t>(T x)`)."""
    if t in _KEYS:
        ctype, expr = _KEYS[t]
        return ctype, f"static inline uint64_t export_key_{t}({ctype} x) {{ return {expr}; }}"
    ctype, bits, sign, exp = _FLOAT_KEYS[t]
    get = "x" if t == "f16" else f"((union {{ {ctype} a; {bits} b; }}){{ .a = x }}).b"
    return ctype, "\n".join([
        f"static inline uint64_t export_key_{t}({ctype} x) {{",
        f"  {bits} b = {get};",
        f"  if ((b & ({bits})~{sign}) > {exp}) return UINT64_MAX;   /* every NaN: last, all equal */",
        f"  if ((b & ({bits})~{sign}) == 0) b = 0;   /* -0.0 and +0.0: equal */",
        f"  return (uint64_t)((b & {sign}) ? ({bits})~b : ({bits})(b | {sign}));",
        "}"])


def _insertion_sort(ctype: str, key: str, condition: str, what: str) -> list[str]:
    """The C lines sorting `row` (n elements of `ctype`) in place by insertion, stable, by the key function `key`,
    when `condition` holds (then the row is done: `continue`)."""
    return [f"    if ({condition}) {{   /* {what} */",
            "      for (int64_t i = 1; i < n; i++) {",
            f"        {ctype} x = row[i];",
            f"        uint64_t kx = {key}(x);",
            "        int64_t j = i;",
            f"        while (j > 0 && {key}(row[j - 1]) > kx) {{ row[j] = row[j - 1]; j--; }}",
            "        row[j] = x;", "      }", "      continue;", "    }"]


def routine_source(symbol: str) -> tuple[str, str]:
    """The C99 of one routine symbol (numfn_sort_<t> or numfn_argsort_<t>): (its key function, the routine as a
    static function taking every argument as `void *`, as numfn's extern calls pass everything by reference)."""
    m = re.fullmatch(r"numfn_(sort|argsort|select)_(\w+)", symbol)
    if m is None: raise KeyError(symbol)
    kind, t = m.groups()
    ctype, key = _key_function(t)
    k = f"export_key_{t}"
    if kind == "select":   # the whole row sorted in place: every kth is in its place
        body = [
            f"static void {symbol}(void *data_, void *kth_, void *rows_, void *n_, void *nkth_) {{",
            f"  {ctype} *data = ({ctype} *)data_;",
            "  int64_t rows = *(const int64_t *)rows_, n = *(const int64_t *)n_;",
            "  (void)kth_; (void)nkth_;",
            "  for (int64_t r = 0; r < rows; r++) {",
            f"    {ctype} *row = data + r * n;",
            *_insertion_sort(ctype, k, "n <= 32", "insertion sort"),
            "    for (int64_t end = n, start = n / 2; end > 1;) {   /* heapsort: a max-heap of keys */",
            "      if (start > 0) start--;",
            "      else {",
            "        end--;",
            f"        {ctype} t = row[end]; row[end] = row[0]; row[0] = t;",
            "      }",
            "      int64_t root = start;",
            "      for (int64_t child; (child = 2 * root + 1) < end; root = child) {",
            f"        if (child + 1 < end && {k}(row[child]) < {k}(row[child + 1])) child++;",
            f"        if ({k}(row[root]) >= {k}(row[child])) break;",
            f"        {ctype} t = row[root]; row[root] = row[child]; row[child] = t;",
            "      }", "    }", "  }", "}"]
    elif kind == "sort":
        body = [
            f"static void {symbol}(void *data_, void *scratch_, void *rows_, void *n_, void *room_) {{",
            f"  {ctype} *data = ({ctype} *)data_, *scratch = ({ctype} *)scratch_;",
            "  int64_t rows = *(const int64_t *)rows_, n = *(const int64_t *)n_, room = *(const int64_t *)room_;",
            "  for (int64_t r = 0; r < rows; r++) {",
            f"    {ctype} *row = data + r * n;",
            *_insertion_sort(ctype, k, "n <= 32 || room < n", "stable insertion sort"),
            f"    {ctype} *src = row, *dst = scratch;   /* bottom-up merge sort through one scratch row */",
            "    for (int64_t w = 1; w < n; w *= 2) {",
            "      for (int64_t lo = 0; lo < n; lo += 2 * w) {",
            "        int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;",
            "        int64_t i = lo, j = mid, o = lo;",
            f"        while (i < mid && j < hi) dst[o++] = {k}(src[j]) < {k}(src[i]) ? src[j++] : src[i++];",
            "        while (i < mid) dst[o++] = src[i++];", "        while (j < hi) dst[o++] = src[j++];", "      }",
            f"      {ctype} *t = src; src = dst; dst = t;", "    }",
            "    if (src != row) for (int64_t i = 0; i < n; i++) row[i] = src[i];", "  }", "}"]
    else:
        body = [
            f"static void {symbol}(void *keys_, void *index_, void *scratch_, void *rows_, void *n_, void *room_) {{",
            f"  const {ctype} *keys = (const {ctype} *)keys_;",
            "  int64_t *index = (int64_t *)index_, *scratch = (int64_t *)scratch_;   /* uint64 words: same object */",
            "  int64_t rows = *(const int64_t *)rows_, n = *(const int64_t *)n_, room = *(const int64_t *)room_;",
            "  for (int64_t r = 0; r < rows; r++) {",
            f"    const {ctype} *row = keys + r * n;",
            "    int64_t *pos = index + r * n;",
            "    for (int64_t i = 0; i < n; i++) pos[i] = i;",
            "    if (n <= 32 || room < n) {   /* stable insertion sort of the positions */",
            "      for (int64_t i = 1; i < n; i++) {",
            "        int64_t p = pos[i], j = i;",
            f"        uint64_t kp = {k}(row[p]);",
            f"        while (j > 0 && {k}(row[pos[j - 1]]) > kp) {{ pos[j] = pos[j - 1]; j--; }}",
            "        pos[j] = p;", "      }", "      continue;", "    }",
            "    int64_t *src = pos, *dst = scratch;",
            "    for (int64_t w = 1; w < n; w *= 2) {",
            "      for (int64_t lo = 0; lo < n; lo += 2 * w) {",
            "        int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;",
            "        int64_t i = lo, j = mid, o = lo;",
            f"        while (i < mid && j < hi) dst[o++] = {k}(row[src[j]]) < {k}(row[src[i]]) ? src[j++] : src[i++];",
            "        while (i < mid) dst[o++] = src[i++];", "        while (j < hi) dst[o++] = src[j++];", "      }",
            "      int64_t *t = src; src = dst; dst = t;", "    }",
            "    if (src != pos) for (int64_t i = 0; i < n; i++) pos[i] = src[i];", "  }", "}"]
    return key, "\n".join(body)


def routines_source(symbols) -> str:
    """The C of every routine in `symbols`, their key functions once each."""
    keys: list[str] = []
    bodies = []
    for symbol in symbols:
        key, body = routine_source(symbol)
        if key not in keys: keys.append(key)
        bodies.append(body)
    return "\n\n".join(keys + bodies)


_TABLE_CALL = re.compile(r"\(\(void \(\*\)\([^()]*\)\)externs\[(\d+)\]\)\(")
_EXTERNS_PARAM = re.compile(r"^(static void \w+\(void \*const \*externs[^\n]*\) \{)$", re.M)


def direct_calls(source: str, symbols: tuple[str, ...]) -> str:
    """A rendered extern kernel (numfn.renderer.c.render_extern) calling the routines by name: each call through
    the externs table becomes a direct call, and the table parameter, now unused, is marked so."""
    source = _TABLE_CALL.sub(lambda m: f"{symbols[int(m.group(1))]}(", source)
    return _EXTERNS_PARAM.sub(lambda m: f"{m.group(1)}\n  (void)externs;", source)
