"""op_db entries: ``sharding_constraint`` (primitives/sharding.py) over a one-device mesh.

The constraint is the identity on values, so the generic checks apply as to any linear op (its
layouts on 8 devices: tests/surface/spmd/). ``shard_map`` carries a jaxpr and is tested by
tests/surface/spmd/.
"""

from __future__ import annotations

import functools

import numpy as np
from funcgrad.primitives.sharding import sharding_constraint_p, xla_metadata_value_p

from op_db._base import ALL3, OpInfo, _one, _shapes


@functools.cache
def _mesh():
    from funcgrad.sharding import make_mesh  # noqa: PLC0415 - import-time cost: starts the CPU backend

    return make_mesh((1,), ("x",))


def _constrain(x):
    return sharding_constraint_p.bind(x, mesh=_mesh(), spec=((),) * np.ndim(x))


OPS = [
    OpInfo(
        "sharding_constraint",
        sharding_constraint_p,
        _constrain,
        lambda x: x,
        _one(),
        shapes=_shapes(),
        dtypes=ALL3,
        linear_argnums=((0,),),
    ),
    OpInfo(  # (experimental.xla_metadata's set_xla_metadata on a value: an identity that tags it)
        "xla_metadata_value",
        xla_metadata_value_p,
        lambda x: xla_metadata_value_p.bind(x, xla_metadata_kvs=(("k", "v"),)),
        lambda x: x,
        _one(),
        shapes=_shapes(),
        dtypes=ALL3,
        linear_argnums=((0,),),
    ),
]
