"""``jax._src.lax_reference``: JAX's NumPy reference implementations of the lax operators, read
from the installed oracle jax (see ``_oracle_source``); they are NumPy code, run unchanged."""

from . import _oracle_source

_module = _oracle_source.load("jax._src.lax_reference", "_src/lax_reference.py")
globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__")})
