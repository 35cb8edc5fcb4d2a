"""The runtime tokens of side-effecting executions, and the wait for them (``effects_barrier``).

Layer: xla_bridge (runtime half). Imports stdlib only; ``executables`` and ``sharded`` record
here, the surface's ``effects_barrier`` calls ``wait_all``.

# NOTE: [runtime tokens]
# A program with host callbacks (``debug.print``, ``debug.callback``, ``io_callback``,
# ``pure_callback``) or another side-effecting custom call (``ffi_call(has_side_effect=True)``:
# ``has_effects``) runs through ``execute_sharded(buffers, with_tokens=True)``, as JAX's
# ``ExecuteReplicated`` does for a program with effects or host callbacks; the ``ShardedToken``
# the execution returns completes when the program, its callbacks included, has finished on
# every device. ``record`` keeps, per device, the token of the last such execution there (the
# executions on one device run in the order they were dispatched, so the last one is enough:
# JAX's ``RuntimeTokenSet.output_runtime_tokens``); ``wait_all`` (``effects_barrier``, and once at
# exit, as JAX's ``atexit`` hook) waits on them. A print-only program has no result to wait on:
# its token is what says it has finished. Programs without host callbacks keep the plain
# ``execute_sharded(buffers)`` (no token: the effect-free hot path is unchanged) and the native
# route's C++ fast path; programs with them take no C++ fast path (``Compiled.fastpath_data``
# returns None), as JAX's dispatcher leaves programs with host callbacks to Python.
"""

from __future__ import annotations

import atexit
import threading

__all__ = ["has_effects", "record", "wait_all"]

# device -> the runtime token of the last side-effecting execution on it
_tokens: dict = {}
_lock = threading.Lock()
_exit_hook = [False]


def has_effects(module_text, host_callbacks) -> bool:
    """Whether a program runs with a runtime token: it has host callbacks, or a custom call with a
    side effect (a side-effecting ``ffi_call``), as JAX's unordered effects.

    >>> has_effects("stablehlo.custom_call @f() {has_side_effect = true}", ())
    True
    """
    return bool(host_callbacks) or (isinstance(module_text, str) and "has_side_effect = true" in module_text)


def record(results, devices) -> None:
    """Keep the runtime token of ``results`` (a ``with_tokens=True`` execution's ``ExecuteResults``,
    before its outputs are consumed) for each of ``devices`` (the executable's, in order)."""
    sharded = results.consume_token()
    with _lock:
        for i, device in enumerate(devices):
            _tokens[device] = sharded.get_token(i)
        if not _exit_hook[0]:
            # (registered with the first effectful execution: importing funcgrad registers nothing)
            _exit_hook[0] = True
            atexit.register(wait_all)


def wait_all() -> None:
    """Wait until every side-effecting execution dispatched so far has finished, its host
    callbacks included (NOTE: [runtime tokens]).

    >>> wait_all()  # nothing dispatched: returns at once
    """
    with _lock:
        tokens = list(_tokens.values())
        _tokens.clear()
    for token in tokens:
        token.block_until_ready()
