"""The IR core on its own, fast (no compilation): hash-consing, pattern matching, rewriting to a fixpoint, the graph
walker, constant folding against NumPy, value bounds against brute force, printing, and the op-keyed tables that
every primitive must appear in."""
from __future__ import annotations

import gc
import itertools
import math
import random

import numpy as np
import pytest

from numfn.dtype import dtypes
from numfn.ir.symbolic import symbolic
from numfn.ir.uop import (ALU, Buffer, ELEMENTWISE, MOVEMENT, Ops, PatternMatcher, UOp, UPat, fold, format_graph,
                       graph_rewrite, rebuild, substitute, toposort)

pytestmark = pytest.mark.nocompile   # the compile-free tier (tests/conftest.py)

F32, F64, I32, I64 = dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64


def var(name: str, dtype=F32, shape=(4,)) -> UOp:
    """A leaf standing for an input: a PARAM numbered by name."""
    return UOp(Ops.PARAM, dtype, (), (sum(map(ord, name)), shape))


def rng_range(n: int, ident: int = 0) -> UOp:
    return UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, n),), (ident, "loop"))


def bits_equal(a, b) -> bool:
    """Equal as NumPy scalars: same value, NaN equal to NaN, 0.0 and -0.0 told apart."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        a, b = float(a), float(b)
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a.item() == b.item()


# ---- hash-consing ----------------------------------------------------------------------------------------------------

def test_building_the_same_node_twice_gives_the_same_object():
    x = var("x")
    assert UOp(Ops.ADD, F32, (x, x)) is UOp(Ops.ADD, F32, (x, x)) is x + x
    assert UOp.const(F32, 2.0) is UOp.const(F32, 2.0)
    assert UOp(Ops.RESHAPE, F32, (x,), (2, 2)) is x.reshape((2, 2))
    # anything different makes a different node: op, dtype, sources, argument
    assert UOp(Ops.ADD, F32, (x, x)) is not UOp(Ops.MUL, F32, (x, x))
    assert UOp.const(F32, 2.0) is not UOp.const(F64, 2.0)
    assert x.reshape((2, 2)) is not x.reshape((4, 1))


def test_float_constants_are_told_apart_by_their_bits():
    # -0.0 == 0.0 and NaN != NaN in Python: hash-consing by == would merge the zeros and never share a NaN
    assert UOp.const(F64, 0.0) is not UOp.const(F64, -0.0)
    assert UOp.const(F64, math.nan) is UOp.const(F64, float("nan"))
    assert UOp.const(F64, math.inf) is not UOp.const(F64, -math.inf)
    assert UOp(Ops.PAD, F32, (var("x"),), ((0, 0.0),)) is not UOp(Ops.PAD, F32, (var("x"),), ((0, -0.0),))
    # 1 (an int) and 1.0 are different arguments too
    assert UOp.const(I64, 1) is not UOp.const(F64, 1.0)


def test_nodes_nobody_uses_are_released():
    x = var("released")
    y = x * 3.5 + 1.25
    key_count = len(UOp._interned)
    del x, y
    gc.collect()
    assert len(UOp._interned) < key_count


# ---- pattern matching ------------------------------------------------------------------------------------------------

def test_patterns_match_op_dtype_sources_and_arguments():
    x, y = var("x"), var("y")
    u = x + y
    assert UPat(Ops.ADD).match(u, {}) == [{}]
    assert UPat(Ops.MUL).match(u, {}) == []
    assert UPat(Ops.ADD, dtype=F32).match(u, {}) and not UPat(Ops.ADD, dtype=F64).match(u, {})
    assert UPat(Ops.ADD, src=(UPat.var("a"), UPat.var("b"))).match(u, {}) == [{"a": x, "b": y}]
    assert UPat(Ops.RESHAPE, arg=(2, 2)).match(x.reshape((2, 2)), {}) and \
        not UPat(Ops.RESHAPE, arg=(4, 1)).match(x.reshape((2, 2)), {})


def test_commutative_patterns_try_both_orders_and_names_bind_once():
    x = var("x")
    c = UOp.const(F32, 2.0)
    pat = UPat(Ops.MUL, src=[UPat.cvar("c"), UPat.var("v")])   # a list: any order
    assert pat.match(x * c, {}) == [{"c": c, "v": x}]
    assert pat.match(c * x, {}) == [{"c": c, "v": x}]
    same = UPat(Ops.ADD, src=(UPat.var("a"), UPat.var("a")))   # one name: both sources the same node
    assert same.match(x + x, {}) and not same.match(x + var("y"), {})


def test_sources_of_any_length_and_the_first_rule_wins():
    x = var("x")
    assert UPat(Ops.WHERE, src=(UPat.var("c"),), allow_any_len=True).match(
        UOp(Ops.WHERE, F32, (x < 1.0, x, x)), {})
    first = PatternMatcher([(UPat(Ops.ADD, name="u"), lambda u: u.src[0]), (UPat(Ops.ADD, name="u"), lambda u: u)])
    assert first.rewrite(x + x) is x
    seen = []
    with_ctx = PatternMatcher([(UPat(Ops.NEG, name="u"), lambda u, ctx: seen.append(ctx))])
    assert with_ctx.rewrite(-x, ctx="context") is None and seen == ["context"]


# ---- rewriting to a fixpoint -----------------------------------------------------------------------------------------

ADD_ZERO = PatternMatcher([(UPat(Ops.ADD, src=[UPat.var("x"), UPat(Ops.CONST, arg=0)]), lambda x: x)])


def test_rewrites_apply_to_replacements_until_nothing_changes():
    x = UOp(Ops.PARAM, I64, (), (0, ()))
    zero = UOp.const(I64, 0)
    nested = ((x + zero) + zero) * ((zero + x) + zero)
    assert graph_rewrite(nested, ADD_ZERO) is x * x
    assert graph_rewrite(x * x, ADD_ZERO) is x * x   # nothing to do: the same graph back
    # a rule whose result another rule rewrites again
    double_neg = UPat(Ops.NEG, src=(UPat(Ops.NEG, src=(UPat.var("a"),)),))
    chain = PatternMatcher([(double_neg, lambda a: a + zero)]) + ADD_ZERO
    assert graph_rewrite(x.alu(Ops.NEG).alu(Ops.NEG).alu(Ops.NEG).alu(Ops.NEG), chain) is x


def test_rules_that_never_converge_fail():
    x, y = UOp(Ops.PARAM, I64, (), (0, ())), UOp(Ops.PARAM, I64, (), (1, ()))
    swap = PatternMatcher([(UPat(Ops.MUL, src=(UPat.var("a"), UPat.var("b"))), lambda a, b: b * a)])   # forever
    with pytest.raises(RuntimeError, match="does not converge"):
        graph_rewrite(x * y, swap)


def test_deep_graphs_are_walked_without_recursion():
    x = UOp(Ops.PARAM, I64, (), (0, ()))
    zero = UOp.const(I64, 0)
    u = x
    for _ in range(5_000): u = (u + zero) * 1
    assert len(toposort([u])) > 10_000
    assert graph_rewrite(u, ADD_ZERO) is graph_rewrite(graph_rewrite(u, ADD_ZERO), ADD_ZERO)
    assert substitute(u, {x: x + 1}) is not u


def test_named_rewrites_are_logged_at_debug_5(monkeypatch, capsys):
    x = UOp(Ops.PARAM, I64, (), (0, ()))
    monkeypatch.setenv("NUMFN_DEBUG", "5")
    graph_rewrite((x + 0) + 0, ADD_ZERO, name="test pass")
    err = capsys.readouterr().err
    assert "graph_rewrite test pass: 2 rewrites" in err and "nodes" in err
    graph_rewrite((x + 0) + 0, ADD_ZERO)   # unnamed: silent
    monkeypatch.setenv("NUMFN_DEBUG", "4")
    graph_rewrite((x + 0) + 0, ADD_ZERO, name="test pass")
    assert capsys.readouterr().err == ""


# ---- the walker ------------------------------------------------------------------------------------------------------

def test_fold_visits_every_node_once_sources_first():
    x, y = var("x"), var("y")
    shared = x * y
    root = UOp(Ops.SINK, dtypes.void, (shared + x, shared - y))
    order = []
    sizes = fold([root], lambda u, srcs: order.append(u) or 1 + sum(srcs))
    assert len(order) == len(set(order)) == len(toposort([root]))
    assert all(order.index(s) < order.index(u) for u in order for s in u.src)
    assert sizes[shared] == 3 and sizes[root] == 1 + (1 + 3 + 1) + (1 + 3 + 1)   # a tree count: shared counted twice


def test_rebuild_and_substitute():
    x, y, z = var("x"), var("y"), var("z")
    root = UOp(Ops.SINK, dtypes.void, ((x * y) + x, y.alu(Ops.EXP)))
    assert rebuild(root, lambda u, src: None) is root              # nothing changed: the same object
    assert substitute(root, {}) is root
    swapped = substitute(root, {x: z})
    assert swapped is UOp(Ops.SINK, dtypes.void, ((z * y) + z, y.alu(Ops.EXP)))
    doubled = rebuild(root, lambda u, src: UOp(Ops.MUL, u.dtype, src) if u.op is Ops.ADD else None)
    assert doubled is UOp(Ops.SINK, dtypes.void, ((x * y) * x, y.alu(Ops.EXP)))
    # a replacement is taken as it is: its own sources are not substituted again
    assert substitute(x + y, {x: x * y, y: z}) is (x * y) + z


# ---- constant folding against NumPy ----------------------------------------------------------------------------------

FOLD_VALUES = {
    "float": [0.0, -0.0, 1.5, -2.25, 3.0, 1e300, -1e-310, math.inf, -math.inf, math.nan],
    "int": [0, 1, -1, 7, -7, 3, 100, 2**31 - 1, -2**31],
}
FOLDED_BINARY = [Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.FLOORDIV, Ops.MOD, Ops.MAX, Ops.MIN, Ops.CMPLT, Ops.CMPLE,
                 Ops.CMPEQ, Ops.CMPNE, Ops.AND, Ops.OR, Ops.XOR, Ops.POW]
NUMPY_BINARY = {Ops.ADD: np.add, Ops.SUB: np.subtract, Ops.MUL: np.multiply, Ops.FDIV: np.true_divide,
                Ops.FLOORDIV: np.floor_divide, Ops.MOD: np.remainder, Ops.MAX: np.maximum, Ops.MIN: np.minimum,
                Ops.CMPLT: np.less, Ops.CMPLE: np.less_equal, Ops.CMPEQ: np.equal, Ops.CMPNE: np.not_equal,
                Ops.AND: np.bitwise_and, Ops.OR: np.bitwise_or, Ops.XOR: np.bitwise_xor, Ops.POW: np.power}


@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int32, dtypes.int64,
                                   dtypes.uint8, dtypes.uint32], ids=lambda d: d.name)
def test_constant_folding_equals_numpy(dtype):
    values = FOLD_VALUES["float" if dtype.is_float else "int"]
    folded = 0
    for op in FOLDED_BINARY:
        if dtype.is_float and op in (Ops.AND, Ops.OR, Ops.XOR): continue
        if not dtype.is_float and op is Ops.FDIV: continue
        out_dtype = dtypes.bool if op in (Ops.CMPLT, Ops.CMPLE, Ops.CMPEQ, Ops.CMPNE) else dtype
        for a, b in itertools.product(values, repeat=2):
            with np.errstate(all="ignore"):   # ints wrap, 1e300 overflows float32: as NumPy converts them
                a_np, b_np = np.array(a).astype(dtype.np), np.array(b).astype(dtype.np)
            u = graph_rewrite(UOp(op, out_dtype, (UOp.const(dtype, a_np.item()), UOp.const(dtype, b_np.item()))),
                              symbolic)
            if u.op is not Ops.CONST: continue   # left to the generated code (a negative integer power, ...)
            folded += 1
            with np.errstate(all="ignore"):
                expected = NUMPY_BINARY[op](a_np, b_np)
            assert bits_equal(u.arg, expected), (op.name, a_np, b_np, u.arg, expected)
    assert folded > 0.9 * len(values) ** 2 * 10


@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
def test_unary_folding_and_casts_equal_numpy(dtype):
    unary = {Ops.NEG: np.negative, Ops.ABS: np.absolute, Ops.SQRT: np.sqrt, Ops.EXP: np.exp, Ops.LOG: np.log,
             Ops.SIN: np.sin, Ops.TANH: np.tanh, Ops.FLOOR: np.floor, Ops.CEIL: np.ceil, Ops.TRUNC: np.trunc}
    for op, ufunc in unary.items():
        for a in FOLD_VALUES["float"]:
            with np.errstate(all="ignore"):
                a_np = np.array(a).astype(dtype.np)
            u = graph_rewrite(UOp(op, dtype, (UOp.const(dtype, a_np.item()),)), symbolic)
            assert u.op is Ops.CONST, op.name
            with np.errstate(all="ignore"):
                assert bits_equal(u.arg, ufunc(a_np)), (op.name, a_np, u.arg)
    for target in (dtypes.int32, dtypes.uint8, dtypes.float32, dtypes.bool):
        for a in (0.0, -0.0, 2.75, -2.75, 200.5, 1e6):
            a_np = np.array(a).astype(dtype.np)
            u = graph_rewrite(UOp(Ops.CAST, target, (UOp.const(dtype, a_np.item()),)), symbolic)
            if u.op is not Ops.CONST: continue   # out of the target's range: NumPy's result is the platform's
            assert bits_equal(u.arg, a_np.astype(target.np)), (target.name, a_np, u.arg)


@pytest.mark.parametrize("dtype", [dtypes.float16, dtypes.float32, dtypes.float64], ids=lambda d: d.name)
def test_comparisons_of_truncations_become_float_comparisons(dtype):
    """trunc(y) < c and its three other forms, rewritten as comparisons of y (the conversion can then go: it does
    not vectorize to 64-bit integers on AVX2), agree with NumPy's conversion then comparison for every y the
    conversion is defined for, at constants on both sides of 0; the WHERE a guarded conversion makes takes the
    comparison into its branches."""
    r = UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, 4),), (0, "loop"))
    y = UOp(Ops.LOAD, dtype, (UOp(Ops.BUFFER, dtype, (), Buffer("input", 0, (4,))), r))   # a float of any value
    values = np.array([-66.5, -65.0, -64.99, -64.0, -63.5, -1.0, -0.75, -0.0, 0.0, 0.5, 1.0, 63.99, 64.0, 64.5],
                      dtype.np)
    ops = {Ops.CMPLT: np.less, Ops.CMPLE: np.less_equal}
    for target in (dtypes.int64, dtypes.int8, dtypes.uint8):
        conv = y.cast(target)
        for op, c, flipped in itertools.product(ops, (-65, -64, -1, 0, 1, 64), (False, True)):
            if target.is_unsigned and c < 0: continue
            k = UOp.const(target, c)
            u = graph_rewrite(UOp(op, dtypes.bool, (k, conv) if flipped else (conv, k)), symbolic)
            assert not any(n.op is Ops.CAST and n.dtype is target for n in u.toposort()), (op, c, flipped)
            for v in values:
                if target.is_unsigned and v <= -1: continue   # (no conversion to unsigned)
                t = np.trunc(v).astype(np.int64)
                want = ops[op](c, t) if flipped else ops[op](t, c)
                got = _evaluate_float(u, y, float(v))
                assert got == want, (target.name, op.name, c, flipped, v)
    guard = y.alu(Ops.CMPLT, UOp.const(dtype, 100.0))
    guarded = UOp(Ops.WHERE, dtypes.int64, (guard, y.cast(dtypes.int64), UOp.const(dtypes.int64, -1 << 63)))
    u = graph_rewrite(guarded.alu(Ops.CMPLT, UOp.const(dtypes.int64, -64)), symbolic)
    assert u.op is Ops.WHERE and not any(n.op is Ops.CAST and n.dtype.is_int for n in u.toposort())


def _evaluate_float(u: UOp, y: UOp, value: float):
    """A boolean graph of comparisons of `y` (a float) and constants, evaluated at y = value."""
    if u is y: return value
    if u.op is Ops.CONST: return u.arg
    a = [_evaluate_float(s, y, value) for s in u.src]
    if u.op is Ops.CMPLT: return a[0] < a[1]
    if u.op is Ops.CMPLE: return a[0] <= a[1]
    if u.op is Ops.NOT: return not a[0]
    raise AssertionError(u.op)


# ---- value bounds against brute force --------------------------------------------------------------------------------

def _evaluate(u: UOp, env: dict[UOp, int]) -> int:
    if u.op is Ops.RANGE: return env[u]
    if u.op is Ops.CONST: return u.arg
    a = [_evaluate(s, env) for s in u.src]
    if u.op is Ops.ADD: return a[0] + a[1]
    if u.op is Ops.SUB: return a[0] - a[1]
    if u.op is Ops.MUL: return a[0] * a[1]
    if u.op is Ops.NEG: return -a[0]
    if u.op is Ops.IDIV: return int(a[0] / a[1])     # C: truncating
    if u.op is Ops.IMOD: return a[0] - int(a[0] / a[1]) * a[1]
    if u.op is Ops.MAX: return max(a)
    if u.op is Ops.AND: return a[0] and a[1]
    if u.op is Ops.MIN: return min(a)
    if u.op is Ops.CMPLT: return a[0] < a[1]
    if u.op is Ops.CMPLE: return a[0] <= a[1]
    if u.op is Ops.WHERE: return a[1] if a[0] else a[2]
    if u.op is Ops.CAST: return int(a[0])
    raise AssertionError(u.op)


def test_bounds_contain_every_value():
    rnd = random.Random(3)
    ranges = [rng_range(5, 0), rng_range(3, 1), rng_range(7, 2)]
    for _ in range(300):
        u = rnd.choice(ranges)
        for _ in range(rnd.randint(1, 4)):
            op = rnd.choice([Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG, Ops.IDIV, Ops.IMOD, Ops.MAX, Ops.MIN, Ops.CMPLT,
                             Ops.WHERE])
            other = rnd.choice(ranges + [UOp.const(dtypes.index, rnd.randint(-4, 9))])
            if op is Ops.NEG: u = UOp(op, u.dtype, (u,))
            elif op is Ops.WHERE:   # a select under a comparison of its own value (bounds narrowed by it)
                cmp = rnd.choice([Ops.CMPLT, Ops.CMPLE])
                cond = UOp(cmp, dtypes.bool, (u, other) if rnd.random() < 0.5 else (other, u))
                u = UOp(op, u.dtype, (cond, u, UOp.const(dtypes.index, rnd.randint(-4, 9))))
            elif op in (Ops.IDIV, Ops.IMOD): u = UOp(op, u.dtype, (u, UOp.const(dtypes.index, rnd.randint(1, 4))))
            elif op is Ops.CMPLT: u = UOp(Ops.CAST, dtypes.index, (UOp(op, dtypes.bool, (u, other)),))
            else: u = UOp(op, u.dtype, (u, other))
        used = [r for r in ranges if r in toposort([u])]
        values = [_evaluate(u, dict(zip(used, combo)))
                  for combo in itertools.product(*(range(r.src[0].arg) for r in used))]
        assert u.vmin <= min(values) and max(values) <= u.vmax, (format_graph([u]), u.bounds, min(values), max(values))


def test_bounds_of_ranges_and_constants_are_exact():
    r = rng_range(10)
    assert r.bounds == (0, 9) and (r * 3 + 2).bounds == (2, 29) and (r // 4).bounds == (0, 2)
    assert (r % 4).bounds == (0, 3) and UOp.const(dtypes.index, -3).bounds == (-3, -3)
    assert UOp.iota(6).bounds == (0, 5)


def test_clamped_selects_keep_their_value_and_narrow_their_bounds():
    """codegen/selects.py: a select's taken branch clamped to what its condition allows has the same value
    wherever the condition holds (brute force), tighter bounds, and unclamps back to the original."""
    from numfn.codegen.selects import _clamp, _unclamp
    r, s = rng_range(12, 0), rng_range(5, 1)
    zero = UOp.const(dtypes.index, 0)
    rnd = random.Random(5)
    for _ in range(200):
        x = r + rnd.randint(-4, 4) if rnd.random() < 0.7 else r - s
        parts = []
        for _ in range(rnd.randint(1, 2)):
            k = UOp.const(dtypes.index, rnd.randint(-3, 12)) if rnd.random() < 0.8 else s
            op = rnd.choice([Ops.CMPLT, Ops.CMPLE])
            parts.append(UOp(op, dtypes.bool, (x, k) if rnd.random() < 0.5 else (k, x)))
        cond = parts[0] if len(parts) == 1 else UOp(Ops.AND, dtypes.bool, tuple(parts))
        w = UOp(Ops.WHERE, dtypes.index, (cond, x, zero))
        c = _clamp(w)
        if c is None: continue
        y = c.src[1]
        assert y.vmin >= x.vmin and y.vmax <= x.vmax and (y.vmin, y.vmax) != (x.vmin, x.vmax)
        for i in range(12):
            for j in range(5):
                env = {r: i, s: j}
                taken = all(_evaluate(p, env) for p in parts)
                if taken: assert _evaluate(c.src[1], env) == _evaluate(x, env), format_graph([c])
        assert _unclamp(c) is w


# ---- printing --------------------------------------------------------------------------------------------------------

def test_printing_names_each_node_once_and_inlines_scalars():
    x = var("x", F32, (4,))
    shared = x * 2.0
    text = format_graph([UOp(Ops.SINK, dtypes.void, (shared + x, shared.alu(Ops.EXP)))])
    lines = text.splitlines()
    assert [line.split("=", 1)[1].split("(")[0].strip() for line in lines] == ["PARAM", "MUL", "ADD", "EXP", "SINK"]
    names = [line.split(":")[0].strip() for line in lines]
    assert names == [f"%{i}" for i in range(5)]
    assert "MUL(%0, 2.0:float32)" in lines[1] and "float32[4]" in lines[1]   # a scalar constant is inline
    assert "ADD(%1, %0)" in lines[2] and "EXP(%1)" in lines[3]               # the shared node by its name
    assert lines[4].endswith("SINK(%2, %3)")
    assert x.pretty() == format_graph([x])


# ---- every primitive in every op-keyed table -------------------------------------------------------------------------

def test_every_tensor_op_has_a_batching_rule():
    from numfn.transforms import BATCHING_RULES
    tensor_ops = (ELEMENTWISE | MOVEMENT | {Ops.REDUCE_AXIS, Ops.SCAN, Ops.GATHER, Ops.SCATTER, Ops.CONTIGUOUS}) - \
        {Ops.IDIV, Ops.IMOD, Ops.FMOD}   # machine ops: made by codegen, never in a traced graph
    assert tensor_ops <= set(BATCHING_RULES)


def test_both_renderers_render_the_same_ops():
    from numfn.renderer import c, llvm
    c_ops = set(c.EXPRESSIONS) - {Ops.CAST, Ops.BITCAST}   # the LLVM renderer's _cast handles those
    assert c_ops == set(llvm.ALU_RULES)
    assert c_ops <= ALU
    # what the renderers leave out, codegen/decompose.py rewrites first (NumPy semantics in machine ops), and
    # complex values become pairs of real ones before codegen (codegen/complex.py)
    assert ALU - c_ops == {Ops.NOT, Ops.FLOORDIV, Ops.MOD, Ops.COMPLEX, Ops.IMAG}
