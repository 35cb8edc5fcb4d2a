"""Collectives over named axes, with ``jax.lax``'s names and signatures: ``psum``, ``pmean``,
``pmax``, ``pmin``, ``all_gather``, ``all_to_all``, ``psum_scatter``, ``ppermute``, ``pshuffle``,
``pswapaxes``, ``pbroadcast``, ``axis_index``, ``axis_size``.

Layer: surface. Imports the kernel (``batching``'s axis environment, pytrees), the primitive
catalog (``primitives.collectives``, ``primitives.sharding`` and a few array primitives),
``funcgrad.numpy._core``, ``funcgrad._placement`` (``with_sharding_constraint`` lives there,
beside the other functions that place values) and ``funcgrad._shard_map_eager`` (``pvary`` marks
an eager shard_map body's value as varying).

A named axis is bound by ``vmap(f, axis_name=...)``, by ``shard_map`` (the mesh's axis names) or by
``pmap(f, axis_name=...)``; a collective computes across the instances of that axis -- the lanes
of the vmap, or the devices (NOTE: [named axes] in funcgrad/kernel/batching.py). Every function
takes a pytree of arrays and an axis name or a tuple of names; a name that nothing binds raises a
``NameError`` naming it and the names in scope. ``pmean``, ``pshuffle``, ``pswapaxes`` and
``pbroadcast`` are compositions of the primitives, so they have every rule too.

>>> import funcgrad, numpy as np
>>> from funcgrad import lax
>>> funcgrad.vmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(np.array([1.0, 3.0])).tolist()
[0.25, 0.75]
"""

from __future__ import annotations

import numpy as np

from funcgrad import _shard_map_eager as _eager
from funcgrad._placement import with_sharding_constraint  # noqa: F401 - jax.lax's name; it places values
from funcgrad._shard_map_body import body_manual_axes, in_typed_bwd, typed_bwd_varying
from funcgrad._sharding_types import drop_size_one_axes
from funcgrad._shardings import get_abstract_mesh
from funcgrad.kernel import batching, core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.partial_eval import StagingTrace
from funcgrad.numpy._core import asarray
from funcgrad.primitives import collectives as co
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import structure as st

__all__ = [
    "all_gather",
    "all_to_all",
    "axis_index",
    "axis_size",
    "pbroadcast",
    "pcast",
    "pmax",
    "pmean",
    "pmin",
    "ppermute",
    "pshuffle",
    "psum",
    "psum_scatter",
    "pswapaxes",
    "pvary",
    "with_sharding_constraint",
]


def _names(axis_name, what) -> tuple:
    names = tuple(axis_name) if isinstance(axis_name, tuple | list) else (axis_name,)
    if not names:
        raise ValueError(f"{what}: axis_name must name at least one axis, got {axis_name!r}")
    for n in names:
        try:
            hash(n)
        except TypeError:
            raise TypeError(f"{what}: axis names must be hashable, got {n!r}") from None
    return names


def _groups(axis_index_groups, what) -> dict:
    """The ``axis_index_groups`` parameter (NOTE: [axis_index_groups] in primitives/collectives.py):
    JAX's checks here, the rest in the primitive's abstract evaluation."""
    if axis_index_groups is None:
        return {}
    try:
        groups = [[int(i) for i in g] for g in axis_index_groups]
    except (TypeError, ValueError):
        raise TypeError(
            f"{what}: axis_index_groups must be a list of lists of ints, got {axis_index_groups!r}"
        ) from None
    if not groups or not all(groups):
        raise ValueError(
            f"{what}: axis_index_groups must be non-empty lists of indices, got {axis_index_groups!r}"
        )
    return co.groups_param(groups)


def _leaves(x):
    # Python scalars stay weakly typed (``psum(1, name)`` is the axis size as a weak int).
    return tu.tree_map(lambda v: v if isinstance(v, int | float | bool | complex) else asarray(v), x)


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum ``x`` (a pytree) over the instances of the named axis or axes ``axis_name``.

    ``psum(1, name)`` is the axis size. Its transpose (for ``grad``) is again a psum (NOTE:
    [transposes of collectives] in primitives/collectives.py).

    >>> import funcgrad, numpy as np
    >>> funcgrad.vmap(lambda x: psum(x, "i"), axis_name="i")(np.arange(3.0)).tolist()
    [3.0, 3.0, 3.0]
    """
    names = _names(axis_name, "psum")
    g = _groups(axis_index_groups, "psum")
    return tu.tree_map(
        lambda v: co.psum_p.bind(_pvary_in(_count_bools(v), names), axis_name=names, **g), _leaves(x)
    )


def _count_bools(v):
    # A psum of booleans counts them, in int32 in either mode (JAX's psum converts them first).
    return ew.convert_element_type(v, np.int32) if asarray(v).dtype == np.bool_ else v


def pmean(x, axis_name, *, axis_index_groups=None):
    """The mean of ``x`` over ``axis_name`` (integers give floats, as a true division).

    >>> import funcgrad, numpy as np
    >>> funcgrad.vmap(lambda x: pmean(x, "i"), axis_name="i")(np.array([1.0, 2.0])).tolist()
    [1.5, 1.5]
    """
    names = _names(axis_name, "pmean")
    g = _groups(axis_index_groups, "pmean")
    # (groups of several sizes: JAX divides by the first group's size, psum(1)'s)
    n = len(g["axis_index_groups"][0]) if g else batching.axis_size(names, "pmean")

    def mean(v):
        s = co.psum_p.bind(_pvary_in(_count_bools(v), names), axis_name=names, **g)
        dtype = asarray(s).dtype
        if not _dt.is_inexact(dtype):
            s = ew.convert_element_type(s, np.float64)
        return ew.div(s, n)

    return tu.tree_map(mean, _leaves(x))


def pmax(x, axis_name, *, axis_index_groups=None):
    """The maximum of ``x`` over ``axis_name`` (its gradient goes to the maximal instance; ties
    share it).

    >>> import funcgrad, numpy as np
    >>> funcgrad.vmap(lambda x: pmax(x, "i"), axis_name="i")(np.array([1.0, 5.0, 2.0])).tolist()
    [5.0, 5.0, 5.0]
    """
    names = _names(axis_name, "pmax")
    g = _groups(axis_index_groups, "pmax")
    return tu.tree_map(lambda v: co.pmax_p.bind(_pvary_in(v, names), axis_name=names, **g), _leaves(x))


def pmin(x, axis_name, *, axis_index_groups=None):
    """The minimum of ``x`` over ``axis_name``.

    >>> import funcgrad, numpy as np
    >>> funcgrad.vmap(lambda x: pmin(x, "i"), axis_name="i")(np.array([1.0, 5.0, 2.0])).tolist()
    [1.0, 1.0, 1.0]
    """
    names = _names(axis_name, "pmin")
    g = _groups(axis_index_groups, "pmin")
    return tu.tree_map(lambda v: co.pmin_p.bind(_pvary_in(v, names), axis_name=names, **g), _leaves(x))


def _axis(axis, ndim, what, extra=0):
    if not isinstance(axis, int | np.integer):
        raise TypeError(f"{what}: the axis must be an int, got {axis!r}")
    n = ndim + extra
    if not -n <= axis < n:
        raise ValueError(f"{what}: axis {axis} is out of range for an operand of rank {ndim}")
    return int(axis) % n


def all_gather(
    x, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False, to: str = "varying"
):
    """Every instance's ``x``, stacked along a new ``axis`` (concatenated along ``axis`` when
    ``tiled``), in instance order. Its transpose is ``psum_scatter``. ``to="invarying"`` (JAX's
    ``all_gather_invariant``) types the result invariant along ``axis_name`` in a checked
    ``shard_map`` body (``out_specs=P()`` takes it); ``to="reduced"`` (JAX's ``all_gather_reduced``)
    types it reduced there (``out_specs=P(reduced={...})`` takes it; its cotangent is unreduced).

    >>> import funcgrad, numpy as np
    >>> funcgrad.vmap(lambda x: all_gather(x, "i"), axis_name="i")(np.array([1.0, 2.0])).tolist()
    [[1.0, 2.0], [1.0, 2.0]]
    """
    allowed = {"varying", "reduced", "invarying"}
    if to not in allowed:  # (JAX's words)
        raise ValueError(
            f"Got unexpected `to` value for `jax.lax.all_gather`. Allowed `to` values are: {allowed}"
        )
    if to != "varying" and axis_index_groups is not None:
        raise NotImplementedError  # (as JAX's)
    names = _names(axis_name, "all_gather")
    g = _groups(axis_index_groups, "all_gather")
    p = {"varying": co.all_gather_p, "invarying": co.all_gather_invariant_p}.get(to, co.all_gather_reduced_p)

    def gather(v):
        a = _axis(axis, np.ndim(v), "all_gather", extra=0 if tiled else 1)
        v = _pvary_in(v, names) if p is co.all_gather_p else v
        return p.bind(v, axis_name=names, axis=a, tiled=bool(tiled), **g)

    return tu.tree_map(gather, _leaves(x))


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, axis_index_groups=None, tiled: bool = False):
    """The sum over ``axis_name``, scattered: instance ``i`` gets the ``i``-th slice along
    ``scatter_dimension`` (whose size must be the axis size), or the ``i``-th block of that
    dimension with ``tiled=True``. Its transpose is ``all_gather``.

    >>> import funcgrad, numpy as np
    >>> f = lambda x: psum_scatter(x, "i")
    >>> funcgrad.vmap(f, axis_name="i")(np.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
    [4.0, 6.0]
    """
    names = _names(axis_name, "psum_scatter")
    g = _groups(axis_index_groups, "psum_scatter")

    def scatter(v):
        s = _axis(scatter_dimension, np.ndim(v), "psum_scatter")
        if np.dtype(v.dtype if hasattr(v, "dtype") else np.result_type(v)) == np.bool_:  # (JAX's words)
            raise TypeError("reduce_sum does not accept dtype bool. Accepted dtypes are subtypes of number.")
        v = _pvary_in(v, names)
        return co.psum_scatter_p.bind(v, axis_name=names, scatter_dimension=s, tiled=bool(tiled), **g)

    return tu.tree_map(scatter, _leaves(x))


def all_to_all(
    x, axis_name, split_axis: int, concat_axis: int, *, axis_index_groups=None, tiled: bool = False
):
    """Instance ``i`` receives the ``i``-th chunk along ``split_axis`` of every instance, placed
    along ``concat_axis`` in instance order. Without ``tiled``, ``split_axis`` must have the axis
    size and the result has shape ``insert(delete(x.shape, split_axis), concat_axis, size)``;
    with ``tiled``, ``split_axis`` shrinks and ``concat_axis`` grows by the axis size.

    >>> import funcgrad, numpy as np
    >>> f = lambda x: all_to_all(x, "i", 0, 0)
    >>> funcgrad.vmap(f, axis_name="i")(np.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
    [[1.0, 3.0], [2.0, 4.0]]
    """
    names = _names(axis_name, "all_to_all")
    g = _groups(axis_index_groups, "all_to_all")

    def swap(v):
        nd = np.ndim(v)
        s = _axis(split_axis, nd, "all_to_all")
        c = _axis(concat_axis, nd, "all_to_all")
        v = _pvary_in(v, names)
        return co.all_to_all_p.bind(v, axis_name=names, split_axis=s, concat_axis=c, tiled=bool(tiled), **g)

    return tu.tree_map(swap, _leaves(x))


def ppermute(x, axis_name, perm):
    """Send each instance's ``x`` along the ``(source, destination)`` pairs of ``perm``;
    instances that receive nothing get zeros. Its transpose is the inverse permutation.

    >>> import funcgrad, numpy as np
    >>> f = lambda x: ppermute(x, "i", [(0, 1), (1, 2), (2, 0)])
    >>> funcgrad.vmap(f, axis_name="i")(np.array([1.0, 2.0, 3.0])).tolist()
    [3.0, 1.0, 2.0]
    """
    names = _names(axis_name, "ppermute")
    try:
        pairs = tuple((int(s), int(d)) for s, d in perm)
    except (TypeError, ValueError):
        raise TypeError(f"ppermute: perm must be (source, destination) pairs of ints, got {perm!r}") from None
    return tu.tree_map(
        lambda v: co.ppermute_p.bind(_pvary_in(v, names), axis_name=names, perm=pairs), _leaves(x)
    )


def pshuffle(x, axis_name, perm):
    """Instance ``i`` gets the ``x`` of instance ``perm[i]`` (``perm`` a permutation of the axis).

    >>> import funcgrad, numpy as np
    >>> f = lambda x: pshuffle(x, "i", [2, 0, 1])
    >>> funcgrad.vmap(f, axis_name="i")(np.array([1.0, 2.0, 3.0])).tolist()
    [3.0, 1.0, 2.0]
    """
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):  # (JAX's words)
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(perm)])


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swap the named axis with the positional ``axis`` of ``x`` (whose size must be the axis
    size): ``all_to_all(x, axis_name, axis, axis)``.

    >>> import funcgrad, numpy as np
    >>> f = lambda x: pswapaxes(x, "i", 0)
    >>> funcgrad.vmap(f, axis_name="i")(np.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
    [[1.0, 3.0], [2.0, 4.0]]
    """
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def pbroadcast(x, axis_name, source: int):
    """Every instance gets the ``x`` of instance ``source``.

    >>> import funcgrad, numpy as np
    >>> funcgrad.vmap(lambda x: pbroadcast(x, "i", 1), axis_name="i")(np.array([1.0, 2.0])).tolist()
    [2.0, 2.0]
    """
    names = _names(axis_name, "pbroadcast")
    n = batching.axis_size(names, "pbroadcast")
    if not 0 <= int(source) < n:
        raise ValueError(f"pbroadcast: source={source} is out of range for an axis of size {n}")

    def bcast(v):
        mine = ew.eq_p.bind(co.axis_index_p.bind(axis_name=names), np.int32(source))
        v = asarray(v)
        zeros = st.broadcast_in_dim(np.zeros((), v.dtype), v.shape, ())
        return co.psum_p.bind(ew.select(mine, v, zeros), axis_name=names)

    return tu.tree_map(bcast, x)


def pvary(x, axis_name):
    """Mark ``x`` as varying along ``axis_name`` (JAX's type annotation for ``check_vma``): the
    identity on values; in an eager shard_map body the value's ``manual_axis_type`` gains the
    names (the names must be bound).

    >>> import funcgrad, numpy as np
    >>> funcgrad.vmap(lambda x: pvary(x, "i"), axis_name="i")(np.ones(2)).tolist()
    [1.0, 1.0]
    """
    names = _names(axis_name, "pvary")
    if _size_one_only(names):
        return x
    _check_pvary_scope(names)
    return tu.tree_map(lambda v: _varying_cast(v, names), x)


def _varying_cast(v, names):
    """``v`` varying along ``names``: in a checked shard_map body being staged, a typed cast
    (``pcast_p``, JAX's pvary / reduced_vary_cast: typeof(v).mat.varying gains them); in an
    eager body, the tracer's type (``mark_varying``)."""
    v = _eager.mark_varying(v, names)
    # (a constant of a staged body too: JAX's pvary types it varying there)
    staged = isinstance(v, core.Tracer) or isinstance(core.current_trace(), StagingTrace)
    typed = hooks.apply_vma is not None or in_typed_bwd()  # (NOTE: [custom_vjp in a checked body])
    if typed and staged and not _eager.is_eager_tracer(v):
        return co.pcast_p.bind(asarray(v), axis_name=names, to="varying")
    return v


def _pvary_in(v, names):
    """JAX's cast before a collective: in a checked shard_map body being staged, an operand
    invariant along some of the manual axes ``names`` is cast to vary along them first (pvary:
    its jaxpr shows it, and all_gather's result varies along them, as JAX's types say)."""
    if hooks.apply_vma is None or not isinstance(v, core.Tracer) or _eager.is_eager_tracer(v):
        return v
    mat = core.get_aval(v).mat
    typed = mat.varying | mat.unreduced | mat.reduced
    missing = tuple(n for n in names if n in body_manual_axes() and n not in typed)
    return co.pcast_p.bind(v, axis_name=missing, to="varying") if missing else v


def _varying_of(x):
    """The manual axes ``x`` varies along in a checked shard_map body (its typed value, an eager
    body's value, a custom_vjp bwd's value there, or a ShapeDtypeStruct's ``vma``); None
    elsewhere."""
    if _eager.is_eager_tracer(x):
        return x.vma if x._trace.check else None
    if in_typed_bwd():
        return typed_bwd_varying(x) if isinstance(x, core.Tracer) else None
    if hooks.apply_vma is None:
        return None
    if not isinstance(x, core.Tracer):
        mat = getattr(x, "manual_axis_type", None)  # (a ShapeDtypeStruct: eval_shape's)
        return frozenset(mat.varying) if mat is not None else None
    return frozenset(core.get_aval(x).mat.varying)


def _vary_like(out, like):
    """JAX's full_like: its result varies along the manual axes its argument does."""
    want = _varying_of(like)
    if not want:
        return out
    have = _varying_of(out) or frozenset()
    missing = tuple(n for n in sorted(want, key=str) if n not in have)
    return _varying_cast(out, missing) if missing else out


hooks.vary_like = _vary_like


def _size_one_only(names) -> bool:
    """JAX's pvary: under jax_remove_size_one_mesh_axis_from_type, axes all of size 1 in the mesh
    in scope are no cast at all (no type names them), bound or not."""
    am = get_abstract_mesh()
    return not am.empty and all(n in am.axis_names for n in names) and not drop_size_one_axes(names, am)


def _check_pvary_scope(names) -> None:
    # (JAX's pvary primitive has no eager impl: called outside every transformation it is its
    # ValueError; traced, an unbound name is the usual NameError)
    if batching.trace_state_clean():
        raise ValueError("pvary should be called under jax.shard_map.")
    batching.axis_size(names, "pvary")


def pcast(x, axis_name, *, to):
    """JAX's cast between invariant and varying values (``to="varying"`` is ``pvary``): the
    identity here, where values carry no such type (the names must be bound).

    >>> import funcgrad, numpy as np
    >>> funcgrad.vmap(lambda x: pcast(x, "i", to="varying"), axis_name="i")(np.ones(2)).tolist()
    [1.0, 1.0]
    """
    if isinstance(axis_name, set | frozenset):  # (JAX's TypeError: a set has no order)
        raise TypeError(f"{axis_name=} must be a tuple or a str. Got {axis_name}")
    if to not in ("varying", "invariant", "unreduced", "reduced"):
        raise ValueError(f"pcast: to must be 'varying' or 'invariant', got {to!r}")
    names = _names(axis_name, "pcast")
    if to == "varying" and _size_one_only(names):
        return x
    if to == "varying":
        _check_pvary_scope(names)
    else:
        batching.axis_size(names, "pcast")
    if to == "varying":
        return tu.tree_map(lambda v: _varying_cast(v, names), x)
    if to in ("reduced", "unreduced"):  # (a change of type: JAX's preduced / vary_unreduced_cast)
        return tu.tree_map(
            lambda v: co.pcast_p.bind(asarray(_check_pcast_from(v, names, to)), axis_name=names, to=to), x
        )
    return x


def _typed_str(aval, mat) -> str:
    """``aval`` as JAX's error messages print a manual type (``int32[2,4]{V:x, U:y}``)."""
    kinds = (("V", mat.varying), ("U", mat.unreduced), ("R", mat.reduced))
    parts = [f"{k}:{','.join(sorted(map(str, names)))}" for k, names in kinds if names]
    return aval.str_short(short_dtypes=False) + ("{" + ", ".join(parts) + "}" if parts else "")


# JAX's pcast casts (from, to): pvary, preduced, vary_unreduced_cast, reduced_vary_cast
_PCASTS = {
    ("invarying", "varying"),
    ("invarying", "reduced"),
    ("varying", "unreduced"),
    ("reduced", "varying"),
}


def _check_pcast_from(v, names, to):
    """JAX's pcast's refusals, in its words, where ``v``'s type says it is unreduced or reduced
    along ``names`` (JAX's _get_from): names of several states (varying, unreduced, reduced,
    invarying) at once, or a cast JAX has no primitive for (unreduced to reduced)."""
    mat = getattr(core.get_aval(v), "mat", None)
    if mat is None or not (mat.unreduced or mat.reduced):
        return v
    kinds = (("varying", mat.varying), ("unreduced", mat.unreduced), ("reduced", mat.reduced))
    states = {next((k for k, axes in kinds if a in axes), "invarying") for a in names}
    if len(states) > 1:
        raise ValueError(
            "jax.lax.pcast can only accept axis_name which corresponds to one of varying, unreduced, "
            "reduced or invarying state of the input. Got input type: "
            f"{_typed_str(core.get_aval(v), mat)}, axes: {names} and input state: {states}"
        )
    (state,) = states
    if state in ("unreduced", "reduced") and (state, to) not in _PCASTS:
        raise ValueError(f"Unsupported pcast from={state}, {to=}")
    return v


def axis_index(axis_name):
    """This instance's index (int32) along ``axis_name`` (row-major over a tuple of names).

    >>> import funcgrad, numpy as np
    >>> funcgrad.vmap(lambda x: axis_index("i"), axis_name="i")(np.zeros(3)).tolist()
    [0, 1, 2]
    """
    return co.axis_index_p.bind(axis_name=_names(axis_name, "axis_index"))


def axis_size(axis_name) -> int:
    """The size (a Python int) of the named axis, or the product of several names' sizes.

    >>> import funcgrad, numpy as np
    >>> funcgrad.vmap(lambda x: x * axis_size("i"), axis_name="i")(np.ones(4)).tolist()
    [4.0, 4.0, 4.0, 4.0]
    """
    return batching.axis_size(_names(axis_name, "axis_size"), "axis_size")
