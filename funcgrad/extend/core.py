"""``funcgrad.extend.core``: JAX's ``jax.extend.core`` -- primitives, jaxprs and traces for library authors.

Layer: surface. Imports the kernel (``core``, ``ir``, ``callkit``, ``batching``, ``partial_eval``,
``dtypes``), ``funcgrad.primitives`` (the catalog, for ``primitives``), the XLA bridge's emitter
(the lowering of a user's call primitive) and ``funcgrad.extend.linear_util``.

Everything here is funcgrad's own kernel object, not a copy (design.md: JAX's extension API is a
view of the same objects): ``Primitive`` is the kernel's ``Primitive`` -- ``def_impl`` (NumPy
values in, as every funcgrad impl), ``def_abstract_eval`` (``ShapedArray``\\s in and out),
``multiple_results``, ``bind`` -- and its rules set through ``funcgrad.interpreters`` are the
slots every transformation reads; ``Var``, ``Literal``, ``ClosedJaxpr`` are the IR's classes.

Two constructors take their arguments in JAX's order, which differs from the kernel's:
``Jaxpr(constvars, invars, outvars, eqns, effects=..., debug_info=...)`` and ``JaxprEqn(invars,
outvars, primitive, params, effects, source_info, ctx)``. They build the kernel's objects
(``isinstance`` holds both ways), whose fields have the same names as JAX's; effects and debug
information are not part of funcgrad's IR (a primitive states side effects in its traits).

>>> import numpy as np, funcgrad
>>> p = Primitive("double")
>>> _ = p.def_impl(lambda x: 2 * x)
>>> _ = p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
>>> print(funcgrad.make_jaxpr(p.bind)(np.ones(3)))
{ lambda ; a:f64[3]. let b:f64[3] = double a in (b,) }
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import sys
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from funcgrad import _effects
from funcgrad import primitives as _catalog
from funcgrad.core import AbstractValue
from funcgrad.extend import linear_util as lu
from funcgrad.kernel import batching as _batching
from funcgrad.kernel import callkit as _callkit
from funcgrad.kernel import core as _core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import ir as _ir
from funcgrad.kernel import partial_eval as _pe
from funcgrad.kernel.core import (
    InconclusiveDimensionOperation,
    JaxprTypeError,
    Trace,
    Tracer,
    get_aval,
)
from funcgrad.kernel.ir import ClosedJaxpr, Literal, ShapedArray, Var, jaxprs_in_params
from funcgrad.xla_bridge import emitter as _emitter

__all__ = [
    "AbstractToken",
    "CallPrimitive",
    "ClosedJaxpr",
    "DebugInfo",
    "DropVar",
    "Effect",
    "Effects",
    "InconclusiveDimensionOperation",
    "Jaxpr",
    "JaxprEqn",
    "JaxprTypeError",
    "Literal",
    "Primitive",
    "Token",
    "TraceTag",
    "Var",
    "array_types",
    "call_impl",
    "check_jaxpr",
    "concrete_or_error",
    "find_top_trace",
    "gensym",
    "get_opaque_trace_state",
    "jaxpr_as_fun",
    "jaxprs_in_params",
    "mapped_aval",
    "new_jaxpr_eqn",
    "no_effects",
    "nonempty_axis_env_DO_NOT_USE",
    "primal_dtype_to_tangent_dtype",
    "primitives",
    "set_current_trace",
    "subjaxprs",
    "take_current_trace",
    "unmapped_aval",
    "unsafe_am_i_under_a_jit_DO_NOT_USE",
    "unsafe_am_i_under_a_vmap_DO_NOT_USE",
    "unsafe_get_axis_names_DO_NOT_USE",
    "valid_jaxtype",
]

DebugInfo = lu.DebugInfo

# The Python types whose values are arrays (JAX's ``abstract_arrays.array_types``): NumPy's
# arrays and scalars, funcgrad's Array and the Python numbers.
array_types: set[type] = {
    np.ndarray,
    _core.Array,
    *_dt.python_scalar_types,
    *(t for t in set(np.sctypeDict.values()) if issubclass(t, np.generic)),
}


# ----------------------------------------------------------------------------------------------
# Effects (funcgrad's IR has none: side effects are a primitive's trait, NOTE: [primitive traits])


Effect = _effects.Effect  # (JAX's base class of effect types: funcgrad/_effects.py)


Effects = set
no_effects: frozenset = frozenset()


class AbstractToken(AbstractValue):
    """The abstract value of an ordering token (JAX's ``AbstractToken``): funcgrad orders side
    effects by data dependence and has no token values, so nothing produces one."""

    shape = ()
    dtype = np.dtype(bool)

    def str_short(self, short_dtypes=False, mesh_axis_types=False) -> str:
        return "Tok"

    def __repr__(self):
        return "AbstractToken()"


class Token:
    """A concrete ordering token wrapping a buffer (JAX's ``Token``)."""

    def __init__(self, buf):
        self._buf = buf

    def block_until_ready(self):
        block = getattr(self._buf, "block_until_ready", None)
        if block is not None:
            block()
        return self


# ----------------------------------------------------------------------------------------------
# The IR, with JAX's constructor signatures


class _KernelView(type):
    # ``isinstance(x, Jaxpr)`` is ``isinstance(x, kernel Jaxpr)``: the class only adapts the
    # constructor's argument order.
    def __instancecheck__(cls, obj):
        return isinstance(obj, cls._kernel_type)

    def __subclasscheck__(cls, sub):
        return isinstance(sub, type) and issubclass(sub, cls._kernel_type)


class Jaxpr(metaclass=_KernelView):
    """``Jaxpr(constvars, invars, outvars, eqns, effects=no_effects, debug_info=None)`` in JAX's
    argument order; builds (and ``isinstance`` recognises) the kernel's ``Jaxpr``.

    >>> a = Var(ShapedArray((), "float64"))
    >>> j = Jaxpr([], [a], [a], [])
    >>> isinstance(j, Jaxpr), j.outvars == [a], type(j).__module__
    (True, True, 'funcgrad.kernel.ir')
    """

    _kernel_type = _ir.Jaxpr

    def __new__(cls, constvars, invars, outvars, eqns, effects=no_effects, debug_info=None, is_high=False):
        del effects, debug_info, is_high  # (not part of funcgrad's IR; see the module docstring)
        return _ir.Jaxpr(constvars, invars, eqns, outvars)


class JaxprEqn(metaclass=_KernelView):
    """``JaxprEqn(invars, outvars, primitive, params, effects, source_info, ctx)`` in JAX's order;
    builds the kernel's equation (fields ``primitive``, ``invars``, ``params``, ``outvars``,
    ``source_info``, by name as in JAX)."""

    _kernel_type = _ir.JaxprEqn

    def __new__(cls, invars, outvars, primitive, params, effects=no_effects, source_info=None, ctx=None):
        del effects, ctx
        return _ir.JaxprEqn(primitive, list(invars), dict(params), list(outvars), _source_info(source_info))


class _PrimitiveView(type):
    # ``isinstance(p, Primitive)`` holds for every kernel primitive; a library's subclass of
    # ``Primitive`` (kfac-jax's tags) recognises its own instances only.
    def __instancecheck__(cls, obj):
        return isinstance(obj, _core.Primitive) if cls is Primitive else type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub):
        base = _core.Primitive if cls is Primitive else cls
        return isinstance(sub, type) and type.__subclasscheck__(base, sub)


class Primitive(_core.Primitive, metaclass=_PrimitiveView):
    """A library's primitive, JAX's ``jax.extend.core.Primitive``: the kernel's ``Primitive``
    (``isinstance`` recognises every primitive, the catalog's too), whose eager results are typed
    as JAX's ``bind`` leaves its ``impl``'s result: a NumPy value computed from Python scalars is
    strong (``impl_result_typed``; the catalog's primitives type theirs as staged, weak there).

    >>> p = Primitive("madd")
    >>> _ = p.def_impl(lambda x, y: np.add(np.multiply(x, y), 1.0))
    >>> p.bind(2.0, 3.0).weak_type, isinstance(_catalog.elementwise.sin_p, Primitive)
    (False, True)
    >>> class Tag(Primitive): pass
    >>> isinstance(Tag("t"), Tag), isinstance(p, Tag), issubclass(Tag, Primitive)
    (True, False, True)
    """

    impl_result_typed = True


def _source_info(info):
    # A funcgrad ``SourceInfo`` passes; anything else (JAX's) is dropped.
    return info if isinstance(info, _ir.SourceInfo) else None


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=no_effects, source_info=None, ctx=None):
    """A jaxpr equation (JAX's argument order). Without ``source_info`` it records the caller's
    line, as a staged equation does.

    >>> from funcgrad.primitives.elementwise import sin_p
    >>> x, y = Var(ShapedArray((), "float64")), Var(ShapedArray((), "float64"))
    >>> print(Jaxpr([], [x], [y], [new_jaxpr_eqn([x], [y], sin_p, {}, no_effects)]))
    { lambda ; a:f64[]. let b:f64[] = sin a in (b,) }
    """
    info = _source_info(source_info) or _core.user_source_info()
    return JaxprEqn(invars, outvars, primitive, params, effects, info, ctx)


class DropVar(Var):
    """An output variable nothing reads (printed ``_``).

    >>> DropVar(ShapedArray((), "float32"))
    _
    """

    __slots__ = ()

    def __repr__(self):
        return "_"


def gensym(suffix: str = "") -> Callable[[ShapedArray], Var]:
    """A function making fresh variables of a given aval (funcgrad's variables are named when
    printed, so ``suffix`` is not needed).

    >>> new = gensym(); a, b = new(ShapedArray((), "float64")), new(ShapedArray((), "float64"))
    >>> a is not b, a.aval.str_short()
    (True, 'f64[]')
    """
    del suffix
    return Var


def subjaxprs(jaxpr) -> Iterator:
    """The jaxprs in the parameters of ``jaxpr``'s equations (not recursively).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> j = funcgrad.make_jaxpr(lambda x: funcgrad.jit(fnp.sin)(x))(1.0).jaxpr
    >>> len(list(subjaxprs(j)))
    1
    """
    for eqn in jaxpr.eqns:
        yield from jaxprs_in_params(eqn.params)


def jaxpr_as_fun(closed_jaxpr: ClosedJaxpr, *args):
    """Evaluate ``closed_jaxpr`` on ``args`` (on the current trace), returning the list of its
    outputs. Curried as in JAX: ``jaxpr_as_fun(closed)`` is the function itself.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> f = jaxpr_as_fun(funcgrad.make_jaxpr(fnp.cos)(0.0))
    >>> [float(v) for v in f(0.0)], float(funcgrad.grad(lambda x: f(x)[0])(0.5))
    ([1.0], -0.479425538604203)
    """
    if not args:
        return lambda *xs: _core.eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *xs)
    return _core.eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)


def check_jaxpr(jaxpr) -> None:
    """Check that ``jaxpr`` is well formed: every variable bound once before it is read, every
    equation's output avals those of its primitive's abstract evaluation. Raises
    ``JaxprTypeError`` naming the first problem; returns ``None``.

    >>> x = Var(ShapedArray((), "float64"))
    >>> check_jaxpr(Jaxpr([], [], [x], []))
    Traceback (most recent call last):
    ...
    funcgrad.kernel.errors.JaxprTypeError: jaxpr typecheck: variable Var(id=...):float64[] used before it ...
    """
    if isinstance(jaxpr, ClosedJaxpr):
        jaxpr = jaxpr.jaxpr
    try:
        _ir.typecheck_jaxpr(jaxpr)
    except TypeError as e:
        if isinstance(e, JaxprTypeError):
            raise
        raise JaxprTypeError(str(e)) from None


# ----------------------------------------------------------------------------------------------
# Abstract values


def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
    """``aval`` with its mapped axis ``axis`` (of length ``size``) removed; ``None``: unchanged.

    >>> mapped_aval(3, 1, ShapedArray((2, 3, 4), "float32"))
    ShapedArray(float32[2,4])
    """
    if axis is None:
        return aval
    shape = tuple(aval.shape)
    if not -len(shape) <= axis < len(shape) or shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} does not have size {size}")
    axis %= len(shape)
    return aval.update(shape=shape[:axis] + shape[axis + 1 :])


def unmapped_aval(size: int, axis: int | None, aval: ShapedArray, explicit_mesh_axis=None) -> ShapedArray:
    """``aval`` with an axis of length ``size`` inserted at ``axis``; ``None``: unchanged.

    >>> unmapped_aval(3, 0, ShapedArray((2,), "float32"))
    ShapedArray(float32[3,2])
    """
    del explicit_mesh_axis
    if axis is None:
        return aval
    shape = list(aval.shape)
    shape.insert(axis if axis >= 0 else len(shape) + axis + 1, size)
    return aval.update(shape=tuple(shape))


def primal_dtype_to_tangent_dtype(primal_dtype):
    """The tangent dtype of a primal dtype: itself when inexact, else ``float0``.

    >>> primal_dtype_to_tangent_dtype(np.float32), primal_dtype_to_tangent_dtype(np.int32)
    (dtype('float32'), dtype([('float0', 'V')]))
    """
    return _dt.tangent_dtype(primal_dtype)


def valid_jaxtype(x) -> bool:
    """Whether ``x`` is a value a primitive accepts (an array, a scalar, a tracer).

    >>> valid_jaxtype(1.0), valid_jaxtype(np.ones(2)), valid_jaxtype("a")
    (True, True, False)
    """
    try:
        aval = get_aval(x)
    except TypeError:
        return False
    return aval.dtype.kind not in "OSU"


def concrete_or_error(force: Callable | None, val: Any, context: str = ""):
    """``force(val)`` for a concrete ``val``; for a traced one, a ``ConcretizationTypeError`` that
    says where a concrete value was needed (``context``).

    >>> concrete_or_error(int, 3.0)
    3
    >>> import funcgrad
    >>> funcgrad.jit(lambda x: concrete_or_error(int, x, "the loop count"))(3.0)
    Traceback (most recent call last):
    ...
    funcgrad.kernel.errors.ConcretizationTypeError: the loop count: a concrete value is required, ...
    """
    force = force or (lambda x: x)
    if isinstance(val, Tracer):
        raise _core.ConcretizationTypeError(
            f"{context or 'concrete_or_error'}: a concrete value is required, but got the traced "
            f"value {val.aval.str_short()} inside {_describe(val)}. Pass it as a static argument "
            "(jit(f, static_argnums=...)) or compute it from concrete values."
        )
    return force(val)


def _describe(tracer) -> str:
    describe = getattr(tracer._trace, "describe", None)
    return describe() if describe is not None else "a transformation"


# ----------------------------------------------------------------------------------------------
# Traces


class TraceTag:
    """A tag identifying a transformation's tracers (JAX's: every tag compares equal, so a cache
    keyed on one never misses because of it)."""

    def __hash__(self):
        return hash(TraceTag)

    def __eq__(self, other):
        return isinstance(other, TraceTag)


def find_top_trace(xs=()) -> Trace:
    """The current trace (JAX 0.10: dispatch goes by the current trace, not the arguments).

    >>> type(find_top_trace(())).__name__
    'EvalTrace'
    """
    del xs
    return _core.current_trace()


class _OpaqueTraceState:
    """Which trace is current, comparable with ``==`` (flax checks it did not change)."""

    __slots__ = ("_ref",)

    def __init__(self, trace):
        self._ref = weakref.ref(trace)

    def __eq__(self, other):
        return (
            isinstance(other, _OpaqueTraceState) and self._ref() is not None and self._ref() is other._ref()
        )

    def __hash__(self):
        return id(self._ref())

    def __repr__(self):
        return f"OpaqueTraceState({self._ref()!r})"


def get_opaque_trace_state(convention=None) -> _OpaqueTraceState:
    """An opaque token of the current trace: equal to another taken under the same trace.

    >>> import funcgrad
    >>> outer = get_opaque_trace_state()
    >>> outer == get_opaque_trace_state(), funcgrad.jit(lambda x: (get_opaque_trace_state() == outer) + x)(0)
    (True, Array(0, dtype=int64, weak_type=True))
    """
    del convention
    return _OpaqueTraceState(_core.current_trace())


def set_current_trace(trace: Trace, check_leaks: bool = False):
    """Context manager: make ``trace`` current inside the block.

    >>> t = find_top_trace()
    >>> with set_current_trace(t) as cur:
    ...     cur is t
    True
    """
    del check_leaks
    return _core.set_current_trace(trace)


class _TakenTrace(Trace):
    """The current trace while another is taken (``take_current_trace``): binding on it is an
    error, since the caller holds the real one."""

    def process_primitive(self, primitive, args, params):
        raise RuntimeError(
            f"'{primitive}' was bound while the current trace is taken (inside "
            "take_current_trace()): bind it under `with set_current_trace(trace):` for the trace you took"
        )


@contextlib.contextmanager
def take_current_trace():
    """Context manager yielding the current trace; inside, no trace is current until one is set
    with ``set_current_trace``.

    >>> with take_current_trace() as t:
    ...     with set_current_trace(t):
    ...         float(Primitive.bind(_catalog.elementwise.neg_p, 1.0))
    -1.0
    """
    prev = _core.current_trace()
    with _core.set_current_trace(_TakenTrace(prev)):
        yield prev


def _trace_stack() -> list[Trace]:
    stack, t = [], _core.current_trace()
    while t is not None:
        stack.append(t)
        t = t.parent
    return stack


def unsafe_am_i_under_a_jit() -> bool:
    """Whether a staging trace (``jit``, ``make_jaxpr``, a control-flow body) is active."""
    return any(type(t) is _pe.StagingTrace for t in _trace_stack())


def unsafe_am_i_under_a_vmap() -> bool:
    """Whether a ``vmap`` is active."""
    return any(isinstance(t, _batching.BatchTrace) for t in _trace_stack())


def unsafe_get_axis_names() -> list:
    """The named axes in scope (``vmap(axis_name=)``, ``shard_map``), outermost first."""
    return [name for name, _ in _batching.axis_env()]


def nonempty_axis_env() -> bool:
    """Whether any named axis is in scope."""
    return bool(_batching.axis_env())


unsafe_am_i_under_a_jit_DO_NOT_USE = unsafe_am_i_under_a_jit
unsafe_am_i_under_a_vmap_DO_NOT_USE = unsafe_am_i_under_a_vmap
unsafe_get_axis_names_DO_NOT_USE = unsafe_get_axis_names
nonempty_axis_env_DO_NOT_USE = nonempty_axis_env


# ----------------------------------------------------------------------------------------------
# Call primitives


def call_impl(f: lu.WrappedFun, *args, **params):
    """Evaluate a call primitive by calling its function (``params`` parameterise the call).

    >>> call_impl(lu.wrap_init(lambda x: [x + 1]), 1)
    [2]
    """
    del params
    return f.call_wrapped(*args)


class CallPrimitive(_callkit.CallPrimitive):
    """A primitive that calls a function: ``p.bind(fun, *args, **params)`` (or JAX 0.10's
    ``p.bind(*args, subfuns=(fun,), **params)``) with ``fun`` a ``linear_util.WrappedFun`` (or a
    callable) returning a list of arrays. The function is traced
    to a jaxpr over the arguments' avals and the call is bound as funcgrad's call primitives are,
    so it has every rule (JVP, transpose, batching, partial evaluation, Taylor) and a lowering.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> my_call = CallPrimitive("my_call")
    >>> f = lambda x: my_call.bind(lu.wrap_init(lambda y: [fnp.sin(y)]), x)[0]
    >>> round(float(funcgrad.jit(funcgrad.grad(f))(0.5)), 6) == round(float(fnp.cos(0.5)), 6)
    True
    """

    def __init__(self, name: str):
        super().__init__(name)
        # Into the emitter's table directly: ``register`` would record this module as the
        # primitive's catalog family (``rule_modules``), and a user's primitive has none.
        _emitter.lowering_rules[self] = _lower_call

    def bind(self, *args, **params):
        if "jaxpr" in params:  # a re-bind by a rule of the kit (jvp, batch, ...)
            return super().bind(*args, **params)
        if "subfuns" in params:  # (JAX 0.10's form: ``call_p.bind(*args, subfuns=(fun,))``)
            params = dict(params)
            (fun,) = params.pop("subfuns")
        else:
            fun, *args = args
        call = fun.call_wrapped if hasattr(fun, "call_wrapped") else fun
        closed = _pe.trace_to_jaxpr(lambda *xs: list(call(*xs)), [get_aval(a) for a in args])
        closed, lifted = _pe.close_over_tracers(closed)
        return super().bind(*lifted, *args, jaxpr=closed, **params)


def _lower_call(ctx, *args, jaxpr, **params):
    return _emitter.lower_closed(ctx.fb, jaxpr, args)


# ----------------------------------------------------------------------------------------------
# ``primitives``: the catalog's primitives under JAX's names (``sin_p``, ``add_p``, ...)


def _primitives_module() -> types.ModuleType:
    module = types.ModuleType(
        f"{__name__}.primitives",
        "funcgrad's primitive catalog under JAX's names: ``<name>_p`` for each primitive "
        "(``jax.extend.core.primitives``).",
    )
    for p in _catalog.all_primitives():
        setattr(module, f"{p.name.replace('-', '_')}_p", p)  # JAX's names: scatter-add is scatter_add_p
    module.add_jaxvals_p = _catalog.elementwise.add_any_p
    # JAX's generic call primitives: funcgrad stages calls as jit_p, never these, but libraries
    # key tables by them (numpyro's provenance rules); they are call primitives with every rule
    module.call_p, module.closed_call_p = CallPrimitive("call"), CallPrimitive("closed_call")
    module.__all__ = sorted(n for n in vars(module) if n.endswith("_p"))
    module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None)  # (importable by name)
    return module


primitives = sys.modules.setdefault(f"{__name__}.primitives", _primitives_module())
# A package, as JAX's ``jax.extend.core`` is, so that ``import jax.extend.core.primitives`` (or
# ``funcgrad.extend.core.primitives``) finds the submodule above.
__path__: list[str] = []


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
