"""Checkpointing trade-off: memory and time of the gradient of a deep tanh MLP, with and without
``funcgrad.checkpoint`` on every layer, eager and under ``funcgrad.jit``.

Run: python bench/bench_checkpoint.py [--layers 32] [--width 1024] [--batch 64] [--repeats 3] [--block 4]

Rows: no checkpoint, ``checkpoint`` on every layer, and ``checkpoint`` on blocks of ``--block``
consecutive layers (each block keeps only its input; its layers are recomputed one block at a
time during the backward pass -- the usual sqrt(layers) trade).

Each configuration runs in a fresh process. "peak RSS" is the peak resident memory of the timed
gradient calls above the memory held between calls (parameters, inputs, the compiled program): the
first call (tracing, compiling) runs before the peak mark is reset (Linux ``clear_refs``).
"residual bytes" is ``funcgrad.memory_report``'s total for ``vjp(loss)`` (what eager reverse mode
keeps), "activations" the part of it that is computed (not the arguments: weights, inputs). Under
jit, XLA plans the memory of the whole compiled gradient itself: "XLA temp" is its planned scratch
memory (``memory_analysis()``), "XLA peak" that plus the arguments and outputs (what the compiled
gradient needs in all); XLA's runtime keeps its buffers pooled between calls, so the steady-state
RSS of jit rows says little. XLA's buffer assignment places activations in the gradient's output
buffers while those are not yet written, so checkpointing lowers the XLA numbers only where the
activations outweigh the weights (e.g. ``--layers 8 --width 512 --batch 4096``).
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
from _timing import ROOT, fmt  # noqa: E402

MODES = ("eager", "jit")


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


def child(mode: str, block: int, layers: int, width: int, batch: int, repeats: int) -> dict:
    """One configuration; ``block`` layers per checkpoint (0: no checkpoint)."""
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

    def layers_fn(ps, h):
        for w, b in ps:
            h = fnp.tanh(h @ w + b)
        return h

    step = max(block, 1)
    blk = checkpoint(layers_fn) if block else layers_fn

    def loss(params, x):
        h = x
        for i in range(0, len(params), step):
            h = blk(params[i : i + step], h)
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
        **(_xla_bytes(g, params, x) if mode == "jit" else {"xla_temp": None, "xla_peak": None}),
        "time": float(np.median(times)),
        "best": float(np.min(times)),
        "first": first,
        "peak": peak,
        "residual": report.total_bytes,
        "computed": computed,
    }


def _xla_bytes(jitted, *args) -> dict:
    """XLA's planned scratch memory (activations, residuals, temporaries) of the compiled gradient,
    and its total with the arguments and outputs."""
    m = jitted.lower(*args).compile().memory_analysis()
    temp = int(m.temp_size_in_bytes)
    peak = temp + m.argument_size_in_bytes + m.output_size_in_bytes - m.alias_size_in_bytes
    return {"xla_temp": temp, "xla_peak": int(peak)}


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--block", type=int, default=4, help="layers per checkpoint in the block rows")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    shape = (args.layers, args.width, args.batch, args.repeats)
    if args.child:
        mode, block = args.child.split(":")
        print(json.dumps(child(mode, int(block), *shape)))
        return
    print(
        f"\n## grad of a {args.layers}-layer tanh MLP, width {args.width}, batch {args.batch}, float32 "
        f"({args.repeats} timed calls; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)\n"
    )
    head = f"{'mode':<6} {'checkpoint':<11} {'median':>10} {'best':>10} {'1st call':>10} {'peak RSS':>12}"
    head += f" {'residual bytes':>15} {'activations':>12} {'XLA temp':>10} {'XLA peak':>11}"
    print(head)
    print("-" * len(head))
    blocks = [0, 1] + ([args.block] if args.block > 1 else [])
    for mode, block in [(m, b) for m in MODES for b in blocks]:
        label = {0: "none", 1: "every layer"}.get(block, f"{block} layers")
        cmd = [sys.executable, __file__, "--child", f"{mode}:{block}"]
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
        # The child imports this checkout's funcgrad (not whichever one is installed).
        env["PYTHONPATH"] = os.pathsep.join([ROOT, *filter(None, [env.get("PYTHONPATH")])])
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            print(f"{mode:<6} {label:<11} failed: {proc.stderr.strip().splitlines()[-1]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        residual = _mib(r["residual"]) if mode == "eager" else "(XLA)"
        computed = _mib(r["computed"]) if mode == "eager" else "(XLA)"
        xla_temp = _mib(r["xla_temp"]) if r["xla_temp"] is not None else "-"
        xla_peak = _mib(r["xla_peak"]) if r["xla_peak"] is not None else "-"
        print(
            f"{mode:<6} {label:<11} {fmt(r['time']):>10} {fmt(r['best']):>10} "
            f"{fmt(r['first']):>10} "
            f"{_mib(r['peak']):>12} {residual:>15} {computed:>12} {xla_temp:>10} {xla_peak:>11}"
        )


if __name__ == "__main__":
    main()
