"""``jax._src.internal_test_util`` for JAX's test files (a package holding ``lax_test_util``)."""
