"""``python -m funcgrad``: a short tour of grad, residuals, per-sample gradients, higher-order
derivatives and jit.

Layer: surface (a script). Runs in well under 30 seconds on a laptop-class CPU.
"""

from __future__ import annotations

import time

import numpy as np

import funcgrad
import funcgrad.numpy as fnp


def _best_of(fn, repeats=5, inner=3):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            out = fn()
        funcgrad.block_until_ready(out)
        best = min(best, (time.perf_counter() - t0) / inner)
    return best


def _section(title: str, why: str) -> None:
    print(f"\n== {title}\n   {why}")


def loss(params, x, y):
    """Mean squared error of a one-hidden-layer tanh network."""
    hidden = fnp.tanh(x @ params["w1"] + params["b1"])
    pred = hidden @ params["w2"]
    return fnp.mean((pred - y) ** 2)


def main() -> None:
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.standard_normal((3, 4)) * 0.5,
        "b1": np.zeros(4),
        "w2": rng.standard_normal(4) * 0.5,
    }
    x = rng.standard_normal((8, 3))
    y = rng.standard_normal(8)

    print("funcgrad tour: pure functions in, transformed functions out.")

    _section(
        "1. The forward program",
        "make_jaxpr traces the loss into funcgrad's IR (what PyTorch records as grad_fn nodes).",
    )
    print(funcgrad.make_jaxpr(loss)(params, x, y))

    _section(
        "2. The backward program",
        "grad = linearize + transpose; the backward pass is itself a jaxpr, so it can be compiled\n"
        "   or differentiated again.",
    )
    print(funcgrad.make_jaxpr(funcgrad.grad(loss))(params, x, y))

    _section(
        "3. The gradient",
        "grad(loss)(params, x, y) returns gradients shaped like params (PyTorch: loss.backward()).",
    )
    grads = funcgrad.grad(loss)(params, x, y)
    for name, g in grads.items():
        print(f"   d loss / d {name}: shape {g.shape}, norm {float(fnp.sqrt(fnp.sum(g * g))):.4f}")

    _section(
        "4. What backward keeps",
        "memory_report lists what vjp saves for the backward pass (PyTorch: ctx.save_for_backward).",
    )

    def loss_of_params(p):
        return loss(p, x, y)

    print(funcgrad.memory_report(loss_of_params, params))

    _section(
        "5. Per-sample gradients",
        "vmap(grad(loss_one), in_axes=(None, 0, 0)): one gradient per example, in one vectorised call.",
    )
    big_x = rng.standard_normal((256, 3))
    big_y = rng.standard_normal(256)
    loss_one = lambda p, xi, yi: loss(p, xi[None], yi[None])
    per_example = funcgrad.jit(funcgrad.vmap(funcgrad.grad(loss_one), in_axes=(None, 0, 0)))
    single = funcgrad.jit(funcgrad.grad(loss_one))
    out = per_example(params, big_x, big_y)
    print(f"   per-example gradient of w1: shape {out['w1'].shape} (256 examples x 3 x 4)")
    t_vmap = _best_of(lambda: per_example(params, big_x, big_y))
    t_loop = _best_of(lambda: [single(params, big_x[i], big_y[i]) for i in range(256)], repeats=2, inner=1)
    print(
        f"   vmap: {t_vmap * 1e3:.2f} ms   loop of 256 jitted grads: {t_loop * 1e3:.1f} ms   "
        f"speedup {t_loop / t_vmap:.0f}x"
    )

    _section(
        "6. Higher-order derivatives",
        "grad(grad(...)) differentiates the backward program (PyTorch: create_graph=True).",
    )
    d4 = fnp.tanh
    for _ in range(4):
        d4 = funcgrad.grad(d4)
    t = np.tanh(0.5)
    exact = 16 * t - 40 * t**3 + 24 * t**5
    print(f"   d^4/dx^4 tanh(x) at 0.5 = {float(d4(0.5)):.10f} (closed form {exact:.10f})")
    h = funcgrad.hessian(lambda w: loss({**params, "w2": w}, x, y))(params["w2"])
    print(f"   Hessian of the loss in w2: shape {h.shape}, symmetric: {np.allclose(h, np.asarray(h).T)}")

    _section(
        "7. jit",
        "jit traces once per input shape, lowers to StableHLO and compiles with XLA;\n"
        "   later calls run the cached executable (PyTorch: torch.compile).",
    )
    wide = {
        "w1": rng.standard_normal((64, 256)) * 0.1,
        "b1": np.zeros(256),
        "w2": rng.standard_normal(256) * 0.1,
    }
    bx, by = rng.standard_normal((512, 64)), rng.standard_normal(512)
    eager_grad = funcgrad.grad(loss)
    jit_grad = funcgrad.jit(funcgrad.grad(loss))
    t0 = time.perf_counter()
    funcgrad.block_until_ready(jit_grad(wide, bx, by))
    compile_s = time.perf_counter() - t0
    t_eager = _best_of(lambda: eager_grad(wide, bx, by))
    t_jit = _best_of(lambda: jit_grad(wide, bx, by))
    print(f"   first call (trace + compile): {compile_s * 1e3:.0f} ms")
    print(
        f"   eager grad: {t_eager * 1e3:.2f} ms   jitted grad: {t_jit * 1e3:.2f} ms   "
        f"speedup {t_eager / t_jit:.1f}x"
    )
    print(
        "\nDone. Next: notebooks/ (how backward works, per-sample gradients, higher-order derivatives,\n"
        "jit and XLA, training a real model)."
    )


if __name__ == "__main__":
    main()
