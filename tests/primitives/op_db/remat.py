"""op_db entries: the rematerialisation and placement families (primitives/remat.py,
primitives/placement.py).

``name`` (``checkpoint_name``) is the identity with a ``name`` parameter, ``device_put`` a move
between memory spaces: every generic check applies as to any linear op. (``optimization_barrier``
has its entry among the elementwise ops; ``checkpoint`` carries a jaxpr and is tested by
tests/surface/api/test_checkpoint.py and test_ad_checkpoint.py.)
"""

from __future__ import annotations

from funcgrad.primitives.placement import device_put_p, device_put_to
from funcgrad.primitives.remat import checkpoint_name, name_p

from funcgrad.kernel.ir import MemorySpace
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
    # device_put between memory spaces (an offloaded residual's move): to the device's own memory,
    # so every generic check compares values in one memory.
    OpInfo(
        "device_put",
        device_put_p,
        lambda x: device_put_to(x, MemorySpace.Device),
        lambda x: x,
        _one(),
        shapes=_shapes(),
        dtypes=(*ALL3, C128),
        linear_argnums=((0,),),
    ),
]
