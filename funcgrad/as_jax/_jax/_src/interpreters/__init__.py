"""``jax._src.interpreters`` under the alias (``ad``, ``mlir`` and ``pxla``)."""
