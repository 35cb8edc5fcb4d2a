"""``jit``: stage a function to a jaxpr once per input signature and run it compiled by XLA.

Layer: surface. Imports the kernel (tracing, pytrees, ``Array``) and ``xla_bridge`` (``dispatch``,
``lowering``, and the package's lazy public functions). The module is named ``jitting`` so that
``funcgrad.jit`` is always the function (a submodule named ``jit`` would rebind the package
attribute when imported).

This module owns the staging half of a jitted function; the bridge owns the call (NOTE: [jitted
call route] in xla_bridge/dispatch.py). ``JittedFunction`` subclasses the bridge's ``Dispatcher``
and implements its ``_stage``: split the arguments (the bridge's one split, ``Dispatcher._split``),
flatten, look the input signature up in the trace cache and trace on a miss. Everything else
here is the user API: the trace cache and its
``cache_info``, retrace warnings, the AOT API (``trace``, ``lower``, ``compile``, ``eval_shape``)
and ``jit``'s parameters, each honoured or refused.

The trace cache key is (input tree structure, each leaf's shape/dtype/weak type, static
arguments); ``jit(f)`` made twice for the same ``f`` and options shares it (as in JAX). A function
retraced more than ``RETRACE_WARNING_THRESHOLD`` times warns once, naming what changed.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import inspect
import logging
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from funcgrad import xla_bridge
from funcgrad._api_util import abstractify, explain_concretization, flatten_outputs, is_abstract
from funcgrad._sharding_types import renamed_out_shardings, type_sharding
from funcgrad._shardings import (
    Mesh,
    NamedSharding,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    sharding_leaves,
)
from funcgrad.kernel import batching, core, monitoring
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.caches import CacheGroup, register_cache
from funcgrad.kernel.ir import typecheck_jaxpr
from funcgrad.kernel.partial_eval import close_over_tracers
from funcgrad.ref import HITYPES, Ref, is_stateful_arg, refuse_returned_refs, stateful_key, trace_stateful
from funcgrad.xla_bridge.dispatch import Dispatcher, NonHashableStaticArgumentError, Staged, set_call_redirect
from funcgrad.xla_bridge.execute import Compiled, compiled, run
from funcgrad.xla_bridge.lowering import lower_jaxpr
from funcgrad.xla_bridge.spmd_route import needs_spmd, spmd

__all__ = [
    "ArgInfo",
    "CacheInfo",
    "CompiledCall",
    "JittedFunction",
    "Lowered",
    "NonHashableStaticArgumentError",
    "RetraceWarning",
    "ShapeDtypeStruct",
    "Traced",
    "jit",
]

RETRACE_WARNING_THRESHOLD = 8


class RetraceWarning(UserWarning):
    """A jitted function was traced (and compiled) many times: its cache key keeps changing."""


class ShapeDtypeStruct:
    """A shape and dtype (and weak type, for values from Python scalars) standing in for an array
    (``eval_shape``'s result).

    >>> ShapeDtypeStruct((2,), "float32"), jit(lambda x: x * 2).eval_shape(1.0)
    (ShapeDtypeStruct(shape=(2,), dtype=float32), ShapeDtypeStruct(shape=(), dtype=float64, weak_type=True))
    """

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, weak_type: bool = False, *, sharding=None):
        self.shape = tuple(shape)
        # An extended dtype (a typed key's key<fry>: funcgrad/random/_keys.py KeyTy) is kept as is.
        extended = not isinstance(dtype, np.dtype | type | str) and isinstance(
            getattr(dtype, "type", None), type
        )
        self.dtype = dtype if extended else np.dtype(dtype)
        self.weak_type = weak_type
        self.sharding = sharding  # a Sharding or PartitionSpec (over the mesh in scope), or None

    @property
    def aval(self) -> core.ShapedArray:
        """The abstract value it stands for; a ``sharding`` over explicit mesh axes is part of it
        (NOTE: [sharding in types]), as when ``make_jaxpr`` traces JAX's explicit-sharding types."""
        aval = core.ShapedArray(self.shape, self.dtype, self.weak_type)
        if self.sharding is None:
            return aval
        s = self.sharding
        if isinstance(s, PartitionSpec):
            s = _resolve_spec(s)
        return _typed_as(aval, s)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @classmethod
    def like(cls, x) -> ShapeDtypeStruct:
        """The shape, dtype and weak type of ``x`` (an array, a traced value, a Python or NumPy
        scalar, another ``ShapeDtypeStruct``), as ``jax.ShapeDtypeStruct.like``.

        >>> ShapeDtypeStruct.like(np.ones(2, np.float32))
        ShapeDtypeStruct(shape=(2,), dtype=float32)
        >>> ShapeDtypeStruct.like(1.0)
        ShapeDtypeStruct(shape=(), dtype=float64, weak_type=True)
        """
        if isinstance(x, ShapeDtypeStruct):
            return cls(x.shape, x.dtype, x.weak_type)
        try:
            aval = core.get_aval(x)
        except TypeError:  # (another library's shape-and-dtype struct)
            return cls(x.shape, x.dtype, getattr(x, "weak_type", False))
        # (JAX's Python bools are not weakly typed: only int, float and complex are.)
        return cls(aval.shape, aval.dtype, aval.weak_type and aval.dtype != np.bool_)

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        sharding = "" if self.sharding is None else f", sharding={self.sharding!r}"
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak}{sharding})"

    # weak_type is part of the type, as in JAX: a Python scalar's f64[] is not an array's f64[].
    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type) == (
            other.shape,
            other.dtype,
            other.weak_type,
        )

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))


class CacheInfo:
    """Counters of a jitted function's trace cache: ``hits``, ``misses`` (traces), ``currsize``."""

    def __init__(self, hits: int, misses: int, size: int):
        self.hits, self.misses, self.currsize = hits, misses, size

    def __repr__(self):
        return f"CacheInfo(hits={self.hits}, misses={self.misses}, currsize={self.currsize})"


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
                raise ValueError(
                    f"jit({name}): {what}={_as_tuple(given)} refers to argument {n}, but {name} takes "
                    f"{n_positional} positional argument{'s' if n_positional != 1 else ''}. Use "
                    f"{what.replace('nums', 'names')} for keyword-only parameters."
                )
            n %= n_positional
        nums.add(n)
    return nums


# NOTE: [jit flags]
# funcgrad.config's jit-related flags live here (``set_jit_flags``): ``log_compiles`` and
# ``explain_cache_misses`` log (logger "funcgrad") on every trace (each trace compiles a program),
# ``enable_checks`` type-checks every traced jaxpr, ``no_tracing`` refuses to trace. ``disable_jit``
# and ``no_execution`` set the route table's redirect row while they are set (the bridge's
# ``set_call_redirect``, NOTE: [jitted call route]) -- calling the Python function, or refusing --
# which every call reads once (a dict lookup, in C on the hot path); nothing is swapped on a class.
_jit_flags = {
    "log_compiles": False,
    "explain_cache_misses": False,
    "enable_checks": False,
    "no_tracing": False,
    "disable_jit": False,
    "no_execution": False,
    "user_context": False,
    "x32": False,
}
_logger = logging.getLogger("funcgrad")

# ``funcgrad.make_user_context``'s contexts (funcgrad.config): their current values are part of
# every trace cache key, so a function traced under one value is traced again under another (JAX
# keys its jit cache on them). The native route's key knows nothing of them: while any context is
# away from its default (the ``user_context`` flag), calls take the staged route, whose key holds
# them, and the native cache, filled under the defaults, is not consulted.
user_contexts: list = []


def set_jit_flags(**flags) -> None:
    """Set jit flags (called by ``funcgrad.config``, NOTE: [jit flags])."""
    unknown = set(flags) - set(_jit_flags)
    if unknown:
        raise TypeError(f"set_jit_flags: unknown flags {sorted(unknown)}")
    _jit_flags.update({k: bool(v) for k, v in flags.items()})
    if _jit_flags["no_execution"]:
        set_call_redirect(_refuse_execution)
    elif _jit_flags["disable_jit"]:
        set_call_redirect(_call_python)
    elif _jit_flags["user_context"] or _jit_flags["x32"]:
        set_call_redirect(_call_staged)
    else:
        set_call_redirect(None)


def _call_staged(self, args, kwargs):
    """A user context is set: the staged route, whose trace cache key holds its value."""
    return self._call(args, kwargs)


def _call_python(self, args, kwargs):
    """``disable_jit``: run the function's Python, op by op (as JAX does)."""
    return self._fun(*args, **kwargs)


def _refuse_execution(self, args, kwargs):
    raise RuntimeError(
        f"jit({self._name}) was called while no_execution is set (jax_no_execution): compiled "
        "programs may not run. Leave the no_execution() context, or use eval_shape/lower to inspect it."
    )


class JittedFunction(Dispatcher):
    """The result of ``jit(f)``: call it like ``f``.

    ``.lower(*args)`` gives the StableHLO (``.as_text()``) and ``.compile()``; ``.trace(*args)``
    the jaxpr; ``.eval_shape(*args)`` the output shapes; ``.cache_info()`` the trace cache's hits
    and misses. Calls go through the bridge's dispatcher (NOTE: [jitted call route]).
    """

    def __init__(
        self,
        fun,
        static_argnums=None,
        static_argnames=None,
        donate_argnums=None,
        donate_argnames=None,
        device=None,
        in_shardings=None,
        out_shardings=None,
    ):
        # The wrapped function's name and docstring, and its own attributes as jax's jit keeps
        # them -- except any that would replace this object's (a callable object with a
        # ``_call`` or ``_name`` attribute must not overwrite the dispatcher's).
        functools.update_wrapper(self, fun, updated=())
        for key, value in getattr(fun, "__dict__", {}).items():
            if not hasattr(self, key):
                setattr(self, key, value)
        self._fun = fun
        name = getattr(fun, "__name__", None) or type(fun).__name__
        try:
            self._signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None
        params = list(self._signature.parameters.values()) if self._signature is not None else []
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        bounded = self._signature is not None and not any(p.kind == p.VAR_POSITIONAL for p in params)
        n_positional = len(positional) if bounded else None
        nums = _argnums(name, "static_argnums", static_argnums, n_positional)
        names = set(_as_tuple(static_argnames))
        # As in JAX, static_argnums and static_argnames name the same parameters both ways, so a
        # static argument may be passed by position or by keyword -- unless both are given: then
        # each is used as it is (flax's lifted jit makes its wrapper's argument 0 static by
        # number and the wrapped method's keyword by name).
        if static_argnums is None or static_argnames is None:
            for n in list(nums):
                if 0 <= n < len(positional):
                    names.add(positional[n])
            for s in list(names):
                if s in positional:
                    nums.add(positional.index(s))
        donate = _argnums(name, "donate_argnums", donate_argnums, n_positional)
        donate_names = set(_as_tuple(donate_argnames))
        takes_any_keyword = any(p.kind == p.VAR_KEYWORD for p in params) or self._signature is None
        for s in donate_names:
            if s in positional:
                donate.add(positional.index(s))
            elif not takes_any_keyword and s not in {p.name for p in params}:
                raise ValueError(f"jit({name}): donate_argnames has {s!r}, which is not a parameter")
        donate_names.update(positional[n] for n in donate if 0 <= n < len(positional))
        both = donate & nums
        if both:
            raise ValueError(f"jit({name}): argument {min(both)} is both static and donated")
        self._donate_argnums = tuple(sorted(donate))
        self._donate_names = frozenset(donate_names)
        self._in_shardings = in_shardings
        self._out_shardings = out_shardings
        super().__init__(
            name,
            sorted(nums),
            sorted(names),
            donate=bool(donate or donate_names),
            device=device,
            named_positional=len(positional),
        )
        self._cache: dict[Any, Staged] = {}
        self._hits = 0
        self._misses = 0
        self._keys: list = []
        self._warned = False
        _functions.add(self)

    # -- staging (the one method the bridge's Dispatcher asks for) -----------------------------

    def _stage(self, args, kwargs, abstract=False):
        entry, flat, static_key, dyn_kwargs = self._entry(args, kwargs, abstract)
        return entry, flat, self._donated(len(entry.hoisted), len(flat), static_key, args, dyn_kwargs)

    def _arg_names(self, static_key, dyn_args, dyn_kwargs) -> list[str]:
        static_pos = dict(static_key)
        positions = [i for i in range(len(dyn_args) + len(static_pos)) if i not in static_pos]
        names = []
        params = list(self._signature.parameters) if self._signature is not None else []
        for path, _ in tu.tree_leaves_with_path((dyn_args, dyn_kwargs)):
            head, rest = path[0], path[1:]
            if head.idx == 0:
                pos = positions[rest[0].idx]
                label = params[pos] if pos < len(params) else f"args[{pos}]"
                names.append(f"{label}{tu.keystr(rest[1:])}")
            else:
                names.append(f"{rest[0].key}{tu.keystr(rest[1:])}")
        return names

    def _trace(self, static_key, static_kw, dyn_args, dyn_kwargs, flat, in_tree, names):
        statics = dict(static_key)
        static_kwargs = dict(static_kw)
        n_total = len(dyn_args) + len(statics)
        out_tree_box = []
        fun = self._fun
        name = self._name

        def flat_fun(*leaves):
            d_args, d_kwargs = tu.tree_unflatten(in_tree, leaves)
            it = iter(d_args)
            full = [statics[i] if i in statics else next(it) for i in range(n_total)]
            try:
                out = fun(*full, **d_kwargs, **static_kwargs)
            except core.ConcretizationTypeError as e:
                explain_concretization(e, None, None)  # the funcgrad.numpy fix for NumPy calls
                raise
            try:
                out_leaves, out_tree = flatten_outputs(out, f"jit({name})")
            except TypeError:
                refuse_returned_refs(out, f"jit({name})")  # JAX's ValueError for a Ref
                raise
            out_tree_box.append(out_tree)
            return out_leaves

        # NOTE: [refs are functionalised at trace time]
        refs = {
            i: x for i, x in enumerate(flat) if type(x) is Ref or (type(x) in HITYPES and is_stateful_arg(x))
        }
        avals = [
            None if i in refs else abstractify(x) if is_abstract(x) else core.get_aval(x)
            for i, x in enumerate(flat)
        ]
        user_ins = None
        if self._in_shardings is not None and not refs:
            n_pos = len(tu.tree_leaves(dyn_args))
            user_ins = _sharding_leaves(
                self._in_shardings, dyn_args, avals[:n_pos], f"jit({name})", "in_shardings"
            )
            # (As in JAX, an argument keeps its own type: in_shardings place it, they do not retype it.)
        if _jit_flags["no_tracing"]:
            raise RuntimeError(
                f"jit({name}) must be traced for arguments ({', '.join(a.str_short() for a in avals)}), but "
                "no_tracing is set (jax_no_tracing): call it once outside no_tracing() to fill its cache"
            )
        if _jit_flags["log_compiles"]:
            _logger.warning(
                "Compiling jit(%s) for arguments (%s)", name, ", ".join(a.str_short() for a in avals)
            )
        with monitoring.timed_event(monitoring.JAXPR_TRACE_EVENT, fun_name=name):
            closed, n_outs, plan = trace_stateful(flat_fun, avals, names, f"jit({name})", refs)
        core.check_leaks_now()  # (NOTE: [leak checking])
        if _jit_flags["enable_checks"]:
            typecheck_jaxpr(closed.jaxpr)
        closed, hoisted = close_over_tracers(closed)
        ins, outs = None, None
        if user_ins is not None:
            ins = (None,) * len(hoisted) + tuple(user_ins) + (None,) * (len(flat) - len(user_ins))
        if self._out_shardings is not None:
            out_avals = closed.out_avals[:n_outs]
            shaped = tu.tree_unflatten(out_tree_box[0], list(range(len(out_avals))))
            outs = tuple(
                _sharding_leaves(self._out_shardings, shaped, out_avals, f"jit({name})", "out_shardings")
            ) + (None,) * (len(closed.out_avals) - n_outs)
        else:
            outs = renamed_out_shardings(closed.out_avals)
        if plan is not None:
            if ins is not None:
                ins = ins + (None,) * (len(closed.in_avals) - len(ins))
            return _RefStaged(closed, out_tree_box[0], hoisted, ins, outs, plan, n_outs)
        return Staged(closed, out_tree_box[0], hoisted, ins, outs)

    def _entry(self, args, kwargs, abstract=False):
        static_key, static_kw, dyn_args, dyn_kwargs = self._split(args, kwargs)
        flat, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
        refs = None
        for i, leaf in enumerate(flat):
            if not core.is_array_like(leaf):
                if abstract and is_abstract(leaf):
                    continue  # trace/lower take ShapeDtypeStructs and avals, as JAX's AOT API
                if is_stateful_arg(leaf):  # a Ref, or a mutable box (NOTE: [mutable high-level values])
                    refs = True
                    continue
                names = self._arg_names(static_key, dyn_args, dyn_kwargs)
                raise TypeError(
                    f"jit({self._name}): argument {names[i]} is a {type(leaf).__name__}, not an "
                    "array. Mark it static (static_argnums/static_argnames) or pass an array."
                )
        # The named axes in scope type the collectives inside (NOTE: [named axes]).
        leaf_key = tuple(_aval_key(x) for x in flat) if refs is None else _ref_key(flat)
        key = (in_tree, leaf_key, static_key, static_kw, batching.axis_env())
        if user_contexts:
            key += (tuple(c.value for c in user_contexts),)
        entry = self._cache.get(key)
        if entry is None:
            self._misses += 1
            names = self._arg_names(static_key, dyn_args, dyn_kwargs)
            self._note_retrace(key, names)
            entry = self._trace(static_key, static_kw, dyn_args, dyn_kwargs, flat, in_tree, names)
            if not entry.hoisted:
                # A jaxpr that captured tracers of an enclosing transformation is not reusable.
                self._cache[key] = entry
        else:
            self._hits += 1
        return entry, flat, static_key, dyn_kwargs

    def _call(self, args, kwargs):
        # The staged route, around which a program that reads or writes Refs reads them before
        # and writes them back after (NOTE: [refs are functionalised at trace time]).
        staged, flat, donated = self._stage(args, kwargs)
        if type(staged) is not _RefStaged:
            return self._run(staged, flat, donated)
        plan = staged.plan
        values = plan.inputs(flat)
        out, finals = self._run(staged, values, (False,) * (len(staged.hoisted) + len(values)))
        plan.write_back(flat, finals)
        return out

    def _note_retrace(self, key, names) -> None:
        previous = self._keys[-1] if self._keys else None
        for k in reversed(self._keys):
            if k[0] == key[0]:
                previous = k
                break
        self._keys.append(key)
        del self._keys[:-16]
        if _jit_flags["explain_cache_misses"]:
            why = "first call" if previous is None else _explain(previous, key, names)
            _logger.warning("TRACING CACHE MISS of jit(%s): %s", self._name, why)
        if self._warned or self._misses <= RETRACE_WARNING_THRESHOLD or previous is None:
            return
        self._warned = True
        warnings.warn(
            f"jit({self._name}) has been traced {self._misses} times (each trace compiles a new "
            f"program); the latest retrace was caused by: {_explain(previous, key, names)}. Keep "
            "shapes, dtypes and static arguments fixed across calls (pad inputs to a few sizes, "
            "pass Python scalars as arrays of a fixed dtype) to hit the cache.",
            RetraceWarning,
            stacklevel=3,
        )

    def _donated(self, n_hoisted, n_flat, static_key, args, dyn_kwargs) -> tuple[bool, ...]:
        """One flag per jaxpr input: hoisted tracers, then the leaves of the dynamic positional
        arguments, then those of the keyword arguments (in the flattening's sorted key order)."""
        if not self._donate:
            return (False,) * (n_hoisted + n_flat)
        donated = [False] * n_hoisted
        static_pos = {j for j, _ in static_key}
        for i, a in enumerate(args):
            if i not in static_pos:
                donated.extend([i in self._donate_argnums] * len(tu.tree_leaves(a)))
        for k in sorted(dyn_kwargs):
            donated.extend([k in self._donate_names] * len(tu.tree_leaves(dyn_kwargs[k])))
        return tuple(donated)

    # -- ahead-of-time API ---------------------------------------------------------------------

    def trace(self, *args, **kwargs) -> Traced:
        """The traced program for these arguments (from the cache when possible).

        >>> import funcgrad.numpy as fnp
        >>> print(jit(fnp.sin).trace(1.0).jaxpr)
        { lambda ; a:f64[]. let b:f64[] = sin a in (b,) }
        """
        staged, flat, donated = self._stage(args, kwargs, abstract=True)
        _, _, dyn_args, dyn_kwargs = self._split(args, kwargs)
        _, tree = tu.tree_flatten((tuple(dyn_args), dict(dyn_kwargs)))
        n_h = len(staged.hoisted)
        flags = tuple(donated)[n_h:]
        infos = [ArgInfo(a, bool(d)) for a, d in zip(staged.closed.in_avals[n_h:], flags)]
        return Traced(self, staged, donated, flat, tu.tree_unflatten(tree, infos))

    def lower(self, *args, **kwargs) -> Lowered:
        """Trace and lower to StableHLO for these arguments; ``.as_text()``, ``.compile()``.

        >>> import funcgrad.numpy as fnp
        >>> "stablehlo.sine" in jit(fnp.sin).lower(1.0).as_text()
        True
        """
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        """Output shapes/dtypes (``ShapeDtypeStruct`` leaves) without running anything.

        >>> jit(lambda x: x.sum(0)).eval_shape(np.ones((2, 3)))
        ShapeDtypeStruct(shape=(3,), dtype=float64)
        """
        staged = self._entry(args, kwargs)[0]
        outs = [
            ShapeDtypeStruct(a.shape, a.dtype, a.weak_type, sharding=a.sharding)
            for a in staged.closed.out_avals
        ]
        return tu.tree_unflatten(staged.out_tree, outs)

    def cache_info(self) -> CacheInfo:
        """Hits and misses (traces) of this function's cache.

        >>> f = jit(lambda x: x * 2)
        >>> _ = f(1.0); _ = f(2.0); f.cache_info()
        CacheInfo(hits=1, misses=1, currsize=1)
        """
        return CacheInfo(self._hits + self._dispatch_hits(), self._misses, len(self._cache))

    def _cache_size(self) -> int:
        """Number of traced signatures (JAX's private spelling, used by its tests)."""
        return len(self._cache)

    def clear_cache(self) -> None:
        """Forget traced and compiled programs of this function."""
        self._cache.clear()
        self._clear_dispatch()

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    @property
    def __signature__(self):
        # The wrapped function's, as JAX's jitted functions report it: the dispatcher is a C
        # type, so inspect.signature(follow_wrapped=False) would find none (chex's fake_pmap).
        # (a callable object's own __signature__, copied by update_wrapper, is kept as given)
        given = self.__dict__.get("_given_signature")
        return given if given is not None else inspect.signature(self._fun)

    @__signature__.setter
    def __signature__(self, value):
        self.__dict__["_given_signature"] = value

    def __repr__(self):
        # JAX's text (its jitted functions are PjitFunction objects): chex's is_traceable reads it.
        return f"<PjitFunction of {self._fun!r}>"


class _RefStaged(Staged):
    """A staged call whose program reads or writes Refs (``plan``, a ``RefPlan``): its outputs are
    the function's, then the written Refs' final values; the call unflattens them as a pair."""

    __slots__ = ("plan", "user_tree")
    stateful = True

    def __init__(self, closed, out_tree, hoisted, ins, outs, plan, n_outs):
        n_finals = len(closed.out_avals) - n_outs
        pair = (tu.tree_unflatten(out_tree, list(range(n_outs))), list(range(n_finals)))
        super().__init__(closed, tu.tree_structure(pair), hoisted, ins, outs)
        self.plan = plan
        self.user_tree = out_tree


def _ref_key(flat) -> tuple:
    """The trace cache key's leaf part for arguments holding Refs: a Ref's type and which earlier
    argument is the same Ref (the jaxpr reads each Ref once)."""
    first: dict[int, int] = {}
    return tuple(
        stateful_key(x, first.setdefault(id(x), i)) if is_stateful_arg(x) else _aval_key(x)
        for i, x in enumerate(flat)
    )


@dataclasses.dataclass(frozen=True)
class ArgInfo:
    """One array argument of a traced, lowered or compiled call (``jax.stages.ArgInfo``): its
    abstract value and whether it is donated. ``args_info`` of a ``Traced``/``Lowered``/
    ``Compiled`` is the ``(args, kwargs)`` tree of them, static arguments left out.

    >>> import funcgrad.numpy as fnp
    >>> f = jit(lambda x, n: x * n, static_argnums=1, donate_argnums=0)
    >>> (info,), kwargs = f.trace(fnp.ones(3), 2).args_info
    >>> info.shape, info.dtype, info.donated, kwargs
    ((3,), dtype('float64'), True, {})
    """

    _aval: Any
    donated: bool

    @property
    def shape(self):
        return self._aval.shape

    @property
    def dtype(self):
        return self._aval.dtype


class Traced:
    """A traced jitted call: ``.jaxpr`` (ClosedJaxpr), ``.in_avals``, ``.out_info``,
    ``.args_info``, ``.lower()``."""

    def __init__(self, fun: JittedFunction, staged: Staged, donated, flat=(), args_info=None):
        self.args_info = args_info
        self._fun = fun
        self._staged = staged
        self._donated = donated
        self._flat = flat
        self.jaxpr = staged.closed
        self.in_avals = staged.closed.in_avals
        self.out_info = tu.tree_unflatten(staged.out_tree, staged.closed.out_avals)

    def lower(self) -> Lowered:
        if self._staged.hoisted:
            raise TypeError(
                f"jit({self._fun._name}).lower: the function closes over a value traced by an "
                "enclosing transformation; lower it outside of grad/vmap/jit"
            )
        lowered = Lowered(self._fun, self._staged, self._donated, self._flat)
        lowered.args_info = self.args_info
        return lowered

    def __str__(self):
        return str(self.jaxpr)


_DIALECTS = (None, "stablehlo", "hlo")


class Lowered:
    """A lowered jitted call: ``.as_text()`` (StableHLO, or XLA's HLO), ``.compile()``."""

    args_info = None  # the Traced's (ArgInfo tree), set by Traced.lower

    def __init__(self, fun: JittedFunction, staged: Staged, donated, flat=()):
        self._fun = fun
        self._staged = staged
        self._donated = donated
        self._spmd = None
        if staged.spmd or needs_spmd(staged.closed, flat):
            # A program over several devices (NOTE: [SPMD call route]): lowered with its shardings.
            self._spmd = spmd().prepare(
                staged.closed, flat, fun._name, donated, staged.in_shardings, staged.out_shardings
            )
            self._text = self._spmd.text
        else:
            if fun._device is None:
                platform = xla_bridge.default_platform()
            else:
                platform = xla_bridge.normalize_platform(fun._device.platform)
            self._text = lower_jaxpr(staged.closed, fun._name, donated, platform=platform).text

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The module text: StableHLO (``dialect`` None or ``"stablehlo"``), or XLA's HLO before
        optimisation (``"hlo"``). ``debug_info`` is accepted for JAX's signature; funcgrad's
        modules carry no source locations, so the text is the same.

        >>> import funcgrad.numpy as fnp
        >>> jit(fnp.sin).lower(1.0).as_text("hlo").startswith("HloModule")
        True
        """
        _check_dialect(dialect)
        if dialect == "hlo":
            return xla_bridge.hlo_text(self._text)
        return self._text

    @property
    def out_info(self):
        """The outputs' shapes and dtypes (``ShapeDtypeStruct`` leaves in the output's tree), as
        JAX's ``Lowered.out_info``.

        >>> import funcgrad.numpy as fnp
        >>> jit(lambda x: (x, x.sum())).lower(fnp.ones(3)).out_info[1]
        ShapeDtypeStruct(shape=(), dtype=float64)
        """
        staged = self._staged
        tree, avals = staged.out_tree, staged.closed.out_avals
        if type(staged) is _RefStaged:  # the function's outputs, not the Refs' final values
            tree, avals = staged.user_tree, avals[: staged.user_tree.num_leaves]
        return tu.tree_unflatten(
            tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type, sharding=a.sharding) for a in avals]
        )

    def compiler_ir(self, dialect: str | None = None):
        """The program as the compiler's objects, as JAX's: for ``"stablehlo"`` (or None) jaxlib's
        MLIR ``ir.Module`` (``str()`` prints it), for ``"hlo"`` jaxlib's ``XlaComputation``
        (``.as_hlo_text()``, ``.as_serialized_hlo_module_proto()``).

        >>> import funcgrad.numpy as fnp
        >>> lowered = jit(fnp.sin).lower(1.0)
        >>> lowered.compiler_ir("hlo").as_hlo_text().startswith("HloModule")
        True
        >>> "stablehlo.sine" in str(lowered.compiler_ir())
        True
        """
        _check_dialect(dialect)
        if dialect == "hlo":
            return xla_bridge.hlo_computation(self._text)
        return xla_bridge.mlir_module(self._text)

    def cost_analysis(self) -> dict:
        """XLA's cost estimate of the program before optimisation, as JAX's
        ``Lowered.cost_analysis``: ``flops``, ``bytes accessed`` and per-operand byte counts.

        >>> import funcgrad.numpy as fnp
        >>> jit(lambda a, b: a @ b).lower(fnp.ones((8, 4)), fnp.ones((4, 2))).cost_analysis()["flops"]
        128.0
        """
        return xla_bridge.hlo_cost_analysis(self._text)

    def compile(self, compiler_options: dict | None = None) -> CompiledCall:
        """Compile with XLA (cached) on the function's device; the result is callable with
        arguments like these. ``compiler_options``: XLA's options by name, as JAX's
        (``{"xla_cpu_enable_fast_math": True}``); XLA refuses an unknown name or a bad value with
        an ``XlaBridgeError`` (a ``funcgrad.errors.JaxRuntimeError``).

        >>> import funcgrad.numpy as fnp
        >>> c = jit(lambda x: 2 * x).lower(fnp.ones(2)).compile({"xla_cpu_enable_fast_math": True})
        >>> c(fnp.ones(2)).tolist()
        [2.0, 2.0]
        """
        f = self._fun
        options = _compiler_options(compiler_options)
        if self._spmd is not None:
            if options:
                raise ValueError(
                    f"jit({f._name}).lower(...).compile: compiler_options are not supported yet for "
                    "a program over several devices (sharded inputs or in/out_shardings); compile "
                    "it without them"
                )
            out = CompiledCall(f, self._staged, self._spmd)
        else:
            out = CompiledCall(
                f,
                self._staged,
                compiled(self._staged.closed, f._name, self._donated, f._device, compiler_options=options),
            )
        out.args_info = getattr(self, "args_info", None)
        return out


def _check_dialect(dialect) -> None:
    if dialect not in _DIALECTS:
        raise ValueError(
            f"unknown dialect: {dialect!r}; use None or 'stablehlo' (the StableHLO module) or "
            "'hlo' (XLA's HLO)"
        )


def _compiler_options(options) -> dict | None:
    """``Lowered.compile``'s ``compiler_options`` checked: a dict of option names to a bool, int,
    float or str each (what XLA's option parser takes)."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise TypeError(
            "compile: compiler_options must be a dict of XLA option names to values, "
            f"got {type(options).__name__}"
        )
    for name, value in options.items():
        if not isinstance(name, str) or not isinstance(value, (bool, int, float, str)):
            raise TypeError(
                f"compile: compiler_options entry {name!r}: {value!r} must be an option name (str) "
                "with a bool, int, float or str value"
            )
    return options


class CompiledCall:
    """A compiled jitted call; call it with arguments of the lowered shapes/dtypes."""

    args_info = None  # the Lowered's (ArgInfo tree), set by Lowered.compile

    def __init__(self, fun: JittedFunction, staged: Staged, c):
        self._fun = fun
        self._staged = staged
        self._compiled = c
        self.in_avals = staged.closed.in_avals
        self.out_info = tu.tree_unflatten(staged.out_tree, staged.closed.out_avals)

    def __call__(self, *args, **kwargs):
        f = self._fun
        static_key, static_kw, dyn_args, dyn_kwargs = f._split(args, kwargs)
        flat, _ = tu.tree_flatten((dyn_args, dyn_kwargs))
        if len(flat) != len(self.in_avals):
            raise TypeError(
                f"compiled jit({f._name}) takes {len(self.in_avals)} array leaves, got {len(flat)}"
            )
        names = [f"argument {n}" for n in f._arg_names(static_key, dyn_args, dyn_kwargs)]
        donated = f._donated(0, len(flat), static_key, args, dyn_kwargs)
        if not isinstance(self._compiled, Compiled):  # a program over several devices
            return tu.tree_unflatten(self._staged.out_tree, spmd().run(self._compiled, flat, donated))
        return tu.tree_unflatten(self._staged.out_tree, run(self._compiled, flat, donated, names))

    def as_text(self) -> str:
        """XLA's optimized HLO."""
        return self._compiled.executable.as_hlo_text()

    def memory_analysis(self):
        """XLA's memory plan of the compiled program, as ``jax``'s ``Compiled.memory_analysis``:
        ``argument_size_in_bytes``, ``output_size_in_bytes``, ``alias_size_in_bytes`` and
        ``temp_size_in_bytes`` (the scratch memory: activations, residuals, temporaries).

        >>> import funcgrad.numpy as fnp
        >>> stats = jit(fnp.sin).lower(fnp.ones(4)).compile().memory_analysis()
        >>> stats.argument_size_in_bytes, stats.output_size_in_bytes
        (32, 32)
        """
        return self._compiled.executable.memory_analysis()

    def cost_analysis(self) -> dict:
        """XLA's cost estimate of the compiled program, as ``jax``'s ``Compiled.cost_analysis``:
        a dict with ``flops``, ``transcendentals``, ``bytes accessed`` and per-operand byte
        counts (``bytes accessed0{}``, ...). Estimates, not measurements.

        >>> import funcgrad.numpy as fnp
        >>> cost = jit(lambda a, b: a @ b).lower(fnp.ones((8, 4)), fnp.ones((4, 2))).compile().cost_analysis()
        >>> cost["flops"]
        128.0
        """
        return self._compiled.executable.cost_analysis()


def _resolve_spec(spec):
    return sharding_leaves(spec, 0, "ShapeDtypeStruct", "sharding")[0]


def _typed_as(aval, s):
    """``aval`` typed by the sharding ``s`` (a ``NamedSharding`` over a mesh with explicit axes;
    NOTE: [sharding in types]; ``s`` may be its bridge sharding); otherwise ``aval`` as it is."""
    s = getattr(s, "_fg_user", s)
    if not isinstance(s, NamedSharding) or not isinstance(s.mesh, Mesh) or not s.mesh.explicit_axes:
        return aval
    return aval.update(
        sharding=type_sharding(s.mesh.abstract_mesh, s.spec._normalized(aval.ndim, "in_shardings"))
    )


def _aval_key(x):
    t = type(x)
    if t is Array:
        # A sharded value's type holds its sharding on explicit mesh axes (NOTE: [sharding in types]).
        s = None if x._buffer is None else core.get_aval(x).sharding
        return (x.shape, x.dtype, x.weak_type) if s is None else (x.shape, x.dtype, x.weak_type, s)
    if t in (int, float, bool, complex):
        # Its type, as JAX keys it: a Python float and a weakly typed float Array share a trace.
        a = core.get_aval(x)
        return (a.shape, a.dtype, a.weak_type)
    if isinstance(x, core.Tracer):
        a = x.aval
        return (
            (a.shape, a.dtype, a.weak_type)
            if a.sharding is None
            else (a.shape, a.dtype, a.weak_type, a.sharding)
        )
    if is_abstract(x):  # (trace/lower only)
        a = abstractify(x)  # (keyed as an Array of its type: the two share a trace)
        return (
            (a.shape, a.dtype, a.weak_type)
            if a.sharding is None
            else (a.shape, a.dtype, a.weak_type, a.sharding)
        )
    return (np.shape(x), np.result_type(x), False)


def _explain(old, new, names) -> str:
    """What differs between two cache keys, in words."""
    if old[0] != new[0]:
        return f"the input tree structure changed from {old[0]} to {new[0]}"
    if old[2] != new[2] or old[3] != new[3]:
        o, n = dict((*old[2], *old[3])), dict((*new[2], *new[3]))
        for k in n:
            if o.get(k, object()) != n[k]:
                return f"static argument {k!r} changed from {o.get(k)!r} to {n[k]!r}"
        return "the static arguments changed"
    for name, a, b in zip(names, old[1], new[1]):
        if a == b:
            continue
        if a[0] != b[0]:
            return f"argument {name} changed shape from {a[0]} to {b[0]}"
        if a[1] != b[1]:
            return f"argument {name} changed dtype from {_dt_name(a[1])} to {_dt_name(b[1])}"
        return f"argument {name} changed weak type from {a[2]} to {b[2]} (a Python scalar vs an array)"
    if len(old) > 4 and old[4] != new[4]:
        return f"the named axes in scope changed from {old[4]} to {new[4]}"
    if len(old) > 5 and len(new) > 5 and old[5] != new[5]:
        return f"the user contexts' values changed from {old[5]} to {new[5]}"
    return "an unknown change"


def _dt_name(d) -> str:
    return d.__name__ if isinstance(d, type) else np.dtype(d).name


def jit(
    fun: Callable | None = None,
    *,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    donate_argnums: int | Sequence[int] | None = None,
    donate_argnames: str | Sequence[str] | None = None,
    keep_unused: bool = False,
    inline: bool = False,
    device=None,
    backend: str | None = None,
    in_shardings=None,
    out_shardings=None,
    **unsupported,
):
    """Compile ``fun`` with XLA; traced once per input shapes/dtypes (and static arguments).

    Usable as ``jit(f)``, ``@jit`` or ``@jit(static_argnums=...)``. Every parameter is honoured
    or refused:

    - ``static_argnums``/``static_argnames``: parameters passed as Python values (hashable) and
      baked into the trace; a number outside the signature's positional parameters is an error
      (when the signature is known and has no ``*args``).
    - ``donate_argnums``/``donate_argnames``: the call consumes these arguments' device buffers
      (XLA reuses them for outputs), as in JAX. A donated Array an output can reuse is deleted
      afterwards (``is_deleted()``; using it raises JAX's "Array has been deleted" error saying
      what to do instead); one no output can reuse stays alive, with JAX's warning.
    - ``device`` (an element of ``funcgrad.devices()``) or ``backend`` (``"cpu"``, ``"cuda"``):
      where the computation runs; an unknown or unavailable backend, a ``device`` that is not a
      Device, or both at once raise an error naming the parameter.
    - ``in_shardings``/``out_shardings``: a ``Sharding`` (or a bare ``PartitionSpec`` inside
      ``with mesh:``) for all positional arguments/outputs, or a pytree prefix of them with
      ``None`` where the layout is left open (an argument keeps its own sharding, a value from the
      host is copied to every device; XLA picks an output's). The program is compiled once for
      all the mesh's devices and XLA's SPMD partitioner inserts the communication (NOTE: [SPMD
      call route] in xla_bridge/spmd.py); arguments laid out otherwise are resharded.
    - ``keep_unused``: honoured -- the compiled program keeps every input, used or not (JAX may
      prune unused ones when it is False; funcgrad never does).
    - ``inline``: accepted; a jit called inside another jitted function stays one ``jit``
      equation in the jaxpr and becomes a private function of the module, which XLA inlines when
      it compiles the enclosing program, so the compiled program is the same either way.

    >>> import funcgrad.numpy as fnp
    >>> f = jit(lambda x: fnp.sin(x) ** 2 + fnp.cos(x) ** 2)
    >>> float(f(1.0))
    1.0
    >>> jit(f, backend="cpu")(0.5).tolist()
    1.0
    """
    if unsupported:
        raise TypeError(f"jit got unsupported options {sorted(unsupported)}")
    if fun is None:
        return functools.partial(
            jit,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            donate_argnums=donate_argnums,
            donate_argnames=donate_argnames,
            keep_unused=keep_unused,
            inline=inline,
            device=device,
            backend=backend,
            in_shardings=in_shardings,
            out_shardings=out_shardings,
        )
    if not callable(fun):
        raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
    placement = None
    if device is not None or backend is not None:
        try:
            placement = xla_bridge.resolve_device(device, backend)
        except (TypeError, ValueError) as e:
            name = getattr(fun, "__name__", None) or type(fun).__name__
            raise type(e)(f"jit({name}): {e}") from None
    if in_shardings is not None or out_shardings is not None:
        _check_sharding_tree(in_shardings, "in_shardings")
        _check_sharding_tree(out_shardings, "out_shardings")
        return JittedFunction(
            fun,
            static_argnums,
            static_argnames,
            donate_argnums,
            donate_argnames,
            placement,
            in_shardings,
            out_shardings,
        )
    # As in JAX, jit(f) made twice shares one cache: `jit(f)(x)` in a loop traces once.
    config = tuple(_as_tuple(v) for v in (static_argnums, static_argnames, donate_argnums, donate_argnames))
    key = (id(fun), config, placement)
    hit = _instances.get(key)
    if hit is not None and hit._fun is fun:
        _instances.move_to_end(key)
        return hit
    jitted = JittedFunction(fun, static_argnums, static_argnames, donate_argnums, donate_argnames, placement)
    _instances[key] = jitted  # holds `fun`, so its id is not reused while the entry lives
    if len(_instances) > _MAX_INSTANCES:
        _instances.popitem(last=False)
    return jitted


_instances: collections.OrderedDict = register_cache("jit.instances", collections.OrderedDict())


def _is_sharding_leaf(x) -> bool:
    return x is None or isinstance(x, Sharding | PartitionSpec)


def _check_sharding_tree(tree, what) -> None:
    for leaf in tu.tree_leaves(tree, is_leaf=_is_sharding_leaf):
        if not _is_sharding_leaf(leaf):
            raise TypeError(
                f"jit: {what} leaves must be Shardings (NamedSharding(mesh, P(...))), PartitionSpecs or "
                "None, "
                f"got {leaf!r}"
            )


def _sharding_leaves(spec_tree, values, avals, where, what) -> list:
    """One bridge sharding (or None) per leaf of ``values``, from the prefix tree ``spec_tree``."""
    out = []
    for s, aval in zip(sharding_leaves(spec_tree, values, where, what), avals):
        if s is None:
            out.append(None)
            continue
        if isinstance(s, SingleDeviceSharding):
            raise ValueError(
                f"{where}: {what} has {s!r}; to run on one device use jit(..., device=...), not a sharding"
            )
        try:
            s.shard_shape(aval.shape)
            out.append(s._bridge(aval.ndim))
        except ValueError as e:
            raise ValueError(f"{where}: {what}: {e}") from None
    return out


_MAX_INSTANCES = 256
# Each jitted function's traced and compiled programs (NOTE: [caches have an owner]).
_functions = register_cache(
    "jit.functions", CacheGroup(clear_owner=lambda f: f.clear_cache(), size_of=lambda f: f._cache_size())
)
