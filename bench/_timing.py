"""Timing helpers for the benchmarks: medians over repeats after warm-up, waiting for results, a
plain table, and one measurement in a fresh process."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def median_time(
    fn, *, warmup: int = 3, repeats: int = 30, inner: int = 1, clock=None, min_seconds: float = 0.0
) -> float:
    """Median seconds per call of ``fn`` (``inner`` calls per timed sample). ``clock``: the timer
    (default ``time.perf_counter``, wall time; ``time.process_time`` counts only this process's
    CPU time, which a machine shared with other jobs disturbs less). ``min_seconds``: keep taking
    samples (and warm up as long) until this much time is spent, for calls of a few microseconds
    whose times are bimodal (a worker thread that is still spinning or has gone to sleep): a few
    dozen samples of those give a median that jumps between the modes from run to run."""
    clock = clock or time.perf_counter
    t_end = time.perf_counter() + min_seconds
    done = 0
    while done < warmup or time.perf_counter() < t_end:
        fn()
        done += 1
    samples = []
    t_end = time.perf_counter() + min_seconds
    while len(samples) < repeats or time.perf_counter() < t_end:
        t0 = clock()
        for _ in range(inner):
            fn()
        samples.append((clock() - t0) / inner)
    return statistics.median(samples)


def block(tree) -> None:
    """Wait for every array of a (nested list/tuple) result: ``block_until_ready`` for device
    arrays, a host read for the rest."""
    import numpy as np

    for leaf in tree if isinstance(tree, list | tuple) else [tree]:
        if isinstance(leaf, list | tuple):
            block(leaf)
        elif hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
        else:
            np.asarray(leaf)


def print_table(title: str, rows: list[tuple[str, str, float | None]], baseline: str = "funcgrad") -> None:
    """rows: (case, library, seconds or None when the library is missing)."""
    print(f"\n## {title}\n")
    print(f"{'case':<34} {'library':<22} {'median':>12} {'funcgrad / this':>16}")
    print("-" * 88)
    base = {case: t for case, lib, t in rows if lib == baseline and t is not None}
    for case, lib, t in rows:
        if t is None:
            print(f"{case:<34} {lib:<22} {'not installed':>12}")
            continue
        ratio = base.get(case)
        ratio_s = f"{ratio / t:>15.2f}x" if ratio is not None and lib != baseline else ""
        print(f"{case:<34} {lib:<22} {fmt(t):>12} {ratio_s:>16}")


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def run_script(script: str, args, root: str, env_updates: dict | None = None, timeout: float = 600):
    """Run ``python script *args`` in a fresh process importing this checkout (``root`` on
    PYTHONPATH, no persistent compilation cache); returns (the JSON object it printed on its last
    line, wall seconds)."""
    env = {k: v for k, v in os.environ.items() if k != "FUNCGRAD_COMPILATION_CACHE_DIR"}
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_updates or {})
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, script, *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=timeout,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(
            f"{os.path.basename(script)} {' '.join(map(str, args))} failed:\n{proc.stderr[-3000:]}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall
