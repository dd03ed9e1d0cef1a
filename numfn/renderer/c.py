"""C99 renderer: each kernel becomes a static function with restrict-qualified buffer parameters; the program adds
constants as static arrays and one public entry that calls the kernels in order."""
from __future__ import annotations

import math

from numfn.codegen.program import KernelProgram
from numfn.codegen.tiling import tiled_pairs
from numfn.dtype import DType, dtypes
from numfn.codegen.layout import Layout
from numfn.runtime import keeps_arena
from numfn.renderer import buffer_name, half_bits, out_of_line, range_name
from numfn.ir.primitives import PRIMITIVES, register
from numfn.ir.uop import Ops, UOp

_INFIX = {Ops.ADD: "+", Ops.SUB: "-", Ops.MUL: "*", Ops.FDIV: "/", Ops.IDIV: "/", Ops.IMOD: "%", Ops.AND: "&",
          Ops.OR: "|", Ops.XOR: "^", Ops.SHL: "<<", Ops.SHR: ">>", Ops.CMPLT: "<", Ops.CMPLE: "<=", Ops.CMPEQ: "==",
          Ops.CMPNE: "!="}
# the float functions: the C math library's, by the name the table of primitives gives (numfn.ir.primitives)
_MATH = {op: p.libm for op, p in PRIMITIVES.items() if p.libm is not None}

PRELUDE = """\
#define _POSIX_C_SOURCE 199309L   /* clock_gettime, for DEBUG=2's kernel timings */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>

/* the thread pool's parallel_for (the last slot of the buffer table), NULL to run serially */
typedef void (*numfn_body)(void **ctx, int64_t start, int64_t end);
typedef void (*numfn_pfor)(numfn_body body, void **ctx, int64_t n);
"""

# the prelude of an exported program (numfn.export): C99 and libm only; kernels' thread pool parameter is always NULL
STANDALONE_PRELUDE = """\
#include <stddef.h>
#include <stdint.h>
#include <math.h>

/* kernels written for numfn's thread pool take its parallel_for; exported code passes NULL (single-threaded) */
typedef void (*numfn_body)(void **ctx, int64_t start, int64_t end);
typedef void (*numfn_pfor)(numfn_body body, void **ctx, int64_t n);
"""


# GCD's helpers, defined in the programs that call them: the LLVM renderer's (see there). Stein's binary GCD on
# unsigned 64-bit integers, and for 8 and 16 bits a fixed number of branch-free steps in straight-line code
def gcd_steps_helper(bits: int) -> str:
    """numfn_gcd_u8 or _u16: the LLVM renderer's gcd_steps_helper in C, so that the kernel's loop vectorizes."""
    t = f"uint{bits}_t"
    lines = [f"static inline {t} numfn_gcd_u{bits}({t} a, {t} b) {{",
             f"  {t} s = ({t})((a | b) & -(a | b)), c = (a & s) ? a : b, lo, odd;", "  a = (a & s) ? b : a;",
             "  b = c;"]
    step = (f"  lo = a < b ? a : b; odd = (a & s) != 0; a = odd ? ({t})(({t})((a < b ? b : a) - lo) >> 1) : "
            f"({t})(a >> 1); b = odd ? lo : b;")
    return "\n".join([*lines, *[step] * (2 * bits), "  return b;", "}"])


GCD_HELPER = """\
static inline uint64_t numfn_gcd(uint64_t a, uint64_t b) {
  if (a == 0) return b;
  if (b == 0) return a;
  int k = __builtin_ctzll(a | b);
  a >>= __builtin_ctzll(a);
  do {
    b >>= __builtin_ctzll(b);
    if (a > b) { uint64_t t = a; a = b; b = t; }
    b -= a;
  } while (b != 0);
  return a << k;
}"""


def c_literal(value, dt: DType) -> str:
    if dt.is_bool: return "1" if value else "0"
    if dt is dtypes.float16: return f"((uint16_t){half_bits(value)}U)"   # a storage type: its bits
    if dt.is_float:
        suffix = "f" if dt is dtypes.float32 else ""
        if math.isnan(value): return f"__builtin_nan{suffix}(\"\")"
        if math.isinf(value): return f"{'-' if value < 0 else ''}__builtin_inf{suffix}()"
        # the shortest decimal that round-trips the (float64) value is exact for float32 values too
        text = repr(float(value))
        return f"{text}{suffix}" if float(text) == value else f"{float(value).hex()}{suffix}"
    if dt.is_unsigned: return f"(({dt.cname}){value}ULL)"
    if value == -2**63: return "(-9223372036854775807LL-1)"
    return f"(({dt.cname}){value}LL)" if dt is not dtypes.int64 else f"{value}LL"


def _bitcast(x: str, src: DType, dst: DType) -> str:
    return f"((union {{ {src.cname} a; {dst.cname} b; }}){{ .a = {x} }}).b"


def fp_pragma(prog: KernelProgram, u: UOp) -> str:
    """The options of clang's `#pragma clang fp` for `u`'s statement, as the LLVM renderer's fast-math flags: the
    program is compiled with -ffp-contract=off (each operation rounds on its own, as NumPy's do), reductions'
    accumulation steps may be reassociated, and jit(fastmath=True) allows contraction (and reassociation of the
    user's arithmetic)."""
    return " ".join((["reassociate(on)"] if prog.may_reassociate(u) else []) +
                    (["contract(fast)"] if prog.may_contract(u) else []))


def render_kernel(prog: KernelProgram) -> str:
    """A kernel as a static C function. A parallel kernel is three: `K_loop` runs its outer loop over [start, end),
    `K_body` unpacks the buffers for the thread pool, and `K(pfor, ...)` hands `K_body` to the pool (or runs
    `K_loop` over the whole range when there is no pool)."""
    names: dict[UOp, str] = {}
    params = []
    for p in prog.params:
        names[p] = buffer_name(p.arg)
        params.append(f"{'const ' if p not in written(prog) else ''}{p.dtype.cname} *restrict {names[p]}")
    core = f"{prog.name}_loop" if prog.parallel is not None else prog.name
    bounds = ", int64_t start, int64_t end" if prog.parallel is not None else ""
    attributes = "__attribute__((noinline)) " if out_of_line(prog) else ""
    lines = [f"static {attributes}void {core}({', '.join(params)}{bounds}) {{"]
    indent = 1
    counter = 0

    def ref(u: UOp) -> str:
        if u.op is Ops.CONST: return c_literal(u.arg, u.dtype)
        return names[u]

    for u in prog.uops:
        pad = "  " * indent
        if u.op is Ops.RANGE:
            names[u] = range_name(u)
            lo, hi = ("start", "end") if u is prog.parallel else ("0", ref(u.src[-1]))
            if u is prog.parallel and len(u.src) > 1: hi = f"(end < {ref(u.src[1])} ? end : {ref(u.src[1])})"
            lines.append(f"{pad}for (int64_t {names[u]} = {lo}; {names[u]} < {hi}; {names[u]}++) {{")
            indent += 1
            continue
        if u.op is Ops.END:
            indent -= 1
            lines.append("  " * indent + "}")
            continue
        if u.op is Ops.STORE:   # a fourth source gates it
            gate = f"if ({ref(u.src[3])}) " if len(u.src) > 3 else ""
            lines.append(f"{pad}{gate}{ref(u.src[0])}[{ref(u.src[1])}] = {ref(u.src[2])};")
            continue
        if u.op is Ops.DEFINE_ACC:
            names[u] = f"acc{u.arg[1]}"
            init = ref(u.src[-1]) if u.src and u.src[-1].op is not Ops.RANGE else c_literal(u.arg[0], u.dtype)
            lines.append(f"{pad}{u.dtype.cname} {names[u]} = {init};")
            continue
        if u.op is Ops.ASSIGN:
            lines.append(f"{pad}{ref(u.src[0])} = {ref(u.src[1])};")
            continue
        if u.op is Ops.LOAD and u.src[0].op is Ops.DEFINE_ACC:
            names[u] = names[u.src[0]]   # reading an accumulator is naming it
            continue
        # a bool is read as its byte (as the LLVM renderer does): memory past a run-time length (x[mask]'s bound)
        # may hold any byte, and loading one other than 0 or 1 as a C bool is undefined even when it is not used
        if u.op is Ops.LOAD and u.dtype.is_bool:
            expr = f"(((const unsigned char *){ref(u.src[0])})[{ref(u.src[1])}] != 0)"
        elif u.op is Ops.LOAD: expr = f"{ref(u.src[0])}[{ref(u.src[1])}]"
        else: expr = _expr(u, [ref(s) for s in u.src])
        name = f"{'ld' if u.op is Ops.LOAD else 'v'}{counter}"
        counter += 1
        names[u] = name
        pragma = fp_pragma(prog, u)
        if pragma:   # clang's pragma applies to this one statement; other compilers ignore it
            lines.append(f"{pad}{u.dtype.cname} {name}; {{ _Pragma(\"clang fp {pragma}\") {name} = {expr}; }}")
            continue
        lines.append(f"{pad}{u.dtype.cname} {name} = {expr};")
    lines.append("}")
    if prog.parallel is not None: lines += _parallel_wrappers(prog, params)
    return "\n".join(lines)


def _parallel_wrappers(prog: KernelProgram, params: list[str]) -> list[str]:
    assert prog.parallel is not None   # only parallel kernels get the wrappers
    names = [buffer_name(p.arg) for p in prog.params]
    casts = [f"({decl.rsplit(' *restrict', 1)[0]} *)ctx[{i}]" for i, decl in enumerate(params)]
    n = c_literal(prog.parallel.src[0].arg, dtypes.index)
    return [f"static void {prog.name}_body(void **ctx, int64_t start, int64_t end) {{",
            f"  {prog.name}_loop({', '.join(casts)}, start, end);", "}",
            f"static void {prog.name}(numfn_pfor pfor, {', '.join(params)}) {{",
            f"  void *ctx[] = {{ {', '.join(f'(void *){n_}' for n_ in names)} }};",
            f"  if (pfor) pfor({prog.name}_body, ctx, {n});",
            f"  else {prog.name}_loop({', '.join(names)}, 0, {n});", "}"]


def render_tiles(pair, programs: list[KernelProgram]) -> str:
    """The C form of the LLVM renderer's `render_tiles` (numfn.codegen.tiling): the same functions, blocks and
    edge-row moves."""
    first, second = programs[pair.first], programs[pair.second]
    params = pair.buffers(programs)
    out = written(first) | written(second)
    decls = [f"{'' if p in out else 'const '}{p.dtype.cname} *" for p in params]
    names = [buffer_name(p.arg) for p in params]
    temp = pair.temporary(programs)
    t, row = buffer_name(temp.arg), pair.row
    name = f"{first.name}_tiles"

    def args(prog: KernelProgram, shifted: str | None = None) -> str:
        return ", ".join(shifted if shifted and p is temp else buffer_name(p.arg) for p in prog.params)

    bounds = (f"int64_t s = k * {pair.block}, e = s + {pair.block} < {pair.rows} ? s + {pair.block} : {pair.rows}; "
              f"int64_t lo = s + {pair.before} < e ? s + {pair.before} : e, "
              f"hi = e - {pair.after} > lo ? e - {pair.after} : lo;")
    # the shifted pointer is scratch - s rows: computed on integers, it may point before the temporary
    shifted = f"({temp.dtype.cname} *)((uintptr_t)scratch - (uintptr_t)(s * {row * temp.dtype.itemsize}))"
    return "\n".join([
        f"static void {name}_body(void **ctx, int64_t start, int64_t end) {{",
        *(f"  {d}{n} = ({d})ctx[{i}];" for i, (d, n) in enumerate(zip(decls, names))),
        f"  {temp.dtype.cname} *scratch = {t} + start * {pair.block * row};",
        "  for (int64_t k = end - 1; k >= start; k--) {", f"    {bounds}",
        f"    {temp.dtype.cname} *shifted = {shifted};",
        f"    {first.name}_loop({args(first, 'shifted')}, s, e);",
        f"    {second.name}_loop({args(second, 'shifted')}, lo, hi);",
        "    if (k == start) break;",
        f"    __builtin_memcpy({t} + s * {row}, scratch, (size_t)(lo - s) * {row * temp.dtype.itemsize});",
        f"    __builtin_memcpy({t} + hi * {row}, scratch + (hi - s) * {row}, "
        f"(size_t)(e - hi) * {row * temp.dtype.itemsize});", "  }",
        "}",
        f"static void {name}(numfn_pfor pfor, {', '.join(d + n for d, n in zip(decls, names))}) {{",
        f"  void *ctx[] = {{ {', '.join(f'(void *){n}' for n in names)} }};",
        f"  if (pfor) pfor({name}_body, ctx, {pair.blocks});", f"  else {name}_body(ctx, 0, {pair.blocks});",
        f"  for (int64_t k = 0; k < {pair.blocks}; k++) {{   /* each block's edge rows, now nothing reads them */",
        f"    {bounds}", f"    {second.name}_loop({args(second)}, s, lo);",
        f"    {second.name}_loop({args(second)}, hi, e);", "  }", "}"])


def batch_offset(ptr, batch: tuple[int, ...], index: str) -> list[tuple[str, int, int, int]]:
    """The terms of a pointer's offset at flat batch index `index`: (index, divisor, modulus or 0, stride) per batch
    axis whose stride is not 0 (axis d's index is (index / divisor) % modulus)."""
    terms = []
    for d, (n, stride) in enumerate(zip(batch, ptr.batch_strides)):
        if stride == 0 or n == 1: continue
        inner = 1
        for m in batch[d + 1:]: inner *= m
        terms.append((index, inner, n if d > 0 else 0, stride))
    return terms


def render_forward(prog: KernelProgram, target: str) -> str:
    """A kernel that computes what kernel `target` computes (an equal codegen.program.kernel_key): a function of
    its own name calling `target` with its buffers, so that the code is built and compiled once."""
    params = [f"{'const ' if p not in written(prog) else ''}{p.dtype.cname} *restrict a{k}"
              for k, p in enumerate(prog.params)]
    args = [f"a{k}" for k in range(len(prog.params))]
    if prog.parallel is None: return f"static void {prog.name}({', '.join(params)}) {{ {target}({', '.join(args)}); }}"
    # and its loop over [start, end), which tiles call (render_tiles)
    return "\n".join([
        f"static void {prog.name}(numfn_pfor pfor, {', '.join(params)}) {{ {target}(pfor, {', '.join(args)}); }}",
        f"static void {prog.name}_loop({', '.join(params)}, int64_t start, int64_t end) {{ "
        f"{target}_loop({', '.join(args)}, start, end); }}"])


def render_extern(prog) -> str:
    """An extern call (numfn.extern.ExternProgram) as a static C function over the externs table and its buffers:
    per batch element, its calls through the table's function pointers, every argument by reference (the Fortran
    convention), then one hidden length per character argument."""
    from numfn.ir.extern import Char, Int, Ptr, Real
    params = ["void *const *externs"] + [f"{'const ' if i >= prog.written else ''}{p.dtype.cname} *{buffer_name(p.arg)}"
                                         for i, p in enumerate(prog.params)]
    itype = "int64_t" if prog.int_bits == 64 else "int32_t"
    total = 1
    for n in prog.batch: total *= n
    core = f"{prog.name}_loop" if prog.parallel else prog.name
    bounds = ", int64_t start, int64_t end" if prog.parallel else ""
    lines = [f"static void {core}({', '.join(params)}{bounds}) {{"]
    indent = "  "
    if total > 1:
        lo, hi = ("start", "end") if prog.parallel else ("0", f"{total}LL")
        lines.append(f"  for (int64_t b = {lo}; b < {hi}; b++) {{")
        indent = "    "
    for k, call in enumerate(prog.calls):
        args, types, chars = [], [], 0
        for i, a in enumerate(call.args):
            name = f"a{k}_{i}"
            if isinstance(a, Ptr):
                buf = buffer_name(prog.params[a.param].arg)
                off = [str(a.offset)] + [f"({x} / {div}LL{f' % {mod}LL' if mod else ''}) * {st}LL"
                                         for x, div, mod, st in batch_offset(a, prog.batch, "b")] \
                    if total > 1 else [str(a.offset)]
                args.append(f"(void *)({buf} + {' + '.join(off)})")
            elif isinstance(a, Int):
                lines.append(f"{indent}{itype} {name} = {a.value};")
                args.append(f"&{name}")
            elif isinstance(a, Char):
                lines.append(f"{indent}char {name} = '{a.value}';")
                args.append(f"&{name}")
                chars += 1
            elif isinstance(a, Real) and prog.dtype.is_complex:   # a complex scalar: its two parts
                comp, v = prog.dtype.component, complex(a.value)
                lines.append(f"{indent}{comp.cname} {name}[2] = {{ {c_literal(v.real, comp)}, "
                             f"{c_literal(v.imag, comp)} }};")
                args.append(name)
            elif isinstance(a, Real):
                lines.append(f"{indent}{prog.dtype.cname} {name} = {c_literal(a.value, prog.dtype)};")
                args.append(f"&{name}")
            types.append("void *")
        fn_type = f"void (*)({', '.join(types + ['size_t'] * chars)})"
        args += ["(size_t)1"] * chars
        lines.append(f"{indent}(({fn_type})externs[{call.symbol}])({', '.join(args)});")
    if total > 1: lines.append("  }")
    lines.append("}")
    if prog.parallel:   # the batch loop on the thread pool, as a parallel kernel's outer loop
        names = ["externs"] + [buffer_name(p.arg) for p in prog.params]
        casts = [f"({decl[:decl.rindex('*') + 1]})ctx[{i}]" for i, decl in enumerate(params)]
        lines += [f"static void {prog.name}_body(void **ctx, int64_t start, int64_t end) {{",
                  f"  {prog.name}_loop({', '.join(casts)}, start, end);", "}",
                  f"static void {prog.name}(numfn_pfor pfor, {', '.join(params)}) {{",
                  f"  void *ctx[] = {{ {', '.join(f'(void *){n_}' for n_ in names)} }};",
                  f"  if (pfor) pfor({prog.name}_body, ctx, {total}LL);",
                  f"  else {prog.name}_loop({', '.join(names)}, 0, {total}LL);", "}"]
    return "\n".join(lines)


def written(prog: KernelProgram) -> set[UOp]:
    return {u.src[0] for u in prog.uops if u.op is Ops.STORE}


def _infix(symbol: str):
    return lambda u, a: f"({a[0]} {symbol} {a[1]})"


def _shl(u: UOp, a: list[str]) -> str:
    if u.dtype.kind == "i":   # left-shifting a negative value is undefined in C: shift bits
        return f"(({u.dtype.cname})((u{u.dtype.cname}){a[0]} << {a[1]}))"
    return f"({a[0]} << {a[1]})"


def _max_min(cmp: str):
    def rule(u: UOp, a: list[str]) -> str:
        nan = f" || {a[0]} != {a[0]}" if u.dtype.is_float else ""   # a NaN operand propagates, like np.maximum
        return f"(({a[0]} {cmp} {a[1]}{nan}) ? {a[0]} : {a[1]})"
    return rule


def _math(name: str):
    return lambda u, a: f"{name}{'f' if u.dtype is dtypes.float32 else ''}({', '.join(a)})"


# op -> rule(node, its operands as C expressions): the node's value as a C expression
EXPRESSIONS = {
    **{op: _infix(symbol) for op, symbol in _INFIX.items()},
    **{op: _math(name) for op, name in _MATH.items()},
    Ops.SHL: _shl,
    Ops.NEG: lambda u, a: f"(-{a[0]})",
    Ops.MAX: _max_min(">="),
    Ops.MIN: _max_min("<="),
    Ops.WHERE: lambda u, a: f"({a[0]} ? {a[1]} : {a[2]})",
    Ops.GCD: lambda u, a: f"numfn_gcd_u{u.dtype.bits}({a[0]}, {a[1]})" if u.dtype.bits <= 16 else
    f"(({u.dtype.cname})numfn_gcd((uint64_t){a[0]}, (uint64_t){a[1]}))",
    Ops.CAST: lambda u, a: f"({u.dtype.cname})({a[0]})",
    Ops.BITCAST: lambda u, a: _bitcast(a[0], u.src[0].dtype, u.dtype),
}


def _register_render_rules() -> None:
    """The C rule of every elementwise op, in the table of primitives (numfn.ir.primitives)."""
    for op, rule in EXPRESSIONS.items(): register(op, "render", rule, backend="c")


_register_render_rules()


def _expr(u: UOp, a: list[str]) -> str:
    rule = PRIMITIVES[u.op].render.get("c")   # the op's C rule in the table of primitives (EXPRESSIONS, registered)
    if rule is None: raise NotImplementedError(f"C renderer: {u.op.name}")
    return rule(u, a)


def render_program(entry: str, kernels: list[tuple[KernelProgram, str]], layout: Layout,
                   batched: tuple[bool, ...] | None = None, profile: bool = False, steps: list | None = None,
                   standalone: bool = False) -> str:
    """The whole program: constants, kernels and the public entry point `int entry(void **buffers)`, where
    `buffers` holds the outputs, then the inputs, then the pointer constants (see numfn.codegen.layout), then the externs
    table if the program calls extern routines, then the thread pool's parallel_for or NULL. It returns 0, or 1
    when the scratch arena cannot be allocated.

    With `batched` (one flag per input), the entry takes `int64_t start, int64_t end` first and runs the kernels
    for every example start..end-1 of a leading batch axis: outputs and the flagged inputs advance by one
    example per iteration, everything else (unflagged inputs, constants, the scratch arena) is shared.

    With `profile` (DEBUG=2), the entry adds the nanoseconds each kernel took to the exported array
    `<entry>_ns` (one int64 per kernel), and counts its calls after them (one int64 per kernel).

    `steps` (numfn.program_steps) says in which order the kernels run, with loops and branches around some of
    them; None runs each kernel once, in order.

    `standalone` (numfn.export) renders the same kernels without the Python runtime: the entry is
    `static int entry(void **buffers, char *arena)`, where the caller passes the scratch arena (NULL when the program
    needs none; nothing is allocated), kernels run single-threaded (no thread pool slot in `buffers`), and there are
    no timings; extern calls are the caller's to resolve (numfn.export.routines)."""
    assert not standalone or (batched is None and not profile)
    out = [STANDALONE_PRELUDE if standalone else PRELUDE]
    if any("numfn_gcd(" in src for _, src in kernels): out.append(GCD_HELPER)
    out += [gcd_steps_helper(bits) for bits in (8, 16) if any(f"numfn_gcd_u{bits}(" in src for _, src in kernels)]
    if profile:
        out.append("#include <time.h>\n"
                   "static int64_t numfn_now(void) {\n  struct timespec t;\n  clock_gettime(CLOCK_MONOTONIC, &t);\n"
                   "  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;\n}\n"
                   f"int64_t {entry}_ns[{2 * max(len(kernels), 1)}];")   # nanoseconds, then calls
    for buf, dt, data in layout.embedded_constants:
        values = ", ".join(c_literal(v, dt) for v in data.reshape(-1).tolist())
        out.append(f"static const {dt.cname} {buffer_name(buf)}[{max(buf.size, 1)}] = {{ {values} }};")
    out += [src for _, src in kernels]
    out += [render_tiles(pair, [prog for prog, _ in kernels]) for pair in tiled_pairs(steps)]
    pointers = [(b, dt, "") for b, dt in layout.outputs] + \
        [(b, dt, "" if b in layout.written_inputs else "const ") for b, dt in layout.inputs] + \
        [(b, dt, "const ") for b, dt, _ in layout.pointer_constants]
    advancing = set() if batched is None else \
        {b for b, _ in layout.outputs} | {b for (b, _), flag in zip(layout.inputs, batched) if flag}
    params = ["void **buffers"] if batched is None else ["int64_t start", "int64_t end", "void **buffers"]
    body = [f"  {const}{dt.cname} *restrict {buffer_name(b)} = ({const}{dt.cname} *)buffers[{i}];"
            for i, (b, dt, const) in enumerate(pointers)]   # an unused input is a const void *
    if layout.externs:   # the externs table follows the pointer constants (see numfn.extern)
        body.append(f"  void *const *externs = (void *const *)buffers[{len(pointers)}];")
    if any(prog.parallel is not None for prog, _ in kernels) and standalone:
        body.append("  numfn_pfor pfor = NULL;   /* single-threaded */")
    elif any(prog.parallel is not None for prog, _ in kernels):
        body.append(f"  numfn_pfor pfor = (numfn_pfor)buffers[{len(pointers) + bool(layout.externs)}];")
    # small intermediates (a loop's scalars) live on the stack: once the kernels are inlined, in registers; a
    # program whose intermediates all do allocates no arena (an exported one ignores the caller's)
    on_stack, arena_bytes = layout.on_stack, layout.heap_arena_bytes
    keep = keeps_arena(arena_bytes) and not standalone
    if standalone: params.append("char *arena")
    elif keep:   # the arena the last call left (another thread's call may hold it: then a fresh one)
        out.append(f"void *{entry}_arena = NULL;")
        body.append(f"  char *arena = (char *)__atomic_exchange_n(&{entry}_arena, NULL, __ATOMIC_ACQUIRE);")
        body.append(f"  if (!arena) arena = (char *)malloc({arena_bytes});")
        body.append("  if (!arena) return 1;")
    elif arena_bytes and not standalone:
        body.append(f"  char *arena = (char *)malloc({arena_bytes});")
        body.append("  if (!arena) return 1;")
    for buf, dt, offset in layout.intermediates:
        if buf in on_stack:
            body.append(f"  {dt.cname} {buffer_name(buf)}[{max(buf.size, 1)}];")
        elif arena_bytes:
            body.append(f"  {dt.cname} *{buffer_name(buf)} = ({dt.cname} *)(arena + {offset});")
    if standalone:   # a buffer no kernel uses (an unused argument, an empty program) is no warning in exported code
        unused = [b for b, _, _ in pointers] + [b for b, _, _ in layout.intermediates]
        if unused: body.append("  " + " ".join(f"(void){buffer_name(b)};" for b in unused))
        # and a kernel only its tiles call (their loops, not the kernel's pool wrapper)
        if kernels: body.append("  " + " ".join(f"(void){prog.name};" + (f" (void){prog.name}_loop;"
                                                                         if prog.parallel else "")
                                                for prog, _ in kernels))

    def arg(buf) -> str:
        return f"{buffer_name(buf)} + b * {buf.size}" if buf in advancing else buffer_name(buf)

    indent = "  " if batched is None else "    "
    if batched is not None: body.append("  for (int64_t b = start; b < end; b++) {")

    def call(k: int, indent: str, pair=None) -> None:   # with `pair`, the pair k begins (its time counted as k's)
        prog = kernels[k][0]
        if pair is None:
            args = ([] if prog.parallel is None else ["pfor"]) + \
                (["externs"] if getattr(prog, "externs", False) else []) + [arg(p.arg) for p in prog.params]
        else: args = ["pfor"] + [arg(p.arg) for p in pair.buffers([k for k, _ in kernels])]
        if profile: body.append(f"{indent}{{ int64_t t0 = numfn_now();")
        body.append(f"{indent}{prog.name}{'' if pair is None else '_tiles'}({', '.join(args)});")
        if profile: body.append(f"{indent}{entry}_ns[{k}] += numfn_now() - t0; {entry}_ns[{len(kernels) + k}] += 1; }}")

    def run(items: list, indent: str) -> None:
        for item in items:
            if isinstance(item, int):
                call(item, indent)
                continue
            kind, loop, parts = item
            if kind == "tiles":
                call(loop.first, indent, loop)
                continue
            flag = buffer_name(loop.flag.arg)
            if kind == "loop":   # while (cond) { body; swap each state buffer with its next }
                body.append(f"{indent}for (;;) {{")
                run(parts[0], indent + "  ")
                body.append(f"{indent}  if (!{flag}[0]) break;")
                run(parts[1], indent + "  ")
                for cur, nxt in zip(loop.state, loop.next):
                    if nxt is None: continue
                    a, b_ = buffer_name(cur.arg), buffer_name(nxt.arg)
                    if cur.arg in on_stack and nxt.arg in on_stack:   # arrays on the stack: copied, not swapped
                        body.append(f"{indent}  for (int64_t q = 0; q < {max(cur.arg.size, 1)}; q++) {a}[q] = {b_}[q];")
                    else: body.append(f"{indent}  {{ {cur.dtype.cname} *t = {a}; {a} = {b_}; {b_} = t; }}")
                body.append(f"{indent}}}")
            else:   # a branch: the index picks one
                body.append(f"{indent}switch ({flag}[0]) {{")
                for k, part in enumerate(parts):
                    body.append(f"{indent}{'default' if k == len(parts) - 1 else f'case {k}'}: {{")
                    run(part, indent + "  ")
                    body.append(f"{indent}  break; }}")
                body.append(f"{indent}}}")

    run(list(range(len(kernels))) if steps is None else steps, indent)
    if batched is not None: body.append("  }")
    if keep:   # kept for the next call, unless another call's arena is kept already
        body.append(f"  {{ void *none = NULL; if (!__atomic_compare_exchange_n(&{entry}_arena, &none, (void *)arena, "
                    "0, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) free(arena); }")
    elif arena_bytes and not standalone: body.append("  free(arena);")
    if standalone and not arena_bytes: body.append("  (void)arena;")
    body.append("  return 0;")
    out.append(f"{'static ' if standalone else ''}int {entry}({', '.join(params)}) {{\n" + "\n".join(body) + "\n}")
    return "\n\n".join(out) + "\n"
