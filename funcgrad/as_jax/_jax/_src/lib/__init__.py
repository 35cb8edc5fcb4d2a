"""``jax._src.lib`` under the alias: ``mlir`` (jaxlib's MLIR bindings, for lowering rules written
with MLIR builders), ``xla_client`` (jaxlib's own module, as JAX's ``jax._src.lib`` holds it:
autodidax compiles its modules and puts its buffers with it) and jaxlib's ``version_str`` /
``version`` (what ``print_environment_info`` names).

The alias's finder resolves ``import jax._src.lib.xla_client`` to the module held here.
"""

import jaxlib as _jaxlib

from funcgrad.xla_bridge import backends as _backends

xla_client = _backends.xc
version_str = _jaxlib.__version__
version = tuple(int(p) for p in version_str.split(".")[:3] if p.isdigit())
