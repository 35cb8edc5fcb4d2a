"""``funcgrad.extend.linear_util``: JAX's ``WrappedFun``, a function with a stack of transformations.

Layer: surface. Imports the standard library and the kernel's cache registry (``lu.cache``'s
memo tables empty with ``funcgrad.clear_caches()``).

A ``WrappedFun`` holds a function ``f`` and the transformations to apply around it when it is
called (``call_wrapped``). A transformation is a generator-style function registered with one
of four decorators, as JAX (and flax, which builds its lifted transforms on them) writes them:

- ``transformation2(gen)``: ``gen(f, *static_args, *args, **kwargs)`` calls ``f`` (the inner,
  already transformed function) itself and returns the result;
- ``transformation_with_aux2(gen)``: the same with a ``store`` after ``f``, to which ``gen``
  hands an auxiliary output (``store.store(aux)``), read later through the returned thunk;
- ``transformation(gen)`` / ``transformation_with_aux(gen)``: the older generator protocol:
  ``gen(*static_args, *args)`` yields ``(args, kwargs)`` for the inner call, receives its result
  and yields the final one (with ``_with_aux``, the pair ``(result, aux)``).

Applying a decorated transformation to a ``WrappedFun`` (``t(fun, *static_args)``) returns a new
``WrappedFun`` (and a thunk of the auxiliary output for the ``_with_aux`` forms).

>>> @transformation2
... def scale_output(f, k, *args):
...     return f(*args) * k
>>> @transformation_with_aux2
... def count_args(f, store, *args):
...     store.store(len(args))
...     return f(*args)
>>> fun, n = count_args(scale_output(wrap_init(lambda x, y: x + y), 10))
>>> fun.call_wrapped(1, 2), n()
(30, 2)
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from funcgrad.kernel.caches import register_cache

__all__ = [
    "DebugInfo",
    "StoreException",
    "WrappedFun",
    "cache",
    "merge_linear_aux",
    "transformation",
    "transformation2",
    "transformation_with_aux",
    "transformation_with_aux2",
    "wrap_init",
]


class StoreException(Exception):
    """A store read before a value was stored, or stored twice."""


_EMPTY = object()


class Store:
    """Holds one auxiliary output of a transformation: ``store`` it once, read ``val`` later.

    >>> s = Store(); s.store(3); s.val
    3
    """

    __slots__ = ("_val",)

    def __init__(self):
        self._val = _EMPTY

    def store(self, val):
        if self._val is not _EMPTY:
            raise StoreException("Store occupied: a transformation stored its auxiliary output twice")
        self._val = val

    def reset(self):
        self._val = _EMPTY

    @property
    def val(self):
        if self._val is _EMPTY:
            raise StoreException(
                "Store empty: the auxiliary output is read before the wrapped function was called"
            )
        return self._val

    def __bool__(self):
        return self._val is not _EMPTY


class EqualStore(Store):
    """A store that accepts a second value equal to the first (traced twice, same result)."""

    __slots__ = ()

    def store(self, val):
        if self._val is not _EMPTY:
            try:
                same = bool(self._val == val)
            except Exception:
                same = False
            if not same:
                raise StoreException("Store occupied with a not-equal value")
            return
        self._val = val


class DebugInfo(NamedTuple):
    """What a traced function is, for error messages (JAX's fields): ``traced_for`` ("jit",
    "scan"...), ``func_src_info`` ("name at file:line"), ``arg_names`` and ``result_paths``
    (``None``: unknown).

    >>> DebugInfo("jit", "f at x.py:3", ("x",), None).func_name
    'f'
    """

    traced_for: str
    func_src_info: str
    arg_names: tuple[str, ...] | None
    result_paths: Any

    @property
    def func_name(self) -> str:
        return self.func_src_info.split(" ")[0]

    def replace_func_name(self, name: str) -> DebugInfo:
        parts = self.func_src_info.split(" ")
        parts[0] = name
        return self._replace(func_src_info=" ".join(parts))

    def resolve_result_paths(self) -> DebugInfo:
        if callable(self.result_paths):
            return self._replace(result_paths=tuple(self.result_paths()))
        return self

    def safe_arg_names(self, expected_count: int) -> tuple[str, ...]:
        if self.arg_names is not None and len(self.arg_names) == expected_count:
            return self.arg_names
        return ("",) * expected_count

    def safe_result_paths(self, expected_count: int) -> tuple[str, ...]:
        paths = self.result_paths
        if isinstance(paths, tuple) and len(paths) == expected_count:
            return paths
        return ("",) * expected_count

    def filter_arg_names(self, keep: Sequence[bool]):
        if self.arg_names is None:
            return None
        return tuple(n for n, k in zip(self.safe_arg_names(len(keep)), keep) if k)

    def with_unknown_names(self) -> DebugInfo:
        return self._replace(arg_names=None, result_paths=None)


def _fun_name(f) -> str:
    if isinstance(f, functools.partial):
        return _fun_name(f.func)
    return getattr(f, "__name__", type(f).__name__)


def _default_debug_info(f) -> DebugInfo:
    code = getattr(f, "__code__", None)
    where = f" at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
    return DebugInfo("wrap_init", f"{_fun_name(f)}{where}", None, None)


class WrappedFun:
    """``f`` with ``transforms`` to apply around it (outermost first) and their ``stores``;
    ``params`` are keyword arguments bound to ``f``. Call it with ``call_wrapped``.

    >>> fun = wrap_init(lambda x, k: x * k, {"k": 3})
    >>> fun.call_wrapped(2), fun.params, fun.__name__
    (6, (('k', 3),), '<lambda>')
    """

    __slots__ = ("f", "f_transformed", "transforms", "stores", "params", "in_type", "debug_info")

    def __init__(self, f, f_transformed, transforms, stores, params, in_type, debug_info):
        self.f = f
        self.f_transformed = f_transformed
        self.transforms = transforms
        self.stores = stores
        self.params = params
        self.in_type = in_type
        self.debug_info = debug_info

    @property
    def __name__(self):
        return _fun_name(self.f)

    def wrap(self, gen, gen_static_args, out_store) -> WrappedFun:
        """Add one transformation (and its store, or ``None``) around the current ones."""
        inner = self.f_transformed
        applied = (
            functools.partial(gen, inner, *gen_static_args)
            if out_store is None
            else functools.partial(gen, inner, out_store, *gen_static_args)
        )
        return WrappedFun(
            self.f,
            applied,
            ((gen, gen_static_args), *self.transforms),
            (out_store, *self.stores),
            self.params,
            None,
            self.debug_info,
        )

    def call_wrapped(self, *args, **kwargs):
        """Call ``f`` through every transformation."""
        return self.f_transformed(*args, **kwargs)

    def populate_stores(self, stores) -> None:
        """Copy the auxiliary outputs of another run of the same transformations (a cache hit)."""
        for mine, theirs in zip(self.stores, stores):
            if mine is not None:
                mine.store(theirs.val)

    def replace_debug_info(self, debug_info: DebugInfo) -> WrappedFun:
        return WrappedFun(
            self.f, self.f_transformed, self.transforms, self.stores, self.params, self.in_type, debug_info
        )

    def with_unknown_names(self) -> WrappedFun:
        return self.replace_debug_info(self.debug_info.with_unknown_names())

    def __repr__(self):
        stack = "\n".join(f"{i}   : {_fun_name(g)}   {args}" for i, (g, args) in enumerate(self.transforms))
        return f"Wrapped function:\n{stack}\nCore: {_fun_name(self.f)}\n"

    def _key(self):
        return (self.f, self.transforms, self.params, self.in_type, self.debug_info)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, WrappedFun) and self._key() == other._key()


def wrap_init(f: Callable, params=None, *, debug_info: DebugInfo | None = None) -> WrappedFun:
    """``f`` as a ``WrappedFun`` with no transformation yet; ``params`` (a dict) are bound to it
    as keyword arguments. (``debug_info`` describes it; without one, its name and line.)

    >>> wrap_init(lambda x: x + 1).call_wrapped(1)
    2
    """
    if not callable(f):
        raise TypeError(f"wrap_init expects a callable, got {type(f).__name__}")
    params_dict = {} if params is None else dict(params)
    debug_info = (debug_info or _default_debug_info(f))._replace(result_paths=None)
    return WrappedFun(
        f,
        functools.partial(f, **params_dict),
        (),
        (),
        tuple(sorted(params_dict.items())),
        None,
        debug_info,
    )


def _curry(deco):
    # ``deco(gen)`` returns a function ``(fun, *static_args) -> ...`` (JAX's ``curry``).
    @functools.wraps(deco)
    def curried(gen):
        return functools.wraps(gen)(functools.partial(deco, gen))

    return curried


@_curry
def transformation2(gen, fun: WrappedFun, *gen_static_args) -> WrappedFun:
    """Decorator: ``gen(f, *static_args, *args, **kwargs)`` wraps the call of ``f``. See the
    module docstring."""
    return fun.wrap(gen, gen_static_args, None)


@_curry
def transformation_with_aux2(
    gen, fun: WrappedFun, *gen_static_args, use_eq_store: bool = False, unk_names: bool = False
) -> tuple[WrappedFun, Callable[[], Any]]:
    """Decorator: ``gen(f, store, *static_args, *args, **kwargs)``; applying it returns the new
    ``WrappedFun`` and a thunk reading what ``gen`` stored. See the module docstring."""
    store = EqualStore() if use_eq_store else Store()
    fun = fun.wrap(gen, gen_static_args, store)
    if unk_names:
        fun = fun.with_unknown_names()
    return fun, lambda: store.val


@_curry
def transformation(gen, fun: WrappedFun, *gen_static_args) -> WrappedFun:
    """Decorator for a generator ``gen(*static_args, *args, **kwargs)`` that yields the inner
    call's ``(args, kwargs)`` and then, sent its result, the final result.

    >>> @transformation
    ... def add_one(*args):
    ...     out = yield args, {}
    ...     yield out + 1
    >>> add_one(wrap_init(lambda x: 2 * x)).call_wrapped(5)
    11
    """

    def gen2(f, *args, **kwargs):
        g = gen(*args, **kwargs)
        inner_args, inner_kwargs = next(g)
        return g.send(f(*inner_args, **inner_kwargs))

    gen2.__name__ = _fun_name(gen)
    return fun.wrap(gen2, gen_static_args, None)


@_curry
def transformation_with_aux(gen, fun: WrappedFun, *gen_static_args, use_eq_store: bool = False):
    """Like ``transformation``, the generator's last yield being ``(result, aux)``; applying it
    returns the new ``WrappedFun`` and a thunk of ``aux``.

    >>> @transformation_with_aux
    ... def with_len(*args):
    ...     out = yield args, {}
    ...     yield out, len(args)
    >>> fun, aux = with_len(wrap_init(lambda *xs: sum(xs)))
    >>> fun.call_wrapped(1, 2, 3), aux()
    (6, 3)
    """

    def gen2(f, store, *args, **kwargs):
        g = gen(*args, **kwargs)
        inner_args, inner_kwargs = next(g)
        ans, aux = g.send(f(*inner_args, **inner_kwargs))
        store.store(aux)
        return ans

    gen2.__name__ = _fun_name(gen)
    store = EqualStore() if use_eq_store else Store()
    return fun.wrap(gen2, gen_static_args, store), lambda: store.val


def merge_linear_aux(aux1: Callable[[], Any], aux2: Callable[[], Any]):
    """The auxiliary output of whichever of two branches ran (exactly one must have): ``(True,
    aux1)`` when the first thunk's store is filled, ``(False, aux2)`` when the second's is.

    >>> s = Store(); s.store("ran")
    >>> merge_linear_aux(lambda: Store().val, lambda: s.val)
    (False, 'ran')
    """
    try:
        out1 = aux1()
    except StoreException:
        try:
            out2 = aux2()
        except StoreException:
            raise StoreException("neither store filled: neither branch ran") from None
        return False, out2
    try:
        aux2()
    except StoreException:
        return True, out1
    raise StoreException("both stores filled: both branches ran")


def cache(call: Callable, *, explain: Callable | None = None):
    """Memoise ``call(fun: WrappedFun, *args)`` on the ``WrappedFun`` (its function, its
    transformations and params) and ``args`` (hashable). A hit re-fills the stores of the
    calling ``fun`` from the run that was cached, so its auxiliary thunks answer as if it ran.
    Entries live as long as the wrapped function ``fun.f``.

    >>> calls = []
    >>> @cache
    ... def trace(fun, n):
    ...     calls.append(n)
    ...     return fun.call_wrapped(n)
    >>> g = lambda x: x * 2
    >>> trace(wrap_init(g), 3), trace(wrap_init(g), 3), calls
    (6, 6, [3])
    """
    by_function: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    strong: dict = {}  # for functions that cannot be referenced weakly (builtins)
    _memo_tables.append((by_function, strong))

    def memoized(fun: WrappedFun, *args):
        try:
            table = by_function.setdefault(fun.f, {})
        except TypeError:
            table = strong.setdefault(fun.f, {})
        key = (fun.transforms, fun.params, fun.in_type, args)
        try:
            hit = table.get(key, _EMPTY)
        except TypeError:  # an unhashable argument: no caching
            return call(fun, *args)
        if hit is not _EMPTY:
            ans, stores = hit
            fun.populate_stores(stores)
            if explain is not None:
                explain(fun, True, table, args, 0.0)
            return ans
        ans = call(fun, *args)
        table[key] = (ans, fun.stores)
        if explain is not None:
            explain(fun, False, table, args, 0.0)
        return ans

    memoized.cache_clear = lambda: (by_function.clear(), strong.clear())  # type: ignore[attr-defined]
    return memoized


# Every ``cache``'s tables, emptied together by ``funcgrad.clear_caches()`` (NOTE: [caches have
# an owner]). A decorated function lives as long as its module, so the list only grows with the
# number of decorated functions, not with calls.
_memo_tables: list = []


def _clear_memo_tables() -> None:
    for by_function, strong in _memo_tables:
        by_function.clear()
        strong.clear()


register_cache(
    "extend.linear_util.cache",
    clear=_clear_memo_tables,
    size=lambda: sum(len(a) + len(b) for a, b in _memo_tables),
)
