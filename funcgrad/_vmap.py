"""``vmap``: vectorise a function over an axis of its arguments (the batching interpreter's
public face), with ``spmd_axis_name`` splitting the mapped dimension over mesh axes.

Layer: surface, under ``funcgrad.api`` (which re-exports ``vmap``). Imports the kernel
(``batching``, pytrees), the primitive catalog (``primitives.sharding``'s ``spmd_axis_name``
context) and ``funcgrad._api_util`` (the shared argument handling).
"""

from __future__ import annotations

import collections
import inspect
from collections.abc import Callable

import numpy as np

from funcgrad import _vmappables
from funcgrad import ref as _ref
from funcgrad._api_util import (
    arg_paths,
    canonicalize,
    check_array_leaves,
    flat_fun,
    to_public,
    user_transformation,
    wraps,
)
from funcgrad._ref_errors import refuse_aliased_refs
from funcgrad.kernel import batching, core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.traceback_util import api_boundary as _api_boundary
from funcgrad.primitives import sharding as _sharding_prims
from funcgrad.tree_util import _prefix_error
from funcgrad.xla_bridge import spmd as spmd_bridge


def _mapped_size(leaf, axis):
    return core.get_aval(leaf).shape[axis]


def _is_axis(leaf) -> bool:
    return (type(leaf) is int or isinstance(leaf, np.integer)) and not isinstance(leaf, bool | np.bool_)


def vmap(
    fun: Callable, in_axes=0, out_axes=0, axis_size: int | None = None, axis_name=None, spmd_axis_name=None
):
    """Vectorise ``fun`` over the ``in_axes`` of its arguments (a pytree prefix; ``None`` means
    broadcast); outputs get their mapped axis at ``out_axes``. ``spmd_axis_name`` (a mesh axis
    name or a tuple of them) splits the mapped dimension of the sharding constraints inside over
    those mesh axes, as JAX's.

    >>> import funcgrad.numpy as fnp
    >>> vmap(lambda x, y: x @ y, in_axes=(0, None))(fnp.ones((5, 3)), fnp.ones(3)).shape
    (5,)
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    spmd = _spmd_names(spmd_axis_name)
    # As JAX's, checked when vmap is applied, in its words: a bool is not an axis, nor a dict
    # at the top (one entry per positional argument), nor an array leaf.
    specs = _vmappables.spec_types()  # (NOTE: [vmappable types])
    if not (in_axes is None or type(in_axes) in (int, tuple) or isinstance(in_axes, (np.integer, *specs))):
        raise TypeError(
            "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
            f"positional arguments passed to the function, but got {in_axes}."
        )
    for axes, what in ((in_axes, "in_axes"), (out_axes, "out_axes")):
        if not all(_is_axis(leaf) or isinstance(leaf, specs) for leaf in tu.tree_leaves(axes)):
            raise TypeError(
                f"vmap {what} must be an int, None, or (nested) container with those types as "
                f"leaves, but got {axes}."
            )

    docstr = (  # (JAX's)
        "Vectorized version of {fun}. Takes similar arguments as {fun} but with additional array axes "
        "over which {fun} is mapped."
    )
    if getattr(fun, "__doc__", None):
        docstr += "\n\nOriginal documentation:\n\n" + str(fun.__doc__).replace("{", "{{").replace("}", "}}")

    @wraps(fun, docstr=docstr)
    @_api_boundary  # NOTE: [traceback boundaries]
    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                f"positional arguments passed to the function, but got len(in_axes)={len(in_axes)}, "
                f"len(args)={len(args)}: in_axes must have one entry per positional argument"
            )
        all_args = (args, kwargs)
        if _vmappables.vmappables:  # (NOTE: [vmappable types])
            flat_args = tu.tree_flatten(all_args, _vmappables.is_vmappable)[0]
            if _vmappables.involved(flat_args, in_axes, out_axes):
                return _vmappables.vmap_vmappables(fun, args, kwargs, in_axes, out_axes, axis_size, axis_name)
        flat_args, in_tree = tu.tree_flatten(all_args)
        try:
            in_dims = tu.broadcast_prefix((in_axes, 0), all_args)
        except ValueError:
            raise _prefix_error(
                "vmap in_axes",
                in_axes,
                args,
                f"in_axes {in_axes!r} does not match the arguments' structure {tu.tree_structure(args)}",
            ) from None
        if any(isinstance(x, _ref.Ref) and d is not None for x, d in zip(flat_args, in_dims)):
            mapped = {i for i, d in enumerate(in_dims) if d is not None}
            refuse_aliased_refs(fun, args, "vmap", kwargs, mapped)
            again = lambda g, i, o: vmap(g, i, o, axis_size, axis_name, spmd_axis_name)  # noqa: E731
            return _with_mapped_refs(fun, again, out_axes, flat_args, in_tree, in_dims)
        paths = arg_paths((*args, kwargs))
        # Only mapped leaves must be arrays: an unmapped (``None``) leaf reaches ``fun`` as it is,
        # as in JAX (equinox vmaps a model whose activation function is a leaf, with in_axes None).
        check_array_leaves(
            "vmap",
            [x for x, d in zip(flat_args, in_dims) if d is not None],
            lambda: [p for p, d in zip(paths, in_dims) if d is not None],
        )
        # Unmapped leaves pass as given (a static argument of a jit inside stays hashable, as in
        # JAX: blackjax vmaps jit(f, static_argnums=...) with the static value at in_axes None).
        mapped = canonicalize([x for x, d in zip(flat_args, in_dims) if d is not None])
        flat_args = [mapped.pop(0) if d is not None else x for x, d in zip(flat_args, in_dims)]
        sizes: dict[int, list[str]] = {}
        leaf_sizes: list[int | None] = []
        dims = []
        for leaf, d, path in zip(flat_args, in_dims, paths):
            if d is None:
                dims.append(None)
                leaf_sizes.append(None)
                continue
            if not isinstance(d, int | np.integer):
                raise TypeError(f"vmap in_axes leaves must be ints or None, got {d!r} for {path}")
            ndim = core.get_aval(leaf).ndim
            if not -ndim <= d < ndim:
                raise ValueError(
                    f"vmap was requested to map its argument along axis {d}, which implies that "
                    f"its rank should be at least {max(d + 1, -d)}, but is only {ndim} (its shape "
                    f"is {core.get_aval(leaf).shape}) for {path}"
                )
            d = int(d) % ndim
            dims.append(d)
            leaf_sizes.append(_mapped_size(leaf, d))
            sizes.setdefault(leaf_sizes[-1], []).append(path)
            if spmd:
                _check_spmd_axis(spmd, core.get_aval(leaf), d)
        if len(sizes) > 1 or (sizes and axis_size is not None and {axis_size} != set(sizes)):
            raise ValueError(_inconsistent_sizes(fun, args, kwargs, flat_args, dims, leaf_sizes, axis_size))
        if sizes:
            (size,) = sizes
        elif axis_size is not None:
            size = axis_size
        elif not flat_args:
            raise ValueError(
                "vmap wrapped function must be passed at least one argument containing an array or "
                f"axis_size must be specified, got empty *args={args} and **kwargs={kwargs}"
            )
        else:
            raise ValueError(
                "vmap must have at least one non-None value in in_axes or axis_size must be specified"
            )
        with user_transformation("vmap", fun):
            flat, store = flat_fun(lambda a, k: fun(*a, **k), in_tree)

        def out_dims():
            dummy = tu.tree_unflatten(store["out_tree"], [0] * store["n_out"])
            try:
                return tu.broadcast_prefix(out_axes, dummy)
            except ValueError:
                raise _prefix_error(
                    "vmap out_axes",
                    out_axes,
                    dummy,
                    f"out_axes {out_axes!r} does not match the outputs' structure {store['out_tree']}",
                ) from None

        def out_paths():  # (for the error of an out_axes=None output that is batched)
            dummy = tu.tree_unflatten(store["out_tree"], [0] * store["n_out"])
            return [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(dummy)]

        explicit = () if spmd else _explicit_mesh_axis(flat_args, dims)
        with _sharding_prims.spmd_axis_name(spmd), _sharding_prims.explicit_mesh_axis(explicit):
            outs = batching.vmap_flat(flat, size, dims, out_dims, flat_args, axis_name, out_paths)
        # An output left unmapped (out_axes None) that is not an array (a Python scalar, a NumPy
        # array) comes back as the function returned it, as in JAX.
        keep = [od is None and not isinstance(o, Array | core.Tracer) for o, od in zip(outs, out_dims())]
        core.check_leaks_now()  # (NOTE: [leak checking])
        return tu.tree_unflatten(store["out_tree"], [o if k else to_public(o) for o, k in zip(outs, keep)])

    return vmapped


def _with_mapped_refs(fun, again, out_axes, flat_args, in_tree, in_dims):
    """``vmap`` of ``fun`` with Refs among its mapped arguments, as JAX's: each such Ref is passed
    in as the array it holds; inside, the function sees a Ref of one element (a new Ref made under
    the batching trace, holding the mapped value), and the value that Ref holds when the function
    returns is written back into the caller's Ref (``again``: the same vmap of another function,
    ``in_axes`` and ``out_axes``; it maps the flat leaves, so that the caller's pytrees are only
    ever rebuilt around Refs). Unmapped Refs reach ``fun`` as they are (closed-over state).

    >>> import funcgrad.numpy as fnp
    >>> r = _ref.new_ref(fnp.zeros(3))
    >>> def bump(r, x):
    ...     r[...] += x
    >>> vmap(bump)(r, fnp.arange(3.0))
    >>> r
    Ref([0., 1., 2.], dtype=float64)
    """
    mapped = [
        i for i, (x, d) in enumerate(zip(flat_args, in_dims)) if isinstance(x, _ref.Ref) and d is not None
    ]
    values = list(flat_args)
    for i in mapped:
        values[i] = _ref.freeze(flat_args[i])

    def inner(leaves):
        inner_refs = {i: _ref.new_ref(leaves[i]) for i in mapped}
        a, k = tu.tree_unflatten(in_tree, [inner_refs.get(i, x) for i, x in enumerate(leaves)])
        return fun(*a, **k), [_ref.freeze(inner_refs[i]) for i in mapped]

    out_axes = (out_axes, [int(in_dims[i]) for i in mapped])
    out, finals = again(inner, ([None if d is None else int(d) for d in in_dims],), out_axes)(values)
    for i, final in zip(mapped, finals):
        _ref.set(flat_args[i], ..., final)
    return out


def _inconsistent_sizes(fun, args, kwargs, flat_args, dims, leaf_sizes, axis_size) -> str:
    """JAX's message for mapped axes of different sizes: each size with one argument having it
    (named by the function's parameter and its key path), the most common size first."""
    try:
        params = list(inspect.signature(fun).bind(*args, **kwargs).signature.parameters)
    except (TypeError, ValueError):
        params = None

    def where(path) -> str:
        if path[0] == 1:  # (a keyword argument: path[1] is its name)
            return f"kwargs{tu.keystr(path[1:])}"
        i = path[1].idx
        if params is None or i >= len(params):  # (no signature, or a *args argument)
            return f"args{tu.keystr(path[1:])}"
        return f"argument {params[i]}{tu.keystr(path[2:])}"

    def type_of(x) -> str:
        try:
            aval = core.get_aval(x)
        except TypeError:
            return "unknown"
        return f"{np.dtype(aval.dtype).name}[{','.join(map(str, aval.shape))}]"

    paths = [p for p, _ in tu.tree_leaves_with_path((tuple(args), kwargs))]
    counts = collections.Counter(s for s in leaf_sizes if s is not None).most_common()
    lines = ["vmap got inconsistent sizes for array axes to be mapped:"]
    if axis_size is not None:
        lines.append(f"  * the `axis_size` argument was {axis_size};")
    for k, (size, count) in enumerate(counts):
        i = leaf_sizes.index(size)
        ex = f"axis {dims[i]} of {where(_flat_path(paths[i]))} of type {type_of(flat_args[i])}"
        if count == 1:
            lines.append(f"  * one axis had size {size}: {ex};")
        else:
            lines.append(
                f"  * {'most' if k == 0 else 'some'} axes ({count} of them) had size {size}, e.g. {ex};"
            )
    return "\n".join(lines)[:-1]


def _flat_path(path):
    """A key path into ``(args, kwargs)`` as ``(0 or 1, key, ...)``: 0 for a positional argument
    (then the next key indexes ``args``), 1 for a keyword one (then the next key names it)."""
    return (path[0].idx, *path[1:])


def _spmd_names(spmd_axis_name) -> tuple:
    if spmd_axis_name is None:
        return ()
    names = (spmd_axis_name,) if isinstance(spmd_axis_name, str) else spmd_axis_name
    if not isinstance(names, tuple | list) or not all(isinstance(n, str) for n in names):
        raise TypeError(
            f"vmap: spmd_axis_name must be a mesh axis name or a tuple of them, got {spmd_axis_name!r}"
        )
    return tuple(names)


def _explicit_mesh_axis(flat_args, dims) -> tuple:
    """JAX's ``_mapped_axis_spec`` and ``_check_ema_unmapped_args``: the explicit mesh axes the
    mapped inputs' mapped dimensions are split over (they must agree, in JAX's words), which no
    unmapped input may be split over."""
    out, seen = None, False
    for leaf, d in zip(flat_args, dims):
        if d is None:
            continue
        s = getattr(core.get_aval(leaf), "_sharding", None) if isinstance(leaf, Array | core.Tracer) else None
        entry = tuple(s.spec)[d] if s is not None and d < len(s.spec) else None
        if seen and entry != out:
            raise ValueError(
                "Mapped away dimension of inputs passed to vmap should be sharded the same. Got "
                f"inconsistent axis specs: {out} vs {entry}"
            )
        out, seen = entry, True
    names = () if out is None else (out,) if isinstance(out, str) else tuple(out)
    if names:
        for leaf, d in zip(flat_args, dims):
            s = (
                getattr(core.get_aval(leaf), "_sharding", None)
                if d is None and isinstance(leaf, Array | core.Tracer)
                else None
            )
            if s is None:
                continue
            used = {n for p in s.spec if p is not None for n in ((p,) if isinstance(p, str) else p)}
            if used & set(names):
                raise ValueError(
                    "Unmapped values passed to vmap cannot be sharded along the mesh axis you are vmapping "
                    f"over. Got type: {core.get_aval(leaf).str_short(True)}, in_axes: None and vmapped mesh "
                    f"axis: {names}"
                )
    return names


def _check_spmd_axis(spmd: tuple, aval, d: int) -> None:
    """JAX's rule: a mapped dimension already split over explicit mesh axes must be split over
    ``spmd_axis_name`` itself."""
    s = getattr(aval, "_sharding", None)
    if s is None:
        return
    entry = tuple(s.spec)[d] if d < len(s.spec) else None
    have = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
    if spmd_bridge.remove_size_one_axes[0]:  # (jax_remove_size_one_mesh_axis_from_type: as types)
        sizes = dict(zip(s.mesh.axis_names, s.mesh.axis_sizes))
        spmd = tuple(n for n in spmd if sizes.get(n) != 1)
    if have and have != spmd:
        raise ValueError(
            "Only one of spmd_axis_name or arrays sharded on `Explicit` mesh axis type is allowed. Got "
            f"spmd_axis_name={spmd} and arrays sharded on explicit_mesh_axis={have}"
        )
