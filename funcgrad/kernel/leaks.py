"""The leak checker (NOTE: [leak checking]): finished traces still referred to by their tracers.

Layer: kernel (bottom). Imports the standard library's ``gc`` and ``Tracer`` (``kernel.values``);
``kernel.core``'s ``new_trace`` notes each finished trace here, and re-exports these names.
"""

from __future__ import annotations

import gc

from funcgrad.kernel.values import Tracer

# NOTE: [leak checking]
# With ``jax_check_tracer_leaks`` on (``checking_leaks()``), every finished trace is remembered
# weakly; a remembered trace still referred to by one of its tracers once the frames that ran it
# have returned has leaked a tracer (a jitted function appending its traced value to a list).
# The check runs where a jit's trace or a vmap has returned (its frames are gone), when the next
# top-level transformation starts and when ``checking_leaks()`` exits, after a garbage
# collection, and raises JAX's ``Exception("Leaked trace ...")``. Without
# the flag a leaked tracer is still caught where it is used (UnexpectedTracerError).
_leaks: dict = {"on": False, "pending": []}


def set_leak_checking(on: bool) -> None:
    """Turn the leak checker on or off (NOTE: [leak checking]); off forgets pending traces."""
    _leaks["on"] = bool(on)
    if not on:
        _leaks["pending"].clear()


def check_leaks_now() -> None:
    """``check_leaks()`` when the checker is on: called where a top-level transformation's own
    frames have returned (the end of a jit's trace, of a vmap)."""
    if _leaks["on"] and _leaks["pending"]:
        check_leaks()


# The kernel's traces as JAX names its own in this message (a jit's trace is its DynamicJaxprTrace,
# partial evaluation's its JaxprTrace); the others have JAX's names already.
_JAX_TRACE_NAMES = {"StagingTrace": "DynamicJaxprTrace", "PartialEvalTrace": "JaxprTrace"}


def check_leaks() -> None:
    """Raise JAX's ``Exception("Leaked trace ...")`` if a finished trace is still referred to by
    one of its tracers (NOTE: [leak checking])."""
    pending, _leaks["pending"] = _leaks["pending"], []
    # (a young-generation collection frees most finished traces, their cycles being new; the
    # full collection runs only for a trace that survives it)
    for generation in (0, 2):
        pending = [r for r in pending if r() is not None]
        if not pending:
            return
        gc.collect(generation)
    for ref in pending:
        trace = ref()
        if trace is None:
            continue
        leaked = [o for o in gc.get_referrers(trace) if isinstance(o, Tracer) and o._trace is trace]
        if not leaked:
            continue
        holders = sorted({type(h).__name__ for t in leaked for h in gc.get_referrers(t)
                          if not isinstance(h, Tracer) and type(h).__name__ != "frame"})  # fmt: skip
        tracers = "\n".join(f"{type(t).__name__}({t.aval.str_short()})" for t in leaked[:5])
        name = _JAX_TRACE_NAMES.get(type(trace).__name__, type(trace).__name__)
        raise Exception(  # (JAX's type and words: a plain Exception naming JAX's trace class)
            f"Leaked trace {name}. Leaked tracer(s):\n\n{tracers}\n"
            f"referred to by: {', '.join(holders) or 'unknown'}. A traced value escaped the "
            "transformation that created it (stored in a list, a global or an object): return it "
            "instead."
        )
