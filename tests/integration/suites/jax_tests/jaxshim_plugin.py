"""pytest plugin (``-p jaxshim_plugin``, with this folder on ``PYTHONPATH``): installs the alias and
the ``jax._src`` shims before pytest imports any test file."""

import jaxshim

jaxshim.install()
