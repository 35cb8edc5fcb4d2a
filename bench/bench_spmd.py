"""SPMD benchmarks on 8 CPU devices: funcgrad vs jax with the same device count.

Run: ``python bench/bench_spmd.py`` (``--quick`` for fewer rounds). Every worker process starts
with ``XLA_FLAGS=--xla_force_host_platform_device_count=8``; one library per process, taking
turns (round-robin) so load on the shared machine hits both alike; the reported number is the
median over rounds of each round's median. Cases:

- dp_step: one data-parallel training step (forward, gradient, SGD update, all in one jitted
  function) of a tanh MLP 64-256-256-10 with softmax cross-entropy, float32, batch 1024 split
  over the 8 devices (``NamedSharding(mesh, P("batch"))``), parameters replicated, on an
  ``Explicit`` mesh (``make_mesh``'s default in both libraries: sharding in types); steady state
  (goal: <= 1.0x jax). On 2 cores 8 virtual devices share the same cores, so this measures the
  overhead of the partitioned program, not a speed-up;
- tf_step: one training step of a transformer-style block stack (2 blocks of multi-head
  attention and an MLP, pre-layer-norm residuals; batch 16, sequence 64, width 128, 4 heads,
  MLP 512, float32) on a 2-D ``Explicit`` mesh (data=2, model=4): activations split over
  ``data``, the attention and MLP weights over ``model`` (Megatron-style: column-split in,
  row-split out, whose products name their ``out_sharding``); goal <= 1.0x jax;
- dp_step_1dev: the same step on one device, for reference;
- dispatch: a jitted ``a * b + 1`` on (8, 4) float32 arrays already split over the 8 devices,
  the result waited for (goal: <= 1.5x jax).

``--collectives`` prints, for dp_step and tf_step, the collectives (all-reduce, all-gather,
reduce-scatter, all-to-all, collective-permute) in each library's optimized HLO of the step
(``jit(step).lower(...).compile().as_text()``); funcgrad's should hold no more than jax's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
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
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        jax.config.update("jax_enable_x64", True)  # funcgrad runs XLA with 64-bit types too
        mesh = jax.make_mesh((N_DEVICES,), ("batch",))  # Explicit axes (JAX 0.10's default)
        mesh2 = jax.make_mesh((2, N_DEVICES // 2), ("data", "model"))
        return dict(np=jnp, jax=jax, mesh=mesh, mesh2=mesh2, NS=NamedSharding, P=P, set_mesh=jax.set_mesh)
    import funcgrad
    import funcgrad.numpy as fnp
    from funcgrad.sharding import NamedSharding, P, make_mesh, set_mesh

    mesh = make_mesh((N_DEVICES,), ("batch",))
    mesh2 = make_mesh((2, N_DEVICES // 2), ("data", "model"))
    return dict(np=fnp, jax=funcgrad, mesh=mesh, mesh2=mesh2, NS=NamedSharding, P=P, set_mesh=set_mesh)


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


def _dp_inputs(L, sharded=True):
    params, x, y, step = _problem(L)
    J, mesh = L["jax"], L["mesh"]
    if sharded:
        params = J.device_put(params, L["NS"](mesh, L["P"]()))
        x, y = J.device_put((x, y), L["NS"](mesh, L["P"]("batch")))
    else:
        params, x, y = J.device_put((params, x, y), J.devices()[0])
    return step, (params, x, y)


def work_dp_step(L, repeats, sharded=True):
    step, (params, x, y) = _dp_inputs(L, sharded)
    state = {"p": params}

    def run():
        state["p"] = step(state["p"], x, y)
        _block(state["p"])

    if not sharded:  # (jax refuses one-device arguments under a context mesh of 8)
        return median_time(run, warmup=5, repeats=repeats, inner=5)
    with L["set_mesh"](L["mesh"]):
        return median_time(run, warmup=5, repeats=repeats, inner=5)


# The transformer-style step: sizes, and the specs of each weight over the 2-D mesh.
TF = dict(batch=16, seq=64, d=128, heads=4, ff=512, blocks=2)


def _tf_problem(L):
    import numpy as np

    jnp, J, P = L["np"], L["jax"], L["P"]
    B, T, D, H, F = TF["batch"], TF["seq"], TF["d"], TF["heads"], TF["ff"]
    rng = np.random.default_rng(0)

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    # Column-split projections in (over 'model'), row-split projections out.
    specs = {"wq": P(None, "model"), "wk": P(None, "model"), "wv": P(None, "model"), "wo": P("model", None),
             "w1": P(None, "model"), "w2": P("model", None), "g1": P(), "g2": P()}  # fmt: skip
    blocks = [
        {
            "wq": w(D, D),
            "wk": w(D, D),
            "wv": w(D, D),
            "wo": w(D, D),
            "w1": w(D, F),
            "w2": w(F, D),
            "g1": np.ones(D, np.float32),
            "g2": np.ones(D, np.float32),
        }  # fmt: skip
        for _ in range(TF["blocks"])
    ]
    x = rng.standard_normal((B, T, D)).astype(np.float32)
    y = rng.standard_normal((B, T, D)).astype(np.float32)
    act = P("data", None, None)

    def norm(h, g):
        mu = jnp.mean(h, axis=-1, keepdims=True)
        var = jnp.mean((h - mu) ** 2, axis=-1, keepdims=True)
        return (h - mu) / jnp.sqrt(var + 1e-5) * g

    def block(p, h):
        a = norm(h, p["g1"])
        q = (a @ p["wq"]).reshape(B, T, H, D // H)
        k = (a @ p["wk"]).reshape(B, T, H, D // H)
        v = (a @ p["wv"]).reshape(B, T, H, D // H)
        s = jnp.einsum("bthd,bshd->bhts", q, k) / np.float32(np.sqrt(D // H))
        s = s - jnp.max(s, axis=-1, keepdims=True)
        e = jnp.exp(s)
        att = e / jnp.sum(e, axis=-1, keepdims=True)
        o = jnp.einsum("bhts,bshd->bthd", att, v).reshape(B, T, D)
        h = h + jnp.einsum("btd,de->bte", o, p["wo"], out_sharding=act)
        m = jnp.tanh(norm(h, p["g2"]) @ p["w1"])
        return h + jnp.einsum("btf,fd->btd", m, p["w2"], out_sharding=act)

    def loss(params, x, y):
        h = x
        for p in params:
            h = block(p, h)
        return jnp.mean((h - y) ** 2)

    @J.jit
    def step(params, x, y):
        grads = J.grad(loss)(params, x, y)
        return [{k: p[k] - 0.01 * g[k] for k in p} for p, g in zip(params, grads)]

    mesh = L["mesh2"]
    params = [{k: J.device_put(v, L["NS"](mesh, specs[k])) for k, v in b.items()} for b in blocks]
    x, y = J.device_put((x, y), L["NS"](mesh, act))
    return step, (params, x, y)


def work_tf_step(L, repeats):
    with L["set_mesh"](L["mesh2"]):
        step, (params, x, y) = _tf_problem(L)
        state = {"p": params}

        def run():
            state["p"] = step(state["p"], x, y)
            for p in state["p"]:
                _block(list(p.values()))

        return median_time(run, warmup=3, repeats=repeats, inner=3)


COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")


def count_collectives(hlo: str) -> dict:
    """How many of each collective an optimized HLO module holds (async pairs count once)."""
    counts = {}
    for op in COLLECTIVES:
        # An instruction line: "%name = <shape, maybe a tuple> all-reduce(...)".
        n = len(re.findall(rf"^\s*\S+ = [^\n]*? {op}(?:-start)?\(", hlo, flags=re.MULTILINE))
        if n:
            counts[op] = n
    return counts


def work_collectives(L, case):
    if case == "dp_step":
        with L["set_mesh"](L["mesh"]):
            step, args = _dp_inputs(L)
            return count_collectives(step.lower(*args).compile().as_text())
    with L["set_mesh"](L["mesh2"]):
        step, args = _tf_problem(L)
        return count_collectives(step.lower(*args).compile().as_text())


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


WORKERS = {
    "dp_step": work_dp_step,
    "tf_step": work_tf_step,
    "dp_step_1dev": work_dp_step_1dev,
    "dispatch": work_dispatch,
}
GOALS = {
    "dp_step": "<= 1.0x jax",
    "tf_step": "<= 1.0x jax",
    "dp_step_1dev": "(reference)",
    "dispatch": "<= 1.5x jax",
}
TITLES = {
    "dp_step": "DP MLP step, b1024 over 8 devices",
    "tf_step": "2-D data x model transformer step",
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
    ap.add_argument("--cases", default="dp_step,tf_step,dp_step_1dev,dispatch")
    ap.add_argument("--collectives", action="store_true", help="count collectives in the optimized HLO")
    args = ap.parse_args()
    rounds = args.rounds or (2 if args.quick else 4)
    repeats = 7 if args.quick else 15
    have_jax = importlib.util.find_spec("jax") is not None
    libs = ["funcgrad", "jax"] if have_jax else ["funcgrad"]
    env = {"XLA_FLAGS": f"--xla_force_host_platform_device_count={N_DEVICES}"}
    if args.collectives:
        print(f"{'collectives in the optimized HLO':<36} {'funcgrad':>24} {'jax':>24}")
        for case in ("dp_step", "tf_step"):
            got = {
                lib: _timing.run_script(__file__, ["--count-collectives", lib, case], ROOT, env)[0]["counts"]
                for lib in libs
            }
            shown = [", ".join(f"{k} {v}" for k, v in got[lib].items()) or "none" for lib in libs]
            print(f"{TITLES[case]:<36} " + " ".join(f"{t:>24}" for t in shown))
        print()
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
    elif len(sys.argv) == 4 and sys.argv[1] == "--count-collectives":
        print(json.dumps({"counts": work_collectives(_lib(sys.argv[2]), sys.argv[3])}))
    else:
        main()
