"""The scheduler's parts on hand-built UOp graphs, without tracing or compiling: callification, the fusion rule and
kernel grouping, versions of written memory, regions (loops, branches, extern calls) and memory planning. Every
test asserts the decisions themselves: which kernels, in which order, writing and reading which buffers."""
from __future__ import annotations

import numpy as np
import pytest

from numfn.dtype import dtypes
from numfn.ir.extern import ExternCall
from numfn.ir.uop import Buffer, Ops, UOp, toposort
from numfn.schedule import (ExecItem, ExternKernel, LoopKernel, MAX_KERNEL_DEPTH, Schedule, all_items, callify,
                            create_schedule, program_steps)
from numfn.schedule import interchange
from numfn.schedule.items import Kernel
from numfn.schedule.kernels import Replan, build_kernels, classify_uses
from numfn.schedule.memory import plan_memory
from numfn.schedule.realize import (MAX_COPIES, RealizeRule, SPLIT_PARTS, realizable, should_realize,
                                    split_reductions)
from numfn.schedule.regions import BLOCK
from numfn.schedule.roots import Root
from numfn.schedule.versions import Versions
from numfn.trace.control import Region

pytestmark = pytest.mark.nocompile   # the compile-free tier (tests/conftest.py)

F32, I64 = dtypes.float32, dtypes.int64


def param(slot: int, shape: tuple[int, ...], dtype=F32) -> UOp:
    return UOp(Ops.PARAM, dtype, (), (slot, shape))


def buffer(category: str, number: int, shape: tuple[int, ...], dtype=F32) -> UOp:
    return UOp(Ops.BUFFER, dtype, (), Buffer(category, number, shape))


def const(value, shape: tuple[int, ...], dtype=F32) -> UOp:
    return UOp.const_like(dtype, value, shape)


def outputs(*values: UOp, writes: tuple[UOp, ...] = ()) -> UOp:
    """A function graph: the outputs (each materialized, as the tracer leaves them), then the writes into inputs."""
    return UOp(Ops.SINK, dtypes.void, tuple(UOp(Ops.CONTIGUOUS, v.dtype, (v,)) for v in values) + writes)


def schedule(graph: UOp, inputs: int, writes: int = 0):
    return create_schedule(callify(graph, inputs, writes))


def table(items) -> list[tuple[str, list[str], list[str]]]:
    """(name, buffers written, buffers read) per step, buffers by their printed names (output0, intermediate1...)."""
    return [(ei.kernel.name, [repr(u.arg) for u in ei.kernel.outputs], [repr(u.arg) for u in ei.kernel.inputs])
            for ei in items]


def scatter(old: UOp, value: UOp, *indices: UOp) -> UOp:
    """old[indices] = value (no accumulation, no two positions writing one element, no gate)."""
    return UOp(Ops.SCATTER, old.dtype, (old, value, *indices), (None, True, False))


X = param(0, (4, 3))


# ---- callification -----------------------------------------------------------------------------------------------

def test_callify_binds_inputs_then_constants_and_names_the_outputs():
    data = np.arange(3.0, dtype=np.float32)
    captured = UOp(Ops.BUFFER, F32, (), Buffer("constant", 7, (3,), data, "hash-of-data"))
    unused_input = 1
    graph = outputs(X + captured.reshape((1, 3)).expand((4, 3)), X.alu(Ops.EXP), writes=(X,))
    call = callify(graph, 2, writes=1)
    assert call.op is Ops.CALL
    body, *bindings = call.src
    assert [b.arg for b in bindings] == [Buffer("input", 0, (4, 3)), Buffer("input", unused_input, ()),
                                         Buffer("constant", 0, (3,), data, "hash-of-data")]
    assert bindings[unused_input].dtype is dtypes.void   # an argument the body does not read
    # the constant is now a PARAM numbered after the inputs; the two outputs have output buffers, the write none
    assert {u.arg for u in toposort([body]) if u.op is Ops.PARAM} == {(0, (4, 3)), (2, (3,))}
    assert not any(u.op is Ops.BUFFER for u in toposort([body]))
    assert call.arg == (Buffer("output", 0, (4, 3)), Buffer("output", 1, (4, 3)))


# ---- the fusion rule ---------------------------------------------------------------------------------------------

def test_the_realization_rule_weighs_repeated_work_against_storing():
    a = buffer("input", 0, (64,))
    cheap = a + const(1.0, (64,))
    costly = a.alu(Ops.SIN).alu(Ops.EXP)
    assert not should_realize(costly, 64, set(), {})   # evaluated once per element: never stored
    assert should_realize(costly, 64 * 64, set(), {})   # an outer product of it: stored
    assert not should_realize(cheap, 2 * 64, set(), {})   # evaluated twice, cheap: recomputed
    # a reduction evaluated more often than it has elements is stored however cheap
    total = a.reduce(Ops.ADD, (0,))
    assert should_realize(total, 2, set(), {}) and not should_realize(total, 1, set(), {})
    # views, buffers and index arithmetic (positions and constants) are never stored: kernels see them as expressions
    assert not realizable(a.flip((0,)), set())
    assert not realizable(a, set())
    assert not realizable(UOp.iota(64) + const(1, (64,), I64), set())
    assert realizable(costly, set()) and not realizable(costly, {costly})


def test_a_value_inlined_at_too_many_places_is_stored_while_lowering():
    a = buffer("input", 0, (8,))
    value = a * const(2.0, (8,))
    rule = RealizeRule(set(), {})
    assert not rule.stop(value, 8, MAX_COPIES) and value not in rule.realized
    assert rule.stop(value, 8, MAX_COPIES + 1) and value in rule.realized


def test_a_large_reduction_into_one_result_is_split_into_partial_sums():
    big = buffer("input", 0, (1 << 16,))
    graph = outputs(big.reduce(Ops.ADD, (0,)))
    split = split_reductions(graph)
    partial = [u for u in toposort([split]) if u.op is Ops.CONTIGUOUS and u.src[0].op is Ops.REDUCE_AXIS]
    assert len(partial) == 1 and partial[0].shape == (SPLIT_PARTS, 1)   # (a reduction keeps its axis)
    small = outputs(buffer("input", 0, (1000,)).reduce(Ops.ADD, (0,)))
    assert split_reductions(small) is small


def test_uses_reached_through_views_are_loaded_and_elementwise_ones_inlined():
    a = buffer("input", 0, (4, 3))
    e = a.alu(Ops.EXP)
    r = a.reduce(Ops.ADD, (1,))
    value = e * r.expand((4, 3)) + e.flip((0,))
    direct, loaded = classify_uses(value, {e, r})
    assert loaded == {e, r} and direct == set()   # e is also read flipped: it must be stored before this kernel
    direct, loaded = classify_uses(e * const(2.0, (4, 3)) + r.expand((4, 3)), {e, r})
    assert direct == {e} and loaded == {r}


# ---- fusion into kernels -----------------------------------------------------------------------------------------

def test_an_elementwise_chain_is_one_kernel_with_no_intermediate():
    y = (X * const(2.0, (4, 3)) + const(1.0, (4, 3))).alu(Ops.EXP).alu(Ops.SQRT)
    items, memory = schedule(outputs(y), 1)
    assert table(items) == [("E_4_3", ["output0"], ["input0"])]
    assert memory.arena_bytes == 0 and memory.offsets == {}


def test_a_reduction_fuses_into_its_consumer_when_it_is_evaluated_once_per_row():
    rows = X.reduce(Ops.ADD, (1,))   # (4, 1): hoisted out of the column loop
    items, _ = schedule(outputs(X.alu(Ops.FDIV, rows.expand((4, 3)))), 1)
    assert table(items) == [("R_4_3", ["output0"], ["input0"])]


def test_a_reduction_broadcast_along_an_outer_loop_gets_its_own_kernel_first():
    cols = X.reduce(Ops.ADD, (0,))   # (1, 3): would be recomputed for every row
    items, memory = schedule(outputs(X * cols.expand((4, 3))), 1)
    assert table(items) == [("R_1_3", ["intermediate0"], ["input0"]),
                            ("E_4_3", ["output0"], ["intermediate0", "input0"])]
    assert list(memory.offsets) == [Buffer("intermediate", 0, (1, 3))]


def test_an_expensive_value_repeated_by_a_broadcast_is_stored_once():
    t = param(0, (64,)).alu(Ops.SIN).alu(Ops.EXP)
    product = t.reshape((64, 1)).expand((64, 64)) * t.reshape((1, 64)).expand((64, 64))
    items, _ = schedule(outputs(product), 1)
    assert table(items) == [("E_64", ["intermediate0"], ["input0"]), ("E_64_64", ["output0"], ["intermediate0"])]


def test_outputs_of_one_shape_share_a_kernel_and_other_shapes_do_not():
    shared = X.alu(Ops.EXP) * X
    items, _ = schedule(outputs(shared + const(1.0, (4, 3)), shared * shared, X.reduce(Ops.ADD, (0,))), 1)
    assert table(items) == [("E_4_3", ["output0", "output1"], ["input0"]), ("R_1_3", ["output2"], ["input0"])]
    # the shared subexpression is computed once in the kernel: one EXP among its stores' values
    kernel = items[0].kernel
    assert sum(u.op is Ops.EXP for u in toposort([kernel.ast])) == 1


def test_a_chain_longer_than_the_kernel_depth_bound_is_cut():
    y = X
    for _ in range(300):   # 600 operations: cut by storing values in the middle
        y = y * const(1.0001, (4, 3)) + const(0.5, (4, 3))
    items, _ = schedule(outputs(y), 1)
    assert table(items) == [("E_4_3", ["intermediate0"], ["input0"]),
                            ("E_4_3n1", ["intermediate1"], ["intermediate0"]),
                            ("E_4_3n2", ["output0"], ["intermediate1"])]
    assert all(ei.op_count <= MAX_KERNEL_DEPTH * 12 for ei in items)   # at most MAX_KERNEL_DEPTH per element


# ---- versions of written memory ----------------------------------------------------------------------------------

ROW0 = (const(0, (1, 3), I64), UOp.iota(3).reshape((1, 3)))   # the indices of x[0, :]
ROW1 = (const(1, (1, 3), I64), UOp.iota(3).reshape((1, 3)))


def test_a_read_of_a_version_runs_before_the_write_that_overwrites_it():
    v = X.alu(Ops.EXP)
    flipped = v.flip((0,)) * const(2.0, (4, 3))   # reads v through a view: a kernel of its own
    written = scatter(v, const(1.0, (1, 3)), *ROW0)   # v[0] = 1, in v's memory
    # (the write is the first output: in the roots' own order it comes before the reader)
    items, _ = schedule(outputs(written, flipped), 1)
    # v's kernel writes output0 (the home of the chain v -> written), the reader loads it, then the write lands
    assert table(items) == [("E_4_3", ["output0"], ["input0"]),
                            ("E_4_3n1", ["output1"], ["output0"]),
                            ("W_1_3", ["output0"], [])]


def test_two_writes_from_one_version_start_one_from_a_copy():
    v = X.alu(Ops.EXP)
    first, second = scatter(v, const(1.0, (1, 3)), *ROW0), scatter(v, const(2.0, (1, 3)), *ROW1)
    items, _ = schedule(outputs(first, second), 1)
    # the copy of v is taken before v's memory is written
    assert table(items) == [("E_4_3", ["output0"], ["input0"]),
                            ("E_4_3n1", ["output1"], ["output0"]),
                            ("W_1_3", ["output0"], []),
                            ("W_1_3n1", ["output1"], [])]


def test_kernels_ask_for_a_copy_when_two_writes_start_from_one_version():
    v = buffer("input", 0, (4, 3)).alu(Ops.EXP)
    first, second = scatter(v, const(1.0, (1, 3)), *ROW0), scatter(v, const(2.0, (1, 3)), *ROW1)
    out0, out1 = buffer("output", 0, (4, 3)), buffer("output", 1, (4, 3))
    roots = {first: Root(first, [out0]), second: Root(second, [out1])}
    versions = Versions(set())
    versions.plan(roots)
    with pytest.raises(Replan) as replan:
        build_kernels(roots, versions)
    assert versions.copies == {}
    replan.value.fix()   # the later write starts from a copy of v
    assert list(versions.copies) == [second] and versions.copies[second].src == (v,)
    versions.plan(roots)
    assert versions.prev == {first: v, second: versions.copies[second]}
    kernels = build_kernels(roots, versions)
    assert [(k.name, [u.arg for u in k.outputs]) for k, _ in kernels] == [
        ("E_4_3", [out0.arg]), ("E_4_3n1", [out1.arg]), ("W_1_3", [out0.arg]), ("W_1_3n1", [out1.arg])]


def test_a_write_into_an_argument_happens_in_place():
    rows = (UOp.iota(3) + const(1, (3,), I64)).reshape((3, 1)).expand((3, 3))
    cols = UOp.iota(3).reshape((1, 3)).expand((3, 3))
    # x[1:] = 2 * x[1:]: each element is read where it is written, so one kernel does it in the argument's memory
    same_place = scatter(X, X.shrink(((1, 4), (0, 3))) * const(2.0, (3, 3)), rows, cols)
    items, memory = schedule(outputs(writes=(same_place,)), 1, writes=1)
    assert table(items) == [("W_3_3", ["input0"], [])] and memory.arena_bytes == 0
    # x[1:] = x[:-1]: rows are read before and after they are written, so the value is stored first
    shifted = scatter(X, X.shrink(((0, 3), (0, 3))), rows, cols)
    items, _ = schedule(outputs(writes=(shifted,)), 1, writes=1)
    assert table(items) == [("E_3_3", ["intermediate0"], ["input0"]), ("W_3_3", ["input0"], ["intermediate0"])]


def test_a_chain_of_versions_shares_the_home_of_its_last_version():
    v = buffer("input", 0, (4, 3)).alu(Ops.EXP)
    first = scatter(v, const(1.0, (1, 3)), *ROW0)
    last = scatter(first, const(2.0, (1, 3)), *ROW1)
    out = buffer("output", 0, (4, 3))
    roots = {last: Root(last, [out])}
    versions = Versions(set())
    versions.plan(roots)
    assert set(roots) == {v, first, last}   # every version is stored: by v's kernel, then by each write
    assert versions.prev == {first: v, last: first}
    assert versions.chain_of == {v: v, first: v, last: v}
    assert all(roots[u].targets == [out] for u in (v, first, last))
    assert versions.next_writers() == {v: [first], first: [last]}


# ---- regions: loops, branches, extern calls ----------------------------------------------------------------------

def carry(tag: int, k: int, shape: tuple[int, ...], dtype=F32, index_range=None) -> UOp:
    return UOp(Ops.CARRY, dtype, (), (tag, k, shape, index_range))


def test_a_while_loop_is_one_step_whose_condition_and_body_are_schedules_of_their_own(monkeypatch):
    monkeypatch.setattr(interchange, "ENABLED", False)   # (else it runs as one kernel: tests/test_loop_interchange.py)
    # for i in range(3): s = s * 2 + x, starting from s = x + 1
    counter, state, captured = carry(1, 0, (), I64), carry(1, 1, (4, 3)), carry(1, 2, (4, 3))
    cond = UOp(Ops.SINK, dtypes.void, (counter.alu(Ops.CMPLT, UOp.const(I64, 3)),))
    body = UOp(Ops.SINK, dtypes.void, (carry(1, 0, (), I64, (0, 2)).alu(Ops.ADD, UOp.const(I64, 1)),
                                       state * const(2.0, (4, 3)) + captured))
    types = (((), I64), ((4, 3), F32))
    region = Region("while", 1, types, cond, (body,), types)
    loop = UOp(Ops.LOOP, dtypes.void, (UOp.const(I64, 0), X + const(1.0, (4, 3)), X), region)
    items, memory = schedule(outputs(UOp(Ops.RESULT, F32, (loop,), 1)), 1)
    # the initial state is written into the state buffers, the loop runs, its result is copied into the output
    assert table(items) == [("E_scalar", ["intermediate0"], []),
                            ("E_4_3", ["intermediate1"], ["input0"]),
                            ("L", ["intermediate0", "intermediate1", "intermediate300000", "intermediate400000"],
                             ["input0", "intermediate100000"]),
                            ("E_4_3n1", ["output0"], ["intermediate1"])]
    loop_kernel = items[2].kernel
    assert isinstance(loop_kernel, LoopKernel) and loop_kernel.kind == "while"
    # the body's kernels write the next state buffers (swapped with the state after each iteration), numbered in
    # blocks of their own
    assert table(loop_kernel.cond) == [("E_scalar", ["intermediate100000"], ["intermediate0"])]
    assert table(loop_kernel.bodies[0]) == [("E_scalar", ["intermediate300000"], ["intermediate0"]),
                                            ("E_4_3", ["intermediate400000"], ["intermediate1", "input0"])]
    assert all(b.arg.number >= BLOCK for b in (loop_kernel.flag, *loop_kernel.next) if b is not None)
    assert [ei.kernel.name for ei in all_items(items)] == ["E_scalar", "E_4_3", "L", "E_scalar", "E_scalar",
                                                          "E_4_3", "E_4_3n1"]
    flat = {id(ei): k for k, ei in enumerate(ei for ei in all_items(items) if not isinstance(ei.kernel, LoopKernel))}
    assert program_steps(items, flat) == [0, 1, ("loop", loop_kernel, ([2], [3, 4])), 5]
    # a state buffer and its next one swap: both live through the loop, so they never share bytes
    assert memory.offsets[Buffer("intermediate", 1, (4, 3))] != memory.offsets[Buffer("intermediate", 400000, (4, 3))]


def test_a_branch_schedules_each_body_into_the_result_buffer():
    body0 = UOp(Ops.SINK, dtypes.void, (carry(2, 0, (4, 3)).alu(Ops.EXP),))
    body1 = UOp(Ops.SINK, dtypes.void, (carry(2, 0, (4, 3)).alu(Ops.SIN) * const(3.0, (4, 3)),))
    region = Region("cond", 2, (), None, (body0, body1), (((4, 3), F32),))
    branch = UOp(Ops.LOOP, dtypes.void, (param(1, (), I64), X * const(2.0, (4, 3))), region)
    items, _ = schedule(outputs(UOp(Ops.RESULT, F32, (branch,), 0)), 2)
    assert table(items) == [("E_4_3", ["intermediate0"], ["input0"]),
                            ("B", ["intermediate1"], ["intermediate0", "input1"]),
                            ("E_4_3n1", ["output0"], ["intermediate1"])]
    kernel = items[1].kernel
    assert isinstance(kernel, LoopKernel) and kernel.flag.arg == Buffer("input", 1, ())
    assert [table(b) for b in kernel.bodies] == [[("E_4_3", ["intermediate1"], ["intermediate0"])]] * 2


def test_an_extern_call_is_a_step_of_its_own_reading_views_by_their_strides():
    # exp(x) @ x.T as a GEMM: the product (m, n, k) = (4, 4, 3), its result returned and read by a kernel
    product = ExternCall("gemm", F32, (), (4, 4, 3), (((4, 4), F32),), (-1,), (False,), "test", 32)
    node = UOp(Ops.EXTERN, dtypes.void, (X.alu(Ops.EXP), X.permute((1, 0))), product)
    result = UOp(Ops.RESULT, F32, (node,), 0)
    items, _ = schedule(outputs(result, result.alu(Ops.SIN)), 1)
    assert table(items) == [("E_4_3", ["intermediate0"], ["input0"]),
                            ("X_gemm", ["output0"], ["intermediate0", "input0"]),
                            ("E_4_4", ["output1"], ["output0"])]
    call = items[1].kernel
    assert isinstance(call, ExternKernel) and items[1].lowered is None
    # exp(x) is stored row-major; x.T is passed as x itself with the transposed strides (no copy)
    assert [(op[0].arg, op[1], op[2]) for op in call.operands if op is not None] == \
        [(Buffer("intermediate", 0, (4, 3)), 0, (3, 1)), (Buffer("input", 0, (4, 3)), 0, (1, 3))]


# ---- memory planning ---------------------------------------------------------------------------------------------

def test_intermediates_share_bytes_only_when_their_lifetimes_do_not_overlap():
    inp, out = buffer("input", 0, (16,)), buffer("output", 0, (16,))
    t = [buffer("intermediate", i, (16,)) for i in range(3)]

    def step(dst: UOp, src: UOp) -> ExecItem:
        ast = UOp(Ops.SINK, dtypes.void, (UOp(Ops.STORE, dtypes.void, (dst, src.alu(Ops.EXP))),))
        return ExecItem(Kernel(f"E_{dst.arg}", ast, (16,)), None)

    # t0 lives in steps 0-1, t1 in 1-2, t2 in 2-3: t0 and t2 can share bytes, t1 overlaps both
    plan = plan_memory(Schedule([step(t[0], inp), step(t[1], t[0]), step(t[2], t[1]), step(out, t[2])]))
    # 64 bytes each, aligned; the output and the input are the caller's arrays, never in the arena
    assert plan.offsets == {t[0].arg: 0, t[1].arg: 64, t[2].arg: 0}
    assert plan.arena_bytes == 128 and plan.naive_bytes == 192


def test_the_schedule_of_a_long_chain_reuses_the_memory_of_finished_intermediates():
    y = X
    for _ in range(450):   # 900 operations: four kernels, three intermediates in a row
        y = y * const(1.0001, (4, 3)) + const(0.5, (4, 3))
    items, memory = schedule(outputs(y), 1)
    assert [w for _, w, _ in table(items)] == [["intermediate0"], ["intermediate1"], ["intermediate2"], ["output0"]]
    offsets = {b.number: o for b, o in memory.offsets.items()}
    assert offsets[0] == offsets[2] != offsets[1]
    assert memory.arena_bytes == 128 and memory.naive_bytes == 192
