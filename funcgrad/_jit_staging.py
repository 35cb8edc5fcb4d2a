"""The staging half of ``jit``: a function staged to a jaxpr once per input signature.

Layer: surface, one floor below ``funcgrad.jitting``. Imports the kernel (tracing, pytrees, partial
evaluation), ``xla_bridge`` (``dispatch``: the ``Dispatcher`` base, ``Staged`` and the static-key
check; ``programs``), ``ref``, ``_ref_scopes``/``_ref_errors`` (Refs and mutable boxes as
arguments), ``_aot`` (``_RefStaged``), ``_trace_key`` (the trace cache's key and retrace warnings),
``_jit_params`` (shardings and donation resolved), ``_jit_route`` (NOTE: [jit flags]),
``_api_util``, ``_key_reuse`` and ``_user_contexts``. Never ``funcgrad.jitting``, which imports it.

``JitStaging`` subclasses the bridge's ``Dispatcher`` and implements its one method, ``_stage``
(NOTE: [jitted call route] in xla_bridge/dispatch.py): split the arguments (the bridge's one split,
``Dispatcher._split``, with high-level values lowered), flatten, look the input signature up in the
trace cache and trace on a miss (``_trace``: the function's Python run once on tracers, shardings
and names attached to the staged program). It owns the trace cache and its statistics
(``cache_info``, ``clear_cache``). ``funcgrad.jitting``'s ``PjitFunction`` adds the user's side on
top: ``jit``'s options, the call route around Refs, key reuse and ``inline``, the AOT API, pickling
and the sharing of ``jit(f)`` made twice. A subclass sets ``_fun`` (the function), ``_signature``
(its ``inspect.Signature`` or None), ``_in_shardings``/``_out_shardings`` and
``_donate_argnums``/``_donate_names`` before the first call.

The trace cache key is (input tree structure, each leaf's shape/dtype/weak type, static
arguments, the named axes and trace modes in scope); a function retraced more than
``_trace_key.RETRACE_WARNING_THRESHOLD`` times warns once, naming what changed
(``_trace_key.note_retrace``).
"""

from __future__ import annotations

import logging
import time
import traceback
import weakref
from typing import Any

import numpy as np

from funcgrad import _key_reuse
from funcgrad._aot import _RefStaged, result_paths
from funcgrad._api_util import (
    abstractify,
    explain_concretization,
    flatten_outputs,
    fun_sourceinfo,
    is_abstract,
    no_jax_array,
)
from funcgrad._jit_params import _placed_if_used, _sharding_leaves, donated_flags
from funcgrad._jit_route import _jit_flags  # NOTE: [jit flags]
from funcgrad._ref_errors import refuse_returned_refs
from funcgrad._ref_scopes import HITYPES, is_stateful_arg, lower_hi_values, trace_stateful
from funcgrad._sharding_types import renamed_out_shardings, untyped_over_args
from funcgrad._trace_key import CacheInfo, _aval_key, _ref_key, note_retrace
from funcgrad._user_contexts import user_contexts  # NOTE: [user contexts]
from funcgrad.kernel import batching, core, monitoring
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import typecheck_jaxpr
from funcgrad.kernel.partial_eval import close_over_tracers
from funcgrad.ref import Ref, abstract_ref
from funcgrad.xla_bridge import programs
from funcgrad.xla_bridge.dispatch import Dispatcher, Staged, strict_static_key

_logger = logging.getLogger("funcgrad")


class JitStaging(Dispatcher):
    """A ``Dispatcher`` whose ``_stage`` traces the function once per input signature and keeps
    the staged programs in its trace cache (``cache_info()``: hits and misses)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._cache: dict[Any, Staged] = {}
        self._hits = 0
        self._misses = 0
        self._keys: list = []
        self._warned = False

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
        if (dyn_kwargs or static_kw) and self._in_shardings is not None:  # (JAX's words)
            raise ValueError("pjit does not support kwargs when in_shardings is specified.")
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
        with (
            monitoring.timed_event(monitoring.JAXPR_TRACE_EVENT, fun_name=name),
            untyped_over_args(flat, user_ins),
        ):
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

    def _donated(self, n_hoisted, n_flat, static_key, args, dyn_kwargs) -> tuple[bool, ...]:
        """One flag per jaxpr input (``donated_flags``)."""
        if not self._donate:
            return (False,) * (n_hoisted + n_flat)
        return donated_flags(
            self._donate_argnums, self._donate_names, n_hoisted, static_key, args, dyn_kwargs
        )

    def cache_info(self) -> CacheInfo:
        """Hits and misses (traces) of this function's cache.

        >>> from funcgrad import jit
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


def _box_variants(entry) -> list:
    """The traces of one signature made for different structures of the boxes it closes over
    (``entry`` among them), sharing one list."""
    variants = getattr(entry, "box_variants", None)
    if variants is None:
        variants = [entry]
        if type(entry) is _RefStaged:
            entry.box_variants = variants
    return variants
