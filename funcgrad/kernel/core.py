"""Primitives and the trace stack: Primitive, Trace, EvalTrace, the current trace.

Layer: kernel (bottom). Imports numpy, the kernel modules ``traits``, ``dtypes``, ``array`` and
``hooks``, and the modules split out of it, whose names it re-exports (each stays importable from
here):

- ``errors``: the tracer errors and JAX's error base classes;
- ``values``: ``Tracer``, ``get_aval`` and the other helpers on a primitive's operands;
- ``eager_step``: the host step of an eager primitive (NOTE: [one eager step]);
- ``leaks``: the leak checker (NOTE: [leak checking]);
- ``source_info``: the user's source line of a staged equation;
- ``jaxpr_eval``: interpreting a jaxpr (``eval_jaxpr``).

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
import itertools
import threading
import weakref

import numpy as np

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.dtypes import python_scalar_types  # noqa: F401 - re-exported
from funcgrad.kernel.eager_step import (  # noqa: F401 - re-exported
    _FP_ERRORS,
    _FP_QUIET,
    _cast,
    _in_abstract_dtypes,
    _narrow_impl,
    _same_dtype_as_first,
    _x32_out,
    compiles_half_floats,
    half_operand,
    narrow_step,
)
from funcgrad.kernel.errors import (  # noqa: F401 - re-exported
    ConcretizationTypeError,
    InconclusiveDimensionOperation,
    JAXIndexError,
    JaxprTypeError,
    JAXTypeError,
    KeyReuseError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from funcgrad.kernel.extended import EArray
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import (  # noqa: F401 - re-exported
    AbstractToken,
    ClosedJaxpr,
    Jaxpr,
    Literal,
    ShapedArray,
    SourceInfo,
    Var,
    abstract_token,
)
from funcgrad.kernel.jaxpr_eval import bind_equation, eval_closed, eval_jaxpr, literal_value  # noqa: F401
from funcgrad.kernel.leaks import _leaks, check_leaks, check_leaks_now, jax_tracer_name, set_leak_checking  # noqa: F401
from funcgrad.kernel.source_info import (  # noqa: F401 - re-exported
    _FUNCGRAD_DIR,
    _SourceInfoConfig,
    library_dir,
    source_info_config,
    user_source_info,
)
from funcgrad.kernel.traits import PrimitiveTraits
from funcgrad.kernel.values import (  # noqa: F401 - re-exported
    _ARRAY_LIKE_TYPES,
    _PYTHON_SCALARS,
    _WEAK_SCALARS,
    PrimalTracer,
    Token,
    Tracer,
    _python_scalar_aval,
    concrete_value,
    concrete_value_or_none,
    dtype_of,
    get_aval,
    is_array_like,
    wrap_result,
)

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
    # A library's primitive (``funcgrad.extend.core.Primitive``): JAX's ``bind`` returns its
    # ``impl``'s result as it is, so an eager result of Python-scalar operands is weak only where
    # the impl returned a Python scalar (a NumPy value is strong). The catalog's are typed as staged.
    impl_result_typed = False
    # Its parameters say which memory its results are in (``device_put`` to a memory space), so
    # the staging trace does not type them by its operands' (NOTE: [memory space in types]).
    memory_space_from_params = False

    def __init__(self, name: str, *, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results or type(self).multiple_results  # (a subclass's)
        # A subclass may define ``impl`` and ``abstract_eval`` as methods, as JAX's Primitive
        # subclasses do (kfac-jax's tags); its ``abstract_eval`` follows JAX's effectful
        # convention, ``(avals, effects)``.
        self.impl = getattr(self, "impl", None)  # (the subclass's bound method, or None)
        self.abstract_eval = None
        if hasattr(type(self), "abstract_eval"):
            self.def_effectful_abstract_eval(type(self).abstract_eval.__get__(self))
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
        # ``rule(params) -> bool``, for an impl that takes Arrays: whether it computes the same on
        # Arrays wrapping fresh host values, so a cached eager program holding the equation may
        # still run in the NumPy interpreter (NOTE: [compiled calls in cached programs]).
        self.host_values_ok = None
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

    def def_effectful_abstract_eval(self, f):
        """JAX's form of the abstract evaluation rule: ``f(*avals, **params) -> (avals, effects)``.
        funcgrad's IR carries no effects: a primitive whose rule names some is one with side
        effects (dead-code elimination keeps its equations; NOTE: [primitive traits])."""

        def abstract_eval(*avals, **params):
            out, effects = f(*avals, **params)
            if effects and not self.traits.has_side_effects:
                self.def_traits(has_side_effects=True)
            return out

        self.abstract_eval = abstract_eval
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


def check_live(x: Tracer) -> None:
    """Refuse a tracer whose transformation has finished (a leaked tracer; NOTE: [current trace]).

    JAX's NumPy functions are jitted, so each of them raises ``UnexpectedTracerError`` for one, even
    where the result would be the operand unchanged (``x.ravel()`` of a vector, ``x.astype(x.dtype)``,
    ``jnp.sum(x, axis=())``): the public functions and a tracer's methods call this first, so such
    a shortcut never hands a leaked tracer back as if it were a value.
    """
    if not x._trace.alive:
        raise UnexpectedTracerError(_leak_message(x))


def _leak_message(x: Tracer) -> str:
    aval = x.aval  # (JAX's words first: code written for JAX matches them; the dtype's full name)
    return (
        "Encountered an unexpected tracer. A function transformed by JAX had a side effect, allowing "
        f"for a reference to an intermediate value with type {np.dtype(aval.dtype).name}"
        f"[{','.join(map(str, aval.shape))}] wrapped in a {jax_tracer_name(x)} to escape the scope of "
        "the transformation.\nJAX transformations require that functions explicitly return their "
        f"outputs, and disallow saving intermediate values to global state.{_made_on_line(x)}\n"
        "To catch the leak earlier, try setting the environment variable JAX_CHECK_TRACER_LEAKS or "
        "using the `jax.checking_leaks` context manager.\n"
        f"It is a tracer {x.aval.str_short()} from a "
        f"{type(x._trace).__name__.replace('Trace', '').lower() or 'finished'} transformation that "
        "has already finished (or that belongs to an unrelated transformation). A traced value "
        "escaped its function, most often by being stored in a global, a closure cell, an object "
        "attribute or a list during a grad/vmap/jit call and used afterwards. Return values from "
        "the transformed function instead of storing them.\n"
        "See https://docs.jax.dev/en/latest/errors.html#jax.errors.UnexpectedTracerError"
    )


def _made_on_line(x: Tracer) -> str:
    """JAX's lines naming where a leaked staged value was made (the user's line of the equation
    that made it, the one frame funcgrad keeps of it), or nothing when it is not known."""
    builder = getattr(x._trace, "builder", None)
    var = getattr(x, "_var", None)
    if builder is None or var is None:
        return ""
    info = next((e.source_info for e in reversed(builder.eqns) if var in e.outvars), None)
    if info is None:
        return ""
    divider = "\n" + "-" * 30 + "\n"
    return (
        f"{divider}The leaked intermediate value was created on line {info.where()}. {divider}"
        "When the value was created, the final 5 stack frames (most recent last) excluding "
        f"JAX-internal frames were:{divider}{info.where()}{divider}"
    )


def _compiled_step(primitive, args, params):
    """``primitive`` compiled alone (``hooks.eager_compiled``) when every operand is a non-empty
    floating Array or NumPy array and its traits' ``compiled_eagerly`` says so (NOTE: [eager
    products are XLA's]); None otherwise."""
    for a in args:
        t = type(a)
        if t is not Array and t is not np.ndarray:
            return None
        dtype = a.dtype
        if (dtype.kind not in "fc" and dtype not in _dt.HALF_FLOATS) or 0 in a.shape:
            return None
        if t is np.ndarray and not _dt.x64_enabled and dtype in _dt.TO_32:
            return None  # (NOTE: [x64 mode]: computed at 32 bits by the host step below)
    if not primitive.traits.compiled_eagerly(args, params):
        return None
    return hooks.eager_compiled(primitive, args, params)


class EvalTrace(Trace):
    """The root trace: evaluate each primitive now, with its NumPy ``impl``."""

    def process_primitive(self, primitive, args, params):
        if primitive.impl_takes_arrays:
            # Higher-order primitives (jit) receive Arrays as they are, so device buffers stay on
            # the device instead of being read back to NumPy.
            return primitive.impl(*args, **params)
        if hooks.context_mesh is not None and hooks.context_mesh() is not None:
            # NOTE: [placement in context]: under set_mesh the operation runs on the mesh.
            out = hooks.eager_on_devices(primitive, args, params)
            if out is not NotImplemented:
                return out
        if primitive.traits.compiled_eagerly is not None and hooks.eager_compiled is not None:
            out = _compiled_step(primitive, args, params)
            if out is not None:
                return out
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
            elif t is EArray and hooks.eager_compiled is not None:
                # An operand of a library's extended dtype: compiled alone on its representation,
                # as JAX's apply_primitive (NOTE: [extended dtypes])
                return hooks.eager_compiled(primitive, args, params)
            else:
                vals.append(a)
                weak = False
        # NOTE: [one eager step]: the primitive's host step (its impl, or for narrow dtypes -- and
        # half floats where its traits say so -- the kernel's wrapper of it), the function the
        # cached-program interpreter calls too.
        if not narrow and primitive.traits.half_floats_compiled:
            narrow = half_operand(vals)
        step = primitive.impl if not narrow else narrow_step(primitive)
        if step is None:
            raise NotImplementedError(
                f"Evaluation rule for '{primitive.name}' not implemented"
            )  # (JAX's words)
        token = _FP_ERRORS.set(_FP_QUIET)
        try:
            out = step(*vals, **params)
        finally:
            _FP_ERRORS.reset(token)
        numpy_out = primitive.impl_result_typed and isinstance(out, np.ndarray | np.generic)
        if not _dt.x64_enabled:
            # NOTE: [x64 mode]: NumPy computes Python scalars and 64-bit NumPy operands at 64 bits.
            # A 64-bit Array (made under enable_x64) keeps its width, as JAX's lax operations keep it.
            wide = [a.dtype for a in args if type(a) is Array and a.dtype in _dt.TO_32]
            if _dt.explicit_x64_allowed:  # (and the 64-bit dtypes its params ask for: convert's)
                wide += [v for v in params.values() if isinstance(v, np.dtype) and v in _dt.TO_32]
            out = _x32_out(out, primitive.multiple_results, wide)
        if primitive.multiple_results:
            if any(type(a) is Array and a.weak_type or type(a) in _WEAK_SCALARS for a in args):
                # A weak operand (rare: the staged types decide, as under jit; sort keeps each
                # operand's weak type, as JAX's)
                avals = primitive.abstract_eval(*[get_aval(a) for a in args], **params)
                return [wrap_result(o, av.weak_type) for o, av in zip(out, avals)]
            return [wrap_result(o, False) for o in out]
        if primitive.weak_type_of is not None:
            weak = primitive.weak_type_of(params, args)
        elif numpy_out and weak and all(type(a) in _PYTHON_SCALARS for a in args):
            weak = False  # (impl_result_typed: its impl saw the Python scalars JAX's impl sees)
        elif weak:
            if args:
                rule = primitive.weak_type_rule
                weak = rule(params) if rule is not None else _same_dtype_as_first(out, args[0])
            else:
                weak = False  # (a primitive of no operands, iota: a strong result, as staged)
        if type(out) is np.ndarray:  # (wrap_result, inlined; an eager result is no trace's constant)
            return Array._from_owned_raw(out, weak)
        return wrap_result(out, weak)


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
        if _leaks["on"]:
            # (the line a leaked tracer's transformation was entered on, for the checker's message;
            # looked up only while it is on)
            self.trace.leak_source_info = user_source_info()
        _state.trace = self.trace
        return self.trace

    def __exit__(self, *exc):
        _state.trace = self.prev
        self.trace.alive = False
        if _leaks["on"] and self.trace.checks_leaks:
            _leaks["pending"].append(weakref.ref(self.trace))
