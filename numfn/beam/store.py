"""Where the choices of BEAM are remembered: the `tuned` subdirectory of the disk cache
(numfn.runtime.diskcache.tuned_cache), one entry per kernel and machine.

An entry's key (`tuned_key`) is made of the kernel's structure before any optimization (`kernel_structure`: its
loop-level graph with its buffers named by their place among its parameters, so the same kernel in another
function, or another process, has the same key), the backend and numfn's own build (loop ids and what an option
means belong to the code generator), and the machine (`Machine`: CPU model and vector features, core count and
the threads numfn uses): a choice measured on one CPU is never reused on another. Its value is JSON: the chosen
options, the heuristic's, and both times.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from numfn.codegen.lower import LoweredKernel
from numfn.codegen.opt import Options
from numfn.ir.uop import Buffer, Ops, UOp, graph_fingerprint, substitute
from numfn.dtype import dtypes


@dataclass(frozen=True)
class Machine:
    """What a kernel's best options depend on besides the kernel: the CPU (model name and feature flags), its
    core count and the threads numfn uses."""
    cpu: str
    cores: int
    threads: int

    @staticmethod
    def here() -> Machine:
        from numfn.runtime.target import cpu_description
        from numfn.runtime.threads import available_cpus, thread_count
        return Machine(cpu_description(), available_cpus(), thread_count())


def kernel_structure(params: tuple[UOp, ...], lowered: LoweredKernel, fastmath: bool) -> str:
    """A hash of what the kernel computes and how its loops are laid out, before optimizations: equal for the same
    kernel in any function or process (codegen/program.py's kernel_key, as a string)."""
    canon = {p: UOp(Ops.BUFFER, p.dtype, (), Buffer("param", k, p.arg.shape)) for k, p in enumerate(params)}
    sink = substitute(lowered.sink, canon)
    shape = repr((lowered.shape, sorted(r.arg[0] for r in lowered.sequential),
                  [(r.arg[0], f) for r, f in lowered.unrolls], [(p.dtype.name, p.arg.shape) for p in params],
                  [r.arg for r in lowered.ranges], fastmath))
    return graph_fingerprint([UOp(Ops.SINK, dtypes.void, (sink, *lowered.ranges))]) + "|" + shape


def tuned_key(structure: str, backend: str, machine: Machine) -> str:
    from numfn.runtime.diskcache import cache_key
    from numfn.runtime.target import build_id
    return cache_key("numfn-tuned-kernel", build_id(), backend, structure, machine.cpu, str(machine.cores),
                     str(machine.threads))


@dataclass(frozen=True)
class Choice:
    """A stored choice: the chosen options and their time, and the heuristic's (seconds of the kernel alone)."""
    options: Options
    seconds: float
    heuristic: Options
    heuristic_seconds: float


def load_choice(key: str) -> Choice | None:
    """The choice stored under `key`, or None (no cache, no entry, or an entry this numfn cannot read)."""
    from numfn.runtime.diskcache import tuned_cache
    cache = tuned_cache()
    payload = cache.get(key) if cache is not None else None
    if payload is None: return None
    try:
        d = json.loads(payload)
        return Choice(Options.from_json(d["options"]), float(d["seconds"]), Options.from_json(d["heuristic"]),
                      float(d["heuristic_seconds"]))
    except (ValueError, KeyError, TypeError, IndexError):
        return None


def store_choice(key: str, options: Options, seconds: float, heuristic: Options, heuristic_seconds: float) -> None:
    from numfn.runtime.diskcache import tuned_cache
    cache = tuned_cache()
    if cache is None: return
    cache.put(key, json.dumps({"options": options.to_json(), "seconds": seconds, "heuristic": heuristic.to_json(),
                               "heuristic_seconds": heuristic_seconds}, sort_keys=True).encode())
