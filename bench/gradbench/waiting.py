"""Run one of GradBench's Python tools with timings that wait for the result.

GradBench's ``gradbench.wrap`` times ``function(input)`` and converts the result afterwards; for
JAX, whose calls return before the work is done (asynchronous dispatch), that measures the
dispatch. This launcher replaces ``wrap.function`` and ``wrap.multiple_runs`` before the tool's
modules are imported by versions whose timed region ends with ``block_until_ready`` on every leaf
of the result that has it (JAX arrays; PyTorch's eager tensors have nothing to wait for), then runs
the tool's ``run.py`` unchanged as ``__main__``.

Usage: ``python bench/gradbench/waiting.py <checkout>/python/gradbench/gradbench/tools/jax/run.py``
"""

import os
import runpy
import sys
import time

from gradbench import wrap


def _wait(x):
    if hasattr(x, "block_until_ready"):
        x.block_until_ready()
    elif isinstance(x, (tuple, list)):
        for v in x:
            _wait(v)
    elif isinstance(x, dict):
        for v in x.values():
            _wait(v)
    return x


def function(*, pre, post):
    def decorator(fn):
        def wrapped(input_raw):
            input = pre(input_raw)
            start = time.perf_counter_ns()
            output = _wait(fn(input))
            end = time.perf_counter_ns()
            timing = wrap.Timing(name="evaluate", nanoseconds=end - start)
            return wrap.OutputAndTimings(success=True, output=post(output), timings=[timing])

        return wrap.Wrapped(function=fn, wrapped=wrapped)

    return decorator


def multiple_runs(*, min_runs=lambda x: x["min_runs"], min_seconds=lambda x: x["min_seconds"], pre, post):
    def decorator(fn):
        def wrapped(input_raw):
            input = pre(input_raw)
            runs, seconds = min_runs(input_raw), min_seconds(input_raw)
            timings, elapsed, output = [], 0.0, None
            while len(timings) < runs or elapsed < seconds:
                start = time.perf_counter_ns()
                output = _wait(fn(input))
                end = time.perf_counter_ns()
                timings.append(wrap.Timing(name="evaluate", nanoseconds=end - start))
                elapsed += (end - start) / 1e9
            return wrap.OutputAndTimings(success=True, output=post(output), timings=timings)

        return wrap.Wrapped(function=fn, wrapped=wrapped)

    return decorator


if __name__ == "__main__":
    wrap.function = function
    wrap.multiple_runs = multiple_runs
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as if the tool's script were run
    runpy.run_path(script, run_name="__main__")
