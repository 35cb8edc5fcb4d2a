"""Timing helpers for the benchmarks: medians over repeats after warm-up, and a plain table."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def median_time(fn, *, warmup: int = 3, repeats: int = 30, inner: int = 1) -> float:
    """Median seconds per call of ``fn`` (``inner`` calls per timed sample)."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return statistics.median(samples)


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


def run_worker(
    script: str, lib: str, case: str, repeats: int, env: dict | None = None
) -> tuple[float, float]:
    """Run ``script --worker LIB CASE REPEATS`` in a fresh process (one library per process; no
    persistent compilation cache; ``env`` adds variables) and return the seconds it printed as
    JSON (``{"seconds": ...}``) and the wall time of the process."""
    full = {k: v for k, v in os.environ.items() if k != "FUNCGRAD_COMPILATION_CACHE_DIR"}
    full["PYTHONPATH"] = ROOT + os.pathsep + full.get("PYTHONPATH", "")
    full.update(env or {})
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, script, "--worker", lib, case, str(repeats)],
        capture_output=True,
        text=True,
        env=full,
        cwd=ROOT,
        timeout=600,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{lib}/{case} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["seconds"], wall
