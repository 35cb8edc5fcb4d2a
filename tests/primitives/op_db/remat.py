"""op_db entries: the rematerialisation and placement families (primitives/remat.py,
primitives/placement.py).

``name`` (``checkpoint_name``) is the identity with a ``name`` parameter, ``device_put`` a move
between memory spaces: every generic check applies as to any linear op. (``optimization_barrier``
has its entry among the elementwise ops; ``dce_sink`` has no results: its entries check that it binds
eagerly, under ``vmap``, derivatives and compiled, with JAX's side-effecting custom call or without;
``checkpoint`` carries a jaxpr and is tested by
tests/surface/api/test_checkpoint.py and test_ad_checkpoint.py.)
"""

from __future__ import annotations

from funcgrad.primitives.placement import dce_sink, dce_sink_p, device_put_p, device_put_to
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
    *(
        OpInfo(
            f"dce_sink{'_kept' if kept else ''}",
            dce_sink_p,
            lambda x, kept=kept: dce_sink(x, prevent_mlir_dce=kept) or [],
            lambda x: [],
            _one(),
            shapes=_shapes(),
            dtypes=(*ALL3, C128),
            differentiable=False,  # (no results: its jvp runs, and has no tangents to check)
        )
        for kept in (False, True)
    ),
]
