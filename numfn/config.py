"""numfn's environment variables: every one is read here, switches with one parser (`flag`).

| variable | meaning |
|---|---|
| `NUMFN_DEBUG` (or `DEBUG`) | 1 compile events and times, 2 kernel times and calls per call, 3 schedules, 4 source, 5 graphs |
| `NUMFN_NOOPT` (or `NOOPT`) | switch: no kernel optimizations (no upcasts; libm calls for math functions) |
| `NUMFN_DUMP_ASSEMBLY` | switch: print the assembly of every program compiled on stderr (`nf.assembly` gives it) |
| `NUMFN_PERF_MAP` | switch: write /tmp/perf-<pid>.map (mode 0600), naming generated code for Linux `perf` |
| `NUMFN_BACKEND` | the default backend: `llvm` (default) or `c` |
| `NUMFN_CC` | the C compiler command of the C backend (default: clang, else cc, else gcc) |
| `NUMFN_THREADS` | threads for parallel kernels and svmap (default: the CPUs this process may use; 1: none) |
| `NUMFN_BEAM` | beam width of the search of each kernel's optimizations (numfn/beam; default 0: the fixed heuristics) |
| `NUMFN_BEAM_KERNEL_SECONDS` | the search's time budget per kernel (default 2 s) |
| `NUMFN_BEAM_FUNCTION_SECONDS` | the search's time budget per compiled function (default 30 s) |
| `NUMFN_CACHE_DIR` | the disk cache's directory (default: `$XDG_CACHE_HOME/numfn`, else `~/.cache/numfn`) |
| `NUMFN_DISABLE_CACHE` | switch: no disk cache |
| `NUMFN_CACHE_MAX_BYTES` | the disk cache's size cap in bytes (default 1 GiB) |
| `NUMFN_BLAS` | `none` (or a switch's off value): no BLAS/LAPACK (products are generated code) |
| `NUMFN_NO_DISPATCH_EXT` | switch, read at import: do not load the fast call extension |
| `NUMFN_NO_NATIVE_EXT` | switch, read at import: do not load the thread pool extension |

A switch is on for 1, true, yes or on, off for 0, false, no, off or empty (any case); another value is on, with a
warning. `NUMFN_DEBUG` and `NUMFN_NOOPT` take precedence over the short names `DEBUG` and `NOOPT`, which are kept
because they are what people type. Everything but the two extension switches is read when used, so tests and
users may change it at run time.
"""
from __future__ import annotations

import os

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})
BACKENDS = ("llvm", "c")


def _get(*names: str) -> str | None:
    """The value of the first of `names` that is set (an empty value counts as unset for all but the last)."""
    for i, name in enumerate(names):
        raw = os.environ.get(name)
        if raw is not None and (raw.strip() or i == len(names) - 1): return raw
    return None


def raw(name: str) -> str | None:
    """The value of one of numfn's variables as set (for reports such as `python -m numfn info`), None if unset."""
    return os.environ.get(name) or None


def flag(*names: str, default: bool = False) -> bool:
    """Whether a switch is on, read from the first of `names` that is set: 1, true, yes or on (any case) turn it
    on; 0, false, no, off or empty turn it off; unset gives `default`. Any other value is on, with a warning."""
    raw = _get(*names)
    if raw is None: return default
    word = raw.strip().lower()
    if word in FALSE_WORDS: return False
    if word not in TRUE_WORDS: _warn(f"{names[0]}={raw!r} is not a switch value (1/0, true/false, yes/no, on/off); "
                                     "taken as on")
    return True


class overriding:
    """Context manager: environment variable `name` set to `value` while it is active (numfn's own tools run
    programs under other settings: the fuzzer with NOOPT on and off); the previous value comes back after."""

    def __init__(self, name: str, value: str):
        self.name, self.value = name, value

    def __enter__(self) -> None:
        self.old = os.environ.get(self.name)
        os.environ[self.name] = self.value

    def __exit__(self, *exc) -> None:
        if self.old is None: os.environ.pop(self.name, None)
        else: os.environ[self.name] = self.old


def set_default(name: str, value: str) -> None:
    """Set environment variable `name` for this process unless the user set it (a command's own default)."""
    os.environ.setdefault(name, value)


def _warn(message: str) -> None:
    import warnings
    warnings.warn(f"numfn: {message}", RuntimeWarning, stacklevel=3)


# ---- debugging ------------------------------------------------------------------------------------------------------

def debug_level() -> int:
    """NUMFN_DEBUG, else DEBUG: 0 (nothing) to 5 (graphs; higher is the same as 5); unset or empty is 0.

    A NUMFN_DEBUG value that is not a whole number from 0 up raises ValueError naming the variable and the accepted
    values (a typo is not silently ignored). The short name DEBUG is shared with other tools (`DEBUG=express:*`),
    so a value of it that is no level is ignored (0), with a warning once per value."""
    raw = _get("NUMFN_DEBUG", "DEBUG")
    if raw is None or not raw.strip(): return 0
    try:
        level = int(raw)
    except ValueError:
        level = -1
    if level >= 0: return level
    name = "NUMFN_DEBUG" if os.environ.get("NUMFN_DEBUG", "").strip() else "DEBUG"
    if name == "NUMFN_DEBUG":
        raise ValueError(f"NUMFN_DEBUG={raw!r} is not a debug level: use a whole number, 0 (off) to 5 "
                         "(1 compile events, 2 kernel times, 3 schedules, 4 source, 5 graphs)")
    if raw not in _IGNORED_DEBUG_VALUES:
        _IGNORED_DEBUG_VALUES.add(raw)
        _warn(f"DEBUG={raw!r} is not a numfn debug level (0 to 5): ignored")
    return 0


_IGNORED_DEBUG_VALUES: set[str] = set()


def noopt() -> bool:
    """NUMFN_NOOPT, else NOOPT: kernel optimizations off."""
    return flag("NUMFN_NOOPT", "NOOPT")


def dump_assembly() -> bool:
    """NUMFN_DUMP_ASSEMBLY: print the machine code (assembly) of every program compiled, on stderr."""
    return flag("NUMFN_DUMP_ASSEMBLY")


def perf_map() -> bool:
    """NUMFN_PERF_MAP: append the addresses of generated code to /tmp/perf-<pid>.map, for Linux `perf`."""
    return flag("NUMFN_PERF_MAP")


# ---- compilation ----------------------------------------------------------------------------------------------------

def default_backend() -> str:
    """NUMFN_BACKEND: the backend of jit functions that do not name one (llvm unless set)."""
    raw = (os.environ.get("NUMFN_BACKEND") or "").strip().lower()
    if not raw: return "llvm"
    if raw not in BACKENDS: raise ValueError(f"NUMFN_BACKEND={raw!r}: unknown backend (choose from {BACKENDS})")
    return raw


def progress_enabled() -> bool:
    """NUMFN_PROGRESS (on unless 0/false/no/off): a compilation past a second prints a progress line."""
    return flag("NUMFN_PROGRESS", default=True)


def contained_compiles() -> bool:
    """NUMFN_CONTAIN (on unless 0): LLVM compiles in a forked compile server (numfn/runtime/contain.py)."""
    return flag("NUMFN_CONTAIN", default=True)


def c_compiler() -> str | None:
    """NUMFN_CC: the C compiler command (with arguments), or None to search for clang, cc and gcc."""
    return os.environ.get("NUMFN_CC") or None


def blas_disabled() -> bool:
    """NUMFN_BLAS=none (or 0, off, no, false): numfn calls no BLAS/LAPACK library."""
    return (os.environ.get("NUMFN_BLAS") or "").strip().lower() in FALSE_WORDS - {""} | {"none"}


# ---- the disk cache -------------------------------------------------------------------------------------------------

def cache_directory() -> str:
    """NUMFN_CACHE_DIR, else $XDG_CACHE_HOME/numfn (an absolute XDG_CACHE_HOME only, as the XDG spec says), else
    ~/.cache/numfn."""
    configured = os.environ.get("NUMFN_CACHE_DIR")
    if configured: return os.path.abspath(os.path.expanduser(configured))
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg): return os.path.join(xdg, "numfn")
    return os.path.join(os.path.expanduser("~"), ".cache", "numfn")


def cache_disabled() -> bool:
    """NUMFN_DISABLE_CACHE: no disk cache."""
    return flag("NUMFN_DISABLE_CACHE")


def _byte_count(name: str) -> int | None:
    """The byte count environment variable `name` holds (None when unset or empty); ValueError, naming the
    variable, when it holds something else."""
    raw = os.environ.get(name, "").strip()
    if not raw: return None
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0: raise ValueError(f"{name}={raw!r} is not a byte count")
    return value


def cache_max_bytes() -> int | None:
    """NUMFN_CACHE_MAX_BYTES: the cache's size cap (None when unset: the cache's default, 1 GiB). ValueError, naming
    the variable, when it is not a byte count."""
    return _byte_count("NUMFN_CACHE_MAX_BYTES")


# ---- threads --------------------------------------------------------------------------------------------------------

def threads() -> int | None:
    """NUMFN_THREADS: the number of threads for parallel kernels and svmap (1: none); None when unset or invalid."""
    raw = os.environ.get("NUMFN_THREADS", "").strip()
    if not raw: return None
    try:
        return max(1, int(raw))
    except ValueError:
        _warn(f"ignoring NUMFN_THREADS={raw!r}: not a whole number")
        return None


# ---- BEAM: the search of each kernel's optimizations (numfn/beam) ------------------------------------------------

BEAM_KERNEL_SECONDS = 2.0
BEAM_FUNCTION_SECONDS = 30.0


def beam() -> int:
    """NUMFN_BEAM: how many candidates the search of each kernel's optimizations keeps per step (0, the default:
    no search, the fixed heuristics); a value that is not a whole number warns and counts as 0."""
    raw = os.environ.get("NUMFN_BEAM", "").strip()
    if not raw: return 0
    try:
        return max(0, int(raw))
    except ValueError:
        _warn(f"ignoring NUMFN_BEAM={raw!r}: not a whole number")
        return 0


def _seconds(name: str, raw: str, default: float) -> float:
    """The number of seconds variable `name` holds (`raw`), else `default` (with a warning if it is set)."""
    raw = raw.strip()
    if not raw: return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        _warn(f"ignoring {name}={raw!r}: not a number of seconds")
        return default
    return value


def beam_kernel_seconds() -> float:
    """NUMFN_BEAM_KERNEL_SECONDS: the time the search may spend on one kernel (default 2)."""
    return _seconds("NUMFN_BEAM_KERNEL_SECONDS", os.environ.get("NUMFN_BEAM_KERNEL_SECONDS", ""), BEAM_KERNEL_SECONDS)


def beam_function_seconds() -> float:
    """NUMFN_BEAM_FUNCTION_SECONDS: the time the search may spend on all kernels of one function (default 30)."""
    return _seconds("NUMFN_BEAM_FUNCTION_SECONDS", os.environ.get("NUMFN_BEAM_FUNCTION_SECONDS", ""),
                    BEAM_FUNCTION_SECONDS)


# ---- native extensions (read once, at import) ------------------------------------------------------------------

def no_native_extension() -> bool:
    """NUMFN_NO_NATIVE_EXT: do not load the thread pool extension (simulates an install without a C compiler)."""
    return flag("NUMFN_NO_NATIVE_EXT")


KEEP_MEMORY_DEFAULT = 256 << 20


def keep_memory() -> int:
    """NUMFN_KEEP_MEMORY: bytes of freed large outputs kept for the next calls' outputs (default 256 MiB; 0: none;
    see numfn/runtime/_dispatch.c). Read when numfn is imported, so an invalid value warns and keeps the default."""
    try:
        value = _byte_count("NUMFN_KEEP_MEMORY")
    except ValueError as e:
        _warn(f"ignoring {e}")
        return KEEP_MEMORY_DEFAULT
    return KEEP_MEMORY_DEFAULT if value is None else value


def no_dispatch_extension() -> bool:
    """NUMFN_NO_DISPATCH_EXT: do not load the fast call extension; every call takes the Python path."""
    return flag("NUMFN_NO_DISPATCH_EXT")
