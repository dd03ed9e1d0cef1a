"""POSIX threads for exported code (`numfn.export(..., threads=N)`): the parallel_for that numfn's thread pool
provides to parallel kernels, as C.

numfn renders a parallel kernel as its loop over a range of its outer loop's iterations and a wrapper that hands
that loop to the thread pool's parallel_for (numfn.renderer.c); an export passes no pool (NULL: the wrapper runs
the whole loop on the calling thread). With threads N > 1, `parallel_for_source(n)` is a parallel_for that cuts
the range into N contiguous chunks, starts N - 1 threads (pthread_create) for all but the first, runs the first on
the calling thread and joins the others: no global state, so the function stays reentrant. A thread that cannot be
started has its chunk run on the calling thread. `use_threads(program, n)` points the program's kernels at it."""
from __future__ import annotations

SERIAL = "numfn_pfor pfor = NULL;   /* single-threaded */"


def parallel_for_source(threads: int) -> str:
    return f"""\
#include <pthread.h>
/* parallel kernels' outer loops, on {threads} threads: chunk t of [0, n) on thread t (chunk 0 on the caller's) */
#define EXPORT_THREADS {threads}
struct export_chunk {{ numfn_body body; void **ctx; int64_t start, end; }};
static void *export_run_chunk(void *arg) {{
  struct export_chunk *chunk = (struct export_chunk *)arg;
  chunk->body(chunk->ctx, chunk->start, chunk->end);
  return NULL;
}}
static void export_parallel_for(numfn_body body, void **ctx, int64_t n) {{
  pthread_t thread[EXPORT_THREADS];
  struct export_chunk chunk[EXPORT_THREADS];
  int started[EXPORT_THREADS];
  int64_t per = (n + EXPORT_THREADS - 1) / EXPORT_THREADS;
  for (int t = 0; t < EXPORT_THREADS; t++) {{
    int64_t start = per * t < n ? per * t : n, end = per * (t + 1) < n ? per * (t + 1) : n;
    chunk[t].body = body; chunk[t].ctx = ctx; chunk[t].start = start; chunk[t].end = end;
    started[t] = t > 0 && start < end && pthread_create(&thread[t], NULL, export_run_chunk, &chunk[t]) == 0;
  }}
  for (int t = 0; t < EXPORT_THREADS; t++)
    if (!started[t] && chunk[t].start < chunk[t].end) export_run_chunk(&chunk[t]);
  for (int t = 1; t < EXPORT_THREADS; t++) if (started[t]) pthread_join(thread[t], NULL);
}}"""


def use_threads(program: str, threads: int) -> str:
    """A standalone program (numfn.renderer.c.render_program(standalone=True)) whose parallel kernels run on
    `threads` threads: the parallel_for before its entry, which passes it instead of NULL."""
    if threads <= 1 or SERIAL not in program: return program
    entry = program.rindex("\nstatic int ")
    program = program[:entry] + "\n\n" + parallel_for_source(threads) + program[entry:]
    return program.replace(SERIAL, f"numfn_pfor pfor = export_parallel_for;   /* {threads} threads */")
