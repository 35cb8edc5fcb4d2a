"""Surface functions recorded from cached sub-programs while eager ``grad`` records.

Layer: kernel. Imports ``core``, ``ir``, ``jaxpr_keys``, ``partial_eval``, ``numpy_plan`` and ``recording``.

# NOTE: [surface templates]
# A ``funcgrad.numpy`` function such as ``sum(x, axis=1, keepdims=True)`` spends most of its
# time in Python deciding *which* equations to bind: promotion, broadcasting, axis arithmetic.
# Those decisions depend only on its array arguments' avals and on the values of its other
# arguments (axes, Python scalars, dtypes) -- never on array values, which is what lets ``jit``
# trace it. While eager ``grad`` records (NOTE: [eager grad program cache]), a templated function
# therefore looks up the sub-program it staged before for the same avals and static values and
# appends that program's equations to the recording directly (``RecordingTrace.replay``), as
# ``jit(inline=True)`` does for ``jax.numpy`` functions.
#
# Which functions are templated is a rule, not a choice per function: every public function (a
# module-level function whose name has no leading underscore) defined in a surface module made of
# compositions of primitives, which says so once, in its last line:
# ``template_public_functions(globals())`` -- funcgrad.numpy's ufuncs, transcendental,
# reductions, contractions, manipulation, indexing and lookup modules, funcgrad.nn and
# funcgrad.scipy.special's elementary functions. A function added there is covered without a
# mark; one that needs array values (``nonzero``), returns no arrays (``einsum_path``) or takes a
# list (``concatenate``) is staged at most once per key and then runs itself, as below.
# (tests/kernel/test_surface_templates.py checks the rule against those modules.)
#
# The key holds, per argument: the aval of a recorded tracer or of a constant array (whose value
# reaches the equations as an argument, as it would anyway); the type and exact value of a
# Python or NumPy scalar (``1``, ``1.0``, ``True``, ``-0.0`` and ``0.0`` all differ); the value
# of ``None``, a string, a dtype, a slice of ints, ``...``, or a tuple of those (an index). Any
# other argument -- a list, a foreign tracer, an object -- and any call outside a recording runs
# the function itself. So does a key whose staging failed or warned (a value the function
# needed, a bad argument): the function's own error or warning then comes from the call itself,
# on every call. Only the default promotion rules are templated (``enabled``): ``"warn"`` warns
# on every call. A function the library jits (``jitted_eagerly``) is staged, in the outermost
# recording, as the one jit equation its eager call binds (NOTE: [eager library functions as one
# program]), under its own key; in a nested recording, inline.
"""

from __future__ import annotations

import functools
import threading
import types
import warnings
from collections.abc import Callable

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array
from funcgrad.kernel.caches import CacheGroup, bounded_put, register_cache
from funcgrad.kernel.ir import ClosedJaxpr, Literal
from funcgrad.kernel.jaxpr_keys import params_key
from funcgrad.kernel.numpy_plan import SlotTable
from funcgrad.kernel.partial_eval import trace_to_jaxpr
from funcgrad.kernel.recording import RecordingTrace, RecordingTracer

_NO_TEMPLATE = object()
_ONE_PROGRAM = ("one program",)  # (the key of a template staged as one jit equation)
_staging_lock = threading.RLock()
# Each surface template's cache (NOTE: [caches have an owner]).
_templates = register_cache("kernel.surface_templates", CacheGroup(lambda f: f.template_cache))
# Whether templates apply now: the surface clears it while its promotion rules are not the
# defaults (NOTE: [surface templates]).
enabled = True


class Template:
    """A staged sub-program laid out for ``RecordingTrace.replay``: one slot per variable (inputs,
    then constants and literals, then equation outputs) and, per equation, ``(primitive, params,
    frozen params, input slots, output slots, output avals, live)``; ``live`` says whether it
    reads a recorded value. ``generic``: replay binds each equation instead (one that must be
    concrete, or that holds jaxprs)."""

    __slots__ = ("init", "in_slots", "steps", "out_slots", "multiple_outputs", "generic", "closed")

    def __init__(self, closed: ClosedJaxpr, recorded: list[bool], multiple_outputs: bool):
        j = closed.jaxpr
        slot = SlotTable(core.literal_value)  # (weak literals stay weak)
        live_vars: set = set()

        self.in_slots = [slot(v) for v in j.invars]
        live_vars.update(v for v, r in zip(j.invars, recorded) if r)
        for v, c in zip(j.constvars, closed.consts):
            slot(v, c)
        self.generic = False
        self.steps = []
        for eqn in j.eqns:
            prim = eqn.primitive
            live = any(a in live_vars for a in eqn.invars if type(a) is not Literal)
            if live:
                live_vars.update(eqn.outvars)
                concrete = prim.traits.not_differentiable or not all(
                    _dt.is_inexact(v.aval.dtype) for v in eqn.outvars
                )
                if concrete or prim.traits.jaxpr_params or prim.traits.runs_user_rules:
                    self.generic = True
            try:
                pkey = params_key(eqn.params)
            except TypeError:  # an unhashable parameter: the recording keys it (and gives up)
                pkey, self.generic = None, True
            self.steps.append(
                (
                    prim,
                    eqn.params,
                    pkey,
                    tuple(slot(a) for a in eqn.invars),
                    tuple(slot(v) for v in eqn.outvars),
                    tuple(v.aval for v in eqn.outvars),
                    live,
                )
            )
        self.out_slots = [slot(a) for a in j.outvars]
        self.multiple_outputs = multiple_outputs
        self.init = slot.init
        self.closed = closed

    def bind_each(self, trace, inputs):
        """Replay by binding every equation on ``trace`` (everything ``process_primitive`` does)."""
        outs = core.eval_jaxpr(self.closed.jaxpr, self.closed.consts, *inputs)
        return outs if self.multiple_outputs else outs[0]


def _static_key(a):
    """The key of a non-array argument, or ``None`` when it cannot be one."""
    t = type(a)
    if t is float:
        return (float, a.hex())
    if t is int or t is bool or t is str or a is None or t is type:
        return (t, a)
    if t is complex:
        return (complex, a.real.hex(), a.imag.hex())
    if isinstance(a, np.generic):
        return (t, a.tobytes())
    if isinstance(a, np.dtype):
        return (np.dtype, a)
    if t is slice:  # (unhashable before Python 3.12)
        parts = (a.start, a.stop, a.step)
        return (slice, *parts) if all(p is None or type(p) is int for p in parts) else None
    if a is Ellipsis:
        return (t,)
    if t is tuple:
        if all(type(e) is int for e in a):
            return (tuple, a)
        keys = [_static_key(e) for e in a]
        return None if None in keys else (tuple, *keys)
    return None


def surface_template(fn: Callable) -> Callable:
    """Decorate a surface function whose equations depend only on its array arguments' avals and
    its other arguments' values, so that eager ``grad`` records it from a cached sub-program
    (NOTE: [surface templates]). Outside a recording it is ``fn``, plus one type check.

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> double = surface_template(lambda x, k=2.0: x * k)
    >>> float(funcgrad.grad(lambda x: double(x, 3.0))(1.0))
    3.0
    """
    cache: dict = {}
    state = core._state
    # A function the library jits is one jit equation in the outermost recording, as under eager
    # vjp (NOTE: [eager library functions as one program]); inline in nested ones.
    one_program = getattr(fn, "one_program", None)
    eval_trace = core.EvalTrace

    @functools.wraps(fn)
    def surface_function(*args, **kwargs):
        trace = state.trace
        if type(trace) is not RecordingTrace or not enabled:
            return fn(*args, **kwargs)
        outer = one_program is not None and type(trace.parent) is eval_trace
        key, inputs = [], []
        for a in (*args, *kwargs.values()):
            t = type(a)
            if t is RecordingTracer:
                if a._trace is not trace:
                    return fn(*args, **kwargs)
                aval = a._aval  # (its fields: tuples hash and compare in C)
                key.append((aval.shape, aval.dtype, aval.weak_type))
                inputs.append(a)
            elif t is np.ndarray:
                key.append(("const", a.shape, a.dtype))
                inputs.append(a)
            elif t is Array:
                key.append(("const", a.shape, a.dtype, a.weak_type))
                inputs.append(a)
            else:
                k = _static_key(a)
                if k is None:
                    return fn(*args, **kwargs)
                key.append(k)
        if kwargs:
            key.append(tuple(kwargs))
        if outer:
            key.append(_ONE_PROGRAM)
        key = tuple(key)
        template = cache.get(key)
        if template is None:
            template = _stage(one_program if outer else fn, args, kwargs, inputs)
            bounded_put(cache, key, template, 256)
        if template is _NO_TEMPLATE:
            return fn(*args, **kwargs)
        return trace.replay(template, inputs)

    surface_function.template_cache = cache
    _templates.add(surface_function)
    return surface_function


def template_public_functions(namespace: dict) -> None:
    """Template every public function of the surface module whose ``globals()`` is ``namespace``
    (NOTE: [surface templates]): each module-level function defined there whose name does not
    start with an underscore is replaced by its ``surface_template``. Called once, as the last
    line of such a module (its own functions then call each other through the templates too).

    >>> ns = {"__name__": "doc_example"}
    >>> exec("def double(x): return x * 2", ns); exec("def _helper(x): return x", ns)
    >>> template_public_functions(ns)
    >>> hasattr(ns["double"], "template_cache"), hasattr(ns["_helper"], "template_cache")
    (True, False)
    """
    module = namespace["__name__"]
    for name, value in list(namespace.items()):
        if (
            not name.startswith("_")
            and type(value) is types.FunctionType
            and value.__module__ == module
            and not hasattr(value, "template_cache")
        ):
            namespace[name] = surface_template(value)


def _is_input(a) -> bool:
    t = type(a)
    return t is RecordingTracer or t is np.ndarray or t is Array


def _stage(fn, args, kwargs, inputs) -> Template | object:
    """Stage ``fn`` with its array arguments abstract; ``_NO_TEMPLATE`` when that fails, warns or
    gives something other than arrays."""
    n_args = len(args)
    names = list(kwargs)
    positions = [i for i, a in enumerate((*args, *kwargs.values())) if _is_input(a)]
    avals = [core.get_aval(a) for a in inputs]
    multiple: list = []  # whether fn gave a tuple of arrays

    def staged(*xs):
        everything = [*args, *kwargs.values()]
        for i, x in zip(positions, xs):
            everything[i] = x
        out = fn(*everything[:n_args], **dict(zip(names, everything[n_args:])))
        if type(out) is tuple and out and all(isinstance(o, core.Tracer) for o in out):
            multiple.append(True)
            return list(out)
        if not isinstance(out, core.Tracer):
            raise TypeError("not a traced array")
        multiple.append(False)
        return [out]

    try:
        # (catch_warnings swaps the process's filters: two threads staging at once could leave
        # "error" installed, hence the lock; reentrant, should staging ever stage again.)
        with _staging_lock, warnings.catch_warnings():
            warnings.simplefilter("error")
            closed = trace_to_jaxpr(staged, avals)
    except Exception:  # noqa: BLE001 - the call itself reports it (NOTE: [surface templates])
        return _NO_TEMPLATE
    if any(isinstance(c, core.Tracer) for c in closed.consts):
        return _NO_TEMPLATE  # it read a traced value that is not an argument
    return Template(closed, [type(a) is RecordingTracer for a in inputs], multiple[0])


__all__ = ["Template", "named_alias", "surface_template", "template_public_functions"]


def named_alias(fn: Callable, name: str) -> Callable:
    """A second public name of the function ``fn`` that is a function of that name (JAX's
    ``jnp.acos.__name__`` is ``'acos'``, not ``'arccos'``: code and tests key tables on
    ``__name__``). The copy shares ``fn``'s code, defaults, closure and docstring; a surface
    module's ``template_public_functions`` then templates it like any other public function.

    >>> def arccos(x): return x
    >>> acos = named_alias(arccos, "acos")
    >>> acos.__name__, acos(2), acos is arccos
    ('acos', 2, False)
    """
    if type(fn) is not types.FunctionType:
        raise TypeError(f"named_alias needs a plain function, got {type(fn).__name__}")
    alias = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    alias.__kwdefaults__ = fn.__kwdefaults__
    alias.__dict__.update(fn.__dict__)
    alias.__doc__, alias.__module__ = fn.__doc__, fn.__module__
    alias.__qualname__ = fn.__qualname__.rpartition(".")[0] + name if "." in fn.__qualname__ else name
    alias.__annotations__ = dict(fn.__annotations__)
    return alias
