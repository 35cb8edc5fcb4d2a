"""CNN benchmarks: JAX's differentially-private-SGD model, funcgrad vs jax vs torch (when installed).

Run: ``python bench/bench_conv.py`` (``--quick`` for fewer repeats; ``--cases`` to pick). The
model is ``examples/differentially_private_sgd.py``'s: conv 16 8x8 stride 2 SAME, tanh, max-pool
2x2 stride 1, conv 32 4x4 stride 2 VALID, tanh, max-pool 2x2 stride 1, dense 32, tanh, dense 10,
log-softmax cross-entropy; 28x28x1 float32 inputs, batch 128. Cases:

- per_sample: steady-state ``jit(vmap(grad(loss)))`` per-example gradients (torch:
  ``torch.func.vmap(torch.func.grad(...))`` with ``F.conv2d``/``F.max_pool2d``, eager);
- dp_step: the whole DP-SGD step -- per-example grads, clip to norm 1.5, sum, Gaussian noise,
  average, SGD update -- jitted (torch: the same with torch.func, eager);
- first_call: a fresh process imports the library, builds the jitted per-example gradient, compiles
  and runs it once (in-process time from the first line);
- eager_grad: ``grad`` of the batch loss without jit (funcgrad's NumPy impls; torch autograd;
  jax dispatching op by op).

Every measurement runs in its own subprocess (one library per process), libraries take turns
(round-robin) so machine load hits them alike, and the reported number is the median over rounds
of each round's median. Ratios are funcgrad / other (below 1.0 means funcgrad is faster).
``--threads N`` gives every library the same thread count (BLAS/OpenMP pools, torch, XLA's CPU
runtime with ``N = 1``): on a loaded machine torch's and OpenBLAS's default thread pools spin
against each other, which says more about the machine than about the libraries.
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()  # first line: "first call" counts the imports

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from _timing import block, fmt, median_time, run_script  # noqa: E402

BATCH = 128
CLIP, NOISE, LR = 1.5, 1.1, 0.25

# ----------------------------------------------------------------------------------------------
# Data and parameters (NumPy, shared by all libraries)


def _numpy_problem():
    import numpy as np

    rng = np.random.default_rng(0)

    def glorot(shape, fan_in, fan_out):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / (fan_in + fan_out))).astype(np.float32)

    params = [
        (glorot((8, 8, 1, 16), 64, 1024), np.zeros(16, np.float32)),
        (glorot((4, 4, 16, 32), 256, 512), np.zeros(32, np.float32)),
        (glorot((512, 32), 512, 32), np.zeros(32, np.float32)),
        (glorot((32, 10), 32, 10), np.zeros(10, np.float32)),
    ]
    x = rng.uniform(0, 1, (BATCH, 28, 28, 1)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, BATCH)]
    return params, x, y


# ----------------------------------------------------------------------------------------------
# funcgrad and jax: one program text over (lax, numpy, nn, random) modules


def _jaxlike(name):
    if name == "jax":
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)  # funcgrad runs XLA with 64-bit types too
        return dict(
            lax=jax.lax, np=jnp, log_softmax=jax.nn.log_softmax, random=jax.random, jit=jax.jit,
            grad=jax.grad, vmap=jax.vmap, tree=jax.tree_util,
        )  # fmt: skip
    import funcgrad
    import funcgrad.numpy as fnp
    from funcgrad import lax, nn, random, tree_util

    return dict(
        lax=lax, np=fnp, log_softmax=nn.log_softmax, random=random, jit=funcgrad.jit, grad=funcgrad.grad,
        vmap=funcgrad.vmap, tree=tree_util,
    )  # fmt: skip


def _jaxlike_model(L):
    lax, jnp = L["lax"], L["np"]
    dn = ("NHWC", "HWIO", "NHWC")

    def predict(params, x):
        (w1, b1), (w2, b2), (w3, b3), (w4, b4) = params
        h = jnp.tanh(lax.conv_general_dilated(x, w1, (2, 2), "SAME", dimension_numbers=dn) + b1)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 1, 1, 1), "VALID")
        h = jnp.tanh(lax.conv_general_dilated(h, w2, (2, 2), "VALID", dimension_numbers=dn) + b2)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 1, 1, 1), "VALID")
        h = jnp.reshape(h, (h.shape[0], -1))
        h = jnp.tanh(h @ w3 + b3)
        return h @ w4 + b4

    def loss(params, x, y):
        return -jnp.mean(jnp.sum(L["log_softmax"](predict(params, x)) * y, axis=1))

    def loss_single(params, xi, yi):
        return loss(params, xi[None], yi[None])

    per_example = L["vmap"](L["grad"](loss_single), in_axes=(None, 0, 0))

    def dp_step(params, x, y, key):
        grads = per_example(params, x, y)
        leaves, tree = L["tree"].tree_flatten(grads)
        norms = jnp.sqrt(sum(jnp.sum(jnp.reshape(g, (g.shape[0], -1)) ** 2, axis=1) for g in leaves))
        scale = 1.0 / jnp.maximum(norms / CLIP, 1.0)
        keys = L["random"].split(key, len(leaves))
        noisy = []
        for g, k in zip(leaves, keys):
            summed = jnp.tensordot(scale, g, axes=1)
            noise = CLIP * NOISE * L["random"].normal(k, summed.shape, summed.dtype)
            noisy.append((summed + noise) / x.shape[0])
        flat_params = L["tree"].tree_leaves(params)
        return L["tree"].tree_unflatten(tree, [p - LR * g for p, g in zip(flat_params, noisy)])

    return loss, per_example, dp_step


_block = block


# ----------------------------------------------------------------------------------------------
# torch


def _torch_model():
    import torch
    import torch.nn.functional as F
    from torch.func import grad, vmap

    params, x, y = _numpy_problem()
    # NCHW / OIHW layouts: the same weights, transposed once.
    tp = [
        (torch.tensor(params[0][0].transpose(3, 2, 0, 1)), torch.tensor(params[0][1])),
        (torch.tensor(params[1][0].transpose(3, 2, 0, 1)), torch.tensor(params[1][1])),
        (torch.tensor(params[2][0].T.copy()), torch.tensor(params[2][1])),
        (torch.tensor(params[3][0].T.copy()), torch.tensor(params[3][1])),
    ]
    tx = torch.tensor(x.transpose(0, 3, 1, 2).copy())
    ty = torch.tensor(y)

    def predict(p, x):
        (w1, b1), (w2, b2), (w3, b3), (w4, b4) = p
        h = torch.tanh(F.conv2d(F.pad(x, (3, 3, 3, 3)), w1, b1, stride=2))  # SAME for 28 -> 14
        h = F.max_pool2d(h, 2, 1)
        h = torch.tanh(F.conv2d(h, w2, b2, stride=2))
        h = F.max_pool2d(h, 2, 1)
        h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)  # NHWC flattening, as the jax model
        h = torch.tanh(F.linear(h, w3, b3))
        return F.linear(h, w4, b4)

    def loss(p, x, y):
        return -(F.log_softmax(predict(p, x), dim=1) * y).sum(1).mean()

    def loss_single(p, xi, yi):
        return loss(p, xi[None], yi[None])

    per_example = vmap(grad(loss_single), in_dims=(None, 0, 0))

    def dp_step(p, x, y, gen):
        grads = per_example(p, x, y)
        leaves = [g for pair in grads for g in pair]
        norms = torch.sqrt(sum((g.reshape(g.shape[0], -1) ** 2).sum(1) for g in leaves))
        scale = 1.0 / torch.clamp(norms / CLIP, min=1.0)
        new = []
        for param, g in zip([q for pair in p for q in pair], leaves):
            summed = torch.tensordot(scale, g, dims=1)
            noise = CLIP * NOISE * torch.randn(summed.shape, generator=gen)
            new.append(param - LR * (summed + noise) / x.shape[0])
        return [(new[2 * i], new[2 * i + 1]) for i in range(len(new) // 2)]

    return tp, tx, ty, loss, per_example, dp_step


# ----------------------------------------------------------------------------------------------
# Workers (one library per process)


def work(lib, case, repeats):
    if lib == "torch":
        return work_torch(case, repeats)
    L = _jaxlike(lib)
    params, x, y = _numpy_problem()
    loss, per_example, dp_step = _jaxlike_model(L)
    if case == "first_call":
        _block(L["jit"](per_example)(params, x, y))
        return time.perf_counter() - _T0
    if lib == "jax":  # device-resident inputs for both libraries
        import jax.numpy as jnp

        params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
        x, y = jnp.asarray(x), jnp.asarray(y)
    else:
        import funcgrad.numpy as fnp

        params = [(fnp.asarray(w), fnp.asarray(b)) for w, b in params]
        x, y = fnp.asarray(x), fnp.asarray(y)
    if case == "per_sample":
        f = L["jit"](per_example)
        return median_time(lambda: _block(f(params, x, y)), warmup=3, repeats=repeats, inner=3)
    if case == "dp_step":
        step = L["jit"](dp_step)
        key = L["random"].PRNGKey(0)
        return median_time(lambda: _block(step(params, x, y, key)), warmup=3, repeats=repeats, inner=3)
    if case == "eager_grad":
        g = L["grad"](loss)
        return median_time(lambda: _block(g(params, x, y)), warmup=2, repeats=repeats)
    raise ValueError(case)


def work_torch(case, repeats):
    import torch

    if os.environ.get("BENCH_TORCH_THREADS"):
        torch.set_num_threads(int(os.environ["BENCH_TORCH_THREADS"]))

    tp, tx, ty, loss, per_example, dp_step = _torch_model()
    if case == "per_sample":
        return median_time(lambda: per_example(tp, tx, ty), warmup=3, repeats=repeats, inner=3)
    if case == "dp_step":
        gen = torch.Generator().manual_seed(0)
        return median_time(lambda: dp_step(tp, tx, ty, gen), warmup=3, repeats=repeats, inner=3)
    if case == "eager_grad":
        leaves = [t.requires_grad_() for pair in tp for t in pair]

        def step():
            out = loss(tp, tx, ty)
            return torch.autograd.grad(out, leaves)

        return median_time(step, warmup=2, repeats=repeats)
    raise ValueError(case)


# ----------------------------------------------------------------------------------------------
# Driver


def run_worker(lib, case, repeats, threads=None):
    env = {}
    if threads:
        # One thread count for every library: BLAS/OpenMP pools, torch, and XLA's CPU runtime.
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BENCH_TORCH_THREADS"):
            env[var] = str(threads)
        if threads == 1:
            flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
            env["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flags).strip()
    result, _ = run_script(__file__, ["--worker", lib, case, repeats], ROOT, env, timeout=900)
    return result["seconds"]


CASES = ("per_sample", "dp_step", "first_call", "eager_grad")
TITLES = {
    "per_sample": "jit(vmap(grad)) DP-SGD CNN b128",
    "dp_step": "DP-SGD step (clip/sum/noise/update)",
    "first_call": "first call incl. compile, fresh proc",
    "eager_grad": "eager grad of the CNN, b128",
}
GOALS = {
    "per_sample": "<= 1.0x jax",
    "dp_step": "<= 1.0x jax",
    "first_call": "<= 1.0x jax",
    "eager_grad": "<= 1.0x torch",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--threads", type=int, default=None, help="one thread count for all libraries")
    args = ap.parse_args()
    rounds = args.rounds or (2 if args.quick else 3)
    repeats = 5 if args.quick else 11
    libs = ["funcgrad"] + [lib for lib in ("jax", "torch") if importlib.util.find_spec(lib) is not None]
    results: dict = {}
    for case in args.cases.split(","):
        case_libs = [lib for lib in libs if not (lib == "torch" and case == "first_call")]
        samples: dict = {lib: [] for lib in case_libs}
        for _ in range(rounds):
            for lib in case_libs:
                samples[lib].append(run_worker(lib, case, repeats, args.threads))
        results[case] = {lib: statistics.median(v) for lib, v in samples.items()}
        print(f"  {case}: " + ", ".join(f"{k}={fmt(v)}" for k, v in results[case].items()), file=sys.stderr)
    report(results, libs)


def report(results, libs):
    print(f"\n{'case':<38} {'funcgrad':>10} {'jax':>10} {'torch':>10} {'fg/jax':>7} {'fg/torch':>9}  goal")
    print("-" * 104)
    for case, r in results.items():
        fg = r["funcgrad"]
        cols = [fmt(r[lib]) if lib in r else "n/a" for lib in ("funcgrad", "jax", "torch")]
        ratios = [f"{fg / r[lib]:.2f}x" if lib in r else "-" for lib in ("jax", "torch")]
        row = f"{TITLES[case]:<38} {cols[0]:>10} {cols[1]:>10} {cols[2]:>10} {ratios[0]:>7} {ratios[1]:>9}"
        print(f"{row}  {GOALS[case]}")
    missing = [lib for lib in ("jax", "torch") if lib not in libs]
    if missing:
        print(f"(not installed, no comparison: {', '.join(missing)})")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        lib, case, repeats = sys.argv[2], sys.argv[3], int(sys.argv[4])
        print(json.dumps({"seconds": work(lib, case, repeats)}))
    else:
        main()
