"""``jax._src.interpreters`` under the alias (only ``ad``)."""
