"""Eager (no jit) differentiation speed against HIPS autograd, PyTorch and JAX (eager).

Run: python bench/bench_eager.py [--quick] [--rounds N] [--no-jax]
(peers come from the `bench` extra: pip install -e ".[bench]"). On a shared machine, prefix
``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` for a single-threaded comparison.

Cases (issue: the kernel):
- grad of a tanh MLP loss, 64-256-256-10, batch 128, float32, softmax cross-entropy;
- the 4th derivative of tanh at a scalar, grad(grad(grad(grad(tanh)))), float64;
- "thinking in jax"'s eager normalisation ``(X - X.mean(0)) / X.std(0)`` of X float32[10000, 10]
  (no derivative: eager reductions over a tall array's axis 0).
The last column is funcgrad's time divided by the peer's (below 1: funcgrad is faster).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout
from _timing import median_time, print_table  # noqa: E402

SIZES = [64, 256, 256, 10]
BATCH = 128


def make_data(dtype=np.float32):
    rng = np.random.default_rng(0)
    params = []
    for m, n in zip(SIZES[:-1], SIZES[1:]):
        params.append(((rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype), np.zeros(n, dtype)))
    x = rng.standard_normal((BATCH, SIZES[0])).astype(dtype)
    y = np.eye(SIZES[-1], dtype=dtype)[rng.integers(0, SIZES[-1], BATCH)]
    return params, x, y


def mlp_loss_factory(np_mod, logsumexp):
    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = np_mod.tanh(h @ w + b)
        w, b = params[-1]
        logits = h @ w + b
        return -np_mod.mean(np_mod.sum(y * (logits - logsumexp(logits)), axis=1))

    return loss


MLP, D4 = "mlp grad (f32, eager)", "4th derivative of tanh (f64)"
NORM = "(X - X.mean(0)) / X.std(0), f32[10000,10]"


def norm_data():
    return np.random.default_rng(1701).random((10000, 10)).astype(np.float32)


def norm(x):
    x = x - x.mean(0)
    return x / x.std(0)


def cases_funcgrad():
    import funcgrad
    import funcgrad.numpy as fnp

    def lse(z):
        m = fnp.max(z, axis=1, keepdims=True)
        return m + fnp.log(fnp.sum(fnp.exp(z - m), axis=1, keepdims=True))

    params, x, y = make_data()
    g = funcgrad.grad(mlp_loss_factory(fnp, lse))
    d4 = fnp.tanh
    for _ in range(4):
        d4 = funcgrad.grad(d4)
    xn = fnp.asarray(norm_data())
    return {MLP: lambda: g(params, x, y), D4: lambda: d4(0.5), NORM: lambda: norm(xn)}


def cases_autograd():
    import autograd
    import autograd.numpy as anp

    def lse(z):
        m = anp.max(z, axis=1, keepdims=True)
        return m + anp.log(anp.sum(anp.exp(z - m), axis=1, keepdims=True))

    params, x, y = make_data()
    g = autograd.grad(mlp_loss_factory(anp, lse))
    d4 = anp.tanh
    for _ in range(4):
        d4 = autograd.grad(d4)
    xn = norm_data()
    return {MLP: lambda: g(params, x, y), D4: lambda: d4(0.5), NORM: lambda: norm(xn)}


def cases_torch():
    import torch

    # As many threads as NumPy's BLAS gets (OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 makes the
    # comparison single-threaded, which a loaded machine disturbs far less).
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1))
    params, x, y = make_data()
    tparams = [(torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)) for w, b in params]
    tx, ty = torch.tensor(x), torch.tensor(y)

    def step():
        h = tx
        for w, b in tparams[:-1]:
            h = torch.tanh(h @ w + b)
        w, b = tparams[-1]
        logits = h @ w + b
        loss = -(ty * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()
        return torch.autograd.grad(loss, [p for pair in tparams for p in pair])

    def d4():
        x = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
        y = torch.tanh(x)
        for _ in range(4):
            (y,) = torch.autograd.grad(y, x, create_graph=True)
        return y

    xn = torch.tensor(norm_data())

    def norm_torch():
        x = xn - xn.mean(0)
        return x / x.std(0, correction=0)

    return {MLP: step, D4: d4, NORM: norm_torch}


def cases_jax():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    params, x, y = make_data()
    jparams = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
    g = jax.grad(mlp_loss_factory(jnp, lambda z: jax.nn.logsumexp(z, axis=1, keepdims=True)))
    d4 = jnp.tanh
    for _ in range(4):
        d4 = jax.grad(d4)

    def no_jit(f):
        def run():
            with jax.disable_jit():
                return jax.block_until_ready(f())

        return run

    xn = jnp.asarray(norm_data())
    return {
        MLP: no_jit(lambda: g(jparams, x, y)),
        D4: no_jit(lambda: d4(0.5)),
        NORM: no_jit(lambda: norm(xn)),
    }


PEERS = [
    ("funcgrad", cases_funcgrad),
    ("HIPS autograd", cases_autograd),
    ("torch (eager)", cases_torch),
    ("jax (eager, no jit)", cases_jax),
]
# Samples per round: (repeats, warm-up); jax's eager path is slow, fewer samples of it.
SAMPLES = {"jax (eager, no jit)": (5, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds and repeats")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--no-jax", action="store_true", help="leave out jax's (slow) eager mode")
    args = ap.parse_args()
    rounds = args.rounds or (3 if args.quick else 5)
    scale = 0.5 if args.quick else 1.0
    # Every peer's cases are built in this one process on the same inputs; then the peers take
    # turns (round-robin), so that load on a shared machine hits them alike. Reported: the median
    # over rounds of each round's median.
    cases: dict = {}
    for lib, make in PEERS:
        if lib.startswith("jax") and args.no_jax:
            continue
        try:
            cases[lib] = make()
        except ImportError:
            cases[lib] = None
    samples: dict = {(case, lib): [] for lib, cs in cases.items() if cs for case in cs}
    for _ in range(rounds):
        for lib, cs in cases.items():
            if not cs:
                continue
            for case, fn in cs.items():
                repeats, warmup = SAMPLES.get(lib, (50 if case == D4 else 20, 3))
                t = median_time(fn, warmup=warmup, repeats=max(3, int(repeats * scale)))
                samples[(case, lib)].append(t)
    rows = []
    for lib, cs in cases.items():
        for case in (MLP, D4, NORM):
            rows.append((case, lib, statistics.median(samples[(case, lib)]) if cs else None))
    order = {lib: i for i, (lib, _) in enumerate(PEERS)}
    rows.sort(key=lambda r: (r[0], order.get(r[1], 9)))
    print_table(f"Eager differentiation (median per call; {rounds} rounds, peers round-robin)", rows)
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
