"""Cumulative reductions under ``jit``: funcgrad's two lowerings side by side (and jax's).

Run: ``python bench/bench_cumulative.py [--ops cumsum cumprod] [--dtypes float32 float64]
[--jax]``. For each (dtype, shape, axis) it times ``jit(cumsum)``/``jit(cumprod)`` lowered as
the parallel prefix scan and as JAX's n-wide ``reduce_window`` (NOTE: [two lowerings of
cumulative reductions] in ``xla_bridge/rules/sorting.py``), and marks the one the cost rule
picks. CPU time per call (``time.process_time``), the second best of 5 batches, one XLA thread;
``--jax`` adds jax's own time in the same process.

Measured (load 19-21, 2 cores shared; scan / window, ms): float64 (16392, 128) axis 1
6.5-8.0 / 4.8-5.2; (16392, 256) axis 1 22-24 / 10; (4096, 128) axis 1 1.0-1.2 / 1.0-1.2;
(128, 16392) axis 1 8.2-8.7 / 9.5-23.6; (16392, 128) axis 0 6.4-6.7 / 26-30; float32
(16392, 128) axis 1 3.5-3.8 / 4.4-5.0; (1000000,) float32 1.8 / 4.2.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import numpy as np  # noqa: E402

SHAPES = [
    ((100000,), 0),
    ((1000000,), 0),
    ((256, 2000), 0),
    ((256, 2000), 1),
    ((16392, 128), 0),
    ((16392, 128), 1),
    ((128, 16392), 1),
    ((4096, 128), 1),
    ((8192, 128), 1),
    ((16392, 256), 1),
    ((65536, 16), 1),
    ((200000, 4), 1),
    ((64, 256, 128), 2),
    ((512, 512), 1),
]


def _time(f, x, reps):
    f(x).block_until_ready()
    f(x).block_until_ready()
    batches = []
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(reps):
            f(x).block_until_ready()
        batches.append((time.process_time() - t0) / reps)
    return sorted(batches)[1] * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", nargs="+", default=["cumsum", "cumprod"])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    ap.add_argument("--jax", action="store_true", help="also time jax in this process")
    args = ap.parse_args()

    from funcgrad.xla_bridge.rules import sorting as rules

    import funcgrad
    import funcgrad.numpy as fnp

    if args.jax:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
    funcgrad.config.update("jax_enable_x64", True)
    print(f"{'dtype':8} {'shape':16} axis {'op':8} {'scan':>8} {'window':>8} {'jax':>8}  chosen")
    for dtype in args.dtypes:
        for shape, axis in SHAPES:
            host = np.random.default_rng(0).uniform(0.9, 1.1, shape).astype(dtype)
            x = funcgrad.device_put(host)
            reps = max(1, int(2e6 / host.size))
            for op in args.ops:
                ms = {}
                for force in ("scan", "window"):
                    rules._FORCE = force
                    ms[force] = _time(
                        funcgrad.jit(lambda a, op=op, axis=axis: getattr(fnp, op)(a, axis=axis)), x, reps
                    )
                rules._FORCE = None
                chosen = (
                    "window" if rules._use_window("stablehlo.add", shape, np.dtype(dtype), axis) else "scan"
                )
                jx = ""
                if args.jax:
                    jf = jax.jit(lambda a, op=op, axis=axis: getattr(jnp, op)(a, axis=axis))
                    jx = f"{_time(jf, jax.device_put(host), reps):8.3f}"
                print(
                    f"{dtype:8} {str(shape):16} {axis:4} {op:8} {ms['scan']:8.3f} {ms['window']:8.3f}"
                    f" {jx:>8}  {chosen}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
