"""``funcgrad.experimental.shard_alike``: JAX's ``jax.experimental.shard_alike`` -- two values
the partitioner lays out alike.

Layer: surface. Imports funcgrad's extension API (``extend.core.Primitive``, ``interpreters``'s
``ad``, ``batching`` and ``mlir``), its tree utilities and jaxlib's Shardy dialect bindings.

``shard_alike(x, y)`` returns ``x`` and ``y`` unchanged in value; inside ``jit`` the partitioner
(Shardy) gives each pair of leaves one sharding -- the one either of them has or propagates --,
as JAX lowers it: both values join a ``sdy.sharding_group``. Derivatives are the cotangents sharded
alike; ``vmap`` batches both alike.

>>> import numpy as np, funcgrad
>>> x, y = shard_alike(np.arange(3.0), np.ones(3))
>>> x.tolist(), y.tolist()
([0.0, 1.0, 2.0], [1.0, 1.0, 1.0])
"""

from __future__ import annotations

import itertools

from funcgrad import jit
from funcgrad import tree_util as _tree
from funcgrad.extend.core import Primitive, get_aval
from funcgrad.interpreters import ad, batching, mlir

__all__ = ["shard_alike"]

_next_group_id = itertools.count()  # (each pair its own group, as JAX's)


def shard_alike(x, y):
    """``(x, y)``, laid out alike by the partitioner: each leaf of ``x`` and the leaf of ``y`` at
    the same place get one sharding under ``jit`` (JAX's ``jax.experimental.shard_alike``). The
    trees must be equal and each pair of leaves of one shape.

    >>> import numpy as np, funcgrad
    >>> f = funcgrad.jit(lambda a: shard_alike(a, a * 2)[1])
    >>> f(np.arange(2.0)).tolist()
    [0.0, 2.0]
    """
    x_flat, x_tree = _tree.tree_flatten(x)
    y_flat, y_tree = _tree.tree_flatten(y)
    if x_tree != y_tree:
        raise ValueError(f"Trees should be equal. Got x_tree: {x_tree}, y_tree: {y_tree}")
    for a, b in zip(x_flat, y_flat):
        a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
        if a_shape != b_shape:
            raise ValueError(
                "The leaves shapes of `x` and `y` should match. Got `x` leaf shape:"
                f" {a_shape} and `y` leaf shape: {b_shape}. File an issue at"
                " https://github.com/jax-ml/jax/issues if you want this feature."
            )
    outs = [shard_alike_p.bind(a, b) for a, b in zip(x_flat, y_flat)]
    x_out = [o[0] for o in outs]
    y_out = [o[1] for o in outs]
    return _tree.tree_unflatten(x_tree, x_out), _tree.tree_unflatten(y_tree, y_out)


shard_alike_p = Primitive("shard_alike")
shard_alike_p.multiple_results = True
shard_alike_p.def_abstract_eval(lambda x, y: (x, y))


@shard_alike_p.def_impl
def _impl(x, y):
    # (as JAX's apply_primitive: the primitive compiled alone, so that values on devices come out
    # laid out as the partitioner decides)
    return jit(lambda a, b: shard_alike_p.bind(a, b))(x, y)


def _transpose(cts):
    x_ct, y_ct = cts
    if type(x_ct) is ad.Zero or type(y_ct) is ad.Zero:
        return [x_ct, y_ct]
    return list(shard_alike(x_ct, y_ct))


ad.deflinear(shard_alike_p, _transpose)


def _batch(args, dims):
    x, y = args
    xd, yd = dims
    if xd == yd:
        return shard_alike(x, y), (xd, yd)
    if xd is None:
        x = batching.broadcast(x, y.shape[yd], yd)
        return shard_alike(x, y), (yd, yd)
    if yd is None:
        y = batching.broadcast(y, x.shape[xd], xd)
        return shard_alike(x, y), (xd, xd)
    y = batching.moveaxis(y, yd, xd)
    return shard_alike(x, y), (xd, xd)


batching.primitive_batchers[shard_alike_p] = _batch


def _lowering(ctx, x, y):
    from jaxlib.mlir.dialects import sdy  # noqa: PLC0415 - jaxlib's MLIR bindings: import-time cost

    group = next(_next_group_id)
    sdy.sharding_group(x, group)
    sdy.sharding_group(y, group)
    return [x, y]


mlir.register_lowering(shard_alike_p, _lowering)
