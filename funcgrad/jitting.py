"""``jit``: stage a function to a jaxpr once per input signature and run it compiled by XLA.

Layer: surface. Imports the kernel (tracing, pytrees), ``xla_bridge`` (``dispatch`` and the
package's lazy public functions), ``ref``, the sharding modules, ``_aot``, ``_trace_key``,
``_jit_params`` (``jit``'s parameters resolved and checked: static and donated arguments, compiler
options, sharding trees) and ``_jit_route`` (the flags and the redirect rows of the call route,
NOTE: [jit flags]). The
module is named ``jitting`` so that ``funcgrad.jit`` is always the function (a submodule named
``jit`` would rebind the package attribute when imported).

This module owns the staging half of a jitted function; the bridge owns the call (NOTE: [jitted
call route] in xla_bridge/dispatch.py). ``JittedFunction`` subclasses the bridge's ``Dispatcher``
and implements its ``_stage``: split the arguments (the bridge's one split, ``Dispatcher._split``),
flatten, look the input signature up in the trace cache and trace on a miss. Everything else
here is the user API: the trace cache and its ``cache_info``, retrace warnings, the entry points
of the AOT API (``trace``, ``lower``, ``eval_shape``) and ``jit``'s parameters, each honoured or
refused. The stages themselves (``Traced``, ``Lowered``, ``CompiledCall``, ``ShapeDtypeStruct``)
are ``funcgrad._aot``'s and the trace cache's key is built by ``funcgrad._trace_key``: both a
floor below this module, which re-exports the stages' public names where they have always been.

The trace cache key is (input tree structure, each leaf's shape/dtype/weak type, static
arguments); ``jit(f)`` made twice for the same ``f`` and options shares it (as in JAX). A function
retraced more than ``_trace_key.RETRACE_WARNING_THRESHOLD`` times warns once, naming what changed
(``_trace_key.note_retrace``).
"""

from __future__ import annotations

import collections
import functools
import inspect
import logging
import time
import traceback
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from funcgrad import _key_reuse, kernel, xla_bridge
from funcgrad._aot import ArgInfo, CompiledCall, Lowered, ShapeDtypeStruct, Traced, _RefStaged, result_paths
from funcgrad._api_util import (
    abstractify,
    explain_concretization,
    flatten_outputs,
    fun_sourceinfo,
    is_abstract,
    no_jax_array,
)
from funcgrad._jit_params import (
    _check_sharding_tree,
    _compiler_options,
    _placed_if_used,
    _sharding_leaves,
    argument_options,
    donated_flags,
)
from funcgrad._jit_route import _jit_flags  # NOTE: [jit flags]
from funcgrad._ref_errors import refuse_returned_refs
from funcgrad._ref_scopes import HITYPES, is_stateful_arg, lower_hi_values, trace_stateful
from funcgrad._sharding_types import renamed_out_shardings
from funcgrad._shardings import (
    Sharding,
    sharding_leaves,
)
from funcgrad._trace_key import CacheInfo, RetraceWarning, _as_tuple, _aval_key, _ref_key, note_retrace
from funcgrad._user_contexts import user_contexts  # NOTE: [user contexts]
from funcgrad.kernel import batching, core, monitoring
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.caches import CacheGroup, register_cache
from funcgrad.kernel.custom_derivatives import custom_vjp_in
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import typecheck_jaxpr
from funcgrad.kernel.partial_eval import StagingTrace, close_over_tracers
from funcgrad.ref import Ref, abstract_ref
from funcgrad.xla_bridge import programs
from funcgrad.xla_bridge.dispatch import Dispatcher, NonHashableStaticArgumentError, Staged, strict_static_key

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

_logger = logging.getLogger("funcgrad")


class PjitFunction(Dispatcher):
    """The result of ``jit(f)``: call it like ``f``. Its type has the name of JAX's jitted-function
    type (``jaxlib``'s ``PjitFunction``, which libraries read: chex's ``is_traceable``); it is
    funcgrad's pjit, ``jit`` with shardings (``JittedFunction`` is the same class).

    ``.lower(*args)`` gives the StableHLO (``.as_text()``) and ``.compile()``; ``.trace(*args)``
    the jaxpr; ``.eval_shape(*args)`` the output shapes; ``.cache_info()`` the trace cache's hits
    and misses. Calls go through the bridge's dispatcher (NOTE: [jitted call route]).
    """

    # The function lives outside the instance dict: the dict is the state ``jit(f)`` made twice
    # shares, and it must not keep ``f`` alive (NOTE: [jit instances hold their function weakly]).
    __slots__ = ("_fun", "__wrapped__")

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
        self._init_options = (
            static_argnums, static_argnames, donate_argnums, donate_argnames, device, in_shardings,
            out_shardings,
        )  # fmt: skip
        name = getattr(fun, "__name__", None) or type(fun).__name__
        try:
            self._signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None
            if donate_argnames is not None:  # (JAX's error: names need the signature)
                raise ValueError(
                    f"Getting the signature of function {fun} failed. Pass donate_argnums instead of "
                    "donate_argnames."
                ) from None
        nums, names, donate, donate_names, n_named = argument_options(
            name, self._signature, static_argnums, static_argnames, donate_argnums, donate_argnames
        )
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
            named_positional=n_named,
        )
        self._cache: dict[Any, Staged] = {}
        self._hits = 0
        self._misses = 0
        self._keys: list = []
        self._warned = False
        _functions.add(self)

    def __reduce__(self):
        # As JAX's jitted functions, a jitted function pickles (with cloudpickle for a local
        # function) as its function and options; the unpickled one has an empty cache.
        init_args = (self._fun, *self._init_options)
        return (_unpickle_jitted, (type(self), init_args, getattr(self, "_compiler_options", None)))

    def __del__(self):
        # The call counter lives in the C base, outside the shared state: kept for the next
        # instance on this state (NOTE: [jit instances hold their function weakly]).
        # (try, not contextlib.suppress: at interpreter exit the module's globals may be None)
        try:
            self.__dict__["_calls_at_exit"] = self._native_calls
        except Exception:
            pass

    @classmethod
    def _adopt(cls, fun, state: dict):
        """A jitted ``fun`` whose state (caches, compiled programs, options) is ``state``: the
        instance dict of an earlier ``jit(fun)`` that has been collected."""
        self = cls.__new__(cls)
        self.__dict__ = state
        self._fun = self.__wrapped__ = fun
        self._native_calls = state.pop("_calls_at_exit", 0)  # (the C counter: cache_info's hits)
        owner = state.get("_owner_ref")  # the native dispatcher's way back (xla_bridge/dispatch.py)
        if owner is not None:
            owner[0] = weakref.ref(self)
        _functions.add(self)
        return self

    # -- staging (the one method the bridge's Dispatcher asks for) -----------------------------

    def _stage(self, args, kwargs, abstract=False):
        entry, flat, static_key, dyn_kwargs = self._entry(args, kwargs, abstract)
        return entry, flat, self._donated(len(entry.hoisted), len(flat), static_key, args, dyn_kwargs)

    def _arg_names(self, static_key, dyn_args, dyn_kwargs) -> list[str]:
        static_pos = dict(static_key)
        positions = [i for i in range(len(dyn_args) + len(static_pos)) if i not in static_pos]
        names = []
        params, var = [], None  # (the positional parameters, then the *args one, as JAX names them)
        if self._signature is not None:
            for p in self._signature.parameters.values():
                if p.kind is p.VAR_POSITIONAL:
                    var = p.name
                    break
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                    params.append(p.name)
        for path, _ in tu.tree_leaves_with_path((dyn_args, dyn_kwargs)):
            head, rest = path[0], path[1:]
            if head.idx == 0:
                pos = positions[rest[0].idx]
                if pos < len(params):
                    label = params[pos]
                else:
                    label = f"{var}[{pos - len(params)}]" if var is not None else f"args[{pos}]"
                names.append(f"{label}{tu.keystr(rest[1:])}")
            else:
                names.append(f"{rest[0].key}{tu.keystr(rest[1:])}")
        return names

    def _trace(self, static_key, static_kw, dyn_args, dyn_kwargs, flat, in_tree, names):
        statics = dict(static_key)
        static_kwargs = dict(static_kw)
        n_total = len(dyn_args) + len(statics)
        out_tree_box = []
        key_effects = []
        fun = self._fun
        name = self._name
        # As JAX's: building jit(f) of a callable without weak references works, tracing it raises
        # the weakref TypeError (JAX's trace cache holds the function weakly; api_test's
        # test_jit_of_nonweakreferenceable_function; jit(np.sin)(1.0) among them).
        weakref.ref(fun)

        def flat_fun(*leaves):
            d_args, d_kwargs = tu.tree_unflatten(in_tree, leaves)
            it = iter(d_args)
            full = [statics[i] if i in statics else next(it) for i in range(n_total)]
            try:
                if _key_reuse.active():  # (a boundary of the key-reuse checker: NOTE: [key reuse])
                    with _key_reuse.body((full, d_kwargs)) as kb:
                        out = fun(*full, **d_kwargs, **static_kwargs)
                        _key_reuse.finish(kb, out)
                    key_effects.append(kb.effects)
                else:
                    out = fun(*full, **d_kwargs, **static_kwargs)
            except core.ConcretizationTypeError as e:
                # the funcgrad.numpy fix for NumPy calls, and JAX's line naming the traced function
                explain_concretization(e, None, None, f"{fun_sourceinfo(fun)} for jit")
                raise
            out = lower_hi_values(out)  # (a high-level result leaves as its low-level values)
            try:
                out_leaves, out_tree = flatten_outputs(out, f"jit({name})", fun)
            except TypeError:
                # JAX's ValueError for a Ref, naming the argument it was passed in as
                refuse_returned_refs(out, f"jit({name})", fun, "jit", dict(zip(map(id, leaves), names)))
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
                self._in_shardings, dyn_args, avals[:n_pos], f"jit({name})", "in_shardings", names
            )
            # (As in JAX, an argument keeps its own type: in_shardings place it, they do not retype it.)
        if _jit_flags["no_tracing"]:
            raise RuntimeError(
                f"jit({name}) must be traced for arguments ({', '.join(a.str_short() for a in avals)}), but "
                "no_tracing is set (jax_no_tracing): call it once outside no_tracing() to fill its cache"
            )
        # (as JAX's: at WARNING under jax_log_compiles, else at DEBUG, for a logger set to show them)
        level = logging.WARNING if _jit_flags["log_compiles"] else logging.DEBUG
        logged = _logger.isEnabledFor(level)
        if logged:
            _logger.log(
                level, "Compiling jit(%s) for arguments (%s)", name, ", ".join(a.str_short() for a in avals)
            )
        start = time.perf_counter()
        with monitoring.timed_event(monitoring.JAXPR_TRACE_EVENT, fun_name=name):
            closed, n_outs, plan = trace_stateful(flat_fun, avals, names, f"jit({name})", refs, fun)
        if logged:
            _logger.log(level, "Finished tracing %s for jit in %.9f sec", name, time.perf_counter() - start)
        core.check_leaks_now()  # (NOTE: [leak checking])
        if _jit_flags["enable_checks"]:
            typecheck_jaxpr(closed.jaxpr)
        if user_ins is not None and self._out_shardings is None and not getattr(self, "_keep_unused", False):
            user_ins = _placed_if_used(closed.jaxpr, user_ins)
        closed, hoisted = close_over_tracers(closed)
        ins, outs = None, None
        if user_ins is not None:
            ins = (None,) * len(hoisted) + tuple(user_ins) + (None,) * (len(flat) - len(user_ins))
        if self._out_shardings is not None:
            out_avals = closed.out_avals[:n_outs]
            shaped = tu.tree_unflatten(out_tree_box[0], list(range(len(out_avals))))
            paths = [f"result{tu.keystr(p)}" for p, _ in tu.tree_leaves_with_path(shaped)]
            outs = tuple(
                _sharding_leaves(
                    self._out_shardings, shaped, out_avals, f"jit({name})", "out_shardings", paths
                )
            ) + (None,) * (len(closed.out_avals) - n_outs)
        else:
            outs = renamed_out_shardings(closed.out_avals)
        if plan is not None:
            if ins is not None:
                ins = ins + (None,) * (len(closed.in_avals) - len(ins))
            staged = _RefStaged(closed, out_tree_box[0], hoisted, ins, outs, plan, n_outs)
        else:
            staged = Staged(closed, out_tree_box[0], hoisted, ins, outs)
        # (JAX's names of the program's parameters and results: NOTE: [operation locations])
        staged.arg_names = ("",) * len(hoisted) + tuple(names)
        staged.key_reuse = key_effects[-1] if key_effects else None
        staged.result_names = result_paths(out_tree_box[0]) + ("",) * (len(closed.out_avals) - n_outs)
        return staged

    def _split(self, args, kwargs, check: bool = True):
        static_key, static_kw, dyn_args, dyn_kwargs = super()._split(args, kwargs, check)
        if HITYPES:  # (immutable high-level values enter as their low-level values, raised inside)
            dyn_args, dyn_kwargs = lower_hi_values((dyn_args, dyn_kwargs))
        return static_key, static_kw, dyn_args, dyn_kwargs

    def _entry(self, args, kwargs, abstract=False):
        static_key, static_kw, dyn_args, dyn_kwargs = self._split(args, kwargs)
        flat, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
        refs = None
        for i, leaf in enumerate(flat):
            if type(leaf) is np.ma.MaskedArray:  # (JAX's error: the mask would be dropped silently)
                raise ValueError(
                    "numpy masked arrays are not supported as direct inputs to JAX functions. Use "
                    "arr.filled() to convert the value to a standard numpy array."
                )
            if not core.is_array_like(leaf):
                if type(leaf) is core.Token:
                    continue  # a token argument (NOTE: [tokens])
                if abstract and getattr(leaf, "is_ref", False):
                    flat[i] = abstract_ref(leaf)  # (a Ref of its type: ShapeDtypeStruct(is_ref=True))
                    refs = True
                    continue
                if abstract and is_abstract(leaf):
                    continue  # trace/lower take ShapeDtypeStructs and avals, as JAX's AOT API
                if is_stateful_arg(leaf):  # a Ref, or a mutable box (NOTE: [mutable high-level values])
                    refs = True
                    continue
                no_jax_array(leaf)
                names = self._arg_names(static_key, dyn_args, dyn_kwargs)
                if is_abstract(leaf):  # (JAX's words: it has an aval but no buffer to run on)
                    aval = abstractify(leaf)
                    shape = f"{getattr(aval.dtype, 'name', aval.dtype)}[{','.join(map(str, aval.shape))}]"
                    raise TypeError(
                        f"Argument '{names[i]}' of shape {shape} of type {type(leaf)} is not a valid "
                        "JAX type."
                    )
                raise TypeError(  # (JAX's words: the function's repr, then its advice)
                    f"Error interpreting argument to {self._fun} as an abstract array. The "
                    f"problematic value is of type {type(leaf)} and was passed to the function at "
                    f"path {names[i]}.\nThis typically means that a jit-wrapped function was called "
                    "with a non-array argument, and this argument was not marked as static using "
                    "the static_argnums or static_argnames parameters of jax.jit."
                )
        # The named axes in scope type the collectives inside (NOTE: [named axes]).
        leaf_key = tuple(_aval_key(x) for x in flat) if refs is None else _ref_key(flat)
        # Statics keyed by type and value, as JAX's (NOTE: [strict static keys]).
        statics = (static_key and strict_static_key(static_key), static_kw and strict_static_key(static_kw))
        key = (in_tree, leaf_key, *statics, batching.axis_env(), hooks.mode_key())
        if _key_reuse.active():  # (a trace that summarises what it does to keys: NOTE: [key reuse])
            key += ("key_reuse",)
        if user_contexts:
            key += (tuple(c.value for c in user_contexts),)
        try:
            entry = self._cache.get(key)
        except Exception as e:  # a static argument's __eq__ raised (jaxlib's words, as its C++ cache's)
            if not (static_key or static_kw):
                raise
            raise ValueError(
                "static arguments should be comparable using __eq__.The following error was raised when "
                f"comparing two objects of types {type(key)} and {type(key)}. The error was:\n"
                + "".join(traceback.format_exception(e))
            ) from None
        changed = None
        if entry is not None and type(entry) is _RefStaged and not entry.plan.boxes_unchanged():
            # A closed-over box changed structure since: the trace made for its structure now, else
            # a new one (JAX's cache keys on the boxes' types: hijax_test
            # test_closed_over_type_changing_box)
            changed = entry
            entry = next((e for e in _box_variants(changed) if e.plan.boxes_unchanged()), None)
            if entry is not None:
                self._cache[key] = entry
        if entry is None:
            self._misses += 1
            names = self._arg_names(static_key, dyn_args, dyn_kwargs)
            self._warned = note_retrace(
                self._keys, key, names, self._fun, self._name, self._misses, self._warned
            )
            entry = self._trace(static_key, static_kw, dyn_args, dyn_kwargs, flat, in_tree, names)
            if not entry.hoisted:
                # A jaxpr that captured tracers of an enclosing transformation is not reusable.
                if changed is not None and type(entry) is _RefStaged:
                    entry.box_variants = _box_variants(changed)
                    entry.box_variants.append(entry)
                self._cache[key] = entry
        else:
            self._hits += 1
        return entry, flat, static_key, dyn_kwargs

    def _call(self, args, kwargs):
        # Under jax_debug_nans/debug_infs the checking trace may run the function's Python again
        # (JAX's de-optimized call: funcgrad/debug.py, ``FiniteCheckTrace.jitted_call``).
        rerun = getattr(core.current_trace(), "jitted_call", None)
        if rerun is not None:
            return rerun(self._fun, args, kwargs, lambda: self._call_compiled(args, kwargs))
        if _key_reuse.active():
            return self._call_key_checked(args, kwargs)
        return self._call_compiled(args, kwargs)

    def _call_key_checked(self, args, kwargs):
        # NOTE: [key reuse]: the keys the function consumes (its trace's summary) are checked and
        # marked before it runs, at every call; its key results get their cells after.
        staged = self._stage(args, kwargs)[0]
        effects = getattr(staged, "key_reuse", None)
        if effects is None:
            return self._call_compiled(args, kwargs)
        operands = _key_reuse.keys_in((args, kwargs))
        _key_reuse.apply_effects(effects, operands, None, "jit")
        out = self._call_compiled(args, kwargs)
        _key_reuse.apply_effects(effects, operands, _key_reuse.keys_in(out), None)
        return out

    # NOTE: [jitted calls with Refs under a transformation]
    # A jitted function whose program reads or writes Refs it closes over, called under grad or
    # vmap, is staged once (its Python runs once on a cache miss, as JAX's) and its program is
    # evaluated equation by equation at that transformation, not bound as one ``jit`` equation:
    # a Ref's final value computed from values the transformation does not touch stays a plain
    # value, written back as JAX writes it (a ``jit`` equation's every output would be the
    # transformation's). So is a call given Refs as arguments there, unless its program holds a
    # custom_vjp (or a mutable box is among the arguments): a custom_vjp that saves such a Ref for
    # ``bwd`` (JAX's gradient-statistics plumbing) must write the caller's Ref when the backward
    # pass runs, and in the staged program it holds the trace's stand-in for it (NOTE: [refs are
    # functionalised at trace time]); such a call runs the function itself, its Python at every
    # call (JAX's at a cache miss).
    def _call_compiled(self, args, kwargs):
        # The staged route, around which a program that reads or writes Refs reads them before
        # and writes them back after (NOTE: [refs are functionalised at trace time]).
        current = core.current_trace()
        transformed = type(current) is not core.EvalTrace and not isinstance(current, StagingTrace)
        staged = None
        if transformed:
            leaves = tu.tree_leaves((args, kwargs))
            if any(is_stateful_arg(x) and type(x) is not Ref for x in leaves):
                return self._fun(*args, **kwargs)  # (a mutable box argument)
            if any(type(x) is Ref for x in leaves):
                staged, flat, donated = self._stage(args, kwargs)
                # (NOTE: [jitted calls with Refs under a transformation]; the first such call
                # runs the Python twice: staged, then itself)
                if custom_vjp_in(staged.closed.jaxpr):
                    return self._fun(*args, **kwargs)
        if staged is None:
            staged, flat, donated = self._stage(args, kwargs)
        if type(staged) is not _RefStaged:
            try:
                return self._run(staged, flat, donated)
            except OverflowError:
                self._overflowing_argument(args, kwargs, flat)
                raise
        plan = staged.plan
        values = plan.inputs(flat)
        if transformed:  # NOTE: [jitted calls with Refs under a transformation]
            closed = staged.closed
            outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *staged.hoisted, *values)
            out, finals = staged.out_tree.unflatten(outs)
        else:
            out, finals = self._run(staged, values, (False,) * (len(staged.hoisted) + len(values)))
        plan.write_back(flat, finals)
        return out

    _inline = False  # (jit(inline=True): set by ``jit``)

    def _run(self, staged, flat, donated):
        if (
            self._inline
            and type(core.current_trace()) is not core.EvalTrace
            and self._plain_placement(staged)
        ):
            # jit(inline=True) inside a trace: the equations themselves, no ``jit`` equation
            outs = core.eval_jaxpr(staged.closed.jaxpr, staged.closed.consts, *staged.hoisted, *flat)
            return staged.out_tree.unflatten(outs)
        return super()._run(staged, flat, donated)

    def _plain_placement(self, staged) -> bool:
        return self._device is None and staged.in_shardings is None and staged.out_shardings is None

    def _overflowing_argument(self, args, kwargs, flat) -> None:
        """JAX's OverflowError for a Python int argument its integer type cannot hold."""
        bound = 2**63 if _dt.x64_enabled else 2**31
        for i, leaf in enumerate(flat):
            if type(leaf) is int and not -bound <= leaf < bound:
                static_key, _, dyn_args, dyn_kwargs = self._split(args, kwargs, check=False)
                path = self._arg_names(static_key, dyn_args, dyn_kwargs)[i]
                raise OverflowError(
                    "An overflow was encountered while parsing an argument to a jitted computation, "
                    f"whose argument path is {path}. Got {type(leaf)} with value {leaf}"
                ) from None

    def _donated(self, n_hoisted, n_flat, static_key, args, dyn_kwargs) -> tuple[bool, ...]:
        """One flag per jaxpr input (``donated_flags``)."""
        if not self._donate:
            return (False,) * (n_hoisted + n_flat)
        return donated_flags(
            self._donate_argnums, self._donate_names, n_hoisted, static_key, args, dyn_kwargs
        )

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

        >>> import numpy as np
        >>> jit(lambda x: x.sum(0)).eval_shape(np.ones((2, 3)))
        ShapeDtypeStruct(shape=(3,), dtype=float64)
        """
        staged = self._entry(args, kwargs)[0]
        avals = staged.closed.out_avals
        shardings = [a.sharding for a in avals]
        if self._out_shardings is not None:  # (the outputs' shardings jit was asked for, as JAX's)
            tree = tu.tree_unflatten(staged.out_tree, list(avals))
            asked = sharding_leaves(self._out_shardings, tree, f"jit({self._name})", "out_shardings")
            shardings = [s if isinstance(s, Sharding) else d for s, d in zip(asked, shardings)]
        outs = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type, sharding=s) for a, s in zip(avals, shardings)]
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
        """Forget traced and compiled programs of this function; its executables are freed once
        nothing else holds them, as JAX's are."""
        entries = [v for entry in self._cache.values() for v in _box_variants(entry)]
        closed = [getattr(entry, "closed", None) for entry in entries]
        self._cache.clear()
        self._clear_dispatch()
        programs.forget_programs([c for c in closed if c is not None])

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
        # JAX's text (its jitted functions are PjitFunction objects): chex's is_traceable reads it;
        # "<PjitFunction>" where the function's own repr fails, as JAX's.
        try:
            return f"<PjitFunction of {self._fun!r}>"
        except Exception:
            return "<PjitFunction>"


JittedFunction = PjitFunction


def _unpickle_jitted(cls, init_args, compiler_options):
    jitted = cls(*init_args)
    if compiler_options:
        jitted._compiler_options = compiler_options
    return jitted


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
    compiler_options: dict | None = None,
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
    - ``compiler_options``: XLA's options by name (``{"xla_cpu_enable_fast_math": True}``,
      ``{"optimization_level": 1}``) for the programs of this function, as JAX's: part of their
      cache key; XLA refuses an unknown name or a bad value at the first call
      (``JaxRuntimeError``: "No such compile option"). Programs over several devices are compiled
      without them.
    - ``keep_unused``: honoured -- the compiled program keeps every input, used or not (JAX may
      prune unused ones when it is False; funcgrad never does).
    - ``inline``: as JAX's, a function jitted with ``inline=True`` and called inside another
      transformation's trace puts its equations into the enclosing jaxpr instead of one ``jit``
      equation (the values are the same: XLA inlines the private function of a ``jit`` equation
      when it compiles the enclosing program anyway).

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
            compiler_options=compiler_options,
        )
    if isinstance(fun, staticmethod):  # (JAX's errors, in its words)
        raise TypeError(f"staticmethod arguments are not supported, got {fun}")
    if inspect.isgeneratorfunction(fun):
        raise TypeError(f"Expected a function, got a generator function: {fun}")
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun}")  # (JAX's words)
    placement = None
    if device is not None or backend is not None:
        try:
            placement = xla_bridge.resolve_device(device, backend)
        except (TypeError, ValueError) as e:
            name = getattr(fun, "__name__", None) or type(fun).__name__
            raise type(e)(f"jit({name}): {e}") from None
    options = _compiler_options(compiler_options)
    if in_shardings is not None or out_shardings is not None or options:
        _check_sharding_tree(in_shardings, "in_shardings")
        _check_sharding_tree(out_shardings, "out_shardings")
        jitted = JittedFunction(
            fun,
            static_argnums,
            static_argnames,
            donate_argnums,
            donate_argnames,
            placement,
            in_shardings,
            out_shardings,
        )
        jitted._compiler_options = options  # (its programs' cache keys hold them)
        jitted._keep_unused = keep_unused
        return jitted
    # As in JAX, jit(f) made twice shares one cache: `jit(f)(x)` in a loop traces once.
    config = tuple(_as_tuple(v) for v in (static_argnums, static_argnames, donate_argnums, donate_argnames))
    key = (id(fun), config, placement, bool(inline), bool(keep_unused))
    hit = _instances.get(key)
    if hit is not None and hit[0]() is fun:
        _instances.move_to_end(key)
        jitted = hit[1]()
        if jitted is None:  # (collected, `fun` alive: a new instance on the same state)
            jitted = JittedFunction._adopt(fun, hit[2])
            hit[1] = weakref.ref(jitted)
        return jitted
    jitted = JittedFunction(fun, static_argnums, static_argnames, donate_argnums, donate_argnames, placement)
    jitted._inline = bool(inline)
    if keep_unused:  # (NOTE: [unread arguments choose no devices]: all of them do)
        jitted._keep_unused = True
    try:
        fun_ref = weakref.ref(fun, functools.partial(_drop_instance, key))
    except TypeError:
        return jitted  # (no weak reference to it: its jit objects share nothing)
    _instances[key] = [fun_ref, weakref.ref(jitted), jitted.__dict__]
    if len(_instances) > _MAX_INSTANCES:
        _instances.popitem(last=False)
    return jitted


# NOTE: [jit instances hold their function weakly]
def _box_variants(entry) -> list:
    """The traces of one signature made for different structures of the boxes it closes over
    (``entry`` among them), sharing one list."""
    variants = getattr(entry, "box_variants", None)
    if variants is None:
        variants = [entry]
        if type(entry) is _RefStaged:
            entry.box_variants = variants
    return variants


# `jit(f)` made twice shares one state (traces, compiled programs), as JAX's weakref_lru_cache
# keyed on `f`: `_instances` maps (id(f), options) to [weakref(f), weakref(jitted), jitted's
# instance dict]. Only the jitted object holds `f` (in slots, outside that dict), so deleting
# the last jitted function (and `f`) frees `f`, its closure and the compiled programs at once,
# as in JAX (api_test's test_jit_reference_dropping); while `f` lives, `jit(f)` again gets the
# live jitted object, or a new one adopting the state. Nothing in the dict may refer to the
# instance strongly: the native dispatcher reaches it through a weak cell (`_owner_ref`,
# xla_bridge/dispatch.py's `_weak_miss`).
_instances: collections.OrderedDict = register_cache("jit.instances", collections.OrderedDict())


def _drop_instance(key, fun_ref, instances=_instances) -> None:
    # (`instances` bound here: at interpreter exit the module's globals may be gone)
    entry = instances.get(key)
    if entry is not None and entry[0] is fun_ref:  # (not a later function given the same id)
        del instances[key]


def library_jit(fun: Callable, **options) -> JittedFunction:
    """``jit(fun, **options)`` for a function the library jits on its caller's behalf (a sampler,
    a special function JAX jits): its retraces follow the shapes and dtypes the caller chose, so it
    never gives jit's retrace warning (JAX has none for them).

    >>> import funcgrad.numpy as fnp
    >>> float(library_jit(fnp.sin)(0.0))
    0.0
    """
    jitted = jit(fun, **options)
    jitted._warned = True  # the warning's once-only flag: already given
    return jitted


kernel.register(library_jit=library_jit)  # NOTE: [eager library functions as one program]


_MAX_INSTANCES = 256
# Each jitted function's traced and compiled programs (NOTE: [caches have an owner]).
_functions = register_cache(
    "jit.functions", CacheGroup(clear_owner=lambda f: f.clear_cache(), size_of=lambda f: f._cache_size())
)
