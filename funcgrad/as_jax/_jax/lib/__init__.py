"""``jax.lib`` under the alias: empty, as JAX 0.10's is (libraries probe it with ``hasattr``)."""
