"""``jax._src.state`` under the alias (only ``types``)."""
