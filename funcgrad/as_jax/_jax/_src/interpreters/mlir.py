"""``jax._src.interpreters.mlir`` under the alias: ``jax.interpreters.mlir``'s names (funcgrad's,
``funcgrad.interpreters.mlir``), ``custom_call`` and ``register_lowering`` among them (JAX's
export guide defines a custom-call primitive with them)."""

from funcgrad.interpreters.mlir import *  # noqa: F403
from funcgrad.interpreters.mlir import custom_call, register_lowering  # noqa: F401
