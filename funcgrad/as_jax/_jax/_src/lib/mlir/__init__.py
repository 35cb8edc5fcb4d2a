"""``jax._src.lib.mlir`` under the alias: jaxlib's own MLIR Python bindings, the objects funcgrad's
bridge builds and splices user lowering rules with (xla_bridge/user_lowering.py, NOTE: [spliced
lowering rules]). ``ir`` is ``jaxlib.mlir.ir``; ``dialects.hlo`` is ``jaxlib.mlir.dialects.stablehlo``
(JAX's name for it), and ``dialects.func``/``chlo``/``mhlo``/``sdy`` are jaxlib's.

The alias's finder resolves ``import jax._src.lib.mlir.ir`` to the module held here as ``ir``.
"""

import types

from funcgrad.xla_bridge import user_lowering as _bindings

ir = _bindings.ir
dialects = types.ModuleType("jax._src.lib.mlir.dialects", "jaxlib's MLIR dialects, by JAX's names")
dialects.__path__ = []
for _name in ("hlo", "func", "chlo", "mhlo", "sdy"):
    setattr(dialects, _name, getattr(_bindings, _name))
