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


class MaybeUnbound(Unbound):
    """A variable that control flow bound where a traced condition holds only: `lab` bound in every iteration of a
    loop whose trip count is traced, `y` bound by one side of a branch on a traced value. Reading it gives its
    value (zeros where it was not bound) and makes a check that raises Python's UnboundLocalError where `bound`
    does not hold: Python raises where the variable is read, not where the loop or branch ends.

    `value` is an array or number; `bound` a traced bool; `check(failed, error)` records a check (the tracer's
    add_check: this module is below the tracer). A loop or branch that takes it as state reads it then."""
    __slots__ = ("value", "bound", "_check")

    def __init__(self, value, bound, why: str, check):
        super().__init__(why)
        self.value, self.bound, self._check = value, bound, check

    def __repr__(self) -> str:
        return "<bound where a traced condition holds>"

    def read(self):
        """The value, checked to be bound."""
        self._check(self.bound, self._why)
        return self.value

    def _fail(self, *args, **kwargs):   # (Tensor.lift: a read)
        return self.read()

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"): raise AttributeError(name)
        return getattr(self.read(), name)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(x.read() if isinstance(x, MaybeUnbound) else x for x in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*(x.read() if isinstance(x, MaybeUnbound) else x for x in args), **kwargs)


def _forward(name: str):
    def method(self, *args):
        return getattr(self.read(), name)(*args)
    method.__name__ = name
    return method


for _m in ("bool", "index", "int", "float", "complex", "len", "iter", "getitem", "setitem", "array", "neg", "pos",
           "abs", "invert", "lt", "le", "gt", "ge", "eq", "ne", "matmul", "rmatmul", "round", *(
               f"{r}{op}" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
                                     "lshift", "rshift") for r in ("", "r", "i"))):
    setattr(MaybeUnbound, f"__{_m}__", _forward(f"__{_m}__"))
MaybeUnbound.__hash__ = None   # type: ignore[assignment]   # (an array's: unhashable)
del _m


def undefined(name: str, why: str) -> Unbound:
    """The value of `name` after a compiled statement that binds it on some paths only: reading it raises an
    UnboundLocalError saying why."""
    return Unbound(f"{name!r} has no value here: {why}")


def is_unbound(x) -> bool:
    return isinstance(x, Unbound) and x is not PENDING


def read_bound(x):
    """`x`, or a MaybeUnbound's value read (its check made)."""
    return x.read() if isinstance(x, MaybeUnbound) else x
