"""Checkpointing trade-off: memory and time of the gradient of a deep tanh MLP, with and without
``funcgrad.checkpoint`` on every layer, eager and under ``funcgrad.jit``.

Run: python bench/bench_checkpoint.py [--layers 32] [--width 1024] [--batch 64] [--repeats 3]

Each configuration runs in a fresh process. "peak RSS" is the peak resident memory of the timed
gradient calls above the memory held between calls (parameters, inputs, the compiled program): the
first call (tracing, compiling) runs before the peak mark is reset (Linux ``clear_refs``).
"residual bytes" is ``funcgrad.memory_report``'s total for ``vjp(loss)`` (what eager reverse mode
keeps), "activations" the part of it that is computed (not the arguments: weights, inputs). Under
jit, XLA plans the memory of the whole compiled gradient itself: "XLA temp" is its planned scratch
memory (``get_compiled_memory_stats``); XLA's runtime keeps its buffers pooled between calls, so the
steady-state RSS of jit rows says little.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import fmt  # noqa: E402

CONFIGS = [("eager", False), ("eager", True), ("jit", False), ("jit", True)]


def _current_rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (Linux: writing 5 to clear_refs resets VmHWM)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def child(mode: str, ckpt: bool, layers: int, width: int, batch: int, repeats: int) -> dict:
    import funcgrad
    import funcgrad.numpy as fnp
    from funcgrad.api import checkpoint, grad, jit

    rng = np.random.default_rng(0)
    params = [
        (
            (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32),
            np.zeros(width, np.float32),
        )
        for _ in range(layers)
    ]
    x = rng.standard_normal((batch, width)).astype(np.float32)
    # funcgrad Arrays (immutable) keep their device buffers across jitted calls; NumPy arrays would
    # be copied to the device on every call.
    params, x = funcgrad.device_put((params, x))

    def layer(p, h):
        w, b = p
        return fnp.tanh(h @ w + b)

    lay = checkpoint(layer) if ckpt else layer

    def loss(params, x):
        h = x
        for p in params:
            h = lay(p, h)
        return (h * h).mean()

    g = jit(grad(loss)) if mode == "jit" else grad(loss)
    t0 = time.perf_counter()
    funcgrad.block_until_ready(g(params, x))  # first call: includes tracing (and compiling)
    first = time.perf_counter() - t0
    # Steady state: the peak of the timed calls above what is held between calls (the parameters,
    # the inputs, the compiled program, the previous gradient).
    _reset_peak()
    baseline = _current_rss()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        funcgrad.block_until_ready(g(params, x))
        times.append(time.perf_counter() - t0)
    peak = _peak_rss() - baseline
    report = funcgrad.memory_report(loss, params, x)
    computed = sum(r.nbytes for r in report.rows if r.kind != "argument")
    return {
        "xla_temp": _xla_temp_bytes(g, params, x) if mode == "jit" else None,
        "time": float(np.median(times)),
        "best": float(np.min(times)),
        "first": first,
        "peak": peak,
        "residual": report.total_bytes,
        "computed": computed,
    }


def _xla_temp_bytes(jitted, *args) -> int | None:
    """XLA's planned scratch memory (activations, residuals, temporaries) of the compiled gradient.

    Reaches through funcgrad's compiled call to jaxlib's executable (a benchmark-only peek)."""
    try:
        loaded = jitted.lower(*args).compile()._compiled.executable._loaded
        return int(loaded.get_compiled_memory_stats().temp_size_in_bytes)
    except Exception:  # noqa: BLE001 - internals moved: the column shows n/a
        return None


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    shape = (args.layers, args.width, args.batch, args.repeats)
    if args.child:
        mode, ckpt = args.child.split(":")
        print(json.dumps(child(mode, ckpt == "1", *shape)))
        return
    print(
        f"\n## grad of a {args.layers}-layer tanh MLP, width {args.width}, batch {args.batch}, float32 "
        f"({args.repeats} timed calls; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)\n"
    )
    head = f"{'mode':<6} {'checkpoint':<11} {'median':>10} {'best':>10} {'1st call':>10} {'peak RSS':>12}"
    head += f" {'residual bytes':>15} {'activations':>12} {'XLA temp':>10}"
    print(head)
    print("-" * len(head))
    for mode, ckpt in CONFIGS:
        cmd = [sys.executable, __file__, "--child", f"{mode}:{int(ckpt)}"]
        cmd += [
            f"--layers={args.layers}",
            f"--width={args.width}",
            f"--batch={args.batch}",
            f"--repeats={args.repeats}",
        ]
        # A fixed mmap threshold makes glibc return every large array to the OS when it is freed
        # (its default threshold grows after frees, and the heap then keeps freed memory resident,
        # which would hide the peak).
        env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            print(f"{mode:<6} {str(ckpt):<11} failed: {proc.stderr.strip().splitlines()[-1]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        residual = _mib(r["residual"]) if mode == "eager" else "(XLA)"
        computed = _mib(r["computed"]) if mode == "eager" else "(XLA)"
        xla_temp = _mib(r["xla_temp"]) if r["xla_temp"] is not None else "-"
        print(
            f"{mode:<6} {'every layer' if ckpt else 'none':<11} {fmt(r['time']):>10} {fmt(r['best']):>10} "
            f"{fmt(r['first']):>10} "
            f"{_mib(r['peak']):>12} {residual:>15} {computed:>12} {xla_temp:>10}"
        )


if __name__ == "__main__":
    main()
