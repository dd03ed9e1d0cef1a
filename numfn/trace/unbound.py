"""A variable converted control flow left without a value (numfn.trace.convert): reading it raises an
UnboundLocalError saying why. Below the tracer, which names it in its errors, and the loops and branches
(numfn.trace.control, numfn.trace.statements), which carry it."""
from __future__ import annotations


class Unbound:
    """A variable not bound yet when a converted statement runs (bound inside it). Using it raises
    UnboundLocalError: a body that reads a variable an earlier iteration was to bind."""
    __slots__ = ("_why",)

    def __init__(self, why: str = "a variable is read before it is assigned"):
        self._why = why

    def __repr__(self) -> str:
        return "<unbound>"

    def _fail(self, *args, **kwargs):
        raise UnboundLocalError(self._why)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"): raise AttributeError(name)
        self._fail()


for _m in ("bool", "index", "int", "float", "complex", "len", "iter", "getitem", "setitem", "array", "call", "neg",
           "pos", "abs", "invert", "lt", "le", "gt", "ge", "matmul", "rmatmul", *(
               f"{r}{op}" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
                                     "lshift", "rshift") for r in ("", "r", "i"))):
    setattr(Unbound, f"__{_m}__", Unbound._fail)
del _m

UNBOUND = Unbound()


class Pending(Unbound):
    """The value a loop returns (`return v` inside a loop: numfn.trace.convert rewrites it into `value = v` and a
    break), before an iteration binds it. Its type is learnt from the iteration that binds it: a loop carries it as
    state of that type, and a branch where one side binds it gives zeros of that type on the other (never read:
    the function returns it only where an iteration bound it). A variable in its own right, not an unbound one."""

    def __repr__(self) -> str:
        return "<pending>"


PENDING = Pending("the value a loop returns is read before the loop returned")


def undefined(name: str, why: str) -> Unbound:
    """The value of `name` after a compiled statement that binds it on some paths only: reading it raises an
    UnboundLocalError saying why."""
    return Unbound(f"{name!r} has no value here: {why}")


def is_unbound(x) -> bool:
    return isinstance(x, Unbound) and x is not PENDING
