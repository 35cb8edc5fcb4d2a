"""FFT gradient benchmark: funcgrad vs jax (jit and eager), PyTorch (eager) and HIPS autograd.

Run: ``python bench/bench_fft.py`` (``--quick`` for fewer repeats and rounds). The case is the
gradient of a weighted spectral energy,

    loss(x) = sum(|rfft(x)|^2 * w)        x: 2**16 float32, w: 2**15 + 1 float32

whose backward pass is the transpose of ``rfft`` (an ``irfft`` of the weighted spectrum):

- ``jit``: the steady-state call of ``jit(grad(loss))`` (goal: at most 1.0x jax's ``jit``);
- ``eager``: ``grad(loss)`` without ``jit`` (funcgrad runs NumPy's pocketfft; torch and autograd
  are eager libraries; jax's eager mode dispatches one op at a time).

Each measurement runs in its own subprocess (one library per process), the libraries take turns
(round-robin) so that load on the shared machine hits them alike, and the reported number is the
median over rounds of each round's median. A peer that is not installed is reported as such.
The last column is funcgrad's time divided by the peer's (below 1: funcgrad is faster).
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

N = 2**16


def _data():
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype(np.float32)
    w = rng.uniform(0.0, 1.0, N // 2 + 1).astype(np.float32)
    return x, w


def _numpy_like_step(np_mod, grad, jit, x, w):
    def loss(x):
        return np_mod.sum(np_mod.abs(np_mod.fft.rfft(x)) ** 2 * w)

    g = grad(loss)
    return jit(g) if jit is not None else g


def work(lib: str, mode: str, repeats: int) -> float:

    x, w = _data()
    if lib == "funcgrad":
        import funcgrad
        import funcgrad.numpy as fnp

        step = _numpy_like_step(fnp, funcgrad.grad, funcgrad.jit if mode == "jit" else None, x, w)
        if mode == "jit":
            x = fnp.asarray(x)  # device-resident input, as for jax
        run = lambda: step(x).block_until_ready()  # noqa: E731
    elif lib == "jax":
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)  # as funcgrad (the data stay float32)
        step = _numpy_like_step(jnp, jax.grad, jax.jit if mode == "jit" else None, x, w)
        x = jnp.asarray(x)
        run = lambda: step(x).block_until_ready()  # noqa: E731
    elif lib == "torch":
        import torch

        torch.set_num_threads(max(1, os.cpu_count() or 1))
        xt, wt = torch.from_numpy(x), torch.from_numpy(w)

        def run():
            v = xt.detach().requires_grad_(True)
            (torch.fft.rfft(v).abs() ** 2 * wt).sum().backward()
            return v.grad

    elif lib == "autograd":
        import autograd
        import autograd.numpy as anp

        step = _numpy_like_step(anp, autograd.grad, None, x, w)
        run = lambda: step(x)  # noqa: E731
    else:
        raise ValueError(lib)
    return median_time(run, warmup=5, repeats=repeats, inner=5)


PEERS = {"jit": ["funcgrad", "jax"], "eager": ["funcgrad", "jax", "torch", "autograd"]}


def _installed(lib: str) -> bool:
    return lib == "funcgrad" or importlib.util.find_spec(lib) is not None


def run_worker(lib: str, mode: str, repeats: int) -> float:
    return _timing.run_script(__file__, ["--worker", lib, mode, repeats], ROOT)[0]["seconds"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--worker", nargs=3, metavar=("LIB", "MODE", "REPEATS"))
    args = ap.parse_args()
    if args.worker:
        lib, mode, repeats = args.worker
        print(json.dumps({"seconds": work(lib, mode, int(repeats))}))
        return
    rounds = args.rounds or (2 if args.quick else 5)
    repeats = 10 if args.quick else 30
    print(f"## grad of sum(|rfft(x)|^2 * w), x: {N} float32 ({rounds} rounds, medians)\n")
    print(f"{'mode':<8} {'library':<10} {'median':>10} {'funcgrad / this':>16}")
    print("-" * 48)
    for mode, libs in PEERS.items():
        libs = [lib for lib in libs if _installed(lib)]
        times: dict[str, list[float]] = {lib: [] for lib in libs}
        for _ in range(rounds):
            for lib in libs:
                times[lib].append(run_worker(lib, mode, repeats))
        ours = statistics.median(times["funcgrad"])
        for lib in PEERS[mode]:
            if lib not in times:
                print(f"{mode:<8} {lib:<10} {'not installed':>10}")
                continue
            t = statistics.median(times[lib])
            ratio = "" if lib == "funcgrad" else f"{ours / t:>15.2f}x"
            print(f"{mode:<8} {lib:<10} {fmt(t):>10} {ratio:>16}")


if __name__ == "__main__":
    main()
