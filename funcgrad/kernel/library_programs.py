"""``jitted_eagerly``: a library function that JAX jits runs eagerly as one compiled program.

Layer: kernel. Imports ``core``, ``array`` and ``hooks`` (``hooks.library_jit``, registered by
``funcgrad.jitting``, which sits above the modules that use this decorator).

# NOTE: [eager library functions as one program]
# Many of JAX's public functions are jitted where JAX defines them (``@jit``,
# ``@partial(jit, static_argnames=...)``): ``jax.nn``'s activations, ``log_softmax``, ``standardize``,
# ``jnp.linalg``'s factorisations and norms, ``jnp``'s nan-reductions, quantiles, ``cov``,
# ``polyval``, ``convolve``, ... An eager call of one is one call of a cached compiled program,
# with XLA's rounding of the fused program. Run op by op, the same function rounds as NumPy does
# (its ``exp``, ``log1p``, ``tanh`` and its sums differ from XLA's in float32's last place:
# ``silu`` 116 of 512 values, ``standardize`` 231, ``cov`` 195 of 256, ``nanmean`` 12 of 16)
# and costs a dispatch per primitive (``softplus`` of 8x64: 82 us op by op, 5 us as one program,
# jax 7 us; ``nanvar`` 204 -> 15 us, ``corrcoef`` 355 -> 16 us). The price is JAX's: the first
# call for each new shape compiles (30-60 ms, where op by op took under a millisecond).
# Single-primitive functions (``exp``, ``sum``, ``cumsum``, ``clip``) stay op by op: a compiled
# call costs more than NumPy's step, and their bits are the catalog's business (float32
# transcendental functions and sums are NumPy's eagerly, XLA's under jit); so does ``ldexp``
# (XLA's CPU code flushes subnormal results; NumPy's are exact).
#
# ``jitted_eagerly(static_argnames=JAX's)``, applied where the function is defined, makes an eager
# call -- the evaluation trace current, every dynamic argument an Array, a NumPy array or scalar,
# a Python scalar or None, every static one a Python scalar, string, type, dtype or a tuple of
# those -- one call of ``hooks.library_jit(fn, static_argnames=...)``: jit's own trace cache,
# keyed on shapes, dtypes, weak types, shardings, the meshes in scope, static values and the
# configuration (no retrace warning: the caller chose the shapes). Under ``set_mesh`` too, as
# JAX's jit runs there: op by op, every primitive of a call on sharded operands compiled a program
# of its own (shard_map.md's ``allclose`` of 12 gradient leaves: 71 compiles, 8 of the cell's 14 s;
# one program: 3.3 s, jax 3.6). The function is the library's own and pure: it
# calls no user code and reads nothing of the user's, so the cache cannot change when user Python
# runs or what it sees. Under a first-order eager ``jvp``/``vjp``/``linearize`` (a JVP trace over
# the evaluation trace, through vjp's partial evaluation) it binds that one jit too, as JAX's: the
# forward is one compiled program, so the residuals are XLA's fused values (log_softmax's saved
# bfloat16 sum of exp(x) adds exp's unrounded float32 values there; op by op it differed in 3 of 64,
# and ``jit(vjp(log_softmax, x)[1])`` in 13 of 4096 cotangents). So does eager ``grad``'s outermost
# recording (NOTE: [eager grad program cache]): the function is one jit equation there (its surface
# template is staged as that equation, ``call.one_program``), whose forward and transpose run
# compiled inside the cached program, as JAX's eager grad runs them. Recorded op by op, the cached
# NumPy program rounded a cancelling derivative differently: ``grad(sinc)(float32(1e-3))`` was
# -0.0033556, jax's and eager vjp's -0.0033173; silu/softplus/log_softmax differed in 16/144/88 of
# 300 float32 values. The price: two compiled calls per library call per gradient (a 3-layer relu
# MLP's eager grad, 32x64, ~1.1 -> ~2.2 ms at load 14; jax's eager grad takes 23-53 ms). Under any
# other trace (jit, vmap, nested jvp, a nested grad's recording) the function traces inline, as
# JAX's ``jit(inline=True)``: jaxprs and derivatives are what they were (seven nested jvp of svd as
# one program crashed XLA). Any other call (a
# list operand, ``axis=[0, 1]``, an Array ``alpha`` where funcgrad needs a Python value) runs op
# by op, a function whose trace needed a dynamic argument's value (a ConcretizationTypeError)
# runs op by op from then on, and so does every call until ``funcgrad.jitting`` is imported
# (``import jax`` under ``funcgrad.as_jax``, ``funcgrad.jit``/``grad`` do). A few parameters JAX
# traces are static here (``leaky_relu``'s ``negative_slope``, ``elu``/``celu``'s ``alpha``,
# ``squareplus``'s ``b``, ``nanvar``'s ``ddof``, ``trace``'s ``offset``: funcgrad's formulas take
# Python values), so each value is one more program. Functions JAX does not
# jit (``softmax``, ``gelu``, ``logsumexp``, ``one_hot``) stay op by op, as jax's run one primitive
# at a time. Tests: tests/surface/nn/test_nn.py, tests/surface/numpy/test_linalg.py (bits against
# jax's eager calls); scipy.special's jitted functions take ``library_jit`` whole (NOTE: [special
# functions JAX jits]).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel.ad import JVPTrace
from funcgrad.kernel.array import Array
from funcgrad.kernel.errors import ConcretizationTypeError
from funcgrad.kernel.extended import ExtendedArray
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.partial_eval import PartialEvalTrace
from funcgrad.kernel.recording import RecordingTrace

_EvalTrace = core.EvalTrace
# What a dynamic argument may be on the compiled route: jit's operands (and None, an empty tree).
_OPERANDS = frozenset({Array, np.ndarray, float, int, bool, complex, type(None)})


# What a static argument may be: a value that hashes by value (an Array hashes by identity, so
# each one would trace anew: it takes the op-by-op route).
_STATICS = frozenset({int, float, bool, complex, str, type(None), type})


def _operand(x, trace=None) -> bool:
    t = type(x)
    if t in _OPERANDS or isinstance(x, np.generic):
        return True
    # (under eager autodiff, the tracers of its traces: jit's operands there)
    return type(trace) is not _EvalTrace and isinstance(x, core.Tracer)


def _eager_autodiff(trace) -> bool:
    """Whether ``trace`` is a first-order eager ``jvp``/``vjp``/``linearize``: a JVP trace, over a
    partial-evaluation one for vjp/linearize, over the evaluation trace, or eager grad's outermost
    recording (not a nested grad's, vmap, nested derivatives, or anything staged under jit)."""
    if type(trace) is RecordingTrace:
        return type(trace.parent) is _EvalTrace
    if type(trace) is not JVPTrace:
        return False
    parent = trace.parent
    if type(parent) is PartialEvalTrace:
        parent = parent.parent
    return type(parent) is _EvalTrace


def _static(x) -> bool:
    t = type(x)
    if t in _STATICS or isinstance(x, np.dtype):
        return True
    return t is tuple and all(type(e) in _STATICS for e in x)


def jitted_eagerly(fn: Callable | None = None, *, static_argnames: tuple[str, ...] = (), keys: bool = False):
    """Decorator: ``fn``'s eager calls run as one compiled program of ``fn`` jitted with
    ``static_argnames`` (JAX's); under a trace ``fn`` traces inline (NOTE: [eager library
    functions as one program]). With ``keys``, a typed key array (an ``ExtendedArray``) is a
    dynamic argument too (``jax.random``'s samplers); otherwise it takes the op-by-op route.

    >>> import funcgrad.numpy as fnp
    >>> @jitted_eagerly(static_argnames=("axis",))
    ... def centred(x, axis=-1):
    ...     return x - fnp.mean(x, axis, keepdims=True)
    >>> centred(fnp.array([1.0, 3.0])).tolist()
    [-1.0, 1.0]
    """
    if fn is None:
        return functools.partial(jitted_eagerly, static_argnames=tuple(static_argnames), keys=keys)
    operand = (lambda x, trace: isinstance(x, ExtendedArray) or _operand(x, trace)) if keys else _operand
    params = list(inspect.signature(fn).parameters.values())
    statics = frozenset(static_argnames) & {p.name for p in params}  # (JAX's names fn has)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    static_at = frozenset(i for i, p in enumerate(positional) if p.name in statics)
    compiled = None

    def one_program(trace, args, kwargs):
        """``fn``'s call as one call of its jit under ``trace``, or op by op where the arguments
        cannot take the compiled route."""
        nonlocal compiled
        if hooks.library_jit is None:
            return fn(*args, **kwargs)
        for i, a in enumerate(args):
            if i in static_at:
                if not _static(a):
                    return fn(*args, **kwargs)
            elif not operand(a, trace):
                return fn(*args, **kwargs)
        for k, v in kwargs.items():
            if k in statics:
                if not _static(v):
                    return fn(*args, **kwargs)
            elif not operand(v, trace):
                return fn(*args, **kwargs)
        if compiled is None:
            compiled = hooks.library_jit(fn, static_argnames=tuple(sorted(statics)))
        elif compiled is False:
            return fn(*args, **kwargs)
        try:
            return compiled(*args, **kwargs)
        except ConcretizationTypeError:
            # A dynamic argument funcgrad's formula needs as a Python value (JAX traces it): this
            # function runs op by op from now on, as before.
            compiled = False
            return fn(*args, **kwargs)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        trace = core.current_trace()
        if type(trace) is not _EvalTrace and not _eager_autodiff(trace):
            return fn(*args, **kwargs)
        return one_program(trace, args, kwargs)

    # (eager grad's surface template stages the call as one jit equation: NOTE: [surface templates])
    call.one_program = lambda *args, **kwargs: one_program(core.current_trace(), args, kwargs)
    call.__wrapped_eagerly__ = fn  # (the op-by-op function, for tests comparing the two routes)
    return call
