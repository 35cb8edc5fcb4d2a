"""Eager (no jit) differentiation speed against HIPS autograd, PyTorch and JAX (eager).

Run: python bench/bench_eager.py     (peers come from the `bench` extra: pip install -e ".[bench]")

Cases (issue: the kernel):
- grad of a tanh MLP loss, 64-256-256-10, batch 128, float32, softmax cross-entropy;
- the 4th derivative of tanh at a scalar, grad(grad(grad(grad(tanh)))), float64.
The last column is funcgrad's time divided by the peer's (below 1: funcgrad is faster).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
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


def bench_funcgrad(rows):
    import funcgrad
    import funcgrad.numpy as fnp

    def lse(z):
        m = fnp.max(z, axis=1, keepdims=True)
        return m + fnp.log(fnp.sum(fnp.exp(z - m), axis=1, keepdims=True))

    params, x, y = make_data()
    g = funcgrad.grad(mlp_loss_factory(fnp, lse))
    rows.append(("mlp grad (f32, eager)", "funcgrad", median_time(lambda: g(params, x, y))))
    d4 = fnp.tanh
    for _ in range(4):
        d4 = funcgrad.grad(d4)
    rows.append(("4th derivative of tanh (f64)", "funcgrad", median_time(lambda: d4(0.5), repeats=50)))


def bench_autograd(rows):
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        rows += [
            ("mlp grad (f32, eager)", "HIPS autograd", None),
            ("4th derivative of tanh (f64)", "HIPS autograd", None),
        ]
        return

    def lse(z):
        m = anp.max(z, axis=1, keepdims=True)
        return m + anp.log(anp.sum(anp.exp(z - m), axis=1, keepdims=True))

    params, x, y = make_data()
    g = autograd.grad(mlp_loss_factory(anp, lse))
    rows.append(("mlp grad (f32, eager)", "HIPS autograd", median_time(lambda: g(params, x, y))))
    d4 = anp.tanh
    for _ in range(4):
        d4 = autograd.grad(d4)
    rows.append(("4th derivative of tanh (f64)", "HIPS autograd", median_time(lambda: d4(0.5), repeats=50)))


def bench_torch(rows):
    try:
        import torch
    except ImportError:
        rows += [
            ("mlp grad (f32, eager)", "torch (eager)", None),
            ("4th derivative of tanh (f64)", "torch (eager)", None),
        ]
        return
    torch.set_num_threads(os.cpu_count() or 1)
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

    rows.append(("mlp grad (f32, eager)", "torch (eager)", median_time(step)))

    def d4():
        x = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
        y = torch.tanh(x)
        for _ in range(4):
            (y,) = torch.autograd.grad(y, x, create_graph=True)
        return y

    rows.append(("4th derivative of tanh (f64)", "torch (eager)", median_time(d4, repeats=50)))


def bench_jax(rows):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        rows += [
            ("mlp grad (f32, eager)", "jax (eager, no jit)", None),
            ("4th derivative of tanh (f64)", "jax (eager, no jit)", None),
        ]
        return
    jax.config.update("jax_enable_x64", True)
    params, x, y = make_data()
    jparams = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
    g = jax.grad(mlp_loss_factory(jnp, lambda z: jax.nn.logsumexp(z, axis=1, keepdims=True)))
    with jax.disable_jit():
        rows.append(
            (
                "mlp grad (f32, eager)",
                "jax (eager, no jit)",
                median_time(lambda: jax.block_until_ready(g(jparams, x, y)), repeats=10),
            )
        )
        d4 = jnp.tanh
        for _ in range(4):
            d4 = jax.grad(d4)
        rows.append(
            (
                "4th derivative of tanh (f64)",
                "jax (eager, no jit)",
                median_time(lambda: jax.block_until_ready(d4(0.5)), repeats=10),
            )
        )


def main():
    rows: list = []
    # Each peer is timed in this one process, one after the other, on the same inputs.
    bench_funcgrad(rows)
    bench_autograd(rows)
    bench_torch(rows)
    bench_jax(rows)
    order = {"funcgrad": 0, "HIPS autograd": 1, "torch (eager)": 2, "jax (eager, no jit)": 3}
    rows.sort(key=lambda r: (r[0], order.get(r[1], 9)))
    print_table("Eager differentiation (median per call)", rows)


if __name__ == "__main__":
    main()
