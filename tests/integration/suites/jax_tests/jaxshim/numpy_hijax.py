"""``jax._src.numpy.hijax`` for JAX's lax_numpy_hijax_test: JAX's own module (``searchsorted`` and
``nonzero`` as ``VJPHiPrimitive`` s), read from the oracle jax and run on funcgrad (its
``VJPHiPrimitive``, ``vmap``, ``scan``, ``lax``), with the few JAX internals it calls stood in for
here over funcgrad's public API (``_oracle_source``: nothing is copied)."""

from __future__ import annotations

import types

import numpy as np

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax as flax

from . import _oracle_source


def _total_order_keys(x):
    """The keys that order ``x`` as XLA's total order does for sorting (-0.0 == 0.0, NaN last)."""
    if fnp.issubdtype(x.dtype, np.complexfloating):
        return [*_total_order_keys(fnp.real(x)), *_total_order_keys(fnp.imag(x))]
    if fnp.issubdtype(x.dtype, np.floating):
        return [fnp.where(x == 0, fnp.zeros_like(x), x)]
    return [x]


def _lt_to(x, y):
    if fnp.issubdtype(x.dtype, np.floating):
        return (x < y) | (fnp.isnan(y) & ~fnp.isnan(x))
    return x < y


def _eq_to(x, y):
    if fnp.issubdtype(x.dtype, np.floating):
        return (x == y) | (fnp.isnan(x) & fnp.isnan(y))
    return x == y


def _comparator(last):
    def compare(*operands, num_keys=1):
        xs, ys = [], []
        for x, y in zip(operands[: 2 * num_keys : 2], operands[1 : 2 * num_keys : 2]):
            xs.extend(_total_order_keys(x))
            ys.extend(_total_order_keys(y))
        p = None
        for xk, yk in zip(xs[::-1], ys[::-1]):
            p = last(xk, yk) if p is None else _lt_to(xk, yk) | (_eq_to(xk, yk) & p)
        return p

    return compare


def _canonical_dtype(dtype, name):
    return funcgrad.dtypes.canonicalize_dtype(dtype)


def _canonicalize_axis_tuple(axes, ndim):
    axes = tuple(range(ndim)) if axes is None else (axes,) if isinstance(axes, int) else tuple(axes)
    return tuple(a % ndim if -ndim <= a < ndim else a for a in axes)


core = types.SimpleNamespace(
    typeof=funcgrad.typeof,
    ShapedArray=funcgrad.core.ShapedArray,
    auto_insert_reshard=lambda *args: args,
    pvary=lambda x, axes: x,
)
dtypes = types.SimpleNamespace(
    _maybe_canonicalize_explicit_dtype=_canonical_dtype,
    issubdtype=funcgrad.dtypes.issubdtype,
    iinfo=funcgrad.dtypes.iinfo,
    float0=funcgrad.dtypes.float0,
)
ad_util = types.SimpleNamespace(zeros_like_aval=lambda aval: fnp.zeros(aval.shape, aval.dtype))
lax = types.SimpleNamespace(
    **{name: getattr(flax, name) for name in dir(flax) if not name.startswith("_")},
    _sort_lt_comparator=_comparator(_lt_to),
    _sort_le_comparator=_comparator(lambda x, y: _lt_to(x, y) | _eq_to(x, y)),
)
util = types.SimpleNamespace(canonicalize_axis_tuple=_canonicalize_axis_tuple)

_module = _oracle_source.load(
    "jax._src.numpy.hijax",
    "_src/numpy/hijax.py",
    {
        "from jax._src import ad_util\n": "from jaxshim.numpy_hijax import ad_util\n",
        "from jax._src import core\n": "from jaxshim.numpy_hijax import core\n",
        "from jax._src import dtypes\n": "from jaxshim.numpy_hijax import dtypes\n",
        "from jax._src import numpy as jnp\n": "import jax.numpy as jnp\n",
        "from jax._src.lax import control_flow\n": "from jax import lax as control_flow\n",
        "from jax._src.lax import lax\n": "from jaxshim.numpy_hijax import lax\n",
        "from jax._src.numpy import util\n": "from jaxshim.numpy_hijax import util\n",
        "from jax._src.typing import Array, ArrayLike, DTypeLike\n": (
            "from jax.typing import ArrayLike, DTypeLike\nfrom jax import Array\n"
        ),
        "from jax._src import api\n": "import jax as api\n",
        "from jax._src import tree_util\n": "from jax import tree_util\n",
        # (the manual mesh axes a value varies over: none outside shard_map)
        "tuple(core.typeof(sorted_arr).mat.varying)": "()",
    },
)
searchsorted = _module.searchsorted
searchsorted_via_expand = _module.searchsorted_via_expand
nonzero = _module.nonzero
SearchSorted = _module.SearchSorted
Nonzero = _module.Nonzero
