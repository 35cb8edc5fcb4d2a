"""``jit``: stage a function to a jaxpr once per input signature and run it compiled by XLA.

Layer: surface. Imports the kernel, the primitive catalog (the ``jit`` call primitive), tree_util
and ``xla_bridge`` (importing ``xla_bridge.jit_impl`` installs the compiled impl of ``jit_p`` and
the device-buffer hooks of ``Array``; see design.md, dependency inversion).

Three ways in, fastest first:

- **Native dispatch** (the current trace is an ``EvalTrace``; no keyword or donated arguments;
  static arguments only positional; jax's config not loaded): jaxlib's C++ ``pjit`` dispatcher
  runs our executable (NOTE: [native dispatch] in xla_bridge/jit_impl.py). Python only swaps
  ``Array`` leaves for their device buffers and wraps the output buffers; top-level array or
  scalar arguments are not even flattened in Python. A dispatcher cache miss comes back to
  ``_native_miss``, which traces/compiles through the general machinery below.
- **The Python fast path** (same conditions, but jax is imported, so jaxlib's process-wide
  dispatch state belongs to jax): flatten with the C++ pytree registry, make each leaf a device
  buffer, look up ``(tree, buffer avals)`` in a dict, run, wrap (see NOTE: [jit fast path]).
  Neither fast path looks at an equation: the cost does not grow with the program.
- **Everything else** binds the ``jit`` call primitive with the cached jaxpr, so transformations
  see one call (``grad(jit(f))``, ``vmap(jit(f))``, ``make_jaxpr(jit(f))``); evaluated eagerly,
  the binding runs the same compiled program (``xla_bridge.jit_impl``).

The trace cache key is (input tree structure, each leaf's shape/dtype/weak type, static
arguments); ``jit(f)`` made twice for the same ``f`` and options shares it (as in JAX). A function
retraced more than ``RETRACE_WARNING_THRESHOLD`` times warns once, naming what changed.

# NOTE: [jit fast path]
# The Python fast cache maps (treedef, id(aval) per leaf) to the compiled call. ``id`` is safe
# because the bridge interns avals (``xla_bridge.dtypes.aval``) and keeps them alive forever;
# buffers made by ``device_put`` and by executables carry those interned avals. A miss falls back
# to the general path, which traces (or reuses the traced jaxpr) and compiles, then fills the
# entry.
"""

from __future__ import annotations

import collections
import functools
import inspect
import sys
import types
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

import xla_bridge.jit_impl as _xi
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.partial_eval import close_over_tracers, trace_to_jaxpr
from primitives.call import jit_p

__all__ = [
    "CacheInfo",
    "JittedFunction",
    "Lowered",
    "NonHashableStaticArgumentError",
    "RetraceWarning",
    "Traced",
    "jit",
]

RETRACE_WARNING_THRESHOLD = 8


class NonHashableStaticArgumentError(TypeError, ValueError):
    """A static argument is not hashable (a ValueError in JAX, a TypeError in Python terms)."""


class RetraceWarning(UserWarning):
    """A jitted function was traced (and compiled) many times: its cache key keeps changing."""


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    return (x,) if isinstance(x, int | str) else tuple(x)


class _CacheEntry:
    __slots__ = ("closed", "out_tree", "hoisted")

    def __init__(self, closed, out_tree, hoisted):
        self.closed = closed
        self.out_tree = out_tree
        self.hoisted = hoisted


class _FastEntry:
    __slots__ = ("call", "out_weak", "out_tree", "single")

    def __init__(self, compiled, out_tree):
        self.call = compiled.call
        self.out_weak = compiled.out_weak
        self.out_tree = out_tree
        # A bare leaf output: skip unflattening.
        self.single = out_tree.num_leaves == 1 and out_tree.num_nodes == 1


class CacheInfo:
    """Counters of a jitted function's trace cache: ``hits``, ``misses`` (traces), ``currsize``."""

    def __init__(self, hits: int, misses: int, size: int):
        self.hits, self.misses, self.currsize = hits, misses, size

    def __repr__(self):
        return f"CacheInfo(hits={self.hits}, misses={self.misses}, currsize={self.currsize})"


_EvalTrace = core.EvalTrace
_modules = sys.modules
_ndarray = np.ndarray
_SCALARS = frozenset({float, int, bool, complex, np.float32, np.float64, np.int32, np.int64, np.bool_})
_JAX_CONFIG = "jax._src.config"
_state = core._state
_flatten = tu.registry.flatten
_new = object.__new__


class JittedFunction:
    """The result of ``jit(f)``: call it like ``f``.

    ``.lower(*args)`` gives the StableHLO (``.as_text()``) and ``.compile()``; ``.trace(*args)``
    the jaxpr; ``.cache_info()`` the trace cache's hits and misses.
    """

    def __init__(self, fun, static_argnums, static_argnames, donate_argnums, donate_argnames=()):
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._name = getattr(fun, "__name__", None) or type(fun).__name__
        try:
            self._signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None
        params = list(self._signature.parameters.values()) if self._signature is not None else []
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        nums, names = set(_as_tuple(static_argnums)), set(_as_tuple(static_argnames))
        # As in JAX, static_argnums and static_argnames name the same parameters both ways, so a
        # static argument may be passed by position or by keyword.
        for n in list(nums):
            if 0 <= n < len(positional):
                names.add(positional[n])
        for s in list(names):
            if s in positional:
                nums.add(positional.index(s))
        self._static_argnums = tuple(sorted(nums))
        self._static_argnames = tuple(sorted(names))
        donate = set(_as_tuple(donate_argnums))
        for s in _as_tuple(donate_argnames):
            if s not in positional:
                raise ValueError(f"jit({self._name}): donate_argnames has {s!r}, which is not a parameter")
            donate.add(positional.index(s))
        self._donate_argnums = tuple(sorted(donate))
        self._cache: dict[Any, _CacheEntry] = {}
        self._fast: dict[Any, _FastEntry] = {}
        self._fast_ok = not self._static_argnums and not self._donate_argnums
        # The native dispatcher also takes positional static arguments (passed as one static).
        self._native_ok = not self._donate_argnums and all(n >= 0 for n in self._static_argnums)
        self._static_set = frozenset(self._static_argnums)
        self._plain = self._native_ok and not self._static_argnums
        self._hits = 0
        self._misses = 0
        self._native = None
        self._native_calls = 0
        self._native_misses = 0
        self._native_meta: list = []
        self._keys: list = []
        self._warned = False

    # -- the eager fast path (NOTE: [jit fast path]) -------------------------------------------

    def __call__(self, *args, **kwargs):
        # The hot path, kept to one Python frame: no static/keyword arguments, top-level NumPy
        # arrays, scalars or Arrays, a dispatcher already made (everything else: _dispatch).
        native = self._native
        if native is not None and self._plain and not kwargs and type(_state.trace) is _EvalTrace:
            flat = args
            for x in args:
                t = type(x)
                if t is _ndarray or t in _SCALARS:
                    continue
                if t is Array and x._buffer is not None:
                    flat = None
                    continue
                return self._dispatch(args, kwargs)
            if flat is None:
                flat = [x._buffer if type(x) is Array else x for x in args]
            if _JAX_CONFIG not in _modules:
                self._native_calls += 1
                res = native(len(args), (), *flat)
                if type(res) is dict:
                    return self._native_outputs(res)
                a = _new(Array)
                a._value = None
                a._buffer = res
                a.weak_type = res.aval.weak_type
                return a
        return self._dispatch(args, kwargs)

    def _dispatch(self, args, kwargs):
        if not self._native_ok or type(_state.trace) is not _EvalTrace:
            return self._call(args, kwargs)
        if _JAX_CONFIG in _modules:
            if kwargs or not self._fast_ok:
                return self._call(args, kwargs)
            return self._python_fast_call(args, kwargs)
        # Native dispatch (NOTE: [native dispatch] in xla_bridge/jit_impl.py). The dispatcher's
        # two static arguments: the input treedef (or, for top-level leaves only, the argument
        # count) and the static argument values.
        dyn, statics = args, ()
        snums = self._static_argnums
        if snums:
            if snums[-1] >= len(args) and self._signature is None:
                return self._call(args, kwargs)  # _split reports the bad static_argnums
            statics = tuple(args[i] for i in snums if i < len(args))
            dyn = tuple(a for i, a in enumerate(args) if i not in self._static_set)
        tree = None
        if kwargs:
            names = self._static_argnames
            static_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in names))
            dyn_kw = {k: v for k, v in kwargs.items() if k not in names}
            statics = _KwStatics(statics, static_kw)
            flat, tree = _flatten((dyn, dyn_kw))
        else:
            flat = dyn
            for x in dyn:
                t = type(x)
                if t is not _ndarray and t not in _SCALARS and t is not Array:
                    flat, tree = _flatten(dyn)  # containers: flatten here, so Arrays are seen
                    break
            if tree is None:
                tree = len(dyn)  # top-level leaves: the C++ side flattens nothing
        if any(type(x) is Array for x in flat):
            flat = list(flat)
            for i, x in enumerate(flat):
                if type(x) is Array:
                    b = x._buffer
                    if b is None:
                        b = _xi.fast_put(x._numpy(), x.weak_type)
                        if b is None:
                            return self._call(args, kwargs)
                        x._buffer = b
                    flat[i] = b
        native = self._native
        if native is None:
            native = self._native = _xi.make_native_dispatcher(self._name, self._native_miss)
        self._native_calls += 1
        try:
            res = native(tree, statics, *flat)
        except (TypeError, ValueError):  # jaxlib reports unhashable statics as ValueError
            if statics and not _hashable(statics):
                return self._call(args, kwargs)  # raises the clear error
            raise
        if type(res) is dict:
            return self._native_outputs(res)
        # A single bare output comes back as the buffer itself.
        a = _new(Array)
        a._value = None
        a._buffer = res
        a.weak_type = res.aval.weak_type
        return a

    def _native_outputs(self, res):
        # Several outputs come back as {entry index: [buffers]} (a native pytree).
        ((k, bufs),) = res.items()
        out_tree, out_weak = self._native_meta[k]
        return out_tree.unflatten(_xi.wrap_outputs(bufs, out_weak))

    def _merge(self, statics, dyn_args) -> tuple:
        """Positional arguments from the static values and the dynamic ones."""
        if not statics:
            return tuple(dyn_args)
        it, st = iter(dyn_args), iter(statics)
        return tuple(
            next(st) if i in self._static_set else next(it) for i in range(len(dyn_args) + len(statics))
        )

    def _native_miss(self, tree, statics, *leaves):
        """Cache miss of the native dispatcher: trace/compile as needed, run, describe the
        entry for the C++ fast path."""
        self._native_misses += 1
        array_impl = _xi.runtime().ArrayImpl
        wrapped = [
            _xi.wrap_outputs([x], [x.aval.weak_type])[0] if type(x) is array_impl else x for x in leaves
        ]
        kwargs = {}
        if type(statics) is _KwStatics:
            dyn, kwargs = tree.unflatten(wrapped)
            kwargs = {**kwargs, **dict(statics.kw)}
            statics = statics.pos
        else:
            dyn = tuple(wrapped) if type(tree) is int else tree.unflatten(wrapped)
        args = self._merge(statics, dyn)
        entry, flat, _ = self._entry(args, kwargs)
        if entry.hoisted:
            raise RuntimeError(f"jit({self._name}): an eager call captured tracers (internal error)")
        compiled = _xi.compiled(entry.closed, self._name, None)
        bufs = [
            _xi.to_buffer(x, aval, compiled.device, f"argument {i}")
            for i, (x, aval) in enumerate(zip(flat, compiled.in_avals))
        ]
        bufs = compiled.call(bufs)
        if entry.out_tree.num_leaves == 1 and entry.out_tree.num_nodes == 1:
            res = bufs[0]
        else:
            res = {len(self._native_meta): bufs}
            self._native_meta.append((entry.out_tree, compiled.out_weak))
        return res, _xi.fastpath_data(compiled, res, len(leaves))

    def _python_fast_call(self, args, kwargs):
        flat, tree = _flatten(args)
        key = [tree]
        bufs = []
        put = _xi.fast_put
        for x in flat:
            t = type(x)
            if t is Array:
                b = x._buffer
                if b is None:
                    b = put(x._numpy(), x.weak_type)
                    if b is None:
                        return self._call(args, kwargs)
                    x._buffer = b
            elif t is np.ndarray:
                b = put(x, False)
                if b is None:
                    return self._call(args, kwargs)
            elif t is float or t is int or t is bool or t is complex:
                b = _xi.put_scalar(x)
                if b is None:
                    return self._call(args, kwargs)
            else:
                return self._call(args, kwargs)
            bufs.append(b)
            key.append(id(b.aval))
        entry = self._fast.get(tuple(key))
        if entry is None:
            return self._call(args, kwargs, tuple(key), bufs)
        self._hits += 1
        outs = entry.call(bufs)
        if entry.single:
            a = _new(Array)
            a._value = None
            a._buffer = outs[0]
            a.weak_type = entry.out_weak[0]
            return a
        return entry.out_tree.unflatten(_xi.wrap_outputs(outs, entry.out_weak))

    # -- the general path ----------------------------------------------------------------------

    def _call(self, args, kwargs, fast_key=None, bufs=None):
        entry, flat, static_key = self._entry(args, kwargs)
        donated = self._donated(len(entry.hoisted), flat, static_key, args)
        if fast_key is not None and not entry.hoisted and type(_state.trace) is _EvalTrace:
            compiled = _xi.compiled(entry.closed, self._name, None)
            fast = _FastEntry(compiled, entry.out_tree)
            self._fast[fast_key] = fast
            outs = _xi.wrap_outputs(compiled.call(bufs), compiled.out_weak)
            return tu.tree_unflatten(entry.out_tree, outs)
        outs = jit_p.bind(*entry.hoisted, *flat, jaxpr=entry.closed, name=self._name, donated_invars=donated)
        return tu.tree_unflatten(entry.out_tree, outs)

    def _split(self, args, kwargs):
        nargs = len(args)
        statics = []
        for i in self._static_argnums:
            if i >= nargs and self._signature is not None:
                continue  # passed by keyword (or defaulted): handled with static_argnames
            j = i % nargs if -nargs <= i < nargs else None
            if j is None:
                raise ValueError(
                    f"jit({self._name}): static_argnums={self._static_argnums} refers to argument "
                    f"{i}, but the function was called with {nargs} positional arguments"
                )
            statics.append((j, args[j]))
        static_pos = {j for j, _ in statics}
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static_pos)
        static_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in self._static_argnames))
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        for where, v in [*statics, *static_kw]:
            try:
                hash(v)
            except TypeError as e:
                raise NonHashableStaticArgumentError(
                    f"jit({self._name}): non-hashable static arguments are not supported: static "
                    f"argument {where!r} must be hashable, got a "
                    f"{type(v).__name__}. Make it a tuple, or pass it as a non-static argument."
                ) from e
        return tuple(statics), static_kw, dyn_args, dyn_kwargs

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
            out = fun(*full, **d_kwargs, **static_kwargs)
            out_leaves, out_tree = tu.tree_flatten(out)
            for leaf in out_leaves:
                if not core.is_array_like(leaf):
                    raise TypeError(
                        f"jit({name}) returned a {type(leaf).__name__}, which is not an array "
                        "type; jitted functions must return arrays (or pytrees of arrays)"
                    )
            out_tree_box.append(out_tree)
            return out_leaves

        avals = [core.get_aval(x) for x in flat]
        closed = trace_to_jaxpr(flat_fun, avals, names, f"jit({name})")
        closed, hoisted = close_over_tracers(closed)
        return _CacheEntry(closed, out_tree_box[0], hoisted)

    def _entry(self, args, kwargs):
        static_key, static_kw, dyn_args, dyn_kwargs = self._split(args, kwargs)
        flat, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
        for i, leaf in enumerate(flat):
            if not core.is_array_like(leaf):
                names = self._arg_names(static_key, dyn_args, dyn_kwargs)
                raise TypeError(
                    f"jit({self._name}): argument {names[i]} is a {type(leaf).__name__}, not an "
                    "array. Mark it static (static_argnums/static_argnames) or pass an array."
                )
        key = (in_tree, tuple(_aval_key(x) for x in flat), static_key, static_kw)
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
        return entry, flat, static_key

    def _note_retrace(self, key, names) -> None:
        previous = self._keys[-1] if self._keys else None
        for k in reversed(self._keys):
            if k[0] == key[0]:
                previous = k
                break
        self._keys.append(key)
        del self._keys[:-16]
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

    def _donated(self, n_hoisted, flat, static_key, args) -> tuple[bool, ...]:
        if not self._donate_argnums:
            return (False,) * (n_hoisted + len(flat))
        donated = [False] * n_hoisted
        static_pos = {j for j, _ in static_key}
        for i, a in enumerate(args):
            if i in static_pos:
                continue
            donated.extend([i in self._donate_argnums] * len(tu.tree_leaves(a)))
        donated.extend([False] * (n_hoisted + len(flat) - len(donated)))
        return tuple(donated)

    # -- ahead-of-time API ---------------------------------------------------------------------

    def trace(self, *args, **kwargs) -> Traced:
        """The traced program for these arguments (from the cache when possible).

        >>> import funcgrad.numpy as fnp
        >>> print(jit(fnp.sin).trace(1.0).jaxpr)
        { lambda ; a:f64[]. let b:f64[] = sin a in (b,) }
        """
        entry, flat, static_key = self._entry(args, kwargs)
        return Traced(self, entry, flat, self._donated(len(entry.hoisted), flat, static_key, args))

    def lower(self, *args, **kwargs) -> Lowered:
        """Trace and lower to StableHLO for these arguments; ``.as_text()``, ``.compile()``.

        >>> import funcgrad.numpy as fnp
        >>> "stablehlo.sine" in jit(fnp.sin).lower(1.0).as_text()
        True
        """
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        """Output shapes/dtypes (``ShapeDtypeStruct`` leaves) without running anything."""
        from funcgrad.api import ShapeDtypeStruct  # noqa: PLC0415 - api imports this module

        entry = self._entry(args, kwargs)[0]
        outs = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in entry.closed.out_avals]
        return tu.tree_unflatten(entry.out_tree, outs)

    def cache_info(self) -> CacheInfo:
        """Hits and misses (traces) of this function's cache.

        >>> f = jit(lambda x: x * 2)
        >>> _ = f(1.0); _ = f(2.0); f.cache_info()
        CacheInfo(hits=1, misses=1, currsize=1)
        """
        hits = self._hits + self._native_calls - self._native_misses
        return CacheInfo(hits, self._misses, len(self._cache))

    def _cache_size(self) -> int:
        """Number of traced signatures (JAX's private spelling, used by its tests)."""
        return len(self._cache)

    def clear_cache(self) -> None:
        """Forget traced and compiled programs of this function."""
        self._cache.clear()
        self._fast.clear()
        self._native = None

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self):
        return f"<jitted function {self._name}>"


class Traced:
    """A traced jitted call: ``.jaxpr`` (ClosedJaxpr), ``.out_info``, ``.lower()``."""

    def __init__(self, fun, entry, flat, donated):
        self._fun = fun
        self._entry = entry
        self._flat = flat
        self._donated = donated
        self.jaxpr = entry.closed
        self.in_avals = entry.closed.in_avals
        self.out_info = tu.tree_unflatten(entry.out_tree, entry.closed.out_avals)

    def lower(self) -> Lowered:
        if self._entry.hoisted:
            raise TypeError(
                f"jit({self._fun._name}).lower: the function closes over a value traced by an "
                "enclosing transformation; lower it outside of grad/vmap/jit"
            )
        return Lowered(self._fun, self._entry, self._donated)

    def __str__(self):
        return str(self.jaxpr)


class Lowered:
    """A lowered jitted call: ``.as_text()`` (StableHLO), ``.compile()``."""

    def __init__(self, fun, entry, donated):
        self._fun = fun
        self._entry = entry
        self._donated = donated
        self._module = _xi.lower_jaxpr(entry.closed, fun._name, donated)

    def as_text(self, dialect: str | None = None) -> str:
        """The StableHLO module text."""
        return self._module.text

    def compiler_ir(self, dialect: str | None = None) -> str:
        return self._module.text

    def compile(self) -> CompiledCall:
        """Compile with XLA (cached); the result is callable with arguments like these."""
        return CompiledCall(
            self._fun, self._entry, _xi.compiled(self._entry.closed, self._fun._name, self._donated)
        )


class CompiledCall:
    """A compiled jitted call; call it with arguments of the lowered shapes/dtypes."""

    def __init__(self, fun, entry, compiled):
        self._fun = fun
        self._entry = entry
        self._compiled = compiled
        self.in_avals = entry.closed.in_avals
        self.out_info = tu.tree_unflatten(entry.out_tree, entry.closed.out_avals)

    def __call__(self, *args, **kwargs):
        f = self._fun
        static_key, static_kw, dyn_args, dyn_kwargs = f._split(args, kwargs)
        flat, _ = tu.tree_flatten((dyn_args, dyn_kwargs))
        if len(flat) != len(self.in_avals):
            raise TypeError(
                f"compiled jit({f._name}) takes {len(self.in_avals)} array leaves, got {len(flat)}"
            )
        names = f._arg_names(static_key, dyn_args, dyn_kwargs)
        c = self._compiled
        bufs = [_xi.to_buffer(x, a, c.device, f"argument {n}") for x, a, n in zip(flat, self.in_avals, names)]
        outs = _xi.wrap_outputs(c.call(bufs), c.out_weak)
        return tu.tree_unflatten(self._entry.out_tree, outs)

    def as_text(self) -> str:
        """XLA's optimized HLO."""
        return self._compiled.executable.as_hlo_text()


class _KwStatics(NamedTuple):
    """The dispatcher's static key of a call with keyword arguments."""

    pos: tuple
    kw: tuple


def _hashable(x) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _aval_key(x):
    t = type(x)
    if t is Array:
        return (x.shape, x.dtype, x.weak_type)
    if t in (int, float, bool, complex):
        return ((), t, True)
    if isinstance(x, core.Tracer):
        a = x.aval
        return (a.shape, a.dtype, a.weak_type)
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
    **unsupported,
):
    """Compile ``fun`` with XLA; traced once per input shapes/dtypes (and static arguments).

    Usable as ``jit(f)``, ``@jit`` or ``@jit(static_argnums=...)``. ``keep_unused`` and
    ``inline`` are accepted for JAX compatibility (unused inputs are always kept; nested jit
    calls become private functions that XLA inlines).

    >>> import funcgrad.numpy as fnp
    >>> f = jit(lambda x: fnp.sin(x) ** 2 + fnp.cos(x) ** 2)
    >>> float(f(1.0))
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
        )
    if not callable(fun):
        raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
    # As in JAX, jit(f) made twice shares one cache: `jit(f)(x)` in a loop traces once.
    config = tuple(_as_tuple(v) for v in (static_argnums, static_argnames, donate_argnums, donate_argnames))
    key = (id(fun), config)
    hit = _instances.get(key)
    if hit is not None and hit._fun is fun:
        _instances.move_to_end(key)
        return hit
    jitted = JittedFunction(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)
    _instances[key] = jitted  # holds `fun`, so its id is not reused while the entry lives
    if len(_instances) > _MAX_INSTANCES:
        _instances.popitem(last=False)
    return jitted


_instances: collections.OrderedDict = collections.OrderedDict()
_MAX_INSTANCES = 256


class _CallableModule(types.ModuleType):
    """``funcgrad.jit`` is both this module and the function: importing the submodule binds the
    package attribute ``funcgrad.jit`` to the module, so calling it must still mean ``jit``."""

    def __call__(self, *args, **kwargs):
        return jit(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
