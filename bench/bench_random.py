"""Eager random numbers against JAX (eager) and NumPy's ``Generator``, in CPU time.

Run: python bench/bench_random.py [--sizes 10 1000 100000 1000000 4000000 25000000]
[--dtypes float32 float64] [--rounds N] (jax comes from the `bench` extra: pip install -e
".[bench]"). Each round runs every library in a fresh process; the best median over rounds is
kept, and ``uptime`` is printed before each round (a shared machine's load disturbs CPU time less
than wall time, but not nothing).

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

Which calls may draw other bits than JAX's (issue 30: "within 1.2x of jax's eager time, and of
NumPy's ``Generator`` where the bits need not match JAX's"), decided from JAX's API: none, so
every row is judged against jax, and NumPy's ``Generator`` stays in the table as the floor for code
that needs random numbers but not JAX's.

- Keys of ``random.key``/``PRNGKey`` (``threefry2x32``, the default ``jax_default_prng_impl``),
  ``threefry4x32``, ``philox2x32``/``philox4x32``: the bits are the algorithm's, "identical across
  CPU/GPU/TPU" in ``jax.random``'s table of implementations, and pinned by JAX's known-answer tests.
- ``jax.experimental.random.stateful_rng``/``StatefulPRNG``: its keys are ``fold_in(key(seed),
  counter)`` of a threefry key; its docstring prints their words.
- ``rbg``/``unsafe_rbg`` (``impl=`` or ``jax_default_prng_impl``): the only ones whose bits JAX
  leaves to the backend (not "identical across CPU/GPU/TPU"), but JAX still promises them
  identical across shardings and, as for every function, ``jit(f)(key) == f(key)``. NumPy-drawn
  eager bits would break that unless jitted draws called back to the host too (a host round trip
  inside every compiled program, and XLA's ``RngBitGenerator`` -- Philox4x32 in XLA's layout --
  has no NumPy twin: NumPy's ``Philox`` is Philox4x64). funcgrad gives jax's own CPU bits for
  them, at jax's cost (1e3-4e6 draws: 0.3-1.0x jax's CPU time, load 17).

What the threefry rows cost against NumPy's ``Generator`` is the hash, not the dispatch, from 1e4
draws up: threefry2x32 is 20 rounds of add/rotate/xor per 64 bits where PCG64 is one 128-bit
multiply, and NumPy's ``standard_normal`` is a ziggurat where JAX's normal (and so funcgrad's, for
jax's bits) is ``erf_inv`` of a uniform. Below 1e4 draws it is the compiled program's call (about
6-8 us; NumPy's ``random(10)`` is 1 us); jax's own eager path costs 2-30x that.

Where the programs differ from jax's (NOTE: [rolled threefry rounds] in
funcgrad/random/_cipher.py): funcgrad writes the 20 rounds out, so XLA fuses the hash into the
conversion -- up to 12x less CPU time than jax's loop of 5 steps for bits, uniforms and float32
normals (level with it for float64 uniforms near 1e5 draws) -- except for float64 normals, whose
float64 ``erf_inv`` made that fused loop 1.3x jax's: they hash in JAX's loop (0.68-0.98x jax from
1e4 to 4e6 draws, load 18).

Measured (``python bench/bench_random.py --sizes 10 1000 100000 1000000 4000000 25000000
--rounds 2``, 21:36-21:56 UTC, load 16-18; funcgrad's median CPU time per call, then funcgrad / jax
and funcgrad / NumPy; ``bits`` of the dtype's width). Every row is within 1.2x of jax (the
highest, uniform float64 at 1e5: 1.11x, where jax measured 0.30-0.63 ms in three runs):

    draws       dtype     normal: ms /jax /NumPy   uniform ms /jax /NumPy   bits ms /jax /NumPy
    10          float32     0.0057 0.56 4.75     0.0058 0.44 5.27     0.0053 0.06 1.43
    10          float64     0.0068 0.19 5.67     0.0058 0.45 5.27     0.0056 0.03 1.51
    1,000       float32     0.0113 0.27 1.28     0.0067 0.14 2.79     0.0063 0.04 1.26
    1,000       float64     0.0291 0.39 3.10     0.0094 0.20 3.48     0.0091 0.04 1.65
    100,000     float32     0.4469 0.45 0.57     0.1708 0.31 1.32     0.1581 0.23 1.14
    100,000     float64       1.33 0.96 1.53     0.3337 1.11 2.11     0.2753 0.26 1.55
    1,000,000   float32       4.53 0.84 0.58       1.63 0.41 1.25       1.43 0.33 0.96
    1,000,000   float64      12.39 0.95 1.45       3.15 0.89 1.86       2.79 0.42 1.50
    4,000,000   float32      17.64 0.35 0.57       6.08 0.13 1.22       5.41 0.11 0.97
    4,000,000   float64       58.5 0.68 1.72      11.88 0.23 1.84      10.51 0.24 1.49
    25,000,000  float32        106 0.27 0.53      35.88 0.10 0.90      31.58 0.08 0.79
    25,000,000  float64      374.7 0.61 1.55      73.14 0.19 1.37      63.71 0.08 1.19
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
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10, 1000, 100_000, 1_000_000, 4_000_000, 25_000_000]
    )
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
