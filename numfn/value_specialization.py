"""Specializations by value: a NumericalFunction whose trace needs a number computed from the arguments' values.

np.zeros(x.max()), np.arange(int(x.sum())), np.repeat(x, counts), np.bincount(x) and np.linspace(0, 1, k) size
their results by values that no bound known while tracing limits. The tracer stops with a ValueRequest where it
needs such a number (numfn.trace.value_sizes); the NumericalFunction whose trace stopped becomes a dispatcher:

  1. `size_program`: the same function specialized as the program computing just the requested value (its graph,
     then the checks recorded before the request, so NumPy's errors come first); compiled once;
  2. every call runs it on the call's arguments (`value_for`): the graph reads the arguments as they are at entry,
     so it may run before a function that writes into them;
  3. `with_value(value)`: the function traced again with that value answering the request (a Python number in
     the trace), kept by value (at most VALUES_KEPT per dispatcher; the disk cache keeps every one). Its trace may
     stop at the next request: it is then a dispatcher in turn (at most MAX_VALUE_ROUNDS requests in all).

Calls of a dispatcher never take the C dispatcher's fast path (the value must be computed first), and a jitted
function sized by values called inside another traced function is traced inline, so the caller's trace asks.
`ValueSpecialization` is the mixin of NumericalFunction with these stages; `size_trace(request)` is the trace of
a size program.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from numfn import debug
from numfn.dtype import dtypes
from numfn.ir.uop import Ops, UOp
from numfn.locks import cached_stage, lock
from numfn.pytree import TreeDef, flatten
from numfn.signature import static_key
from numfn.trace.record import TraceRecord
from numfn.trace.value_sizes import ValueRequest

__all__ = ["ValueSpecialization", "size_trace", "VALUES_KEPT"]

VALUES_KEPT = 16   # specializations by value kept in memory per dispatcher (oldest dropped first)
_VALUES_LOCK = lock()   # making a specialization by value (cheap: its stages are computed on first use)


def size_trace(request: ValueRequest) -> tuple[UOp, TreeDef, TraceRecord]:
    """The trace of the program computing `request`'s value: its one output, then the checks recorded before the
    request (their failed and payload arrays, as a function's checks are)."""
    values = [request.value] + [u for c in request.checks for u in (c.failed, c.payload)]
    sink = UOp(Ops.SINK, dtypes.void, tuple(UOp(Ops.CONTIGUOUS, u.dtype, (u,)) for u in values))
    return sink, flatten(0, is_leaf=lambda _: True)[1], TraceRecord(checks=list(request.checks))


class ValueSpecialization:
    """NumericalFunction's stages for a trace that asked for a value (see the module docstring)."""

    if TYPE_CHECKING:   # NumericalFunction's
        sizes: tuple

        @property
        def size_request(self) -> ValueRequest | None: ...

    @cached_stage
    def size_program(self) -> Any:   # a NumericalFunction
        """The program computing the value `size_request` asks for, from the same arguments."""
        assert self.size_request is not None
        return replace(cast(Any, self), request=self.size_request)

    def value_for(self, leaves: list) -> Any:
        """The value this function's trace asks for, for these argument leaves (its checks raise NumPy's errors)."""
        request = self.size_request
        assert request is not None
        return request.convert(self.size_program.run(leaves))

    def value_dispatch(self) -> Callable[..., Any]:
        """The `run` of a dispatcher: the value for the arguments, then the specialization for it."""
        _ = self.size_program.run   # compiled now, once

        def run(leaves: list, out=None) -> Any:
            return self.with_value(self.value_for(leaves)).run(leaves, out)

        return run

    @cached_stage
    def value_specializations(self) -> dict:
        """{static_key(value): the NumericalFunction for that value}, for the values seen so far (`with_value`)."""
        return {}

    def with_value(self, value: Any) -> Any:   # a NumericalFunction
        """This function traced again with `value` answering its `size_request`: made on first use (NUMFN_DEBUG=1
        says so), its stages computed when first accessed."""
        key = static_key(value)
        found = self.value_specializations.get(key)
        if found is not None: return found
        with _VALUES_LOCK:
            found = self.value_specializations.get(key)
            if found is None:
                request = self.size_request
                assert request is not None
                found = replace(cast(Any, self), sizes=self.sizes + (value,))
                found.__dict__["value_parent"] = self   # (what check_values asks)
                debug.log(1, f"{found.name}: {request.what} at {request.where} is {value!r}, a new value: this "
                             "specialization compiles once")
                kept = self.value_specializations
                if len(kept) >= VALUES_KEPT: kept.pop(next(iter(kept)))
                kept[key] = found
        return found

    def resolved(self, leaves: list) -> Any:   # a NumericalFunction
        """The specialization these argument leaves run: this one, or the one for the values its trace asks for."""
        nf: Any = self
        while nf.size_request is not None: nf = nf.with_value(nf.value_for(leaves))
        return nf

    def check_values(self, leaves: list) -> None:
        """TypeError when these argument leaves ask for other values than the ones this specialization was traced
        with (a checked call of a NumericalFunction that `specialize` gave)."""
        parent = self.__dict__.get("value_parent")
        if parent is None: return
        wanted = parent.resolved(leaves)
        if wanted is not self:
            raise TypeError(f"{getattr(self, 'name', '')} was specialized for the values {self.sizes}, but these "
                            f"arguments give {wanted.sizes}: call the jitted function instead")
