"""Differential fuzzing: random programs run by numfn (both backends, and without kernel optimizations) and by
NumPy, failures shrunk to a minimal program.

A program is built one statement at a time while NumPy evaluates it, so every statement is valid for the shapes
and dtypes at hand, values stay finite and bounded, and NumPy's value of every variable is known. Statements are
elementwise operations of every dtype (with Python scalars either side, NEP 50), casts, reductions with axes and
keepdims, cumulative sums and products, views (slices with steps, transposes, reshapes, broadcasts), matmul and
einsum, where, numfn.numpy functions (concatenate, stack, flip, roll, diff, tile, repeat, pad, triu, ...),
integer-array indexing, and writes: `x[index] = v` and `x[index] += v` into arguments (the caller's arrays change)
and into copies made in the program. Each variable records
  scale  a bound on the magnitudes its value was computed from (the scale of the absolute error allowed)
  exact  computed by correctly rounded operations only, so numfn must agree to the last bits (checked to 1e-12
         for float64; every operation rounds as NumPy's does, no FMA contraction); only exact values feed discontinuous operations (floor,
         //, %, comparisons, sign, float -> int casts), where one rounding difference upstream (a sum in another
         order, an approximated sin) would legitimately flip the result
  lowp   float32 took part: float64 results are compared with float32's tolerance (half: float16's)
  nan    may hold NaN (inputs of the complex class): only NaN-aware operations, argmax, sort, max take it
One compiled function holds several independent programs (`parts`): they share one compilation, as a user's
function with unrelated results would.

Each part belongs to a program class (numfn.tools.fuzz.classes): `base` draws the statements above; `loops`, `index`,
`branches`, `scalars` and `complex` add native loops with writes after them (and their index in arithmetic),
branches choosing views that are written through, Python scalar arguments, complex and float16 values with NaN;
`calls` calls the compiled function with its arguments passed by name too. Loops and branches are compound
statements (several lines binding fresh names), run by NumPy as Python runs them; the program's source is
registered with linecache so numfn converts them as it converts a function of a file.

    python -m numfn fuzz --count 20000 [--seed S] [--parts 4] [--steps 10] [--classes loops,scalars] [--log DIR]

A failure is a result that differs from NumPy's (value, dtype or shape), an exception NumPy does not raise, an
argument left with other values than NumPy leaves it, a backend that needed the other one (a compiler fault), or
(the calls class) a call passing the arguments of an earlier call by name that compiled again.

Modules: program (variables, statements, programs, the operation tables), generator (the base statements),
classes (the program classes and `generate`), run (running and comparing), shrinking, driver (`fuzz`, the command
line).
"""
from __future__ import annotations

from numfn.tools.fuzz.classes import CLASSES, ClassGenerator, generate
from numfn.tools.fuzz.driver import Report, fuzz, main, parse_classes
from numfn.tools.fuzz.generator import Generator
from numfn.tools.fuzz.program import MAX_SCALE, SUPPORTED, Program, Reject, Stmt, Var
from numfn.tools.fuzz.run import CONFIGS, Failure, check, compare, metadata, run_config
from numfn.tools.fuzz.shrinking import shrink

__all__ = ["CLASSES", "CONFIGS", "ClassGenerator", "Failure", "Generator", "MAX_SCALE", "Program", "Reject",
           "Report", "SUPPORTED", "Stmt", "Var", "check", "compare", "fuzz", "generate", "main", "metadata",
           "parse_classes", "run_config", "shrink"]
