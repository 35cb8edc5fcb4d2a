"""``jax.version`` under the alias: the JAX version whose API funcgrad follows.

>>> import funcgrad.as_jax._jax.version as v
>>> v.__version__ == v._version
True
"""

from funcgrad.as_jax import JAX_VERSION

__version__ = _version = JAX_VERSION
__version_info__ = _version_as_tuple = tuple(int(p) for p in JAX_VERSION.split("."))
# jaxlib is the real one funcgrad runs on; JAX 0.10.2 requires this version of it at least.
_minimum_jaxlib_version = JAX_VERSION
_minimum_jaxlib_version_info = __version_info__
