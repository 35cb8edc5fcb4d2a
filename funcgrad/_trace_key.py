"""What a jitted function's trace cache is keyed on, and how two keys differ in words.

A key is (input tree structure, one entry per leaf -- shape, dtype, weak type and, on explicit
mesh axes, sharding (NOTE: [sharding in types]) -- static positional and keyword arguments, the
named axes in scope, and the user contexts' values when any is set). ``_explain`` names the first
difference, for the retrace warning and ``explain_cache_misses``; ``_argnums`` normalises
``static_argnums``/``donate_argnums`` against the signature. ``note_retrace`` keeps a jitted
function's recent keys and says, in words, why it traced again: the log line of
``jax_explain_cache_misses`` and, past ``RETRACE_WARNING_THRESHOLD`` traces, one
``RetraceWarning``; ``CacheInfo`` is what ``cache_info()`` counts.

Layer: surface, under ``funcgrad.jitting``. Imports the kernel, ``_api_util``, ``ref`` and
``_jit_route`` (the ``explain_cache_misses`` flag, NOTE: [jit flags]).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

from funcgrad._api_util import abstractify, fun_sourceinfo, is_abstract
from funcgrad._jit_route import _jit_flags  # NOTE: [jit flags]
from funcgrad._ref_scopes import is_stateful_arg, stateful_key
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.caches import register_cache
from funcgrad.kernel.extended import EArray
from funcgrad.kernel.hooks import hooks


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    return (x,) if isinstance(x, int | str) else tuple(x)


def _argnums(name: str, what: str, given, n_positional: int | None) -> set[int]:
    """``static_argnums``/``donate_argnums`` as a set; with a known number of positional
    parameters (a signature without ``*args``), negative numbers count from the end and a number
    out of range is an error, as in JAX."""
    nums = set()
    for n in _as_tuple(given):
        if not isinstance(n, int | np.integer) or isinstance(n, bool):
            raise TypeError(f"jit({name}): {what} must be ints, got {n!r}")
        n = int(n)
        if n_positional is not None:
            if not -n_positional <= n < n_positional:
                raise ValueError(  # (JAX's words first)
                    f"Jitted function has {what}={_as_tuple(given)}, but only accepts {n_positional} "
                    f"positional arguments. (jit({name}): {what} refers to argument {n}, but {name} takes "
                    f"{n_positional} positional argument{'s' if n_positional != 1 else ''}. Use "
                    f"{what.replace('nums', 'names')} for keyword-only parameters.)"
                )
            n %= n_positional
        nums.add(n)
    return nums


def _ref_key(flat) -> tuple:
    """The trace cache key's leaf part for arguments holding Refs: a Ref's type and which earlier
    argument is the same Ref (the jaxpr reads each Ref once)."""
    first: dict[int, int] = {}
    return tuple(
        stateful_key(x, first.setdefault(id(x), i)) if is_stateful_arg(x) else _aval_key(x)
        for i, x in enumerate(flat)
    )


_SCALAR_TYPES = frozenset((*_dt.python_scalar_types, *_dt.typed_scalar_types))  # (TypedFloat too)


def _aval_key(x):
    t = type(x)
    if t is Array:
        # A sharded value's type holds its sharding on explicit mesh axes (NOTE: [sharding in types]).
        s = None if x._buffer is None else core.get_aval(x)._sharding
        return (x.shape, x.dtype, x.weak_type) if s is None else (x.shape, x.dtype, x.weak_type, s)
    if t in _SCALAR_TYPES:
        # Its type, as JAX keys it: a Python float and a weakly typed float Array share a trace.
        a = core.get_aval(x)
        return (a.shape, a.dtype, a.weak_type)
    if t is core.Token:
        return (core.abstract_token,) * 3  # (NOTE: [tokens]: shape, dtype and weak type in one)
    if isinstance(x, core.Tracer):
        a = x.aval
        if a is core.abstract_token:
            return (a,) * 3
        return (
            (a.shape, a.dtype, a.weak_type)
            if a._sharding is None
            else (a.shape, a.dtype, a.weak_type, a._sharding)
        )
    if is_abstract(x) or t is EArray:  # (trace/lower; an array of an extended dtype)
        # (keyed as an Array of its type: the two share a trace; NOTE: [extended dtypes])
        a = abstractify(x) if t is not EArray else x.aval
        return (
            (a.shape, a.dtype, a.weak_type)
            if a._sharding is None
            else (a.shape, a.dtype, a.weak_type, a._sharding)
        )
    return (np.shape(x), np.result_type(x), False)


def _explain(old, new, names) -> str:
    """What differs between two cache keys, in words."""
    if len(old) > 5 and len(new) > 5 and old[5] != new[5]:  # (NOTE: [x64 mode per thread]; JAX's words)
        diffs = [
            f"  * {name} differs: now {n} and before {o}"
            for name, n, o in zip(hooks.mode_names, new[5], old[5])  # (JAX's names of its context's values)
            if n != o
        ]
        return "\n".join(["Tracing context doesn't match, e.g. due to config or context manager.", *diffs])
    if old[0] != new[0]:  # (JAX's reason first, then funcgrad's detail)
        return f"different input pytree: the input tree structure changed from {old[0]} to {new[0]}"
    if old[2] != new[2] or old[3] != new[3]:
        # (where, value, type) triples: a change of type alone is a change (NOTE: [strict static keys])
        o = {p[0]: p[1:] for p in (*old[2], *old[3])}
        n = {p[0]: p[1:] for p in (*new[2], *new[3])}
        for k in n:
            if o.get(k, ()) != n[k]:
                was = o[k][0] if k in o else None
                return f"static argument {k!r} changed from {was!r} to {n[k][0]!r}"
        return "the static arguments changed"
    for name, a, b in zip(names, old[1], new[1]):
        if a == b:
            continue
        weak = a[0] == b[0] and a[1] == b[1]  # (JAX shows the weak types only when they alone differ)
        jax_words = f"different input types: at {name}, now {_short(b, weak)} and before {_short(a, weak)}; "
        if a[0] != b[0]:
            return f"{jax_words}argument {name} changed shape from {a[0]} to {b[0]}"
        if a[1] != b[1]:
            return f"{jax_words}argument {name} changed dtype from {_dt_name(a[1])} to {_dt_name(b[1])}"
        change = (
            f"changed weak type from {a[2]} to {b[2]} (a Python scalar vs an array; see "
            "https://docs.jax.dev/en/latest/type_promotion.html#weak-types)"
        )
        return f"{jax_words}argument {name} {change}"
    if len(old) > 4 and old[4] != new[4]:
        return f"the named axes in scope changed from {old[4]} to {new[4]}"
    if len(old) > 6 and len(new) > 6 and old[6] != new[6]:
        return f"the user contexts' values changed from {old[6]} to {new[6]}"
    return "an unknown change"


def _short(entry, weak: bool) -> str:
    """A key's array entry ``(shape, dtype, weak_type)`` as JAX's cache-miss explanation prints it
    (``f32[3]``, with ``{weak_type=...}`` when only the weak types differ)."""
    try:
        text = f"{_dt.short_name(np.dtype(entry[1]))}[{','.join(map(str, entry[0]))}]"
    except (TypeError, IndexError):
        return str(entry)
    return f"{text}{{weak_type={entry[2]}}}" if weak else text


def _dt_name(d) -> str:
    return d.__name__ if isinstance(d, type) else np.dtype(d).name


# ----------------------------------------------------------------------------------------------
# Retraces in words

RETRACE_WARNING_THRESHOLD = 8  # (set to inf by the ``import jax`` alias: JAX warns about none)


class RetraceWarning(UserWarning):
    """A jitted function was traced (and compiled) many times: its cache key keeps changing."""


class CacheInfo:
    """Counters of a jitted function's trace cache: ``hits``, ``misses`` (traces), ``currsize``."""

    def __init__(self, hits: int, misses: int, size: int):
        self.hits, self.misses, self.currsize = hits, misses, size

    def __repr__(self):
        return f"CacheInfo(hits={self.hits}, misses={self.misses}, currsize={self.currsize})"


_logger = logging.getLogger("funcgrad")


# Where the functions whose first trace was explained were defined (``jax_explain_cache_misses``: a
# function defined again on the same line each call, a lambda in a loop, never hits the cache).
_first_traced_at: set[str] = register_cache("jit.first_traced_at", set())  # NOTE: [caches have an owner]


def note_retrace(keys: list, key, names, fun, name: str, misses: int, warned: bool) -> bool:
    """Record a trace of jitted ``fun`` (``name``) for ``key`` in ``keys`` (its recent keys, the
    last 16), log why under ``jax_explain_cache_misses`` and warn once past
    ``RETRACE_WARNING_THRESHOLD`` traces (``misses``); returns whether the warning has been given.
    Called by the jitted function's cache lookup on a miss (the warning points at its caller)."""
    previous = keys[-1] if keys else None
    for k in reversed(keys):
        if k[0] == key[0]:
            previous = k
            break
    keys.append(key)
    del keys[:-16]
    if _jit_flags["explain_cache_misses"]:
        if previous is None:  # (JAX's words for a first trace, then funcgrad's)
            where = fun_sourceinfo(fun).rpartition(" at ")[2]
            why = f"never seen function:\n  {name} id={id(fun)} defined at {where}; first call"
            if where in _first_traced_at:
                why += (
                    "\n  but seen another function defined on the same line; maybe the function is\n"
                    "  being re-defined repeatedly, preventing caching?"
                )
            _first_traced_at.add(where)
        else:
            why = _explain(previous, key, names)
        _logger.warning("TRACING CACHE MISS of jit(%s): %s", name, why)
    if warned or misses <= RETRACE_WARNING_THRESHOLD or previous is None:
        return warned
    warnings.warn(
        f"jit({name}) has been traced {misses} times (each trace compiles a new "
        f"program); the latest retrace was caused by: {_explain(previous, key, names)}. Keep "
        "shapes, dtypes and static arguments fixed across calls (pad inputs to a few sizes, "
        "pass Python scalars as arrays of a fixed dtype) to hit the cache.",
        RetraceWarning,
        stacklevel=3,
    )
    return True
