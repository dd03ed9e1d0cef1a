"""Scheduling: a traced function graph becomes the program's steps in execution order and their memory plan.

The parts, each a module with its interface in its docstring, in the order a program goes through them:
  callify    the function graph as CALL(body, *buffers): inputs and captured constants bound to BUFFERs
  scheduler  create_schedule: the driver, building kernels in rounds until the fusion rule stores nothing more
  realize    the fusion rule: which values are stored rather than computed inside their consumers
  roots      the values being stored (Root) and the copies the scheduler makes
  versions   versions of written memory: one buffer per chain of writes, and the order of its reads and writes
  regions    loops and branches (LOOP) as steps whose sub-graphs are schedules of their own
  interchange  loops with elementwise state as one kernel, the iterations inside each element
  externs    extern calls (EXTERN: BLAS, LAPACK, numfn's sorts) as steps, and the programs they render to
  kernels    roots grouped into kernels, given home buffers, ordered and lowered
  items      what a schedule is: Kernel, ExternKernel, LoopKernel, ExecItem, Schedule
  memory     the arena plan: intermediates whose lifetimes do not overlap share bytes
Import order (each imports only those after it, and numfn's lower layers): scheduler, interchange, kernels, externs,
versions, regions, memory, items, roots, realize; callify stands alone.
"""
from numfn.schedule.callify import callify
from numfn.schedule.externs import ExternProgram, build_extern_program
from numfn.schedule.items import ExecItem, ExternKernel, LoopKernel, Schedule, all_items, program_steps
from numfn.schedule.memory import MemoryPlan, make_layout
from numfn.schedule.realize import MAX_KERNEL_DEPTH, MAX_KERNEL_OPS
from numfn.schedule.scheduler import create_schedule

# what the rest of numfn (the pipeline) and the tests use; the parts' own names are in their modules
__all__ = ["callify", "create_schedule", "Schedule", "ExecItem", "ExternKernel", "LoopKernel", "MemoryPlan",
           "all_items", "make_layout", "program_steps", "ExternProgram", "build_extern_program", "MAX_KERNEL_DEPTH", "MAX_KERNEL_OPS"]
