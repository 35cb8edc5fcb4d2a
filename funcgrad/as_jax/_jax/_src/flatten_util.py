"""``jax._src.flatten_util`` under the alias: funcgrad's ``flatten_util`` (blackjax imports
``ravel_pytree`` from here).

>>> flat, unravel = ravel_pytree({"a": 1.0, "b": [2.0, 3.0]})
>>> flat.tolist(), unravel(flat)["b"][1].tolist()
([1.0, 2.0, 3.0], 3.0)
"""

from funcgrad.flatten_util import *  # noqa: F403
from funcgrad.flatten_util import __all__  # noqa: F401
