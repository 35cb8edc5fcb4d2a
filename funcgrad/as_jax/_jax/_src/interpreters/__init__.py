"""``jax._src.interpreters`` under the alias (``ad`` and ``mlir``)."""
