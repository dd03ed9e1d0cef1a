"""LLVM IR renderer: each kernel becomes an internal function over `noalias` pointers; loops are explicit blocks
with a phi counter, accumulators are stack slots that mem2reg promotes to registers.

Fast-math flags: by default only `reassoc` on the accumulation step of float reductions, so they vectorize; every
other float operation rounds on its own, as NumPy's do (no `contract`: a*b + c is two roundings, like the C
backend's -ffp-contract=off, so the two backends agree bit for bit). jit(fastmath=True) adds `contract` to float
+ - * and `reassoc` to the user's (KernelProgram.may_contract, may_reassociate). No flag that assumes the absence
of NaN, inf or signed zeros (nnan, ninf, nsz), nor arcp or afn, is ever set.
"""
from __future__ import annotations

import itertools
import re
import struct

from numfn.codegen.program import KernelProgram
from numfn.codegen.tiling import tiled_pairs
from numfn.dtype import DType, dtypes
from numfn.codegen.layout import Layout
from numfn.runtime import keeps_arena
from numfn.renderer import buffer_name, half_bits, out_of_line, range_name
from numfn.ir.primitives import PRIMITIVES, register
from numfn.ir.uop import Ops, UOp

_INT_BIN = {Ops.ADD: "add", Ops.SUB: "sub", Ops.MUL: "mul", Ops.AND: "and", Ops.OR: "or", Ops.XOR: "xor",
            Ops.SHL: "shl"}
_FLOAT_BIN = {Ops.ADD: "fadd", Ops.SUB: "fsub", Ops.MUL: "fmul", Ops.FDIV: "fdiv", Ops.FMOD: "frem"}
_FCMP = {Ops.CMPLT: "olt", Ops.CMPLE: "ole", Ops.CMPEQ: "oeq", Ops.CMPNE: "une"}
_ICMP_S = {Ops.CMPLT: "slt", Ops.CMPLE: "sle", Ops.CMPEQ: "eq", Ops.CMPNE: "ne"}
_ICMP_U = {Ops.CMPLT: "ult", Ops.CMPLE: "ule", Ops.CMPEQ: "eq", Ops.CMPNE: "ne"}
_INTRINSIC = {Ops.SQRT: "sqrt", Ops.EXP: "exp", Ops.EXP2: "exp2", Ops.LOG: "log", Ops.LOG2: "log2", Ops.SIN: "sin",
              Ops.COS: "cos", Ops.FLOOR: "floor", Ops.CEIL: "ceil", Ops.TRUNC: "trunc", Ops.ABS: "fabs",
              Ops.POW: "pow", Ops.MAX: "maximum", Ops.MIN: "minimum", Ops.RINT: "rint", Ops.LOG10: "log10",
              Ops.FMA: "fma"}
# the float functions LLVM has no intrinsic (or instruction) for: calls of the C math library's, by the name the table
# of primitives gives (numfn.ir.primitives)
_LIBM = {op: p.libm for op, p in PRIMITIVES.items()
         if p.libm is not None and op not in _INTRINSIC and op not in _FLOAT_BIN}


def ltype(dt: DType) -> str:
    return dt.lname


def storage_type(dt: DType) -> str:
    """How a value is kept in memory: NumPy stores bools as one byte."""
    return "i8" if dt.is_bool else dt.lname


def llvm_literal(value, dt: DType) -> str:
    if dt.is_bool: return "true" if value else "false"
    if dt is dtypes.float16: return str(half_bits(value) - (1 << 16 if half_bits(value) >= 1 << 15 else 0))
    if dt.is_float:
        # LLVM writes float constants as the bits of the equivalent double, in hex
        return f"0x{struct.unpack('<Q', struct.pack('<d', float(value)))[0]:016X}"
    bits = dt.bits
    value = int(value) & ((1 << bits) - 1)
    return str(value - (1 << bits) if value >= 1 << (bits - 1) else value)


class _Function:
    """State while rendering one kernel: SSA names, the current block, declarations needed."""

    def __init__(self, declares: set[str]):
        self.names: dict[UOp, str] = {}
        self.lines: list[str] = []
        self.allocas: list[str] = []
        self.block = "entry"
        self.counter = 0
        self.declares = declares

    def fresh(self, hint: str = "v") -> str:
        self.counter += 1
        return f"%{hint}{self.counter}"

    def ref(self, u: UOp) -> str:
        if u.op is Ops.CONST: return llvm_literal(u.arg, u.dtype)
        if u.op is Ops.LOAD and u.src[0].op is Ops.DEFINE_ACC: return self.names[u]
        return self.names[u]

    def emit(self, line: str) -> None:
        self.lines.append("  " + line)

    def label(self, name: str) -> None:
        self.lines.append(f"{name}:")
        self.block = name


def _unsupported(u: UOp) -> NotImplementedError:
    return NotImplementedError(f"LLVM renderer: {u.op.name} on {u.dtype.name}")


def _arith(float_op: str | None, int_op: str | None):
    """A binary instruction: `float_op` on floats (with the fast-math flags the program allows, see _alu),
    `int_op` on integers and bools."""
    def rule(f: _Function, u: UOp, a: list[str], t: str, flags: str) -> str:
        if u.dtype.is_float and float_op is not None: return f"{float_op} {flags}{t} {a[0]}, {a[1]}"
        if not u.dtype.is_float and int_op is not None: return f"{int_op} {t} {a[0]}, {a[1]}"
        raise _unsupported(u)
    return rule


def _signed(signed: str, unsigned: str):
    """An integer instruction that depends on signedness (bools are unsigned)."""
    def rule(f: _Function, u: UOp, a: list[str], t: str, flags: str) -> str:
        if u.dtype.is_float: raise _unsupported(u)
        sdt = u.src[0].dtype
        return f"{unsigned if sdt.is_unsigned or sdt.is_bool else signed} {t} {a[0]}, {a[1]}"
    return rule


def _compare(f: _Function, u: UOp, a: list[str], t: str, flags: str) -> str:
    sdt = u.src[0].dtype
    if sdt.is_float: return f"fcmp {_FCMP[u.op]} {t} {a[0]}, {a[1]}"
    table = _ICMP_U if (sdt.is_unsigned or sdt.is_bool) else _ICMP_S
    return f"icmp {table[u.op]} {t} {a[0]}, {a[1]}"


def _neg(f: _Function, u: UOp, a: list[str], t: str, flags: str) -> str:
    return f"fneg {t} {a[0]}" if u.dtype.is_float else f"sub {t} 0, {a[0]}"


def _call(f: _Function, name: str, t: str, a: list[str]) -> str:
    f.declares.add(f"declare {t} @{name}({', '.join([t] * len(a))})")
    return f"call {t} @{name}({', '.join(f'{t} {x}' for x in a)})"


def _intrinsic(f: _Function, u: UOp, a: list[str], t: str, flags: str) -> str:
    """An LLVM intrinsic on floats; MAX and MIN also on integers (smax/umax, smin/umin)."""
    if u.dtype.is_float:
        return _call(f, f"llvm.{_INTRINSIC[u.op]}.{'f32' if u.dtype is dtypes.float32 else 'f64'}", t, a)
    if u.op not in (Ops.MAX, Ops.MIN): raise _unsupported(u)
    sdt = u.src[0].dtype
    kind = ("u" if sdt.is_unsigned or sdt.is_bool else "s") + ("max" if u.op is Ops.MAX else "min")
    return _call(f, f"llvm.{kind}.{t}", t, a)


def _libm(f: _Function, u: UOp, a: list[str], t: str, flags: str) -> str:
    if not u.dtype.is_float: raise _unsupported(u)
    return _call(f, _LIBM[u.op] + ("f" if u.dtype is dtypes.float32 else ""), t, a)


# GCD's helpers are private functions (LLVM inlines them), each on one line so that render_program gathers them with
# the declarations, once per module. 32 and 64 bits: Stein's binary GCD, a loop of data-dependent length (the common
# power of two apart, each step strips b's factors of two and replaces (a, b) by (min, max - min) until b is 0); the
# loop keeps the kernel scalar, still faster than NumPy's Euclid (int64: 0.2 s for 2**20 pairs where NumPy takes 0.3)
GCD_HELPER = " ".join("""define private i64 @numfn_gcd(i64 %a, i64 %b) nounwind {
entry:
  %az = icmp eq i64 %a, 0
  br i1 %az, label %ret_b, label %check_b
check_b:
  %bz = icmp eq i64 %b, 0
  br i1 %bz, label %ret_a, label %start
start:
  %ab = or i64 %a, %b
  %k = call i64 @llvm.cttz.i64(i64 %ab, i1 true)
  %ta = call i64 @llvm.cttz.i64(i64 %a, i1 true)
  %a0 = lshr i64 %a, %ta
  br label %loop
loop:
  %x = phi i64 [ %a0, %start ], [ %lo, %loop ]
  %y = phi i64 [ %b, %start ], [ %d, %loop ]
  %ty = call i64 @llvm.cttz.i64(i64 %y, i1 true)
  %y1 = lshr i64 %y, %ty
  %lt = icmp ult i64 %y1, %x
  %lo = select i1 %lt, i64 %y1, i64 %x
  %hi = select i1 %lt, i64 %x, i64 %y1
  %d = sub i64 %hi, %lo
  %dz = icmp eq i64 %d, 0
  br i1 %dz, label %done, label %loop
done:
  %g = shl i64 %lo, %k
  ret i64 %g
ret_a:
  ret i64 %a
ret_b:
  ret i64 %b
}""".split())


def gcd_steps_helper(t: str, bits: int) -> str:
    """numfn_gcd_<t> for 8 and 16 bits: a binary GCD of 2 * bits branch-free steps in straight-line code, so that a
    kernel's loop around it vectorizes: 1 ms for 2**20 pairs of bytes (3 ms of int16), where the loop takes 25 (115)
    and NumPy 50 (140), for 0.15 s (0.22 s) of LLVM's time more than the loop; for 32 and 64 bits, straight lines of
    64 and 128 steps would cost more to compile than they save.
    With s the lowest set bit of a | b, b keeps bit s; a step halves a when its bit s is clear, else replaces (a, b)
    by (|a - b| / 2, min(a, b)). Each step shortens a or b by a bit, so after 2 * bits steps a is 0 and b the gcd."""
    lines = [f"define private {t} @numfn_gcd_{t}({t} %a, {t} %b) nounwind {{", "entry:", f"%o = or {t} %a, %b",
             f"%n = sub {t} 0, %o", f"%s = and {t} %o, %n", f"%as = and {t} %a, %s", f"%has = icmp ne {t} %as, 0",
             f"%a0 = select i1 %has, {t} %b, {t} %a", f"%b0 = select i1 %has, {t} %a, {t} %b"]
    for i in range(2 * bits):
        x, y, j = f"%a{i}", f"%b{i}", i + 1
        lines += [f"%m{i} = and {t} {x}, %s", f"%odd{i} = icmp ne {t} %m{i}, 0", f"%lt{i} = icmp ult {t} {x}, {y}",
                  f"%lo{i} = select i1 %lt{i}, {t} {x}, {t} {y}", f"%hi{i} = select i1 %lt{i}, {t} {y}, {t} {x}",
                  f"%d{i} = sub {t} %hi{i}, %lo{i}", f"%dh{i} = lshr {t} %d{i}, 1", f"%xh{i} = lshr {t} {x}, 1",
                  f"%a{j} = select i1 %odd{i}, {t} %dh{i}, {t} %xh{i}", f"%b{j} = select i1 %odd{i}, {t} %lo{i}, {t} {y}"]
    return " ".join([*lines, f"ret {t} %b{2 * bits}", "}"])


def _gcd(f: _Function, u: UOp, a: list[str], t: str, flags: str) -> str:
    """GCD: a call of the module's helper: the branch-free one of its width for 8 and 16 bits, else numfn_gcd, the
    operands zero-extended to i64 and the result truncated back."""
    if not u.dtype.is_unsigned: raise _unsupported(u)
    if u.dtype.bits <= 16:
        f.declares.add(gcd_steps_helper(t, u.dtype.bits))
        return f"call {t} @numfn_gcd_{t}({t} {a[0]}, {t} {a[1]})"
    f.declares.update({"declare i64 @llvm.cttz.i64(i64, i1)", GCD_HELPER})
    if t == "i64": return f"call i64 @numfn_gcd(i64 {a[0]}, i64 {a[1]})"
    wide = [f.fresh("z") for _ in a]
    for w, x in zip(wide, a): f.emit(f"{w} = zext {t} {x} to i64")
    g = f.fresh("g")
    f.emit(f"{g} = call i64 @numfn_gcd(i64 {wide[0]}, i64 {wide[1]})")
    return f"trunc i64 {g} to {t}"


# op -> rule(function state, node, operands, the operands' LLVM type, fast-math flags): the instruction computing it
ALU_RULES = {
    **{op: _arith(_FLOAT_BIN.get(op), _INT_BIN.get(op)) for op in {*_FLOAT_BIN, *_INT_BIN}},
    Ops.IDIV: _signed("sdiv", "udiv"),
    Ops.IMOD: _signed("srem", "urem"),
    Ops.SHR: _signed("ashr", "lshr"),
    **{op: _compare for op in _FCMP},
    Ops.NEG: _neg,
    Ops.WHERE: lambda f, u, a, t, flags: f"select i1 {a[0]}, {ltype(u.dtype)} {a[1]}, {ltype(u.dtype)} {a[2]}",
    **{op: _intrinsic for op in _INTRINSIC},
    **{op: _libm for op in _LIBM},
    Ops.GCD: _gcd,
}


def fast_math_flags(prog: KernelProgram, u: UOp) -> str:
    """The fast-math flags of `u`'s instruction ("" or e.g. "reassoc contract "): see the module's docstring."""
    return ("reassoc " if prog.may_reassociate(u) else "") + ("contract " if prog.may_contract(u) else "")


def _alu(f: _Function, u: UOp, flags: str) -> str:
    """The instruction computing an elementwise node: its op's rule in the table of primitives."""
    rule = PRIMITIVES[u.op].render.get("llvm")
    if rule is None: raise _unsupported(u)
    return rule(f, u, [f.ref(s) for s in u.src], ltype(u.src[0].dtype), flags)


def _cast(f: _Function, u: UOp) -> str:
    src, dst = u.src[0].dtype, u.dtype
    x, ts, td = f.ref(u.src[0]), ltype(src), ltype(dst)
    if u.op is Ops.BITCAST: return f"bitcast {ts} {x} to {td}"
    if src.is_float and dst.is_float:
        return f"{'fpext' if dst.itemsize > src.itemsize else 'fptrunc'} {ts} {x} to {td}"
    if src.is_float: return f"{'fptoui' if dst.is_unsigned else 'fptosi'} {ts} {x} to {td}"
    if dst.is_float: return f"{'uitofp' if (src.is_unsigned or src.is_bool) else 'sitofp'} {ts} {x} to {td}"
    if dst.bits == src.bits: return f"bitcast {ts} {x} to {td}"   # int32 <-> uint32: the same bits
    if dst.bits < src.bits: return f"trunc {ts} {x} to {td}"
    return f"{'zext' if (src.is_unsigned or src.is_bool) else 'sext'} {ts} {x} to {td}"


# Loops LLVM is told not to unroll (a loop ID with llvm.loop.unroll.disable, each its own, given when the module is
# assembled: render_program): a loop of at most FULL_UNROLL_TRIPS constant trips, with loops inside, whose nest,
# fully unrolled, would exceed UNROLLED_LINES lines of IR. LLVM fully unrolls nests of small constant trip counts
# inner loop first: a (4, 8, 32) strided copy became 1,024 stores and took 0.8 s to compile, a two-layer network's
# training loop 3.6 s of LLVM for 17 kernels (1.1-1.6 s now). Loops of more trips are never fully unrolled, and a
# loop alone LLVM's own thresholds bound. (Marking long bodies too, the codegen's upcast ones, made the straight-line
# program of benchmarks/compile_programs.py compile slower: 0.9 s of LLVM became 1.6-2.1 s.)
UNROLLED_LINES = 1024
FULL_UNROLL_TRIPS = 64
NO_UNROLL = "!numfn.no_unroll"


def _loop_ids(module: str) -> str:
    """`module` with each NO_UNROLL mark replaced by a distinct loop ID saying "do not unroll", defined at its end."""
    count = itertools.count()
    text = re.sub(re.escape(NO_UNROLL), lambda _: f"!{next(count) + 1}", module)
    n = next(count)
    if n == 0: return module
    return text + "".join(f"!{k} = distinct !{{!{k}, !0}}\n" for k in range(1, n + 1)) + \
        '!0 = !{!"llvm.loop.unroll.disable"}\n'


def render_kernel(prog: KernelProgram) -> str:
    """A kernel as an internal LLVM function, preceded by declarations of the intrinsics it calls (the program
    hoists and deduplicates them)."""
    f = _Function(set())
    params = []
    for p in prog.params:
        f.names[p] = "%" + buffer_name(p.arg)
        params.append(f"ptr noalias {f.names[p]}")
    core = prog.name if prog.parallel is None else f"{prog.name}_loop"
    bounds = [] if prog.parallel is None else ["i64 %start", "i64 %end"]
    nests: list[list[int]] = []   # the loops around the current line (see UNROLLED_LINES)
    for u in prog.uops:
        op = u.op
        if op is Ops.RANGE:
            r = range_name(u)
            hi = "%end" if u is prog.parallel else f.ref(u.src[-1])
            if u is prog.parallel and len(u.src) > 1:   # a thread's part of a loop of run-time length
                below = f.fresh("lt")
                f.emit(f"{below} = icmp slt i64 %end, {f.ref(u.src[1])}")
                hi = f.fresh("hi")
                f.emit(f"{hi} = select i1 {below}, i64 %end, i64 {f.ref(u.src[1])}")
            pre = f.block
            f.emit(f"br label %{r}.head")
            f.label(f"{r}.head")
            f.names[u] = f"%{r}"
            lo = "%start" if u is prog.parallel else "0"
            f.emit(f"%{r} = phi i64 [ {lo}, %{pre} ], [ %{r}.next, %{r}.latch ]")
            f.emit(f"%{r}.cond = icmp slt i64 %{r}, {hi}")
            f.emit(f"br i1 %{r}.cond, label %{r}.body, label %{r}.exit")
            f.label(f"{r}.body")
            nests.append([len(f.lines), 0, 0])   # (its first body line, inner loops' lines, unrolled)
        elif op is Ops.END:
            r = range_name(u.src[0])
            f.emit(f"br label %{r}.latch")
            f.label(f"{r}.latch")
            f.emit(f"%{r}.next = add nuw nsw i64 %{r}, 1")
            start, inner_lines, inner_unrolled = nests.pop()
            lines = len(f.lines) - start
            bound = u.src[0].src[-1]
            trips = bound.arg if bound.op is Ops.CONST and u.src[0] is not prog.parallel else None
            # LLVM fully unrolls loops of a few constant trips, inner ones first: the nest's fully unrolled size
            unrolled = lines if trips is None or trips > FULL_UNROLL_TRIPS else \
                trips * (lines - inner_lines + inner_unrolled)
            big = inner_lines > 0 and unrolled > UNROLLED_LINES   # (a nest: a loop alone LLVM bounds itself)
            if nests:   # what this loop adds to the one around it: its lines, unrolled unless marked
                nests[-1][1] += lines + 4
                nests[-1][2] += (lines if big else unrolled) + 4
            f.emit(f"br label %{r}.head" + (f", !llvm.loop {NO_UNROLL}" if big else ""))
            f.label(f"{r}.exit")
        elif op is Ops.DEFINE_ACC:
            name = f"%acc{u.arg[1]}"
            f.names[u] = name
            f.allocas.append(f"{name} = alloca {ltype(u.dtype)}")
            init = f.ref(u.src[-1]) if u.src and u.src[-1].op is not Ops.RANGE else llvm_literal(u.arg[0], u.dtype)
            f.emit(f"store {ltype(u.dtype)} {init}, ptr {name}")
        elif op is Ops.ASSIGN:
            f.emit(f"store {ltype(u.src[1].dtype)} {f.ref(u.src[1])}, ptr {f.ref(u.src[0])}")
        elif op is Ops.LOAD and u.src[0].op is Ops.DEFINE_ACC:
            name = f.fresh("a")
            f.names[u] = name
            f.emit(f"{name} = load {ltype(u.dtype)}, ptr {f.ref(u.src[0])}")
        elif op is Ops.LOAD:
            ptr, name = f.fresh("p"), f.fresh("ld")
            st = storage_type(u.dtype)
            f.emit(f"{ptr} = getelementptr inbounds {st}, ptr {f.ref(u.src[0])}, i64 {f.ref(u.src[1])}")
            if u.dtype.is_bool:
                raw = f.fresh("b")
                f.emit(f"{raw} = load i8, ptr {ptr}")
                f.emit(f"{name} = icmp ne i8 {raw}, 0")
            else:
                f.emit(f"{name} = load {st}, ptr {ptr}, align {u.dtype.itemsize}")
            f.names[u] = name
        elif op is Ops.STORE:
            buf, idx, val = u.src[:3]
            if len(u.src) > 3:   # gated: a branch around the store (LLVM turns it into a masked store)
                skip = f.fresh("skip")[1:]
                do = f.fresh("store")[1:]
                f.emit(f"br i1 {f.ref(u.src[3])}, label %{do}, label %{skip}")
                f.label(do)
            ptr = f.fresh("p")
            st = storage_type(val.dtype)
            f.emit(f"{ptr} = getelementptr inbounds {st}, ptr {f.ref(buf)}, i64 {f.ref(idx)}")
            v = f.ref(val)
            if val.dtype.is_bool:
                wide = f.fresh("b")
                f.emit(f"{wide} = zext i1 {v} to i8")
                v = wide
            f.emit(f"store {st} {v}, ptr {ptr}, align {max(val.dtype.itemsize, 1)}")
            if len(u.src) > 3:
                f.emit(f"br label %{skip}")
                f.label(skip)
        else:
            name = f.fresh()
            f.names[u] = name
            f.emit(f"{name} = {_alu(f, u, fast_math_flags(prog, u))}")
    body = "\n".join(["entry:", *("  " + a for a in f.allocas), *f.lines, "  ret void"])
    attributes = "nounwind noinline" if out_of_line(prog) else "nounwind"
    out = [*sorted(f.declares), f"define internal void @{core}({', '.join(params + bounds)}) {attributes} {{", body,
           "}"]
    if prog.parallel is not None: out += _parallel_wrappers(prog, params)
    return "\n".join(out)


def _parallel_wrappers(prog: KernelProgram, params: list[str]) -> list[str]:
    """`K_body(ctx, start, end)` unpacks the buffers for the thread pool; `K(pfor, ...)` hands it to the pool, or
    runs `K_loop` over the whole range when `pfor` is null (no pool)."""
    assert prog.parallel is not None   # only parallel kernels get the wrappers
    names = ["%" + buffer_name(p.arg) for p in prog.params]
    n = prog.parallel.src[0].arg
    body = ["entry:"]
    for i, name in enumerate(names):
        body += [f"  {name}.slot = getelementptr inbounds ptr, ptr %ctx, i64 {i}",
                 f"  {name} = load ptr, ptr {name}.slot"]
    body += [f"  call void @{prog.name}_loop({', '.join(f'ptr {x}' for x in names)}, i64 %start, i64 %end)",
             "  ret void"]
    wrap = ["entry:", f"  %ctx = alloca [{len(names)} x ptr]"]
    for i, name in enumerate(names):
        wrap += [f"  {name}.slot = getelementptr inbounds ptr, ptr %ctx, i64 {i}",
                 f"  store ptr {name}, ptr {name}.slot"]
    wrap += ["  %serial = icmp eq ptr %pfor, null", "  br i1 %serial, label %alone, label %pool",
             "alone:", f"  call void @{prog.name}_loop({', '.join(f'ptr {x}' for x in names)}, i64 0, i64 {n})",
             "  ret void",
             "pool:", f"  call void %pfor(ptr @{prog.name}_body, ptr %ctx, i64 {n})", "  ret void"]
    return [f"define internal void @{prog.name}_body(ptr %ctx, i64 %start, i64 %end) nounwind {{", *body, "}",
            f"define internal void @{prog.name}(ptr %pfor, {', '.join(params)}) nounwind {{", *wrap, "}"]


def render_forward(prog: KernelProgram, target: str) -> str:
    """A kernel that computes what kernel `target` computes (an equal codegen.program.kernel_key): a function of
    its own name calling `target` with its buffers, so that the code is built and compiled once."""
    buffers = [f"ptr %a{k}" for k in range(len(prog.params))]
    params = (["ptr %pfor"] if prog.parallel is not None else []) + buffers
    out = [f"define internal void @{prog.name}({', '.join(params)}) nounwind {{",
           f"  call void @{target}({', '.join(params)})", "  ret void", "}"]
    if prog.parallel is not None:   # its loop over [start, end) too, which tiles call (render_tiles)
        params = buffers + ["i64 %start", "i64 %end"]
        out += [f"define internal void @{prog.name}_loop({', '.join(params)}) nounwind {{",
                f"  call void @{target}_loop({', '.join(params)})", "  ret void", "}"]
    return "\n".join(out)


def render_extern(prog) -> str:
    """An extern call (numfn.extern.ExternProgram) as an internal function over the externs table and its buffers:
    per batch element, its calls through the table's function pointers, every argument by reference (the Fortran
    convention: stack slots filled once), then one hidden length (i64 1) per character argument."""
    from numfn.ir.extern import Char, Int, Ptr, Real
    from numfn.renderer.c import batch_offset
    itype = "i64" if prog.int_bits == 64 else "i32"
    ftype = ltype(prog.dtype)
    params = ["ptr %externs"] + [f"ptr %{buffer_name(p.arg)}" for p in prog.params]
    entry, body = ["entry:"], []
    total = 1
    for n in prog.batch: total *= n
    counter = 0
    for k, call in enumerate(prog.calls):
        args, chars = [], 0
        for i, a in enumerate(call.args):
            name = f"%a{k}.{i}"
            if isinstance(a, Ptr):
                p = prog.params[a.param]
                off = str(a.offset)
                if total > 1:
                    for x, div, mod, st in batch_offset(a, prog.batch, "%b"):
                        counter += 1
                        t = f"%t{counter}"
                        body.append(f"  {t}.q = sdiv i64 {x}, {div}")
                        q = f"{t}.q"
                        if mod:
                            body.append(f"  {t}.r = srem i64 {q}, {mod}")
                            q = f"{t}.r"
                        body.append(f"  {t}.m = mul i64 {q}, {st}")
                        body.append(f"  {t} = add i64 {off}, {t}.m")
                        off = t
                body.append(f"  {name} = getelementptr {storage_type(p.dtype)}, ptr %{buffer_name(p.arg)}, i64 {off}")
            elif isinstance(a, Int):
                entry += [f"  {name} = alloca {itype}", f"  store {itype} {a.value}, ptr {name}"]
            elif isinstance(a, Char):
                entry += [f"  {name} = alloca i8", f"  store i8 {ord(a.value)}, ptr {name}"]
                chars += 1
            elif isinstance(a, Real) and prog.dtype.is_complex:   # a complex scalar: its two parts
                comp, v = prog.dtype.component, complex(a.value)
                ct = ltype(comp)
                entry += [f"  {name} = alloca [2 x {ct}]", f"  store {ct} {llvm_literal(v.real, comp)}, ptr {name}",
                          f"  {name}.im = getelementptr inbounds {ct}, ptr {name}, i64 1",
                          f"  store {ct} {llvm_literal(v.imag, comp)}, ptr {name}.im"]
            elif isinstance(a, Real):
                value = llvm_literal(a.value, prog.dtype)
                entry += [f"  {name} = alloca {ftype}", f"  store {ftype} {value}, ptr {name}"]
            args.append(f"ptr {name}")
        args += ["i64 1"] * chars
        body += [f"  %fp{k} = getelementptr inbounds ptr, ptr %externs, i64 {call.symbol}",
                 f"  %fn{k} = load ptr, ptr %fp{k}",
                 f"  call void %fn{k}({', '.join(args)})"]
    lo, hi = ("%start", "%end") if prog.parallel else ("0", str(total))
    if total > 1:
        lines = entry + ["  br label %b.head", "b.head:", f"  %b = phi i64 [ {lo}, %entry ], [ %b.next, %b.body ]",
                         f"  %b.more = icmp slt i64 %b, {hi}", "  br i1 %b.more, label %b.body, label %b.exit",
                         "b.body:", *body, "  %b.next = add nsw i64 %b, 1", "  br label %b.head", "b.exit:",
                         "  ret void"]
    else:
        lines = entry + body + ["  ret void"]
    core = f"{prog.name}_loop" if prog.parallel else prog.name
    bounds = ["i64 %start", "i64 %end"] if prog.parallel else []
    out = [f"define internal void @{core}({', '.join(params + bounds)}) nounwind {{", *lines, "}"]
    if prog.parallel:   # the batch loop on the thread pool, as a parallel kernel's outer loop
        names = [p.split(" ")[-1] for p in params]
        body = ["entry:"]
        for i, name in enumerate(names):
            body += [f"  {name}.slot = getelementptr inbounds ptr, ptr %ctx, i64 {i}",
                     f"  {name} = load ptr, ptr {name}.slot"]
        body += [f"  call void @{core}({', '.join(f'ptr {x}' for x in names)}, i64 %start, i64 %end)", "  ret void"]
        wrap = ["entry:", f"  %ctx = alloca [{len(names)} x ptr]"]
        for i, name in enumerate(names):
            wrap += [f"  {name}.slot = getelementptr inbounds ptr, ptr %ctx, i64 {i}",
                     f"  store ptr {name}, ptr {name}.slot"]
        wrap += ["  %serial = icmp eq ptr %pfor, null", "  br i1 %serial, label %alone, label %pool",
                 "alone:", f"  call void @{core}({', '.join(f'ptr {x}' for x in names)}, i64 0, i64 {total})",
                 "  ret void", "pool:", f"  call void %pfor(ptr @{prog.name}_body, ptr %ctx, i64 {total})",
                 "  ret void"]
        out += [f"define internal void @{prog.name}_body(ptr %ctx, i64 %start, i64 %end) nounwind {{", *body, "}",
                f"define internal void @{prog.name}(ptr %pfor, {', '.join(params)}) nounwind {{", *wrap, "}"]
    return "\n".join(out)


def _loops(steps) -> list:
    """Every loop and branch of an outline of steps, nested ones too."""
    out = []
    for item in steps or ():
        if isinstance(item, int) or item[0] == "tiles": continue
        out.append(item)
        for part in item[2]: out += _loops(part)
    return out


def render_tiles(pair, programs: list[KernelProgram]) -> str:
    """Kernels `pair.first` and `pair.second` run block by block (numfn.codegen.tiling): `<first>_tiles(pfor, ...)`
    over the buffers of both hands the blocks to the thread pool, then copies each block's edge rows. A thread's
    blocks [start, end) compute into block `start`'s part of the temporary (the kernels get it shifted to the
    block's first row), last to first, each but the last moving its edge rows to their own place."""
    first, second = programs[pair.first], programs[pair.second]
    params = pair.buffers(programs)
    names = ["%" + buffer_name(p.arg) for p in params]
    temp = pair.temporary(programs)
    t, st, size = "%" + buffer_name(temp.arg), storage_type(temp.dtype), temp.dtype.itemsize
    name = f"{first.name}_tiles"

    def args(prog: KernelProgram, shifted: str | None = None) -> str:
        return ", ".join(f"ptr {shifted if shifted and p is temp else '%' + buffer_name(p.arg)}" for p in prog.params)

    def block_bounds(k: str) -> list[str]:   # %s.k, %e.k: the block's rows; %lo.k, %hi.k: the ones it copies
        return [f"  %s.{k} = mul i64 %{k}, {pair.block}", f"  %e0.{k} = add i64 %s.{k}, {pair.block}",
                f"  %elt.{k} = icmp slt i64 %e0.{k}, {pair.rows}",
                f"  %e.{k} = select i1 %elt.{k}, i64 %e0.{k}, i64 {pair.rows}",
                f"  %lo0.{k} = add i64 %s.{k}, {pair.before}", f"  %lolt.{k} = icmp slt i64 %lo0.{k}, %e.{k}",
                f"  %lo.{k} = select i1 %lolt.{k}, i64 %lo0.{k}, i64 %e.{k}",
                f"  %hi0.{k} = sub i64 %e.{k}, {pair.after}", f"  %hilt.{k} = icmp slt i64 %hi0.{k}, %lo.{k}",
                f"  %hi.{k} = select i1 %hilt.{k}, i64 %lo.{k}, i64 %hi0.{k}"]

    def rows_at(ptr: str, base: str, row: str, tag: str) -> list[str]:   # ptr = base + row * pair.row elements
        return [f"  %{tag}.off = mul i64 {row}, {pair.row}",
                f"  {ptr} = getelementptr {st}, ptr {base}, i64 %{tag}.off"]

    def copy(dst: str, src: str, rows: str, tag: str) -> list[str]:
        return [f"  %{tag}.bytes = mul i64 {rows}, {pair.row * size}",
                f"  call void @llvm.memcpy.p0.p0.i64(ptr {dst}, ptr {src}, i64 %{tag}.bytes, i1 false)"]

    body = ["entry:"]
    for i, n in enumerate(names):
        body += [f"  {n}.slot = getelementptr inbounds ptr, ptr %ctx, i64 {i}", f"  {n} = load ptr, ptr {n}.slot"]
    body += ["  %first = mul i64 %start, " + str(pair.block), *rows_at("%scratch", t, "%first", "sc"),
             "  br label %k.head", "k.head:", "  %i = phi i64 [ %start, %entry ], [ %i.next, %k.latch ]",
             "  %i.more = icmp slt i64 %i, %end", "  br i1 %i.more, label %k.body, label %k.exit", "k.body:",
             "  %k.up = add i64 %start, %end", "  %k.up1 = sub i64 %k.up, %i", "  %k = sub i64 %k.up1, 1",
             *block_bounds("k"), "  %s.neg = sub i64 0, %s.k", *rows_at("%shifted", "%scratch", "%s.neg", "sh"),
             f"  call void @{first.name}_loop({args(first, '%shifted')}, i64 %s.k, i64 %e.k)",
             f"  call void @{second.name}_loop({args(second, '%shifted')}, i64 %lo.k, i64 %hi.k)",
             "  %own = icmp eq i64 %k, %start", "  br i1 %own, label %k.latch, label %keep", "keep:",
             *rows_at("%top", t, "%s.k", "top"), "  %top.rows = sub i64 %lo.k, %s.k",
             *copy("%top", "%scratch", "%top.rows", "top"),
             *rows_at("%bottom", t, "%hi.k", "bottom"), "  %bottom.at = sub i64 %hi.k, %s.k",
             *rows_at("%bottom.src", "%scratch", "%bottom.at", "bsrc"), "  %bottom.rows = sub i64 %e.k, %hi.k",
             *copy("%bottom", "%bottom.src", "%bottom.rows", "bottom"),
             "  br label %k.latch", "k.latch:", "  %i.next = add nuw nsw i64 %i, 1", "  br label %k.head", "k.exit:",
             "  ret void"]
    wrap = ["entry:", f"  %ctx = alloca [{len(names)} x ptr]"]
    for i, n in enumerate(names):
        wrap += [f"  {n}.slot = getelementptr inbounds ptr, ptr %ctx, i64 {i}", f"  store ptr {n}, ptr {n}.slot"]
    wrap += ["  %serial = icmp eq ptr %pfor, null", "  br i1 %serial, label %alone, label %pool",
             "alone:", f"  call void @{name}_body(ptr %ctx, i64 0, i64 {pair.blocks})", "  br label %edges",
             "pool:", f"  call void %pfor(ptr @{name}_body, ptr %ctx, i64 {pair.blocks})", "  br label %edges",
             "edges:", "  br label %j.head", "j.head:", "  %j = phi i64 [ 0, %edges ], [ %j.next, %j.body ]",
             f"  %j.more = icmp slt i64 %j, {pair.blocks}", "  br i1 %j.more, label %j.body, label %j.exit",
             "j.body:", *block_bounds("j"),   # each block's edge rows, now that nothing reads them
             f"  call void @{second.name}_loop({args(second)}, i64 %s.j, i64 %lo.j)",
             f"  call void @{second.name}_loop({args(second)}, i64 %hi.j, i64 %e.j)",
             "  %j.next = add nuw nsw i64 %j, 1", "  br label %j.head", "j.exit:", "  ret void"]
    return "\n".join([f"define internal void @{name}_body(ptr %ctx, i64 %start, i64 %end) nounwind {{", *body, "}",
                      f"define internal void @{name}(ptr %pfor, {', '.join(f'ptr {n}' for n in names)}) nounwind {{",
                      *wrap, "}"])


def _clock(name: str) -> list[str]:
    """`%name` = clock_gettime(CLOCK_MONOTONIC) in nanoseconds (the timespec lives in %ts)."""
    return ["  call i32 @clock_gettime(i32 1, ptr %ts)",
            f"  %{name}.s.p = getelementptr inbounds {{ i64, i64 }}, ptr %ts, i32 0, i32 0",
            f"  %{name}.s = load i64, ptr %{name}.s.p",
            f"  %{name}.n.p = getelementptr inbounds {{ i64, i64 }}, ptr %ts, i32 0, i32 1",
            f"  %{name}.n = load i64, ptr %{name}.n.p",
            f"  %{name}.sn = mul i64 %{name}.s, 1000000000",
            f"  %{name} = add i64 %{name}.sn, %{name}.n"]


def render_program(entry: str, kernels: list[tuple[KernelProgram, str]], layout: Layout,
                   batched: tuple[bool, ...] | None = None, profile: bool = False, steps: list | None = None) -> str:
    """The module: constants as internal globals, kernels, and the public entry `i32 entry(ptr buffers)` (the
    outputs, then the inputs, then the pointer constants) returning 0, or 1 when the scratch arena cannot be
    allocated. With `batched` (one flag per input) the entry takes
    `i64 start, i64 end` first and loops over examples of a leading batch axis (see the C renderer). With
    `profile` (DEBUG=2), each kernel's nanoseconds are added to the exported global `<entry>_ns`, its calls counted
    after them. `steps`: the order
    of the kernels with loops and branches around some of them (see the C renderer)."""
    declares: set[str] = set()
    funcs = []
    for _, src in kernels:
        lines = src.split("\n")
        module = [line for line in lines if line.startswith(("declare ", "define private "))]   # helpers: one line
        declares.update(module)
        funcs.append("\n".join(line for line in lines if line not in module))
    out = []
    for buf, dt, data in layout.embedded_constants:
        st = storage_type(dt)
        values = ", ".join(f"{st} {llvm_literal(v, dt) if not dt.is_bool else int(bool(v))}"
                           for v in data.reshape(-1).tolist())
        out.append(f"@{buffer_name(buf)} = internal unnamed_addr constant [{buf.size} x {st}] [{values}], "
                   f"align 64")
    out += funcs
    tiles = [render_tiles(pair, [prog for prog, _ in kernels]) for pair in tiled_pairs(steps)]
    if tiles: declares.add("declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)")
    out += tiles
    pointers = [b for b, _ in layout.outputs] + [b for b, _ in layout.inputs] + \
        [b for b, _, _ in layout.pointer_constants]
    advancing = set() if batched is None else \
        {b for b, _ in layout.outputs} | {b for (b, _), flag in zip(layout.inputs, batched) if flag}
    params = ["ptr %buffers"] if batched is None else ["i64 %start", "i64 %end", "ptr %buffers"]
    body = ["entry:"]
    # small intermediates (a loop's scalars: counters, carried values, one element read or written) live on the
    # stack: once LLVM inlines the kernels into this function their loads and stores become registers
    on_stack = layout.on_stack
    for buf, nbytes in sorted(on_stack.items(), key=lambda t: t[0].number):
        body.append(f"  %{buffer_name(buf)} = alloca [{nbytes} x i8], align 64")
    # (no heap arena when every intermediate is on the stack)
    arena_bytes = layout.heap_arena_bytes
    for i, b in enumerate(pointers):
        body += [f"  %{buffer_name(b)}.slot = getelementptr inbounds ptr, ptr %buffers, i64 {i}",
                 f"  %{buffer_name(b)} = load ptr, ptr %{buffer_name(b)}.slot"]
    if layout.externs:   # the externs table follows the pointer constants (see numfn.extern)
        body += [f"  %externs.slot = getelementptr inbounds ptr, ptr %buffers, i64 {len(pointers)}",
                 "  %externs = load ptr, ptr %externs.slot"]
    if any(prog.parallel is not None for prog, _ in kernels):   # the thread pool follows the buffers
        body += [f"  %pfor.slot = getelementptr inbounds ptr, ptr %buffers, i64 {len(pointers) + bool(layout.externs)}",
                 "  %pfor = load ptr, ptr %pfor.slot"]
    if arena_bytes:
        declares.add("declare noalias ptr @malloc(i64)")
        declares.add("declare void @free(ptr)")
        if keeps_arena(arena_bytes):   # the arena the last call left, else a fresh one (see the C renderer)
            out.append(f"@{entry}_arena = global ptr null, align 8")
            body += [f"  %arena.kept = atomicrmw xchg ptr @{entry}_arena, ptr null acquire",
                     "  %arena.none = icmp eq ptr %arena.kept, null",
                     "  br i1 %arena.none, label %alloc, label %run",
                     "alloc:", f"  %arena.new = call ptr @malloc(i64 {arena_bytes})",
                     "  %oom = icmp eq ptr %arena.new, null",
                     "  br i1 %oom, label %fail, label %run",
                     "fail:", "  ret i32 1", "run:",
                     "  %arena = phi ptr [ %arena.kept, %entry ], [ %arena.new, %alloc ]"]
        else:
            body += [f"  %arena = call ptr @malloc(i64 {arena_bytes})",
                     "  %oom = icmp eq ptr %arena, null",
                     "  br i1 %oom, label %fail, label %run",
                     "fail:", "  ret i32 1", "run:"]
        for buf, _, offset in layout.intermediates:
            if buf not in on_stack:
                body.append(f"  %{buffer_name(buf)} = getelementptr inbounds i8, ptr %arena, i64 {offset}")
    # buffers a loop swaps live in stack slots: each use loads the pointer the slot holds then (a pair of small
    # buffers on the stack is copied instead, so that both keep their address and their values stay in registers)
    copied = {pair for item in _loops(steps) for pair in zip(item[1].state, item[1].next)
              if pair[1] is not None and pair[0].arg in on_stack and pair[1].arg in on_stack}
    swapped = {b.arg for item in _loops(steps) for pair in zip(item[1].state, item[1].next) if pair[1] is not None
               and pair not in copied for b in pair}
    for buf in sorted(swapped, key=lambda b: b.number):
        name = buffer_name(buf)
        body += [f"  %{name}.var = alloca ptr", f"  store ptr %{name}, ptr %{name}.var"]
    uses = iter(range(1 << 62))
    constants = {buffer_name(b) for b, _, _ in layout.embedded_constants}
    if batched is not None:
        body += ["  br label %batch.head", "batch.head:",
                 f"  %b = phi i64 [ %start, %{'run' if arena_bytes else 'entry'} ], [ %b.next, %batch.latch ]",
                 "  %b.more = icmp slt i64 %b, %end", "  br i1 %b.more, label %batch.body, label %batch.exit",
                 "batch.body:"]
        dtypes_of = dict((*layout.outputs, *layout.inputs))
        for buf in sorted(advancing, key=lambda b: (b.category, b.number)):
            name = buffer_name(buf)
            body += [f"  %{name}.off = mul i64 %b, {buf.size}",
                     f"  %{name}.at = getelementptr inbounds {storage_type(dtypes_of[buf])}, ptr %{name}, "
                     f"i64 %{name}.off"]

    def arg(buf) -> str:
        name = buffer_name(buf)
        if buf in swapped:
            v = f"%{name}.u{next(uses)}"
            body.append(f"  {v} = load ptr, ptr %{name}.var")
            return v
        return f"@{name}" if name in constants else f"%{name}.at" if buf in advancing else f"%{name}"

    if profile:
        declares.add("declare i32 @clock_gettime(i32, ptr)")
        # nanoseconds per kernel, then calls per kernel
        out.insert(0, f"@{entry}_ns = global [{2 * max(len(kernels), 1)} x i64] zeroinitializer, align 8")
        body.append("  %ts = alloca { i64, i64 }")

    def call(k: int, pair=None) -> None:   # kernel k, or with `pair` the pair it begins (time counted as k's)
        prog = kernels[k][0]
        t = next(uses)
        if pair is None:
            args = ([] if prog.parallel is None else ["ptr %pfor"]) + \
                (["ptr %externs"] if getattr(prog, "externs", False) else []) + \
                [f"ptr {arg(p.arg)}" for p in prog.params]
        else:
            args = ["ptr %pfor"] + [f"ptr {arg(p.arg)}" for p in pair.buffers([k for k, _ in kernels])]
        if profile: body.extend(_clock(f"t0.{t}"))
        body.append(f"  call void @{prog.name}{'' if pair is None else '_tiles'}({', '.join(args)})")
        if profile:
            body.extend(_clock(f"t1.{t}"))
            body.extend([f"  %dt.{t} = sub i64 %t1.{t}, %t0.{t}",
                         f"  %slot.{t} = getelementptr inbounds i64, ptr @{entry}_ns, i64 {k}",
                         f"  %old.{t} = load i64, ptr %slot.{t}",
                         f"  %new.{t} = add i64 %old.{t}, %dt.{t}",
                         f"  store i64 %new.{t}, ptr %slot.{t}",
                         f"  %cslot.{t} = getelementptr inbounds i64, ptr @{entry}_ns, i64 {len(kernels) + k}",
                         f"  %cold.{t} = load i64, ptr %cslot.{t}",
                         f"  %cnew.{t} = add i64 %cold.{t}, 1",
                         f"  store i64 %cnew.{t}, ptr %cslot.{t}"])

    def flag_value(loop) -> str:
        f, n = arg(loop.flag.arg), next(uses)
        st = storage_type(loop.flag.dtype)
        body.append(f"  %flag.{n} = load {st}, ptr {f}")
        return f"%flag.{n}"

    def run(items: list) -> None:
        for item in items:
            if isinstance(item, int):
                call(item)
                continue
            kind, loop, parts = item
            if kind == "tiles":
                call(loop.first, loop)
                continue
            n = next(uses)
            if kind == "loop":   # while (cond) { body; swap each state buffer with its next }
                body.extend([f"  br label %loop{n}.head", f"loop{n}.head:"])
                run(parts[0])
                f = flag_value(loop)
                body.extend([f"  %go.{n} = icmp ne i8 {f}, 0", f"  br i1 %go.{n}, label %loop{n}.body, "
                             f"label %loop{n}.exit", f"loop{n}.body:"])
                run(parts[1])
                for cur, nxt in zip(loop.state, loop.next):
                    if nxt is None: continue
                    a, b_ = buffer_name(cur.arg), buffer_name(nxt.arg)
                    if (cur, nxt) in copied:
                        declares.add("declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)")
                        body.append(f"  call void @llvm.memcpy.p0.p0.i64(ptr %{a}, ptr %{b_}, i64 {on_stack[cur.arg]},"
                                    f" i1 false)")
                        continue
                    body.extend([f"  %sw{n}.{a} = load ptr, ptr %{a}.var", f"  %sw{n}.{b_} = load ptr, ptr %{b_}.var",
                                 f"  store ptr %sw{n}.{b_}, ptr %{a}.var", f"  store ptr %sw{n}.{a}, ptr %{b_}.var"])
                body.extend([f"  br label %loop{n}.head", f"loop{n}.exit:"])
            else:   # a branch: the index picks one (the last takes any other)
                f = flag_value(loop)
                cases = " ".join(f"i64 {k}, label %br{n}.{k}" for k in range(len(parts) - 1))
                body.append(f"  switch i64 {f}, label %br{n}.{len(parts) - 1} [ {cases} ]")
                for k, part in enumerate(parts):
                    body.append(f"br{n}.{k}:")
                    run(part)
                    body.append(f"  br label %br{n}.end")
                body.append(f"br{n}.end:")

    run(list(range(len(kernels))) if steps is None else steps)
    if batched is not None:
        body += ["  br label %batch.latch", "batch.latch:", "  %b.next = add nsw i64 %b, 1", "  br label %batch.head",
                 "batch.exit:"]
    if keeps_arena(arena_bytes):   # kept for the next call, unless another call's arena is kept already
        body += [f"  %arena.back = cmpxchg ptr @{entry}_arena, ptr null, ptr %arena release monotonic",
                 "  %arena.stored = extractvalue { ptr, i1 } %arena.back, 1",
                 "  br i1 %arena.stored, label %done, label %release",
                 "release:", "  call void @free(ptr %arena)", "  br label %done", "done:"]
    elif arena_bytes: body.append("  call void @free(ptr %arena)")
    body.append("  ret i32 0")
    out.append(f"define i32 @{entry}({', '.join(params)}) nounwind {{\n" + "\n".join(body) + "\n}")
    return _loop_ids("\n\n".join([*sorted(declares), *out]) + "\n")


def _register_render_rules() -> None:
    """The LLVM rule of every elementwise op, in the table of primitives (numfn.ir.primitives)."""
    for op, rule in ALU_RULES.items(): register(op, "render", rule, backend="llvm")
    for op in (Ops.CAST, Ops.BITCAST): register(op, "render", _cast_rule, backend="llvm")


def _cast_rule(f: _Function, u: UOp, a: list[str], t: str, flags: str) -> str:
    return _cast(f, u)


_register_render_rules()
