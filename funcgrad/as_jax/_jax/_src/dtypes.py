"""``jax._src.dtypes`` under the alias: funcgrad's ``dtypes`` module (``TypePromotionError``,
``finfo``, ``issubdtype``, ``extended`` ...), the same objects."""

from funcgrad.dtypes import *  # noqa: F403
from funcgrad.dtypes import __all__  # noqa: F401
