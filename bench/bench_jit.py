"""jit benchmarks: funcgrad vs jax (when installed), medians of repeats after warm-up.

Run: ``python bench/bench_jit.py`` (``--quick`` for fewer repeats). Cases:

- dispatch: ``jit(lambda a, b: a * b + 1)`` on 3-element float32 NumPy arrays, including
  ``np.asarray`` of the result (goal: <= 1.0x jax; ``bench/dispatch_breakdown.py`` splits it);
- mlp grad: steady-state ``jit(grad(loss))`` of a tanh MLP 64-256-256-10, batch 128, float32,
  softmax cross-entropy (goal: <= 1.1x jax);
- first gradient: a fresh process imports the library, traces, compiles and runs that gradient
  once (in-process time from the first line; goal: <= jax);
- per-sample grads: ``jit(vmap(grad(loss_single), in_axes=(None, 0, 0)))`` at batch 128;
- matmul chain: ``jit(value_and_grad(lambda A, B, C: sum((A @ B) @ C)))`` with 1024x1024 float32
  in GFLOP/s (6 matmuls = 12 n^3 flops), vs jax and vs NumPy doing the six matmuls by hand;
- placed call: ``jit(lambda a: a * 2, out_shardings=SingleDeviceSharding(cpu:0),
  donate_argnums=0)`` of a 2048x2048 float32 array just put on the device (timed with the put; a
  donating call takes the staged route, as the optax steps of JAX's host-offloading guide do):
  the SPMD call route passes the argument's buffer, where it read it back and put it again;
- host-arg call: the same with the argument put in "pinned_host" memory and the program moving it
  (``device_put(a, s_dev) * 2``): one copy made on the device.

``--x32``: both libraries in JAX's default 32-bit mode (funcgrad's ``jax_enable_x64=False``, the
``funcgrad.as_jax`` alias's mode), where jitted calls take the same native route since ab231afd.

Every measurement runs in its own subprocess (one library per process), and the libraries take
turns (round-robin) so that load on the shared machine hits both alike. Importing jax takes over
jaxlib's process-wide dispatch state (NOTE: [native dispatch] in xla_bridge/dispatch.py), another
reason to keep them apart. The reported number is the median over rounds of each round's median.
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()  # first line: "time to first gradient" counts the imports

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from _timing import block, fmt, median_time, run_script  # noqa: E402

# ----------------------------------------------------------------------------------------------
# Workers (one library per process)


def _lib(name):
    import numpy as np

    if name == "jax":
        import jax
        import jax.numpy as jnp

        if not os.environ.get("BENCH_X32"):
            jax.config.update("jax_enable_x64", True)  # funcgrad runs XLA with 64-bit types too
        return dict(
            np=jnp,
            jit=jax.jit,
            grad=jax.grad,
            vmap=jax.vmap,
            vg=jax.value_and_grad,
            host=np,
            put=jax.device_put,
            sds=jax.sharding.SingleDeviceSharding,
            devices=jax.devices,
        )
    import funcgrad
    import funcgrad.numpy as fnp
    from funcgrad.sharding import SingleDeviceSharding

    if os.environ.get("BENCH_X32"):  # --x32: JAX's default mode on both sides (the alias's)
        funcgrad.config.update("jax_enable_x64", False)

    return dict(
        np=fnp,
        jit=funcgrad.jit,
        grad=funcgrad.grad,
        vmap=funcgrad.vmap,
        vg=funcgrad.value_and_grad,
        host=np,
        put=funcgrad.device_put,
        sds=SingleDeviceSharding,
        devices=funcgrad.devices,
    )


_block = block


def _mlp_problem(L, batch=128, sizes=(64, 256, 256, 10)):
    import numpy as np

    jnp = L["np"]
    rng = np.random.default_rng(0)
    params = [
        (
            (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
            np.zeros(n, np.float32),
        )
        for m, n in zip(sizes[:-1], sizes[1:])
    ]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], batch)
    y = np.eye(sizes[-1], dtype=np.float32)[labels]

    def predict(params, x):
        h = x
        for w, b in params[:-1]:
            h = jnp.tanh(h @ w + b)
        w, b = params[-1]
        return h @ w + b

    def loss(params, x, y):
        logits = predict(params, x)
        m = jnp.max(logits, axis=-1, keepdims=True)
        logz = jnp.log(jnp.sum(jnp.exp(logits - m), axis=-1, keepdims=True)) + m
        return -jnp.mean(jnp.sum(y * (logits - logz), axis=-1))

    return params, x, y, loss


def work_dispatch(L, repeats):
    import numpy as np

    f = L["jit"](lambda a, b: a * b + 1)
    a, b = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
    clock = time.process_time if os.environ.get("BENCH_CPU_CLOCK") else None
    return median_time(lambda: np.asarray(f(a, b)), warmup=200, repeats=repeats, inner=2000, clock=clock)


def work_mlp_grad(L, repeats):
    params, x, y, loss = _mlp_problem(L)
    g = L["jit"](L["grad"](loss))
    return median_time(lambda: _block(g(params, x, y)), warmup=20, repeats=repeats, inner=20)


def work_per_sample(L, repeats):
    params, x, y, loss = _mlp_problem(L)

    def loss_single(p, xi, yi):
        return loss(p, xi[None], yi[None])

    g = L["jit"](L["vmap"](L["grad"](loss_single), in_axes=(None, 0, 0)))
    return median_time(lambda: _block(g(params, x, y)), warmup=5, repeats=repeats, inner=5)


def work_matmul(L, repeats, n=1024):
    import numpy as np

    rng = np.random.default_rng(0)
    A, B, C = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(3))
    if L is None:  # NumPy by hand: forward and the three gradients, six matmuls

        def step():
            ab = A @ B
            out = (ab @ C).sum()
            g = np.ones((n, n), np.float32)
            dab = g @ C.T
            return out, dab @ B.T, A.T @ dab, ab.T @ g

        return median_time(step, warmup=2, repeats=repeats)
    jnp = L["np"]
    f = L["jit"](L["vg"](lambda A, B, C: jnp.sum((A @ B) @ C), argnums=(0, 1, 2)))
    if hasattr(L["np"], "asarray") and L["host"] is not None:
        A, B, C = (L["np"].asarray(v) for v in (A, B, C))  # device-resident inputs for both
    return median_time(lambda: _block(f(A, B, C)), warmup=2, repeats=repeats)


def _placed(L, kind, repeats, n=2048):
    import numpy as np

    d = L["devices"]()[0]
    s_dev, s_arg = L["sds"](d, memory_kind="device"), L["sds"](d, memory_kind=kind)
    value = np.arange(n * n, dtype=np.float32).reshape(n, n)
    body = (lambda v: v * 2) if kind == "device" else (lambda v: L["put"](v, s_dev) * 2)
    f = L["jit"](body, out_shardings=s_dev, donate_argnums=0)
    return median_time(lambda: _block(f(L["put"](value, s_arg))), warmup=3, repeats=repeats, inner=5)


def work_placed_call(L, repeats):
    return _placed(L, "device", repeats)


def work_host_arg_call(L, repeats):
    return _placed(L, "pinned_host", repeats)


def work_first_grad(lib, t_start):
    L = _lib(lib)
    params, x, y, loss = _mlp_problem(L)
    _block(L["jit"](L["grad"](loss))(params, x, y))
    return time.perf_counter() - t_start


WORKERS = {
    "dispatch": work_dispatch,
    "mlp_grad": work_mlp_grad,
    "per_sample": work_per_sample,
    "matmul": work_matmul,
    "placed_call": work_placed_call,
    "host_arg_call": work_host_arg_call,
}


def worker_main(lib, case, repeats):
    if case == "first_grad":
        return work_first_grad(lib, _T0)
    if lib == "numpy":
        return WORKERS[case](None, repeats)
    return WORKERS[case](_lib(lib), repeats)


# ----------------------------------------------------------------------------------------------
# Driver


def run_worker(lib, case, repeats):
    # A fresh process without the persistent compilation cache: "first gradient" measures compiling.
    result, wall = run_script(__file__, ["--worker", lib, case, repeats], ROOT)
    return result["seconds"], wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--cases", default="dispatch,mlp_grad,first_grad,per_sample,matmul")
    ap.add_argument(
        "--cpu-clock",
        action="store_true",
        help="time dispatch by process CPU time (less disturbed by other jobs on a shared machine)",
    )
    ap.add_argument("--x32", action="store_true", help="both libraries in 32-bit mode (JAX's default)")
    args = ap.parse_args()
    if args.x32:
        os.environ["BENCH_X32"] = "1"  # read by the workers
    if args.cpu_clock:
        os.environ["BENCH_CPU_CLOCK"] = "1"  # read by the workers
    rounds = args.rounds or (2 if args.quick else 3)
    repeats = 7 if args.quick else 15
    have_jax = importlib.util.find_spec("jax") is not None
    libs = ["funcgrad", "jax"] if have_jax else ["funcgrad"]
    results: dict = {}
    for case in args.cases.split(","):
        case_libs = libs + (["numpy"] if case == "matmul" else [])
        samples: dict = {lib: [] for lib in case_libs}
        # Dispatch is cheap to measure and the noisiest: give it more rounds.
        for _ in range(rounds + 2 if case == "dispatch" else rounds):
            for lib in case_libs:
                seconds, wall = run_worker(lib, case, repeats)
                samples[lib].append(seconds)
        results[case] = {lib: statistics.median(v) for lib, v in samples.items()}
        print(f"  {case}: " + ", ".join(f"{k}={fmt(v)}" for k, v in results[case].items()), file=sys.stderr)
    report(results, have_jax)


GOALS = {
    "dispatch": "<= 1.0x jax",
    "mlp_grad": "<= 1.1x jax",
    "first_grad": "<= 1.0x jax",
    "per_sample": "< 1.0x jax",
    "matmul": "GFLOP/s",
    "placed_call": "<= 1.0x jax",
    "host_arg_call": "<= 1.0x jax",
}
TITLES = {
    "dispatch": "dispatch a*b+1 (3xf32) + asarray",
    "mlp_grad": "jit(grad) MLP 64-256-256-10 b128",
    "first_grad": "first gradient, fresh process",
    "per_sample": "per-sample grads vmap b128",
    "matmul": "value_and_grad (A@B)@C 1024^2",
    "placed_call": "put+jit(out_shardings,donate) 2048^2",
    "host_arg_call": "same, argument in pinned_host",
}


def report(results, have_jax):
    print(f"\n{'case':<36} {'funcgrad':>11} {'jax':>11} {'fg/jax':>8}  {'goal':<12} extra")
    print("-" * 100)
    for case, r in results.items():
        fg, jx = r["funcgrad"], r.get("jax")
        extra = ""
        if case == "matmul":
            flops = 12 * 1024**3
            extra = "GFLOP/s: " + ", ".join(f"{lib} {flops / t / 1e9:.1f}" for lib, t in r.items())
        ratio = f"{fg / jx:.2f}x" if jx else "-"
        jx_s = fmt(jx) if jx else "n/a"
        print(f"{TITLES[case]:<36} {fmt(fg):>11} {jx_s:>11} {ratio:>8}  {GOALS[case]:<12} {extra}")
    if not have_jax:
        print("(jax is not installed: no comparison)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        lib, case, repeats = sys.argv[2], sys.argv[3], int(sys.argv[4])
        print(json.dumps({"seconds": worker_main(lib, case, repeats)}))
    else:
        main()
