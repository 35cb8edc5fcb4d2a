"""The GradBench ode gradient (RK4 as a ``lax.scan``, ``grad`` of the last component) in funcgrad
and jax, both in float64, in one process: alternating calls, wall time, the paired ratio.

Run: ``python bench/gradbench/ode_vs_jax.py N S [float32|float64]`` (e.g. ``100000 10``,
``1000 1000``; float64 by default). GradBench's jax tool runs this eval in float32 (its ode.py does
not enable x64), and so does funcgrad's tool (``funcgrad_tool/ode.py``); either precision compares
like for like here.
"""

import statistics
import sys
import time

import numpy as np


def build(J, jnp, lax):
    """The jitted gradient, written once for either library (J: jax or funcgrad)."""

    def rhs(x, y):
        return x * jnp.concatenate([jnp.ones((1,), y.dtype), y[:-1]])

    def ode(x, s):
        h = 2.0 / s

        def step(y, _):
            k1 = rhs(x, y)
            k2 = rhs(x, y + (h / 2) * k1)
            k3 = rhs(x, y + (h / 2) * k2)
            k4 = rhs(x, y + h * k3)
            return y + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4), None

        y, _ = lax.scan(step, jnp.zeros_like(x), None, length=s)
        return y

    return J.jit(J.grad(lambda x, s: ode(x, s)[-1]), static_argnums=1)


def main(n, s, dtype="float64", rounds=30):
    import jax
    import jax.numpy as jjnp
    from jax import lax as jlax

    import funcgrad
    import funcgrad.numpy as fnp
    from funcgrad import lax as flax

    jax.config.update("jax_enable_x64", True)
    x = np.random.default_rng(0).uniform(size=n).astype(dtype)
    gj, gf = build(jax, jjnp, jlax), build(funcgrad, fnp, flax)
    xj, xf = jax.device_put(x), funcgrad.device_put(x)
    np.testing.assert_allclose(
        np.asarray(gj(xj, s)), np.asarray(gf(xf, s)), rtol=1e-10 if dtype == "float64" else 1e-4
    )

    def timed(g, xa):
        t0 = time.perf_counter()
        g(xa, s).block_until_ready()
        return time.perf_counter() - t0

    for _ in range(3):
        timed(gj, xj), timed(gf, xf)
    a, b = [], []
    for _ in range(rounds):
        a.append(timed(gf, xf))
        b.append(timed(gj, xj))
    ratio = statistics.median(p / q for p, q in zip(a, b))
    ta, tb = statistics.median(a) * 1e3, statistics.median(b) * 1e3
    print(f"n={n} s={s} {dtype}: funcgrad {ta:.2f} ms, jax {tb:.2f} ms, paired funcgrad/jax {ratio:.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:4])
