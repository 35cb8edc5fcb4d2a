"""``jax.lib`` under the alias: jaxlib's version (``jax.lib.__version__``) and nothing else;
``jax.lib.xla_bridge`` / ``xla_client`` are JAX internals funcgrad does not imitate.
"""

import jaxlib.version

__version__ = jaxlib.version.__version__
