"""``jax.lib`` under the alias: as JAX 0.10's, only ``__version__`` (the jaxlib version, which is the
JAX version funcgrad follows; libraries probe it, equinox compares it to pick a code path).

>>> import sys, subprocess
>>> code = "import funcgrad.as_jax, jax.lib; print(jax.lib.__version__)"
>>> subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
'0.10.2\\n'
"""

__version__ = "0.10.2"  # (funcgrad.as_jax.JAX_VERSION; no import, this module stays standalone)
