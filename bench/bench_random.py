"""Eager random numbers against JAX (eager) and NumPy's ``Generator``, in CPU time.

Run: python bench/bench_random.py [--sizes 1000 100000 4000000] [--dtypes float32 float64]
[--rounds N] (jax comes from the `bench` extra: pip install -e ".[bench]"). Each round runs every
library in a fresh process; the best median over rounds is kept, and ``uptime`` is printed before
each round (a shared machine's load disturbs CPU time less than wall time, but not nothing).

Cases: ``normal``, ``uniform`` (of the row's float dtype) and ``bits`` (the unsigned integer of the
same width) of one key, without jit, each call waiting for its result. The time is CPU time
(``time.process_time``: every thread of the process, so XLA's intra-op worker threads count).
JAX runs with ``jax_enable_x64`` so both draw the same values from the same threefry bits
(funcgrad's draws equal jax's bit for bit); NumPy's ``Generator`` (PCG64; ``standard_normal`` is
a ziggurat) draws other numbers and is the floor for code that needs random numbers, not JAX's.
The last column is funcgrad's time divided by the peer's (below 1: funcgrad is faster).

Where an eager draw's time goes (1000 float32 draws, ``bits``, on an idle core, in-process
``timeit``): funcgrad's Python around the call (``takes_out_sharding``, the sampler, the program
lookup of NOTE: [eager sampler programs]) about 1 us; the compiled program's call (jaxlib's C++
dispatcher, PJRT's execute, the result Array, NOTE: [array in C]) about 6 us, the same as a jitted
``lambda d: d + 1`` on the key data: the draw itself is well under 1 us. At 1e5 and more draws the
time is XLA's loop over the threefry rounds (and, for ``normal``, its ``erf_inv``), which XLA:CPU
splits over its intra-op threads (``outer_dimension_partitions`` in the compiled HLO) -- also for
a few thousand draws, where waking the second thread costs more CPU time than it saves.
The key implementations whose bits JAX leaves to the backend (``rbg``, ``unsafe_rbg``) are no
faster route: they draw with XLA's ``RngBitGenerator`` (Philox with 64-bit multiplies, which
XLA:CPU does not vectorise), about 5x threefry's CPU time on XLA:CPU (4e6 uint32 bits: ~45 ms,
the same in jax) -- and funcgrad gives jax's bits for them too.

Why no host generator for small draws (issue 30 asked whether one would be honest): an eager draw
is one compiled program call (NOTE: [eager sampler programs] in funcgrad/random/_eager.py), and
at 1000 draws that call's fixed cost -- jaxlib's dispatch and XLA:CPU's executable launch, about
8 us on an idle core, against 3-4 us for all of NumPy's ``Generator.random`` -- is the whole gap.
NumPy's bit generators could close it only for key implementations whose bits need not match
JAX's (``rbg``, ``unsafe_rbg``: JAX documents their streams as backend-dependent), and only if
``jit(f)(key) == f(key)`` still held: the compiled path would then have to produce NumPy's bits
too. XLA's ``RngBitGenerator`` (what ``rbg`` draws with, JAX's bits on CPU) is Philox4x32 in
XLA's own layout and NumPy's ``Philox`` is Philox4x64, so the two paths would differ; making the
compiled path call back into NumPy instead would turn ``rbg`` -- the fast device generator --
into a host round trip under ``jit`` and give up JAX's ``rbg`` bits. So eager draws stay
threefry's (or the key implementation's) bits on XLA, as JAX's do, and the small-size floor is
the dispatch cost, not the generator.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout
from _timing import block, median_time, print_table  # noqa: E402

_BITS = {"float32": "uint32", "float64": "uint64"}


def _funcgrad_cases(n, dt):
    from funcgrad import random

    key = random.key(0)
    return {
        "normal": lambda: random.normal(key, (n,), dt),
        "uniform": lambda: random.uniform(key, (n,), dt),
        "bits": lambda: random.bits(key, (n,), _BITS[dt]),
    }


def _jax_cases(n, dt):
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    key = jax.random.key(0)
    return {
        "normal": lambda: jax.random.normal(key, (n,), dt),
        "uniform": lambda: jax.random.uniform(key, (n,), dt),
        "bits": lambda: jax.random.bits(key, (n,), _BITS[dt]),
    }


def _numpy_cases(n, dt):
    rng = np.random.default_rng(0)
    bits = np.dtype(_BITS[dt])
    return {
        "normal": lambda: rng.standard_normal(n, dt),
        "uniform": lambda: rng.random(n, dt),
        "bits": lambda: rng.integers(0, 2 ** (8 * bits.itemsize), n, dtype=bits),
    }


_CASES = {"funcgrad": _funcgrad_cases, "jax (eager, x64)": _jax_cases, "numpy Generator": _numpy_cases}


def _label(case, n, dt):
    return f"{case} {_BITS[dt] if case == 'bits' else dt} ({n:,})"


def _worker(lib: str, sizes, dtypes) -> None:
    """One library's CPU-time medians (seconds) per case, as JSON on stdout. Each library runs in
    its own process: importing jax in funcgrad's process switches funcgrad's native dispatch route
    off (NOTE: [native dispatch]), which would time funcgrad's slower fallback route."""
    out = {}
    for n in sizes:
        for dt in dtypes:
            cases = _CASES[lib](n, dt)
            if cases is None:
                continue
            repeats = 200 if n <= 10_000 else (30 if n <= 1_000_000 else 7)
            for case in ("normal", "uniform", "bits"):
                fn = cases[case]
                out[_label(case, n, dt)] = median_time(
                    lambda fn=fn: block(fn()),
                    warmup=5,
                    repeats=repeats,
                    clock=time.process_time,
                    inner=20 if n <= 10_000 else 1,
                )
    print(json.dumps(out))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000, 4_000_000])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=sorted(_BITS))
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="round-robin rounds (a process per library each); the best median is kept",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args.worker, args.sizes, args.dtypes)
    best: dict = {}
    for r in range(args.rounds):
        load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        print(f"round {r + 1}: {load}", flush=True)
        for lib in _CASES:
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib]
            cmd += ["--sizes", *map(str, args.sizes), "--dtypes", *args.dtypes]
            res = subprocess.run(cmd, capture_output=True, text=True, check=True)
            for case, t in json.loads(res.stdout.strip().splitlines()[-1]).items():
                best[(case, lib)] = min(best.get((case, lib), t), t)
    rows = []
    for n in args.sizes:
        for dt in args.dtypes:
            for case in ("normal", "uniform", "bits"):
                label = _label(case, n, dt)
                rows.extend((label, lib, best.get((label, lib))) for lib in _CASES)
    title = f"Eager random numbers, CPU time (best of {args.rounds} medians per call, a process per library)"
    print_table(title, rows)


if __name__ == "__main__":
    main()
