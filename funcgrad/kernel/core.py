"""Primitives and the trace machinery: Primitive, Trace/Tracer, the current trace, eval_jaxpr.

Layer: kernel (bottom). Imports numpy and the kernel modules ``ir``, ``traits``, ``dtypes``, ``array`` and
``hooks``.

Every value a transformation sees is either a concrete value (an ``Array``, a NumPy array or a
Python scalar) or a ``Tracer`` owned by one ``Trace``. ``Primitive.bind`` hands the primitive to the
*current* trace (context-based dispatch, as in JAX 0.10 and Autodidax2):

# NOTE: [current trace]
# There is one current trace at any time. Each trace has a ``parent`` (the trace that was current
# when it was created) and a unique ``tag``. A trace processes a primitive by unpacking its own
# tracers, treating every other value as a constant, and binding the rule's work on its parent
# (``with set_current_trace(self.parent)``). Because each trace only unpacks *its own* tracers,
# nested derivatives of closures cannot confuse their perturbations. A tracer whose trace has
# finished (``trace.alive`` is False) and that is used later is a leaked tracer and raises
# ``UnexpectedTracerError`` instead of computing a wrong answer.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import itertools
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

# NOTE: [IEEE special values]
# Eager mode returns what XLA returns -- inf, -inf, nan -- without NumPy's RuntimeWarnings (as
# JAX does): ``log(0)`` is -inf, not a warning. ``np.errstate`` costs ~2.5 µs per primitive, so the
# eager interpreter sets NumPy's floating-point-error context variable directly (~0.2 µs), falling
# back to errstate if a future NumPy moves that private name.
try:
    from numpy._core import _ufunc_config as _np_ufunc_config
    from numpy._core import umath as _np_umath

    _FP_ERRORS = _np_ufunc_config._extobj_contextvar
    _FP_QUIET = _np_umath._make_extobj(all="ignore")
except (ImportError, AttributeError):  # pragma: no cover - other NumPy versions

    class _ErrstateVar:
        """The same interface over ``np.errstate``."""

        def set(self, _):
            state = np.errstate(all="ignore")
            state.__enter__()
            return state

        def reset(self, state):
            state.__exit__(None, None, None)

    _FP_ERRORS, _FP_QUIET = _ErrstateVar(), None

import os
import sys

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.dtypes import python_scalar_types
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ClosedJaxpr, Jaxpr, Literal, ShapedArray, SourceInfo, Var
from funcgrad.kernel.traits import PrimitiveTraits

# ----------------------------------------------------------------------------------------------
# Abstract values of concrete inputs


def _python_scalar_aval(x) -> ShapedArray:
    # (a Python bool is strong, as in JAX: only int, float and complex are weak)
    return ShapedArray((), _dt.python_scalar_dtype(x), weak_type=type(x) is not bool)


def get_aval(x) -> ShapedArray:
    """The abstract value of any array-like accepted as a primitive input."""
    t = type(x)
    if t is Array:
        aval = x._aval
        if aval is None:
            v = x._value
            if v is None:
                v = x._buffer.aval
            b = x._buffer
            sharding = None
            if b is not None and hooks.aval_sharding is not None:
                sharding = hooks.aval_sharding(b, len(v.shape))  # NOTE: [sharding in types]
            aval = x._aval = ShapedArray(v.shape, v.dtype, x.weak_type, sharding)
        return aval
    if t is np.ndarray:
        # (NOTE: [x64 mode]: a 64-bit NumPy value enters as its 32-bit counterpart in x32 mode)
        return ShapedArray(x.shape, x.dtype if _dt.x64_enabled else _dt.canonical(x.dtype))
    if isinstance(x, Tracer):
        return x.aval
    if isinstance(x, np.ndarray | np.generic):
        return ShapedArray(x.shape, _dt.canonical(x.dtype))
    if isinstance(x, Array):
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    if isinstance(x, python_scalar_types):
        return _python_scalar_aval(x)
    aval = getattr(x, "aval", None)  # an array of an extended dtype (typed keys: ShapedArray(key<fry>[]))
    if isinstance(aval, ShapedArray) and not isinstance(aval.dtype, np.dtype):
        return aval
    if hasattr(x, "__array__") or isinstance(x, list | tuple):
        arr = np.asarray(x)
        if arr.dtype == object:
            raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid array.")
        return ShapedArray(arr.shape, _dt.canonical(arr.dtype))
    raise TypeError(
        f"Value {x!r} of type {type(x).__name__} is not a valid funcgrad array type. "
        "Pass a funcgrad Array, a NumPy array or a Python scalar."
    )


def dtype_of(x) -> np.dtype:
    """``get_aval(x).dtype``, without making an aval for an array that has its dtype at hand."""
    t = type(x)
    if t is np.ndarray or t is Array:
        return x.dtype
    return get_aval(x).dtype


def is_array_like(x) -> bool:
    t = type(x)
    return t is np.ndarray or t is Array or isinstance(x, _ARRAY_LIKE_TYPES)


# ----------------------------------------------------------------------------------------------
# Primitives


# The facts of ``PrimitiveTraits``, and the loose attributes they replaced: set only by ``def_traits``.
_TRAIT_NAMES = frozenset(f.name for f in dataclasses.fields(PrimitiveTraits)) | {"is_linear"}


class Primitive:
    """A primitive operation and all of its rules.

    Rules are attached with decorator methods, so a primitive is declared in one place::

        sin_p = Primitive("sin")
        sin_p.def_impl(np.sin)
        sin_p.def_abstract_eval(lambda x: x)

    Rule signatures (Autodidax's vocabulary):

    - ``impl(*values, **params)``: NumPy evaluation.
    - ``abstract_eval(*avals, **params)``: output aval(s); checks shapes and dtypes.
    - ``jvp(primals, tangents, **params) -> (primals_out, tangents_out)``; tangents may be ``Zero``.
    - ``transpose(cts, *args, **params) -> list``: for linear primitives; undefined (linear) inputs
      are ``UndefinedPrimal``; returns one cotangent (or ``None``/``Zero``) per input.
    - ``batch(axis_size, values, dims, **params) -> (out, out_dims)``; a dim of ``None`` is unbatched.
    - ``taylor(primals, series, **params) -> (primal_out, series_out)``: Taylor mode (``jet``);
      each series is a list of ``K`` Taylor coefficients, ``Zero`` allowed (``kernel/taylor.py``,
      NOTE: [Taylor coefficients]). Without one, ``jet`` uses the JVP rule (or zero series for a
      not-differentiable primitive); a catalog primitive then states why in its traits.
    - ``partial_eval`` (optional, higher-order primitives): see ``partial_eval.py``.

    What transformations know about it beyond its rules is one frozen ``PrimitiveTraits`` record,
    ``primitive.traits``, stated with ``def_traits`` (NOTE: [primitive traits])::

        sin_p.def_traits(may_produce_nan=True, sparse="zero_preserving")
    """

    multiple_results = False

    def __init__(self, name: str, *, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self.impl = None
        self.abstract_eval = None
        self.jvp = None
        self.transpose = None
        self.batch = None
        self.taylor = None
        self.partial_eval = None
        # ``rule(avals_in, avals_out, **params) -> spec(s)``: its output sharding on explicit
        # mesh axes (NOTE: [sharding in types]); ``sharding_from_params``: it sets one from its
        # params even for unsharded operands (``reshard``).
        self.sharding_rule = None
        self.sharding_from_params = False
        self.impl_takes_arrays = False
        # A rule deciding the weak_type of eager results (see NOTE: [weak types]); default: the
        # result is weak when all inputs are weak and the dtype did not change.
        self.weak_type_rule = None
        # ``rule(params, args) -> bool``: the eager result's weak type from the operands themselves,
        # for a primitive whose abstract eval does not follow "all inputs weak" (convert_element_type
        # sets it from its parameter, select_n from its cases, not its predicate); replaces both
        # the default and ``weak_type_rule``, so eager results type as staged ones.
        self.weak_type_of = None
        # The facts other layers ask about (never by its name string): one frozen record, set with
        # ``def_traits`` (NOTE: [primitive traits]).
        self.traits = PrimitiveTraits()

    def __repr__(self):
        return self.name

    def bind(self, *args, **params):
        return _state.trace.process_primitive(self, args, params)

    def bind_with_trace(self, trace: Trace, args, params: dict):
        """Process this primitive on ``trace`` (JAX's method): ``bind`` with ``trace`` current."""
        prev = _state.trace
        _state.trace = trace
        try:
            return trace.process_primitive(self, args, params)
        finally:
            _state.trace = prev

    def get_bind_params(self, params: dict) -> dict:
        """The parameters to bind this primitive with, given those of one of its equations (JAX's
        method, which turns a call's jaxpr into a function; funcgrad binds the jaxpr itself)."""
        return dict(params)

    def def_impl(self, f):
        self.impl = f
        return f

    def def_abstract_eval(self, f):
        self.abstract_eval = f
        return f

    def def_jvp(self, f):
        self.jvp = f
        return f

    def def_transpose(self, f):
        self.transpose = f
        return f

    def def_batch(self, f):
        self.batch = f
        return f

    def def_taylor(self, f):
        self.taylor = f
        return f

    def def_partial_eval(self, f):
        self.partial_eval = f
        return f

    def def_sharding_rule(self, f, *, from_params: bool = False):
        """Its output sharding on explicit mesh axes: ``f(avals_in, avals_out, **params)`` gives
        one spec per result (a tuple per dimension of mesh axis names; NOTE: [sharding in types])."""
        self.sharding_rule = f
        self.sharding_from_params = from_params
        return f

    def def_traits(self, **facts) -> Primitive:
        """State facts about this primitive (NOTE: [primitive traits]): the record is replaced by
        one with ``facts`` changed; an unknown fact or a value of the wrong type is an error.

        >>> p = Primitive("my_sin")
        >>> p.def_traits(taylor_from_jvp="a demo").traits.taylor_from_jvp
        'a demo'
        """
        self.traits = dataclasses.replace(self.traits, **facts)
        return self

    def __setattr__(self, name, value):
        # A fact moved into ``traits`` set as a loose attribute would be read by nobody.
        if name in _TRAIT_NAMES:
            raise AttributeError(
                f"Primitive.{name} is a fact of Primitive.traits: state it with "
                f"def_traits({'linear' if name == 'is_linear' else name}=...) (NOTE: [primitive traits])"
            )
        object.__setattr__(self, name, value)


# ----------------------------------------------------------------------------------------------
# Traces and tracers


class JAXTypeError(TypeError):
    """The base of funcgrad's (and JAX's) ``TypeError`` subclasses: the tracer errors, KeyReuseError."""


class JAXIndexError(IndexError):
    """The base of funcgrad's (and JAX's) ``IndexError`` subclasses (NonConcreteBooleanIndexError)."""


class JaxprTypeError(TypeError):
    """A jaxpr is ill-typed: an equation's inputs or outputs disagree with its primitive's rule."""


class InconclusiveDimensionOperation(Exception):
    """A comparison or operation on a symbolic dimension has no answer valid for all its values."""


class KeyReuseError(JAXTypeError):
    """A PRNG key was consumed twice (raised where key-reuse checking is on)."""


class UnexpectedTracerError(JAXTypeError):
    """A tracer was used after the transformation that created it had finished."""


class ConcretizationTypeError(JAXTypeError):
    """A traced value was used where a concrete Python value is required."""


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()``/``if`` on a traced value."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """A traced value used as an index or a size (``__index__``: ``range(x)``, ``lst[x]``)."""


class TracerArrayConversionError(ConcretizationTypeError):
    """A traced value converted to a NumPy array (``np.asarray(x)``, a NumPy function of it)."""


class Trace:
    """A transformation in progress. Subclasses implement ``process_primitive``."""

    _tags = itertools.count()
    checks_leaks = True  # (NOTE: [leak checking]; JAX checks staging and batching, not grad)

    def __init__(self, parent: Trace | None):
        self.parent = parent
        self.level = 0 if parent is None else parent.level + 1
        self.tag = next(Trace._tags)
        self.alive = True

    def process_primitive(self, primitive: Primitive, args, params):
        raise NotImplementedError

    def unpack(self, values, tracer_type, fields) -> tuple[list, list, bool]:
        """Split ``values`` into what this trace's own tracers carry and what they add.

        ``fields(tracer)`` gives a tracer's ``(value, extra)`` (a JVP tracer's primal and tangent,
        a batch tracer's value and batch dim). Any other value is its own value with extra
        ``None``; a tracer of another trace must belong to a live enclosing one (NOTE: [current
        trace]). The third result says whether any value was this trace's.
        """
        inner, extras, own = [], [], False
        for a in values:
            if type(a) is tracer_type and a._trace is self:
                v, e = fields(a)
                inner.append(v)
                extras.append(e)
                own = True
            else:
                if isinstance(a, Tracer):
                    check_foreign_tracer(self, a)
                inner.append(a)
                extras.append(None)
        return inner, extras, own

    def process_on_parent(self, primitive: Primitive, args, params):
        """Hand ``primitive`` to the parent trace now, as ``bind`` would with the parent current,
        without re-packing the arguments (a trace passing on what it has nothing to add to: the
        known values of partial evaluation, the unrecorded ones of eager grad's recording)."""
        prev = _state.trace
        parent = _state.trace = self.parent
        try:
            return parent.process_primitive(primitive, args, params)
        finally:
            _state.trace = prev

    @property
    def main(self):
        """This trace's tag (JAX's ``Trace.main``, kept for libraries that tell their own tracers
        apart with ``tracer._trace.main is main``)."""
        return self.tag

    def is_ancestor_of(self, other: Trace) -> bool:
        t = other
        while t is not None:
            if t is self:
                return True
            t = t.parent
        return False

    def __repr__(self):
        return f"{type(self).__name__}(level={self.level}, tag={self.tag})"


def check_foreign_tracer(trace: Trace, x: Tracer):
    """``x`` is not ``trace``'s own tracer: it must belong to a live enclosing trace."""
    owner = x._trace
    if not owner.alive or not owner.is_ancestor_of(trace):
        raise UnexpectedTracerError(_leak_message(x))


def _leak_message(x: Tracer) -> str:
    return (
        f"Encountered an unexpected tracer {x.aval.str_short()} from a "
        f"{type(x._trace).__name__.replace('Trace', '').lower() or 'finished'} transformation that "
        "has already finished (or that belongs to an unrelated transformation). A traced value "
        "escaped its function, most often by being stored in a global, a closure cell, an object "
        "attribute or a list during a grad/vmap/jit call and used afterwards. Return values from "
        "the transformed function instead of storing them."
    )


class EvalTrace(Trace):
    """The root trace: evaluate each primitive now, with its NumPy ``impl``."""

    def process_primitive(self, primitive, args, params):
        if primitive.impl_takes_arrays:
            # Higher-order primitives (jit) receive Arrays as they are, so device buffers stay on
            # the device instead of being read back to NumPy.
            return primitive.impl(*args, **params)
        vals = []
        weak = True
        narrow = False
        for a in args:
            t = type(a)
            if t is Array:
                if a._buffer is not None and hooks.eager_on_devices is not None:
                    # A device-backed operand: a value over several devices is computed there.
                    out = hooks.eager_on_devices(primitive, args, params)
                    if out is not NotImplemented:
                        return out
                v = a._value
                if v is None:
                    v = a._numpy()
                vals.append(v)
                narrow = narrow or v.dtype.kind == "V"
                weak = weak and a.weak_type
            elif t is np.ndarray:
                if not _dt.x64_enabled:
                    # NOTE: [x64 mode]: a raw 64-bit NumPy operand (a transformation's primal) is
                    # computed at 32 bits, the dtype its abstract evaluation saw: a bit-level step
                    # (bitcast_convert_type under signbit, nextafter) depends on the width.
                    a = _dt.canonical_value(a)
                vals.append(a)
                narrow = narrow or a.dtype.kind == "V"
                weak = False
            elif t in _PYTHON_SCALARS:
                vals.append(a)
                if t is bool:  # (a Python bool is strong, as in JAX)
                    weak = False
            elif isinstance(a, Tracer):
                raise UnexpectedTracerError(_leak_message(a))
            else:
                vals.append(a)
                weak = False
        # NOTE: [one eager step]: the primitive's host step (its impl, or for narrow dtypes the
        # kernel's wrapper of it), the function the cached-program interpreter calls too.
        step = primitive.impl if not narrow else narrow_step(primitive)
        if step is None:
            raise NotImplementedError(f"primitive '{primitive.name}' has no impl rule")
        token = _FP_ERRORS.set(_FP_QUIET)
        try:
            out = step(*vals, **params)
        finally:
            _FP_ERRORS.reset(token)
        if not _dt.x64_enabled:
            # NOTE: [x64 mode]: NumPy computes Python scalars and 64-bit NumPy operands at 64 bits.
            out = _x32_out(out, primitive.multiple_results)
        if primitive.multiple_results:
            if any(type(a) is Array and a.weak_type or type(a) in _WEAK_SCALARS for a in args):
                # A weak operand (rare: the staged types decide, as under jit; sort keeps each
                # operand's weak type, as JAX's)
                avals = primitive.abstract_eval(*[get_aval(a) for a in args], **params)
                return [wrap_result(o, av.weak_type) for o, av in zip(out, avals)]
            return [wrap_result(o, False) for o in out]
        if primitive.weak_type_of is not None:
            weak = primitive.weak_type_of(params, args)
        elif weak:
            if args:
                rule = primitive.weak_type_rule
                weak = rule(params) if rule is not None else _same_dtype_as_first(out, args[0])
            else:
                weak = False  # (a primitive of no operands, iota: a strong result, as staged)
        if type(out) is np.ndarray:  # (wrap_result, inlined; an eager result is no trace's constant)
            return Array._from_owned_raw(out, weak)
        return wrap_result(out, weak)


_PYTHON_SCALARS = frozenset(python_scalar_types)
_WEAK_SCALARS = _PYTHON_SCALARS - {bool}


def _x32_out(out, multiple: bool):
    """Eager results in x32 mode (NOTE: [x64 mode]): 64-bit results cast to 32 bits."""
    if multiple:
        return [_dt.canonical_value(np.asarray(o)) if type(o) is not Array else o for o in out]
    return _dt.canonical_value(np.asarray(out)) if type(out) is not Array else out


# NOTE: [one eager step]
# Eager evaluation has two interpreters: ``EvalTrace`` (one primitive at a time, on Arrays) and
# the interpreter of cached eager programs (``kernel/numpy_plan.py``: a whole program laid out as
# slot-indexed steps over NumPy values). Both evaluate an equation through the same per-primitive
# function on host values, its *host step*: ``primitive.impl`` itself, or, when an operand or a
# result has a narrow dtype (NOTE: [narrow dtypes on the host]), ``narrow_step(primitive)`` --
# the one place that computes such dtypes compiled (int4, float8) or casts NumPy's float32 result
# back to bfloat16. Both run with NumPy's floating-point errors quiet (a NaN is a value, as in
# XLA), and a primitive without an impl raises the same error from either (the program
# interpreter leaves such programs to ``EvalTrace``). What differs is only bookkeeping: EvalTrace
# wraps each result (its weak type from ``weak_type_rule``), the program interpreter wraps only
# the program's outputs (their weak types from the program's avals).


def narrow_step(primitive):
    """The host step of ``primitive`` for operands of narrow dtypes (NOTE: [one eager step]):
    ``step(*values, **params)`` on NumPy values, returning NumPy values of the dtypes abstract
    evaluation gives; ``None`` when the primitive has no impl.

    >>> import ml_dtypes
    >>> p = Primitive("in_float32"); _ = p.def_impl(lambda x: x.astype(np.float32) * 2)
    >>> _ = p.def_abstract_eval(lambda x: x)
    >>> narrow_step(p)(np.ones(2, ml_dtypes.bfloat16)).dtype
    dtype(bfloat16)
    """
    if primitive.impl is None:
        return None
    return functools.partial(_narrow_impl, primitive)


def _narrow_impl(primitive, *vals, **params):
    if hooks.eager_compiled is not None and any(
        type(v) is np.ndarray and v.dtype in _dt.COMPILED_ON_HOST for v in vals
    ):
        # NOTE: [narrow dtypes on the host]: what NumPy cannot compute (int4, float8), XLA does.
        out = hooks.eager_compiled(primitive, vals, params)
        return [o._numpy() for o in out] if primitive.multiple_results else out._numpy()
    out = primitive.impl(*vals, **params)
    if primitive.abstract_eval is not None:
        out = _in_abstract_dtypes(primitive, vals, params, out)
    return out


def _in_abstract_dtypes(primitive, vals, params, out):
    """``out`` cast to the dtypes abstract evaluation gives. NumPy computes some operations on
    bfloat16 in float32 (matmul through ml_dtypes, SciPy's special functions) and returns that;
    the primitive's result type is bfloat16 (NOTE: [narrow dtypes on the host])."""
    avals = primitive.abstract_eval(*[get_aval(v) for v in vals], **params)
    if not primitive.multiple_results:
        return _cast(out, avals.dtype)
    return [_cast(o, a.dtype) for o, a in zip(out, avals)]


def _cast(x, dtype):
    x = np.asarray(x)
    return x if x.dtype == dtype else x.astype(dtype)


def _same_dtype_as_first(out, first) -> bool:
    first_dtype = first.dtype if isinstance(first, Array) else _dt.python_scalar_dtype(first)
    return np.asarray(out).dtype == first_dtype


def wrap_result(x, weak_type: bool = False) -> Any:
    """Wrap an eager NumPy result as a public ``Array`` (primitive impls return NumPy)."""
    if type(x) is Array or isinstance(x, Tracer):
        return x
    return Array._from_owned(np.asarray(x), weak_type)


class _TraceState(threading.local):
    def __init__(self):
        self.trace: Trace = EvalTrace(None)


_state = _TraceState()


def current_trace() -> Trace:
    return _state.trace


class set_current_trace:
    """Context manager making ``trace`` current; restores the previous trace on exit."""

    __slots__ = ("trace", "prev")

    def __init__(self, trace: Trace):
        self.trace = trace

    def __enter__(self):
        self.prev = _state.trace
        _state.trace = self.trace
        return self.trace

    def __exit__(self, *exc):
        _state.trace = self.prev


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
        raise Exception(  # (JAX's type: a plain Exception)
            f"Leaked trace {type(trace).__name__}. Leaked tracer(s):\n\n{tracers}\n"
            f"referred to by: {', '.join(holders) or 'unknown'}. A traced value escaped the "
            "transformation that created it (stored in a list, a global or an object): return it "
            "instead."
        )


class new_trace:
    """Create a trace of ``cls`` whose parent is the current trace, make it current, and mark it
    dead on exit (so its tracers can no longer be used; see NOTE: [current trace])."""

    __slots__ = ("cls", "args", "trace", "prev")

    def __init__(self, cls, *args):
        self.cls = cls
        self.args = args

    def __enter__(self):
        self.prev = _state.trace
        if _leaks["on"] and self.prev.parent is None:
            check_leaks()  # (the traces of earlier top-level transformations: their frames are gone)
        self.trace = self.cls(self.prev, *self.args)
        _state.trace = self.trace
        return self.trace

    def __exit__(self, *exc):
        _state.trace = self.prev
        self.trace.alive = False
        if _leaks["on"] and self.trace.checks_leaks:
            _leaks["pending"].append(weakref.ref(self.trace))


class Tracer:
    """A value being traced by ``_trace``. Arithmetic and methods are those of ``Array``."""

    __array_priority__ = 1000
    # (weakly referable, as JAX's tracers: TensorFlow Probability's bijector cache keys on them)
    __slots__ = ("_trace", "__weakref__")

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.aval.shape[0]))

    def __bool__(self):
        raise TracerBoolConversionError(self._concretization_message("bool()", "if/while/and/or"))

    def __float__(self):
        raise ConcretizationTypeError(self._concretization_message("float()", "float(x)"))

    def __int__(self):
        raise ConcretizationTypeError(self._concretization_message("int()", "int(x)"))

    def __complex__(self):
        raise ConcretizationTypeError(self._concretization_message("complex()", "complex(x)"))

    def __index__(self):
        raise TracerIntegerConversionError(
            self._concretization_message("__index__", "using it as an index or size")
        )

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(
            self._concretization_message("numpy.asarray()", "converting it to a NumPy array")
        )

    def item(self):
        raise ConcretizationTypeError(self._concretization_message("item()", "x.item()"))

    def tolist(self):
        raise ConcretizationTypeError(self._concretization_message("tolist()", "x.tolist()"))

    def _concretization_message(self, what: str, usage: str) -> str:
        origin = self._trace.describe_origin(self) if hasattr(self._trace, "describe_origin") else ""
        return (
            f"Abstract tracer value encountered where a concrete value is expected: {what} was "
            f"called on a traced array {self.aval.str_short()} ({usage}) inside "
            f"{self._trace.describe() if hasattr(self._trace, 'describe') else 'a transformation'}."
            f"{origin}\nA traced value has no concrete value while the function is being "
            "transformed. Fixes: mark the argument static (jit(f, static_argnums=...)) if it is a "
            "configuration value; use funcgrad.lax.cond / funcgrad.lax.while_loop for control flow "
            "on traced values; use funcgrad.numpy.where to select between values."
        )

    def __repr__(self):
        # Each transformation's tracer names itself as JAX 0.10's does (``JitTracer(~float64[])``,
        # ``JVPTracer(primal=..., tangent=...)``, ...): a ``print`` in a traced function shows what
        # JAX's documentation shows. Tracers of other traces keep the generic form.
        jax_form = getattr(self, "_jax_repr", None)
        if jax_form is not None:
            return jax_form()
        return f"Traced<{self.aval.str_short()}>with<{type(self._trace).__name__}>"

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.aval.str_short()}")


# Operators of Array and Tracer are installed by the surface (funcgrad.numpy) at import time:
# the kernel cannot import the surface (see design.md, dependency inversion).


class PrimalTracer(Tracer):
    """A tracer that carries its primal value (forward mode's and Taylor mode's tracers, which add
    a tangent or a series): its aval is the primal's, computed once on first use."""

    __slots__ = ("primal", "_aval")

    @property
    def aval(self):
        aval = self._aval
        if aval is None:
            aval = self._aval = get_aval(self.primal)
        return aval


# ----------------------------------------------------------------------------------------------
# Helpers used across transformations


def concrete_value(x):
    """The NumPy value of ``x`` if it is concrete, else ``None``."""
    if isinstance(x, Tracer):
        return None
    if isinstance(x, Array):
        return x._numpy()
    return np.asarray(x)


# ----------------------------------------------------------------------------------------------
# Source lines of staged equations (NOTE: [source info of re-interpreted equations])


class _SourceInfoConfig:
    # Linearize stages many small equations on the eager grad path; their source lines are only
    # read by the debugging tools (memory_report, check_finite), which switch this on. (Under a
    # staging trace linearize records them anyway: see ``PartialEvalTrace``.)
    in_linearize = False
    # See NOTE: [source info of re-interpreted equations].
    override: SourceInfo | None = None
    # How many ``backward_pass`` calls are running (check_finite labels equations "backward").
    backward_depth = 0
    # The ``named_scope`` names entered, outermost first ("outer/inner"; funcgrad/_utilities.py).
    name_stack = ""


source_info_config = _SourceInfoConfig()

# Frames from the funcgrad package (and from directories the other layers register) are library
# frames, skipped when recording the user's line.
_FUNCGRAD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def library_dir() -> str:
    """The directory of the ``funcgrad`` package (its own code, as opposed to the user's)."""
    return _FUNCGRAD_DIR


def user_source_info() -> SourceInfo | None:
    """The innermost frame outside the library: the user's line that created an equation (or the
    line of the equation being re-interpreted, see NOTE: [source info of re-interpreted
    equations])."""
    override = source_info_config.override
    if override is not None:
        return override
    library = (_FUNCGRAD_DIR, *hooks.library_dirs)
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(library) and "<frozen" not in filename:
            # The column of the call being made, as JAX reports it (the instruction's position).
            pos = next(itertools.islice(frame.f_code.co_positions(), frame.f_lasti // 2, None), None)
            column = pos[2] if pos is not None else None
            # (The qualified name, ``outer.<locals>.f``, as JAX names the function.)
            return SourceInfo(
                filename, frame.f_lineno, frame.f_code.co_qualname, source_info_config.name_stack, column
            )
        frame = frame.f_back
    return None


# ----------------------------------------------------------------------------------------------
# Interpreting a jaxpr


def bind_equation(primitive: Primitive, args, params):
    """The default of ``eval_jaxpr``'s ``bind``: bind on the current trace."""
    return primitive.bind(*args, **params)


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args, bind=bind_equation) -> list[Any]:
    """Interpret ``jaxpr``: ``bind(primitive, inputs, params)`` for each equation, in order.

    The default binds each primitive on the current trace, so evaluating a jaxpr under a
    transformation transforms it. Equations staged meanwhile inherit the source line of the
    equation being interpreted (NOTE: [source info of re-interpreted equations]). Other
    interpreters pass their own ``bind`` (the eager control-flow loops call the NumPy impls).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> cj = funcgrad.make_jaxpr(fnp.sin)(1.0)
    >>> float(eval_jaxpr(cj.jaxpr, cj.consts, 0.0)[0])
    0.0
    """
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"eval_jaxpr: expected {len(jaxpr.invars)} arguments, got {len(args)}")
    env: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    config = source_info_config
    prev = config.override
    try:
        for eqn in jaxpr.eqns:
            config.override = eqn.source_info or prev
            ins = [literal_value(a) if type(a) is Literal else env[a] for a in eqn.invars]
            outs = bind(eqn.primitive, ins, eqn.params)
            if eqn.primitive.multiple_results:
                env.update(zip(eqn.outvars, outs))
            else:
                env[eqn.outvars[0]] = outs
    finally:
        config.override = prev
    return [literal_value(a) if type(a) is Literal else env[a] for a in jaxpr.outvars]


def literal_value(a: Literal):
    """The value a literal stands for when a jaxpr is interpreted: weakly typed literals become
    weak 0-d Arrays, so interpreting a staged program gives the weak types that staging gave
    (``grad`` of a weak input has weak gradients, as in JAX)."""
    if a.aval.weak_type and type(a.val) not in _PYTHON_SCALARS:
        return Array._from_owned(np.asarray(a.val, a.aval.dtype), True)
    return a.val


def eval_closed(closed: ClosedJaxpr, *args, bind=bind_equation) -> list[Any]:
    """``eval_jaxpr`` of a closed jaxpr."""
    return eval_jaxpr(closed.jaxpr, closed.consts, *args, bind=bind)


# (After ``Tracer``'s definition: what ``is_array_like`` accepts.)
_ARRAY_LIKE_TYPES = (Tracer, Array, np.ndarray, np.generic, *python_scalar_types)
