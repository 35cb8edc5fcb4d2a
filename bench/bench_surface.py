"""Issue 15's names against JAX, round-robin in one process: ``image.resize`` (jit),
``scipy.signal.welch``/``stft`` (jit), ``lax.reduce`` with a non-monoid computation (eager and jit)
and ``lax.rng_bit_generator`` (jit).

Run: python bench/bench_surface.py [--quick]

Each case alternates funcgrad and jax samples (round-robin), so a loaded machine slows both alike;
the table reports medians and funcgrad's time over jax's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import ROOT, block, fmt  # noqa: E402

sys.path.insert(0, ROOT)  # this checkout's funcgrad, not another editable install


def _round_robin(fns, repeats):
    for fn in fns:
        for _ in range(2):
            block(fn())
    samples = [[] for _ in fns]
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            t0 = time.perf_counter()
            block(fn())
            samples[k].append(time.perf_counter() - t0)
    return [statistics.median(s) for s in samples]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats = 5 if args.quick else 30

    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    import funcgrad
    from funcgrad import image, lax
    from funcgrad.scipy import signal

    rng = np.random.default_rng(0)
    img = rng.normal(size=(4, 128, 128, 3)).astype(np.float32)
    sig = rng.normal(size=(8, 1 << 14))
    red = rng.uniform(0.1, 0.2, (256, 1024))
    key = np.array([0, 0, 0, 42], np.uint32)

    def soft(a, b):
        return a + b + a * b

    cases = [
        (
            "resize 4x128x128x3 -> 256 (linear)",
            funcgrad.jit(lambda x: image.resize(x, (4, 256, 256, 3), "linear")),
            jax.jit(lambda x: jax.image.resize(x, (4, 256, 256, 3), "linear")),
            (img,),
        ),
        (
            "resize 4x128x128x3 -> 48 (lanczos3)",
            funcgrad.jit(lambda x: image.resize(x, (4, 48, 48, 3), "lanczos3")),
            jax.jit(lambda x: jax.image.resize(x, (4, 48, 48, 3), "lanczos3")),
            (img,),
        ),
        (
            "welch 8x16384 (nperseg 256)",
            funcgrad.jit(lambda x: signal.welch(x, nperseg=256)[1]),
            jax.jit(lambda x: jax.scipy.signal.welch(x, nperseg=256)[1]),
            (sig,),
        ),
        (
            "stft 8x16384 (nperseg 256)",
            funcgrad.jit(lambda x: signal.stft(x, nperseg=256)[2]),
            jax.jit(lambda x: jax.scipy.signal.stft(x, nperseg=256)[2]),
            (sig,),
        ),
        (
            "reduce 256x1024 generic, eager",
            lambda x: lax.reduce(x, 0.0, soft, (1,)),
            lambda x: jax.lax.reduce(jnp.asarray(x), 0.0, soft, (1,)),
            (red,),
        ),
        (
            "reduce 256x1024 generic, jit",
            funcgrad.jit(lambda x: lax.reduce(x, 0.0, soft, (1,))),
            jax.jit(lambda x: jax.lax.reduce(x, 0.0, soft, (1,))),
            (red,),
        ),
        (
            "grad of reduce 256x1024, jit",
            funcgrad.jit(funcgrad.grad(lambda x: lax.reduce(x, 0.0, soft, (1,)).sum())),
            jax.jit(jax.grad(lambda x: jax.lax.reduce(x, 0.0, soft, (1,)).sum())),
            (red,),
        ),
        (
            "rng_bit_generator 1M u32, jit",
            funcgrad.jit(lambda k: lax.rng_bit_generator(k, (1 << 20,))[1]),
            jax.jit(lambda k: jax.lax.rng_bit_generator(k, (1 << 20,))[1]),
            (key,),
        ),
    ]
    print(f"\n{'case':<40} {'funcgrad':>12} {'jax':>12} {'funcgrad/jax':>14}")
    print("-" * 82)
    for name, ours, theirs, a in cases:
        t_ours, t_jax = _round_robin([lambda f=ours, a=a: f(*a), lambda f=theirs, a=a: f(*a)], repeats)
        print(f"{name:<40} {fmt(t_ours):>12} {fmt(t_jax):>12} {t_ours / t_jax:>13.2f}x")


if __name__ == "__main__":
    main()
