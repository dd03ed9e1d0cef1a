"""The table of primitives (numfn/ir/primitives.py): every op has an entry with every rule its layers must register,
and the entries' shape and dtype rules agree with NumPy's result shapes and dtypes."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import numfn  # noqa: F401  (every layer registers its rules on import)
from numfn.dtype import dtypes
from numfn.ir import primitives
from numfn.ir.primitives import ALU, BACKENDS, ELEMENTWISE, PRIMITIVES, Kind, Ops, register
from numfn.ir.uop import UOp

pytestmark = pytest.mark.nocompile   # the compile-free tier (tests/conftest.py)

# the modules that register rules: not all of them are imported by `import numfn` (a renderer is loaded when a
# program is first rendered), so the check imports them all
REGISTERING = ("numfn.codegen.lower", "numfn.codegen.complex", "numfn.codegen.decompose",
               "numfn.codegen.transcendental", "numfn.renderer.c", "numfn.renderer.llvm", "numfn.transforms")
for _module in REGISTERING: importlib.import_module(_module)

DTYPES = (dtypes.bool, dtypes.uint8, dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64, dtypes.complex64)


def test_every_op_has_an_entry_of_its_kind():
    assert set(PRIMITIVES) == set(Ops)
    for op, p in PRIMITIVES.items():
        assert p.op is op and isinstance(p.kind, Kind)
        if op in ALU: assert p.dtype is not None, f"{op.name} has no dtype rule"


def test_every_primitive_has_every_rule_it_needs():
    missing = {p.op.name: sorted(p.missing()) for p in PRIMITIVES.values() if p.missing()}
    assert missing == {}
    # what the check asks of an ordinary elementwise op: lowering, batching and both renderers
    assert {"lower", "batch", *(f"render:{b}" for b in BACKENDS)} <= PRIMITIVES[Ops.EXP].needs
    assert "complex_split" in PRIMITIVES[Ops.EXP].needs and "complex_split" not in PRIMITIVES[Ops.ATAN].needs


def test_the_check_fails_for_an_entry_that_lacks_a_rule(monkeypatch):
    entry = PRIMITIVES[Ops.HYPOT]
    monkeypatch.setattr(entry, "render", {b: r for b, r in entry.render.items() if b != "c"})
    assert entry.missing() == {"render:c"}
    monkeypatch.setattr(entry, "batch", None)
    assert entry.missing() == {"render:c", "batch"}


def test_the_derivative_slots_hold_numfn_autodiff_rules():
    # (their completeness is checked in tests/test_autodiff.py)
    from numfn.autodiff.rules import JVP_RULES, TRANSPOSE_RULES
    assert {op: p.jvp for op, p in PRIMITIVES.items() if p.jvp is not None} == JVP_RULES
    assert {op: p.transpose for op, p in PRIMITIVES.items() if p.transpose is not None} == TRANSPOSE_RULES


def test_registration_names_a_slot_and_a_backend():
    with pytest.raises(ValueError): register(Ops.EXP, "vectorize", lambda: None)
    with pytest.raises(ValueError): register(Ops.EXP, "render", lambda: None, backend="cuda")


def test_the_layers_read_their_rules_from_the_table():
    from numfn.codegen.lower import lower_elementwise
    from numfn.renderer import c, llvm
    from numfn.transforms import BATCHING_RULES
    assert all(PRIMITIVES[op].lower is lower_elementwise for op in ELEMENTWISE)
    assert all(PRIMITIVES[op].render["c"] is rule for op, rule in c.EXPRESSIONS.items())
    assert all(PRIMITIVES[op].render["llvm"] is rule for op, rule in llvm.ALU_RULES.items())
    assert BATCHING_RULES == {op: p.batch for op, p in PRIMITIVES.items() if p.batch is not None}
    approximated = {op for op, p in PRIMITIVES.items() if p.approximate is not None}
    assert approximated == primitives.TRANSCENDENTAL - {Ops.POW}   # every float function but pow has a polynomial


def test_the_op_groups_are_read_off_the_table():
    from numfn.codegen.complex import COMPLEX_ALU
    from numfn.ir import uop
    assert uop.Ops is Ops and uop.ALU is primitives.ALU and uop.MOVEMENT is primitives.MOVEMENT
    assert primitives.UNARY == {op for op, p in PRIMITIVES.items() if p.kind is Kind.UNARY}
    assert ELEMENTWISE == ALU | {Ops.CAST, Ops.BITCAST}
    assert COMPLEX_ALU == {Ops.NEG, Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.POW, Ops.ABS, Ops.SQRT, Ops.EXP,
                           Ops.EXP2, Ops.EXPM1, Ops.LOG, Ops.LOG2, Ops.LOG10, Ops.LOG1P, Ops.SIN, Ops.COS, Ops.TAN,
                           Ops.SINH, Ops.COSH, Ops.TANH, Ops.MAX, Ops.MIN, Ops.CMPLT, Ops.CMPLE, Ops.CMPEQ,
                           Ops.CMPNE, Ops.RINT, Ops.WHERE}


# ---- the shape and dtype rules against NumPy ---------------------------------------------------------------------

def _numpy_loop(ufunc: np.ufunc, dt):
    """NumPy's output dtype for operands all of dtype `dt`, or None where NumPy has no loop for `dt` itself (it
    would cast the operands first, as numfn's tracer does before it records the op)."""
    try:
        resolved = ufunc.resolve_dtypes((dt.np,) * ufunc.nin + (None,) * ufunc.nout)
    except TypeError:
        return None
    return resolved[-1] if all(r == dt.np for r in resolved[:ufunc.nin]) else None


# where the IR's op means NumPy's ufunc with another result dtype (the tracer adds the difference)
IR_DIFFERS = {(Ops.ABS, dtypes.complex64): "ABS keeps the complex type (|z| + 0j); the tracer casts it to real"}

ELEMENTWISE_WITH_UFUNC = sorted((op for op in ALU if isinstance(getattr(np, PRIMITIVES[op].numpy or "", None),
                                                                np.ufunc)), key=lambda op: op.name)


@pytest.mark.parametrize("op", ELEMENTWISE_WITH_UFUNC, ids=lambda op: op.name)
def test_elementwise_shape_and_dtype_rules_agree_with_numpy(op):
    ufunc = getattr(np, PRIMITIVES[op].numpy)
    shape = (2, 3)
    compared = 0
    for dt in DTYPES:
        expected = _numpy_loop(ufunc, dt)
        if expected is None or (op, dt) in IR_DIFFERS: continue
        operands = [UOp(Ops.PARAM, dt, (), (i, shape)) for i in range(ufunc.nin)]
        node = operands[0].alu(op, *operands[1:])
        with np.errstate(all="ignore"):
            result = ufunc(*(np.ones(shape, dt.np) for _ in range(ufunc.nin)))
        assert node.shape == result.shape
        assert node.dtype.np == result.dtype == expected, f"{op.name} on {dt.name}"
        assert PRIMITIVES[op].dtype((dt,) * ufunc.nin) is node.dtype
        compared += 1
    assert compared, f"no dtype compared for {op.name}"


@pytest.mark.parametrize("dt", DTYPES, ids=lambda dt: dt.name)
def test_where_and_imag_agree_with_numpy(dt):
    shape = (3, 1, 2)
    cond = UOp(Ops.PARAM, dtypes.bool, (), (0, shape))
    a, b = (UOp(Ops.PARAM, dt, (), (i, shape)) for i in (1, 2))
    node = cond.alu(Ops.WHERE, a, b)
    ref = np.where(np.ones(shape, bool), np.ones(shape, dt.np), np.ones(shape, dt.np))
    assert (node.shape, node.dtype.np) == (ref.shape, ref.dtype)
    if dt.is_complex:
        imag = a.alu(Ops.IMAG)
        assert (imag.shape, imag.dtype.np) == (shape, np.imag(np.ones(shape, dt.np)).dtype)
        parts = a.alu(Ops.IMAG).alu(Ops.COMPLEX, a.alu(Ops.IMAG))
        assert parts.dtype is dt


def test_view_and_reduction_shape_rules_agree_with_numpy():
    x = np.zeros((2, 3, 4), np.float32)
    u = UOp(Ops.PARAM, dtypes.float32, (), (0, x.shape))
    assert u.reshape((6, 4)).shape == x.reshape(6, 4).shape
    assert u.permute((2, 0, 1)).shape == x.transpose(2, 0, 1).shape
    assert u.reshape((2, 1, 12)).expand((2, 5, 12)).shape == np.broadcast_to(x.reshape(2, 1, 12), (2, 5, 12)).shape
    assert u.pad(((1, 0), (0, 2), (3, 3))).shape == np.pad(x, ((1, 0), (0, 2), (3, 3))).shape
    assert u.shrink(((0, 1), (1, 3), (0, 4))).shape == x[0:1, 1:3, 0:4].shape
    assert u.flip((0, 2)).shape == np.flip(x, (0, 2)).shape
    assert u.reduce(Ops.ADD, (1, 2)).shape == x.sum(axis=(1, 2), keepdims=True).shape
    assert UOp(Ops.SCAN, dtypes.float32, (u,), (Ops.ADD, 1)).shape == np.cumsum(x, axis=1).shape
    assert UOp.iota(5).shape == np.arange(5).shape and UOp.const(dtypes.int32, 1).shape == ()


def test_bounds_rules():
    i = UOp.iota(10)
    assert (i + 5).bounds == (5, 14) and (i * -2).bounds == (-18, 0) and (-i).bounds == (-9, 0)
    assert i.alu(Ops.MAX, UOp.const(dtypes.int64, 3)).bounds == (3, 9)
    assert (i < 20).bounds == (True, True) and (i < 5).bounds == (False, True)
    assert i.pad(((2, 0),)).bounds == (0, 9) and i.cast(dtypes.int8).bounds == (0, 9)
    assert i.cast(dtypes.float32).bounds == (-np.inf, np.inf)   # floats: no bounds
