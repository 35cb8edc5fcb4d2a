"""op_db entries: the rematerialisation family (primitives/remat.py).

``name`` (``checkpoint_name``) is the identity with a ``name`` parameter: every generic check applies
as to any linear op. (``optimization_barrier`` has its entry among the elementwise ops; ``checkpoint``
carries a jaxpr and is tested by tests/surface/api/test_checkpoint.py and test_ad_checkpoint.py.)
"""

from __future__ import annotations

from funcgrad.primitives.remat import checkpoint_name, name_p

from op_db._base import ALL3, C128, OpInfo, _one, _shapes

OPS = [
    OpInfo(
        "name",
        name_p,
        lambda x: checkpoint_name(x, "a"),
        lambda x: x,
        _one(),
        shapes=_shapes(),
        dtypes=(*ALL3, C128),
        linear_argnums=((0,),),
    ),
]
