"""The leak checker (NOTE: [leak checking]): finished traces still referred to by their tracers.

Layer: kernel (bottom). Imports the standard library's ``gc`` and ``Tracer`` (``kernel.values``);
``kernel.core``'s ``new_trace`` notes each finished trace here, and re-exports these names.
"""

from __future__ import annotations

import gc
import inspect
import sys
import types

from funcgrad.kernel.environment import bool_env
from funcgrad.kernel.values import Tracer

# NOTE: [leak checking]
# With ``jax_check_tracer_leaks`` on (``checking_leaks()``), every finished trace is remembered
# weakly; a remembered trace still referred to by one of its tracers once the frames that ran it
# have returned has leaked a tracer (a jitted function appending its traced value to a list).
# The check runs where a jit's trace or a vmap has returned (its frames are gone), when the next
# top-level transformation starts and when ``checking_leaks()`` exits, after a garbage
# collection, and raises JAX's ``Exception("Leaked trace ...")``. Without
# the flag a leaked tracer is still caught where it is used (UnexpectedTracerError).
# (on from the start under JAX_CHECK_TRACER_LEAKS=1, as JAX reads its flags from the environment)
_leaks: dict = {
    "on": bool_env("JAX_CHECK_TRACER_LEAKS", False),
    "pending": [],
}


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


# The kernel's traces and tracers by the names of JAX's that play their part, in JAX's messages
# (the leak checker's and ``UnexpectedTracerError``'s, ``kernel.core``): a jit's trace and tracer
# are JAX's DynamicJaxprTrace and DynamicJaxprTracer, partial evaluation's trace its JaxprTrace,
# eager grad's recording tracer its LinearizeTracer (JAX's chain names a grad's tracer so:
# ``<LinearizeTracer 1234> is referred to by <list 5678>[0]``); the others have JAX's names already.
JAX_NAMES = {
    "StagingTrace": "DynamicJaxprTrace",
    "PartialEvalTrace": "JaxprTrace",
    "StagingTracer": "DynamicJaxprTracer",
    "RecordingTracer": "LinearizeTracer",
}


def jax_name(obj) -> str:
    """The name of JAX's class that plays the part of ``obj``'s (a trace or a tracer)."""
    return JAX_NAMES.get(type(obj).__name__, type(obj).__name__)


def jax_tracer_name(x: Tracer) -> str:
    """The name JAX gives the tracer ``x``: its class's, or for a tracer of partial evaluation
    (a staging tracer of a JaxprTrace) JAX's JaxprTracer."""
    return "JaxprTracer" if jax_name(x._trace) == "JaxprTrace" else jax_name(x)


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
        name = jax_name(trace)
        ignore = {id(leaked), id(pending), id(sys._getframe())}
        msgs = []
        for t in leaked:  # (a loop: a generator here would be the first referrer of each)
            msgs.append(f"{t!r}{_origin(t)}{_why_alive(ignore | {id(msgs)}, t)}")
        msgs = "\n\n".join(msgs)
        # (JAX's type and words: a plain Exception naming JAX's trace class, each leaked tracer
        # with where it was made and the chain of references that keeps it alive)
        raise Exception(f"Leaked trace {name}. Leaked tracer(s):\n\n{msgs}\n")


def _origin(t: Tracer) -> str:
    """JAX's ``_origin_msg``: the line a leaked tracer's transformation was entered on, when
    the checker was on then (``new_trace`` notes it only then: nothing to pay without it)."""
    info = getattr(t._trace, "leak_source_info", None)
    if info is None:
        return ""
    return f"\nThis {jax_name(t)} with object id {id(t)} was created on line:\n  {info.where()}"


def _why_alive(ignore: set[int], x) -> str:
    """JAX's ``_why_alive``: one chain of referrers from ``x`` up to a module or a root, a line each
    (``<list 1234>[0]``, ``<A 5678>.dct``, ``<function 9> (foo) closed-over variable x``)."""

    def parents(o):
        return [r for r in gc.get_referrers(o) if id(r) not in ignore and type(r) is not types.FrameType]

    child, lines, seen = x, [], set()
    while id(child) not in seen and type(child) is not types.ModuleType and parents(child):
        parent = parents(child)[0]
        # (an instance's __dict__ and a closure's cells: named from the object that holds them)
        if (
            isinstance(parent, dict)
            and parents(parent)
            and getattr(parents(parent)[0], "__dict__", None) is parent
        ):
            parent = parents(parent)[0]
        elif type(parent) is types.CellType and parents(parent) and parents(parents(parent)[0]):
            parent = parents(parents(parent)[0])[0]
        lines.append(
            f"<{jax_name(child)} {id(child)}> is referred to by {_container_info(parent, id(child))}"
        )
        seen.add(id(child))
        child = parent
    return "\n" + "\n".join(lines) if lines else ""


def _container_info(container, obj_id: int) -> str:
    """JAX's ``_why_alive_container_info``: how ``container`` holds the object ``obj_id``."""
    name = f"<{type(container).__name__} {id(container)}>"
    if type(container) is types.ModuleType:
        name = getattr(container, "__name__", name)  # (then the global: ``__main__.a``)
    if type(container) is types.FunctionType:
        try:
            closure = inspect.getclosurevars(container)
            keys = [k for k, v in {**closure.nonlocals, **closure.globals}.items() if id(v) == obj_id]
        except (TypeError, ValueError):
            keys = []
        if len(keys) == 1:
            return f"{name} ({container.__name__}) closed-over variable {keys[0]}"
        if keys:
            return f"{name} in closed-over variables " + ", ".join(map(repr, keys))
    if isinstance(getattr(container, "__dict__", None), dict):
        keys = [k for k, v in vars(container).items() if id(v) == obj_id]
        if len(keys) == 1:
            return f"{name}.{keys[0]}"
        if keys:
            return f"{name} in vars " + ", ".join(map(repr, keys))
    if isinstance(container, list | tuple):
        idxs = [i for i, v in enumerate(container) if id(v) == obj_id]
        return f"{name}[{idxs[0]}]" if len(idxs) == 1 else f"{name} at indices " + ", ".join(map(str, idxs))
    if isinstance(container, dict):
        keys = [k for k, v in container.items() if id(v) == obj_id]
        return f"{name}[{keys[0]!r}]" if len(keys) == 1 else f"{name} at keys " + ", ".join(map(repr, keys))
    return name
