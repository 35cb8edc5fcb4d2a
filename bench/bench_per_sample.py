"""Per-example gradients and DP-SGD clipping: funcgrad vs jax vs torch.func, with NumPy's floors.

Run: ``python bench/bench_per_sample.py`` (``--quick`` for fewer repeats; ``--cases`` to pick).
Cases (float32, batch 128):

- mlp: ``jit(vmap(grad(loss_single), in_axes=(None, 0, 0)))`` of the 64-256-256-10 tanh MLP
  (bench/bench_jit.py's problem); torch: ``torch.func.vmap(torch.func.grad(...))``, eager. The
  result is 128 copies of the 84k weights (43.5 MB); the achieved GB/s is printed beside NumPy's
  floors for the same bytes: the per-example outer products written by NumPy into preallocated
  buffers, and into freshly allocated ones (in a process that imports only NumPy);
- cnn: the same for the DP-SGD CNN of bench/bench_conv.py;
- ghost_mlp / ghost_cnn: ``jit(funcgrad.clipped_grad_sum(loss_single, l2_clip))`` (ghost
  clipping, NOTE: [ghost clipping] in funcgrad/per_example.py) against one ``jit(grad)`` of the
  summed batch loss of the same model (the goal: at most 3x), and against the materialised
  clipped sum (``vmap(grad)``, norms, clip, sum) in funcgrad and in jax.

``funcgrad+malloc`` is funcgrad with ``funcgrad.config.update("funcgrad_malloc_tuning", True)``
(NOTE: [eager allocations]: an explicit, process-wide opt-in; plain ``funcgrad`` leaves malloc
alone, as importing funcgrad always does).

Every measurement runs in its own subprocess (one library per process) and the libraries take
turns (round-robin), so load on the shared machine hits them alike; the number is the median over
rounds of each round's median.
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
from _timing import block, fmt, median_time, run_script  # noqa: E402

CLIP = 1.5


def _tree(lib):
    if lib == "jax":
        import jax

        return jax.tree_util
    from funcgrad import tree_util

    return tree_util


def _clipped_sum(L, tree, per_example):
    """The materialised DP-SGD clipped sum: per-example gradients, norms, clip, sum."""
    jnp = L["np"]

    def clipped(params, x, y):
        leaves, treedef = tree.tree_flatten(per_example(params, x, y))
        norms = jnp.sqrt(sum(jnp.sum(jnp.reshape(g, (g.shape[0], -1)) ** 2, axis=1) for g in leaves))
        scale = 1.0 / jnp.maximum(norms / CLIP, 1.0)
        return tree.tree_unflatten(treedef, [jnp.tensordot(scale, g, axes=1) for g in leaves])

    return clipped


def _model(lib, model):
    """(params, x, y, loss of the batch, per-example loss, the jaxlike library dict)."""
    if model == "mlp":
        from bench_jit import _lib, _mlp_problem

        L = _lib(lib)
        params, x, y, loss = _mlp_problem(L)
    else:
        from bench_conv import _jaxlike, _jaxlike_model, _numpy_problem

        L = _jaxlike(lib)
        params, x, y = _numpy_problem()
        loss = _jaxlike_model(L)[0]
    jnp = L["np"]
    params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]  # device-resident for both
    x, y = jnp.asarray(x), jnp.asarray(y)

    def loss_single(p, xi, yi):
        return loss(p, xi[None], yi[None])

    return params, x, y, loss, loss_single, L


def work_per_sample(lib, model, repeats):
    params, x, y, _, loss_single, L = _model(lib, model)
    f = L["jit"](L["vmap"](L["grad"](loss_single), in_axes=(None, 0, 0)))
    return median_time(lambda: block(f(params, x, y)), warmup=3, repeats=repeats, inner=3)


def work_ghost(lib, model, variant, repeats):
    params, x, y, loss, loss_single, L = _model(lib, model)
    if variant == "batch_grad":  # one gradient of the summed batch loss
        f = L["jit"](L["grad"](lambda p, x, y: loss(p, x, y) * x.shape[0]))
    elif variant == "ghost":
        import funcgrad

        f = funcgrad.jit(funcgrad.clipped_grad_sum(loss_single, CLIP))
    else:
        per_example = L["vmap"](L["grad"](loss_single), in_axes=(None, 0, 0))
        f = L["jit"](_clipped_sum(L, _tree(lib), per_example))
    return median_time(lambda: block(f(params, x, y)), warmup=3, repeats=repeats, inner=3)


def work_torch(model, repeats):
    import torch
    from torch.func import grad, vmap

    if model == "cnn":
        from bench_conv import _torch_model

        tp, tx, ty, _, per_example, _ = _torch_model()
        return median_time(lambda: per_example(tp, tx, ty), warmup=3, repeats=repeats, inner=3)
    import numpy as np
    from bench_jit import _mlp_problem

    params, x, y, _ = _mlp_problem({"np": np})
    tp = [(torch.tensor(w), torch.tensor(b)) for w, b in params]
    tx, ty = torch.tensor(x), torch.tensor(y)

    def loss_single(p, xi, yi):
        h = xi[None]
        for w, b in p[:-1]:
            h = torch.tanh(h @ w + b)
        w, b = p[-1]
        logits = h @ w + b
        return -(torch.log_softmax(logits, dim=-1) * yi[None]).sum(-1).mean()

    f = vmap(grad(loss_single), in_dims=(None, 0, 0))
    return median_time(lambda: f(tp, tx, ty), warmup=3, repeats=repeats, inner=3)


def work_numpy_floor(fresh, repeats):
    """NumPy writing the MLP's per-example gradients (the outer products of each layer's input and
    output cotangent, and the bias rows): into preallocated buffers, or into fresh arrays."""
    import numpy as np

    rng = np.random.default_rng(0)
    sizes = (64, 256, 256, 10)
    acts = [rng.standard_normal((128, m)).astype(np.float32) for m in sizes[:-1]]
    cots = [rng.standard_normal((128, n)).astype(np.float32) for n in sizes[1:]]
    bufs = [np.empty((128, m, n), np.float32) for m, n in zip(sizes[:-1], sizes[1:])]
    bias = [np.empty((128, n), np.float32) for n in sizes[1:]]

    def prealloc():
        for a, g, w, b in zip(acts, cots, bufs, bias):
            np.multiply(a[:, :, None], g[:, None, :], out=w)
            np.copyto(b, g)

    def fresh_write():
        return [(a[:, :, None] * g[:, None, :], g.copy()) for a, g in zip(acts, cots)]

    return median_time(fresh_write if fresh else prealloc, warmup=3, repeats=repeats, inner=3)


def worker(lib, case, repeats):
    if lib == "funcgrad+malloc":  # the opt-in of NOTE: [eager allocations], in this process only
        import funcgrad

        funcgrad.config.update("funcgrad_malloc_tuning", True)
        lib = "funcgrad"
    if case in ("mlp", "cnn"):
        if lib == "torch":
            return work_torch(case, repeats)
        if lib.startswith("numpy"):
            return work_numpy_floor(lib == "numpy_fresh", repeats)
        return work_per_sample(lib, case, repeats)
    model = case.split("_")[1]
    lib, variant = lib.split(":")
    return work_ghost(lib, model, variant, repeats)


MLP_BYTES = 4 * 128 * (64 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10)
CASE_LIBS = {
    "mlp": ["funcgrad", "funcgrad+malloc", "jax", "torch", "numpy_prealloc", "numpy_fresh"],
    "cnn": ["funcgrad", "funcgrad+malloc", "jax", "torch"],
    "ghost_mlp": ["funcgrad:ghost", "funcgrad:batch_grad", "funcgrad:materialised", "jax:materialised"],
    "ghost_cnn": ["funcgrad:ghost", "funcgrad:batch_grad", "funcgrad:materialised", "jax:materialised"],
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--cases", default=",".join(CASE_LIBS))
    args = ap.parse_args()
    rounds = args.rounds or (2 if args.quick else 3)
    repeats = 5 if args.quick else 11
    have = {lib: importlib.util.find_spec(lib) is not None for lib in ("jax", "torch")}
    results = {}
    for case in args.cases.split(","):
        libs = [lib for lib in CASE_LIBS[case] if have.get(lib.split(":")[0], True)]
        samples = {lib: [] for lib in libs}
        for _ in range(rounds):
            for lib in libs:
                result, _ = run_script(__file__, ["--worker", lib, case, repeats], ROOT, timeout=900)
                samples[lib].append(result["seconds"])
        results[case] = {lib: statistics.median(v) for lib, v in samples.items()}
        print(f"  {case}: " + ", ".join(f"{k}={fmt(v)}" for k, v in results[case].items()), file=sys.stderr)
    report(results)


def report(results):
    for case, r in results.items():
        print(f"\n## {case}\n")
        base = r.get("funcgrad") or r.get("funcgrad:ghost")
        for lib, t in r.items():
            extra = ""
            if case == "mlp":
                extra = f"  {MLP_BYTES / t / 1e9:6.1f} GB/s"
            ratio = f"fg/this {base / t:5.2f}x" if t is not base else ""
            print(f"{lib:<26} {fmt(t):>10}  {ratio:<16}{extra}")
    if "mlp" in results:
        print(f"\n(the MLP's per-example gradients are {MLP_BYTES / 1e6:.1f} MB)")
    print("goals: mlp <= 8 ms, <= 0.5x torch, <= 0.3x jax; cnn <= 0.5x jax; ghost <= 3x batch_grad")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        lib, case, repeats = sys.argv[2], sys.argv[3], int(sys.argv[4])
        print(json.dumps({"seconds": worker(lib, case, repeats)}))
    else:
        main()
