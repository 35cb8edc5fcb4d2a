"""``jax._src`` under the alias: only the helpers libraries import as if public (see funcgrad.as_jax).

Submodules load on attribute access too (``jax._src.dispatch`` after ``import jax``), as they
would once imported in JAX.
"""

import importlib


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"jax._src (funcgrad.as_jax) has no {name!r}: a JAX internal") from None
