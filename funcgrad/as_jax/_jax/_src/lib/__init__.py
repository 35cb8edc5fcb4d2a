"""``jax._src.lib`` under the alias: ``mlir`` (jaxlib's MLIR bindings, for lowering rules written
with MLIR builders) and ``xla_client`` (jaxlib's own module, as JAX's ``jax._src.lib`` holds it:
autodidax compiles its modules and puts its buffers with it).

The alias's finder resolves ``import jax._src.lib.xla_client`` to the module held here.
"""

from funcgrad.xla_bridge import backends as _backends

xla_client = _backends.xc
