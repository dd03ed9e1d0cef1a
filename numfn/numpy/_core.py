"""What numfn.numpy's families share, below all of them. `implementation(name)`: a family's function by name, for
a family that calls one listed after it in the layers (tests/test_imports.py): numfn.numpy registers every family's
functions when all are imported, so such a call imports nothing upward."""
from __future__ import annotations

from typing import Any

# numfn.numpy's functions by name, as the families define them (not wrapped by numfn.trace.dynamic.guard)
IMPLEMENTATIONS: dict[str, Any] = {}


def implementation(name: str) -> Any:
    """The numfn.numpy family function `name`."""
    return IMPLEMENTATIONS[name]
