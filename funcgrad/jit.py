"""``jit``: stage a function to a jaxpr once per input signature and run it as one compiled unit.

Layer: surface. Imports the kernel, the primitive catalog (the ``jit`` call primitive) and
tree_util. Compilation itself is ``xla_bridge``'s job: it installs the jit primitive's impl when
imported (``primitives.call.set_jit_impl``); this module imports it so that ``jit`` compiles.

The cache key is (input tree structure, each leaf's shape/dtype/weak type, static arguments). A
hit reuses the traced jaxpr (and, in ``xla_bridge``, the executable) without retracing.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from funcgrad import core
from funcgrad import tree_util as tu
from funcgrad.partial_eval import close_over_tracers, trace_to_jaxpr
from primitives.call import jit_p


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


class CacheInfo:
    """Counters of a jitted function's trace cache."""

    def __init__(self, hits: int, misses: int, size: int):
        self.hits, self.misses, self.currsize = hits, misses, size

    def __repr__(self):
        return f"CacheInfo(hits={self.hits}, misses={self.misses}, currsize={self.currsize})"


class JittedFunction:
    """The result of ``jit(f)``: call it like ``f``; ``.lower(*args)`` exposes the StableHLO."""

    def __init__(self, fun, static_argnums, static_argnames, donate_argnums):
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._static_argnums = _as_tuple(static_argnums)
        self._static_argnames = _as_tuple(static_argnames)
        self._donate_argnums = _as_tuple(donate_argnums)
        self._cache: dict[Any, _CacheEntry] = {}
        self._hits = 0
        self._misses = 0
        try:
            self._signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None
        self._name = getattr(fun, "__name__", "fun")

    # -- argument handling -------------------------------------------------------------------

    def _split(self, args, kwargs):
        nargs = len(args)
        statics = []
        for i in self._static_argnums:
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
        static_key = []
        for j, v in statics:
            try:
                hash(v)
            except TypeError as e:
                raise TypeError(
                    f"jit({self._name}): static argument {j} must be hashable, got a "
                    f"{type(v).__name__}. Make it a tuple, or pass it as a non-static argument."
                ) from e
            static_key.append((j, v))
        return tuple(static_key), static_kw, dyn_args, dyn_kwargs

    def _arg_names(self, static_key, dyn_args, dyn_kwargs) -> list[str]:
        positions = [i for i in range(len(dyn_args) + len(static_key)) if i not in dict(static_key)]
        names = []
        params = list(self._signature.parameters) if self._signature is not None else []
        for (path, _) in tu.tree_leaves_with_path((dyn_args, dyn_kwargs)):
            head, rest = path[0], path[1:]
            if head.idx == 0:
                pos = positions[rest[0].idx]
                label = params[pos] if pos < len(params) else f"args[{pos}]"
                names.append(f"{label}{tu.keystr(rest[1:])}")
            else:
                names.append(f"{rest[0].key}{tu.keystr(rest[1:])}")
        return names

    # -- tracing -----------------------------------------------------------------------------

    def _trace(self, static_key, static_kw, dyn_args, dyn_kwargs, flat, in_tree):
        statics = dict(static_key)
        static_kwargs = dict(static_kw)
        n_total = len(dyn_args) + len(statics)
        out_tree_box = []
        fun = self._fun

        def flat_fun(*leaves):
            d_args, d_kwargs = tu.tree_unflatten(in_tree, leaves)
            it = iter(d_args)
            full = [statics[i] if i in statics else next(it) for i in range(n_total)]
            out = fun(*full, **d_kwargs, **static_kwargs)
            out_leaves, out_tree = tu.tree_flatten(out)
            for leaf in out_leaves:
                if not core.is_array_like(leaf):
                    raise TypeError(
                        f"jit({self._name}) returned a {type(leaf).__name__}, which is not an array "
                        "type; jitted functions must return arrays (or pytrees of arrays)"
                    )
            out_tree_box.append(out_tree)
            return out_leaves

        avals = [core.get_aval(x) for x in flat]
        names = self._arg_names(static_key, dyn_args, dyn_kwargs)
        closed = trace_to_jaxpr(flat_fun, avals, names, f"jit({self._name})")
        closed, hoisted = close_over_tracers(closed)
        return _CacheEntry(closed, out_tree_box[0], hoisted)

    def _entry(self, args, kwargs):
        static_key, static_kw, dyn_args, dyn_kwargs = self._split(args, kwargs)
        flat, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
        for leaf, name in zip(flat, range(len(flat))):
            if not core.is_array_like(leaf):
                raise TypeError(
                    f"jit({self._name}): argument leaf {self._arg_names(static_key, dyn_args, dyn_kwargs)[name]} "
                    f"is a {type(leaf).__name__}, not an array. Mark it static "
                    "(static_argnums/static_argnames) or pass an array."
                )
        key = (in_tree, tuple(_aval_key(x) for x in flat), static_key, static_kw)
        entry = self._cache.get(key)
        if entry is None:
            self._misses += 1
            entry = self._trace(static_key, static_kw, dyn_args, dyn_kwargs, flat, in_tree)
            if not entry.hoisted:
                # A jaxpr that captured tracers of an enclosing transformation is not reusable.
                self._cache[key] = entry
        else:
            self._hits += 1
        return entry, flat, static_key

    def __call__(self, *args, **kwargs):
        entry, flat, static_key = self._entry(args, kwargs)
        donated = self._donated(len(entry.hoisted), flat, static_key, args)
        outs = jit_p.bind(
            *entry.hoisted, *flat, jaxpr=entry.closed, name=self._name, donated_invars=donated
        )
        return tu.tree_unflatten(entry.out_tree, outs)

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

    def trace(self, *args, **kwargs) -> core.ClosedJaxpr:
        """The jaxpr ``self`` runs for these arguments (traced or taken from the cache)."""
        return self._entry(args, kwargs)[0].closed

    def cache_info(self) -> CacheInfo:
        """Hits and misses (traces) of this function's cache."""
        return CacheInfo(self._hits, self._misses, len(self._cache))

    def clear_cache(self) -> None:
        self._cache.clear()

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self):
        return f"<jitted function {self._name}>"


def _aval_key(x):
    if isinstance(x, core.Tracer):
        a = x.aval
        return (a.shape, a.dtype, a.weak_type)
    t = type(x)
    if t in (int, float, bool, complex):
        return ((), t, True)
    return (np.shape(x), x.dtype, getattr(x, "weak_type", False))


def jit(
    fun: Callable | None = None,
    *,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    donate_argnums: int | Sequence[int] | None = None,
    **unsupported,
):
    """Compile ``fun`` with XLA; traced once per input shapes/dtypes (and static arguments).

    Usable as ``jit(f)``, ``@jit`` or ``@jit(static_argnums=...)``.

    >>> import funcgrad.numpy as fnp
    >>> f = jit(lambda x: fnp.sin(x) ** 2 + fnp.cos(x) ** 2)
    >>> float(f(1.0))
    1.0
    """
    if unsupported:
        raise TypeError(f"jit got unsupported options {sorted(unsupported)}")
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames, donate_argnums=donate_argnums)
    if not callable(fun):
        raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
    return JittedFunction(fun, static_argnums, static_argnames, donate_argnums)
