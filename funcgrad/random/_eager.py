"""Eager draws as one call of a cached compiled program (NOTE: [eager sampler programs]).

Layer: surface. Imports the kernel (``core``, ``Array``, dtypes, the cache registry), funcgrad.jit
and funcgrad.random._keys; funcgrad/random/_core.py builds its samplers' programs with it.

# NOTE: [eager sampler programs]
# An eager draw (a concrete key, no transformation running) costs one compiled program call and a
# dict lookup: the program for (sampler, key implementation, the mode's default float, the
# caller's other arguments exactly as given) is found before any canonicalisation and called on
# the key's raw data alone -- jit's plain native route, nothing static to hash, one argument to
# convert. A miss canonicalises and validates as the general route does (so it raises the same
# errors, and caches nothing then) and compiles the sampler with those values closed over: the
# same function traced with the same values gives the same bits, so eager, jitted and vmapped
# draws agree (tests/surface/test_random.py checks it). Transformations (the draw is then one
# equation of the enclosing program, with JAX's operands), traced or array parameters,
# unhashable arguments (a list shape) and NaN bounds take the general route. The bits are
# threefry's, JAX's, never the host's: a host generator (NumPy's) would be quicker at small sizes,
# but then ``jit(f)(key)`` could not equal ``f(key)`` (see bench/bench_random.py's docstring).
"""

from __future__ import annotations

import functools
import math
import warnings

from funcgrad import _config_flags
from funcgrad.jitting import library_jit
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.caches import bounded_put, register_cache
from funcgrad.random._keys import KeyArray

__all__ = ["check_legacy_key", "eager_draw", "keyable_scalar", "program", "quiet", "zero_sign"]

_LEGACY_KEY = (
    "Legacy uint32 key array passed as key to jax.random function. Please create keys using "
    'jax.random.key(). If use of a raw key array was intended, set jax_legacy_prng_key="allow".'
)
_quiet = [0]  # > 0 while funcgrad.random's own programs trace: the key was checked where it entered


def check_legacy_key() -> None:
    """A raw key entered a random function: ``jax_legacy_prng_key``'s warning or error, in JAX's
    words (callers test ``_config_flags.legacy_prng_key_level != "allow"`` first: one global read)."""
    if _quiet[0]:
        return
    if _config_flags.legacy_prng_key_level == "error":
        raise ValueError(_LEGACY_KEY)
    if _config_flags.legacy_prng_key_level == "warn":
        warnings.warn(_LEGACY_KEY, UserWarning, stacklevel=4)


def quiet(fn):
    """``fn`` running without the legacy-key check (it runs when a random function's own program
    traces, after the check at the function's entry)."""

    @functools.wraps(fn)
    def run(*args):
        _quiet[0] += 1
        try:
            return fn(*args)
        finally:
            _quiet[0] -= 1

    return run


# (build, impl, default float, *arguments) -> jitted function of the raw key data, or False where
# the general route must draw (a complex normal).
_programs = register_cache("random.eager_programs", {})
_CAPACITY = 512
_EvalTrace = core.EvalTrace


def eager_draw(key, build, *params):
    """``build``'s program for ``params`` called on ``key``'s raw data, or ``None`` when the call
    must take the general route (NOTE: [eager sampler programs]). ``build(impl, *params)`` returns
    the program (``program(...)``), ``False`` for "always the general route", or ``None`` for
    "the general route this time, cache nothing".

    >>> from funcgrad import jit
    >>> from funcgrad.random import key, uniform
    >>> x = uniform(key(0), (3,))  # an eager draw: the cached program
    >>> bool((x == jit(lambda k: uniform(k, (3,)))(key(0))).all())
    True
    """
    if type(key) is KeyArray:
        data, impl = key._base_array, key._impl
    else:
        data, impl = key, None
        if _config_flags.legacy_prng_key_level != "allow":  # (the general route checks the data first)
            return None
    if type(data) is not Array or type(core.current_trace()) is not _EvalTrace:
        return None
    ck = (build, impl, _dt.default_float, *params)
    try:
        prog = _programs.get(ck)
    except TypeError:  # an unhashable argument (a list shape, an array)
        return None
    if prog is None:
        prog = build(impl, *params)
        if prog is None:
            return None
        bounded_put(_programs, ck, prog, _CAPACITY)
    if prog is False:
        return None
    return prog(data)


def keyable_scalar(v) -> bool:
    """Whether ``v`` may be part of a program's key as a constant: a Python int or bool, or a
    float that is not NaN (NaN never equals itself: it would never be found again).

    >>> keyable_scalar(0.5), keyable_scalar(3), keyable_scalar(float("nan")), keyable_scalar([1])
    (True, True, False, False)
    """
    t = type(v)
    return t is int or t is bool or (t is float and v == v)


def zero_sign(v) -> float:
    """The sign of ``v`` as ``copysign`` reads it (it tells ``-0.0`` from ``0.0``, which compare
    and hash equal) -- part of a key holding a float bound.

    >>> zero_sign(-0.0), zero_sign(0.0), zero_sign(2)
    (-1.0, 1.0, 1.0)
    """
    return math.copysign(1.0, v)


def program(name: str, fn):
    """``fn`` (a function of the raw key data) jitted under ``name``; its compiles are the caller's
    chosen shapes, so it never gives jit's retrace warning.

    >>> program("double", lambda d: d * 2)(Array._from_owned(__import__("numpy").arange(2))).tolist()
    [0, 2]
    """
    fn = quiet(fn)
    fn.__name__ = fn.__qualname__ = name
    return library_jit(fn)
