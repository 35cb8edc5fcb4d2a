"""Reverse mode through a long scan: funcgrad.lax.scan against jax.lax.scan, and what checkpointing
saves.

Run: python bench/bench_scan.py [--steps 1000] [--hidden 64] [--repeats 100]
(jax comes from the `bench` extra and is imported only by this script, never by funcgrad).

Case: a 1000-step RNN cell ``h = tanh(W h + U x_t + b)``, hidden 64, inputs 32, float32,
loss = sum of the final state; ``jit(grad(loss))`` with respect to (W, U, b). Printed:

1. time per gradient, funcgrad vs jax (goal: funcgrad / jax <= 1.2): all variants are sampled
   round-robin in one process (the machine is shared: load hits every variant alike); median and
   minimum over the samples;
2. for funcgrad's ``scan(..., checkpoint=False | True | "sqrt")``: the time, the bytes of the
   residuals the backward pass keeps (the constants of the linear program ``vjp`` returns, see
   NOTE: [residuals are constvars]), XLA's temporary buffer bytes for the compiled gradient
   (``get_compiled_memory_stats``) and the peak RSS of a process that ran only that variant.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import fmt  # noqa: E402

INPUTS = 32


def make_data(steps: int, hidden: int):
    rng = np.random.default_rng(0)
    W = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    U = (rng.standard_normal((hidden, INPUTS)) / np.sqrt(INPUTS)).astype(np.float32)
    b = np.zeros(hidden, np.float32)
    xs = rng.standard_normal((steps, INPUTS)).astype(np.float32)
    h0 = np.zeros(hidden, np.float32)
    return W, U, b, xs, h0


def funcgrad_loss(checkpoint):
    import funcgrad.numpy as fnp
    from funcgrad._control_flow import scan

    def loss(W, U, b, xs, h0):
        def cell(h, x):
            return fnp.tanh(W @ h + U @ x + b), None

        h, _ = scan(cell, h0, xs, checkpoint=checkpoint)
        return fnp.sum(h)

    return loss


def jax_loss():
    import jax
    import jax.numpy as jnp

    def loss(W, U, b, xs, h0):
        def cell(h, x):
            return jnp.tanh(W @ h + U @ x + b), None

        h, _ = jax.lax.scan(cell, h0, xs)
        return jnp.sum(h)

    return loss


CHECKPOINTS = {"none": False, "true": True, "sqrt": "sqrt"}


def time_all(args) -> dict:
    """Median and minimum seconds per gradient of every variant, sampled round-robin in one
    process so that load from other processes affects all variants alike."""
    import funcgrad

    data = make_data(args.steps, args.hidden)
    calls = {}
    for name, ck in CHECKPOINTS.items():
        grad = funcgrad.jit(funcgrad.grad(funcgrad_loss(ck), argnums=(0, 1, 2)))
        dev = [funcgrad.device_put(a) for a in data]
        calls[f"funcgrad {name}"] = lambda grad=grad, dev=dev: funcgrad.block_until_ready(grad(*dev))
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = None
    if jax is not None:
        jgrad = jax.jit(jax.grad(jax_loss(), argnums=(0, 1, 2)))
        jdev = [jnp.asarray(a) for a in data]
        calls["jax"] = lambda: jax.block_until_ready(jgrad(*jdev))
    errors = {}
    for k, fn in list(calls.items()):
        try:
            for _ in range(3):
                fn()
        except Exception as e:  # noqa: BLE001 - report the variant as failed, time the others
            errors[k] = f"{type(e).__name__}: {e}"[:120]
            del calls[k]
    samples = {k: [] for k in calls}
    for _ in range(args.repeats):
        for k, fn in calls.items():
            t0 = time.perf_counter()
            fn()
            samples[k].append(time.perf_counter() - t0)
    out = {k: (statistics.median(v), min(v)) for k, v in samples.items()}
    out.update({k: {"error": e} for k, e in errors.items()})
    return out


def memory_of(lib: str, name: str, args) -> dict:
    """Residual bytes, XLA temporary bytes and peak RSS of one variant (run in its own process)."""
    data = make_data(args.steps, args.hidden)
    if lib == "jax":
        import jax

        jgrad = jax.jit(jax.grad(jax_loss(), argnums=(0, 1, 2)))
        jax.block_until_ready(jgrad(*data))
        temp = jgrad.lower(*data).compile().memory_analysis().temp_size_in_bytes
        return dict(residual_bytes=None, xla_temp_bytes=int(temp), rss=_peak_rss(), jit_vs_eager=None)
    from funcgrad.xla_bridge.lowering import lower_jaxpr

    import funcgrad
    from funcgrad import xla_bridge as xb

    loss = funcgrad_loss(CHECKPOINTS[name])
    grad = funcgrad.grad(loss, argnums=(0, 1, 2))
    g_jit = [np.asarray(g) for g in funcgrad.jit(grad)(*data)]
    # The residuals reverse mode keeps: the constants of the linear program vjp transposes.
    _, f_vjp = funcgrad.vjp(loss, *data)
    res_bytes = sum(np.asarray(r).nbytes for r in f_vjp.residuals)
    g_eager = [np.asarray(g) for g in grad(*data)]
    low = lower_jaxpr(funcgrad.make_jaxpr(grad)(*data), "grad")
    exe = xb.compile(low.text, low.in_avals, low.out_avals)
    try:
        temp = int(exe._loaded.get_compiled_memory_stats().temp_size_in_bytes)
    except Exception:  # noqa: BLE001 - optional: not every PJRT client reports it
        temp = None
    err = max(float(np.max(np.abs(a - e))) for a, e in zip(g_jit, g_eager))
    return dict(residual_bytes=res_bytes, xla_temp_bytes=temp, rss=_peak_rss(), jit_vs_eager=err)


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _child(args, *extra) -> dict:
    cmd = [sys.executable, __file__, *extra, "--steps", str(args.steps), "--hidden", str(args.hidden)]
    cmd += ["--repeats", str(args.repeats)]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        if "No module named 'jax'" in proc.stderr:
            return {"error": "jax is not installed"}
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        return {"error": last}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _kb(x) -> str:
    return "-" if x is None else f"{x / 1024:,.0f} KiB"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--repeats", type=int, default=100)
    p.add_argument("--child", choices=["time", "memory"])
    p.add_argument("--lib", default="funcgrad", choices=["funcgrad", "jax"])
    p.add_argument("--checkpoint", default="none", choices=list(CHECKPOINTS))
    args = p.parse_args()
    if args.child == "time":
        print(json.dumps(time_all(args)))
        return
    if args.child == "memory":
        print(json.dumps(memory_of(args.lib, args.checkpoint, args)))
        return
    times = _child(args, "--child", "time")
    if "error" in times:
        raise SystemExit(f"timing failed: {times['error']}")
    mem = {"jax": _child(args, "--child", "memory", "--lib", "jax")}
    for name in CHECKPOINTS:
        mem[f"funcgrad {name}"] = _child(args, "--child", "memory", "--checkpoint", name)
    jax_t = times.get("jax", (None, None))
    print(f"\n## jit(grad) of a {args.steps}-step RNN, hidden {args.hidden}, inputs {INPUTS}, float32")
    print(
        f"(medians and minima of {args.repeats} round-robin samples; memory from one process per variant)\n"
    )
    head = (
        f"{'variant':<26} {'median':>10} {'/ jax':>7} {'min':>10} {'/ jax':>7} "
        f"{'residuals':>12} {'XLA temp':>12} {'peak RSS':>10}"
    )
    print(head)
    print("-" * len(head))
    for name in ["jax", *(f"funcgrad {n}" for n in CHECKPOINTS)]:
        label = "jax.lax.scan" if name == "jax" else f"funcgrad checkpoint={name.split()[1]}"
        t = times.get(name)
        m = mem.get(name, {})
        if t is None or isinstance(t, dict):
            print(f"{label:<26} {'not installed' if t is None else 'failed: ' + t['error']}")
            continue
        r_med = f"{t[0] / jax_t[0]:.2f}x" if jax_t[0] else "-"
        r_min = f"{t[1] / jax_t[1]:.2f}x" if jax_t[1] else "-"
        rss = f"{m['rss'] / 2**20:.0f} MiB" if "rss" in m else "-"
        print(
            f"{label:<26} {fmt(t[0]):>10} {r_med:>7} {fmt(t[1]):>10} {r_min:>7} "
            f"{_kb(m.get('residual_bytes')):>12} {_kb(m.get('xla_temp_bytes')):>12} {rss:>10}"
        )
    errs = [m["jit_vs_eager"] for k, m in mem.items() if k != "jax" and m.get("jit_vs_eager") is not None]
    if errs:
        print(f"\nmax |jit - eager| over the funcgrad variants' gradients: {max(errs):.2e}")
    for k, m in mem.items():
        if "error" in m:
            print(f"memory of {k} failed: {m['error']}")


if __name__ == "__main__":
    main()
