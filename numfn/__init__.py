"""numfn: a JIT compiler for numerical Python functions.

    import numpy as np, numfn, numfn.numpy as fnp

    @numfn.jit
    def f(x, y):
        return fnp.sin(x) * y + x.sum(axis=0)

The first call with a new signature (shapes and dtypes of the arguments) traces `f` into a graph, compiles it to
native code and runs it; later calls with that signature run the native code directly.
"""
from typing import TYPE_CHECKING

from numfn import cache  # noqa: F401 - numfn.cache.clear(), numfn.cache.info()
from numfn.trace import subscript  # noqa: F401 - gives Tensor its __getitem__ and __setitem__
from numfn import numpy  # noqa: F401 - numfn.numpy is the tracing namespace; np.* on Tensors dispatches into it
from numfn import random  # noqa: F401 - numfn.random: keys and random numbers generated inside kernels
from numfn.trace.control import cond, fori_loop, scan, switch, while_loop
from numfn.dtype import DType, dtypes
from numfn.errors import NumfnError, TracerConversionError
from numfn.function import JitFunction, NumericalFunction, jit
from numfn.export import ExportError, export  # numfn.export: the function (its package's modules import as usual)
from numfn.runtime.threads import set_num_threads
from numfn.trace.tensor import Tensor
from numfn.transforms import svmap, vmap
from numfn.version import __version__
from numfn.pytree import register_dataclass, register_pytree_node
from numfn.trace import callback as _run_time_hooks  # noqa: F401 - implements numfn.debug.print and callback
from numfn import debug  # noqa: F401 - numfn.debug: logging levels, print and callback

__all__ = ["jit", "export", "ExportError", "vmap", "svmap", "set_num_threads", "JitFunction", "NumericalFunction",
           "Tensor", "DType", "dtypes", "NumfnError", "TracerConversionError", "fori_loop", "while_loop", "scan",
           "cond", "switch", "__version__", "grad", "value_and_grad", "jvp", "vjp", "jacfwd", "jacrev", "hessian",
           "check_grads", "custom_jvp", "custom_vjp", "register_pytree_node", "register_dataclass"]

# numfn.autodiff (11 modules, a tenth of numfn's import time) loads when one of its functions is first used
_AUTODIFF = ("check_grads", "custom_jvp", "custom_vjp", "grad", "hessian", "jacfwd", "jacrev", "jvp", "value_and_grad",
             "vjp")
if TYPE_CHECKING:
    from numfn.autodiff.api import grad, hessian, jacfwd, jacrev, jvp, value_and_grad, vjp
    from numfn.autodiff.check import check_grads
    from numfn.autodiff.custom import custom_jvp, custom_vjp


def __getattr__(name: str):
    if name in _AUTODIFF or name == "autodiff":
        import importlib
        autodiff = importlib.import_module("numfn.autodiff")   # (not `from numfn import`: that asks this function)
        if name == "autodiff": return autodiff
        value = globals()[name] = getattr(autodiff, name)
        return value
    raise AttributeError(f"module 'numfn' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_AUTODIFF})
