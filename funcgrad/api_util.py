"""``funcgrad.api_util``: JAX's ``jax.api_util``, the helpers library authors use to build their own
transformations on ``funcgrad.extend.linear_util`` (flax's ``lazy_init``, ``partial_eval_by_shape``
and ``axes_scan`` trace with them): flattening a ``WrappedFun``'s arguments and results
(``flatten_fun``, ``flatten_fun_nokwargs``), ``debug_info``, fixing static arguments
(``argnums_partial``), the donation flags of a call's leaves (``donation_vector``,
``rebase_donate_argnums``), ``flatten_axes`` and ``shaped_abstractify``.

Layer: surface. Imports the kernel (``core``, ``tree_util``), ``funcgrad.extend.linear_util`` and
``funcgrad._api_util`` (``abstractify``).

>>> from funcgrad.extend import linear_util as lu
>>> from funcgrad import tree_util as tu
>>> args, in_tree = tu.tree_flatten(((1, 2), {"k": 10}))
>>> fun, out_tree = flatten_fun(lu.wrap_init(lambda a, b, k: {"sum": a + b + k}), in_tree)
>>> fun.call_wrapped(*args), out_tree()
([13], PyTreeDef({'sum': *}))
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from funcgrad._api_util import abstractify
from funcgrad.extend import linear_util as lu
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu

__all__ = [
    "argnums_partial",
    "debug_info",
    "donation_vector",
    "flatten_axes",
    "flatten_fun",
    "flatten_fun_nokwargs",
    "rebase_donate_argnums",
    "safe_map",
    "shaped_abstractify",
]


@lu.transformation_with_aux2
def flatten_fun(f: Callable, store, in_tree, *args_flat):
    """``f`` called with the leaves of an ``(args, kwargs)`` tree (``in_tree``); it returns its
    result's leaves and stores the result's tree (the thunk returned next to the function).
    See the module's example."""
    py_args, py_kwargs = tu.tree_unflatten(in_tree, args_flat)
    leaves, out_tree = tu.tree_flatten(f(*py_args, **py_kwargs))
    store.store(out_tree)
    return leaves


@lu.transformation_with_aux2
def flatten_fun_nokwargs(f: Callable, store, in_tree, *args_flat):
    """As ``flatten_fun`` for an ``in_tree`` of the positional arguments only.

    >>> from funcgrad.extend import linear_util as lu
    >>> from funcgrad import tree_util as tu
    >>> args, in_tree = tu.tree_flatten((1, (2, 3)))
    >>> fun, out_tree = flatten_fun_nokwargs(lu.wrap_init(lambda a, bc: (a * bc[0], bc[1])), in_tree)
    >>> fun.call_wrapped(*args), out_tree()
    ([2, 3], PyTreeDef((*, *)))
    """
    leaves, out_tree = tu.tree_flatten(f(*tu.tree_unflatten(in_tree, args_flat)))
    store.store(out_tree)
    return leaves


def debug_info(
    traced_for: str,
    fun: Callable,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    static_argnums: Sequence[int] = (),
    static_argnames: Sequence[str] = (),
    result_paths_thunk=None,
    sourceinfo: str | None = None,
    signature: inspect.Signature | None = None,
) -> lu.DebugInfo:
    """What a traced function is, for messages: ``DebugInfo(traced_for, "name at file:line",
    arg_names, result_paths)``, the argument names read from ``fun``'s signature bound to the
    example ``args``/``kwargs`` (static ones left out); ``None`` when they cannot be bound.

    >>> def f(x, y, *, scale):
    ...     return x
    >>> info = debug_info("jit", f, (1, 2), {"scale": 3}, static_argnames=("scale",))
    >>> info.traced_for, info.func_name, info.arg_names
    ('jit', 'f', ('x', 'y'))
    """
    if sourceinfo is None:
        sourceinfo = _source_info(fun)
    if signature is None:
        try:
            signature = inspect.signature(fun)
        except (TypeError, ValueError):
            signature = None
    return lu.DebugInfo(
        traced_for,
        sourceinfo,
        _arg_names(signature, args, kwargs, static_argnums, static_argnames),
        result_paths_thunk,
    )


def _source_info(fun: Callable) -> str:
    while hasattr(fun, "func") and hasattr(fun, "args"):  # functools.partial
        fun = fun.func
    fun = inspect.unwrap(fun)
    code = getattr(fun, "__code__", None)
    name = getattr(fun, "__name__", None) or type(fun).__name__
    if code is None:
        return name
    return f"{name} at {code.co_filename}:{code.co_firstlineno}"


def _arg_names(signature, args, kwargs, static_argnums, static_argnames) -> tuple[str, ...] | None:
    """The names of the leaves of the non-static arguments (``x``, ``params['w']``), or None."""
    if signature is None:
        return None
    static = {i % len(args) if args else i for i in static_argnums}
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None
    names = []
    for i, (name, value) in enumerate(bound.arguments.items()):
        if i in static or name in static_argnames:
            continue
        paths, _ = tu.tree_flatten_with_path(value)
        names.extend(f"{name}{tu.keystr(p)}" for p, _ in paths)
    return tuple(names)


@lu.transformation2
def _fill_static(f, dyn_argnums, fixed, *dyn_args, **kwargs):
    dyn, statics = iter(dyn_args), iter(fixed)
    args = [next(dyn) if i in dyn_argnums else next(statics).value for i in range(len(dyn_args) + len(fixed))]
    return f(*args, **kwargs)


class _Static:
    """A static argument in a ``WrappedFun``'s parameters: equal by type and value (a cache key)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return hash(self.value)

    def __eq__(self, other):
        return type(other) is _Static and type(self.value) is type(other.value) and self.value == other.value


class _Unhashable(_Static):
    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other


def argnums_partial(f: lu.WrappedFun, dyn_argnums, args: Sequence, require_static_args_hashable: bool = True):
    """``f`` with the arguments not in ``dyn_argnums`` fixed to their values in ``args``, and the
    dynamic arguments, as ``(WrappedFun, dyn_args)``. A static argument must be hashable (it is
    part of the function's identity) unless ``require_static_args_hashable=False``.

    >>> from funcgrad.extend import linear_util as lu
    >>> fun, dyn = argnums_partial(lu.wrap_init(lambda a, b, c: a * b + c), (0, 2), (2, 10, 1))
    >>> dyn, fun.call_wrapped(*dyn)
    ((2, 1), 21)
    """
    dyn_argnums = (dyn_argnums,) if isinstance(dyn_argnums, int) else tuple(dyn_argnums)
    n = len(args)
    for i in dyn_argnums:
        if not -n <= i < n:
            raise ValueError(
                "Positional argument indices, e.g. for `static_argnums`, must have value greater than "
                f"or equal to -len(args) and less than len(args), but got value {i} for len(args) == {n}."
            )
    dyn_argnums = tuple(i % n for i in dyn_argnums)
    fixed = []
    for i, arg in enumerate(args):
        if i in dyn_argnums:
            continue
        if require_static_args_hashable:
            try:
                hash(arg)
            except TypeError:
                raise ValueError(
                    "Non-hashable static arguments are not supported, as this can lead to unexpected "
                    f"cache-misses. Static argument (index {i}) of type {type(arg)} for function "
                    f"{getattr(f, '__name__', f)} is non-hashable."
                ) from None
            fixed.append(_Static(arg))
        else:
            fixed.append(_Unhashable(arg))
    return _fill_static(f, frozenset(dyn_argnums), tuple(fixed)), tuple(args[i] for i in dyn_argnums)


def donation_vector(donate_argnums, donate_argnames, in_tree, kws: bool = True) -> tuple[bool, ...]:
    """One flag per leaf of a call's ``(args, kwargs)`` tree (``in_tree``; the positional
    arguments' tree when ``kws=False``): whether that leaf is donated.

    >>> from funcgrad import tree_util as tu
    >>> _, tree = tu.tree_flatten(((1, (2, 3)), {"k": 4}))
    >>> donation_vector((1,), ("k",), tree)
    (False, True, True, True)
    """
    out: list[bool] = []
    if kws:
        args_tree, kwargs_tree = _children(in_tree)
    else:
        args_tree, kwargs_tree = in_tree, None
    for i, child in enumerate(_children(args_tree)):
        out.extend([i in donate_argnums] * child.num_leaves)
    if kwargs_tree is not None:
        kwargs = tu.tree_unflatten(kwargs_tree, [0] * kwargs_tree.num_leaves)
        for key in kwargs:
            out.extend([key in donate_argnames] * tu.tree_structure(kwargs[key]).num_leaves)
    return tuple(out)


def _children(treedef) -> list:
    return list(treedef.children())


def rebase_donate_argnums(donate_argnums, static_argnums) -> tuple[int, ...]:
    """``donate_argnums`` counted among the non-static arguments only.

    >>> rebase_donate_argnums((3, 4), (0, 1))
    (1, 2)
    """
    static, donate = sorted(set(static_argnums)), sorted(set(donate_argnums))
    both = set(static) & set(donate)
    if both:
        raise ValueError(f"`static_argnums` {static} and `donate_argnums` {donate} cannot intersect.")
    return tuple(d - sum(s < d for s in static) for d in donate)


def flatten_axes(name: str, treedef, axis_tree, *, kws: bool = False, tupled_args: bool = False) -> list:
    """The axis spec ``axis_tree`` (a tree prefix of ``treedef``'s tree, ``None`` a leaf)
    broadcast to one entry per leaf of ``treedef``.

    >>> from funcgrad import tree_util as tu
    >>> _, tree = tu.tree_flatten(((1, 2), 3))
    >>> flatten_axes("in_axes", tree, (0, None))
    [0, 0, None]
    """
    full = tu.tree_unflatten(treedef, [object()] * treedef.num_leaves)
    try:
        return list(tu.broadcast_prefix(axis_tree, full, is_leaf=lambda x: x is None))
    except ValueError as e:
        hint = ""
        if tupled_args:
            hint = (
                f" Note that {name} that are non-trivial pytrees should always be wrapped in a tuple "
                "representing the argument list."
            )
        raise ValueError(
            f"{name} specification must be a tree prefix of the corresponding value;{hint} {e}"
        ) from None


def safe_map(f: Callable, *args) -> list:
    """``list(map(f, *args))`` where every argument must have the same length.

    >>> safe_map(lambda a, b: a + b, [1, 2], [10, 20])
    [11, 22]
    """
    args = [list(a) for a in args]
    n = len(args[0])
    for a in args[1:]:
        if len(a) != n:
            raise ValueError(f"safe_map: length mismatch: {[len(a) for a in args]}")
    return list(map(f, *args))


def shaped_abstractify(x) -> core.ShapedArray:
    """The abstract value (``ShapedArray``) of an array, a Python scalar, a traced value, a
    ``ShapeDtypeStruct`` or a ``ShapedArray`` itself.

    >>> import numpy as np
    >>> shaped_abstractify(np.ones((2, 3), np.float32))
    ShapedArray(float32[2,3])
    """
    return abstractify(x)


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
