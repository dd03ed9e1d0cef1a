"""Run-time printing and Python callbacks from compiled code: `numfn.debug.print` and `numfn.debug.callback`.

`print(fmt, *args, **kwargs)` prints `fmt.format(*args, **kwargs)` when the compiled program runs, with the values
the arrays have then (inside a native loop: at every iteration, in order); `callback(fn, *args, **kwargs)` calls
`fn` with NumPy arrays at run time. Outside a trace both act at once (print prints, callback calls).

How: a call is an extern call (numfn/ir/extern.py, routine "callback") whose table entry is a ctypes trampoline made
while tracing (its address is registered in `numfn.extern.CALLBACK_ADDRESSES` under the call's symbol, which the
program's externs table takes when it is loaded). Native code calls the trampoline with a pointer to each input's
buffer (the scheduler passes them contiguous); ctypes takes the GIL, the trampoline copies each buffer into a NumPy
array and calls Python. The call's one result is a bool token the trampoline sets to False. Ordering and liveness
come from numfn's checks (numfn.trace.record.Check): the token is registered as a check that never fails, so the
call is kept although nothing reads its value, it is loop state inside loops (like every check: run per iteration),
and each call takes the latest check of its trace (or of the enclosing one, inside a loop body or a branch) as one
more input, which orders calls in program order, the calls in a loop after those before it and before those after.

The key of a print (its symbol) is the format, the static arguments' repr and the arrays' shapes and dtypes, so the
same print in another process is the same program (loaded from the disk cache). A callback's key names its function
by module, qualified name and a number telling apart the distinct function objects of that name this process has
staged (0 for the first): not by `id`, which differs between processes, so the same program in another process has
the same key and loads from the disk cache too. The object code holds no address of Python's: a callback is an
entry of the program's externs table, filled when the program is loaded from the trampolines this process's trace
registered (a cache lookup traces the function first). Two objects of one name get different numbers, so a
program always calls the function its own trace was given.
"""
from __future__ import annotations

import builtins
import ctypes
import hashlib
import math
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from numfn import debug
from numfn.dtype import dtypes
from numfn.extern import CALLBACK_ADDRESSES
from numfn.ir.extern import CALLBACK_PREFIX, ExternCall
from numfn.ir.uop import Ops, UOp
from numfn.pytree import flatten, unflatten
from numfn.trace.record import TraceRecord, current_record, new_effect_serial
from numfn.trace.tensor import Tensor, add_check

_REGISTERING = threading.Lock()
# ctypes function objects of the trampolines: kept alive for the process (tables of loaded programs point at them)
_TRAMPOLINES: dict[str, Any] = {}

# dtypes whose buffers hold the NumPy representation as is (others are passed as float64 or int64 and converted back)
_AS_IS = {dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32,
          dtypes.int64, dtypes.uint64, dtypes.float32, dtypes.float64}


def _is_array(x) -> bool:
    return isinstance(x, (Tensor, np.ndarray, np.generic, bool, int, float, complex))


def _array_at(address: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A copy of the row-major array of `shape` and `dtype` at `address` (the program reuses its memory)."""
    n = math.prod(shape)
    if n == 0: return np.empty(shape, dtype)
    raw = (ctypes.c_char * (n * dtype.itemsize)).from_address(address)
    return np.frombuffer(memoryview(raw), dtype=dtype, count=n).reshape(shape).copy()


def _transfer(t: Tensor) -> tuple[list[Tensor], Callable[[list[np.ndarray]], np.ndarray]]:
    """The tensors a traced value is passed as, and how Python rebuilds the value from their arrays: a complex value
    as its two parts, a dtype whose buffer is not NumPy's representation as float64 or int64."""
    dt = t.uop.dtype
    want = np.dtype(dt.np)
    if dt.is_complex:
        return [t.real.astype(np.float64), t.imag.astype(np.float64)], lambda a: (a[0] + 1j * a[1]).astype(want)
    if dt in _AS_IS: return [t], lambda a: a[0]
    wide = np.float64 if dt.is_float else np.int64
    return [t.astype(wide)], lambda a: a[0].astype(want)


def _trampoline(key: str, fn: Callable[[list[np.ndarray]], None], specs: list[tuple[tuple[int, ...], np.dtype]],
                ninputs: int) -> None:
    """Register (once per key) the native-callable function of a callback: (token, *inputs) pointers."""
    symbol = CALLBACK_PREFIX + key
    with _REGISTERING:   # (two threads tracing one print: one trampoline, whose address never changes)
        if symbol not in CALLBACK_ADDRESSES: _register(symbol, key, fn, specs, ninputs)


def _register(symbol: str, key: str, fn: Callable[[list[np.ndarray]], None],
              specs: list[tuple[tuple[int, ...], np.dtype]], ninputs: int) -> None:
    proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (1 + ninputs)))

    def called(token, *pointers) -> None:
        try:
            ctypes.c_bool.from_address(token).value = False
            fn([_array_at(p, shape, dtype) for p, (shape, dtype) in zip(pointers, specs)])
        except BaseException:   # noqa: BLE001 - nothing may unwind into native code: reported, and the run goes on
            sys.stderr.write(f"numfn: exception in a run-time callback ({key}):\n{traceback.format_exc()}")

    native = proto(called)
    _TRAMPOLINES[symbol] = native
    CALLBACK_ADDRESSES[symbol] = ctypes.cast(native, ctypes.c_void_p).value or 0


def _latest_token(record: TraceRecord | None) -> UOp | None:
    """The flag of the latest check of the trace under way, or of the closest enclosing one that has a check."""
    while record is not None:
        if record.checks: return record.checks[-1].failed
        record = record.parent
    return None


def _staged(tag: str, identity: str, args: tuple, kwargs: dict,
            run: Callable[[tuple, dict], None]) -> None:
    """Stage `run(args, kwargs)` (with the arrays' run-time values) as a callback of the program being traced."""
    leaves, tree = flatten((args, kwargs), is_leaf=lambda x: _is_array(x) or x is None)
    dynamic = [i for i, x in enumerate(leaves) if x is not None and _is_array(x)]
    tensors, rebuilds, counts, kinds = [], [], [], []
    for i in dynamic:
        value = Tensor.lift(leaves[i])
        kinds.append(value.uop.dtype.name)   # (a float16 value and a float64 one pass alike: rebuilt apart)
        parts, rebuild = _transfer(value)
        tensors += parts
        rebuilds.append(rebuild)
        counts.append(len(parts))
    statics = [(i, x) for i, x in enumerate(leaves) if i not in set(dynamic)]
    specs = [(tuple(t.shape), np.dtype(t.uop.dtype.np)) for t in tensors]

    def call(arrays: list[np.ndarray]) -> None:
        values, at = list(leaves), 0
        for i, rebuild, n in zip(dynamic, rebuilds, counts):
            values[i] = rebuild(arrays[at:at + n])
            at += n
        a, k = unflatten(tree, values)
        run(a, k)

    described = repr((tag, identity, tree, statics, kinds, [(s, d.str) for s, d in specs]))
    key = f"{tag}-{hashlib.sha256(described.encode()).hexdigest()[:20]}"
    inputs = [t.uop for t in tensors]
    token = _latest_token(current_record())
    if token is not None: inputs.append(token)
    _trampoline(key, call, specs, len(inputs))
    # (the serial number tells a region's own callbacks from outer ones: numfn.trace.control.made_inside)
    extern_call = ExternCall("callback", dtypes.float64, (), (key, new_effect_serial()), (((), dtypes.bool),), (-1,),
                             (False,), "python", 64)
    node = UOp(Ops.EXTERN, dtypes.void, tuple(inputs), extern_call)
    result = UOp(Ops.RESULT, dtypes.bool, (node,), 0)
    add_check(Tensor(result), 0, _never_raised)


def _never_raised(payload: int) -> BaseException:
    return RuntimeError("numfn: a run-time callback's token reported a failure (a bug of numfn)")


def debug_print(fmt: str, *args, **kwargs) -> None:
    """numfn.debug.print (documented there)."""
    if not isinstance(fmt, str): raise TypeError(f"numfn.debug.print: the format must be a str, not "
                                                 f"{type(fmt).__name__}")
    if current_record() is None:
        builtins.print(fmt.format(*args, **kwargs), flush=True)
        return

    def run(a: tuple, k: dict) -> None:
        builtins.print(fmt.format(*a, **k), file=sys.stdout, flush=True)

    _staged("print", fmt, args, kwargs, run)


def debug_callback(fn: Callable[..., Any], *args, **kwargs) -> None:
    """numfn.debug.callback (documented there)."""
    if not callable(fn): raise TypeError(f"numfn.debug.callback: {fn!r} is not callable")
    if current_record() is None:
        fn(*args, **kwargs)
        return
    _staged("callback", _callback_name(fn), args, kwargs, lambda a, k: fn(*a, **k))


# the callback functions staged in this process, {id: (function, name)}: kept alive, so that an id is never reused
# for another function while its number stands; and how many distinct functions of each name there are
_NAMED: dict[int, tuple[Callable[..., Any], str]] = {}
_NAME_COUNTS: dict[str, int] = {}


def _callback_name(fn: Callable[..., Any]) -> str:
    """`module.qualname#n`: the same in every process that stages the same functions in the same order (a program's
    key, hence its disk cache entry, depends on it), and different for distinct function objects in one process."""
    with _REGISTERING:
        known = _NAMED.get(id(fn))
        if known is not None: return known[1]
        base = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
        number = _NAME_COUNTS.get(base, 0)
        _NAME_COUNTS[base] = number + 1
        name = f"{base}#{number}"
        _NAMED[id(fn)] = (fn, name)
        return name

debug.RUN_TIME_HOOKS.update(print=debug_print, callback=debug_callback)
