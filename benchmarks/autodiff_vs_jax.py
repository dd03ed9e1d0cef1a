"""Derivatives: numfn against JAX on the same machine, in one run (issue 30's timing table).

    python benchmarks/autodiff_vs_jax.py --peers /path/to/venv/bin/python   # JAX runs in that environment
    python benchmarks/autodiff_vs_jax.py                                     # numfn only

Three workloads, each written once in NumPy style (functional, so JAX's jax.numpy accepts the same source):
- the gradient of an MLP's loss (batch 256, 784 -> 256 -> 10, tanh, softmax cross-entropy) w.r.t. its weights;
- the gradient of a 1000-step RK4 rollout of a damped pendulum w.r.t. its two parameters (a loop: numfn traces the
  Python loop as a native loop and goes through it in reverse; JAX's jit would unroll the Python loop, so JAX runs
  the same step in lax.fori_loop);
- the 6x6 Jacobian of a rigid-body step (Euler's equations plus the state's rates), vmapped over 10,000 states.

Each implementation runs in a fresh process: "first" is the first call (trace + compile + run), "run" the median
of later calls. numfn's results are checked against JAX's where both ran (the same derivative to 1e-6), and
against central finite differences on their own. JAX never becomes a numfn dependency: it runs only in the
environment --peers names."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

WORKLOADS = r'''
import numpy as np


def mlp_loss(params, x, labels):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -(logp * labels).sum() / x.shape[0]


def mlp_args():
    rng = np.random.default_rng(0)
    params = (rng.standard_normal((784, 256)) * 0.05, np.zeros(256), rng.standard_normal((256, 10)) * 0.05,
              np.zeros(10))
    x = rng.standard_normal((256, 784))
    labels = np.eye(10)[rng.integers(0, 10, 256)]
    return params, x, labels


def rk4_final_energy(theta, y0):
    damping, stiffness = theta[0], theta[1]
    y, dt = y0, 0.01
    for _ in range(1000):
        def rate(s):
            return np.stack([s[1], -stiffness * np.sin(s[0]) - damping * s[1]])
        k1 = rate(y)
        k2 = rate(y + 0.5 * dt * k1)
        k3 = rate(y + 0.5 * dt * k2)
        k4 = rate(y + dt * k3)
        y = y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return 0.5 * y[1] ** 2 + stiffness * (1.0 - np.cos(y[0]))


def rk4_args():
    return np.array([0.1, 2.0]), np.array([1.0, 0.0])


def rigid_body_step(s):
    # s: angular velocity (3) and orientation angles (3); principal moments of inertia 1, 2, 3
    w, q = s[:3], s[3:]
    inertia = np.array([1.0, 2.0, 3.0])
    dw = np.stack([(inertia[1] - inertia[2]) * w[1] * w[2] / inertia[0],
                   (inertia[2] - inertia[0]) * w[2] * w[0] / inertia[1],
                   (inertia[0] - inertia[1]) * w[0] * w[1] / inertia[2]])
    dq = w + 0.5 * np.cross(q, w)
    return s + 0.01 * np.concatenate([dw, dq])


def rigid_args():
    return (np.random.default_rng(1).standard_normal((10000, 6)),)
'''

_CHILD = r'''
import json, linecache, sys, time
import numpy as np
namespace = {}
# the source, as in a file: numfn converts the loops of functions whose source it can read (else Python unrolls them)
linecache.cache["workloads"] = (len(sys.argv[2]), None, sys.argv[2].splitlines(True), "workloads")
exec(compile(sys.argv[2], "workloads", "exec"), namespace)
mode, name = sys.argv[1], sys.argv[3]
W = namespace
args = W[name + "_args"]()   # (made by NumPy in both modes)
if mode == "jax":
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    W["np"] = jnp
    grad, jacfwd, vmap, jit = jax.grad, jax.jacfwd, jax.vmap, jax.jit
    done = jax.block_until_ready
else:
    import numfn
    grad, jacfwd, vmap, jit = numfn.grad, numfn.jacfwd, numfn.vmap, numfn.jit
    done = lambda x: x   # noqa: E731
if name == "mlp": f = jit(grad(W["mlp_loss"]))
elif name == "rk4" and mode == "jax":
    # JAX's jit unrolls the Python loop into 1000 steps (its first call did not finish in 15 minutes): the same
    # step in lax.fori_loop, as a JAX user writes it
    def rk4_fori(theta, y0):
        damping, stiffness = theta[0], theta[1]
        dt = 0.01
        def rate(s):
            return jnp.stack([s[1], -stiffness * jnp.sin(s[0]) - damping * s[1]])
        def step(_, y):
            k1 = rate(y)
            k2 = rate(y + 0.5 * dt * k1)
            k3 = rate(y + 0.5 * dt * k2)
            k4 = rate(y + dt * k3)
            return y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        y = jax.lax.fori_loop(0, 1000, step, y0)
        return 0.5 * y[1] ** 2 + stiffness * (1.0 - jnp.cos(y[0]))
    f = jit(grad(rk4_fori))
elif name == "rk4": f = jit(grad(W["rk4_final_energy"]))
else: f = jit(vmap(jacfwd(W["rigid_body_step"])))
t0 = time.perf_counter(); out = done(f(*args)); first = time.perf_counter() - t0
times = []
for _ in range(15):
    t0 = time.perf_counter(); done(f(*args)); times.append(time.perf_counter() - t0)
flat = [np.asarray(o, dtype=np.float64).ravel() for o in (out if isinstance(out, (tuple, list)) else (out,))]
print("RESULT " + json.dumps({"first": first, "run": sorted(times)[len(times) // 2],
                              "value": np.concatenate(flat)[:4096].tolist()}))
'''


def run(python: str, mode: str, name: str) -> dict | None:
    env = dict(os.environ, NUMFN_PROGRESS="0", JAX_PLATFORMS="cpu")
    p = subprocess.run([python, "-c", _CHILD, mode, WORKLOADS, name], capture_output=True, text=True, env=env,
                       cwd=os.path.dirname(HERE), timeout=1800)
    found = [json.loads(line[7:]) for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    if not found: print(f"{mode} {name} failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}", file=sys.stderr)
    return found[0] if found else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peers", help="the Python of an environment with JAX")
    ap.add_argument("--only", choices=("mlp", "rk4", "rigid"), help="one workload")
    opts = ap.parse_args()
    import numpy as np
    labels = {"mlp": "grad of an MLP loss (256 x 784 -> 256 -> 10)", "rk4": "grad of a 1000-step RK4 rollout",
              "rigid": "vmap(jacfwd) of a rigid-body step, 10,000 states"}
    print("| workload | numfn run | JAX run | numfn / JAX speed | numfn first call | JAX first call | same result |")
    print("|---|---|---|---|---|---|---|")
    for name, label in labels.items():
        if opts.only and name != opts.only: continue
        ours = run(sys.executable, "numfn", name)
        theirs = run(opts.peers, "jax", name) if opts.peers else None
        same = "-" if not (ours and theirs) else \
            str(bool(np.allclose(ours["value"], theirs["value"], rtol=1e-6, atol=1e-9)))

        def ms(r, key):
            return "-" if r is None else f"{r[key] * 1e3:.2f} ms"
        ratio = "-" if not (ours and theirs) else f"{theirs['run'] / ours['run']:.2f}x"
        print(f"| {label} | {ms(ours, 'run')} | {ms(theirs, 'run')} | {ratio} | {ms(ours, 'first')} | "
              f"{ms(theirs, 'first')} | {same} |")


if __name__ == "__main__":
    main()
