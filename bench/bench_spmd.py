"""SPMD benchmarks on 8 CPU devices: funcgrad vs jax with the same device count.

Run: ``python bench/bench_spmd.py`` (``--quick`` for fewer rounds). Every worker process starts
with ``XLA_FLAGS=--xla_force_host_platform_device_count=8``; one library per process, taking
turns (round-robin) so load on the shared machine hits both alike; the reported number is the
median over rounds of each round's median. Cases:

- dp_step: one data-parallel training step (forward, gradient, SGD update, all in one jitted
  function) of a tanh MLP 64-256-256-10 with softmax cross-entropy, float32, batch 1024 split
  over the 8 devices (``NamedSharding(mesh, P("batch"))``), parameters replicated; steady state
  (goal: <= 1.1x jax). On 2 cores 8 virtual devices share the same cores, so this measures the
  overhead of the partitioned program, not a speed-up;
- dp_step_1dev: the same step on one device, for reference;
- dispatch: a jitted ``a * b + 1`` on (8, 4) float32 arrays already split over the 8 devices,
  the result waited for (goal: <= 1.5x jax).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import _timing  # noqa: E402
from _timing import fmt, median_time  # noqa: E402

N_DEVICES = 8


def _lib(name):
    if name == "jax":
        import jax
        import jax.numpy as jnp
        from jax.sharding import Mesh, NamedSharding
        from jax.sharding import PartitionSpec as P

        jax.config.update("jax_enable_x64", True)  # funcgrad runs XLA with 64-bit types too
        import numpy as np

        mesh = Mesh(np.array(jax.devices()), ("batch",))
        return dict(np=jnp, jax=jax, mesh=mesh, NS=NamedSharding, P=P)
    import funcgrad
    import funcgrad.numpy as fnp
    from funcgrad.sharding import NamedSharding, P, make_mesh

    return dict(np=fnp, jax=funcgrad, mesh=make_mesh((N_DEVICES,), ("batch",)), NS=NamedSharding, P=P)


def _problem(L, batch=1024, sizes=(64, 256, 256, 10)):
    import numpy as np

    jnp, J = L["np"], L["jax"]
    rng = np.random.default_rng(0)
    params = [
        ((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32), np.zeros(n, np.float32))
        for m, n in zip(sizes[:-1], sizes[1:])
    ]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jnp.tanh(h @ w + b)
        w, b = params[-1]
        logits = h @ w + b
        m = jnp.max(logits, axis=-1, keepdims=True)
        logz = jnp.log(jnp.sum(jnp.exp(logits - m), axis=-1, keepdims=True)) + m
        return -jnp.mean(jnp.sum(y * (logits - logz), axis=-1))

    @J.jit
    def step(params, x, y):
        grads = J.grad(loss)(params, x, y)
        return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]

    return params, x, y, step


def _block(tree):
    for leaf in tree if isinstance(tree, list | tuple) else [tree]:
        if isinstance(leaf, list | tuple):
            _block(leaf)
        else:
            leaf.block_until_ready()


def work_dp_step(L, repeats, sharded=True):
    params, x, y, step = _problem(L)
    J, mesh = L["jax"], L["mesh"]
    if sharded:
        params = J.device_put(params, L["NS"](mesh, L["P"]()))
        x, y = J.device_put((x, y), L["NS"](mesh, L["P"]("batch")))
    else:
        params, x, y = J.device_put((params, x, y), J.devices()[0])
    state = {"p": params}

    def run():
        state["p"] = step(state["p"], x, y)
        _block(state["p"])

    return median_time(run, warmup=5, repeats=repeats, inner=5)


def work_dp_step_1dev(L, repeats):
    return work_dp_step(L, repeats, sharded=False)


def work_dispatch(L, repeats):
    import numpy as np

    J = L["jax"]
    s = L["NS"](L["mesh"], L["P"]("batch"))
    a = J.device_put(np.arange(32, dtype=np.float32).reshape(8, 4), s)
    b = J.device_put(np.ones((8, 4), np.float32), s)
    f = J.jit(lambda a, b: a * b + 1)
    return median_time(lambda: f(a, b).block_until_ready(), warmup=200, repeats=repeats, inner=500)


WORKERS = {"dp_step": work_dp_step, "dp_step_1dev": work_dp_step_1dev, "dispatch": work_dispatch}
GOALS = {"dp_step": "<= 1.1x jax", "dp_step_1dev": "(reference)", "dispatch": "<= 1.5x jax"}
TITLES = {
    "dp_step": "DP MLP step, b1024 over 8 devices",
    "dp_step_1dev": "the same step on 1 device",
    "dispatch": "sharded jit dispatch a*b+1",
}


def run_worker(lib, case, repeats):
    env = {"XLA_FLAGS": f"--xla_force_host_platform_device_count={N_DEVICES}"}
    return _timing.run_script(__file__, ["--worker", lib, case, repeats], ROOT, env)[0]["seconds"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--cases", default="dp_step,dp_step_1dev,dispatch")
    args = ap.parse_args()
    rounds = args.rounds or (2 if args.quick else 4)
    repeats = 7 if args.quick else 15
    have_jax = importlib.util.find_spec("jax") is not None
    libs = ["funcgrad", "jax"] if have_jax else ["funcgrad"]
    results = {}
    for case in args.cases.split(","):
        samples: dict = {lib: [] for lib in libs}
        for _ in range(rounds):
            for lib in libs:
                samples[lib].append(run_worker(lib, case, repeats))
        results[case] = {lib: statistics.median(v) for lib, v in samples.items()}
        print(f"  {case}: " + ", ".join(f"{k}={fmt(v)}" for k, v in results[case].items()), file=sys.stderr)
    print(f"\n{'case (8 CPU devices)':<36} {'funcgrad':>11} {'jax':>11} {'fg/jax':>8}  goal")
    print("-" * 80)
    for case, r in results.items():
        fg, jx = r["funcgrad"], r.get("jax")
        ratio = f"{fg / jx:.2f}x" if jx else "-"
        print(f"{TITLES[case]:<36} {fmt(fg):>11} {fmt(jx) if jx else 'n/a':>11} {ratio:>8}  {GOALS[case]}")
    if not have_jax:
        print("(jax is not installed: no comparison)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        lib, case, repeats = sys.argv[2], sys.argv[3], int(sys.argv[4])
        print(json.dumps({"seconds": WORKERS[case](_lib(lib), repeats)}))
    else:
        main()
