"""The functional updates of funcgrad arrays: ``x.at[idx].set(y)``, ``.add``, ``.multiply``, ...,
``.get``, each differentiable and traceable.

Layer: surface. Imports ``funcgrad.numpy.indexing`` (the index forms and their placement rules:
an update indexes an iota of ``x``'s flat positions with the same machinery, NOTE: [indexing
semantics]), ``funcgrad.numpy._core``, ``ufuncs`` (``x.at[].divide``/``power``) and the primitive
catalog (structure, indexing, elementwise, reductions).
"""

from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np

from funcgrad import _transfer_guard
from funcgrad._control_flow import while_loop
from funcgrad._partition_spec import PartitionSpec
from funcgrad._placement import reshard, switched_ops
from funcgrad._sharding_types import type_sharding
from funcgrad._shardings import NamedSharding, get_abstract_mesh
from funcgrad.custom_derivatives import refuse_jvp
from funcgrad.kernel import core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.custom_derivatives import custom_jvp
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.templates import template_public_functions
from funcgrad.numpy import _dtypes
from funcgrad.numpy._core import (
    asarray,
    aval,
    broadcast_shapes,
    broadcast_to,
    call_custom,
    constant,
    promote_args,
    rebound,
    select,
)
from funcgrad.numpy.indexing import (
    _ARRAY,
    _INT,
    _SCALAR,
    _SLICE,
    INDEX_FILES,
    Slice,
    _expand,
    _index_dtype,
    _normalized_index,
    getitem,
    index_transfer,
    refuse_sequence_index,
    static_ints_of_empty_axes,
)
from funcgrad.numpy.ufuncs import power, true_divide
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import indexing as ix
from funcgrad.primitives import reductions as red
from funcgrad.primitives import structure as st
from funcgrad.primitives._sharding_rules import spec_of

__all__: list[str] = []


def _flat_ids(x, idx, mode, wrap=True):
    """The flat positions ``x[idx]`` reads, with out-of-bounds positions set to ``x.size``
    (dropped by the scatter) unless ``mode`` clamps: only ``'clip'`` does. Under
    ``'promise_in_bounds'`` JAX hands its indices to XLA's scatter, which drops an out-of-bounds
    update (the derivatives' gathers of that mode still clamp, as JAX's)."""
    size = x.size
    dtype = np.dtype(np.int32) if size < 2**31 - 1 else _dt.default_int
    ids = constant(np.arange(size, dtype=dtype).reshape(x.shape), dtype)
    scatter_mode = ix.GatherScatterMode.FILL_OR_DROP if mode is None else ix.GatherScatterMode.from_any(mode)
    if 0 in x.shape:
        static_ints_of_empty_axes(x.shape, _expand(idx, x.shape, "x.at[...]"))
    if scatter_mode is not ix.GatherScatterMode.CLIP or size == 0:
        # (an empty x has nothing to update in any mode: every position is dropped)
        ids = getitem(ids, idx, mode="fill", fill_value=size, wrap_negative_indices=wrap, _drop_empty=True)
        return ids, scatter_mode
    return getitem(ids, idx, mode="clip", wrap_negative_indices=wrap), scatter_mode


def _selects_unique(x, idx) -> bool:
    """Basic indices (ints, slices, newaxis, ellipsis) never select an element twice."""
    if isinstance(idx, Slice) or (isinstance(idx, tuple) and any(isinstance(i, Slice) for i in idx)):
        idx = tuple(
            slice(None) if isinstance(i, Slice) else i for i in (idx if isinstance(idx, tuple) else (idx,))
        )
    return all(kind != _ARRAY for kind, _ in _expand(idx, x.shape, "x.at[...]"))


def _safe_to_cast(y, x) -> bool:
    """JAX's ``dtypes.safe_to_cast(y, x.dtype)``: JAX's lattice (not NumPy's promotion, which
    funcgrad's 64-bit mode follows: int32 with float32 is float64 there) keeps ``x``'s dtype."""
    x_dtype = aval(x).dtype
    pairs = ((aval(y).dtype, aval(y).weak_type), (x_dtype, False))
    return _dtypes._lattice_result_type(pairs)[0] == x_dtype


def _update_to(y, target):
    """The update ``y`` broadcast to the indexed shape ``target``, as JAX's ``broadcast_to`` (an
    update of more dimensions, leading size-1 ones included, is its ValueError; NumPy drops them)."""
    return broadcast_to(y, target)


_guard = _transfer_guard.state
_HOST_UPDATES = (np.ndarray, np.generic, *_dt.python_scalar_types)


def _scatter(x, idx, y, scatter_fn, mode, indices_are_sorted, unique_indices, wrap=True):
    refuse_sequence_index(idx)  # (x.at[[0, 1]].set(v): JAX's TypeError)
    original = x = asarray(x)
    if _guard.host_to_device:
        # NOTE: [transfer guard]: JAX's eager scatter takes a host update and its indices (int32[0]
        # for x.at[:]) as arguments: transfers
        host = y if isinstance(y, _HOST_UPDATES) else index_transfer(idx, np.shape(x))
        _transfer_guard.eager_operand(np.zeros(0, np.int32) if host is None else host, INDEX_FILES)
    python_scalar = type(y) in _dt.python_scalar_types
    # As jax.numpy: x and the update combine in their promoted dtype and the result converts back
    # to x's dtype, so an int32 x.at[i].add(2.5) truncates the sum (-3 + 2.5 -> 0), not the update
    # first (-3 + 2 -> -1; issue 33). The same holds for set, multiply, min and max.
    if (
        type(y) is int
        and _dt.kind(x.dtype) in "iu"
        and not _dt.iinfo(x.dtype).min <= y <= _dt.iinfo(x.dtype).max
    ):
        # A Python int that x's dtype cannot hold (u8.at[i].add(-3)) is a default-int array, as in
        # jax: combined in int64 and wrapped on the way back, instead of NEP 50's OverflowError.
        y = asarray(np.asarray(y))
    elif isinstance(y, int) and _dt.kind(x.dtype) in "iu":
        # One x's dtype holds: in its dtype (2**32 - 1 into a uint32 x in 32-bit mode, where a
        # Python int alone would be an int32 and overflow; JAX's issue 15505). A Python bool is
        # such an int too, as JAX's ``isinstance(y, int)``: int32 x.at[i].set(False) is a 0, no
        # bool-with-int promotion (an error under strict promotion).
        y = constant(y, x.dtype)
    update = y
    x, y = promote_args(x, y)
    if not python_scalar and aval(x).dtype != aval(original).dtype and not _safe_to_cast(update, original):
        # (JAX's deprecation: an update x's dtype cannot hold safely, cast back to it below)
        warnings.warn(
            "scatter inputs have incompatible types: cannot safely cast value from "
            f"dtype={aval(update).dtype} to dtype={aval(original).dtype} with "
            f"jax_numpy_dtype_promotion={_dtypes._flags['dtype_promotion']}. In future JAX releases this "
            "will result in an error.",
            FutureWarning,
            stacklevel=4,
        )
    unique_indices = unique_indices or _selects_unique(x, idx)
    if _typed_on_a_mesh(x, y, idx):
        out = _windowed_scatter(x, idx, y, scatter_fn, mode, wrap, indices_are_sorted, unique_indices)
        if out is not None:
            return _in_dtype_of(out, original)
    ids, scatter_mode = _flat_ids(x, idx, mode, wrap)
    target = ids.shape if hasattr(ids, "shape") else aval(ids).shape
    if 0 in tuple(target):  # (JAX skips the scatter for an empty slice, before broadcasting the update)
        return rebound(original)
    y = _update_to(y, target)
    m = int(np.prod(target, dtype=np.int64))
    if m == 0:
        return rebound(original)
    # (an empty x with a slice that is not empty is still scattered into, as JAX does: nothing
    # changes, but the scatter's derivatives gather the slice, which JAX's gather refuses there:
    # 'Slice size at index 0 in gather op is out of range', or scatter_mul's NotImplementedError)
    flat = st.reshape(x, (x.size,))
    dn = ix.ScatterDimensionNumbers(
        update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    out = scatter_fn(
        flat,
        st.reshape(ids, (m, 1)),
        st.reshape(y, (m,)),
        dn,
        mode=scatter_mode,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
    )
    return _in_dtype_of(st.reshape(out, x.shape), original)


def _in_dtype_of(out, original):
    """``out`` in ``original``'s dtype and weak type, as JAX's (a weak x updated with a strong
    value stays weak)."""
    if aval(out).dtype == aval(original).dtype and aval(out).weak_type == aval(original).weak_type:
        return out
    return ew.convert_element_type(out, aval(original).dtype, weak_type=aval(original).weak_type)


def _typed_on_a_mesh(x, y, idx) -> bool:
    """Whether any operand's type holds a sharding (an explicit mesh axis is in scope: NOTE:
    [sharding in types]). Such updates keep ``x``'s shape (``_windowed_scatter``) so that JAX's
    scatter sharding rule types them as JAX's; flat positions would reshape a sharded ``x``."""
    parts = [x, y, *(idx if isinstance(idx, tuple) else (idx,))]
    return any(
        isinstance(v, core.Tracer | Array) and getattr(aval(v), "_sharding", None) is not None for v in parts
    )


def _windowed_scatter(x, idx, y, scatter_fn, mode, wrap, indices_are_sorted, unique_indices):
    """JAX's scatter of ``x.at[idx]`` (its ``_index_to_gather`` read as a scatter): every
    dimension of ``x`` a slice keeps is a window of the update (a step-1 slice starts at its
    start), and ints and index arrays are scatter indices whose dimensions the update does not
    have; the advanced indices' broadcast shape stands where NumPy puts it. ``None`` (the flat
    route) for the forms this does not cover: new axes, strided or empty slices, empty arrays.

    >>> asarray(np.zeros((2, 3))).at[1, 1:].set(5.0).tolist() == _windowed_scatter(
    ...     asarray(np.zeros((2, 3))), (1, slice(1, None)), asarray(5.0), ix.scatter, None, True,
    ...     False, True).tolist()
    True
    """
    entries = _expand(idx, x.shape, "x.at[...]")
    if len(entries) != x.ndim or any(kind not in (_SLICE, _INT, _SCALAR, _ARRAY) for kind, _ in entries):
        return None
    if 0 in x.shape:
        return None
    arrays = [value for kind, value in entries if kind == _ARRAY]
    has_array = bool(arrays)
    dtype = _index_dtype([asarray(a) if not isinstance(a, int) else np.asarray(a) for a in arrays])
    columns, column_dims, inserted, windows, advanced_dims = [], [], [], [], []
    for d, (kind, value) in enumerate(entries):
        n = x.shape[d]
        if kind == _SLICE:
            start, stop, step = value.indices(n)
            if step != 1 or stop <= start:
                return None
            windows.append((d, stop - start))
            if (start, stop) != (0, n):
                columns.append(constant(start, dtype))
                column_dims.append(d)
            continue
        if has_array or kind == _ARRAY:
            advanced_dims.append(d)
        inserted.append(d)
        column_dims.append(d)
        if kind == _INT and (wrap or value >= 0):
            columns.append(constant(value + n if value < 0 else value, dtype))
        else:
            columns.append(_normalized_index(value, n, dtype, wrap))
    batch = broadcast_shapes(*[aval(c).shape for c in columns]) if columns else ()
    if 0 in batch:
        return None
    contiguous = (
        advanced_dims == list(range(advanced_dims[0], advanced_dims[-1] + 1)) if advanced_dims else True
    )
    p = sum(1 for d, _ in windows if advanced_dims and d < advanced_dims[0]) if contiguous else 0
    sizes = [size for _, size in windows]
    target = (*sizes[:p], *batch, *sizes[p:])
    if columns:
        indices = st.concatenate(
            [st.reshape(broadcast_to(c, batch), (*batch, 1)) for c in columns], len(batch)
        )
    else:
        indices = constant(np.zeros((0,), dtype), dtype)
    y = _update_to(y, target)
    x_sharding = aval(x)._sharding
    if x_sharding is not None:
        # The update is typed as ``x[idx]`` would be (JAX's ``slice_sharding``): a window keeps
        # x's dimension's sharding, the advanced indices' dimensions their broadcast sharding.
        xspec = spec_of(aval(x))
        bspec = spec_of(aval(indices))[: len(batch)] if columns else ()
        wspec = [xspec[d] for d, _ in windows]
        spec = (*wspec[:p], *bspec, *wspec[p:])
        names = [n for dim in spec for n in dim]
        if names and len(set(names)) == len(names):
            sharding = type_sharding(x_sharding.mesh, spec)
            y = hooks.typed_as(y, aval(y).update(sharding=sharding))
    dn = ix.ScatterDimensionNumbers(
        update_window_dims=tuple(range(p)) + tuple(range(p + len(batch), len(target))),
        inserted_window_dims=tuple(inserted),
        scatter_dims_to_operand_dims=tuple(column_dims),
    )
    scatter_mode = ix.GatherScatterMode.FILL_OR_DROP if mode is None else ix.GatherScatterMode.from_any(mode)
    return scatter_fn(
        x,
        indices,
        y,
        dn,
        mode=scatter_mode,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
    )


def _takes_out_sharding(method):
    """JAX's ``out_sharding=`` of ``x.at[idx].get/set/add/...``: the result's sharding, given
    where the gather's or scatter's would be ambiguous on explicit mesh axes (NOTE: [sharding in
    types]). As JAX's ``_scatter_update``/``_rewriting_take``: the operation runs in ``auto_axes``
    over the explicit axes of ``out_sharding`` (XLA's partitioner lays out its operands, no
    constraint of theirs staged) and its result comes back typed ``out_sharding``, unreduced axes
    too (a scatter-add of split updates left as each device's partial sums: ``segment_sum``,
    ``bincount``). On a mesh without explicit axes the result is resharded."""

    @functools.wraps(method)
    def wrapped(self, *args, out_sharding=None, **kwargs):
        if out_sharding is None:
            return method(self, *args, **kwargs)
        # (the explicit axes of its mesh as given -- in a shard_map body the manual ones are not --
        # or of the mesh in scope for a bare PartitionSpec, as JAX's canonicalize_sharding)
        if isinstance(out_sharding, NamedSharding):
            explicit = out_sharding.mesh.abstract_mesh.explicit_axes
        elif isinstance(out_sharding, PartitionSpec):
            explicit = get_abstract_mesh().explicit_axes
        else:
            explicit = ()
        if not explicit:
            return reshard(method(self, *args, **kwargs), out_sharding)
        # (only the arrays go through auto_axes: slices, None and Ellipsis of the index are closed over)
        leaves, tree = tu.tree_flatten((self.array, self.index, args), is_leaf=lambda v: v is None)
        arrays = [i for i, v in enumerate(leaves) if isinstance(v, Array | core.Tracer | np.ndarray)]

        def on_arrays(*values):
            full = list(leaves)
            for i, v in zip(arrays, values):
                full[i] = v
            array, index, rest = tu.tree_unflatten(tree, full)
            return method(_IndexUpdateRef(array, index), *rest, **kwargs)

        auto = switched_ops["auto_axes"](on_arrays, axes=explicit, out_sharding=out_sharding)
        return auto(*(leaves[i] for i in arrays))

    sig = inspect.signature(method)
    extra = inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY, default=None)
    wrapped.__signature__ = sig.replace(parameters=[*sig.parameters.values(), extra])
    return wrapped


class _IndexUpdateRef:
    """``x.at[idx]``: functional, differentiable updates of ``x`` at ``idx`` (NOTE: [indexing
    semantics]). Out-of-bounds updates are dropped unless ``mode='clip'``."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    @_takes_out_sharding
    def get(
        self,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        fill_value=None,
        wrap_negative_indices=True,
    ):
        """``x[idx]``; ``mode='fill'`` returns ``fill_value`` (NaN by default) out of bounds.

        >>> np.asarray(asarray([1.0, 2.0]).at[5].get(mode="fill")).tolist()
        nan
        """
        return getitem(
            self.array,
            self.index,
            mode=mode,
            fill_value=fill_value,
            unique_indices=unique_indices,
            indices_are_sorted=indices_are_sorted,
            wrap_negative_indices=wrap_negative_indices,
        )

    @_takes_out_sharding
    def set(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """``x`` with ``x[idx] = values``.

        >>> asarray([1, 2, 3]).at[1].set(9).tolist()
        [1, 9, 3]
        """
        return _scatter(
            self.array,
            self.index,
            values,
            ix.scatter,
            mode,
            indices_are_sorted,
            unique_indices,
            wrap_negative_indices,
        )

    @_takes_out_sharding
    def add(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """``x`` with ``x[idx] += values`` (repeated indices accumulate).

        >>> asarray([1, 2, 3]).at[np.array([0, 0])].add(1).tolist()
        [3, 2, 3]
        """
        return _scatter(
            self.array,
            self.index,
            values,
            ix.scatter_add,
            mode,
            indices_are_sorted,
            unique_indices,
            wrap_negative_indices,
        )

    @_takes_out_sharding
    def subtract(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """``x`` with ``x[idx] -= values``.

        >>> asarray([1, 2, 3]).at[2].subtract(1).tolist()
        [1, 2, 2]
        """
        (values,) = promote_args(values)
        # JAX subtracts in the array's and the update's promoted dtype (then converts back): the
        # update is promoted before it is negated, so float32.at[0].subtract(np.uint8(5)) is -5
        # (negated as a uint8 it was 251: the sharded-program fuzzer, seed 17008),
        # int32.at[0].subtract(2.5) of 4 is int(1.5) = 1, and
        # int16.at[0].subtract(True) is -1; a boolean update of a boolean array has no subtraction
        # (an integer one converts, as jax's: bool.at[0].subtract(1) is True).
        a = aval(self.array)
        if aval(values).dtype == np.bool_:
            _, values = promote_args(self.array, values)
            if aval(values).dtype == np.bool_:
                raise TypeError(
                    "sub does not accept dtype bool at position 0. Accepted dtypes at position 0 are "
                    "subtypes of integer, floating, complexfloating."
                )
        if aval(values).dtype != a.dtype and a.dtype != np.bool_:
            _, values = promote_args(self.array, values)
        return _scatter(
            self.array,
            self.index,
            ew.neg_p.bind(values),
            ix.scatter_add,
            mode,
            indices_are_sorted,
            unique_indices,
            wrap_negative_indices,
        )

    @_takes_out_sharding
    def multiply(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """``x`` with ``x[idx] *= values``.

        >>> asarray([1, 2, 3]).at[1:].multiply(2).tolist()
        [1, 4, 6]
        """
        return _scatter(
            self.array,
            self.index,
            values,
            ix.scatter_mul,
            mode,
            indices_are_sorted,
            unique_indices,
            wrap_negative_indices,
        )

    mul = multiply

    @_takes_out_sharding
    def divide(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """``x`` with ``x[idx] /= values``: true division, so an integer ``x`` gives a float result (as
        jax.numpy); repeated indices divide repeatedly.

        >>> asarray([1.0, 2.0]).at[1].divide(4.0).tolist()
        [1.0, 0.5]
        """
        x = asarray(self.array)
        denom = self._product_at(x, values, mode, indices_are_sorted, unique_indices, wrap_negative_indices)
        return true_divide(x, denom)

    @_takes_out_sharding
    def power(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """``x`` with ``x[idx] **= values``; repeated indices raise repeatedly (their exponents
        multiply, as jax.numpy), and integer ``x`` takes exact integer powers.

        >>> asarray([2.0, 3.0]).at[0].power(3.0).tolist()
        [8.0, 3.0]
        """
        x = asarray(self.array)
        exponent = self._product_at(
            x, values, mode, indices_are_sorted, unique_indices, wrap_negative_indices
        )
        return power(x, exponent)

    def _product_at(self, x, values, mode, indices_are_sorted, unique_indices, wrap_negative_indices):
        """Ones of ``x``'s shape with the product of the ``values`` scattered to each index (the
        divisor of ``divide``, the exponent of ``power``: repeated indices multiply)."""
        ones = constant(1, x.dtype, x.shape, weak_type=aval(x).weak_type)  # (JAX's ones_like(x))
        flags = (indices_are_sorted, unique_indices, wrap_negative_indices)
        return _scatter(ones, self.index, values, ix.scatter_mul, mode, *flags)

    @_takes_out_sharding
    def min(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """``x`` with ``x[idx] = minimum(x[idx], values)``.

        >>> asarray([1.0, 5.0]).at[:].min(3.0).tolist()
        [1.0, 3.0]
        """
        return _scatter(
            self.array,
            self.index,
            values,
            ix.scatter_min,
            mode,
            indices_are_sorted,
            unique_indices,
            wrap_negative_indices,
        )

    @_takes_out_sharding
    def max(
        self, values, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """``x`` with ``x[idx] = maximum(x[idx], values)``.

        >>> asarray([1.0, 5.0]).at[:].max(3.0).tolist()
        [3.0, 5.0]
        """
        return _scatter(
            self.array,
            self.index,
            values,
            ix.scatter_max,
            mode,
            indices_are_sorted,
            unique_indices,
            wrap_negative_indices,
        )

    def apply(
        self, func, *, indices_are_sorted=False, unique_indices=False, mode=None, wrap_negative_indices=True
    ):
        """``x`` with ``x[idx] = func(x[idx])`` (``func`` is elementwise); a repeated index applies
        ``func`` again, as ``ufunc.at`` and JAX's ``apply``.

        >>> asarray([1.0, 4.0]).at[1].apply(lambda v: v * 10).tolist()
        [1.0, 40.0]
        >>> asarray([1.0, 4.0]).at[np.array([1, 1])].apply(lambda v: v * 10).tolist()
        [1.0, 400.0]
        """
        array = asarray(self.array)
        if 0 in array.shape:  # (nothing to gather from, nor to update: x as JAX's scatter gives it,
            # after the index's static checks -- an int into an empty axis is JAX's IndexError --
            # and, where the slice is not empty, with the scatter's refusal to differentiate)
            ids, _ = _flat_ids(array, self.index, mode, wrap_negative_indices)
            target = ids.shape if hasattr(ids, "shape") else aval(ids).shape
            return array if 0 in tuple(target) else call_custom(_scatter_apply_operand, array)
        # x[idx]: func's operand where indices are unique, and its shape says whether the slice is
        # empty (JAX's .at[] skips the scatter then: x as it is, differentiable).
        selected = getitem(array, self.index, mode="clip", wrap_negative_indices=wrap_negative_indices)
        if 0 in selected.shape:
            return array
        array = call_custom(_scatter_apply_operand, array)  # (JAX's scatter_apply has no JVP)
        if not (unique_indices or _selects_unique(array, self.index)):
            zeros = constant(0, np.int32, array.shape)
            counts = _scatter(
                zeros, self.index, 1, ix.scatter_add, mode, indices_are_sorted, False, wrap_negative_indices
            )
            return _apply_counted(array, counts, func)
        return _IndexUpdateRef(array, self.index).set(
            func(selected),
            indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices,
            mode=mode,
            wrap_negative_indices=wrap_negative_indices,
        )


@custom_jvp
def _scatter_apply_operand(x):
    return x


# JAX's scatter_apply has no JVP rule: differentiating .at[].apply with respect to the array
# (forward or reverse) raises its NotImplementedError; funcgrad's composition would have computed
refuse_jvp(_scatter_apply_operand, "scatter_apply JVP not implemented")


class IndexUpdateHelper:
    """The ``.at`` property of arrays: ``x.at[idx]`` is an ``_IndexUpdateRef``.

    >>> asarray([0, 0, 0]).at[-1].set(5).tolist()
    [0, 0, 5]
    """

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"IndexUpdateHelper({self.array!r})"


def _apply_counted(operand, counts, func):
    """``operand`` with ``func`` applied ``counts`` times at each position (an int32 array of
    ``operand``'s shape): a Python loop to the largest count when the counts are known, else a
    ``while_loop`` to it.

    >>> _apply_counted(np.ones(3), np.array([0, 1, 2], np.int32), lambda v: v * 2).tolist()
    [1.0, 2.0, 4.0]
    """
    operand, counts = asarray(operand), asarray(counts)
    dtype, weak = operand.dtype, operand.weak_type

    def step(i, y):
        # (func's value in the operand's type, as the scatter's update region gives it: sin of a
        # boolean operand is a boolean again, not a float select_n could not join with it)
        fy = func(y)
        if core.get_aval(fy).dtype != dtype:
            fy = ew.convert_element_type(fy, dtype, weak_type=weak)
        return select(ew.gt_p.bind(counts, i), fy, y)

    known = core.concrete_value(counts)
    if known is not None:
        for i in range(int(np.max(known, initial=0))):
            operand = step(constant(i, np.int32), operand)
        return operand
    top = red.reduce_max(counts, tuple(range(counts.ndim))) if counts.ndim else counts
    _, out = while_loop(
        lambda c: ew.lt_p.bind(c[0], top),
        lambda c: (ew.add_p.bind(c[0], constant(1, np.int32)), step(c[0], c[1])),
        (constant(0, np.int32), operand),
    )
    return out


# NOTE: [surface templates]: every public function defined above is templated (the rule, not a mark).
template_public_functions(globals())
